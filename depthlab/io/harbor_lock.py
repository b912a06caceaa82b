"""Harbor's locks: a trial's ``lock.json`` read (the task digest and the extra instructions a trial was given), and
a job's ``lock.json`` written (:func:`trial_lock`, :func:`job_lock`, :func:`write_lock`), as Harbor 0.26 writes one
per job (its ``JobLock``: every trial's resolved inputs, the task's content digest,
:func:`content_hash`).

Harbor 0.26 writes a ``TrialLock`` (``schema_version`` 2, ``harbor.models.job.lock``) beside each
trial's ``result.json``: ``task.digest`` (``"sha256:<64 hex>"``, the content hash of the task it ran)
and, when the trial was given extra instructions, ``extra_instructions``: one ``{path, digest}``
per instruction (``path`` null for an inline text; the digest is sha256 of its UTF-8 text, of the
file's bytes for a file). The texts themselves are not in the lock, so a stated cap is recognised
by its digest: the digest of depthlab's sentence stating cap ``k``
(:func:`depthlab.io.harbor_writer.stated_cap_instructions`) for ``k`` up to :data:`MAX_STATED_CAP`.

A lock that cannot be read costs only what it would have told (a note on ``task_digest``), never the trial.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any, Final

import msgspec

from depthlab.io._errors import Reject
from depthlab.io._files import Dep, decode_json, read_bytes_if_exists
from depthlab.io._rows import note
from depthlab.io.harbor_models import InstructionLock, JobLock, TrialLock
from depthlab.io.harbor_records import (
    ExtraInstructionLockRecord,
    JobConfigRecord,
    JobLockRecord,
    TaskLockRecord,
    TrialConfigRecord,
    TrialLockRecord,
    VerifierLockRecord,
)
from depthlab.io.harbor_task import TaskFormatError, read_config, section
from depthlab.io.harbor_writer import stated_cap_instructions, utc_now, write_json

__all__ = [
    "MAX_STATED_CAP",
    "InstructionLock",
    "JobLockFile",
    "TrialLock",
    "content_hash",
    "job_lock",
    "lock_stated_cap",
    "read_lock",
    "trial_lock",
    "write_lock",
]

#: The largest cap recognised from a lock's instruction digests.
MAX_STATED_CAP: Final[int] = 1000


def read_lock(trial_dir: str, deps: list[Dep], notes: list[str]) -> TrialLock | None:
    """The trial's lock.json, None when it has none (or, with a note, when it cannot be read)."""
    path = os.path.join(trial_dir, "lock.json")
    try:
        data = read_bytes_if_exists(path, deps)
        return None if data is None else decode_json(data, path, TrialLock)
    except Reject as exc:
        note(notes, "task_digest", f"lock.json: {exc.reason}")
        return None


def lock_stated_cap(lock: TrialLock | None) -> int | None:
    """The cap the lock's extra instructions state (the smallest, if several do), else None.

    Examples
    --------
    >>> from depthlab.io.harbor_writer import stated_cap_instructions
    >>> text = stated_cap_instructions(5)[0]
    >>> digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    >>> lock_stated_cap(TrialLock(extra_instructions=[InstructionLock(digest=digest)]))
    5
    """
    if lock is None or not lock.extra_instructions:
        return None
    caps = _cap_digests()
    stated = [caps[item.digest] for item in lock.extra_instructions if item.digest in caps]
    return min(stated) if stated else None


@cache
def _cap_digests() -> dict[str, int]:
    return {
        "sha256:" + hashlib.sha256(stated_cap_instructions(cap)[0].encode("utf-8")).hexdigest(): cap
        for cap in range(1, MAX_STATED_CAP + 1)
    }


# ---------------------------------------------------------------------------------- a job's lock, written


def trial_lock(config: TrialConfigRecord) -> TrialLockRecord | None:
    """Harbor's ``TrialLock`` of a trial run from ``config`` (its ``build_trial_lock`` for a local task), or None when
    depthlab cannot lock it as Harbor would: its task folder gone, a task with ignore rules of its own
    (:func:`content_hash`), or inputs depthlab's runner never gives (skills, extra Compose files,
    a user agent, a source trial).

    Examples
    --------
    >>> from depthlab.io.harbor_records import TaskConfigRecord
    >>> trial_lock(TrialConfigRecord(task=TaskConfigRecord(path="/no/such/task"))) is None
    True
    """
    task = config.task
    if task.path is None or task.git_url is not None or config.agent.skills or config.environment.extra_docker_compose:
        return None
    if config.user_agent is not None or config.source_trial is not None:
        return None
    folder = Path(task.path).expanduser().resolve()
    try:
        toml = read_config(folder / "task.toml")
        digest = content_hash(folder)
        instructions = [_file_digest(Path(path)) for path in config.extra_instruction_paths]
    except (OSError, TaskFormatError):
        return None
    if digest is None:
        return None
    instructions += [_text_digest(text) for text in config.extra_instructions]
    version = section(toml, "task").get("version")
    verifier = section(toml, "verifier")
    mode: Any = None
    if not toml.get("steps"):  # a multi-step task's mode is per step
        mode = verifier.get("environment_mode") or ("separate" if "environment" in verifier else "shared")
    return TrialLockRecord(
        task=TaskLockRecord(
            name=folder.name,
            version=version if isinstance(version, str) else None,
            digest=f"sha256:{digest}",
            source=task.source,
            path=task.path,
        ),
        install_only=config.install_only,
        timeout_multiplier=config.timeout_multiplier,
        agent_timeout_multiplier=config.agent_timeout_multiplier,
        verifier_timeout_multiplier=config.verifier_timeout_multiplier,
        agent_setup_timeout_multiplier=config.agent_setup_timeout_multiplier,
        environment_build_timeout_multiplier=config.environment_build_timeout_multiplier,
        extra_instructions=[ExtraInstructionLockRecord(path=path, digest=d) for path, d in instructions] or None,
        agent=config.agent,
        environment=config.environment,
        verifier=VerifierLockRecord(**msgspec.structs.asdict(config.verifier), environment_mode=mode),
        artifacts=config.artifacts,
        override_error_policy=config.override_error_policy,
    )


def job_lock(config: JobConfigRecord, trials: list[TrialLockRecord], created_at: str | None = None) -> JobLockRecord:
    """Harbor's ``JobLock`` of a job of ``config`` whose trials are locked as ``trials``; its ``harbor`` left empty
    (no Harbor ran the job: depthlab's version is not Harbor's)."""
    return JobLockRecord(
        created_at=created_at or utc_now(),
        n_concurrent_trials=config.n_concurrent_trials,
        retry=config.retry,
        trials=trials,
    )


def write_lock(path: Path, lock: JobLockRecord) -> None:
    """Write ``lock`` to ``path`` as Harbor writes a lock (``model_dump_json(indent=4, exclude_none=True)``: a field
    that is None left out, a None inside a table kept), atomically."""
    write_json(path, _without_none(lock))


class JobLockFile:
    """A job's ``lock.json`` kept up to date trial by trial: each trial's config read and locked once, the file
    rewritten from the locks (a resumed job keeps the creation time of the lock it had).

    Parameters
    ----------
    job_dir : Path
        The job's folder (its trials are its sub-folders).
    config : JobConfigRecord
        The job's config.
    """

    def __init__(self, job_dir: Path, config: JobConfigRecord) -> None:
        self.path = Path(job_dir) / "lock.json"
        self.config = config
        before = None
        with contextlib.suppress(OSError, msgspec.DecodeError):
            before = msgspec.json.decode(self.path.read_bytes(), type=JobLock)
        self.created_at = before.created_at if before is not None and before.created_at else utc_now()
        self._written: dict[str, Any] = {}  # trial folder name -> its TrialLock as written, None: cannot be locked

    def write(self, trial_names: Iterable[str]) -> bool:
        """Rewrite the lock with the trials ``trial_names`` (complete trials of the job); False, and no lock file,
        when one of them cannot be locked as Harbor would lock it (:func:`trial_lock`): a lock of some trials only
        would misstate the job."""
        entries = []
        for name in trial_names:
            if name not in self._written:
                entry = None
                with contextlib.suppress(OSError, msgspec.DecodeError):
                    config = msgspec.json.decode(
                        (self.path.parent / name / "config.json").read_bytes(), type=TrialConfigRecord
                    )
                    entry = trial_lock(config)
                self._written[name] = None if entry is None else _without_none(entry)
            if self._written[name] is None:
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
                return False
            entries.append(self._written[name])
        lock = _without_none(job_lock(self.config, [], self.created_at))
        lock["trials"] = entries  # each entry as written already (the file is rewritten after every trial)
        write_json(self.path, lock)
        return True


def _without_none(value: Any) -> Any:
    if isinstance(value, msgspec.Struct):
        fields = ((encoded, getattr(value, name)) for name, encoded in _field_names(type(value)))
        return {name: _without_none(item) for name, item in fields if item is not None and item is not msgspec.UNSET}
    if isinstance(value, list):
        return [_without_none(item) for item in value]
    if isinstance(value, dict):
        return {key: _without_none(item) for key, item in value.items()}
    return value


@cache
def _field_names(record: type[msgspec.Struct]) -> tuple[tuple[str, str], ...]:
    """A record's (attribute, JSON key) pairs (``msgspec.structs.fields`` evaluates the annotations each call)."""
    return tuple((field.name, field.encode_name) for field in msgspec.structs.fields(record))


def _file_digest(path: Path) -> tuple[str | None, str]:
    return str(path), "sha256:" + hashlib.sha256(path.expanduser().read_bytes()).hexdigest()


def _text_digest(text: str) -> tuple[str | None, str]:
    return None, "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------- a task's content hash


#: What Harbor's Packager hashes of a task (``harbor.publisher.packager.Packager.collect_files``): these files
#: of its folder, and every file under these folders (a linked folder is not entered).
_PACKAGED_FILES: Final[tuple[str, ...]] = ("task.toml", "instruction.md", "README.md", "trajectory.json")
_PACKAGED_FOLDERS: Final[tuple[str, ...]] = ("environment", "tests", "solution", "steps")
#: The Packager's ignore rules when the task has no ``.gitignore`` (its ``DEFAULT_IGNORES``): a folder's name,
#: and patterns any name on the path is matched against.
_IGNORED_FOLDER: Final[str] = "__pycache__"
_IGNORED_NAMES: Final[tuple[str, ...]] = ("*.pyc", ".DS_Store", "*.swp", "*.swo", "*~")
#: The file of a task's own ignore rules for its tests and solution (Harbor's ``TaskFileFilter``).
_HARBOR_IGNORE: Final[str] = ".harborignore"


def packaged_files(task_dir: str | os.PathLike[str]) -> tuple[list[tuple[str, str]], str | None]:
    """The files Harbor's Packager hashes of a task, as sorted ``(relative path, file's sha256)`` pairs (its
    default ignore list applied), and the task's own ignore-rule file (a ``.gitignore``, or a ``.harborignore``
    with rules), None when it has none: depthlab does not apply gitignore patterns, so with such a file the list
    holds every file, more than Harbor hashes.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "task.toml").write_text("")
    >>> _ = (folder / "notes.txt").write_text("not packaged")
    >>> files, own_rules = packaged_files(folder)
    >>> [name for name, _ in files], own_rules
    (['task.toml'], None)
    """
    root = Path(task_dir).resolve()
    own_rules = str(root / ".gitignore") if (root / ".gitignore").exists() else None
    files = [(name, root / name) for name in _PACKAGED_FILES if (root / name).exists()]
    for folder in _PACKAGED_FOLDERS:
        if (root / folder).is_dir():
            own_rules = _packaged(root / folder, folder, files) or own_rules
    kept = [(relative, path) for relative, path in sorted(files) if not _default_ignored(relative)]
    return [(relative, _file_sha256(path)) for relative, path in kept], own_rules


def files_digest(files: Iterable[tuple[str, str]]) -> str:
    """sha256 over ``"<relative path>\\0<file's sha256>\\n"`` lines, in the order given (Harbor's content hash
    over :func:`packaged_files`)."""
    outer = hashlib.sha256()
    for relative, file_hash in files:
        outer.update(f"{relative}\0{file_hash}\n".encode())
    return outer.hexdigest()


def content_hash(task_dir: str | os.PathLike[str]) -> str | None:
    """Harbor's content hash of a task (its ``Packager.compute_content_hash``; a lock.json's task digest is
    ``"sha256:"`` and this): :func:`files_digest` of :func:`packaged_files`.

    None for a task with ignore rules of its own (a ``.gitignore``, or a ``.harborignore`` with rules): depthlab
    does not apply gitignore patterns, and a wrong digest would be worse than none.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "task.toml").write_text("")
    >>> content_hash(folder) == hashlib.sha256(f"task.toml\\0{hashlib.sha256(b'').hexdigest()}\\n".encode()).hexdigest()
    True
    """
    files, own_rules = packaged_files(task_dir)
    return None if own_rules else files_digest(files)


def _packaged(folder: Path, relative: str, files: list[tuple[str, Path]]) -> str | None:
    """Add ``folder``'s files to ``files`` as Harbor's ``select_files`` walks it; the first ``.harborignore`` with
    rules found under it, None when there is none."""
    own_rules = None
    for path in sorted(folder.iterdir()):
        name = f"{relative}/{path.name}"
        if path.name == _HARBOR_IGNORE:
            rules = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
            if any(not line.lstrip().startswith("#") for line in rules):
                own_rules = own_rules or str(path)
            continue
        if path.is_dir() and not path.is_symlink():
            own_rules = _packaged(path, name, files) or own_rules
        elif path.is_file():
            files.append((name, path))
    return own_rules


def _default_ignored(relative: str) -> bool:
    parts = relative.split("/")
    if _IGNORED_FOLDER in parts[:-1]:
        return True
    return any(fnmatch.fnmatchcase(part, pattern) for part in parts for pattern in _IGNORED_NAMES)


def _file_sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
