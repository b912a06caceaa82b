"""Harbor (Terminal-Bench 2) trial directories and job directories.

A trial directory holds ``result.json`` (``TrialResult``) and ``config.json``; a job
directory holds a job-level ``result.json`` (``JobResult``, same file name, different
schema) and one sub-directory per trial. Only what the trials table needs is decoded:
msgspec skips every other key without building it.

Field by field (see ``depthlab.schema.TRIALS``):

* ``task``: ``task_name`` without an ``org/`` prefix; when absent, ``task_id.name`` or the
  last part of ``task_id.path`` (the three ``task_id`` shapes).
* ``agent``: ``agent_info.name``, else ``config.agent.name``, else ``config.agent.import_path``.
* ``model``: ``config.agent.model_name`` (the full ``provider/model`` string), else
  ``agent_info.model_info`` as ``provider/name`` (``model_info`` may be null).
* ``job``: the job name (last part of ``config.trials_dir``), else the parent directory name.
* ``reward``: ``verifier_result.rewards["reward"]``; a multi-key reward without that key
  gives the mean of its values (the whole dict is kept in ``rewards`` as JSON). When the
  result has no ``verifier_result`` key at all, ``verifier/reward.txt`` then
  ``verifier/reward.json`` are read (Harbor's own precedence).
* ``n_turns``: terminus-2's ``agent_result.metadata.n_episodes``; else the agent turns of
  ``agent/trajectory.json`` (ATIF or chat list, :mod:`depthlab.io.atif`); else the number of
  ``agent/episode-*`` directories; else null.
* ``turn_limit``: the first of ``max_turns``, ``max_episodes``, ``episodes``, ``max_steps`` in
  ``config.agent.kwargs``; else ``max_steps`` of ``agent/usage.json`` when that file exists and
  the trajectory had to be read anyway. ``hit_limit``: ``n_turns >= turn_limit``.
* ``started_at``/``finished_at``: trial times, naive ones taken as UTC; ``agent_seconds``: the
  ``agent_execution`` phase.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from depthlab.io import atif
from depthlab.io._errors import _Reject
from depthlab.io._files import Dep, decode_json, exists, read_bytes_if_exists, read_json, read_text
from depthlab.io.status import CapRule, _as_int, harness_turn_limit, stated_cap, trial_status


class _ModelInfo(msgspec.Struct):
    name: str | None = None
    provider: str | None = None


class _AgentInfo(msgspec.Struct):
    name: str | None = None
    version: str | None = None
    model_info: _ModelInfo | None = None


class _Terminus2Metadata(msgspec.Struct):
    n_episodes: int | None = None


class _AgentResult(msgspec.Struct):
    n_input_tokens: int | None = None
    n_cache_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None
    metadata: _Terminus2Metadata | None = None


class _VerifierResult(msgspec.Struct):
    rewards: dict[str, float] | None = None


class _ExceptionInfo(msgspec.Struct):
    exception_type: str | None = None


class _Phase(msgspec.Struct):
    started_at: datetime | None = None
    finished_at: datetime | None = None


class _AgentConfig(msgspec.Struct):
    name: str | None = None
    import_path: str | None = None
    model_name: str | None = None
    kwargs: dict[str, Any] | None = None


class _TrialConfig(msgspec.Struct):
    agent: _AgentConfig | None = None
    trials_dir: str | None = None
    extra_instructions: list[str] | None = None  # may state the cap (io.status.stated_cap)


class _TaskId(msgspec.Struct):
    path: str | None = None
    name: str | None = None


class TrialResult(msgspec.Struct):
    """The part of Harbor's ``TrialResult`` the trials table uses (unknown keys are skipped)."""

    task_name: str | None = None
    trial_name: str | None = None
    task_id: _TaskId | None = None
    source: str | None = None
    task_checksum: str | None = None
    config: _TrialConfig | None = None
    agent_info: _AgentInfo | None = None
    agent_result: _AgentResult | None = None
    verifier_result: _VerifierResult | msgspec.UnsetType | None = msgspec.UNSET
    exception_info: _ExceptionInfo | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    agent_execution: _Phase | None = None
    n_total_trials: int | None = None  # only in a job-level result.json


class _JobResult(msgspec.Struct):
    trial_results: list[TrialResult] | None = None


class _ConfigOnly(msgspec.Struct):
    config: dict[str, Any] | None = None


class _Usage(msgspec.Struct):
    max_steps: int | None = None


class Options(msgspec.Struct, frozen=True):
    """How rows are labelled; sent to worker processes, so it stays picklable."""

    dataset: str | None
    status_rule: str
    cap_rule: str | CapRule


#: Returned by :func:`trial_dir_row` for a directory without result.json (to be walked instead).
NOT_A_TRIAL_DIR: dict = {}


def trial_dir_row(trial_dir: str, options: Options, fallback_dataset: str, deps: list[Dep]) -> dict | None:
    """Parse one trial directory into a trials-table row.

    Returns None when it holds a job-level result without trials, and :data:`NOT_A_TRIAL_DIR`
    when it has no result.json at all.
    """
    path = os.path.join(trial_dir, "result.json")
    raw = read_bytes_if_exists(path, deps)
    if raw is None:
        return NOT_A_TRIAL_DIR
    result = decode_json(raw, path, TrialResult)
    if result.n_total_trials is not None and result.task_name is None and result.trial_name is None:
        return None  # a job directory whose trials are gone: nothing to load
    config = _raw_config(raw, path) if callable(options.cap_rule) else None
    return result_row(result, path, trial_dir, options, fallback_dataset, deps, config)


def job_embedded_rows(
    path: str, skip: set[str], options: Options, fallback_dataset: str, deps: list[Dep]
) -> tuple[list[dict], int]:
    """Rows of the ``trial_results`` list kept in an older job-level result.json.

    Trials whose directory was also found (``skip``, by trial name) are left to that directory,
    so no trial is counted twice. Returns the rows and how many entries were seen.
    """
    job = read_json(path, deps, _JobResult)
    rows = []
    seen = 0
    for index, entry in enumerate(job.trial_results or []):
        if entry.trial_name in skip:
            continue
        seen += 1
        where = f"{path}#trial_results[{index}]"
        config = None
        if callable(options.cap_rule):
            config = msgspec.to_builtins(entry.config) if entry.config is not None else {}
        rows.append(result_row(entry, where, None, options, fallback_dataset, deps, config))
    return rows, seen


def result_row(
    result: TrialResult,
    path: str,
    trial_dir: str | None,
    options: Options,
    fallback_dataset: str,
    deps: list[Dep],
    config: dict | None = None,
) -> dict:
    """Turn a decoded TrialResult into a row (see the module docstring for the rules)."""
    task = _task_name(result, path)
    agent_config = (result.config.agent if result.config else None) or _AgentConfig()
    extra = result.config.extra_instructions if result.config else None
    kwargs_config = {"agent": {"kwargs": agent_config.kwargs or {}}, "extra_instructions": extra}
    try:
        turn_limit = harness_turn_limit(kwargs_config)
        cap = _apply_cap_rule(options.cap_rule, config if config is not None else kwargs_config, turn_limit)
    except ValueError as exc:
        raise _Reject(path, str(exc)) from None

    rewards = _rewards(result, trial_dir, deps)
    reward = _main_reward(rewards)
    exception = result.exception_info.exception_type if result.exception_info else None
    if result.exception_info is not None and exception is None:
        exception = "UnknownException"
    status = trial_status(reward, exception, options.status_rule)

    agent_result = result.agent_result or _AgentResult()
    n_turns = agent_result.metadata.n_episodes if agent_result.metadata else None
    if n_turns is None and trial_dir is not None:
        agent_dir = os.path.join(trial_dir, "agent")
        n_turns = _agent_dir_turns(agent_dir, deps)
        if n_turns is not None and turn_limit is None:
            turn_limit = _usage_max_steps(agent_dir, deps)

    agent_info = result.agent_info or _AgentInfo()
    execution = result.agent_execution
    return {
        "dataset": options.dataset or result.source or fallback_dataset,
        "task": task,
        "agent": agent_info.name or agent_config.name or agent_config.import_path,
        "model": agent_config.model_name or _model_from_info(agent_info.model_info),
        "cap": cap,
        "turn_limit": turn_limit,
        "job": _job_name(result, trial_dir),
        "trial": result.trial_name or (os.path.basename(trial_dir) if trial_dir else None),
        "attempt_hint": None,
        "reward": reward,
        "rewards": msgspec.json.encode(rewards).decode() if rewards is not None else None,
        "passed": None if status == "invalid" else status == "pass",
        "status": status,
        "exception": exception,
        "n_turns": n_turns,
        "hit_limit": None if n_turns is None or turn_limit is None else n_turns >= turn_limit,
        "n_input_tokens": agent_result.n_input_tokens,
        "n_output_tokens": agent_result.n_output_tokens,
        "n_cache_tokens": agent_result.n_cache_tokens,
        "cost_usd": agent_result.cost_usd,
        "started_at": epoch_us(result.started_at),
        "finished_at": epoch_us(result.finished_at),
        "agent_seconds": _seconds(execution.started_at, execution.finished_at) if execution else None,
        "task_checksum": result.task_checksum,
        "source": path,
    }


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def epoch_us(value: datetime | None) -> int | None:
    """Microseconds since the Unix epoch (UTC): integers cross processes and into polars cheaply."""
    return None if value is None else (utc(value) - _EPOCH) // _MICROSECOND


def utc(value: datetime | None) -> datetime | None:
    """Naive timestamps (Harbor writes some with ``datetime.now()``) are taken as UTC."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _apply_cap_rule(rule: str | CapRule, config: dict, turn_limit: int | None) -> int | None:
    if rule == "stated_cap":
        return stated_cap(config)
    if rule == "turn_limit":
        return turn_limit
    return _as_int(rule(config), "the cap_rule's result")


def _task_name(result: TrialResult, path: str) -> str:
    name = result.task_name
    if not name and result.task_id is not None:
        name = result.task_id.name or (
            os.path.basename(result.task_id.path.rstrip("/")) if result.task_id.path else None
        )
    if not name:
        raise _Reject(path, "no task_name and no task_id to name the task")
    return name.rsplit("/", 1)[-1]


def _rewards(result: TrialResult, trial_dir: str | None, deps: list[Dep]) -> dict[str, float] | None:
    if result.verifier_result is not msgspec.UNSET:
        return result.verifier_result.rewards if result.verifier_result is not None else None
    if trial_dir is None:
        return None
    verifier = os.path.join(trial_dir, "verifier")
    text_path = os.path.join(verifier, "reward.txt")
    if exists(text_path, deps):
        text = read_text(text_path, deps).strip()
        try:
            return {"reward": float(text)}
        except ValueError:
            raise _Reject(text_path, f"reward is not a number: {text[:40]!r}") from None
    json_path = os.path.join(verifier, "reward.json")
    if exists(json_path, deps):
        return read_json(json_path, deps, dict[str, float])
    return None


def _main_reward(rewards: dict[str, float] | None) -> float | None:
    if not rewards:
        return None
    if "reward" in rewards:
        return rewards["reward"]
    return sum(rewards.values()) / len(rewards)


def _agent_dir_turns(agent_dir: str, deps: list[Dep]) -> int | None:
    turns = atif.trajectory_turns(agent_dir, deps)
    if turns is not None:
        return turns
    try:
        with os.scandir(agent_dir) as entries:
            episodes = sum(1 for entry in entries if entry.name.startswith("episode-") and entry.is_dir())
        deps.append((agent_dir, -1, os.stat(agent_dir).st_mtime_ns))
    except OSError:
        return None
    return episodes or None


def _usage_max_steps(agent_dir: str, deps: list[Dep]) -> int | None:
    path = os.path.join(agent_dir, "usage.json")
    try:
        data = read_bytes_if_exists(path, deps)
        return None if data is None else decode_json(data, path, _Usage).max_steps
    except _Reject:
        return None  # usage.json is an optional extra of some agents; a bad one costs only turn_limit


def _model_from_info(info: _ModelInfo | None) -> str | None:
    if info is None or not info.name:
        return None
    return f"{info.provider}/{info.name}" if info.provider else info.name


def _job_name(result: TrialResult, trial_dir: str | None) -> str | None:
    if result.config is not None and result.config.trials_dir:
        return os.path.basename(result.config.trials_dir.rstrip("/\\"))
    return os.path.basename(os.path.dirname(trial_dir)) if trial_dir else None


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return (utc(end) - utc(start)).total_seconds()


def _raw_config(raw: bytes, path: str) -> dict:
    return decode_json(raw, path, _ConfigOnly).config or {}
