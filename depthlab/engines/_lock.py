"""One measurement per jobs folder: a lock taken before anything runs, naming its holder.

Two ``depthlab measure`` runs on one ``--jobs-dir`` would plan the same cells twice, and the
second one's resume would tear down the first one's live trials (Harbor's ``jobs resume`` and
the leftover cleanup see them as interrupted). The lock is an ``flock`` on
``<jobs_dir>/.depthlab-measure.lock``: the kernel releases it when its holder dies, however it
dies (``kill -9`` included), so a stale file never blocks a rerun. The file holds the holder's
process id, host, start time and command line, which the refusal quotes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

#: The lock file in the jobs folder (a file: ``harbor view`` lists folders as jobs).
LOCK_FILE = ".depthlab-measure.lock"


class JobsFolderInUse(RuntimeError):
    """Another measurement holds the jobs folder (the message names it)."""


@contextlib.contextmanager
def jobs_folder_lock(jobs_dir: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the jobs folder's measurement lock for the body; :class:`JobsFolderInUse` naming the holder when taken.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with jobs_folder_lock(folder):
    ...     with jobs_folder_lock(folder):
    ...         pass
    Traceback (most recent call last):
    ...
    depthlab.engines._lock.JobsFolderInUse: another depthlab measure is using the jobs folder ...
    """
    folder = Path(jobs_dir).absolute()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # no O_TRUNC: the holder's record must survive a refused opener
        descriptor = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise JobsFolderInUse(f"cannot use the jobs folder {str(folder)!r}: {error.strerror or error}") from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 4096, 0).decode("utf-8", "replace").strip() or "a process that left no record"
            raise JobsFolderInUse(
                f"another depthlab measure is using the jobs folder {str(folder)!r} ({holder}); wait for it to end, "
                "or give this one another --jobs-dir"
            ) from None
        record = (
            f"pid {os.getpid()} on {socket.gethostname()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}: "
            + " ".join(sys.argv)[:500]
        )
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, (record + "\n").encode(), 0)
        try:
            yield folder / LOCK_FILE
        finally:
            os.ftruncate(descriptor, 0)
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)
