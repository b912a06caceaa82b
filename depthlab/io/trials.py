"""``read_trials`` / ``load_trials``: run logs on disk to the trials table."""

from __future__ import annotations

import gc
import os
import pickle
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from itertools import chain, repeat
from multiprocessing import get_context
from multiprocessing.context import BaseContext

import msgspec
import polars as pl

from depthlab import schema
from depthlab._checks import check_bool, check_choice, check_text
from depthlab.io import _fastresults, harbor, harbor_versions, tb1
from depthlab.io import cache as _cache
from depthlab.io._discover import Found, discover_more, discover_stream
from depthlab.io._errors import (
    DuplicateTrialsWarning,
    FieldNote,
    FieldNotesWarning,
    LoadError,
    Reject,
    Rejected,
    RejectedFilesWarning,
    notes_text,
    warning_text,
)
from depthlab.io._files import Dep, collection_paused
from depthlab.io._rows import NOTES, ROW_SCHEMA, TIMES, shown
from depthlab.io.status import STATUS_RULES, CapRule, stated_cap

PathLike = str | os.PathLike[str]
Progress = Callable[[int, int], None]

# Below this many trials a process pool costs more than it saves.
_PARALLEL_MIN_UNITS = 400
# Rows are turned into columns this many at a time, so a load holds the table and one batch of rows.
_FRAME_ROWS = 8192
_HARBOR, _TB1 = 0, 1
_GROUP = ["dataset", "task", "agent", "model", "cap"]


@dataclass(frozen=True)
class TrialLoad:
    """The result of :func:`read_trials`.

    Attributes
    ----------
    trials : polars.DataFrame
        The trials table (``depthlab.schema.TRIALS``).
    rejected : list of Rejected
        Every trial (or run file) that could not be read, with the reason.
    n_seen : int
        Trials seen: trial directories, trial files, entries of run-level and job-level files
        (and such files that could not be read at all), each time it was reached.
    duplicates : list of str
        Where a trial was reached again and left out: a trial directory or file reached twice
        (overlapping paths), or a row whose trial (same trial id; without one, same job,
        trial name, task and start) was already loaded from a file whose path sorts first.
    notes : list of FieldNote
        Fields of loaded trials set to null because their value could not be held (or, for
        ``reward``, taken from the reward file because ``verifier_result`` was null), each with
        the trial's file and the reason; :meth:`notes_by_field` groups them.

    Notes
    -----
    The counts reconcile: ``n_seen == trials.height + len(rejected) + len(duplicates)``.
    """

    trials: pl.DataFrame
    rejected: list[Rejected]
    n_seen: int
    duplicates: list[str] = field(default_factory=list)
    notes: list[FieldNote] = field(default_factory=list)

    def notes_by_field(self) -> dict[str, list[FieldNote]]:
        """The field notes grouped by field, in order of first appearance (one warning line each)."""
        grouped: dict[str, list[FieldNote]] = {}
        for item in self.notes:
            grouped.setdefault(item.field, []).append(item)
        return grouped

    def summary(self) -> str:
        """One line: trials loaded by status, rejected, duplicates collapsed, seen.

        Examples
        --------
        >>> from depthlab import schema
        >>> TrialLoad(schema.empty("trials"), [], 0).summary()
        'loaded 0 trials (pass 0, fail 0, invalid 0); rejected 0; duplicates collapsed 0; seen 0'
        """
        counts = dict(self.trials.group_by("status").len().iter_rows()) if self.trials.height else {}
        by_status = ", ".join(f"{status} {counts.get(status, 0)}" for status in schema.STATUSES)
        text = (
            f"loaded {self.trials.height} trials ({by_status}); rejected {len(self.rejected)}; "
            f"duplicates collapsed {len(self.duplicates)}; seen {self.n_seen}"
        )
        if self.notes:
            by_field = ", ".join(f"{name} {len(items)}" for name, items in self.notes_by_field().items())
            text += f"; field notes {len(self.notes)} ({by_field})"
        flagged = self.trials.height - self.trials["version_note"].null_count() if self.trials.height else 0
        if flagged:
            text += f"; multi-step trials run before Harbor isolated its steps {flagged} (see version_note)"
        return text


def read_trials(
    paths: PathLike | Sequence[PathLike],
    *,
    dataset: str | None = None,
    status_rule: str = "leaderboard",
    strict: bool = False,
    cache: bool = True,
    cap_rule: str | CapRule | None = None,
    progress: Progress | None = None,
    follow_links: bool = False,
    include_leaky_steps: bool = False,
) -> TrialLoad:
    """Load every trial found under ``paths`` into the trials table, with what was rejected.

    Parameters
    ----------
    paths : path or sequence of paths
        Any mix of Harbor jobs roots, job dirs, trial dirs, TB2 leaderboard trees
        (submission/job/trial), TB1 run dirs, TB1 leaderboard trees, or single
        ``result.json`` / ``results.json`` files. Directories are searched recursively.
    dataset : str, optional
        Tag for every row. By default each row gets the dataset its log names (Harbor's
        trial ``source``, TB1's ``run_metadata.dataset_name``), else the name of the path
        argument it was found under.
    status_rule : {"leaderboard", "all"}
        ``"leaderboard"``: a trial with no exception or with AgentTimeoutError,
        VerifierTimeoutError, RewardFileNotFoundError, PermissionError or
        NonZeroAgentExitCodeError is valid (missing reward = 0); any other exception makes
        it ``invalid``. ``"all"``: every trial is valid, missing reward = 0. A valid trial
        passes when its reward is at least 1. TB1 trials are never invalid (TB1's
        leaderboard counts every trial).
    strict : bool
        Raise :class:`LoadError` on the first rejected file instead of collecting it.
    cache : bool
        Use the parquet cache (:mod:`depthlab.io.cache`): an unchanged tree is returned
        without parsing; after a change only new or changed trials are parsed again.
    cap_rule : {"stated_cap", "turn_limit"} or callable, optional
        Decides ``cap``, the turn cap *stated to the agent*, as opposed to ``turn_limit``,
        the limit the harness enforced (``max_turns``, ``max_episodes``, ``episodes``,
        ``max_steps`` in ``config.agent.kwargs``). Default (``None`` = ``"stated_cap"``):
        ``cap = config.agent.kwargs["stated_cap"]`` when present (depthlab's runner and
        simulator write it, with ``max_turns`` = the cap), else null: a harness safety
        limit such as TB2's 200 episodes is not a stated cap. ``"turn_limit"`` treats the
        enforced limit as the cap. A callable ``(trial_config: dict) -> int | None``
        receives the trial's ``config`` (TB1: ``{"agent": {"name", "model_name",
        "kwargs"}}``); loads with a callable are not cached, and use one process unless the
        callable can be pickled.
    progress : callable, optional
        Called as ``progress(done, total)`` while trials are parsed; ``total`` is the number
        found so far (a large tree is parsed while it is still being walked).
    follow_links : bool, default False
        Follow symbolic links to directories outside ``paths`` (by default such a link is a
        rejection naming it and its target, so a link to ``/`` does not walk the whole
        filesystem). Links inside ``paths`` are always followed; link loops always end.
    include_leaky_steps : bool, default False
        Keep the status of multi-step trials a Harbor older than 0.24 ran (before it emptied ``/tests`` and
        ``/logs/verifier`` between steps; :mod:`depthlab.io.harbor_versions`). By default they are
        ``invalid``, so D leaves them out; either way their ``version_note`` says why.

    Returns
    -------
    TrialLoad
        ``trials`` (schema.TRIALS; ``attempt`` rebuilt from start-time order within
        (dataset, task, agent, model, cap): runs/jobs by their first start, then TB1's
        ``N`` of ``N-of-M``, then the trial's own start), ``rejected``, ``duplicates`` and
        ``n_seen``. Any failure to read what decides a trial's status (unreadable, not a
        regular file, larger than :data:`depthlab.io.MAX_FILE_BYTES`, not JSON or nested too
        deeply, a reward that is not a finite number, a stated cap or turn limit out of range,
        a task name that names nothing) is a rejection of that trial with its path and reason.
        A value that only describes the run (tokens, cost, times, durations, turns counted,
        agent and model names) that its column cannot hold is null instead, with a field note
        in ``notes``; ``strict=True`` raises on the first rejection, else on the first field's
        notes. A trial reached twice is loaded once: the copy whose file path sorts first is
        kept, the others are listed in ``duplicates``.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> trial = pathlib.Path(tempfile.mkdtemp()) / "job" / "hello__abc1234"
    >>> trial.mkdir(parents=True)
    >>> _ = (trial / "result.json").write_text(json.dumps({
    ...     "task_name": "hello", "trial_name": "hello__abc1234", "source": "demo",
    ...     "config": {"agent": {"name": "terminus-2", "model_name": "openai/gpt-5",
    ...                          "kwargs": {"stated_cap": 5, "max_turns": 5}}},
    ...     "agent_result": {"metadata": {"n_episodes": 3}},
    ...     "verifier_result": {"rewards": {"reward": 1.0}}}))
    >>> load = read_trials(trial.parent, cache=False)
    >>> load.trials.select("task", "cap", "turn_limit", "n_turns", "status").row(0)
    ('hello', 5, 5, 3, 'pass')
    >>> load.n_seen == load.trials.height + len(load.rejected) + len(load.duplicates)
    True
    """
    roots = _roots(paths)
    rule = _cap_rule(cap_rule)
    flags = (("strict", strict), ("cache", cache), ("follow_links", follow_links))
    for name, value in (*flags, ("include_leaky_steps", include_leaky_steps)):
        check_bool(value, name, "read_trials")
    check_choice(status_rule, "status_rule", "read_trials", STATUS_RULES)
    check_text(dataset, "dataset", "read_trials", optional=True)
    options = harbor.Options(dataset=dataset, status_rule=status_rule, cap_rule=rule)

    key = entry = None
    if cache and isinstance(rule, str):
        settings = {"dataset": dataset, "status_rule": status_rule, "cap_rule": rule}
        if follow_links:  # (only when set, so the keys of every other load stay as they were)
            settings["follow_links"] = "yes"
        key = _cache.cache_key(roots, settings)
        entry = _cache.load(key)
        if entry is not None and entry.unchanged:
            rejected = [item for item, _ in entry.rejected]
            if strict and rejected:
                raise LoadError(str(rejected[0]))
            kept = entry.kept()
            return _finish(kept, rejected, entry.n_seen, entry.duplicates, strict, include_leaky_steps)

    assembly = _Assembly(strict)
    with collection_paused():
        _parse(roots, follow_links, options, entry, assembly, progress)
    unordered, dropped = _collapse(_frame(assembly, entry))
    handed = [unordered]
    del unordered  # (so the unordered table is freed column by column as it is ordered)
    trials = _table(handed)
    duplicates = assembly.duplicates + dropped["source"].to_list()
    rejected = [item for item, _ in assembly.rejected]
    if key is not None:
        stored = pl.concat([trials, dropped], how="diagonal_relaxed") if dropped.height else trials
        _cache.save(
            key, stored, assembly.rejected, assembly.n_seen, assembly.deps, assembly.owners, duplicates, assembly.stamps
        )
    return _finish(trials, rejected, assembly.n_seen, duplicates, strict, include_leaky_steps)


def _worker_start() -> None:
    """A worker parses with the collector off: its passes would also copy every page it shares with this process."""
    gc.disable()


def _finish(
    table: pl.DataFrame,
    rejected: list[Rejected],
    n_seen: int,
    duplicates: list[str],
    strict: bool,
    include_leaky_steps: bool = False,
) -> TrialLoad:
    """The load, with what each job's Harbor version means (its files read once per load, never cached: a
    job's lock is no trial's file) and the field notes read from the table's notes column (``strict``: the
    first field's raises)."""
    table = harbor_versions.apply_versions(table, include_leaky_steps=include_leaky_steps)
    noted = None
    if NOTES in table.columns and table[NOTES].null_count() < table.height:  # (a count polars keeps: no scan)
        noted = table.filter(pl.col(NOTES).is_not_null()).select("source", NOTES)
    notes = []
    if noted is not None and noted.height:
        for source, text in noted.iter_rows():
            for line in text.split("\n"):
                name, _, reason = line.partition(": ")
                notes.append(FieldNote(source, name, reason))
    load = TrialLoad(schema.conform(table, "trials"), rejected, n_seen, duplicates, notes)
    if strict and notes:
        raise LoadError(notes_text(next(iter(load.notes_by_field().values()))))
    return load


def load_trials(
    paths: PathLike | Sequence[PathLike],
    *,
    dataset: str | None = None,
    status_rule: str = "leaderboard",
    strict: bool = False,
    cache: bool = True,
    cap_rule: str | CapRule | None = None,
    follow_links: bool = False,
    include_leaky_steps: bool = False,
) -> pl.DataFrame:
    """The trials table of :func:`read_trials`, warning when anything was rejected.

    Parameters are those of :func:`read_trials`. A :class:`RejectedFilesWarning` gives the
    number of rejected trials and the first few paths with reasons, a
    :class:`DuplicateTrialsWarning` the number of trials reached twice and loaded once; use
    :func:`read_trials` for the full lists.

    Examples
    --------
    >>> import tempfile
    >>> load_trials(tempfile.mkdtemp(), cache=False).height
    0
    """
    load = read_trials(
        paths,
        dataset=dataset,
        status_rule=status_rule,
        strict=strict,
        cache=cache,
        cap_rule=cap_rule,
        follow_links=follow_links,
        include_leaky_steps=include_leaky_steps,
    )
    if load.rejected:
        warnings.warn(warning_text(load.rejected, "trials"), RejectedFilesWarning, stacklevel=2)
    for notes in load.notes_by_field().values():
        warnings.warn(notes_text(notes), FieldNotesWarning, stacklevel=2)
    if load.duplicates:
        shown = "; ".join(load.duplicates[:3]) + (
            f" (and {len(load.duplicates) - 3} more)" if len(load.duplicates) > 3 else ""
        )
        text = f"{len(load.duplicates)} trials reached twice were loaded once; left out: {shown}"
        warnings.warn(text, DuplicateTrialsWarning, stacklevel=2)
    return load.trials


def _roots(paths: PathLike | Sequence[PathLike]) -> list[str]:
    items = [paths] if isinstance(paths, str | os.PathLike) else paths
    if not isinstance(items, Sequence) or isinstance(items, bytes) or not items:
        raise ValueError(f"The 'paths' parameter must be a path or a non-empty sequence of paths, got {paths!r}")
    roots = []
    for item in items:
        if not isinstance(item, str | os.PathLike):
            raise ValueError(f"The 'paths' parameter must hold str or os.PathLike items, got {item!r}")
        path = os.path.abspath(os.fspath(item))
        if not os.path.exists(path):
            raise ValueError(f"The 'paths' parameter names a path that does not exist: {os.fspath(item)!r}")
        roots.append(path)
    return roots


def _cap_rule(cap_rule: str | CapRule | None) -> str | CapRule:
    if cap_rule is None or cap_rule == "stated_cap" or cap_rule is stated_cap:
        return "stated_cap"
    if cap_rule == "turn_limit" or callable(cap_rule):
        return cap_rule
    raise ValueError(
        f"The 'cap_rule' parameter of read_trials must be 'stated_cap', 'turn_limit' or a callable, got {cap_rule!r}"
    )


# One parsed unit: its rows (several for a job-level file with embedded trials), its rejections,
# whether it has to be walked instead (a job's sub-directory without result.json), and the
# files it depends on.
_UnitResult = tuple[int, list[Rejected], bool, list[Dep]]
# A parsed chunk of units: (index in the chunk, its result) of each unit the careful path read, the
# files of the units the fast path read (each gave one row and nothing else), and the rows of the
# whole chunk as columns (ROW_SCHEMA and the unit), built in the worker so the parent only extends lists.
_ChunkResult = tuple[list[tuple[int, _UnitResult]], _cache.Stamps, dict[str, list]]


@dataclass
class _Assembly:
    """Everything a load collects, with the unit (cache.GLOBAL for the walk) each part belongs to."""

    strict: bool
    columns: dict[str, list] = field(default_factory=lambda: {name: [] for name in [*ROW_SCHEMA, _cache.UNIT]})
    reused: set[str] = field(default_factory=set)
    rejected: list[tuple[Rejected, str]] = field(default_factory=list)
    deps: list[Dep] = field(default_factory=list)
    owners: list[str] = field(default_factory=list)  # the unit of each of deps
    stamps: _cache.Stamps = field(default_factory=lambda: _fastresults.stamps(compact=True))  # fast trials' files
    duplicates: list[str] = field(default_factory=list)
    n_seen: int = 0

    frames: list[pl.DataFrame] = field(default_factory=list)

    def add_row(self, row: dict, unit: str) -> None:
        self.add_columns(_columns([row], unit))

    def add_columns(self, columns: dict[str, list]) -> None:
        for name, values in self.columns.items():
            values.extend(columns[name])
        self.n_seen += len(columns[_cache.UNIT])
        if len(self.columns[_cache.UNIT]) >= _FRAME_ROWS:
            self.frames.append(self.flush())

    def flush(self) -> pl.DataFrame:
        """The rows added since the last flush as one frame (Python objects are dropped as they become columns)."""
        frame = pl.DataFrame(self.columns, schema={**ROW_SCHEMA, _cache.UNIT: pl.String()})
        for values in self.columns.values():
            values.clear()
        return frame.with_columns(pl.col(name).cast(schema.TRIALS[name]) for name in TIMES)

    def add_rejected(self, item: Rejected, unit: str) -> None:
        item = Rejected(shown(item.path), item.reason)  # a file name that is not UTF-8 is shown escaped
        if self.strict:
            raise LoadError(str(item))
        self.rejected.append((item, unit))
        self.n_seen += 1

    def add_duplicate(self, path: str) -> None:
        self.duplicates.append(shown(path))
        self.n_seen += 1

    def add_deps(self, deps: list[Dep], unit: str) -> None:
        self.deps.extend(deps)
        self.owners.extend(repeat(unit, len(deps)))


def _parse(
    roots: list[str],
    follow_links: bool,
    options: harbor.Options,
    entry: _cache.Entry | None,
    assembly: _Assembly,
    progress: Progress | None,
) -> None:
    """Parse every unit found under ``roots``, starting while the walk still goes on."""
    found = Found()
    stream = discover_stream(roots, found, follow_links)
    # one path walked reaches each trial once (a folder is listed once, a link to a trial found as
    # itself); only paths that overlap reach a trial again, by the same path: then they are kept
    reached: set[str] | None = set() if len(roots) > 1 else None
    while True:
        walk = []
        units = _new_units(stream, found, entry, assembly, reached)
        for chunk, (results, stamps, columns) in _run_units(units, options, assembly.strict, progress):
            assembly.stamps.extend(stamps)
            for index, (n_rows, rejections, walk_instead, deps) in results:
                _, path, fallback = chunk[index]
                if walk_instead:
                    walk.append((path, fallback))
                    assembly.add_deps(deps, _cache.GLOBAL)
                    continue
                owner = shown(path) if n_rows or rejections else _cache.GLOBAL
                assembly.add_deps(deps, owner)
                for rejection in rejections:
                    assembly.add_rejected(rejection, owner)
            assembly.add_columns(columns)
        _parse_run_files(found, options, assembly)
        if not walk:
            return
        found = discover_more(walk, found.visited, found.inside)
        stream = iter([found])


def _new_units(
    stream: Iterator[Found], found: Found, entry: _cache.Entry | None, assembly: _Assembly, reached: set[str] | None
) -> Iterator[list[tuple[int, str, str]]]:
    """The units to parse, a batch for each step of the walk.

    A trial reached again is a duplicate; one the cache holds unchanged is reused.
    """
    tb1_taken = 0  # (TB1 trial files stay in found: its run files are read knowing them)
    for _ in chain(stream, [found]):  # (once more at the end: what the walk found after its last trials)
        for item in found.rejected:
            assembly.add_rejected(item, _cache.GLOBAL)
        found.rejected = []
        assembly.add_deps(found.deps, _cache.GLOBAL)
        found.deps = []
        units = [(_HARBOR, path, fallback) for path, fallback in found.harbor_trials]
        units += [(_TB1, path, fallback) for path, fallback in found.tb1_trials[tb1_taken:]]
        tb1_taken = len(found.tb1_trials)
        found.harbor_trials = []  # (the units hold them now)
        if reached is None and entry is None:
            todo = units
        else:
            todo = []
            for unit in units:
                if reached is not None and unit[1] in reached:  # overlapping paths: the same trial again
                    assembly.add_duplicate(unit[1])
                    continue
                if reached is not None:
                    reached.add(unit[1])
                if entry is not None and entry.reusable(shown(unit[1])):
                    assembly.reused.add(shown(unit[1]))
                else:
                    todo.append(unit)
        if todo:
            yield todo


def _parse_run_files(found: Found, options: harbor.Options, assembly: _Assembly) -> None:
    """Run-level and job-level files are few: read them here, knowing which trials have their own file."""
    deps: list[Dep] = []
    tb1_files = {path for path, _ in found.tb1_trials}
    for path, fallback in found.tb1_runs:
        try:
            parsed = tb1.run_file_rows(path, tb1_files, options, fallback, deps)
            if parsed is None:  # a trial file with an unusual directory name
                row = tb1.trial_file_row(path, options, fallback, deps, {})
                parsed = ([row] if row is not None else [], [])
        except Exception as exc:  # one file's failure is its rejection, never the load's
            assembly.add_rejected(_rejection(exc, path), _cache.GLOBAL)
            continue
        _add_parsed(assembly, *parsed)
    for path, names, fallback in found.harbor_jobs:
        try:
            parsed = harbor.job_embedded_rows(path, set(names), options, fallback, deps)
        except Exception as exc:  # the same: a rejection
            assembly.add_rejected(_rejection(exc, path), _cache.GLOBAL)
            continue
        _add_parsed(assembly, *parsed)
    assembly.add_deps(deps, _cache.GLOBAL)


def _add_parsed(assembly: _Assembly, rows: list[dict], rejected: list[Rejected]) -> None:
    for item in rejected:
        assembly.add_rejected(item, _cache.GLOBAL)
    for row in rows:
        assembly.add_row(row, _cache.GLOBAL)


def _rejection(exc: Exception, path: str) -> Rejected:
    """A parser's reason, or, for a failure no parser foresaw, its type and message (never a crash of the load)."""
    if isinstance(exc, Reject):
        return Rejected(exc.path, exc.reason)
    return Rejected(path, f"could not be read: {type(exc).__name__}: {exc}")


class _Chunks:
    """The units to parse, cut into chunks as the walk finds them: small at first (a worker starts at once)."""

    def __init__(self, batches: Iterator[list[tuple[int, str, str]]]) -> None:
        self.batches = batches
        self.buffer: list[tuple[int, str, str]] = []
        self.found = 0  # units found so far (the total, once the walk has ended)
        self.made = 0
        self.ended = False

    def fill(self, count: int) -> None:
        """Walk on until ``count`` units wait here, or the walk ends."""
        while len(self.buffer) < count and not self.ended:
            batch = next(self.batches, None)
            if batch is None:
                self.ended = True
            else:
                self.buffer += batch
                self.found += len(batch)

    def next(self, size: int | None = None) -> list[tuple[int, str, str]] | None:
        """The next chunk (``size`` units, or the next of the growing sizes), None once every unit was taken."""
        if size is None:
            size = min(_CHUNK_MAX, _CHUNK_FIRST << min(self.made, 8))
        self.fill(size)
        if not self.buffer:
            return None
        chunk, self.buffer = self.buffer[:size], self.buffer[size:]
        self.made += 1
        return chunk

    def put_back(self, chunks: list[list[tuple[int, str, str]]]) -> None:
        self.buffer = [unit for chunk in chunks for unit in chunk] + self.buffer


# A worker's first chunk is small, so it starts while this process is still walking; chunks double
# up to the largest, whose hand-off costs little beside its parse.
_CHUNK_FIRST = 256
_CHUNK_MAX = 2048


def _run_units(
    batches: Iterator[list[tuple[int, str, str]]], options: harbor.Options, strict: bool, progress: Progress | None
) -> Iterator[tuple[list[tuple[int, str, str]], _ChunkResult]]:
    """Each unit's result in order, as soon as its chunk is parsed (nothing waits for the whole load in memory).

    The walk and the parse go on together: a large load is shared between this process and
    ``cores - 1`` worker processes, the workers taking chunks as the walk finds them, and this
    process walking on or parsing a chunk itself whenever the one due is not ready yet (its own
    chunks cost no hand-off), so every core works and the units and chunks held at once stay few.
    """
    chunks = _Chunks(batches)
    chunks.fill(_PARALLEL_MIN_UNITS)
    context = _pool_context()
    workers = (os.cpu_count() or 1) - 1
    large = chunks.found >= _PARALLEL_MIN_UNITS
    if large and workers > 0 and context is not None and not strict and _picklable(options):
        try:
            with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_worker_start) as pool:
                yield from _shared(chunks, options, pool, 3 * workers, progress)
            return
        except BrokenProcessPool:
            pass  # a worker died (killed, out of memory): the units not yet yielded are parsed here
    chunks.fill(sys.maxsize)  # (one process: the walk ends first, so the chunks can be sized to the load)
    total = chunks.found
    done = total - len(chunks.buffer)  # (after a broken pool: the chunks already given)
    size = max(1, min(500, len(chunks.buffer) // 20 or 1))
    while (chunk := chunks.next(size)) is not None:
        yield chunk, _parse_chunk(chunk, options)
        done += len(chunk)
        if progress is not None:
            progress(done, total)


def _shared(
    chunks: _Chunks, options: harbor.Options, pool: ProcessPoolExecutor, in_flight: int, progress: Progress | None
) -> Iterator[tuple[list[tuple[int, str, str]], _ChunkResult]]:
    """The chunks' results in order, parsed by ``pool`` (at most ``in_flight`` at once) and by this process.

    When the pool breaks, the chunks not yet yielded go back to ``chunks`` before the error is raised.
    """
    made: dict[int, list[tuple[int, str, str]]] = {}
    pending: dict[int, Future[_ChunkResult | _Packed] | _ChunkResult] = {}
    held = 4 * in_flight  # results held at once, ready or not: a worker stuck on one file bounds them
    due = done = 0

    def take() -> int | None:
        chunk = chunks.next()
        if chunk is None:
            return None
        index = chunks.made - 1
        made[index] = chunk
        return index

    try:
        while True:
            # the worker is kept fed: a chunk it finished but that is not due yet does not count
            # (counting it starved the worker for a tenth of the load), up to a bound on results held
            while len(pending) < held and _running(pending) < in_flight:
                index = take()
                if index is None:
                    break
                pending[index] = pool.submit(_parse_chunk_packed, made[index], options)
            if due not in pending:  # (every chunk made is yielded: the next one is due)
                index = take()
                if index is None:
                    return
                pending[index] = _parse_chunk(made[index], options)
            item = pending[due]
            if isinstance(item, Future) and not item.done() and len(pending) < held:
                index = take()  # the due chunk is not ready: work meanwhile (a stuck worker: then wait)
                if index is not None:
                    pending[index] = _parse_chunk(made[index], options)
                    continue
            item = pending.pop(due)
            result = _unpacked(item.result()) if isinstance(item, Future) else item
            del item
            chunk = made.pop(due)
            due += 1
            done += len(chunk)
            if progress is not None:
                progress(done, chunks.found)
            yield chunk, result
    except BrokenProcessPool:
        chunks.put_back([made[index] for index in sorted(made)])
        raise


def _running(pending: dict[int, Future[_ChunkResult | _Packed] | _ChunkResult]) -> int:
    return sum(isinstance(item, Future) and not item.done() for item in pending.values())


def _pool_context() -> BaseContext | None:
    """Fork on Linux: workers start at once and never re-import ``__main__``.

    Spawn-style start methods re-run the caller's script (or fail from notebooks and stdin),
    so elsewhere the load stays in one process. Workers only parse JSON; they never touch
    polars, whose threads make forking unsafe only for a child that uses polars.
    """
    if sys.platform != "linux":
        return None
    return get_context("fork")


def _columns(rows: list[dict], units: str | list[str]) -> dict[str, list]:
    """Rows as columns of ROW_SCHEMA, with the unit of each (one unit for all, or one per row)."""
    columns = {name: [row[name] for row in rows] for name in ROW_SCHEMA}
    columns[_cache.UNIT] = [units] * len(rows) if isinstance(units, str) else units
    return columns


def _parse_chunk(units: list[tuple[int, str, str]], options: harbor.Options) -> _ChunkResult:
    """Parse a chunk of units: a results-only Harbor trial by the fast path, any other by the careful one."""
    results: list[tuple[int, _UnitResult]] = []
    found = _fastresults.stamps()
    rows_of_chunk: list[tuple] = []
    owners: list[str] = []
    runs: dict = {}
    jobs: dict[str, str | None] = {}
    fast = isinstance(options.cap_rule, str)
    fields = _fastresults.FIELDS
    for index, (kind, path, fallback) in enumerate(units):
        deps: list[Dep] = []
        if fast and kind == _HARBOR:
            try:
                fast_row = _fastresults.trial_row(path, options, fallback, found, jobs)
            except Exception:  # a failure the fast path did not foresee: the careful path says what it is
                fast_row = None
            if fast_row is not None:
                rows_of_chunk.append(fast_row)
                owners.append(path)  # (a path that is not UTF-8 is declined: shown(path) is path)
                continue
        try:
            if kind == _HARBOR:
                parsed = harbor.trial_dir_rows(path, options, fallback, deps)
                if parsed is None:
                    results.append((index, (0, [], True, deps)))
                    continue
                rows, rejected = parsed
            else:
                row = tb1.trial_file_row(path, options, fallback, deps, runs)
                if row is not None:
                    rows, rejected = [row], []
                else:  # named like a trial's file, but a run-level list: its entries are the trials
                    rows, rejected = tb1.run_file_rows(path, set(), options, fallback, deps) or ([], [])
        except Exception as exc:  # one trial's failure is its rejection, never the load's
            where = os.path.join(path, "result.json") if kind == _HARBOR else path
            results.append((index, (0, [_rejection(exc, where)], False, deps)))
            continue
        results.append((index, (len(rows), rejected, False, deps)))
        if rows:
            rows_of_chunk.extend(tuple(row[name] for name in fields) for row in rows)
            owners.extend(repeat(shown(path), len(rows)))
    if rows_of_chunk:
        columns = {name: list(values) for name, values in zip(fields, zip(*rows_of_chunk, strict=True), strict=True)}
    else:
        columns = {name: [] for name in fields}
    columns[_cache.UNIT] = owners
    return results, found, columns


# A worker's chunk crosses to this process as msgpack: the columns (FIELDS, then the unit) and the
# stamps; pickling the same lists cost twice the time on each side. Anything msgpack cannot carry
# (a path that is not UTF-8, shown escaped in its row but kept as it is for the cache) goes pickled.
_Packed = tuple[list[tuple[int, _UnitResult]], bytes]


def _parse_chunk_packed(units: list[tuple[int, str, str]], options: harbor.Options) -> _ChunkResult | _Packed:
    """:func:`_parse_chunk` in a worker, its columns and stamps packed for the trip back."""
    results, stamps, columns = _parse_chunk(units, options)
    try:
        packed = _PACK([*columns.values(), _cache.joined(stamps.units), *stamps.sizes, *stamps.times])
    except UnicodeEncodeError:
        return results, stamps, columns
    return results, packed


def _unpacked(result: _ChunkResult | _Packed) -> _ChunkResult:
    if len(result) == 3:
        return result
    results, packed = result
    values = _UNPACK(packed)
    names = [*_fastresults.FIELDS, _cache.UNIT]
    columns = dict(zip(names, values[: len(names)], strict=True))
    stamps = _fastresults.stamps()
    at, count = len(names) + 1, len(stamps.names)
    stamps.sizes, stamps.times = values[at : at + count], values[at + count :]
    stamps.n_blocked = len(stamps.sizes[0])
    stamps.blocks = [values[at - 1]] if stamps.n_blocked else []
    return results, stamps, columns


_PACK = msgspec.msgpack.Encoder().encode
_UNPACK = msgspec.msgpack.Decoder(list).decode


def _picklable(options: harbor.Options) -> bool:
    try:
        pickle.dumps(options)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return True


def _frame(assembly: _Assembly, entry: _cache.Entry | None) -> pl.DataFrame:
    """New rows, plus the rows of reused units taken from the cache entry."""
    fresh = pl.concat([*assembly.frames, assembly.flush()], rechunk=False) if assembly.frames else assembly.flush()
    assembly.frames.clear()
    if entry is None or not assembly.reused:
        return fresh
    old = entry.table.filter(pl.col(_cache.UNIT).is_in(list(assembly.reused))).select(fresh.columns)
    assembly.n_seen += old.height
    reused_rejected = [(item, unit) for item, unit in entry.rejected if unit in assembly.reused]
    assembly.rejected.extend(reused_rejected)
    assembly.n_seen += len(reused_rejected)
    if assembly.strict and reused_rejected:
        raise LoadError(str(reused_rejected[0][0]))
    deps, owners = entry.deps_of(assembly.reused)
    assembly.deps.extend(deps)
    assembly.owners.extend(owners)
    return pl.concat([fresh, old.cast(fresh.schema)])


def _collapse(frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split rows into the first of each trial (by source path) and the later copies of it."""
    # the copy kept is the one whose path sorts first; found per identity without sorting the whole
    # table (a sorted copy of 100,000 rows was the load's largest allocation after the table itself)
    if not frame["identity"].is_duplicated().any():  # the common case, decided without ordering anything
        return frame.with_columns(pl.lit(False).alias(_cache.DUPLICATE)), frame.clear().with_columns(
            pl.lit(False).alias(_cache.DUPLICATE)
        )
    index = pl.col("_row")
    first_index = index.sort_by(["source", "_row"]).first().over("identity")
    duplicate = pl.col("identity").is_not_null() & (index != first_index)
    flagged = frame.with_row_index("_row").with_columns(duplicate.alias(_cache.DUPLICATE)).drop("_row")
    del frame
    if not flagged[_cache.DUPLICATE].any():  # the common case: no copy of the table
        return flagged, flagged.clear()
    return flagged.filter(~pl.col(_cache.DUPLICATE)), flagged.filter(pl.col(_cache.DUPLICATE)).sort("source")


def _table(handed: list[pl.DataFrame]) -> pl.DataFrame:
    """Rebuild ``attempt`` and order the rows; keeps the extra columns (dropped by the caller).

    The table is taken out of ``handed`` and reordered one column at a time, each old column freed
    as its ordered copy is made: the load holds one table and one column, not two tables.
    """
    frame = handed.pop()
    order = _order(frame)
    columns = frame.get_columns()
    del frame
    for index, column in enumerate(columns):
        # one piece first: a gather across the load's frames (13 at 100,000 trials) took twice as long
        columns[index] = column.rechunk().gather(order)
        del column
    ordered = pl.DataFrame(columns)
    del columns
    return ordered.with_columns(attempt=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over(_GROUP))


def _order(frame: pl.DataFrame) -> pl.Series:
    """The trials table's row order: by task cell, then job (in the order of its first start), then trial."""

    # each text key as its dense rank, which orders as the text does: the sort then compares machine
    # integers (polars' encoding of the text keys for a sort by several was 49 MiB at 100,000 trials)
    def key(name: str) -> pl.Expr:
        return pl.col(name).rank("dense") if frame.schema[name] == pl.String() else pl.col(name)

    group = [key(name) for name in _GROUP]
    job_start = pl.col("started_at").min().over([*group, key("job")])
    keys = [*group, job_start, key("job"), pl.col("attempt_hint"), pl.col("started_at"), key("trial"), key("source")]
    ranked = frame.select(value.alias(f"key_{index}") for index, value in enumerate(keys))
    return ranked.select(pl.arg_sort_by(ranked.columns, nulls_last=True)).to_series()
