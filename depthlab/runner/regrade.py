"""A recorded trial graded again by its task's verifier now, no agent: ``harbor trial regrade`` on the local runner.

Harbor 0.26's rule (``harbor.trial.regrade``: ``RegradeTrial``, and ``MultiStepRegradeTrial`` for a
``[[steps]]`` task), followed step for step, so a regrade means the same on both engines:

* Every verifier of the task runs apart (``separate`` mode): a shared-mode verifier needs the agent's
  container, gone once the trial ended (:func:`depthlab.engines._versions.regrade_blocker` decides it
  before any regrade is asked for; here it is refused again, with its path).
* A single-step trial: its ``agent/`` and ``artifacts/`` are copied into a new trial folder and the
  verifier runs in a fresh container seeded with the saved artifacts.
* A multi-step trial: its recorded steps must be the task's declared steps, by name and in order (a
  trial a gate stopped early has no record of its later steps to grade: not regradable, as in Harbor).
  Each step's ``steps/<name>/agent/`` and ``steps/<name>/artifacts/`` are copied, and each step's own
  verifier runs in a fresh container on that step's artifacts: what the agent's container held when
  that step's agent ended (:func:`depthlab.runner.multistep.run_multistep_trial` saves them, as Harbor
  does). No gate applies: every step is graded. The trial's reward is the task's reward strategy over
  the steps (:func:`depthlab.io.harbor_writer.multi_step_rewards`); when a step's verifier fails, the
  trial has no reward and a ``RegradeError`` naming the steps, the step its own exception.
* An agent's error the source recorded (one that occurred before its verifier started) is kept, on
  the trial and on each step; a verifier error of the source is never carried.
* ``result.json`` is the source's with a new id and name, the task's checksum now, the new verdict and
  ``config.source_trial`` (``{"action": "regrade", "type": "local", "path": source}``).
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from depthlab.io import harbor_writer
from depthlab.io.harbor import read_model
from depthlab.io.harbor_records import (
    ExceptionInfoRecord,
    StepResultRecord,
    TimingInfoRecord,
    TrialConfigRecord,
    TrialResultRecord,
    VerifierResultRecord,
)
from depthlab.runner.output import new_trial_dir, utc_now, write_json
from depthlab.runner.profiles import RunSettings
from depthlab.runner.task import TaskSpec
from depthlab.runner.trial import _exception_record
from depthlab.runner.verifier_env import restore_artifacts, verify_apart

__all__ = ["RegradeError", "regrade_trial"]

_MANIFEST = Path("artifacts") / "manifest.json"


class RegradeError(Exception):
    """A step's fresh verification failed, so the regraded trial has no reward (Harbor's ``RegradeError``)."""


def regrade_trial(
    source: Path,
    task: TaskSpec,
    job_dir: Path,
    *,
    docker_client: Any,
    settings: RunSettings | None = None,
) -> Path:
    """Grade the recorded trial ``source`` again with ``task``'s verifier now; the new trial folder in ``job_dir``.

    What ``harbor trial regrade`` does, for a single-step or a multi-step trial (module docstring).

    Raises
    ------
    ValueError
        When a verifier of ``task`` does not run apart (shared mode); when ``source`` has no readable
        ``result.json`` and ``config.json``, or lacks the saved artifacts a verifier grades (a trial
        recorded before the runner kept them: graded on nothing, it would fail a trial that may have
        passed); for a multi-step ``task``, when ``source``'s recorded steps are not its declared ones.
    """
    names = [step.name for step in task.steps]
    if task.multi_step:
        shared = [step.name for step in task.steps if task.for_step(step).verifier_mode != "separate"]
    else:
        shared = [] if task.verifier_mode == "separate" else [str(task.path)]
    if shared:
        where = f"its step(s) {', '.join(shared)} verify" if task.multi_step else "its verifier runs"
        raise ValueError(f"{task.path}: {where} in shared mode, so {source} cannot be regraded")
    parts = [Path("steps") / name for name in names] if task.multi_step else [Path()]
    if not task.multi_step:
        _check_artifacts(source, parts)
    config = read_model(source / "config.json", TrialConfigRecord)
    recorded = read_model(source / "result.json", TrialResultRecord)
    if not isinstance(config, TrialConfigRecord) or not isinstance(recorded, TrialResultRecord):
        why = config if isinstance(config, str) else recorded if isinstance(recorded, str) else "a file absent"
        raise ValueError(f"{source}: not a trial to regrade ({why})")
    if task.multi_step:
        ran = [step.step_name for step in recorded.step_results or ()]
        if ran != names:
            raise ValueError(
                f"{source}: its recorded steps {ran} are not the task's {names} (a regrade grades every declared "
                "step, in order, as Harbor's does)"
            )
        _check_artifacts(source, parts)
    job_dir.mkdir(parents=True, exist_ok=True)
    trial_dir = new_trial_dir(job_dir, task.name)  # the job's config.json is the source job's (the engine's copy)
    for part in parts:
        for kept in ("agent", "artifacts"):
            if (source / part / kept).is_dir():
                shutil.copytree(source / part / kept, trial_dir / part / kept, symlinks=True)
    config = msgspec.structs.replace(
        config,
        trial_name=trial_dir.name,
        trials_dir=str(job_dir),
        source_trial={"action": "regrade", "type": "local", "path": str(source)},
    )
    write_json(trial_dir / "config.json", config)
    grade = _Grader(docker_client, settings or RunSettings())
    begin = utc_now()
    steps = recorded.step_results
    if task.multi_step:
        rewards, exception, steps = _grade_steps(grade, task, recorded.step_results or [], trial_dir)
        verifier = harbor_writer.phase(begin, utc_now())
    else:
        rewards, fault, verifier = grade(task, trial_dir)
        exception = _exception_record(fault, datetime.now().isoformat(), trial_dir) or _agent_exception(
            recorded.exception_info, recorded.verifier, recorded.verifier_result
        )
    result = msgspec.structs.replace(
        recorded,
        id=str(uuid.uuid4()),
        trial_name=trial_dir.name,
        trial_uri=trial_dir.absolute().as_uri(),
        task_checksum=task.checksum,
        config=config,
        verifier_result=VerifierResultRecord(rewards=rewards) if rewards is not None else None,
        exception_info=exception,
        verifier=verifier,
        step_results=steps,
        started_at=begin,  # the regrade's own span, as Harbor's regrade records it
        finished_at=utc_now(),
    )
    result = msgspec.structs.replace(result, reward_valid=result.harbor_reward_valid())  # the new verdict's
    write_json(trial_dir / "result.json", result, fsync=True)
    return trial_dir


def _check_artifacts(source: Path, parts: Sequence[Path]) -> None:
    """Refuse ``source`` when a part of it (the trial, or each step's folder) has no saved artifacts."""
    for part in parts:
        if not (source / part / _MANIFEST).is_file():
            raise ValueError(f"{source}: no {part / _MANIFEST} (recorded before the runner kept artifacts)")


def _grade_steps(
    grade: _Grader, task: TaskSpec, kept: Sequence[StepResultRecord], trial_dir: Path
) -> tuple[dict[str, float] | None, ExceptionInfoRecord | None, list[StepResultRecord]]:
    """Each step of ``task`` graded on its own saved artifacts: the trial's rewards, its exception, its steps.

    Every step is graded (no gate); the rewards are the task's strategy over the steps, or None with a
    ``RegradeError`` when a step's verifier failed (Harbor's ``MultiStepRegradeTrial._run``).
    """
    steps: list[StepResultRecord] = []
    step_rewards: list[dict[str, float] | None] = []
    failed: list[str] = []
    for step, record in zip(task.steps, kept, strict=True):
        step_dir = trial_dir / "steps" / step.name
        rewards, fault, timing = grade(task.for_step(step), step_dir)
        exception = _exception_record(fault, datetime.now().isoformat(), step_dir)
        if exception is None:
            exception = _agent_exception(record.exception_info, record.verifier, record.verifier_result)
        steps.append(
            harbor_writer.step_result(
                step.name,
                agent_result=record.agent_result,
                rewards=rewards,
                exception=exception,
                agent_execution=record.agent_execution,
                verifier=timing,
            )
        )
        step_rewards.append(rewards)
        if rewards is None:
            failed.append(repr(step.name))
    if failed:
        fault = RegradeError(
            f"Fresh verification failed for regrade step(s) {', '.join(failed)}; no trial reward was produced."
        )
        return None, _exception_record(fault, datetime.now().isoformat(), trial_dir), steps
    return harbor_writer.multi_step_rewards(step_rewards, task.reward_strategy), None, steps


class _Grader:
    """One verifier run in a fresh container on a folder's saved artifacts: (rewards or None, fault, timing)."""

    def __init__(self, docker_client: Any, settings: RunSettings) -> None:
        self.docker_client = docker_client
        self.settings = settings

    def __call__(
        self, spec: TaskSpec, folder: Path
    ) -> tuple[dict[str, float] | None, Exception | None, TimingInfoRecord]:
        begin = utc_now()
        try:
            rewards = verify_apart(
                self.docker_client,
                spec,
                folder / "verifier",
                lambda apart: restore_artifacts(folder / "artifacts", spec, apart),
                timeout_sec=spec.verifier_timeout_sec,
                limits=self.settings.limits(spec),
                force_build=self.settings.force_build,
                name_hint=folder.name,
            )
        except Exception as failure:  # the regrade's fault is its recorded exception, as a trial's
            return None, failure, harbor_writer.phase(begin, utc_now())
        return rewards, None, harbor_writer.phase(begin, utc_now())


def _agent_exception(
    exception: ExceptionInfoRecord | None,
    verifier: TimingInfoRecord | None,
    verifier_result: VerifierResultRecord | None,
) -> ExceptionInfoRecord | None:
    """The source's exception when it was its agent's (kept by a regrade), None when it was its verifier's.

    Harbor's ``RegradeTrial._source_agent_exception``: an exception that occurred no later than the
    verifier started is the agent's; with no verifier start recorded, it is the agent's when a verifier
    result exists or no verifier ran at all.

    Examples
    --------
    >>> from depthlab.io.harbor_writer import exception_info, phase
    >>> timeout = exception_info("AgentTimeoutError", "", "", "2026-01-01T00:00:00")
    >>> _agent_exception(timeout, phase("2026-01-01T00:00:05Z", "2026-01-01T00:00:09Z"), None) is timeout
    True
    >>> late = exception_info("VerifierTimeoutError", "", "", "2026-01-01T00:00:07")
    >>> _agent_exception(late, phase("2026-01-01T00:00:05Z", "2026-01-01T00:00:09Z"), None) is None
    True
    """
    if exception is None:
        return None
    started = _moment(verifier.started_at) if verifier is not None else None
    occurred = _moment(exception.occurred_at)
    if started is not None and occurred is not None:
        return exception if occurred <= started else None
    return exception if verifier_result is not None or verifier is None else None


def _moment(text: str | None) -> datetime | None:
    """An ISO time as an aware moment (a naive one, as the runner writes ``occurred_at``, in this machine's zone)."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.astimezone()
