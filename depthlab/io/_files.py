"""Safe reading of small files: regular files only, decode errors turned into reasons.

Every read records the file's ``(size, mtime_ns)`` in a dependency list so that the
parquet cache can tell later whether anything it was built from has changed.
"""

from __future__ import annotations

import os
import stat
from typing import Any

import msgspec

from depthlab.io._errors import _Reject

#: A file that was read (size, mtime_ns >= 0), a directory that was listed (size -1),
#: or a path that was probed and found absent (size -2, mtime 0).
Dep = tuple[str, int, int]
DIR_SIZE = -1
ABSENT = -2

# A run log larger than this is not something a loader should hold in memory.
_MAX_BYTES = 512 * 1024 * 1024


def read_bytes(path: str, deps: list[Dep]) -> bytes:
    """Read a regular file, refusing FIFOs, devices and directories (which could hang or fail late)."""
    data = read_bytes_if_exists(path, deps)
    if data is None:
        raise _Reject(path, "file not found")
    return data


def read_bytes_if_exists(path: str, deps: list[Dep]) -> bytes | None:
    """Like :func:`read_bytes`, but None (remembered as absent) when there is no such file."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        deps.append((path, ABSENT, 0))
        return None
    except OSError as exc:
        raise _Reject(path, f"cannot open: {exc.strerror or exc}") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise _Reject(path, "not a regular file")
        if info.st_size > _MAX_BYTES:
            raise _Reject(path, f"file too large ({info.st_size} bytes)")
        parts = [os.read(descriptor, info.st_size + 1)]
        while len(parts[-1]) and sum(map(len, parts)) <= info.st_size:
            parts.append(os.read(descriptor, 1 << 20))
    except OSError as exc:
        raise _Reject(path, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(descriptor)
    deps.append((path, info.st_size, info.st_mtime_ns))
    return parts[0] if len(parts) == 1 else b"".join(parts)


def exists(path: str, deps: list[Dep]) -> bool:
    """True when ``path`` is a regular file; an absent path is remembered so that its later creation is noticed."""
    try:
        info = os.stat(path)
    except OSError:
        deps.append((path, ABSENT, 0))
        return False
    return stat.S_ISREG(info.st_mode)


def decode_json(data: bytes, path: str, type_: Any = Any) -> Any:
    """Decode JSON bytes into ``type_``; empty, truncated, non-UTF-8 or mis-shaped input becomes a reason."""
    if not data.strip():
        raise _Reject(path, "empty file")
    try:
        return msgspec.json.decode(data, type=type_)
    except msgspec.ValidationError as exc:
        raise _Reject(path, f"unexpected shape: {exc}") from None
    except msgspec.DecodeError as exc:
        raise _Reject(path, f"not valid JSON: {exc}") from None


def read_json(path: str, deps: list[Dep], type_: Any = Any) -> Any:
    """:func:`read_bytes` then :func:`decode_json`."""
    return decode_json(read_bytes(path, deps), path, type_)


def read_text(path: str, deps: list[Dep]) -> str:
    """Read a text file as UTF-8; bytes that are not UTF-8 become U+FFFD rather than an error."""
    return read_bytes(path, deps).decode("utf-8", errors="replace")
