"""The truth tables of a simulation: what :func:`depthlab.simulate.write_runs` wrote, and the true D*/W*.

:class:`SimulationSummary` carries them: ``truth`` (one row per task) and ``model_truth`` (one
row per task and model), the tables an estimate is compared with. The planner replay
(:mod:`depthlab.simulate.replay`) reads the true effective depths back from them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from depthlab import schema
from depthlab._checks import check_frame
from depthlab.schema import CAPS
from depthlab.simulate.model import MODELS, _ladder_depth, _Task


@dataclass(frozen=True)
class SimulationSummary:
    """What :func:`write_runs` wrote, and the truth to compare estimates with.

    Attributes
    ----------
    out_dir, tasks_dir, jobs_dir : Path
        The output root, ``<out>/tasks`` (one folder per collection) and ``<out>/jobs``
        (``<out>/jobs/<dataset>/<job>/<trial>``).
    job_dirs : tuple of Path
        Every job directory written.
    n_tasks, n_trials, n_invalid, n_files : int
        Counts of what was written (``n_invalid`` trials are infrastructure errors).
    seconds : float
        Wall time of the write.
    truth : pl.DataFrame
        One row per task (:data:`depthlab.schema.SIMULATED_TRUTH`): dataset, task, depth_true
        (turns in sequence), d_star (the ladder depth the estimator should find; null when no
        model passes the top cap), w_star, n_segments, segments (list), derived_from,
        environment, checksum.
    model_truth : pl.DataFrame
        One row per (task, model) (:data:`depthlab.schema.SIMULATED_MODEL_TRUTH`): dataset,
        task, model, effective_depth (null: never passes), model_depth (the model's smallest
        passing ladder cap, null if none).
    models, caps : tuple
        The models and the cap ladder simulated.
    """

    out_dir: Path
    tasks_dir: Path
    jobs_dir: Path
    job_dirs: tuple[Path, ...]
    n_tasks: int
    n_trials: int
    n_invalid: int
    n_files: int
    seconds: float
    truth: pl.DataFrame
    model_truth: pl.DataFrame
    models: tuple[str, ...] = MODELS
    caps: tuple[int, ...] = CAPS


def _truth_frames(tasks: Iterable[_Task]) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows, model_rows = [], []
    for task in tasks:
        reachable = [value for value in task.effective.values() if value is not None]
        rows.append(
            {
                "dataset": task.dataset,
                "task": task.name,
                "depth_true": task.depth_true,
                "d_star": _ladder_depth(min(reachable)) if reachable else None,
                "w_star": task.work,
                "n_segments": len(task.segments),
                "segments": list(task.segments),
                "derived_from": task.derived_from,
                "environment": task.environment,
                "checksum": task.checksum,
            }
        )
        for model, effective in task.effective.items():
            model_rows.append(
                {
                    "dataset": task.dataset,
                    "task": task.name,
                    "model": model,
                    "effective_depth": effective,
                    "model_depth": _ladder_depth(effective),
                }
            )
    truth = pl.DataFrame(rows, schema=schema.SIMULATED_TRUTH)
    model_truth = pl.DataFrame(model_rows, schema=schema.SIMULATED_MODEL_TRUTH)
    return truth, model_truth


def _effective_lookup(summary: SimulationSummary, plan: pl.DataFrame, function: str) -> list[tuple]:
    """Planned cells joined to the models' true effective depths (unknown model: never passes)."""
    check_frame(plan, "plan", function, ("dataset", "task", "model", "cap", "attempts"))
    joined = plan.join(
        summary.model_truth.select("dataset", "task", "model", "effective_depth"),
        on=["dataset", "task", "model"],
        how="left",
    )
    return joined.select("dataset", "task", "model", "cap", "attempts", "effective_depth").rows()


def _tasks_from_summary(summary: SimulationSummary) -> dict[tuple[str, str], _Task]:
    """Rebuild the per-task records the trial writer needs from the summary's truth frames."""
    effective: dict[tuple[str, str], dict[str, int | None]] = {}
    for dataset, task, model, depth in summary.model_truth.select(
        "dataset", "task", "model", "effective_depth"
    ).iter_rows():
        effective.setdefault((dataset, task), {})[model] = depth
    out = {}
    for row in summary.truth.iter_rows(named=True):
        key = (row["dataset"], row["task"])
        instruction = summary.tasks_dir / row["dataset"] / row["task"] / "instruction.md"
        task = _Task(
            dataset=row["dataset"],
            name=row["task"],
            depth_true=row["depth_true"],
            work=row["w_star"],
            effective=effective.get(key, {}),
            segments=tuple(row["segments"] or ()),
            derived_from=row["derived_from"],
            environment=row["environment"],
            instruction=instruction.read_text() if instruction.exists() else "",
            checksum=row["checksum"] or "",
        )
        out[key] = task
    return out
