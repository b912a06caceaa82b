"""Notebook 06, the DEPTH-style set: size, pass@1, segment reliability, and the sign test over paired environments."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import polars as pl

from depthlab import stats
from depthlab.auditdata import AuditData
from depthlab.findings._core import (
    OWN,
    UNSOLVED_RANK,
    capped_models,
    make_frame,
    make_row,
    public_runs,
    with_paper_rows,
)
from depthlab.findings._docs import docstring

# ---------------------------------------------------------------------------------------------
# the DEPTH-style set


@with_paper_rows
@docstring
def own_set_summary(data: AuditData) -> pl.DataFrame:
    """The paper's own DEPTH-style set: size, W, N, what the best model solves, what no model passes.

    Paper: median W 315, median N 45; the best model solves 54 tasks, 44 of them with D ≥ 40; no
    model passes 29 of the 90 tasks. Here W and N are medians over the set's tasks (N is each
    task's median uncapped turn count); the best model is the one with a passing cap on the most
    tasks, and "D ≥ 40" uses the task's D; a task no model passes has no passing run, capped or
    uncapped, by any model.

    Rows (group ``depth``): ``own_tasks``, ``own_median_work``, ``own_median_turns``,
    ``own_solved_by_best``, ``own_solved_by_best_depth_ge_40``, ``own_passed_by_no_model``.

    Parameters
    ----------
    {data}

    {returns}
    """
    collections = [OWN] if OWN in data.datasets else []
    audit = data.audit.filter(pl.col("dataset") == OWN)
    models = sorted(data.trials.filter(pl.col("dataset") == OWN)["model"].drop_nulls().unique().to_list())
    common = {"collections": collections, "models": models}
    rows = [make_row(data, "own_tasks", OWN, audit.height, n=audit.height, unit="tasks", **common)]
    work, turns = audit["work"].drop_nulls(), audit["n_turns"].drop_nulls()
    rows.append(
        make_row(
            data,
            "own_median_work",
            OWN,
            work.median() if work.len() else None,
            n=work.len(),
            unit="tasks with W",
            **common,
        )
    )
    rows.append(
        make_row(
            data,
            "own_median_turns",
            OWN,
            turns.median() if turns.len() else None,
            n=turns.len(),
            unit="tasks with uncapped runs",
            **common,
        )
    )
    depth = data.depth.filter(pl.col("dataset") == OWN)
    solved_by: dict[str, set[str]] = {}
    for task, by_model in depth.select("task", "depth_by_model").iter_rows():
        for model, model_depth in json.loads(by_model or "{}").items():
            if model_depth is not None:
                solved_by.setdefault(model, set()).add(task)
    if solved_by:
        best = max(sorted(solved_by), key=lambda m: len(solved_by[m]))
        tasks = solved_by[best]
        deep = audit.filter(pl.col("task").is_in(list(tasks)) & (pl.col("depth") >= 40)).height
        rows.append(
            make_row(
                data,
                "own_solved_by_best",
                OWN,
                len(tasks),
                n=audit.height,
                unit="tasks",
                detail=f"best model: {best}",
                **common,
            )
        )
        rows.append(
            make_row(
                data,
                "own_solved_by_best_depth_ge_40",
                OWN,
                deep,
                n=len(tasks),
                unit="tasks",
                detail=f"of the tasks {best} solves",
                **common,
            )
        )
    else:
        rows.append(
            make_row(
                data, "own_solved_by_best", OWN, None, n=audit.height, unit="tasks", detail="no capped runs", **common
            )
        )
        rows.append(make_row(data, "own_solved_by_best_depth_ge_40", OWN, None, n=0, unit="tasks", **common))
    passed = data.trials.filter((pl.col("dataset") == OWN) & (pl.col("status") == "pass"))["task"].unique()
    never = audit.filter(~pl.col("task").is_in(passed.to_list())).height
    rows.append(
        make_row(
            data,
            "own_passed_by_no_model",
            OWN,
            never if audit.height else None,
            n=audit.height,
            unit="tasks",
            detail="no passing run, capped or uncapped, by any model",
            **common,
        )
    )
    return make_frame(rows)


@with_paper_rows
@docstring
def pass_at_1(data: AuditData, *, collections: Sequence[str] = (OWN,)) -> pl.DataFrame:
    """Per-model pass@1: the pass rate averaged within each task, then over tasks.

    Paper: on its DEPTH-style set, from 17% to 47% across models. Valid uncapped runs; a task
    counts for a model when the model has a valid run on it.

    Rows ``pass_at_1`` per model, and ``models`` (the range over models).

    Parameters
    ----------
    {data}
    collections : sequence of str
        The collections (default the DEPTH-style set).

    {returns}
    """
    chosen = [d for d in data.datasets if d in collections]
    public = public_runs(data).filter(pl.col("dataset").is_in(chosen))
    per_task = public.group_by("dataset", "task", "model").agg(rate=(pl.col("status") == "pass").mean())
    per_model = per_task.group_by("model").agg(value=pl.col("rate").mean(), n=pl.len()).sort("model")
    rows = [
        make_row(data, "pass_at_1", model, value, n=n, unit="tasks", collections=chosen, models=[model])
        for model, value, n in per_model.iter_rows()
    ]
    if per_model.height:
        rows.append(
            make_row(
                data,
                "pass_at_1",
                "models",
                None,
                low=per_model["value"].min(),
                high=per_model["value"].max(),
                interval="range",
                n=per_model["n"].max(),
                unit="tasks",
                collections=chosen,
                models=per_model["model"].to_list(),
                detail=f"range over {per_model.height} models",
            )
        )
    return make_frame(rows)


@with_paper_rows
@docstring
def segment_reliability(
    data: AuditData, *, collections: Sequence[str] = (OWN,), n_boot: int = 2000, seed: int = 0
) -> pl.DataFrame:
    """Per-model segment reliability r of multi-segment tasks, and how it compounds.

    Paper: reliability r is 0.88 for the best model and 0.74 for the worst; over six segments it
    compounds to 47% against 16% of runs passing all. Here, per model, on a fixed task set (the
    multi-segment tasks every model has a valid uncapped run on): r = segments passed / segments
    attempted (a run stops at its first failed segment, so it attempts the passed ones and the
    failed one); the observed share of runs passing every segment; and the compounded share
    rᵏ (averaged over runs, k = the task's number of segments). 95% percentile CIs from a
    bootstrap over tasks.

    Rows per model, and for ``best model`` / ``worst model`` (by r): ``segment_reliability``,
    ``segment_pass_all_observed``, ``segment_pass_all_compounded``.

    Parameters
    ----------
    {data}
    collections : sequence of str
        The collections (default the DEPTH-style set).
    {n_boot_seed}

    {returns}
    """
    chosen = [d for d in data.datasets if d in collections]
    runs = _segment_runs(data, chosen)
    if runs.height == 0:
        return make_frame(
            [
                make_row(
                    data,
                    "segment_reliability",
                    "best model",
                    None,
                    n=0,
                    unit="tasks",
                    collections=chosen,
                    detail="no multi-segment runs (reward keys segment_k)",
                )
            ]
        )
    models = sorted(runs["model"].unique().to_list())
    # the fixed task set: tasks every model has a valid run on
    tasks = runs.group_by("task").agg(pl.col("model").n_unique().alias("m")).filter(pl.col("m") == len(models))
    task_ids = sorted(tasks["task"].to_list())
    runs = runs.filter(pl.col("task").is_in(task_ids))
    k_by_task = runs.group_by("task").agg(pl.col("segments").max()).sort("task")["segments"].to_numpy()
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(task_ids), size=(n_boot, len(task_ids))) if n_boot else None
    counts = None if draws is None else np.stack([np.bincount(d, minlength=len(task_ids)) for d in draws])
    results = {}
    for model in models:
        per_task = (
            runs.filter(pl.col("model") == model)
            .group_by("task")
            .agg(
                passed=pl.col("passed").sum(),
                attempted=pl.col("attempted").sum(),
                runs=pl.len(),
                all_passed=pl.col("all_passed").sum(),
            )
            .sort("task")
        )
        vectors = {c: per_task[c].to_numpy().astype(float) for c in ("passed", "attempted", "runs", "all_passed")}
        point = _segment_stats(np.ones((1, len(task_ids))), vectors, k_by_task)
        boot = None if counts is None else _segment_stats(counts, vectors, k_by_task)
        results[model] = (point, boot, int(vectors["runs"].sum()))
    rows = []
    ranked = sorted(models, key=lambda m: results[m][0][0][0])
    labelled = [(m, m) for m in models] + [("best model", ranked[-1]), ("worst model", ranked[0])]
    k_text = f"k = {int(k_by_task.min())}" + ("" if k_by_task.min() == k_by_task.max() else f"–{int(k_by_task.max())}")
    for group, model in labelled:
        point, boot, n_runs = results[model]
        for j, key in enumerate(("segment_reliability", "segment_pass_all_observed", "segment_pass_all_compounded")):
            low = high = None
            if boot is not None:
                finite = boot[j][np.isfinite(boot[j])]
                if finite.size:
                    low, high = (float(v) for v in np.quantile(finite, [0.025, 0.975]))
            rows.append(
                make_row(
                    data,
                    key,
                    group,
                    float(point[j][0]),
                    low=low,
                    high=high,
                    interval="ci95" if low is not None else None,
                    n=len(task_ids),
                    unit="tasks",
                    collections=chosen,
                    models=[model],
                    detail=f"{model}: {n_runs} runs on {len(task_ids)} tasks ({k_text} segments)",
                )
            )
    return make_frame(rows)


@with_paper_rows
@docstring
def sign_test_depth(data: AuditData) -> pl.DataFrame:
    """Sign test on D over paired environments: is the derived task deeper than its original?

    Paper: over environments hosting an original task and a task derived from it (the derived
    one chains more segments in the same environment), 35 of 35 pairs have the derived task
    deeper: p = 5.8 × 10⁻¹¹ (exact two-sided sign test). D is compared with a task no model solves
    (``unsolved``: D above the top cap) ranked above every cap; a pair with an incomplete D is
    dropped; ties are dropped from the test.

    Rows (group ``paired environments``): ``sign_test_pairs`` (pairs with both D known or
    unsolved), ``sign_test_ties``, ``sign_test_n`` (pairs tested), ``sign_test_deeper`` (derived
    deeper), ``sign_test_p``.

    Parameters
    ----------
    {data}

    {returns}
    """
    pairs = environment_pairs(data)
    group = "paired environments"
    collections = sorted(set(pairs["dataset"].to_list()) | set(pairs["o_dataset"].to_list()))
    models = capped_models(data, collections)
    known = pairs.drop_nulls(["original_rank", "derived_rank"])
    dropped = pairs.height - known.height
    test = stats.sign_test(known["derived_rank"].to_numpy(), known["original_rank"].to_numpy())
    tested = test.n_pos + test.n_neg
    detail = (
        f"{pairs.height} pairs; {dropped} with an incomplete D dropped; {test.n_zero} ties dropped; "
        f"{tested} tested: {test.n_pos} deeper, {test.n_neg} shallower"
    )
    common = {"collections": collections, "models": models, "detail": detail}
    return make_frame(
        [
            make_row(data, "sign_test_pairs", group, known.height, n=pairs.height, unit="pairs", **common),
            make_row(data, "sign_test_ties", group, test.n_zero, n=known.height, unit="pairs", **common),
            make_row(data, "sign_test_n", group, tested, n=tested, unit="pairs", **common),
            make_row(data, "sign_test_deeper", group, test.n_pos, n=tested, unit="pairs", **common),
            make_row(
                data,
                "sign_test_p",
                group,
                None if tested == 0 else test.p,
                p=None if tested == 0 else test.p,
                n=tested,
                unit="pairs",
                **common,
            ),
        ]
    )


def environment_pairs(data: AuditData) -> pl.DataFrame:
    """Derived tasks (task.toml ``derived_from = "<dataset>/<task>"``) beside their original.

    Columns dataset, task, o_dataset, o_task, original, derived (D, null unless solved),
    original_status, derived_status, original_rank, derived_rank (D, with an unsolved task ranked
    above every cap: :data:`UNSOLVED_RANK`; null when D is incomplete).
    """
    links = (
        data.tasks.select("dataset", "task", derived_from=pl.col("labels").str.json_path_match("$.derived_from"))
        .drop_nulls("derived_from")
        .with_columns(
            o_dataset=pl.col("derived_from").str.split("/").list.first(),
            o_task=pl.col("derived_from").str.split("/").list.slice(1).list.join("/"),
        )
    )
    rank = (
        pl.when(pl.col("depth_status") == "solved")
        .then(pl.col("depth").cast(pl.Float64))
        .when(pl.col("depth_status") == "unsolved")
        .then(pl.lit(UNSOLVED_RANK))
    )
    facts = data.audit.select("dataset", "task", "depth", "depth_status", rank=rank)
    originals = facts.rename(
        {
            "dataset": "o_dataset",
            "task": "o_task",
            "depth": "original",
            "depth_status": "original_status",
            "rank": "original_rank",
        }
    )
    return (
        links.join(facts, on=["dataset", "task"], how="left")
        .join(originals, on=["o_dataset", "o_task"], how="left")
        .select(
            "dataset",
            "task",
            "o_dataset",
            "o_task",
            "original",
            pl.col("depth").alias("derived"),
            "original_status",
            pl.col("depth_status").alias("derived_status"),
            "original_rank",
            pl.col("rank").alias("derived_rank"),
        )
    )


def _segment_runs(data: AuditData, collections: Sequence[str]) -> pl.DataFrame:
    runs = public_runs(data).filter(
        pl.col("dataset").is_in(list(collections)) & pl.col("rewards").str.contains('"segment_')
    )
    rows = []
    n_segments: dict[str, int] = {}
    for dataset, task, model, rewards in runs.select("dataset", "task", "model", "rewards").iter_rows():
        keys = json.loads(rewards)
        outcome = [keys[f"segment_{k}"] >= 1 for k in range(1, len(keys) + 1) if f"segment_{k}" in keys]
        name = f"{dataset}/{task}"
        rows.append((name, model, sum(outcome), len(outcome), outcome))
        n_segments[name] = max(n_segments.get(name, 0), len(outcome))
    # a task's number of segments: the most keys any run has (a run passing all has every key), or the
    # task.toml's `segments` label when given
    declared = _declared_segments(data, collections)
    table = [
        (name, model, passed, attempted, declared.get(name, n_segments[name]))
        for name, model, passed, attempted, _ in rows
    ]
    frame = pl.DataFrame(table, schema=["task", "model", "passed", "attempted", "segments"], orient="row")
    return frame.with_columns(all_passed=pl.col("passed") == pl.col("segments"))


def _declared_segments(data: AuditData, collections: Sequence[str]) -> dict[str, int]:
    tasks = data.tasks.filter(pl.col("dataset").is_in(list(collections)))
    out = {}
    for dataset, task, labels in tasks.select("dataset", "task", "labels").iter_rows():
        value = json.loads(labels or "{}").get("segments")
        if isinstance(value, list) and value:
            out[f"{dataset}/{task}"] = len(value)
        elif isinstance(value, int | float) and not isinstance(value, bool) and value >= 1:
            out[f"{dataset}/{task}"] = int(value)
    return out


def _segment_stats(weights: np.ndarray, v: dict[str, np.ndarray], k: np.ndarray) -> tuple[np.ndarray, ...]:
    # weights: (B, tasks) how often each task is drawn; all three statistics as weighted sums over tasks
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (weights @ v["passed"]) / (weights @ v["attempted"])
        runs = weights @ v["runs"]
        observed = (weights @ v["all_passed"]) / runs
        compounded = ((weights * v["runs"]) * r[:, None] ** k[None, :]).sum(axis=1) / runs
    return r, observed, compounded
