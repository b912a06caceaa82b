"""An ipywidgets explorer of the audit, for notebooks: :func:`explore`.

Pick a collection and a model, slide the stated turn cap, filter the runs by status; the task table
follows. Select a task to see its runs by cap (passes over valid runs at each cap, per model) and one
run: how many turns it took against the stated cap and the harness limit, its reward per key, and
its turns one by one (message, commands, observation, tokens).

Exploration only: every number of the audit is computed by the notebooks without this widget. The
explorer works on tables; the one file it reads is the selected run's trajectory, through
:func:`depthlab.io.read_steps` on the folder of the run's ``source`` file (a run without one, such
as a trial taken from a CSV, shows a one-line note instead).

>>> import polars as pl
>>> from depthlab import schema, widgets
>>> audit = schema.conform(pl.DataFrame({"dataset": ["d"], "task": ["t"], "depth": [2],
...     "depth_status": ["solved"]}), "audit")
>>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": "m", "cap": [1, 2],
...     "status": ["fail", "pass"], "n_turns": [1, 2]}), "trials")
>>> explorer = widgets.explore(audit, trials)
>>> explorer.cap.value = 2
>>> explorer.task_table()["task"].to_list()
['t']
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Sequence
from typing import Any, Final

import polars as pl

from depthlab._checks import check_frame
from depthlab.io import LoadError, read_steps
from depthlab.schema import CAPS

__all__ = ["ALL", "UNCAPPED", "Explorer", "explore"]

#: Option meaning "every model" / "every status".
ALL: Final[str] = "(all)"
#: Option of the cap slider for runs without a stated cap (public runs).
UNCAPPED: Final[str] = "uncapped"

_STATUSES: Final[tuple[str, ...]] = ("pass", "fail", "invalid")
_TASK_COLUMNS: Final[tuple[str, ...]] = ("task", "depth", "depth_status", "work", "n_turns", "pass_rate", "difficulty")
_MAX_ROWS: Final[int] = 200
#: Characters of a turn's message, commands or observation shown in the turns table.
_CELL_CHARS: Final[int] = 240


def explore(audit: pl.DataFrame, trials: pl.DataFrame) -> Explorer:
    """Build the explorer for an audit table and its trials; display it as a notebook's last expression.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (``schema.AUDIT``).
    trials : pl.DataFrame
        The trials table (``schema.TRIALS``), capped and public runs.

    Returns
    -------
    Explorer
        Holds the widgets (``collection``, ``model``, ``cap``, ``status``, ``task``, ``run``) so they
        can be driven from code, and the current tables (:meth:`Explorer.task_table`,
        :meth:`Explorer.runs_by_cap`, :meth:`Explorer.run_details`, :meth:`Explorer.run_turns`).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["d"], "task": ["t"]}), "audit")
    >>> explore(audit, schema.empty("trials")).collection.value
    'd'
    """
    check_frame(audit, "audit", "explore", ("dataset", "task", "depth", "depth_status"))
    check_frame(trials, "trials", "explore", ("dataset", "task", "model", "cap", "status", "n_turns"))
    if audit.is_empty():
        raise ValueError("The 'audit' parameter of explore must have at least one task, got an empty table")
    return Explorer(audit, trials)


class Explorer:
    """The explorer's widgets and the tables they show (built by :func:`explore`).

    Attributes
    ----------
    collection, model, cap, status : ipywidgets widgets
        The filters: a collection dropdown, a model dropdown (``ALL`` for every model), a cap slider
        over ``uncapped`` and the ladder, status toggles (``ALL``, pass, fail, invalid).
    task, run : ipywidgets.Select / Dropdown
        The selected task (from the filtered table) and one of its runs.
    widget : ipywidgets.VBox
        The whole explorer (what a notebook displays).
    """

    def __init__(self, audit: pl.DataFrame, trials: pl.DataFrame) -> None:
        import ipywidgets as w

        self._audit = audit
        self._trials = trials
        self._quiet = False
        datasets = sorted(audit["dataset"].drop_nulls().unique().to_list())
        caps = sorted(set(CAPS) | set(trials["cap"].drop_nulls().unique().to_list()))
        self.collection = w.Dropdown(options=datasets, value=datasets[0], description="collection")
        self.model = w.Dropdown(options=[ALL], value=ALL, description="model")
        self.cap = w.SelectionSlider(
            options=[UNCAPPED, *caps], value=UNCAPPED, description="stated cap", continuous_update=False
        )
        self.status = w.ToggleButtons(options=[ALL, *_STATUSES], value=ALL, description="runs")
        self.task = w.Select(options=[], rows=8, description="task")
        self.run = w.Dropdown(options=[], description="run")
        self._table = w.HTML()
        self._runs = w.HTML()
        self._turns = w.HTML()
        self.widget = w.VBox(
            [
                w.HBox([self.collection, self.model]),
                w.HBox([self.cap, self.status]),
                self._table,
                w.HBox([self.task, w.VBox([self._runs, self.run, self._turns])]),
            ]
        )
        self._refresh_models()
        self._refresh_table()
        self.collection.observe(self._on_collection, names="value")
        for control in (self.model, self.cap, self.status):
            control.observe(self._on_filter, names="value")
        self.task.observe(self._on_task, names="value")
        self.run.observe(self._on_run, names="value")

    # tables shown by the widgets ---------------------------------------------------------------

    def task_table(self) -> pl.DataFrame:
        """Tasks of the chosen collection with at least one run matching model, cap and status.

        Columns: the task's audit columns plus ``runs`` and ``passes`` (matching runs and how many
        passed). At the ``uncapped`` position a task with no runs at all is still listed.
        """
        runs = self._matching_runs()
        counts = runs.group_by("task").agg(runs=pl.len().cast(pl.Int64), passes=(pl.col("status") == "pass").sum())
        tasks = self._audit.filter(pl.col("dataset") == self.collection.value)
        columns = [c for c in _TASK_COLUMNS if c in tasks.columns]
        table = tasks.select(columns).join(counts, on="task", how="left")
        keep_empty = self.cap.value == UNCAPPED and self.status.value == ALL and self.model.value == ALL
        if not keep_empty:
            table = table.filter(pl.col("runs").is_not_null())
        return table.with_columns(pl.col("runs", "passes").fill_null(0)).sort("task")

    def runs_by_cap(self) -> pl.DataFrame:
        """The selected task's valid runs by stated cap and model: runs, passes, median turns."""
        if self.task.value is None:
            return pl.DataFrame(
                schema={
                    "cap": pl.Int32,
                    "model": pl.String,
                    "runs": pl.Int64,
                    "passes": pl.Int64,
                    "median_turns": pl.Float64,
                }
            )
        runs = self._task_runs().filter(pl.col("status") != "invalid")
        return (
            runs.group_by("cap", "model")
            .agg(
                runs=pl.len().cast(pl.Int64),
                passes=(pl.col("status") == "pass").sum().cast(pl.Int64),
                median_turns=pl.col("n_turns").cast(pl.Float64).median(),
            )
            .sort("cap", "model", nulls_last=True)
        )

    def run_details(self) -> dict[str, Any]:
        """The selected run's row (model, cap, status, turns, limits, rewards), or an empty dict."""
        if self.run.value is None:
            return {}
        rows = self._task_runs().filter(pl.col("trial") == self.run.value) if "trial" in self._trials.columns else None
        return {} if rows is None or rows.is_empty() else rows.row(0, named=True)

    def run_turns(self) -> pl.DataFrame | None:
        """The selected run's turns (:func:`depthlab.io.read_steps`), or None when it has no readable trajectory."""
        return _read_turns(self.run_details())[0]

    # notebook display ----------------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    # callbacks -----------------------------------------------------------------------------------

    def _on_collection(self, _change: dict[str, Any]) -> None:
        self._refresh_models()
        self._refresh_table()

    def _on_filter(self, _change: dict[str, Any]) -> None:
        if not self._quiet:
            self._refresh_table()

    def _on_task(self, _change: dict[str, Any]) -> None:
        self._refresh_task()

    def _on_run(self, _change: dict[str, Any]) -> None:
        self._show_run()

    # helpers -----------------------------------------------------------------------------------

    def _collection_trials(self) -> pl.DataFrame:
        return self._trials.filter(pl.col("dataset") == self.collection.value)

    def _matching_runs(self) -> pl.DataFrame:
        runs = self._collection_trials()
        if self.model.value != ALL:
            runs = runs.filter(pl.col("model") == self.model.value)
        runs = runs.filter(pl.col("cap").is_null() if self.cap.value == UNCAPPED else pl.col("cap") == self.cap.value)
        if self.status.value != ALL:
            runs = runs.filter(pl.col("status") == self.status.value)
        return runs

    def _task_runs(self) -> pl.DataFrame:
        runs = self._collection_trials().filter(pl.col("task") == self.task.value)
        return runs if self.model.value == ALL else runs.filter(pl.col("model") == self.model.value)

    def _refresh_models(self) -> None:
        models = sorted(self._collection_trials()["model"].drop_nulls().unique().to_list())
        # changing the options fires the model observer; the guard makes that one refresh, not two
        self._quiet = True
        try:
            self.model.options = [ALL, *models]
            self.model.value = ALL
        finally:
            self._quiet = False

    def _refresh_table(self) -> None:
        table = self.task_table()
        self._table.value = _table_html(table, f"{table.height} tasks")
        previous = self.task.value
        options = table["task"].to_list()
        self.task.options = options
        self.task.value = previous if previous in options else (options[0] if options else None)
        self._refresh_task()

    def _refresh_task(self) -> None:
        self._runs.value = _table_html(self.runs_by_cap(), f"runs of {self.task.value} by stated cap (valid runs)")
        runs = self._task_runs() if self.task.value is not None else self._trials.clear()
        trials = runs["trial"].drop_nulls().to_list() if "trial" in runs.columns else []
        self.run.options = trials
        self.run.value = trials[0] if trials else None
        self._show_run()

    def _show_run(self) -> None:
        run = self.run_details()
        if not run:
            self._turns.value = _run_html(run)
            return
        steps, note = _read_turns(run)
        shown = f"<i>{html.escape(note)}</i>" if steps is None else _steps_html(steps, str(run.get("trial")))
        self._turns.value = _run_html(run) + "<br>" + shown


def _table_html(table: pl.DataFrame, caption: str, *, keep_lines: bool = False) -> str:
    shown = table.head(_MAX_ROWS)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in shown.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_text(v))}</td>" for v in row) + "</tr>" for row in shown.iter_rows()
    )
    more = f" (first {_MAX_ROWS})" if table.height > _MAX_ROWS else ""
    style = " style='white-space:pre-wrap;vertical-align:top'" if keep_lines else ""
    return (
        f"<div style='max-height:260px;overflow:auto'><table{style}><caption>{html.escape(caption + more)}</caption>"
        f"<tr>{head}</tr>{body}</table></div>"
    )


def _read_turns(run: dict[str, Any]) -> tuple[pl.DataFrame | None, str]:
    """The run's turns read from the folder of its source file, or None and a one-line reason."""
    source = run.get("source")
    if not source:
        return None, "no turns: the run has no source file"
    try:
        return read_steps(os.path.dirname(source)), ""
    except LoadError as exc:
        return None, f"no turns: no readable trajectory ({exc})"


def _steps_html(steps: pl.DataFrame, trial: str) -> str:
    def short(column: str) -> pl.Expr:
        text = pl.col(column)
        return pl.when(text.str.len_chars() > _CELL_CHARS).then(text.str.slice(0, _CELL_CHARS) + "…").otherwise(text)

    shown = steps.select(
        "turn",
        pl.col("timestamp").dt.strftime("%H:%M:%S").alias("time"),
        short("message"),
        short("commands"),
        short("observation"),
        pl.col("n_input_tokens").alias("in"),
        pl.col("n_output_tokens").alias("out"),
    )
    return _table_html(shown, f"{steps.height} turns of {trial}", keep_lines=True)


def _run_html(run: dict[str, Any]) -> str:
    if not run:
        return "<i>no run selected</i>"
    turns = run.get("n_turns")
    limit = run.get("cap") or run.get("turn_limit")
    bar = ""
    if turns is not None and limit:
        width = min(100.0, 100.0 * turns / limit)
        bar = (
            f"<div style='width:240px;background:#eee'><div style='width:{width:.0f}%;background:#0072B2;"
            f"height:10px'></div></div>"
        )
    stated = f"stated cap {run.get('cap')}" if run.get("cap") is not None else "no stated cap"
    lines = [
        f"<b>{html.escape(str(run.get('trial')))}</b> · {html.escape(str(run.get('model')))} · {stated}",
        f"turns: {_text(turns)} (harness limit {_text(run.get('turn_limit'))}, hit: {_text(run.get('hit_limit'))})",
        bar,
        f"status: {html.escape(str(run.get('status')))}, reward {_text(run.get('reward'))}"
        + (f", exception {html.escape(str(run['exception']))}" if run.get("exception") else ""),
    ]
    rewards = run.get("rewards")
    if rewards:
        parts = ", ".join(f"{html.escape(k)}={_text(v)}" for k, v in json.loads(rewards).items())
        lines.append(f"rewards: {parts}")
    return "<br>".join(line for line in lines if line)


def _text(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, Sequence) and not isinstance(value, str):
        return ", ".join(_text(v) for v in value)
    return str(value)
