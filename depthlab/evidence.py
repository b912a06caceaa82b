"""One task's evidence for its depth D: the model x cap grid, as a table and as a figure.

D is the smallest stated turn cap under which some model passes, pinned only when every model
failed every smaller cap (:func:`depthlab.estimate_depth`). Whether a task's D can be trusted is
read off its evidence grid: one cell per (model, cap), coloured by what the runs there showed.

* :func:`task_evidence` builds the tidy grid of one task: each cell's state (``pass``, ``fail``,
  ``invalid`` when only infrastructure errors were recorded, ``missing`` when never run), the turns
  each run took, each model's own D, the task's estimated D and status, and whether
  :func:`depthlab.plan_missing` would run the cell next (its adaptive round) or at all (its sweep).
* :func:`evidence_plot` draws one grid on an axes (seaborn's axes-level manner: ``ax=``).
* :func:`evidence_grids` draws several tasks' grids as one figure, and :func:`example_tasks`
  picks a few telling tasks from an audit table: the static stand-in for the live explorer
  (:func:`depthlab.widgets.explore`) in executed notebooks, which cannot show widgets.

>>> import polars as pl
>>> from depthlab import evidence, schema
>>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": ["a", "a", "b"],
...     "cap": [1, 2, 2], "status": ["fail", "pass", "pass"], "n_turns": [1, 2, 2]}), "trials")
>>> cells = evidence.task_evidence(trials, "d", "t", caps=(1, 2, 3))
>>> cells.filter(pl.col("cap") == 1).select("model", "state", "next").rows()
[('a', 'fail', False), ('b', 'missing', True)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from depthlab._checks import (
    PASS_RULES,
    check_caps,
    check_choice,
    check_frame,
    check_models,
    check_positive_int,
    check_string,
)
from depthlab.measures.depth import TASK_KEYS, depth_from_grid, evidence_grid
from depthlab.measures.planning import plan_missing
from depthlab.plots import RC, ShownFigure
from depthlab.plots._core import DataSource, stamp, table_of
from depthlab.schema import CAPS, EVIDENCE, EXAMPLE_TASKS

__all__ = [
    "CELL_STATES",
    "EVIDENCE",
    "STATE_COLOURS",
    "evidence_grids",
    "evidence_plot",
    "example_tasks",
    "task_evidence",
]

#: A cell's state: decided by valid runs (pass/fail), only infrastructure errors (invalid), or never run (missing).
CELL_STATES: Final[tuple[str, ...]] = ("pass", "fail", "invalid", "missing")

#: Cell colours (Okabe-Ito bluish green and vermillion stay apart for colour-blind readers).
STATE_COLOURS: Final[dict[str, str]] = {
    "pass": "#009E73",
    "fail": "#D55E00",
    "invalid": "#BBBBBB",
    "missing": "#FFFFFF",
}


_LEGEND_TEXT: Final[dict[str, str]] = {
    "pass": "pass",
    "fail": "fail",
    "invalid": "invalid only",
    "missing": "not run",
}


def task_evidence(
    trials: pl.DataFrame,
    dataset: str,
    task: str,
    *,
    models: Sequence[str] | None = None,
    caps: Sequence[int] = CAPS,
    pass_rule: str = "any",
) -> pl.DataFrame:
    """The evidence grid of one task: one row per (model, cap), sorted by model then cap.

    Parameters
    ----------
    trials : pl.DataFrame
        The trials table (``schema.TRIALS``); capped runs of the task are used.
    dataset, task : str
        The task.
    models : sequence of str, optional
        The models whose cells make the grid (and whose failures D needs). Default: every model
        with a run at a ladder cap in ``dataset``, as :func:`depthlab.estimate_depth` counts them.
    caps : sequence of int, default CAPS
        The cap ladder (the grid's columns).
    pass_rule : {"any", "majority"}, default "any"
        As in :func:`depthlab.estimate_depth`.

    Returns
    -------
    pl.DataFrame
        Columns :data:`EVIDENCE`. ``depth`` and ``depth_status`` repeat the task's estimate over
        the grid's models on every row; ``next`` marks the cells of
        ``plan_missing(mode="adaptive")``'s next round and ``needed`` those of its sweep. Empty
        when no model counts for the task.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": "a",
    ...     "cap": [1, 1, 2], "status": ["invalid", "invalid", "pass"], "n_turns": [None, None, 2]}), "trials")
    >>> task_evidence(trials, "d", "t", caps=(1, 2)).select("cap", "state", "n_runs", "depth_status").rows()
    [(1, 'invalid', 2, 'incomplete'), (2, 'pass', 1, 'incomplete')]
    """
    function = "task_evidence"
    check_frame(trials, "trials", function, ("dataset", "task", "model", "cap", "status", "n_turns"))
    for value, param in ((dataset, "dataset"), (task, "task")):
        check_string(value, param, function)
    models = check_models(models, function)
    caps = check_caps(caps, function)
    pass_rule = check_choice(pass_rule, "pass_rule", function, PASS_RULES)

    # the models counted are those of the whole collection (as estimate_depth counts them)
    collection = trials.filter(pl.col("dataset") == dataset)
    keys = pl.DataFrame({"dataset": [dataset], "task": [task]})
    grid = evidence_grid(collection, caps=caps, models=models, pass_rule=pass_rule, tasks=keys)
    if grid.is_empty():
        return pl.DataFrame(schema=EVIDENCE)
    estimate = depth_from_grid(grid, keys, caps=caps).row(0, named=True)
    grid_models = sorted(grid["model"].unique().to_list())
    upcoming = plan_missing(
        collection, keys, models=grid_models, caps=caps, mode="adaptive", pass_rule=pass_rule
    ).select("model", "cap")
    runs = (
        collection.filter((pl.col("task") == task) & pl.col("cap").is_in(caps))
        .sort("model", "cap", *(["attempt"] if "attempt" in collection.columns else []), "n_turns", nulls_last=True)
        .group_by("model", "cap", maintain_order=True)
        .agg(n_runs=pl.len().cast(pl.Int32), turns=pl.col("n_turns").cast(pl.Int32))
        .with_columns(pl.col("cap").cast(pl.Int32))
    )
    out = (
        grid.join(runs, on=["model", "cap"], how="left")
        .join(upcoming.with_columns(next=pl.lit(True)), on=["model", "cap"], how="left")
        .with_columns(
            n_runs=pl.col("n_runs").fill_null(0),
            turns=pl.col("turns").fill_null(pl.lit([], dtype=pl.List(pl.Int32))),
            next=pl.col("next").fill_null(False),
            depth=pl.lit(estimate["depth"], dtype=pl.Int32),
            depth_status=pl.lit(estimate["status"]),
        )
        .with_columns(
            state=pl.when((pl.col("state") == "missing") & (pl.col("n_runs") > pl.col("n_valid")))
            .then(pl.lit("invalid"))
            .otherwise(pl.col("state"))
        )
    )
    return out.select([pl.col(name).cast(dtype) for name, dtype in EVIDENCE.items()]).sort("model", "cap")


def evidence_plot(
    cells: pl.DataFrame,
    *,
    ax: Axes | None = None,
    cap: int | None = None,
    selected: tuple[str, int] | None = None,
    palette: dict[str, str] | None = None,
    legend: bool = True,
) -> Axes:
    """Draw one task's evidence grid: models down, caps across, each cell coloured by its state.

    Each cell is labelled with the turns each of its runs took (``×`` for a run without a turn
    count, such as an infrastructure error). The task's estimated D is the dashed column line, each
    model's own D a black dot in its cell; the cells ``plan_missing`` would run in its next
    adaptive round read "next", the further ones its sweep needs read "needed".

    Parameters
    ----------
    cells : pl.DataFrame
        One task's grid from :func:`task_evidence`.
    ax : matplotlib Axes, optional
        Where to draw; default a new figure's single axes.
    cap : int, optional
        A cap whose column is shaded (the explorer's chosen cap).
    selected : (model, cap), optional
        A cell outlined in black (the explorer's selected run).
    palette : dict, optional
        State -> colour, overriding :data:`STATE_COLOURS`.
    legend : bool, default True
        Draw the legend of states and marks below the grid.

    Returns
    -------
    Axes

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": "a",
    ...     "cap": [1, 2], "status": ["fail", "pass"], "n_turns": [1, 2]}), "trials")
    >>> ax = evidence_plot(task_evidence(trials, "d", "t", caps=(1, 2, 3)))
    >>> ax.get_title()
    'd / t: D = 2 (solved)'
    """
    check_frame(cells, "cells", "evidence_plot", tuple(EVIDENCE))
    colours = {**STATE_COLOURS, **(palette or {})}
    if ax is None:
        with mpl.rc_context(RC):
            ax = ShownFigure(figsize=(4.6, 2.4), layout="constrained").subplots()
    if cells.is_empty():
        ax.text(0.5, 0.5, "no model has a capped run here", ha="center", va="center", transform=ax.transAxes)
        ax.set_xticks([])
        ax.set_yticks([])
        return ax
    ladder = sorted(cells["cap"].unique().to_list())
    models = sorted(cells["model"].unique().to_list())
    column = {c: i for i, c in enumerate(ladder)}
    row = {m: i for i, m in enumerate(models)}
    first = cells.row(0, named=True)
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if cap in column:
        ax.add_patch(Rectangle((column[cap] - 0.5, -0.5), 1, len(models), color="#0072B2", alpha=0.15, zorder=0))
    fontsize = 7 if len(ladder) <= 8 else 6
    for cell in cells.iter_rows(named=True):
        x, y = column[cell["cap"]], row[cell["model"]]
        ax.add_patch(
            Rectangle(
                (x - 0.45, y - 0.4),
                0.9,
                0.8,
                facecolor=colours[cell["state"]],
                edgecolor="#444444" if cell["state"] == "missing" else "none",
                linewidth=0.8,
                hatch="///" if cell["state"] == "invalid" else None,
                zorder=1,
            )
        )
        label = ",".join("×" if t is None else str(t) for t in cell["turns"])
        if cell["next"] or cell["needed"]:
            mark = "next" if cell["next"] else "needed"
            label = f"{label}\n{mark}" if label else mark
        dark = cell["state"] in ("pass", "fail")
        ax.text(x, y + 0.12, label, ha="center", va="center", fontsize=fontsize, color="white" if dark else "#222222")
        if cell["model_depth"] == cell["cap"]:
            ax.plot(x, y - 0.22, marker="o", markersize=3.5, color="black", zorder=3)
    if selected is not None and selected[0] in row and selected[1] in column:
        x, y = column[selected[1]], row[selected[0]]
        ax.add_patch(Rectangle((x - 0.5, y - 0.47), 1, 0.94, fill=False, edgecolor="black", linewidth=2, zorder=4))
    depth, status = first["depth"], first["depth_status"]
    if depth is not None and depth in column:
        ax.axvline(column[depth] - 0.5, color="black", linestyle="--", linewidth=1.2, zorder=2)
    ax.set_xlim(-0.5, len(ladder) - 0.5)
    ax.set_ylim(len(models) - 0.5, -0.5)
    ax.set_xticks(range(len(ladder)), [str(c) for c in ladder])
    ax.set_yticks(range(len(models)), _model_labels(models))
    ax.tick_params(length=0)
    ax.set_xlabel("stated turn cap")
    shown = f"D = {depth}" if depth is not None else "D not pinned"
    ax.set_title(f"{first['dataset']} / {first['task']}: {shown} ({status})")
    if legend:
        ax.legend(
            handles=_legend_handles(colours),
            loc="upper center",
            bbox_to_anchor=(0.5, -0.32),
            ncols=4,
            fontsize=7,
            frameon=False,
            handlelength=1.4,
            columnspacing=1.0,
        )
    return ax


def evidence_grids(
    trials: pl.DataFrame | DataSource,
    tasks: pl.DataFrame,
    *,
    models: Sequence[str] | None = None,
    caps: Sequence[int] = CAPS,
    pass_rule: str = "any",
    ncols: int = 2,
) -> Figure:
    """The evidence grids of a few tasks as one figure (figure-level wrapper of :func:`evidence_plot`).

    Parameters
    ----------
    trials : pl.DataFrame or AuditData
        The trials table, or an :class:`~depthlab.auditdata.AuditData` (its trials; simulated data
        is stamped so).
    tasks : pl.DataFrame
        The tasks to draw (columns dataset, task), one panel each in row order, e.g. from
        :func:`example_tasks`.
    models, caps, pass_rule
        As in :func:`task_evidence`.
    ncols : int, default 2
        Panels per row.

    Returns
    -------
    Figure

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": ["t", "u"], "model": "a",
    ...     "cap": 1, "status": ["pass", "fail"], "n_turns": 1}), "trials")
    >>> len(evidence_grids(trials, trials.select("dataset", "task")).axes)
    2
    """
    function = "evidence_grids"
    trials, simulated = table_of(trials, "trials", "trials", function)
    check_frame(tasks, "tasks", function, TASK_KEYS)
    ncols = check_positive_int(ncols, "ncols", function)
    keys = tasks.select(TASK_KEYS).rows()
    n = max(len(keys), 1)
    ncols = min(ncols, n)
    nrows = math.ceil(n / ncols)
    with mpl.rc_context(RC):
        fig = ShownFigure(figsize=(4.8 * ncols, 2.2 * nrows + 0.5), layout="constrained")
        axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel().tolist()
        for ax in axes[len(keys) :]:
            ax.set_visible(False)
        if not keys:
            axes[0].set_visible(True)
            axes[0].text(0.5, 0.5, "no task chosen", ha="center", va="center", transform=axes[0].transAxes)
            axes[0].set_axis_off()
        for ax, (dataset, task) in zip(axes, keys, strict=False):
            cells = task_evidence(trials, dataset, task, models=models, caps=caps, pass_rule=pass_rule)
            evidence_plot(cells, ax=ax, legend=False)
        if keys:
            fig.legend(handles=_legend_handles(STATE_COLOURS), loc="outside lower center", ncols=8, frameon=False)
    return stamp(fig, simulated)


def example_tasks(audit: pl.DataFrame, *, n: int = 4) -> pl.DataFrame:
    """A few telling tasks for static evidence grids: columns dataset, task, why.

    Picks, in this order and each at most once: the deepest solved task, a solved task of D = 1,
    an unsolved task, an incomplete task, then further solved tasks from deep to shallow;
    ties go to the collection listed first, then the task name, so the choice is stable.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (columns dataset, task, depth, depth_status).
    n : int, default 4
        How many tasks at most.

    Examples
    --------
    >>> import polars as pl
    >>> audit = pl.DataFrame({"dataset": "d", "task": ["a", "b", "c"], "depth": [1, 5, None],
    ...     "depth_status": ["solved", "solved", "unsolved"]})
    >>> example_tasks(audit).rows()
    [('d', 'b', 'deepest solved'), ('d', 'a', 'solved at D = 1'), ('d', 'c', 'unsolved')]
    """
    function = "example_tasks"
    check_frame(audit, "audit", function, (*TASK_KEYS, "depth", "depth_status"))
    n = check_positive_int(n, "n", function)
    ordered = audit.sort("dataset", "task")
    solved = ordered.filter(pl.col("depth_status") == "solved").sort("depth", descending=True, maintain_order=True)
    picks = [
        (solved.head(1), "deepest solved"),
        (solved.filter(pl.col("depth") == 1).head(1), "solved at D = 1"),
        (ordered.filter(pl.col("depth_status") == "unsolved").head(1), "unsolved"),
        (ordered.filter(pl.col("depth_status") == "incomplete").head(1), "incomplete"),
        (solved, "solved"),
    ]
    rows: list[tuple[str, str, str]] = []
    for frame, why in picks:
        for dataset, task in frame.select(TASK_KEYS).rows():
            if len(rows) < n and all((dataset, task) != (d, t) for d, t, _ in rows):
                rows.append((dataset, task, why))
    return pl.DataFrame(rows, schema=EXAMPLE_TASKS, orient="row")


def _legend_handles(colours: dict[str, str]) -> list[Artist]:
    handles: list[Artist] = [
        Patch(
            facecolor=colours[state],
            edgecolor="#444444",
            linewidth=0.6,
            hatch="///" if state == "invalid" else None,
            label=_LEGEND_TEXT[state],
        )
        for state in CELL_STATES
    ]
    handles.append(Line2D([], [], marker="o", markersize=3.5, color="black", linestyle="", label="model's own D"))
    handles.append(Line2D([], [], color="black", linestyle="--", linewidth=1.2, label="estimated D"))
    handles.append(Line2D([], [], linestyle="", label="numbers: turns per run"))
    handles.append(Line2D([], [], linestyle="", label="×: no turn count"))
    return handles


def _model_labels(models: Sequence[str]) -> list[str]:
    # provider prefixes ("openai/", "sim/") take room the grid needs; drop them when the rest is unique
    short = [model.rsplit("/", 1)[-1] for model in models]
    return short if len(set(short)) == len(short) else list(models)
