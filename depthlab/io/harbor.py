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
  ``verifier/reward.json`` are read (Harbor's own precedence). When ``verifier_result`` is
  ``null`` (Harbor recorded no verifier result) the reward files are read too and, when one
  holds a reward, it wins: it is the verifier's own output, and null records no zero. The
  trial then carries a ``reward`` note saying so (a warning line of the load). A
  ``verifier_result`` holding rewards wins over the files, which are then not read.
* ``n_turns``: terminus-2's ``agent_result.metadata.n_episodes``; else the agent turns of
  ``agent/trajectory.json`` (ATIF v1.0-v1.8 or chat list, :mod:`depthlab.io.atif`); else the number
  of ``agent/episode-*`` directories; else null. A trajectory that cannot be read (an unknown ATIF
  version, broken JSON) costs only N: null, with a field note. ``n_subagent_turns``: the turns of
  the trajectory's embedded ``subagent_trajectories`` (ATIF-v1.7+), not counted in N.
* A multi-step trial (``step_results``, :mod:`depthlab.io.multistep`): N is the sum of its steps'
  turns; tokens, cost and agent seconds are summed over its steps; ``n_steps``, ``steps_passed``,
  ``first_failed_step`` describe them; its reward is Harbor's ``verifier_result`` (computed from the
  steps by the task's ``multi_step_reward_strategy`` when none is recorded) and its exception the
  first recorded (trial-level, then steps in order).
* ``exception_message``: ``exception_info.exception_message``.
* ``status``: :mod:`depthlab.io.status`'s rule, given Harbor's verdict on the reward
  (:func:`depthlab.io.harbor_models.reward_valid`: the recorded ``reward_valid``, else its error policy
  on every recorded exception); a reward read from the reward files, or computed from the steps, is
  judged by the exceptions' policies alone.
* Every struct decoded here is :mod:`depthlab.io.harbor_models`'s.
* ``task_digest``: ``task.digest`` of the trial's ``lock.json`` (:mod:`depthlab.io.harbor_lock`),
  when it has one. ``cap_mismatch``: the cap stated to the agent (``stated_cap``, or the cap the
  lock's extra instructions state) differs from the limit the harness enforced, or the two records
  of the stated cap differ; null when there is nothing to compare.
* ``turn_limit``: the first of ``max_turns``, ``max_episodes``, ``episodes``, ``max_steps`` in
  ``config.agent.kwargs``; else ``max_steps`` of ``agent/usage.json`` when that file exists and
  the trajectory had to be read anyway. ``hit_limit``: ``n_turns >= turn_limit``.
* ``started_at``/``finished_at``: trial times, naive ones taken as UTC; ``agent_seconds``: the
  ``agent_execution`` phase.
* ``harbor_reward_valid``: Harbor's ``reward_valid`` of the result as written (recorded, else its rule);
  ``exception_policy``: the policy of the row's exception (:mod:`depthlab.io.harbor_versions`, which also
  sets ``harbor_version`` and ``version_note`` once every row is in).
"""

from __future__ import annotations

import math
import os
import re
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, TypeVar, overload

import msgspec

from depthlab.io import atif, harbor_lock, harbor_versions, harbor_writer, multistep
from depthlab.io._errors import Reject, Rejected
from depthlab.io._files import Dep, decode_json, probe, read_bytes, read_bytes_if_exists, read_json, read_text
from depthlab.io._rows import check_row, note
from depthlab.io.harbor_models import (
    AgentConfig,
    AgentInfo,
    AgentResult,
    ConfigOnly,
    JobConfig,
    JobResult,
    JudgedTrialResult,
    LenientTrialResult,
    Metadata,
    Phase,
    StepResult,
    TrialConfig,
    TrialResult,
    TrialResultBase,
    Turns,
    TypedPhase,
    Usage,
    decode_steps,
    main_reward,
    rewards_count,
)
from depthlab.io.harbor_records import ExceptionInfoRecord, TrialResultRecord
from depthlab.io.harbor_writer import STATED_CAP_KEY
from depthlab.io.status import CapRule, apply_cap_rule, harness_turn_limit, trial_status

_Model = TypeVar("_Model", bound=msgspec.Struct)

__all__ = ["TrialResult", "Turns"]  # (their home is harbor_models; kept importable from here)


class Options(msgspec.Struct, frozen=True):
    """How rows are labelled; sent to worker processes, so it stays picklable."""

    dataset: str | None
    status_rule: str
    cap_rule: str | CapRule


def trial_dir_rows(
    trial_dir: str, options: Options, fallback_dataset: str, deps: list[Dep]
) -> tuple[list[dict], list[Rejected]] | None:
    """Rows (and rejections) of one trial directory; None when it has no result.json (walk it instead).

    A directory whose result.json is a job-level result (no trial folders beside it) gives the
    trials embedded in its ``trial_results`` list; with none, it is rejected (its trials are gone).
    """
    path = os.path.join(trial_dir, "result.json")
    raw = read_bytes_if_exists(path, deps)
    if raw is None:
        return None
    result = decode_result(raw, path)
    if result.task_name is None and result.trial_name is None and result.task_id is None:
        job = decode_json(raw, path, JobResult)
        if job.trial_results:
            return job_embedded_rows(path, set(), options, fallback_dataset, deps, job)
        if job.trial_results is not None or result.n_total_trials is not None:
            raise Reject(path, "a job's result.json without trials (no trial folders beside it, no trial_results)")
    config = _raw_config(raw, path) if callable(options.cap_rule) else None
    return [result_row(result, path, trial_dir, options, fallback_dataset, deps, config)], []


def job_embedded_rows(
    path: str,
    skip: set[str],
    options: Options,
    fallback_dataset: str,
    deps: list[Dep],
    job: JobResult | None = None,
) -> tuple[list[dict], list[Rejected]]:
    """Rows of the ``trial_results`` list kept in an older job-level result.json, and its bad entries.

    Trials whose directory was also found (``skip``, by trial name) are left to that directory,
    so no trial is counted twice. Each entry is its own trial: a bad one is rejected alone, as
    ``<path>#trial_results[<index>]``.
    """
    if job is None:
        job = read_json(path, deps, JobResult)
    rows, rejected = [], []
    for index, raw in enumerate(job.trial_results or []):
        where = f"{path}#trial_results[{index}]"
        try:
            entry = decode_result(bytes(raw), where)
            if entry.trial_name in skip:
                continue
            config = None
            if callable(options.cap_rule):
                config = _raw_config(bytes(raw), where)
            rows.append(result_row(entry, where, None, options, fallback_dataset, deps, config))
        except Reject as exc:
            rejected.append(Rejected(exc.path, exc.reason))
    return rows, rejected


def decode_result(raw: bytes | bytearray, path: str) -> TrialResult | LenientTrialResult:
    """One typed pass (the common case); a file whose describing parts do not fit is decoded leniently."""
    try:
        return msgspec.json.decode(raw, type=TrialResult)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        return decode_json(raw, path, LenientTrialResult)  # the same reasons as ever for what cannot be read at all


def result_row(
    result: TrialResult | LenientTrialResult,
    path: str,
    trial_dir: str | None,
    options: Options,
    fallback_dataset: str,
    deps: list[Dep],
    config: dict | None = None,
) -> dict:
    """Turn a decoded TrialResult into a row (see the module docstring for the rules)."""
    task = _task_name(result, path)
    agent_config = (result.config.agent if result.config else None) or AgentConfig()
    extra = result.config.extra_instructions if result.config else None
    kwargs_config = {"agent": {"kwargs": agent_config.kwargs or {}}, "extra_instructions": extra}
    try:
        turn_limit = harness_turn_limit(kwargs_config)
        cap = apply_cap_rule(options.cap_rule, config if config is not None else kwargs_config, turn_limit)
    except ValueError as exc:
        raise Reject(path, str(exc)) from None

    notes: list[str] = []
    steps = _trial_steps(result, trial_dir, options, deps, path)
    rewards = _rewards(result, trial_dir, deps, notes, steps)
    reward = main_reward(rewards)
    info = result.exception_info
    exception = info.kind() if info is not None else None
    message = info.message() if info is not None else None
    if info is None and steps is not None and steps.exception is not None:
        exception, message = steps.exception, steps.exception_message  # Harbor's recorded_exceptions order
    valid = _reward_valid(result, rewards, steps)
    status = trial_status(reward, exception, options.status_rule, reward_valid=valid)
    step_results = steps.results if steps is not None else ()
    shown_exception = harbor_versions.first_exception(result, step_results)

    agent_result = _part(result.agent_result, AgentResult, "agent_result", notes)
    n_turns = _part(agent_result.metadata, Metadata, "agent_result.metadata", notes).n_episodes
    n_subagent_turns = None
    if steps is not None:
        notes.extend(steps.notes)
        n_turns, n_subagent_turns = steps.n_turns, steps.n_subagent_turns
    elif n_turns is None and trial_dir is not None:
        agent_dir = os.path.join(trial_dir, "agent")
        try:  # a trajectory that cannot be read costs N, with a note, never the trial
            n_turns, n_subagent_turns = atif.agent_dir_counts(agent_dir, deps)
        except Reject as exc:
            note(notes, "n_turns", f"{exc.reason} ({exc.path})")
            n_turns = n_subagent_turns = None
        if n_turns is not None and turn_limit is None:
            turn_limit = _usage_max_steps(agent_dir, deps)
    lock = harbor_lock.read_lock(trial_dir, deps, notes) if trial_dir is not None else None
    lock_cap = harbor_lock.lock_stated_cap(lock)
    if cap is None and lock_cap is not None and options.cap_rule == "stated_cap":
        cap = lock_cap  # the cap the lock's extra instructions state (Harbor's record of what the agent was told)

    agent_info = _part(result.agent_info, AgentInfo, "agent_info", notes)
    execution = _part(result.agent_execution, Phase, "agent_execution", notes)
    trial = result.trial_name or (os.path.basename(trial_dir) if trial_dir else None)
    job = job_name(result.job_trials_dir(), trial_dir)
    started_at = loose_time(result.started_at, "started_at", notes)
    row = {
        "dataset": options.dataset or result.source or fallback_dataset,
        "task": task,
        "agent": agent_info.name or agent_config.name or agent_config.import_path,
        "model": agent_config.model_name or (agent_info.model_info.label() if agent_info.model_info else None),
        "cap": cap,
        "turn_limit": turn_limit,
        "job": job,
        "trial": trial,
        "attempt_hint": None,
        "reward": reward,
        "rewards": msgspec.json.encode(rewards).decode() if rewards is not None else None,
        "passed": None if status == "invalid" else status == "pass",
        "status": status,
        "exception": exception,
        "exception_message": message,
        "n_turns": n_turns,
        "n_subagent_turns": n_subagent_turns,
        "n_steps": steps.n_steps if steps is not None else None,
        "steps_passed": steps.steps_passed if steps is not None else None,
        "first_failed_step": steps.first_failed_step if steps is not None else None,
        "hit_limit": None if n_turns is None or turn_limit is None else n_turns >= turn_limit,
        "n_input_tokens": _summed(agent_result.n_input_tokens, steps, "n_input_tokens"),
        "n_output_tokens": _summed(agent_result.n_output_tokens, steps, "n_output_tokens"),
        "n_cache_tokens": _summed(agent_result.n_cache_tokens, steps, "n_cache_tokens"),
        "cost_usd": _summed(agent_result.cost_usd, steps, "cost_usd"),
        "started_at": started_at,
        "finished_at": loose_time(result.finished_at, "finished_at", notes),
        "agent_seconds": _summed(_seconds(execution, notes), steps, "agent_seconds"),
        "task_checksum": result.task_checksum,
        "task_digest": lock.task.digest if lock is not None and lock.task is not None else None,
        "cap_mismatch": cap_mismatch(agent_config.kwargs or {}, lock_cap, turn_limit),
        "harbor_reward_valid": result.reward_valid(step_results),
        "exception_policy": harbor_versions.policy_json(shown_exception.policy() if shown_exception else None),
        "source": path,
        "identity": identity(job, trial, task, started_at, result.id),
    }
    return check_row(row, notes)


#: The epoch and one microsecond: a date's column value is ``(date - EPOCH) // MICROSECOND``.
EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND: Final = timedelta(microseconds=1)


@overload
def utc(value: datetime) -> datetime: ...
@overload
def utc(value: None) -> None: ...
def utc(value: datetime | None) -> datetime | None:
    """Naive timestamps (Harbor writes some with ``datetime.now()``) are taken as UTC."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def identity(
    job: str | None, trial: str | None, task: str | None, started_at: int | None, trial_id: str | None = None
) -> str | None:
    """What makes two rows the same trial: the log's trial id (when it has one), job, trial name, task and start.

    A copy of a trial agrees on all of them; two trials given the same id by a seeded generator
    still differ in name or start. Without a trial name there is nothing to match on (None).
    """
    if trial is None:
        return None
    return f"{trial_id}\x1f{job}\x1f{trial}\x1f{task}\x1f{started_at}"  # str() of each, cheaply


def _task_name(result: TrialResultBase, path: str) -> str:
    name = result.task_name
    if not name and result.task_id is not None:
        name = result.task_id.name or (
            os.path.basename(result.task_id.path.rstrip("/")) if result.task_id.path else None
        )
    if not name:
        raise Reject(path, "no task_name and no task_id to name the task")
    task = name.rsplit("/", 1)[-1]
    if not task.strip():
        raise Reject(path, f"task name {name!r} names no task")
    return task


def _rewards(
    result: TrialResultBase,
    trial_dir: str | None,
    deps: list[Dep],
    notes: list[str],
    steps: multistep.TrialSteps | None = None,
) -> dict[str, float] | None:
    recorded = result.verifier_result
    if recorded is not msgspec.UNSET and recorded is not None:
        return recorded.rewards  # result.json's record wins; the reward files are not read
    if steps is not None:  # a multi-step trial: Harbor's reward over its steps, computed as Harbor does
        computed = steps.rewards()
        if computed is not None:
            strategy = steps.strategy or "mean, Harbor's default"
            note(notes, "reward", f"no trial verifier_result: computed from step_results ({strategy})")
        return computed
    if trial_dir is None:
        return None
    try:
        found = _reward_files(trial_dir, deps)
    except Reject as refused:
        if recorded is None and result.exception_info is not None:
            # the verifier's output its engine already refused (both engines' VerifierOutputParseError on a
            # reward of nan): the recorded exception is the trial's outcome, the file is not read again
            note(notes, "reward", f"{refused.reason} ({result.exception_info.kind()} recorded): no reward")
            return None
        raise
    if found is None:
        return None
    where, rewards = found
    if recorded is None:  # Harbor recorded no verifier result, yet the verifier wrote a reward
        shown = main_reward(rewards)
        note(notes, "reward", f'"verifier_result" is null but {where} holds {shown:g}: the reward file is used')
    return rewards


def _reward_files(trial_dir: str, deps: list[Dep]) -> tuple[str, dict[str, float]] | None:
    verifier = os.path.join(trial_dir, "verifier")
    text_path = os.path.join(verifier, "reward.txt")
    if probe(text_path, deps):
        return "verifier/reward.txt", {"reward": parse_reward(read_text(text_path, deps), text_path)}
    json_path = os.path.join(verifier, "reward.json")
    if probe(json_path, deps):
        return "verifier/reward.json", read_json(json_path, deps, dict[str, float])
    return None


_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


def parse_reward(text: str, path: str) -> float:
    """A reward file's number: a plain decimal and finite (not ``nan``, ``inf``, ``1e999``, ``1_0``).

    Examples
    --------
    >>> parse_reward(" 1.0\\n", "reward.txt")
    1.0
    """
    stripped = text.strip()
    if not _DECIMAL.fullmatch(stripped):
        raise Reject(path, f"reward is not a number: {stripped[:40]!r}")
    value = float(stripped)
    if not math.isfinite(value):
        raise Reject(path, f"reward is not finite: {stripped[:40]!r}")
    return value


def _trial_steps(
    result: TrialResultBase, trial_dir: str | None, options: Options, deps: list[Dep], path: str
) -> multistep.TrialSteps | None:
    """A multi-step trial's steps read (None for a single-step trial)."""
    if not result.multi_step():
        return None
    decoded = multistep.decode_steps(result.step_results, path)
    if not decoded:
        return None
    task_dir = result.task_dir(trial_dir)  # task_id.path as Harbor meant it, never against this process's cwd
    return multistep.read_trial_steps(decoded, trial_dir, task_dir, options.status_rule, deps, path)


def _reward_valid(
    result: TrialResultBase, rewards: dict[str, float] | None, steps: multistep.TrialSteps | None
) -> bool | None:
    """Harbor's verdict on the trial's reward (None without one). A reward depthlab took from the reward files
    or computed from the steps, where Harbor recorded none, is judged by the exceptions' policies alone."""
    if not rewards:
        return None
    if result.exception_info is None and steps is None and result.reward_valid_ is None:
        return True  # nothing recorded against it (the common case, decided without a list)
    results = steps.results if steps is not None else ()
    if result.rewards():
        return result.reward_valid(results)
    return result.exceptions_allow_reward(results)


def _summed(value: Any, steps: multistep.TrialSteps | None, field: str) -> Any:
    """A single-step trial's own value; a multi-step trial's, summed over its steps, when it has none of its own."""
    if steps is None or value is not None:
        return value
    return getattr(steps, field)


def cap_mismatch(kwargs: dict, lock_cap: int | None, turn_limit: int | None) -> bool | None:
    """Whether the stated cap (kwargs' ``stated_cap``, the lock's) disagrees with the enforced limit or itself."""
    stated = kwargs.get(STATED_CAP_KEY)
    stated = stated if isinstance(stated, int) and not isinstance(stated, bool) else None
    records = [cap for cap in (stated, lock_cap) if cap is not None]
    if not records:
        return None
    if len(set(records)) > 1:
        return True
    return None if turn_limit is None else records[0] != turn_limit


def _usage_max_steps(agent_dir: str, deps: list[Dep]) -> int | None:
    path = os.path.join(agent_dir, "usage.json")
    try:
        data = read_bytes_if_exists(path, deps)
        return None if data is None else decode_json(data, path, Usage).max_steps
    except Reject:
        return None  # usage.json is an optional extra of some agents; a bad one costs only turn_limit


def job_name(trials_dir: str | None, trial_dir: str | None) -> str | None:
    """The job a trial belongs to: the last part of its config's ``trials_dir``, else its folder's parent."""
    if trials_dir:
        return os.path.basename(trials_dir.rstrip("/\\"))
    return os.path.basename(os.path.dirname(trial_dir)) if trial_dir else None


def _seconds(phase: Phase | TypedPhase | None, notes: list[str]) -> float | None:
    if phase is None or phase.started_at is None or phase.finished_at is None:
        return None
    start = loose_time(phase.started_at, "agent_seconds", notes, "agent_execution.started_at")
    end = loose_time(phase.finished_at, "agent_seconds", notes, "agent_execution.finished_at")
    if start is None or end is None:
        return None
    return (end - start) / 1e6


def loose_time(value: Any, field: str, notes: list[str], what: str | None = None) -> int | None:
    """Microseconds since the epoch (UTC) of a JSON date, or None with a note on ``field`` when it cannot be read.

    Examples
    --------
    >>> notes = []
    >>> loose_time("2026-01-01T00:00:00Z", "started_at", notes), loose_time("99999-01-01", "started_at", notes)
    (1767225600000000, None)
    >>> notes
    ["started_at: not a date: '99999-01-01'"]
    """
    if value is None:
        return None
    what = what or field
    prefix = "" if what == field else f"{what} "
    if not isinstance(value, datetime):
        try:
            value = msgspec.convert(value, datetime)
        except msgspec.ValidationError:
            note(notes, field, f"{prefix}not a date: {_short(value)}")
            return None
    try:
        return (utc(value) - EPOCH) // MICROSECOND
    except OverflowError:
        note(notes, field, f"{prefix}{value.isoformat()} is out of range in UTC")
        return None


def _part(value: Any, type_: type, what: str, notes: list[str]) -> Any:
    """A descriptive object of the result (agent_result, agent_info, ...) decoded on its own; a bad one is noted."""
    if not isinstance(value, msgspec.Raw):  # decoded in the typed pass already
        return type_() if value is None else value
    try:
        decoded = msgspec.json.decode(value, type=type_ | None)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        note(notes, what, f"unexpected shape ({exc}); its fields are null")
        return type_()
    return type_() if decoded is None else decoded


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _raw_config(raw: bytes | bytearray, path: str) -> dict:
    return decode_json(raw, path, ConfigOnly).config or {}


def read_json_object(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The JSON object in one Harbor file read whole (a job's ``config.json`` or ``result.json``, a
    trial's ``result.json`` to be rewritten), as the loaders read: a regular file only, never through
    a link, never blocking on a FIFO; None when absent, unreadable, not JSON or not an object.

    The one raw read of a Harbor file outside the loaders (the engines' resume and verdicts).

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> _ = open(os.path.join(folder, "result.json"), "w").write('{"finished_at": "2026-01-01T00:00:00Z"}')
    >>> read_json_object(os.path.join(folder, "result.json"))
    {'finished_at': '2026-01-01T00:00:00Z'}
    >>> os.mkfifo(os.path.join(folder, "fifo.json"))
    >>> read_json_object(os.path.join(folder, "fifo.json")) is None
    True
    """
    try:
        value = read_json(os.fspath(path), [])
    except Reject:
        return None
    return value if isinstance(value, dict) else None


class TrialResultFile(msgspec.Struct, frozen=True):
    """A trial's result.json read once for the engines' verdicts: where it is (``path``), the object as written
    (``raw``, what a verdict rewrites with one field changed), the model of it (``result``) and its decoded
    ``steps``."""

    path: str
    raw: dict[str, Any]
    result: JudgedTrialResult
    steps: list[StepResult]


def read_trial_result(path: str | os.PathLike[str]) -> TrialResultFile | str:
    """A trial's result.json decoded with the model (as :func:`read_json_object` reads the file), or the one-line
    reason it cannot be (absent, a link or a FIFO, not JSON, not Harbor's shape).

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "result.json")
    >>> _ = open(path, "w").write('{"verifier_result": {"rewards": {"reward": 1.0}}, "step_results": null}')
    >>> read_trial_result(path).result.graded()
    True
    >>> _ = open(path, "w").write('{"verifier_result": {"rewards": {"reward": "high"}}}')
    >>> print(read_trial_result(path)[len(folder) + 1 :])
    result.json: not Harbor's TrialResult: Expected `float`, got `str` - at `$.verifier_result.rewards[...]`
    """
    where = os.fspath(path)
    try:
        data = read_bytes(where, [])
        raw = decode_json(data, where)
        if not isinstance(raw, dict):
            return f"{where}: not a JSON object"
        result = msgspec.json.decode(data, type=JudgedTrialResult)
        steps = decode_steps(result.step_results) if result.multi_step() else []
    except Reject as exc:
        return f"{exc.path}: {exc.reason}"
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as exc:
        return f"{where}: not Harbor's TrialResult: {exc}"
    return TrialResultFile(where, raw, result, steps)


def record_exception(
    read: TrialResultFile,
    exception: ExceptionInfoRecord,
    *,
    drop_rewards: bool = False,
    keep_original: str | os.PathLike[str] | None = None,
) -> bool:
    """Rewrite a trial's result.json with ``exception`` as its ``exception_info``, through the record, and
    ``reward_valid`` recomputed by Harbor's rule (the one rewrite of a Harbor result: the engines' verdicts and
    the checks' disk stop).

    ``read`` is the file as :func:`read_trial_result` read it; ``drop_rewards`` records no verifier result
    (the verifier never ran); ``keep_original`` is where Harbor's own result is kept, unchanged, first. A
    multi-step trial's steps keep their own exceptions (they count in ``reward_valid`` all the same). Returns the
    ``reward_valid`` written. A file of an older Harbor, not the record's full shape, keeps every key of its own,
    the same two (three) changed.

    Examples
    --------
    >>> import os, tempfile
    >>> from depthlab.io import harbor_writer
    >>> path = os.path.join(tempfile.mkdtemp(), "result.json")
    >>> from depthlab.io.harbor_records import TrialResultRecord as Result, LocalTaskIdRecord, AgentInfoRecord
    >>> from depthlab.io.harbor_records import TaskConfigRecord, TrialConfigRecord, VerifierResultRecord
    >>> config = TrialConfigRecord(task=TaskConfigRecord(path="t"), trial_name="t__a")
    >>> passed = VerifierResultRecord(rewards={"reward": 1.0})
    >>> harbor_writer.write_json(path, Result(id="1", task_name="t", trial_name="t__a", trial_uri="file:///t__a",
    ...     task_id=LocalTaskIdRecord(path="t"), task_checksum="0", config=config,
    ...     agent_info=AgentInfoRecord(name="oracle", version="1"), verifier_result=passed, reward_valid=True))
    >>> timeout = harbor_writer.exception_info("VerifierTimeoutError", "slow", "", "2026-01-01T00:00:00")
    >>> record_exception(read_trial_result(path), timeout)
    False
    >>> read_trial_result(path).result.reward_valid(), read_trial_result(path).result.exception_info.kind()
    (False, 'VerifierTimeoutError')
    """
    if keep_original is not None:
        harbor_writer.write_json(Path(keep_original), read.raw)
    try:
        record = msgspec.convert(read.raw, TrialResultRecord)
    except msgspec.ValidationError:
        record = None  # an older Harbor's shape (no policy, fields of its own): its object, two fields changed
    if record is None:
        rewards = None if drop_rewards else read.result.rewards()
        steps = [step.exception_info.policy() for step in read.steps if step.exception_info is not None]
        changed = {"exception_info": harbor_writer.as_object(exception), "reward_valid": False}
        if drop_rewards:
            changed["verifier_result"] = None
        changed["reward_valid"] = rewards_count(rewards, [exception.policy, *steps])
        harbor_writer.write_json(Path(read.path), {**read.raw, **changed})
        return bool(changed["reward_valid"])
    record.exception_info = exception
    if drop_rewards:
        record.verifier_result = None
    record.reward_valid = record.harbor_reward_valid()
    harbor_writer.write_json(Path(read.path), record)
    return record.reward_valid


def read_job_config(path: str | os.PathLike[str]) -> JobConfig | str | None:
    """A job's config.json through the model (:class:`~depthlab.io.harbor_models.JobConfig`), read as
    :func:`read_json_object` reads; None when absent or not a JSON object, the one-line reason when it is
    not Harbor's shape.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "config.json")
    >>> _ = open(path, "w").write('{"n_attempts": 2, "agents": [{"name": "oracle"}], "datasets": []}')
    >>> read_job_config(path).n_trials()
    2
    """
    return read_model(path, JobConfig)


def read_trial_config(path: str | os.PathLike[str]) -> TrialConfig | str | None:
    """A trial's config.json decoded with the model (as :func:`read_model` reads it)."""
    return read_model(path, TrialConfig)


def read_job_result(path: str | os.PathLike[str]) -> JobResult | str | None:
    """A job's result.json through the model (:class:`~depthlab.io.harbor_models.JobResult`), read as
    :func:`read_job_config` reads.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "result.json")
    >>> _ = open(path, "w").write('{"id": "j", "finished_at": "2026-01-01T00:00:00"}')
    >>> read_job_result(path).finished_at
    '2026-01-01T00:00:00'
    """
    return read_model(path, JobResult)


def read_model(path: str | os.PathLike[str], type_: type[_Model]) -> _Model | str | None:
    """A JSON file of a job folder decoded as the struct ``type_``, read as :func:`read_json_object` reads;
    None when absent or not a JSON object, the one-line reason when it is not ``type_``'s shape."""
    where = os.fspath(path)
    try:
        data = read_bytes(where, [])
        if not isinstance(decode_json(data, where), dict):
            return None
        return msgspec.json.decode(data, type=type_)
    except Reject:
        return None
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as exc:
        return f"{where}: not Harbor's {type_.__name__}: {exc}"


def read_text_head(path: str | os.PathLike[str], limit: int = 1 << 20) -> str:
    """At most ``limit`` bytes of one Harbor text file (a verifier's output, ``trial.log``) as text, read as
    :func:`read_json_object` reads: a regular file only, never through a link or blocking on a FIFO; '' otherwise.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> _ = open(os.path.join(folder, "out.txt"), "w").write("passed")
    >>> os.symlink("/etc/hostname", os.path.join(folder, "link.txt"))
    >>> read_text_head(os.path.join(folder, "out.txt")), read_text_head(os.path.join(folder, "link.txt"))
    ('passed', '')
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return ""
        return os.read(descriptor, limit).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(descriptor)
