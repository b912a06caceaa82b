"""Terminal-Bench 1.x (``tb run``) output and the TB1 leaderboard tree.

Layout: ``<run>/results.json`` (run level, one entry per trial), ``<run>/run_metadata.json``,
``<run>/tb.lock`` and ``<run>/<task>/<trial>/results.json`` (trial level). A trial is read
from its own file when it exists and from the run-level list only otherwise, so no trial is
counted twice. Run-level files may also be named ``<run_id>_results.json`` or
``<run_id>__results.json`` (leaderboard submissions without trial directories).

Field by field:

* ``task``: ``task_id``; ``trial``: ``trial_name``; ``attempt``: the ``N`` of ``N-of-M`` in
  the trial name (``hello-world.1-of-5``), runs ordered by start time (see ``read_trials``).
* ``agent``: ``run_metadata.agent_name``, else ``tb.lock`` ``agent.name``; ``model``:
  ``run_metadata.model_name``, else ``tb.lock`` ``agent.model_name``; else, for both, the parts
  of a leaderboard submission folder ``<YYYYMMDD>_<agent>_<model>`` (the model is the text
  after the last ``_``).
* ``job``: ``run_metadata.run_id``, else the run directory name.
* ``reward``: 1.0 / 0.0 from ``is_resolved`` (null when null); ``status``: ``pass`` when
  resolved, else ``fail`` under both rules. TB1's leaderboard divides by every trial
  (``accuracy = n_resolved / len(results)``), so no TB1 trial is ``invalid``; ``exception``
  keeps the ``failure_mode`` when it is not ``unset``/``none``.
* Tokens: ``total_input_tokens``/``total_output_tokens``; both 0 means "not reported" (null).
* ``n_turns``: the number of ``agent-logs/episode-*`` directories (Terminus), else null.
* ``cap``/``turn_limit``: from ``run_metadata.agent_kwargs`` by the same rule as Harbor.
"""

from __future__ import annotations

import os
import re
from typing import Any

import msgspec

from depthlab.io._errors import Reject, Rejected
from depthlab.io._files import Dep, probe, read_json
from depthlab.io._rows import check_row
from depthlab.io.harbor import Options, identity, loose_time
from depthlab.io.status import apply_cap_rule, harness_turn_limit

_ATTEMPT = re.compile(r"\.(\d+)-of-(\d+)(?:\.|$)")
_SUBMISSION = re.compile(r"^\d{8}_(?P<agent>.+)_(?P<model>[^_]+)$")
_QUIET_FAILURE_MODES = frozenset({"unset", "none"})
RUN_FILE_SUFFIXES = ("__results.json", "_results.json")


class TrialResults(msgspec.Struct):
    """TB1 ``TrialResults`` (trial-level ``results.json`` and each run-level entry).

    ``results`` is set only in a run-level file (``BenchmarkResults``); one struct decodes both.
    """

    trial_name: str | None = None
    task_id: str | None = None
    is_resolved: bool | None = None
    failure_mode: str | None = None
    # what only describes the run is checked field by field (a bad one is nulled with a note)
    total_input_tokens: Any = None
    total_output_tokens: Any = None
    trial_started_at: Any = None
    trial_ended_at: Any = None
    agent_started_at: Any = None
    agent_ended_at: Any = None
    results: list[TrialResults] | None = None


class _RunMetadata(msgspec.Struct):
    run_id: str | None = None
    agent_name: str | None = None
    model_name: str | None = None
    dataset_name: str | None = None
    agent_kwargs: dict | None = None


class _LockAgent(msgspec.Struct):
    name: str | None = None
    model_name: str | None = None


class _Lock(msgspec.Struct):
    agent: _LockAgent | None = None


class _Run(msgspec.Struct):
    agent: str | None
    model: str | None
    job: str
    dataset: str | None
    kwargs: dict


def attempt_from_name(trial_name: str) -> int | None:
    """The 1-based attempt ``N`` of a TB1 trial name ``<task>.<N>-of-<M>[.<run_id>]``.

    Examples
    --------
    >>> attempt_from_name("hello-world.2-of-5.tb_rc2_sonnet_1"), attempt_from_name("hello-world.1-of-5")
    (2, 1)
    """
    match = _ATTEMPT.search(trial_name)
    return int(match.group(1)) if match else None


def is_trial_dir_name(name: str) -> bool:
    """True for TB1 trial directory names (they carry ``.N-of-M``)."""
    return _ATTEMPT.search(name) is not None


def trial_file_row(
    path: str, options: Options, fallback_dataset: str, deps: list[Dep], runs: dict[str, tuple[_Run, list[Dep]]]
) -> dict | None:
    """Row of a trial-level ``results.json`` (None when the file turns out to be run level)."""
    parsed = read_json(path, deps, TrialResults)
    if parsed.results is not None:
        return None
    # <run>/<task>/<trial>/results.json
    run_dir = _find_run_dir(os.path.dirname(os.path.dirname(os.path.dirname(path))), deps)
    run = _run_context(run_dir, deps, runs)
    return _row(parsed, path, run, options, fallback_dataset, os.path.dirname(path))


def run_file_rows(
    path: str, discovered: set[str], options: Options, fallback_dataset: str, deps: list[Dep]
) -> tuple[list[dict], list[Rejected]] | None:
    """Rows of a run-level results file, leaving out trials whose own file was ``discovered``.

    Each entry is its own trial: a bad one is rejected alone, as ``<path>#results[<index>]``.
    Returns None when the file is a trial-level file after all.
    """
    parsed = read_json(path, deps, TrialResults)
    if parsed.results is None:
        return None
    run_dir = os.path.dirname(path)
    name = os.path.basename(path)
    run = _run_context(run_dir, deps, {})
    for suffix in RUN_FILE_SUFFIXES:
        if name.endswith(suffix) and name != "results.json":
            run = msgspec.structs.replace(run, job=name[: -len(suffix)])
            break
    rows, rejected = [], []
    for index, entry in enumerate(parsed.results):
        where = f"{path}#results[{index}]"
        if entry.task_id is not None and entry.trial_name is not None:
            own_file = os.path.join(run_dir, entry.task_id, entry.trial_name, "results.json")
            if own_file in discovered:
                continue
        try:
            rows.append(_row(entry, where, run, options, fallback_dataset, None))
        except Reject as exc:
            rejected.append(Rejected(exc.path, exc.reason))
    return rows, rejected


def _row(
    entry: TrialResults, path: str, run: _Run, options: Options, fallback_dataset: str, trial_dir: str | None
) -> dict:
    if entry.task_id is None or entry.trial_name is None:
        raise Reject(path, "a TB1 trial needs task_id and trial_name")
    config = {"agent": {"name": run.agent, "model_name": run.model, "kwargs": run.kwargs}}
    try:
        turn_limit = harness_turn_limit(config)
        cap = apply_cap_rule(options.cap_rule, config, turn_limit)
    except ValueError as exc:
        raise Reject(path, str(exc)) from None
    reward = None if entry.is_resolved is None else float(entry.is_resolved)
    failure = entry.failure_mode if entry.failure_mode not in _QUIET_FAILURE_MODES else None
    tokens_reported = bool(entry.total_input_tokens or entry.total_output_tokens)
    n_turns = _episode_count(trial_dir) if trial_dir is not None else None
    notes: list[str] = []
    agent_seconds = None
    if entry.agent_started_at is not None and entry.agent_ended_at is not None:
        agent_start = loose_time(entry.agent_started_at, "agent_seconds", notes, "agent_started_at")
        agent_end = loose_time(entry.agent_ended_at, "agent_seconds", notes, "agent_ended_at")
        if agent_start is not None and agent_end is not None:
            agent_seconds = (agent_end - agent_start) / 1e6
    started_at = loose_time(entry.trial_started_at, "started_at", notes, "trial_started_at")
    row = {
        "dataset": options.dataset or run.dataset or fallback_dataset,
        "task": entry.task_id,
        "agent": run.agent,
        "model": run.model,
        "cap": cap,
        "turn_limit": turn_limit,
        "job": run.job,
        "trial": entry.trial_name,
        "attempt_hint": attempt_from_name(entry.trial_name),
        "reward": reward,
        "rewards": msgspec.json.encode({"reward": reward}).decode() if reward is not None else None,
        "passed": bool(entry.is_resolved),
        "status": "pass" if entry.is_resolved else "fail",
        "exception": failure,
        "n_turns": n_turns,
        "hit_limit": None if n_turns is None or turn_limit is None else n_turns >= turn_limit,
        "n_input_tokens": entry.total_input_tokens if tokens_reported else None,
        "n_output_tokens": entry.total_output_tokens if tokens_reported else None,
        "n_cache_tokens": None,
        "cost_usd": None,
        "started_at": started_at,
        "finished_at": loose_time(entry.trial_ended_at, "finished_at", notes, "trial_ended_at"),
        "agent_seconds": agent_seconds,
        "task_checksum": None,
        "source": path,
        "identity": identity(run.job, entry.trial_name, entry.task_id, started_at),
    }
    return check_row(row, notes)


def _find_run_dir(start: str, deps: list[Dep]) -> str:
    """The nearest of ``start`` and its parent holding run_metadata.json (else ``start``)."""
    for candidate in (start, os.path.dirname(start)):
        if probe(os.path.join(candidate, "run_metadata.json"), deps):
            return candidate
    return start


def _run_context(run_dir: str, deps: list[Dep], runs: dict[str, tuple[_Run, list[Dep]]]) -> _Run:
    """Agent, model, job and kwargs of a run; ``runs`` memoizes them with the files they came from."""
    if run_dir in runs:
        run, known_deps = runs[run_dir]
        deps.extend(known_deps)  # every trial depends on its run's files, for the cache
        return run
    run_deps: list[Dep] = []
    meta = _RunMetadata()
    meta_path = os.path.join(run_dir, "run_metadata.json")
    if probe(meta_path, run_deps):
        meta = read_json(meta_path, run_deps, _RunMetadata)
    agent, model = meta.agent_name, meta.model_name
    if agent is None or model is None:
        lock_path = os.path.join(run_dir, "tb.lock")
        if probe(lock_path, run_deps):
            try:
                lock_agent = read_json(lock_path, run_deps, _Lock).agent or _LockAgent()
            except Reject:
                lock_agent = _LockAgent()  # the lock only fills gaps; a bad one is not worth a rejection
            agent, model = agent or lock_agent.name, model or lock_agent.model_name
    if agent is None or model is None:
        folder_agent, folder_model = _names_from_folders(run_dir)
        agent, model = agent or folder_agent, model or folder_model
    run = _Run(agent, model, meta.run_id or os.path.basename(run_dir), meta.dataset_name, meta.agent_kwargs or {})
    runs[run_dir] = (run, run_deps)
    deps.extend(run_deps)
    return run


def _names_from_folders(run_dir: str) -> tuple[str | None, str | None]:
    """(agent, model) from a leaderboard submission folder ``<YYYYMMDD>_<agent>_<model>`` (the run or its parent)."""
    for folder in (os.path.basename(run_dir), os.path.basename(os.path.dirname(run_dir))):
        match = _SUBMISSION.match(folder)
        if match:
            return match.group("agent"), match.group("model")
    return None, None


def _episode_count(trial_dir: str) -> int | None:
    try:
        with os.scandir(os.path.join(trial_dir, "agent-logs")) as entries:
            count = sum(1 for entry in entries if entry.name.startswith("episode-") and entry.is_dir())
    except OSError:
        return None
    return count or None
