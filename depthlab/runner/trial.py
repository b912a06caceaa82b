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
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from depthlab._checks import check_positive_finite
from depthlab.io import harbor_writer
from depthlab.runner.agent import AgentContext
from depthlab.runner.container import ContainerLimits, TaskContainer
from depthlab.runner.errors import (
    AgentTimeoutError,
    CancelledError,
    ContainerExitedError,
    NonZeroAgentExitCodeError,
    RewardFileNotFoundError,
)
from depthlab.runner.image import ensure_image
from depthlab.runner.output import JobDir, utc_now, write_json, write_text
from depthlab.runner.profiles import RunSettings
from depthlab.runner.task import TaskSpec
from depthlab.runner.verifier_env import run_verifier

# a container's deadline beyond its trial's longest run: copying files, starting the shell
_LIFETIME_MARGIN_SEC = 600.0


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
    source: str | None = None,
    agent_timeout_sec: float | None = None,
    verifier_timeout_sec: float | None = None,
    cancel: threading.Event | None = None,
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
    source : str, optional
        Dataset name recorded as the trial's ``source`` (default: the task folder's parent name).
    agent_timeout_sec, verifier_timeout_sec : float, optional
        Override the task's timeouts (positive, finite).
    cancel : threading.Event, optional
        When set, the trial stops at the next step, its folder is deleted and CancelledError is raised.

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
    source = source or task.path.parent.name
    trial_dir = job.new_trial_dir(task.name)
    config = _trial_config(task, agent, job, trial_dir.name, limits, source, agent_timeout_sec, verifier_timeout_sec)
    write_json(trial_dir / "config.json", config)
    started_at = utc_now()
    phases: dict[str, dict[str, str] | None] = dict.fromkeys(harbor_writer.PHASES)
    context = AgentContext()
    rewards: dict[str, float] | None = None
    error: BaseException | None = None
    occurred_at: str | None = None
    box: TaskContainer | None = None
    checksum = task.checksum

    def check_cancel() -> None:
        if cancel is not None and cancel.is_set():
            raise CancelledError("The run was interrupted")

    try:
        check_cancel()
        begin = utc_now()
        image = ensure_image(docker_client, task, force_build=settings.force_build, network=limits.build_network)
        lifetime = agent_timeout + verifier_timeout + _request_timeout(agent) + _LIFETIME_MARGIN_SEC
        box = TaskContainer(docker_client, image, limits, name_hint=trial_dir.name, lifetime_sec=lifetime).start()
        phases["environment_setup"] = {"started_at": begin, "finished_at": utc_now()}
        check_cancel()
        phases["agent_setup"] = {"started_at": utc_now(), "finished_at": utc_now()}
        begin = utc_now()
        try:
            deadline = time.monotonic() + agent_timeout
            agent.run(box, task, trial_dir / "agent", deadline, context, timeout_sec=agent_timeout)
        except AgentTimeoutError as timeout:  # Harbor verifies a timed-out agent's work all the same
            error, occurred_at = timeout, datetime.now().isoformat()
        except (NonZeroAgentExitCodeError, ContainerExitedError) as failure:
            # a fork bomb the agent left, or its stopping the container, makes its own commands fail too:
            # the same fail as when the verifier cannot start, with its cause (a command killed by the
            # container's end exits 137: the container is waited for a moment)
            killed = isinstance(failure, ContainerExitedError) or context.metadata.get("exit_code") == 137
            if cause := box.ended_from_inside(wait_sec=2.0 if killed else 0.0) or box.at_pid_limit():
                raise RewardFileNotFoundError(f"The verifier could not start: {cause}") from None
            raise
        finally:
            phases["agent_execution"] = {"started_at": begin, "finished_at": utc_now()}
        check_cancel()
        if cause := box.check_disk():  # the agent's writes passed the task's storage bound
            raise RewardFileNotFoundError(f"The verifier could not start: {cause}")
        box.check_alive()
        begin = utc_now()
        try:
            rewards = run_verifier(
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
            phases["verifier"] = {"started_at": begin, "finished_at": utc_now()}
    except CancelledError:
        _discard(box, trial_dir)
        raise
    except Exception as failure:  # every fault becomes the trial's recorded exception
        if cancel is not None and cancel.is_set():
            _discard(box, trial_dir)
            raise CancelledError("The run was interrupted") from None
        if box is not None and _is_docker_error(failure):
            failure = _container_fault(box, failure)
        if box is not None and isinstance(failure, ContainerExitedError) and (cause := box.ended_from_inside()):
            # the agent stopped its own container: its fail, not an infrastructure failure
            failure = RewardFileNotFoundError(f"The verifier could not start: {cause}")
        error, occurred_at = failure, datetime.now().isoformat()
    finally:
        if box is not None:
            box.remove()
    if cancel is not None and cancel.is_set():
        _discard(None, trial_dir)
        raise CancelledError("The run was interrupted")
    exception = None
    if error is not None:
        text = "".join(traceback.format_exception(error))
        write_text(trial_dir / "exception.txt", text)
        exception = harbor_writer.exception_info(type(error).__name__, str(error), text, occurred_at or "")
    result = harbor_writer.trial_result(
        config,
        result_id=str(uuid.uuid4()),
        task_name=task.name,
        task_path=task.path,
        trial_dir=trial_dir,
        source=source,
        task_checksum=checksum,
        agent=harbor_writer.agent_info(agent.name, agent.version, agent.model_name),
        agent_result=context.as_record(),
        rewards=rewards,
        exception=exception,
        started_at=started_at,
        finished_at=utc_now(),
        phases=phases,
    )
    # last, and flushed to disk: its presence marks the trial complete, so it must survive a power cut
    write_json(trial_dir / "result.json", result, fsync=True)
    return TrialOutcome(
        trial_dir=trial_dir,
        task=task.name,
        rewards=rewards,
        exception=None if error is None else type(error).__name__,
        message=None if error is None else str(error),
        n_turns=context.metadata.get("n_episodes"),
    )


def _trial_config(
    task: TaskSpec,
    agent: Agent,
    job: JobDir,
    name: str,
    limits: ContainerLimits,
    source: str,
    agent_timeout_sec: float | None,
    verifier_timeout_sec: float | None,
) -> dict[str, Any]:
    return harbor_writer.trial_config(
        harbor_writer.task_config(task.path, source),
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
