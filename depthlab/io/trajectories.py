"""Reading trajectories in batch: one value per trial directory, computed in worker processes and cached.

A measure that reads whole trajectories (the depth proxy of :mod:`depthlab.measures.proxy`)
hands this module a *pure* function of the turns, ``measure(given, turns) -> int``; this module
does everything that touches files: finding each trial's trajectory, reading it
(:func:`depthlab.io.atif.trial_turns`, outputs whole), running the measure in forked worker
processes when there are many trials, and keeping one result per trial directory in a cache
file (``proxy-<tag>.msgpack`` under :func:`depthlab.io.cache.cache_dir`) that is reused while
no file or directory the result was read from changed (the trials cache's own test,
:func:`depthlab.io.cache.dep_changed`).

A trajectory larger than the *budget* (``max_bytes``, default :data:`TRAJECTORY_BUDGET_BYTES`)
is not read: its value is null with the reason, so one pathological file (hundreds of
megabytes of distinct identifiers) costs neither the memory nor the time of the batch.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from itertools import repeat
from multiprocessing import get_context
from typing import Final

import msgspec

from depthlab import _atomic
from depthlab.io import cache as _cache
from depthlab.io._errors import LoadError, Reject
from depthlab.io._files import ABSENT, Dep, changed_ns
from depthlab.io.atif import trial_turns

#: One turn as a measure receives it: (message, commands, observation), each None when not recorded.
Turn = tuple["str | None", "str | None", "str | None"]
#: A measure: the text given before the first turn and the turns, to one integer.
Measure = Callable[["str | None", Sequence[Turn]], int]

#: Largest trajectory (its files together, in bytes) a batch reads by default; past it the value is null.
TRAJECTORY_BUDGET_BYTES: Final[int] = 32 * 1024 * 1024

# Below this many trajectories a process pool costs more than it saves.
_PARALLEL_MIN = 64
_FULL = sys.maxsize  # outputs are read whole


class TrajectoryResult(msgspec.Struct, array_like=True):
    """What one trial directory gave: its value, or why it has none, and the files it was read from.

    Attributes
    ----------
    paths, sizes, mtimes : list
        The files and directories read (``mtimes`` holds change times, see
        :func:`depthlab.io._files.changed_ns`), checked before a cached result is reused.
    n_turns : int or None
        Turns of the trajectory read.
    value : int or None
        The measure's value; None when the trajectory could not be read.
    rejected : tuple of (path, reason) or None
        Why there is no value.
    """

    paths: list[str]
    sizes: list[int]
    mtimes: list[int]
    n_turns: int | None
    value: int | None
    rejected: tuple[str, str] | None


#: The result of a row with no trial directory.
NO_SOURCE: Final[TrajectoryResult] = TrajectoryResult(
    [], [], [], None, None, ("<no source>", "the trials table gives no source")
)


def trial_dir(source: str) -> str:
    """The trial directory of a trials-table ``source`` (a ``result.json`` path, or the directory itself).

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> trial_dir(folder) == folder == trial_dir(folder + "/result.json")
    True
    """
    return source if os.path.isdir(source) else os.path.dirname(source)


def read_one(folder: str | os.PathLike[str], measure: Measure) -> int:
    """The measure of one trial directory's trajectory (no cache, no budget).

    Raises
    ------
    LoadError
        When the trial has no readable trajectory (the message names the path and the reason).
    """
    try:
        given, rows = trial_turns(os.fspath(folder), _FULL, [])
    except Reject as exc:
        raise LoadError(f"{exc.path}: {exc.reason}") from None
    return measure(given, _turns(rows))


def read_many(
    folders: Iterable[str],
    measure: Measure,
    *,
    tag: str,
    cache: bool = True,
    max_bytes: int = TRAJECTORY_BUDGET_BYTES,
) -> dict[str, TrajectoryResult]:
    """The measure of each trial directory, reusing cached results whose files did not change.

    Parameters
    ----------
    folders : iterable of str
        Trial directories (repeats are read once).
    measure : callable
        ``measure(given, turns) -> int``, pure; it must be picklable by reference (a module-level
        function or a :func:`functools.partial` of one) to run in worker processes.
    tag : str
        Names the measure and its version in the cache (``proxy-<tag>.msgpack``): a new version
        of the rule must use a new tag.
    cache : bool, default True
        Reuse and store results.
    max_bytes : int
        The budget: a trial whose trajectory files are larger together gets no value, with the reason.

    Returns
    -------
    dict of str to TrajectoryResult
        One entry per distinct folder.
    """
    unique = list(dict.fromkeys(folders))
    tag = f"{tag}-budget{max_bytes}" if max_bytes != TRAJECTORY_BUDGET_BYTES else tag
    stored = _load_cache(tag) if cache else {}
    known = {folder: stored[folder] for folder in unique if folder in stored and _still_valid(stored[folder])}
    todo = [folder for folder in unique if folder not in known]
    if todo:
        known.update(zip(todo, _compute_all(todo, measure, max_bytes), strict=True))
        if cache:
            stored.update((folder, known[folder]) for folder in todo)
            _save_cache(stored, tag)
    return known


def _turns(rows: list[dict]) -> list[Turn]:
    return [(row.get("message"), row.get("commands"), row.get("observation")) for row in rows]


def _cache_path(tag: str) -> str:
    return os.path.join(_cache.cache_dir(), f"{_cache.PROXY_PREFIX}{tag}.msgpack")


def _load_cache(tag: str) -> dict[str, TrajectoryResult]:
    try:
        with open(_cache_path(tag), "rb") as handle:
            return msgspec.msgpack.decode(handle.read(), type=dict[str, TrajectoryResult])
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return {}


def _save_cache(entries: dict[str, TrajectoryResult], tag: str) -> None:
    """Write the cache atomically; failing to write only costs the cache (one warning)."""
    try:
        _atomic.write_bytes(_cache_path(tag), msgspec.msgpack.encode(entries))
    except OSError as exc:
        _cache.warn_unwritable(exc)


def _still_valid(entry: TrajectoryResult) -> bool:
    """True when no file or directory the entry was read from changed."""
    return not any(
        _cache.dep_changed(path, size, when)
        for path, size, when in zip(entry.paths, entry.sizes, entry.mtimes, strict=True)
    )


def _over_budget(size: int, budget: int) -> str:
    return (
        f"trajectory of {size} bytes is past the budget of {budget} bytes for reading whole trajectories "
        "(raise max_trajectory_bytes to read it)"
    )


def _compute(folder: str, measure: Measure, budget: int) -> TrajectoryResult:
    deps: list[Dep] = []
    for listed in (os.path.join(folder, "agent"), os.path.join(folder, "agent-logs")):
        try:
            info = os.stat(listed)  # its change time moves when episode dirs are added or removed
        except OSError:
            deps.append((listed, ABSENT, 0))
        else:
            deps.append((listed, info.st_size, changed_ns(info)))
    listed_dirs = len(deps)
    n_turns = value = rejected = None
    main = os.path.join(folder, "agent", "trajectory.json")
    try:
        size = os.stat(main).st_size
    except OSError:
        size = 0
    if size > budget:  # refused from its size alone: not a byte is read
        try:
            info = os.stat(main)
            deps.append((main, info.st_size, changed_ns(info)))
        except OSError:
            deps.append((main, ABSENT, 0))
        rejected = (main, _over_budget(size, budget))
    else:
        try:
            given, rows = trial_turns(folder, _FULL, deps)
            total = sum(dep[1] for dep in deps[listed_dirs:] if dep[1] > 0)
            if total > budget:  # continuations or episode files that add up past it
                rejected = (folder, _over_budget(total, budget))
            else:
                n_turns, value = len(rows), measure(given, _turns(rows))
        except Reject as exc:
            rejected = (exc.path, exc.reason)
        except RecursionError:
            rejected = (folder, "trajectory nested too deeply")
    return TrajectoryResult([d[0] for d in deps], [d[1] for d in deps], [d[2] for d in deps], n_turns, value, rejected)


def _compute_chunk(folders: list[str], measure: Measure, budget: int) -> list[TrajectoryResult]:
    return [_compute(folder, measure, budget) for folder in folders]


def _compute_all(folders: list[str], measure: Measure, budget: int) -> list[TrajectoryResult]:
    workers = os.cpu_count() or 1
    if len(folders) >= _PARALLEL_MIN and workers > 1 and sys.platform == "linux":
        # fork: workers start at once and never re-import __main__; they only parse JSON, never polars
        size = max(8, len(folders) // (workers * 8))
        chunks = [folders[start : start + size] for start in range(0, len(folders), size)]
        try:
            with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("fork")) as pool:
                results = pool.map(_compute_chunk, chunks, repeat(measure), repeat(budget))
                return [entry for chunk in results for entry in chunk]
        except BrokenProcessPool:
            warnings.warn(
                "a worker reading trajectories died (killed, out of memory?); reading them in this process",
                RuntimeWarning,
                stacklevel=3,
            )
    return _compute_chunk(folders, measure, budget)
