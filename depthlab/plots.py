"""Figures of the audit: each function takes tidy tables and returns a matplotlib Figure.

Every figure shares one style (:data:`RC`), one colour per collection (:data:`PALETTE`,
stable across figures) and one display name per collection (:data:`NAMES`). Figures are
built on :class:`matplotlib.figure.Figure` directly, without pyplot's global state, so they
render headless (Agg) and never accumulate. :func:`save` writes a figure as PNG and PDF.

Plots take tables and return figures; they never read files and never compute statistics
beyond counting and binning what they draw (the statistics come from :mod:`depthlab.stats`).

>>> import polars as pl
>>> from depthlab import plots, schema
>>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2", "tb2"], "task": ["a", "b"],
...     "depth": [1, 3], "depth_status": ["solved", "solved"], "n_turns": [4.0, 9.0],
...     "work": [10, 50], "pass_rate": [0.8, 0.2]}), "audit")
>>> fig = plots.turns_vs_depth(audit)
>>> len(fig.axes)
1
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from depthlab.schema import CAPS

__all__ = [
    "NAMES",
    "ORDER",
    "PALETTE",
    "RC",
    "collection_summary",
    "color",
    "depth_given_turns",
    "forest",
    "label_depths",
    "label_pass_rates",
    "name",
    "paired_depths",
    "quadrants",
    "save",
    "segment_reliability",
    "segment_reliability_by_model",
    "turns_by_model",
    "turns_minus_depth",
    "turns_vs_depth",
    "work_vs_pass_rate",
]

#: Display order of the collections: human-curated first, then synthetic, then DEPTH.
ORDER: Final[tuple[str, ...]] = ("tb2", "tw", "tmax", "facet", "seta", "rst", "depth")

#: One colour per collection (Okabe-Ito, colour-blind safe), the same in every figure.
PALETTE: Final[dict[str, str]] = {
    "tb2": "#0072B2",
    "tw": "#56B4E9",
    "tmax": "#D55E00",
    "facet": "#E69F00",
    "seta": "#009E73",
    "rst": "#CC79A7",
    "depth": "#000000",
}

#: Display names of the collections.
NAMES: Final[dict[str, str]] = {
    "tb2": "TB2",
    "tw": "TW-Verified",
    "tmax": "TMax",
    "facet": "FACET",
    "seta": "SETA",
    "rst": "RST",
    "depth": "DEPTH",
}

# colours for collections outside PALETTE (a user's own Harbor tree), chosen by a stable hash
_EXTRA_COLOURS: Final[tuple[str, ...]] = ("#F0E442", "#7F7F7F", "#8C564B", "#17BECF", "#BCBD22", "#9467BD")

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

# depth bins for shares of solved tasks, as in the paper: D = 1, 2-3, 5-10, 20+
_DEPTH_BINS: Final[tuple[tuple[str, int, int], ...]] = (
    ("D = 1", 1, 1),
    ("D = 2–3", 2, 3),
    ("D = 5–10", 5, 10),
    ("D ≥ 20", 20, 10**9),
)
_DEPTH_BIN_COLOURS: Final[tuple[str, ...]] = ("#1B9E77", "#A6D854", "#FDB863", "#E66101")
_LABEL_ORDER: Final[tuple[str, ...]] = ("easy", "medium", "hard")
# models are not collections: a separate dark, distinct set (tab10 without its collection-like hues)
_MODEL_COLOURS: Final[tuple[str, ...]] = (
    "#1F77B4",
    "#D62728",
    "#2CA02C",
    "#9467BD",
    "#8C564B",
    "#E377C2",
    "#7F7F7F",
    "#17BECF",
    "#BCBD22",
    "#FF7F0E",
)
_POOLED_COLOUR: Final[str] = "#7F7F7F"
# the audit columns every turns-beside-depth figure reads
_TURNS_AND_DEPTH: Final[tuple[str, ...]] = ("dataset", "depth", "depth_status", "n_turns")


def name(dataset: str) -> str:
    """Display name of a collection (its key when unknown).

    >>> name("tb2")
    'TB2'
    """
    return NAMES.get(dataset, dataset)


def color(dataset: str) -> str:
    """Colour of a collection: fixed for known collections, stable by name for others.

    >>> color("tb2")
    '#0072B2'
    >>> color("my-tasks") == color("my-tasks")
    True
    """
    if dataset in PALETTE:
        return PALETTE[dataset]
    digest = int(hashlib.sha1(dataset.encode()).hexdigest(), 16)
    return _EXTRA_COLOURS[digest % len(_EXTRA_COLOURS)]


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
    if not name or not all(ch.isalnum() or ch in "-_" for ch in name):
        raise ValueError(f"The 'name' parameter of save must be a non-empty file stem of [A-Za-z0-9_-], got {name!r}")
    folder = Path(figures_dir)
    folder.mkdir(parents=True, exist_ok=True)
    paths = (folder / f"{name}.png", folder / f"{name}.pdf")
    with mpl.rc_context(RC):
        for path in paths:
            fig.savefig(path, bbox_inches="tight", metadata=_metadata(path.suffix))
    return paths


def collection_summary(audit: pl.DataFrame) -> Figure:
    """Per collection: depth shares of solved tasks, work W and uncapped turns N.

    Left: the share of *solved* tasks with D = 1, 2–3, 5–10 and ≥ 20, annotated with
    solved / all tasks. Middle and right: W and N per task (log scale).

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (columns dataset, depth, depth_status, work, n_turns).

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
    _require(audit, ("dataset", "depth", "depth_status", "work", "n_turns"), "audit", "collection_summary")
    collections = _collections(audit)
    with _style():
        fig = Figure(figsize=(10, max(2.8, 0.45 * len(collections) + 1.6)), layout="constrained")
        ax_depth, ax_work, ax_turns = fig.subplots(1, 3, sharey=True, gridspec_kw={"width_ratios": [1.3, 1, 1]})
        y = np.arange(len(collections))
        for row, dataset in enumerate(collections):
            rows = audit.filter(pl.col("dataset") == dataset)
            solved = rows.filter(pl.col("depth_status") == "solved")["depth"].drop_nulls().to_numpy()
            left = 0.0
            for (label, low, high), colour in zip(_DEPTH_BINS, _DEPTH_BIN_COLOURS, strict=True):
                share = float(np.mean((solved >= low) & (solved <= high))) if solved.size else 0.0
                ax_depth.barh(row, share, left=left, color=colour, label=label if row == 0 else None, height=0.7)
                if share >= 0.08:
                    ax_depth.text(left + share / 2, row, f"{share:.0%}", ha="center", va="center", fontsize=7)
                left += share
            note = f"{solved.size}/{rows.height}\nsolved"
            ax_depth.text(1.02, row, note, va="center", fontsize=7, transform=ax_depth.get_yaxis_transform())
            for ax, column in ((ax_work, "work"), (ax_turns, "n_turns")):
                values = rows[column].drop_nulls().cast(pl.Float64).to_numpy()
                values = values[values > 0]
                if values.size:
                    _strip(ax, values, row, color(dataset))
        ax_depth.set_yticks(y, [name(d) for d in collections])
        ax_depth.invert_yaxis()
        ax_depth.set_xlim(0, 1)
        ax_depth.xaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
        ax_depth.set_xlabel("share of solved tasks")
        ax_depth.grid(False)
        if audit.filter(pl.col("depth_status") == "solved").height:
            fig.legend(loc="outside lower left", ncol=4, title="depth of solved tasks")
        else:
            ax_depth.text(
                0.5,
                0.5,
                "no capped runs: D unknown",
                ha="center",
                va="center",
                color="#666666",
                transform=ax_depth.transAxes,
            )
        _plain_log(ax_work, "x")
        ax_work.set_xlabel("work W (solution lines, log scale)")
        _plain_log(ax_turns, "x")
        ax_turns.set_xlabel("turns N (median uncapped, log scale)")
        for ax in (ax_work, ax_turns):
            ax.grid(axis="y", visible=False)
        fig.suptitle("Collections: how deep are the solved tasks, how much work, how many turns", fontsize=10)
    return fig


def turns_vs_depth(audit: pl.DataFrame, *, caps: Sequence[int] = CAPS) -> Figure:
    """Histograms of turns N beside depth D, one panel per collection, on the cap ladder.

    Each bar group is one rung of the ladder: D counts the solved tasks whose depth is that cap;
    N counts the tasks whose median uncapped turn count falls in the interval ending at that cap
    (above the previous rung). Tasks with N above the top cap form a last group.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, depth, depth_status, n_turns).
    caps : sequence of int
        The ladder (default :data:`depthlab.CAPS`).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"], "depth": [1, 3],
    ...     "depth_status": ["solved"] * 2, "n_turns": [4.0, 9.0]}), "audit")
    >>> turns_vs_depth(audit).axes[0].get_title()
    'TB2 (2 tasks, 2 solved)'
    """
    _require(audit, _TURNS_AND_DEPTH, "audit", "turns_vs_depth")
    ladder = _ladder(caps, "turns_vs_depth")
    labels = [*(_rung_label(ladder, i) for i in range(len(ladder))), f">{ladder[-1]}"]
    collections = _collections(audit)
    with _style():
        fig, axes = _panels(len(collections), width=4.0, height=2.5)
        x = np.arange(len(labels))
        for ax, dataset in zip(axes, collections, strict=False):
            rows = audit.filter(pl.col("dataset") == dataset)
            depth = rows.filter(pl.col("depth_status") == "solved")["depth"].drop_nulls().to_numpy()
            turns = rows["n_turns"].drop_nulls().to_numpy()
            depth_counts = [int(np.sum(depth == cap)) for cap in ladder] + [0]
            turn_counts = _rung_counts(turns, ladder)
            ax.bar(x - 0.2, turn_counts, width=0.4, color="#BBBBBB", label="turns N (uncapped)")
            ax.bar(x + 0.2, depth_counts, width=0.4, color=color(dataset), label="depth D (solved)")
            ax.set_xticks(x, labels, fontsize=7)
            ax.set_title(f"{name(dataset)} ({rows.height} tasks, {depth.size} solved)")
            ax.set_xlabel("turns (ladder rung)")
            ax.set_ylabel("tasks")
            ax.grid(axis="x", visible=False)
            ax.yaxis.set_major_locator(mpl.ticker.MaxNLocator(integer=True))
        handles, names = axes[0].get_legend_handles_labels()
        fig.legend(handles, names, loc="outside upper right", ncol=2)
        fig.suptitle("Uncapped turn counts N beside depth D, per collection", fontsize=10, x=0.02, ha="left")
    return fig


def turns_minus_depth(audit: pl.DataFrame) -> Figure:
    """Histogram of N − D over solved tasks, one step line per collection.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, depth, depth_status, n_turns).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"], "depth": [1, 3],
    ...     "depth_status": ["solved"] * 2, "n_turns": [4.0, 9.0]}), "audit")
    >>> turns_minus_depth(audit).axes[0].get_xlabel()
    'N − D (turns taken minus depth, turns)'
    """
    _require(audit, _TURNS_AND_DEPTH, "audit", "turns_minus_depth")
    solved = audit.filter((pl.col("depth_status") == "solved") & pl.col("depth").is_not_null())
    solved = solved.filter(pl.col("n_turns").is_not_null())
    gap = (solved["n_turns"] - solved["depth"].cast(pl.Float64)).to_numpy()
    with _style():
        fig = Figure(figsize=(6, 3.4), layout="constrained")
        ax = fig.subplots()
        if gap.size:
            low, high = math.floor(min(gap.min(), 0)), math.ceil(max(gap.max(), 1))
            bins = np.linspace(low, high, min(40, max(high - low, 1)) + 1)
            for dataset in _collections(solved):
                values = gap[(solved["dataset"] == dataset).to_numpy()]
                ax.hist(
                    values,
                    bins=bins,
                    histtype="step",
                    linewidth=1.6,
                    color=color(dataset),
                    label=f"{name(dataset)} (n={values.size}, median {np.median(values):+.1f})",
                )
            ax.axvline(0, color="#444444", linewidth=0.8, linestyle="--")
            ax.legend(loc="upper right")
        else:
            _empty_note(ax, "no solved tasks with turn counts")
        ax.set_xlabel("N − D (turns taken minus depth, turns)")
        ax.set_ylabel("solved tasks")
        ax.set_title("Turns taken without a cap minus depth, per solved task")
    return fig


def depth_given_turns(audit: pl.DataFrame, *, turns: tuple[float, float] = (6, 10)) -> Figure:
    """Depth of the tasks whose uncapped turn count N lies in ``turns`` (inclusive), per collection.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, depth, depth_status, n_turns).
    turns : (low, high)
        The N interval, inclusive (the paper uses 6–10).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"], "depth": [1, 3],
    ...     "depth_status": ["solved"] * 2, "n_turns": [7.0, 9.0]}), "audit")
    >>> depth_given_turns(audit).axes[0].get_ylabel()
    'solved tasks with N in 6–10'
    """
    _require(audit, _TURNS_AND_DEPTH, "audit", "depth_given_turns")
    low, high = turns
    if not low <= high:
        raise ValueError(
            f"The 'turns' parameter of depth_given_turns must be (low, high) with low <= high, got {turns}"
        )
    rows = audit.filter(
        (pl.col("depth_status") == "solved") & pl.col("n_turns").is_between(low, high) & pl.col("depth").is_not_null()
    )
    caps = sorted(set(CAPS) | set(rows["depth"].to_list()))
    with _style():
        fig = Figure(figsize=(6, 3.4), layout="constrained")
        ax = fig.subplots()
        x = np.arange(len(caps))
        bottom = np.zeros(len(caps))
        for dataset in _collections(rows):
            depth = rows.filter(pl.col("dataset") == dataset)["depth"].to_numpy()
            counts = np.array([np.sum(depth == cap) for cap in caps], dtype=float)
            ax.bar(x, counts, bottom=bottom, color=color(dataset), label=name(dataset), width=0.7)
            bottom += counts
        if rows.height == 0:
            _empty_note(ax, f"no solved task has N in {low:g}–{high:g}")
        else:
            ax.legend(loc="upper right")
            share = float(np.mean(rows["depth"].to_numpy() == 1))
            ax.set_title(f"{rows.height} tasks take {low:g}–{high:g} turns; {share:.0%} of them have D = 1")
        ax.set_xticks(x, [str(cap) for cap in caps])
        ax.set_xlabel("depth D (turns)")
        ax.set_ylabel(f"solved tasks with N in {low:g}–{high:g}")
        ax.grid(axis="x", visible=False)
    return fig


def forest(table: pl.DataFrame, *, title: str = "Rank partial correlations with 95% bootstrap CIs") -> Figure:
    """Forest plot of correlations with confidence intervals, one row per line of ``table``.

    Parameters
    ----------
    table : pl.DataFrame
        Columns ``label`` (row name), ``r``, ``ci_low``, ``ci_high``, ``n``; optional ``dataset``
        (colours the point) and ``paper`` (the paper's value, drawn as an open diamond).
    title : str
        Figure title.

    Examples
    --------
    >>> import polars as pl
    >>> table = pl.DataFrame({"label": ["pass ~ D | W"], "r": [-0.3], "ci_low": [-0.5], "ci_high": [-0.1],
    ...     "n": [50]})
    >>> forest(table).axes[0].get_xlabel()
    'rank partial correlation (Spearman)'
    """
    _require(table, ("label", "r", "ci_low", "ci_high", "n"), "table", "forest")
    with _style():
        fig = Figure(figsize=(7, 0.42 * max(table.height, 1) + 1.3), layout="constrained")
        ax = fig.subplots()
        y = np.arange(table.height)
        has_paper = "paper" in table.columns and table["paper"].drop_nulls().len() > 0
        for i, row in enumerate(table.iter_rows(named=True)):
            colour = color(row["dataset"]) if row.get("dataset") else _POOLED_COLOUR
            if row["ci_low"] is not None and row["ci_high"] is not None:
                ax.plot([row["ci_low"], row["ci_high"]], [i, i], color=colour, linewidth=2, solid_capstyle="butt")
            if row["r"] is not None:
                ax.plot(row["r"], i, "o", color=colour, markersize=6)
            if has_paper and row.get("paper") is not None:
                ax.plot(row["paper"], i, "D", markerfacecolor="none", markeredgecolor="#444444", markersize=6)
            ax.text(1.03, i, f"n = {row['n']}", va="center", fontsize=7, transform=ax.get_yaxis_transform())
        if has_paper:
            ax.plot([], [], "o", color=_POOLED_COLOUR, label="this data (95% CI); grey = pooled")
            ax.plot([], [], "D", markerfacecolor="none", markeredgecolor="#444444", label="paper reports")
            fig.legend(loc="outside lower center", ncol=2)
        ax.axvline(0, color="#444444", linewidth=0.8, linestyle="--")
        # a rule between groups of rows that test different things ("...: pass ~ D | W" then "...: pass ~ N | D")
        tests = [label.split(":", 1)[-1].strip() for label in table["label"].to_list()]
        for i in range(1, len(tests)):
            if tests[i] != tests[i - 1]:
                ax.axhline(i - 0.5, color="#BBBBBB", linewidth=0.8)
        ax.set_yticks(y, table["label"].to_list())
        ax.invert_yaxis()
        ax.set_xlim(-1, 1)
        ax.set_xlabel("rank partial correlation (Spearman)")
        ax.grid(axis="y", visible=False)
        ax.set_title(title)
    return fig


def work_vs_pass_rate(audit: pl.DataFrame) -> Figure:
    """Public pass rate against work W (log scale), one colour per collection.

    Needs no capped runs, so it runs on public leaderboard data alone.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, work, pass_rate).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"], "work": [3, 300],
    ...     "pass_rate": [0.9, 0.1]}), "audit")
    >>> work_vs_pass_rate(audit).axes[0].get_ylabel()
    'public pass rate'
    """
    _require(audit, ("dataset", "work", "pass_rate"), "audit", "work_vs_pass_rate")
    rows = audit.filter(pl.col("work").is_not_null() & (pl.col("work") > 0) & pl.col("pass_rate").is_not_null())
    with _style():
        fig = Figure(figsize=(6, 3.6), layout="constrained")
        ax = fig.subplots()
        for dataset in _collections(rows):
            part = rows.filter(pl.col("dataset") == dataset)
            ax.scatter(
                part["work"],
                part["pass_rate"],
                s=14,
                alpha=0.7,
                color=color(dataset),
                label=f"{name(dataset)} (n={part.height})",
                edgecolors="none",
            )
        if rows.height == 0:
            _empty_note(ax, "no task has both W and a public pass rate")
        else:
            _plain_log(ax, "x")
            fig.legend(loc="outside right upper")
        ax.set_ylim(-0.03, 1.03)
        ax.yaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
        ax.set_xlabel("work W (solution lines, log scale)")
        ax.set_ylabel("public pass rate")
        ax.set_title("Public pass rate against work W")
    return fig


def turns_by_model(turns: pl.DataFrame, *, turn_limit: int | None = None) -> Figure:
    """Distribution of uncapped turn counts per model (ECDF), from :func:`depthlab.turn_counts`.

    Parameters
    ----------
    turns : pl.DataFrame
        Columns ``model`` and ``n_turns`` (one row per task and model); optional ``dataset``.
    turn_limit : int, optional
        The harness's safety limit, drawn as a vertical line when given.

    Examples
    --------
    >>> import polars as pl
    >>> turns = pl.DataFrame({"model": ["a", "a", "b"], "n_turns": [3.0, 8.0, 20.0]})
    >>> turns_by_model(turns).axes[0].get_xlabel()
    'turns N per task (median over uncapped runs, log scale)'
    """
    _require(turns, ("model", "n_turns"), "turns", "turns_by_model")
    rows = turns.filter(pl.col("n_turns").is_not_null() & (pl.col("n_turns") > 0))
    models = sorted(rows["model"].unique().to_list())
    colours = [_MODEL_COLOURS[i % len(_MODEL_COLOURS)] for i in range(len(models))]
    with _style():
        fig = Figure(figsize=(6, 3.6), layout="constrained")
        ax = fig.subplots()
        for model, colour in zip(models, colours, strict=False):
            values = np.sort(rows.filter(pl.col("model") == model)["n_turns"].cast(pl.Float64).to_numpy())
            share = np.arange(1, values.size + 1) / values.size
            ax.step(
                values,
                share,
                where="post",
                color=colour,
                linewidth=1.4,
                label=f"{model} (median {np.median(values):.0f})",
            )
        if turn_limit is not None:
            ax.axvline(turn_limit, color="#B22222", linestyle=":", linewidth=1, label=f"harness limit {turn_limit}")
        if rows.height == 0:
            _empty_note(ax, "no uncapped runs with turn counts")
        else:
            _plain_log(ax, "x")
            fig.legend(loc="outside right upper", fontsize=7)
        ax.set_ylim(0, 1.02)
        ax.yaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
        ax.set_xlabel("turns N per task (median over uncapped runs, log scale)")
        ax.set_ylabel("share of tasks with at most N turns")
        ax.set_title("Uncapped turn counts per model")
    return fig


def label_pass_rates(audit: pl.DataFrame, *, label: str = "difficulty") -> Figure:
    """Public pass rate by an ordinal label, one panel per collection that has the label.

    Panel titles say whether the label is a human rating or a generated one
    (``difficulty_source``), so the two are never confused.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, pass_rate, difficulty_source and the ``label`` column).
    label : str
        The label column (default ``difficulty``; easy < medium < hard are ordered first).

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
    return _by_label(audit, label, "pass_rate", "public pass rate", "label_pass_rates")


def label_depths(audit: pl.DataFrame, *, label: str = "difficulty") -> Figure:
    """Depth D of solved tasks by an ordinal label, one panel per collection that has both.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, depth, depth_status, difficulty_source and ``label``).
    label : str
        The label column (default ``difficulty``).

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
    _require(audit, ("depth_status",), "audit", "label_depths")
    solved = audit.filter(pl.col("depth_status") == "solved")
    return _by_label(solved, label, "depth", "depth D (turns, log scale)", "label_depths", log=True)


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
    columns = ("depth_class", "work_class", "n", "mean_percentile", "ci_low", "ci_high", "depth_split", "work_split")
    _require(table, columns, "table", "quadrants")
    grid = np.full((2, 2), np.nan)
    depth_split = table["depth_split"].drop_nulls().first() if table.height else 2.0
    work_split = table["work_split"].drop_nulls().first() if table.height else float("nan")
    with _style():
        fig = Figure(figsize=(5.6, 4.2), layout="constrained")
        ax = fig.subplots()
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
        fig.colorbar(image, ax=ax, shrink=0.8, label="pass-rate percentile within collection")
        ax.set_title("Mean within-collection pass-rate percentile (lower = harder)")
    return fig


def segment_reliability(table: pl.DataFrame) -> Figure:
    """Per-segment reliability of multi-segment tasks and how it compounds.

    Parameters
    ----------
    table : pl.DataFrame
        One row per segment position: ``segment`` (1-based), ``reliability`` (share of runs that
        reached the segment and passed it), ``reached`` (runs that reached it), ``observed`` (share
        of all runs passing every segment up to it) and ``compounded`` (product of the
        reliabilities up to it).

    Examples
    --------
    >>> import polars as pl
    >>> table = pl.DataFrame({"segment": [1, 2], "reliability": [0.9, 0.8], "reached": [100, 90],
    ...     "observed": [0.9, 0.72], "compounded": [0.9, 0.72]})
    >>> [ax.get_xlabel() for ax in segment_reliability(table).axes]
    ['segment position', 'segments completed']
    """
    _require(table, ("segment", "reliability", "reached", "observed", "compounded"), "table", "segment_reliability")
    with _style():
        fig = Figure(figsize=(8, 3.4), layout="constrained")
        ax_each, ax_all = fig.subplots(1, 2)
        segments = table["segment"].to_numpy()
        ax_each.bar(segments, table["reliability"].to_numpy(), color=PALETTE["depth"], width=0.6, alpha=0.8)
        for seg, rel, reached in table.select("segment", "reliability", "reached").iter_rows():
            ax_each.text(seg, rel + 0.02, f"{rel:.2f}\n(n={reached})", ha="center", va="bottom", fontsize=7)
        ax_each.set_ylim(0, 1.18)
        ax_each.set_xlabel("segment position")
        ax_each.set_ylabel("pass rate of runs reaching it")
        ax_each.set_title("Per-segment reliability")
        ax_all.plot(segments, table["observed"].to_numpy(), "o-", color=PALETTE["depth"], label="observed")
        ax_all.plot(segments, table["compounded"].to_numpy(), "s--", color="#999999", label="product of reliabilities")
        ax_all.set_ylim(0, 1.02)
        ax_all.set_xlabel("segments completed")
        ax_all.set_ylabel("share of runs passing all so far")
        ax_all.set_title("Passing every segment so far: observed vs product")
        ax_all.legend(loc="lower left")
        for ax in (ax_each, ax_all):
            ax.set_xticks(segments)
            ax.grid(axis="x", visible=False)
            ax.yaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
    return fig


def paired_depths(pairs: pl.DataFrame) -> Figure:
    """Depth of the derived task against the original, for environments hosting both.

    Parameters
    ----------
    pairs : pl.DataFrame
        Columns ``original`` and ``derived`` (depths of the two tasks sharing an environment).

    Examples
    --------
    >>> import polars as pl
    >>> paired_depths(pl.DataFrame({"original": [1, 2], "derived": [3, 5]})).axes[0].get_xlabel()
    'depth D of the original task (turns)'
    """
    _require(pairs, ("original", "derived"), "pairs", "paired_depths")
    rows = pairs.drop_nulls(["original", "derived"])
    with _style():
        fig = Figure(figsize=(4.6, 4.2), layout="constrained")
        ax = fig.subplots()
        if rows.height:
            counts = rows.group_by("original", "derived").len()
            ax.scatter(
                counts["original"],
                counts["derived"],
                s=20 + 25 * counts["len"].to_numpy(),
                color=PALETTE["depth"],
                alpha=0.6,
                edgecolors="none",
            )
            top = max(rows["original"].max(), rows["derived"].max()) * 1.5
            ax.plot([0.7, top], [0.7, top], color="#888888", linestyle="--", linewidth=0.8, label="same depth")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ladder = [cap for cap in CAPS if cap <= top]
            ax.set_xticks(ladder, [str(c) for c in ladder])
            ax.set_yticks(ladder, [str(c) for c in ladder])
            ax.minorticks_off()
            deeper = int((rows["derived"] > rows["original"]).sum())
            shallower = int((rows["derived"] < rows["original"]).sum())
            ax.set_title(f"{rows.height} pairs: derived deeper {deeper}, shallower {shallower}")
            ax.legend(loc="upper left")
        else:
            _empty_note(ax, "no environment hosts two solved tasks")
        ax.set_xlabel("depth D of the original task (turns)")
        ax.set_ylabel("depth D of the derived task (turns)")
    return fig


def segment_reliability_by_model(findings: pl.DataFrame) -> Figure:
    """Per-model segment reliability r, and runs passing every segment: observed against rᵏ.

    Parameters
    ----------
    findings : pl.DataFrame
        The table of :func:`depthlab.findings.segment_reliability` (rows ``segment_reliability``,
        ``segment_pass_all_observed`` and ``segment_pass_all_compounded`` per model, with CIs).

    Examples
    --------
    >>> import polars as pl
    >>> rows = [{"key": k, "group": "m", "value": v, "ci_low": v - 0.1, "ci_high": v + 0.1, "collections": "depth"}
    ...         for k, v in (("segment_reliability", 0.8), ("segment_pass_all_observed", 0.5),
    ...                      ("segment_pass_all_compounded", 0.51))]
    >>> segment_reliability_by_model(pl.DataFrame(rows)).axes[0].get_ylabel()
    'share'
    """
    _require(
        findings,
        ("key", "group", "value", "ci_low", "ci_high", "collections"),
        "findings",
        "segment_reliability_by_model",
    )
    keys = {
        "segment_reliability": "segment reliability r",
        "segment_pass_all_observed": "runs passing all: observed",
        "segment_pass_all_compounded": "runs passing all: r^k",
    }
    rows = findings.filter(
        pl.col("key").is_in(list(keys))
        & ~pl.col("group").is_in(["best model", "worst model"])
        & pl.col("value").is_not_null()
    )
    models = sorted(rows["group"].unique().to_list())
    shades = {
        "segment_reliability": PALETTE["depth"],
        "segment_pass_all_observed": "#7f7f7f",
        "segment_pass_all_compounded": "#c7c7c7",
    }
    with _style():
        fig = Figure(figsize=(1.8 + 1.9 * max(len(models), 1), 3.6), layout="constrained")
        ax = fig.subplots()
        width = 0.26
        for j, (key, label) in enumerate(keys.items()):
            part = {row["group"]: row for row in rows.filter(pl.col("key") == key).iter_rows(named=True)}
            x = np.arange(len(models)) + (j - 1) * width
            values = [part[m]["value"] if m in part else np.nan for m in models]
            ax.bar(x, values, width=width * 0.95, color=shades[key], label=label)
            for xi, model in zip(x, models, strict=True):
                row = part.get(model)
                if row is not None and row["ci_low"] is not None:
                    ax.plot([xi, xi], [row["ci_low"], row["ci_high"]], color="#222222", linewidth=1)
        ax.set_xticks(np.arange(len(models)), models)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("share")
        ax.yaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
        ax.grid(axis="x", visible=False)
        where = (
            ", ".join(name(d.strip()) for d in rows["collections"].unique().to_list()[:1][0].split(","))
            if (rows.height)
            else "no data"
        )
        ax.set_title(f"Multi-segment tasks ({where}): per-model reliability, 95% task-bootstrap CIs")
        ax.legend(loc="upper right", fontsize=8)
        if not rows.height:
            _empty_note(ax, "no multi-segment runs")
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


def _require(df: pl.DataFrame, columns: Sequence[str], param: str, func: str) -> None:
    if not isinstance(df, pl.DataFrame):
        raise TypeError(f"The '{param}' parameter of {func} must be a polars DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"The '{param}' parameter of {func} must have columns {list(columns)}; missing {missing}")


def _collections(df: pl.DataFrame) -> list[str]:
    present = set(df["dataset"].drop_nulls().unique().to_list())
    return [d for d in ORDER if d in present] + sorted(present - set(ORDER))


def _ladder(caps: Sequence[int], func: str) -> list[int]:
    ladder = sorted({int(c) for c in caps})
    if not ladder or ladder[0] < 1:
        raise ValueError(f"The 'caps' parameter of {func} must be positive integers, got {list(caps)}")
    return ladder


def _rung_label(ladder: Sequence[int], i: int) -> str:
    low = 1 if i == 0 else ladder[i - 1] + 1
    return str(ladder[i]) if low == ladder[i] else f"{low}–{ladder[i]}"


def _rung_counts(values: np.ndarray, ladder: Sequence[int]) -> list[int]:
    # rung i holds (ladder[i-1], ladder[i]]; the last group holds everything above the top cap
    edges = np.asarray([0, *ladder], dtype=float)
    counts = [int(np.sum((values > edges[i]) & (values <= edges[i + 1]))) for i in range(len(ladder))]
    return [*counts, int(np.sum(values > ladder[-1]))]


def _panels(n: int, *, width: float, height: float, ncols: int = 3) -> tuple[Figure, list[Axes]]:
    ncols = max(1, min(ncols, n))
    nrows = max(1, math.ceil(n / ncols))
    fig = Figure(figsize=(width * ncols, height * nrows + 0.4), layout="constrained")
    grid = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel().tolist()
    for ax in grid[n:]:
        ax.set_visible(False)
    return fig, grid[: max(n, 1)]


def _strip(ax: Axes, values: np.ndarray, row: int, colour: str) -> None:
    # jittered points plus a median tick: shows the spread without hiding small collections
    jitter = np.random.default_rng(row).uniform(-0.25, 0.25, values.size)
    ax.scatter(values, row + jitter, s=6, alpha=0.35, color=colour, edgecolors="none")
    ax.plot([np.median(values)] * 2, [row - 0.35, row + 0.35], color="#222222", linewidth=1.5)


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


def _by_label(audit: pl.DataFrame, label: str, value: str, ylabel: str, func: str, *, log: bool = False) -> Figure:
    _require(audit, ("dataset", label, value, "difficulty_source"), "audit", func)
    rows = audit.filter(pl.col(label).is_not_null() & pl.col(value).is_not_null())
    collections = _collections(rows)
    with _style():
        fig, axes = _panels(len(collections), width=3.0, height=2.8)
        for ax, dataset in zip(axes, collections, strict=False):
            part = rows.filter(pl.col("dataset") == dataset)
            levels = _label_order(part[label].cast(pl.String).unique().to_list())
            sources = part["difficulty_source"].drop_nulls().unique().to_list()
            source = sources[0] if len(sources) == 1 else "mixed"
            for i, level in enumerate(levels):
                values = part.filter(pl.col(label).cast(pl.String) == level)[value].cast(pl.Float64).to_numpy()
                jitter = np.random.default_rng(i).uniform(-0.2, 0.2, values.size)
                ax.scatter(i + jitter, values, s=10, alpha=0.45, color=color(dataset), edgecolors="none")
                ax.plot([i - 0.3, i + 0.3], [np.median(values)] * 2, color="#222222", linewidth=1.6)
                ax.text(
                    i, 1.0, f"n={values.size}", ha="center", va="bottom", fontsize=7, transform=ax.get_xaxis_transform()
                )
            ax.set_xticks(range(len(levels)), levels)
            ax.set_xlim(-0.6, len(levels) - 0.4)
            ax.set_xlabel(f"{label} ({source} label)")
            ax.set_ylabel(ylabel)
            if log:
                ax.set_yscale("log")
                ticks = [cap for cap in CAPS if cap <= max(part[value].max(), 1)]
                ax.set_yticks(ticks, [str(c) for c in ticks])
                ax.minorticks_off()
            elif value == "pass_rate":
                ax.set_ylim(-0.03, 1.03)
                ax.yaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
            ax.set_title(name(dataset), pad=14)
            ax.grid(axis="x", visible=False)
        if not collections:
            _empty_note(axes[0], f"no task has both a {label} label and {value}")
    return fig
