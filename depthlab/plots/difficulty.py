"""Depth predicts difficulty beyond work (notebooks ``03_depth_predicts_difficulty``, ``07_depth_proxy``).

Figure-level functions and the axes-level ones they draw with:

* :func:`forest` / :func:`forest_plot`: rank partial correlations with their intervals and
  multiplicity-adjusted p-values;
* :func:`work_vs_pass_rate` / :func:`work_vs_pass_rate_plot`: the public pass rate against work W,
  one panel per collection.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from depthlab._checks import check_choice, check_frame, check_number
from depthlab._text import count
from depthlab.catalog import POOLED_COLOUR, name
from depthlab.plots._core import (
    NEUTRAL,
    DataSource,
    Palette,
    empty_note,
    into_axes,
    new_figure,
    new_panels,
    order_of,
    palette_of,
    plain_log,
    scale_words,
    stamp,
    table_of,
)
from depthlab.plots._docstrings import fill


@fill
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

    Parameters
    ----------
    table : pl.DataFrame
        Columns ``label`` (row name), ``r``, ``ci_low``, ``ci_high``, ``n``; optional ``dataset``
        (colours the row; null = pooled, grey), ``p`` (printed raw and adjusted over all rows) and
        ``paper`` (the paper's value, drawn as an open diamond).
    {palette}
    {adjust}
    {ax}

    {returns_axes}

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
    colour = palette_of(palette, function)
    has_p = "p" in table.columns and table["p"].drop_nulls().len() > 0
    adjusted = adjust_p(table["p"].to_list(), method=adjust) if has_p and adjust else None
    has_paper = "paper" in table.columns and table["paper"].drop_nulls().len() > 0
    with into_axes(ax, function, (7, 0.42 * max(table.height, 1) + 1.3)) as ax:
        for i, row in enumerate(table.iter_rows(named=True)):
            hue = colour(row["dataset"]) if row.get("dataset") else POOLED_COLOUR
            if row["ci_low"] is not None and row["ci_high"] is not None:
                ax.plot([row["ci_low"], row["ci_high"]], [i, i], color=hue, linewidth=2, solid_capstyle="butt")
            if row["r"] is not None:
                ax.plot(row["r"], i, "o", color=hue, markersize=6)
            if has_paper and row.get("paper") is not None:
                ax.plot(row["paper"], i, "D", markerfacecolor="none", markeredgecolor=NEUTRAL, markersize=6)
            note = f"n = {row['n']}"
            if has_p:
                note += f"   p {_p_text(row['p'])}"
                if adjusted is not None:
                    note += f"   p_{adjust} {_p_text(adjusted[i])}"
            ax.text(1.03, i, note, va="center", fontsize=7, transform=ax.get_yaxis_transform())
        ax.axvline(0, color=NEUTRAL, linewidth=0.8, linestyle="--")
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


@fill
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
        ``paper`` (the paper's value, drawn as an open diamond) and ``data`` (``"simulated"``
        stamps the figure so, as :func:`depthlab.findings.forest_table` sets it).
    title : str
        Figure title.
    {palette}
    {adjust}

    {returns_figure}

    Examples
    --------
    >>> import polars as pl
    >>> table = pl.DataFrame({"label": ["pass ~ D | W"], "r": [-0.3], "ci_low": [-0.5], "ci_high": [-0.1],
    ...     "n": [50]})
    >>> forest(table).axes[0].get_xlabel()
    'rank partial correlation (Spearman)'
    """
    table, simulated = table_of(table, "audit", "table", "forest")
    check_frame(table, "table", "forest", ("label", "r", "ci_low", "ci_high", "n"))
    with new_figure((8.2, 0.42 * max(table.height, 1) + 1.6)) as (fig, ax):
        forest_plot(table, palette=palette, adjust=adjust, ax=ax)
        handles: list[Artist] = [
            Line2D([], [], marker="o", color=NEUTRAL, linewidth=2, label="this data, unadjusted 95% CI")
        ]
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
                    markeredgecolor=NEUTRAL,
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
    return stamp(fig, simulated)


@fill
def work_vs_pass_rate_plot(
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
    values, which would stack points on a handful of lines), and kept within 0–100%: a jittered
    point never shows a pass rate that cannot be. With an ``n_public_trials`` column,
    each collection also gets the pooled pass rate (passes / runs) of its tasks in each quartile of
    W, at the quartile's median W, with a Wilson interval (:func:`depthlab.stats.proportion_ci`).
    The panel of :func:`work_vs_pass_rate` (formerly ``work_pass_plot``).

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, work, pass_rate; optional n_public_trials for pooled rates).
    {order}
    {palette}
    {jitter}
    {ci}
    {ax}

    {returns_axes}

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"], "work": [3, 300],
    ...     "pass_rate": [0.9, 0.1]}), "audit")
    >>> work_vs_pass_rate_plot(audit).get_ylabel()
    'public pass rate'
    """
    function = "work_vs_pass_rate_plot"
    check_frame(audit, "audit", function, ("dataset", "work", "pass_rate"))
    check_number(jitter, "jitter", function, low=0, high=0.1)
    rows = _with_work_and_rate(audit)
    keys = order_of(rows, order, function)
    colour = palette_of(palette, function)
    with into_axes(ax, function, (6, 3.6)) as ax:
        for dataset in keys:
            part = rows.filter(pl.col("dataset") == dataset)
            shift = np.random.default_rng(_seed(dataset)).uniform(-jitter, jitter, part.height)
            ax.scatter(
                part["work"].to_numpy(),
                np.clip(part["pass_rate"].to_numpy() + shift, 0.0, 1.0),
                s=12,
                alpha=0.55,
                color=colour(dataset),
                label=f"{name(dataset)} (n={part.height})",
                edgecolors="none",
            )
            if "n_public_trials" in part.columns:
                _pooled_by_quartile(ax, part, colour(dataset), ci)
        if rows.height == 0:
            empty_note(ax, "no task has both W and a public pass rate")
        else:
            plain_log(ax, "x")
        ax.set_ylim(-0.05, 1.05)
        ax.yaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
        ax.set_xlabel(f"work W (solution lines{scale_words(ax, 'x')})")
        ax.set_ylabel("public pass rate")
    return ax


@fill
def work_vs_pass_rate(
    audit: pl.DataFrame | DataSource,
    *,
    order: Sequence[str] | None = None,
    palette: Palette = None,
    jitter: float = 0.025,
) -> Figure:
    """Public pass rate against work W, one panel per collection (:func:`work_vs_pass_rate_plot`).

    One panel per collection (shared axes), so no colours blend where collections overlap.
    Needs no capped runs, so it runs on public leaderboard data alone.

    Parameters
    ----------
    audit : pl.DataFrame or AuditData
        The audit table (dataset, work, pass_rate; optional n_public_trials for pooled rates), or an
        :class:`~depthlab.auditdata.AuditData` (its audit table; simulated data is stamped so).
    {order}
    {palette}
    {jitter}

    {returns_figure}

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
    audit, simulated = table_of(audit, "audit", "audit", function)
    check_frame(audit, "audit", function, ("dataset", "work", "pass_rate"))
    rows = _with_work_and_rate(audit)
    keys = order_of(rows, order, function)
    with new_panels(len(keys), width=3.3, height=2.7, ncols=4, sharex=True, sharey=True) as (fig, axes):
        if not keys:
            work_vs_pass_rate_plot(rows, ax=axes[0])
        for ax, dataset in zip(axes, keys, strict=False):
            work_vs_pass_rate_plot(rows, order=[dataset], palette=palette, jitter=jitter, ax=ax)
            ax.set_title(f"{name(dataset)} ({count(rows.filter(pl.col('dataset') == dataset).height, 'task')})")
        ncols = min(4, max(len(keys), 1))
        for i, ax in enumerate(axes):
            if i % ncols:
                ax.set_ylabel("")
            if i + ncols < len(keys):  # a panel below shows the shared x axis
                ax.set_xlabel("")
            else:
                ax.xaxis.set_tick_params(labelbottom=True)
        handles = [Line2D([], [], marker="o", linestyle="none", color=NEUTRAL, alpha=0.55, label="task (jittered)")]
        if "n_public_trials" in rows.columns:
            handles.append(Line2D([], [], marker="s", color=NEUTRAL, label="pooled per W quartile, 95% Wilson CI"))
        fig.legend(handles=handles, loc="outside lower center", ncol=2)
        fig.suptitle("Public pass rate against work W, per collection", fontsize=10)
    return stamp(fig, simulated)


def _with_work_and_rate(audit: pl.DataFrame) -> pl.DataFrame:
    return audit.filter(pl.col("work").is_not_null() & (pl.col("work") > 0) & pl.col("pass_rate").is_not_null())


def _seed(dataset: str) -> int:
    # a jitter that depends on the collection only, so a figure redraws identically
    return sum(dataset.encode())


def _p_text(p: float | None) -> str:
    # "= 0.043" or "< 0.001", so the printed relation is exact
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "= –"
    return "< 0.001" if p < 0.001 else f"= {p:.2g}"


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
