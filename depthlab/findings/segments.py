"""Notebook 06, the DEPTH-style set: size, pass@1, segment reliability, and the sign test over paired environments."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Final

import numpy as np
import polars as pl

from depthlab import stats
from depthlab._defaults import AUDIT_N_BOOT, AUDIT_SEED
from depthlab._text import count
from depthlab.auditdata import AuditData
from depthlab.catalog import OWN
from depthlab.findings._core import (
    UNSOLVED_RANK,
    DescribedSample,
    FindingRow,
    Sample,
    capped_models,
    make_frame,
    make_row,
    public_runs,
    share_row,
    solved_by_model,
    with_paper_rows,
)
from depthlab.findings._core import main_model as core_main_model
from depthlab.findings._docs import docstring
from depthlab.schema import CAPS

#: The paper's number of segments its compounding uses: r⁶ (0.88⁶ = 47%, 0.74⁶ = 16%).
PAPER_SEGMENTS: Final[int] = 6
#: The keys of :func:`segment_reliability`, per model, in order.
SEGMENT_KEYS: Final[tuple[str, ...]] = (
    "segment_reliability",
    "segment_pass_all_observed",
    "segment_pass_all_compounded",
    "segment_pass_all_compounded_task_k",
)
# what each key's detail adds
SEGMENT_NOTES: Final[tuple[str, ...]] = (
    "; r = passed / attempted, attempts counted from the run's own stop",
    "",
    f"; r^{PAPER_SEGMENTS}, the paper's k",
    "; variant: r^k averaged over runs, k = the task's segments",
)
_SEGMENT_KEY = re.compile(r"segment_[1-9][0-9]*")

# ---------------------------------------------------------------------------------------------
# the DEPTH-style set


@with_paper_rows
@docstring
def own_set_summary(data: AuditData, *, main_model: str | None = None) -> pl.DataFrame:
    """The paper's own DEPTH-style set: size, W, N, what the main model solves, what no model passes.

    Paper: 105 tasks; median W 315, median N 45 over them; DeepSeek-V4.1-Flash (its main model)
    solves 54, 44 of them with D ≥ 40; of the 90 tasks run by all six models, 29 are passed by none.
    Here W and N are medians over the set's tasks (N is each task's median uncapped turn count).
    The main model is named by the caller, else the rule of :func:`depthlab.findings._core.main_model`
    (the model of D solving the most tasks); it solves a task when one of its own capped runs passes,
    and both counts are over tasks with a pinned D (a task it solves whose D is incomplete, because
    another model lacks runs below, is counted in ``detail``, in neither number), so the 44 are
    always among the 54. "Passed by none" is over the tasks every model with valid uncapped runs on
    the set ran uncapped, and counts uncapped runs only (the paper's evaluation: no cap).

    Rows (group ``depth``): ``own_tasks``, ``own_median_work``, ``own_median_turns``,
    ``own_solved_by_main``, ``own_solved_by_main_depth_ge_40``, ``own_tasks_run_by_all``,
    ``own_passed_by_no_model``.

    Parameters
    ----------
    {data}
    main_model : str, optional
        The model whose solved tasks are counted; default the main-model rule above.

    {returns}
    """
    collections = [OWN] if OWN in data.datasets else []
    audit = data.audit.filter(pl.col("dataset") == OWN)
    models = sorted(data.trials.filter(pl.col("dataset") == OWN)["model"].drop_nulls().unique().to_list())
    common: Sample = {"collections": collections, "models": models}
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
    rows += _solved_by_main(data, audit, collections, main_model)
    rows += _passed_by_none(data, audit, collections)
    return make_frame(rows)


def _solved_by_main(
    data: AuditData, audit: pl.DataFrame, collections: list[str], chosen: str | None
) -> list[FindingRow]:
    solved = solved_by_model(data, [OWN])
    main = chosen or core_main_model(data)
    if main is None or main not in solved:
        why = "no capped runs" if main is None else f"{main} has no capped runs on the set"
        missing: DescribedSample = {"collections": collections, "models": [] if main is None else [main], "detail": why}
        return [
            make_row(data, "own_solved_by_main", OWN, None, n=audit.height, unit="tasks", **missing),
            make_row(data, "own_solved_by_main_depth_ge_40", OWN, None, n=0, unit="tasks", **missing),
        ]
    mine = audit.filter((pl.lit(OWN + "/") + pl.col("task")).is_in(sorted(solved[main])))
    pinned = mine.filter(pl.col("depth_status") == "solved")
    deep = pinned.filter(pl.col("depth") >= 40).height
    rule = "named by the caller" if chosen else "the model of D solving the most tasks"
    detail = (
        f"main model {main} ({rule}): solves {mine.height} by its own capped runs, "
        f"{mine.height - pinned.height} of them with an incomplete D (in neither count)"
    )
    common: DescribedSample = {"collections": collections, "models": [main], "detail": detail}
    return [
        make_row(data, "own_solved_by_main", OWN, pinned.height, n=audit.height, unit="tasks", **common),
        make_row(data, "own_solved_by_main_depth_ge_40", OWN, deep, n=pinned.height, unit="tasks", **common),
    ]


def _passed_by_none(data: AuditData, audit: pl.DataFrame, collections: list[str]) -> list[FindingRow]:
    public = public_runs(data).filter(pl.col("dataset") == OWN)
    models = sorted(public["model"].drop_nulls().unique().to_list())
    per_task = public.group_by("task").agg(
        n_models=pl.col("model").n_unique(), passed=(pl.col("status") == "pass").any()
    )
    run_by_all = per_task.filter(pl.col("n_models") == len(models)) if models else per_task.clear()
    never = run_by_all.filter(~pl.col("passed")).height
    common: Sample = {"collections": collections, "models": models}
    detail = f"tasks every one of the {len(models)} models ran uncapped (valid runs)"
    return [
        make_row(
            data,
            "own_tasks_run_by_all",
            OWN,
            run_by_all.height if models else None,
            n=audit.height,
            unit="tasks",
            detail=detail,
            **common,
        ),
        make_row(
            data,
            "own_passed_by_no_model",
            OWN,
            never if run_by_all.height else None,
            n=run_by_all.height,
            unit="tasks run by every model",
            detail="no passing valid uncapped run by any model, over the tasks every model ran",
            **common,
        ),
    ]


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
                n=max(per_model["n"].to_list()),
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
    data: AuditData, *, collections: Sequence[str] = (OWN,), n_boot: int = AUDIT_N_BOOT, seed: int = AUDIT_SEED
) -> pl.DataFrame:
    """Per-model segment reliability r of multi-segment tasks, and how it compounds.

    Paper: reliability r is 0.88 for the best model and 0.74 for the worst; over six segments it
    compounds to 47% against 16% of runs passing all. Here, per model, on a fixed task set (the
    multi-segment tasks every model has a valid uncapped run on): r = segments passed / segments
    attempted, counted from the run's own stop. Segments are read from Harbor's multi-step runs
    (``step_results`` of ``[[steps]]`` tasks: the trials table's ``n_steps`` and
    ``first_failed_step``) and, for other runs, from per-segment reward keys ``segment_k``. A run
    stops at its first failed segment, so it
    attempts the segments up to and including that one (or every segment when it passes them
    all; a segment with no key is where the run stopped), whatever keys a verifier writes after
    it (depthlab's own writes every key, 0 after the first failure). A valid run with no segment key
    at all on a multi-segment task counts too: failed, it stopped at its first segment (one
    attempted, none passed); passed, it passed them all. Then the observed share of runs
    passing every segment; and the compounded share r⁶, the paper's k = 6 segments
    (:data:`PAPER_SEGMENTS`), the number set beside the paper's 47% and 16%. A variant,
    ``segment_pass_all_compounded_task_k``, averages rᵏ over runs with k = the run's task's own
    number of segments. 95% percentile CIs from a bootstrap over tasks.

    Rows per model, and for ``best model`` / ``worst model`` (by r): ``segment_reliability``,
    ``segment_pass_all_observed``, ``segment_pass_all_compounded`` (r⁶) and
    ``segment_pass_all_compounded_task_k`` (the variant).

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
                    detail="no multi-segment runs (Harbor step_results, or reward keys segment_k)",
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
                keyless=pl.col("keyless").sum(),
            )
            .sort("task")
        )
        vectors = {c: per_task[c].to_numpy().astype(float) for c in ("passed", "attempted", "runs", "all_passed")}
        point = _segment_stats(np.ones((1, len(task_ids))), vectors, k_by_task)
        boot = None if counts is None else _segment_stats(counts, vectors, k_by_task)
        results[model] = (point, boot, int(vectors["runs"].sum()), int(per_task["keyless"].sum()))
    rows = []
    ranked = sorted(models, key=lambda m: results[m][0][0][0])
    labelled = [(m, m) for m in models] + [("best model", ranked[-1]), ("worst model", ranked[0])]
    k_text = f"k = {int(k_by_task.min())}" + ("" if k_by_task.min() == k_by_task.max() else f"–{int(k_by_task.max())}")
    for group, model in labelled:
        point, boot, n_runs, keyless = results[model]
        runs_text = count(n_runs, "run") + (f" ({keyless} with no segment key)" if keyless else "")
        runs_text += f" on {count(len(task_ids), 'task')}"
        for j, key in enumerate(SEGMENT_KEYS):
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
                    detail=f"{model}: {runs_text} ({k_text} segments){SEGMENT_NOTES[j]}",
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

    The paper also gives the pairs' depths: the original has D ≤ 10 in 34 pairs (D = 1 in 26), the
    derived task D ≥ 20 in all 35. Over the same pairs (both D known or unsolved), an unsolved
    original is not ≤ 10 and an unsolved derived task is ≥ 20 (its D is above every cap).

    Rows (group ``paired environments``): ``sign_test_pairs`` (pairs with both D known or
    unsolved), ``sign_test_ties``, ``sign_test_n`` (pairs tested), ``sign_test_deeper`` (derived
    deeper), ``sign_test_p``, ``sign_test_original_depth_le_10``, ``sign_test_original_depth_1``,
    ``sign_test_derived_depth_ge_20`` (n = pairs with both D known or unsolved).

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
    common: DescribedSample = {"collections": collections, "models": models, "detail": detail}
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
            *(
                make_row(
                    data,
                    key,
                    group,
                    known.filter(condition).height if known.height else None,
                    n=known.height,
                    unit="pairs",
                    **common,
                )
                for key, condition in (
                    ("sign_test_original_depth_le_10", pl.col("original_rank") <= 10),
                    ("sign_test_original_depth_1", pl.col("original_rank") == 1),
                    ("sign_test_derived_depth_ge_20", pl.col("derived_rank") >= 20),
                )
            ),
        ]
    )


def environment_pairs(data: AuditData) -> pl.DataFrame:
    """Derived tasks (task.toml ``derived_from = "<dataset>/<task>"``) beside their original.

    Columns dataset, task, o_dataset, o_task, original, derived (D, null unless solved),
    original_status, derived_status, original_rank, derived_rank (D, with an unsolved task ranked
    above every cap: :data:`UNSOLVED_RANK`; null when D is incomplete), and data (simulated or real).
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
            data=pl.lit(data.kind),
        )
    )


@with_paper_rows
@docstring
def merged_segments(data: AuditData, *, caps: Sequence[int] = CAPS) -> pl.DataFrame:
    """Is depth an artifact of segment delivery? Each task beside its variant with the segments merged into one.

    Paper: merging the segments of 25 randomly sampled tasks into a single instruction leaves D
    unchanged for 68% of them; most drops are by only one cap. A merged variant names its task in
    task.toml, ``merged_from = "<dataset>/<task>"``, and is measured like any task (capped runs).
    D is compared on the cap ladder: a task no model solves sits on the rung above the top cap; a
    pair with an incomplete D is dropped (counted in ``detail``); a drop's size is in rungs (caps).

    Rows (group ``merged``): ``merged_pairs`` (pairs with both D known or unsolved; n = every pair),
    ``merged_depth_unchanged``, ``merged_share_depth_unchanged`` (95% Wilson interval),
    ``merged_drops`` (merged D lower), ``merged_drops_by_one_cap`` and ``merged_rises`` (n = known pairs).

    Parameters
    ----------
    {data}
    caps : sequence of int
        The cap ladder D is read on.

    {returns}
    """
    ladder = sorted(int(c) for c in caps)
    on_ladder = pl.col("depth").replace_strict({cap: index for index, cap in enumerate(ladder)}, default=None)
    rung = (
        pl.when(pl.col("depth_status") == "unsolved")
        .then(pl.lit(len(ladder)))
        .when(pl.col("depth_status") == "solved")
        .then(on_ladder)
    )
    facts = data.audit.select("dataset", "task", rung=rung)
    links = (
        data.tasks.select("dataset", "task", merged_from=pl.col("labels").str.json_path_match("$.merged_from"))
        .drop_nulls("merged_from")
        .with_columns(
            o_dataset=pl.col("merged_from").str.split("/").list.first(),
            o_task=pl.col("merged_from").str.split("/").list.slice(1).list.join("/"),
        )
    )
    pairs = links.join(facts, on=["dataset", "task"], how="left").join(
        facts.rename({"dataset": "o_dataset", "task": "o_task", "rung": "o_rung"}),
        on=["o_dataset", "o_task"],
        how="left",
    )
    known = pairs.drop_nulls(["rung", "o_rung"])
    change = known["o_rung"] - known["rung"]
    unchanged, drops, one = int((change == 0).sum()), int((change > 0).sum()), int((change == 1).sum())
    group = "merged"
    collections = sorted(set(pairs["dataset"].to_list()) | set(pairs["o_dataset"].to_list()))
    models = capped_models(data, collections)
    detail = (
        f"{pairs.height} pairs; {pairs.height - known.height} with an incomplete D dropped; "
        f"{unchanged} unchanged, {drops} lower ({one} by one cap), {int((change < 0).sum())} higher"
    )
    common: DescribedSample = {"collections": collections, "models": models, "detail": detail}

    def value(count: int) -> int | None:  # a count is null, never zero, when no pair is known
        return count if known.height else None

    return make_frame(
        [
            make_row(
                data,
                "merged_pairs",
                group,
                known.height if pairs.height else None,
                n=pairs.height,
                unit="pairs",
                **common,
            ),
            make_row(data, "merged_depth_unchanged", group, value(unchanged), n=known.height, unit="pairs", **common),
            share_row(
                data,
                "merged_share_depth_unchanged",
                group,
                unchanged,
                known.height,
                collections,
                models,
                detail=detail,
                unit="pairs",
            ),
            make_row(data, "merged_drops", group, value(drops), n=known.height, unit="pairs", **common),
            make_row(data, "merged_drops_by_one_cap", group, value(one), n=known.height, unit="pairs", **common),
            make_row(
                data, "merged_rises", group, value(int((change < 0).sum())), n=known.height, unit="pairs", **common
            ),
        ]
    )


def _segment_runs(data: AuditData, collections: Sequence[str]) -> pl.DataFrame:
    runs = public_runs(data).filter(pl.col("dataset").is_in(list(collections)))
    if "n_steps" not in runs.columns:  # a trials table saved before multi-step trials were read
        runs = runs.with_columns(n_steps=pl.lit(None, pl.Int32), first_failed_step=pl.lit(None, pl.Int32))
    # Harbor's own multi-step runs ([[steps]] tasks: a verifier per step, stop at the first failed
    # one): the steps passed before the first failed step, of the task's declared steps
    stepped = runs.filter(pl.col("n_steps").is_not_null())
    table = [
        (f"{dataset}/{task}", model, (failed - 1) if failed is not None else steps, failed or steps, steps, False)
        for dataset, task, model, steps, failed in stepped.select(
            "dataset", "task", "model", "n_steps", "first_failed_step"
        ).iter_rows()
    ]
    runs = runs.filter(pl.col("n_steps").is_null())
    read = []
    n_segments: dict[str, int] = {}
    for dataset, task, model, rewards, status in runs.select(
        "dataset", "task", "model", "rewards", "status"
    ).iter_rows():
        keys = {k: v for k, v in json.loads(rewards or "{}").items() if _SEGMENT_KEY.fullmatch(k)}
        name = f"{dataset}/{task}"
        read.append((name, model, keys, status))
        if keys:
            n_segments[name] = max([n_segments.get(name, 0), *(int(k.split("_")[1]) for k in keys)])
    # a task's number of segments: the task.toml's `segments` label when given, else the highest key any
    # run has (a run passing all has every key)
    declared = _declared_segments(data, collections)
    for name, model, keys, status in read:
        segments = declared.get(name, n_segments.get(name, 0))
        if not segments:  # no run of this task has a segment key and none is declared: not multi-segment
            continue
        if not keys:
            # a valid run with no segment key still attempted: a failed one stopped at its first segment
            # (where a run stops, no key is written), a passed one passed them all
            passed = segments if status == "pass" else 0
            table.append((name, model, passed, min(passed + 1, segments), segments, True))
            continue
        passed = 0
        while passed < segments and (keys.get(f"segment_{passed + 1}") or 0) >= 1:
            passed += 1
        # the run's own stop: the first segment not passed (its key 0 or absent) is the last attempted
        table.append((name, model, passed, min(passed + 1, segments), segments, False))
    schema = {
        "task": pl.String,
        "model": pl.String,
        "passed": pl.Int64,
        "attempted": pl.Int64,
        "segments": pl.Int64,
        "keyless": pl.Boolean,
    }
    frame = pl.DataFrame(table, schema=schema, orient="row")
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
    # weights: (B, tasks) how often each task is drawn; the statistics as weighted sums over tasks
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (weights @ v["passed"]) / (weights @ v["attempted"])
        runs = weights @ v["runs"]
        observed = (weights @ v["all_passed"]) / runs
        paper_k = r**PAPER_SEGMENTS
        task_k = ((weights * v["runs"]) * r[:, None] ** k[None, :]).sum(axis=1) / runs
    return r, observed, paper_k, task_k
