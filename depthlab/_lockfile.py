"""The one exclusive lock file of depthlab: a jobs folder used by one process at a time, naming its holder.

``depthlab fill`` (:mod:`depthlab.runner.scheduler`) and ``depthlab measure``
(:mod:`depthlab.engines._lock`) each hold one on their jobs folder. The lock is an ``flock`` on the
file: the kernel releases it when its holder dies, however it dies (``kill -9`` included), so a
stale file never blocks a rerun. The file holds the holder's record (process id, host, start time,
command line), which a refused opener quotes; it is opened without truncating, so a refused opener
never erases it.

Why ``fcntl.flock`` here and not the ``filelock`` package: ``filelock.FileLock`` is the same
``flock`` underneath on every system where the engines run (Docker's Linux containers, Harbor on
Linux and macOS), but it has no place for the holder's record (a second file would be left stale by a
``kill -9``), and importing it cost 66-74 ms against 0.5 ms for ``fcntl`` (``python -X importtime``,
warm, three runs each, this machine). ``fcntl`` is imported when a lock is taken, so the rest of
depthlab still imports where it is missing (Windows), where :class:`LockUnavailable` says so.

Examples
--------
>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / ".lock"
>>> with held(path, "pid 1"):
...     with held(path, "pid 2"):
...         pass
Traceback (most recent call last):
...
depthlab._lockfile.LockHeld: pid 1
>>> path.read_text()  # released: the record is cleared, the file stays for the next holder
''
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["LockHeld", "LockUnavailable", "held", "holder_record"]


class LockHeld(RuntimeError):
    """Another process holds the lock; the message is its record (or says it left none)."""


class LockUnavailable(RuntimeError):
    """The lock cannot be taken here (no ``flock`` on this system, or the file cannot be opened)."""


def holder_record() -> str:
    """What a holder writes into its lock file: process id, host, start time and command line."""
    return (
        f"pid {os.getpid()} on {socket.gethostname()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}: "
        + " ".join(sys.argv)[:500]
    )


@contextlib.contextmanager
def held(path: str | os.PathLike[str], record: str | None = None) -> Iterator[Path]:
    """Hold the exclusive lock on ``path`` for the body, with ``record`` (default :func:`holder_record`) in it.

    Raises
    ------
    LockHeld
        When another process holds it (the message is the holder's record).
    LockUnavailable
        When the file cannot be opened, or this system has no ``flock``.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        raise LockUnavailable("this system has no flock (depthlab's jobs folders need Linux or macOS)") from None
    where = Path(path)
    try:
        # no O_TRUNC: the holder's record must survive a refused opener
        descriptor = os.open(where, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise LockUnavailable(f"cannot open {str(where)!r}: {error.strerror or error}") from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 4096, 0).decode("utf-8", "replace").strip()
            raise LockHeld(holder or "a process that left no record") from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, ((record or holder_record()) + "\n").encode(), 0)
        try:
            yield where
        finally:
            os.ftruncate(descriptor, 0)
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)
