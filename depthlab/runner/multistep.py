"""One trial of a multi-step task, as Harbor 0.26 runs it (``harbor.trial.multi_step``), with a cap on the whole run.

A ``[[steps]]`` task runs in one container, its steps in order. For each step:

1. before every step but the first, what a shared verifier left (``/tests``, ``/logs/verifier``)
   and the agent's log folder are emptied, so the next step's agent never sees the tests
   (``/logs/artifacts`` is kept, as under Harbor: a step's saved artifacts include what earlier
   steps published there);
2. ``steps/<name>/workdir/`` is copied into the container's working folder and its ``setup.sh``,
   if any, runs there with bash, then the step's ``[steps.healthcheck]`` (a failure of either is the
   step's exception and stops the trial; the task's ``[environment.healthcheck]`` ran once before
   the first step, a failure there the trial's exception);
3. a fresh agent gets the step's instruction (terminus-2 has no resume, so under Harbor each step
   starts a new conversation in the same container);
4. from the second step on, for an agent driven by a model, every process an earlier step's agent
   left is stopped (below, "Between the steps");
5. the step's artifacts are saved in ``steps/<name>/artifacts/`` with their ``manifest.json``, as
   Harbor keeps them (what a regrade grades that step on, :mod:`depthlab.runner.regrade`), and the
   step's verifier runs (``shared``: in the container; ``separate``: in a container of its
   own, :mod:`depthlab.runner.verifier_env`), also after an agent timeout or error, as Harbor's
   error policy grades them, with the task's shared ``tests/`` and the step's own over it in
   ``/tests`` (a helper the steps share is found there, a step's file wins a name clash);
6. the trial stops when the step raised with no reward, or when its reward misses its
   ``min_reward`` (a missing key counts as minus infinity); the steps after it are not run.

The trial's reward is the task's ``multi_step_reward_strategy`` over the steps that ran
(:func:`depthlab.io.harbor_writer.multi_step_rewards`: ``mean`` per key over the steps with a
reward, or the ``final`` step's). The trial folder is Harbor's multi-step layout: ``result.json``
with ``step_results`` and no top-level ``agent_result``, each step's files under
``steps/<name>/agent/``, ``steps/<name>/artifacts/`` and ``steps/<name>/verifier/``.

The cap on the whole run
------------------------
The stated cap K is the trial's turns in all (the paper's D of a segmented task counts turns over
the whole run). Each step's agent states and enforces the turns left (K minus the turns its earlier
steps used; :meth:`depthlab.runner.TerminusAgent.with_turns`), and a step's turns include
terminus-2's confirmation reply (every reply is a turn, as Harbor's ``n_episodes`` counts it).
When the turns are spent, each later step gets no agent turn but is still graded as the container
is, so the gates and the reward strategy decide the trial by Harbor's rules (an untouched step's
tests fail and its gate stops the trial). An oracle run has no turns.

Between the steps
-----------------
A step's tests arrive after its agent, so a process an earlier step's agent left knows when they
come and can write their reward. Before a step's tests (from the second step on, a step given no
turn included), the runner stops every process in the container that started before the end of the
previous step's agent and is not the container's own (those running when the first step's agent
began, its ``setup.sh``'s included): the rule of depthlab's guarded terminus-2 on ``--engine
harbor``, run from the same shell (:mod:`depthlab._guard_shell`, its ``kill`` section; start times
are clock ticks from ``/proc/<pid>/stat``). What this step's agent and its ``setup.sh`` started runs
on into its tests, as under Harbor. The stopped processes are listed in the step's
``agent_result.metadata.stopped_earlier_steps`` (Harbor's guard lists them under the same name).
So the waiter is stopped, and the step is graded as its agent left it, on both engines; the
integrity checks of :mod:`depthlab.runner.verifier` stay as they are for the current step's processes.
Oracle and replay runs are not stopped, as Harbor runs its own oracle unguarded: the preflight is
Harbor's on both engines.
"""

from __future__ import annotations

import shlex
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from depthlab._guard_shell import guard_sections
from depthlab.io import harbor_writer
from depthlab.io.harbor_models import HealthcheckConfig
from depthlab.io.harbor_records import ExceptionInfoRecord, StepResultRecord
from depthlab.io.harbor_task import TaskStep, passes_gate
from depthlab.io.multistep import main_reward
from depthlab.io.status import trial_status
from depthlab.runner.agent import AgentContext
from depthlab.runner.container import ContainerLimits, TaskContainer
from depthlab.runner.errors import CancelledError, HealthcheckError, RunnerError
from depthlab.runner.output import JobDir, utc_now, write_json
from depthlab.runner.profiles import RunSettings
from depthlab.runner.task import TaskSpec
from depthlab.runner.trial import (
    _LIFETIME_MARGIN_SEC,
    Agent,
    TrialOutcome,
    _Attempt,
    _dataset_name,
    _discard,
    _exception_record,
    _request_timeout,
    _timeout,
    _trial_config,
    healthcheck_budget,
    run_healthcheck,
    run_trial,
)
from depthlab.runner.verifier_env import run_verifier, save_artifacts

# emptied before every step but the first: the tests a shared verifier left, the agent's logs. Not
# /logs/artifacts: Harbor 0.26's Docker environment copies it out after each step and leaves the
# container's in place, so the next step sees what the last one published (checked on a Harbor oracle run)
_BETWEEN_STEPS = "rm -rf /tests /logs/verifier; mkdir -p /logs/agent && find /logs/agent -mindepth 1 -delete"
# the guard shell's mode that stops only what an earlier step's agent left (depthlab_guard.sh, "kill")
_EARLIER_STEPS_MODE = "earlier"


class StepSetupError(RunnerError):
    """A step's ``workdir/setup.sh`` failed (the step's exception; the trial stops)."""


class EarlierSteps:
    """Stops, before a step's tests, every process an earlier step's agent left (module docstring).

    Run from the guard's shell (:func:`depthlab._guard_shell.guard_sections`), as the Harbor guard
    runs it: :meth:`note_container` before the first step's agent, :meth:`after_agent` after each
    step's agent. A check that could not run stops nothing and says why (the integrity checks then
    still stand between a writer and its pass).
    """

    def __init__(self) -> None:
        self.keep: list[str] | None = None  # "pid:start" of the container's own processes
        self.since = ""  # the start (clock ticks) of the mark after the previous step's agent

    def note_container(self, box: TaskContainer) -> str:
        """Record the container's own processes (before the first step's agent); '' or why it could not."""
        sections = guard_sections()
        output, problem = _guard_shell(box, sections["chain"] + sections["processes"], "0")
        rows = [line.split(" ", 4) for line in output.splitlines() if line.startswith("P ")]
        if problem or not _lines(output, "N "):
            return problem or "the process listing printed nothing"
        self.keep = [f"{row[1]}:{row[3]}" for row in rows if len(row) >= 4]
        return ""

    def after_agent(self, box: TaskContainer, first: bool) -> dict[str, Any]:
        """After a step's agent: stop what an earlier step's agent left (not in the first); mark this moment.

        Returns what the step's agent metadata records: ``stopped_earlier_steps`` (from the second
        step on, the guard's ``S`` lines), ``stopped_earlier_steps_error`` when the stop could not run.
        """
        if self.keep is None:
            return {} if first else {"stopped_earlier_steps_error": "the container's own processes were not listed"}
        sections = guard_sections()
        settings = f"KEEP={shlex.quote(' '.join(self.keep))}\nMODE={_EARLIER_STEPS_MODE}\nSINCE={self.since}\n"
        script = sections["chain"] + settings + sections["kill"]
        output, problem = _guard_shell(box, script, "0")
        stopped = _lines(output, "S ")
        user = box.agent_user or box.image_user
        if stopped and user.split(":", 1)[0] not in ("0", "root"):
            # without CAP_KILL (the strict profile) root cannot signal another user's processes: their owner can
            again, _ = _guard_shell(box, script, user)
            stopped += _lines(again, "S ")
        mark = _lines(output, "N ")
        if mark:
            self.since = mark[0]
        elif not problem:
            problem = "the guard's shell printed no start time"
        if first:
            return {"stopped_earlier_steps_error": problem} if problem else {}
        by_pid: dict[str, str] = {}
        for line in stopped:  # a process that outlived a round is listed again: its first line, with its command
            by_pid.setdefault(line.split(" ", 1)[0], line)
        return {
            "stopped_earlier_steps": list(by_pid.values()),
            **({"stopped_earlier_steps_error": problem} if problem else {}),
        }


def _guard_shell(box: TaskContainer, script: str, user: str) -> tuple[str, str]:
    """The guard's shell run in ``box`` as ``user``: (its output, '' or why it could not run)."""
    try:
        code, output = box.exec(["sh", "-c", script], timeout=60, user=user)
    except Exception as error:  # the daemon's error too: the step goes on, the integrity checks still stand
        return "", f"{type(error).__name__}: {error}"
    text = output.decode(errors="replace")
    return text, "" if code == 0 else f"the guard's shell exited with code {code}: {text[-200:]!r}"


def _lines(text: str, prefix: str) -> list[str]:
    return [line[len(prefix) :] for line in text.splitlines() if line.startswith(prefix)]


def run_task_trial(task: TaskSpec, agent: Agent, job: JobDir, **options: Any) -> TrialOutcome:
    """One trial of ``task``: :func:`run_multistep_trial` for a ``[[steps]]`` task, else :func:`run_trial`.

    ``options`` are theirs (``docker_client``, ``limits``, ``settings``, ``dataset``, the timeouts, ``cancel``;
    ``source``, ``dataset``'s deprecated alias, with a DeprecationWarning).
    """
    if task.multi_step:
        return run_multistep_trial(task, agent, job, **options)
    return run_trial(task, agent, job, **options)


def run_multistep_trial(
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
    image: str | None = None,
    before_removal: Callable[[TaskContainer], None] | None = None,
) -> TrialOutcome:
    """Run ``agent`` on the multi-step ``task`` once in a fresh container; write the trial folder into ``job``.

    The parameters are :func:`depthlab.runner.run_trial`'s; the timeouts override every step's.
    ``image`` starts the container from that image instead of the task's (a snapshot of earlier
    steps, :mod:`depthlab.engines.replays`); ``before_removal`` is called with the container once every
    step ran, before it is removed (there it can be committed).
    ``agent``'s turns (its cap) are the whole run's (module docstring).

    Returns
    -------
    TrialOutcome
        ``rewards``: the trial's, by the task's reward strategy; ``n_turns``: the turns of all steps.

    Examples
    --------
    >>> import docker, depthlab.runner as runner  # doctest: +SKIP
    >>> task = runner.load_task("tasks/two-step")  # doctest: +SKIP
    >>> run_multistep_trial(task, runner.OracleAgent(), job, docker_client=docker.from_env())  # doctest: +SKIP
    """
    if not task.multi_step:
        raise ValueError(f"The task {task.name!r} has no [[steps]]: run it with run_trial")
    settings = settings or RunSettings()
    limits = limits or settings.limits(task)
    for name, value in (("agent_timeout_sec", agent_timeout_sec), ("verifier_timeout_sec", verifier_timeout_sec)):
        if value is not None:
            _timeout(value, name, value)
    dataset = _dataset_name(dataset, source, "run_multistep_trial") or task.path.parent.name
    trial_dir = job.new_trial_dir(task.name)
    config = _trial_config(task, agent, job, trial_dir.name, limits, dataset, agent_timeout_sec, verifier_timeout_sec)
    write_json(trial_dir / "config.json", config)
    started_at = utc_now()
    attempt = _Attempt(trial_dir, cancel)
    steps: list[StepResultRecord] = []
    step_rewards: list[dict[str, float] | None] = []
    budget: int | None = getattr(agent, "turn_budget", None)
    used = 0
    checksum = task.checksum
    specs = [(step, task.for_step(step)) for step in task.steps]
    earlier = EarlierSteps() if agent.model_name is not None else None  # Harbor's oracle runs unguarded
    try:
        attempt.check_cancel()
        lifetime = _lifetime([spec for _, spec in specs], agent, agent_timeout_sec, verifier_timeout_sec)
        lifetime += healthcheck_budget(task.healthcheck) + sum(map(healthcheck_budget, task.step_healthchecks.values()))
        box = attempt.open_box(docker_client, task, limits, settings, lifetime, image)
        if task.healthcheck is not None:  # once, before the first step (Harbor's trial-level check)
            run_healthcheck(box, task.healthcheck, check_cancel=attempt.check_cancel)
        attempt.phases["agent_setup"] = harbor_writer.phase(utc_now(), utc_now())
        verifier_begin = None
        for step, spec in specs:
            attempt.check_cancel()
            left = None if budget is None else max(budget - used, 0)
            record, rewards, turns = _run_step(
                box,
                step,
                spec,
                agent,
                left,
                trial_dir,
                docker_client=docker_client,
                limits=limits,
                settings=settings,
                agent_timeout_sec=agent_timeout_sec or spec.agent_timeout_sec,
                verifier_timeout_sec=verifier_timeout_sec or spec.verifier_timeout_sec,
                first=step.index == 1,
                check_cancel=attempt.check_cancel,
                earlier=earlier,
                healthcheck=task.step_healthchecks.get(step.name),
            )
            used += turns
            steps.append(record)
            step_rewards.append(rewards)
            verifier_begin = verifier_begin or (record.verifier.started_at if record.verifier is not None else None)
            stopped = record.exception_info is not None and rewards is None
            if stopped or not passes_gate(step, rewards):
                break
        if verifier_begin:
            attempt.phases["verifier"] = harbor_writer.phase(verifier_begin, utc_now())
        if before_removal is not None:
            before_removal(box)
    except CancelledError:
        _discard(attempt.box, trial_dir)
        raise
    except Exception as failure:  # a fault outside the steps (image, container): the trial's exception
        attempt.error, attempt.occurred_at = attempt.fault(failure), datetime.now().isoformat()
    finally:
        attempt.remove_box()
    attempt.discard_if_cancelled()
    exception = attempt.exception_record(trial_dir)
    rewards = harbor_writer.multi_step_rewards(step_rewards, task.reward_strategy) if step_rewards else None
    result = harbor_writer.trial_result(
        config,
        result_id=str(uuid.uuid4()),
        task_name=task.name,
        task_path=task.path,
        trial_dir=trial_dir,
        source=dataset,
        task_checksum=checksum,
        agent=harbor_writer.agent_info(agent.name, agent.version, agent.model_name),
        agent_result=None,
        rewards=rewards,
        exception=exception,
        started_at=started_at,
        finished_at=utc_now(),
        phases=attempt.phases,
        step_results=steps,
    )
    write_json(trial_dir / "result.json", result)  # last: its presence marks the trial complete
    return _outcome(task, trial_dir, rewards, exception, steps, len(specs), None if budget is None else used)


def _lifetime(
    specs: list[TaskSpec], agent: Agent, agent_timeout_sec: float | None, verifier_timeout_sec: float | None
) -> float:
    """The container's longest life: every step's agent and verifier timeouts, one request each, a margin."""
    lifetime = sum(
        (agent_timeout_sec or spec.agent_timeout_sec) + (verifier_timeout_sec or spec.verifier_timeout_sec)
        for spec in specs
    )
    return lifetime + len(specs) * _request_timeout(agent) + _LIFETIME_MARGIN_SEC


def _outcome(
    task: TaskSpec,
    trial_dir: Path,
    rewards: dict[str, float] | None,
    exception: ExceptionInfoRecord | None,
    steps: list[StepResultRecord],
    n_specs: int,
    n_turns: int | None,
) -> TrialOutcome:
    """The trial's summary: its first exception (the trial's, else a step's) and its first step that did not pass."""
    first = exception or next((step.exception_info for step in steps if step.exception_info), None)
    failed = next((index for index, record in enumerate(steps) if not _passed(record)), None)
    if failed is None and len(steps) < n_specs:
        failed = len(steps)  # every step run passed, yet the run stopped (a fault outside the steps)
    return TrialOutcome(
        trial_dir=trial_dir,
        task=task.name,
        rewards=rewards,
        exception=None if first is None else first.exception_type,
        message=None if first is None else first.exception_message,
        n_turns=n_turns,
        failed_step=None if failed is None else f"{failed + 1} {task.steps[failed].name}",
    )


def _passed(record: StepResultRecord) -> bool:
    """A step's pass by the loaders' rule (its main reward, its exception)."""
    rewards = harbor_writer.step_rewards(record)
    exception = record.exception_info.exception_type if record.exception_info is not None else None
    return trial_status(main_reward(rewards), exception, "leaderboard") == "pass"


def _run_step(
    box: TaskContainer,
    step: TaskStep,
    spec: TaskSpec,
    agent: Agent,
    left: int | None,
    trial_dir: Path,
    *,
    docker_client: Any,
    limits: ContainerLimits,
    settings: RunSettings,
    agent_timeout_sec: float,
    verifier_timeout_sec: float,
    first: bool,
    check_cancel: Any,
    earlier: EarlierSteps | None = None,
    healthcheck: HealthcheckConfig | None = None,
) -> tuple[StepResultRecord, dict[str, float] | None, int]:
    """One step: prepare, agent, verifier. Returns (its StepResult record, its rewards, the turns it used).

    ``earlier``: what stops, before the step's tests, the processes an earlier step's agent left (None: nothing).
    ``healthcheck``: the step's ``[steps.healthcheck]``, run after its ``setup.sh``, before its agent.
    """
    step_dir = trial_dir / "steps" / step.name
    context = AgentContext()
    rewards: dict[str, float] | None = None
    failure: BaseException | None = None
    occurred_at = ""
    agent_phase = verifier_phase = None
    try:
        _prepare(box, step, first)
    except Exception as problem:  # the step's setup failed: no agent, no verifier (Harbor's order)
        failure, occurred_at = problem, datetime.now().isoformat()
    if failure is None and healthcheck is not None:
        try:  # a try past its timeout (RuntimeError) is the trial's exception, as Harbor does not catch it
            run_healthcheck(box, healthcheck, user=box.agent_user, check_cancel=check_cancel)
        except HealthcheckError as problem:  # the step's, which stops the trial: no agent, no verifier
            failure, occurred_at = problem, datetime.now().isoformat()
    noted = ""
    if failure is None and first and earlier is not None:
        noted = earlier.note_container(box)  # after the first step's setup.sh, as the Harbor guard lists them
    if failure is None:
        check_cancel()
        begin = utc_now()
        try:
            if left == 0:  # the run's turns are spent: the step is graded as the container is
                context.metadata.update({"n_episodes": 0, "hit_cap": True, "turns_left": 0})
            else:
                runner = agent if left is None else agent.with_turns(left)  # type: ignore[attr-defined]
                deadline = time.monotonic() + agent_timeout_sec
                runner.run(box, spec, step_dir / "agent", deadline, context, timeout_sec=agent_timeout_sec)
                if left is not None:
                    context.metadata["turns_left"] = left
        except CancelledError:
            raise
        except Exception as problem:  # graded all the same, as Harbor's error policy grades agent errors
            failure, occurred_at = problem, datetime.now().isoformat()
        agent_phase = harbor_writer.phase(begin, utc_now())
        if earlier is not None:  # before the step's tests arrive
            context.metadata.update(earlier.after_agent(box, first))
            if noted:
                context.metadata["stopped_earlier_steps_error"] = noted
        check_cancel()
        begin = utc_now()
        try:
            save_artifacts(box, spec, step_dir / "artifacts")  # the step's, kept as Harbor keeps them: a regrade's
            box.check_alive()
            rewards = run_verifier(
                docker_client,
                box,
                spec,
                step_dir / "verifier",
                timeout_sec=verifier_timeout_sec,
                limits=limits,
                force_build=settings.force_build,
                name_hint=f"{trial_dir.name}-{step.index}",
            )
        except CancelledError:
            raise
        except Exception as problem:
            if failure is None:  # the agent's own error stays the step's
                failure, occurred_at = problem, datetime.now().isoformat()
        verifier_phase = harbor_writer.phase(begin, utc_now())
    exception = _exception_record(failure, occurred_at, step_dir)
    turns = int(context.metadata.get("n_episodes") or 0)
    record = harbor_writer.step_result(
        step.name,
        agent_result=context.as_record(),
        rewards=rewards,
        exception=exception,
        agent_execution=agent_phase,
        verifier=verifier_phase,
    )
    return record, rewards, turns


def _prepare(box: TaskContainer, step: TaskStep, first: bool) -> None:
    """Empty what the last step left for the agent to see, copy the step's workdir in, run its setup.sh."""
    if not first:
        code, output = box.exec(["sh", "-c", _BETWEEN_STEPS], timeout=60, user="0")
        if code != 0:
            raise StepSetupError(f"Emptying /tests and /logs before step {step.name!r} failed: {output[-300:]!r}")
    if step.workdir is None:
        return
    code, where = box.exec(["sh", "-c", "pwd"], timeout=30, user=box.agent_user)
    workdir = where.decode(errors="replace").strip() if code == 0 else "/"
    files = Path(step.workdir)
    for entry in sorted(files.iterdir()):
        box.put_directory(entry, f"{workdir.rstrip('/')}/{entry.name}")
    if (files / "setup.sh").is_file():
        script = f"{workdir.rstrip('/')}/setup.sh"
        code, output = box.exec(["bash", "-c", f"bash {shlex.quote(script)}"], timeout=600, user=box.agent_user)
        if code != 0:
            text = output[-500:].decode(errors="replace")
            raise StepSetupError(f"Step {step.name!r} setup.sh exited with code {code}: {text}")
