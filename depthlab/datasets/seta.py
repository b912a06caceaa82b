"""SETA (Scaling Environments for Terminal Agents, CAMEL-AI): synthetic tasks built by LLM agents from seeds.

Two generations: seta-env v1 (1,376 tasks, TB1-style ``task.yaml`` + ``weights.json``) and the SETA paper
release (Harbor ``task.toml``; SETA-Synth from StackOverflow / Unix StackExchange / Kaggle / nl2bash seeds,
SETA-Evol variants).

Labels
------
Human ratings
    None.
Generated labels
    ``difficulty`` (easy/medium/hard) in ``task.toml`` ``[metadata]`` or v1 ``task.yaml`` is written by the
    synthesis agent ("must match the ``## Difficulty`` field in draft_spec.md"): ``difficulty_source`` is
    ``"generated"``.
Empirical labels
    The rollout bucket ``task_difficulty`` (easy/medium/difficult/very difficult) of ``per_task_summary.csv``
    is not public; when ``<root>/per_task_summary.csv`` exists (columns ``task`` or ``task_id``, and
    ``task_difficulty``) it is added to ``labels`` as ``task_difficulty_empirical``.
Partial credit
    v1 tasks weight their tests (``weights.json``: ``{test name: weight}``); the weights are kept in
    ``labels`` (``test_weights``). Where a trial's per-test results exist (a TB1 run's
    ``parser_results``, a Harbor trial's ``verifier/ctrf.json``) its reward is the weighted share of
    tests passed, and it **passes only with full reward** (every weighted test passed): see
    :func:`apply_test_weights`. A Harbor SETA task's ``test.sh`` writes a binary reward; without a
    ``ctrf.json`` that reward stands. A ``weights.json`` that cannot be read rejects its task alone.
Missing
    No public per-task pass rates; no capped runs.

Layout under ``root``
---------------------
``<root>/SETA_Synth/<source>__<id>/``, ``<root>/SETA_Evolve/<source>__<id>__<variant>/``
    The paper release's two folders (found up to three levels down): Harbor task dirs
    (``task.toml``, ``instruction.md``, ``environment/``, ``solution/solve.sh``, ``tests/test.sh``);
    the folder name is the task id.
``<root>/tasks/[seta/]<task>/`` (or ``<root>/<task>/``)
    Harbor task dirs or seta-env v1 TB1 task dirs (``task.yaml``, ``solution.sh``, ``weights.json``,
    ``tests/test_outputs.py``).
``<root>/jobs/[seta/]...``
    Harbor job dirs or TB1 ``tb run`` output.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import msgspec
import polars as pl

from depthlab.datasets._base import Audit, DatasetInfo, json_object, keep_time_estimates_as_labels, make_audit
from depthlab.datasets._harbor_tree import load_root
from depthlab.io import Rejected

INFO = DatasetInfo(
    name="seta",
    description="SETA: CAMEL-AI's synthetic terminal environments (seta-env v1 TB1-style, SETA release Harbor).",
    difficulty_source="generated",
    human_labels="none",
    generated_labels="difficulty easy/medium/hard (written by the synthesis agent)",
    empirical_labels="task_difficulty rollout bucket (per_task_summary.csv, not public; read when present)",
    missing="no public per-task pass rates; no capped runs",
    layout=(
        "<root>/SETA_Synth/<source>__<id>/ and SETA_Evolve/<source>__<id>__<variant>/ (release), or "
        "<root>/tasks/<task>/ (task.toml or task.yaml + weights.json); <root>/jobs/ (Harbor or tb run output)"
    ),
)

#: The paper release's folders of task dirs.
RELEASE_DIRS: tuple[str, ...] = ("SETA_Synth", "SETA_Evolve")

WEIGHTS_FILE = "weights.json"
SUMMARY_CSV = "per_task_summary.csv"


def load(root: str | Path, *, name: str = "seta", status_rule: str = "leaderboard") -> Audit:
    """Load SETA under ``root`` (layout in the module docstring); see :func:`depthlab.load_dataset`."""
    root = Path(root)
    tree = load_root(
        root,
        name,
        difficulty_source="generated",
        status_rule=status_rule,
        release_dirs=RELEASE_DIRS,
        layout=INFO.layout,
    )
    tasks, trials, rejected = tree.tasks, tree.trials, list(tree.rejected)
    notes = [*tree.notes, "difficulty is written by the synthesis agent (generated), not a human rating"]
    task_dirs = {task: Path(source).parent for task, source in zip(tasks["task"], tasks["source"], strict=True)}
    weights, bad = _weights_of(task_dirs)
    if bad:  # one unreadable weights.json is that task's rejection, never the load's
        rejected.extend(bad.values())
        tasks = tasks.filter(~pl.col("task").is_in(sorted(bad)))
        trials = trials.filter(~pl.col("task").is_in(sorted(bad)))
    empirical = _empirical_buckets(root / SUMMARY_CSV)
    if weights or empirical:
        tasks = tasks.with_columns(
            labels=pl.struct("task", "labels").map_elements(
                lambda row: _merge_labels(row["labels"], weights.get(row["task"]), empirical.get(row["task"])),
                return_dtype=pl.String,
            )
        )
    if weights:
        # per-test results: a TB1 run's parser_results, a Harbor trial's verifier/ctrf.json; a Harbor
        # reward.json is the binary reward of test.sh, never per-test results
        outcomes = [
            (_tb1_parser_results(source) or _ctrf_results(source)) if task in weights else None
            for task, source in zip(trials["task"], trials["source"], strict=True)
        ]
        trials = apply_test_weights(
            trials.with_columns(_outcomes=pl.Series(outcomes, dtype=pl.String)), weights, outcomes="_outcomes"
        ).drop("_outcomes")
        n_scored = sum(outcome is not None for outcome in outcomes)
        notes.append(
            f"{len(weights)} tasks weight their tests (weights.json): {n_scored} trials with per-test results "
            "re-scored (a trial passes only with full reward); the others keep their own reward"
        )
    if empirical:
        notes.append(f"task_difficulty_empirical (rollout bucket) read from {SUMMARY_CSV} for {len(empirical)} tasks")
    return make_audit(name, keep_time_estimates_as_labels(tasks), trials, rejected=rejected, notes=notes)


def read_test_weights(tasks_dir: str | Path) -> dict[str, dict[str, float]]:
    """Read every ``<tasks_dir>/<task>/weights.json`` into ``{task: {test name: weight}}``.

    Examples
    --------
    >>> from depthlab.datasets import seta
    >>> seta.read_test_weights("data/seta/tasks")  # doctest: +SKIP
    {'fix-permissions': {'test_owner': 0.25, 'test_mode': 0.75}}
    """
    weights: dict[str, dict[str, float]] = {}
    for path in sorted(Path(tasks_dir).glob(f"*/{WEIGHTS_FILE}")):
        try:
            task_weights = _read_weights(path)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None
        if task_weights:
            weights[path.parent.name] = task_weights
    return weights


def _weights_of(task_dirs: Mapping[str, Path]) -> tuple[dict[str, dict[str, float]], dict[str, Rejected]]:
    """The test weights of every task dir that has a ``weights.json``; a bad file rejects its task."""
    weights: dict[str, dict[str, float]] = {}
    bad: dict[str, Rejected] = {}
    for task, folder in task_dirs.items():
        path = folder / WEIGHTS_FILE
        if not path.is_file():
            continue
        try:
            task_weights = _read_weights(path)
        except ValueError as error:
            bad[task] = Rejected(str(path), f"{error}; the task is rejected")
            continue
        if task_weights:
            weights[task] = task_weights
    return weights, bad


def _read_weights(path: Path) -> dict[str, float] | None:
    try:
        raw = msgspec.json.decode(path.read_bytes())
    except msgspec.DecodeError as error:
        raise ValueError(f"not valid JSON ({error})") from None
    if not isinstance(raw, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in raw.values()
    ):
        raise ValueError("weights.json must be an object of test name -> non-negative weight")
    return {str(k): float(v) for k, v in raw.items()} if sum(raw.values()) > 0 else None


def _ctrf_results(source: str | None) -> str | None:
    """Per-test outcomes of the Harbor trial a row was read from (``verifier/ctrf.json`` beside its result)."""
    if not source or not source.endswith("result.json"):
        return None
    path = Path(source).parent / "verifier" / "ctrf.json"
    try:
        report = msgspec.json.decode(path.read_bytes())
        tests = report["results"]["tests"]
        outcomes = {str(test["name"]): str(test["status"]) for test in tests if isinstance(test, dict)}
    except (OSError, msgspec.DecodeError, KeyError, TypeError):
        return None
    return msgspec.json.encode(outcomes).decode() if outcomes else None


def apply_test_weights(
    trials: pl.DataFrame, weights: Mapping[str, Mapping[str, float]], *, outcomes: str = "rewards"
) -> pl.DataFrame:
    """Re-score trials of weighted tasks: reward = weighted share of tests passed; pass only at full reward.

    A trial is re-scored when its ``outcomes`` column (default ``rewards``) is a JSON object of per-test
    outcomes naming some of its task's weighted tests (values ``"passed"``/``"failed"``, booleans or
    0/1, as TB1's ``parser_results``); a weighted test with no outcome counts as failed. Other trials,
    and ``invalid`` statuses, are left as they are. :func:`load` reads the outcomes of TB1 runs from
    each trial's ``results.json`` (its ``source``).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> from depthlab.datasets.seta import apply_test_weights
    >>> t = schema.conform(pl.DataFrame({"task": ["a"], "status": ["fail"],
    ...     "rewards": ['{"test_x": "passed", "test_y": "failed"}']}), "trials")
    >>> apply_test_weights(t, {"a": {"test_x": 3.0, "test_y": 1.0}})["reward"].item()
    0.75
    """
    if trials.is_empty() or not weights:
        return trials
    rescored = [
        _weighted_reward(task, given, weights) for task, given in zip(trials["task"], trials[outcomes], strict=True)
    ]
    new_reward = pl.Series("_weighted", rescored, dtype=pl.Float64)
    changed = new_reward.is_not_null()
    full = new_reward >= 1.0 - 1e-9
    return trials.with_columns(
        reward=pl.when(changed).then(new_reward).otherwise(pl.col("reward")),
        passed=pl.when(changed).then(full).otherwise(pl.col("passed")),
        status=pl.when(changed & (pl.col("status") != "invalid"))
        .then(pl.when(full).then(pl.lit("pass")).otherwise(pl.lit("fail")))
        .otherwise(pl.col("status")),
    )


def _weighted_reward(task: str, rewards: str | None, weights: Mapping[str, Mapping[str, float]]) -> float | None:
    task_weights = weights.get(task)
    if not task_weights or rewards is None:
        return None
    outcomes = msgspec.json.decode(rewards)
    if not isinstance(outcomes, dict) or not set(task_weights) & set(outcomes):
        return None
    passed = sum(weight for test, weight in task_weights.items() if _test_passed(outcomes.get(test)))
    return passed / sum(task_weights.values())


def _tb1_parser_results(source: str | None) -> str | None:
    """The ``parser_results`` of the TB1 trial a row was read from (``path`` or ``path#results[i]``)."""
    if not source or not source.split("#", 1)[0].endswith("results.json"):
        return None
    path, _, fragment = source.partition("#")
    try:
        entry = msgspec.json.decode(Path(path).read_bytes())
        if fragment.startswith("results[") and fragment.endswith("]"):
            entry = entry["results"][int(fragment[len("results[") : -1])]
    except (OSError, msgspec.DecodeError, KeyError, IndexError, TypeError, ValueError):
        return None  # the trial keeps the loader's own reward
    parser_results = entry.get("parser_results") if isinstance(entry, dict) else None
    return msgspec.json.encode(parser_results).decode() if isinstance(parser_results, dict) else None


def _test_passed(outcome: object) -> bool:
    if isinstance(outcome, str):
        return outcome.lower() == "passed"
    return outcome is True or (isinstance(outcome, int | float) and not isinstance(outcome, bool) and outcome >= 1)


def _empirical_buckets(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    table = pl.read_csv(path, infer_schema_length=0)
    key = "task" if "task" in table.columns else "task_id"
    if key not in table.columns or "task_difficulty" not in table.columns:
        raise ValueError(f"{path}: per_task_summary.csv needs columns 'task' (or 'task_id') and 'task_difficulty'")
    return dict(zip(table[key], table["task_difficulty"], strict=True))


def _merge_labels(labels: str | None, test_weights: Mapping[str, float] | None, empirical: str | None) -> str | None:
    merged = msgspec.json.decode(labels) if labels else {}
    merged.update({"test_weights": test_weights, "task_difficulty_empirical": empirical})
    return json_object(merged)
