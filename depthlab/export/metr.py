"""METR's time-horizon input: ``runs.jsonl``, one scored run per line, with the task's human minutes.

METR fits a model's time horizon from runs carrying ``task_id``, ``task_family``, ``alias`` (the
agent whose curve the run belongs to), ``score_binarized``, ``score_cont``, ``human_minutes`` and
``invsqrt_task_weight``. depthlab writes them (:data:`depthlab.schema.METR_RUNS`) from a trials table
and a tasks table: ``human_minutes`` is the task's expert time estimate (task.toml's
``expert_time_estimate_min``; the bundled TB2 tasks table holds TB2's), null where the task states
none. An invalid trial has no score METR could fit and is left out, one report line each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from depthlab._atomic import atomic_path, write_text
from depthlab.export._trials import ExportReport, check_inputs, records, task_facts
from depthlab.schema import METR_RUNS


def export_metr(
    trials: pl.DataFrame,
    out: str | Path,
    *,
    depth: pl.DataFrame | None = None,
    tasks: pl.DataFrame | None = None,
) -> ExportReport:
    """Write trials as METR's ``runs.jsonl`` (one valid trial, one run).

    ``task_id`` is ``<dataset>/<task>``; each task is its own family (``task_family`` is the task), so
    ``invsqrt_task_weight`` is 1/sqrt(1) shared equally among the alias's runs of the task (each task
    weighs the same in an alias's fit whatever its number of attempts). ``alias`` names agent, model
    and stated cap, since a capped agent is another agent for a horizon.

    Parameters
    ----------
    trials : pl.DataFrame
        A trials table.
    out : str or Path
        The JSONL file, replaced whole; the report is written beside it (``<out>.report.txt``).
    depth : pl.DataFrame, optional
        A depth table: each run then carries its task's D.
    tasks : pl.DataFrame, optional
        A tasks table with ``expert_time_min`` (:func:`depthlab.load_tasks`, or the bundled TB2
        tasks: ``depthlab.load_dataset("tb2").tasks``), joined on (dataset, task).

    Returns
    -------
    ExportReport
        Trials in, runs written, one line per trial left out (invalid) and per run without human minutes.

    Examples
    --------
    >>> import pathlib, tempfile, depthlab as dl
    >>> from depthlab.simulate import write_runs
    >>> runs = write_runs(tempfile.mkdtemp(), scale=0.01, seed=1, public_attempts=0)
    >>> load = dl.read_trials(runs.jobs_dir)
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "runs.jsonl"
    >>> report = export_metr(load.trials, out)
    >>> report.n_runs + len(report.left_out) == load.trials.height
    True
    """
    check_inputs(trials, depth, tasks, None, "export_metr")
    path = Path(out)
    runs: list[dict[str, Any]] = []
    left_out: list[str] = []
    lost: list[str] = []
    for record in records(trials, task_facts(depth, tasks, None), messages=False):
        row = record.row
        if record.success is None:
            left_out.append(f"{record.name}: invalid trial ({row['exception'] or 'no valid reward'}): no score to fit")
            continue
        minutes = record.task.get("expert_time_min")
        if minutes is None:
            lost.append(f"{record.name}: task {row['task']} states no expert time estimate: human_minutes null")
        runs.append(
            {
                "task_id": f"{row['dataset']}/{row['task']}",
                "task_family": row["task"],
                "alias": alias(row["agent"], row["model"], row["cap"]),
                "score_binarized": int(record.success),
                "score_cont": row["reward"],
                "human_minutes": minutes,
                "invsqrt_task_weight": None,
                "run_id": f"{row['job']}/{row['trial']}",
                "model": row["model"],
                "cap": row["cap"],
                "depth": record.task.get("depth"),
            }
        )
    table = pl.DataFrame(runs, schema=METR_RUNS, orient="row")
    shares = pl.len().over("alias", "task_id")
    families = pl.col("task_id").n_unique().over("task_family")
    table = table.with_columns(invsqrt_task_weight=(1.0 / families.cast(pl.Float64).sqrt()) / shares)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temporary:
        table.write_ndjson(temporary)
    report = ExportReport("metr", path, trials.height, table.height, tuple(left_out), tuple(lost))
    write_text(f"{path}.report.txt", "\n".join(report.lines()) + "\n")
    return report


def alias(agent: str | None, model: str | None, cap: int | None) -> str:
    """The alias of a run: agent and model, and the stated cap when there is one.

    Examples
    --------
    >>> alias("terminus-2", "openai/gpt-5", 10)
    'terminus-2 / openai/gpt-5 / cap 10'
    >>> alias(None, "m", None)
    'm'
    """
    parts = [part for part in (agent, model) if part]
    if cap is not None:
        parts.append(f"cap {cap}")
    return " / ".join(parts) or "unknown"
