"""Plan files: read and check the (dataset, task, model, cap, attempts) cells a fill runs.

A plan is what :func:`depthlab.measures.plan_missing` returns (its columns are
:data:`depthlab.measures.planning.PLAN_SCHEMA`); ``depthlab plan -o FILE`` writes it as CSV or
Parquet and ``depthlab fill FILE`` reads it back here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from depthlab import schema
from depthlab.io import load_tasks, load_trials
from depthlab.measures import plan_missing
from depthlab.measures.planning import PLAN_SCHEMA

#: Columns a plan must have (``depthlab plan`` / :func:`depthlab.plan_missing` write them).
PLAN_COLUMNS: tuple[str, ...] = tuple(PLAN_SCHEMA)


def read_plan(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Read a plan written by ``depthlab plan`` (CSV or Parquet).

    Raises
    ------
    ValueError
        When a required column is missing or the file type is unknown.

    Examples
    --------
    >>> import tempfile, pathlib, polars as pl
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "plan.csv"
    >>> pl.DataFrame({"dataset": ["d"], "task": ["t"], "model": ["m"], "cap": [2], "attempts": [1]}).write_csv(path)
    >>> read_plan(path).row(0)
    ('d', 't', 'm', 2, 1)
    """
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        plan = pl.read_parquet(path)
    elif path.suffix.lower() == ".csv":
        plan = pl.read_csv(path, infer_schema_length=10_000)
    else:
        raise ValueError(f"The plan file must end in .csv or .parquet, got {str(path)!r}")
    return check_plan(plan, what=f"The plan {str(path)!r}")


def check_plan(plan: pl.DataFrame, *, what: str = "The 'plan' parameter of fill") -> pl.DataFrame:
    """Validate a plan's columns and return it with ``cap`` / ``attempts`` as integers.

    Examples
    --------
    >>> import polars as pl
    >>> check_plan(pl.DataFrame({"task": ["t"]}))
    Traceback (most recent call last):
    ...
    ValueError: The 'plan' parameter of fill must have the columns [...]; missing ['dataset', 'model', ...]
    """
    missing = [column for column in PLAN_COLUMNS if column not in plan.columns]
    if missing:
        raise ValueError(f"{what} must have the columns {list(PLAN_COLUMNS)}; missing {missing}")
    return plan.with_columns(
        pl.col("cap").cast(pl.Int64, strict=False),
        pl.col("attempts").cast(pl.Int64, strict=False).fill_null(1),
        pl.col("task").cast(pl.String),
        pl.col("model").cast(pl.String),
    )


def plan_from_logs(
    paths: Sequence[str | os.PathLike[str]],
    tasks_dir: str | os.PathLike[str],
    *,
    models: Sequence[str],
    caps: Sequence[int] | None = None,
    attempts: int = 1,
    exclude: str | os.PathLike[str] | None = None,
) -> pl.DataFrame:
    """Compute the plan from existing run logs with :func:`depthlab.plan_missing`.

    ``exclude`` (the fill's jobs folder) is left out of the logs, because a fill counts its own
    trials separately.
    """
    kept = [Path(path) for path in paths]
    if exclude is not None:
        root = Path(exclude).resolve()
        kept = [path for path in kept if not path.resolve().is_relative_to(root)]
    trials = load_trials(kept) if kept else schema.empty("trials")
    tasks = load_tasks([tasks_dir])
    options: dict[str, Any] = {"models": list(models), "attempts": attempts}
    if caps is not None:
        options["caps"] = tuple(caps)
    return check_plan(plan_missing(trials, tasks, **options))
