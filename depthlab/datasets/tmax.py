"""TMax (Tmax-15K): 14,601 fully synthetic tasks generated with Gemini from sampled axes.

Labels
------
Human ratings
    None.
Generated labels
    No ``difficulty`` key at all: ``difficulty_source`` is ``"none"``. Personal keys (a person's name
    or e-mail) are dropped from ``labels``. The sampled generation axes are kept
    in ``labels``: ``task_complexity`` (short / moderate / complex / intricate), ``command_complexity``
    (bash-only / bash+code / bash+code+services), ``domain``, ``skill_type``, ``language``, ``base_image``,
    the verifier, fixture and persona axes when present; ``category`` is also the ``domain`` axis, and
    ``tags`` are the ``primitive_skills`` (native layout).
Empirical labels
    ``solutions/<model>[_<harness>][_thinking]_summary.json`` holds pass@k of that model's solve runs
    (``<model>`` with ``/`` written ``_``). The harness named in the file (else the summary's own
    ``harness`` key) is the ``agent`` (``tmax-solve:<harness>``) and fixes the ``turn_limit``: 16
    actions for the legacy ``bash`` harness, 64 for ``vanillux``; a file naming no harness leaves both
    unknown (``tmax-solve``, null). ``_thinking`` marks the model's thinking mode (model
    ``<model> (thinking)``). These solve runs are this collection's public runs: each summarised
    attempt becomes one uncapped trial (``n_turns`` = the attempt's assistant messages when the summary
    keeps them, ``hit_limit`` when they reach the limit); pass@k per summary goes to ``labels``
    (``pass_at_k``). An attempt that failed on infrastructure (``infra_error`` true, or an
    ``error_type`` / ``status`` of ``infra``) is ``invalid``, not a fail, as TMax's own analysis drops it.
Missing
    **No reference solution** (no ``solve.sh``): ``work`` is null with ``work_note`` saying so. No
    capped runs. The repository's own Harbor jobs of Terminal-Bench 2 (``evaluation_assets/``) are
    TB2's runs, not TMax's: under ``<root>/jobs/`` they are left out as foreign (``load_dataset("tb2")``
    reads them).

Layout under ``root``
---------------------
``<root>/tasks/[tmax/]task_NNNNNN_xxxxxxxx/`` (or ``<root>/task_.../``), native
    ``task.json`` (``description`` = the prompt, ``truth``, ``domain`` and the sampled axes),
    ``test_final_state.py``, ``container.def``, ``solutions/*_summary.json``.
``<root>/tasks/[tmax/]<task>/task.toml``, Harbor conversion
    ``convert_to_harbor.py`` output: ``task.toml`` (schema 1.1, axes in ``[metadata]``), ``instruction.md``,
    ``environment/``, ``tests/``.
``<root>/jobs/[tmax/]...``
    Harbor job dirs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import polars as pl

from depthlab import schema
from depthlab.datasets._base import Audit, DatasetInfo, json_object, keep_time_estimates_as_labels, make_audit
from depthlab.datasets._harbor_tree import layout_note, load_tree, tree_dirs
from depthlab.io.tasks import without_personal_data

INFO = DatasetInfo(
    name="tmax",
    description="TMax-15K: 14,601 synthetic tasks generated with Gemini from sampled axes (native or Harbor).",
    difficulty_source="none",
    human_labels="none",
    generated_labels="no difficulty key; task_complexity, command_complexity and other sampled axes in labels",
    empirical_labels="pass@k of Gemini solve runs (solutions/*_summary.json), also loaded as public trials",
    missing="no reference solution (W null); no capped runs; turn limit known only from the summary's harness",
    layout="<root>/tasks/task_*/ (task.json + solutions/) or Harbor task dirs; <root>/jobs/ (Harbor jobs)",
)

NO_SOLUTION_NOTE = "TMax ships no reference solution (no solve.sh)"
SOLVER_AGENT = "tmax-solve"

#: The solve harnesses a summary's name can give, with their action (turn) limits: the legacy bash
#: harness (``generate_solutions.py --max-actions`` default 16) and the vanillux one (64).
HARNESS_TURN_LIMITS: dict[str, int] = {"bash": 16, "vanillux": 64}
_THINKING = "_thinking"
_INFRA = {"infra", "infra_error", "infrastructure"}

# task.json keys that are text or truth, not labels
NOT_LABELS = {"description", "truth", "name", "scenario", "primitive_skills"}


def load(root: str | Path, *, name: str = "tmax", status_rule: str = "leaderboard") -> Audit:
    """Load TMax under ``root`` (layouts in the module docstring); see :func:`depthlab.load_dataset`."""
    tasks_dir, jobs_dir = tree_dirs(Path(root), name)
    native = tasks_dir is not None and next(tasks_dir.glob("*/task.json"), None) is not None
    tree = load_tree(
        None if native else tasks_dir, jobs_dir, name=name, difficulty_source="generated", status_rule=status_rule
    )
    tasks, trials, rejected = tree.tasks, tree.trials, tree.rejected
    notes = [*tree.notes, "no difficulty label; task_complexity / command_complexity are sampled generation axes"]
    if tasks_dir is None:
        notes.append(layout_note(Path(root), name, (), INFO.layout))
    if native and tasks_dir is not None:
        tasks, solve_trials = read_native(tasks_dir, dataset=name)
        outside = trials.filter(~pl.col("task").is_in(tasks["task"].implode()))
        if outside.height:  # adopted by name before the native tasks were read
            notes.append(f"{outside.height} trials run tasks that are not TMax's tasks, left out")
            trials = trials.filter(pl.col("task").is_in(tasks["task"].implode()))
        trials = pl.concat([trials, solve_trials], how="vertical")
        notes.append("public trials are the solve runs summarised in solutions/*_summary.json")
        n_invalid = solve_trials.filter(pl.col("status") == "invalid").height
        if n_invalid:
            notes.append(f"{n_invalid} solve attempts failed on infrastructure: invalid, not fails")
    no_work = pl.col("work").is_null()
    tasks = keep_time_estimates_as_labels(
        tasks.with_columns(
            work_note=pl.when(no_work).then(pl.lit(NO_SOLUTION_NOTE)).otherwise(pl.col("work_note")),
            # both layouts: the sampled domain axis is the category (and stays in labels)
            category=pl.coalesce(pl.col("category"), pl.col("labels").str.json_path_match("$.domain")),
        )
    )
    return make_audit(name, tasks, trials, rejected=rejected, notes=notes)


def read_native(tasks_dir: str | Path, *, dataset: str = "tmax") -> tuple[pl.DataFrame, pl.DataFrame]:
    """Read native TMax task dirs (``task_*/task.json``, ``solutions/*_summary.json``).

    Returns
    -------
    tasks : pl.DataFrame
        ``schema.TASKS``, one row per dir holding ``task.json``; ``task`` is the dir name.
    trials : pl.DataFrame
        ``schema.TRIALS``, one uncapped row per summarised solve attempt. When a summary keeps its
        ``results``, each attempt's reward and assistant-message count are read; otherwise
        ``num_runs`` rows are rebuilt from ``num_success`` with ``n_turns`` null.

    Examples
    --------
    >>> from depthlab.datasets import tmax
    >>> tasks, trials = tmax.read_native("data/tmax/tasks")  # doctest: +SKIP
    """
    tasks_dir = Path(tasks_dir)
    task_rows: list[dict[str, Any]] = []
    trial_rows: list[dict[str, Any]] = []
    for task_json in sorted(tasks_dir.glob("*/task.json")):
        task = task_json.parent.name
        meta = _read_json(task_json)
        if not isinstance(meta, dict):
            raise ValueError(f"{task_json}: task.json must be a JSON object")
        pass_at_k: dict[str, Any] = {}
        for summary_path in sorted((task_json.parent / "solutions").glob("*_summary.json")):
            summary = _read_json(summary_path)
            if not isinstance(summary, dict):
                raise ValueError(f"{summary_path}: a solve summary must be a JSON object")
            model, harness = summary_run(summary_path.name, summary)
            pass_at_k[summary_path.name.removesuffix("_summary.json")] = summary.get("pass_at_k")
            trial_rows.extend(
                _solve_trials(summary, dataset=dataset, task=task, model=model, harness=harness, path=summary_path)
            )
        description = meta.get("description") or ""
        labels = without_personal_data({key: value for key, value in meta.items() if key not in NOT_LABELS})
        labels["pass_at_k"] = pass_at_k or None
        if meta.get("name") not in (None, task):
            labels["name"] = meta["name"]
        skills = meta.get("primitive_skills")
        task_rows.append(
            {
                "dataset": dataset,
                "task": task,
                "has_solution": False,
                "work_note": NO_SOLUTION_NOTE,
                "difficulty_source": "none",
                "category": meta.get("domain"),
                "tags": [str(s) for s in skills] if isinstance(skills, list) else None,
                "labels": json_object(labels),
                "instruction_words": len(description.split()),
                "checksum": _sha256(task_json),
                "source": str(task_json),
            }
        )
    tasks = (
        schema.conform(pl.DataFrame(task_rows, schema_overrides={"tags": pl.List(pl.String)}), "tasks")
        if task_rows
        else schema.empty("tasks")
    )
    trials = (
        schema.conform(pl.DataFrame(trial_rows, infer_schema_length=None), "trials")
        if trial_rows
        else schema.empty("trials")
    )
    return tasks, trials


def summary_run(file_name: str, summary: dict[str, Any] | None = None) -> tuple[str, str | None]:
    """The model and the harness of a solve summary, from its file name ``<model>[_<harness>][_thinking]_summary.json``.

    The harness is one of :data:`HARNESS_TURN_LIMITS`; a name without one falls back to the
    summary's own ``harness`` key, else None (unknown). Thinking mode stays with the model.

    Examples
    --------
    >>> from depthlab.datasets.tmax import summary_run
    >>> summary_run("gemini_gemini-3-flash-preview_vanillux_thinking_summary.json")
    ('gemini_gemini-3-flash-preview (thinking)', 'vanillux')
    >>> summary_run("gemini_gemini-3-flash-preview_summary.json")
    ('gemini_gemini-3-flash-preview', None)
    """
    stem = file_name.removesuffix("_summary.json")
    thinking = stem.endswith(_THINKING)
    stem = stem.removesuffix(_THINKING)
    harness = next((h for h in HARNESS_TURN_LIMITS if stem.endswith(f"_{h}")), None)
    if harness is not None:
        stem = stem.removesuffix(f"_{harness}")
    elif summary is not None and summary.get("harness") in HARNESS_TURN_LIMITS:
        harness = summary["harness"]
    return (f"{stem} (thinking)" if thinking else stem), harness


def _infra_failure(result: dict[str, Any]) -> bool:
    kinds = {str(result.get(key)).lower() for key in ("error_type", "status", "failure_mode") if result.get(key)}
    return result.get("infra_error") is True or bool(kinds & _INFRA)


def _solve_trials(
    summary: dict[str, Any], *, dataset: str, task: str, model: str, harness: str | None, path: Path
) -> Iterator[dict]:
    turn_limit = HARNESS_TURN_LIMITS.get(harness) if harness else None
    agent = f"{SOLVER_AGENT}:{harness}" if harness else SOLVER_AGENT
    base: dict[str, Any] = {"dataset": dataset, "task": task, "agent": agent, "model": model, "job": path.name}
    base["turn_limit"] = turn_limit
    results = summary.get("results")
    if isinstance(results, list) and results:
        for i, result in enumerate(results):
            if not isinstance(result, dict):
                raise ValueError(f"{path}: results[{i}] must be a JSON object")
            reward = result.get("reward")
            passed = bool(result.get("success", reward is not None and reward >= 1))
            status = "invalid" if _infra_failure(result) else "pass" if passed else "fail"
            messages = result.get("messages")
            n_turns = (
                sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
                if isinstance(messages, list) and status != "invalid"
                else None
            )
            yield {
                **base,
                "trial": f"{task}:{path.name}:{i}",
                "attempt": i + 1,
                "reward": reward,
                "rewards": json_object({"reward": reward}),
                "passed": None if status == "invalid" else passed,
                "status": status,
                "n_turns": n_turns,
                "hit_limit": None if n_turns is None or turn_limit is None else n_turns >= turn_limit,
                "source": f"{path}#results[{i}]",
            }
        return
    n_runs, n_success = summary.get("num_runs"), summary.get("num_success")
    if not isinstance(n_runs, int) or not isinstance(n_success, int) or not 0 <= n_success <= n_runs:
        raise ValueError(f"{path}: a solve summary needs 'results' or integer num_runs >= num_success >= 0")
    for i in range(n_runs):
        passed = i < n_success  # the summary keeps counts only: which attempt passed is unknown
        yield {
            **base,
            "trial": f"{task}:{path.name}:{i}",
            "attempt": i + 1,
            "reward": float(passed),
            "passed": passed,
            "status": "pass" if passed else "fail",
            "source": f"{path}#num_success",
        }


def _read_json(path: Path) -> Any:
    try:
        return msgspec.json.decode(path.read_bytes())
    except msgspec.DecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()
