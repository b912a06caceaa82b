"""What the collections' own difficulty labels track (notebook ``04_labels``).

Figure-level functions and the axes-level ones they draw with:

* :func:`label_pass_rates` / :func:`label_pass_rates_plot`: the public pass rate by label;
* :func:`label_depths` / :func:`label_depths_plot`: the depth D of the solved tasks by label.

Both panels are :func:`label_plot`, the general axes-level function (any value column by any
ordinal label). Labels are ordered ``easy < medium < hard`` first
(:data:`depthlab.catalog.DIFFICULTY_ORDER`), other values after, sorted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from depthlab import catalog
from depthlab._checks import check_frame
from depthlab.catalog import DIFFICULTY_ORDER, MEDIAN_COLOUR, name
from depthlab.plots._core import (
    DataSource,
    Palette,
    empty_note,
    into_axes,
    median_handle,
    new_panels,
    order_of,
    palette_of,
    stamp,
    table_of,
)
from depthlab.plots._docstrings import fill
from depthlab.schema import CAPS


@fill
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

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, difficulty_source, ``label`` and ``value``).
    {dataset}
    {label}
    value : str
        The column drawn (``pass_rate``: a share axis; ``depth``: a log axis with ladder ticks).
    {color}
    {ax}

    {returns_axes}

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"],
    ...     "difficulty": ["hard", "easy"], "difficulty_source": ["human"] * 2, "pass_rate": [0.1, 0.9]}), "audit")
    >>> [t.get_text() for t in label_plot(audit, "tb2").get_xticklabels()]
    ['easy', 'hard']
    """
    return _label_panel(audit, dataset, label, value, color, ax, "label_plot")


@fill
def label_pass_rates_plot(
    audit: pl.DataFrame, dataset: str, *, label: str = "difficulty", color: str | None = None, ax: Axes | None = None
) -> Axes:
    """One collection's public pass rate by its ordinal ``label``: the panel of :func:`label_pass_rates`.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, pass_rate, difficulty_source and ``label``).
    {dataset}
    {label}
    {color}
    {ax}

    {returns_axes}

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 2, "task": ["a", "b"],
    ...     "difficulty": ["hard", "easy"], "difficulty_source": ["human"] * 2, "pass_rate": [0.1, 0.9]}), "audit")
    >>> label_pass_rates_plot(audit, "tb2").get_ylabel()
    'public pass rate'
    """
    return _label_panel(audit, dataset, label, "pass_rate", color, ax, "label_pass_rates_plot")


@fill
def label_depths_plot(
    audit: pl.DataFrame, dataset: str, *, label: str = "difficulty", color: str | None = None, ax: Axes | None = None
) -> Axes:
    """One collection's depth D of the *solved* tasks by its ordinal ``label``: the panel of :func:`label_depths`.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table (dataset, depth, depth_status, difficulty_source and ``label``); only the
        solved tasks are drawn.
    {dataset}
    {label}
    {color}
    {ax}

    {returns_axes}

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2"] * 3, "task": list("abc"),
    ...     "difficulty": ["easy", "hard", "hard"], "difficulty_source": ["human"] * 3, "depth": [1, 5, None],
    ...     "depth_status": ["solved", "solved", "unsolved"]}), "audit")
    >>> [t.get_text() for t in label_depths_plot(audit, "tb2").texts]
    ['n=1', 'n=1']
    """
    function = "label_depths_plot"
    check_frame(audit, "audit", function, ("depth_status",))
    solved = audit.filter(pl.col("depth_status") == "solved")
    return _label_panel(solved, dataset, label, "depth", color, ax, function)


def _label_panel(
    audit: pl.DataFrame, dataset: str, label: str, value: str, color: str | None, ax: Axes | None, function: str
) -> Axes:
    check_frame(audit, "audit", function, ("dataset", label, value, "difficulty_source"))
    hue = catalog.color(dataset) if color is None else color
    part = audit.filter((pl.col("dataset") == dataset) & pl.col(label).is_not_null() & pl.col(value).is_not_null())
    levels = _label_order(part[label].cast(pl.String).unique().to_list())
    sources = part["difficulty_source"].drop_nulls().unique().to_list()
    source = sources[0] if len(sources) == 1 else "mixed"
    log = value == "depth"
    with into_axes(ax, function, (3.2, 2.8)) as ax:
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


@fill
def label_pass_rates(
    audit: pl.DataFrame | DataSource,
    *,
    label: str = "difficulty",
    order: Sequence[str] | None = None,
    palette: Palette = None,
) -> Figure:
    """Public pass rate by an ordinal label, one panel per collection that has the label.

    Each panel is :func:`label_pass_rates_plot`.

    Parameters
    ----------
    audit : pl.DataFrame or AuditData
        The audit table (dataset, pass_rate, difficulty_source and the ``label`` column), or an
        :class:`~depthlab.auditdata.AuditData` (its audit table; simulated data is stamped so).
    {label}
    {order}
    {palette}

    {returns_figure}

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
    table, simulated = table_of(audit, "audit", "audit", "label_pass_rates")
    fig = _by_label(table, label, "pass_rate", "label_pass_rates", order, palette, label_pass_rates_plot)
    return stamp(fig, simulated)


@fill
def label_depths(
    audit: pl.DataFrame | DataSource,
    *,
    label: str = "difficulty",
    order: Sequence[str] | None = None,
    palette: Palette = None,
) -> Figure:
    """Depth D of solved tasks by an ordinal label, one panel per collection that has both.

    Each panel is :func:`label_depths_plot`.

    Parameters
    ----------
    audit : pl.DataFrame or AuditData
        The audit table (dataset, depth, depth_status, difficulty_source and ``label``), or an
        :class:`~depthlab.auditdata.AuditData` (its audit table; simulated data is stamped so).
    {label}
    {order}
    {palette}

    {returns_figure}

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
    table, simulated = table_of(audit, "audit", "audit", "label_depths")
    check_frame(table, "audit", "label_depths", ("depth_status",))
    solved = table.filter(pl.col("depth_status") == "solved")
    return stamp(_by_label(solved, label, "depth", "label_depths", order, palette, label_depths_plot), simulated)


def _label_order(values: Sequence[str]) -> list[str]:
    known = [v for v in DIFFICULTY_ORDER if v in values]
    return known + sorted(set(values) - set(DIFFICULTY_ORDER))


def _by_label(
    audit: pl.DataFrame,
    label: str,
    value: str,
    function: str,
    order: Sequence[str] | None,
    palette: Palette,
    panel: Callable[..., Axes],
) -> Figure:
    # the figure of either label question: one panel (the figure's axes-level partner) per collection
    check_frame(audit, "audit", function, ("dataset", label, value, "difficulty_source"))
    rows = audit.filter(pl.col(label).is_not_null() & pl.col(value).is_not_null())
    keys = order_of(rows, order, function)
    colour = palette_of(palette, function)
    with new_panels(len(keys), width=3.0, height=2.8) as (fig, axes):
        for ax, dataset in zip(axes, keys, strict=False):
            panel(rows, dataset, label=label, color=colour(dataset), ax=ax)
        if keys:
            fig.legend(handles=[median_handle()], loc="outside lower right")
        else:
            empty_note(axes[0], f"no task has both a {label} label and {value}")
    return fig
