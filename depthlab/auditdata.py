"""The notebooks' data library: load one data source into the tables every audit notebook analyses.

:func:`audit_data` loads a data folder, the TB2 facts bundled with depthlab (``"tb2"``) or the
simulated demo (``None``, built once per generative-model version by :func:`demo_data` in the
user cache) into an :class:`AuditData`: the tasks, trials, depth and audit tables, and where they
came from (simulated or real). A notebook's findings and its "paper reports / this data gives"
table are written by :func:`depthlab.findings.record_results` (reporting sits above the data
library); ``depthlab reproduce`` (:mod:`depthlab.reproduce`) only runs the notebooks and writes the index.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

import polars as pl

from depthlab import _atomic, schema
from depthlab._checks import check_names, check_nonnegative_int, check_number, parameter_error
from depthlab._text import count
from depthlab.catalog import ordered
from depthlab.datasets import BUNDLED
from depthlab.schema import CAPS

if TYPE_CHECKING:  # pragma: no cover
    from depthlab.datasets import Audit

__all__ = [
    "BUNDLED_DATA",
    "DEMO_SCALE",
    "AuditData",
    "audit_data",
    "demo_cache_dir",
    "demo_data",
    "is_bundled",
]

#: Size of the default demo data (1.0 is about the paper's size: 734 audited tasks).
DEMO_SCALE: Final[float] = 0.5

#: Data sources that ship with depthlab: ``audit_data("tb2")`` loads the bundled TB2.0 facts
#: (the collections of :data:`depthlab.datasets.BUNDLED`, where the fact is written once).
BUNDLED_DATA: Final[tuple[str, ...]] = BUNDLED

_COMPLETE: Final[str] = ".complete"
_CACHE_VERSION: Final[int] = 2


@dataclass(frozen=True)
class AuditData:
    """The tables of one data source that every notebook and every finding analyses.

    Attributes
    ----------
    source : str
        Where the data came from, in words (a folder, the bundled TB2 facts, the simulated demo).
    simulated : bool
        True for data written by :mod:`depthlab.simulate` (the demo): its numbers are made up by
        the generative model and are never a claim about the real collections.
    tasks, trials, depth, audit : pl.DataFrame
        ``schema.TASKS``, ``schema.TRIALS`` (capped and public), ``schema.DEPTH`` and ``schema.AUDIT``.
    notes : list of str
        What the loaders said is missing (e.g. ``tb2: no capped runs: D cannot be estimated``).
    data_dir : Path or None
        The folder read (None for bundled or hand-made tables).
    """

    source: str
    simulated: bool
    tasks: pl.DataFrame
    trials: pl.DataFrame
    depth: pl.DataFrame
    audit: pl.DataFrame
    notes: list[str] = field(default_factory=list)
    data_dir: Path | None = None

    @classmethod
    def from_tables(
        cls,
        tasks: pl.DataFrame,
        trials: pl.DataFrame,
        *,
        simulated: bool,
        source: str = "tables given by the caller",
        models: Sequence[str] | None = None,
        caps: Sequence[int] = CAPS,
    ) -> AuditData:
        """Build the depth and audit tables from a tasks and a trials table (e.g. a hand-made case).

        ``simulated`` is required: the tables carry no mark of where they came from, so the caller
        says whether they are simulated, and every finding's ``data`` column repeats it (never
        "real" by default). A trial given twice (two rows with the same non-null dataset, job and
        trial) counts once: the repeats are dropped and :attr:`notes` says how many. Rows with no
        ``trial`` cannot be told apart and all count (a hand-made case repeats rows for repeated runs).
        A task given twice in ``tasks`` is an error naming it.

        Examples
        --------
        >>> import polars as pl
        >>> from depthlab import schema
        >>> tasks = schema.conform(pl.DataFrame({"dataset": "tb2", "task": ["t"], "work": [3]}), "tasks")
        >>> trials = schema.conform(pl.DataFrame({"dataset": "tb2", "task": "t", "model": "m",
        ...     "cap": [1, 2], "status": ["fail", "pass"]}), "trials")
        >>> data = AuditData.from_tables(tasks, trials, simulated=False, source="a hand-made case")
        >>> data.audit["depth"].to_list(), data.kind
        ([2], 'real')
        """
        from depthlab.measures import audit_table, estimate_depth

        function = "AuditData.from_tables"
        if not isinstance(simulated, bool):
            raise parameter_error("simulated", function, "True or False (say what the tables are)", repr(simulated))
        tasks = schema.conform(tasks, "tasks")
        twice = tasks.filter(pl.struct("dataset", "task").is_duplicated())
        if twice.height:
            shown = ", ".join(sorted({f"{d}/{t}" for d, t in twice.select("dataset", "task").rows()})[:5])
            raise parameter_error("tasks", function, "one row per (dataset, task)", f"tasks given twice: {shown}")
        trials = schema.conform(trials, "trials")
        identity = ["dataset", "job", "trial"]
        keyed = pl.col("trial").is_not_null()
        repeats = trials.filter(keyed & ~pl.struct(*identity).is_first_distinct())
        notes = []
        if repeats.height:
            trials = trials.filter(~keyed | pl.struct(*identity).is_first_distinct())
            notes.append(f"{count(repeats.height, 'trial')} given twice (same dataset, job and trial) counted once")
        depth = estimate_depth(trials.filter(pl.col("cap").is_not_null()), caps=caps, models=models)
        audit = audit_table(tasks, trials, depth=depth)
        return cls(source, simulated, tasks, trials, depth, audit, notes)

    def subset(self, collections: Sequence[str]) -> AuditData:
        """The same data restricted to ``collections`` (names not present are ignored).

        Examples
        --------
        >>> audit_data("tb2").subset(["tw"]).audit.height
        0
        """
        keep = pl.col("dataset").is_in(list(collections))
        tasks, trials, depth, audit = (t.filter(keep) for t in (self.tasks, self.trials, self.depth, self.audit))
        return AuditData(self.source, self.simulated, tasks, trials, depth, audit, list(self.notes), self.data_dir)

    @property
    def kind(self) -> str:
        """``"simulated"`` or ``"real"``: written beside every number this data gives."""
        return "simulated" if self.simulated else "real"

    @property
    def has_depth(self) -> bool:
        """True when at least one task has a pinned depth D (some capped runs exist)."""
        return self.audit.filter(pl.col("depth_status") == "solved").height > 0

    @property
    def datasets(self) -> list[str]:
        """The collections present, in the figures' order."""
        return ordered([*self.audit["dataset"].unique().to_list(), *self.trials["dataset"].unique().to_list()])

    @property
    def models(self) -> list[str]:
        """Every model with a trial, sorted."""
        return sorted(self.trials["model"].drop_nulls().unique().to_list())

    @property
    def turn_limit(self) -> int | None:
        """The largest harness turn limit of the uncapped runs (None when no run records one)."""
        limits = self.trials.filter(pl.col("cap").is_null())["turn_limit"].drop_nulls()
        return int(limits.max()) if limits.len() else None

    def needs_depth(self, what: str) -> bool:
        """True when some task has a pinned D; otherwise print one line saying ``what`` is skipped and why.

        Examples
        --------
        >>> audit_data("tb2").needs_depth("the quadrants")
        No task has a pinned depth D (no capped runs in this data): the quadrants skipped.
        False
        """
        if not self.has_depth:
            print(f"No task has a pinned depth D (no capped runs in this data): {what} skipped.")
        return self.has_depth

    def banner(self) -> str:
        """One line for the top of a notebook or an index: simulated or real, and which data."""
        if self.simulated:
            return f"SIMULATED data: {self.source}. Its numbers are made up by depthlab's generative model."
        return f"REAL data: {self.source}."

    def summary(self) -> str:
        """One paragraph: what was loaded and what is missing."""
        lines = [
            self.banner(),
            f"{self.audit.height} tasks in {len(self.datasets)} collections "
            f"({', '.join(self.datasets)}), {self.trials.height} trials "
            f"({self.trials.filter(pl.col('cap').is_not_null()).height} at stated caps), "
            f"{self.audit.filter(pl.col('depth_status') == 'solved').height} tasks with a pinned depth",
            *self.notes,
        ]
        return "\n".join(lines)


def demo_cache_dir() -> Path:
    """Where the demo data is built once and shared by every ``reproduce --out`` (``<user cache>/demo``).

    The user cache is ``$DEPTHLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/depthlab`` (``~/.cache/depthlab``).
    """
    from depthlab.io.cache import cache_dir

    return cache_dir() / "demo"


def demo_data(root: str | Path | None = None, *, scale: float = DEMO_SCALE, seed: int = 0) -> Path:
    """Build the simulated demo data under ``root`` once, and return its folder.

    The folder is ``<root>/scale<scale>-seed<seed>-model<v>`` (``v`` is
    :data:`depthlab.simulate.MODEL_VERSION`, so a changed generative model builds afresh); a
    marker file written last makes an interrupted build start over rather than be reused
    half-written.

    Parameters
    ----------
    root : str, Path or None
        Parent folder of the cached demo data; default :func:`demo_cache_dir`.
    scale : float
        Size passed to :func:`depthlab.simulate.write_runs` (1.0 is the paper's size).
    seed : int
        Seed of the simulation.

    Examples
    --------
    >>> import tempfile
    >>> folder = demo_data(tempfile.mkdtemp(), scale=0.05)  # doctest: +SKIP
    >>> sorted(p.name for p in folder.iterdir())  # doctest: +SKIP
    ['jobs', 'tasks']
    """
    scale = check_scale(scale, "demo_data")
    seed = check_seed(seed, "demo_data")
    from depthlab import simulate

    root = demo_cache_dir() if root is None else Path(root)
    folder = root / f"scale{scale:g}-seed{seed}-model{simulate.MODEL_VERSION}"
    if (folder / _COMPLETE).is_file():
        return folder
    # another process may be building the same folder: build beside it and move into place
    building = root / f".{folder.name}.{os.getpid()}"
    if building.exists():
        shutil.rmtree(building)
    building.mkdir(parents=True)
    simulate.write_runs(building, seed=seed, scale=scale)
    marker = {"simulated": True, "model_version": simulate.MODEL_VERSION, "scale": scale, "seed": seed}
    _atomic.write_text(building / _COMPLETE, json.dumps(marker) + "\n")
    if folder.exists() and not (folder / _COMPLETE).is_file():
        shutil.rmtree(folder)  # left half-written by an interrupted build
    try:
        building.rename(folder)
    except OSError:  # a concurrent build finished first: use it
        shutil.rmtree(building, ignore_errors=True)
    return folder


def is_bundled(data: object) -> bool:
    """True when ``data`` names data that ships with depthlab (:data:`BUNDLED_DATA`), not a folder.

    A bundled name wins over a folder of the same name unless that folder holds a collection:
    ``depthlab reproduce --data tb2 --out tb2`` makes a ``tb2/`` of figures, which must not hide the
    bundled TB2 facts from its own notebooks. Give such a folder as a path (``./tb2``) to read it.

    Examples
    --------
    >>> is_bundled("tb2"), is_bundled("./tb2"), is_bundled(None)
    (True, False, False)
    """
    if not isinstance(data, str) or data not in BUNDLED_DATA:
        return False
    folder = Path(data)
    return not (folder.is_dir() and _discover(folder.resolve()))


def audit_data(
    data: str | Path | None = None,
    *,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    caps: Sequence[int] = CAPS,
    scale: float = DEMO_SCALE,
    seed: int = 0,
    cache_dir: str | Path | None = None,
) -> AuditData:
    """Load a data folder, the bundled TB2 facts or the simulated demo into the tables the notebooks analyse.

    Each collection is read with :func:`depthlab.load_dataset`; the depth table comes from
    :func:`depthlab.estimate_depth` on the capped trials and the audit table from
    :func:`depthlab.audit_table`.

    Parameters
    ----------
    data : str, Path or None
        A folder holding one or more collections (``tasks/<name>/``, ``jobs/<name>/``, or a
        collection's own layout); a name in :data:`BUNDLED_DATA` (``"tb2"``: the published TB2.0
        facts that ship with depthlab, even beside a folder of that name holding no collection, see
        :func:`is_bundled`); or None for the simulated demo data (built once, see
        :func:`demo_data`).
    datasets : sequence of str, optional
        Collections to load; default every one found. An unknown name is an error listing the known ones.
    models : sequence of str, optional
        Models whose capped runs count for D; default all. A model with no trial in the data is an
        error listing the known ones.
    caps : sequence of int
        The cap ladder.
    scale, seed : float, int
        Size and seed of the demo data (only when ``data`` is None).
    cache_dir : str, Path or None
        When given, the loaded tables are kept there as Parquet, keyed by the arguments, and
        reused by later calls (``reproduce`` loads once for all notebooks).

    Returns
    -------
    AuditData

    Examples
    --------
    >>> data = audit_data("tb2")
    >>> data.kind, data.audit.height, data.has_depth
    ('real', 89, False)
    """
    function = "audit_data"
    model_list = None if models is None else check_names(models, "models", function)
    cap_list = tuple(sorted({int(c) for c in caps}))
    if isinstance(data, str) and is_bundled(data):
        names = [data] if datasets is None else check_names(datasets, "datasets", function, known=[data])
        loaded = _load_bundled(data, model_list, cap_list)
        _check_models(model_list, loaded, function)
        return loaded
    if data is None:
        data = demo_data(scale=scale, seed=seed)
    folder = Path(data).expanduser().resolve()
    if not folder.is_dir():
        expected = f"an existing folder, one of {list(BUNDLED_DATA)} (bundled) or None (the simulated demo)"
        raise parameter_error("data", function, expected, str(data))
    found = _discover(folder)
    if not found:
        expected = "a folder holding at least one collection (tasks/<name>/, jobs/<name>/ or <name>_tasks.csv)"
        raise parameter_error("data", function, expected, str(folder))
    names = found if datasets is None else check_names(datasets, "datasets", function, known=found)
    key = _cache_key(folder, names, model_list, cap_list)
    cached = _read_cache(Path(cache_dir) / key) if cache_dir is not None else None
    if cached is None:
        loaded = _load(folder, names, model_list, cap_list)
        if cache_dir is not None:
            _write_cache(Path(cache_dir) / key, loaded)
    else:
        loaded = cached
    _check_models(model_list, loaded, function)
    return loaded


# ---------------------------------------------------------------------------------------------
# loading


def _discover(folder: Path) -> list[str]:
    from depthlab.datasets import ADAPTERS

    found: set[str] = set()
    for part in ("tasks", "jobs"):
        sub = folder / part
        if sub.is_dir():
            found |= {child.name for child in sub.iterdir() if child.is_dir() and not child.name.startswith(".")}
    found |= {name for name in ADAPTERS if any(folder.glob(f"{name}_*.csv"))}
    return ordered(found)


def _is_simulated(folder: Path, models: Sequence[str]) -> bool:
    from depthlab import simulate

    marker = folder / _COMPLETE
    if marker.is_file():
        try:
            return bool(json.loads(marker.read_text() or "{}").get("simulated", True))
        except ValueError:
            return True
    # data written by `depthlab simulate` without the demo marker: every model is a simulated one
    return bool(models) and set(models) <= set(simulate.MODELS)


def _describe(folder: Path, simulated: bool) -> str:
    if not simulated:
        return f"the folder {folder}"
    marker = folder / _COMPLETE
    facts = json.loads(marker.read_text() or "{}") if marker.is_file() else {}
    if facts:
        return (
            f"the depthlab demo (generative model v{facts.get('model_version')}, scale {facts.get('scale')}, "
            f"seed {facts.get('seed')}), in {folder}"
        )
    return f"depthlab simulate output in {folder}"


def _load(folder: Path, names: Sequence[str], models: Sequence[str] | None, caps: tuple[int, ...]) -> AuditData:
    from depthlab.datasets import Audit, load_dataset

    bundle = Audit.concat([load_dataset(name, folder) for name in names])
    models_run = {m for part in (bundle.capped, bundle.public) for m in part["model"].drop_nulls().unique()}
    simulated = _is_simulated(folder, sorted(models_run))
    return _tables(bundle, _describe(folder, simulated), simulated, models, caps, folder)


def _load_bundled(name: str, models: Sequence[str] | None, caps: tuple[int, ...]) -> AuditData:
    from depthlab.datasets import load_dataset

    bundle = load_dataset(name)
    source = f"the published {name.upper()} facts bundled with depthlab (depthlab/datasets/data/{name}/PROVENANCE.md)"
    return _tables(bundle, source, False, models, caps, None)


def _tables(
    bundle: Audit,
    source: str,
    simulated: bool,
    models: Sequence[str] | None,
    caps: tuple[int, ...],
    folder: Path | None,
) -> AuditData:
    from depthlab.measures import audit_table, estimate_depth

    trials = bundle.trials  # capped and public in one table, concatenated once per load
    # D once, from the bundle's capped trials as they were split on loading; the audit reads it from there
    depth = estimate_depth(bundle.capped, caps=caps, models=models)
    proxy, proxy_notes = _proxy(folder, bundle.tasks["dataset"].unique().sort().to_list(), trials)
    audit = audit_table(bundle.tasks, trials, depth=depth, proxy=proxy)
    for table, kind in ((bundle.tasks, "tasks"), (trials, "trials"), (depth, "depth"), (audit, "audit")):
        schema.check(table, kind)
    notes = [*bundle.notes, *proxy_notes]
    return AuditData(source, simulated, bundle.tasks, trials, depth, audit, notes, folder)


def _proxy(folder: Path | None, names: Sequence[str], trials: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """The trajectory depth proxy per task, from the trials whose run directories are on disk, and from
    ``<folder>/<name>-jobs/`` (Harbor jobs kept for their trajectories, e.g. ``tb2-jobs/``: their
    pass rates and turn counts do not enter the audit, which keeps the collection's own public runs)."""
    from depthlab.io import load_trials
    from depthlab.measures import depth_proxy
    from depthlab.measures.proxy import trial_dir

    notes: list[str] = []
    if folder is None:
        return _bundled_proxy(names, notes), notes
    sources = trials["source"].fill_null("").to_list()
    on_disk = trials.filter(pl.Series([bool(s) and os.path.isdir(trial_dir(s)) for s in sources], dtype=pl.Boolean))
    parts = [on_disk]
    for name in names:
        jobs = folder / f"{name}-jobs"
        if jobs.is_dir():
            extra = load_trials(jobs, dataset=name)
            parts.append(extra)
            notes.append(f"{name}: trajectory depth proxy read from {extra.height} trials under {jobs.name}/")
    readable = pl.concat(parts)
    if readable.filter(pl.col("cap").is_null()).is_empty():
        notes.append("no uncapped run with a trajectory on disk: no trajectory depth proxy")
    return depth_proxy(readable), notes


def _bundled_proxy(names: Sequence[str], notes: list[str]) -> pl.DataFrame:
    """The proxy read from the real TB2 job with trajectories, as bundled per trial (data/tb2/PROVENANCE.md)."""
    from depthlab.datasets.tb2 import BUNDLED_DIR
    from depthlab.measures.proxy import PROXY_TRIALS_SCHEMA, RULE_VERSION, task_proxy

    path = BUNDLED_DIR / "proxy_trials.parquet"
    per_trial = pl.read_parquet(path) if "tb2" in names and path.is_file() else pl.DataFrame(schema=PROXY_TRIALS_SCHEMA)
    if per_trial.height and per_trial["rule_version"][0] != RULE_VERSION:
        notes.append(f"tb2: the bundled proxy was read under another rule version than {RULE_VERSION}: not used")
        per_trial = per_trial.clear()
    elif per_trial.height:
        notes.append(
            f"tb2: trajectory depth proxy from {per_trial.height} real trials of one model (TMax-27B), bundled "
            "per trial; pass rates and N stay those of the 8 models' public runs"
        )
    return task_proxy(per_trial)


def _cache_key(folder: Path, names: Sequence[str], models: Sequence[str] | None, caps: Sequence[int]) -> str:
    text = json.dumps(
        [_CACHE_VERSION, str(folder), _tree_stamp(folder), list(names), models and list(models), list(caps)]
    )
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _tree_stamp(folder: Path, depth: int = 3) -> tuple[int, int]:
    # newest modification time and number of entries in the top levels of the data folder (root, tasks|jobs,
    # <dataset>, <job>|<task>): a trial or job added anywhere in a Harbor tree changes a directory up there,
    # so the tables reload; walking every trial file would cost seconds per notebook
    newest, count = folder.stat().st_mtime_ns, 0
    level = [str(folder)]
    for _ in range(depth):
        below = []
        for path in level:
            with os.scandir(path) as entries:
                for entry in entries:
                    info = entry.stat(follow_symlinks=False)
                    newest, count = max(newest, info.st_mtime_ns), count + 1
                    if entry.is_dir(follow_symlinks=False):
                        below.append(entry.path)
        level = below
    return newest, count


_KINDS: Final[tuple[str, ...]] = ("tasks", "trials", "depth", "audit")


def _read_cache(folder: Path) -> AuditData | None:
    if not (folder / _COMPLETE).is_file():
        return None
    tables = {kind: pl.read_parquet(folder / f"{kind}.parquet") for kind in _KINDS}
    meta = json.loads((folder / "meta.json").read_text())
    data_dir = Path(meta["data_dir"]) if meta["data_dir"] else None
    return AuditData(
        meta["source"],
        meta["simulated"],
        tables["tasks"],
        tables["trials"],
        tables["depth"],
        tables["audit"],
        meta["notes"],
        data_dir,
    )


def _write_cache(folder: Path, data: AuditData) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    tables = {"tasks": data.tasks, "trials": data.trials, "depth": data.depth, "audit": data.audit}
    for kind in _KINDS:
        tables[kind].write_parquet(folder / f"{kind}.parquet")
    meta = {
        "source": data.source,
        "simulated": data.simulated,
        "notes": data.notes,
        "data_dir": None if data.data_dir is None else str(data.data_dir),
    }
    _atomic.write_text(folder / "meta.json", json.dumps(meta))
    _atomic.write_text(folder / _COMPLETE, "")


# ---------------------------------------------------------------------------------------------
# validation and small utilities


def check_scale(scale: object, function: str) -> float:
    """Validate the demo ``scale`` parameter: a number in (0, 10]."""
    return check_number(scale, "scale", function, low=0, high=10, low_open=True)


def check_seed(seed: object, function: str) -> int:
    """Validate a ``seed`` parameter: a non-negative integer."""
    return check_nonnegative_int(seed, "seed", function)


def _check_models(models: Sequence[str] | None, loaded: AuditData, function: str) -> None:
    # the models are known only once the data is loaded
    if models is not None:
        check_names(models, "models", function, known=loaded.models)
