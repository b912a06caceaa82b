"""Notebook 05, the depth/work quadrants: mean within-collection pass-rate percentile per cell."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

from depthlab import stats
from depthlab._checks import check_choice
from depthlab._defaults import AUDIT_N_BOOT, AUDIT_SEED
from depthlab.auditdata import AuditData
from depthlab.catalog import HUMAN
from depthlab.findings._core import (
    FindingRow,
    Sample,
    capped_models,
    make_frame,
    make_row,
    with_paper_rows,
)
from depthlab.findings._docs import docstring

# ---------------------------------------------------------------------------------------------
# quadrants


def quadrant_cells(
    data: AuditData,
    *,
    collections: Sequence[str] = HUMAN,
    percentile_base: Literal["all", "solved"] = "all",
    depth_split: float = 2,
    work_ties: Literal["large", "small"] = "large",
    n_boot: int = AUDIT_N_BOOT,
    seed: int = AUDIT_SEED,
) -> pl.DataFrame:
    """The four cells of :func:`quadrant_percentiles` as :func:`depthlab.stats.quadrant_cells` gives them (to plot).

    A ``collections`` column names the collections that gave the cells a task (a collection
    present with no solved task gives none and is not named), and ``data`` says whether the data is
    simulated or real. Empty (no rows) when no task of ``collections`` has a pinned D.
    """
    check_choice(percentile_base, "percentile_base", "quadrant_percentiles", ("all", "solved"))
    check_choice(work_ties, "work_ties", "quadrant_percentiles", ("large", "small"))
    chosen = [d for d in data.datasets if d in collections]
    part = data.audit.filter(pl.col("dataset").is_in(chosen))
    if percentile_base == "solved":
        part = part.filter(pl.col("depth_status") == "solved")
    part = part.with_columns(depth=pl.when(pl.col("depth_status") == "solved").then(pl.col("depth")))
    if part.filter(pl.col("depth").is_not_null()).height == 0:
        return pl.DataFrame()
    cells = stats.quadrant_cells(
        part, depth_split=depth_split, work_split="median", work_ties=work_ties, n_boot=n_boot, seed=seed
    )
    split = part.drop_nulls(["depth", "work", "pass_rate"])["dataset"].unique().to_list()
    gave = [d for d in chosen if d in split]
    return cells.with_columns(collections=pl.lit(", ".join(gave)), data=pl.lit(data.kind))


@with_paper_rows
@docstring
def quadrant_percentiles(
    data: AuditData,
    *,
    collections: Sequence[str] = HUMAN,
    percentile_base: Literal["all", "solved"] = "all",
    depth_split: float = 2,
    work_ties: Literal["large", "small"] = "large",
    n_boot: int = AUDIT_N_BOOT,
    seed: int = AUDIT_SEED,
) -> pl.DataFrame:
    """The depth/work quadrants: mean within-collection pass-rate percentile per cell.

    Paper: TB2 and TW, split at D = 2 and the median W: tasks large in both have a mean
    percentile of 0.29 against 0.53–0.59 for the other three cells (lower = harder). A task's
    percentile ranks its public pass rate within its collection, among ``percentile_base``:
    ``"all"`` its collection's tasks with a pass rate (the default), or ``"solved"`` its solved
    ones only; the cells hold the solved tasks (D known). The split is at the median W of those
    solved tasks, the collections pooled; a task at the median W is large (``work_ties``). A
    percentile is the average rank over n (the correlations' within-collection percentiles are
    (rank − 0.5) / n). None of these choices is stated by the paper: each is a VARIANT note of
    :mod:`depthlab.paper`. BCa bootstrap CI over the cell's tasks.

    Rows: ``quadrant_mean_percentile`` per cell (group ``deep/large``, ``deep/small``,
    ``shallow/large``, ``shallow/small``); ``quadrant_other_mean_percentile`` (group
    ``not deep/large``: the range over the other three cells); ``quadrant_hardest`` (group: the
    cell with the lowest mean percentile in this data, named from the data).

    Parameters
    ----------
    {data}
    collections : sequence of str
        Collections split (default TB2 and TW, as the paper).
    percentile_base : {"all", "solved"}
        The tasks each pass-rate percentile is taken among (default: all tasks of the collection).
    depth_split : float
        A task is deep when D >= depth_split.
    work_ties : {"large", "small"}
        Where a task whose W equals the median goes (default large: W >= median).
    {n_boot_seed}

    {returns}
    """
    chosen = [d for d in data.datasets if d in collections]
    models = capped_models(data, chosen)
    detail = f"percentile among {percentile_base} tasks of each collection; split at D = {depth_split:g}"
    cells = quadrant_cells(
        data,
        collections=collections,
        percentile_base=percentile_base,
        depth_split=depth_split,
        work_ties=work_ties,
        n_boot=n_boot,
        seed=seed,
    )
    if cells.height == 0:
        return make_frame(
            [
                make_row(
                    data,
                    "quadrant_mean_percentile",
                    "deep/large",
                    None,
                    n=0,
                    unit="solved tasks",
                    collections=chosen,
                    models=models,
                    detail="no solved task",
                )
            ]
        )
    gave = [d for d in str(cells["collections"][0]).split(", ") if d]
    sample = Sample(collections=gave, models=capped_models(data, gave))
    detail += f" and the median W ({cells['work_split'][0]:g}; a task at it is {work_ties})"
    if missing := [d for d in chosen if d not in gave]:
        detail += f"; {', '.join(missing)}: no solved task, so not in the split"
    rows = [*_cell_rows(data, cells, sample, detail), _other_cells_row(data, cells, sample)]
    hardest = _hardest_row(data, cells, sample)
    if hardest is not None:
        rows.append(hardest)
    return make_frame(rows)


def _cell_rows(data: AuditData, cells: pl.DataFrame, sample: Sample, detail: str) -> list[FindingRow]:
    """``quadrant_mean_percentile``: one row per cell, with its BCa interval."""
    return [
        make_row(
            data,
            "quadrant_mean_percentile",
            f"{cell['depth_class']}/{cell['work_class']}",
            cell["mean_percentile"],
            low=cell["ci_low"],
            high=cell["ci_high"],
            interval="ci95" if cell["ci_low"] is not None else None,
            n=cell["n"],
            unit="solved tasks",
            detail=detail,
            **sample,
        )
        for cell in cells.iter_rows(named=True)
    ]


def _other_cells_row(data: AuditData, cells: pl.DataFrame, sample: Sample) -> FindingRow:
    """``quadrant_other_mean_percentile``: the range of the mean percentile over the three cells not deep/large."""
    others = cells.filter(~((pl.col("depth_class") == "deep") & (pl.col("work_class") == "large")))
    values = others["mean_percentile"].drop_nulls()
    return make_row(
        data,
        "quadrant_other_mean_percentile",
        "not deep/large",
        None,
        low=values.min() if values.len() else None,
        high=values.max() if values.len() else None,
        interval="range",
        n=int(others["n"].sum()),
        unit="solved tasks",
        detail="range over the three cells other than deep/large",
        **sample,
    )


def _hardest_row(data: AuditData, cells: pl.DataFrame, sample: Sample) -> FindingRow | None:
    """``quadrant_hardest``: the cell with the lowest mean percentile, named from the data (None without one)."""
    filled = cells.drop_nulls("mean_percentile")
    if not filled.height:
        return None
    hardest = filled.sort("mean_percentile").row(0, named=True)
    name = f"{hardest['depth_class']}/{hardest['work_class']}"
    return make_row(
        data,
        "quadrant_hardest",
        name,
        hardest["mean_percentile"],
        n=hardest["n"],
        unit="solved tasks",
        detail=f"the cell with the lowest mean percentile here is {name}",
        **sample,
    )
