"""The core every figure of :mod:`depthlab.plots` is drawn with, written once.

* the shared style (:data:`RC`, :func:`style`) and :func:`save`;
* the preamble of every figure function: an axes-level function opens
  ``with into_axes(ax, function, figsize) as ax:`` (the style, and the caller's Axes or a new
  pyplot-free figure's), a figure-level one ``with new_figure(figsize) as (fig, ax):`` or
  ``with new_panels(n, ...) as (fig, axes):``;
* the resolution of ``order`` (which collections, in which order) and ``palette`` (their colours),
  validated through :mod:`depthlab._checks`;
* the small drawing helpers several topics share (median legend handle, plain log axes, the note of
  an empty panel, the SIMULATED stamp);
* :class:`ShownFigure`, the figure class every function here returns: a matplotlib Figure that
  Jupyter shows as an image when it is a cell's last expression, with no ``%matplotlib`` magic.

The module is private: its names are the plots package's own, and only :data:`RC`, :data:`Palette`
and :func:`save` are re-exported by :mod:`depthlab.plots`.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from depthlab import catalog
from depthlab._atomic import atomic_path
from depthlab._checks import check_mapping, check_names, check_string, check_type
from depthlab.catalog import MEDIAN_COLOUR

if TYPE_CHECKING:  # pragma: no cover
    # matplotlib.typing.RcKeyType is newer than the matplotlib>=3.8 floor: imported for mypy only
    from matplotlib.typing import RcKeyType

#: A palette: collection (or model) name -> colour, or None for the default.
Palette = Mapping[str, str] | None

#: The shared matplotlib style: readable sizes, no top/right spines, light grid.
RC: Final[dict[RcKeyType, Any]] = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "pdf.fonttype": 42,  # embed TrueType so PDF text stays selectable
}

#: Ink of legend swatches and reference lines that stand for no collection.
NEUTRAL: Final[str] = "#444444"

#: The words written across every figure drawn from simulated data (:func:`stamp`).
SIMULATED_STAMP: Final[str] = "SIMULATED DATA"


class DataSource(Protocol):
    """What a figure-level function takes in place of a table: an :class:`depthlab.auditdata.AuditData`.

    Its tables are drawn and, when it is simulated, the figure says so inside the image.
    """

    @property
    def simulated(self) -> bool: ...  # pragma: no cover

    @property
    def audit(self) -> pl.DataFrame: ...  # pragma: no cover

    @property
    def trials(self) -> pl.DataFrame: ...  # pragma: no cover


def table_of(source: object, table: str, parameter: str, function: str) -> tuple[pl.DataFrame, bool]:
    """The table to draw and whether it is simulated data, from a table or a :class:`DataSource`.

    A table is simulated when it has a ``data`` column saying so (findings tables, and the tables
    built from them, carry one); a data source gives its ``table`` attribute (``"audit"``,
    ``"trials"``) and its own ``simulated``.
    """
    if isinstance(source, pl.DataFrame):
        return source, "data" in source.columns and bool((source["data"] == "simulated").any())
    given, kind = getattr(source, table, None), getattr(source, "simulated", None)
    if isinstance(given, pl.DataFrame) and isinstance(kind, bool):
        return given, kind
    return check_type(source, parameter, function, pl.DataFrame, "a polars DataFrame or an AuditData"), False


def stamp(fig: Figure, simulated: bool) -> Figure:
    """Write :data:`SIMULATED_STAMP` across ``fig`` when ``simulated``; return ``fig``.

    The words are faint and diagonal, over every panel, so no crop or caption can lose them.
    """
    if simulated:
        width, height = fig.get_size_inches()
        fig.text(
            0.5,
            0.5,
            SIMULATED_STAMP,
            ha="center",
            va="center",
            rotation=math.degrees(math.atan2(height, width)) * 0.6,
            fontsize=max(14.0, min(44.0, 5.5 * width)),
            fontweight="bold",
            color="#C0392B",
            alpha=0.16,
            zorder=100,
        )
    return fig


class ShownFigure(Figure):
    """A :class:`~matplotlib.figure.Figure` that IPython and Jupyter display as a PNG image.

    depthlab's figures are built without pyplot (no global state, nothing accumulates), so no backend
    registers them with IPython's display: a bare ``Figure`` as a cell's last expression shows only
    ``<Figure size ...>``. This class adds the rich representation IPython looks for
    (``_repr_png_``), rendered in the shared style exactly as :func:`save` writes it, so a figure shows
    where it is made, with or without ``%matplotlib inline``.

    Examples
    --------
    >>> fig = ShownFigure(figsize=(2, 1))
    >>> fig._repr_png_()[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        with style():
            self.savefig(buffer, format="png", dpi=RC["figure.dpi"], bbox_inches="tight")
        return buffer.getvalue()


def save(fig: Figure, name: str, figures_dir: str | Path) -> tuple[Path, Path]:
    """Write ``fig`` to ``<figures_dir>/<name>.png`` and ``.pdf``; return both paths.

    Each file is written atomically (:mod:`depthlab._atomic`), so a reader never sees half a figure.

    Parameters
    ----------
    fig : Figure
        A figure from this package (or any matplotlib Figure).
    name : str
        File stem: letters, digits, ``-`` and ``_`` only.
    figures_dir : str or Path
        Folder to write to; created when missing.

    Returns
    -------
    tuple of Path
        The PNG and the PDF written.

    Examples
    --------
    >>> import tempfile
    >>> from matplotlib.figure import Figure
    >>> png, pdf = save(Figure(), "empty", tempfile.mkdtemp())
    >>> png.suffix, pdf.suffix
    ('.png', '.pdf')
    """
    check_type(fig, "fig", "save", Figure, "a matplotlib Figure")
    check_string(
        name,
        "name",
        "save",
        expected="a non-empty file stem of [A-Za-z0-9_-]",
        valid=lambda stem: all(ch.isalnum() or ch in "-_" for ch in stem),
    )
    folder = Path(figures_dir)
    folder.mkdir(parents=True, exist_ok=True)
    paths = (folder / f"{name}.png", folder / f"{name}.pdf")
    with style():
        for path in paths:
            with atomic_path(path) as tmp:
                # the temporary name hides the suffix, so the format is named
                fig.savefig(tmp, format=path.suffix[1:], bbox_inches="tight", metadata=_metadata(path.suffix))
    return paths


@contextmanager
def style() -> Iterator[None]:
    """The shared style (:data:`RC`) for what is drawn inside the block."""
    with mpl.rc_context(RC):
        yield


@contextmanager
def into_axes(ax: Axes | None, function: str, figsize: tuple[float, float]) -> Iterator[Axes]:
    """The axes-level preamble: the shared style, and ``ax`` (checked) or a new figure's single Axes."""
    with style():
        if ax is None:
            yield ShownFigure(figsize=figsize, layout="constrained").subplots()
        else:
            yield check_type(ax, "ax", function, Axes, "a matplotlib Axes or None")


@contextmanager
def new_figure(figsize: tuple[float, float]) -> Iterator[tuple[Figure, Axes]]:
    """The figure-level preamble of a one-panel figure: the shared style, a new figure and its Axes."""
    with style():
        fig = ShownFigure(figsize=figsize, layout="constrained")
        yield fig, fig.subplots()


@contextmanager
def new_panels(
    n: int, *, width: float, height: float, ncols: int = 3, sharex: bool = False, sharey: bool = False
) -> Iterator[tuple[Figure, list[Axes]]]:
    """The figure-level preamble of a grid of ``n`` panels of ``width`` x ``height`` inches, ``ncols`` a row.

    Yields the figure and its first ``max(n, 1)`` Axes (the grid's spare cells are hidden).
    """
    with style():
        ncols = max(1, min(ncols, n))
        nrows = max(1, math.ceil(n / ncols))
        fig = ShownFigure(figsize=(width * ncols, height * nrows + 0.4), layout="constrained")
        grid = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False, sharex=sharex, sharey=sharey)).ravel().tolist()
        for ax in grid[n:]:
            ax.set_visible(False)
        yield fig, grid[: max(n, 1)]


def order_of(df: pl.DataFrame, order: Sequence[str] | None, function: str) -> list[str]:
    """The collections to draw: ``order`` (checked), or those of ``df`` in :data:`depthlab.catalog.ORDER`."""
    if order is None:
        return catalog.ordered(df["dataset"].to_list())
    return check_names(order, "order", function)


def check_palette(palette: object, function: str) -> dict[str, str]:
    """``palette`` as a dict when it maps names to matplotlib colours; raise otherwise."""
    return check_mapping(palette, "palette", function, valid=mpl.colors.is_color_like, expected="matplotlib colour")


def palette_of(palette: Palette, function: str) -> Callable[[str], str]:
    """The colour of a collection: from ``palette`` (checked) when it names it, else :func:`depthlab.catalog.color`."""
    if palette is None:
        return catalog.color
    given = check_palette(palette, function)
    return lambda dataset: given.get(dataset) or catalog.color(dataset)


def median_handle() -> Line2D:
    """The legend handle of a median tick (black, never a collection's colour)."""
    return Line2D([], [], color=MEDIAN_COLOUR, linewidth=1.6, label="median")


def plain_log(ax: Axes, axis: str) -> None:
    """Put ``axis`` ("x" or "y") of ``ax`` on a log scale labelled with plain numbers (10, 100, not 10^1)."""
    getattr(ax, f"set_{axis}scale")("log")
    target = ax.xaxis if axis == "x" else ax.yaxis
    low, high = ax.get_xlim() if axis == "x" else ax.get_ylim()
    decades = math.log10(max(high, 1e-9) / max(low, 1e-9))
    # label 1-2-5 steps when the data spans few decades, else only the powers of ten
    target.set_major_locator(mpl.ticker.LogLocator(subs=(1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)))
    target.set_major_formatter(mpl.ticker.FuncFormatter(lambda value, _pos: f"{value:g}"))
    target.set_minor_formatter(mpl.ticker.NullFormatter())


def scale_words(ax: Axes, axis: str) -> str:
    """``", log scale"`` when ``axis`` ("x" or "y") of ``ax`` is drawn on a log scale, else ``""``.

    An axis label says "log scale" only where the axis is one (an empty panel stays linear).
    """
    scale = ax.get_xscale() if axis == "x" else ax.get_yscale()
    return ", log scale" if scale == "log" else ""


def empty_note(ax: Axes, text: str) -> None:
    """Say in the middle of an empty panel why it is empty, with no ticks."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#666666")
    ax.set_xticks([])
    ax.set_yticks([])


def _metadata(suffix: str) -> dict[str, str | None]:
    # no creation date, so re-running reproduce gives byte-stable PDFs where the backend allows
    if suffix == ".pdf":
        return {"Creator": "depthlab", "Producer": None, "CreationDate": None}
    return {"Software": "depthlab"}
