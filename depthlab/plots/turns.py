"""Turns N beside depth D (notebook ``02_turns_vs_depth``): N overstates D and follows the work.

Figure-level functions and the axes-level ones they draw with:

* :func:`turns_vs_depth` / :func:`turns_vs_depth_plot`: histograms of N beside D on the cap
  ladder, one panel per collection;
* :func:`turns_minus_depth` / :func:`turns_minus_depth_plot`: N − D of the solved tasks;
* :func:`depth_given_turns` / :func:`depth_given_turns_plot`: the depth of the tasks that take a
  given number of turns;
* :func:`turns_by_model` / :func:`turns_by_model_plot`: the ECDF of N per model.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Final

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from depthlab import catalog
from depthlab._checks import check_caps, check_frame, check_interval, check_names
from depthlab._text import count
from depthlab.catalog import MEDIAN_COLOUR, name
from depthlab.measures.public import turn_counts
from depthlab.plots._core import (
    NEUTRAL,
    DataSource,
    Palette,
    check_palette,
    empty_note,
    into_axes,
    median_handle,
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
from depthlab.schema import CAPS

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


# the audit columns every turns-beside-depth figure reads
_TURNS_AND_DEPTH: Final[tuple[str, ...]] = ("dataset", "depth", "depth_status", "n_turns")


@fill
def turns_vs_depth_plot(
    audit: pl.DataFrame, dataset: str, *, caps: Sequence[int] = CAPS, color: str | None = None, ax: Axes | None = None
) -> Axes:
    """One collection's histograms of N (outlined bars) beside D (filled bars) on the cap ladder.

    Each bar group is one rung of the ladder: D counts the solved tasks whose depth is that cap
    (an unsolved or incomplete task has no D); N counts the tasks with uncapped runs whose median
    turn count falls in the interval ending at that cap (above the previous rung). The title gives
    both counts. Tasks with N above the top cap form a last group. Both bars take
    the collection's colour; the fill tells N from D. The panel of :func:`turns_vs_depth`
    (formerly ``turns_depth_plot``).

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, depth, depth_status, n_turns).
    {dataset}
    {caps}
    {color}
    {ax}

    {returns_axes}

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"], "depth": [1, 3],
    ...     "depth_status": ["solved"] * 2, "n_turns": [4.0, 9.0]}), "audit")
    >>> turns_vs_depth_plot(audit, "tb2").get_title()
    'TB2: N of 2 tasks, D of 2 solved'
    """
    function = "turns_vs_depth_plot"
    check_frame(audit, "audit", function, _TURNS_AND_DEPTH)
    ladder = _ladder(caps, function)
    labels = [*(_rung_label(ladder, i) for i in range(len(ladder))), f">{ladder[-1]}"]
    hue = catalog.color(dataset) if color is None else color
    rows = audit.filter(pl.col("dataset") == dataset)
    depth = rows.filter(pl.col("depth_status") == "solved")["depth"].drop_nulls().to_numpy()
    turns = rows["n_turns"].drop_nulls().to_numpy()
    with into_axes(ax, function, (4.0, 2.6)) as ax:
        x = np.arange(len(labels))
        depth_counts = [int(np.sum(depth == cap)) for cap in ladder] + [0]
        ax.bar(
            x - 0.2,
            _rung_counts(turns, ladder),
            width=0.4,
            facecolor="white",
            edgecolor=hue,
            linewidth=1.1,
            label="turns N (tasks with uncapped runs)",
        )
        ax.bar(x + 0.2, depth_counts, width=0.4, color=hue, label="depth D (solved tasks)")
        ax.set_xticks(x, labels, fontsize=7)
        ax.set_title(f"{name(dataset)}: N of {count(turns.size, 'task')}, D of {depth.size} solved")
        ax.set_xlabel("turns (ladder rung)")
        ax.set_ylabel("tasks")
        ax.grid(axis="x", visible=False)
        ax.yaxis.set_major_locator(mpl.ticker.MaxNLocator(integer=True))
    return ax


@fill
def turns_vs_depth(
    audit: pl.DataFrame | DataSource,
    *,
    caps: Sequence[int] = CAPS,
    order: Sequence[str] | None = None,
    palette: Palette = None,
) -> Figure:
    """Histograms of turns N beside depth D, one panel per collection (:func:`turns_vs_depth_plot`).

    N counts every task with uncapped runs; D counts the solved tasks only (an unsolved or
    incomplete task has no D), and each panel's title gives both numbers.

    Parameters
    ----------
    audit : pl.DataFrame or AuditData
        The audit table (dataset, depth, depth_status, n_turns), or an
        :class:`~depthlab.auditdata.AuditData` (its audit table; simulated data is stamped so).
    {caps}
    {order}
    {palette}

    {returns_figure}

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"], "depth": [1, 3],
    ...     "depth_status": ["solved"] * 2, "n_turns": [4.0, 9.0]}), "audit")
    >>> turns_vs_depth(audit).axes[0].get_title()
    'TB2: N of 2 tasks, D of 2 solved'
    """
    function = "turns_vs_depth"
    audit, simulated = table_of(audit, "audit", "audit", function)
    check_frame(audit, "audit", function, _TURNS_AND_DEPTH)
    _ladder(caps, function)
    keys = order_of(audit, order, function)
    colour = palette_of(palette, function)
    with new_panels(len(keys), width=4.0, height=2.5) as (fig, axes):
        for ax, dataset in zip(axes, keys, strict=False):
            turns_vs_depth_plot(audit, dataset, caps=caps, color=colour(dataset), ax=ax)
        # neutral legend swatches: the fill, not the colour, tells N from D in every panel
        handles = [
            Patch(facecolor="white", edgecolor=NEUTRAL, label="turns N: tasks with uncapped runs (median per task)"),
            Patch(facecolor=NEUTRAL, label="depth D: solved tasks only"),
        ]
        fig.legend(handles=handles, loc="outside upper right", ncol=2)
        fig.suptitle(
            "Uncapped turn counts N beside depth D, per collection (bar colour = collection)",
            fontsize=10,
            x=0.02,
            ha="left",
        )
    return stamp(fig, simulated)


@fill
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

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, depth, depth_status, n_turns).
    {order}
    {palette}
    {ax}

    {returns_axes}

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
    keys = order_of(solved, order, function)
    colour = palette_of(palette, function)
    rows = solved.filter(pl.col("dataset").is_in(keys))
    with into_axes(ax, function, (6.4, 0.5 * max(len(keys), 1) + 1.4)) as ax:
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
            ax.axvline(0, color=NEUTRAL, linewidth=0.8, linestyle="--")
            for row, dataset in enumerate(keys):
                gap = rows.filter(pl.col("dataset") == dataset)["gap"].to_numpy()
                below = int(np.sum(gap < 0))
                text = f"n={gap.size}, median {np.median(gap):+.0f}" + (f", N<D: {below}" if below else "")
                ax.text(1.01, row, text, va="center", fontsize=7, transform=ax.get_yaxis_transform())
            ax.set_yticks(np.arange(len(keys)), [name(d) for d in keys])
            handles = [
                median_handle(),
                Patch(facecolor="white", edgecolor=NEUTRAL, label="box: middle half of the tasks"),
                Patch(facecolor="#F2F2F2", label="N < D (see note)"),
            ]
            ax.legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3, fontsize=7)
        else:
            empty_note(ax, "no solved tasks with turn counts")
        ax.set_xlabel("N − D (turns taken minus depth)")
        ax.set_ylabel("")
        ax.grid(axis="y", visible=False)
    return ax


@fill
def turns_minus_depth(
    audit: pl.DataFrame | DataSource, *, order: Sequence[str] | None = None, palette: Palette = None
) -> Figure:
    """How many more turns than its depth a solved task takes uncapped: :func:`turns_minus_depth_plot`.

    The figure's note says why N − D can be negative.

    Parameters
    ----------
    audit : pl.DataFrame or AuditData
        The audit table (dataset, depth, depth_status, n_turns), or an
        :class:`~depthlab.auditdata.AuditData` (its audit table; simulated data is stamped so).
    {order}
    {palette}

    {returns_figure}

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"], "depth": [1, 3],
    ...     "depth_status": ["solved"] * 2, "n_turns": [4.0, 9.0]}), "audit")
    >>> turns_minus_depth(audit).axes[0].get_xlabel()
    'N − D (turns taken minus depth)'
    """
    audit, simulated = table_of(audit, "audit", "audit", "turns_minus_depth")
    check_frame(audit, "audit", "turns_minus_depth", _TURNS_AND_DEPTH)
    n = len(order_of(audit, order, "turns_minus_depth")) if audit.height else 1
    with new_figure((7.2, 0.42 * max(n, 1) + 2.0)) as (fig, ax):
        turns_minus_depth_plot(audit, order=order, palette=palette, ax=ax)
        ax.set_title("Turns taken without a cap minus depth, per solved task", pad=22)
        fig.text(0.01, 0.0, NEGATIVE_GAP_NOTE, fontsize=7, color="#555555", ha="left", va="bottom", wrap=True)
        engine = fig.get_layout_engine()
        # new_figure lays out with "constrained"; only that engine takes a vertical pad
        if isinstance(engine, ConstrainedLayoutEngine):
            engine.set(h_pad=0.25)
    return stamp(fig, simulated)


#: Why N − D can be negative (printed under :func:`turns_minus_depth`).
NEGATIVE_GAP_NOTE: Final[str] = (
    "N < D: the median uncapped run took fewer turns than the smallest stated cap under which a capped run "
    "passed. N counts every valid uncapped run, failed ones included (a run that gives up early takes few "
    "turns), and a capped attempt at a low cap can fail by chance."
)


@fill
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

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, depth, depth_status, n_turns).
    {turns}
    {order}
    {palette}
    {ax}

    {returns_axes}

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
    low, high = check_interval(turns, "turns", function)
    rows = _turn_window(audit, low, high)
    keys = order_of(rows, order, function)
    colour = palette_of(palette, function)
    caps = sorted(set(CAPS) | set(rows["depth"].to_list()))
    with into_axes(ax, function, (6, 3.4)) as ax:
        x = np.arange(len(caps))
        bottom = np.zeros(len(caps))
        for dataset in keys:
            depth = rows.filter(pl.col("dataset") == dataset)["depth"].to_numpy()
            counts = np.array([np.sum(depth == cap) for cap in caps], dtype=float)
            ax.bar(x, counts, bottom=bottom, color=colour(dataset), label=name(dataset), width=0.7)
            bottom += counts
        if rows.height == 0:
            empty_note(ax, f"no solved task has N in {low:g}–{high:g}")
        else:
            handles, labels = ax.get_legend_handles_labels()
            # the last stack drawn is the top one: list it first, as the eye reads the bars
            ax.legend(handles[::-1], labels[::-1], loc="upper right", title="collection")
        ax.set_xticks(x, [str(cap) for cap in caps])
        ax.set_xlabel("depth D (turns)")
        ax.set_ylabel(f"solved tasks with N in {low:g}–{high:g}")
        ax.grid(axis="x", visible=False)
    return ax


@fill
def depth_given_turns(
    audit: pl.DataFrame | DataSource,
    *,
    turns: tuple[float, float] = (6, 10),
    order: Sequence[str] | None = None,
    palette: Palette = None,
) -> Figure:
    """Depth of the tasks whose uncapped turn count N lies in ``turns`` (inclusive), per collection.

    Parameters
    ----------
    audit : pl.DataFrame or AuditData
        The audit table (dataset, depth, depth_status, n_turns), or an
        :class:`~depthlab.auditdata.AuditData` (its audit table; simulated data is stamped so).
    {turns}
    {order}
    {palette}

    {returns_figure}

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
    audit, simulated = table_of(audit, "audit", "audit", function)
    check_frame(audit, "audit", function, _TURNS_AND_DEPTH)
    low, high = check_interval(turns, "turns", function)
    with new_figure((6, 3.4)) as (fig, ax):
        depth_given_turns_plot(audit, turns=turns, order=order, palette=palette, ax=ax)
        rows = _turn_window(audit, low, high)
        if rows.height:
            share = float(np.mean(rows["depth"].to_numpy() == 1))
            ax.set_title(f"{count(rows.height, 'task')} take {low:g}–{high:g} turns; {share:.0%} of them have D = 1")
    return stamp(fig, simulated)


@fill
def turns_by_model_plot(
    turns: pl.DataFrame,
    *,
    order: Sequence[str] | None = None,
    palette: Palette = None,
    turn_limit: int | None = None,
    ax: Axes | None = None,
) -> Axes:
    """ECDF of uncapped turn counts per model (:func:`seaborn.ecdfplot`), log scale.

    ``order`` and ``palette`` name *models* here (default: sorted, a colour set distinct from
    the collections'). The panel of :func:`turns_by_model` (formerly ``turns_ecdf_plot``).

    Parameters
    ----------
    turns : pl.DataFrame
        Columns ``model`` and ``n_turns`` (one row per task and model).
    {model_order}
    {model_palette}
    turn_limit : int, optional
        The harness's safety limit, drawn as a vertical line when given.
    {ax}

    {returns_axes}

    Examples
    --------
    >>> import polars as pl
    >>> turns = pl.DataFrame({"model": ["a", "a", "b"], "n_turns": [3.0, 8.0, 20.0]})
    >>> [t.get_text() for t in turns_by_model_plot(turns).get_legend().get_texts()]
    ['a (median 6)', 'b (median 20)']
    """
    import seaborn as sns

    function = "turns_by_model_plot"
    check_frame(turns, "turns", function, ("model", "n_turns"))
    rows = turns.filter(pl.col("n_turns").is_not_null() & (pl.col("n_turns") > 0))
    models = sorted(rows["model"].unique().to_list()) if order is None else check_names(order, "order", function)
    colours = {m: _MODEL_COLOURS[i % len(_MODEL_COLOURS)] for i, m in enumerate(models)}
    if palette is not None:
        colours.update(check_palette(palette, function))
    rows = rows.filter(pl.col("model").is_in(models))
    with into_axes(ax, function, (6, 3.6)) as ax:
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
            plain_log(ax, "x")
        else:
            empty_note(ax, "no uncapped runs with turn counts")
        if turn_limit is not None:
            handles.append(
                ax.axvline(turn_limit, color="#B22222", linestyle=":", linewidth=1, label=f"harness limit {turn_limit}")
            )
        if handles:
            ax.legend(handles=handles, loc="lower right", fontsize=7)
        ax.set_ylim(0, 1.02)
        ax.yaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
        ax.set_xlabel(f"turns N per task (median over uncapped runs{scale_words(ax, 'x')})")
        ax.set_ylabel("share of tasks with at most N turns")
    return ax


@fill
def turns_by_model(
    turns: pl.DataFrame | DataSource,
    *,
    turn_limit: int | None = None,
    order: Sequence[str] | None = None,
    palette: Palette = None,
) -> Figure:
    """Distribution of uncapped turn counts per model (ECDF, :func:`turns_by_model_plot`).

    Parameters
    ----------
    turns : pl.DataFrame or AuditData
        Columns ``model`` and ``n_turns`` (one row per task and model, from
        :func:`depthlab.turn_counts`); optional ``dataset``. Or an
        :class:`~depthlab.auditdata.AuditData`: the turn counts of its trials, its ``turn_limit``
        when none is given, and the SIMULATED stamp when it is simulated.
    turn_limit : int, optional
        The harness's safety limit, drawn as a vertical line when given.
    {model_order}
    {model_palette}

    {returns_figure}

    Examples
    --------
    >>> import polars as pl
    >>> turns = pl.DataFrame({"model": ["a", "a", "b"], "n_turns": [3.0, 8.0, 20.0]})
    >>> turns_by_model(turns).axes[0].get_xlabel()
    'turns N per task (median over uncapped runs, log scale)'
    """
    function = "turns_by_model"
    if isinstance(turns, pl.DataFrame):
        table, simulated = table_of(turns, "trials", "turns", function)
    else:
        trials, simulated = table_of(turns, "trials", "turns", function)
        table = turn_counts(trials)
        if turn_limit is None:
            limits = trials.filter(pl.col("cap").is_null())["turn_limit"].drop_nulls()
            turn_limit = int(limits.max()) if limits.len() else None
    check_frame(table, "turns", function, ("model", "n_turns"))
    with new_figure((6, 3.6)) as (fig, ax):
        turns_by_model_plot(table, order=order, palette=palette, turn_limit=turn_limit, ax=ax)
        ax.set_title("Uncapped turn counts per model")
    return stamp(fig, simulated)


def _ladder(caps: Sequence[int], function: str) -> tuple[int, ...]:
    # the caps in any order, repeats allowed: the rungs are the distinct caps, sorted
    return check_caps(sorted({int(c) for c in caps}), function)


def _rung_label(ladder: Sequence[int], i: int) -> str:
    low = 1 if i == 0 else ladder[i - 1] + 1
    return str(ladder[i]) if low == ladder[i] else f"{low}–{ladder[i]}"


def _rung_counts(values: np.ndarray, ladder: Sequence[int]) -> list[int]:
    # rung i holds (ladder[i-1], ladder[i]]; the last group holds everything above the top cap
    edges = np.asarray([0, *ladder], dtype=float)
    counts = [int(np.sum((values > edges[i]) & (values <= edges[i + 1]))) for i in range(len(ladder))]
    return [*counts, int(np.sum(values > ladder[-1]))]


def _turn_window(audit: pl.DataFrame, low: float, high: float) -> pl.DataFrame:
    # the solved tasks whose uncapped turn count N lies in [low, high]
    return audit.filter(
        (pl.col("depth_status") == "solved") & pl.col("n_turns").is_between(low, high) & pl.col("depth").is_not_null()
    )
