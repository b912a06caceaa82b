"""A task's version: Harbor's content digest, its stated version, and one hash per part.

Harbor 0.26 names the task a trial ran in the trial's ``lock.json`` (``task.digest``,
``"sha256:<hex>"``): ``Packager.compute_content_hash`` of the task folder, the files Harbor
publishes (``task.toml``, ``instruction.md``, ``README.md``, the task's trajectory file, and every file
under ``environment/``, ``tests/``, ``solution/`` and ``steps/``), sorted by their path relative to the
task and hashed as ``"<path>\\0<sha256 of the file>\\n"`` lines, the names Harbor's default ignore list
matches (``__pycache__/``, ``*.pyc``, ``.DS_Store``, ``*.swp``, ``*.swo``, ``*~``) left out.
:func:`task_version` computes the same digest (``tests/engines/test_task_versions.py`` holds it to
Harbor's own function), the version ``[task].version`` states, and one hash per part of the task,
which says what a change invalidates (Harbor's ``run --diff`` says it from the version alone):

* ``environment``: ``environment/``, each step's ``workdir/`` and ``setup.sh``, ``[environment]``;
* ``instruction``: what the agent is told and allowed: ``instruction.md``, each step's ``instruction.md``,
  ``[agent]``, the ``[[steps]]`` entries but their ``verifier``;
* ``solution``: ``solution/``, each step's ``solution/``, ``[solution]``;
* ``verifier``: ``tests/``, each step's ``tests/``, ``[verifier]``, each step's ``verifier``.

Anything else (``[task]``, ``[metadata]``, ``README.md``) is in the digest and in no part: a change
there invalidates no run. A task with ignore rules of its own (``.gitignore``, or a ``.harborignore``
under its tests or solution) has no digest here (``digest`` None, ``digest_note`` says why): Harbor
reads those with gitignore's full syntax, which depthlab does not reimplement; its parts are hashed
over every file, so a change of an ignored file can only ask for more runs, never fewer.

:func:`diff_action` decides what a recorded trial of one version is worth on another, and
:func:`record_versions` / :func:`read_versions` keep each measured version's parts in the jobs
folder (:data:`VERSIONS_FILE`), keyed by the checksum trials record (``task_checksum``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final, Literal

from depthlab._atomic import write_text
from depthlab.io.harbor_lock import files_digest, packaged_files
from depthlab.io.harbor_task import TaskFormatError, read_config

__all__ = [
    "DIFF_ACTIONS",
    "PARTS",
    "VERSIONS_FILE",
    "DiffAction",
    "TaskVersion",
    "diff_action",
    "read_versions",
    "record_versions",
    "task_digest",
    "task_version",
]

#: The parts of a task a change is read in, in the order :func:`diff_action` names them.
PARTS: Final[tuple[str, ...]] = ("environment", "instruction", "solution", "verifier")

DiffAction = Literal["reuse", "regrade", "rerun"]

#: What a recorded trial is worth on a changed task, cheapest first (Harbor's ``DiffAction`` values).
DIFF_ACTIONS: Final[tuple[DiffAction, ...]] = ("reuse", "regrade", "rerun")

#: The jobs folder's record of each measured task version's parts, keyed by its ``task_checksum``.
VERSIONS_FILE: Final[str] = "depthlab-task-versions.json"

#: task.toml's tables and the part each belongs to (``[[steps]]`` is split by :func:`_config_parts`).
_TABLE_PARTS: Final[dict[str, str]] = {
    "environment": "environment",
    "agent": "instruction",
    "solution": "solution",
    "verifier": "verifier",
}
#: A step folder's entries and their part; anything else in a step folder counts as its environment.
_STEP_PARTS: Final[dict[str, str]] = {
    "instruction.md": "instruction",
    "tests": "verifier",
    "solution": "solution",
    "workdir": "environment",
    "setup.sh": "environment",
}
_TOP_PARTS: Final[dict[str, str]] = {
    "environment": "environment",
    "instruction.md": "instruction",
    "solution": "solution",
    "tests": "verifier",
}


@dataclass(frozen=True)
class TaskVersion:
    """One version of a task: its digest, stated version and part hashes.

    Attributes
    ----------
    digest : str or None
        Harbor's lock digest, ``"sha256:<hex>"``; None when the task has ignore rules of its own
        (``digest_note`` says which).
    version : str or None
        ``[task].version`` when task.toml states one.
    environment, instruction, solution, verifier : str
        sha256 of each part (:data:`PARTS`).
    digest_note : str or None
        Why ``digest`` is None.
    """

    digest: str | None
    version: str | None
    environment: str
    instruction: str
    solution: str
    verifier: str
    digest_note: str | None = None

    def part(self, name: str) -> str:
        """The hash of part ``name`` (one of :data:`PARTS`)."""
        return str(getattr(self, name))


def task_digest(task_dir: str | os.PathLike[str]) -> str | None:
    """Harbor's lock digest of a task folder (``"sha256:<hex>"``), None when it has ignore rules of its own.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> task = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (task / "task.toml").write_text("")
    >>> _ = (task / "instruction.md").write_text("Say hi.")
    >>> _ = (task / "notes.txt").write_text("not published")
    >>> digest = task_digest(task)
    >>> _ = (task / "notes.txt").write_text("changed")
    >>> task_digest(task) == digest, digest[:7]
    (True, 'sha256:')
    """
    return task_version(task_dir).digest


def task_version(task_dir: str | os.PathLike[str]) -> TaskVersion:
    """A task folder's :class:`TaskVersion`.

    Raises
    ------
    TaskFormatError
        When the folder has no readable task.toml (its path and the reason in the message).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> task = pathlib.Path(tempfile.mkdtemp())
    >>> toml = '[task]\\nname = "o/t"\\nversion = "1.2.0"\\n[verifier]\\ntimeout_sec = {}\\n'
    >>> _ = (task / "task.toml").write_text(toml.format(60.0))
    >>> _ = (task / "instruction.md").write_text("Say hi.")
    >>> before = task_version(task)
    >>> _ = (task / "task.toml").write_text(toml.format(90.0))
    >>> after = task_version(task)
    >>> before.version, [part for part in PARTS if before.part(part) != after.part(part)]
    ('1.2.0', ['verifier'])
    """
    root = Path(os.path.abspath(task_dir))
    config = read_config(root / "task.toml")
    files, own_rules = packaged_files(root)
    parts = {part: hashlib.sha256() for part in PARTS}
    for relative, file_hash in files:
        part = _file_part(relative)
        if part is not None:
            parts[part].update(f"{relative}\0{file_hash}\n".encode())
    for part, value in _config_parts(config).items():
        parts[part].update(b"task.toml\0" + json.dumps(value, sort_keys=True, default=str).encode() + b"\n")
    task = config.get("task")
    version = task.get("version") if isinstance(task, Mapping) else None
    return TaskVersion(
        digest=None if own_rules else "sha256:" + files_digest(files),
        version=str(version) if version is not None else None,
        digest_note=f"{own_rules}: ignore rules of the task's own, which Harbor applies and depthlab does not"
        if own_rules
        else None,
        **{part: parts[part].hexdigest() for part in PARTS},
    )


def diff_action(recorded: TaskVersion | None, now: TaskVersion) -> tuple[DiffAction, str]:
    """What a trial recorded on version ``recorded`` of a task is worth on version ``now``, and why.

    A changed environment or instruction re-runs it; a changed verifier (environment and
    instruction unchanged) regrades it from its recorded final state; anything else reuses it (a
    changed solution alone is no input of an agent's trial: it changes the oracle preflight, which
    keys on the whole checksum). Where both versions state ``[task].version``, Harbor's ``run --diff``
    rule is applied too (major: rerun, minor: regrade, patch: reuse, pre-release or build: rerun) and
    the stricter of the two actions wins. No record of the trial's version: rerun.

    Examples
    --------
    >>> old = TaskVersion("sha256:a", None, "e", "i", "s", "v")
    >>> diff_action(old, TaskVersion("sha256:b", None, "e", "i", "s", "v2"))
    ('regrade', 'the verifier changed')
    >>> diff_action(old, TaskVersion("sha256:b", None, "e2", "i", "s", "v2"))
    ('rerun', 'the environment changed')
    >>> stated = TaskVersion("sha256:a", "1.0.0", "e", "i", "s", "v")
    >>> diff_action(stated, TaskVersion("sha256:b", "2.0.0", "e", "i", "s", "v"))
    ('rerun', 'task major version changed from 1.0.0 to 2.0.0')
    """
    if recorded is None:
        return "rerun", "no record of the parts of the version the trial ran"
    changed = [part for part in PARTS if recorded.part(part) != now.part(part)]
    if "environment" in changed or "instruction" in changed:
        action: DiffAction = "rerun"
        reason = "the " + " and the ".join(part for part in changed if part in ("environment", "instruction"))
        reason += " changed"
    elif "verifier" in changed:
        action, reason = "regrade", "the verifier changed"
    else:
        action, reason = (
            "reuse",
            ("the solution alone changed" if changed else "no part an agent's trial reads changed"),
        )
    if recorded.version is not None and now.version is not None and recorded.version != now.version:
        stated, why = _version_action(recorded.version, now.version)
        if DIFF_ACTIONS.index(stated) > DIFF_ACTIONS.index(action):
            return stated, why
    return action, reason


def record_versions(jobs_dir: str | os.PathLike[str], versions: Mapping[str, TaskVersion]) -> None:
    """Add ``versions`` (task checksum -> its version) to the jobs folder's :data:`VERSIONS_FILE`."""
    path = Path(jobs_dir) / VERSIONS_FILE
    known = read_versions(jobs_dir)
    if all(known.get(checksum) == version for checksum, version in versions.items()):
        return
    known.update(versions)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps({key: asdict(value) for key, value in sorted(known.items())}, indent=1) + "\n")


def read_versions(jobs_dir: str | os.PathLike[str]) -> dict[str, TaskVersion]:
    """The jobs folder's recorded task versions (task checksum -> :class:`TaskVersion`); empty when none.

    Raises
    ------
    ValueError
        When the file exists and is not a record of task versions (its path and the reason in the message).
    """
    path = Path(jobs_dir) / VERSIONS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a record of task versions: {exc}") from exc
    try:
        return {str(key): TaskVersion(**value) for key, value in data.items()}
    except (AttributeError, TypeError) as exc:
        raise ValueError(f"{path}: not a record of task versions: {exc}") from exc


def versions_of(task_dirs: Iterable[tuple[str, str]]) -> dict[str, TaskVersion]:
    """``(task checksum, task folder)`` pairs to a :func:`record_versions` mapping (unreadable folders left out)."""
    found: dict[str, TaskVersion] = {}
    for checksum, folder in task_dirs:
        try:
            found[checksum] = task_version(folder)
        except (OSError, TaskFormatError):
            continue  # a task the loop cannot read is refused there, with its reason
    return found


def _file_part(relative: str) -> str | None:
    """The part a published file belongs to (None: no part, e.g. README.md)."""
    parts = relative.split("/")
    if parts[0] == "steps":
        if len(parts) < 3:
            return "environment"  # a file directly under steps/: read conservatively
        return _STEP_PARTS.get(parts[2], "environment")
    return _TOP_PARTS.get(parts[0])


def _config_parts(config: Mapping[str, Any]) -> dict[str, Any]:
    """task.toml's values by part: its tables, and each ``[[steps]]`` entry split into verifier and the rest."""
    by_part: dict[str, dict[str, Any]] = {part: {} for part in PARTS}
    for table, part in _TABLE_PARTS.items():
        if table in config:
            by_part[part][table] = config[table]
    steps = config.get("steps")
    if isinstance(steps, list):
        for index, step in enumerate(steps):
            if not isinstance(step, Mapping):
                by_part["instruction"][f"steps[{index}]"] = step
                continue
            rest = {key: value for key, value in step.items() if key != "verifier"}
            by_part["instruction"][f"steps[{index}]"] = rest
            if "verifier" in step:
                by_part["verifier"][f"steps[{index}]"] = step["verifier"]
    return {part: values for part, values in by_part.items() if values}


def _version_action(recorded: str, now: str) -> tuple[DiffAction, str]:
    """Harbor's ``run --diff`` rule on two stated versions (``job_diff._version_action``), with its reason."""
    old, new = _semver(recorded), _semver(now)
    if old is None or new is None:
        return "rerun", f"task version {recorded} -> {now} is not a semantic version"
    if old[0] != new[0]:
        return "rerun", f"task major version changed from {recorded} to {now}"
    if old[1] != new[1]:
        return "regrade", f"task minor version changed from {recorded} to {now}"
    if old[2] != new[2]:
        return "reuse", f"task patch version changed from {recorded} to {now}"
    return "rerun", f"task pre-release or build metadata changed from {recorded} to {now}"


def _semver(text: str) -> tuple[int, int, int] | None:
    """MAJOR.MINOR.PATCH of a semantic version (pre-release and build suffixes dropped), None when it is not one."""
    core = text.split("+", 1)[0].split("-", 1)[0].split(".")
    if len(core) != 3 or not all(part.isdigit() for part in core):
        return None
    return int(core[0]), int(core[1]), int(core[2])
