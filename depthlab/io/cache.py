"""Parquet cache of loaded trials tables, reused trial by trial.

An entry is keyed by the load's inputs (absolute paths, dataset, status rule, cap rule).
It remembers every file the load looked at, with its size and change time, *including the
files it rejected before reading* (a FIFO, a directory, a broken link, a file too large or
unreadable), every directory it listed with its change time (adding or removing an entry
changes it) and every path it probed and found absent, each tagged with the trial (the
*unit*: a Harbor trial directory or a TB1 trial file) it belongs to. The change time is the
status-change time ``st_ctime_ns`` on POSIX, which the kernel moves on every write, ``chmod``,
rename onto the path and ``utime``, so even a rewrite that keeps the size and restores the
modification time is seen. A reload checks those with one ``stat`` each:

* nothing changed: the cached table is returned as is (no walk, no parsing);
* something changed: the tree is walked again, trials whose own files are unchanged are
  taken from the cache, and only new or changed trials (and run-level files) are parsed.

What is not seen: a change inside a directory the load never looked at (say, a new file in
a trial's ``verifier/`` when its result.json already holds the reward), and a change made
within the file system's timestamp granularity that also keeps the size.

An entry is **one file**, ``trials-<key>.entry``: a header, the remembered files (msgpack)
and the table (parquet), written in one atomic rename (:mod:`depthlab._atomic`), so no
interleaving of two loads can pair one load's table with another load's stamps: a load that
read an older ``result.json`` stores that file's older stamp beside its older table, and the
next load sees the stamp differ and reads the file again. The entry is used only when it is a
regular file whose header, length and table (rows and columns) are those it records;
anything else (missing, truncated, replaced, a FIFO, not parquet) is a miss and the load is
rebuilt.

**A cache that cannot be written** (a full disk, a read-only folder) costs only speed: the
load is returned whole, one :class:`CacheNotWrittenWarning` says why, and no temporary file
is left (``depthlab cache info`` counts any that a killed process left, ``clear`` removes them).

**Location**: ``$DEPTHLAB_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/depthlab``, else
``~/.cache/depthlab``. **Eviction**: after each save, entries not used for
:data:`MAX_AGE_DAYS` days are removed, then the least recently used ones until the folder
holds at most ``$DEPTHLAB_CACHE_MAX_MB`` megabytes (default :data:`MAX_MEGABYTES`).
``depthlab cache info`` shows the location and size; ``depthlab cache clear`` empties it.
A cap rule given as a function cannot be keyed, so such loads are never cached.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import time
import warnings
from array import array
from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter
from pathlib import Path
from typing import BinaryIO, Final

import msgspec
import polars as pl

from depthlab import _atomic
from depthlab.io._errors import Rejected
from depthlab.io._files import ABSENT, BROKEN_LINK, POSIX, Dep, collection_paused, there

# Bump when the loaders change what they produce, so old entries are not reused.
FORMAT_VERSION: Final[int] = 8

#: Column of the cached table naming the unit each row came from ("" = a run-level file).
UNIT: Final[str] = "_unit"
#: Column of the cached table marking rows left out as a copy of a trial loaded from another file.
DUPLICATE: Final[str] = "_duplicate"
#: Unit of dependencies and rejections that belong to the walk or to run-level files.
GLOBAL: Final[str] = ""

#: Entries unused for this many days are evicted.
MAX_AGE_DAYS: Final[int] = 30
#: Default size limit of the cache folder, in megabytes (``$DEPTHLAB_CACHE_MAX_MB`` overrides it).
MAX_MEGABYTES: Final[int] = 2048

_PREFIX = "trials-"
_ENTRY = ".entry"
_MAGIC = b"depthlab-trials-cache\n"
_LENGTH = 8  # bytes of the header's meta length


#: A size in :class:`Stamps` meaning "this unit has no such file remembered".
SKIP: Final[int] = -1


@dataclass
class Stamps:
    """Files remembered for many units at once, as columns (the fast path's trials: 100,000 of them).

    Unit ``units[i]`` has the file ``<unit>/<names[k]>`` remembered as ``(sizes[k][i], times[k][i])``
    (:data:`depthlab.io._files.ABSENT` for a probe found absent), unless ``sizes[k][i]`` is :data:`SKIP`.
    Each (file, unit) pair is there once, and no unit here has other files remembered.
    """

    names: tuple[str, ...]
    units: list[str] = field(default_factory=list)
    sizes: list[MutableSequence[int]] = field(default_factory=list)
    times: list[MutableSequence[int]] = field(default_factory=list)
    #: Held compactly (a load's stamps, kept until it is saved; a chunk's are plain lists): machine
    #: integers, and the units taken in as ``blocks`` of :func:`joined` paths, after ``units``.
    compact: bool = False
    blocks: list[bytes] = field(default_factory=list)
    n_blocked: int = 0  # units in blocks

    def __post_init__(self) -> None:
        if not self.sizes:
            self.sizes = [array("q") if self.compact else [] for _ in self.names]
            self.times = [array("q") if self.compact else [] for _ in self.names]

    def __len__(self) -> int:
        return len(self.units) + self.n_blocked

    def extend(self, other: Stamps) -> None:
        if self.compact:  # (in the order they come: blocks follow one another)
            if other.units:
                self.blocks.append(joined(other.units))
                self.n_blocked += len(other.units)
            self.blocks += other.blocks
            self.n_blocked += other.n_blocked
        elif other.blocks:
            raise ValueError("only compact stamps take units in blocks")  # (their order would be lost)
        else:
            self.units += other.units
        for mine, theirs in zip(self.sizes + self.times, other.sizes + other.times, strict=True):
            mine.extend(theirs)

    def joined_units(self) -> bytes:
        """Every unit, in order, as one :func:`joined` block."""
        blocks = [joined(self.units), *self.blocks] if self.units else self.blocks
        return b"\0".join(blocks)  # (a block holds one unit at least: a chunk with none adds no block)


class _Meta(msgspec.Struct):
    version: int
    n_present: int  # the first n_present files are files and directories that were there
    # A file is bases[base[i]] + names[name[i]]: a unit's own files are its folder and a name
    # relative to it (so 100,000 trials' paths are not stored whole twice); a file outside any
    # unit has the base "" and its whole path as name. Both are "\0"-joined file-system bytes
    # (stat takes them as they are, and a name that is not UTF-8 is kept as it is).
    bases: bytes
    names: bytes
    # The integer columns, one per file, each a block of little-endian int64 (:func:`_int_block`):
    # read in place, a reload makes no Python integer it does not use (as lists, 100,000 trials'
    # 300,000 files were 50 MiB of integers, the reload's largest allocation after its table)
    base: bytes
    name: bytes
    sizes: bytes
    times: bytes
    # the unit of each file, an index into bases: a unit is the base of its own files (split and
    # decoded only when something changed; the common reload never needs it)
    owner: bytes
    rejected: list[tuple[str, str, str]]  # path, reason, unit
    n_seen: int
    duplicates: list[str]
    rows: int
    columns: list[tuple[str, str]]  # name, dtype of the parquet table


@dataclass(frozen=True)
class _Files:
    """The remembered files of an entry: its meta's integer columns read in place, their lengths checked."""

    n_present: int
    bases: bytes
    names: bytes
    base: Sequence[int]
    name: Sequence[int]
    sizes: Sequence[int]
    times: Sequence[int]
    owner: Sequence[int]

    @classmethod
    def of(cls, meta: _Meta) -> _Files:
        columns = [_ints(block) for block in (meta.base, meta.name, meta.sizes, meta.times, meta.owner)]
        if len({len(column) for column in columns}) != 1 or not 0 <= meta.n_present <= len(columns[0]):
            raise ValueError("the entry's file columns differ in length")  # (a damaged entry: a miss)
        return cls(meta.n_present, meta.bases, meta.names, *columns)


class Entry:
    """A cache entry: ``table`` has the extra :data:`UNIT` and :data:`DUPLICATE` columns and the hints.

    What only a partial reload needs (the units, the remembered files) is built on first use,
    so that the common case, nothing changed, stays a stat per file and a parquet read.
    """

    def __init__(self, table: pl.DataFrame, meta: _Meta, files: _Files, changed: frozenset[str]) -> None:
        self.table = table
        self.n_seen = meta.n_seen
        self.duplicates = list(meta.duplicates)
        self.changed = changed  # units (and GLOBAL) with a changed, added or removed file
        self.rejected = [(Rejected(path, reason), unit) for path, reason, unit in meta.rejected]
        self._files = files
        self._units: frozenset[str] | None = None

    @property
    def unchanged(self) -> bool:
        """True when the load can be returned without looking at the tree again."""
        return not self.changed

    def kept(self) -> pl.DataFrame:
        """The rows of the load (copies of a trial already loaded left out)."""
        if not self.table[DUPLICATE].any():  # the common case: no copy of the table
            return self.table
        return self.table.filter(~pl.col(DUPLICATE))

    def reusable(self, unit: str) -> bool:
        """True when ``unit`` was cached (it gave a row or a rejection) and none of its files changed."""
        if self._units is None:
            self._units = frozenset(self.table[UNIT].unique().to_list()) | {unit for _, unit in self.rejected}
        return unit != GLOBAL and unit in self._units and unit not in self.changed

    def deps_of(self, units: set[str]) -> tuple[list[Dep], list[str]]:
        """The remembered files of ``units``, and the unit of each."""
        files = self._files
        deps, owners = [], []
        for path, size, when, owner in zip(_paths(files), files.sizes, files.times, _owners(files), strict=True):
            if owner in units:
                deps.append((os.fsdecode(path), size, when))
                owners.append(owner)
        return deps, owners


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


def _entry_path(key: str) -> Path:
    return cache_dir() / f"{_PREFIX}{key}{_ENTRY}"


def load(key: str) -> Entry | None:
    """The cache entry for ``key`` with what changed since, or None when there is none (or it is unusable)."""
    path = _entry_path(key)
    with collection_paused():  # (while the entry is decoded and its files are stat'ed)
        try:
            with _open_regular(path) as handle:
                meta, table = _decode(handle)
            if meta is None:
                return None
            files = _Files.of(meta)
        except Exception:  # any damage to an entry is a miss, never the load's failure
            return None
        except pl.exceptions.PanicException:  # a corrupt parquet can panic polars' reader (a BaseException)
            return None
        try:
            changed = frozenset(_changed_owners(files))
        except IndexError:  # a damaged index into the paths (found only by using it: no pass to check them)
            return None
    _touch(path)
    return Entry(table, meta, files, changed)


def _decode(handle: BinaryIO) -> tuple[_Meta | None, pl.DataFrame]:
    """The meta and the table of an entry read from ``handle`` (the meta alone, then the table from its offset)."""
    header = handle.read(len(_MAGIC) + _LENGTH)
    if header[: len(_MAGIC)] != _MAGIC or len(header) != len(_MAGIC) + _LENGTH:
        return None, pl.DataFrame()
    length = int.from_bytes(header[len(_MAGIC) :], "little")
    if length > os.fstat(handle.fileno()).st_size - len(header):  # (a damaged length is never allocated)
        return None, pl.DataFrame()
    encoded = handle.read(length)
    if len(encoded) != length:
        return None, pl.DataFrame()
    meta = msgspec.msgpack.decode(encoded, type=_Meta)
    del encoded
    if meta.version != FORMAT_VERSION:
        return None, pl.DataFrame()
    # polars reads the parquet from where the handle stands: no copy of the whole entry in memory
    # (reading the whole entry and copying its end for polars cost 66 MiB more at 100,000 trials)
    table = pl.read_parquet(handle)
    if table.height != meta.rows or [(name, str(dtype)) for name, dtype in table.schema.items()] != [
        tuple(column) for column in meta.columns
    ]:
        return None, table  # the table is not the one the entry describes
    return meta, table


def save(
    key: str,
    table: pl.DataFrame,
    rejected: list[tuple[Rejected, str]],
    n_seen: int,
    deps: list[Dep],
    owners: list[str],
    duplicates: list[str],
    stamps: Stamps | None = None,
) -> None:
    """Store a load (``table`` with its :data:`UNIT` column) as one file; failing to write only costs the cache.

    ``deps`` (with the unit of each in ``owners``) and ``stamps`` are the files remembered.
    """
    # One file can matter to several units (a TB1 run's metadata to each of its trials); a
    # (path, unit) pair remembered twice keeps its last stamp (the stamps' pairs are unique).
    unique = dict(zip(zip((dep[0] for dep in deps), owners, strict=True), (dep[1:] for dep in deps), strict=True))
    units: dict[str, int] = {GLOBAL: 0}
    names: dict[str, int] = {}
    # (base, name, size, time, owner) columns, files and directories first: a reload stats them in
    # one pass, the few probes after
    # (machine integers, each column encoded alone at the end: 100,000 trials' 300,000 files as
    # Python integers in ten lists and their joins were the load's largest allocation after its table)
    present = tuple(array("q") for _ in range(5))
    probes = tuple(array("q") for _ in range(5))
    for (path, owner), (size, when) in unique.items():
        unit = units.setdefault(owner, len(units))
        inside = owner != GLOBAL and path.startswith(owner) and path[len(owner) : len(owner) + 1] == os.sep
        base, relative = (unit, path[len(owner) :]) if inside else (0, path)
        values = (base, names.setdefault(relative, len(names)), size, when, unit)
        for column, value in zip(present if size >= 0 else probes, values, strict=True):
            column.append(value)
    del unique
    stamped = b""
    if stamps is not None and len(stamps):
        # the stamped units follow the others, in order (none of them has files remembered in deps)
        stamped = stamps.joined_units()
        first = len(units)
        indices = range(first, first + len(stamps))
        for name, sizes, times in zip(stamps.names, stamps.sizes, stamps.times, strict=True):
            name_index = names.setdefault(os.sep + name, len(names))
            for kind, keep in _stamp_parts(sizes):
                # whole columns at a time: 100,000 trials' stamps were a Python loop of 500,000 turns
                kept = array("q", indices if keep is None else compress(indices, keep))
                columns = present if kind == "present" else probes
                columns[0].extend(kept)  # (array to array: a copy of memory, no Python integers)
                columns[1].extend(array("q", [name_index]) * len(kept))
                columns[2].extend(sizes if keep is None else compress(sizes, keep))
                columns[3].extend(times if keep is None else compress(times, keep))
                columns[4].extend(kept)
    n_present = len(present[0])
    blocks = [_int_block(first + then) for first, then in zip(present, probes, strict=True)]
    del present, probes
    meta = _Meta(
        version=FORMAT_VERSION,
        n_present=n_present,
        bases=joined(units) + (b"\0" + stamped if stamps is not None and len(stamps) else b""),
        names=joined(names),
        base=blocks[0],
        name=blocks[1],
        sizes=blocks[2],
        times=blocks[3],
        owner=blocks[4],
        rejected=[(item.path, item.reason, unit) for item, unit in rejected],
        n_seen=n_seen,
        duplicates=duplicates,
        rows=table.height,
        columns=[(name, str(dtype)) for name, dtype in table.schema.items()],
    )
    try:
        encoded = msgspec.msgpack.encode(meta)
        del meta, blocks  # (the encoded copy is all that is written)
        # written straight to the temporary file (no copy of the table in memory), then renamed
        with _atomic.atomic_path(_entry_path(key)) as temporary, open(temporary, "wb") as out:
            out.write(_MAGIC)
            out.write(len(encoded).to_bytes(_LENGTH, "little"))
            out.write(encoded)
            del encoded
            # uncompressed: decoded 4x faster, the size hardly matters; small row groups: the writer holds
            # one group at a time (a 100,000-trial table written whole took 3 times its size)
            table.write_parquet(out, compression="uncompressed", row_group_size=4096)
    except (OSError, pl.exceptions.PolarsError) as exc:  # polars reports a full disk as a ComputeError
        warn_unwritable(exc)
        return
    try:
        evict(keep=key)
    except ValueError as exc:  # a bad DEPTHLAB_CACHE_MAX_MB costs the eviction, not the load
        warnings.warn(f"the trials cache was not evicted: {exc}", UserWarning, stacklevel=3)


def _int_block(values: array) -> bytes:
    """An integer column of an entry: ``values`` (machine integers) as little-endian int64 bytes."""
    if sys.byteorder == "big":
        values = array("q", values)
        values.byteswap()
    return values.tobytes()


def _ints(block: bytes) -> Sequence[int]:
    """An integer column of an entry, read in place: each integer is made only when it is used."""
    if len(block) % 8:
        raise ValueError("an integer column of the entry is cut short")
    if sys.byteorder == "big":
        values = array("q", block)
        values.byteswap()
        return values
    return memoryview(block).cast("q")


def _stamp_parts(sizes: MutableSequence[int]) -> list[tuple[str, list[bool] | None]]:
    """Which of one name's stamps are files found ("present") and which probes, as masks (None: all of them).

    A column is most often all one kind (every result.json there, every lock.json absent, every
    reward file skipped): told by counts, with no pass in Python.
    """
    total, skipped, absent = len(sizes), sizes.count(SKIP), sizes.count(ABSENT)
    if skipped == total:
        return []
    if absent == total:
        return [("probes", None)]
    if not skipped and not absent and min(sizes) >= 0:
        return [("present", None)]
    return [("present", [size >= 0 for size in sizes]), ("probes", [size < 0 and size != SKIP for size in sizes])]


def joined(texts: Iterable[str]) -> bytes:
    """The keys (in index order) as one "\\0"-joined block of file-system bytes (no path holds a NUL)."""
    return "\0".join(texts).encode("utf-8", "surrogateescape")  # os.fsencode, without its checks


def _split(block: bytes) -> list[bytes]:
    return block.split(b"\0")


class CacheNotWrittenWarning(UserWarning):
    """The cache could not be written (a full disk, no permission): the load is whole, the next one is slower."""


def warn_unwritable(exc: BaseException) -> None:
    """Say why the cache was not written (one warning per failed write); the load itself is never affected."""
    warnings.warn(
        f"the depthlab cache at {cache_dir()} could not be written ({exc}); loads stay correct but are not sped up",
        CacheNotWrittenWarning,
        stacklevel=4,
    )


@dataclass(frozen=True)
class CacheInfo:
    """What :func:`info` reports."""

    location: Path
    entries: int
    bytes: int
    max_bytes: int
    max_age_days: int
    oldest_use: float | None  # seconds since the epoch; None when empty
    temporary_files: int = 0  # left by a write that was killed (clear removes them)
    temporary_bytes: int = 0

    def __str__(self) -> str:
        used = f"{self.bytes / 1e6:.1f} MB in {self.entries} entries"
        if self.temporary_files:
            used += f", and {self.temporary_files} temporary files of {self.temporary_bytes / 1e6:.1f} MB"
        limits = f"limits: {self.max_bytes / 1e6:.0f} MB, entries unused for {self.max_age_days} days are removed"
        return f"trials cache at {self.location}\n{used}\n{limits}"


#: Files of the per-trial trajectory cache (:mod:`depthlab.io.trajectories`) start with this; ``clear`` removes them.
PROXY_PREFIX = "proxy-"


def info() -> CacheInfo:
    """Where the cache is, how many entries it holds, how large it is, and any temporary files left over.

    Examples
    --------
    >>> info().entries >= 0
    True
    """
    folder = cache_dir()
    entries = _entries(folder)
    temporary = []
    for path in _leftovers(folder, proxy=False):
        try:
            temporary.append(path.stat().st_size)
        except OSError:
            continue
    return CacheInfo(
        location=folder,
        entries=len(entries),
        bytes=sum(size for _, size, _ in entries),
        max_bytes=max_bytes(),
        max_age_days=MAX_AGE_DAYS,
        oldest_use=min((used for _, _, used in entries), default=None),
        temporary_files=len(temporary),
        temporary_bytes=sum(temporary),
    )


def clear() -> int:
    """Remove every cache entry (and left-over temporary files); return how many entries were removed."""
    folder = cache_dir()
    entries = _entries(folder)
    for key, _, _ in entries:
        _remove(folder, key)
    for path in _leftovers(folder, proxy=True):
        try:
            path.unlink(missing_ok=True)
        except OSError:
            continue
    return len(entries)


def _leftovers(folder: Path, *, proxy: bool) -> list[Path]:
    """Temporary files (an atomic write's, or an older depthlab's) and older formats' files; with ``proxy``, the
    per-trial trajectory cache too."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = []
    for name in names:
        temporary = name.endswith(_atomic.TEMP_SUFFIX) or name.startswith((f".{_PREFIX}", f".{PROXY_PREFIX}"))
        older = name.startswith(_PREFIX) and name.endswith((".meta", ".parquet"))
        if temporary or older or (proxy and name.startswith(PROXY_PREFIX)):
            found.append(folder / name)
    return found


def max_bytes() -> int:
    """The size limit: ``$DEPTHLAB_CACHE_MAX_MB`` megabytes when set (a positive number), else :data:`MAX_MEGABYTES`."""
    text = os.environ.get("DEPTHLAB_CACHE_MAX_MB")
    if text:
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if value > 0 and value != float("inf"):
            return int(value * 1e6)
        raise ValueError(f"DEPTHLAB_CACHE_MAX_MB must be a positive number of megabytes, got {text!r}")
    return MAX_MEGABYTES * 1_000_000


def evict(keep: str | None = None, now: float | None = None) -> list[str]:
    """Remove entries unused for :data:`MAX_AGE_DAYS`, then the least recently used beyond the size limit.

    ``keep`` (the entry just written) is never removed. Returns the keys removed.
    """
    folder = cache_dir()
    now = time.time() if now is None else now
    limit = max_bytes()
    entries = sorted(_entries(folder), key=lambda item: item[2])  # least recently used first
    total = sum(size for _, size, _ in entries)
    removed = []
    for key, size, used in entries:
        if key == keep:
            continue
        if now - used > MAX_AGE_DAYS * 86400 or total > limit:
            _remove(folder, key)
            removed.append(key)
            total -= size
    return removed


def _entries(folder: Path) -> list[tuple[str, int, float]]:
    """(key, bytes, last use) of each entry; the last use is the entry's modification time."""
    entries = []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    for name in names:
        if not (name.startswith(_PREFIX) and name.endswith(_ENTRY)):
            continue
        try:
            info = os.stat(folder / name)
        except OSError:
            continue
        entries.append((name[len(_PREFIX) : -len(_ENTRY)], info.st_size, info.st_mtime))
    return entries


def _remove(folder: Path, key: str) -> None:
    try:
        (folder / f"{_PREFIX}{key}{_ENTRY}").unlink(missing_ok=True)
    except OSError:
        return


def _touch(path: Path) -> None:
    """Mark an entry as used now (eviction removes the least recently used first)."""
    try:
        os.utime(path)
    except OSError:
        return


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading when it is a regular file; anything else (a FIFO must not hang the load) is an
    OSError."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(f"{path} is not a regular file")
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


_CHANGE_TIME = attrgetter("st_ctime_ns" if POSIX else "st_mtime_ns")
_SIZE = attrgetter("st_size")


def _owners(files: _Files) -> list[str]:
    """The unit of each remembered file."""
    units = [unit.decode("utf-8", "surrogateescape") for unit in _split(files.bases)]
    return [units[index] for index in files.owner]


def _paths(files: _Files, start: int = 0, stop: int | None = None) -> Iterator[bytes]:
    """The remembered files ``start:stop``, as file-system bytes, each built as it is used (C-level maps)."""
    bases, names = _split(files.bases), _split(files.names)
    return map(
        bytes.__add__, map(bases.__getitem__, files.base[start:stop]), map(names.__getitem__, files.name[start:stop])
    )


def _changed_owners(files: _Files) -> set[str]:
    """The units with a changed, added or removed file: one stat per remembered path.

    The common case, nothing changed, is one tight pass over the files and directories that were
    there (each stat result compared and dropped at once); only when it finds a change is each
    path looked at again to name the units it belongs to.
    """
    if _all_present_unchanged(files) and not _probes_changed(files):
        return set()
    changed: set[str] = set()
    for path, size, when, owner in zip(_paths(files), files.sizes, files.times, _owners(files), strict=True):
        if dep_changed(path, size, when):
            changed.add(owner)
    return changed


# A reload's cost is one stat per remembered file (about a microsecond each, mostly the kernel's
# path walk), so the pass is kept tight. Measured and dropped: threads (os.stat releases the GIL,
# but for so short a call handing the GIL back and forth costs twice the calls) and a forked child
# statting half the files (no faster on a busy two-core machine, where the other core is taken).
def _all_present_unchanged(files: _Files) -> bool:
    present = files.n_present
    return _unchanged(_paths(files, 0, present), files.sizes[:present], files.times[:present])


def _unchanged(paths: Iterable[bytes], sizes: Sequence[int], times: Sequence[int]) -> bool:
    """One tight pass: each stat result compared and dropped at once."""
    stat = os.stat
    try:
        if POSIX:  # the attribute read inline: this loop is the whole cost of a reload
            for path, size, when in zip(paths, sizes, times, strict=True):
                info = stat(path)
                if info.st_ctime_ns != when or info.st_size != size:
                    return False
        else:
            for path, size, when in zip(paths, sizes, times, strict=True):
                info = stat(path)
                if info.st_mtime_ns != when or info.st_size != size:
                    return False
    except OSError:
        return False
    return True


def _probes_changed(files: _Files) -> bool:
    present = files.n_present
    for path, size, when in zip(_paths(files, present), files.sizes[present:], files.times[present:], strict=True):
        if size == ABSENT:  # the common probe (a results-only trial has one), checked inline
            if there(path):
                return True
            continue
        if dep_changed(path, size, when):
            return True
    return False


def dep_changed(path: str | bytes, size: int, when: int) -> bool:
    """True when the file, directory or probe remembered as ``(path, size, when)`` is not as it was.

    ``size`` is :data:`depthlab.io._files.ABSENT` for a path probed and found absent (anything
    appearing there is a change) and :data:`depthlab.io._files.BROKEN_LINK` for a dangling link
    (repairing or replacing it is a change); else a size and change time compared with ``stat``.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "result.json")
    >>> dep_changed(path, -2, 0)
    False
    >>> _ = open(path, "w").write("{}")
    >>> dep_changed(path, -2, 0)
    True
    """
    if size == ABSENT:
        return there(path)  # something (even a dangling link) has appeared where nothing was
    try:
        info = os.stat(path)
    except OSError:
        return size != BROKEN_LINK or _link_time(path) != when
    # (a dangling link that now resolves has been repaired)
    return size == BROKEN_LINK or _CHANGE_TIME(info) != when or info.st_size != size


def _link_time(path: str | bytes) -> int | None:
    try:
        return _CHANGE_TIME(os.lstat(path))
    except OSError:
        return None
