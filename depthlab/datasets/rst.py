"""RST: taken to be Recursive Task Synthesis (RTS), 37,484 validated synthetic command-line tasks.

No dataset named "RST" was found; the closest match in the same ecosystem is HF
``Zhongzhi1228/Recursive-Task-Synthesis`` (mirror ``PrimeIntellect/Recursive-Task-Synthesis``, TMax-format
copy tagged arXiv 2608.05466). Treat the RST = RTS mapping as a guess to confirm with the audit authors.

Labels
------
Human ratings
    None.
Generated labels
    Whatever the generator wrote into each ``task_toml`` ``[metadata]``. Its ``difficulty`` is inherited
    from the synthesis seed, not rated for the task: ``difficulty_source`` is ``"generated"`` (``"none"``
    for a task without one). Which other keys the release carries is unknown from here (no example
    was readable), so nothing else is assumed.
Task ids and groups
    The index's ``task_id`` is the task's id; its ``task_group_id`` (about 37k tasks in about 12k
    clusters of near-duplicate rewrites of one seed) is the ``task_group`` column. Rewrites of one
    task are not independent: every bootstrap of the audit's findings resamples whole groups where a
    collection has them (``stats.partial_spearman(..., cluster="task_group")``). Index rows that share
    a ``task_id`` are skipped, each naming the others.
Missing
    No public runs or pass rates; no capped runs; ``checksum`` is null (the index has no Harbor dirhash).

Layout under ``root``
---------------------
``<root>/metadata/tasks.parquet``
    One row per task: ``task_id``, ``task_group_id``, ``instruction``, ``task_toml``, ``solution`` (solve.sh
    text or null), ``dockerfile``, ``member_prefix``, ``shard``. W is counted on ``solution``.
``<root>/tasks/[rst/]<task>/`` (or ``<root>/<task>/``)
    Unpacked Harbor task dirs (``data/tasks-*.tar``), used instead of the parquet index when present.
``<root>/jobs/[rst/]...``
    Harbor job dirs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import polars as pl

from depthlab import schema
from depthlab.datasets._base import Audit, DatasetInfo, json_object, keep_time_estimates_as_labels, make_audit
from depthlab.datasets._harbor_tree import load_root

INFO = DatasetInfo(
    name="rst",
    description="RST, read as Recursive Task Synthesis: 37,484 validated synthetic tasks (parquet index + Harbor).",
    difficulty_source="generated",
    human_labels="none",
    generated_labels=(
        "task_toml [metadata] as written by the generator; difficulty inherited from the synthesis seed (generated)"
    ),
    empirical_labels="none public",
    missing="RST = RTS is a guess; no public runs; no capped runs; label fields unknown",
    layout=(
        "<root>/metadata/tasks.parquet (task_id, task_group_id, instruction, task_toml, solution, dockerfile), "
        "or <root>/tasks/<task>/"
    ),
)

INDEX = Path("metadata") / "tasks.parquet"
_COLUMNS = ("instruction", "task_toml", "solution")


def load(root: str | Path, *, name: str = "rst", status_rule: str = "leaderboard") -> Audit:
    """Load RST under ``root`` (layouts in the module docstring); see :func:`depthlab.load_dataset`."""
    root = Path(root)
    tree = load_root(root, name, difficulty_source="generated", status_rule=status_rule, layout=INFO.layout)
    tasks, trials, rejected, tasks_dir = tree.tasks, tree.trials, tree.rejected, tree.tasks_dir
    notes = [*tree.notes, "RST is read as Recursive Task Synthesis (RTS): a guess to confirm"]
    if tasks_dir is None and (root / INDEX).is_file():
        notes = [note for note in notes if not note.startswith("no task dir of")]
        tasks, skipped = read_index(root / INDEX, dataset=name)
        notes.append(f"tasks read from {INDEX}")
        if skipped:
            notes.append(f"{len(skipped)} index rows skipped: {skipped[:3]}")
        outside = trials.filter(~pl.col("task").is_in(tasks["task"].implode()))
        if outside.height:  # the runs were adopted before the index named the tasks
            notes.append(f"{outside.height} trials run tasks that are not in {INDEX}, left out")
            trials = trials.filter(pl.col("task").is_in(tasks["task"].implode()))
    n_groups = tasks["task_group"].drop_nulls().n_unique()
    if n_groups:
        notes.append(
            f"{tasks.height} tasks in {n_groups} task groups (rewrites of one seed): bootstraps resample whole groups"
        )
    return make_audit(name, keep_time_estimates_as_labels(tasks), trials, rejected=rejected, notes=notes)


def read_index(path: str | Path, *, dataset: str = "rst") -> tuple[pl.DataFrame, list[str]]:
    """Read RTS's ``metadata/tasks.parquet`` into the tasks table.

    Returns the tasks table and the rows skipped (``"row <i>: <reason>"``) because their ``task_toml``
    does not parse or their id is another row's too. The task id is the index's ``task_id``; an index
    without that column falls back to ``[task].name`` without its ``org/`` prefix, else the last part
    of ``member_prefix``, else ``row<i>``. ``task_group`` is ``task_group_id``. W counts the non-blank,
    non-comment lines of ``solution``.

    Examples
    --------
    >>> from depthlab.datasets import rst
    >>> tasks, skipped = rst.read_index("data/rst/metadata/tasks.parquet")  # doctest: +SKIP
    """
    from depthlab.io.harbor_task import parse_config
    from depthlab.io.tasks import NOT_LABELS, TaskFormatError, label_columns, work_columns

    path = Path(path)
    index = pl.read_parquet(path)
    missing = set(_COLUMNS) - set(index.columns)
    if missing:
        raise ValueError(f"{path}: not an RTS tasks index: columns {sorted(missing)} are missing")
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for i, row_fields in enumerate(index.iter_rows(named=True)):
        try:
            config = parse_config(row_fields["task_toml"] or "", f"{path}#row{i}")
        except TaskFormatError as error:
            skipped.append(f"row {i}: {error.__cause__ or error.reason}")
            continue
        metadata = config.get("metadata")
        if not isinstance(metadata, dict):
            metadata = {}
        try:  # the same reading of [metadata] and of the solution as depthlab.io.load_tasks
            row = label_columns(metadata, NOT_LABELS, f"{path}#row{i}")
        except TaskFormatError as error:
            skipped.append(f"row {i}: {error.reason}")
            continue
        row.update(work_columns(row_fields["solution"], "no solution in the index (solution is null)"))
        extra = {"shard": row_fields.get("shard"), "member_prefix": row_fields.get("member_prefix")}
        task_id = row_fields.get("task_id")
        group = row_fields.get("task_group_id")
        row.update(
            dataset=dataset,
            task=str(task_id) if task_id is not None else _task_name(config, row_fields.get("member_prefix"), i),
            task_group=str(group) if group is not None else None,
            difficulty_source="generated" if row["difficulty"] is not None else "none",
            labels=json_object({**(msgspec.json.decode(row["labels"]) if row["labels"] else {}), **extra}),
            instruction_words=len((row_fields["instruction"] or "").split()),
            source=f"{path}#row{i}",
        )
        rows.append(row)
    rows = _unique_ids(rows, skipped)
    if not rows:
        return schema.empty("tasks"), skipped
    frame = pl.DataFrame(rows, infer_schema_length=None, schema_overrides={"tags": pl.List(pl.String)})
    return schema.conform(frame, "tasks"), skipped


def _unique_ids(rows: list[dict[str, Any]], skipped: list[str]) -> list[dict[str, Any]]:
    """The rows whose id no other row shares; each row sharing one is skipped naming the others."""
    by_id: dict[str, list[str]] = {}
    for row in rows:
        by_id.setdefault(row["task"], []).append(row["source"])
    for row in rows:
        sources = by_id[row["task"]]
        if len(sources) > 1:
            others = ", ".join(s for s in sources if s != row["source"])
            skipped.append(f"{row['source']}: task id {row['task']!r} is also the id of {others}")
    return [row for row in rows if len(by_id[row["task"]]) == 1]


def _task_name(config: dict[str, Any], member_prefix: str | None, i: int) -> str:
    task = config.get("task")
    if isinstance(task, dict) and isinstance(task.get("name"), str) and task["name"].strip():
        return task["name"].rsplit("/", 1)[-1]
    if member_prefix:
        return member_prefix.rstrip("/").rsplit("/", 1)[-1]
    return f"row{i}"
