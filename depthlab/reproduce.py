"""Re-execute the audit notebooks headless with papermill and collect their figures and numbers.

:func:`reproduce` is the project's main job (``depthlab reproduce``, ``make reproduce``). Without a
data folder it builds the simulated demo data once (:func:`demo_data`, cached) and reuses it. It loads
the data once into a cache of tables (:func:`audit_data`), runs every notebook of ``notebooks/`` with
its parameters injected, and writes, under the output folder::

    notebooks/<name>.ipynb   executed copies
    figures/<figure>.png|pdf every figure, saved by the notebooks with depthlab.plots.save
    results/<name>.json      each notebook's numbers and its paper-versus-data table
    index.md                 every figure and every paper-versus-data table

A notebook that fails raises :class:`NotebookFailed`, which names the notebook and the cell.

The helpers the notebooks share live here too: :func:`audit_data` (load a data folder, or the demo,
into the tables every analysis runs on) and :func:`record_results` (write a notebook's numbers and
return its "paper reports / this data gives" table).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import polars as pl

from depthlab import schema
from depthlab._checks import check_names, check_nonnegative_int, check_number
from depthlab.schema import CAPS

__all__ = [
    "DEMO_SCALE",
    "NOTEBOOKS",
    "README_FIGURES",
    "AuditData",
    "NotebookFailed",
    "Reproduction",
    "audit_data",
    "demo_data",
    "ensure_kernel",
    "notebooks_dir",
    "record_results",
    "reproduce",
]

#: The audit notebooks, in the order they run (one question each).
NOTEBOOKS: Final[tuple[str, ...]] = (
    "00_explore",
    "01_collections",
    "02_turns_vs_depth",
    "03_depth_predicts_difficulty",
    "04_labels",
    "05_quadrants",
    "06_segments",
)

#: Size of the default demo data (1.0 is about the paper's size: 734 audited tasks).
DEMO_SCALE: Final[float] = 0.5

#: Default bootstrap resamples in a reproduce run.
DEFAULT_N_BOOT: Final[int] = 2000

#: The figures README shows, copied to ``docs/img`` by ``depthlab reproduce --docs docs/img``.
README_FIGURES: Final[tuple[str, ...]] = ("turns_vs_depth", "forest_partial_correlations", "quadrants")

_KERNEL: Final[str] = "depthlab"
_COMPLETE: Final[str] = ".complete"
_README_WIDTH: Final[int] = 1100


class NotebookFailed(RuntimeError):
    """A notebook raised while executing; names the notebook, the cell and the error.

    Attributes
    ----------
    notebook : str
        Notebook name (e.g. ``03_depth_predicts_difficulty``).
    cell : int or None
        0-based index of the failing cell in the notebook (None when the kernel itself failed).
    error : str
        The exception type and message.
    output : Path or None
        The partially executed copy, with the traceback in the failing cell.
    """

    def __init__(self, notebook: str, cell: int | None, error: str, output: Path | None = None) -> None:
        where = f"cell {cell}" if cell is not None else "kernel"
        super().__init__(f"notebook {notebook} failed at {where}: {error}")
        self.notebook, self.cell, self.error, self.output = notebook, cell, error, output


@dataclass(frozen=True)
class AuditData:
    """The tables of one data folder that every notebook analyses.

    Attributes
    ----------
    data_dir : Path
        Where the data came from (the demo folder when none was given).
    tasks, trials, depth, audit : pl.DataFrame
        ``schema.TASKS``, ``schema.TRIALS`` (capped and public), ``schema.DEPTH`` and ``schema.AUDIT``.
    notes : list of str
        What the loaders said is missing (e.g. ``tb2: no capped runs: D cannot be estimated``).
    """

    data_dir: Path
    tasks: pl.DataFrame
    trials: pl.DataFrame
    depth: pl.DataFrame
    audit: pl.DataFrame
    notes: list[str] = field(default_factory=list)

    @property
    def has_depth(self) -> bool:
        """True when at least one task has a pinned depth D (some capped runs exist)."""
        return self.audit.filter(pl.col("depth_status") == "solved").height > 0

    @property
    def datasets(self) -> list[str]:
        """The collections present, in the figures' order."""
        from depthlab.collections import ordered

        return ordered([*self.audit["dataset"].unique().to_list(), *self.trials["dataset"].unique().to_list()])

    def summary(self) -> str:
        """One paragraph: what was loaded and what is missing."""
        lines = [
            f"{self.data_dir}: {self.audit.height} tasks in {len(self.datasets)} collections "
            f"({', '.join(self.datasets)}), {self.trials.height} trials "
            f"({self.trials.filter(pl.col('cap').is_not_null()).height} at stated caps), "
            f"{self.audit.filter(pl.col('depth_status') == 'solved').height} tasks with a pinned depth",
            *self.notes,
        ]
        return "\n".join(lines)


@dataclass(frozen=True)
class Reproduction:
    """What :func:`reproduce` wrote.

    Attributes
    ----------
    out : Path
        The output folder.
    data_dir : Path
        The data the notebooks ran on.
    notebooks : list of Path
        Executed notebooks.
    figures : list of Path
        PNG figures (each has a PDF beside it).
    results : dict
        Notebook name -> its results JSON (``values`` and ``comparison``).
    index : Path
        The Markdown index.
    seconds : dict
        Notebook name -> wall time in seconds.
    """

    out: Path
    data_dir: Path
    notebooks: list[Path]
    figures: list[Path]
    results: dict[str, dict[str, Any]]
    index: Path
    seconds: dict[str, float]


def notebooks_dir() -> Path:
    """The folder holding the audit notebooks (``notebooks/`` beside the package)."""
    return Path(__file__).resolve().parents[1] / "notebooks"


def demo_data(root: str | Path, *, scale: float = DEMO_SCALE, seed: int = 0) -> Path:
    """Build the simulated demo data under ``root`` once, and return its folder.

    The folder is ``<root>/scale<scale>-seed<seed>-model<v>`` (``v`` is
    :data:`depthlab.simulate.MODEL_VERSION`, so a changed generative model builds afresh); a
    marker file written last makes an interrupted build start over rather than be reused
    half-written.

    Parameters
    ----------
    root : str or Path
        Parent folder of the cached demo data.
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
    scale = check_number(scale, "scale", "demo_data", low=0, high=10, low_open=True)
    seed = check_nonnegative_int(seed, "seed", "demo_data")
    from depthlab import simulate

    folder = Path(root) / f"scale{scale:g}-seed{seed}-model{simulate.MODEL_VERSION}"
    if (folder / _COMPLETE).is_file():
        return folder
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    simulate.write_runs(folder, seed=seed, scale=scale)
    (folder / _COMPLETE).write_text(json.dumps({"scale": scale, "seed": seed}) + "\n")
    return folder


def audit_data(
    data_dir: str | Path | None = None,
    *,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    caps: Sequence[int] = CAPS,
    scale: float = DEMO_SCALE,
    seed: int = 0,
    cache_dir: str | Path | None = None,
) -> AuditData:
    """Load a data folder (or the demo data) into the tables the notebooks analyse.

    Each collection is read with :func:`depthlab.load_dataset`; the depth table comes from
    :func:`depthlab.estimate_depth` on the capped trials and the audit table from
    :func:`depthlab.audit_table`.

    Parameters
    ----------
    data_dir : str, Path or None
        A folder holding one or more collections (``tasks/<name>/``, ``jobs/<name>/``, or a
        collection's own layout such as ``../shared/data`` for TB2). None builds (once) and uses the
        simulated demo data under ``data/demo``.
    datasets : sequence of str, optional
        Collections to load; default every one found under ``data_dir``.
    models : sequence of str, optional
        Models whose capped runs count for D; default all.
    caps : sequence of int
        The cap ladder.
    scale, seed : float, int
        Size and seed of the demo data (only when ``data_dir`` is None).
    cache_dir : str, Path or None
        When given, the loaded tables are kept there as Parquet, keyed by the arguments, and
        reused by later calls (``reproduce`` loads once for all notebooks).

    Returns
    -------
    AuditData

    Examples
    --------
    >>> data = audit_data("../shared/data", datasets=["tb2"])  # doctest: +SKIP
    >>> data.has_depth  # doctest: +SKIP
    False
    """
    function = "audit_data"
    if data_dir is None:
        data_dir = demo_data(notebooks_dir().parent / "data" / "demo", scale=scale, seed=seed)
    folder = Path(data_dir).expanduser().resolve()
    if not folder.is_dir():
        raise ValueError(f"The 'data_dir' parameter of {function} must be an existing folder, got {str(data_dir)!r}")
    names = _discover(folder) if datasets is None else check_names(datasets, "datasets", function)
    if not names:
        raise ValueError(
            f"The 'data_dir' parameter of {function} must hold at least one collection "
            f"(tasks/<name>/, jobs/<name>/ or <name>_tasks.csv), found none in {str(folder)!r}"
        )
    model_list = None if models is None else check_names(models, "models", function)
    cap_list = tuple(sorted({int(c) for c in caps}))
    key = _cache_key(folder, names, model_list, cap_list)
    if cache_dir is not None:
        cached = _read_cache(Path(cache_dir) / key, folder)
        if cached is not None:
            return cached
    data = _load(folder, names, model_list, cap_list)
    if cache_dir is not None:
        _write_cache(Path(cache_dir) / key, data)
    return data


def record_results(
    notebook: str,
    values: Mapping[str, float | Sequence[float | None] | None],
    *,
    results_dir: str | Path,
    figures: Iterable[str | Path] = (),
) -> pl.DataFrame:
    """Write a notebook's numbers to ``<results_dir>/<notebook>.json`` and return the paper-versus-data table.

    Parameters
    ----------
    notebook : str
        Notebook name, e.g. ``"03_depth_predicts_difficulty"``.
    values : mapping
        Result name -> a number, a ``(value, low, high)`` triple, or None when it cannot be computed on
        this data. Names that are keys of :data:`depthlab.paper.REPORTED` appear in the comparison table
        beside the paper's value; NaN is written as null.
    results_dir : str or Path
        Folder of the results JSON files.
    figures : iterable of str or Path
        The figures the notebook saved (paths from :func:`depthlab.plots.save`, or names), listed in
        the index.

    Returns
    -------
    pl.DataFrame
        :func:`depthlab.paper.compare` of the values the paper also reports.

    Examples
    --------
    >>> import tempfile
    >>> table = record_results("demo", {"x": 1.0}, results_dir=tempfile.mkdtemp())  # doctest: +SKIP
    """
    from depthlab import paper

    clean = {str(k): _json_value(v) for k, v in values.items()}
    known = {r.key for r in paper.REPORTED}
    reported = {k: v for k, v in clean.items() if k in known}
    comparison = paper.compare(reported)
    folder = Path(results_dir)
    folder.mkdir(parents=True, exist_ok=True)
    names = list(dict.fromkeys(Path(f).stem for f in figures))
    payload = {"notebook": notebook, "values": clean, "figures": names, "comparison": comparison.to_dicts()}
    _atomic_write(folder / f"{notebook}.json", json.dumps(payload, indent=1, default=str) + "\n")
    return comparison


def ensure_kernel(name: str = _KERNEL) -> str:
    """Make sure the Jupyter kernel ``name`` runs this Python; register it when missing; return its name.

    A kernel of that name that starts another interpreter (say, from another virtualenv) would run the
    notebooks without this depthlab: that is an error naming the kernel's folder, not a silent mix-up.

    Examples
    --------
    >>> ensure_kernel()  # doctest: +SKIP
    'depthlab'
    """
    from jupyter_client.kernelspec import KernelSpecManager

    manager = KernelSpecManager()
    if name not in manager.find_kernel_specs():
        command = [sys.executable, "-m", "ipykernel", "install", "--sys-prefix", "--name", name]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"could not register the Jupyter kernel {name!r}: {done.stderr.strip()}")
        manager = KernelSpecManager()
    spec = manager.get_kernel_spec(name)
    python = Path(spec.argv[0]) if spec.argv else None
    if (
        python is not None
        and python.is_absolute()
        and python.parent.absolute() != Path(sys.executable).parent.absolute()
    ):
        raise RuntimeError(
            f"the Jupyter kernel {name!r} ({spec.resource_dir}) starts {python}, not this Python "
            f"({sys.executable}); remove it or run: {sys.executable} -m ipykernel install --sys-prefix --name {name}"
        )
    return name


def reproduce(
    data: str | Path | None = None,
    out: str | Path = "out/reproduce",
    *,
    only: Sequence[str] | None = None,
    scale: float = DEMO_SCALE,
    seed: int = 0,
    n_boot: int = DEFAULT_N_BOOT,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    docs_dir: str | Path | None = None,
    jobs: int = 2,
    progress: bool = True,
    source_dir: str | Path | None = None,
) -> Reproduction:
    """Run every audit notebook with papermill and write notebooks, figures, results and an index.

    Parameters
    ----------
    data : str, Path or None
        Data folder; None builds the simulated demo data once under ``<out>/demo-data`` and reuses it.
    out : str or Path
        Output folder.
    only : sequence of str, optional
        Notebooks to run (full names or their number/name parts, e.g. ``"03"`` or ``"quadrants"``).
    scale, seed : float, int
        Size and seed of the demo data; the seed also seeds every bootstrap.
    n_boot : int
        Bootstrap resamples for the confidence intervals.
    datasets, models : sequence of str, optional
        Restrict the collections / the models counted for D.
    docs_dir : str, Path or None
        When given, the figures named in :data:`README_FIGURES` are copied there as small PNGs.
    jobs : int
        Notebooks executed at once (each in its own kernel).
    progress : bool
        Show a progress bar.
    source_dir : str, Path or None
        Folder of the notebooks to run; default :func:`notebooks_dir`.

    Returns
    -------
    Reproduction

    Raises
    ------
    NotebookFailed
        Naming the notebook and cell that failed.

    Examples
    --------
    >>> run = reproduce(out="out/reproduce", only=["01"], scale=0.1)  # doctest: +SKIP
    >>> run.index.name  # doctest: +SKIP
    'index.md'
    """
    function = "reproduce"
    names = _select(only, function)
    scale = check_number(scale, "scale", function, low=0, high=10, low_open=True)
    seed = check_nonnegative_int(seed, "seed", function)
    if not isinstance(n_boot, int) or isinstance(n_boot, bool) or n_boot < 100:
        raise ValueError(f"The 'n_boot' parameter of {function} must be an integer >= 100, got {n_boot!r}")
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ValueError(f"The 'jobs' parameter of {function} must be a positive integer, got {jobs!r}")
    out = Path(out).expanduser().resolve()
    docs_dir = None if docs_dir is None else Path(docs_dir).expanduser().resolve()
    folders = {part: out / part for part in ("notebooks", "figures", "results", "cache")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    data_dir = demo_data(out / "demo-data", scale=scale, seed=seed) if data is None else Path(data).resolve()
    kernel = ensure_kernel()
    # load once here: a loading error surfaces before any notebook starts, and every notebook reuses the cache
    audit_data(data_dir, datasets=datasets, models=models, cache_dir=folders["cache"])
    parameters = {
        "data_dir": str(data_dir),
        "datasets": None if datasets is None else list(datasets),
        "models": None if models is None else list(models),
        "n_boot": n_boot,
        "seed": seed,
        "scale": scale,
        "figures_dir": str(folders["figures"]),
        "results_dir": str(folders["results"]),
        "cache_dir": str(folders["cache"]),
    }
    source = notebooks_dir() if source_dir is None else Path(source_dir)
    seconds = _run_all(names, source, folders["notebooks"], parameters, kernel, jobs=jobs, progress=progress)
    executed = [folders["notebooks"] / f"{notebook}.ipynb" for notebook in names]
    results = {path.stem: json.loads(path.read_text()) for path in sorted(folders["results"].glob("*.json"))}
    figures = sorted(folders["figures"].glob("*.png"))
    index = _write_index(out, data_dir, names, results, figures, seconds)
    if docs_dir is not None:
        _copy_readme_figures(folders["figures"], docs_dir)
    return Reproduction(out, data_dir, executed, figures, results, index, seconds)


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
    from depthlab.collections import ordered

    return ordered(found)


def _load(folder: Path, names: Sequence[str], models: Sequence[str] | None, caps: tuple[int, ...]) -> AuditData:
    import depthlab as dl
    from depthlab.datasets import Audit

    bundle = Audit.concat([dl.load_dataset(name, folder) for name in names])
    trials = bundle.trials
    depth = dl.estimate_depth(bundle.capped, caps=caps, models=models)
    audit = dl.audit_table(bundle.tasks, trials, caps=caps, models=models)
    for table, kind in ((bundle.tasks, "tasks"), (trials, "trials"), (depth, "depth"), (audit, "audit")):
        schema.check(table, kind)
    return AuditData(folder, bundle.tasks, trials, depth, audit, list(bundle.notes))


def _cache_key(folder: Path, names: Sequence[str], models: Sequence[str] | None, caps: Sequence[int]) -> str:
    text = json.dumps([str(folder), _tree_stamp(folder), list(names), models and list(models), list(caps)])
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


def _read_cache(folder: Path, data_dir: Path) -> AuditData | None:
    if not (folder / _COMPLETE).is_file():
        return None
    tables = {kind: pl.read_parquet(folder / f"{kind}.parquet") for kind in ("tasks", "trials", "depth", "audit")}
    notes = json.loads((folder / "notes.json").read_text())
    return AuditData(data_dir, tables["tasks"], tables["trials"], tables["depth"], tables["audit"], notes)


def _write_cache(folder: Path, data: AuditData) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for kind in ("tasks", "trials", "depth", "audit"):
        getattr(data, kind).write_parquet(folder / f"{kind}.parquet")
    (folder / "notes.json").write_text(json.dumps(data.notes))
    (folder / _COMPLETE).write_text("")


# ---------------------------------------------------------------------------------------------
# running


def _select(only: Sequence[str] | str | None, function: str) -> list[str]:
    if only is None:
        return list(NOTEBOOKS)
    wanted = [only] if isinstance(only, str) else list(only)
    chosen: list[str] = []
    for item in wanted:
        matches = [nb for nb in NOTEBOOKS if item == nb or nb.startswith(f"{item}_") or nb.endswith(f"_{item}")]
        matches = matches or [nb for nb in NOTEBOOKS if item and item in nb]
        if len(matches) != 1:
            raise ValueError(
                f"The 'only' parameter of {function} must name notebooks among {list(NOTEBOOKS)}, got {item!r}"
            )
        chosen.append(matches[0])
    return [nb for nb in NOTEBOOKS if nb in chosen]


def _run_all(
    names: Sequence[str],
    source_dir: Path,
    out_dir: Path,
    parameters: Mapping[str, Any],
    kernel: str,
    *,
    jobs: int,
    progress: bool,
) -> dict[str, float]:
    # each notebook runs in its own kernel process; threads only wait on them
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    def timed(notebook: str) -> float:
        started = time.perf_counter()
        _execute(source_dir / f"{notebook}.ipynb", out_dir, parameters, kernel)
        return time.perf_counter() - started

    bar = _progress(len(names), progress)
    seconds: dict[str, float] = {}
    with ThreadPoolExecutor(max_workers=min(jobs, len(names))) as pool:
        futures = {pool.submit(timed, notebook): notebook for notebook in names}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                if future.exception() is not None:
                    for other in pending:
                        other.cancel()
                    bar.close()
                    raise future.exception()
                seconds[futures[future]] = future.result()
                bar.set_postfix_str(futures[future])
                bar.update(1)
    bar.close()
    return {notebook: seconds[notebook] for notebook in names}


def _execute(source: Path, out_dir: Path, parameters: Mapping[str, Any], kernel: str) -> Path:
    import papermill
    from papermill.exceptions import PapermillExecutionError

    notebook = source.stem
    if not source.is_file():
        raise NotebookFailed(notebook, None, f"notebook file not found: {source}")
    output = out_dir / f"{notebook}.ipynb"
    try:
        papermill.execute_notebook(
            str(source),
            str(output),
            parameters=dict(parameters),
            kernel_name=kernel,
            # no cwd=: papermill would chdir this whole process, which races between the notebooks run in
            # threads; every path the notebooks get is absolute, so the kernel's working folder does not matter
            progress_bar=False,
            log_output=False,
            # the kernel logs a TCP-transport warning at start and a KeyboardInterrupt at shutdown: noise here
            extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
        )
    except PapermillExecutionError as error:
        # papermill counts the injected-parameters cell; report the cell index of the notebook as committed
        cell = _source_cell_index(output, error.cell_index)
        raise NotebookFailed(notebook, cell, f"{error.ename}: {error.evalue}", output) from None
    except Exception as error:  # the kernel died or never started
        raise NotebookFailed(notebook, None, f"{type(error).__name__}: {error}", output) from error
    return output


def _source_cell_index(executed: Path, cell_index: int) -> int:
    try:
        cells = json.loads(executed.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return cell_index
    injected = sum(
        1 for cell in cells[:cell_index] if "injected-parameters" in cell.get("metadata", {}).get("tags", [])
    )
    return cell_index - injected


def _progress(total: int, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="notebooks", unit="nb", disable=not enabled)


# ---------------------------------------------------------------------------------------------
# index and README figures


def _write_index(
    out: Path,
    data_dir: Path,
    names: Sequence[str],
    results: Mapping[str, Mapping[str, Any]],
    figures: Sequence[Path],
    seconds: Mapping[str, float],
) -> Path:
    lines = [
        "# depthlab audit: figures and numbers",
        "",
        f"Data: `{data_dir}`.",
        "",
    ]
    for notebook in names:
        lines += [
            f"## {notebook}",
            "",
            f"Executed notebook: [notebooks/{notebook}.ipynb](notebooks/{notebook}.ipynb) "
            f"({seconds.get(notebook, math.nan):.1f} s).",
            "",
        ]
        for figure in results.get(notebook, {}).get("figures", []):
            png = out / "figures" / f"{figure}.png"
            if png in figures:
                lines += [f"### {figure}", "", f"![{figure}](figures/{figure}.png) ([PDF](figures/{figure}.pdf))", ""]
        comparison = [
            {column: row.get(column) for column in ("key", "sample", "paper", "this_data")}
            for row in results.get(notebook, {}).get("comparison", [])
        ]
        if comparison:
            lines += ["Paper reports / this data gives:", "", *_markdown_table(comparison), ""]
        # the comparison already says which reported numbers are not computable; name the others
        compared = {row["key"] for row in comparison}
        values = results.get(notebook, {}).get("values", {})
        skipped = [key for key, value in values.items() if value is None and key not in compared]
        if skipped:
            lines += [f"Also not computable on this data: {', '.join(skipped)}.", ""]
    path = out / "index.md"
    _atomic_write(path, "\n".join(lines))
    return path


def _markdown_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row[c]) for c in columns) + " |")
    return lines


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value).replace("|", "\\|")


def _copy_readme_figures(figures_dir: Path, docs_dir: Path) -> None:
    from PIL import Image

    docs_dir.mkdir(parents=True, exist_ok=True)
    for figure in README_FIGURES:
        source = figures_dir / f"{figure}.png"
        if not source.is_file():
            continue
        with Image.open(source) as image:
            image.thumbnail((_README_WIDTH, _README_WIDTH * 2))
            image.save(docs_dir / f"{figure}.png", optimize=True)


# ---------------------------------------------------------------------------------------------
# validation and small utilities


def _json_value(value: Any) -> float | int | list[float | int | None] | None:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_json_number(v) for v in value]
    return _json_number(value)


def _json_number(value: Any) -> float | int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    number = float(value)
    return None if math.isnan(number) or math.isinf(number) else number


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)
