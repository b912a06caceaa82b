"""Re-execute the audit notebooks headless with papermill and write an index of their figures and numbers.

:func:`reproduce` is the project's main job (``depthlab reproduce``, ``make reproduce``). It loads
the data once (:func:`depthlab.auditdata.audit_data`: a data folder, the bundled TB2 facts, or the
simulated demo built once per generative-model version in the user cache), runs every notebook of
``notebooks/`` with its parameters injected, and writes, under the output folder::

    notebooks/<name>.ipynb   executed copies (the first output says simulated or real data)
    figures/<figure>.png|pdf every figure, saved by the notebooks with depthlab.plots.save
    results/<name>.json      each notebook's findings and its paper-versus-data table
    runs.json                when each notebook last ran, on which data, in how many seconds
    index.md                 every notebook's figures and paper-versus-data table

``only=`` runs some notebooks and updates their part of the index; the others keep theirs. A
notebook that fails raises :class:`NotebookFailed`, which names the notebook and the cell. The data
library the notebooks use lives in :mod:`depthlab.auditdata`; the findings in :mod:`depthlab.findings`.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from depthlab import _atomic
from depthlab._checks import check_int_at_least, check_positive_int, parameter_problem
from depthlab._defaults import AUDIT_N_BOOT, AUDIT_SEED
from depthlab.auditdata import DEMO_SCALE, AuditData, audit_data, check_scale, check_seed, is_bundled

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "DEFAULT_N_BOOT",
    "DOCS_MANIFEST",
    "NOTEBOOKS",
    "README_FIGURES",
    "NotebookFailed",
    "Reproduction",
    "ensure_kernel",
    "figure_texts",
    "notebook_names",
    "notebooks_dir",
    "readme_figures",
    "reproduce",
    "write_docs_figures",
]


def notebooks_dir() -> Path:
    """The folder holding the audit notebooks (``notebooks/`` beside the package)."""
    return Path(__file__).resolve().parents[1] / "notebooks"


def notebook_names(folder: str | Path | None = None) -> tuple[str, ...]:
    """The audit notebooks in ``folder`` (default :func:`notebooks_dir`), in the order they run.

    A notebook is any ``NN_<name>.ipynb``: adding one to the folder adds it to the audit.
    """
    folder = notebooks_dir() if folder is None else Path(folder)
    return tuple(sorted(p.stem for p in folder.glob("[0-9][0-9]_*.ipynb")))


#: The audit notebooks, in the order they run (one question each).
NOTEBOOKS: Final[tuple[str, ...]] = notebook_names()

#: Default bootstrap resamples in a reproduce run.
DEFAULT_N_BOOT: Final[int] = AUDIT_N_BOOT

#: The figures README and the docs show, drawn into ``docs/img`` by ``make docs-figures``
#: (``depthlab reproduce --docs docs/img``) with :func:`readme_figures`.
README_FIGURES: Final[tuple[str, ...]] = ("turns_vs_depth", "forest_partial_correlations", "quadrants")

#: The record beside the docs' figures of what they were drawn from and every text they show.
DOCS_MANIFEST: Final[str] = "figures.json"

_KERNEL: Final[str] = "depthlab"
_README_WIDTH: Final[int] = 1100
_RUNS: Final[str] = "runs.json"


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
class Reproduction:
    """What :func:`reproduce` wrote.

    Attributes
    ----------
    out : Path
        The output folder.
    data : str
        The data the notebooks ran on, in words (and whether simulated or real).
    notebooks : list of Path
        Notebooks executed by this call.
    figures : list of Path
        PNG figures those notebooks saved (each has a PDF beside it).
    results : dict
        Notebook name -> its results JSON (``data``, ``findings``, ``figures``, ``comparison``), for
        every notebook in the index (run now or earlier).
    index : Path
        The Markdown index.
    seconds : dict
        Notebook name -> wall time in seconds, for the notebooks run by this call.
    """

    out: Path
    data: str
    notebooks: list[Path]
    figures: list[Path]
    results: dict[str, dict[str, Any]]
    index: Path
    seconds: dict[str, float]


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
    seed: int = AUDIT_SEED,
    n_boot: int = DEFAULT_N_BOOT,
    datasets: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    docs_dir: str | Path | None = None,
    jobs: int = 2,
    progress: bool = True,
    source_dir: str | Path | None = None,
) -> Reproduction:
    """Run the audit notebooks with papermill and write notebooks, figures, results and an index.

    Parameters
    ----------
    data : str, Path or None
        A data folder; ``"tb2"`` for the TB2 facts bundled with depthlab (real data, no D); or None
        for the simulated demo, built once per generative-model version in the user cache
        (:func:`depthlab.auditdata.demo_data`) and shared by every ``out``.
    out : str or Path
        Output folder.
    only : sequence of str, optional
        Notebooks to run (full names or their number/name parts, e.g. ``"03"`` or ``"quadrants"``);
        the index keeps the other notebooks' earlier results.
    scale, seed : float, int
        Size and seed of the demo data; the seed also seeds every bootstrap.
    n_boot : int
        Bootstrap resamples for the confidence intervals.
    datasets, models : sequence of str, optional
        Restrict the collections / the models counted for D; a name not in the data is an error
        listing the known ones.
    docs_dir : str, Path or None
        When given, the figures named in :data:`README_FIGURES` are drawn there as small PNGs
        (:func:`write_docs_figures`), with the record of their texts a test checks them against.
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
    ValueError
        A parameter is wrong (one line naming it and the known values).

    Examples
    --------
    >>> run = reproduce(out="out/reproduce", only=["01"], scale=0.1)  # doctest: +SKIP
    >>> run.index.name  # doctest: +SKIP
    'index.md'
    """
    function = "reproduce"
    source = notebooks_dir() if source_dir is None else Path(source_dir)
    known = notebook_names(source)
    names = _select(only, known, function)
    scale = check_scale(scale, function)
    seed = check_seed(seed, function)
    check_int_at_least(n_boot, "n_boot", function, 100)
    check_positive_int(jobs, "jobs", function)
    out = Path(out).expanduser().resolve()
    docs_dir = None if docs_dir is None else Path(docs_dir).expanduser().resolve()
    folders = {part: out / part for part in ("notebooks", "figures", "results", "cache")}
    # load once here: a wrong name or a loading error surfaces before any notebook starts, and every
    # notebook reuses the cached tables
    where = data if is_bundled(data) else None
    if where is None and data is not None:
        where = str(Path(data).expanduser().resolve())
    loaded = audit_data(where, datasets=datasets, models=models, scale=scale, seed=seed, cache_dir=folders["cache"])
    if where is None and loaded.data_dir is not None:
        where = str(loaded.data_dir)  # the demo folder, so the notebooks do not rebuild or look it up again
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    kernel = ensure_kernel()
    parameters = {
        "data": where,
        "datasets": None if datasets is None else list(datasets),
        "models": None if models is None else list(models),
        "n_boot": n_boot,
        "seed": seed,
        "scale": scale,
        "figures_dir": str(folders["figures"]),
        "results_dir": str(folders["results"]),
        "cache_dir": str(folders["cache"]),
    }
    for notebook in names:  # a notebook that fails leaves no stale results behind
        (folders["results"] / f"{notebook}.json").unlink(missing_ok=True)
    seconds = _run_all(names, source, folders["notebooks"], parameters, kernel, jobs=jobs, progress=progress)
    runs = _update_runs(out / _RUNS, seconds, loaded.banner())
    listed = [nb for nb in known if (folders["results"] / f"{nb}.json").is_file()]
    results = {nb: json.loads((folders["results"] / f"{nb}.json").read_text()) for nb in listed}
    index = _write_index(out, loaded.banner(), listed, results, runs)
    if docs_dir is not None:
        drawn_from = {"data": None if data is None else str(data), "scale": scale, "seed": seed, "n_boot": n_boot}
        write_docs_figures(loaded, docs_dir, drawn_from=drawn_from)
    executed = [folders["notebooks"] / f"{notebook}.ipynb" for notebook in names]
    figures = [
        folders["figures"] / f"{figure}.png"
        for notebook in names
        for figure in results.get(notebook, {}).get("figures", [])
        if (folders["figures"] / f"{figure}.png").is_file()
    ]
    return Reproduction(out, loaded.banner(), executed, figures, results, index, seconds)


# ---------------------------------------------------------------------------------------------
# running


def _select(only: Sequence[str] | str | None, known: Sequence[str], function: str) -> list[str]:
    if only is None:
        return list(known)
    wanted = [only] if isinstance(only, str) else list(only)
    chosen: list[str] = []
    for item in wanted or [""]:
        text = item.strip() if isinstance(item, str) else ""
        matches = [nb for nb in known if text == nb or nb.startswith(f"{text}_") or nb.endswith(f"_{text}")]
        matches = matches or [nb for nb in known if text and text in nb]
        if len(matches) != 1:
            raise parameter_problem("only", function, f"names {item!r}, not one notebook; known: {', '.join(known)}")
        chosen.append(matches[0])
    return [nb for nb in known if nb in chosen]


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
                error = future.exception()
                if error is not None:
                    for other in pending:
                        other.cancel()
                    bar.close()
                    raise error
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


def _update_runs(path: Path, seconds: Mapping[str, float], banner: str) -> dict[str, dict[str, Any]]:
    runs = json.loads(path.read_text()) if path.is_file() else {}
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    for notebook, taken in seconds.items():
        runs[notebook] = {"seconds": round(taken, 2), "data": banner, "finished": stamp}
    _atomic.write_text(path, json.dumps(runs, indent=1) + "\n")
    return runs


def _write_index(
    out: Path,
    banner: str,
    names: Sequence[str],
    results: Mapping[str, Mapping[str, Any]],
    runs: Mapping[str, Mapping[str, Any]],
) -> Path:
    lines = ["# depthlab audit: figures and numbers", "", f"**{banner}**", ""]
    if any(results[nb].get("data", {}).get("banner") != banner for nb in names):
        lines += ["Some notebooks below ran earlier on other data: each section says which.", ""]
    for notebook in names:
        result = results[notebook]
        run = runs.get(notebook, {})
        lines += [
            f"## {notebook}",
            "",
            f"Executed notebook: [notebooks/{notebook}.ipynb](notebooks/{notebook}.ipynb) "
            f"({run.get('seconds', math.nan):.1f} s, {run.get('finished', 'earlier')}).",
            "",
        ]
        data = result.get("data", {}).get("banner")
        if data and data != banner:
            lines += [f"Data of this notebook: {data}", ""]
        for figure in result.get("figures", []):
            if (out / "figures" / f"{figure}.png").is_file():
                lines += [f"### {figure}", "", f"![{figure}](figures/{figure}.png) ([PDF](figures/{figure}.pdf))", ""]
        comparison = [
            {column: row.get(column) for column in ("key", "paper", "paper_sample", "this_data", "this_sample")}
            for row in result.get("comparison", [])
        ]
        if comparison:
            lines += ["Paper reports / this data gives:", "", *_markdown_table(comparison), ""]
    path = out / "index.md"
    _atomic.write_text(path, "\n".join(lines))
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


def readme_figures(data: AuditData, *, n_boot: int = DEFAULT_N_BOOT, seed: int = AUDIT_SEED) -> dict[str, Figure]:
    """The figures of :data:`README_FIGURES`, drawn from ``data`` by the calls their notebooks make.

    Examples
    --------
    >>> from depthlab.auditdata import audit_data
    >>> sorted(readme_figures(audit_data(None, scale=0.05), n_boot=100))  # doctest: +SKIP
    ['forest_partial_correlations', 'quadrants', 'turns_vs_depth']
    """
    from depthlab import findings, plots

    boot = {"n_boot": n_boot, "seed": seed}
    correlations = findings.stack(
        [
            findings.pass_depth_given_work(data, **boot),
            findings.pass_turns_given_depth(data, **boot),
            findings.pass_turns_given_work(data, **boot),
        ]
    )
    return {
        "turns_vs_depth": plots.turns_vs_depth(data),
        "forest_partial_correlations": plots.forest(findings.forest_table(correlations)),
        "quadrants": plots.quadrants(findings.quadrant_cells(data, n_boot=n_boot, seed=seed)),
    }


def figure_texts(fig: Figure) -> list[str]:
    """Every text ``fig`` shows once drawn (titles, labels, tick labels, legends, notes), sorted.

    What a reader reads in a figure: two figures with the same texts show the same rows, counts
    and labels (the check that the docs' figures are current).
    """
    from matplotlib.text import Text

    fig.draw_without_rendering()  # tick labels exist only once the figure is laid out
    return sorted(text.get_text() for text in fig.findobj(Text) if text.get_visible() and text.get_text().strip())


def write_docs_figures(data: AuditData, docs_dir: str | Path, *, drawn_from: Mapping[str, Any]) -> Path:
    """Draw :func:`readme_figures` into ``docs_dir`` as small PNGs, with :data:`DOCS_MANIFEST`; return it.

    The manifest records ``drawn_from`` (the data, scale, seed and ``n_boot``) and each figure's
    :func:`figure_texts`, so a test can draw them again and see whether the committed images are
    current.
    """
    import tempfile

    from PIL import Image

    from depthlab.plots import save

    folder = Path(docs_dir)
    folder.mkdir(parents=True, exist_ok=True)
    n_boot, seed = int(drawn_from.get("n_boot", DEFAULT_N_BOOT)), int(drawn_from.get("seed", 0))
    figures = readme_figures(data, n_boot=n_boot, seed=seed)
    with tempfile.TemporaryDirectory() as scratch:
        for name, fig in figures.items():
            png, _pdf = save(fig, name, scratch)
            with Image.open(png) as image:
                image.thumbnail((_README_WIDTH, _README_WIDTH * 2))
                with _atomic.atomic_path(folder / f"{name}.png") as tmp:
                    image.save(tmp, format="PNG", optimize=True)
    manifest = {
        "drawn_from": dict(drawn_from),
        "simulated": data.simulated,
        "figures": {name: figure_texts(fig) for name, fig in figures.items()},
    }
    path = folder / DOCS_MANIFEST
    _atomic.write_text(path, json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return path
