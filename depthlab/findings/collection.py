"""Notebook 01, the collections: tasks and solved tasks, shares of D, synthetic versus human, pass rates."""

from __future__ import annotations

import polars as pl

from depthlab._checks import check_choice
from depthlab.auditdata import AuditData
from depthlab.catalog import AUDITED, HUMAN, SYNTHETIC
from depthlab.findings._core import (
    Sample,
    capped_models,
    incomplete_note,
    make_frame,
    make_row,
    share_row,
    solved_tasks,
    with_paper_rows,
)
from depthlab.findings._docs import docstring

# ---------------------------------------------------------------------------------------------
# the collections


@with_paper_rows
@docstring
def collection_counts(data: AuditData) -> pl.DataFrame:
    """Tasks per collection, and the tasks of the audited collections (solved tasks: :func:`depth_shares`).

    Paper: 734 tasks audited over TMax, FACET, SETA, RST, TB2 and TW (``audited_tasks``, group
    ``audited``).

    Rows: ``tasks`` per collection; ``audited_tasks`` (group ``audited``).

    Parameters
    ----------
    {data}

    {returns}
    """
    rows = []
    for dataset in data.datasets:
        part = data.audit.filter(pl.col("dataset") == dataset)
        rows.append(make_row(data, "tasks", dataset, part.height, n=part.height, unit="tasks", collections=[dataset]))
    audited = [d for d in data.datasets if d in AUDITED]
    n = data.audit.filter(pl.col("dataset").is_in(audited)).height
    rows.append(make_row(data, "audited_tasks", "audited", n, n=n, unit="tasks", collections=audited))
    return make_frame(rows)


@with_paper_rows
@docstring
def depth_shares(data: AuditData) -> pl.DataFrame:
    """Shares of solved tasks with D = 1, D ≤ 3 and D ≥ 5, per collection and for the synthetic ones pooled.

    Paper: among solved tasks, most synthetic tasks are shallow: 278 of the 296 solved synthetic
    tasks (TMax, FACET, SETA, RST) have D ≤ 3; RST has 79% at D ≤ 3. Shares carry a 95% Wilson
    interval. A task with an incomplete D (a cap not run) is neither solved nor unsolved: it is left
    out of every count, and the rows' ``detail`` says how many.

    Rows per group (each collection, and ``synthetic``): ``solved_tasks``, ``solved_depth_1``,
    ``solved_depth_le_3``, ``solved_depth_ge_5`` (counts) and ``solved_share_depth_1``,
    ``solved_share_depth_le_3``, ``solved_share_depth_ge_5``.

    Parameters
    ----------
    {data}

    {returns}
    """
    rows = []
    groups = [(d, [d]) for d in data.datasets]
    synthetic = [d for d in data.datasets if d in SYNTHETIC]
    if synthetic:
        groups.append(("synthetic", synthetic))
    for group, collections in groups:
        solved = solved_tasks(data, collections)
        models = capped_models(data, collections)
        note = incomplete_note(data, collections)
        rows.append(
            make_row(
                data,
                "solved_tasks",
                group,
                solved.height if models else None,  # no capped runs: nothing is solved or unsolved
                n=solved.height,
                unit="solved tasks",
                collections=collections,
                models=models,
                detail=note,
            )
        )
        for name, condition in (
            ("depth_1", pl.col("depth") == 1),
            ("depth_le_3", pl.col("depth") <= 3),
            ("depth_ge_5", pl.col("depth") >= 5),
        ):
            count = solved.filter(condition).height
            rows.append(
                make_row(
                    data,
                    f"solved_{name}",
                    group,
                    count if models else None,
                    n=solved.height,
                    unit="solved tasks",
                    collections=collections,
                    models=models,
                    detail=note,
                )
            )
            wilson = f"{count} of {solved.height} (Wilson interval)" + (f"; {note}" if note else "")
            rows.append(
                share_row(data, f"solved_share_{name}", group, count, solved.height, collections, models, detail=wilson)
            )
    return make_frame(rows)


@with_paper_rows
@docstring
def synthetic_vs_human(data: AuditData) -> pl.DataFrame:
    """Synthetic versus human-curated collections, on solved tasks.

    Paper: synthetic = TMax, FACET, SETA, RST (median W 68, D ≥ 5 for 6% of solved tasks);
    human = TB2, TW (median W 17, D ≥ 5 for 10%: 11 of 105 solved tasks). The paper's own
    DEPTH-style set is in neither group. Medians and shares are over solved tasks only.

    The paper also sets the DEPTH-style set's median W (315) above the 90th percentile of W over
    the solved synthetic tasks (226; linear interpolation here, the paper's rule is not restated).
    A task with an incomplete D is left out of every count (``detail`` says how many).

    Rows per group (``synthetic``, ``human``): ``solved_tasks``, ``solved_median_work``,
    ``solved_p90_work``, ``solved_depth_ge_5`` (count) and ``solved_share_depth_ge_5`` (95% Wilson
    interval).

    Parameters
    ----------
    {data}

    {returns}
    """
    rows = []
    for group, members in (("synthetic", SYNTHETIC), ("human", HUMAN)):
        collections = [d for d in data.datasets if d in members]
        solved = solved_tasks(data, collections)
        models = capped_models(data, collections)
        work = solved["work"].drop_nulls()
        deep = solved.filter(pl.col("depth") >= 5).height
        common: Sample = {"collections": collections, "models": models}
        note = incomplete_note(data, collections)
        rows += [
            make_row(
                data,
                "solved_tasks",
                group,
                solved.height if models else None,
                n=solved.height,
                unit="solved tasks",
                detail=note,
                **common,
            ),
            make_row(
                data,
                "solved_median_work",
                group,
                work.median() if work.len() else None,
                n=work.len(),
                unit="solved tasks with W",
                detail=note,
                **common,
            ),
            make_row(
                data,
                "solved_p90_work",
                group,
                work.quantile(0.9, "linear") if work.len() else None,
                n=work.len(),
                unit="solved tasks with W",
                detail="90th percentile, linear interpolation" + (f"; {note}" if note else ""),
                **common,
            ),
            make_row(
                data,
                "solved_depth_ge_5",
                group,
                deep if models else None,
                n=solved.height,
                unit="solved tasks",
                detail=note,
                **common,
            ),
            share_row(
                data,
                "solved_share_depth_ge_5",
                group,
                deep,
                solved.height,
                collections,
                models,
                detail=f"{deep} of {solved.height} (Wilson interval)" + (f"; {note}" if note else ""),
            ),
        ]
    return make_frame(rows)


# ---------------------------------------------------------------------------------------------
# public pass rates


@docstring
def model_pass_rates(data: AuditData, *, status_rule: str | None = None) -> pl.DataFrame:
    """Each model's public pass rate: passing trials over valid uncapped trials.

    Not one of the paper's numbers: the check that the data is the published one. With
    ``status_rule="all"`` every uncapped trial counts (a missing reward is a failure), as in the TMax
    authors' release; on the bundled TB2 facts this gives their published rates (tmax-27b 42.70%,
    Qwen3.6-27B 39.55%, tmax-9b 27.19%). With ``"leaderboard"`` trials that died of an
    infrastructure error are left out; None keeps the status the trials were loaded with.

    Rows ``pass_rate`` (status as loaded) or ``pass_rate_rule_<rule>`` per model (``collections``:
    where its trials are; n = trials counted).

    Parameters
    ----------
    {data}
    status_rule : {"all", "leaderboard"} or None
        Re-judge each trial's status from its reward and exception under this rule; None keeps the loaded one.

    {returns}
    """
    from depthlab.io import STATUS_RULES, trial_status

    uncapped = data.trials.filter(pl.col("cap").is_null())
    key = "pass_rate"
    if status_rule is not None:
        check_choice(status_rule, "status_rule", "model_pass_rates", STATUS_RULES)
        status = [
            trial_status(r, e, status_rule) for r, e in zip(uncapped["reward"], uncapped["exception"], strict=True)
        ]
        uncapped = uncapped.with_columns(status=pl.Series(status, dtype=pl.String))
        key = f"pass_rate_rule_{status_rule}"
    valid = uncapped.filter(pl.col("status").is_in(["pass", "fail"]))
    per_model = (
        valid.group_by("model")
        .agg(value=(pl.col("status") == "pass").mean(), n=pl.len(), collections=pl.col("dataset").unique().sort())
        .sort("model")
    )
    detail = "status as loaded" if status_rule is None else f"status rule {status_rule!r}"
    return make_frame(
        [
            make_row(
                data,
                key,
                model,
                value,
                n=n,
                unit="uncapped runs",
                collections=collections,
                models=[model],
                detail=detail,
            )
            for model, value, n, collections in per_model.iter_rows()
        ]
    )
