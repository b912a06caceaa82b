"""Replays, the checks' side: which replays a check gets, resumed from the job, read back as step verdicts.

A *replay* is one trial of a task by the replaying agent (:mod:`depthlab.engines.replays`: for
each step, the script its plan gives, or nothing; no model). Every replay is a trial folder of one
Harbor job (``<jobs_dir>/depthlab-check``), named in its ``config.json`` by its replay key
(``agent.kwargs.replay``) and the task's checksum, so a rerun finds the replays already done
(:class:`Replayer`) and runs only the others: killed and rerun, no replay is done twice and none is
lost (an interrupted trial, one without ``result.json``, is deleted and replayed, as Harbor resumes
a job).

The engine is chosen at one boundary: :class:`Replayer` takes an engine's replays
(:class:`depthlab.engines.replays.Replays`, from :meth:`depthlab.engines.LocalEngine.replays` or
:meth:`depthlab.engines.HarborEngine.replays`), hands it the requests, prints one progress line per
replay as it ends, and reads every trial back with :func:`read_replay` (each failed step's cause in
one line, :mod:`depthlab.checks.causes`); the checks above it never see the engine.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from depthlab.checks.causes import step_cause
from depthlab.engines.replays import AGENT_NAME, ReplayRequest, Replays
from depthlab.io import harbor_writer
from depthlab.io.harbor import read_trial_config, read_trial_result
from depthlab.io.harbor_models import TrialConfig, VerifierResult
from depthlab.io.multistep import main_reward
from depthlab.io.status import trial_status
from depthlab.runner.output import JobDir, remove_incomplete_trials

#: The job folder of every replay under ``jobs_dir``.
JOB_NAME = "depthlab-check"


@dataclass(frozen=True)
class StepRun:
    """One step of a replay: whether its checks passed, its main reward, the exception it raised, and
    why it failed in one line from the replay's own output (:func:`depthlab.checks.causes.step_cause`)."""

    passed: bool
    reward: float | None
    exception: str | None
    message: str | None
    cause: str | None = None


@dataclass(frozen=True)
class Replay:
    """One finished replay: its trial folder, its steps' results by step name, its seconds."""

    key: str
    trial_dir: Path
    steps: dict[str, StepRun]
    seconds: float
    reused: bool
    #: How the local engine started it (``agent.kwargs.start``): None from scratch with no choice made,
    #: else :data:`FROM_SNAPSHOT` or the reason it ran from scratch.
    start: str | None = None


class Replayer:
    """Runs replays on one engine into one job folder and finds the ones a previous run finished (module docstring).

    Parameters
    ----------
    jobs_dir : Path
        The jobs folder (``--jobs-dir``); the replays go to its ``depthlab-check`` job.
    engine : Replays
        The engine's replays (:meth:`depthlab.engines.LocalEngine.replays`,
        :meth:`depthlab.engines.HarborEngine.replays`).
    progress : callable, optional
        Called with one line per replay run, as it ends: the time since the check started, the task,
        the replay, its outcome and its own seconds.
    """

    def __init__(self, jobs_dir: Path, engine: Replays, progress: Callable[[str], None] | None = None) -> None:
        self.engine = engine
        self.progress = progress
        self.started = time.monotonic()
        job_path = Path(jobs_dir) / JOB_NAME
        if job_path.is_dir():
            remove_incomplete_trials(job_path)  # an interrupted replay: replayed again
        config = harbor_writer.job_config(
            "", "", [harbor_writer.agent_config(AGENT_NAME, None, harbor_writer.cap_kwargs(None))]
        )
        self.job = JobDir(Path(jobs_dir), JOB_NAME, config)
        self.done = self._finished()
        self.fresh: set[tuple[str, str, str]] = set()  # the replays run by this Replayer (not found done)
        self.ran = 0

    def _finished(self) -> dict[tuple[str, str, str], Path]:
        """(task name, task checksum, replay key) -> trial folder, for every finished replay in the job.

        The checksum is the original task's: a Harbor replay runs a copy of the task without gates
        (``agent.kwargs.task_checksum`` names the original), a local one the task itself."""
        found: dict[tuple[str, str, str], Path] = {}
        for result_file in sorted(self.job.path.glob("*/result.json")):
            read = read_trial_result(result_file)
            config = read_trial_config(result_file.parent / "config.json")
            if isinstance(read, str) or not isinstance(config, TrialConfig):
                continue  # not a finished replay of this job's shape: run again
            kwargs = config.agent_kwargs()
            replay = kwargs.get("replay")
            if read.result.task_name is None or not isinstance(replay, str):
                continue
            checksum = kwargs.get("task_checksum") or read.result.task_checksum or ""
            found[(read.result.task_name, str(checksum), replay)] = result_file.parent
        return found

    def replay(self, request: ReplayRequest) -> Replay:
        """The replay ``request`` asks for: found in the job when a run before finished it, else run now."""
        identity = (request.task.name, request.task.checksum, request.key)
        if identity not in self.done:
            self.prefetch([request])
        return read_replay(request.key, self.done[identity], reused=identity not in self.fresh)

    def prefetch(self, requests: Sequence[ReplayRequest]) -> None:
        """Run ``requests`` not finished before (each once) in one call of the engine: a batch.

        :meth:`replay` then finds them done. The engine writes each replay's trial as it finishes,
        so a batch cut short keeps the replays it finished and the next run does the rest."""
        todo: dict[tuple[str, str, str], ReplayRequest] = {}
        for request in requests:
            identity = (request.task.name, request.task.checksum, request.key)
            if identity not in self.done:
                todo.setdefault(identity, request)
        if not todo:
            return
        trial_dirs = self.engine(list(todo.values()), self.job, self._ended if self.progress else None)
        for identity, trial_dir in zip(todo, trial_dirs, strict=True):
            self.done[identity] = trial_dir
            self.fresh.add(identity)
        self.ran += len(todo)

    def _ended(self, request: ReplayRequest, trial_dir: Path) -> None:
        """Say one replay ended (``progress``): when, which, how, in how long."""
        if self.progress is None:
            return
        elapsed = int(time.monotonic() - self.started)
        try:
            replay = read_replay(request.key, trial_dir, reused=False)
        except ValueError as error:
            said, seconds = f"unreadable ({error})", 0.0
        else:
            said, seconds = replay_outcome(replay), replay.seconds
        clock = f"{elapsed // 3600}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d}"
        self.progress(f"[{clock}] {request.task.name.rsplit('/', 1)[-1]} {request.key}: {said} ({seconds:.0f} s)")

    def finish(self) -> None:
        """Write the job's final ``result.json``; the engine removes what it kept (its snapshots)."""
        self.job.update_result(finished=True)
        self.close()

    def close(self) -> None:
        """Let the engine remove what it kept between replays (the local engine's snapshots and task images)."""
        self.engine.close()


def read_replay(key: str, trial_dir: Path, *, reused: bool) -> Replay:
    """A finished replay read back from its trial folder (single-step: one step, named by the task)."""
    read = read_trial_result(trial_dir / "result.json")
    if isinstance(read, str):
        raise ValueError(f"the replay's result cannot be read: {read}")
    result = read.result
    records = [(step.step_name, step.verifier_result, step.exception_info) for step in read.steps]
    if not records:
        records = [(result.task_name, result.verifier_result or None, result.exception_info)]
    steps = {}
    for name, verified, exception in records:
        reward = main_reward(verified.rewards if isinstance(verified, VerifierResult) else None)
        passed = trial_status(reward, None, "all") == "pass"  # the pass threshold, io.status's
        kind = exception.exception_type if exception is not None else None
        message = exception.exception_message if exception is not None else None
        folder = trial_dir / "steps" / str(name) if read.steps else trial_dir
        cause = None if passed and kind is None else step_cause(folder, kind, message)
        steps[str(name)] = StepRun(passed, reward, kind, message, cause)
    trial_exception = result.exception_info
    if trial_exception is not None and read.steps:  # a fault outside the steps (image, container): every step not
        # run says so (a single-step trial's exception is its step's, read above)
        kind, message = trial_exception.exception_type, trial_exception.exception_message
        steps.setdefault("", StepRun(False, None, kind, message, step_cause(trial_dir, kind, message)))
    config = read_trial_config(trial_dir / "config.json")
    start = config.agent_kwargs().get("start") if isinstance(config, TrialConfig) else None
    return Replay(key, trial_dir, steps, _seconds(result.started_at, result.finished_at), reused, start)


def replay_outcome(replay: Replay) -> str:
    """A replay's outcome in a few words: every step passed, or the first that did not and why.

    Examples
    --------
    >>> replay_outcome(Replay("oracle#1", Path("t"), {"a": StepRun(True, 1.0, None, None)}, 3.0, False))
    'passed'
    >>> failed = StepRun(False, 0.0, None, None, "the tests say: FAILED")
    >>> replay_outcome(Replay("k", Path("t"), {"a": failed}, 3.0, False))
    'fails: the tests say: FAILED'
    """
    for name, run in replay.steps.items():
        if not run.passed or run.exception:
            why = run.cause or (f"{run.exception}" if run.exception else f"reward {run.reward}")
            return f"{name or 'the trial'} fails: {why}" if len(replay.steps) > 1 else f"fails: {why}"
    return "passed"


def _seconds(started_at: Any, finished_at: Any) -> float:
    """The replay's wall time from its result's start and end (so a resumed run reports the original cost)."""
    try:
        begin = datetime.fromisoformat(str(started_at).replace("Z", "+00:00"))
        end = datetime.fromisoformat(str(finished_at).replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return max((end - begin).total_seconds(), 0.0)
