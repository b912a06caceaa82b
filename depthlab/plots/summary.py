"""The collections at a glance (notebook ``01_collections``): depth of the solved tasks, work W, turns N.

* :func:`collection_summary` (figure-level) draws with :func:`collection_summary_plot` (the depth
  shares of solved tasks, one row per collection) and :func:`strip_plot` (W and N per task);
* :func:`strip_plot` is the general axes-level strip of any audit column per collection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from depthlab._checks import check_frame
from depthlab.catalog import MEDIAN_COLOUR, name
from depthlab.plots._core import (
    DataSource,
    Palette,
    ShownFigure,
    into_axes,
    median_handle,
    order_of,
    palette_of,
    plain_log,
    scale_words,
    stamp,
    style,
    table_of,
)
from depthlab.plots._docstrings import fill

# depth bins for shares of solved tasks, as in the paper: D = 1, 2-3, 5-10, 20+ (a sequential
# scale, light = shallow, so it cannot be read as collection colours)
_DEPTH_BINS: Final[tuple[tuple[str, int, int], ...]] = (
    ("D = 1", 1, 1),
    ("D = 2–3", 2, 3),
    ("D = 5–10", 5, 10),
    ("D ≥ 20", 20, 10**9),
)

_DEPTH_BIN_COLOURS: Final[tuple[str, ...]] = ("#FEE8C8", "#FDBB84", "#E34A33", "#7F0000")


@fill
def collection_summary_plot(audit: pl.DataFrame, *, order: Sequence[str] | None = None, ax: Axes | None = None) -> Axes:
    """Stacked bars, one row per collection: shares of *solved* tasks with D = 1, 2–3, 5–10, ≥ 20.

    Each row is annotated with solved / all tasks. Rows follow ``order``, top to bottom. The left
    panel of :func:`collection_summary` (formerly ``depth_shares_plot``).

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (columns dataset, depth, depth_status).
    {order}
    {ax}

    {returns_axes}

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tmax"] * 2, "task": ["a", "b"],
    ...     "depth": [1, 5], "depth_status": ["solved"] * 2}), "audit")
    >>> [float(p.get_width()) for p in collection_summary_plot(audit).patches]
    [0.5, 0.0, 0.5, 0.0]
    """
    function = "collection_summary_plot"
    check_frame(audit, "audit", function, ("dataset", "depth", "depth_status"))
    keys = order_of(audit, order, function)
    with into_axes(ax, function, (5, 0.45 * len(keys) + 1.2)) as ax:
        for row, dataset in enumerate(keys):
            rows = audit.filter(pl.col("dataset") == dataset)
            solved = rows.filter(pl.col("depth_status") == "solved")["depth"].drop_nulls().to_numpy()
            left = 0.0
            for (label, low, high), colour in zip(_DEPTH_BINS, _DEPTH_BIN_COLOURS, strict=True):
                share = float(np.mean((solved >= low) & (solved <= high))) if solved.size else 0.0
                ax.barh(row, share, left=left, color=colour, label=label if row == 0 else None, height=0.7)
                if share >= 0.08:
                    ink = "white" if colour in _DEPTH_BIN_COLOURS[2:] else "black"
                    ax.text(left + share / 2, row, f"{share:.0%}", ha="center", va="center", fontsize=7, color=ink)
                left += share
            note = f"{solved.size}/{rows.height}\nsolved"
            ax.text(1.02, row, note, va="center", fontsize=7, transform=ax.get_yaxis_transform())
        ax.set_yticks(np.arange(len(keys)), [name(d) for d in keys])
        ax.set_ylim(len(keys) - 0.5, -0.5)
        ax.set_xlim(0, 1)
        ax.xaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
        ax.set_xlabel("share of solved tasks")
        ax.grid(False)
        if not audit.filter(pl.col("depth_status") == "solved").height:
            ax.text(
                0.5, 0.5, "no capped runs: D unknown", ha="center", va="center", color="#666666", transform=ax.transAxes
            )
    return ax


@fill
def strip_plot(
    audit: pl.DataFrame,
    column: str,
    *,
    order: Sequence[str] | None = None,
    palette: Palette = None,
    log: bool = True,
    ax: Axes | None = None,
) -> Axes:
    """Jittered points of ``column`` per collection (one row each) with a black median tick.

    Drawn with :func:`seaborn.stripplot`; rows follow ``order``, top to bottom, so the panel can
    share its y axis with :func:`collection_summary_plot`.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (columns dataset and ``column``).
    column : str
        The column to draw (numeric; W and N in :func:`collection_summary`).
    {order}
    {palette}
    log : bool, default True
        Log scale with plain numbers (non-positive values are left out).
    {ax}

    {returns_axes}

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2", "tw"], "task": ["a", "b"],
    ...     "work": [10, 50]}), "audit")
    >>> [t.get_text() for t in strip_plot(audit, "work").get_yticklabels()]
    ['TB2', 'TW-Verified']
    """
    import seaborn as sns

    function = "strip_plot"
    check_frame(audit, "audit", function, ("dataset", column))
    keys = order_of(audit, order, function)
    colour = palette_of(palette, function)
    rows = audit.filter(pl.col("dataset").is_in(keys) & pl.col(column).is_not_null())
    rows = rows.with_columns(pl.col(column).cast(pl.Float64))
    if log:
        rows = rows.filter(pl.col(column) > 0)
    with into_axes(ax, function, (4, 0.45 * len(keys) + 1.2)) as ax:
        if rows.height:
            frame = rows.select("dataset", column).to_pandas()
            sns.stripplot(
                data=frame,
                x=column,
                y="dataset",
                order=keys,
                hue="dataset",
                hue_order=keys,
                palette={k: colour(k) for k in keys},
                jitter=0.25,
                size=2.5,
                alpha=0.45,
                linewidth=0,
                legend=False,
                ax=ax,
            )
        for row, dataset in enumerate(keys):
            values = rows.filter(pl.col("dataset") == dataset)[column].to_numpy()
            if values.size:
                ax.plot([np.median(values)] * 2, [row - 0.35, row + 0.35], color=MEDIAN_COLOUR, linewidth=1.6)
        ax.set_yticks(np.arange(len(keys)), [name(d) for d in keys])
        ax.set_ylim(len(keys) - 0.5, -0.5)
        ax.set_ylabel("")
        if log and rows.height:
            plain_log(ax, "x")
        if not rows.height:
            ax.text(
                0.5, 0.5, f"no task has {column}", ha="center", va="center", transform=ax.transAxes, color="#666666"
            )
            ax.set_xticks([])
        ax.grid(axis="y", visible=False)
    return ax


@fill
def collection_summary(
    audit: pl.DataFrame | DataSource, *, order: Sequence[str] | None = None, palette: Palette = None
) -> Figure:
    """Per collection: depth shares of solved tasks, work W and uncapped turns N.

    Left: :func:`collection_summary_plot`. Middle and right: :func:`strip_plot` of W and N per task
    (log scale), each with its median.

    Parameters
    ----------
    audit : pl.DataFrame or AuditData
        The audit table (columns dataset, depth, depth_status, work, n_turns), or an
        :class:`~depthlab.auditdata.AuditData` (its audit table; simulated data is stamped so).
    {order}
    {palette}

    {returns_figure}

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tmax"] * 3, "task": list("abc"),
    ...     "depth": [1, 2, None], "depth_status": ["solved", "solved", "unsolved"],
    ...     "work": [5, 20, 40], "n_turns": [8.0, 12.0, 30.0]}), "audit")
    >>> [ax.get_xlabel() for ax in collection_summary(audit).axes]
    ['share of solved tasks', 'work W (solution lines, log scale)', 'turns N (median uncapped, log scale)']
    """
    function = "collection_summary"
    audit, simulated = table_of(audit, "audit", "audit", function)
    check_frame(audit, "audit", function, ("dataset", "depth", "depth_status", "work", "n_turns"))
    keys = order_of(audit, order, function)
    with style():
        fig = ShownFigure(figsize=(10, max(2.8, 0.45 * len(keys) + 1.6)), layout="constrained")
        ax_depth, ax_work, ax_turns = fig.subplots(1, 3, sharey=True, gridspec_kw={"width_ratios": [1.3, 1, 1]})
        collection_summary_plot(audit, order=keys, ax=ax_depth)
        strip_plot(audit, "work", order=keys, palette=palette, ax=ax_work)
        strip_plot(audit, "n_turns", order=keys, palette=palette, ax=ax_turns)
        ax_work.set_xlabel(f"work W (solution lines{scale_words(ax_work, 'x')})")
        ax_turns.set_xlabel(f"turns N (median uncapped{scale_words(ax_turns, 'x')})")
        for ax in (ax_work, ax_turns):
            ax.tick_params(labelleft=False)
        # one legend row: the depth bins (when a task is solved), then the median ticks of W and N
        solved = audit.filter(pl.col("depth_status") == "solved").height > 0
        handles = ax_depth.get_legend_handles_labels()[0] if solved else []
        title = "depth of solved tasks; median of W and N" if solved else None
        fig.legend(handles=[*handles, median_handle()], loc="outside lower left", ncol=len(handles) + 1, title=title)
        fig.suptitle("Collections: how deep are the solved tasks, how much work, how many turns", fontsize=10)
    return stamp(fig, simulated)
