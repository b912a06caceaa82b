"""Task directories to the tasks table: Harbor (``task.toml``) and TB1 (``task.yaml``).

* Harbor task dir: ``task.toml`` of schema 1.0 to 1.4 (``version = "1.0"`` with ``[metadata]``;
  ``schema_version`` 1.1 to 1.4 with ``[task]``, ``[metadata]``, and since 1.4 Harbor 0.26's
  ``[[steps]]``, ``network_mode`` and verifier ``environment_mode``), read by
  :func:`depthlab.io.harbor_task.read_task` (a version depthlab does not know, ``1.5`` or ``2.0``,
  read as Harbor 0.26 reads any version, with a warning and a ``note``), ``instruction.md``,
  ``solution/solve.sh`` (``solve.bat``, with ``REM`` / ``::`` comments, for ``[environment] os =
  "windows"``). The task name is ``[task].name`` without its ``org/`` prefix, else the directory name.
  ``instruction_words`` counts the words the agent sees: the instruction without the leading canary
  lines Harbor strips.
* A multi-step task (``[[steps]]``): ``n_steps`` declared steps; its W is the sum of its steps'
  W (each step's ``steps/<name>/solution/solve.sh``; null, with a ``work_note``, when one is
  missing), its ``instruction_words`` the sum over the steps' ``instruction.md``; per step, W,
  instruction words and the ``min_reward`` gate are rows of the task steps table
  (:func:`load_task_steps`, ``depthlab.schema.TASK_STEPS``).
* TB1 task dir: ``task.yaml`` (``instruction``, or the older ``descriptions`` list) and
  ``solution.sh`` (or ``solution.yaml``, a list of ``{command: ...}``); the name is the
  directory name.

Columns: ``difficulty``, ``category``, ``tags`` (``[metadata]`` in Harbor, top level in TB1),
``expert_time_min`` / ``junior_time_min`` from ``expert_time_estimate_min`` /
``junior_time_estimate_min``; the remaining label keys go to ``labels`` as a JSON object, except
personal data: a key naming a person's name or e-mail (:func:`is_personal_key`: ``author_name``,
``task_drafter_email``, ``reviewers``, ...) is dropped, at any depth, so no name or address reaches
a table, an export or a notebook. ``work`` counts the reference solution's lines that are neither
blank nor comments after stripping (a line starting with ``#`` is a comment, the shebang
included); ``solution_lines_total`` counts all its lines. ``checksum`` is Harbor's task
checksum: the Dirhash Standard (name + data, sha256, empty directories skipped) of the whole
task directory, as the ``dirhash`` package computes it (checked against dirhash 0.5.0 in the tests).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec
import polars as pl
import yaml

from depthlab import schema
from depthlab._checks import check_bool, check_choice, check_string
from depthlab.io._errors import LoadError, Rejected, RejectedFilesWarning, warning_text
from depthlab.io.harbor_task import HarborTask, TaskFormatError, read_task
from depthlab.io.harbor_task import read_text as _read_text

_COLUMNS_FROM_LABELS: Final[frozenset[str]] = frozenset(
    {"difficulty", "category", "tags", "expert_time_estimate_min", "junior_time_estimate_min"}
)
NOT_LABELS: Final[frozenset[str]] = frozenset({"author_name", "author_email"})
_TB1_NOT_LABELS: Final[frozenset[str]] = frozenset(
    {
        "instruction",
        "descriptions",
        "author_name",
        "author_email",
        "parser_name",
        "max_agent_timeout_sec",
        "max_test_timeout_sec",
        "run_tests_in_same_shell",
        "disable_asciinema",
    }
)
# a person's role in making a task, alone or as the first part of a ``<role>_name`` key
_PERSON_ROLES = (
    "author|drafter|annotator|refiner|reviewer|creator|maintainer|contributor|submitter|owner|"
    "validator|writer|curator|contact|person"
)
_PERSONAL_KEY = re.compile(rf"(?:e_?mail|(?:^|_)(?:{_PERSON_ROLES})s?(?:_names?|_full_?name)?$)")
_SOURCES: Final[tuple[str | None, ...]] = (None, "human", "generated", "none")
#: The files that make a folder a task: Harbor's task.toml, or a Terminal-Bench 1 task.yaml.
TASK_FILES: Final[tuple[str, ...]] = ("task.toml", "task.yaml")


@dataclass(frozen=True)
class TaskLoad:
    """The result of :func:`read_tasks`.

    Attributes
    ----------
    tasks : polars.DataFrame
        The tasks table (``depthlab.schema.TASKS``), one row per task read.
    steps : polars.DataFrame
        The task steps table (``depthlab.schema.TASK_STEPS``), one row per declared step of the
        multi-step tasks read.
    rejected : list of Rejected
        Every task directory that could not be read (or folder that could not be searched), with the reason.
    """

    tasks: pl.DataFrame
    steps: pl.DataFrame
    rejected: list[Rejected] = field(default_factory=list)

    def summary(self) -> str:
        """One line: tasks read (with a solution, multi-step) and rejected.

        Examples
        --------
        >>> TaskLoad(schema.empty("tasks"), schema.empty("task_steps")).summary()
        'loaded 0 tasks (0 with a reference solution, 0 multi-step); rejected 0'
        """
        solved = int(self.tasks["has_solution"].sum()) if self.tasks.height else 0
        multi = int(self.tasks["n_steps"].is_not_null().sum()) if self.tasks.height else 0
        return (
            f"loaded {self.tasks.height} tasks ({solved} with a reference solution, {multi} multi-step); "
            f"rejected {len(self.rejected)}"
        )


def read_tasks(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    dataset: str | None = None,
    difficulty_source: str | None = None,
    strict: bool = False,
) -> TaskLoad:
    """Read every task directory under ``paths``: the tasks table, the steps of multi-step tasks, what was rejected.

    Parameters are those of :func:`load_tasks`. Nothing is warned about: the rejections are in
    the result (a verb reports them, path and reason, before it says whether any task was found).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "odd").mkdir()
    >>> _ = (root / "odd" / "task.toml").write_text('metadata = "easy"\\n')
    >>> load = read_tasks(root)
    >>> load.tasks.height, [item.reason for item in load.rejected]
    (0, ['[metadata] must be a table, got str'])
    """
    return _read(paths, dataset, difficulty_source, strict, "read_tasks")


def _read(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    dataset: str | None,
    difficulty_source: str | None,
    strict: bool,
    function: str,
) -> TaskLoad:
    from depthlab.io.trials import _roots

    roots = _roots(paths)
    if difficulty_source is not None:  # None: not stated
        check_choice(difficulty_source, "difficulty_source", function, [s for s in _SOURCES if s is not None])
    check_string(dataset, "dataset", function, optional=True)
    check_bool(strict, "strict", function)
    rows: list[dict] = []
    step_rows: list[dict] = []
    rejected: list[Rejected] = []
    for task_dir in _task_dirs(roots, rejected):
        try:
            row, steps = _task_row(task_dir, strict)
            row = _finite(row)
        except TaskFormatError as exc:
            rejected.append(Rejected(exc.path, exc.reason))
            continue
        except RecursionError:
            rejected.append(Rejected(task_dir, "a task file nested too deeply to read"))
            continue
        except Exception as exc:  # one task's unforeseen failure is its rejection, never the load's
            rejected.append(Rejected(task_dir, f"could not be read: {type(exc).__name__}: {exc}"))
            continue
        row["dataset"] = dataset or os.path.basename(os.path.dirname(task_dir)) or "unknown"
        if difficulty_source is not None:
            row["difficulty_source"] = difficulty_source if row["difficulty"] is not None else "none"
        rows.append(row)
        step_rows.extend({**step, "dataset": row["dataset"], "task": row["task"]} for step in steps)
        if strict and rejected:
            break
    if strict and rejected:
        raise LoadError(str(rejected[0]))
    tasks = schema.conform(pl.from_dicts(rows, schema=schema.TASKS), "tasks") if rows else schema.empty("tasks")
    steps_table = (
        schema.conform(pl.from_dicts(step_rows, schema=schema.TASK_STEPS), "task_steps")
        if step_rows
        else schema.empty("task_steps")
    )
    return TaskLoad(tasks, steps_table, rejected)


def load_tasks(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    dataset: str | None = None,
    difficulty_source: str | None = None,
    strict: bool = False,
) -> pl.DataFrame:
    """Load every task directory under ``paths`` into the tasks table.

    Parameters
    ----------
    paths : path or sequence of paths
        Task directories, or folders searched recursively for them (a directory holding
        ``task.toml`` or ``task.yaml``; the search does not go inside a task).
    dataset : str, optional
        Tag for every row; by default the name of the folder that holds the task directory.
    difficulty_source : {"human", "generated", "none"}, optional
        Where the difficulty labels come from. A generic load does not guess: left as None
        the column is null. When stated, tasks without a difficulty get ``"none"``.
    strict : bool, default False
        Raise :class:`~depthlab.io.LoadError` on the first rejected task directory, and
        :class:`TaskFormatError` on a task.toml of a version depthlab does not know (by default
        read as Harbor 0.26 reads any version, as the latest known one, with a
        :class:`~depthlab.io.harbor_task.NewerTaskFormatWarning` and the row's ``note`` saying so).

    Returns
    -------
    polars.DataFrame
        ``depthlab.schema.TASKS``, one row per task directory. Unreadable directories are
        skipped with a :class:`~depthlab.io.RejectedFilesWarning` naming the path and reason.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> task = pathlib.Path(tempfile.mkdtemp()) / "demo" / "hello"
    >>> (task / "solution").mkdir(parents=True)
    >>> _ = (task / "task.toml").write_text('version = "1.0"\\n[metadata]\\ndifficulty = "easy"\\n')
    >>> _ = (task / "instruction.md").write_text("Write hello to /app/out.txt\\n")
    >>> _ = (task / "solution" / "solve.sh").write_text("#!/bin/bash\\n# write it\\n\\necho hello > /app/out.txt\\n")
    >>> row = load_tasks(task.parent, difficulty_source="human").row(0, named=True)
    >>> row["dataset"], row["task"], row["work"], row["solution_lines_total"], row["difficulty_source"]
    ('demo', 'hello', 1, 4, 'human')
    """
    load = _read(paths, dataset, difficulty_source, strict, "load_tasks")
    if load.rejected:
        warnings.warn(warning_text(load.rejected, "task directories"), RejectedFilesWarning, stacklevel=2)
    return load.tasks


def load_task_steps(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    dataset: str | None = None,
    strict: bool = False,
) -> pl.DataFrame:
    """The steps of the multi-step tasks under ``paths``: one row per declared step.

    Parameters are those of :func:`load_tasks`.

    Returns
    -------
    polars.DataFrame
        ``depthlab.schema.TASK_STEPS``: per step its W (working lines of
        ``steps/<name>/solution/solve.sh``), instruction words and ``min_reward`` gate. The
        task's own row (:func:`load_tasks`) has W = the sum of its steps' W.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> task = pathlib.Path(tempfile.mkdtemp()) / "demo" / "two"
    >>> for name, lines in (("a", 1), ("b", 2)):
    ...     (task / "steps" / name / "solution").mkdir(parents=True)
    ...     _ = (task / "steps" / name / "instruction.md").write_text(f"Do {name}.")
    ...     _ = (task / "steps" / name / "solution" / "solve.sh").write_text("echo hi\\n" * lines)
    >>> _ = (task / "task.toml").write_text('schema_version = "1.4"\\n[[steps]]\\nname = "a"\\n'
    ...     'min_reward = 1.0\\n[[steps]]\\nname = "b"\\n')
    >>> load_task_steps(task.parent).select("step_index", "step", "work", "min_reward").rows()
    [(1, 'a', 1, 1.0), (2, 'b', 2, None)]
    >>> load_tasks(task.parent).select("task", "n_steps", "work", "reward_strategy").row(0)
    ('two', 2, 3, 'mean')
    """
    load = _read(paths, dataset, None, strict, "load_task_steps")
    if load.rejected:
        warnings.warn(warning_text(load.rejected, "task directories"), RejectedFilesWarning, stacklevel=2)
    return load.steps


def _finite(row: dict[str, Any]) -> dict[str, Any]:
    """The row, when every number in it is finite (an estimate of ``inf`` minutes is a mistake)."""
    for name, value in row.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise TaskFormatError(row.get("source") or "?", f"{name} must be a finite number, got {value!r}")
    return row


def count_work(text: str, *, batch: bool = False) -> tuple[int, int]:
    """Return (work, total lines) of a solution script: its non-blank, non-comment lines, and all its lines.

    A comment is a line starting with ``#`` (shell); in a Windows batch file (``batch=True``,
    ``solve.bat``) one starting with ``REM`` or ``::`` (``@REM`` too).

    Examples
    --------
    >>> count_work("#!/bin/bash\\n\\n  # setup\\ncd /app\\nmake  # build\\n")
    (2, 5)
    >>> count_work("@echo off\\nREM build it\\n:: and test\\nmake\\n", batch=True)
    (2, 4)
    """
    lines = text.splitlines()
    work = sum(1 for line in lines if line.strip() and not _comment(line.strip(), batch))
    return work, len(lines)


_BATCH_REMARK = re.compile(r"@?rem(\s|$)", re.IGNORECASE)


def _comment(line: str, batch: bool) -> bool:
    if batch:
        return line.startswith("::") or _BATCH_REMARK.match(line) is not None
    return line.startswith("#")


def dirhash_sha256(directory: str | os.PathLike[str]) -> str:
    """Harbor's ``task_checksum``: the Dirhash Standard digest (sha256, name + data) of ``directory``.

    Files and sub-directories are described as sorted ``name:<name>`` / ``data:<sha256>``
    (files) or ``dirhash:<digest>`` (directories) properties joined by NUL, entries sorted
    and joined by two NULs; directories with nothing to hash are left out; symbolic links
    are followed.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.txt").write_text("x")
    >>> len(dirhash_sha256(folder))
    64
    """
    digest = _dirhash(os.fspath(directory), set())
    if digest is None:
        raise ValueError(f"{os.fspath(directory)}: nothing to hash (empty directory)")
    return digest


def _task_dirs(roots: list[str], rejected: list[Rejected]) -> list[str]:
    found: list[str] = []
    visited: set[tuple[int, int]] = set()
    stack = list(reversed(roots))
    while stack:
        folder = stack.pop()
        try:
            info = os.stat(folder)
            if (info.st_dev, info.st_ino) in visited:
                continue
            visited.add((info.st_dev, info.st_ino))
            with os.scandir(folder) as entries:
                names = {entry.name: entry for entry in entries}
        except NotADirectoryError:
            continue
        except OSError as exc:
            rejected.append(Rejected(folder, f"cannot list directory: {exc.strerror or exc}"))
            continue
        if any(name in names for name in TASK_FILES):
            found.append(folder)
            continue
        subdirs = sorted(entry.path for name, entry in names.items() if not name.startswith(".") and _is_dir(entry))
        stack.extend(reversed(subdirs))
    return found


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _task_row(task_dir: str, strict: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The task's row of the tasks table, and the rows of its declared steps (none for a single-step task)."""
    if os.path.exists(os.path.join(task_dir, "task.toml")):
        return _harbor_row(read_task(task_dir, strict=strict))
    return _tb1_row(task_dir, os.path.join(task_dir, "task.yaml")), []


def _harbor_row(spec: HarborTask) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    row = label_columns(spec.metadata, NOT_LABELS, spec.config_path)
    if not row["tags"] and isinstance(spec.package.get("keywords"), list):
        row["tags"] = [str(tag) for tag in spec.package["keywords"]]
    row.update(
        n_steps=len(spec.steps) or None,
        reward_strategy=spec.reward_strategy,
        network_mode=spec.network_mode,
        verifier_mode=spec.verifier_mode,
        schema_version=spec.schema_version,
        note=spec.note,
        task_version=str(spec.package["version"]) if spec.package.get("version") is not None else None,
    )
    batch = spec.task_os == "windows"  # a Windows task's reference solution is solve.bat (REM and :: comments)
    if not spec.multi_step:  # the words the agent sees: Harbor strips the instruction's leading canary lines
        return _complete_row(
            row,
            spec.path,
            spec.config_path,
            spec.name,
            spec.agent_instruction,
            spec.solution,
            f"no solution/{spec.solution_file}",
            batch=batch,
        ), []
    steps: list[dict[str, Any]] = []
    for step in spec.steps:
        where = f"steps/{step.name}/solution/{spec.solution_file}"
        shown = step.agent_instruction
        step_words = len(shown.split()) if shown is not None else None
        steps.append(
            {
                "step_index": step.index,
                "step": step.name,
                **work_columns(step.solution, f"no {where}", batch=batch),
                "instruction_words": step_words,
                "min_reward": step.min_reward,
                "min_rewards": msgspec.json.encode(step.min_rewards).decode() if step.min_rewards else None,
                "verifier_mode": step.verifier_mode,
                "source": spec.config_path,
            }
        )
    missing = [step for step in steps if not step["has_solution"]]
    if missing:
        work = {**work_columns(None, "; ".join(step["work_note"] for step in missing)), "has_solution": False}
    else:
        work = {
            "work": sum(step["work"] for step in steps),
            "solution_lines_total": sum(step["solution_lines_total"] for step in steps),
            "has_solution": True,
            "work_note": None,
        }
    row.update(work)
    words = [step["instruction_words"] for step in steps]
    row.update(
        task=spec.name,
        instruction_words=None if None in words else sum(words),
        checksum=_checksum(spec.path),
        source=spec.config_path,
    )
    return row, steps


def _tb1_row(task_dir: str, path: str) -> dict[str, Any]:
    text = _config_text(path)
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TaskFormatError(path, f"not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(config, dict):
        raise TaskFormatError(path, f"expected a mapping at the top level, got {type(config).__name__}")
    instruction = config.get("instruction")
    if instruction is None and isinstance(config.get("descriptions"), list) and config["descriptions"]:
        first = config["descriptions"][0]
        instruction = first.get("description") if isinstance(first, dict) else None
    row = label_columns(config, _TB1_NOT_LABELS, path)
    solution = _read_text(os.path.join(task_dir, "solution.sh"))
    note = "no solution.sh"
    if solution is None:
        solution, note = _solution_yaml(os.path.join(task_dir, "solution.yaml")), "no solution.sh or solution.yaml"
    return _complete_row(row, task_dir, path, os.path.basename(task_dir), instruction, solution, note)


def _config_text(path: str) -> str:
    """The text of a task's config file (task.toml or task.yaml), which must be a regular file."""
    text = _read_text(path)
    if text is None:
        raise TaskFormatError(path, "not a regular file")
    return text


def _complete_row(
    row: dict[str, Any],
    task_dir: str,
    path: str,
    task: str,
    instruction: Any,
    solution: str | None,
    missing_solution: str,
    *,
    batch: bool = False,
) -> dict[str, Any]:
    """Add the columns both task formats compute alike: work, name, instruction length, checksum, source."""
    row.update(work_columns(solution, missing_solution, batch=batch))
    row.update(task=task, instruction_words=len(str(instruction).split()) if instruction is not None else None)
    row.update(checksum=_checksum(task_dir), source=path)
    return row


def _solution_yaml(path: str) -> str | None:
    text = _read_text(path)
    if text is None:
        return None
    try:
        steps = yaml.safe_load(text)
    except yaml.YAMLError:
        raise TaskFormatError(path, "not valid YAML") from None
    if not isinstance(steps, list):
        raise TaskFormatError(path, "expected a list of {command: ...} steps")
    return "\n".join(str(step.get("command", "")) for step in steps if isinstance(step, dict))


def label_columns(labels: dict, not_labels: frozenset[str], path: str) -> dict[str, Any]:
    """The label columns of the tasks table from a task's ``[metadata]`` table.

    Collection adapters that read task metadata from somewhere other than a task dir (RST's parquet
    index) call this so that labels are read exactly as :func:`load_tasks` reads them. Keys in
    ``not_labels`` and personal keys (:func:`is_personal_key`) are dropped; keys without a column of
    their own go to ``labels`` as JSON.
    ``difficulty_source`` is left null: only the caller knows where a label came from.
    Raises :class:`TaskFormatError` naming ``path`` when a field has the wrong type.
    """
    tags = labels.get("tags") or []
    if not isinstance(tags, list):
        raise TaskFormatError(path, f"tags must be a list, got {tags!r}")
    rest = {
        key: without_personal_data(value)
        for key, value in labels.items()
        if key not in _COLUMNS_FROM_LABELS | not_labels and not is_personal_key(key)
    }
    difficulty, category = labels.get("difficulty"), labels.get("category")
    return {
        "difficulty": str(difficulty) if difficulty is not None else None,
        "difficulty_source": None,
        "category": str(category) if category is not None else None,
        "tags": [str(tag) for tag in tags],
        "expert_time_min": _minutes(labels.get("expert_time_estimate_min"), "expert_time_estimate_min", path),
        "junior_time_min": _minutes(labels.get("junior_time_estimate_min"), "junior_time_estimate_min", path),
        "labels": msgspec.json.encode(rest, enc_hook=str).decode() if rest else None,
    }


def is_personal_key(key: object) -> bool:
    """Whether a label key names a person's name or e-mail address (the key is then dropped).

    Any key holding ``email`` / ``e_mail``, and any key naming a person's role in making the task
    (author, drafter, annotator, refiner, reviewer, creator, maintainer, contributor, submitter,
    owner, validator, writer, curator, contact), alone, plural or with ``_name``: TerminalWorld's
    ``task_drafter_name``, TB2's ``author_email``, a ``reviewers`` list.

    Examples
    --------
    >>> [k for k in ("task_drafter_email", "author_name", "reviewers", "category", "task_name") if is_personal_key(k)]
    ['task_drafter_email', 'author_name', 'reviewers']
    """
    return isinstance(key, str) and _PERSONAL_KEY.search(key.lower()) is not None


def without_personal_data(value: Any) -> Any:
    """``value`` with every personal key (:func:`is_personal_key`) dropped, in nested tables and lists too."""
    if isinstance(value, dict):
        return {k: without_personal_data(v) for k, v in value.items() if not is_personal_key(k)}
    if isinstance(value, list):
        return [without_personal_data(item) for item in value]
    return value


def _minutes(value: object, key: str, path: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TaskFormatError(path, f"{key} must be a number, got {value!r}")
    return float(value)


def work_columns(solution: str | None, missing_note: str, *, batch: bool = False) -> dict[str, Any]:
    """W and its companions from a reference solution's text; ``missing_note`` explains a null W."""
    if solution is None:
        return {"work": None, "solution_lines_total": None, "has_solution": False, "work_note": missing_note}
    work, total = count_work(solution, batch=batch)
    return {"work": work, "solution_lines_total": total, "has_solution": True, "work_note": None}


def _checksum(task_dir: str) -> str | None:
    try:
        return _dirhash(task_dir, set())
    except OSError:
        return None  # an unreadable file inside the task: the row is still useful without a checksum


def _dirhash(directory: str, ancestors: set[tuple[int, int]]) -> str | None:
    info = os.stat(directory)
    key = (info.st_dev, info.st_ino)
    if key in ancestors:
        raise OSError(f"cyclic symbolic link at {directory}")
    ancestors = ancestors | {key}
    descriptors = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_dir():
                digest = _dirhash(entry.path, ancestors)
                if digest is not None:
                    descriptors.append(f"dirhash:{digest}\000name:{entry.name}")
            elif entry.is_file():
                descriptors.append(f"data:{_file_sha256(entry.path)}\000name:{entry.name}")
    if not descriptors:
        return None
    return hashlib.sha256("\000\000".join(sorted(descriptors)).encode("utf-8")).hexdigest()


def _file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
