"""Safe reading of run-log files: regular files only, never through a link, bounded size, every failure a reason.

Every file a reader looks at is recorded in a dependency list with ``(size, change time)``,
*before* it is read, so that the parquet cache notices when a file it rejected (a FIFO, a
directory, a broken link, a file too large or unreadable) is later repaired.

The change time is ``st_ctime_ns`` on POSIX systems: the kernel moves it on every write,
``chmod``, rename onto the path or ``utime`` (so a rewrite that restores the old
modification time is still seen); elsewhere it is ``st_mtime_ns``.
"""

from __future__ import annotations

import errno
import gc
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

import msgspec

from depthlab.io._errors import Reject

#: A file that was read or a directory that was listed (size and change time, both >= 0),
#: a path that was probed and found absent (size -2, time 0), or a dangling symbolic link
#: (size -3, the link's own change time).
Dep = tuple[str, int, int]
ABSENT: Final[int] = -2
BROKEN_LINK: Final[int] = -3

#: Largest run-log file (result, trajectory, run file, reward) a loader reads, in bytes. Larger
#: files are refused from their size alone, before a byte is read.
MAX_FILE_BYTES: Final[int] = 256 * 1024 * 1024

#: Open flag refusing a final symbolic link (0 where the system has none)
_NOFOLLOW: Final[int] = getattr(os, "O_NOFOLLOW", 0)

#: Whether the change time compared is the status-change time (POSIX) or the modification time.
POSIX: Final[bool] = os.name == "posix"


def changed_ns(info: os.stat_result) -> int:
    """The time the cache compares: status change on POSIX, modification elsewhere."""
    return info.st_ctime_ns if POSIX else info.st_mtime_ns


def read_bytes(path: str, deps: list[Dep], limit: int = MAX_FILE_BYTES) -> bytearray:
    """Read a regular file, refusing FIFOs, devices, directories, broken links and files over ``limit``."""
    data = read_bytes_if_exists(path, deps, limit)
    if data is None:
        raise Reject(path, "file not found")
    return data


def read_bytes_if_exists(path: str, deps: list[Dep], limit: int = MAX_FILE_BYTES) -> bytearray | None:
    """Like :func:`read_bytes`, but None (remembered as absent) when nothing at all is at ``path``."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
        # O_NOFOLLOW: a file that is a link is never followed: an agent that can write in its
        # trial's folders (Harbor bind-mounts /logs/agent and /logs/verifier there) could point a
        # link at any file of the host
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | _NOFOLLOW)
    except FileNotFoundError:
        _remember_missing(path, deps)
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            _refuse_link(path, deps)
        _remember_path(path, deps)
        raise Reject(path, f"cannot open: {exc.strerror or exc}") from None
    try:
        info = os.fstat(descriptor)
        deps.append((path, info.st_size, changed_ns(info)))
        if not stat.S_ISREG(info.st_mode):
            raise Reject(path, "a directory, not a file" if stat.S_ISDIR(info.st_mode) else "not a regular file")
        if info.st_size > limit:
            raise Reject(path, f"file too large ({info.st_size} bytes; the limit is {limit})")
        return _read_all(descriptor, info.st_size, path)
    except OSError as exc:
        raise Reject(path, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(descriptor)


def _read_all(descriptor: int, size: int, path: str) -> bytearray:
    """Read into one buffer of the stated size: no second copy (a file that grows meanwhile is refused)."""
    buffer = bytearray(size + 1)
    with memoryview(buffer) as view:
        filled = 0
        while filled <= size:
            count = os.readv(descriptor, [view[filled:]])
            if count == 0:
                break
            filled += count
    if filled > size:
        raise Reject(path, "file grew while it was read (still being written?)")
    del buffer[filled:]
    return buffer  # msgspec decodes a bytearray in place: no copy


def _remember_missing(path: str, deps: list[Dep]) -> None:
    """An absent path is remembered, so its later creation is seen; a dangling link is a reason."""
    try:
        info = os.lstat(path)
    except OSError:
        deps.append((path, ABSENT, 0))
        return
    if not stat.S_ISLNK(info.st_mode):  # it vanished between the open and the lstat
        deps.append((path, ABSENT, 0))
        return
    deps.append((path, BROKEN_LINK, changed_ns(info)))
    raise Reject(path, f"broken symbolic link (to {_link_target(path)!r})")


def _refuse_link(path: str, deps: list[Dep]) -> None:
    """A link in place of a file: a dangling one is a broken link, any other is refused unfollowed."""
    try:
        info = os.lstat(path)
    except OSError:
        return
    if not stat.S_ISLNK(info.st_mode):
        return
    if not os.path.exists(path):
        _remember_missing(path, deps)  # raises: broken symbolic link
    deps.append((path, info.st_size, changed_ns(info)))
    raise Reject(path, f"a symbolic link (to {_link_target(path)!r}), not followed")


def _link_target(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def _remember_path(path: str, deps: list[Dep]) -> None:
    try:
        info = os.stat(path)
    except OSError:
        deps.append((path, ABSENT, 0))
        return
    deps.append((path, info.st_size, changed_ns(info)))


def probe(path: str, deps: list[Dep]) -> bool:
    """True when anything is at ``path`` (a file, or something to reject when read); absence is remembered.

    A FIFO, a directory or a dangling link in place of an optional file is *there*: reading it
    gives the reason, rather than taking it for a missing file.
    """
    if there(path):
        return True
    deps.append((path, ABSENT, 0))
    return False


def there(path: str | bytes) -> bool:
    """True when anything (a dangling link too) is at ``path``: what ``lstat`` answers, without raising.

    A probe mostly finds nothing, and an ``lstat`` that raises costs a quarter more than ``access``
    (F_OK, the last link not followed), which answers the same question with a boolean.

    Examples
    --------
    >>> import tempfile, os
    >>> there(os.path.join(tempfile.mkdtemp(), "lock.json"))
    False
    """
    return os.access(path, os.F_OK, follow_symlinks=False)


def decode_json(data: bytes | bytearray, path: str, type_: Any = Any) -> Any:
    """Decode JSON bytes into ``type_``; empty, truncated, too deep, non-UTF-8 or mis-shaped input becomes a reason."""
    if not data.strip():
        raise Reject(path, "empty file")
    try:
        return msgspec.json.decode(data, type=type_)
    except msgspec.ValidationError as exc:
        raise Reject(path, f"unexpected shape: {exc}") from None
    except msgspec.DecodeError as exc:
        raise Reject(path, f"not valid JSON: {exc}") from None
    except RecursionError:
        # msgspec counts its depth against Python's recursion limit and unwinds cleanly
        raise Reject(path, "JSON nested too deeply to read") from None


def read_json(path: str, deps: list[Dep], type_: Any = Any) -> Any:
    """:func:`read_bytes` then :func:`decode_json`."""
    return decode_json(read_bytes(path, deps), path, type_)


def read_text(path: str, deps: list[Dep]) -> str:
    """Read a text file as UTF-8; bytes that are not UTF-8 become U+FFFD rather than an error."""
    return read_bytes(path, deps).decode("utf-8", errors="replace")


@contextmanager
def collection_paused() -> Iterator[None]:
    """Python's cycle collector off for a batch of reads (and back as it was after).

    A load or a reload makes no cycles, but it allocates hundreds of thousands of short-lived
    objects (stat results, paths, decoded results) beside the many it keeps: each 700 of them would
    start a collection, whose passes cost a tenth of the batch.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
