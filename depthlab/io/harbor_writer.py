"""The Harbor format, written in one place: job and trial configs, results, ATIF trajectories.

Every depthlab writer of Harbor files (the Docker runner, the simulator and ``depthlab plan
--harbor-configs``) builds its files here, so the format is stated once and what
:func:`depthlab.load_trials` reads back is what was written. The builders return the typed records
of :mod:`depthlab.io.harbor_records` (Harbor 0.26's models in their full shape, each field declared
once there), read back by attribute; :func:`encode` makes them compact JSON (msgspec: the
simulator's thousands of trials), :func:`write_json` writes one indented as Harbor does, atomically,
for the runner, and :func:`as_object` gives one as a plain object.

Layout of a job (what Harbor writes, and what the loaders read)::

    <jobs_dir>/<job_name>/config.json      JobConfig        (job_config)
    <jobs_dir>/<job_name>/result.json      JobResult        (job_result)
    <jobs_dir>/<job_name>/lock.json        JobLock          (depthlab.io.harbor_lock.job_lock: the runner's jobs)
    <jobs_dir>/<job_name>/<trial_name>/    one trial        (trial_name)
        config.json                        TrialConfig      (trial_config)
        result.json                        TrialResult      (trial_result), written last
        agent/trajectory.json              ATIF trajectory  (trajectory)
        verifier/reward.txt | reward.json  the rewards      (reward_file)
        exception.txt                      the traceback of exception_info
        steps/<step>/agent/, verifier/     a multi-step trial's steps (step_result), instead of
                                           agent/ and verifier/ (Harbor moves them there)

A multi-step trial's ``result.json`` has ``step_results`` (one :func:`step_result` per step that
ran: a step whose reward misses its ``min_reward`` stops the trial), no ``agent_result`` and no
``agent_execution``; its ``verifier_result`` is :func:`multi_step_rewards` of its steps.

Harbor's own pydantic models accept every file written here (the test suite checks them with
the pinned Harbor package). ``harbor view`` needs that: it lists a job's agents, models and
sources from its ``config.json`` parsed as Harbor's ``JobConfig`` (``agents[].name``,
``agents[].model_name`` split at the first slash, ``datasets[].path``) and shows none of them
when the config does not validate (a dataset with both a local ``path`` and a registry ``name``
did not); a trial's agent and model come from its ``result.json`` (``agent_info.name``,
``agent_info.model_info``).

Cap keys: a capped trial records the cap it stated to the agent as
``config.agent.kwargs[STATED_CAP_KEY]`` and the limit the harness enforced as
``config.agent.kwargs[TURN_LIMIT_KEY]`` (Harbor's terminus-2 key); the loaders' default cap
rule reads :data:`STATED_CAP_KEY`.
"""

from __future__ import annotations

import json
import os
import secrets
import string
import urllib.parse
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypedDict

import msgspec

from depthlab import _atomic
from depthlab.io.harbor_models import (
    DEFAULT_REWARD_STRATEGY,
    REWARD_STRATEGIES,
    TrialResult,
    VerifierResult,
    decode_steps,
    multi_step_rewards,
    policy_for,
)
from depthlab.io.harbor_records import (
    AgentConfigRecord,
    AgentContextRecord,
    AgentDatasetStatsRecord,
    AgentInfoRecord,
    AtifAgentRecord,
    AtifFinalMetricsRecord,
    AtifMetricsRecord,
    AtifStepRecord,
    DatasetConfigRecord,
    EnvironmentConfigRecord,
    ExceptionInfoRecord,
    JobConfigRecord,
    JobResultRecord,
    JobStatsRecord,
    LocalTaskIdRecord,
    ModelInfoRecord,
    StepResultRecord,
    TaskConfigRecord,
    TimingInfoRecord,
    TrajectoryRecord,
    TrialConfigRecord,
    TrialResultRecord,
    VerifierConfigRecord,
    VerifierResultRecord,
)

# The reward strategies' facts and rule live in harbor_models; the runner and the simulator reach them here too.
__all__ = ["DEFAULT_REWARD_STRATEGY", "REWARD_STRATEGIES", "multi_step_rewards"]

#: ``config.agent.kwargs`` key of the turn cap stated to the agent (read by the default cap rule).
STATED_CAP_KEY: Final[str] = "stated_cap"
#: ``config.agent.kwargs`` key of the turn limit the harness enforced (terminus-2's ``max_turns``).
TURN_LIMIT_KEY: Final[str] = "max_turns"
#: The ATIF version every depthlab trajectory is written in.
ATIF_VERSION: Final[str] = "ATIF-v1.6"
#: Characters of the random suffix of a trial name (Harbor: ``<task>__<7 characters>``).
TRIAL_SUFFIX_ALPHABET: Final[str] = string.ascii_letters + string.digits
TRIAL_SUFFIX_LENGTH: Final[int] = 7
_TASK_PREFIX_LENGTH: Final[int] = 32
#: Encodes records and plain values alike (a path or another object msgspec does not know as its str).
_ENCODER: Final = msgspec.json.Encoder(enc_hook=str)
#: A record's optional field left out of the file (as Harbor's ``exclude_none`` leaves a None out).
_LEFT_OUT: Any = msgspec.UNSET


# ----------------------------------------------------------------------------------------
# names and times


def trial_name(task_name: str, suffix: str | None = None) -> str:
    """A Harbor trial name: ``<task[:32]>__<7 characters>`` (``suffix`` default: random).

    The task's ``org/`` prefix is dropped and trailing ``_``/``-`` are stripped from the cut
    name, as Harbor does.

    Examples
    --------
    >>> trial_name("terminal-bench/hello-world", "abcDEF1")
    'hello-world__abcDEF1'
    >>> len(trial_name("hello").split("__")[1])
    7
    """
    short = task_name.rsplit("/", 1)[-1][:_TASK_PREFIX_LENGTH].rstrip("_-")
    if suffix is None:
        suffix = "".join(secrets.choice(TRIAL_SUFFIX_ALPHABET) for _ in range(TRIAL_SUFFIX_LENGTH))
    return f"{short}__{suffix}"


def trial_suffix(draws: Sequence[int]) -> str:
    """The trial-name suffix for seven integer draws (a seeded generator's, for reproducible names).

    Examples
    --------
    >>> trial_suffix([0, 1, 2, 25, 26, 51, 61])
    'abczAZ9'
    """
    return "".join(TRIAL_SUFFIX_ALPHABET[int(draw) % len(TRIAL_SUFFIX_ALPHABET)] for draw in draws)


def iso_time(moment: datetime) -> str:
    """An aware or naive time as Harbor's trial-level ISO string with a ``Z`` suffix (taken as UTC).

    Examples
    --------
    >>> iso_time(datetime(2026, 1, 2, 3, 4, 5, 6))
    '2026-01-02T03:04:05.000006Z'
    """
    if moment.tzinfo is UTC:  # the common case, and the fast one (the simulator writes many times)
        return moment.isoformat(timespec="microseconds")[:-6] + "Z"
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="microseconds") + "Z"


def utc_now() -> str:
    """The current time in :func:`iso_time`'s format."""
    return iso_time(datetime.now(UTC))


def job_time(moment: datetime | None = None) -> str:
    """A job-level time (``JobResult.started_at``...): naive ISO, as Harbor writes it.

    Examples
    --------
    >>> job_time(datetime(2026, 1, 2, 3, 4, 5))
    '2026-01-02T03:04:05.000000'
    """
    moment = moment or datetime.now(UTC)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="microseconds")


# ----------------------------------------------------------------------------------------
# configs


def cap_kwargs(cap: int | None, *, turn_limit: int | None = None, **extra: Any) -> dict[str, Any]:
    """``config.agent.kwargs`` of a trial: the stated cap, the enforced limit, then ``extra``.

    A capped trial enforces the cap it states (``max_turns`` = ``stated_cap`` = ``cap``); an
    uncapped one records ``stated_cap`` null and the harness's own limit ``turn_limit``.

    Examples
    --------
    >>> cap_kwargs(5)
    {'max_turns': 5, 'stated_cap': 5}
    >>> cap_kwargs(None, turn_limit=200)
    {'max_turns': 200, 'stated_cap': None}
    """
    return {TURN_LIMIT_KEY: cap if cap is not None else turn_limit, STATED_CAP_KEY: cap, **extra}


def cap_sentence(cap: int | None) -> str:
    """The sentence that states the cap to the agent (empty when uncapped).

    depthlab's runner puts it in its prompt; a Harbor job config from ``depthlab plan
    --harbor-configs`` appends it to every task instruction (``extra_instructions``), so that
    Harbor's stock terminus-2 states the cap it enforces, and the loaders recognise it there.

    Examples
    --------
    >>> cap_sentence(3)[:31]
    'You have at most 3 turns: every'
    >>> cap_sentence(None)
    ''
    """
    if cap is None:
        return ""
    return CAP_TEMPLATE.format(cap=cap, unit="turn" if cap == 1 else "turns") + "\n\n"


#: The sentence of :func:`cap_sentence` (``{cap}``, ``{unit}``); Harbor's whole-run agent gets it as
#: ``cap_template`` to state a multi-step run's turns left in the same words.
CAP_TEMPLATE: Final[str] = (
    "You have at most {cap} {unit}: every reply you send is one turn, and after your reply number "
    "{cap} the session ends and your work is graded as it is. Plan so that the task is done within "
    "{cap} {unit}."
)


def stated_cap_instructions(cap: int) -> list[str]:
    """``extra_instructions`` of a Harbor job or trial config that state ``cap`` to the agent.

    Examples
    --------
    >>> stated_cap_instructions(1)[0][:30]
    'You have at most 1 turn: every'
    """
    return [cap_sentence(cap).strip()]


def agent_config(
    name: str | None,
    model_name: str | None,
    kwargs: Mapping[str, Any] | None = None,
    *,
    override_timeout_sec: float | None = None,
    import_path: str | None = None,
) -> AgentConfigRecord:
    """Harbor's ``AgentConfig`` (``config.agent`` of a trial, an entry of ``agents`` of a job).

    ``import_path`` (``"module:Class"``) names an agent class Harbor imports instead of a named agent.
    """
    return AgentConfigRecord(
        name=name,
        import_path=import_path,
        model_name=model_name,
        override_timeout_sec=override_timeout_sec,
        kwargs=dict(kwargs or {}),
    )


def environment_config(
    kind: str = "docker", kwargs: Mapping[str, Any] | None = None, *, extra_docker_compose: Sequence[str] = ()
) -> EnvironmentConfigRecord:
    """Harbor's ``EnvironmentConfig``; ``kwargs`` records depthlab's container limits, ``extra_docker_compose``
    the Compose overlays Harbor adds to the agent's environment."""
    return EnvironmentConfigRecord(
        type=kind, kwargs=dict(kwargs or {}), extra_docker_compose=list(extra_docker_compose)
    )


def verifier_config(override_timeout_sec: float | None = None) -> VerifierConfigRecord:
    """Harbor's ``VerifierConfig``."""
    return VerifierConfigRecord(override_timeout_sec=override_timeout_sec)


def dataset_config(path: str | None, task_names: Sequence[str] | None = None) -> DatasetConfigRecord:
    """An entry of a JobConfig's ``datasets``: a local folder of task folders (``path``) and the
    task names to run from it (all when None). Harbor forbids a registry ``name`` beside a ``path``."""
    return DatasetConfigRecord(path=path, task_names=None if task_names is None else list(task_names))


def dataset_configs(tasks: Iterable[tuple[str | os.PathLike[str] | None, str]]) -> list[DatasetConfigRecord]:
    """A JobConfig's ``datasets`` for ``(folder, task name)`` pairs: one entry per folder holding
    task folders, folders and names sorted.

    Examples
    --------
    >>> [entry.task_names for entry in dataset_configs([("b", "t2"), ("a", "t9"), ("b", "t1")])]
    [['t9'], ['t1', 't2']]
    """
    grouped: dict[str | None, list[str]] = {}
    for folder, name in tasks:
        grouped.setdefault(None if folder is None else os.fspath(folder), []).append(name)
    return [dataset_config(folder, sorted(names)) for folder, names in sorted(grouped.items(), key=lambda i: str(i[0]))]


def job_config(
    job_name: str,
    jobs_dir: str | os.PathLike[str],
    agents: Sequence[AgentConfigRecord],
    *,
    datasets: Sequence[DatasetConfigRecord] = (),
    n_attempts: int = 1,
    n_concurrent_trials: int = 1,
    environment: EnvironmentConfigRecord | None = None,
    quiet: bool = True,
    extra_instructions: Sequence[str] = (),
) -> JobConfigRecord:
    """Harbor's ``JobConfig`` (a job's ``config.json``; ``harbor run --config FILE`` runs it).

    ``extra_instructions`` are appended to every task instruction by Harbor (and recorded in each
    trial's config), e.g. :func:`stated_cap_instructions`.

    Examples
    --------
    >>> config = job_config("demo", "jobs", [agent_config("terminus-2", "openai/m", cap_kwargs(3))])
    >>> config.agents[0].kwargs
    {'max_turns': 3, 'stated_cap': 3}
    """
    return JobConfigRecord(
        job_name=job_name,
        jobs_dir=str(jobs_dir),
        n_attempts=n_attempts,
        n_concurrent_trials=n_concurrent_trials,
        quiet=quiet,
        environment=environment if environment is not None else environment_config(),
        agents=list(agents),
        datasets=list(datasets),
        extra_instructions=list(extra_instructions),
    )


def task_config(path: str | os.PathLike[str], source: str | None) -> TaskConfigRecord:
    """Harbor's ``TaskConfig`` of a local task folder (``config.task`` of a trial)."""
    return TaskConfigRecord(path=str(path), source=source)


def trial_config(
    task: TaskConfigRecord,
    name: str,
    trials_dir: str | os.PathLike[str],
    agent: AgentConfigRecord,
    *,
    job_id: str,
    environment: EnvironmentConfigRecord | None = None,
    verifier: VerifierConfigRecord | None = None,
) -> TrialConfigRecord:
    """Harbor's ``TrialConfig`` (a trial's ``config.json``, repeated as ``result.config``)."""
    return TrialConfigRecord(
        task=task,
        trial_name=name,
        trials_dir=str(trials_dir),
        agent=agent,
        environment=environment if environment is not None else environment_config(),
        verifier=verifier if verifier is not None else verifier_config(),
        job_id=job_id,
    )


# ----------------------------------------------------------------------------------------
# results


def agent_info(name: str, version: str, model_name: str | None) -> AgentInfoRecord:
    """Harbor's ``AgentInfo``: ``model_info`` splits ``provider/name`` on the first slash.

    Examples
    --------
    >>> agent_info("terminus-2", "1.0", "openai/gpt-5").model_info
    ModelInfoRecord(name='gpt-5', provider='openai')
    >>> agent_info("oracle", "1.0", None).model_info is None
    True
    """
    if not model_name:
        return AgentInfoRecord(name=name, version=version)
    provider, slash, short = model_name.partition("/")
    model_info = ModelInfoRecord(name=short, provider=provider) if slash else ModelInfoRecord(name=model_name)
    return AgentInfoRecord(name=name, version=version, model_info=model_info)


def agent_result(
    n_input_tokens: int | None = None,
    n_cache_tokens: int | None = None,
    n_output_tokens: int | None = None,
    cost_usd: float | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> AgentContextRecord:
    """Harbor's ``AgentContext`` (``agent_result``); terminus-2 keeps ``n_episodes`` in ``metadata``."""
    return AgentContextRecord(
        n_input_tokens=n_input_tokens,
        n_cache_tokens=n_cache_tokens,
        n_output_tokens=n_output_tokens,
        cost_usd=cost_usd,
        metadata=dict(metadata) if metadata else None,
    )


def exception_info(exception_type: str, message: str, traceback: str, occurred_at: str) -> ExceptionInfoRecord:
    """Harbor's ``ExceptionInfo`` (``occurred_at`` naive ISO, as Harbor writes it) with Harbor's policy for the type.

    Examples
    --------
    >>> exception_info("VerifierTimeoutError", "slow", "", "2026-01-01T00:00:00").policy.has_valid_reward
    False
    """
    return ExceptionInfoRecord(
        exception_type=exception_type,
        exception_message=message,
        exception_traceback=traceback,
        occurred_at=occurred_at,
        policy=policy_for(exception_type),
    )


def phase(started_at: str, finished_at: str) -> TimingInfoRecord:
    """Harbor's ``TimingInfo`` of one trial phase."""
    return TimingInfoRecord(started_at=started_at, finished_at=finished_at)


#: The timed phases of a trial, in order.
PHASES: Final[tuple[str, ...]] = ("environment_setup", "agent_setup", "agent_execution", "verifier")


def trial_result(
    config: TrialConfigRecord,
    *,
    result_id: str,
    task_name: str,
    task_path: str | os.PathLike[str],
    trial_dir: str | os.PathLike[str],
    source: str | None,
    task_checksum: str,
    agent: AgentInfoRecord,
    agent_result: AgentContextRecord | None,
    rewards: Mapping[str, float] | None,
    exception: ExceptionInfoRecord | None,
    started_at: str,
    finished_at: str,
    phases: Mapping[str, TimingInfoRecord | None],
    step_results: Sequence[StepResultRecord] | None = None,
) -> TrialResultRecord:
    """Harbor's ``TrialResult`` (a trial's ``result.json``; its presence marks the trial complete).

    ``config`` is the trial's :func:`trial_config`, ``agent`` its :func:`agent_info`,
    ``phases`` the :func:`phase` of each of :data:`PHASES` (None: not reached). A multi-step
    trial gives its ``step_results`` (:func:`step_result` each), ``agent_result`` None, no
    ``agent_execution`` phase, and ``rewards`` = :func:`multi_step_rewards` of its steps.
    ``reward_valid`` is Harbor's rule on the rewards and every recorded exception.
    """
    unknown = set(phases) - set(PHASES)
    if unknown:
        raise ValueError(f"The 'phases' parameter of trial_result has unknown phases {sorted(unknown)}")
    if step_results is not None and agent_result is not None:
        raise ValueError("The 'agent_result' parameter of trial_result must be None for a multi-step trial")
    steps = None if step_results is None else list(step_results)
    record = TrialResultRecord(
        id=result_id,
        task_name=task_name,
        trial_name=config.trial_name,
        trial_uri=trial_uri(trial_dir),
        task_id=LocalTaskIdRecord(path=str(task_path)),
        source=source,
        task_checksum=task_checksum,
        config=config,
        agent_info=agent,
        agent_result=agent_result,
        verifier_result=None if rewards is None else VerifierResultRecord(rewards=dict(rewards)),
        exception_info=exception,
        started_at=started_at,
        finished_at=finished_at,
        environment_setup=phases.get("environment_setup"),
        agent_setup=phases.get("agent_setup"),
        agent_execution=phases.get("agent_execution"),
        verifier=phases.get("verifier"),
        step_results=steps,
        reward_valid=False,
    )
    record.reward_valid = record.harbor_reward_valid()
    return record


def trial_uri(trial_dir: str | os.PathLike[str]) -> str:
    """A trial folder's ``trial_uri``: its absolute path as a ``file://`` URI, as :meth:`pathlib.Path.as_uri` gives it.

    Built directly on POSIX (pathlib's is a tenth of the simulator's time per trial), the same text.

    Examples
    --------
    >>> trial_uri("/jobs/j/a b__x") == Path("/jobs/j/a b__x").as_uri()
    True
    """
    absolute = os.path.abspath(trial_dir)
    if os.name != "posix":
        return Path(absolute).as_uri()
    return "file://" + urllib.parse.quote_from_bytes(os.fsencode(absolute))


def step_result(
    step_name: str,
    *,
    agent_result: AgentContextRecord | None,
    rewards: Mapping[str, float] | None,
    exception: ExceptionInfoRecord | None = None,
    agent_execution: TimingInfoRecord | None = None,
    verifier: TimingInfoRecord | None = None,
) -> StepResultRecord:
    """Harbor's ``StepResult``: one step of a multi-step trial (an entry of ``step_results``).

    Examples
    --------
    >>> step = step_result("step-1", agent_result=agent_result(metadata={"n_episodes": 2}), rewards={"reward": 1.0})
    >>> step.verifier_result.rewards, step.agent_result.metadata
    ({'reward': 1.0}, {'n_episodes': 2})
    """
    return StepResultRecord(
        step_name=step_name,
        agent_result=agent_result,
        verifier_result=None if rewards is None else VerifierResultRecord(rewards=dict(rewards)),
        exception_info=exception,
        agent_execution=agent_execution,
        verifier=verifier,
    )


def step_rewards(step: StepResultRecord) -> dict[str, float] | None:
    """A step record's rewards (None when its verifier recorded none)."""
    return None if step.verifier_result is None else step.verifier_result.rewards


def eval_key(agent_name: str | None, model_name: str | None, source: str | None) -> str:
    """The key of a JobResult's ``stats.evals`` entry: ``<agent>__<model>__<source>``.

    Harbor names it after ``agent_info.name``, ``model_info.name`` (without provider) and the
    trial's source.

    Examples
    --------
    >>> eval_key("terminus-2", "openai/gpt-5", "tb")
    'terminus-2__gpt-5__tb'
    """
    model = None if model_name is None else model_name.partition("/")[2] or model_name
    return "__".join(part for part in (agent_name, model, source or "adhoc") if part)


_TOKENS: Final[tuple[str, ...]] = ("n_input_tokens", "n_cache_tokens", "n_output_tokens", "cost_usd")


def job_result(
    job_id: str,
    trials: Iterable[TrialResultRecord | TrialResult],
    *,
    started_at: str,
    updated_at: str,
    finished_at: str | None,
    n_total_trials: int | None = None,
) -> JobResultRecord:
    """Harbor's ``JobResult`` (a job's ``result.json``) from its trials: the :func:`trial_result` records
    written, or the trials' result.json read back through the model (a resumed job's).

    The stats are Harbor 0.26's (its ``JobStats.increment``, the job's ``Mean`` metric and
    ``compute_pass_at_k_by_evals``; ``tests/harbor/test_harbor_conformance.py`` compares them with Harbor's own
    on the same trials). Per eval (agent, model, source): ``n_trials`` counts the trials whose reward Harbor
    counts (``reward_valid``, a verifier result recorded), ``reward_stats`` names them by reward, ``n_errors``
    and ``exception_stats`` count every recorded exception (a multi-step trial's steps' too), ``metrics`` is the
    mean reward over the counted trials (none counted: no metric), ``pass_at_k`` Harbor's pass@k over them;
    token and cost totals are null when no trial recorded any.
    """
    stats = JobStatsRecord()
    counted: dict[str, list[Mapping[str, float] | None]] = {}
    outcomes: dict[str, list[tuple[str, Mapping[str, float]]]] = {}
    n_trials = 0
    for trial in trials:
        n_trials += 1
        facts = _JobTrial.of(trial)
        key = eval_key(facts.agent_name, facts.model_name, trial.source)
        entry = stats.evals.setdefault(key, AgentDatasetStatsRecord())
        name = trial.trial_name or ""
        if facts.reward_valid and facts.graded:
            if facts.rewards is not None:
                entry.n_trials += 1
                for reward_name, value in facts.rewards.items():
                    entry.reward_stats.setdefault(reward_name, {}).setdefault(str(float(value)), []).append(name)
            counted.setdefault(key, []).append(facts.rewards)
        if facts.reward_valid and facts.rewards is not None:
            outcomes.setdefault(key, []).append((trial.task_name or "", facts.rewards))
        kinds = sorted(set(facts.exception_types))
        for kind in kinds:
            entry.exception_stats.setdefault(kind, []).append(name)
        if kinds:
            entry.n_errors += 1
            stats.n_errored_trials += 1
            stats.n_cancelled_trials += "CancelledError" in kinds
        for field in _TOKENS:  # a count a reader recorded as anything but a number adds nothing
            total = _sum(_number(getattr(usage, field)) for usage in facts.usage)
            if total is not None:
                setattr(stats, field, (getattr(stats, field) or 0) + total)
    for key, rewards in counted.items():
        stats.evals[key].metrics = [_mean(rewards)]
    for key, pairs in outcomes.items():
        if pass_at_k := _pass_at_k(pairs):
            stats.evals[key].pass_at_k = pass_at_k
    n_total = n_trials if n_total_trials is None else max(n_total_trials, n_trials)
    stats.n_completed_trials, stats.n_pending_trials = n_trials, n_total - n_trials
    return JobResultRecord(
        id=job_id,
        started_at=started_at,
        updated_at=updated_at,
        finished_at=finished_at,
        n_total_trials=n_total,
        stats=stats,
    )


def _number(value: Any) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _mean(rewards: Sequence[Mapping[str, float] | None]) -> dict[str, float]:
    """Harbor's ``Mean`` metric (its ``aggregate_reward_dicts``): one key, or none, is ``mean``; several are
    averaged key by key; a missing reward counts 0.

    Examples
    --------
    >>> _mean([{"reward": 1.0}, None]), _mean([{"a": 1.0, "b": 0.0}, {"a": 0.0}])
    ({'mean': 0.5}, {'a': 0.5, 'b': 0.0})
    """
    keys = sorted({key for reward in rewards if reward is not None for key in reward})
    if len(keys) <= 1:
        values = [0.0 if reward is None else next(iter(reward.values()), 0.0) for reward in rewards]
        return {"mean": sum(values) / len(values)}
    return {
        key: sum(0.0 if reward is None else reward.get(key, 0.0) for reward in rewards) / len(rewards) for key in keys
    }


def _pass_at_k(outcomes: Sequence[tuple[str, Mapping[str, float]]]) -> dict[int, float]:
    """Harbor's pass@k of one eval (``compute_pass_at_k_by_evals``): only when every counted trial has one reward,
    0 or 1; k = 2, 4, 8, ... and 5, 10, 15, ... up to the fewest trials of a task.

    Examples
    --------
    >>> _pass_at_k([("a", {"reward": 1.0}), ("a", {"reward": 0.0}), ("b", {"reward": 0.0}), ("b", {"reward": 0.0})])
    {2: 0.5}
    """
    successes: dict[str, list[int]] = {}
    for task, rewards in outcomes:
        if len(rewards) != 1:
            return {}
        value = next(iter(rewards.values()))
        if value not in (0, 1):
            return {}
        successes.setdefault(task, []).append(int(value))
    fewest = min(len(runs) for runs in successes.values())
    ks = sorted(
        {*(2**power for power in range(1, fewest.bit_length()) if 2**power <= fewest), *range(5, fewest + 1, 5)}
    )
    return {
        k: sum(_pass_at_k_of_task(len(runs), sum(runs), k) for runs in successes.values()) / len(successes) for k in ks
    }


def _pass_at_k_of_task(n: int, c: int, k: int) -> float:
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(k):
        product *= (n - c - i) / (n - i)
    return 1.0 - product


class _JobTrial(msgspec.Struct, frozen=True):
    """What a job's stats take from one trial, from a record written or a result read back."""

    agent_name: str | None
    model_name: str | None
    exception_types: list[str]
    rewards: dict[str, float] | None
    graded: bool  # a verifier_result recorded (Harbor's metric counts it, its rewards null or not)
    reward_valid: bool
    usage: list[Any]  # the agent contexts whose tokens and cost Harbor sums (the trial's, else its steps')

    @classmethod
    def of(cls, trial: TrialResultRecord | TrialResult) -> _JobTrial:
        if isinstance(trial, TrialResultRecord):
            steps = trial.step_results or []
            usage: list[Any] = [trial.agent_result] if trial.agent_result else [step.agent_result for step in steps]
            return cls(
                trial.agent_info.name,
                trial.config.agent.model_name,
                [info.exception_type for info in trial.recorded_exceptions()],
                None if trial.verifier_result is None else trial.verifier_result.rewards,
                trial.verifier_result is not None,
                trial.reward_valid,
                [context for context in usage if context is not None],
            )
        agent = trial.config.agent if trial.config is not None else None
        read = decode_steps(trial.step_results) if trial.multi_step() else []
        contexts: list[Any] = [trial.agent_result] if trial.agent_result else [step.agent_result for step in read]
        return cls(
            trial.agent_info.name if trial.agent_info is not None else None,
            agent.model_name if agent is not None else None,
            [info.kind() for info in trial.recorded_exceptions(read)],
            trial.rewards(),
            isinstance(trial.verifier_result, VerifierResult),
            trial.reward_valid(read),
            [context for context in contexts if context is not None],
        )


def reward_file(rewards: Mapping[str, float]) -> tuple[str, str]:
    """The verifier's reward file for ``rewards``: (file name, text).

    A single ``reward`` that is 0 or 1 goes to ``reward.txt`` (one number); anything else to
    ``reward.json`` (a flat object), Harbor's two reward files.

    Examples
    --------
    >>> reward_file({"reward": 1.0})
    ('reward.txt', '1\\n')
    >>> reward_file({"reward": 0.0, "part_1": 1.0})
    ('reward.json', '{"reward": 0.0, "part_1": 1.0}\\n')
    """
    if set(rewards) == {"reward"} and float(rewards["reward"]) in (0.0, 1.0):
        return "reward.txt", f"{int(rewards['reward'])}\n"
    return "reward.json", json.dumps({key: float(value) for key, value in rewards.items()}) + "\n"


# ----------------------------------------------------------------------------------------
# ATIF trajectories


def atif_step(step_id: int, timestamp: str, source: str, message: str, **fields: Any) -> AtifStepRecord:
    """One ATIF step (``source``: "user", "agent" or "system"), an :class:`AtifStepRecord`.

    ``fields`` are the step's other fields (:class:`AtifStepRecord`'s names), records or their plain
    values (checked against the record's types); those that are None are left out, as Harbor leaves
    them out.

    Examples
    --------
    >>> encode(atif_step(1, "2026-01-01T00:00:00Z", "agent", "ls", model_name="p/m", metrics={"prompt_tokens": 3}))
    b'{"step_id":1,"timestamp":"2026-01-01T00:00:00Z","source":"agent","model_name":"p/m","message":"ls","metrics":{"prompt_tokens":3}}'
    """
    if source not in ("user", "agent", "system"):
        raise ValueError(f"The 'source' parameter of atif_step must be 'user', 'agent' or 'system', got {source!r}")
    given = {key: value for key, value in fields.items() if value is not None}
    return msgspec.convert(
        {"step_id": step_id, "timestamp": timestamp, "source": source, "message": message, **given},
        AtifStepRecord,
    )


def atif_metrics(
    *,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
    cached_tokens: int | None = None,
    cost_usd: float | None = None,
) -> AtifMetricsRecord:
    """An ATIF step's metrics; a count or cost not reported (None) is left out, as Harbor leaves it out.

    Examples
    --------
    >>> encode(atif_metrics(prompt_tokens=12, completion_tokens=3))
    b'{"prompt_tokens":12,"completion_tokens":3}'
    """
    return AtifMetricsRecord(
        prompt_tokens=_LEFT_OUT if prompt_tokens is None else prompt_tokens,
        completion_tokens=_LEFT_OUT if completion_tokens is None else completion_tokens,
        cached_tokens=_LEFT_OUT if cached_tokens is None else cached_tokens,
        cost_usd=_LEFT_OUT if cost_usd is None else cost_usd,
    )


def trajectory(
    session_id: str,
    steps: Sequence[AtifStepRecord],
    *,
    agent_name: str,
    agent_version: str,
    model_name: str | None,
    extra: Mapping[str, Any] | None = None,
) -> TrajectoryRecord:
    """An ATIF trajectory (``agent/trajectory.json``) with ``final_metrics`` summed over the agent's ``steps``
    (a total of a count no step reported is left out, as Harbor leaves it out)."""
    metrics = [step.metrics for step in steps if step.source == "agent" and isinstance(step.metrics, AtifMetricsRecord)]

    def total(field: str) -> Any:
        summed = _sum(_given(getattr(step_metrics, field)) for step_metrics in metrics)
        return _LEFT_OUT if summed is None else summed

    return TrajectoryRecord(
        schema_version=ATIF_VERSION,
        session_id=session_id,
        agent=AtifAgentRecord(
            name=agent_name,
            version=agent_version,
            model_name=_LEFT_OUT if model_name is None else model_name,
            extra=dict(extra or {}),
        ),
        steps=list(steps),
        final_metrics=AtifFinalMetricsRecord(
            total_prompt_tokens=total("prompt_tokens"),
            total_completion_tokens=total("completion_tokens"),
            total_cached_tokens=total("cached_tokens"),
            total_cost_usd=total("cost_usd"),
            total_steps=len(steps),
        ),
    )


class TrajectoryAgent(TypedDict):
    """The agent fields of a :class:`Trajectory` (the keyword arguments of :func:`trajectory`)."""

    agent_name: str
    agent_version: str
    model_name: str | None
    extra: dict[str, Any]


class Trajectory:
    """An ATIF trajectory rewritten to ``path`` after every step (as terminus-2 does), so an
    interrupted trial still shows its turns.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "trajectory.json"
    >>> log = Trajectory(path, agent_name="a", agent_version="1", model_name="p/m", extra={})
    >>> log.add("user", "hello")
    >>> json.loads(path.read_text())["steps"][0]["message"]
    'hello'
    """

    def __init__(
        self, path: Path, *, agent_name: str, agent_version: str, model_name: str | None, extra: dict[str, Any]
    ) -> None:
        self.path = path
        self.session_id = str(uuid.uuid4())
        self.agent: TrajectoryAgent = {
            "agent_name": agent_name,
            "agent_version": agent_version,
            "model_name": model_name,
            "extra": extra,
        }
        self.steps: list[AtifStepRecord] = []

    def add(self, source: str, message: str, **fields: Any) -> None:
        """Append a step (:func:`atif_step`'s ``fields``) and rewrite the file."""
        self.steps.append(atif_step(len(self.steps) + 1, utc_now(), source, message, **fields))
        self.write()

    def write(self) -> None:
        write_json(self.path, trajectory(self.session_id, self.steps, **self.agent))


def _given(value: Any) -> Any:
    """A record's field as a value, None when it was left out (``UNSET``)."""
    return None if value is msgspec.UNSET else value


# ----------------------------------------------------------------------------------------
# files


def encode(value: Any) -> bytes:
    """``value`` (a record of :mod:`depthlab.io.harbor_records`, or plain JSON values) as compact JSON bytes.

    Examples
    --------
    >>> encode(phase("2026-01-01T00:00:00Z", "2026-01-01T00:00:05Z"))
    b'{"started_at":"2026-01-01T00:00:00Z","finished_at":"2026-01-01T00:00:05Z"}'
    """
    return _ENCODER.encode(value)


def as_object(record: msgspec.Struct) -> dict[str, Any]:
    """A record as the JSON object it is written as (to merge into a file another writer wrote)."""
    return msgspec.to_builtins(record, enc_hook=str)


def write_json(path: Path, value: Any, *, fsync: bool = False) -> None:
    """Write ``value`` (a record, or plain JSON values) as JSON indented as Harbor indents its files, to ``path``
    atomically (see :func:`write_text`)."""
    _atomic.write_bytes(path, msgspec.json.format(_ENCODER.encode(value), indent=4) + b"\n", fsync=fsync)


def write_text(path: Path, text: str, *, fsync: bool = False) -> None:
    """Write ``text`` to ``path`` through :mod:`depthlab._atomic`, so a reader never sees half a
    file and a write cut short leaves a temporary name the cache's leftover check recognises.
    ``fsync`` flushes to disk before the rename (a finished trial's ``result.json``)."""
    _atomic.write_text(path, text, fsync=fsync)


def _sum(values: Iterable[Any]) -> Any:
    present = [value for value in values if value is not None]
    return sum(present) if present else None
