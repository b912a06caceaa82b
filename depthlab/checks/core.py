"""``check_tasks``: every check of every task and step, one row each (:data:`depthlab.schema.CHECKS`).

What each check replays (a step *s* of *n*; a single-step task is one step named by the task):

==========================  =======================================================  ==================
check                       replay                                                   rule (``ok`` when)
==========================  =======================================================  ==================
``oracle``                  every step's full solution, ``repeat`` times             every replay passes
                                                                                     step s (mixed: ``flaky``)
``before``                  steps 1..s-1 full, step s not done                       step s fails
``key_removed``             steps 1..s-1 full, step s without its key step,          step s fails
                            step s+1 full
``next_after_key``          (the same replay)                                        step s+1 fails
``mutants``                 steps 1..s-1 full, step s minus one top-level command    every mutant fails
                            (each command not inert, or a seeded sample of them)     step s
``named_in_instruction``    none (static)                                            every path, port, user
                                                                                     the tests name is in
                                                                                     the instruction
``fix_not_in_instruction``  none (static)                                            no key-step line is in
                                                                                     the instruction
``lint``                    none (``harbor lint --json``)                            no finding
==========================  =======================================================  ==================

A replay check of step s is ``not_applicable`` while the oracle does not pass every step it
replays (a failing step means nothing when the full solution fails too); ``key_removed`` and
``next_after_key`` are ``not_marked`` for a step without a key-step mark, never ``ok`` or ``fault``.
An inert command (:func:`depthlab.checks.script.inert_reason`: a shell option, output only, a no-op,
a ``chmod +x`` of what is executable, a ``mkdir -p`` of what exists) is no mutant: not replayed, not
counted, named in the evidence; a mutant whose solution does not run (an agent error) is not caught.
A task that cannot be read, a step without ``solve.sh``, a mark that does not close, an oracle
that cannot run or hangs: that task's rows are ``error`` (or ``not_applicable``) and say why in
``evidence``; the other tasks go on. Each of those, and an oracle that fails its checks (``fault``: the
task's other replay checks cannot be made), is also one line of :attr:`CheckReport.problems`.
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from depthlab import schema
from depthlab._checks import check_choice, check_positive_int
from depthlab.checks import static
from depthlab.checks.causes import cause_line
from depthlab.checks.replay import Replay, Replayer, StepRun
from depthlab.checks.script import (
    Command,
    MarkError,
    before_step,
    inert_reason,
    key_lines,
    key_span,
    top_level_commands,
    without_key,
    without_lines,
)
from depthlab.engines.replays import FROM_SNAPSHOT, ReplayRequest, Replays
from depthlab.io.harbor_task import TaskFormatError, read_task
from depthlab.io.task_versions import task_version
from depthlab.io.tasks import count_work, dirhash_sha256
from depthlab.runner.profiles import RunSettings, limits_for
from depthlab.runner.task import TaskSpec, load_task

#: The checks, in the table's order.
CHECK_NAMES: tuple[str, ...] = schema.CHECK_NAMES
#: The engines a check runs on.
ENGINES: tuple[str, ...] = ("local", "harbor")


@dataclass
class CheckReport:
    """What :func:`check_tasks` returns: the table, one line per task that could not be checked, the replays.

    Attributes
    ----------
    table : polars.DataFrame
        One row per task, step and check (:data:`depthlab.schema.CHECKS`).
    problems : list of str
        One line per bad input (``<task>: <why>``); that task's rows say the same.
    replays_run, replays_reused : int
        Replays run now, and found finished in the jobs folder (a resumed check).
    """

    table: pl.DataFrame
    problems: list[str] = field(default_factory=list)
    replays_run: int = 0
    replays_reused: int = 0

    def summary(self) -> pl.DataFrame:
        """One row per task (:func:`summarize_checks`)."""
        return summarize_checks(self.table)


@dataclass
class _Step:
    """One step as the checks see it: the runner's step (None for a single-step task) and its texts."""

    index: int
    name: str
    instruction: str
    solution_dir: Path
    tests: list[Path]
    script: str | None
    problem: str | None = None  # why its solution cannot be edited (missing, unclosed mark)
    key: tuple[tuple[int, int], ...] | None = None
    result_name: str = ""  # its name in a replay's result (a single-step trial's: task.toml's full name)


@dataclass
class _MutantPlan:
    """A step's mutants, listed before any replay: its commands, the inert ones (first line -> why), how many
    are not inert, and one replay per mutant made (each command not inert, or a seeded sample of them)."""

    every: list[Command]
    inert: dict[int, str]
    live: int
    replays: list[tuple[Command, ReplayRequest]]


@dataclass
class _StepPlan:
    """The replays one step's checks need, decided from the oracle's verdicts before any of them runs.

    A check's replay is None where its rows need none: ``blocked`` says why (the oracle fails a step up
    to this one), or ``key_rows`` is the outcome and evidence of every key row made without a replay;
    ``next_unmade`` says why ``next_after_key`` is not graded in the key replay (the step after it
    missing or failing its oracle). :meth:`requests` lists the replays in the order the rows read them
    (before, key, mutants), so a batch runs a step's mutants one after another (the local engine's
    snapshot of the earlier steps serves them all)."""

    step: _Step
    blocked: str | None
    after: _Step | None
    before: ReplayRequest | None = None
    key: ReplayRequest | None = None
    key_rows: tuple[str, str] | None = None
    next_unmade: str | None = None
    mutants: _MutantPlan | None = None

    def requests(self) -> list[ReplayRequest]:
        """Every replay of the step's checks, in the order its rows read them."""
        listed = [request for request in (self.before, self.key) if request is not None]
        return listed + [request for _, request in (self.mutants.replays if self.mutants else [])]


def check_tasks(
    tasks: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    jobs_dir: str | os.PathLike[str],
    engine: str = "local",
    checks: Sequence[str] = CHECK_NAMES,
    repeat: int = 2,
    mutants: int | None = None,
    mutant_seed: int = 0,
    settings: RunSettings | None = None,
    docker_client: Any = None,
    harbor: str | None = None,
    progress: Callable[[str], None] | None = None,
    reuse: bool = True,
    batch: bool = True,
    offline: bool = False,
    keep_images: bool = False,
    concurrency: int = 2,
) -> CheckReport:
    """Check tasks' verifiers by replaying their reference solutions (no model is called).

    Parameters
    ----------
    tasks : path or iterable of paths
        Harbor task folders (single- or multi-step).
    jobs_dir : path
        Where the replays are written, as Harbor trials of the job ``depthlab-check``; rerunning
        with the same folder resumes (no replay is done twice).
    engine : {"local", "harbor"}, default "local"
        Where the replays run: the runner's Docker containers (``local``), or one Harbor trial per
        replay of depthlab's replay agent (``harbor``, :mod:`depthlab.engines.harbor_replays`). Only the
        replays differ: the checks and the table are the same code, so both engines give the same
        table for the same tasks.
    checks : sequence of str, default all
        Which checks to run (:data:`CHECK_NAMES`); the oracle runs whenever a replay check does.
    repeat : int, default 2
        Oracle replays per task; a step whose result differs between them is ``flaky``.
    mutants : int, optional
        Mutants per step (a seeded sample of its top-level commands); None: every command.
    mutant_seed : int, default 0
        The sample's seed.
    settings : RunSettings, optional
        The runner's settings (the profile, the capabilities given back, the pid limit, the disk
        bound, the network), applied alike on both engines. The network is the task's own by
        default, as Harbor runs it (``[environment].network_mode`` / ``allow_internet``; none under
        ``strict``).
    docker_client : docker.DockerClient, optional
        The local engine's Docker client; default ``docker.from_env()``.
    harbor : str, optional
        How to call Harbor (``engine="harbor"``), as for :func:`depthlab.engines.harbor.find_harbor`;
        default ``harbor`` on PATH.
    progress : callable, optional
        Called with one line per replay as it ends (the time since the start, the task, the replay,
        its outcome, its seconds) and one line per task as its checks end.
    reuse : bool, default True
        On the local engine, replay steps 1..s-1 once for all of step s's mutants and start each
        mutant from a ``docker commit`` snapshot of them (from scratch where a process is left
        running, which a snapshot cannot carry; :mod:`depthlab.engines.replays`); False: every mutant
        from scratch. The verdicts are the same; the Harbor engine always replays from scratch.
    offline : bool, default False
        Replay with no network whatever the task allows (the paper's rule; ``depthlab check
        --offline``). Each oracle row's evidence names the network its replays had.
    keep_images : bool, default False
        Keep the task images the local engine built for the check (default: removed at the end;
        an image there before the check is kept). The Harbor engine's trials remove their own.
    batch : bool, default True
        Hand the replays to the engine in two batches (every task's oracle replays, then every
        task's other replays): on Harbor one Harbor process each instead of one per replay
        (:class:`depthlab.engines.harbor_replays.HarborReplays`). False: one engine call per replay (the
        baseline ``tests/bench/bench_checks_engines.py`` measures against). The table is the same.
    concurrency : int, default 2
        Replays at once: on Harbor, of a batch (Harbor's trials, as its jobs' ``n_concurrent_trials``);
        on the local engine, of that many tasks (a task's own replays in order: its image built once,
        its mutants from one snapshot). Each replay is its own trial in its own container, so the table
        is the same whatever the number.

    Returns
    -------
    CheckReport
        The table (:data:`depthlab.schema.CHECKS`), the problems, the replays run and reused.

    Examples
    --------
    >>> report = check_tasks("tasks/two-step", jobs_dir="jobs")  # doctest: +SKIP
    >>> report.summary()  # doctest: +SKIP
    """
    check_choice(engine, "engine", "check_tasks", ENGINES)
    check_positive_int(repeat, "repeat", "check_tasks")
    check_positive_int(concurrency, "concurrency", "check_tasks")
    if mutants is not None:
        check_positive_int(mutants, "mutants", "check_tasks")
    wanted = tuple(dict.fromkeys(check_choice(name, "checks", "check_tasks", CHECK_NAMES) for name in checks))
    if offline:
        settings = dataclasses.replace(settings or RunSettings(), network=False)
    paths = [Path(os.fspath(tasks))] if isinstance(tasks, str | os.PathLike) else [Path(os.fspath(t)) for t in tasks]
    replayer = None
    if any(name in _REPLAYED for name in wanted):
        replays = _engine_replays(
            engine, Path(os.fspath(jobs_dir)), docker_client, settings, harbor, reuse, batch, keep_images, concurrency
        )
        replayer = Replayer(Path(os.fspath(jobs_dir)), replays, progress) if replays is not None else None
    lint = static.harbor_lint(paths) if "lint" in wanted else {}
    checkers = [
        _TaskChecker(
            path,
            wanted,
            replayer,
            repeat=repeat,
            mutants=mutants,
            seed=mutant_seed,
            batch=batch,
            settings=settings or RunSettings(),
            offline=offline,
        )
        for path in paths
    ]
    try:
        _run_in_step(checkers, lint, replayer, progress)
    finally:  # the snapshots go however the check ends
        if replayer is not None:
            replayer.close()
    if replayer is not None:
        replayer.finish()
    rows = [row for checker in checkers for row in checker.rows]
    problems = [line for checker in checkers for line in checker.problems]
    reused = sum(checker.reused for checker in checkers)
    table = pl.DataFrame(rows, schema=schema.CHECKS) if rows else schema.empty("checks")
    return CheckReport(table, problems, replayer.ran if replayer else 0, reused)


def _version_of(path: Path) -> tuple[str | None, str | None]:
    """A task folder's checksum and stated version, as its verdicts name them (None where the folder cannot say)."""
    try:
        checksum: str | None = dirhash_sha256(path)
    except (OSError, ValueError):
        checksum = None  # an empty or unreadable folder: its checks say why
    try:
        version = task_version(path).version
    except (OSError, TaskFormatError):
        version = None
    return checksum, version


def _run_in_step(
    checkers: list[_TaskChecker],
    lint: dict[Path, list[dict] | str] | str,
    replayer: Replayer | None,
    progress: Callable[[str], None] | None,
) -> None:
    """Run every task's checks side by side, a batch of the engine at each phase (:meth:`_TaskChecker.run`).

    Each task's checks stop where a phase's replays are needed and hand them over; the replays of
    every task at that phase (all the oracles', then all the other checks') run as one batch, then
    each task goes on, finding its replays done. A task's rows are its own whatever the others'."""
    running = [(checker, checker.run(lint)) for checker in checkers]
    while running:
        wanted: list[ReplayRequest] = []
        still = []
        for checker, phases in running:
            try:
                wanted += next(phases)
            except StopIteration:
                if progress is not None:
                    progress(f"{checker.name}: {_tally(checker.rows)}")
                continue
            still.append((checker, phases))
        if wanted and replayer is not None:
            replayer.prefetch(wanted)
        running = still


_REPLAYED = frozenset({"oracle", "before", "key_removed", "next_after_key", "mutants"})


def _engine_replays(
    engine: str,
    jobs_dir: Path,
    docker_client: Any,
    settings: RunSettings | None,
    harbor: str | None,
    reuse: bool = True,
    batch: bool = True,
    keep_images: bool = False,
    concurrency: int = 2,
) -> Replays | None:
    """The engine's replays (the one place the engine matters); None when the local engine has no Docker."""
    if engine == "harbor":
        from depthlab.engines.harbor import HarborEngine

        harbor_engine = HarborEngine(jobs_dir, base_url=None, harbor=harbor, concurrency=concurrency)
        return harbor_engine.replays(settings, batch=batch)
    if docker_client is None:
        from depthlab.runner.container import new_docker_client

        docker_client = new_docker_client()
    if docker_client is None:
        return None
    from depthlab.runner.leftovers import remove_leftovers

    remove_leftovers(docker_client)  # the containers of a check that was killed
    from depthlab.engines.local import LocalEngine

    local_engine = LocalEngine(jobs_dir, concurrency=concurrency)
    return local_engine.replays(settings, docker_client=docker_client, reuse=reuse, keep_images=keep_images)


def _tally(rows: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    return ", ".join(f"{count} {outcome}" for outcome, count in counts.items())


class _TaskChecker:
    """The checks of one task (module docstring)."""

    def __init__(
        self,
        path: Path,
        wanted: tuple[str, ...],
        replayer: Replayer | None,
        *,
        repeat: int,
        mutants: int | None,
        seed: int,
        batch: bool = True,
        settings: RunSettings | None = None,
        offline: bool = False,
    ) -> None:
        self.path = path.resolve()
        self.name = path.name
        self.version = _version_of(self.path)  # every verdict names the task version it checked
        self.wanted = wanted
        self.replayer = replayer
        self.repeat = repeat
        self.mutants = mutants
        self.seed = seed
        self.problems: list[str] = []
        self.rows: list[dict[str, Any]] = []
        self.reused = 0
        self.batch = batch
        self.settings = settings or RunSettings()
        self.offline = offline

    # ---------------------------------------------------------------- rows ------------------
    def row(
        self,
        step: _Step | None,
        check: str,
        outcome: str,
        evidence: str,
        *,
        caught: int | None = None,
        total: int | None = None,
        replays: list[Replay] = (),  # type: ignore[assignment]
    ) -> None:
        self.rows.append(
            {
                "task": self.name,
                "step": None if step is None else step.name,
                "step_index": None if step is None else step.index,
                "check": check,
                "outcome": outcome,
                "caught": caught,
                "total": total,
                "work": None if step is None or step.script is None else count_work(step.script)[0],
                "replays": len(replays),
                "seconds": round(sum(replay.seconds for replay in replays), 3),
                "evidence": evidence,
                "trials": ";".join(str(replay.trial_dir) for replay in replays) or None,
                schema.TASK_CHECKSUM: self.version[0],
                schema.TASK_VERSION: self.version[1],
            }
        )

    def fail_all(self, steps: list[_Step], reason: str) -> list[dict[str, Any]]:
        self.problems.append(f"{self.name}: {reason}")
        for step in steps or [None]:  # type: ignore[list-item]
            for check in self.wanted:
                if check != "lint":
                    self.row(step, check, "error", reason)
        return self.rows

    # ---------------------------------------------------------------- the task --------------
    def run(self, lint: dict[Path, list[dict] | str] | str) -> Generator[list[ReplayRequest], None, None]:
        """The task's checks, into :attr:`rows`; yields the replays of each phase before it reads them
        (every oracle replay, then every other replay the verdicts call for: :meth:`_oracle_requests`,
        :class:`_StepPlan`), which the caller runs as one batch with the other tasks' (:func:`_run_in_step`)."""
        if "lint" in self.wanted:
            if isinstance(lint, str):
                self.row(None, "lint", "not_applicable", lint)
            else:
                found = static.lint_result(lint.get(self.path, []))
                self.row(None, "lint", found.outcome, found.evidence, total=found.total)
        try:
            task = load_task(self.path)
        except Exception as error:  # any unreadable task: its rows say why, the others go on
            steps = _text_steps(self.path)  # the static checks need its texts only (a task run elsewhere)
            if not steps:
                self.fail_all([], f"cannot be read: {error}")
                return
            self._static(steps)
            self.wanted = tuple(check for check in self.wanted if check in _REPLAYED)
            if self.wanted:
                self.fail_all(steps, f"cannot be replayed here: {error}")
            return
        self.name = task.name.rsplit("/", 1)[-1]  # the tasks table's name: task.toml's without its org
        for row in self.rows:
            row["task"] = self.name
        steps = _steps(task)
        for step in steps:
            if step.problem and step.script is not None:  # a missing solution is the oracle's line below
                self.problems.append(f"{self.name}: step {step.name!r}: {step.problem}")
        missing = next((step for step in steps if step.script is None), None)
        self._static(steps)
        if not _REPLAYED & set(self.wanted):
            return
        if self.replayer is None:
            self.fail_all(steps, "no Docker engine to replay on")
            return
        if missing is not None:
            reason = f"the oracle cannot run: step {missing.name!r} has no solution/solve.sh"
            self.problems.append(f"{self.name}: {reason}")
            for step in steps:
                for check in self.wanted:
                    if check in _REPLAYED:
                        self.row(step, check, "error", reason)
            return
        requests = self._oracle_requests(task, steps)
        if self.batch:
            yield requests
        oracle = self._oracle(task, steps, requests)
        plans = [self._plan(task, steps, step, oracle) for step in steps]
        if self.batch:
            yield [request for plan in plans for request in plan.requests()]
        for plan in plans:
            self._replay_checks(plan)

    def _replayed(self, request: ReplayRequest) -> Replay:
        """The replay of ``request``: run in the phase's batch (found done), or now (``batch=False``)."""
        if self.replayer is None:  # run() returned before any replay without an engine
            raise RuntimeError("no Docker engine to replay on")
        replay = self.replayer.replay(request)
        self.reused += replay.reused
        return replay

    def _oracle_requests(self, task: TaskSpec, steps: list[_Step]) -> list[ReplayRequest]:
        """The oracle's replays: every step's full solution, ``repeat`` times."""
        plan = {str(step.solution_dir.resolve()): step.script for step in steps}
        return [ReplayRequest(task, f"oracle#{k}", plan, len(steps)) for k in range(1, self.repeat + 1)]

    def _oracle(self, task: TaskSpec, steps: list[_Step], requests: list[ReplayRequest]) -> dict[str, tuple[str, str]]:
        """Each step's oracle outcome and evidence (also when the oracle row is not wanted)."""
        replays = [self._replayed(request) for request in requests]
        verdicts: dict[str, tuple[str, str]] = {}
        for step in steps:
            runs = [replay.steps.get(step.result_name) for replay in replays]
            passed = [run is not None and run.passed and not run.exception for run in runs]
            failure = next((run for run in runs if run is not None and run.exception), None)
            why = next((f": {run.cause}" for run in runs if run is not None and not run.passed and run.cause), "")
            if all(passed):
                verdicts[step.name] = ("ok", f"passed {len(runs)} of {len(runs)} replays")
            elif any(passed):
                verdicts[step.name] = ("flaky", f"passed {sum(passed)} of {len(runs)} replays{why}")
            elif failure is not None:
                verdicts[step.name] = ("error", f"the oracle cannot run: {_failure(failure)}")
            elif any(run is None for run in runs):
                verdicts[step.name] = ("error", "the oracle stopped before this step")
            else:
                verdicts[step.name] = ("fault", f"the full solution fails its checks in {len(runs)} replays{why}")
            if "oracle" in self.wanted:
                outcome, evidence = verdicts[step.name]
                evidence += f"; {_network(task, self.settings, self.offline)}" if step.index == 1 else ""
                self.row(step, "oracle", outcome, evidence, replays=replays if step.index == 1 else [])
        bad = [
            f"step {name!r}: {evidence}" if task.multi_step else evidence
            for name, (outcome, evidence) in verdicts.items()
            if outcome in ("error", "fault")  # the task's other replay checks cannot be made: one line says why
        ]
        if bad:
            self.problems.append(f"{self.name}: {bad[0]}")
        return verdicts

    # ---------------------------------------------------------------- a step's replay checks ---
    def _plan(self, task: TaskSpec, steps: list[_Step], step: _Step, oracle: dict[str, tuple[str, str]]) -> _StepPlan:
        """What step ``step``'s replay checks replay, decided from the oracle's verdicts alone (:class:`_StepPlan`)."""
        index = step.index
        prefix = {str(s.solution_dir.resolve()): s.script for s in steps[: index - 1]}
        unfit = next((s for s in steps[:index] if oracle[s.name][0] != "ok"), None)
        blocked = None if unfit is None else f"the oracle does not pass step {unfit.name!r} ({oracle[unfit.name][0]})"
        here = str(step.solution_dir.resolve())
        plan = _StepPlan(step, blocked, after=steps[index] if index < len(steps) else None)
        if "before" in self.wanted and not blocked:
            plan.before = ReplayRequest(task, f"before:{step.name}", {**prefix, here: None}, index)
        self._plan_key(task, plan, prefix, oracle)
        if "mutants" in self.wanted and step.script is not None and not blocked:
            plan.mutants = self._plan_mutants(task, step, prefix)
        return plan

    def _plan_key(
        self, task: TaskSpec, plan: _StepPlan, prefix: dict[str, str | None], oracle: dict[str, tuple[str, str]]
    ) -> None:
        """The key-step replay of ``plan``'s step, or the one outcome every key row has without it."""
        step, after = plan.step, plan.after
        wanted = [check for check in ("key_removed", "next_after_key") if check in self.wanted]
        if not wanted:
            return
        if step.problem:
            plan.key_rows = ("error", step.problem)
        elif step.key is None:
            plan.key_rows = ("not_marked", "no '# key-step begin' / '# key-step end' mark in solve.sh")
        elif plan.blocked:
            plan.key_rows = ("not_applicable", plan.blocked)
        if plan.key_rows is not None:
            return
        if after is None:
            plan.next_unmade = "the last step: no step after it"
        elif oracle[after.name][0] != "ok":
            plan.next_unmade = f"the oracle does not pass step {after.name!r} ({oracle[after.name][0]})"
        key_plan = {**prefix, str(step.solution_dir.resolve()): without_key(step.script or "")}
        upto = step.index
        if after is not None and "next_after_key" in wanted and plan.next_unmade is None:
            key_plan[str(after.solution_dir.resolve())] = after.script
            upto = step.index + 1
        plan.key = ReplayRequest(task, f"key:{step.name}:{upto}", key_plan, upto)

    def _plan_mutants(self, task: TaskSpec, step: _Step, prefix: dict[str, str | None]) -> _MutantPlan:
        """Step ``step``'s mutants: its inert commands told apart, the others (or a seeded sample), one replay each."""
        every = top_level_commands(step.script or "")
        before = before_step(_before_texts(self.path, step, prefix), static.task_workdir(self.path))
        inert = {c.first: why for n, c in enumerate(every) if (why := inert_reason(c, every[:n], before))}
        live = [command for command in every if command.first not in inert]
        commands = live
        if self.mutants is not None and self.mutants < len(live):
            chosen = random.Random(f"{self.seed}:{task.name}:{step.name}").sample(range(len(live)), self.mutants)
            commands = [live[i] for i in sorted(chosen)]
        here = str(step.solution_dir.resolve())
        replays = [
            (
                command,
                ReplayRequest(
                    task,
                    f"mutant:{step.name}:{command.first}-{command.last}",
                    {**prefix, here: without_lines(step.script or "", command.first, command.last)},
                    step.index,
                    snapshot=step.index > 1,  # the earlier steps are the full solutions: one snapshot of them
                ),
            )
            for command in commands
        ]
        return _MutantPlan(every, inert, len(live), replays)

    def _replay_checks(self, plan: _StepPlan) -> None:
        """The rows of one step's replay checks, reading the replays its plan listed."""
        step = plan.step
        if "before" in self.wanted:
            if plan.before is None:
                self.row(step, "before", "not_applicable", plan.blocked or "")
            else:
                replay = self._replayed(plan.before)
                run = replay.steps.get(step.result_name)
                self._verdict(step, "before", run, replay, "passes with the step not done")
        self._key_checks(plan)
        if "mutants" in self.wanted:
            self._mutants(plan)

    def _key_checks(self, plan: _StepPlan) -> None:
        step, after = plan.step, plan.after
        wanted = [check for check in ("key_removed", "next_after_key") if check in self.wanted]
        if plan.key is None:
            if plan.key_rows is not None:
                for check in wanted:
                    self.row(step, check, *plan.key_rows)
            return
        replay = self._replayed(plan.key)
        if "key_removed" in wanted:
            self._verdict(
                step, "key_removed", replay.steps.get(step.result_name), replay, "passes with its key step removed"
            )
        if "next_after_key" in wanted:
            if after is None or plan.next_unmade is not None:
                self.row(step, "next_after_key", "not_applicable", plan.next_unmade or "")
            else:
                self._verdict(
                    step,
                    "next_after_key",
                    replay.steps.get(after.result_name),
                    replay,
                    f"step {after.name!r} passes with this key step removed",
                    shared=True,
                )

    def _mutants(self, plan: _StepPlan) -> None:
        step, mutants = plan.step, plan.mutants
        if step.script is None:
            self.row(step, "mutants", "error", step.problem or "no solution")
            return
        if mutants is None:
            self.row(step, "mutants", "not_applicable", plan.blocked or "")
            return
        every, inert = mutants.every, mutants.inert
        apart = "; ".join(
            f"line {c.first}: {c.text.splitlines()[0][:40]} ({inert[c.first]})" for c in every if c.first in inert
        )
        inert_note = f"; {len(inert)} inert, not replayed: {apart}" if inert else ""
        if not mutants.replays:
            why = "the solution has no command" if not every else "every command is inert"
            self.row(step, "mutants", "not_applicable", why + inert_note, caught=0, total=0)
            return
        replays: list[Replay] = []
        silent: list[str] = []
        unrun: list[str] = []
        for command, request in mutants.replays:
            replay = self._replayed(request)
            replays.append(replay)
            run = replay.steps.get(step.result_name)
            line = f"line {command.first}: {command.text.splitlines()[0][:60]}"
            if run is None or (not run.passed and (run.exception or "").startswith(("Agent", "NonZeroAgent"))):
                # STING's gold sanity: the solution did not run, so the verifier caught nothing
                unrun.append(line + (f" ({run.exception})" if run is not None else " (stopped before the step)"))
            elif run.passed:
                silent.append(line)
        scored = len(mutants.replays) - len(unrun)
        caught = scored - len(silent)
        whole = f"caught {caught} of {scored}"
        if len(mutants.replays) < mutants.live:
            whole += f" sampled ({len(mutants.replays)} of {mutants.live} removable), {len(every)} in all"
        elif inert:
            whole += f", {len(every)} in all"
        notes = (f"; {len(unrun)} made the solution fail to run, not counted: " + "; ".join(unrun)) if unrun else ""
        notes += inert_note + _started(replays, step.index)
        if silent:
            evidence = f"{whole}; not caught: " + "; ".join(silent) + notes
            self.row(step, "mutants", "fault", evidence, caught=caught, total=scored, replays=replays)
        elif scored:
            self.row(step, "mutants", "ok", whole + notes, caught=caught, total=scored, replays=replays)
        else:
            self.row(step, "mutants", "error", "no mutant ran" + notes, caught=0, total=0, replays=replays)

    def _verdict(self, step: _Step, check: str, run: Any, replay: Replay, fault: str, *, shared: bool = False) -> None:
        replays = [] if shared else [replay]
        if run is None:
            self.row(step, check, "error", "the replay stopped before this step", replays=replays)
        elif run.reward is None and run.exception is None and not run.passed:  # recorded, never graded
            self.row(step, check, "error", "the step never ran in the replay (no verdict)", replays=replays)
        elif run.passed:
            self.row(step, check, "fault", fault, replays=replays)
        elif run.exception == "AgentTimeoutError":
            self.row(step, check, "error", _failure(run), replays=replays)
        else:
            self.row(step, check, "ok", f"fails (reward {run.reward})", replays=replays)

    # ---------------------------------------------------------------- static ----------------
    def _static(self, steps: list[_Step]) -> None:
        workdir, environment = static.task_workdir(self.path), static.environment_files(self.path)
        ports = static.environment_ports(self.path)
        for step in steps:
            if "named_in_instruction" in self.wanted:
                found = static.named_in_instruction(
                    step.instruction, step.tests, workdir=workdir, environment=environment, ports=ports
                )
                self.row(step, "named_in_instruction", found.outcome, found.evidence, total=found.total)
            if "fix_not_in_instruction" in self.wanted:
                if step.problem:
                    self.row(step, "fix_not_in_instruction", "error", step.problem)
                elif step.key is None:
                    self.row(step, "fix_not_in_instruction", "not_marked", "no key-step mark in solve.sh")
                else:
                    found = static.fix_not_in_instruction(step.instruction, key_lines(step.script or ""))
                    self.row(step, "fix_not_in_instruction", found.outcome, found.evidence, total=found.total)


def _network(task: TaskSpec, settings: RunSettings, offline: bool) -> str:
    """The network the task's replays had, as its oracle row names it.

    Examples
    --------
    >>> from depthlab.simulate.checks import write_planted_tasks
    >>> import tempfile
    >>> task = load_task(write_planted_tasks(tempfile.mkdtemp(), "debian:12")["clean"])
    >>> _network(task, RunSettings(), False), _network(task, RunSettings(network=False), True)
    ('replays offline (the task says no network)', 'replays offline (--offline)')
    """
    if offline:
        return "replays offline (--offline)"
    if settings.profile == "strict":
        return "replays offline (the strict profile)"
    if limits_for(task, settings).network:
        return "replays with the network the task allows"
    if settings.network is False:
        return "replays offline (no network in the settings)"
    return "replays offline (the task says no network)"


def _started(replays: list[Replay], index: int) -> str:
    """How the mutants' replays started, for the evidence: '' when no choice was made (step 1, Harbor).

    Examples
    --------
    >>> _started([Replay("m", Path("t"), {}, 1.0, False, "snapshot")], 2)
    '; from a snapshot of step 1'
    """
    starts = sorted({replay.start for replay in replays if replay.start is not None})
    if not starts:
        return ""
    earlier = "step 1" if index == 2 else f"steps 1-{index - 1}"
    if starts == [FROM_SNAPSHOT]:
        return f"; from a snapshot of {earlier}"
    return "; " + "; ".join(start for start in starts if start != FROM_SNAPSHOT)


def _before_texts(path: Path, step: _Step, prefix: dict[str, str | None]) -> list[str]:
    """What runs before a step's solution, as text: the image's Dockerfile, the earlier steps' solutions,
    the step's ``workdir/setup.sh``."""
    texts = [script for script in prefix.values() if script]
    for file in (path / "environment" / "Dockerfile", step.solution_dir.parent / "workdir" / "setup.sh"):
        try:
            texts.append(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    return texts


def _failure(run: StepRun) -> str:
    """A step's exception as its rows say it, worded alike on both engines.

    Examples
    --------
    >>> _failure(StepRun(False, None, "AgentTimeoutError", "Agent execution timed out after 3.0 seconds"))
    'AgentTimeoutError: Agent execution timed out after 3.0 seconds (it hangs)'
    """
    text = f"{run.exception}: {cause_line(run.message or '')}"
    if run.exception == "AgentTimeoutError" and "hangs" not in text:
        text += " (it hangs)"  # the timeout message is Harbor's words on both engines, which do not say so
    if run.cause and not run.cause.startswith(f"{run.exception}:"):  # what the replay's own output says
        text += f"; {run.cause}"
    return text


def _steps(task: TaskSpec) -> list[_Step]:
    """The task's steps as the checks see them (a single-step task: one step named by the task)."""
    specs: list[tuple[int, str, str, Path, list[Path]]]
    if task.multi_step:
        shared = task.path / "tests"
        specs = [
            (s.index, s.name, s.instruction or "", Path(s.path) / "solution", [Path(s.tests_dir), shared])
            for s in task.steps
        ]
    else:
        specs = [(1, task.name.rsplit("/", 1)[-1], task.instruction, task.solution_path, [task.tests_path])]
    steps = []
    for index, name, instruction, solution_dir, tests in specs:
        step = _Step(index, name, instruction, solution_dir, tests, None)
        step.result_name = name if task.multi_step else task.name
        try:
            step.script = (solution_dir / "solve.sh").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            step.problem = "no solution/solve.sh"
        else:
            try:
                step.key = key_span(step.script)
            except MarkError as error:
                step.problem = str(error)
        steps.append(step)
    return steps


def _text_steps(path: Path) -> list[_Step]:
    """The steps' texts as Harbor's files hold them, for a task the runner cannot load; [] when unreadable."""
    try:
        task = read_task(path)
    except Exception:  # the caller's row says why the task cannot be read
        return []
    if task.multi_step:
        specs = [
            (s.index, s.name, s.agent_instruction or "", Path(s.path) / "solution", [Path(s.tests_dir), path / "tests"])
            for s in task.steps
        ]
    else:
        specs = [(1, task.name, task.agent_instruction or "", path / "solution", [path / "tests"])]
    steps = []
    for index, name, instruction, solution_dir, tests in specs:
        step = _Step(index, name, instruction, solution_dir, tests, None)
        try:
            step.script = (solution_dir / "solve.sh").read_text(encoding="utf-8")
            step.key = key_span(step.script)
        except (OSError, UnicodeDecodeError):
            step.problem = "no solution/solve.sh"
        except MarkError as error:
            step.problem = str(error)
        steps.append(step)
    return steps


def summarize_checks(table: pl.DataFrame) -> pl.DataFrame:
    """One row per task: its steps, the checks met (``ok``) and not (``fault``, ``flaky``), the rest, the cost.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> rows = [{"task": "t", "step": "a", "check": "before", "outcome": "ok", "replays": 1, "seconds": 2.0}]
    >>> summarize_checks(schema.conform(pl.DataFrame(rows), "checks"))["faults"].to_list()
    [0]
    """
    return (
        table.group_by("task", maintain_order=True)
        .agg(
            pl.col("step").drop_nulls().n_unique().alias("steps"),
            (pl.col("outcome") == "ok").sum().alias("ok"),
            (pl.col("outcome") == "fault").sum().alias("faults"),
            (pl.col("outcome") == "flaky").sum().alias("flaky"),
            (pl.col("outcome") == "not_marked").sum().alias("not_marked"),
            (pl.col("outcome") == "error").sum().alias("errors"),
            pl.col("replays").sum().alias("replays"),
            pl.col("seconds").sum().alias("seconds"),
            pl.when(pl.col("outcome").is_in(["fault", "flaky", "error"]))
            .then(
                pl.when(pl.col("step").is_null())
                .then(pl.col("check"))
                .otherwise(pl.col("check") + pl.lit("@") + pl.col("step"))
            )
            .drop_nulls()
            .alias("problems"),
        )
        .with_columns(pl.col("problems").list.join(", "))
    )


def faults_found(table: pl.DataFrame, *, lint: bool = False) -> dict[tuple[str, str, str], str]:
    """The rules a checks table finds broken: ``(task, step, check) -> outcome`` for every ``fault`` and ``flaky`` row.

    The planted tasks' truth (:data:`depthlab.simulate.checks.PLANTED`) has this shape, so a table
    recovers it exactly when the two are equal. ``lint`` rows (Harbor's own rules, planted nowhere)
    are left out unless ``lint=True``.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> rows = [{"task": "t", "step": "a", "check": "before", "outcome": "fault"},
    ...         {"task": "t", "step": "a", "check": "oracle", "outcome": "ok"}]
    >>> faults_found(schema.conform(pl.DataFrame(rows), "checks"))
    {('t', 'a', 'before'): 'fault'}
    """
    broken = table.filter(pl.col("outcome").is_in(["fault", "flaky"]))
    if not lint:
        broken = broken.filter(pl.col("check") != "lint")
    return {(row["task"], row["step"], row["check"]): row["outcome"] for row in broken.iter_rows(named=True)}


def select_checks(
    table: pl.DataFrame, *, check: str | None = None, outcomes: Sequence[str] | None = None
) -> pl.DataFrame:
    """The rows of a checks table of one ``check`` and/or with one of ``outcomes`` (None: any).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> rows = [{"task": "t", "step": "a", "check": "before", "outcome": "fault"},
    ...         {"task": "t", "step": "a", "check": "oracle", "outcome": "ok"}]
    >>> select_checks(schema.conform(pl.DataFrame(rows), "checks"), outcomes=["fault"])["check"].to_list()
    ['before']
    """
    if check is not None:
        table = table.filter(pl.col("check") == check)
    if outcomes is not None:
        table = table.filter(pl.col("outcome").is_in(list(outcomes)))
    return table


def read_checks(path: str | os.PathLike[str]) -> pl.DataFrame:
    """A checks table written by ``depthlab check -o FILE`` (``.csv`` or ``.parquet``), with its schema's dtypes.

    Examples
    --------
    >>> import tempfile
    >>> from depthlab._tables import write_table
    >>> path = write_table(schema.empty("checks"), Path(tempfile.mkdtemp()) / "checks.csv")
    >>> read_checks(path).columns == list(schema.CHECKS)
    True
    """
    path = Path(os.fspath(path))
    if path.suffix == ".parquet":
        return schema.conform(pl.read_parquet(path), "checks")
    # a file written before a column was added (the task version's) is read with that column null
    return schema.conform(pl.read_csv(path, schema_overrides=schema.CHECKS), "checks")
