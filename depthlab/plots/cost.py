"""What D costs (notebook ``10_depth_cost``): misplaced share against runs per task, design by design.

:func:`depth_cost` (figure-level, a panel per pass probability at the depth) draws with
:func:`depth_cost_plot` (axes-level) the table of :func:`depthlab.simulate.depth_cost.depth_cost`:
one point per design (the paper's sweep at 1 and 5 attempts, today's climb, the planner held to a
sweep's runs), the planner's points at each stated error joined by a line.
"""

from __future__ import annotations

import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from depthlab._checks import check_frame, parameter_error
from depthlab.plots._core import NEUTRAL, empty_note, into_axes, new_panels, plain_log, scale_words, stamp
from depthlab.plots._docstrings import fill

_COLUMNS = ("pass_prob", "luck", "design", "error", "runs", "misplaced")
_MARKERS = {"sweep-1": ("s", "#b2182b"), "sweep-5": ("D", "#ef8a62"), "climb": ("^", "#67a9cf")}
_PLANNER = "#2166ac"


@fill
def depth_cost_plot(table: pl.DataFrame, *, pass_prob: float | None = None, ax: Axes | None = None) -> Axes:
    """Misplaced share of D against runs per task, one point per design, for one pass probability.

    Parameters
    ----------
    table : pl.DataFrame
        The output of :func:`depthlab.simulate.depth_cost.depth_cost` (columns pass_prob, luck,
        design, error, runs, misplaced).
    pass_prob : float, optional
        The pass probability at the depth to draw; default the table's only one.
    {ax}

    {returns_axes}

    Examples
    --------
    >>> import polars as pl
    >>> table = pl.DataFrame({"pass_prob": 0.5, "luck": 0.02, "design": ["sweep-1", "planner", "planner"],
    ...     "error": [None, 0.2, 0.05], "runs": [8.0, 20.0, 28.0], "misplaced": [0.45, 0.1, 0.06]})
    >>> depth_cost_plot(table).get_xlabel()
    'runs per task, log scale'
    """
    function = "depth_cost_plot"
    check_frame(table, "table", function, _COLUMNS)
    if pass_prob is not None:
        table = table.filter(pl.col("pass_prob") == pass_prob)
    values = table["pass_prob"].unique().to_list()
    with into_axes(ax, function, (4.4, 3.4)) as ax:
        if not table.height:
            empty_note(ax, "no design measured")
            return ax
        if len(values) > 1:
            raise parameter_error("table", function, "one pass probability's rows (or pass_prob=)", sorted(values))
        for design, (marker, colour) in _MARKERS.items():
            rows = table.filter(pl.col("design") == design)
            if rows.height:
                ax.scatter(rows["runs"], rows["misplaced"], marker=marker, color=colour, s=46, label=design, zorder=3)
        planner = table.filter(pl.col("design") == "planner").sort("error", descending=True)
        if planner.height:
            ax.plot(planner["runs"], planner["misplaced"], "o-", color=_PLANNER, label="planner, error " + ", ".join(
                f"{e:g}" for e in planner["error"].to_list()
            ))  # fmt: skip
        held = table.filter(pl.col("design").str.starts_with("planner at"))
        for row in held.iter_rows(named=True):
            ax.scatter(row["runs"], row["misplaced"], marker="o", facecolor="white", edgecolor=_PLANNER, s=46, zorder=3)
        if held.height:
            ax.scatter(
                [], [], marker="o", facecolor="white", edgecolor=_PLANNER, label="planner held to a sweep's runs"
            )
        ax.axhline(0.05, color=NEUTRAL, linestyle=":", linewidth=1)
        plain_log(ax, "x")
        ax.set_ylim(-0.02, max(0.6, float(table["misplaced"].max()) + 0.05))
        ax.set_xlabel(f"runs per task{scale_words(ax, 'x')}")
        ax.set_ylabel("share of tasks with D misplaced")
        ax.set_title(f"pass probability {values[0]:g} at the depth, luck {table['luck'][0]:g}")
        ax.legend(loc="upper right", fontsize="small")
    return ax


@fill
def depth_cost(table: pl.DataFrame, *, ncols: int = 2) -> Figure:
    """Misplaced share against runs per task, a panel per pass probability at the depth (simulated data).

    Parameters
    ----------
    table : pl.DataFrame
        The output of :func:`depthlab.simulate.depth_cost.depth_cost`.
    ncols : int, default 2
        Panels per row.

    {returns_figure}

    Examples
    --------
    >>> import polars as pl
    >>> table = pl.DataFrame({"pass_prob": [0.8, 0.5], "luck": 0.02, "design": "sweep-1",
    ...     "error": [None, None], "runs": [8.0, 8.0], "misplaced": [0.3, 0.45]})
    >>> len(depth_cost(table).axes)
    2
    """
    function = "depth_cost"
    check_frame(table, "table", function, _COLUMNS)
    values = table["pass_prob"].unique(maintain_order=True).to_list()
    with new_panels(len(values), width=4.6, height=3.6, ncols=ncols, sharey=True) as (fig, axes):
        for value, ax in zip(values, axes, strict=False):
            depth_cost_plot(table, pass_prob=value, ax=ax)
        if not values:
            empty_note(axes[0], "no design measured")
    return stamp(fig, True)
