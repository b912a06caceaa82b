"""The Harbor format, written in one place: job and trial configs, results, ATIF trajectories.

Every depthlab writer of Harbor files (the Docker runner, the simulator and ``depthlab plan
--harbor-configs``) builds its JSON here, so the format is stated once and what
:func:`depthlab.load_trials` reads back is what was written. The builders return plain dicts
(fast enough for the simulator's thousands of trials); :func:`write_json` and
:func:`write_text` write a file atomically for the runner.

Layout of a job (what Harbor writes, and what the loaders read)::

    <jobs_dir>/<job_name>/config.json      JobConfig        (job_config)
    <jobs_dir>/<job_name>/result.json      JobResult        (job_result)
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
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypedDict

from depthlab import _atomic
from depthlab.io.harbor_models import DEFAULT_REWARD_STRATEGY, REWARD_STRATEGIES, multi_step_rewards

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
) -> dict[str, Any]:
    """Harbor's ``AgentConfig`` (``config.agent`` of a trial, an entry of ``agents`` of a job).

    ``import_path`` (``"module:Class"``) names an agent class Harbor imports instead of a named agent.
    """
    return {
        "name": name,
        "import_path": import_path,
        "model_name": model_name,
        "override_timeout_sec": override_timeout_sec,
        "override_setup_timeout_sec": None,
        "max_timeout_sec": None,
        "kwargs": dict(kwargs or {}),
        "env": {},
    }


def environment_config(kind: str = "docker", kwargs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Harbor's ``EnvironmentConfig``; ``kwargs`` records depthlab's container limits."""
    return {
        "type": kind,
        "import_path": None,
        "force_build": False,
        "delete": True,
        "override_cpus": None,
        "override_memory_mb": None,
        "override_storage_mb": None,
        "override_gpus": None,
        "suppress_override_warnings": False,
        "mounts_json": None,
        "env": {},
        "kwargs": dict(kwargs or {}),
    }


def verifier_config(override_timeout_sec: float | None = None) -> dict[str, Any]:
    """Harbor's ``VerifierConfig``."""
    return {"override_timeout_sec": override_timeout_sec, "max_timeout_sec": None, "env": {}, "disable": False}


def dataset_config(path: str | None, task_names: Sequence[str] | None = None) -> dict[str, Any]:
    """An entry of a JobConfig's ``datasets``: a local folder of task folders (``path``) and the
    task names to run from it (all when None). Harbor forbids a registry ``name`` beside a ``path``."""
    return {"path": path, "task_names": None if task_names is None else list(task_names)}


def dataset_configs(tasks: Iterable[tuple[str | os.PathLike[str] | None, str]]) -> list[dict[str, Any]]:
    """A JobConfig's ``datasets`` for ``(folder, task name)`` pairs: one entry per folder holding
    task folders, folders and names sorted.

    Examples
    --------
    >>> [entry["task_names"] for entry in dataset_configs([("b", "t2"), ("a", "t9"), ("b", "t1")])]
    [['t9'], ['t1', 't2']]
    """
    grouped: dict[str | None, list[str]] = {}
    for folder, name in tasks:
        grouped.setdefault(None if folder is None else os.fspath(folder), []).append(name)
    return [dataset_config(folder, sorted(names)) for folder, names in sorted(grouped.items(), key=lambda i: str(i[0]))]


def job_config(
    job_name: str,
    jobs_dir: str | os.PathLike[str],
    agents: Sequence[Mapping[str, Any]],
    *,
    datasets: Sequence[Mapping[str, Any]] = (),
    n_attempts: int = 1,
    n_concurrent_trials: int = 1,
    environment: Mapping[str, Any] | None = None,
    quiet: bool = True,
    extra_instructions: Sequence[str] = (),
) -> dict[str, Any]:
    """Harbor's ``JobConfig`` (a job's ``config.json``; ``harbor run --config FILE`` runs it).

    ``extra_instructions`` are appended to every task instruction by Harbor (and recorded in each
    trial's config), e.g. :func:`stated_cap_instructions`.

    Examples
    --------
    >>> config = job_config("demo", "jobs", [agent_config("terminus-2", "openai/m", cap_kwargs(3))])
    >>> config["agents"][0]["kwargs"]
    {'max_turns': 3, 'stated_cap': 3}
    """
    return {
        "job_name": job_name,
        "jobs_dir": str(jobs_dir),
        "n_attempts": n_attempts,
        "timeout_multiplier": 1.0,
        "agent_timeout_multiplier": None,
        "verifier_timeout_multiplier": None,
        "agent_setup_timeout_multiplier": None,
        "environment_build_timeout_multiplier": None,
        "debug": False,
        "n_concurrent_trials": n_concurrent_trials,
        "quiet": quiet,
        "retry": {"max_retries": 0, "include_exceptions": None, "exclude_exceptions": []},
        "environment": dict(environment) if environment is not None else environment_config(),
        "verifier": verifier_config(),
        "metrics": [],
        "agents": [dict(agent) for agent in agents],
        "datasets": [dict(dataset) for dataset in datasets],
        "tasks": [],
        "artifacts": [],
        "extra_instructions": list(extra_instructions),
    }


def task_config(path: str | os.PathLike[str], source: str | None) -> dict[str, Any]:
    """Harbor's ``TaskConfig`` of a local task folder (``config.task`` of a trial)."""
    return {
        "path": str(path),
        "git_url": None,
        "git_commit_id": None,
        "name": None,
        "ref": None,
        "overwrite": False,
        "download_dir": None,
        "source": source,
    }


def trial_config(
    task: Mapping[str, Any],
    name: str,
    trials_dir: str | os.PathLike[str],
    agent: Mapping[str, Any],
    *,
    job_id: str,
    environment: Mapping[str, Any] | None = None,
    verifier: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Harbor's ``TrialConfig`` (a trial's ``config.json``, repeated as ``result.config``)."""
    return {
        "task": dict(task),
        "trial_name": name,
        "trials_dir": str(trials_dir),
        "timeout_multiplier": 1.0,
        "agent_timeout_multiplier": None,
        "verifier_timeout_multiplier": None,
        "agent_setup_timeout_multiplier": None,
        "environment_build_timeout_multiplier": None,
        "agent": dict(agent),
        "environment": dict(environment) if environment is not None else environment_config(),
        "verifier": dict(verifier) if verifier is not None else verifier_config(),
        "artifacts": [],
        "job_id": job_id,
    }


# ----------------------------------------------------------------------------------------
# results


def agent_info(name: str, version: str, model_name: str | None) -> dict[str, Any]:
    """Harbor's ``AgentInfo``: ``model_info`` splits ``provider/name`` on the first slash.

    Examples
    --------
    >>> agent_info("terminus-2", "1.0", "openai/gpt-5")["model_info"]
    {'name': 'gpt-5', 'provider': 'openai'}
    >>> agent_info("oracle", "1.0", None)["model_info"] is None
    True
    """
    if not model_name:
        return {"name": name, "version": version, "model_info": None}
    provider, slash, short = model_name.partition("/")
    model_info = {"name": short, "provider": provider} if slash else {"name": model_name, "provider": None}
    return {"name": name, "version": version, "model_info": model_info}


def agent_result(
    n_input_tokens: int | None = None,
    n_cache_tokens: int | None = None,
    n_output_tokens: int | None = None,
    cost_usd: float | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Harbor's ``AgentContext`` (``agent_result``); terminus-2 keeps ``n_episodes`` in ``metadata``."""
    return {
        "n_input_tokens": n_input_tokens,
        "n_cache_tokens": n_cache_tokens,
        "n_output_tokens": n_output_tokens,
        "cost_usd": cost_usd,
        "rollout_details": None,
        "metadata": dict(metadata) if metadata else None,
    }


def exception_info(exception_type: str, message: str, traceback: str, occurred_at: str) -> dict[str, str]:
    """Harbor's ``ExceptionInfo`` (``occurred_at`` naive ISO, as Harbor writes it)."""
    return {
        "exception_type": exception_type,
        "exception_message": message,
        "exception_traceback": traceback,
        "occurred_at": occurred_at,
    }


def phase(started_at: str, finished_at: str) -> dict[str, str]:
    """Harbor's ``TimingInfo`` of one trial phase."""
    return {"started_at": started_at, "finished_at": finished_at}


#: The timed phases of a trial, in order.
PHASES: Final[tuple[str, ...]] = ("environment_setup", "agent_setup", "agent_execution", "verifier")


def trial_result(
    config: Mapping[str, Any],
    *,
    result_id: str,
    task_name: str,
    task_path: str | os.PathLike[str],
    trial_dir: str | os.PathLike[str],
    source: str | None,
    task_checksum: str,
    agent: Mapping[str, Any],
    agent_result: Mapping[str, Any] | None,
    rewards: Mapping[str, float] | None,
    exception: Mapping[str, Any] | None,
    started_at: str,
    finished_at: str,
    phases: Mapping[str, Mapping[str, str] | None],
    step_results: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Harbor's ``TrialResult`` (a trial's ``result.json``; its presence marks the trial complete).

    ``config`` is the trial's :func:`trial_config`, ``agent`` its :func:`agent_info`,
    ``phases`` the :func:`phase` of each of :data:`PHASES` (None: not reached). A multi-step
    trial gives its ``step_results`` (:func:`step_result` each), ``agent_result`` None, no
    ``agent_execution`` phase, and ``rewards`` = :func:`multi_step_rewards` of its steps.
    """
    unknown = set(phases) - set(PHASES)
    if unknown:
        raise ValueError(f"The 'phases' parameter of trial_result has unknown phases {sorted(unknown)}")
    if step_results is not None and agent_result is not None:
        raise ValueError("The 'agent_result' parameter of trial_result must be None for a multi-step trial")
    return {
        "id": result_id,
        "task_name": task_name,
        "trial_name": config["trial_name"],
        "trial_uri": Path(os.path.abspath(trial_dir)).as_uri(),
        "task_id": {"path": str(task_path)},
        "source": source,
        "task_checksum": task_checksum,
        "config": dict(config),
        "agent_info": dict(agent),
        "agent_result": None if agent_result is None else dict(agent_result),
        "verifier_result": None if rewards is None else {"rewards": dict(rewards)},
        "exception_info": None if exception is None else dict(exception),
        "started_at": started_at,
        "finished_at": finished_at,
        **{name: None if phases.get(name) is None else dict(phases[name]) for name in PHASES},  # type: ignore[arg-type]
        "step_results": None if step_results is None else [dict(step) for step in step_results],
    }


def step_result(
    step_name: str,
    *,
    agent_result: Mapping[str, Any] | None,
    rewards: Mapping[str, float] | None,
    exception: Mapping[str, Any] | None = None,
    agent_execution: Mapping[str, str] | None = None,
    verifier: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Harbor's ``StepResult``: one step of a multi-step trial (an entry of ``step_results``).

    Examples
    --------
    >>> step = step_result("step-1", agent_result=agent_result(metadata={"n_episodes": 2}), rewards={"reward": 1.0})
    >>> step["verifier_result"], step["agent_result"]["metadata"]
    ({'rewards': {'reward': 1.0}}, {'n_episodes': 2})
    """
    return {
        "step_name": step_name,
        "agent_result": None if agent_result is None else dict(agent_result),
        "verifier_result": None if rewards is None else {"rewards": dict(rewards)},
        "exception_info": None if exception is None else dict(exception),
        "agent_execution": None if agent_execution is None else dict(agent_execution),
        "verifier": None if verifier is None else dict(verifier),
    }


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


def job_result(
    job_id: str,
    trials: Iterable[Mapping[str, Any]],
    *,
    started_at: str,
    updated_at: str,
    finished_at: str | None,
    n_total_trials: int | None = None,
) -> dict[str, Any]:
    """Harbor's ``JobResult`` (a job's ``result.json``) from the :func:`trial_result` dicts of its trials.

    Per eval (agent, model, source): trials with a reward, errors, the mean reward over all
    trials (a missing reward counts 0, Harbor's default metric), and which trials got which
    reward or exception.
    """
    evals: dict[str, dict[str, Any]] = {}
    totals = {"n_input_tokens": 0, "n_cache_tokens": 0, "n_output_tokens": 0, "cost_usd": 0.0}
    sums: dict[str, list[float]] = {}
    n_trials = n_errored = 0
    for trial in trials:
        n_trials += 1
        info = trial.get("agent_info") or {}
        model = ((trial.get("config") or {}).get("agent") or {}).get("model_name")
        key = eval_key(info.get("name"), model, trial.get("source"))
        entry = evals.setdefault(
            key, {"n_trials": 0, "n_errors": 0, "metrics": [], "reward_stats": {}, "exception_stats": {}}
        )
        name = trial.get("trial_name")
        exception = (trial.get("exception_info") or {}).get("exception_type")
        if exception:
            entry["n_errors"] += 1
            n_errored += 1
            entry["exception_stats"].setdefault(exception, []).append(name)
        rewards = (trial.get("verifier_result") or {}).get("rewards") or {}
        if rewards:
            entry["n_trials"] += 1
            for reward_name, value in rewards.items():
                entry["reward_stats"].setdefault(reward_name, {}).setdefault(str(float(value)), []).append(name)
        total = sums.setdefault(key, [0.0, 0])
        total[0] += float(rewards.get("reward", 0.0) or 0.0)
        total[1] += 1
        usage = trial.get("agent_result") or {}
        for field in totals:
            totals[field] += usage.get(field) or 0
    for key, entry in evals.items():
        entry["metrics"] = [{"mean": sums[key][0] / max(sums[key][1], 1)}]
    n_total = n_trials if n_total_trials is None else max(n_total_trials, n_trials)
    return {
        "id": job_id,
        "started_at": started_at,
        "updated_at": updated_at,
        "finished_at": finished_at,
        "n_total_trials": n_total,
        "stats": {
            "n_completed_trials": n_trials,
            "n_errored_trials": n_errored,
            "n_running_trials": 0,
            "n_pending_trials": n_total - n_trials,
            "n_cancelled_trials": 0,
            "n_retries": 0,
            **totals,
            "evals": evals,
        },
    }


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


def atif_step(step_id: int, timestamp: str, source: str, message: str, **fields: Any) -> dict[str, Any]:
    """One ATIF step (``source``: "user", "agent" or "system"); fields that are None are left out."""
    if source not in ("user", "agent", "system"):
        raise ValueError(f"The 'source' parameter of atif_step must be 'user', 'agent' or 'system', got {source!r}")
    step = {"step_id": step_id, "timestamp": timestamp, "source": source, "message": message}
    step.update({key: value for key, value in fields.items() if value is not None})
    return step


def trajectory(
    session_id: str,
    steps: Sequence[Mapping[str, Any]],
    *,
    agent_name: str,
    agent_version: str,
    model_name: str | None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An ATIF trajectory (``agent/trajectory.json``) with ``final_metrics`` summed over ``steps``."""
    metrics = [step.get("metrics") or {} for step in steps if step.get("source") == "agent"]
    return {
        "schema_version": ATIF_VERSION,
        "session_id": session_id,
        "agent": {"name": agent_name, "version": agent_version, "model_name": model_name, "extra": dict(extra or {})},
        "steps": [dict(step) for step in steps],
        "final_metrics": {
            "total_prompt_tokens": _sum(m.get("prompt_tokens") for m in metrics),
            "total_completion_tokens": _sum(m.get("completion_tokens") for m in metrics),
            "total_cached_tokens": _sum(m.get("cached_tokens") for m in metrics),
            "total_cost_usd": _sum(m.get("cost_usd") for m in metrics),
            "total_steps": len(steps),
        },
    }


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
        self.steps: list[dict[str, Any]] = []

    def add(self, source: str, message: str, **fields: Any) -> None:
        """Append a step and rewrite the file."""
        self.steps.append(atif_step(len(self.steps) + 1, utc_now(), source, message, **fields))
        self.write()

    def write(self) -> None:
        write_json(self.path, trajectory(self.session_id, self.steps, **self.agent))


# ----------------------------------------------------------------------------------------
# files


def write_json(path: Path, value: Any, *, fsync: bool = False) -> None:
    """Write ``value`` as indented JSON to ``path`` atomically (see :func:`write_text`)."""
    write_text(path, json.dumps(value, indent=4, default=str) + "\n", fsync=fsync)


def write_text(path: Path, text: str, *, fsync: bool = False) -> None:
    """Write ``text`` to ``path`` through :mod:`depthlab._atomic`, so a reader never sees half a
    file and a write cut short leaves a temporary name the cache's leftover check recognises.
    ``fsync`` flushes to disk before the rename (a finished trial's ``result.json``)."""
    _atomic.write_text(path, text, fsync=fsync)


def _sum(values: Iterable[Any]) -> Any:
    present = [value for value in values if value is not None]
    return sum(present) if present else None
