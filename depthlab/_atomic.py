"""The one atomic write of depthlab: a reader never sees half a file.

Every file depthlab writes that another process may read while it is written (Harbor run logs,
cache entries, results, downloads, plan files) goes through this module: the data goes to a
temporary file in the same folder (so the final rename never crosses a filesystem), is flushed,
and replaces the target in one ``os.replace``. On any failure the temporary file is removed and
the target is left as it was.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> write_text(folder / "a.txt", "hello\\n")
>>> (folder / "a.txt").read_text()
'hello\\n'
>>> with atomic_path(folder / "b.bin") as tmp:
...     _ = tmp.write_bytes(b"xy")
>>> (folder / "b.bin").read_bytes()
b'xy'
>>> sorted(p.name for p in folder.iterdir())  # no temporary file is left behind
['a.txt', 'b.bin']
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

__all__ = ["TEMP_SUFFIX", "atomic_path", "temporary_name", "write_bytes", "write_text"]

# every temporary file this module makes ends so; cleanup code and cache accounting look for it
TEMP_SUFFIX = ".depthlab-tmp"


def temporary_name(path: Path) -> Path:
    """The hidden, unique temporary sibling of ``path`` that an atomic write goes through."""
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, fsync: bool = False) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces ``path`` in one rename.

    Parameters
    ----------
    path
        The file to create or replace. Its folder is created when missing.
    fsync
        Flush the temporary file to disk before the rename (for files whose loss after a power
        cut would lose work, such as a finished trial's result).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(target)
    try:
        yield tmp
        if fsync:
            with open(tmp, "rb") as handle:
                os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_bytes(path: str | os.PathLike[str], data: bytes, *, fsync: bool = False) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_path`)."""
    with atomic_path(path, fsync=fsync) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | os.PathLike[str], text: str, *, fsync: bool = False) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_path`)."""
    write_bytes(path, text.encode("utf-8"), fsync=fsync)
