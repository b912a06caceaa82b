"""The fast path of Harbor trial directories: a results-only leaderboard at the parser's speed.

A leaderboard fetched with ``--results-only`` is 100,000 trial directories, each a ``result.json``
and nothing else; there the careful path of :mod:`depthlab.io.harbor` spends most of its time on
its own per-trial work (a row dict, the per-field checks of :func:`depthlab.io._rows.check_row`,
helper calls), not on the parser. This module reads such a trial with one typed decode into
:class:`FastResult` (made from :class:`depthlab.io.harbor_models.TrialResult`'s declaration, with tighter
bounds) and builds the row by column name, every column of :data:`depthlab.io._rows.ROW_SCHEMA`, with no
field notes (the loader stacks it as a tuple in that order).

**The rules stay in one place.** :class:`FastResult` is *at least as strict* as
:class:`depthlab.io.harbor.TrialResult` field by field (it is made from its fields, and adds bounds:
token counts that fit Int64, a cost the row accepts, turns that fit Int32), and a trial is taken
here only when the careful path would give the same row with no note and no rejection:

* the file opens, is a regular file within :data:`depthlab.io._files.MAX_FILE_BYTES`, is read
  whole in one call, and decodes as :class:`FastResult`;
* it names its task in ``task_name``, and has a ``verifier_result`` object or no reward file;
* its turns are in ``agent_result.metadata.n_episodes``, or it has no ``agent/`` directory;
* its reward is finite, its times fit in UTC, its agent phase does not end before it starts, its
  path is UTF-8, and its stated cap and turn limit read as the careful path reads them.

Any other trial is *declined* (:data:`DECLINED`) before anything of it is kept, and the caller
parses it with the careful path, which gives its notes or its rejection. ``tests/io/test_fastresults.py``
checks, on the real trials and thousands of damaged copies, that every trial taken here gives the
careful path's row, files remembered and counts.
"""

from __future__ import annotations

import math
import operator
import os
import stat
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Final

import msgspec

from depthlab.io import harbor
from depthlab.io._files import ABSENT, MAX_FILE_BYTES, POSIX, there
from depthlab.io._rows import MAX_COST_USD, NOTES, ROW_SCHEMA
from depthlab.io.cache import SKIP, Stamps
from depthlab.io.harbor_models import (
    NULL,
    AgentConfig,
    AgentInfo,
    TrialResult,
    Turns,
    VerifierResult,
    main_reward,
    reward_valid,
)
from depthlab.io.harbor_records import TrialResultRecord
from depthlab.io.harbor_versions import policy_json
from depthlab.io.harbor_writer import STATED_CAP_KEY
from depthlab.io.status import TURN_LIMIT_KEYS, harness_turn_limit, stated_cap, trial_status

_INT64_MAX: Final[int] = 2**63 - 1
_Tokens = Annotated[int, msgspec.Meta(ge=0, le=_INT64_MAX)]
_Cost = Annotated[float, msgspec.Meta(ge=0, le=MAX_COST_USD)]


class _FastMetadata(msgspec.Struct):
    n_episodes: Turns | None = None


class _FastAgentResult(msgspec.Struct):
    n_input_tokens: _Tokens | None = None
    n_cache_tokens: _Tokens | None = None
    n_output_tokens: _Tokens | None = None
    cost_usd: _Cost | None = None
    metadata: _FastMetadata | None = None


#: The types the fast path bounds tighter than the model does (a value out of bounds declines the trial).
BOUNDED: Final[dict[str, Any]] = {"agent_result": _FastAgentResult | None}


def _derived(declaration: type[msgspec.Struct], bounded: dict[str, Any], record: type[msgspec.Struct]) -> Any:
    """A flat struct of ``declaration``'s fields (names, encoded names, types, defaults), ``bounded`` replacing
    some types, in the order Harbor writes them (``record``'s: the decoder finds each key where it expects it).

    Flat rather than a subclass: reading a field of a Struct subclass was measured a fifth slower than of a flat
    Struct, and the fast path reads a dozen per trial."""
    written = [field.encode_name for field in msgspec.structs.fields(record)]
    fields = []
    order = sorted(
        msgspec.structs.fields(declaration),
        key=lambda field: written.index(field.encode_name) if field.encode_name in written else len(written),
    )
    for field in order:
        default: Any = (
            msgspec.field(default_factory=field.default_factory, name=field.encode_name)
            if field.default_factory is not msgspec.NODEFAULT
            else msgspec.field(default=field.default, name=field.encode_name)
        )
        fields.append((field.name, bounded.get(field.name, field.type), default))
    return msgspec.defstruct(f"Fast{declaration.__name__}", fields, module=__name__)


if TYPE_CHECKING:
    FastResult = TrialResult  # what the fast path is type-checked against: the declaration it is made from
else:
    #: Harbor's ``TrialResult`` bounded as the row's columns are (what it decodes needs no check): derived from
    #: :class:`depthlab.io.harbor_models.TrialResult`'s declaration field by field, :data:`BOUNDED` tighter.
    FastResult = _derived(TrialResult, BOUNDED, TrialResultRecord)

#: A row built by column name (a dict of every column of :data:`depthlab.io._rows.ROW_SCHEMA`, as the careful
#: path's rows are) as the tuple of :data:`FIELDS` the loader stacks.
_AS_TUPLE: Final = operator.itemgetter(*ROW_SCHEMA)


#: What :func:`trial_row` returns for a trial the careful path must read.
DECLINED: Final = None

#: The columns of a row tuple, in order: those of ROW_SCHEMA, declared there once (:data:`FastRow`'s fields).
FIELDS: Final[tuple[str, ...]] = tuple(ROW_SCHEMA)

_DECODER = msgspec.json.Decoder(FastResult)
_ENCODE = msgspec.json.encode
# O_NOFOLLOW: a link in place of result.json (an agent's, to a host file) is the careful path's to refuse
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW
_EPOCH = harbor.EPOCH
_MICROSECOND = harbor.MICROSECOND
_UTC = UTC
_EDGE_YEARS: Final[frozenset[int]] = frozenset({1, 9999})
# The kwargs the cap rules read: a trial without any of them has neither a stated cap nor a turn limit.
_CAP_KEYS: Final[frozenset[str]] = frozenset({STATED_CAP_KEY, *TURN_LIMIT_KEYS})
_NO_AGENT: Final = AgentConfig()
_NO_INFO: Final = AgentInfo()
_NO_RESULT: Final = _FastAgentResult()


_RULES: Final[tuple[str, ...]] = ("stated_cap", "turn_limit")


class _Decline(Exception):
    """The careful path must read this trial."""


def _micros(value: datetime | None) -> int | None:
    """:func:`depthlab.io.harbor.loose_time` for a decoded date; a date out of range in UTC declines."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=_UTC)
    elif value.year in _EDGE_YEARS:
        raise _Decline  # in UTC it may fall out of range (the careful path notes it)
    return (value - _EPOCH) // _MICROSECOND  # (an aware difference: the offset is applied exactly)


def _seconds(start: datetime, end: datetime) -> float:
    """The careful path's ``(micros(end) - micros(start)) / 1e6``, from one difference when both dates are aware.

    ``timedelta.total_seconds`` divides the same whole number of microseconds by a million, so the
    float is the same; a naive date (taken as UTC) or an edge year goes through :func:`_micros`.
    """
    if start.tzinfo is None or end.tzinfo is None or start.year in _EDGE_YEARS or end.year in _EDGE_YEARS:
        return (_micros(end) - _micros(start)) / 1e6  # type: ignore[operator]  # (neither date is None)
    return (end - start).total_seconds()


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


#: The files a trial taken here has remembered (as the careful path would): its result.json; its
#: agent/ folder probed and found absent when the result holds no turns; its reward files probed
#: and found absent when the result holds no verifier result (a trial that timed out or failed);
#: its lock.json, probed and found absent.
NAMES: Final[tuple[str, ...]] = ("result.json", "agent", "verifier/reward.txt", "verifier/reward.json", "lock.json")
_VERIFIER: Final[str] = NAMES[2].split("/")[0]  # the reward files' folder


def stamps(compact: bool = False) -> Stamps:
    """An empty set of the files of trials taken here (``compact``: see :class:`depthlab.io.cache.Stamps`)."""
    return Stamps(NAMES, compact=compact)


def trial_row(
    trial_dir: str, options: harbor.Options, fallback_dataset: str, found: Stamps, jobs: dict[str, str | None]
) -> tuple | None:
    """The row of one trial directory as a tuple of :data:`FIELDS`, or :data:`DECLINED` (nothing kept).

    ``found`` gets the trial's remembered files (:data:`NAMES`, as the careful path remembers them)
    only when the row is returned; ``jobs`` is a memo of job names by ``config.trials_dir`` (a job's
    trials share one) kept by the caller for one chunk. ``options.cap_rule`` must be a rule's name
    (a callable needs the whole config: the careful path).
    """
    base = trial_dir if trial_dir.endswith(os.sep) else trial_dir + os.sep
    path = base + NAMES[0]
    try:
        descriptor = os.open(path, _OPEN_FLAGS)
    except OSError:
        return DECLINED  # absent (walk instead), unreadable or a link: the careful path says which
    try:
        info = os.fstat(descriptor)
        size = info.st_size
        if not stat.S_ISREG(info.st_mode) or size > MAX_FILE_BYTES:
            return DECLINED
        raw = os.read(descriptor, size + 1)
    except OSError:
        return DECLINED
    finally:
        os.close(descriptor)
    if len(raw) != size:  # a short read, or a file still growing: the careful reader decides
        return DECLINED
    try:
        result = _DECODER.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        return DECLINED
    try:
        row, probed = _row(result, path, base, trial_dir, options, fallback_dataset, jobs)
    except (_Decline, OSError):
        return DECLINED
    found.units.append(trial_dir)
    sizes, times = found.sizes, found.times
    sizes[0].append(size)
    times[0].append(info.st_ctime_ns if POSIX else info.st_mtime_ns)
    # no turns in the result: the careful path probed agent/ (absent, as checked)
    sizes[1].append(ABSENT if row["n_turns"] is None else SKIP)
    times[1].append(0)
    for column in (2, 3):
        sizes[column].append(ABSENT if probed else SKIP)
        times[column].append(0)
    sizes[4].append(ABSENT)
    times[4].append(0)
    return _AS_TUPLE(row)


def _row(
    result: FastResult,
    path: str,
    base: str,
    trial_dir: str,
    options: harbor.Options,
    fallback_dataset: str,
    jobs: dict[str, str | None],
) -> tuple[dict[str, Any], bool]:
    """The row (every column by name), and whether the reward files were probed (found absent)."""
    if options.cap_rule not in _RULES:
        raise _Decline
    name = result.task_name
    if not name:
        raise _Decline  # task_id names it, or nothing does (a rejection, or a job's result.json)
    task = name.rsplit("/", 1)[-1]
    if not task.strip():
        raise _Decline
    recorded = result.verifier_result
    probed = not isinstance(recorded, VerifierResult)  # (null or absent)
    if isinstance(recorded, VerifierResult):
        rewards = recorded.rewards
    elif there(base + _VERIFIER):
        raise _Decline  # the careful path reads the reward files: taken here only when there are none
    else:
        rewards = None
    steps = result.step_results
    if steps is not NULL and bytes(steps) != b"null":
        raise _Decline  # a multi-step trial (its steps' files, sums and gates: the careful path)
    config = result.config
    agent_config = (config.agent if config is not None else None) or _NO_AGENT
    kwargs = agent_config.kwargs
    if kwargs and not _CAP_KEYS.isdisjoint(kwargs):
        extra = config.extra_instructions if config is not None else None
        kwargs_config = {"agent": {"kwargs": kwargs}, "extra_instructions": extra}
        try:
            turn_limit = harness_turn_limit(kwargs_config)
            cap = turn_limit if options.cap_rule == "turn_limit" else stated_cap(kwargs_config)
        except ValueError:
            raise _Decline from None
    else:
        turn_limit = cap = None
    reward = main_reward(rewards)
    if reward is not None and not math.isfinite(reward):
        raise _Decline  # a rejection
    exception_info = result.exception_info
    recorded_valid = result.reward_valid_
    if exception_info is None:
        exception = message = policy = None
        harbor_valid = bool(rewards) if recorded_valid is None else recorded_valid
        if result.reward_valid_ is False and rewards:  # Harbor's recorded verdict (a trial without one: valid)
            status = trial_status(reward, None, options.status_rule, reward_valid=False)
        else:
            status = trial_status(reward, None, options.status_rule)
    else:
        exception = exception_info.kind()
        message = exception_info.message()
        policy = policy_json(exception_info.policy())
        harbor_valid = reward_valid(recorded_valid, rewards, (exception_info,))
        valid = reward_valid(result.reward_valid_, rewards, (exception_info,)) if rewards else None
        status = trial_status(reward, exception, options.status_rule, reward_valid=valid)

    agent_result = result.agent_result or _NO_RESULT
    metadata = agent_result.metadata
    n_turns = metadata.n_episodes if metadata is not None else None
    if n_turns is None and there(base + NAMES[1]):
        raise _Decline  # the trajectory or episode dirs are read (results only: none, nothing to count)
    if there(base + NAMES[4]):
        raise _Decline  # its task digest and the cap it states are read
    agent_info = result.agent_info or _NO_INFO
    started_at = _micros(result.started_at)
    execution = result.agent_execution
    seconds = None
    if execution is not None and execution.started_at is not None and execution.finished_at is not None:
        seconds = _seconds(execution.started_at, execution.finished_at)
        if seconds < 0:
            raise _Decline  # a note
    trial = result.trial_name or os.path.basename(trial_dir)
    trials_dir = config.trials_dir if config is not None else None
    if trials_dir:
        job = jobs.get(trials_dir)
        if job is None:
            job = jobs[trials_dir] = harbor.job_name(trials_dir, trial_dir)
    else:
        job = harbor.job_name(None, trial_dir)
    dataset = options.dataset or result.source or fallback_dataset
    if not (path.isascii() or _utf8(path)) or not (dataset.isascii() or _utf8(dataset)):
        raise _Decline  # a file name that is not UTF-8 is shown escaped, with a note
    mismatch = harbor.cap_mismatch(kwargs, None, turn_limit) if kwargs and not _CAP_KEYS.isdisjoint(kwargs) else None
    row = {
        "dataset": dataset,
        "task": task,
        "agent": agent_info.name or agent_config.name or agent_config.import_path,
        "model": agent_config.model_name
        or (agent_info.model_info.label() if agent_info.model_info is not None else None),
        "cap": cap,
        "turn_limit": turn_limit,
        "job": job,
        "trial": trial,
        "reward": reward,
        "rewards": _ENCODE(rewards).decode() if rewards is not None else None,
        "passed": None if status == "invalid" else status == "pass",
        "status": status,
        "exception": exception,
        "exception_message": message,
        "n_turns": n_turns,
        "hit_limit": None if n_turns is None or turn_limit is None else n_turns >= turn_limit,
        "n_input_tokens": agent_result.n_input_tokens,
        "n_output_tokens": agent_result.n_output_tokens,
        "n_cache_tokens": agent_result.n_cache_tokens,
        "cost_usd": agent_result.cost_usd,
        "started_at": started_at,
        "finished_at": _micros(result.finished_at),
        "agent_seconds": seconds,
        "task_checksum": result.task_checksum,
        "cap_mismatch": mismatch,
        "harbor_reward_valid": harbor_valid,
        "exception_policy": policy,
        "source": path,
        "identity": harbor.identity(job, trial, task, started_at, result.id),
        "n_subagent_turns": None,  # no trajectory
        "n_steps": None,  # a single-step trial
        "steps_passed": None,
        "first_failed_step": None,
        "task_digest": None,  # no lock
        "attempt_hint": None,
        NOTES: None,
    }
    return row, probed
