"""The measurement loop both engines share: oracle preflight, then adaptive rounds until D is known.

A round is one call of :func:`depthlab.measures.plan_missing` with ``mode="adaptive"`` on every
trial the jobs folder holds, run by an engine (:class:`~depthlab.engines.harbor.HarborEngine`
or :class:`~depthlab.engines.local.LocalEngine`). The loop is stateless: what is known is what
the jobs folder holds, so a rerun after an interruption plans from the same evidence and runs
only what is still missing (each engine first finishes or cleans up its interrupted work, see
:meth:`Engine.resume`).

It stops when

* the plan is empty: every task is *solved* (D pinned) or *unsolved* (no cap passed);
* the next round would pass ``max_runs`` or ``max_cost`` (the cost of a round is estimated
  from the mean cost per trial so far; before any trial has a cost, a round is not refused);
* a round records no valid trial (an endpoint that is down, an environment that does not
  start): nothing is counted, the reason is the first invalid trial's exception;
* more rounds than the ladder can need (``2 * len(caps) + 1``, times ``max_attempts`` with
  ``attempts="auto"``, where a round adds at most one attempt to a cell) have run, which only
  happens when invalid trials keep cells missing.

With ``error`` (``depthlab measure --error 0.05``) each round is ``plan_missing(mode="bayes")``
instead (:mod:`depthlab.measures.bayes`): the runs with the most information about each
unfinished task's D per expected turn, until D's posterior puts ``1 - error`` on one rung or every
cell of the task has ``max_attempts`` valid runs; the depth table is ``estimate_depth``'s with
``pass_rule="bayes"`` (``p_depth`` beside each D). Every round plans at least one run of each
unfinished task, so the rounds are bounded by ``max_attempts * len(caps) * len(models)``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import polars as pl

from depthlab import schema
from depthlab._checks import check_caps, check_models, check_number, check_positive_int, parameter_error
from depthlab._text import one_line as _one_line
from depthlab.engines._lock import jobs_folder_lock
from depthlab.engines._versions import REUSED_COLUMN, diff_versions
from depthlab.io.task_rules import MISREAD, REFUSED, refused_tasks, task_config_problems, unset_host_variables
from depthlab.measures import plan_missing
from depthlab.measures.bayes import BAYES_Q
from depthlab.measures.depth import (
    DEPTH_LEVEL,
    TASK_KEYS,
    bayes_depth,
    depth_from_grid,
    evidence_grid,
    true_depth_columns,
)

if TYPE_CHECKING:  # annotations only (engines.replays runs the runner; the round loop needs none of it)
    from depthlab.engines.replays import Replays
    from depthlab.runner.profiles import RunSettings

Echo = Callable[[str], None]


class EngineError(RuntimeError):
    """The engine cannot run at all (Harbor missing or too old, Docker Compose missing, ...)."""


class Engine(Protocol):
    """What the round loop needs from an engine: every attribute and method it reads or sets.

    An engine may also have ``regrade(regrades, echo) -> int`` (both engines do): grade the recorded
    trials :attr:`depthlab.engines._versions.VersionDiff.to_regrade` lists again with their task's
    verifier now, and return how many were; without it a regradable trial is re-run.
    """

    #: The engine's name ("harbor", "local"), recorded in :attr:`MeasureResult.engine`.
    name: str

    @property
    def jobs_dir(self) -> Path | None:
        """The jobs folder the engine writes: the loop holds its lock (one measurement per folder).

        None: the engine keeps its trials elsewhere (a simulation), and no folder is locked.
        """

    #: Whether the engine shows progress bars (the loop sets it before :meth:`check`).
    progress: bool
    #: A short line to show beside the engine's progress bar (the loop sets it before each round).
    note: str

    def check(self) -> None:
        """Raise :class:`EngineError` when the engine cannot run (a tool missing, the API key unset)."""

    def resume(self, echo: Echo) -> None:
        """Finish or clean up work an interrupted measurement left in the jobs folder."""

    def preflight(self, tasks: pl.DataFrame, echo: Echo) -> pl.DataFrame:
        """Run each task's reference solution once; the failures (:data:`depthlab.schema.PREFLIGHT_FAILURES`)."""

    def next_round(self) -> int:
        """The number of the next round (one more than the rounds the jobs folder holds)."""

    def run_round(self, plan: pl.DataFrame, number: int, tasks: pl.DataFrame, echo: Echo) -> None:
        """Run every cell of ``plan`` (one adaptive round) into the jobs folder; report through ``echo``."""

    def load_trials(self) -> pl.DataFrame:
        """Every complete trial in the jobs folder (the trials table)."""

    def replays(self, settings: RunSettings | None = None) -> Replays:
        """The engine's replays of reference solutions for the checks (:mod:`depthlab.engines.replays`); each
        engine may take options of its own, keyword-only with defaults."""


def check_api_key(api_key_env: str | None) -> None:
    """The one key rule of every verb that calls a model: a named variable must be set.

    ``api_key_env`` None or ``""`` means the endpoint takes no key. Checked before any run (the
    preflight included), so a missing key never costs a round.

    Examples
    --------
    >>> check_api_key(None)
    >>> check_api_key("DEPTHLAB_SURELY_UNSET_KEY")
    Traceback (most recent call last):
    ...
    depthlab.engines.rounds.EngineError: the API key variable DEPTHLAB_SURELY_UNSET_KEY is not set: export it ...
    """
    if api_key_env and not os.environ.get(api_key_env):
        raise EngineError(
            f"the API key variable {api_key_env} is not set: export it (the key is read from the environment, "
            "never written), name another with --api-key-env, or pass --api-key-env '' for an endpoint without a key"
        )


@dataclass
class RoundReport:
    """What one round ran and what is known after it."""

    number: int
    planned: int
    ran: int = 0
    valid: int = 0
    invalid: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    seconds: float = 0.0
    status: dict[str, int] = field(default_factory=dict)
    first_invalid: str | None = None

    def render(self) -> str:
        """One line: runs, tokens, cost, tasks by status."""
        return (
            f"round {self.number}: {self.ran} runs ({self.valid} valid, {self.invalid} invalid) of {self.planned} "
            f"planned, {_tokens(self.input_tokens, self.output_tokens)}, {_cost(self.cost_usd)}, "
            f"{self.seconds:.0f} s; tasks: {_statuses(self.status)}"
        )


@dataclass
class MeasureResult:
    """The outcome of :func:`measure`: the depth table and how it was reached."""

    depth: pl.DataFrame
    rounds: list[RoundReport]
    excluded: pl.DataFrame
    stopped: str | None = None  # None: every task is solved or unsolved
    runs: int = 0
    valid: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    sweep_runs: int = 0
    set_aside: int = 0  # trials of an earlier version of their task, left out
    engine: str = ""  # the engine's name
    # the runs the measurement counts (what depthlab measure prices: each D states what it cost)
    trials: pl.DataFrame = field(default_factory=lambda: schema.empty("trials"))
    versions: str | None = None  # how many earlier versions' trials were reused, regraded, re-run

    @property
    def complete(self) -> bool:
        """Whether every task's D is pinned or the task is unsolved."""
        return self.stopped is None

    def status_counts(self) -> dict[str, int]:
        """Tasks by depth status."""
        return _status_counts(self.depth)

    def render(self) -> str:
        """The final summary (several lines)."""
        lines = [
            f"measured: {self.runs} runs ({self.valid} valid) in all, {len(self.rounds)} round(s) in this run; "
            f"the exhaustive sweep: {self.sweep_runs} runs",
            f"{_tokens(self.input_tokens, self.output_tokens)}, {_cost(self.cost_usd)}",
            f"tasks: {_statuses(self.status_counts())}"
            + (f"; {self.excluded.height} left out by the oracle preflight" if self.excluded.height else ""),
        ]
        if self.versions:
            lines.append(self.versions)
        if self.set_aside:
            lines.append(f"set aside: {self.set_aside} trial(s) of an earlier version of their task (not counted)")
        if self.stopped:
            unpinned = self.depth.filter(pl.col("status") == "incomplete")["task"].to_list()
            shown = ", ".join(unpinned[:10]) + (f" and {len(unpinned) - 10} more" if len(unpinned) > 10 else "")
            lines.append(f"stopped: {self.stopped}")
            if unpinned:
                lines.append(f"left unpinned ({len(unpinned)}): {shown}")
        return "\n".join(lines)


def measure(
    engine: Engine,
    tasks: pl.DataFrame,
    *,
    models: Sequence[str],
    caps: Sequence[int],
    attempts: int | str = 1,
    pass_rule: str = "any",
    max_attempts: int = 3,
    max_runs: int | None = None,
    max_cost: float | None = None,
    preflight: bool = True,
    progress: bool = True,
    echo: Echo | None = None,
    error: float | None = None,
) -> MeasureResult:
    """Measure every task's depth D with ``engine``: preflight, then adaptive rounds (module docstring).

    Parameters
    ----------
    engine : Engine
        Where the trials run (:class:`~depthlab.engines.HarborEngine`, :class:`~depthlab.engines.LocalEngine`).
    tasks : pl.DataFrame
        The tasks table (:func:`depthlab.load_tasks`) of the tasks to measure.
    models : sequence of str
        Every model must fail every cap below D.
    caps : sequence of int
        The cap ladder.
    attempts : int or "auto", default 1
        Valid attempts per cell; ``"auto"``: each round planned with ``plan_missing(attempts="auto")``,
        another attempt only in cells whose outcome can still change D (up to ``max_attempts``).
    pass_rule : {"any", "majority", "isotonic"}, default "any"
        As in :func:`depthlab.estimate_depth`.
    max_attempts : int, default 3
        With ``attempts="auto"``: the most valid attempts any cell gets.
    max_runs : int, optional
        Stop before a round that would take the measurement's trials past this many.
    max_cost : float, optional
        Stop before a round whose estimated cost would take the total past this (USD).
    preflight : bool, default True
        Run every task's reference solution first and leave out the tasks whose oracle fails.
    progress : bool, default True
        Show a progress bar per round.
    echo : callable, optional
        Where the summaries go (default: stderr).
    error : float, optional
        D to this error (module docstring): Bayesian rounds, ``attempts`` and ``pass_rule`` unused.

    Returns
    -------
    MeasureResult

    Examples
    --------
    >>> from depthlab.engines import LocalEngine
    >>> measure(LocalEngine("jobs", base_url="http://127.0.0.1:8000/v1"), tasks,
    ...         models=["openai/m1"], caps=(1, 2, 3))  # doctest: +SKIP
    """
    models, caps, attempts, max_runs, max_cost = check_arguments(
        models, caps, attempts, max_runs, max_cost, max_attempts=max_attempts
    )
    if error is not None:
        error = check_number(error, "error", "measure", low=0, high=1, low_open=True, high_open=True, kind="a share")
    say = echo or _stderr
    engine.progress = progress
    engine.check()  # an engine that cannot run at all (or a key unset) leaves no trace in the jobs folder
    _refuse_unset_host_variables(engine, tasks, oracle=preflight)
    with jobs_folder_lock(engine.jobs_dir) if engine.jobs_dir is not None else contextlib.nullcontext():
        return _measure_locked(
            engine, tasks, models, caps, (attempts, max_attempts), pass_rule, max_runs, max_cost, preflight, say,
            error=error,
        )  # fmt: skip


def _refuse_unset_host_variables(engine: Engine, tasks: pl.DataFrame, *, oracle: bool) -> None:
    """Refuse the measurement, on both engines, when a task takes a ``${VAR}`` without default that is unset
    here: Harbor stops its whole job on it before any trial (:func:`depthlab.io.task_rules.unset_host_variables`)."""
    # the variables the engine's trials run with: Harbor's child environment (this one and the engine's ``env``),
    # the local runner's this process's
    host = getattr(engine, "env", None)
    unset = unset_host_variables(tasks, oracle=oracle, host=host if isinstance(host, Mapping) else None)
    if unset:
        lines = [f"  {task}: {key} takes ${{{name}}}, which is not set" for task, key, name in unset]
        raise ValueError(
            f"{len(unset)} variable(s) the tasks take from this environment are unset, and Harbor stops a job on "
            "them before any trial; set them, or give a default (${VAR:-default}) in task.toml:\n" + "\n".join(lines)
        )


def check_arguments(
    models: Sequence[str],
    caps: Sequence[int],
    attempts: int | str = 1,
    max_runs: int | None = None,
    max_cost: float | None = None,
    function: str = "measure",
    *,
    max_attempts: int = 3,
) -> tuple[tuple[str, ...], tuple[int, ...], int | str, int | None, float | None]:
    """:func:`measure`'s arguments checked, as it uses them: the one check of ``measure`` and of its command line.

    Examples
    --------
    >>> check_arguments(["openai/m"], [1, 2], max_cost=5)
    (('openai/m',), (1, 2), 1, None, 5.0)
    >>> check_arguments(["openai/m"], [2, 1])
    Traceback (most recent call last):
    ...
    ValueError: The 'caps' parameter of measure must be a non-empty, strictly increasing sequence of positive ints, ...
    """
    checked_models = check_models(models, function, required=True)
    checked_caps = check_caps(caps, function)
    attempts, _ = check_attempts(attempts, max_attempts, function)
    if max_runs is not None:
        max_runs = check_positive_int(max_runs, "max_runs", function)
    if max_cost is not None:
        max_cost = check_number(max_cost, "max_cost", function, low=0.0, kind="a cost in USD")
    return checked_models, checked_caps, attempts, max_runs, max_cost


def _measure_locked(
    engine: Engine,
    tasks: pl.DataFrame,
    models: Sequence[str],
    caps: Sequence[int],
    attempts_max: tuple[int | str, int],
    pass_rule: str,
    max_runs: int | None,
    max_cost: float | None,
    preflight: bool,
    say: Echo,
    *,
    error: float | None = None,
) -> MeasureResult:
    """:func:`measure` once it holds the jobs folder (``attempts_max``: attempts and max_attempts)."""
    attempts, max_attempts = attempts_max
    per_cell = max_attempts if attempts == "auto" else int(attempts)
    # tasks no engine runs, and values Harbor would misread, are refused before anything runs (on both
    # engines the same, with or without the preflight)
    excluded = schema.preflight_failures()
    for check, why in ((refused_tasks, REFUSED), (task_config_problems, MISREAD)):
        found = check(tasks)
        if found.height:
            say(render_failures(found, why))
            tasks = tasks.filter(~pl.col("task").is_in(found["task"].to_list()))
            excluded = pl.concat([excluded, found])
    engine.resume(say)
    if preflight and tasks.height:
        failed = engine.preflight(tasks, say)
        if failed.height:
            say(render_failures(failed))
            tasks = tasks.filter(~pl.col("task").is_in(failed["task"].to_list()))
            excluded = pl.concat([excluded, failed])
    sweep = tasks.height * len(models) * len(caps) * per_cell
    if tasks.height == 0:
        return _result(
            pl.DataFrame(), [], excluded, engine, models, caps, pass_rule, "every task was left out", sweep, error=error
        )
    rounds: list[RoundReport] = []
    stopped: str | None = None
    trials = engine.load_trials()
    # a changed task's earlier trials: reused, regraded or re-run by what changed (Harbor's run --diff)
    regrade = getattr(engine, "regrade", None)  # an engine that can grade recorded trials again
    versions = diff_versions(set_aside(trials, tasks, models), tasks, engine.jobs_dir, regrades=regrade is not None)
    if versions.to_regrade and regrade is not None:
        done = regrade(versions.to_regrade, say)
        versions.regraded += done
        versions.failed = len(versions.to_regrade) - done
        trials = engine.load_trials()  # the regraded trials are of the task's version now: they count
    if versions.reused:
        tasks = tasks.with_columns(pl.col("task").replace_strict(versions.reused, default=[]).alias(REUSED_COLUMN))
    old = set_aside(trials, tasks, models)
    if versions.counts:
        say("\n".join([versions.render(), *versions.lines]))
    if old.height:
        changed = sorted(set(old["task"].to_list()))
        shown = ", ".join(changed[:10]) + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")
        planned = (
            f"{versions.regraded} of them regraded (the regrades count); the others' cells are planned again"
            if versions.regraded
            else "their cells are planned again"
        )
        say(
            f"set aside: {old.height} trial(s) of {len(changed)} task(s) that changed since they ran (their "
            f"task_checksum is not the task's now); {planned}: {shown}"
        )
    limit = (2 * len(caps) + 1) * (max_attempts if attempts == "auto" else 1)
    if error is not None:
        limit = max_attempts * len(caps) * len(models)
    while True:
        spent = _measured(trials, tasks, models)
        if error is None:
            plan = plan_missing(
                spent, tasks, models=models, caps=caps, attempts=attempts, mode="adaptive", pass_rule=pass_rule,
                max_attempts=max_attempts,
            )  # fmt: skip
        else:
            plan = plan_missing(
                spent, tasks, models=models, caps=caps, mode="bayes", error=error, max_attempts=max_attempts
            )
        if plan.is_empty():
            break
        stopped = _budget_stop(spent, plan, max_runs, max_cost)
        if stopped is None and len(rounds) >= limit:
            stopped = f"{len(rounds)} rounds ran and cells are still missing (invalid trials keep recurring)"
        if stopped is not None:
            break
        trials, report = _run_round(
            engine, plan, tasks, trials, say, models=models, caps=caps, pass_rule=pass_rule, error=error
        )
        rounds.append(report)
        if report.valid == 0:
            why = report.first_invalid or "the engine recorded no trial"
            stopped = f"round {report.number} recorded no valid trial, nothing was counted: {why}"
            break
    result = _result(
        trials, rounds, excluded, engine, models, caps, pass_rule, stopped, sweep, tasks=tasks, error=error
    )
    result.set_aside = set_aside(trials, tasks, models).height
    result.versions = versions.render() if versions.counts else None
    return result


def check_attempts(attempts: int | str, max_attempts: int, function: str = "measure") -> tuple[int | str, int]:
    """``attempts`` (a positive int or ``"auto"``) and ``max_attempts`` checked, as :func:`measure` uses them.

    Examples
    --------
    >>> check_attempts("auto", 3)
    ('auto', 3)
    >>> check_attempts(0, 3)
    Traceback (most recent call last):
    ...
    ValueError: The 'attempts' parameter of measure must be an int >= 1, got 0
    """
    max_attempts = check_positive_int(max_attempts, "max_attempts", function)
    if attempts == "auto":
        return "auto", max_attempts
    if isinstance(attempts, str):
        raise parameter_error("attempts", function, "a positive integer or 'auto'", attempts)
    return check_positive_int(attempts, "attempts", function), max_attempts


def _budget_stop(spent: pl.DataFrame, plan: pl.DataFrame, max_runs: int | None, max_cost: float | None) -> str | None:
    """Why the next round (``plan``) must not run under ``max_runs`` / ``max_cost``; None when it may."""
    planned = int(plan["attempts"].sum())
    if max_runs is not None and spent.height + planned > max_runs:
        return f"the next round's {planned} runs would pass --max-runs {max_runs} ({spent.height} run so far)"
    cost = _sum_or_none(spent["cost_usd"])
    if max_cost is not None and cost is not None and spent.height:
        estimate = cost + cost / spent.height * planned
        if estimate > max_cost:
            return (
                f"the next round's {planned} runs would take the cost to about ${estimate:.2f}, past "
                f"--max-cost {max_cost:g} (${cost:.2f} so far)"
            )
    return None


def _run_round(
    engine: Engine,
    plan: pl.DataFrame,
    tasks: pl.DataFrame,
    trials: pl.DataFrame,
    say: Echo,
    *,
    models: Sequence[str],
    caps: Sequence[int],
    pass_rule: str,
    error: float | None = None,
) -> tuple[pl.DataFrame, RoundReport]:
    """Run one round of ``plan`` with ``engine``; the trials after it and the round's report (echoed)."""
    number = engine.next_round()
    planned = int(plan["attempts"].sum())
    n_tasks = plan.select("dataset", "task").unique().height
    pinned = tasks.height - n_tasks
    say(
        f"round {number}: {planned} runs in {plan.height} cells over {n_tasks} tasks (caps {_caps(plan)}); "
        f"{pinned} of {tasks.height} tasks pinned or unsolved so far"
    )
    engine.note = f"tasks pinned or unsolved {pinned}/{tasks.height}"  # shown beside the engine's progress bar
    before = set(trials["source"].to_list())
    started = time.monotonic()
    engine.run_round(plan, number, tasks, say)
    trials = engine.load_trials()
    new = _measured(trials, tasks, models).filter(~pl.col("source").is_in(list(before)))
    report = _report(number, planned, new, time.monotonic() - started)
    depth = depth_table(trials, tasks, models=models, caps=caps, pass_rule=pass_rule, error=error)
    report.status = _status_counts(depth)
    say(report.render())
    return trials, report


def render_failures(failures: pl.DataFrame, why: str = "their reference solution fails") -> str:
    """The preflight's table of tasks left out (their oracle failed, or ``why``), and one summary line."""
    lines = [f"oracle preflight: {failures.height} task(s) left out, {why}:"]
    for row in failures.iter_rows(named=True):
        lines.append(f"  {row['task']}: {row['reason']}")
        for line in (row.get("output") or "").splitlines()[-5:]:
            lines.append(f"      | {line}")
    return "\n".join(lines)


def _result(
    trials: pl.DataFrame,
    rounds: list[RoundReport],
    excluded: pl.DataFrame,
    engine: Engine,
    models: Sequence[str],
    caps: Sequence[int],
    pass_rule: str,
    stopped: str | None,
    sweep: int,
    *,
    tasks: pl.DataFrame | None = None,
    error: float | None = None,
) -> MeasureResult:
    if tasks is None:
        depth = schema.empty("depth")
        return MeasureResult(depth, rounds, excluded, stopped, sweep_runs=sweep, engine=engine.name)
    depth = depth_table(trials, tasks, models=models, caps=caps, pass_rule=pass_rule, level=DEPTH_LEVEL, error=error)
    spent = _measured(trials, tasks, models)
    valid = spent.filter(pl.col("status") != "invalid")
    return MeasureResult(
        depth,
        rounds,
        excluded,
        stopped,
        runs=spent.height,
        valid=valid.height,
        input_tokens=int(spent["n_input_tokens"].sum() or 0),
        output_tokens=int(spent["n_output_tokens"].sum() or 0),
        cost_usd=_sum_or_none(spent["cost_usd"]),
        sweep_runs=sweep,
        engine=engine.name,
        trials=spent,
    )


def depth_table(
    trials: pl.DataFrame,
    tasks: pl.DataFrame,
    *,
    models: Sequence[str],
    caps: Sequence[int],
    pass_rule: str = "any",
    level: float | None = None,
    error: float | None = None,
) -> pl.DataFrame:
    """The depth table of ``tasks`` (:func:`~depthlab.measures.depth.evidence_grid` over them), a row
    (``incomplete``, every cap missing) for each task with no trial yet; with ``level``, the interval
    for each task's true depth as :func:`~depthlab.measures.estimate_depth` gives it (a round's own
    status needs D alone: null ``ci_low``/``ci_high``). With ``error``: ``estimate_depth``'s with
    ``pass_rule="bayes"`` at that error (its interval at ``level``, or at ``1 - error`` without one).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> tasks = schema.conform(pl.DataFrame({"dataset": ["d", "d"], "task": ["t", "u"]}), "tasks")
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": "a",
    ...     "cap": [1, 2], "status": ["fail", "pass"]}), "trials")
    >>> depth_table(trials, tasks, models=["a"], caps=(1, 2, 3)).select("task", "depth", "status").rows()
    [('t', 2, 'solved'), ('u', None, 'incomplete')]
    """
    keys = tasks.select(TASK_KEYS).unique()
    measured = _measured(trials, tasks, models)
    if error is not None:
        depth = bayes_depth(measured, caps=caps, models=models, q=BAYES_Q, error=error, level=level, tasks=keys)
        return _versioned(depth, tasks).sort("dataset", "task", nulls_last=True)
    grid = evidence_grid(measured, caps=caps, models=models, pass_rule=pass_rule, tasks=keys)
    depth = depth_from_grid(grid, keys, caps=caps)
    # a task no model has run yet counts no model (as estimate_depth, which never sees it, would have it)
    untried = ~pl.col("task").is_in(measured["task"].to_list()) if measured.height else pl.lit(True)
    depth = depth.with_columns(
        n_models=pl.when(untried).then(0).otherwise(pl.col("n_models")).cast(pl.Int32),
        depth_by_model=pl.when(untried).then(None).otherwise(pl.col("depth_by_model")),
        non_monotone=pl.when(untried).then(None).otherwise(pl.col("non_monotone")),
    )
    if level is not None and grid.height:
        intervals = true_depth_columns(grid, caps=caps, level=level)
        depth = depth.drop("ci_low", "ci_high").join(intervals, on=list(TASK_KEYS), how="left", nulls_equal=True)
    return _versioned(schema.conform(depth, "depth"), tasks).sort("dataset", "task", nulls_last=True)


def _versioned(depth: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """The depth table naming the version of each task it measured (the tasks table's, as it is now)."""
    named = depth.drop(schema.TASK_CHECKSUM, schema.TASK_VERSION, strict=False).join(
        schema.version_columns(tasks), on=list(TASK_KEYS), how="left", nulls_equal=True, maintain_order="left"
    )
    return named.select(depth.columns)


def _measured(trials: pl.DataFrame, tasks: pl.DataFrame, models: Sequence[str]) -> pl.DataFrame:
    """The capped trials of ``models`` on ``tasks`` as they are now: the runs this measurement counts."""
    owned = _owned(trials, tasks, models)
    return owned.filter(~_other_version()).select(trials.columns) if owned.height else trials


def _other_version() -> pl.Expr:
    """A trial of another version of its task: both checksums known, different, and not a reused version."""
    return (
        pl.col("task_checksum").is_not_null()
        & pl.col("_checksum_now").is_not_null()
        & (pl.col("task_checksum") != pl.col("_checksum_now"))
        & ~pl.col(REUSED_COLUMN).list.contains(pl.col("task_checksum")).fill_null(False)
    )


def _owned(trials: pl.DataFrame, tasks: pl.DataFrame, models: Sequence[str]) -> pl.DataFrame:
    """The capped trials of ``models`` on ``tasks``, with the task's checksum now (``_checksum_now``)."""
    if trials.height == 0:
        return trials
    now = tasks["checksum"] if "checksum" in tasks.columns else pl.Series([None] * tasks.height, dtype=pl.String)
    reused = tasks[REUSED_COLUMN] if REUSED_COLUMN in tasks.columns else pl.Series([None] * tasks.height)
    names = (
        tasks.select("task", "dataset")
        .with_columns(_checksum_now=now, **{REUSED_COLUMN: reused.cast(pl.List(pl.String))})
        .unique("task", keep="first")
    )
    capped = trials.filter(pl.col("cap").is_not_null() & pl.col("model").is_in(list(models)))
    # a trial belongs to the task of its name; its dataset is the tasks table's (Harbor records
    # the task folder's name, the local runner the plan's dataset)
    return (
        capped.drop("dataset")
        .join(names, on="task", how="inner")
        .select(*trials.columns, "_checksum_now", REUSED_COLUMN)
    )


def set_aside(trials: pl.DataFrame, tasks: pl.DataFrame, models: Sequence[str]) -> pl.DataFrame:
    """The trials of an earlier (or other) version of a task: their ``task_checksum`` is not the task's now.

    Such evidence never decides D: the loop leaves them out, and their cells are planned again.
    """
    owned = _owned(trials, tasks, models)
    return owned.filter(_other_version()).drop("_checksum_now", REUSED_COLUMN) if owned.height else owned


def _report(number: int, planned: int, new: pl.DataFrame, seconds: float) -> RoundReport:
    invalid = new.filter(pl.col("status") == "invalid")
    first = None
    if invalid.height:
        row = invalid.row(0, named=True)
        message = row.get("exception_message") or ""
        first = f"{row.get('exception') or 'invalid'}" + (f": {_one_line(message)}" if message else "")
    return RoundReport(
        number=number,
        planned=planned,
        ran=new.height,
        valid=new.height - invalid.height,
        invalid=invalid.height,
        input_tokens=int(new["n_input_tokens"].sum() or 0) if new.height else 0,
        output_tokens=int(new["n_output_tokens"].sum() or 0) if new.height else 0,
        cost_usd=_sum_or_none(new["cost_usd"]) if new.height else None,
        seconds=seconds,
        first_invalid=first,
    )


def _status_counts(depth: pl.DataFrame) -> dict[str, int]:
    if depth.height == 0 or "status" not in depth.columns:
        return {}
    counts = dict(depth.group_by("status").len().iter_rows())
    return {
        status: int(counts[status])
        for status in (*schema.DEPTH_STATUSES, *sorted(set(counts) - set(schema.DEPTH_STATUSES)))
        if status in counts
    }


def _sum_or_none(values: pl.Series) -> float | None:
    known = values.drop_nulls()
    return float(known.sum()) if known.len() else None


def _caps(plan: pl.DataFrame) -> str:
    return ",".join(str(cap) for cap in sorted(set(plan["cap"].to_list())))


def _tokens(n_in: int, n_out: int) -> str:
    return f"tokens {n_in:,} in / {n_out:,} out"


def _cost(cost: float | None) -> str:
    return "cost unknown (the trials record none)" if cost is None else f"cost ${cost:.4f}"


def _statuses(counts: dict[str, int]) -> str:
    return ", ".join(f"{count} {status}" for status, count in counts.items()) or "none"


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
