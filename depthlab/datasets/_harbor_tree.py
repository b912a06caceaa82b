"""Where task dirs and job dirs live under a collection's root, and loading them with depthlab.io."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from depthlab import schema

_TASK_FILES = ("task.toml", "task.yaml")


def tree_dirs(root: Path, name: str) -> tuple[Path | None, Path | None]:
    """Return (tasks dir, jobs dir) under ``root`` for collection ``name``; None where absent.

    Tasks: ``<root>/tasks/<name>/``, else ``<root>/tasks/``, else ``root`` itself when it directly holds
    task dirs (a checkout of a task repository). Jobs: ``<root>/jobs/<name>/``, else ``<root>/jobs/``.
    """
    tasks_dir = _first_dir(root / "tasks" / name, root / "tasks")
    if tasks_dir is None and _holds_task_dirs(root):
        tasks_dir = root
    return tasks_dir, _first_dir(root / "jobs" / name, root / "jobs")


def load_tree(
    tasks_dir: Path | None,
    jobs_dir: Path | None,
    *,
    name: str,
    difficulty_source: str | None,
    status_rule: str,
) -> tuple[pl.DataFrame, pl.DataFrame, list[Any]]:
    """Load task dirs and Harbor/TB1 runs with the generic loaders, every row tagged ``name``.

    Returns the tasks table, the trials table and the loader's rejected files. A jobs dir shared by
    several collections (``<root>/jobs/`` rather than ``<root>/jobs/<name>/``) is read with the
    datasets the logs name; when some rows name ``name``, only those are kept.
    """
    from depthlab import io

    tasks = schema.empty("tasks")
    if tasks_dir is not None:
        tasks = io.load_tasks(tasks_dir, dataset=name, difficulty_source=difficulty_source)
    trials, rejected = schema.empty("trials"), []
    if jobs_dir is not None:
        shared = jobs_dir.name != name
        loaded = io.read_trials(jobs_dir, dataset=None if shared else name, status_rule=status_rule)
        trials, rejected = loaded.trials, list(loaded.rejected)
        if shared and (trials["dataset"] == name).any():
            trials = trials.filter(pl.col("dataset") == name)
    return tasks, trials, rejected


def _first_dir(*candidates: Path) -> Path | None:
    return next((path for path in candidates if path.is_dir()), None)


def _holds_task_dirs(root: Path) -> bool:
    return any(child.is_dir() and any((child / f).is_file() for f in _TASK_FILES) for child in root.iterdir())


@dataclass(frozen=True)
class Tree:
    """What :func:`load_root` found under a collection's root."""

    tasks_dir: Path | None
    jobs_dir: Path | None
    tasks: pl.DataFrame
    trials: pl.DataFrame
    rejected: list[Any]


def load_root(root: str | Path, name: str, *, difficulty_source: str | None, status_rule: str) -> Tree:
    """Find the tasks and jobs dirs under ``root`` (:func:`tree_dirs`) and load them (:func:`load_tree`)."""
    tasks_dir, jobs_dir = tree_dirs(Path(root), name)
    tasks, trials, rejected = load_tree(
        tasks_dir, jobs_dir, name=name, difficulty_source=difficulty_source, status_rule=status_rule
    )
    return Tree(tasks_dir, jobs_dir, tasks, trials, rejected)
