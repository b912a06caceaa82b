"""Where task dirs and job dirs live under a collection's root, and loading them with depthlab.io."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from depthlab import schema

_TASK_FILES = ("task.toml", "task.yaml", "task.json")


@dataclass(frozen=True)
class Tree:
    """What :func:`load_root` found under a collection's root."""

    tasks_dir: Path | None
    jobs_dir: Path | None
    tasks: pl.DataFrame
    trials: pl.DataFrame
    rejected: list[Any]
    notes: list[str] = field(default_factory=list)


def tree_dirs(root: Path, name: str) -> tuple[Path | None, Path | None]:
    """Return (tasks dir, jobs dir) under ``root`` for collection ``name``; None where absent.

    Tasks: ``<root>/tasks/<name>/``, else ``<root>/tasks/`` or ``root`` itself when it directly holds
    task dirs (a checkout of a task repository), so that other collections' folders under
    ``<root>/tasks/`` are never read as this one. Jobs: ``<root>/jobs/<name>/``, else ``<root>/jobs/``
    (see :func:`load_tree` for how a shared jobs dir is split).
    """
    tasks_dir = next(
        (path for path in (root / "tasks", root) if path.is_dir() and _holds_task_dirs(path)),
        None,
    )
    if (root / "tasks" / name).is_dir():
        tasks_dir = root / "tasks" / name
    jobs_dir = next((path for path in (root / "jobs" / name, root / "jobs") if path.is_dir()), None)
    return tasks_dir, jobs_dir


def load_tree(
    tasks_dir: Path | None,
    jobs_dir: Path | None,
    *,
    name: str,
    difficulty_source: str | None,
    status_rule: str,
) -> Tree:
    """Load task dirs and Harbor/TB1 runs with the generic loaders, every row tagged ``name``.

    A jobs dir of this collection alone (``<root>/jobs/<name>/``) is tagged ``name`` whole. A shared
    one (``<root>/jobs/``) is read with the datasets its logs name: the rows naming ``name`` are
    kept; when none does and the logs name one dataset only, the whole tree is this collection's
    (e.g. TB2 runs whose logs say ``terminal-bench``); when they name several, none is kept and a
    note says so.
    """
    from depthlab import io

    tasks = schema.empty("tasks")
    if tasks_dir is not None:
        tasks = io.load_tasks(tasks_dir, dataset=name, difficulty_source=difficulty_source)
    trials, rejected, notes = schema.empty("trials"), [], []
    if jobs_dir is not None:
        shared = jobs_dir.name != name
        loaded = io.read_trials(jobs_dir, dataset=None if shared else name, status_rule=status_rule)
        trials, rejected = loaded.trials, list(loaded.rejected)
        named = sorted(set(trials["dataset"].drop_nulls()))
        if shared and name not in named and len(named) > 1:
            notes.append(
                f"{jobs_dir} holds trials of {named}, none named {name!r}: put this collection's jobs "
                f"under {jobs_dir / name}"
            )
            trials = trials.clear()
        elif shared and name in named:
            trials = trials.filter(pl.col("dataset") == name)
    return Tree(tasks_dir, jobs_dir, tasks, trials, rejected, notes)


def load_root(root: str | Path, name: str, *, difficulty_source: str | None, status_rule: str) -> Tree:
    """Find the tasks and jobs dirs under ``root`` (:func:`tree_dirs`) and load them (:func:`load_tree`)."""
    tasks_dir, jobs_dir = tree_dirs(Path(root), name)
    return load_tree(tasks_dir, jobs_dir, name=name, difficulty_source=difficulty_source, status_rule=status_rule)


def _holds_task_dirs(folder: Path) -> bool:
    return any(child.is_dir() and any((child / f).is_file() for f in _TASK_FILES) for child in folder.iterdir())
