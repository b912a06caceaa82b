"""The runner's Harbor job folder: trials added one at a time, resumable, written atomically.

The files themselves (configs, results, ATIF trajectories, trial names) are built by
:mod:`depthlab.io.harbor_writer`, the one writer of the Harbor format; this module keeps what
only the runner needs: a job folder that trials are added to by several threads, whose
``result.json`` is rewritten after every trial (from the trials' results it has read: only a
trial's result.json that is new or changed since the last update is read again), and which is
resumed by deleting the trial folders that have no ``result.json`` (interrupted trials), as Harbor
does.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import polars as pl

from depthlab import schema
from depthlab._version import __version__
from depthlab.io import harbor_writer, load_trials
from depthlab.io.harbor import read_job_result
from depthlab.io.harbor_lock import JobLockFile
from depthlab.io.harbor_models import JobResult, TrialResult
from depthlab.io.harbor_records import JobConfigRecord
from depthlab.io.harbor_writer import Trajectory, trial_name, utc_now, write_json, write_text

__all__ = [
    "VERSION",
    "JobDir",
    "Trajectory",
    "load_job_trials",
    "new_trial_dir",
    "remove_incomplete_trials",
    "utc_now",
    "write_json",
    "write_text",
]


#: depthlab's version, recorded as the runner's agents' version.
VERSION = __version__

_JOB_LOCKS: dict[Path, threading.Lock] = {}
_JOB_LOCKS_GUARD = threading.Lock()


class JobDir:
    """A Harbor job directory the runner adds trials to; reopening it resumes it.

    Parameters
    ----------
    jobs_dir : Path
        Parent folder of all jobs.
    job_name : str
        Folder name of this job.
    config : JobConfigRecord or mapping
        The JobConfig to write as ``config.json``, from :func:`depthlab.io.harbor_writer.job_config`, or
        some of its fields (Harbor's defaults for the others); ``job_name`` and ``jobs_dir`` are set to
        this folder's.

    Examples
    --------
    >>> import tempfile
    >>> job = JobDir(Path(tempfile.mkdtemp()), "demo", {"n_attempts": 1})
    >>> job.new_trial_dir("hello").name.startswith("hello__")
    True
    """

    def __init__(self, jobs_dir: Path, job_name: str, config: JobConfigRecord | Mapping[str, Any]) -> None:
        self.path = Path(jobs_dir) / job_name
        self.path.mkdir(parents=True, exist_ok=True)
        self.name = job_name
        existing = read_job_result(self.path / "result.json")
        existing = existing if isinstance(existing, JobResult) else JobResult()
        self.id = existing.id if isinstance(existing.id, str) and existing.id else str(uuid.uuid4())
        if not isinstance(config, JobConfigRecord):  # given as its fields (Harbor's defaults for the rest)
            config = msgspec.convert(dict(config), JobConfigRecord)
        self.config = msgspec.structs.replace(config, job_name=job_name, jobs_dir=str(Path(jobs_dir)))
        started = existing.started_at
        self.started_at = started if isinstance(started, str) and started else harbor_writer.job_time()
        self.n_planned = 0
        #: How many trial result.json files this object has decoded (each new or changed file once).
        self.n_reads = 0
        # trial folder name -> (the result.json's stat signature, its decoded result or None if unreadable)
        self._read: dict[str, tuple[tuple[int, int, int], TrialResult | None]] = {}
        self._reading = threading.Lock()  # trial_results is called by the workers' threads and the planner
        self._lock_file = JobLockFile(self.path, self.config)
        with _job_lock(self.path):
            write_json(self.path / "config.json", self.config)

    def trial_results(self) -> list[TrialResult]:
        """The ``result.json`` of every complete trial in the job, read through the model.

        A file is decoded again only when its size, modification time or inode changed since the
        last call (a trial rewritten by the guard, a resumed job's trials read once); a file that
        cannot be decoded is left out, as before, until it changes.
        """
        with self._reading:
            return self._read_trials()

    def _read_trials(self) -> list[TrialResult]:
        seen: dict[str, tuple[tuple[int, int, int], TrialResult | None]] = {}
        with os.scandir(self.path) as entries:
            for entry in entries:
                if not entry.is_dir():
                    continue
                file = Path(entry.path) / "result.json"
                try:
                    stat = file.stat()
                except OSError:
                    continue
                signature = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
                known = self._read.get(entry.name)
                if known is not None and known[0] == signature:
                    seen[entry.name] = known
                    continue
                result = None
                self.n_reads += 1
                with contextlib.suppress(OSError, msgspec.DecodeError):  # (a ValidationError is a DecodeError)
                    result = msgspec.json.decode(file.read_bytes(), type=TrialResult)
                seen[entry.name] = (signature, result)
        self._read = seen
        return [result for _, (_, result) in sorted(seen.items()) if result is not None]

    def new_trial_dir(self, task_name: str) -> Path:
        """Create and return a fresh, uniquely named trial folder."""
        return new_trial_dir(self.path, task_name)

    def update_result(self, *, finished: bool = False) -> None:
        """Rewrite the job's ``result.json`` from the trials on disk (so it is right after a resume), reading
        only the trials' result.json files that are new or changed since the last update."""
        with _job_lock(self.path):
            trials = self.trial_results()
            now = harbor_writer.job_time()
            result = harbor_writer.job_result(
                self.id,
                trials,
                started_at=self.started_at,
                updated_at=now,
                finished_at=now if finished else None,
                n_total_trials=self.n_planned,
            )
            write_json(self.path / "result.json", result)
            self._write_lock()

    def _write_lock(self) -> None:
        """Rewrite the job's ``lock.json`` (Harbor's ``JobLock``) from the complete trials, each locked once."""
        self._lock_file.write(name for name, (_, result) in sorted(self._read.items()) if result is not None)


def new_trial_dir(job_path: Path, task_name: str) -> Path:
    """Create and return a fresh, uniquely named trial folder in ``job_path`` (Harbor's ``<task>__<id>``)."""
    while True:
        path = job_path / trial_name(task_name)
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue


def load_job_trials(jobs_dir: str | os.PathLike[str]) -> pl.DataFrame:
    """Every complete trial under ``jobs_dir`` (jobs folders being written: a runner's, a measurement's).

    Empty (the trials table's columns) while no trial has a ``result.json`` yet. Loaded without
    the parquet cache: the folder changes with every round, so an entry would be rewritten on
    each load and the user's cache would fill with passing states of a jobs folder.

    Examples
    --------
    >>> import tempfile
    >>> load_job_trials(tempfile.mkdtemp()).height
    0
    """
    root = Path(jobs_dir)
    if not any(root.glob("*/*/result.json")):
        return schema.empty("trials")
    return load_trials([root], cache=False)


def remove_incomplete_trials(job_path: Path) -> list[str]:
    """Delete the trial folders of ``job_path`` that have no ``result.json``; return their names.

    Examples
    --------
    >>> import tempfile
    >>> job = Path(tempfile.mkdtemp())
    >>> (job / "t__abc").mkdir()
    >>> remove_incomplete_trials(job)
    ['t__abc']
    """
    removed = []
    for child in sorted(Path(job_path).iterdir()):
        if child.is_dir() and not (child / "result.json").exists():
            shutil.rmtree(child, ignore_errors=True)
            removed.append(child.name)
    return removed


def _job_lock(path: Path) -> threading.Lock:
    with _JOB_LOCKS_GUARD:
        return _JOB_LOCKS.setdefault(path.resolve(), threading.Lock())
