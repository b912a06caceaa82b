"""Notebook 08, how sure is D: its censored distribution, its reliability, the second-model drops noise
alone gives, and pass ~ D | W beyond BCa.

None of these is a number the paper reports: each is set beside one (a named variant, never in
its place). Which D rule each uses: the data's own (the ``pass_rule`` the depth table was
estimated with, the paper's "any" by default), so that the rows describe the D every other
finding uses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from depthlab import stats
from depthlab._defaults import AUDIT_N_BOOT, AUDIT_N_PERM, AUDIT_SEED
from depthlab.auditdata import AuditData
from depthlab.findings._core import capped_models, make_frame, make_row, public_runs, task_groups
from depthlab.findings._docs import docstring
from depthlab.measures.censored import censored_depth
from depthlab.measures.reliability import split_half_depth
from depthlab.schema import CAPS, MIN_TASKS
from depthlab.simulate.noisy_fit import drop_share, fit_noisy_model, noise_drop_share

_STATISTICS = {"share_le_3": "share_depth_le_3", "share_ge_5": "share_depth_ge_5", "median": "median_depth"}


@docstring
def censored_depth_shares(data: AuditData, *, n_boot: int = AUDIT_N_BOOT, seed: int = AUDIT_SEED) -> pl.DataFrame:
    """Share D ≤ 3, share D ≥ 5 and median D per collection, unsolved tasks counted, beside the solved-only figures.

    The paper's shares and medians are over solved tasks; here the ``censored_*`` rows take every
    solved or unsolved task, an unsolved one right-censored above the top cap, by Turnbull's
    estimator (:func:`depthlab.measures.censored.censored_depth`), and the ``solved_only_*`` rows
    are the paper's definition on the same data. Interval: a 95% percentile bootstrap over tasks
    (``detail`` says so and counts degenerate resamples); a median beyond the top cap is null.

    Rows per collection: ``censored_share_depth_le_3``, ``censored_share_depth_ge_5``,
    ``censored_median_depth`` and the three ``solved_only_*``.

    Parameters
    ----------
    {data}
    {n_boot_seed}

    {returns}
    """
    table = censored_depth(data.depth.filter(pl.col("dataset").is_in(list(data.datasets))), n_boot=n_boot, seed=seed)
    rows = []
    for row in table.iter_rows(named=True):
        collections = [row["dataset"]]
        models = capped_models(data, collections)
        how = "Turnbull, unsolved right-censored" if row["variant"] == "censored" else "solved tasks only"
        rows.append(
            make_row(
                data,
                f"{row['variant']}_{_STATISTICS[row['statistic']]}",
                row["dataset"],
                row["value"] if models else None,
                n=row["n_tasks"],
                unit="tasks",
                collections=collections,
                models=models,
                low=row["ci_low"],
                high=row["ci_high"],
                interval="ci95" if row["interval"] else None,
                detail=f"{how}; percentile bootstrap over tasks, {row['n_degenerate']} degenerate resamples"
                f" left out; {row['n_unsolved']} unsolved",
            )
        )
    return make_frame(rows)


@docstring
def depth_reliability(data: AuditData, *, repeats: int = 20, seed: int = AUDIT_SEED) -> pl.DataFrame:
    """Split-half D per collection from cells with 2+ attempts: share equal, within one rung, rank correlation.

    Each cell's attempts are split in two at random, D estimated on each half with the paper's
    rule, the halves compared (:func:`depthlab.measures.reliability.split_half_depth`), ``repeats``
    times. A collection whose cells have one attempt each has nothing to split: its rows are null.
    The unit is the task group where the collection has them (as in every row of the audit):
    rewrites of one seed are averaged into one agreement and ``n`` counts the groups. Split-half
    agreement is that of D from half the attempts, not a floor for D from all of them: under the
    paper's rule with luck a full-attempt retest agrees less (module
    :mod:`depthlab.measures.reliability`).

    Rows per collection: ``split_half_share_equal``, ``split_half_within_one``, ``split_half_rank_corr``.

    Parameters
    ----------
    {data}
    repeats, seed : int
        Random splits and their seed.

    {returns}
    """
    capped = data.trials.filter(pl.col("cap").is_not_null() & pl.col("dataset").is_in(list(data.datasets)))
    tasks, cluster = task_groups(data.audit.filter(pl.col("dataset").is_in(list(data.datasets))))
    groups = tasks.select("dataset", "task", "task_group") if cluster else None
    table = split_half_depth(capped, repeats=repeats, seed=seed, groups=groups) if capped.height else None
    rows = []
    for dataset in data.datasets:
        found = table.filter(pl.col("dataset") == dataset) if table is not None else pl.DataFrame()
        row = found.row(0, named=True) if found.height else None
        usable = row is not None and row["n_multi_cells"] > 0
        models = capped_models(data, [dataset])
        for key, column in (
            ("split_half_share_equal", "share_equal"),
            ("split_half_within_one", "share_within_one"),
            ("split_half_rank_corr", "rank_corr"),
        ):
            rows.append(
                make_row(
                    data,
                    key,
                    dataset,
                    row[column] if usable and row is not None else None,
                    n=round(row["n_units"]) if usable and row is not None else 0,
                    unit="task groups" if cluster else "tasks",
                    collections=[dataset],
                    models=models,
                    detail=f"mean over {repeats} random splits; {row['n_multi_cells']} cells with 2+ attempts"
                    + ("; task groups are the unit (their tasks averaged)" if cluster else "")
                    if usable and row is not None
                    else "needs two or more attempts per cell",
                )
            )
    return make_frame(rows)


@docstring
def pass_depth_given_work_robust(
    data: AuditData, *, n_perm: int = AUDIT_N_PERM, n_boot: int = AUDIT_N_BOOT, seed: int = AUDIT_SEED
) -> pl.DataFrame:
    """Pass ~ D | W per collection with a permutation p-value and a hierarchical bootstrap interval.

    Where nine tasks in ten sit at D = 1 the BCa interval of :func:`pass_depth_given_work`
    under-covers (tests/test_stats.py measures it at n = 30). These rows carry the same estimate
    (solved tasks with a public pass rate and W) with

    * ``pcorr_pass_depth_given_work_perm``: the Freedman-Lane permutation p-value of a studentised
      statistic (:func:`depthlab.stats.permutation_pvalue`, no interval), the test that holds its
      size in that regime: measured on exact nulls, it rejects at 0.05 in 2.5-7.0% of samples at
      n = 6 to 12 with one to three covariates (4.9% pooled), in 2.2% (1,000 samples) in the tie
      regime at n = 30, and in 5.3-6.7% from n = 6 to 50 where pass rate and depth both follow W
      (Spearman 0.9; 8.0-9.3% before issue 44) (tests/test_stats.py, tests/bench);
    * ``pcorr_pass_depth_given_work_hier``: a 95% percentile interval from a hierarchical
      bootstrap, task groups then tasks then their public runs (the statistic on the tasks' mean
      pass over runs, which is the pass rate). It shows the spread of that hierarchy but is no
      remedy for the ties: with one run per task it is the percentile bootstrap, and in the tie
      regime it covers a true zero in 65-72% of samples at one run per task, 86-88% at two.

    The unit is the task group where the collection has them (``task_group``, e.g. RST's rewrites
    of one seed; :func:`depthlab.findings._core.task_groups`), as in the main rows: the test
    permutes whole groups (its statistic on the groups' means, as the main row's), the bootstrap
    draws whole groups. Either row needs :data:`depthlab.schema.MIN_TASKS` units (6: 720 distinct
    permutations, and the smallest n at which the test's size is measured) and two values of D;
    below that it is null and says why.

    Parameters
    ----------
    {data}
    n_perm : int, default 2,000
        Permutations (every one of them when the units have fewer: six units have 720).
    {n_boot_seed}

    {returns}
    """
    audit = data.audit.filter(
        (pl.col("depth_status") == "solved") & pl.col("pass_rate").is_not_null() & pl.col("work").is_not_null()
    )
    runs = public_runs(data).select("dataset", "task", pl.col("passed").cast(pl.Float64))
    rows = []
    for dataset in data.datasets:
        tasks, cluster = task_groups(audit.filter(pl.col("dataset") == dataset))
        models = capped_models(data, [dataset])
        units = tasks[cluster].n_unique() if cluster else tasks.height
        noun = "task groups" if cluster else "tasks"
        enough = units >= MIN_TASKS and tasks["depth"].n_unique() > 1
        why = f"needs at least {MIN_TASKS} {noun} (the smallest n the test's size is measured at) and two values of D"
        perm = (
            stats.permutation_pvalue(tasks, "pass_rate", "depth", "work", n_perm=n_perm, seed=seed, cluster=cluster)
            if enough
            else None
        )
        if perm is not None and not math.isfinite(perm.r):
            perm, why = None, "the correlation is undefined (a constant column once ranked)"
        permuted = f"{perm.n_resamples} permutations" + (" (all of them: exact)" if perm.exact else "") if perm else ""
        grouped = "; task groups permuted whole, the statistic on their means" if cluster else ""
        rows.append(
            make_row(
                data,
                "pcorr_pass_depth_given_work_perm",
                dataset,
                perm.r if perm else None,
                n=units,
                unit=f"solved {noun}",
                collections=[dataset],
                models=models,
                p=perm.p if perm else None,
                detail="Freedman-Lane permutation p (studentised), the permuted residuals residualised on W again; "
                f"{permuted}{grouped}"
                if perm
                else why,
            )
        )
        hier = None
        if enough and n_boot:
            columns = ["dataset", "task", *([cluster] if cluster else [])]
            task_runs = runs.join(
                tasks.select(*columns, pl.col("depth").cast(pl.Float64), pl.col("work").cast(pl.Float64)),
                on=["dataset", "task"],
            )
            levels = (cluster, "task") if cluster else ("task",)
            hier = stats.hierarchical_bootstrap(
                task_runs, "passed", "depth", "work", levels=levels, n_boot=n_boot, seed=seed
            )
        drawn = f"{hier.n_groups} task groups, then tasks, then runs" if hier and cluster else "tasks, then runs"
        why = why if not enough else "n_boot = 0: no interval"
        rows.append(
            make_row(
                data,
                "pcorr_pass_depth_given_work_hier",
                dataset,
                hier.r if hier else None,
                n=hier.n if hier else tasks.height,
                unit="solved tasks",
                collections=[dataset],
                models=models,
                low=hier.ci_low if hier else None,
                high=hier.ci_high if hier else None,
                interval="ci95" if hier else None,
                detail=f"hierarchical bootstrap ({drawn}), percentile; {hier.n_degenerate} degenerate" if hier else why,
            )
        )
    return make_frame(rows)


@docstring
def second_model_noise(
    data: AuditData, *, replications: int = 20, seed: int = AUDIT_SEED, caps: Sequence[int] = CAPS
) -> pl.DataFrame:
    """The share of second-model drops per collection, beside the share noise alone would produce.

    The observed share: tasks whose D another model lowered below what one model alone gives,
    over the tasks where that is determined, pooled over every model taken first
    (:func:`depthlab.measures.second_model_effect`; the paper reports 25% of existing tasks).
    The noise-alone share: the noisy model (:mod:`depthlab.simulate.noisy`) fitted to the
    collection's capped runs by maximum likelihood (a slope per model, luck, the horizons'
    spread; :func:`depthlab.simulate.noisy_fit.fit_noisy_model`), then ``replications`` draws of
    as many tasks from it with every model's horizon the task's, so that the true D is the same
    for every model and a drop is luck alone
    (:func:`depthlab.simulate.noisy_fit.noise_drop_share`). Its value is the mean over the draws,
    its interval their range. D under the paper's rule ("any").

    Rows per collection: ``second_model_drop_share`` and ``second_model_drop_share_noise`` (null
    with fewer than two capped models or no determined task).

    Parameters
    ----------
    {data}
    replications, seed : int
        Noise-alone draws and their seed.
    caps : sequence of int, default CAPS
        The cap ladder.

    {returns}
    """
    ladder = tuple(caps)
    rows = []
    for dataset in data.datasets:
        models = capped_models(data, [dataset])
        capped = data.trials.filter(
            (pl.col("dataset") == dataset) & pl.col("cap").is_not_null() & pl.col("model").is_in(list(models))
        )
        share, determined = drop_share(capped, caps=ladder, models=models) if len(models) > 1 else (None, 0)
        rows.append(
            make_row(
                data,
                "second_model_drop_share",
                dataset,
                share,
                n=determined,
                unit="solved tasks",
                collections=[dataset],
                models=models,
                detail="lowered over determined tasks, pooled over every model taken first"
                if share is not None
                else "needs two or more capped models and a determined task",
            )
        )
        noise = None
        detail = "needs two or more capped models and a determined task"
        if share is not None:
            fit = fit_noisy_model(capped, models=models, caps=ladder)
            draws = noise_drop_share(fit, replications=replications, seed=seed)
            if len(draws):
                noise = draws
                detail = (
                    f"noisy model fitted by maximum likelihood ({fit.describe()}); {len(draws)} noise-alone draws "
                    f"of {fit.n_tasks} tasks, {fit.attempts} attempt(s) per cell, every model's horizon the task's; "
                    "interval: the draws' range"
                )
        rows.append(
            make_row(
                data,
                "second_model_drop_share_noise",
                dataset,
                float(noise.mean()) if noise is not None else None,
                n=determined,
                unit="solved tasks",
                collections=[dataset],
                models=models,
                low=float(noise.min()) if noise is not None else None,
                high=float(noise.max()) if noise is not None else None,
                interval="range" if noise is not None else None,
                detail=detail,
            )
        )
    return make_frame(rows)
