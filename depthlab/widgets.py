"""An ipywidgets explorer of the audit, for notebooks: :func:`explore`.

Four controls (collection, models, stated cap, run status) drive every pane:

* the task table (a keyboard-selectable list): the collection's tasks with a run matching the
  models, cap and status, with their D, depth status, work W, uncapped turns N and the matching
  runs and passes;
* the selected task's evidence grid (:func:`depthlab.evidence.evidence_plot`) over the chosen
  models, with the chosen cap's column shaded and the selected run's cell outlined;
* the run chooser: the selected task's runs matching the filters, each named by cap, model,
  attempt, status and turns;
* the selected run: its turns against the stated cap and the harness limit, its rewards, and
  its turns one by one, with each turn's level and the earlier outputs it uses (the depth
  proxy's rule, :func:`depthlab.measures.turn_dependencies`).

A caption above each pane says what it shows and, when it is empty, which filter emptied it.

Exploration only: every number of the audit is computed by the notebooks without this widget.
The explorer works on tables; the one file it reads is the selected run's trajectory, through
:func:`depthlab.io.read_steps` on the folder of the run's ``source`` file. An executed notebook
saved to disk cannot show the live widget (its text form says so); :func:`depthlab.evidence.evidence_grids`
draws the same grids as ordinary figures.

>>> import polars as pl
>>> from depthlab import schema, widgets
>>> audit = schema.conform(pl.DataFrame({"dataset": ["d"], "task": ["t"], "depth": [2],
...     "depth_status": ["solved"]}), "audit")
>>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": "m", "cap": [1, 2],
...     "status": ["fail", "pass"], "n_turns": [1, 2], "trial": ["t1", "t2"]}), "trials")
>>> explorer = widgets.explore(audit, trials)
>>> explorer.cap.value = 2
>>> explorer.task_table()["task"].to_list()
['t']
>>> explorer.run_table()["trial"].to_list()
['t2']
"""

from __future__ import annotations

import html
import io
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, Final

import polars as pl

from depthlab._checks import check_frame, check_rows
from depthlab.catalog import ordered
from depthlab.io import LoadError, read_steps
from depthlab.schema import CAPS, STATUSES

__all__ = ["ALL", "LIVE_ONLY", "UNCAPPED", "Explorer", "explore"]

#: Option meaning "every cap" / "every status".
ALL: Final[str] = "all"
#: Option of the cap slider for runs without a stated cap (public runs).
UNCAPPED: Final[str] = "uncapped"
#: What an executed notebook saved to disk shows in place of the live explorer.
LIVE_ONLY: Final[str] = (
    "The live explorer needs a running kernel: open this notebook in Jupyter and run it "
    "(a saved copy cannot show widgets; the figures below are its static stand-in)."
)

_TASK_COLUMNS: Final[tuple[str, ...]] = ("task", "depth", "depth_status", "work", "n_turns", "pass_rate", "difficulty")
#: Rows of the task list; it scrolls as one control, never as a box inside the page.
_TASK_ROWS: Final[int] = 12
#: Turns of one run shown (the rest are in Explorer.run_turns()).
_MAX_TURNS: Final[int] = 100
#: Characters of a turn's message, commands or observation shown in the turns table.
_CELL_CHARS: Final[int] = 240
#: Characters of a task name in the task list (the full name is in the captions).
_NAME_CHARS: Final[int] = 30
_CSS: Final[str] = """<style>
.dl-explorer { max-width: 1400px; }
.dl-explorer .dl-tasks select { overflow-x: hidden; }
.dl-explorer .dl-status { display: flex; flex-flow: row nowrap; align-items: center; }
.dl-explorer .dl-status > div { display: flex; flex-flow: row nowrap; }
.dl-explorer .dl-tasks select, .dl-explorer .dl-task-header { font-family: var(--jp-code-font-family, monospace);
  font-size: 12px; white-space: pre; }
.dl-explorer .dl-task-header { padding-left: 4px; color: var(--jp-ui-font-color1, #333); font-weight: 600; }
.dl-explorer .dl-caption { color: var(--jp-ui-font-color1, #333); line-height: 1.35; }
.dl-explorer .dl-empty { color: #A23B00; }
.dl-explorer .dl-runs-caption { margin-top: 12px; border-top: 1px solid #e5e5e5; padding-top: 6px; }
.dl-explorer table.dl-turns { table-layout: fixed; width: 100%; border-collapse: collapse; font-size: 12px; }
.dl-explorer table.dl-turns td, .dl-explorer table.dl-turns th { vertical-align: top; text-align: left;
  white-space: pre-wrap; overflow-wrap: anywhere; padding: 2px 6px; border-bottom: 1px solid #e5e5e5; }
</style>"""


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
        Holds the controls (``collection``, ``models``, ``cap``, ``status``) and choosers
        (``task``, ``run``) so they can be driven from code, and the tables each pane shows
        (:meth:`Explorer.task_table`, :meth:`Explorer.evidence`, :meth:`Explorer.run_table`,
        :meth:`Explorer.run_details`, :meth:`Explorer.run_turns`).

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
    check_rows(audit, "audit", "explore", noun="task")
    return Explorer(audit, trials)


class Explorer:
    """The explorer's widgets and the tables they show (built by :func:`explore`).

    Attributes
    ----------
    collection : ipywidgets.Dropdown
        The collection.
    models : ipywidgets.SelectMultiple
        The models whose runs are shown and whose cells make the evidence grid (all by default).
    cap : ipywidgets.SelectionSlider
        ``all``, ``uncapped`` (public runs) or one stated cap of the ladder.
    status : ipywidgets.ToggleButtons
        ``all``, ``pass``, ``fail`` or ``invalid``.
    task : ipywidgets.Select
        The selected task, from the task table.
    run : ipywidgets.Dropdown
        The selected run, from the task's runs matching the filters.
    widget : ipywidgets.VBox
        The whole explorer (what a notebook displays).
    """

    def __init__(self, audit: pl.DataFrame, trials: pl.DataFrame) -> None:
        import ipywidgets as w

        self._audit_table = audit
        self._trials = trials if "trial" in trials.columns else trials.with_columns(trial=pl.lit(None, pl.String))
        self._quiet = False
        datasets = ordered(audit["dataset"].to_list())
        caps = sorted(set(CAPS) | set(trials["cap"].drop_nulls().unique().to_list()))
        label = {"description_width": "70px"}
        self.collection = w.Dropdown(
            options=datasets, value=datasets[0], description="collection", style=label, layout=w.Layout(width="260px")
        )
        self.models = w.SelectMultiple(
            options=[],
            rows=3,
            description="models",
            tooltip="ctrl- or shift-click to choose several",
            style=label,
            layout=w.Layout(width="340px"),
        )
        self.cap = w.SelectionSlider(
            options=[ALL, UNCAPPED, *caps],
            value=ALL,
            description="stated cap",
            continuous_update=False,
            style=label,
            layout=w.Layout(width="420px", min_width="360px"),
        )
        self.status = w.ToggleButtons(
            options=[ALL, *STATUSES],
            value=ALL,
            description="status",
            style={**label, "button_width": "64px"},
            layout=w.Layout(width="380px", flex="0 0 auto"),
        )
        self.task = w.Select(options=[], rows=_TASK_ROWS, layout=w.Layout(width="auto"))
        self.run = w.Dropdown(options=[], description="run", style={"description_width": "40px"})
        self.run.layout = w.Layout(width="100%", max_width="620px")
        self._task_caption = w.HTML()
        self._task_header = w.HTML()
        self._grid = w.Image(format="png", layout=w.Layout(width="100%", max_width="560px", height="auto"))
        self._grid_caption = w.HTML()
        self._runs_caption = w.HTML()
        self._run_view = w.HTML(layout=w.Layout(width="auto"))
        for pane, name in (
            (self._task_caption, "dl-task-caption"),
            (self._task_header, "dl-task-header"),
            (self.task, "dl-tasks"),
            (self._grid, "dl-grid"),
            (self._grid_caption, "dl-grid-caption"),
            (self._runs_caption, "dl-runs-caption"),
            (self.run, "dl-run"),
            (self._run_view, "dl-run-view"),
            (self.collection, "dl-collection"),
            (self.models, "dl-models"),
            (self.cap, "dl-cap"),
            (self.status, "dl-status"),
        ):
            pane.add_class(name)
        row = {"flex_flow": "row nowrap", "align_items": "flex-start", "margin": "0 0 6px 0"}
        self.models.layout.margin = "0 0 0 16px"
        self.status.layout.margin = "0 0 0 16px"
        self.widget = w.VBox(
            [
                w.HTML(_CSS),
                w.HBox([self.collection, self.models], layout=w.Layout(**row)),
                w.HBox([self.cap, self.status], layout=w.Layout(**row)),
                w.HBox(
                    [
                        w.VBox(
                            [self._task_caption, self._task_header, self.task],
                            layout=w.Layout(flex="1 1 420px", min_width="380px", margin="0 16px 8px 0"),
                        ),
                        w.VBox([self._grid, self._grid_caption], layout=w.Layout(flex="1 1 420px", min_width="380px")),
                    ],
                    layout=w.Layout(flex_flow="row wrap", width="100%"),
                ),
                self._runs_caption,
                self.run,
                self._run_view,
            ],
            # auto, not 100%: the widget margin would push a 100% box past its cell
            layout=w.Layout(width="auto"),
        )
        self.widget.add_class("dl-explorer")
        self._refresh_models()
        self._refresh_table()
        self.collection.observe(self._on_collection, names="value")
        for control in (self.models, self.cap, self.status):
            control.observe(self._on_filter, names="value")
        self.task.observe(self._on_task, names="value")
        self.run.observe(self._on_run, names="value")

    # tables shown by the panes -------------------------------------------------------------------

    def task_table(self) -> pl.DataFrame:
        """Tasks of the chosen collection with at least one run matching models, cap and status.

        Columns: the task's audit columns plus ``runs`` and ``passes`` (matching runs and how many
        passed). With every cap, every status and every model chosen, a task with no run at all is
        still listed.
        """
        runs = self._matching_runs()
        counts = runs.group_by("task").agg(
            runs=pl.len().cast(pl.Int64), passes=(pl.col("status") == "pass").sum().cast(pl.Int64)
        )
        tasks = self._audit_table.filter(pl.col("dataset") == self.collection.value)
        columns = [c for c in _TASK_COLUMNS if c in tasks.columns]
        table = tasks.select(columns).join(counts, on="task", how="left")
        if not self._unfiltered():
            table = table.filter(pl.col("runs").is_not_null())
        return table.with_columns(pl.col("runs", "passes").fill_null(0)).sort("task")

    def evidence(self) -> pl.DataFrame:
        """The selected task's evidence grid over the chosen models (:func:`depthlab.evidence.task_evidence`)."""
        from depthlab.evidence import EVIDENCE, task_evidence

        if self.task.value is None or not self.models.value:
            return pl.DataFrame(schema=EVIDENCE)
        return task_evidence(self._trials, self.collection.value, self.task.value, models=list(self.models.value))

    def run_table(self) -> pl.DataFrame:
        """The selected task's runs matching models, cap and status, in the run chooser's order."""
        if self.task.value is None:
            return self._trials.clear()
        runs = self._matching_runs().filter(pl.col("task") == self.task.value)
        order = ["cap", "model", *(["attempt"] if "attempt" in runs.columns else []), "trial"]
        return runs.sort(order, nulls_last=True)

    def run_details(self) -> dict[str, Any]:
        """The selected run's row (model, cap, status, turns, limits, rewards), or an empty dict."""
        if self.run.value is None:
            return {}
        rows = self._collection_trials().filter(pl.col("trial") == self.run.value)
        return {} if rows.is_empty() else rows.row(0, named=True)

    def run_turns(self) -> pl.DataFrame | None:
        """The selected run's turns (:func:`depthlab.io.read_steps`), or None when it has no readable trajectory.

        Two more columns give the depth proxy's reading of the run
        (:func:`depthlab.measures.turn_dependencies`): each turn's ``level`` and the earlier outputs it ``uses``.
        """
        return _read_turns(self.run_details())[0]

    # notebook display ----------------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        # the text form is what a notebook saved to disk shows (widget views need a live kernel)
        bundle["text/plain"] = LIVE_ONLY
        return bundle

    # callbacks -----------------------------------------------------------------------------------

    def _on_collection(self, _change: dict[str, Any]) -> None:
        self._refresh_models()
        self._refresh_table()

    def _on_filter(self, _change: dict[str, Any]) -> None:
        if not self._quiet:
            self._refresh_table()

    def _on_task(self, _change: dict[str, Any]) -> None:
        if not self._quiet:
            self._refresh_task()

    def _on_run(self, _change: dict[str, Any]) -> None:
        if not self._quiet:
            self._show_run()

    # filters ---------------------------------------------------------------------------------------

    def _unfiltered(self) -> bool:
        every_model = set(self.models.value) == set(self.models.options)
        return self.cap.value == ALL and self.status.value == ALL and every_model

    def _collection_trials(self) -> pl.DataFrame:
        return self._trials.filter(pl.col("dataset") == self.collection.value)

    def _filters(self) -> list[tuple[str, pl.Expr, str]]:
        """Each active filter as (column, expression, what it keeps), in the order the captions explain them."""
        chosen = list(self.models.value)
        filters = [("model", pl.col("model").is_in(chosen), f"by {_names(chosen) or 'no model'}")]
        if self.cap.value == UNCAPPED:
            filters.append(("cap", pl.col("cap").is_null(), "without a stated cap"))
        elif self.cap.value != ALL:
            filters.append(("cap", pl.col("cap") == self.cap.value, f"at stated cap {self.cap.value}"))
        if self.status.value != ALL:
            filters.append(("status", pl.col("status") == self.status.value, f"with status {self.status.value}"))
        return filters

    def _matching_runs(self) -> pl.DataFrame:
        runs = self._collection_trials()
        for _, expr, _ in self._filters():
            runs = runs.filter(expr)
        return runs

    def _why_empty(self, runs: pl.DataFrame, where: str) -> str:
        """Which filter left no run of ``runs`` (all of ``where``), and what the runs before it had."""
        if not self.models.value:
            return "no model is chosen: choose one or more in 'models'"
        if runs.is_empty():
            return f"{where} has no run at all"
        applied = ""
        for column, expr, kept in self._filters():
            after = runs.filter(expr)
            if after.is_empty():
                what = _what_is_there(runs, column)
                return f"{where} has {_count(runs.height, 'run')}{applied}, but none {kept} ({what})"
            runs, applied = after, f"{applied} {kept}"
        return ""

    def _filter_text(self) -> str:
        return " ".join(kept for _, _, kept in self._filters())

    # refreshing the panes ------------------------------------------------------------------------

    def _refresh_models(self) -> None:
        models = sorted(self._collection_trials()["model"].drop_nulls().unique().to_list())
        # changing the options fires the models observer; the guard makes that one refresh, not two
        self._quiet = True
        try:
            self.models.options = models
            self.models.value = tuple(models)
            self.models.rows = max(2, min(4, len(models)))
        finally:
            self._quiet = False

    def _refresh_table(self) -> None:
        table = self.task_table()
        n_all = self._audit_table.filter(pl.col("dataset") == self.collection.value).height
        runs = int(table["runs"].sum()) if table.height else 0
        collection = html.escape(str(self.collection.value))
        if table.is_empty():
            why = self._why_empty(self._collection_trials(), collection)
            caption = f"<b>No task listed</b>: <span class='dl-empty'>{html.escape(why)}</span>."
        else:
            shown = "every task" if table.height == n_all else f"{table.height} of {n_all} tasks"
            caption = (
                f"<b>{shown}</b> of {collection}: {_count(runs, 'run')} {html.escape(self._filter_text())}."
                + (" Tasks without such a run are left out." if table.height < n_all else "")
                + "<br>D, status: the audit's estimate over every model; W: work; N: median uncapped turns;"
                " runs/pass: the matching runs. Ctrl- or shift-click chooses several models."
            )
        self._task_caption.value = f"<div class='dl-caption'>{caption}</div>"
        self._task_header.value = html.escape(_task_line("task", "D", "status", "W", "N", "runs", "pass"))
        labels = [
            (
                _task_line(
                    row["task"],
                    row.get("depth"),
                    row.get("depth_status"),
                    row.get("work"),
                    row.get("n_turns"),
                    row["runs"],
                    row["passes"],
                ),
                row["task"],
            )
            for row in table.iter_rows(named=True)
        ]
        previous = self.task.value
        values = [value for _, value in labels]
        self._quiet = True
        try:
            self.task.options = labels
            self.task.rows = max(4, min(_TASK_ROWS, len(labels)))
            # an empty list and its header say nothing the caption does not: hide them
            shown = "" if labels else "none"
            self.task.layout.display = self._task_header.layout.display = shown
            self.task.value = previous if previous in values else (values[0] if values else None)
        finally:
            self._quiet = False
        self._refresh_task()

    def _refresh_task(self) -> None:
        runs = self.run_table()
        labels = [(_run_label(row), row["trial"]) for row in runs.iter_rows(named=True) if row["trial"] is not None]
        previous = self.run.value
        values = [value for _, value in labels]
        self._quiet = True
        try:
            self.run.options = labels
            self.run.value = previous if previous in values else (values[0] if values else None)
            self.run.layout.display = "" if labels else "none"
        finally:
            self._quiet = False
        task = html.escape(str(self.task.value))
        if self.task.value is None:
            caption = "<b>No task selected</b>, so no runs: the task table above is empty."
        elif runs.is_empty():
            task_runs = self._collection_trials().filter(pl.col("task") == self.task.value)
            why = self._why_empty(task_runs, task)
            caption = f"<b>No run of {task}</b>: <span class='dl-empty'>{html.escape(why)}</span>."
        else:
            total = self._collection_trials().filter(pl.col("task") == self.task.value).height
            hidden = f"; {total - runs.height} more are hidden by the filters" if total > runs.height else ""
            caption = (
                f"<b>{_count(runs.height, 'run')} of {task}</b> {html.escape(self._filter_text())}{hidden}. "
                "Choose one to see its turns."
            )
        self._runs_caption.value = f"<div class='dl-caption'>{caption}</div>"
        self._show_run()

    def _show_run(self) -> None:
        self._draw_grid()
        run = self.run_details()
        if not run:
            self._run_view.value = ""
            return
        steps, note = _read_turns(run)
        shown = f"<i>{html.escape(note)}</i>" if steps is None else _steps_html(steps, str(run.get("trial")))
        self._run_view.value = _run_html(run) + "<br>" + shown

    def _draw_grid(self) -> None:
        cells = self.evidence()
        run = self.run_details()
        selected = (run["model"], run["cap"]) if run and run.get("cap") is not None else None
        cap = self.cap.value if isinstance(self.cap.value, int) else None
        # an empty grid is hidden rather than drawn as an empty frame; the caption says why
        self._grid.layout.display = "none" if cells.is_empty() else ""
        if not cells.is_empty():
            self._grid.value = _grid_png(cells, cap=cap, selected=selected)
        self._grid_caption.value = f"<div class='dl-caption'>{self._grid_text(cells, cap, selected)}</div>"

    def _grid_text(self, cells: pl.DataFrame, cap: int | None, selected: tuple[str, int] | None) -> str:
        if self.task.value is None:
            return "<b>No evidence grid</b>: no task is selected (the task table is empty)."
        task = html.escape(str(self.task.value))
        if cells.is_empty():
            why = "no model is chosen" if not self.models.value else "none of the chosen models has a capped run here"
            return f"<b>No evidence grid for {task}</b>: <span class='dl-empty'>{why}</span>."
        first = cells.row(0, named=True)
        depth = f"D = {first['depth']}" if first["depth"] is not None else "D not pinned"
        own = cells.group_by("model").agg(pl.col("model_depth").first()).sort("model")
        owns = ", ".join(f"{html.escape(m)} {_text(d)}" for m, d in own.rows())
        upcoming = cells.filter(pl.col("next"))
        plan = (
            "; plan_missing would run next: "
            + ", ".join(f"{html.escape(m)} at cap {c}" for m, c in upcoming.select("model", "cap").rows())
            if upcoming.height
            else ""
        )
        marks = []
        if cap is not None:
            marks.append(f"shaded: stated cap {cap}")
        if selected is not None:
            marks.append(f"outlined: the chosen run ({html.escape(selected[0])}, cap {selected[1]})")
        elif self.run.value is not None:
            marks.append("the chosen run has no stated cap, so no cell")
        return (
            f"<b>Evidence of {task}</b> over {_count(len(own), 'chosen model')} (every cap and status, as D needs): "
            f"{depth} ({first['depth_status']}); each model's own D: {owns}{plan}."
            + "".join(f" {mark[0].upper()}{mark[1:]}." for mark in marks)
        )


def _grid_png(cells: pl.DataFrame, *, cap: int | None, selected: tuple[str, int] | None) -> bytes:
    import matplotlib as mpl
    from matplotlib.figure import Figure

    from depthlab.evidence import evidence_plot
    from depthlab.plots import RC

    with mpl.rc_context(RC):
        fig = Figure(figsize=(5.2, 1.3 + 0.38 * max(cells["model"].n_unique(), 1)), layout="constrained")
        evidence_plot(cells, ax=fig.subplots(), cap=cap, selected=selected)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _names(values: Sequence[str]) -> str:
    return ", ".join(values[:3]) + (f" and {len(values) - 3} more" if len(values) > 3 else "")


def _what_is_there(runs: pl.DataFrame, column: str) -> str:
    # name what the runs do have on the axis the failing filter is about
    if column == "model":
        return f"they are by {_names(sorted(runs['model'].drop_nulls().unique().to_list()))}"
    if column == "cap":
        caps = sorted(runs["cap"].drop_nulls().unique().to_list())
        uncapped = runs["cap"].null_count()
        parts = [f"stated caps {', '.join(map(str, caps))}"] if caps else []
        parts += ["uncapped"] if uncapped else []
        return "they are at " + " and ".join(parts)
    statuses = runs.group_by("status").len().sort("status").rows()
    return "their statuses: " + ", ".join(f"{n} {s}" for s, n in statuses)


def _task_line(
    task: object, depth: object, status: object, work: object, turns: object, runs: object, passes: object
) -> str:
    name = str(task)
    if len(name) > _NAME_CHARS:
        name = name[: _NAME_CHARS - 1] + "…"
    line = (
        f"{name:<{_NAME_CHARS}} {_text(depth):>3} {_text(status):<10} {_text(work):>5} "
        f"{_text(turns):>5} {_text(runs):>4} {_text(passes):>4}"
    )
    # option text collapses runs of spaces; no-break spaces keep the columns aligned
    return line.replace(" ", "\u00a0")


def _run_label(run: dict[str, Any]) -> str:
    cap = f"cap {run['cap']}" if run["cap"] is not None else "uncapped"
    attempt = f"attempt {run['attempt']}" if run.get("attempt") is not None else "attempt –"
    turns = _count(run["n_turns"], "turn") if run["n_turns"] is not None else "no turn count"
    return f"{cap} · {run['model']} · {attempt} · {run['status']} · {turns}"


def _read_turns(run: dict[str, Any]) -> tuple[pl.DataFrame | None, str]:
    """The run's turns read from the folder of its source file, or None and a one-line reason."""
    if not run:
        return None, "no run selected"
    source = run.get("source")
    if not source:
        return None, "no turns: the run has no source file"
    # the depth proxy is part of depthlab: imported from its public home, never skipped when it fails to import
    from depthlab.measures import turn_dependencies

    folder = os.path.dirname(source)
    try:
        steps = read_steps(folder)
        # the proxy reads the same run whole (prompt included, outputs uncut), as its rule says
        whole = read_steps(folder, prompt=True, max_chars=sys.maxsize)  # type: ignore[call-arg, unused-ignore]
    except LoadError as exc:
        return None, f"no turns: no readable trajectory ({exc})"
    return steps.join(turn_dependencies(whole).select("turn", "level", "uses"), on="turn", how="left"), ""


def _steps_html(steps: pl.DataFrame, trial: str) -> str:
    def short(column: str) -> pl.Expr:
        text = pl.col(column)
        return pl.when(text.str.len_chars() > _CELL_CHARS).then(text.str.slice(0, _CELL_CHARS) + "…").otherwise(text)

    proxy = [pl.col("level"), short("uses")] if "level" in steps.columns else []
    shown = steps.head(_MAX_TURNS).select(
        "turn",
        pl.col("timestamp").dt.strftime("%H:%M:%S").alias("time"),
        short("message"),
        short("commands"),
        short("observation"),
        *proxy,
        pl.col("n_input_tokens").alias("in"),
        pl.col("n_output_tokens").alias("out"),
    )
    more = f" (the first {_MAX_TURNS}; explorer.run_turns() has all)" if steps.height > _MAX_TURNS else ""
    deps = "; level and uses: the depth proxy's reading of the run (turn_dependencies)" if proxy else ""
    widths = {"turn": "4%", "level": "4%", "time": "7%", "in": "6%", "out": "5%"}
    cols = "".join(f"<col style='width:{widths.get(c, 'auto')}'>" for c in shown.columns)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in shown.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_text(v))}</td>" for v in row) + "</tr>" for row in shown.iter_rows()
    )
    return (
        f"<div class='dl-caption'><b>{_count(steps.height, 'turn')} of {html.escape(trial)}</b>{more}{deps}.</div>"
        f"<table class='dl-turns'><colgroup>{cols}</colgroup><tr>{head}</tr>{body}</table>"
    )


def _run_html(run: dict[str, Any]) -> str:
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
    return "<div class='dl-caption'>" + "<br>".join(line for line in lines if line) + "</div>"


def _text(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, Sequence) and not isinstance(value, str):
        return ", ".join(_text(v) for v in value)
    return str(value)
