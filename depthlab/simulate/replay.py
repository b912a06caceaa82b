"""The planner replay: "run" planned cells from the true model, and count what the planner needs.

:func:`run_cells` gives a plan's trials in memory, :func:`write_cells` writes them as Harbor job
dirs (through :mod:`depthlab.simulate.writing`), and :func:`replay_plan` plans, runs and re-plans
until every D is pinned, against the exhaustive sweep.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from depthlab import schema
from depthlab._checks import check_string
from depthlab.io import harbor_writer
from depthlab.simulate.model import _MODEL_SPECS, _capped_trial, _ModelSpec, _passes_capped, _short_id, _Trial
from depthlab.simulate.truth import SimulationSummary, _effective_lookup, _tasks_from_summary
from depthlab.simulate.writing import _AGENT, _BASE_TIME, _JobWriter, _slug


def run_cells(plan: pl.DataFrame, summary: SimulationSummary, *, seed: int = 0) -> pl.DataFrame:
    """ "Run" the cells of a plan from the true model, in memory, as trials-table rows.

    Each planned cell (dataset, task, model, cap, attempts) gets ``attempts`` valid trials
    whose outcome follows the simulation's assumption (pass iff ``cap >= effective_depth``).

    Parameters
    ----------
    plan : pl.DataFrame
        A plan from :func:`depthlab.measures.plan_missing`.
    summary : SimulationSummary
        The simulation the plan's tasks come from.
    seed : int, default 0
        Seeds the trial names and times.

    Returns
    -------
    pl.DataFrame
        Trials table rows (:data:`depthlab.schema.TRIALS`).

    Examples
    --------
    >>> import tempfile
    >>> import polars as pl
    >>> from depthlab.simulate import run_cells, write_runs
    >>> summary = write_runs(tempfile.mkdtemp(), scale=0.01, public_attempts=0)
    >>> row = summary.truth.row(0, named=True)
    >>> plan = pl.DataFrame({"dataset": [row["dataset"]], "task": [row["task"]], "model": ["sim/model-a"],
    ...                      "cap": [80], "attempts": [2]})
    >>> run_cells(plan, summary).height
    2
    """
    effective = _effective_lookup(summary, plan, "run_cells")
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for dataset, task, model, cap, attempts, depth in effective:
        for attempt in range(int(attempts)):
            passed = _passes_capped(depth, cap)
            n_turns = min(cap, depth) if passed and depth is not None else cap
            started = _BASE_TIME + timedelta(days=30, seconds=len(rows) * 60)
            rows.append(
                {
                    "dataset": dataset,
                    "task": task,
                    "agent": _AGENT,
                    "model": model,
                    "cap": cap,
                    "turn_limit": cap,
                    "job": "replay",
                    "trial": harbor_writer.trial_name(task, _short_id(rng)),
                    "attempt": attempt + 1,
                    "reward": 1.0 if passed else 0.0,
                    "passed": passed,
                    "status": "pass" if passed else "fail",
                    "n_turns": n_turns,
                    "hit_limit": n_turns >= cap,
                    "started_at": started,
                    "finished_at": started + timedelta(seconds=12 * n_turns),
                }
            )
    return schema.conform(pl.DataFrame(rows, infer_schema_length=None), "trials")


def write_cells(
    plan: pl.DataFrame, summary: SimulationSummary, *, job_name: str = "planned", seed: int = 0
) -> list[Path]:
    """Write the cells of a plan as Harbor job dirs, "run" from the true model.

    One job per (dataset, model, cap) under ``summary.jobs_dir/<dataset>/<job_name>__...``;
    each planned cell gets ``attempts`` valid trials (pass iff ``cap >= effective_depth``).

    Returns
    -------
    list of Path
        The job directories written.

    Examples
    --------
    >>> import tempfile
    >>> import polars as pl
    >>> from depthlab.simulate import write_cells, write_runs
    >>> summary = write_runs(tempfile.mkdtemp(), scale=0.01, public_attempts=0)
    >>> row = summary.truth.row(0, named=True)
    >>> plan = pl.DataFrame({"dataset": [row["dataset"]], "task": [row["task"]], "model": ["sim/model-a"],
    ...                      "cap": [80], "attempts": [1]})
    >>> len(write_cells(plan, summary, job_name="extra"))
    1
    """
    check_string(job_name, "job_name", "write_cells", expected="a plain name", valid=lambda text: "/" not in text)
    tasks = _tasks_from_summary(summary)
    specs = {spec.name: spec for spec in _MODEL_SPECS}
    rng = np.random.default_rng(seed)
    groups: dict[tuple[str, str, int], list[_Trial]] = {}
    for dataset, task_name, model, cap, attempts, _depth in _effective_lookup(summary, plan, "write_cells"):
        task = tasks[(dataset, task_name)]
        spec = specs.get(model) or _ModelSpec(model, 0.0, 0.0, 1.0, 1.0, 0.0)
        trials = groups.setdefault((dataset, model, cap), [])
        for _ in range(int(attempts)):
            trials.append(_capped_trial(task, spec, cap, _passes_capped(task.effective.get(model), cap), rng))
    writer = _JobWriter(summary.jobs_dir, rng)
    for (dataset, model, cap), trials in sorted(groups.items()):
        writer.write_job(dataset, f"{job_name}__{_slug(model)}__cap-{cap:02d}", model, cap, trials)
    return writer.job_dirs


@dataclass(frozen=True)
class PlanReplay:
    """Result of :func:`replay_plan`: runs and rounds to pin every D, and the final depth table."""

    mode: str
    runs: int
    rounds: int
    sweep_runs: int
    depth: pl.DataFrame


def replay_plan(
    summary: SimulationSummary,
    *,
    mode: str = "adaptive",
    attempts: int = 1,
    trials: pl.DataFrame | None = None,
    max_rounds: int = 50,
) -> PlanReplay:
    """Plan, run (in memory, from the true model), re-plan, until nothing is missing.

    Starts from ``trials`` (default: no capped runs at all) and counts the runs the planner
    needs, against the exhaustive sweep (tasks x models x caps x attempts).

    Examples
    --------
    >>> import tempfile
    >>> from depthlab.simulate import replay_plan, write_runs
    >>> summary = write_runs(tempfile.mkdtemp(), scale=0.02, public_attempts=0)
    >>> replay = replay_plan(summary, mode="adaptive")
    >>> replay.runs < replay.sweep_runs
    True
    """
    from depthlab.measures import estimate_depth, plan_missing, sweep_runs

    tasks = summary.truth.select("dataset", "task")
    known = schema.empty("trials") if trials is None else trials
    runs = rounds = 0
    while True:
        plan = plan_missing(known, tasks, models=summary.models, caps=summary.caps, attempts=attempts, mode=mode)
        if plan.is_empty():
            break
        rounds += 1
        if rounds > max_rounds:
            raise RuntimeError(f"replay_plan did not converge in {max_rounds} rounds")
        runs += int(plan["attempts"].sum())
        known = pl.concat([known, run_cells(plan, summary, seed=rounds)])
    depth = estimate_depth(known, caps=summary.caps, models=summary.models, level=None)  # D alone
    return PlanReplay(
        mode=mode,
        runs=runs,
        rounds=rounds,
        sweep_runs=sweep_runs(tasks.height, n_models=len(summary.models), caps=summary.caps, attempts=attempts),
        depth=depth,
    )
