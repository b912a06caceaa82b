"""Task checks by replay (notebook ``09_checks``): every task and step's outcome of every check, and the rules' shares.

Figure-level functions and the axes-level ones they draw with:

* :func:`check_outcomes` / :func:`check_outcomes_plot`: one cell per (task and step, check), coloured
  by its outcome;
* :func:`key_step_rules` / :func:`key_step_rules_plot`: the paper's three rule shares beside this data's,
  with their Wilson intervals.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from depthlab._checks import check_frame
from depthlab.plots._core import into_axes, new_figure, stamp
from depthlab.plots._docstrings import fill
from depthlab.schema import CHECK_NAMES, CHECK_OUTCOMES

#: One colour per outcome, in :data:`depthlab.schema.CHECK_OUTCOMES`'s order.
OUTCOME_COLOURS: Final[tuple[str, ...]] = (
    "#4c9a5b",
    "#c8423b",
    "#e59a2f",
    "#b9b9b9",
    "#e6e6e6",
    "#6b4c9a",
    "#9ecae1",
)


@fill
def check_outcomes_plot(table: pl.DataFrame, *, ax: Axes | None = None) -> Axes:
    """One row per task and step, one column per check, each cell coloured by its outcome.

    Parameters
    ----------
    table : pl.DataFrame
        A checks table (:data:`depthlab.schema.CHECKS`); task-wide rows (``lint``) have no step.
    {ax}

    {returns_axes}

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> rows = [{"task": "t", "step": "a", "check": "before", "outcome": "ok"}]
    >>> check_outcomes_plot(schema.conform(pl.DataFrame(rows), "checks")).get_xlabel()
    'check'
    """
    function = "check_outcomes_plot"
    check_frame(table, "table", function, ("task", "step", "check", "outcome"))
    labelled = table.with_columns(
        pl.when(pl.col("step").is_null() | (pl.col("step") == pl.col("task")))
        .then(pl.col("task"))
        .otherwise(pl.col("task") + " / " + pl.col("step"))
        .alias("row")
    )
    rows = list(dict.fromkeys(labelled.filter(pl.col("step").is_not_null())["row"].to_list()))
    tasks = {row: row.split(" / ")[0] for row in rows}
    checks = [name for name in CHECK_NAMES if name in set(table["check"])]
    grid = np.full((len(rows), len(checks)), np.nan)
    for record in labelled.iter_rows(named=True):
        column = checks.index(record["check"])
        code = CHECK_OUTCOMES.index(record["outcome"])
        if record["step"] is None:  # a task-wide check: every step row of the task shows it
            for index, row in enumerate(rows):
                if tasks[row] == record["task"]:
                    grid[index, column] = code
        elif record["row"] in rows:
            grid[rows.index(record["row"]), column] = code
    with into_axes(ax, function, (1.2 + 0.7 * len(checks), 0.9 + 0.32 * len(rows))) as ax:
        cmap = ListedColormap(list(OUTCOME_COLOURS))
        ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=-0.5, vmax=len(CHECK_OUTCOMES) - 0.5, aspect="auto")
        ax.set_xticks(range(len(checks)), [name.replace("_", "\n") for name in checks], fontsize=7)
        ax.set_yticks(range(len(rows)), rows, fontsize=7)
        ax.set_xlabel("check")
        ax.grid(False)
        handles = [
            Patch(color=colour, label=name) for name, colour in zip(CHECK_OUTCOMES, OUTCOME_COLOURS, strict=True)
        ]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    return ax


@fill
def check_outcomes(table: pl.DataFrame, *, simulated: bool = False) -> Figure:
    """:func:`check_outcomes_plot` on a figure of its own, stamped SIMULATED when the tasks are.

    Parameters
    ----------
    table : pl.DataFrame
        A checks table (:data:`depthlab.schema.CHECKS`).
    simulated : bool
        Whether the tasks are simulated (planted): the figure says so across it.

    {returns_figure}
    """
    n_rows = max(table.filter(pl.col("step").is_not_null()).select("task", "step").unique().height, 1)
    with new_figure((7.0, 1.4 + 0.32 * n_rows)) as (fig, ax):
        check_outcomes_plot(table, ax=ax)
    return stamp(fig, simulated)


@fill
def key_step_rules_plot(rules: pl.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Per rule, the share of steps meeting it: the paper's beside this data's, with 95% Wilson intervals.

    Parameters
    ----------
    rules : pl.DataFrame
        :data:`depthlab.schema.KEY_STEP_RULES` (from :func:`depthlab.findings.verifiers_see_key_steps`).
    {ax}

    {returns_axes}
    """
    function = "key_step_rules_plot"
    check_frame(rules, "rules", function, ("check", "source", "k", "n", "share", "ci_low", "ci_high"))
    checks = list(dict.fromkeys(rules["check"].to_list()))
    with into_axes(ax, function, (5.0, 3.2)) as ax:
        for offset, (source, colour) in zip((-0.17, 0.17), (("paper", "#7f7f7f"), ("data", "#3a6ea5")), strict=True):
            part = rules.filter(pl.col("source") == source)
            labelled = False  # each source once in the legend, on its first bar
            for record in part.iter_rows(named=True):
                x = checks.index(record["check"]) + offset
                if record["share"] is None:
                    ax.text(x, 0.02, "none judged", rotation=90, fontsize=7, ha="center", va="bottom")
                    continue
                ax.bar(x, record["share"], width=0.32, color=colour, label=None if labelled else source)
                labelled = True
                ax.errorbar(
                    x,
                    record["share"],
                    yerr=[[record["share"] - record["ci_low"]], [record["ci_high"] - record["share"]]],
                    color="black",
                    capsize=3,
                    lw=1,
                )
                ax.text(x, 1.02, f"{record['k']}/{record['n']}", ha="center", fontsize=7)
        ax.set_xticks(range(len(checks)), checks)
        ax.set_ylim(0, 1.12)
        ax.set_ylabel("share of steps meeting the rule")
        ax.legend(loc="lower left", frameon=False, fontsize=8)
    return ax


@fill
def key_step_rules(rules: pl.DataFrame, *, simulated: bool = False) -> Figure:
    """:func:`key_step_rules_plot` on a figure of its own, stamped SIMULATED when the tasks are.

    Parameters
    ----------
    rules : pl.DataFrame
        :data:`depthlab.schema.KEY_STEP_RULES`.
    simulated : bool
        Whether this data's tasks are simulated (planted).

    {returns_figure}
    """
    with new_figure((5.0, 3.2)) as (fig, ax):
        key_step_rules_plot(rules, ax=ax)
    return stamp(fig, simulated)
