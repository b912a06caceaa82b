"""Replays, the engines' side: a task's reference solutions, edited step by step, run as trials of one job.

A *replay* is one trial of the task by :class:`ReplayAgent`, which runs, for each step, the script
its request's plan gives (the step's full ``solve.sh``, the script with its key step or one command
removed) or nothing, and calls no model. :mod:`depthlab.checks` asks for replays
(:class:`ReplayRequest`) and reads their trials; an engine runs them: :class:`Replays` is what it
gives (:meth:`depthlab.engines.LocalEngine.replays`, :meth:`depthlab.engines.HarborEngine.replays`),
a callable turning requests into trial folders of the job, in order, calling ``on_trial`` as each
trial ends, and a ``close`` removing what it kept.

On the local engine (:class:`LocalReplays`) a replay runs through the runner
(:func:`depthlab.runner.run_task_trial`: the same container, step preparation and verifier as
``depthlab run``), with the network the task allows (none with ``network=False``, the paper's
rule), and with the steps' ``min_reward`` gates lifted so a replay goes on past a failing step (the
checks need the step after a removed key step graded). A replay stops after the last step its
request names. A solution script that exits non-zero is graded as Harbor's oracle grades it. The
replays of ``concurrency`` tasks run at once (one thread each, as ``depthlab run`` runs trials); a
task's own replays run in the order asked (its image is built once, its mutants share a snapshot).

*Reuse* (the local engine): the mutants of step s (s >= 2) all replay the same full solutions of
steps 1..s-1, so those steps are replayed once, in a scratch job, and the container is committed
(``docker commit``) after step s-1's verifier; each mutant's trial then starts from that snapshot and
runs step s alone (its ``/tests`` and ``/logs`` emptied, its workdir copied in, its ``setup.sh`` run,
the mutant script, its tests), as the step runs after the earlier ones. A snapshot carries files, not
processes: when a process other than the container's own is still running after the earlier steps
(a server an earlier solution started), or their replay does not pass, the mutants of that step are
replayed from scratch, and each trial's ``agent.kwargs.start`` says which way it ran and why. One
snapshot per task exists at a time; it is removed when the task's next snapshot is made, when the
check ends, and (left by a killed check) when a check of the same jobs folder starts. The Harbor engine
(:mod:`depthlab.engines.harbor_replays`) replays from scratch.

The task images the local engine builds are removed by ``close`` unless ``keep_images``; a task
whose image fails to build is built once, its other replays given that failed trial.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import re
import tempfile
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from depthlab._checks import check_positive_int
from depthlab.io import harbor_writer
from depthlab.runner.agent import AgentContext
from depthlab.runner.container import TaskContainer
from depthlab.runner.image import image_tag
from depthlab.runner.leftovers import remove_live_containers
from depthlab.runner.multistep import run_multistep_trial, run_task_trial
from depthlab.runner.oracle import run_solution
from depthlab.runner.output import VERSION, JobDir
from depthlab.runner.profiles import RunSettings
from depthlab.runner.task import TaskSpec

#: The name of the replaying agent in the trials' configs.
AGENT_NAME = "depthlab-replay"


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


class Replays(Protocol):
    """An engine's replays (module docstring): each request one trial of ``job``, its folder returned in order."""

    def __call__(
        self, requests: Sequence[ReplayRequest], job: JobDir, on_trial: OnTrial | None = None
    ) -> list[Path]: ...

    def close(self) -> None:
        """Remove what the engine kept between replays (snapshots, task images)."""


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
    unless ``reuse`` is False; :meth:`close` removes the snapshots. ``concurrency`` tasks' replays run
    at once, each task's in order.
    """

    def __init__(
        self,
        docker_client: Any,
        settings: RunSettings | None = None,
        *,
        reuse: bool = True,
        keep_images: bool = False,
        concurrency: int = 2,
    ) -> None:
        check_positive_int(concurrency, "concurrency", "LocalReplays")
        self.concurrency = concurrency
        self.docker_client = docker_client
        self.reuse = reuse
        self.keep_images = keep_images
        self.settings = settings or RunSettings()
        #: The task images this check built (absent before it): removed by :meth:`close` unless ``keep_images``.
        self.built: dict[str, bool] = {}
        #: Task checksum -> the trial whose image build failed: the task's other replays are that trial.
        self.failed_builds: dict[str, Path] = {}
        self.label: str | None = None
        #: Task checksum -> its current snapshot: (its earlier steps' identity, its image or None, its start note).
        self.current: dict[str, tuple[tuple[Any, ...], str | None, str]] = {}
        self.prefix_runs = 0
        self.lock = threading.Lock()  # the counters the tasks' threads share
        #: Set on an interrupt: the running trials stop (the runner's ``cancel``).
        self.cancel = threading.Event()

    def __call__(self, requests: Sequence[ReplayRequest], job: JobDir, on_trial: OnTrial | None = None) -> list[Path]:
        if self.label is None:
            self.label = str(job.path.resolve())
            self._remove_snapshots()  # a killed check's leftovers
        by_task: dict[str, list[int]] = {}
        for index, request in enumerate(requests):
            by_task.setdefault(request.task.checksum, []).append(index)
        trial_dirs: dict[int, Path] = {}

        def replay_task(indices: list[int]) -> None:  # one task's replays, in order
            for index in indices:
                trial_dirs[index] = self._replay(requests[index], job, on_trial)

        groups = list(by_task.values())
        if self.concurrency == 1 or len(groups) == 1:
            for indices in groups:
                replay_task(indices)
        else:
            pool = concurrent.futures.ThreadPoolExecutor(max_workers=min(self.concurrency, len(groups)))
            try:
                for future in [pool.submit(replay_task, indices) for indices in groups]:
                    future.result()
            except BaseException:  # interrupted, or a trial that could not be recorded: the others stop too
                self.cancel.set()
                remove_live_containers()
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            pool.shutdown()
        return [trial_dirs[index] for index in range(len(requests))]

    def _replay(self, request: ReplayRequest, job: JobDir, on_trial: OnTrial | None) -> Path:
        """Run one replay (its task's earlier replays done); its trial folder."""
        task = request.task
        failed = self.failed_builds.get(task.checksum)
        if failed is not None:  # its image did not build: not built again for each replay
            return failed
        self._note_image(task)
        with self.lock:
            job.n_planned += 1
        run = without_gates(task, request.upto) if task.multi_step else task
        image, start = None, None
        if self.reuse and request.snapshot and task.multi_step and len(run.steps) >= 2:
            image, start = self._snapshot(run, request)
        agent = ReplayAgent(request.key, request.plan, start=start)
        options: dict[str, Any] = {"docker_client": self.docker_client, "settings": self.settings}
        options["cancel"] = self.cancel
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
        if outcome.exception == "EnvironmentBuildError":
            self.failed_builds[task.checksum] = outcome.trial_dir
        if on_trial is not None:
            on_trial(request, outcome.trial_dir)
        return outcome.trial_dir

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
        current = self.current.pop(run.checksum, None)
        if current is not None and current[0] == identity:
            self.current[run.checksum] = current
            return current[1], current[2]
        if current is not None and current[1] is not None:  # the task's snapshot of other earlier steps
            self._remove_image(current[1])
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
        with self.lock:
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
        self.current[run.checksum] = (identity, image, start)
        return image, start

    def _remove_image(self, image: str) -> None:
        with contextlib.suppress(Exception):  # gone already: nothing to remove
            self.docker_client.images.remove(image, force=True)

    def _remove_snapshots(self) -> None:
        """Remove every snapshot image of this check's job folder (the current ones, a killed check's)."""
        self.current = {}
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
    docker_client: Any,
    settings: RunSettings | None = None,
    *,
    reuse: bool = True,
    keep_images: bool = False,
    concurrency: int = 2,
) -> LocalReplays:
    """The local engine's replays (:class:`LocalReplays`)."""
    return LocalReplays(docker_client, settings, reuse=reuse, keep_images=keep_images, concurrency=concurrency)
