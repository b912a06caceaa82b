"""Replays: a task's reference solutions, edited step by step, run as Harbor trials in fresh containers.

A *replay* is one trial of the task by :class:`ReplayAgent`, which runs, for each step, the script
its plan gives (the step's full ``solve.sh``, the script with its key step or one command removed)
or nothing, and calls no model. On the local engine (:func:`local_replays`) the trial runs through
the runner (:func:`depthlab.runner.run_task_trial`: the same container, step preparation and
verifier as ``depthlab run``), with the network the task allows (offline with ``network=False``,
the paper's rule), and with the steps' ``min_reward`` gates lifted so a replay
goes on past a failing step (the checks need the step after a removed key step graded). A replay
stops after the last step its plan names.

Every replay is a trial folder of one Harbor job (``<jobs_dir>/depthlab-check``), named in its
``config.json`` by its replay key (``agent.kwargs.replay``) and the task's checksum, so a rerun
finds the replays already done (:class:`Replayer`) and runs only the others: killed and rerun, no
replay is done twice and none is lost (an interrupted trial, one without ``result.json``, is
deleted and replayed, as Harbor resumes a job).

*Reuse* (the local engine, :class:`LocalReplays`): the mutants of step s (s >= 2) all replay the
same full solutions of steps 1..s-1, so those steps are replayed once, in a scratch job, and the
container is committed (``docker commit``) after step s-1's verifier; each mutant's trial then
starts from that snapshot and runs step s alone (its ``/tests`` and ``/logs`` emptied, its workdir
copied in, its ``setup.sh`` run, the mutant script, its tests), as the step runs after the earlier
ones. A snapshot carries files, not processes: when a process other than the container's own is
still running after the earlier steps (a server an earlier solution started), or their replay
does not pass, the mutants of that step are replayed from scratch, and each trial's
``agent.kwargs.start`` says which way it ran and why. One snapshot exists at a time; it is removed
when the step's mutants are done, when the check ends, and (left by a killed check) when a check of
the same jobs folder starts. The Harbor engine replays from scratch.

The engine is chosen here, at one boundary: :class:`Replayer` takes an engine's replays, a function
turning :class:`ReplayRequest` s into trial folders of the job (:func:`local_replays`, or
:func:`depthlab.checks.harbor.harbor_replays`, whose agent is ``harbor_side/depthlab_replay``), and
reads every trial back with :func:`read_replay`; the checks above it never see the engine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from depthlab.checks.causes import step_cause
from depthlab.io import harbor_writer
from depthlab.io.harbor import read_trial_result
from depthlab.io.harbor_models import VerifierResult
from depthlab.io.multistep import main_reward
from depthlab.io.status import PASS_REWARD
from depthlab.runner.agent import AgentContext
from depthlab.runner.container import TaskContainer
from depthlab.runner.image import image_tag
from depthlab.runner.multistep import run_multistep_trial, run_task_trial
from depthlab.runner.oracle import run_solution
from depthlab.runner.output import VERSION, JobDir, remove_incomplete_trials
from depthlab.runner.profiles import RunSettings
from depthlab.runner.task import TaskSpec

#: The job folder of every replay under ``jobs_dir``.
JOB_NAME = "depthlab-check"

#: The name of the replaying agent in the trials' configs.
AGENT_NAME = "depthlab-replay"


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


class ReplayAgent:
    """Run, for each step, the script of ``plan`` (keyed by the step's solution folder), or nothing.

    Parameters
    ----------
    replay : str
        The replay's key, written to the trial's ``config.json`` (``agent.kwargs.replay``).
    plan : mapping of str to str or None
        The resolved solution folder of each step -> the script to run there, None: nothing.

    Examples
    --------
    >>> ReplayAgent("oracle#1", {}).config_kwargs()["replay"]
    'oracle#1'
    """

    name = AGENT_NAME
    version = VERSION
    model_name = None
    #: No turns: every step of a multi-step run gets the same agent.
    turn_budget = None

    def __init__(self, replay: str, plan: Mapping[str, str | None], *, start: str | None = None) -> None:
        self.replay = replay
        self.plan = dict(plan)
        self.start = start

    def config_kwargs(self) -> dict[str, Any]:
        kwargs = {**harbor_writer.cap_kwargs(None), "replay": self.replay}
        if self.start is not None:
            kwargs["start"] = self.start
        return kwargs

    def with_turns(self, turns: int) -> ReplayAgent:
        return self

    def run(
        self,
        box: TaskContainer,
        task: TaskSpec,
        agent_dir: Path,
        deadline: float,
        context: AgentContext,
        *,
        timeout_sec: float | None = None,
    ) -> None:
        script = self.plan.get(str(task.solution_path.resolve()))
        context.metadata.update({"replay": self.replay, "replayed": script is not None})
        if script is None:  # this step is not done
            return
        output = agent_dir / "replay.txt"
        run_solution(box, task, output, deadline, context, script=script, timeout_sec=timeout_sec)


def without_gates(task: TaskSpec, upto: int | None = None) -> TaskSpec:
    """``task`` offline-ready for a replay: its steps 1..``upto`` only, none gated by ``min_reward``.

    Examples
    --------
    >>> from pathlib import Path
    >>> from depthlab.io.harbor_task import TaskStep
    >>> step = TaskStep(1, "a", "steps/a", "", None, "tests", None, 1.0, None, "shared")
    >>> task = TaskSpec(Path("x"), "x", "", 1.0, 1.0, 1.0, 1.0, 512, None, None, steps=(step, step))
    >>> [s.min_reward for s in without_gates(task, 1).steps]
    [None]
    """
    steps = task.steps if upto is None else task.steps[:upto]
    return dataclasses.replace(
        task, steps=tuple(dataclasses.replace(step, min_reward=None, min_rewards=None) for step in steps)
    )


@dataclass(frozen=True)
class ReplayRequest:
    """One replay to run: the task, its key, the script of each step's solution folder (None: not done),
    the last step it replays (None: every step), and whether the steps before its last are the full
    solutions, so an engine may start the last step from a snapshot of them (``snapshot``, module
    docstring)."""

    task: TaskSpec
    key: str
    plan: Mapping[str, str | None]
    upto: int | None
    snapshot: bool = False


#: Called by an engine with each replay as its trial ends (its request, its trial folder).
OnTrial = Callable[["ReplayRequest", Path], None]
#: An engine's replays: runs each request as one trial of ``job`` and returns its trial folder, in order,
#: calling ``on_trial`` as each ends.
EngineReplays = Callable[[Sequence["ReplayRequest"], JobDir, OnTrial | None], list[Path]]


#: ``agent.kwargs.start`` of a replay whose last step ran from a snapshot of the earlier steps.
FROM_SNAPSHOT = "snapshot"

#: The label of every snapshot image; its value is the job folder the check writes to.
SNAPSHOT_LABEL = "depthlab.check-snapshot"

#: The processes of a container, one line each: pid, then the command line (``$$`` itself left out).
_PROCESSES = (
    'for p in /proc/[0-9]*; do n=${p#/proc/}; [ "$n" = "$$" ] && continue; '
    'c=$(tr "\\000" " " < "$p/cmdline" 2>/dev/null); [ -n "$c" ] && echo "$n $c"; done; true'
)


def left_running(listing: str) -> list[str]:
    """The processes of a ``_PROCESSES`` listing that are not the container's own (PID 1, its deadline).

    Examples
    --------
    >>> keep = "sh -c trap 1 TERM; (sleep 90 && kill -TERM 1) & while read -r _; do :; done"
    >>> left_running(f"1 {keep}\\n7 {keep}\\n8 sleep 90\\n9 python3 -m http.server 8000")
    ['9 python3 -m http.server 8000']
    """
    lines = [line.strip() for line in listing.splitlines() if line.strip()]
    own = next((line.split(" ", 1)[1] for line in lines if line.split(" ", 1)[0] == "1"), "")
    deadline = re.search(r"\(sleep (\d+) ", own)
    ours = {own.strip()} | ({f"sleep {deadline.group(1)}"} if deadline else set())
    return [line for line in lines if line.split(" ", 1)[0] != "1" and line.split(" ", 1)[-1].strip() not in ours]


class LocalReplays:
    """The local engine's replays: each request one trial of :class:`ReplayAgent` through the runner.

    ``settings`` are the runner's (the profile, the network: by default the task's own, as Harbor
    runs it; ``network=False`` for the paper's offline rule, ``depthlab check --offline``). A request
    with ``snapshot`` runs its last step from a snapshot of the earlier steps (module docstring)
    unless ``reuse`` is False; :meth:`close` removes the snapshot.
    """

    def __init__(
        self,
        docker_client: Any,
        settings: RunSettings | None = None,
        *,
        reuse: bool = True,
        keep_images: bool = False,
    ) -> None:
        self.docker_client = docker_client
        self.reuse = reuse
        self.keep_images = keep_images
        self.settings = settings or RunSettings()
        #: The task images this check built (absent before it): removed by :meth:`close` unless ``keep_images``.
        self.built: dict[str, bool] = {}
        #: Task checksum -> the trial whose image build failed: the task's other replays are that trial.
        self.failed_builds: dict[str, Path] = {}
        self.label: str | None = None
        #: The current snapshot: (its earlier steps' identity, its image or None, its start note).
        self.current: tuple[tuple[Any, ...], str | None, str] | None = None
        self.prefix_runs = 0

    def __call__(self, requests: Sequence[ReplayRequest], job: JobDir, on_trial: OnTrial | None = None) -> list[Path]:
        if self.label is None:
            self.label = str(job.path.resolve())
            self._remove_snapshots()  # a killed check's leftovers
        trial_dirs = []
        for request in requests:
            task = request.task
            failed = self.failed_builds.get(task.checksum)
            if failed is not None:  # its image did not build: not built again for each replay
                trial_dirs.append(failed)
                continue
            self._note_image(task)
            job.n_planned += 1
            run = without_gates(task, request.upto) if task.multi_step else task
            image, start = None, None
            if self.reuse and request.snapshot and task.multi_step and len(run.steps) >= 2:
                image, start = self._snapshot(run, request)
            agent = ReplayAgent(request.key, request.plan, start=start)
            options: dict[str, Any] = {"docker_client": self.docker_client, "settings": self.settings}
            if image is not None:
                outcome = run_multistep_trial(
                    dataclasses.replace(run, steps=run.steps[-1:]),
                    agent,
                    job,
                    image=image,
                    dataset=task.path.parent.name,
                    **options,
                )
            else:
                outcome = run_task_trial(run, agent, job, dataset=task.path.parent.name, **options)
            job.update_result()
            trial_dirs.append(outcome.trial_dir)
            if outcome.exception == "EnvironmentBuildError":
                self.failed_builds[task.checksum] = outcome.trial_dir
            if on_trial is not None:
                on_trial(request, outcome.trial_dir)
        return trial_dirs

    def _note_image(self, task: TaskSpec) -> None:
        """Note, before its first replay, whether ``task``'s image is there already (kept at the end) or not."""
        tag = image_tag(task)
        if tag in self.built or (task.docker_image and not self.settings.force_build):
            return
        try:
            self.docker_client.images.get(tag)
            self.built[tag] = False
        except Exception:  # absent (ImageNotFound) or unreadable: this check builds it
            self.built[tag] = True

    def _snapshot(self, run: TaskSpec, request: ReplayRequest) -> tuple[str | None, str]:
        """The snapshot image after ``run``'s steps before its last (None: from scratch) and the start note."""
        earlier = run.steps[:-1]
        scripts = tuple(request.plan.get(str((Path(step.path) / "solution").resolve())) for step in earlier)
        identity = (run.checksum, len(earlier), scripts)
        if self.current is not None and self.current[0] == identity:
            return self.current[1], self.current[2]
        self._remove_snapshots()
        note: dict[str, str] = {}

        def commit(box: TaskContainer) -> None:
            code, listing = box.exec(["sh", "-c", _PROCESSES], timeout=60, user="0")
            if code != 0:
                note["start"] = "from scratch: the processes left by the earlier steps could not be listed"
                return
            running = left_running(listing.decode(errors="replace"))
            if running:
                shown = "; ".join(line[:60] for line in running[:3])
                note["start"] = (
                    f"from scratch: the earlier steps leave processes running a snapshot cannot carry ({shown})"
                )
                return
            made = self.docker_client.api.commit(
                box.container.id,
                repository="depthlab-check-snapshot",
                tag=uuid.uuid4().hex[:12],
                changes=[f'LABEL {SNAPSHOT_LABEL}="{self.label}"'],
            )
            note["image"] = str(made["Id"])

        prefix = dataclasses.replace(run, steps=earlier)
        with tempfile.TemporaryDirectory(prefix="depthlab-prefix-") as scratch:
            config = harbor_writer.job_config(
                "", "", [harbor_writer.agent_config(AGENT_NAME, None, harbor_writer.cap_kwargs(None))]
            )
            outcome = run_multistep_trial(
                prefix,
                ReplayAgent(f"prefix:{request.key}", request.plan),
                JobDir(Path(scratch), "prefix", config),
                docker_client=self.docker_client,
                settings=self.settings,
                before_removal=commit,
            )
        self.prefix_runs += 1
        image = note.get("image")
        if outcome.exception is not None or outcome.failed_step is not None:
            failed = outcome.failed_step or outcome.exception
            start = f"from scratch: the earlier steps' replay did not pass (step {failed})"
            if image is not None:
                self._remove_image(image)
            image = None
        else:
            start = FROM_SNAPSHOT if image is not None else note.get("start", "from scratch")
        self.current = (identity, image, start)
        return image, start

    def _remove_image(self, image: str) -> None:
        with contextlib.suppress(Exception):  # gone already: nothing to remove
            self.docker_client.images.remove(image, force=True)

    def _remove_snapshots(self) -> None:
        """Remove every snapshot image of this check's job folder (the current one, a killed check's)."""
        self.current = None
        if self.label is None:
            return
        with contextlib.suppress(Exception):
            for image in self.docker_client.images.list(filters={"label": f"{SNAPSHOT_LABEL}={self.label}"}):
                self._remove_image(image.id)

    def close(self) -> None:
        """Remove the snapshot images, and the task images this check built unless ``keep_images``."""
        self._remove_snapshots()
        if not self.keep_images:
            for tag, built in self.built.items():
                if built:
                    self._remove_image(tag)
            self.built = {tag: built for tag, built in self.built.items() if not built}


def local_replays(
    docker_client: Any, settings: RunSettings | None = None, *, reuse: bool = True, keep_images: bool = False
) -> LocalReplays:
    """The local engine's replays (:class:`LocalReplays`)."""
    return LocalReplays(docker_client, settings, reuse=reuse, keep_images=keep_images)


class Replayer:
    """Runs replays on one engine into one job folder and finds the ones a previous run finished (module docstring).

    Parameters
    ----------
    jobs_dir : Path
        The jobs folder (``--jobs-dir``); the replays go to its ``depthlab-check`` job.
    engine : callable
        The engine's replays (:func:`local_replays`, :func:`depthlab.checks.harbor.harbor_replays`).
    progress : callable, optional
        Called with one line per replay run, as it ends: the time since the check started, the task,
        the replay, its outcome and its own seconds.
    """

    def __init__(self, jobs_dir: Path, engine: EngineReplays, progress: Callable[[str], None] | None = None) -> None:
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
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError, AttributeError):
                result = json.loads(result_file.read_text(encoding="utf-8"))
                config = json.loads((result_file.parent / "config.json").read_text(encoding="utf-8"))
                kwargs = config["agent"]["kwargs"]
                checksum = kwargs.get("task_checksum") or result.get("task_checksum") or ""
                found[(result["task_name"], checksum, kwargs["replay"])] = result_file.parent
        return found

    def replay(
        self,
        task: TaskSpec,
        key: str,
        plan: Mapping[str, str | None],
        *,
        upto: int | None,
        snapshot: bool = False,
    ) -> Replay:
        """The replay ``key`` of ``task``: found in the job when a run before finished it, else run now."""
        identity = (task.name, task.checksum, key)
        if identity not in self.done:
            self.prefetch([ReplayRequest(task, key, plan, upto, snapshot)])
        return read_replay(key, self.done[identity], reused=identity not in self.fresh)

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
        """Let the engine remove what it kept between replays (the local engine's snapshot images)."""
        close = getattr(self.engine, "close", None)
        if close is not None:
            close()


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
        passed = reward is not None and reward >= PASS_REWARD
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
    start = None
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        start = json.loads((trial_dir / "config.json").read_text(encoding="utf-8"))["agent"]["kwargs"].get("start")
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
