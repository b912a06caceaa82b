"""D against human time: the task authors' expert time estimate beside D, N and the pass rate.

METR reads a model's horizon off human minutes; depthlab's export carries them (``human_minutes``, the
task's ``expert_time_estimate_min``). Whether D orders tasks as human time does is a question of its
own, asked here on the tasks that state an estimate (TB2's task.toml carries one; the bundled TB2
facts hold them, but no capped runs, so D is not computable there and the row says so).
"""

from __future__ import annotations

import polars as pl

from depthlab import stats
from depthlab._defaults import AUDIT_N_BOOT, AUDIT_SEED
from depthlab.auditdata import AuditData
from depthlab.findings._core import (
    MIN_TASKS,
    UNSOLVED_RANK,
    capped_models,
    corr_row,
    make_frame,
    make_row,
    public_models,
    why_not_computable,
)
from depthlab.findings._docs import docstring

#: The rows of :func:`depth_vs_human_time`: (key, the column set beside expert minutes, whether it needs D).
HUMAN_TIME_ROWS: tuple[tuple[str, str, bool], ...] = (
    ("spearman_depth_human_minutes", "depth", True),
    ("spearman_turns_human_minutes", "n_turns", False),
    ("spearman_pass_human_minutes", "pass_rate", False),
)


@docstring
def depth_vs_human_time(data: AuditData, *, n_boot: int = AUDIT_N_BOOT, seed: int = AUDIT_SEED) -> pl.DataFrame:
    """D, N and the pass rate against the task authors' expert time estimate (human minutes).

    Fixed before any result was looked at: per collection with a task stating an estimate,
    Spearman's rho (BCa interval) of the task's ``expert_time_min`` with, in turn, D
    (``spearman_depth_human_minutes``: tasks whose D is pinned or unsolved, an unsolved task ranked
    above every cap, incomplete tasks left out), N (the median turns of its valid uncapped runs,
    ``spearman_turns_human_minutes``) and its public pass rate (``spearman_pass_human_minutes``).
    No covariate: the question is whether D orders tasks as human time does. The paper reports
    none of these numbers.

    A row is not computable (value null, the reason in ``detail``) where the collection has no
    capped runs (D unknown: the bundled TB2 facts), or fewer than ``MIN_TASKS`` tasks with both
    numbers, or a constant column.

    Parameters
    ----------
    {data}
    {n_boot_seed}

    {returns}

    Examples
    --------
    >>> from depthlab.auditdata import audit_data
    >>> rows = depth_vs_human_time(audit_data("tb2"), n_boot=0)
    >>> rows.filter(key="spearman_depth_human_minutes").select("value", "detail").row(0)
    (None, 'no capped runs (D unknown)')
    >>> turns = rows.filter(key="spearman_turns_human_minutes").row(0, named=True)
    >>> turns["n"], turns["data"]
    (88, 'real')
    """
    rows = []
    for dataset in data.datasets:
        tasks = data.audit.filter((pl.col("dataset") == dataset) & pl.col("expert_time_min").is_not_null())
        if tasks.is_empty():
            continue  # no task of the collection states an estimate: nothing to set D beside
        for key, column, needs_depth in HUMAN_TIME_ROWS:
            models = capped_models(data, [dataset]) if needs_depth else public_models(data, [dataset])
            if needs_depth:
                reasons = why_not_computable(data, [dataset], needs_depth=True)
                if reasons:
                    rows.append(
                        make_row(data, key, dataset, None, n=0, unit="tasks", collections=[dataset], models=models,
                                 detail="; ".join(reasons))
                    )  # fmt: skip
                    continue
                known = tasks.filter(pl.col("depth_status").is_in(["solved", "unsolved"]))
                used = known.with_columns(
                    depth=pl.when(pl.col("depth_status") == "unsolved").then(UNSOLVED_RANK).otherwise(pl.col("depth"))
                )
                unit = "tasks with D pinned or unsolved"
            else:
                used = tasks
                unit = "tasks"
            used = used.drop_nulls([column, "expert_time_min"])
            if used.height < MIN_TASKS or used[column].n_unique() < 2 or used["expert_time_min"].n_unique() < 2:
                why = f"needs at least {MIN_TASKS} tasks with {column} and an expert time estimate, no constant column"
                rows.append(
                    make_row(data, key, dataset, None, n=used.height, unit=unit, collections=[dataset], models=models,
                             detail=why)
                )  # fmt: skip
                continue
            result = stats.spearman(used, column, "expert_time_min", n_boot=n_boot, seed=seed)
            detail = "human minutes: the task's expert_time_estimate_min"
            rows.append(corr_row(data, key, dataset, result, [dataset], models, detail=detail, unit=unit))
    return make_frame(rows)
