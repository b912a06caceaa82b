"""Multi-segment tasks (notebook ``06_segments``): reliability per segment, how it compounds, derived vs original depth.

Figure-level functions and the axes-level ones they draw with:

* :func:`segment_reliability` / :func:`segment_reliability_plot` (and :func:`compounding_plot`,
  its right panel);
* :func:`segment_reliability_by_model` / :func:`segment_reliability_by_model_plot`;
* :func:`paired_depths` / :func:`paired_depths_plot`.
"""

from __future__ import annotations

from typing import Final

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from depthlab import catalog
from depthlab._checks import check_frame, check_string
from depthlab.catalog import MEDIAN_COLOUR, POOLED_COLOUR, name
from depthlab.plots._core import (
    NEUTRAL,
    Palette,
    ShownFigure,
    empty_note,
    into_axes,
    new_figure,
    palette_of,
    stamp,
    style,
    table_of,
)
from depthlab.plots._docstrings import fill
from depthlab.schema import CAPS

_SEGMENT_COLUMNS: Final[tuple[str, ...]] = ("segment", "reliability", "reached", "observed", "compounded")


@fill
def segment_reliability_plot(
    table: pl.DataFrame, *, color: str | None = None, ci: float = 0.95, ax: Axes | None = None
) -> Axes:
    """Per segment position: the pass rate of the runs that reached it, with a Wilson interval.

    ``table`` needs ``segment``, ``reliability`` and ``reached`` (``passed`` too, else it is
    ``reliability × reached`` rounded). Intervals from :func:`depthlab.stats.proportion_ci`.

    Parameters
    ----------
    table : pl.DataFrame
        One row per segment position (see :func:`segment_reliability`).
    color : colour, optional
        Colour of the marks (default: DEPTH's, :func:`depthlab.catalog.color`).
    {ci}
    {ax}

    {returns_axes}

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
    with into_axes(ax, function, (4, 3.4)) as ax:
        ax.bar(segments, rate, color=hue, width=0.6, alpha=0.85)
        ax.errorbar(segments, rate, yerr=[rate - low, high - rate], fmt="none", ecolor=NEUTRAL, capsize=3, linewidth=1)
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


@fill
def compounding_plot(table: pl.DataFrame, *, color: str | None = None, ax: Axes | None = None) -> Axes:
    """Share of runs passing every segment so far: observed, against the product of the reliabilities.

    The right panel of :func:`segment_reliability`.

    Parameters
    ----------
    table : pl.DataFrame
        Columns ``segment``, ``observed`` and ``compounded`` (see :func:`segment_reliability`).
    color : colour, optional
        Colour of the marks (default: DEPTH's, :func:`depthlab.catalog.color`).
    {ax}

    {returns_axes}

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
    with into_axes(ax, function, (4, 3.4)) as ax:
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


@fill
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
    {palette}
    {ci}

    {returns_figure}

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
    table, simulated = table_of(table, "audit", "table", function)
    check_frame(table, "table", function, _SEGMENT_COLUMNS)
    if collection is None and "dataset" in table.columns and table["dataset"].drop_nulls().n_unique() == 1:
        collection = table["dataset"].drop_nulls()[0]
    if collection is not None:
        check_string(collection, "collection", function, expected="a collection name")
    hue = POOLED_COLOUR if collection is None else palette_of(palette, function)(collection)
    where = f"of {name(collection)}" if collection else "pooled over collections"
    with style():
        fig = ShownFigure(figsize=(8, 3.6), layout="constrained")
        ax_each, ax_all = fig.subplots(1, 2)
        segment_reliability_plot(table, color=hue, ci=ci, ax=ax_each)
        ax_each.set_title(f"Per-segment reliability ({ci:.0%} Wilson CI)")
        compounding_plot(table, color=hue, ax=ax_all)
        ax_all.set_title("Passing every segment so far")
        fig.suptitle(f"Multi-segment tasks {where}: {table.height} segment positions", fontsize=10)
    return stamp(fig, simulated)


@fill
def paired_depths_plot(pairs: pl.DataFrame, *, color: str | None = None, ax: Axes | None = None) -> Axes:
    """Depth of each derived task against its original's (log-log, ladder ticks); marker area = pairs.

    A size legend gives the number of pairs a marker area stands for.

    Parameters
    ----------
    pairs : pl.DataFrame
        Columns ``original`` and ``derived`` (see :func:`paired_depths`).
    color : colour, optional
        Colour of the marks (default: DEPTH's, :func:`depthlab.catalog.color`).
    {ax}

    {returns_axes}

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
    with into_axes(ax, function, (4.6, 4.2)) as ax:
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
            empty_note(ax, "no environment hosts two solved tasks")
        ax.set_xlabel("depth D of the original task (turns)")
        ax.set_ylabel("depth D of the derived task (turns)")
    return ax


@fill
def paired_depths(pairs: pl.DataFrame, *, palette: Palette = None) -> Figure:
    """Depth of the derived task against the original, for environments hosting both.

    Parameters
    ----------
    pairs : pl.DataFrame
        Columns ``original`` and ``derived`` (depths of the two tasks sharing an environment);
        optional ``dataset`` (the derived task's collection: names the figure and colours it).
    {palette}

    {returns_figure}

    Examples
    --------
    >>> import polars as pl
    >>> paired_depths(pl.DataFrame({"original": [1, 2], "derived": [3, 5]})).axes[0].get_xlabel()
    'depth D of the original task (turns)'
    """
    function = "paired_depths"
    pairs, simulated = table_of(pairs, "audit", "pairs", function)
    check_frame(pairs, "pairs", function, ("original", "derived"))
    rows = pairs.drop_nulls(["original", "derived"])
    derived = catalog.ordered(rows["dataset"].to_list()) if "dataset" in rows.columns else []
    hue = palette_of(palette, function)(derived[0]) if len(derived) == 1 else POOLED_COLOUR
    with new_figure((5.8, 4.4)) as (fig, ax):
        paired_depths_plot(rows, color=hue, ax=ax)
        if rows.height:
            deeper = int((rows["derived"] > rows["original"]).sum())
            shallower = int((rows["derived"] < rows["original"]).sum())
            which = f"{', '.join(name(d) for d in derived)} tasks" if derived else "derived tasks"
            ax.set_title(f"{rows.height} {which} vs their originals:\nderived deeper {deeper}, shallower {shallower}")
    return stamp(fig, simulated)


#: The rows of :func:`depthlab.findings.segment_reliability` drawn per model, and their legend labels.
_MODEL_SEGMENT_KEYS: Final[dict[str, str]] = {
    "segment_reliability": "segment reliability r",
    "segment_pass_all_observed": "runs passing all: observed",
    "segment_pass_all_compounded": "runs passing all: r\u2076",  # r to the paper's six segments
}


@fill
def segment_reliability_by_model_plot(
    findings: pl.DataFrame, *, color: str | None = None, ax: Axes | None = None
) -> Axes:
    """Per model: segment reliability r, and the share of runs passing every segment, observed and r⁶.

    ``findings`` is the table of :func:`depthlab.findings.segment_reliability` (columns key, group,
    value, ci_low, ci_high); its ``best model`` / ``worst model`` rows repeat a model's and are not
    drawn. Bars of one model share its hue (r solid, the two pass-all shares lighter), with the
    task-bootstrap intervals as black lines.

    Parameters
    ----------
    findings : pl.DataFrame
        The rows of :func:`depthlab.findings.segment_reliability`.
    color : colour, optional
        Colour of the marks (default: DEPTH's, :func:`depthlab.catalog.color`).
    {ax}

    {returns_axes}

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
    with into_axes(ax, function, (1.8 + 1.9 * max(len(models), 1), 3.6)) as ax:
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
            empty_note(ax, "no multi-segment runs")
    return ax


@fill
def segment_reliability_by_model(findings: pl.DataFrame, *, palette: Palette = None) -> Figure:
    """Figure of :func:`segment_reliability_by_model_plot`, titled with the collection(s) of the tasks.

    Parameters
    ----------
    findings : pl.DataFrame
        The rows of :func:`depthlab.findings.segment_reliability`, with a ``collections`` column
        (comma-separated names of the collections the tasks come from).
    {palette}

    {returns_figure}

    Examples
    --------
    >>> import polars as pl
    >>> rows = [{"key": "segment_reliability", "group": "m", "value": 0.8, "ci_low": 0.7, "ci_high": 0.9,
    ...          "collections": "depth"}]
    >>> segment_reliability_by_model(pl.DataFrame(rows)).axes[0].get_title()
    'Multi-segment tasks of DEPTH: per-model reliability (95% task-bootstrap CIs)'
    """
    function = "segment_reliability_by_model"
    findings, simulated = table_of(findings, "audit", "findings", function)
    check_frame(findings, "findings", function, ("key", "group", "value", "ci_low", "ci_high", "collections"))
    where = catalog.ordered(
        part.strip() for text in findings["collections"].drop_nulls().to_list() for part in text.split(",") if part
    )
    hue = palette_of(palette, function)(where[0]) if len(where) == 1 else POOLED_COLOUR
    with new_figure((1.8 + 1.9 * max(findings["group"].n_unique() - 2, 1), 3.8)) as (fig, ax):
        segment_reliability_by_model_plot(findings, color=hue, ax=ax)
        which = ", ".join(name(d) for d in where) or "no collection"
        ax.set_title(f"Multi-segment tasks of {which}: per-model reliability (95% task-bootstrap CIs)")
    return stamp(fig, simulated)


def _pair_area(counts: np.ndarray) -> np.ndarray:
    return 20 + 25 * counts
