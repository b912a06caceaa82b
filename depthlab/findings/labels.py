"""Notebook 04, difficulty labels: generation-time labels and author ratings against pass rates and D."""

from __future__ import annotations

import polars as pl

from depthlab import stats
from depthlab._defaults import AUDIT_N_BOOT, AUDIT_SEED
from depthlab.auditdata import AuditData
from depthlab.catalog import DIFFICULTY_ORDER
from depthlab.findings._core import (
    COMPLEXITY,
    MIN_TASKS,
    UNSOLVED_RANK,
    capped_models,
    corr_row,
    make_frame,
    make_row,
    public_models,
    with_paper_rows,
)
from depthlab.findings._docs import docstring

# ---------------------------------------------------------------------------------------------
# labels


@with_paper_rows
@docstring
def label_pass_correlations(data: AuditData, *, n_boot: int = AUDIT_N_BOOT, seed: int = AUDIT_SEED) -> pl.DataFrame:
    """Spearman correlation of each collection's difficulty label with its public pass rate.

    Paper: generation-time labels (written by an LLM when the task was made) correlate −0.07 to
    −0.11 with the pass rate; TB2 authors' ratings −0.46. Every task with a label and a public
    pass rate; easy < medium < hard, and for TMax its generation-time ``task_complexity``
    (short < moderate < complex < intricate). BCa bootstrap CI over tasks.

    Rows ``label_corr_pass`` per labelled collection (group: the collection for its ``difficulty``
    label, ``<collection>: <label>`` for another label of it, such as ``tmax: task_complexity``, so
    no two rows share a key and group; ``detail``: which label and whether human or generated) and
    ``generated`` (the range over the generated labels).

    Parameters
    ----------
    {data}
    {n_boot_seed}

    {returns}
    """
    rows = []
    generated = []
    for dataset in data.datasets:
        part = data.audit.filter(pl.col("dataset") == dataset).drop_nulls("pass_rate")
        labelled = part.filter(pl.col("difficulty").is_in(DIFFICULTY_ORDER))
        candidates = [(labelled, "difficulty", DIFFICULTY_ORDER, _source(labelled))]
        if dataset == "tmax":
            axes = _complexity(data, dataset).join(part, on=["dataset", "task"])
            candidates.append(
                (axes.filter(pl.col("task_complexity").is_in(COMPLEXITY)), "task_complexity", COMPLEXITY, "generated")
            )
        for frame, label, order, source in candidates:
            if frame.height < MIN_TASKS or frame[label].n_unique() < 2 or frame["pass_rate"].n_unique() < 2:
                continue
            result = stats.spearman(frame, label, "pass_rate", order={label: list(order)}, n_boot=n_boot, seed=seed)
            row = corr_row(
                data,
                "label_corr_pass",
                dataset if label == "difficulty" else f"{dataset}: {label}",
                result,
                [dataset],
                public_models(data, [dataset]),
                detail=f"{label} ({source})",
                unit="tasks",
            )
            rows.append(row)
            if source == "generated":
                generated.append((dataset, result.r, result.n))
    if not generated:
        # the paper's span over generation-time labels, with the reason this data gives none
        rows.append(
            make_row(
                data,
                "label_corr_pass",
                "generated",
                None,
                n=0,
                unit="tasks",
                models=[],
                detail=f"no collection with a generation-time label on {MIN_TASKS} or more tasks with a pass rate",
            )
        )
    else:
        values = [r for _, r, _ in generated]
        collections = sorted({d for d, _, _ in generated})
        rows.append(
            make_row(
                data,
                "label_corr_pass",
                "generated",
                None,
                low=min(values),
                high=max(values),
                interval="range",
                n=sum(n for _, _, n in generated),
                unit="tasks",
                collections=collections,
                models=public_models(data, collections),
                detail=f"range over {len(values)} generation-time labels",
            )
        )
    return make_frame(rows)


@with_paper_rows
@docstring
def depth_vs_author_rating(data: AuditData, *, n_boot: int = AUDIT_N_BOOT, seed: int = AUDIT_SEED) -> pl.DataFrame:
    """D against the TB2 authors' difficulty rating.

    Paper: D correlates +0.55 with the authors' rating; of the TB2 tasks rated hard, 9 of 11 have
    D ≥ 2, against 8 of 28 rated easy or medium. Here the correlation is the rank partial
    correlation of D with the rating (easy < medium < hard) **controlling for W** (the paper's
    summary does not restate its covariate). Unsolved tasks are treated one way throughout: the
    correlation and the counts are both over the TB2 tasks with a rating whose D is pinned or
    unsolved, an unsolved task (no model solves it at any cap) having D above every cap: it ranks
    above every solved task in the correlation (unsolved tasks tie) and counts as D ≥ 2. Tasks with
    an incomplete D are left out of both.

    Rows (group ``tb2``): ``pcorr_depth_rating_given_work``, ``rated_hard_depth_ge_2`` (n = those
    tasks rated hard) and ``rated_easy_medium_depth_ge_2`` (n = those rated easy or medium).

    Parameters
    ----------
    {data}
    {n_boot_seed}

    {returns}
    """
    collections = ["tb2"]
    models = capped_models(data, collections)
    # every rated task whose D is pinned or above every cap (unsolved: ranked above every cap, D >= 2)
    known = data.audit.filter(
        (pl.col("dataset") == "tb2")
        & pl.col("difficulty").is_in(DIFFICULTY_ORDER)
        & pl.col("depth_status").is_in(["solved", "unsolved"])
    )
    unit = "tasks with D pinned or unsolved"
    rows = []
    ranked = known.with_columns(
        depth=pl.when(pl.col("depth_status") == "unsolved").then(UNSOLVED_RANK).otherwise(pl.col("depth"))
    )
    usable = ranked.drop_nulls(["work", "depth"])
    n_unsolved = usable.filter(pl.col("depth_status") == "unsolved").height
    unsolved_note = f"{n_unsolved} unsolved ranked above every cap"
    if usable.height >= MIN_TASKS and usable["difficulty"].n_unique() >= 2 and usable["depth"].n_unique() >= 2:
        result = stats.partial_spearman(
            usable,
            "depth",
            "difficulty",
            "work",
            order={"difficulty": list(DIFFICULTY_ORDER)},
            n_boot=n_boot,
            seed=seed,
        )
        rows.append(
            corr_row(
                data,
                "pcorr_depth_rating_given_work",
                "tb2",
                result,
                collections,
                models,
                detail=f"covariate: W; {unsolved_note}",
                unit=unit,
            )
        )
    else:
        rows.append(
            make_row(
                data,
                "pcorr_depth_rating_given_work",
                "tb2",
                None,
                n=usable.height,
                unit=unit,
                collections=collections,
                models=models,
                detail=f"needs at least {MIN_TASKS} rated TB2 tasks with D pinned or unsolved, and W",
            )
        )
    for key, ratings in (("rated_hard_depth_ge_2", ["hard"]), ("rated_easy_medium_depth_ge_2", ["easy", "medium"])):
        part = known.filter(pl.col("difficulty").is_in(ratings))
        deep = part.filter((pl.col("depth_status") == "unsolved") | (pl.col("depth") >= 2)).height
        unsolved = part.filter(pl.col("depth_status") == "unsolved").height
        rows.append(
            make_row(
                data,
                key,
                "tb2",
                deep if part.height else None,
                n=part.height,
                unit=unit,
                collections=collections,
                models=models,
                detail=f"{deep} of {part.height} ({unsolved} unsolved, D above every cap)",
            )
        )
    return make_frame(rows)


def _source(frame: pl.DataFrame) -> str:
    sources = sorted(frame["difficulty_source"].drop_nulls().unique().to_list())
    return ", ".join(sources) or "unknown"


def _complexity(data: AuditData, dataset: str) -> pl.DataFrame:
    return data.tasks.filter(pl.col("dataset") == dataset).select(
        "dataset", "task", task_complexity=pl.col("labels").str.json_path_match("$.task_complexity")
    )
