"""One trial, start to finish: image, container, agent, verifier, Harbor-format record.

Faults never escape as crashes: each is recorded in ``exception_info`` with its type name
(Harbor's where one exists) and the trial still gets its ``result.json``. The only exception
is an interrupt (Ctrl-C / SIGTERM, signalled through ``cancel``): the trial folder is then
deleted, so the cell is simply redone on resume.
"""

from __future__ import annotations

import threading
import time
import traceback
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from depthlab._checks import check_positive_finite
from depthlab.io import harbor_writer
from depthlab.io.harbor_models import HealthcheckConfig
from depthlab.io.harbor_records import ExceptionInfoRecord, TimingInfoRecord, TrialConfigRecord
from depthlab.runner.agent import AgentContext
from depthlab.runner.container import ContainerLimits, TaskContainer
from depthlab.runner.errors import (
    AgentTimeoutError,
    CancelledError,
    ContainerExitedError,
    HealthcheckError,
    NonZeroAgentExitCodeError,
    RewardFileNotFoundError,
)
from depthlab.runner.image import ensure_image
from depthlab.runner.output import JobDir, utc_now, write_json, write_text
from depthlab.runner.profiles import RunSettings
from depthlab.runner.task import TaskSpec
from depthlab.runner.verifier import resolve_env
from depthlab.runner.verifier_env import run_verifier, save_artifacts

# a container's deadline beyond its trial's longest run: copying files, starting the shell
_LIFETIME_MARGIN_SEC = 600.0
# a healthcheck try given timeout_sec = 0 (Harbor's docker exec then sets no limit): bounded all the same
_UNTIMED_TRY_SEC = 3600.0


class Agent(Protocol):
    """What :func:`run_trial` needs from an agent (TerminusAgent, OracleAgent)."""

    name: str
    version: str

    @property
    def model_name(self) -> str | None: ...

    def config_kwargs(self) -> dict[str, Any]: ...

    def run(
        self,
        box: TaskContainer,
        task: TaskSpec,
        agent_dir: Path,
        deadline: float,
        context: AgentContext,
        *,
        timeout_sec: float | None = None,
    ) -> None: ...


@dataclass(frozen=True)
class TrialOutcome:
    """The summary of one finished trial (its full record is ``trial_dir/result.json``)."""

    trial_dir: Path
    task: str
    rewards: dict[str, float] | None
    exception: str | None
    message: str | None
    n_turns: int | None
    #: A multi-step trial's first step that did not pass, as ``"<index> <name>"`` (else None).
    failed_step: str | None = None

    @property
    def reward(self) -> float | None:
        return None if not self.rewards else self.rewards.get("reward", next(iter(self.rewards.values())))

    @property
    def status(self) -> str:
        """``pass``, ``fail`` or ``invalid`` by the loaders' leaderboard rule."""
        from depthlab.io.status import trial_status

        return trial_status(self.reward, self.exception, "leaderboard")


def run_trial(
    task: TaskSpec,
    agent: Agent,
    job: JobDir,
    *,
    docker_client: Any,
    limits: ContainerLimits | None = None,
    settings: RunSettings | None = None,
    dataset: str | None = None,
    agent_timeout_sec: float | None = None,
    verifier_timeout_sec: float | None = None,
    cancel: threading.Event | None = None,
    source: str | None = None,
) -> TrialOutcome:
    """Run ``agent`` on ``task`` once in a fresh container and write the trial folder into ``job``.

    Parameters
    ----------
    task : TaskSpec
        From :func:`depthlab.runner.load_task`.
    agent : TerminusAgent or OracleAgent
    job : JobDir
        The job folder the trial is written into.
    docker_client : docker.DockerClient
    limits : ContainerLimits, optional
        The container's limits; default: ``settings.limits(task)``.
    settings : RunSettings, optional
        The profile and options (default: the ``harbor`` profile); its ``force_build`` decides
        whether a prebuilt ``docker_image`` is used.
    dataset : str, optional
        The name of the dataset the task belongs to, recorded as the trial's ``source`` (Harbor's
        word; default: the task folder's parent name).
    agent_timeout_sec, verifier_timeout_sec : float, optional
        Override the task's timeouts (positive, finite).
    cancel : threading.Event, optional
        When set, the trial stops at the next step, its folder is deleted and CancelledError is raised.
    source : str, optional
        Deprecated alias of ``dataset`` (a DeprecationWarning; see the glossary's ``source``).

    Returns
    -------
    TrialOutcome

    Examples
    --------
    >>> import docker, depthlab.runner as runner  # doctest: +SKIP
    >>> job = runner.JobDir(Path("jobs"), "demo", {})  # doctest: +SKIP
    >>> task = runner.load_task("tasks/hello")  # doctest: +SKIP
    >>> run_trial(task, runner.OracleAgent(), job, docker_client=docker.from_env())  # doctest: +SKIP
    """
    settings = settings or RunSettings()
    limits = limits or settings.limits(task)
    agent_timeout = _timeout(agent_timeout_sec, "agent_timeout_sec", task.agent_timeout_sec)
    verifier_timeout = _timeout(verifier_timeout_sec, "verifier_timeout_sec", task.verifier_timeout_sec)
    dataset = _dataset_name(dataset, source, "run_trial") or task.path.parent.name
    trial_dir = job.new_trial_dir(task.name)
    config = _trial_config(task, agent, job, trial_dir.name, limits, dataset, agent_timeout_sec, verifier_timeout_sec)
    write_json(trial_dir / "config.json", config)
    started_at = utc_now()
    attempt = _Attempt(trial_dir, cancel)
    checksum = task.checksum
    try:
        attempt.check_cancel()
        lifetime = agent_timeout + verifier_timeout + _request_timeout(agent) + _LIFETIME_MARGIN_SEC
        lifetime += healthcheck_budget(task.healthcheck)
        box = attempt.open_box(docker_client, task, limits, settings, lifetime)
        if task.healthcheck is not None:  # Harbor's order: after the container starts, before the agent's setup
            run_healthcheck(box, task.healthcheck, check_cancel=attempt.check_cancel)
        attempt.check_cancel()
        attempt.phases["agent_setup"] = harbor_writer.phase(utc_now(), utc_now())
        _run_agent(attempt, box, task, agent, agent_timeout)
        attempt.check_cancel()
        if cause := box.check_disk():  # the agent's writes passed the task's storage bound
            raise RewardFileNotFoundError(f"The verifier could not start: {cause}")
        save_artifacts(box, task, trial_dir / "artifacts")  # kept on the host, as Harbor does: a regrade reads them
        box.check_alive()  # after the save, right before the verifier: a container stopped from inside is told apart
        begin = utc_now()
        try:
            attempt.rewards = run_verifier(
                docker_client,
                box,
                task,
                trial_dir / "verifier",
                timeout_sec=verifier_timeout,
                limits=limits,
                force_build=settings.force_build,
                name_hint=trial_dir.name,
            )
        finally:
            attempt.phases["verifier"] = harbor_writer.phase(begin, utc_now())
    except CancelledError:
        _discard(attempt.box, trial_dir)
        raise
    except Exception as failure:  # every fault becomes the trial's recorded exception
        failure = attempt.fault(failure)
        opened = attempt.box
        if opened is not None and isinstance(failure, ContainerExitedError) and (cause := opened.ended_from_inside()):
            # the agent stopped its own container: its fail, not an infrastructure failure
            failure = RewardFileNotFoundError(f"The verifier could not start: {cause}")
        attempt.error, attempt.occurred_at = failure, datetime.now().isoformat()
    finally:
        attempt.remove_box()
    attempt.discard_if_cancelled()
    exception = attempt.exception_record(trial_dir)
    result = harbor_writer.trial_result(
        config,
        result_id=str(uuid.uuid4()),
        task_name=task.name,
        task_path=task.path,
        trial_dir=trial_dir,
        source=dataset,
        task_checksum=checksum,
        agent=harbor_writer.agent_info(agent.name, agent.version, agent.model_name),
        agent_result=attempt.context.as_record(),
        rewards=attempt.rewards,
        exception=exception,
        started_at=started_at,
        finished_at=utc_now(),
        phases=attempt.phases,
    )
    # last, and flushed to disk: its presence marks the trial complete, so it must survive a power cut
    write_json(trial_dir / "result.json", result, fsync=True)
    error = attempt.error
    return TrialOutcome(
        trial_dir=trial_dir,
        task=task.name,
        rewards=attempt.rewards,
        exception=None if error is None else type(error).__name__,
        message=None if error is None else str(error),
        n_turns=attempt.context.metadata.get("n_episodes"),
    )


class _Attempt:
    """What one trial gathered so far (its phases, agent context, rewards, container, error).

    Kept outside the steps that fill it, so a step that raises leaves the rest for the record.
    """

    def __init__(self, trial_dir: Path, cancel: threading.Event | None) -> None:
        self.trial_dir = trial_dir
        self.cancel = cancel
        self.phases: dict[str, TimingInfoRecord | None] = dict.fromkeys(harbor_writer.PHASES)
        self.context = AgentContext()
        self.rewards: dict[str, float] | None = None
        self.error: BaseException | None = None
        self.occurred_at = ""
        self.box: TaskContainer | None = None

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise CancelledError("The run was interrupted")

    def open_box(
        self,
        docker_client: Any,
        task: TaskSpec,
        limits: ContainerLimits,
        settings: RunSettings,
        lifetime: float,
        image: str | None = None,
    ) -> TaskContainer:
        """The task's image (built if needed; ``image``: that one instead) and a started container living at
        most ``lifetime`` seconds."""
        begin = utc_now()
        if image is None:
            image = ensure_image(docker_client, task, force_build=settings.force_build, network=limits.build_network)
        box = TaskContainer(
            docker_client,
            image,
            limits,
            name_hint=self.trial_dir.name,
            lifetime_sec=lifetime,
            environment=resolve_env(task.environment_env, f"The task {task.name!r}: [environment.env]"),
        )
        self.box = box.start()
        self.phases["environment_setup"] = harbor_writer.phase(begin, utc_now())
        return self.box

    def fault(self, failure: Exception) -> Exception:
        """The exception to record for ``failure``; an interrupt discards the trial and raises CancelledError."""
        if self.cancel is not None and self.cancel.is_set():
            _discard(self.box, self.trial_dir)
            raise CancelledError("The run was interrupted") from None
        if self.box is not None and _is_docker_error(failure):
            return _container_fault(self.box, failure)
        return failure

    def remove_box(self) -> None:
        if self.box is not None:
            self.box.remove()

    def discard_if_cancelled(self) -> None:
        """An interrupt that came while the trial ran discards its folder (CancelledError)."""
        if self.cancel is not None and self.cancel.is_set():
            _discard(None, self.trial_dir)
            raise CancelledError("The run was interrupted")

    def exception_record(self, where: Path) -> ExceptionInfoRecord | None:
        """Harbor's ``exception_info`` of the recorded error (None without one); its traceback goes to ``where``."""
        return _exception_record(self.error, self.occurred_at, where)


def _exception_record(error: BaseException | None, occurred_at: str, where: Path) -> ExceptionInfoRecord | None:
    """Harbor's ``exception_info`` for ``error`` (None for none), its traceback written to ``where/exception.txt``."""
    if error is None:
        return None
    text = "".join(traceback.format_exception(error))
    write_text(where / "exception.txt", text)
    return harbor_writer.exception_info(type(error).__name__, str(error), text, occurred_at)


def run_healthcheck(
    box: TaskContainer,
    check: HealthcheckConfig,
    *,
    user: str | None = None,
    check_cancel: Callable[[], None] | None = None,
) -> None:
    """Run ``check`` in ``box`` until it passes; raise ``HealthcheckError`` when its retries are spent.

    Harbor 0.26's rule (``BaseEnvironment.run_healthcheck``): ``bash -c command`` as ``user`` (default:
    the image's), each try limited to ``int(timeout_sec)`` seconds; a failed try within
    ``start_period_sec`` of the first is not counted and the next comes after ``start_interval_sec``;
    after it, ``retries`` failures in a row fail the check, ``interval_sec`` apart. A try that runs
    past its limit is Harbor's ``RuntimeError("Command timed out after N seconds")``, which ends the
    check at once (Harbor does not catch it either). Both are infrastructure failures of the trial
    (invalid), never the model's fail. ``check_cancel`` is called before every try (an interrupt
    stops a long start period).
    """
    limit = int(check.timeout_sec)  # Harbor passes whole seconds, and no limit for 0
    start_period_end = time.monotonic() + check.start_period_sec
    failures = 0
    while True:
        if check_cancel is not None:
            check_cancel()
        in_start_period = time.monotonic() < start_period_end
        try:
            code, _ = box.exec(["bash", "-c", check.command], timeout=limit or _UNTIMED_TRY_SEC, user=user)
        except TimeoutError:
            raise RuntimeError(f"Command timed out after {limit} seconds") from None
        if code == 0:
            return
        if in_start_period:
            time.sleep(check.start_interval_sec)
            continue
        failures += 1
        if failures >= check.retries:
            raise HealthcheckError(f"Healthcheck failed after {check.retries} consecutive retries: {check.command}")
        time.sleep(check.interval_sec)


def healthcheck_budget(check: HealthcheckConfig | None) -> float:
    """The longest ``check`` can run (seconds), for the container's lifetime; 0 without one."""
    if check is None:
        return 0.0
    try_sec = int(check.timeout_sec) or _UNTIMED_TRY_SEC
    start_tries = check.start_period_sec / max(check.start_interval_sec, 0.1) + 1
    return check.start_period_sec + start_tries * try_sec + check.retries * (try_sec + check.interval_sec)


def _run_agent(attempt: _Attempt, box: TaskContainer, task: TaskSpec, agent: Agent, timeout: float) -> None:
    """The agent's phase; its timeout is recorded and the trial goes on to the verifier (as Harbor's)."""
    begin = utc_now()
    context = attempt.context
    try:
        deadline = time.monotonic() + timeout
        agent.run(box, task, attempt.trial_dir / "agent", deadline, context, timeout_sec=timeout)
    except AgentTimeoutError as timeout_error:  # Harbor verifies a timed-out agent's work all the same
        attempt.error, attempt.occurred_at = timeout_error, datetime.now().isoformat()
    except (NonZeroAgentExitCodeError, ContainerExitedError) as failure:
        # a fork bomb the agent left, or its stopping the container, makes its own commands fail too:
        # the same fail as when the verifier cannot start, with its cause (a command killed by the
        # container's end exits 137: the container is waited for a moment)
        killed = isinstance(failure, ContainerExitedError) or context.metadata.get("exit_code") == 137
        if cause := box.ended_from_inside(wait_sec=2.0 if killed else 0.0) or box.at_pid_limit():
            raise RewardFileNotFoundError(f"The verifier could not start: {cause}") from None
        raise
    finally:
        attempt.phases["agent_execution"] = harbor_writer.phase(begin, utc_now())


def _trial_config(
    task: TaskSpec,
    agent: Agent,
    job: JobDir,
    name: str,
    limits: ContainerLimits,
    dataset: str,
    agent_timeout_sec: float | None,
    verifier_timeout_sec: float | None,
) -> TrialConfigRecord:
    return harbor_writer.trial_config(
        harbor_writer.task_config(task.path, dataset),
        name,
        job.path,
        harbor_writer.agent_config(
            agent.name, agent.model_name, agent.config_kwargs(), override_timeout_sec=agent_timeout_sec
        ),
        job_id=job.id,
        environment=harbor_writer.environment_config(
            "docker",
            {**limits.as_record(), "shell": "tmux when the image has it (agent metadata 'terminal'), else exec-socket"},
        ),
        verifier=harbor_writer.verifier_config(verifier_timeout_sec),
    )


def _dataset_name(dataset: str | None, source: str | None, function: str) -> str | None:
    """``dataset``, or the deprecated ``source`` it replaced (a DeprecationWarning; both given: TypeError).

    The runner's parameter was ``source``, Harbor's word, which in depthlab's tables is a file path
    (docs/glossary.md).

    Examples
    --------
    >>> _dataset_name("terminal-bench", None, "run_trial")
    'terminal-bench'
    """
    if source is None:
        return dataset
    if dataset is not None:
        raise TypeError(f"{function}() got both 'dataset' and its deprecated alias 'source': pass 'dataset' only")
    warnings.warn(
        f"The 'source' parameter of {function} is deprecated: pass dataset= (the dataset's name)",
        DeprecationWarning,
        stacklevel=3,
    )
    return source


def _discard(box: TaskContainer | None, trial_dir: Path) -> None:
    import shutil

    if box is not None:
        box.remove()
    shutil.rmtree(trial_dir, ignore_errors=True)


def _is_docker_error(error: BaseException) -> bool:
    import docker.errors

    return isinstance(error, docker.errors.DockerException | ConnectionError | BrokenPipeError)


def _container_fault(box: TaskContainer, error: Exception) -> Exception:
    """Name a Docker error after what happened to the container, when it died."""
    try:
        box.check_alive()
    except ContainerExitedError as died:
        return died
    except Exception:
        return error
    return error


def _timeout(override: float | None, name: str, task_value: float) -> float:
    if override is None:
        return task_value
    return check_positive_finite(override, name, "run_trial")


def _request_timeout(agent: Agent) -> float:
    """How long one model request may outlast the agent's deadline (0 for agents without a model)."""
    value = agent.config_kwargs().get("request_timeout_sec")
    return float(value) if isinstance(value, int | float) else 0.0
