"""The 2×2 depth/work split (notebook ``05_quadrants``): deep tasks are harder at equal work.

:func:`quadrants` (figure-level) draws with :func:`quadrants_plot` (axes-level).
"""

from __future__ import annotations

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from depthlab import catalog
from depthlab._checks import check_frame
from depthlab.catalog import name
from depthlab.plots._core import into_axes, new_figure, stamp, table_of
from depthlab.plots._docstrings import fill


@fill
def quadrants_plot(table: pl.DataFrame, *, ax: Axes | None = None) -> Axes:
    """The 2×2 depth/work split as a heat map of mean within-collection pass-rate percentiles, with CIs.

    Parameters
    ----------
    table : pl.DataFrame
        The output of :func:`depthlab.stats.quadrant_cells`: one row per cell with ``depth_class``
        (deep/shallow), ``work_class`` (large/small), ``n``, ``mean_percentile``, ``ci_low``,
        ``ci_high``, ``depth_split`` and ``work_split``.
    {ax}

    {returns_axes}

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
    with into_axes(ax, function, (5.6, 4.2)) as ax:
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


@fill
def quadrants(table: pl.DataFrame) -> Figure:
    """The 2×2 depth/work split: mean within-collection pass-rate percentile per cell, with CIs.

    Parameters
    ----------
    table : pl.DataFrame
        The output of :func:`depthlab.stats.quadrant_cells`: one row per cell with ``depth_class``
        (deep/shallow), ``work_class`` (large/small), ``n``, ``mean_percentile``, ``ci_low``,
        ``ci_high``, ``depth_split`` and ``work_split``.
        An optional ``collections`` column (comma-separated) names the collections in the title,
        and an optional ``data`` column saying ``"simulated"`` stamps the figure so.

    {returns_figure}

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
    table, simulated = table_of(table, "audit", "table", "quadrants")
    with new_figure((5.6, 4.2)) as (fig, ax):
        quadrants_plot(table, ax=ax)
        title = "Mean within-collection pass-rate percentile (lower = harder)"
        if "collections" in table.columns and table.height:
            # the table says which collections were split (depthlab.findings.quadrant_cells): name them
            where = catalog.ordered(part.strip() for part in str(table["collections"][0]).split(",") if part)
            title = (
                f"{' + '.join(name(d) for d in where)}: mean within-collection\npass-rate percentile (lower = harder)"
            )
        ax.set_title(title)
    return stamp(fig, simulated)
