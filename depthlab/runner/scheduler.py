"""The scheduler: run a plan's missing (task, model, cap) cells with bounded concurrency; resumable.

Plan files are read by :mod:`depthlab.runner.plan_io`; each trial is run by
:func:`depthlab.runner.run_trial` and written with :mod:`depthlab.io.harbor_writer`.

How a fill resumes
------------------
Each (model, cap) gets one Harbor job folder, ``<jobs_dir>/fill__<model>__cap<K>``, reused by
every later fill. On start, a fill

1. removes runner containers whose owner process is gone (left by a ``kill -9``; they stopped
   themselves seconds after it, see :mod:`depthlab.runner.leftovers`),
2. deletes trial folders without ``result.json`` (interrupted trials, as Harbor does),
3. counts the *valid* complete trials per cell already in ``jobs_dir`` (read back with
   :func:`depthlab.load_trials`, whose status rule decides what is valid), and
4. runs only ``attempts`` minus that count for each cell.

So a plan row means "this cell needs ``attempts`` valid trials in ``jobs_dir``"; compute the plan
from the run logs you had *before* (``jobs_dir`` itself is counted in step 3; :func:`plan_from_logs`
leaves it out). A trial's ``result.json`` is written last and atomically, so a trial is either
complete or redone: nothing is lost or counted twice. Ctrl-C or SIGTERM removes the running
containers and deletes the unfinished trial folders before exiting.

Two ways to run a plan
----------------------
* here, on one machine with Docker: ``depthlab fill PLAN.csv --tasks DIR --models A,B``;
* on Harbor's cloud sandboxes, for large plans: ``depthlab plan ... --harbor-configs DIR`` writes
  one Harbor job config per (model, cap) to run with ``harbor run --config <file>`` (configs
  Harbor's own ``JobConfig`` accepts: the test suite checks them with Harbor); the resulting
  job folders load with :func:`depthlab.load_trials` at the stated cap (Harbor's stock terminus-2
  enforces ``max_turns``; the config's ``extra_instructions`` state the cap, see ``depthlab plan --help``).
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from depthlab._checks import check_positive_finite, check_positive_int
from depthlab._lockfile import LockHeld, held
from depthlab.io import harbor_writer
from depthlab.io.harbor_records import JobConfigRecord
from depthlab.io.harbor_writer import STATED_CAP_KEY
from depthlab.runner.container import ContainerLimits, new_docker_client
from depthlab.runner.errors import CancelledError, UnsupportedTaskError
from depthlab.runner.leftovers import remove_leftovers, remove_live_containers
from depthlab.runner.multistep import run_task_trial
from depthlab.runner.output import JobDir, load_job_trials, remove_incomplete_trials
from depthlab.runner.plan_io import check_plan
from depthlab.runner.preflight import PreflightReport, preflight
from depthlab.runner.profiles import RunSettings
from depthlab.runner.task import TaskSpec, load_task
from depthlab.runner.trial import Agent, TrialOutcome

# what load_task raises for a task that cannot run here: the task is skipped with a message
_UNRUNNABLE_TASK: tuple[type[Exception], ...] = (UnsupportedTaskError, FileNotFoundError, ValueError)

AgentFactory = Callable[[str, int | None], Agent]

#: The hidden folder of ``jobs_dir`` that holds the oracle preflight's job and cache.
PREFLIGHT_FOLDER = ".preflight"


@dataclass(frozen=True)
class WorkItem:
    """One trial to run: a task, an agent, and the job folder it goes into."""

    task: TaskSpec
    agent: Agent
    cap: int | None
    job: JobDir
    dataset: str


@dataclass
class FillSummary:
    """What a fill did. ``outcomes`` has one entry per trial run now."""

    n_cells: int = 0
    n_trials_planned: int = 0
    n_trials_already_done: int = 0
    n_leftover_containers: int = 0
    n_incomplete_removed: int = 0
    outcomes: list[TrialOutcome] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # why a task could not run here
    errors: list[str] = field(default_factory=list)  # trials that could not even be recorded
    preflight: PreflightReport | None = None  # the oracle preflight, when one ran

    @property
    def exceptions(self) -> Counter[str]:
        return Counter(outcome.exception for outcome in self.outcomes if outcome.exception)

    @property
    def all_invalid(self) -> bool:
        """Whether trials ran and every one of them is invalid (no endpoint, no Docker build, ...)."""
        return bool(self.outcomes) and all(outcome.status == "invalid" for outcome in self.outcomes)

    def render(self) -> str:
        """A short human-readable summary."""
        passed = sum(1 for outcome in self.outcomes if (outcome.reward or 0) > 0)
        lines = [] if self.preflight is None else [self.preflight.render()]
        lines += [
            f"cells: {self.n_cells}, trials planned: {self.n_trials_planned}, already done: "
            f"{self.n_trials_already_done}, run now: {len(self.outcomes)} (reward > 0: {passed})",
        ]
        if self.exceptions:
            lines.append("exceptions: " + ", ".join(f"{name} x{count}" for name, count in self.exceptions.items()))
        if self.n_leftover_containers or self.n_incomplete_removed:
            lines.append(
                f"cleaned up: {self.n_leftover_containers} leftover container(s), "
                f"{self.n_incomplete_removed} incomplete trial folder(s)"
            )
        lines += [f"skipped: {message}" for message in self.skipped]
        lines += [f"error: {message}" for message in self.errors]
        if self.all_invalid:
            lines.append(f"every trial was invalid; the first one: {self.outcomes[0].message}")
        return "\n".join(lines)


def fill(
    plan: pl.DataFrame,
    *,
    tasks_dir: str | os.PathLike[str],
    jobs_dir: str | os.PathLike[str],
    agent_factory: AgentFactory,
    docker_client: Any = None,
    concurrency: int = 2,
    limits: Callable[[TaskSpec], ContainerLimits] | None = None,
    settings: RunSettings | None = None,
    agent_timeout_sec: float | None = None,
    progress: bool = True,
    run_preflight: bool = True,
    count_done: bool = True,
) -> FillSummary:
    """Run the cells of ``plan`` that ``jobs_dir`` does not hold yet (see the module docstring).

    Before any model call, the oracle preflight (:func:`depthlab.runner.preflight.preflight`)
    runs each task's reference solution once under the same settings, cached per task checksum
    and settings in ``jobs_dir/.preflight`` (a hidden folder the loaders skip); a task whose
    reference solution fails is left out, and ``summary.preflight`` says why.

    Parameters
    ----------
    plan : pl.DataFrame
        Columns ``dataset, task, model, cap, attempts`` (from :func:`depthlab.plan_missing`).
    tasks_dir : path
        Folder of Harbor task folders; a plan's ``task`` is found as ``tasks_dir/<task>``.
    jobs_dir : path
        Where the job folders go (and are resumed from).
    agent_factory : callable
        ``(model, cap) -> agent``; e.g. a :class:`TerminusAgent` with that cap.
    docker_client : docker.DockerClient, optional
        Defaults to ``docker.from_env()``.
    concurrency : int, default 2
        Trials run at once.
    limits : callable, optional
        ``task -> ContainerLimits``; default: ``settings.limits``.
    settings : RunSettings, optional
        The security profile and options (default: the ``harbor`` profile).
    agent_timeout_sec : float, optional
        Override every task's agent timeout.
    progress : bool, default True
        Show a tqdm bar.
    run_preflight : bool, default True
        Run the oracle preflight first (``--no-preflight`` turns it off).
    count_done : bool, default True
        A row's ``attempts`` is the valid trials the cell needs in ``jobs_dir``, and the trials
        already there count against it. False: ``attempts`` is how many more to run, because the
        plan was made from ``jobs_dir`` itself (:func:`depthlab.plan_missing` on its trials, as
        ``measure``'s rounds do; counting them again would run nothing where a cell asks for one
        more attempt).

    Returns
    -------
    FillSummary

    Examples
    --------
    >>> import polars as pl
    >>> plan = pl.DataFrame({"dataset": ["d"], "task": ["t"], "model": ["m"], "cap": [1], "attempts": [1]})
    >>> fill(plan, tasks_dir="tasks", jobs_dir="jobs", agent_factory=my_factory)  # doctest: +SKIP
    """
    check_positive_int(concurrency, "concurrency", "fill")
    # one row per cell; two plans asking for the same cell want the larger number of attempts
    cell = ["dataset", "task", "model", "cap"]
    plan = check_plan(plan).group_by(cell, maintain_order=True).agg(pl.col("attempts").max())
    jobs_root = Path(jobs_dir)
    jobs_root.mkdir(parents=True, exist_ok=True)
    client = docker_client if docker_client is not None else new_docker_client()
    summary = FillSummary(n_cells=plan.height, n_trials_planned=int(plan["attempts"].sum() or 0))
    with _exclusive(jobs_root):
        summary.n_leftover_containers = remove_leftovers(client)
        for job_path in sorted(path for path in jobs_root.iterdir() if (path / "config.json").is_file()):
            summary.n_incomplete_removed += len(remove_incomplete_trials(job_path))
        done = count_valid_trials(jobs_root, by_checksum=True)
        items: list[WorkItem] = []
        jobs: dict[tuple[str, int | None], JobDir] = {}
        agents: dict[tuple[str, int | None], Agent] = {}
        loaded: dict[str, TaskSpec | Exception] = {}
        for row in plan.iter_rows(named=True):
            cap = None if row["cap"] is None else int(row["cap"])
            if row["task"] not in loaded:
                try:
                    loaded[row["task"]] = load_task(_task_path(Path(tasks_dir), row["task"]))
                except _UNRUNNABLE_TASK as error:
                    loaded[row["task"]] = error
            task = loaded[row["task"]]
            # a trial of another version of the task (its task_checksum not the task's now) fills no cell
            version = task.checksum if isinstance(task, TaskSpec) else None
            key = (_short(row["task"]), row["model"], cap)
            held = done.get((*key, version), 0) + done.get((*key, None), 0) if count_done else 0
            already = min(held, int(row["attempts"]))
            summary.n_trials_already_done += already
            remaining = int(row["attempts"]) - already
            if remaining <= 0:
                continue
            if not isinstance(task, TaskSpec):
                summary.skipped.append(f"{row['task']}: {task}")
                continue
            job_key = (row["model"], cap)
            if job_key not in jobs:
                agents[job_key] = agent_factory(row["model"], cap)
                jobs[job_key] = JobDir(jobs_root, job_name(row["model"], cap), job_config(agents[job_key]))
            jobs[job_key].n_planned += remaining
            dataset = row["dataset"] or task.path.parent.name
            items += [WorkItem(task, agents[job_key], cap, jobs[job_key], dataset) for _ in range(remaining)]
        if run_preflight and items:
            unique = list({str(item.task.path): item.task for item in items}.values())
            report = preflight(
                unique,
                jobs_dir=jobs_root / PREFLIGHT_FOLDER,
                settings=settings,
                limits=limits,
                docker_client=client,
                concurrency=concurrency,
            )
            summary.preflight = report
            keep = {str(task.path) for task in report.passed_tasks}
            for item in items:
                if str(item.task.path) not in keep:
                    item.job.n_planned -= 1
            items = [item for item in items if str(item.task.path) in keep]
        for job in jobs.values():
            job.n_planned += len(job.trial_results())
        execute(
            items,
            jobs.values(),
            summary,
            docker_client=client,
            limits=limits,
            settings=settings,
            agent_timeout_sec=agent_timeout_sec,
            concurrency=concurrency,
            progress=progress,
        )
    return summary


def run_tasks(
    task_dirs: Sequence[str | os.PathLike[str]],
    agent: Agent,
    *,
    jobs_dir: str | os.PathLike[str],
    job_name: str | None = None,
    attempts: int = 1,
    docker_client: Any = None,
    concurrency: int = 1,
    limits: Callable[[TaskSpec], ContainerLimits] | None = None,
    settings: RunSettings | None = None,
    agent_timeout_sec: float | None = None,
    progress: bool = True,
) -> FillSummary:
    """Run ``agent`` on each task ``attempts`` times into one new Harbor job (``depthlab run``).

    Tasks that cannot run here (several containers, missing files) are skipped with a message
    (``summary.skipped``); the others run.

    Examples
    --------
    >>> from depthlab.runner import OracleAgent
    >>> run_tasks(["tasks/hello"], OracleAgent(), jobs_dir="jobs")  # doctest: +SKIP
    """
    check_positive_int(attempts, "attempts", "run_tasks")
    check_positive_int(concurrency, "concurrency", "run_tasks")
    client = docker_client if docker_client is not None else new_docker_client()
    summary = FillSummary(n_cells=len(task_dirs), n_trials_planned=len(task_dirs) * attempts)
    summary.n_leftover_containers = remove_leftovers(client)
    tasks: list[TaskSpec] = []
    for path in task_dirs:
        try:
            tasks.append(load_task(path))
        except _UNRUNNABLE_TASK as error:
            summary.skipped.append(str(error))
    name = job_name or time.strftime("%Y-%m-%d__%H-%M-%S")
    config = job_config(agent, n_attempts=attempts, n_concurrent_trials=concurrency, tasks=tasks)
    job = JobDir(Path(jobs_dir), name, config)
    job.n_planned = len(tasks) * attempts
    cap = agent.config_kwargs().get(STATED_CAP_KEY)
    items = [WorkItem(task, agent, cap, job, task.path.parent.name) for _ in range(attempts) for task in tasks]
    execute(
        items,
        [job],
        summary,
        docker_client=client,
        limits=limits,
        settings=settings,
        agent_timeout_sec=agent_timeout_sec,
        concurrency=concurrency,
        progress=progress,
    )
    return summary


def execute(
    items: Sequence[WorkItem],
    jobs: Iterable[JobDir],
    summary: FillSummary,
    *,
    docker_client: Any,
    limits: Callable[[TaskSpec], ContainerLimits] | None,
    agent_timeout_sec: float | None,
    concurrency: int,
    progress: bool,
    settings: RunSettings | None = None,
) -> None:
    """Run ``items`` with :func:`run_trial` on ``concurrency`` threads; outcomes and errors go into ``summary``.

    Then each of ``jobs`` gets its final result.json. Ctrl-C / SIGTERM (KeyboardInterrupt in the
    main thread) stops the workers, removes their containers and re-raises without finishing the
    jobs; the unfinished trials leave no folder behind.
    """
    from tqdm.auto import tqdm

    if agent_timeout_sec is not None:  # checked once here rather than failing every trial
        check_positive_finite(agent_timeout_sec, "agent_timeout_sec", "fill")
    pending: queue.Queue[WorkItem] = queue.Queue()
    for item in items:
        pending.put(item)
    results: queue.Queue[tuple[WorkItem, TrialOutcome | None, str | None]] = queue.Queue()
    cancel = threading.Event()

    def work() -> None:
        while not cancel.is_set():
            try:
                item = pending.get_nowait()
            except queue.Empty:
                return
            try:
                outcome = run_task_trial(
                    item.task,
                    item.agent,
                    item.job,
                    docker_client=docker_client,
                    limits=limits(item.task) if limits else None,
                    settings=settings,
                    dataset=item.dataset,
                    agent_timeout_sec=agent_timeout_sec,
                    cancel=cancel,
                )
                results.put((item, outcome, None))
            except CancelledError:
                return
            except Exception as error:  # e.g. a full disk while writing result.json: report, go on
                results.put((item, None, f"{item.task.name} ({item.agent.model_name}, cap {item.cap}): {error}"))
            finally:
                with contextlib.suppress(Exception):
                    item.job.update_result()

    workers = [
        threading.Thread(target=work, daemon=True, name=f"depthlab-fill-{index}")
        for index in range(min(concurrency, len(items)))
    ]
    bar = tqdm(total=len(items), disable=not progress, desc="trials", unit="trial")
    try:
        for worker in workers:
            worker.start()
        received = 0
        while received < len(items):
            try:
                item, outcome, error = results.get(timeout=0.2)
            except queue.Empty:
                if not any(worker.is_alive() for worker in workers) and results.empty():
                    break
                continue
            received += 1
            if outcome is not None:
                summary.outcomes.append(outcome)
                bar.set_postfix_str(f"{item.task.name} {outcome.exception or f'reward {outcome.reward}'}")
            if error is not None:
                summary.errors.append(error)
            bar.update(1)
    except KeyboardInterrupt:
        cancel.set()
        remove_live_containers()
        deadline = time.monotonic() + 10.0
        for worker in workers:
            worker.join(max(deadline - time.monotonic(), 0.0))
        remove_live_containers()  # a worker may have started one while stopping
        raise
    finally:
        bar.close()
    for job in jobs:
        _finish(job, summary)


def count_valid_trials(jobs_dir: str | os.PathLike[str], *, by_checksum: bool = False) -> dict[tuple[Any, ...], int]:
    """Valid complete trials per (task, model, cap) under ``jobs_dir``, by :func:`depthlab.load_trials`;
    with ``by_checksum``, per (task, model, cap, task_checksum) (the version of the task each ran on).

    Examples
    --------
    >>> import tempfile
    >>> count_valid_trials(tempfile.mkdtemp())
    {}
    """
    trials = load_job_trials(jobs_dir)
    valid = trials.filter(pl.col("status") != "invalid")
    counts: dict[tuple[Any, ...], int] = {}
    keys = ["task", "model", "cap", *(["task_checksum"] if by_checksum else [])]
    for row in valid.group_by(keys).len().iter_rows(named=True):
        key = (_short(row["task"]), row["model"], row["cap"], *([row["task_checksum"]] if by_checksum else []))
        counts[key] = counts.get(key, 0) + int(row["len"])
    return counts


def job_name(model: str, cap: int | None) -> str:
    """The job folder of a (model, cap) cell group.

    Examples
    --------
    >>> job_name("openai/gpt-5", 3)
    'fill__openai-gpt-5__cap3'
    """
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", model).strip("-.") or "model"
    return f"fill__{slug}__cap{'none' if cap is None else cap}"


def job_config(
    agent: Agent, *, n_attempts: int = 1, n_concurrent_trials: int = 1, tasks: Sequence[TaskSpec] = ()
) -> JobConfigRecord:
    """The Harbor JobConfig of a job of one agent (``job_name``/``jobs_dir`` are set by :class:`JobDir`).

    ``tasks`` are listed under ``datasets`` (one entry per task folder), so that ``harbor run
    --config`` could run the same job and ``harbor view`` shows where its tasks came from.

    Examples
    --------
    >>> from depthlab.runner import OracleAgent
    >>> job_config(OracleAgent()).agents[0].name
    'oracle'
    """
    return harbor_writer.job_config(
        "",
        "",
        [harbor_writer.agent_config(agent.name, agent.model_name, agent.config_kwargs())],
        datasets=harbor_writer.dataset_configs((task.path.parent, task.path.name) for task in tasks),
        n_attempts=n_attempts,
        n_concurrent_trials=n_concurrent_trials,
    )


def _finish(job: JobDir, summary: FillSummary) -> None:
    """Write the job's final result.json; a full disk is reported, not raised."""
    try:
        job.update_result(finished=True)
    except OSError as error:
        summary.errors.append(f"job {job.name}: could not write result.json: {error}")


def _task_path(tasks_dir: Path, task: str) -> Path:
    for candidate in (tasks_dir / task, tasks_dir / _short(task)):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"The task {task!r} is not a folder of the 'tasks' directory {str(tasks_dir)!r}")


def _short(task: str) -> str:
    """A task name without any ``org/`` prefix (how names are compared across versions)."""
    return str(task).rsplit("/", 1)[-1]


@contextlib.contextmanager
def _exclusive(jobs_root: Path) -> Iterator[None]:
    """Hold a lock on ``jobs_root`` so that two fills never share one jobs folder (depthlab's one lock file)."""
    lock = contextlib.ExitStack()
    try:
        lock.enter_context(held(jobs_root / ".depthlab-fill.lock"))
    except LockHeld as holder:
        raise RuntimeError(f"Another depthlab fill is using the jobs folder {str(jobs_root)!r} ({holder})") from None
    with lock:
        yield
