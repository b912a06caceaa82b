"""Parquet cache of loaded trials tables, reused trial by trial.

An entry is keyed by the load's inputs (absolute paths, dataset, status rule, cap rule).
It remembers every file the load read with ``(size, mtime_ns)``, every directory it listed
with its ``mtime_ns`` (adding or removing an entry changes it) and every path it probed and
found absent, each tagged with the trial (the *unit*: a Harbor trial directory or a TB1
trial file) it belongs to. A reload checks those with one ``stat`` each:

* nothing changed: the cached table is returned as is (no walk, no parsing);
* something changed: the tree is walked again, trials whose own files are unchanged are
  taken from the cache, and only new or changed trials (and run-level files) are parsed.

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
FORMAT_VERSION = 2

#: Column of the cached table naming the unit each row came from ("" = a run-level file).
UNIT = "_unit"
#: Unit of dependencies and rejections that belong to the walk or to run-level files.
GLOBAL = ""


class _Meta(msgspec.Struct):
    version: int
    paths: list[str]
    sizes: list[int]
    mtimes: list[int]
    owners: list[str]
    rejected: list[tuple[str, str, str]]  # path, reason, unit
    n_seen: int


class Entry:
    """A cache entry: ``table`` has the extra :data:`UNIT` column and the pre-attempt hint.

    What only a partial reload needs (the units, the remembered files) is built on first use,
    so that the common case, nothing changed, stays a stat per file and a parquet read.
    """

    def __init__(self, table: pl.DataFrame, meta: _Meta, changed: frozenset[str]) -> None:
        self.table = table
        self.n_seen = meta.n_seen
        self.changed = changed  # units (and GLOBAL) with a changed, added or removed file
        self.rejected = [(Rejected(path, reason), unit) for path, reason, unit in meta.rejected]
        self._meta = meta
        self._units: frozenset[str] | None = None

    @property
    def unchanged(self) -> bool:
        """True when the load can be returned without looking at the tree again."""
        return not self.changed

    def reusable(self, unit: str) -> bool:
        """True when ``unit`` was cached (it gave a row or a rejection) and none of its files changed."""
        if self._units is None:
            self._units = frozenset(self.table[UNIT].unique().to_list()) | {unit for _, unit in self.rejected}
        return unit != GLOBAL and unit in self._units and unit not in self.changed

    def deps_of(self, units: set[str]) -> list[tuple[Dep, str]]:
        """The remembered files of ``units``, with their unit."""
        meta = self._meta
        return [
            ((path, size, mtime), owner)
            for path, size, mtime, owner in zip(meta.paths, meta.sizes, meta.mtimes, meta.owners, strict=True)
            if owner in units
        ]


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


def load(key: str) -> Entry | None:
    """The cache entry for ``key`` with what changed since, or None when there is none."""
    folder = cache_dir()
    try:
        meta = msgspec.msgpack.decode((folder / f"trials-{key}.meta").read_bytes(), type=_Meta)
        if meta.version != FORMAT_VERSION:
            return None
        table = pl.read_parquet(folder / f"trials-{key}.parquet")
    except (OSError, msgspec.DecodeError, msgspec.ValidationError, pl.exceptions.PolarsError):
        return None
    return Entry(table, meta, frozenset(_changed_owners(meta)))


def save(
    key: str, table: pl.DataFrame, rejected: list[tuple[Rejected, str]], n_seen: int, deps: list[tuple[Dep, str]]
) -> None:
    """Store a load (``table`` with its :data:`UNIT` column); failing to write only costs the cache."""
    # one file can matter to several units (a TB1 run's metadata to each of its trials)
    unique = {(path, owner): (size, mtime) for (path, size, mtime), owner in deps}
    meta = _Meta(
        version=FORMAT_VERSION,
        paths=[path for path, _ in unique],
        sizes=[size for size, _ in unique.values()],
        mtimes=[mtime for _, mtime in unique.values()],
        owners=[owner for _, owner in unique],
        rejected=[(item.path, item.reason, unit) for item, unit in rejected],
        n_seen=n_seen,
    )
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        table_tmp = folder / f".trials-{key}.parquet.{os.getpid()}"
        meta_tmp = folder / f".trials-{key}.meta.{os.getpid()}"
        table.write_parquet(table_tmp)
        meta_tmp.write_bytes(msgspec.msgpack.encode(meta))
        table_tmp.replace(folder / f"trials-{key}.parquet")
        meta_tmp.replace(folder / f"trials-{key}.meta")
    except OSError:
        return


def _changed_owners(meta: _Meta) -> set[str]:
    changed: set[str] = set()
    stat_path = os.stat
    for path, size, mtime, owner in zip(meta.paths, meta.sizes, meta.mtimes, meta.owners, strict=True):
        try:
            info = stat_path(path)
        except OSError:
            if size != ABSENT:
                changed.add(owner)
            continue
        if size == ABSENT:
            if stat.S_ISREG(info.st_mode):
                changed.add(owner)  # a file that was absent has appeared
        elif info.st_mtime_ns != mtime or (size != DIR_SIZE and info.st_size != size):
            changed.add(owner)
    return changed
