"""How sure D is (notebook ``08_depth_uncertainty``): D's distribution with the unsolved tasks counted.

:func:`depth_distribution` (figure-level, a panel per collection) draws with
:func:`depth_distribution_plot` (axes-level): the share of tasks at or below each cap, over every
task with the unsolved ones right-censored above the top cap (Turnbull,
:func:`depthlab.measures.censored_distribution`), beside the paper's share over solved tasks only.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from depthlab._checks import check_frame, parameter_error
from depthlab.catalog import name
from depthlab.measures.censored import censored_distribution
from depthlab.plots._core import (
    NEUTRAL,
    Palette,
    empty_note,
    into_axes,
    new_panels,
    order_of,
    palette_of,
    stamp,
    table_of,
)
from depthlab.plots._docstrings import fill

_COLUMNS = ("dataset", "variant", "depth", "share", "cumulative", "n_tasks")


def _positions(table: pl.DataFrame) -> tuple[list[int], list[str]]:
    """The caps drawn (one evenly spaced position each, the ladder's rungs) and their labels, ``> top`` last."""
    caps = sorted(int(c) for c in table["depth"].drop_nulls().unique().to_list())
    beyond = bool(table["depth"].is_null().any())
    labels = [str(c) for c in caps] + ([f"> {caps[-1]}" if caps else "beyond"] if beyond else [])
    return caps, labels


@fill
def depth_distribution_plot(
    table: pl.DataFrame, *, dataset: str | None = None, color: str | None = None, ax: Axes | None = None
) -> Axes:
    """The share of tasks with D at or below each cap: every task (unsolved counted) beside solved tasks only.

    Parameters
    ----------
    table : pl.DataFrame
        The output of :func:`depthlab.measures.censored_distribution` (columns dataset, variant,
        depth, share, cumulative, n_tasks).
    dataset : str, optional
        The collection to draw; default the table's only one.
    {color}
    {ax}

    {returns_axes}

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> table = pl.DataFrame({"dataset": "tb2", "variant": ["censored"] * 3 + ["solved_only"] * 2,
    ...     "depth": [1, 3, None, 1, 3], "share": [0.4, 0.4, 0.2, 0.5, 0.5],
    ...     "cumulative": [0.4, 0.8, 1.0, 0.5, 1.0], "n_tasks": [5, 5, 5, 4, 4]},
    ...     schema=schema.CENSORED_DISTRIBUTION)
    >>> depth_distribution_plot(table).get_ylabel()
    'share of tasks with D ≤ cap'
    """
    function = "depth_distribution_plot"
    check_frame(table, "table", function, _COLUMNS)
    if dataset is not None:
        table = table.filter(pl.col("dataset") == dataset)
    datasets = table["dataset"].unique().to_list()
    with into_axes(ax, function, (4.2, 3.2)) as ax:
        if not table.height:
            empty_note(ax, "no solved or unsolved task")
            return ax
        if len(datasets) > 1:
            raise parameter_error("table", function, "one collection's rows (or dataset=)", sorted(datasets))
        ink = color or palette_of(None, function)(datasets[0])
        caps, labels = _positions(table)
        place = {cap: i for i, cap in enumerate(caps)}
        for variant, style, words in (
            ("censored", "-", "every task, unsolved counted (Turnbull)"),
            ("solved_only", "--", "solved tasks only (the paper's)"),
        ):
            rows = table.filter(pl.col("variant") == variant)
            if not rows.height:
                continue
            x = [place[int(d)] if d is not None else len(caps) for d in rows["depth"].to_list()]
            ax.step(
                [-0.5, *x],
                [0.0, *rows["cumulative"].to_list()],
                where="post",
                linestyle=style,
                color=ink if variant == "censored" else NEUTRAL,
                linewidth=1.6,
                label=f"{words}, n = {rows['n_tasks'][0]}",
            )
        ax.set_xticks(range(len(labels)), labels)
        ax.set_xlim(-0.5, len(labels) - 0.5)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("cap (turns), D read as the cap that reaches it")
        ax.set_ylabel("share of tasks with D ≤ cap")
        ax.legend(loc="lower right")
    return ax


@fill
def depth_distribution(
    source: object, *, order: Sequence[str] | None = None, palette: Palette = None, ncols: int = 3
) -> Figure:
    """D's distribution per collection with the unsolved tasks counted, beside the solved-only one.

    Parameters
    ----------
    source : AuditData or pl.DataFrame
        An :class:`~depthlab.auditdata.AuditData` (its depth table is used) or a depth table
        (:func:`~depthlab.measures.estimate_depth`: dataset, task, status, depth, depth_low,
        depth_high).
    {order}
    {palette}
    ncols : int, default 3
        Panels per row.

    {returns_figure}

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> depth = schema.conform(pl.DataFrame({"dataset": "tb2", "task": list("abcd"),
    ...     "status": ["solved", "solved", "solved", "unsolved"], "depth": [1, 2, 10, None],
    ...     "depth_low": [0, 1, 5, 80], "depth_high": [1, 2, 10, None]}), "depth")
    >>> depth_distribution(depth).axes[0].get_title()
    'TB2: 4 tasks, 1 unsolved'
    """
    function = "depth_distribution"
    depth, simulated = table_of(source, "depth", "source", function)
    table = censored_distribution(depth)
    datasets = order_of(table, order, function)
    colour = palette_of(palette, function)
    with new_panels(len(datasets), width=4.2, height=3.2, ncols=ncols, sharey=True) as (fig, axes):
        for dataset, ax in zip(datasets, axes, strict=False):
            rows = table.filter(pl.col("dataset") == dataset)
            depth_distribution_plot(rows, color=colour(dataset), ax=ax)
            censored = rows.filter(pl.col("variant") == "censored")
            n = int(censored["n_tasks"][0]) if censored.height else 0
            unsolved = censored.filter(pl.col("depth").is_null())["share"].sum() * n
            ax.set_title(f"{name(dataset)}: {n} tasks, {round(unsolved)} unsolved")
        if not datasets:
            empty_note(axes[0], "no solved or unsolved task")
    return stamp(fig, simulated)
