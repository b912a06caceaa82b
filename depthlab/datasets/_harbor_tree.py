"""Where task and job dirs live under a collection's root, which runs are the collection's, and loading them.

Three rules every adapter shares:

* **Task dirs are found where the release puts them**: ``<root>/tasks/<name>/``; else the release's own
  folders (an adapter's ``release_dirs``, e.g. SETA's ``SETA_Synth/`` and ``SETA_Evolve/``,
  TerminalWorld's ``artifacts/``) at any depth up to three levels; else ``<root>/tasks/``; else the
  root itself. Other collections' folders (``tasks/<other>/``) and ``jobs/`` are never read as tasks.
  A root holding no task of the layout gets a note saying where it looked and what it found.
* **Every task has its own id**: task dirs that would share an id are rejected, each rejection
  naming the other dirs, never merged.
* **A run is the collection's only when its logs say so**: the dataset its logs name is one of the
  collection's names (:data:`depthlab.catalog.RUN_NAMES`), or the logs name none (the jobs folder's
  own name stands in), and its task is one of the collection's tasks. Every other run is foreign: left
  out, and counted in a note with its dataset name.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from depthlab import schema
from depthlab.catalog import ORDER, RUN_NAMES

_TASK_FILES = ("task.toml", "task.yaml", "task.json")
_RELEASE_DEPTH = 3


@dataclass(frozen=True)
class Tree:
    """What :func:`load_root` found under a collection's root."""

    tasks_dir: Path | None
    jobs_dir: Path | None
    tasks: pl.DataFrame
    trials: pl.DataFrame
    rejected: list[Any]
    notes: list[str] = field(default_factory=list)
    tasks_dirs: tuple[Path, ...] = ()


def task_roots(root: Path, name: str, release_dirs: Sequence[str] = ()) -> list[Path]:
    """The folders under ``root`` that hold collection ``name``'s task dirs (see the module docstring)."""
    own = root / "tasks" / name
    if own.is_dir():
        return [own]
    wanted = {folder.lower() for folder in release_dirs}
    if wanted:
        found = _release_folders(root, wanted)
        if found:
            return found
    skip = {c for c in ORDER if c != name} | {"jobs", "tasks"}
    for folder in (root / "tasks", root):
        if not folder.is_dir():
            continue
        if any((child / f).is_file() for child in _children(folder) for f in _TASK_FILES):
            # a folder of task dirs: its own tasks, never another collection's folder beside them
            kept = [child for child in _children(folder) if child.name not in skip]
            return [folder] if len(kept) == len(_children(folder)) else kept
        kept = [child for child in _children(folder) if child.name not in skip and _holds_task_dirs(child)]
        if kept:
            return kept
    return []


def tree_dirs(root: Path, name: str, release_dirs: Sequence[str] = ()) -> tuple[Path | None, Path | None]:
    """Return (tasks dir, jobs dir) under ``root`` for collection ``name``; None where absent.

    The tasks dir is the first of :func:`task_roots` (a release spread over several folders, such
    as SETA's, is loaded whole by :func:`load_root`). Jobs: ``<root>/jobs/<name>/``, else ``<root>/jobs/``.
    """
    roots = task_roots(root, name, release_dirs)
    jobs_dir = next((path for path in (root / "jobs" / name, root / "jobs") if path.is_dir()), None)
    return (roots[0] if roots else None), jobs_dir


def load_tree(
    tasks_dir: Path | Sequence[Path] | None,
    jobs_dir: Path | None,
    *,
    name: str,
    difficulty_source: str | None,
    status_rule: str,
    task_id_from_dir: bool = False,
    adopt_any_named: bool = False,
) -> Tree:
    """Load task dirs and Harbor/TB1 runs with the generic loaders, every row tagged ``name``.

    ``task_id_from_dir``: a task's id is its folder's name (FACET, whose generator gives every
    task the same ``[task].name``); a Harbor trial of such a task is then named after its
    ``task_id.path`` too. ``adopt_any_named``: a user's own tree (not a registered collection),
    whose runs are taken whole when their logs name one dataset only.
    """
    from depthlab import io

    folders = [] if tasks_dir is None else [tasks_dir] if isinstance(tasks_dir, Path) else list(tasks_dir)
    tasks, rejected = schema.empty("tasks"), []
    notes: list[str] = []
    if folders:
        tasks = io.load_tasks(folders, dataset=name, difficulty_source=difficulty_source)
        if task_id_from_dir and tasks.height:
            tasks = tasks.with_columns(task=pl.col("source").map_elements(_dir_name, return_dtype=pl.String))
        tasks, duplicates = unique_task_ids(tasks)
        rejected.extend(duplicates)
    trials = schema.empty("trials")
    if jobs_dir is not None:
        loaded = io.read_trials(jobs_dir, status_rule=status_rule)
        trials = loaded.trials
        rejected.extend(loaded.rejected)
        if task_id_from_dir and trials.height:
            trials = trials.with_columns(task=_harbor_task_dirs(trials))
        trials, adoption_notes = adopt_runs(
            trials, name=name, tasks=tasks, unnamed=jobs_dir.name, adopt_any_named=adopt_any_named
        )
        notes.extend(adoption_notes)
    return Tree(folders[0] if folders else None, jobs_dir, tasks, trials, rejected, notes, tuple(folders))


def load_root(
    root: str | Path,
    name: str,
    *,
    difficulty_source: str | None,
    status_rule: str,
    release_dirs: Sequence[str] = (),
    layout: str = "",
    task_id_from_dir: bool = False,
    adopt_any_named: bool = False,
) -> Tree:
    """Find the task folders (:func:`task_roots`) and the jobs dir under ``root`` and load them (:func:`load_tree`).

    When no task folder of the layout is found, a note says where it looked (``layout``) and what
    the root holds instead.
    """
    root = Path(root)
    folders = task_roots(root, name, release_dirs)
    jobs_dir = next((path for path in (root / "jobs" / name, root / "jobs") if path.is_dir()), None)
    tree = load_tree(
        folders or None,
        jobs_dir,
        name=name,
        difficulty_source=difficulty_source,
        status_rule=status_rule,
        task_id_from_dir=task_id_from_dir,
        adopt_any_named=adopt_any_named,
    )
    if not folders:
        tree.notes.append(layout_note(root, name, release_dirs, layout))
    return tree


def layout_note(root: Path, name: str, release_dirs: Sequence[str], layout: str) -> str:
    """What a root without a task of the expected layout holds instead, in one sentence."""
    looked = [f"tasks/{name}/", *(f"{folder}/" for folder in release_dirs), "tasks/", "<root>/<task>/"]
    try:
        entries = sorted(entry.name + ("/" if entry.is_dir() else "") for entry in root.iterdir())
    except OSError as error:
        entries = [f"(cannot list: {error.strerror or error})"]
    shown = ", ".join(entries[:8]) + (f", ... ({len(entries)} entries)" if len(entries) > 8 else "")
    expected = f" (expected: {layout})" if layout else ""
    return (
        f"no task dir of {name}'s layout under {root}{expected}: looked in {', '.join(looked)}; "
        f"the root holds {shown or 'nothing'}"
    )


def unique_task_ids(tasks: pl.DataFrame) -> tuple[pl.DataFrame, list[Any]]:
    """The tasks whose id no other task dir shares, and a rejection for each dir that shares one.

    Each rejection names the other dirs of the same id: two dirs are never merged into one task.
    """
    from depthlab.io import Rejected

    if tasks.is_empty():
        return tasks, []
    counts = Counter(tasks["task"].to_list())
    shared = {task for task, n in counts.items() if n > 1}
    if not shared:
        return tasks, []
    rejected = []
    for task, source in tasks.filter(pl.col("task").is_in(shared)).select("task", "source").iter_rows():
        others = [s for t, s in tasks.select("task", "source").iter_rows() if t == task and s != source]
        rejected.append(
            Rejected(
                os.path.dirname(source) if source else "?",
                f"task id {task!r} is also the id of {', '.join(os.path.dirname(o) for o in others)}: "
                "tasks that share an id are rejected, never merged",
            )
        )
    return tasks.filter(~pl.col("task").is_in(shared)), rejected


def adopt_runs(
    trials: pl.DataFrame, *, name: str, tasks: pl.DataFrame, unnamed: str, adopt_any_named: bool = False
) -> tuple[pl.DataFrame, list[str]]:
    """The trials that are collection ``name``'s, tagged ``name``, and notes on the ones left out.

    A trial is adopted when the dataset its logs name is one of ``name``'s run names
    (:data:`depthlab.catalog.RUN_NAMES`; a user's tree: its own name) or when its logs name none (its
    dataset is then ``unnamed``, the jobs folder's name), and, when ``tasks`` is not empty, its task
    is one of them. ``adopt_any_named``: logs naming one dataset only are taken as this tree's.
    """
    if trials.is_empty():
        return trials, []
    names = {n.lower() for n in RUN_NAMES.get(name, (name,))} | {name.lower(), unnamed.lower()}
    dataset = pl.col("dataset").fill_null(unnamed).str.to_lowercase()
    named = set(trials["dataset"].fill_null(unnamed).str.to_lowercase())
    ours = dataset.is_in(sorted(names))
    if adopt_any_named and len(named) == 1:
        ours = pl.lit(True)
    notes = []
    foreign = trials.filter(~ours)
    if foreign.height:
        counts = foreign.group_by("dataset").len().sort("dataset")
        listed = ", ".join(f"{d} ({n})" for d, n in counts.iter_rows())
        notes.append(
            f"{foreign.height} trials of foreign datasets left out (their logs do not name {name!r}): {listed}"
        )
    kept = trials.filter(ours)
    if tasks.height and kept.height:
        known = kept["task"].is_in(tasks["task"].implode())
        outside = kept.filter(~known)
        if outside.height:
            shown = ", ".join(sorted(set(outside["task"]))[:5])
            notes.append(
                f"{outside.height} trials name {name!r} but run tasks that are not its tasks, left out: {shown}"
            )
        kept = kept.filter(known)
    return kept.with_columns(dataset=pl.lit(name, pl.String)), notes


def _holds_task_dirs(folder: Path) -> bool:
    """Whether ``folder`` is a task dir or one sits under it, at most a few levels down."""
    stack = [(folder, 1)]
    while stack:
        path, depth = stack.pop()
        if any((path / f).is_file() for f in _TASK_FILES):
            return True
        if depth < _RELEASE_DEPTH:
            stack.extend((child, depth + 1) for child in _children(path))
    return False


def _release_folders(root: Path, wanted: set[str]) -> list[Path]:
    found: list[Path] = []
    stack = [(child, 1) for child in _children(root) if child.name != "jobs"]
    while stack:
        path, depth = stack.pop()
        if path.name.lower() in wanted:
            found.append(path)
        elif depth < _RELEASE_DEPTH:
            stack.extend((child, depth + 1) for child in _children(path))
    return sorted(found)


def _children(folder: Path) -> list[Path]:
    try:
        return [child for child in folder.iterdir() if child.is_dir() and not child.name.startswith(".")]
    except OSError:
        return []


def _dir_name(source: str | None) -> str | None:
    return os.path.basename(os.path.dirname(source)) if source else None


def _harbor_task_dirs(trials: pl.DataFrame) -> pl.Series:
    """Each Harbor trial's task named after its ``task_id.path`` (the task folder), else kept."""
    from depthlab.io.harbor import read_model
    from depthlab.io.harbor_models import TrialResultBase

    names = []
    for task, source in zip(trials["task"], trials["source"], strict=True):
        path = (source or "").split("#", 1)[0]
        folder = None
        if path.endswith("result.json"):
            result = read_model(path, TrialResultBase)  # (a file it cannot read: the loader's own name stands)
            task_id = result.task_id if isinstance(result, TrialResultBase) else None
            folder = os.path.basename(task_id.path.rstrip("/")) if task_id is not None and task_id.path else None
        names.append(folder or task)
    return pl.Series("task", names, dtype=pl.String)
