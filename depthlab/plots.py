"""Figures of the audit, in the seaborn manner: tidy tables in, matplotlib figures out.

Two levels, as in seaborn:

* **axes-level** functions draw one panel into the :class:`~matplotlib.axes.Axes` given as
  ``ax=`` (a new figure when omitted) and return that Axes, so a figure of your own can combine
  them: :func:`depth_shares_plot`, :func:`strip_plot`, :func:`turns_depth_plot`,
  :func:`turns_minus_depth_plot`, :func:`depth_given_turns_plot`, :func:`forest_plot`,
  :func:`work_pass_plot`, :func:`turns_ecdf_plot`, :func:`label_plot`, :func:`quadrants_plot`,
  :func:`segment_reliability_plot`, :func:`compounding_plot` and :func:`paired_depths_plot`;
* **figure-level** functions lay out panels, legends and titles and return a
  :class:`~matplotlib.figure.Figure`: :func:`collection_summary`, :func:`turns_vs_depth`,
  :func:`turns_minus_depth`, :func:`depth_given_turns`, :func:`forest`,
  :func:`work_vs_pass_rate`, :func:`turns_by_model`, :func:`label_pass_rates`,
  :func:`label_depths`, :func:`quadrants`, :func:`segment_reliability` and :func:`paired_depths`.

Functions that draw collections take ``order`` (which collections, in which order; default: the
ones present, in :data:`depthlab.catalog.ORDER`) and ``palette`` (a mapping collection ->
colour; default :func:`depthlab.catalog.color`, the same colour in every figure). Grey
always means *pooled over collections* and black a *median*; neither ever stands for a
collection. Every figure shares one style (:data:`RC`) and is built on
:class:`matplotlib.figure.Figure` directly, without pyplot's global state, so it renders
headless and never accumulates. :func:`save` writes PNG and PDF.

Plots take tables and return figures; they never read files. The statistics they draw (Wilson
intervals, Holm-adjusted p-values) come from :mod:`depthlab.stats`.

>>> import polars as pl
>>> from depthlab import plots, schema
>>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2", "tb2"], "task": ["a", "b"],
...     "depth": [1, 3], "depth_status": ["solved", "solved"], "n_turns": [4.0, 9.0],
...     "work": [10, 50], "pass_rate": [0.8, 0.2]}), "audit")
>>> fig = plots.turns_vs_depth(audit)
>>> len(fig.axes)
1
>>> ax = plots.turns_minus_depth_plot(audit, order=["tb2"])
>>> ax.get_xlabel()
'N − D (turns taken minus depth)'
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from depthlab import catalog
from depthlab._checks import check_choice, check_frame, check_names, check_number
from depthlab.catalog import MEDIAN_COLOUR, NAMES, ORDER, PALETTE, POOLED_COLOUR, color, name
from depthlab.schema import CAPS

__all__ = [
    "NAMES",
    "ORDER",
    "PALETTE",
    "RC",
    "collection_summary",
    "color",
    "compounding_plot",
    "depth_given_turns",
    "depth_given_turns_plot",
    "depth_shares_plot",
    "forest",
    "forest_plot",
    "label_depths",
    "label_pass_rates",
    "label_plot",
    "name",
    "paired_depths",
    "paired_depths_plot",
    "quadrants",
    "quadrants_plot",
    "save",
    "segment_reliability",
    "segment_reliability_by_model",
    "segment_reliability_by_model_plot",
    "segment_reliability_plot",
    "strip_plot",
    "turns_by_model",
    "turns_depth_plot",
    "turns_ecdf_plot",
    "turns_minus_depth",
    "turns_minus_depth_plot",
    "turns_vs_depth",
    "work_pass_plot",
    "work_vs_pass_rate",
]

#: A palette: collection (or model) name -> colour, or None for the default.
Palette = Mapping[str, str] | None

#: The shared matplotlib style: readable sizes, no top/right spines, light grid.
RC: Final[dict[str, object]] = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "pdf.fonttype": 42,  # embed TrueType so PDF text stays selectable
}

# depth bins for shares of solved tasks, as in the paper: D = 1, 2-3, 5-10, 20+ (a sequential
# scale, light = shallow, so it cannot be read as collection colours)
_DEPTH_BINS: Final[tuple[tuple[str, int, int], ...]] = (
    ("D = 1", 1, 1),
    ("D = 2–3", 2, 3),
    ("D = 5–10", 5, 10),
    ("D ≥ 20", 20, 10**9),
)
_DEPTH_BIN_COLOURS: Final[tuple[str, ...]] = ("#FEE8C8", "#FDBB84", "#E34A33", "#7F0000")
_LABEL_ORDER: Final[tuple[str, ...]] = ("easy", "medium", "hard")
# models are not collections: a separate set of dark hues (no grey: grey means pooled)
_MODEL_COLOURS: Final[tuple[str, ...]] = (
    "#1F77B4",
    "#D62728",
    "#2CA02C",
    "#9467BD",
    "#8C564B",
    "#E377C2",
    "#17BECF",
    "#BCBD22",
    "#FF7F0E",
)
_NEUTRAL: Final[str] = "#444444"
# the audit columns every turns-beside-depth figure reads
_TURNS_AND_DEPTH: Final[tuple[str, ...]] = ("dataset", "depth", "depth_status", "n_turns")


def save(fig: Figure, name: str, figures_dir: str | Path) -> tuple[Path, Path]:
    """Write ``fig`` to ``<figures_dir>/<name>.png`` and ``.pdf``; return both paths.

    Parameters
    ----------
    fig : Figure
        A figure from this module (or any matplotlib Figure).
    name : str
        File stem: letters, digits, ``-`` and ``_`` only.
    figures_dir : str or Path
        Folder to write to; created when missing.

    Examples
    --------
    >>> import tempfile
    >>> from matplotlib.figure import Figure
    >>> png, pdf = save(Figure(), "empty", tempfile.mkdtemp())
    >>> png.suffix, pdf.suffix
    ('.png', '.pdf')
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"The 'fig' parameter of save must be a matplotlib Figure, got {type(fig).__name__}")
    if not isinstance(name, str) or not name or not all(ch.isalnum() or ch in "-_" for ch in name):
        raise ValueError(f"The 'name' parameter of save must be a non-empty file stem of [A-Za-z0-9_-], got {name!r}")
    folder = Path(figures_dir)
    folder.mkdir(parents=True, exist_ok=True)
    paths = (folder / f"{name}.png", folder / f"{name}.pdf")
    with mpl.rc_context(RC):
        for path in paths:
            fig.savefig(path, bbox_inches="tight", metadata=_metadata(path.suffix))
    return paths


# ---------------------------------------------------------------------------------------------
# collection summary


def depth_shares_plot(audit: pl.DataFrame, *, order: Sequence[str] | None = None, ax: Axes | None = None) -> Axes:
    """Stacked bars, one row per collection: shares of *solved* tasks with D = 1, 2–3, 5–10, ≥ 20.

    Each row is annotated with solved / all tasks. Rows follow ``order``, top to bottom.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tmax"] * 2, "task": ["a", "b"],
    ...     "depth": [1, 5], "depth_status": ["solved"] * 2}), "audit")
    >>> [float(p.get_width()) for p in depth_shares_plot(audit).patches]
    [0.5, 0.0, 0.5, 0.0]
    """
    function = "depth_shares_plot"
    check_frame(audit, "audit", function, ("dataset", "depth", "depth_status"))
    keys = _order(audit, order, function)
    with _style():
        ax = _axes(ax, function, (5, 0.45 * len(keys) + 1.2))
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
    share its y axis with :func:`depth_shares_plot`.

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
    keys = _order(audit, order, function)
    colour = _palette(palette, function)
    rows = audit.filter(pl.col("dataset").is_in(keys) & pl.col(column).is_not_null())
    rows = rows.with_columns(pl.col(column).cast(pl.Float64))
    if log:
        rows = rows.filter(pl.col(column) > 0)
    with _style():
        ax = _axes(ax, function, (4, 0.45 * len(keys) + 1.2))
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
            _plain_log(ax, "x")
        ax.grid(axis="y", visible=False)
    return ax


def collection_summary(audit: pl.DataFrame, *, order: Sequence[str] | None = None, palette: Palette = None) -> Figure:
    """Per collection: depth shares of solved tasks, work W and uncapped turns N.

    Left: :func:`depth_shares_plot`. Middle and right: :func:`strip_plot` of W and N per task
    (log scale), each with its median.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (columns dataset, depth, depth_status, work, n_turns).
    order : sequence of str, optional
        Collections to draw, top to bottom (default: those present, in display order).
    palette : mapping of str to colour, optional
        Colour per collection (default :func:`depthlab.catalog.color`).

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
    check_frame(audit, "audit", function, ("dataset", "depth", "depth_status", "work", "n_turns"))
    keys = _order(audit, order, function)
    with _style():
        fig = Figure(figsize=(10, max(2.8, 0.45 * len(keys) + 1.6)), layout="constrained")
        ax_depth, ax_work, ax_turns = fig.subplots(1, 3, sharey=True, gridspec_kw={"width_ratios": [1.3, 1, 1]})
        depth_shares_plot(audit, order=keys, ax=ax_depth)
        strip_plot(audit, "work", order=keys, palette=palette, ax=ax_work)
        strip_plot(audit, "n_turns", order=keys, palette=palette, ax=ax_turns)
        ax_work.set_xlabel("work W (solution lines, log scale)")
        ax_turns.set_xlabel("turns N (median uncapped, log scale)")
        for ax in (ax_work, ax_turns):
            ax.tick_params(labelleft=False)
        # one legend row: the depth bins (when a task is solved), then the median ticks of W and N
        solved = audit.filter(pl.col("depth_status") == "solved").height > 0
        handles = ax_depth.get_legend_handles_labels()[0] if solved else []
        title = "depth of solved tasks; median of W and N" if solved else None
        fig.legend(handles=[*handles, _median_handle()], loc="outside lower left", ncol=len(handles) + 1, title=title)
        fig.suptitle("Collections: how deep are the solved tasks, how much work, how many turns", fontsize=10)
    return fig


# ---------------------------------------------------------------------------------------------
# turns N beside depth D


def turns_depth_plot(
    audit: pl.DataFrame, dataset: str, *, caps: Sequence[int] = CAPS, color: str | None = None, ax: Axes | None = None
) -> Axes:
    """One collection's histograms of N (outlined bars) beside D (filled bars) on the cap ladder.

    Each bar group is one rung of the ladder: D counts the solved tasks whose depth is that cap;
    N counts the tasks whose median uncapped turn count falls in the interval ending at that cap
    (above the previous rung). Tasks with N above the top cap form a last group. Both bars take
    the collection's colour; the fill tells N from D.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"], "depth": [1, 3],
    ...     "depth_status": ["solved"] * 2, "n_turns": [4.0, 9.0]}), "audit")
    >>> turns_depth_plot(audit, "tb2").get_title()
    'TB2 (2 tasks, 2 solved)'
    """
    function = "turns_depth_plot"
    check_frame(audit, "audit", function, _TURNS_AND_DEPTH)
    ladder = _ladder(caps, function)
    labels = [*(_rung_label(ladder, i) for i in range(len(ladder))), f">{ladder[-1]}"]
    hue = catalog.color(dataset) if color is None else color
    rows = audit.filter(pl.col("dataset") == dataset)
    depth = rows.filter(pl.col("depth_status") == "solved")["depth"].drop_nulls().to_numpy()
    turns = rows["n_turns"].drop_nulls().to_numpy()
    with _style():
        ax = _axes(ax, function, (4.0, 2.6))
        x = np.arange(len(labels))
        depth_counts = [int(np.sum(depth == cap)) for cap in ladder] + [0]
        ax.bar(
            x - 0.2,
            _rung_counts(turns, ladder),
            width=0.4,
            facecolor="white",
            edgecolor=hue,
            linewidth=1.1,
            label="turns N (uncapped)",
        )
        ax.bar(x + 0.2, depth_counts, width=0.4, color=hue, label="depth D (solved)")
        ax.set_xticks(x, labels, fontsize=7)
        ax.set_title(f"{name(dataset)} ({rows.height} tasks, {depth.size} solved)")
        ax.set_xlabel("turns (ladder rung)")
        ax.set_ylabel("tasks")
        ax.grid(axis="x", visible=False)
        ax.yaxis.set_major_locator(mpl.ticker.MaxNLocator(integer=True))
    return ax


def turns_vs_depth(
    audit: pl.DataFrame,
    *,
    caps: Sequence[int] = CAPS,
    order: Sequence[str] | None = None,
    palette: Palette = None,
) -> Figure:
    """Histograms of turns N beside depth D, one panel per collection (:func:`turns_depth_plot`).

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, depth, depth_status, n_turns).
    caps : sequence of int
        The ladder (default :data:`depthlab.CAPS`).
    order, palette
        Collections to draw and their colours (defaults: :mod:`depthlab.catalog`).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"], "depth": [1, 3],
    ...     "depth_status": ["solved"] * 2, "n_turns": [4.0, 9.0]}), "audit")
    >>> turns_vs_depth(audit).axes[0].get_title()
    'TB2 (2 tasks, 2 solved)'
    """
    function = "turns_vs_depth"
    check_frame(audit, "audit", function, _TURNS_AND_DEPTH)
    _ladder(caps, function)
    keys = _order(audit, order, function)
    colour = _palette(palette, function)
    with _style():
        fig, axes = _panels(len(keys), width=4.0, height=2.5)
        for ax, dataset in zip(axes, keys, strict=False):
            turns_depth_plot(audit, dataset, caps=caps, color=colour(dataset), ax=ax)
        # neutral legend swatches: the fill, not the colour, tells N from D in every panel
        handles = [
            Patch(facecolor="white", edgecolor=_NEUTRAL, label="turns N (uncapped, median per task)"),
            Patch(facecolor=_NEUTRAL, label="depth D (solved tasks)"),
        ]
        fig.legend(handles=handles, loc="outside upper right", ncol=2)
        fig.suptitle(
            "Uncapped turn counts N beside depth D, per collection (bar colour = collection)",
            fontsize=10,
            x=0.02,
            ha="left",
        )
    return fig


def turns_minus_depth_plot(
    audit: pl.DataFrame,
    *,
    order: Sequence[str] | None = None,
    palette: Palette = None,
    ax: Axes | None = None,
) -> Axes:
    """N − D over solved tasks, one row per collection: a box (quartiles, black median) and the tasks.

    Drawn with :func:`seaborn.boxplot` and :func:`seaborn.stripplot` on a symmetric-log axis
    (linear within ±10 turns). The shaded band left of zero holds the tasks with N < D: their
    median uncapped run took fewer turns than the smallest cap under which a capped run passed.
    That happens because N counts every valid uncapped run, failed ones included (a run that
    gives up early takes few turns), and a capped attempt at a low cap can fail by chance.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"], "depth": [1, 3],
    ...     "depth_status": ["solved"] * 2, "n_turns": [4.0, 9.0]}), "audit")
    >>> turns_minus_depth_plot(audit).get_xlabel()
    'N − D (turns taken minus depth)'
    """
    import seaborn as sns

    function = "turns_minus_depth_plot"
    check_frame(audit, "audit", function, _TURNS_AND_DEPTH)
    solved = audit.filter(
        (pl.col("depth_status") == "solved") & pl.col("depth").is_not_null() & pl.col("n_turns").is_not_null()
    ).with_columns(gap=pl.col("n_turns") - pl.col("depth").cast(pl.Float64))
    keys = _order(solved, order, function) if solved.height or order is not None else []
    colour = _palette(palette, function)
    rows = solved.filter(pl.col("dataset").is_in(keys))
    with _style():
        ax = _axes(ax, function, (6.4, 0.5 * max(len(keys), 1) + 1.4))
        if rows.height:
            frame = rows.select("dataset", "gap").to_pandas()
            colours = {k: colour(k) for k in keys}
            ax.axvspan(-1e6, 0, color="#F2F2F2", zorder=0, linewidth=0)
            with warnings.catch_warnings():
                # seaborn 0.13 still passes boxplot's `vert`, deprecated by matplotlib 3.11: not ours to fix
                warnings.filterwarnings("ignore", message="vert: bool", category=DeprecationWarning)
                sns.boxplot(
                    data=frame,
                    x="gap",
                    y="dataset",
                    order=keys,
                    hue="dataset",
                    hue_order=keys,
                    palette=colours,
                    fill=False,
                    showfliers=False,
                    width=0.6,
                    linewidth=1.2,
                    medianprops={"color": MEDIAN_COLOUR, "linewidth": 2.0},
                    legend=False,
                    ax=ax,
                )
            sns.stripplot(
                data=frame,
                x="gap",
                y="dataset",
                order=keys,
                hue="dataset",
                hue_order=keys,
                palette=colours,
                jitter=0.22,
                size=2.2,
                alpha=0.6,
                linewidth=0,
                legend=False,
                ax=ax,
            )
            ax.set_xscale("symlog", linthresh=10)
            low, high = float(rows["gap"].min()), float(rows["gap"].max())
            ax.set_xlim(min(low, -1) - 1, max(high, 10) * 1.3)
            ticks = [t for t in (-20, -10, -5, 0, 5, 10, 20, 50, 100, 200, 500) if low - 1 <= t <= max(high, 10) * 1.3]
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
            ax.xaxis.set_minor_locator(mpl.ticker.NullLocator())
            ax.axvline(0, color=_NEUTRAL, linewidth=0.8, linestyle="--")
            for row, dataset in enumerate(keys):
                gap = rows.filter(pl.col("dataset") == dataset)["gap"].to_numpy()
                below = int(np.sum(gap < 0))
                text = f"n={gap.size}, median {np.median(gap):+.0f}" + (f", N<D: {below}" if below else "")
                ax.text(1.01, row, text, va="center", fontsize=7, transform=ax.get_yaxis_transform())
            ax.set_yticks(np.arange(len(keys)), [name(d) for d in keys])
            handles = [
                _median_handle(),
                Patch(facecolor="white", edgecolor=_NEUTRAL, label="box: middle half of the tasks"),
                Patch(facecolor="#F2F2F2", label="N < D (see note)"),
            ]
            ax.legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3, fontsize=7)
        else:
            _empty_note(ax, "no solved tasks with turn counts")
        ax.set_xlabel("N − D (turns taken minus depth)")
        ax.set_ylabel("")
        ax.grid(axis="y", visible=False)
    return ax


def turns_minus_depth(audit: pl.DataFrame, *, order: Sequence[str] | None = None, palette: Palette = None) -> Figure:
    """How many more turns than its depth a solved task takes uncapped: :func:`turns_minus_depth_plot`.

    The figure's note says why N − D can be negative.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, depth, depth_status, n_turns).
    order, palette
        Collections to draw and their colours (defaults: :mod:`depthlab.catalog`).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"], "depth": [1, 3],
    ...     "depth_status": ["solved"] * 2, "n_turns": [4.0, 9.0]}), "audit")
    >>> turns_minus_depth(audit).axes[0].get_xlabel()
    'N − D (turns taken minus depth)'
    """
    check_frame(audit, "audit", "turns_minus_depth", _TURNS_AND_DEPTH)
    n = len(_order(audit, order, "turns_minus_depth")) if audit.height else 1
    with _style():
        fig = Figure(figsize=(7.2, 0.42 * max(n, 1) + 2.0), layout="constrained")
        ax = fig.subplots()
        turns_minus_depth_plot(audit, order=order, palette=palette, ax=ax)
        ax.set_title("Turns taken without a cap minus depth, per solved task", pad=22)
        fig.text(0.01, 0.0, NEGATIVE_GAP_NOTE, fontsize=7, color="#555555", ha="left", va="bottom", wrap=True)
        fig.get_layout_engine().set(h_pad=0.25)
    return fig


#: Why N − D can be negative (printed under :func:`turns_minus_depth`).
NEGATIVE_GAP_NOTE: Final[str] = (
    "N < D: the median uncapped run took fewer turns than the smallest stated cap under which a capped run "
    "passed. N counts every valid uncapped run, failed ones included (a run that gives up early takes few "
    "turns), and a capped attempt at a low cap can fail by chance."
)


def depth_given_turns_plot(
    audit: pl.DataFrame,
    *,
    turns: tuple[float, float] = (6, 10),
    order: Sequence[str] | None = None,
    palette: Palette = None,
    ax: Axes | None = None,
) -> Axes:
    """Stacked bars of D for the solved tasks whose N lies in ``turns`` (inclusive), per collection.

    The legend lists the collections top to bottom in the order of the stacks.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2", "tw"], "task": ["a", "b"], "depth": [1, 1],
    ...     "depth_status": ["solved"] * 2, "n_turns": [7.0, 9.0]}), "audit")
    >>> [t.get_text() for t in depth_given_turns_plot(audit).get_legend().get_texts()]
    ['TW-Verified', 'TB2']
    """
    function = "depth_given_turns_plot"
    check_frame(audit, "audit", function, _TURNS_AND_DEPTH)
    low, high = _window(turns, function)
    rows = _turn_window(audit, low, high)
    keys = _order(rows, order, function) if rows.height or order is not None else []
    colour = _palette(palette, function)
    caps = sorted(set(CAPS) | set(rows["depth"].to_list()))
    with _style():
        ax = _axes(ax, function, (6, 3.4))
        x = np.arange(len(caps))
        bottom = np.zeros(len(caps))
        for dataset in keys:
            depth = rows.filter(pl.col("dataset") == dataset)["depth"].to_numpy()
            counts = np.array([np.sum(depth == cap) for cap in caps], dtype=float)
            ax.bar(x, counts, bottom=bottom, color=colour(dataset), label=name(dataset), width=0.7)
            bottom += counts
        if rows.height == 0:
            _empty_note(ax, f"no solved task has N in {low:g}–{high:g}")
        else:
            handles, labels = ax.get_legend_handles_labels()
            # the last stack drawn is the top one: list it first, as the eye reads the bars
            ax.legend(handles[::-1], labels[::-1], loc="upper right", title="collection")
        ax.set_xticks(x, [str(cap) for cap in caps])
        ax.set_xlabel("depth D (turns)")
        ax.set_ylabel(f"solved tasks with N in {low:g}–{high:g}")
        ax.grid(axis="x", visible=False)
    return ax


def depth_given_turns(
    audit: pl.DataFrame,
    *,
    turns: tuple[float, float] = (6, 10),
    order: Sequence[str] | None = None,
    palette: Palette = None,
) -> Figure:
    """Depth of the tasks whose uncapped turn count N lies in ``turns`` (inclusive), per collection.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, depth, depth_status, n_turns).
    turns : (low, high)
        The N interval, inclusive (the paper uses 6–10).
    order, palette
        Collections to draw (bottom stack first) and their colours.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"], "depth": [1, 3],
    ...     "depth_status": ["solved"] * 2, "n_turns": [7.0, 9.0]}), "audit")
    >>> depth_given_turns(audit).axes[0].get_ylabel()
    'solved tasks with N in 6–10'
    """
    function = "depth_given_turns"
    check_frame(audit, "audit", function, _TURNS_AND_DEPTH)
    low, high = _window(turns, function)
    with _style():
        fig = Figure(figsize=(6, 3.4), layout="constrained")
        ax = fig.subplots()
        depth_given_turns_plot(audit, turns=turns, order=order, palette=palette, ax=ax)
        rows = _turn_window(audit, low, high)
        if rows.height:
            share = float(np.mean(rows["depth"].to_numpy() == 1))
            ax.set_title(f"{rows.height} tasks take {low:g}–{high:g} turns; {share:.0%} of them have D = 1")
    return fig


# ---------------------------------------------------------------------------------------------
# correlations and pass rates


def forest_plot(
    table: pl.DataFrame,
    *,
    palette: Palette = None,
    adjust: str | None = "holm",
    ax: Axes | None = None,
) -> Axes:
    """Forest plot of correlations with their (unadjusted) confidence intervals, one row per line of ``table``.

    Rows of a collection take its colour; rows without a ``dataset`` (pooled over collections)
    are grey. When ``table`` has a ``p`` column, the p-value of each row is printed beside it,
    with the p-value adjusted over every row shown (:func:`depthlab.stats.adjust_p`, ``adjust``
    method), because a figure of many correlations invites reading the smallest ones.

    Examples
    --------
    >>> import polars as pl
    >>> table = pl.DataFrame({"label": ["a", "b"], "r": [-0.3, 0.1], "ci_low": [-0.5, -0.1],
    ...     "ci_high": [-0.1, 0.3], "n": [50, 40], "p": [0.01, 0.3]})
    >>> [t.get_text() for t in forest_plot(table).texts][:2]
    ['n = 50   p = 0.01   p_holm = 0.02', 'n = 40   p = 0.3   p_holm = 0.3']
    """
    from depthlab.stats import adjust_p

    function = "forest_plot"
    check_frame(table, "table", function, ("label", "r", "ci_low", "ci_high", "n"))
    if adjust is not None:
        check_choice(adjust, "adjust", function, ("holm", "bonferroni", "fdr_bh"))
    colour = _palette(palette, function)
    has_p = "p" in table.columns and table["p"].drop_nulls().len() > 0
    adjusted = adjust_p(table["p"].to_list(), method=adjust) if has_p and adjust else None
    has_paper = "paper" in table.columns and table["paper"].drop_nulls().len() > 0
    with _style():
        ax = _axes(ax, function, (7, 0.42 * max(table.height, 1) + 1.3))
        for i, row in enumerate(table.iter_rows(named=True)):
            hue = colour(row["dataset"]) if row.get("dataset") else POOLED_COLOUR
            if row["ci_low"] is not None and row["ci_high"] is not None:
                ax.plot([row["ci_low"], row["ci_high"]], [i, i], color=hue, linewidth=2, solid_capstyle="butt")
            if row["r"] is not None:
                ax.plot(row["r"], i, "o", color=hue, markersize=6)
            if has_paper and row.get("paper") is not None:
                ax.plot(row["paper"], i, "D", markerfacecolor="none", markeredgecolor=_NEUTRAL, markersize=6)
            note = f"n = {row['n']}"
            if has_p:
                note += f"   p {_p_text(row['p'])}"
                if adjusted is not None:
                    note += f"   p_{adjust} {_p_text(adjusted[i])}"
            ax.text(1.03, i, note, va="center", fontsize=7, transform=ax.get_yaxis_transform())
        ax.axvline(0, color=_NEUTRAL, linewidth=0.8, linestyle="--")
        # a rule between groups of rows that test different things ("...: pass ~ D | W" then "...: pass ~ N | D")
        tests = [label.split(":", 1)[-1].strip() for label in table["label"].to_list()]
        for i in range(1, len(tests)):
            if tests[i] != tests[i - 1]:
                ax.axhline(i - 0.5, color="#BBBBBB", linewidth=0.8)
        ax.set_yticks(np.arange(table.height), table["label"].to_list())
        ax.set_ylim(max(table.height, 1) - 0.5, -0.5)
        ax.set_xlim(-1, 1)
        ax.set_xlabel("rank partial correlation (Spearman)")
        ax.grid(axis="y", visible=False)
    return ax


def forest(
    table: pl.DataFrame,
    *,
    title: str = "Rank partial correlations with 95% bootstrap CIs",
    palette: Palette = None,
    adjust: str | None = "holm",
) -> Figure:
    """Forest plot of correlations with confidence intervals (:func:`forest_plot`) and its legend.

    Parameters
    ----------
    table : pl.DataFrame
        Columns ``label`` (row name), ``r``, ``ci_low``, ``ci_high``, ``n``; optional ``dataset``
        (colours the row; null = pooled, grey), ``p`` (printed raw and adjusted over all rows) and
        ``paper`` (the paper's value, drawn as an open diamond).
    title : str
        Figure title.
    palette : mapping of str to colour, optional
        Colour per collection.
    adjust : {"holm", "bonferroni", "fdr_bh"} or None
        Multiple-comparison adjustment of the printed p-values (None: raw only). The intervals
        drawn are the unadjusted ones.

    Examples
    --------
    >>> import polars as pl
    >>> table = pl.DataFrame({"label": ["pass ~ D | W"], "r": [-0.3], "ci_low": [-0.5], "ci_high": [-0.1],
    ...     "n": [50]})
    >>> forest(table).axes[0].get_xlabel()
    'rank partial correlation (Spearman)'
    """
    check_frame(table, "table", "forest", ("label", "r", "ci_low", "ci_high", "n"))
    with _style():
        fig = Figure(figsize=(8.2, 0.42 * max(table.height, 1) + 1.6), layout="constrained")
        ax = fig.subplots()
        forest_plot(table, palette=palette, adjust=adjust, ax=ax)
        handles = [Line2D([], [], marker="o", color=_NEUTRAL, linewidth=2, label="this data, unadjusted 95% CI")]
        if "dataset" not in table.columns or table["dataset"].null_count() > 0:  # some row is pooled (grey)
            handles.append(
                Line2D([], [], marker="o", color=POOLED_COLOUR, linewidth=2, label="grey: pooled over collections")
            )
        if "paper" in table.columns and table["paper"].drop_nulls().len() > 0:
            handles.append(
                Line2D(
                    [],
                    [],
                    marker="D",
                    linestyle="none",
                    markerfacecolor="none",
                    markeredgecolor=_NEUTRAL,
                    label="paper reports",
                )
            )
        if "p" in table.columns and table["p"].drop_nulls().len() > 0 and adjust:
            n_tests = table["p"].drop_nulls().len()
            handles.append(
                Patch(facecolor="none", edgecolor="none", label=f"p_{adjust}: adjusted over {n_tests} tests")
            )
        fig.legend(handles=handles, loc="outside lower center", ncol=len(handles))
        ax.set_title(title)
    return fig


def work_pass_plot(
    audit: pl.DataFrame,
    *,
    order: Sequence[str] | None = None,
    palette: Palette = None,
    jitter: float = 0.025,
    ci: float = 0.95,
    ax: Axes | None = None,
) -> Axes:
    """Public pass rate of each task against its work W (log scale), with pooled rates per W quartile.

    Points are jittered vertically by up to ``jitter`` (a pass rate over few runs takes few
    values, which would stack points on a handful of lines). With an ``n_public_trials`` column,
    each collection also gets the pooled pass rate (passes / runs) of its tasks in each quartile of
    W, at the quartile's median W, with a Wilson interval (:func:`depthlab.stats.proportion_ci`).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"], "work": [3, 300],
    ...     "pass_rate": [0.9, 0.1]}), "audit")
    >>> work_pass_plot(audit).get_ylabel()
    'public pass rate'
    """
    function = "work_pass_plot"
    check_frame(audit, "audit", function, ("dataset", "work", "pass_rate"))
    check_number(jitter, "jitter", function, low=0, high=0.1)
    rows = _with_work_and_rate(audit)
    keys = _order(rows, order, function) if rows.height or order is not None else []
    colour = _palette(palette, function)
    with _style():
        ax = _axes(ax, function, (6, 3.6))
        for dataset in keys:
            part = rows.filter(pl.col("dataset") == dataset)
            shift = np.random.default_rng(_seed(dataset)).uniform(-jitter, jitter, part.height)
            ax.scatter(
                part["work"].to_numpy(),
                part["pass_rate"].to_numpy() + shift,
                s=12,
                alpha=0.55,
                color=colour(dataset),
                label=f"{name(dataset)} (n={part.height})",
                edgecolors="none",
            )
            if "n_public_trials" in part.columns:
                _pooled_by_quartile(ax, part, colour(dataset), ci)
        if rows.height == 0:
            _empty_note(ax, "no task has both W and a public pass rate")
        else:
            _plain_log(ax, "x")
        ax.set_ylim(-0.05, 1.05)
        ax.yaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
        ax.set_xlabel("work W (solution lines, log scale)")
        ax.set_ylabel("public pass rate")
    return ax


def work_vs_pass_rate(
    audit: pl.DataFrame,
    *,
    order: Sequence[str] | None = None,
    palette: Palette = None,
    jitter: float = 0.025,
) -> Figure:
    """Public pass rate against work W, one panel per collection (:func:`work_pass_plot`).

    One panel per collection (shared axes), so no colours blend where collections overlap.
    Needs no capped runs, so it runs on public leaderboard data alone.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, work, pass_rate; optional n_public_trials for pooled rates).
    order, palette
        Collections to draw and their colours.
    jitter : float
        Vertical jitter of the points (pass-rate units).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"], "work": [3, 300],
    ...     "pass_rate": [0.9, 0.1]}), "audit")
    >>> work_vs_pass_rate(audit).axes[0].get_ylabel()
    'public pass rate'
    """
    function = "work_vs_pass_rate"
    check_frame(audit, "audit", function, ("dataset", "work", "pass_rate"))
    rows = _with_work_and_rate(audit)
    keys = _order(rows, order, function) if rows.height or order is not None else []
    with _style():
        fig, axes = _panels(len(keys), width=3.3, height=2.7, ncols=4, sharex=True, sharey=True)
        if not keys:
            work_pass_plot(rows, ax=axes[0])
        for ax, dataset in zip(axes, keys, strict=False):
            work_pass_plot(rows, order=[dataset], palette=palette, jitter=jitter, ax=ax)
            ax.set_title(f"{name(dataset)} ({rows.filter(pl.col('dataset') == dataset).height} tasks)")
        ncols = min(4, max(len(keys), 1))
        for i, ax in enumerate(axes):
            if i % ncols:
                ax.set_ylabel("")
            if i + ncols < len(keys):  # a panel below shows the shared x axis
                ax.set_xlabel("")
            else:
                ax.xaxis.set_tick_params(labelbottom=True)
        handles = [Line2D([], [], marker="o", linestyle="none", color=_NEUTRAL, alpha=0.55, label="task (jittered)")]
        if "n_public_trials" in rows.columns:
            handles.append(Line2D([], [], marker="s", color=_NEUTRAL, label="pooled per W quartile, 95% Wilson CI"))
        fig.legend(handles=handles, loc="outside lower center", ncol=2)
        fig.suptitle("Public pass rate against work W, per collection", fontsize=10)
    return fig


def turns_ecdf_plot(
    turns: pl.DataFrame,
    *,
    order: Sequence[str] | None = None,
    palette: Palette = None,
    turn_limit: int | None = None,
    ax: Axes | None = None,
) -> Axes:
    """ECDF of uncapped turn counts per model (:func:`seaborn.ecdfplot`), log scale.

    ``order`` and ``palette`` name *models* here (default: sorted, a colour set distinct from
    the collections').

    Examples
    --------
    >>> import polars as pl
    >>> turns = pl.DataFrame({"model": ["a", "a", "b"], "n_turns": [3.0, 8.0, 20.0]})
    >>> [t.get_text() for t in turns_ecdf_plot(turns).get_legend().get_texts()]
    ['a (median 6)', 'b (median 20)']
    """
    import seaborn as sns

    function = "turns_ecdf_plot"
    check_frame(turns, "turns", function, ("model", "n_turns"))
    rows = turns.filter(pl.col("n_turns").is_not_null() & (pl.col("n_turns") > 0))
    models = sorted(rows["model"].unique().to_list()) if order is None else check_names(order, "order", function)
    colours = {m: _MODEL_COLOURS[i % len(_MODEL_COLOURS)] for i, m in enumerate(models)}
    if palette is not None:
        colours.update(_check_palette(palette, function))
    rows = rows.filter(pl.col("model").is_in(models))
    with _style():
        ax = _axes(ax, function, (6, 3.6))
        handles = []
        if rows.height:
            frame = rows.select("model", pl.col("n_turns").cast(pl.Float64)).to_pandas()
            sns.ecdfplot(
                data=frame,
                x="n_turns",
                hue="model",
                hue_order=models,
                palette=colours,
                log_scale=True,
                linewidth=1.4,
                legend=False,
                ax=ax,
            )
            for model in models:
                values = rows.filter(pl.col("model") == model)["n_turns"].to_numpy()
                if values.size:
                    label = f"{model} (median {np.median(values):.0f})"
                    handles.append(Line2D([], [], color=colours[model], linewidth=1.4, label=label))
            _plain_log(ax, "x")
        else:
            _empty_note(ax, "no uncapped runs with turn counts")
        if turn_limit is not None:
            handles.append(
                ax.axvline(turn_limit, color="#B22222", linestyle=":", linewidth=1, label=f"harness limit {turn_limit}")
            )
        if handles:
            ax.legend(handles=handles, loc="lower right", fontsize=7)
        ax.set_ylim(0, 1.02)
        ax.yaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
        ax.set_xlabel("turns N per task (median over uncapped runs, log scale)")
        ax.set_ylabel("share of tasks with at most N turns")
    return ax


def turns_by_model(
    turns: pl.DataFrame,
    *,
    turn_limit: int | None = None,
    order: Sequence[str] | None = None,
    palette: Palette = None,
) -> Figure:
    """Distribution of uncapped turn counts per model (ECDF, :func:`turns_ecdf_plot`).

    Parameters
    ----------
    turns : pl.DataFrame
        Columns ``model`` and ``n_turns`` (one row per task and model, from
        :func:`depthlab.turn_counts`); optional ``dataset``.
    turn_limit : int, optional
        The harness's safety limit, drawn as a vertical line when given.
    order, palette
        Models to draw and their colours.

    Examples
    --------
    >>> import polars as pl
    >>> turns = pl.DataFrame({"model": ["a", "a", "b"], "n_turns": [3.0, 8.0, 20.0]})
    >>> turns_by_model(turns).axes[0].get_xlabel()
    'turns N per task (median over uncapped runs, log scale)'
    """
    check_frame(turns, "turns", "turns_by_model", ("model", "n_turns"))
    with _style():
        fig = Figure(figsize=(6, 3.6), layout="constrained")
        ax = fig.subplots()
        turns_ecdf_plot(turns, order=order, palette=palette, turn_limit=turn_limit, ax=ax)
        ax.set_title("Uncapped turn counts per model")
    return fig


# ---------------------------------------------------------------------------------------------
# labels


def label_plot(
    audit: pl.DataFrame,
    dataset: str,
    *,
    label: str = "difficulty",
    value: str = "pass_rate",
    color: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """One collection's ``value`` by its ordinal ``label`` (easy < medium < hard first): points and medians.

    The x label says whether the label is a human rating or a generated one
    (``difficulty_source``), so the two are never confused.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"],
    ...     "difficulty": ["hard", "easy"], "difficulty_source": ["human"] * 2, "pass_rate": [0.1, 0.9]}), "audit")
    >>> [t.get_text() for t in label_plot(audit, "tb2").get_xticklabels()]
    ['easy', 'hard']
    """
    function = "label_plot"
    check_frame(audit, "audit", function, ("dataset", label, value, "difficulty_source"))
    hue = catalog.color(dataset) if color is None else color
    part = audit.filter((pl.col("dataset") == dataset) & pl.col(label).is_not_null() & pl.col(value).is_not_null())
    levels = _label_order(part[label].cast(pl.String).unique().to_list())
    sources = part["difficulty_source"].drop_nulls().unique().to_list()
    source = sources[0] if len(sources) == 1 else "mixed"
    log = value == "depth"
    with _style():
        ax = _axes(ax, function, (3.2, 2.8))
        for i, level in enumerate(levels):
            values = part.filter(pl.col(label).cast(pl.String) == level)[value].cast(pl.Float64).to_numpy()
            jitter = np.random.default_rng(i).uniform(-0.2, 0.2, values.size)
            ax.scatter(i + jitter, values, s=10, alpha=0.45, color=hue, edgecolors="none")
            ax.plot([i - 0.3, i + 0.3], [np.median(values)] * 2, color=MEDIAN_COLOUR, linewidth=1.6)
            ax.text(
                i, 1.0, f"n={values.size}", ha="center", va="bottom", fontsize=7, transform=ax.get_xaxis_transform()
            )
        ax.set_xticks(range(len(levels)), levels)
        ax.set_xlim(-0.6, len(levels) - 0.4)
        ax.set_xlabel(f"{label} ({source} label)")
        if log:
            ax.set_yscale("log")
            ticks = [cap for cap in CAPS if cap <= max(part[value].max() or 1, 1)]
            ax.set_yticks(ticks, [str(c) for c in ticks])
            ax.minorticks_off()
            ax.set_ylabel("depth D (turns, log scale)")
        elif value == "pass_rate":
            ax.set_ylim(-0.03, 1.03)
            ax.yaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
            ax.set_ylabel("public pass rate")
        else:
            ax.set_ylabel(value)
        ax.set_title(name(dataset), pad=14)
        ax.grid(axis="x", visible=False)
    return ax


def label_pass_rates(
    audit: pl.DataFrame, *, label: str = "difficulty", order: Sequence[str] | None = None, palette: Palette = None
) -> Figure:
    """Public pass rate by an ordinal label, one panel per collection that has the label (:func:`label_plot`).

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, pass_rate, difficulty_source and the ``label`` column).
    label : str
        The label column (default ``difficulty``; easy < medium < hard are ordered first).
    order, palette
        Collections to draw and their colours.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 3, "task": list("abc"),
    ...     "difficulty": ["easy", "hard", "medium"], "difficulty_source": ["human"] * 3,
    ...     "pass_rate": [0.9, 0.1, 0.5]}), "audit")
    >>> label_pass_rates(audit).axes[0].get_ylabel()
    'public pass rate'
    """
    return _by_label(audit, label, "pass_rate", "label_pass_rates", order, palette)


def label_depths(
    audit: pl.DataFrame, *, label: str = "difficulty", order: Sequence[str] | None = None, palette: Palette = None
) -> Figure:
    """Depth D of solved tasks by an ordinal label, one panel per collection that has both (:func:`label_plot`).

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, depth, depth_status, difficulty_source and ``label``).
    label : str
        The label column (default ``difficulty``).
    order, palette
        Collections to draw and their colours.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"],
    ...     "difficulty": ["easy", "hard"], "difficulty_source": ["human"] * 2, "depth": [1, 5],
    ...     "depth_status": ["solved"] * 2}), "audit")
    >>> label_depths(audit).axes[0].get_ylabel()
    'depth D (turns, log scale)'
    """
    check_frame(audit, "audit", "label_depths", ("depth_status",))
    solved = audit.filter(pl.col("depth_status") == "solved")
    return _by_label(solved, label, "depth", "label_depths", order, palette)


# ---------------------------------------------------------------------------------------------
# quadrants, segments, pairs


def quadrants_plot(table: pl.DataFrame, *, ax: Axes | None = None) -> Axes:
    """The 2×2 depth/work split as a heat map of mean within-collection pass-rate percentiles, with CIs.

    Examples
    --------
    >>> import polars as pl
    >>> cells = pl.DataFrame({"depth_class": ["deep", "shallow"], "work_class": ["large", "small"],
    ...     "n": [4, 5], "mean_percentile": [0.3, 0.6], "ci_low": [0.2, 0.5], "ci_high": [0.4, 0.7],
    ...     "depth_split": 2.0, "work_split": 30.0})
    >>> quadrants_plot(cells).get_ylabel()
    'depth D (turns)'
    """
    function = "quadrants_plot"
    columns = ("depth_class", "work_class", "n", "mean_percentile", "ci_low", "ci_high", "depth_split", "work_split")
    check_frame(table, "table", function, columns)
    grid = np.full((2, 2), np.nan)
    depth_split = table["depth_split"].drop_nulls().first() if table.height else 2.0
    work_split = table["work_split"].drop_nulls().first() if table.height else float("nan")
    with _style():
        ax = _axes(ax, function, (5.6, 4.2))
        cells = [
            (int(row["depth_class"] == "deep"), int(row["work_class"] == "large"), row)
            for row in table.iter_rows(named=True)
        ]
        for i, j, row in cells:
            grid[i, j] = np.nan if row["mean_percentile"] is None else row["mean_percentile"]
        image = ax.imshow(grid, cmap="RdYlBu", vmin=0, vmax=1)
        for i, j, row in cells:
            if row["mean_percentile"] is None:
                text = "no tasks"
            else:
                ci = "" if row["ci_low"] is None else f"\n[{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
                text = f"{row['mean_percentile']:.2f}{ci}\nn = {row['n']}"
            ax.text(j, i, text, ha="center", va="center", fontsize=9)
        ax.set_xticks([0, 1], [f"small W (< {work_split:g})", f"large W (≥ {work_split:g})"])
        ax.set_yticks([0, 1], [f"shallow (D < {depth_split:g})", f"deep (D ≥ {depth_split:g})"])
        ax.set_xlabel("work W (solution lines, split at the median)")
        ax.set_ylabel("depth D (turns)")
        ax.grid(False)
        ax.figure.colorbar(image, ax=ax, shrink=0.8, label="pass-rate percentile within collection")
    return ax


def quadrants(table: pl.DataFrame) -> Figure:
    """The 2×2 depth/work split: mean within-collection pass-rate percentile per cell, with CIs.

    Parameters
    ----------
    table : pl.DataFrame
        The output of :func:`depthlab.stats.quadrants`: one row per cell with ``depth_class``
        (deep/shallow), ``work_class`` (large/small), ``n``, ``mean_percentile``, ``ci_low``,
        ``ci_high``, ``depth_split`` and ``work_split``.

    Examples
    --------
    >>> import polars as pl
    >>> cells = pl.DataFrame({"depth_class": ["deep", "deep", "shallow", "shallow"],
    ...     "work_class": ["large", "small", "large", "small"], "n": [40, 30, 30, 40],
    ...     "mean_percentile": [0.3, 0.55, 0.53, 0.6], "ci_low": [0.2, 0.45, 0.43, 0.5],
    ...     "ci_high": [0.4, 0.65, 0.63, 0.7], "depth_split": 2.0, "work_split": 30.0})
    >>> quadrants(cells).axes[0].get_title()
    'Mean within-collection pass-rate percentile (lower = harder)'
    """
    with _style():
        fig = Figure(figsize=(5.6, 4.2), layout="constrained")
        ax = fig.subplots()
        quadrants_plot(table, ax=ax)
        title = "Mean within-collection pass-rate percentile (lower = harder)"
        if "collections" in table.columns and table.height:
            # the table says which collections were split (depthlab.findings.quadrant_cells): name them
            where = catalog.ordered(part.strip() for part in str(table["collections"][0]).split(",") if part)
            title = (
                f"{' + '.join(name(d) for d in where)}: mean within-collection\npass-rate percentile (lower = harder)"
            )
        ax.set_title(title)
    return fig


_SEGMENT_COLUMNS: Final[tuple[str, ...]] = ("segment", "reliability", "reached", "observed", "compounded")


def segment_reliability_plot(
    table: pl.DataFrame, *, color: str | None = None, ci: float = 0.95, ax: Axes | None = None
) -> Axes:
    """Per segment position: the pass rate of the runs that reached it, with a Wilson interval.

    ``table`` needs ``segment``, ``reliability`` and ``reached`` (``passed`` too, else it is
    ``reliability × reached`` rounded). Intervals from :func:`depthlab.stats.proportion_ci`.

    Examples
    --------
    >>> import polars as pl
    >>> table = pl.DataFrame({"segment": [1, 2], "reliability": [0.9, 0.8], "reached": [100, 90]})
    >>> segment_reliability_plot(table).get_xlabel()
    'segment position'
    """
    from depthlab.stats import proportion_ci

    function = "segment_reliability_plot"
    check_frame(table, "table", function, ("segment", "reliability", "reached"))
    hue = catalog.color("depth") if color is None else color
    segments = table["segment"].to_numpy()
    reached = table["reached"].to_numpy()
    rate = table["reliability"].to_numpy()
    passed = table["passed"].to_numpy() if "passed" in table.columns else np.rint(rate * reached)
    low, high = proportion_ci(passed, reached, ci=ci)
    with _style():
        ax = _axes(ax, function, (4, 3.4))
        ax.bar(segments, rate, color=hue, width=0.6, alpha=0.85)
        ax.errorbar(segments, rate, yerr=[rate - low, high - rate], fmt="none", ecolor=_NEUTRAL, capsize=3, linewidth=1)
        for seg, value, top, n in zip(segments, rate, high, reached, strict=True):
            ax.text(seg, top + 0.02, f"{value:.2f}\n(n={n})", ha="center", va="bottom", fontsize=7)
        ax.set_ylim(0, 1.25)
        ax.set_xticks(segments)
        ax.set_xlabel("segment position")
        ax.set_ylabel("pass rate of runs reaching it")
        ax.grid(axis="x", visible=False)
        ax.yaxis.set_major_locator(mpl.ticker.FixedLocator([0, 0.25, 0.5, 0.75, 1.0]))
        ax.yaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
    return ax


def compounding_plot(table: pl.DataFrame, *, color: str | None = None, ax: Axes | None = None) -> Axes:
    """Share of runs passing every segment so far: observed, against the product of the reliabilities.

    Examples
    --------
    >>> import polars as pl
    >>> table = pl.DataFrame({"segment": [1, 2], "observed": [0.9, 0.7], "compounded": [0.9, 0.72]})
    >>> [t.get_text() for t in compounding_plot(table).get_legend().get_texts()]
    ['observed', 'product of reliabilities']
    """
    function = "compounding_plot"
    check_frame(table, "table", function, ("segment", "observed", "compounded"))
    hue = catalog.color("depth") if color is None else color
    segments = table["segment"].to_numpy()
    with _style():
        ax = _axes(ax, function, (4, 3.4))
        ax.plot(segments, table["observed"].to_numpy(), "o-", color=hue, label="observed")
        ax.plot(
            segments,
            table["compounded"].to_numpy(),
            "s--",
            color=hue,
            alpha=0.55,
            markerfacecolor="white",
            label="product of reliabilities",
        )
        ax.set_ylim(0, 1.02)
        ax.set_xticks(segments)
        ax.set_xlabel("segments completed")
        ax.set_ylabel("share of runs passing all so far")
        ax.legend(loc="lower left")
        ax.grid(axis="x", visible=False)
        ax.yaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
    return ax


def segment_reliability(
    table: pl.DataFrame,
    *,
    collection: str | None = None,
    palette: Palette = None,
    ci: float = 0.95,
) -> Figure:
    """Per-segment reliability of multi-segment tasks and how it compounds, for one collection.

    Left: :func:`segment_reliability_plot` (with Wilson intervals); right:
    :func:`compounding_plot`. The title names the collection: ``collection``, or the single
    value of a ``dataset`` column of ``table``; otherwise it says the tasks are pooled.

    Parameters
    ----------
    table : pl.DataFrame
        One row per segment position: ``segment`` (1-based), ``reliability`` (share of runs that
        reached the segment and passed it), ``reached`` (runs that reached it), ``observed`` (share
        of all runs passing every segment up to it) and ``compounded`` (product of the
        reliabilities up to it); optional ``passed`` and ``dataset``.
    collection : str, optional
        The collection the multi-segment tasks come from (the paper's: ``"depth"``).
    palette : mapping of str to colour, optional
        Colour per collection.
    ci : float
        Coverage of the Wilson intervals.

    Examples
    --------
    >>> import polars as pl
    >>> table = pl.DataFrame({"segment": [1, 2], "reliability": [0.9, 0.8], "reached": [100, 90],
    ...     "observed": [0.9, 0.72], "compounded": [0.9, 0.72]})
    >>> fig = segment_reliability(table, collection="depth")
    >>> [ax.get_xlabel() for ax in fig.axes], fig.get_suptitle()
    (['segment position', 'segments completed'], 'Multi-segment tasks of DEPTH: 2 segment positions')
    """
    function = "segment_reliability"
    check_frame(table, "table", function, _SEGMENT_COLUMNS)
    if collection is None and "dataset" in table.columns and table["dataset"].drop_nulls().n_unique() == 1:
        collection = table["dataset"].drop_nulls()[0]
    if collection is not None and (not isinstance(collection, str) or not collection):
        raise ValueError(f"The 'collection' parameter of {function} must be a collection name, got {collection!r}")
    hue = POOLED_COLOUR if collection is None else _palette(palette, function)(collection)
    where = f"of {name(collection)}" if collection else "pooled over collections"
    with _style():
        fig = Figure(figsize=(8, 3.6), layout="constrained")
        ax_each, ax_all = fig.subplots(1, 2)
        segment_reliability_plot(table, color=hue, ci=ci, ax=ax_each)
        ax_each.set_title(f"Per-segment reliability ({ci:.0%} Wilson CI)")
        compounding_plot(table, color=hue, ax=ax_all)
        ax_all.set_title("Passing every segment so far")
        fig.suptitle(f"Multi-segment tasks {where}: {table.height} segment positions", fontsize=10)
    return fig


def paired_depths_plot(pairs: pl.DataFrame, *, color: str | None = None, ax: Axes | None = None) -> Axes:
    """Depth of each derived task against its original's (log-log, ladder ticks); marker area = pairs.

    A size legend gives the number of pairs a marker area stands for.

    Examples
    --------
    >>> import polars as pl
    >>> ax = paired_depths_plot(pl.DataFrame({"original": [1, 1, 2], "derived": [3, 3, 5]}))
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['same depth', '1 pair', '2 pairs']
    """
    function = "paired_depths_plot"
    check_frame(pairs, "pairs", function, ("original", "derived"))
    rows = pairs.drop_nulls(["original", "derived"])
    hue = catalog.color("depth") if color is None else color
    with _style():
        ax = _axes(ax, function, (4.6, 4.2))
        if rows.height:
            counts = rows.group_by("original", "derived").len()
            ax.scatter(
                counts["original"],
                counts["derived"],
                s=_pair_area(counts["len"].to_numpy()),
                color=hue,
                alpha=0.6,
                edgecolors="none",
            )
            top = max(rows["original"].max(), rows["derived"].max()) * 1.5
            ax.plot([0.7, top], [0.7, top], color="#888888", linestyle="--", linewidth=0.8, label="same depth")
            most = int(counts["len"].max())
            for size in sorted({1, max(1, most // 2), most}):
                label = f"{size} pair" + ("s" if size > 1 else "")
                ax.scatter([], [], s=_pair_area(np.array([size])), color=hue, alpha=0.6, edgecolors="none", label=label)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ladder = [cap for cap in CAPS if cap <= top]
            ax.set_xticks(ladder, [str(c) for c in ladder])
            ax.set_yticks(ladder, [str(c) for c in ladder])
            ax.minorticks_off()
            ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), labelspacing=1.2, borderpad=0.8)
        else:
            _empty_note(ax, "no environment hosts two solved tasks")
        ax.set_xlabel("depth D of the original task (turns)")
        ax.set_ylabel("depth D of the derived task (turns)")
    return ax


def paired_depths(pairs: pl.DataFrame, *, palette: Palette = None) -> Figure:
    """Depth of the derived task against the original, for environments hosting both.

    Parameters
    ----------
    pairs : pl.DataFrame
        Columns ``original`` and ``derived`` (depths of the two tasks sharing an environment);
        optional ``dataset`` (the derived task's collection: names the figure and colours it).
    palette : mapping of str to colour, optional
        Colour per collection.

    Examples
    --------
    >>> import polars as pl
    >>> paired_depths(pl.DataFrame({"original": [1, 2], "derived": [3, 5]})).axes[0].get_xlabel()
    'depth D of the original task (turns)'
    """
    function = "paired_depths"
    check_frame(pairs, "pairs", function, ("original", "derived"))
    rows = pairs.drop_nulls(["original", "derived"])
    derived = catalog.ordered(rows["dataset"].to_list()) if "dataset" in rows.columns else []
    hue = _palette(palette, function)(derived[0]) if len(derived) == 1 else POOLED_COLOUR
    with _style():
        fig = Figure(figsize=(5.8, 4.4), layout="constrained")
        ax = fig.subplots()
        paired_depths_plot(rows, color=hue, ax=ax)
        if rows.height:
            deeper = int((rows["derived"] > rows["original"]).sum())
            shallower = int((rows["derived"] < rows["original"]).sum())
            which = f"{', '.join(name(d) for d in derived)} tasks" if derived else "derived tasks"
            ax.set_title(f"{rows.height} {which} vs their originals:\nderived deeper {deeper}, shallower {shallower}")
    return fig


#: The rows of :func:`depthlab.findings.segment_reliability` drawn per model, and their legend labels.
_MODEL_SEGMENT_KEYS: Final[dict[str, str]] = {
    "segment_reliability": "segment reliability r",
    "segment_pass_all_observed": "runs passing all: observed",
    "segment_pass_all_compounded": "runs passing all: r\u1d4f",
}


def segment_reliability_by_model_plot(
    findings: pl.DataFrame, *, color: str | None = None, ax: Axes | None = None
) -> Axes:
    """Per model: segment reliability r, and the share of runs passing every segment, observed and rᵏ.

    ``findings`` is the table of :func:`depthlab.findings.segment_reliability` (columns key, group,
    value, ci_low, ci_high); its ``best model`` / ``worst model`` rows repeat a model's and are not
    drawn. Bars of one model share its hue (r solid, the two pass-all shares lighter), with the
    task-bootstrap intervals as black lines.

    Examples
    --------
    >>> import polars as pl
    >>> rows = [{"key": k, "group": "m", "value": v, "ci_low": v - 0.1, "ci_high": v + 0.1}
    ...         for k, v in (("segment_reliability", 0.8), ("segment_pass_all_observed", 0.5),
    ...                      ("segment_pass_all_compounded", 0.51))]
    >>> segment_reliability_by_model_plot(pl.DataFrame(rows)).get_ylabel()
    'share'
    """
    function = "segment_reliability_by_model_plot"
    check_frame(findings, "findings", function, ("key", "group", "value", "ci_low", "ci_high"))
    hue = catalog.color("depth") if color is None else color
    rows = findings.filter(
        pl.col("key").is_in(list(_MODEL_SEGMENT_KEYS))
        & ~pl.col("group").is_in(["best model", "worst model"])
        & pl.col("value").is_not_null()
    )
    models = sorted(rows["group"].unique().to_list())
    width = 0.26
    with _style():
        ax = _axes(ax, function, (1.8 + 1.9 * max(len(models), 1), 3.6))
        for j, (key, label) in enumerate(_MODEL_SEGMENT_KEYS.items()):
            part = {row["group"]: row for row in rows.filter(pl.col("key") == key).iter_rows(named=True)}
            x = np.arange(len(models)) + (j - 1) * width
            values = [part[m]["value"] if m in part else np.nan for m in models]
            ax.bar(x, values, width=width * 0.95, color=hue, alpha=(1.0, 0.55, 0.3)[j], label=label)
            for xi, model in zip(x, models, strict=True):
                row = part.get(model)
                if row is not None and row["ci_low"] is not None:
                    ax.plot([xi, xi], [row["ci_low"], row["ci_high"]], color=MEDIAN_COLOUR, linewidth=1)
        ax.set_xticks(np.arange(len(models)), models)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("share")
        ax.yaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
        ax.grid(axis="x", visible=False)
        ax.legend(loc="upper right")
        if not models:
            _empty_note(ax, "no multi-segment runs")
    return ax


def segment_reliability_by_model(findings: pl.DataFrame, *, palette: Palette = None) -> Figure:
    """Figure of :func:`segment_reliability_by_model_plot`, titled with the collection(s) of the tasks.

    Examples
    --------
    >>> import polars as pl
    >>> rows = [{"key": "segment_reliability", "group": "m", "value": 0.8, "ci_low": 0.7, "ci_high": 0.9,
    ...          "collections": "depth"}]
    >>> segment_reliability_by_model(pl.DataFrame(rows)).axes[0].get_title()
    'Multi-segment tasks of DEPTH: per-model reliability (95% task-bootstrap CIs)'
    """
    function = "segment_reliability_by_model"
    check_frame(findings, "findings", function, ("key", "group", "value", "ci_low", "ci_high", "collections"))
    where = catalog.ordered(
        part.strip() for text in findings["collections"].drop_nulls().to_list() for part in text.split(",") if part
    )
    hue = _palette(palette, function)(where[0]) if len(where) == 1 else POOLED_COLOUR
    with _style():
        fig = Figure(figsize=(1.8 + 1.9 * max(findings["group"].n_unique() - 2, 1), 3.8), layout="constrained")
        ax = fig.subplots()
        segment_reliability_by_model_plot(findings, color=hue, ax=ax)
        which = ", ".join(name(d) for d in where) or "no collection"
        ax.set_title(f"Multi-segment tasks of {which}: per-model reliability (95% task-bootstrap CIs)")
    return fig


# ---------------------------------------------------------------------------------------------
# private helpers


@contextmanager
def _style() -> Iterator[None]:
    with mpl.rc_context(RC):
        yield


def _metadata(suffix: str) -> dict[str, str | None]:
    # no creation date, so re-running reproduce gives byte-stable PDFs where the backend allows
    if suffix == ".pdf":
        return {"Creator": "depthlab", "Producer": None, "CreationDate": None}
    return {"Software": "depthlab"}


def _axes(ax: Axes | None, function: str, figsize: tuple[float, float]) -> Axes:
    # axes-level functions draw into the caller's Axes, or into a new pyplot-free figure
    if ax is None:
        return Figure(figsize=figsize, layout="constrained").subplots()
    if not isinstance(ax, Axes):
        raise TypeError(f"The 'ax' parameter of {function} must be a matplotlib Axes or None, got {type(ax).__name__}")
    return ax


def _order(df: pl.DataFrame, order: Sequence[str] | None, function: str) -> list[str]:
    if order is None:
        return catalog.ordered(df["dataset"].to_list())
    return check_names(order, "order", function)


def _check_palette(palette: object, function: str) -> dict[str, str]:
    if not isinstance(palette, Mapping) or not all(isinstance(k, str) for k in palette):
        raise TypeError(f"The 'palette' parameter of {function} must be a mapping name -> colour, got {palette!r}")
    bad = {key: value for key, value in palette.items() if not mpl.colors.is_color_like(value)}
    if bad:
        raise ValueError(f"The 'palette' parameter of {function} must map names to matplotlib colours, got {bad!r}")
    return dict(palette)


def _palette(palette: Palette, function: str) -> Callable[[str], str]:
    if palette is None:
        return catalog.color
    given = _check_palette(palette, function)
    return lambda dataset: given.get(dataset) or catalog.color(dataset)


def _window(turns: object, function: str) -> tuple[float, float]:
    if not isinstance(turns, Sequence) or isinstance(turns, str) or len(turns) != 2:
        raise ValueError(f"The 'turns' parameter of {function} must be (low, high) with low <= high, got {turns!r}")
    low, high = (check_number(v, "turns", function) for v in turns)
    if not low <= high:
        raise ValueError(f"The 'turns' parameter of {function} must be (low, high) with low <= high, got {turns!r}")
    return low, high


def _ladder(caps: Sequence[int], function: str) -> list[int]:
    ladder = sorted({int(c) for c in caps})
    if not ladder or ladder[0] < 1:
        raise ValueError(f"The 'caps' parameter of {function} must be positive integers, got {list(caps)}")
    return ladder


def _rung_label(ladder: Sequence[int], i: int) -> str:
    low = 1 if i == 0 else ladder[i - 1] + 1
    return str(ladder[i]) if low == ladder[i] else f"{low}–{ladder[i]}"


def _rung_counts(values: np.ndarray, ladder: Sequence[int]) -> list[int]:
    # rung i holds (ladder[i-1], ladder[i]]; the last group holds everything above the top cap
    edges = np.asarray([0, *ladder], dtype=float)
    counts = [int(np.sum((values > edges[i]) & (values <= edges[i + 1]))) for i in range(len(ladder))]
    return [*counts, int(np.sum(values > ladder[-1]))]


def _panels(
    n: int, *, width: float, height: float, ncols: int = 3, sharex: bool = False, sharey: bool = False
) -> tuple[Figure, list[Axes]]:
    ncols = max(1, min(ncols, n))
    nrows = max(1, math.ceil(n / ncols))
    fig = Figure(figsize=(width * ncols, height * nrows + 0.4), layout="constrained")
    grid = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False, sharex=sharex, sharey=sharey)).ravel().tolist()
    for ax in grid[n:]:
        ax.set_visible(False)
    return fig, grid[: max(n, 1)]


def _median_handle() -> Line2D:
    return Line2D([], [], color=MEDIAN_COLOUR, linewidth=1.6, label="median")


def _plain_log(ax: Axes, axis: str) -> None:
    # log scale with plain numbers (10, 100) instead of 10^1, and no labelled minor ticks
    getattr(ax, f"set_{axis}scale")("log")
    target = ax.xaxis if axis == "x" else ax.yaxis
    low, high = ax.get_xlim() if axis == "x" else ax.get_ylim()
    decades = math.log10(max(high, 1e-9) / max(low, 1e-9))
    # label 1-2-5 steps when the data spans few decades, else only the powers of ten
    target.set_major_locator(mpl.ticker.LogLocator(subs=(1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)))
    target.set_major_formatter(mpl.ticker.FuncFormatter(lambda value, _pos: f"{value:g}"))
    target.set_minor_formatter(mpl.ticker.NullFormatter())


def _empty_note(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#666666")
    ax.set_xticks([])
    ax.set_yticks([])


def _label_order(values: Sequence[str]) -> list[str]:
    known = [v for v in _LABEL_ORDER if v in values]
    return known + sorted(set(values) - set(_LABEL_ORDER))


def _with_work_and_rate(audit: pl.DataFrame) -> pl.DataFrame:
    return audit.filter(pl.col("work").is_not_null() & (pl.col("work") > 0) & pl.col("pass_rate").is_not_null())


def _turn_window(audit: pl.DataFrame, low: float, high: float) -> pl.DataFrame:
    # the solved tasks whose uncapped turn count N lies in [low, high]
    return audit.filter(
        (pl.col("depth_status") == "solved") & pl.col("n_turns").is_between(low, high) & pl.col("depth").is_not_null()
    )


def _seed(dataset: str) -> int:
    # a jitter that depends on the collection only, so a figure redraws identically
    return sum(dataset.encode())


def _p_text(p: float | None) -> str:
    # "= 0.043" or "< 0.001", so the printed relation is exact
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "= –"
    return "< 0.001" if p < 0.001 else f"= {p:.2g}"


def _pair_area(counts: np.ndarray) -> np.ndarray:
    return 20 + 25 * counts


def _pooled_by_quartile(ax: Axes, part: pl.DataFrame, colour: str, ci: float) -> None:
    # pooled pass rate (passes / runs over the tasks of a W quartile), at the quartile's median W
    from depthlab.stats import proportion_ci

    runs = part.filter(pl.col("n_public_trials") > 0)
    if runs.height < 8:
        return
    binned = (
        runs.with_columns(
            quartile=pl.col("work").rank("ordinal").sub(1).mul(4).floordiv(runs.height),
            passes=(pl.col("pass_rate") * pl.col("n_public_trials")).round(0),
        )
        .group_by("quartile")
        .agg(work=pl.col("work").median(), passes=pl.col("passes").sum(), runs=pl.col("n_public_trials").sum())
        .sort("quartile")
    )
    rate = (binned["passes"] / binned["runs"]).to_numpy()
    low, high = proportion_ci(binned["passes"].to_numpy(), binned["runs"].to_numpy(), ci=ci)
    ax.errorbar(
        binned["work"].to_numpy(),
        rate,
        yerr=[rate - low, high - rate],
        fmt="s-",
        color=colour,
        markeredgecolor="white",
        markersize=5,
        linewidth=1.2,
        capsize=2,
        zorder=3,
    )


def _by_label(
    audit: pl.DataFrame, label: str, value: str, function: str, order: Sequence[str] | None, palette: Palette
) -> Figure:
    check_frame(audit, "audit", function, ("dataset", label, value, "difficulty_source"))
    rows = audit.filter(pl.col(label).is_not_null() & pl.col(value).is_not_null())
    keys = _order(rows, order, function) if rows.height or order is not None else []
    colour = _palette(palette, function)
    with _style():
        fig, axes = _panels(len(keys), width=3.0, height=2.8)
        for ax, dataset in zip(axes, keys, strict=False):
            label_plot(rows, dataset, label=label, value=value, color=colour(dataset), ax=ax)
        if keys:
            fig.legend(handles=[_median_handle()], loc="outside lower right")
        else:
            _empty_note(axes[0], f"no task has both a {label} label and {value}")
    return fig
