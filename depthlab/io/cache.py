"""Parquet cache of loaded trials tables.

An entry is keyed by the load's inputs (absolute paths, dataset, status rule, cap rule)
and remembers every file it was built from with ``(size, mtime_ns)``, every directory
it listed with its ``mtime_ns`` (adding or removing an entry changes it), and every
path it probed and found absent. A reload checks those with one ``stat`` each and reads
the parquet file only when nothing changed; anything else is a miss and the tree is
loaded again.

The cache directory is ``$DEPTHLAB_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/depthlab``
(``~/.cache/depthlab``). A cap rule given as a function cannot be keyed, so such loads are
never cached.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import msgspec
import polars as pl

from depthlab.io._errors import Rejected
from depthlab.io._files import ABSENT, DIR_SIZE, Dep

# Bump when the loaders change what they produce, so old entries are not reused.
FORMAT_VERSION = 1


class _Meta(msgspec.Struct):
    version: int
    paths: list[str]
    sizes: list[int]
    mtimes: list[int]
    rejected: list[tuple[str, str]]
    n_seen: int


def cache_dir() -> Path:
    """Where cache entries live (see the module docstring).

    Examples
    --------
    >>> isinstance(cache_dir(), Path)
    True
    """
    if os.environ.get("DEPTHLAB_CACHE_DIR"):
        return Path(os.environ["DEPTHLAB_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "depthlab"


def cache_key(roots: list[str], settings: dict[str, str | None]) -> str:
    """A stable key for a load of ``roots`` with ``settings``."""
    payload = msgspec.json.encode({"v": FORMAT_VERSION, "roots": roots, "settings": settings})
    return hashlib.sha256(payload).hexdigest()[:32]


def load(key: str) -> tuple[pl.DataFrame, list[Rejected], int] | None:
    """The cached (trials, rejected, n_seen) when every remembered file is unchanged, else None."""
    folder = cache_dir()
    meta_path, table_path = folder / f"trials-{key}.meta", folder / f"trials-{key}.parquet"
    try:
        meta = msgspec.msgpack.decode(meta_path.read_bytes(), type=_Meta)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    if meta.version != FORMAT_VERSION or not _unchanged(meta):
        return None
    try:
        trials = pl.read_parquet(table_path)
    except (OSError, pl.exceptions.PolarsError):
        return None
    return trials, [Rejected(path, reason) for path, reason in meta.rejected], meta.n_seen


def save(key: str, trials: pl.DataFrame, rejected: list[Rejected], n_seen: int, deps: list[Dep]) -> None:
    """Store a load; failures to write (read-only home, full disk) only cost the cache."""
    unique = {path: (size, mtime) for path, size, mtime in deps}
    meta = _Meta(
        version=FORMAT_VERSION,
        paths=list(unique),
        sizes=[size for size, _ in unique.values()],
        mtimes=[mtime for _, mtime in unique.values()],
        rejected=[(item.path, item.reason) for item in rejected],
        n_seen=n_seen,
    )
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        table_tmp = folder / f".trials-{key}.parquet.{os.getpid()}"
        meta_tmp = folder / f".trials-{key}.meta.{os.getpid()}"
        trials.write_parquet(table_tmp)
        meta_tmp.write_bytes(msgspec.msgpack.encode(meta))
        table_tmp.replace(folder / f"trials-{key}.parquet")
        meta_tmp.replace(folder / f"trials-{key}.meta")
    except OSError:
        return


def _unchanged(meta: _Meta) -> bool:
    for path, size, mtime in zip(meta.paths, meta.sizes, meta.mtimes, strict=True):
        try:
            info = os.stat(path)
        except OSError:
            if size == ABSENT:
                continue
            return False
        if size == ABSENT:
            if stat.S_ISREG(info.st_mode):
                return False  # a file that was absent has appeared
            continue
        if info.st_mtime_ns != mtime or (size != DIR_SIZE and info.st_size != size):
            return False
    return True
