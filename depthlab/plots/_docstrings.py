"""Docstring fragments the figure functions share, written once (seaborn's approach).

A parameter block that many functions take (``order``, ``palette``, ``ax`` ...) is written here
once; a docstring names it by a line holding only ``{key}`` and :func:`fill` puts the block there,
indented as that line. The mechanism (shared with the findings' fragments) is
:func:`depthlab._docstrings.filler`: only whole-line tokens are replaced, and a token with no
fragment fails at import.

>>> @fill
... def f(ax=None):
...     '''Draw.
...
...     Parameters
...     ----------
...     {ax}
...     '''
>>> print(f.__doc__.splitlines()[4])
    ax : matplotlib Axes, optional
"""

from __future__ import annotations

from typing import Final

from depthlab._docstrings import filler

__all__ = ["FRAGMENTS", "fill"]

#: The shared blocks, by token (numpydoc, unindented; :func:`fill` indents them).
FRAGMENTS: Final[dict[str, str]] = {
    "order": (
        "order : sequence of str, optional\n"
        "    Collections to draw, in this order (default: the ones present, in\n"
        "    :data:`depthlab.catalog.ORDER`)."
    ),
    "palette": (
        "palette : mapping of str to colour, optional\n"
        "    Colour per collection (default :func:`depthlab.catalog.color`, the same in every figure;\n"
        "    collections it does not name keep their default)."
    ),
    "model_order": (
        "order : sequence of str, optional\n    Models to draw, in this order (default: those present, sorted)."
    ),
    "model_palette": (
        "palette : mapping of str to colour, optional\n"
        "    Colour per model (default: a set of dark hues distinct from the collections')."
    ),
    "ax": (
        "ax : matplotlib Axes, optional\n"
        "    Where to draw (default: the single Axes of a new figure, built without pyplot)."
    ),
    "dataset": "dataset : str\n    The collection to draw.",
    "color": (
        "color : colour, optional\n    Colour of the marks (default: the collection's, :func:`depthlab.catalog.color`)."
    ),
    "caps": "caps : sequence of int\n    The cap ladder (default :data:`depthlab.CAPS`).",
    "turns": "turns : (low, high)\n    The interval of uncapped turn counts N, inclusive (the paper uses 6–10).",
    "ci": "ci : float\n    Coverage of the Wilson intervals (:func:`depthlab.stats.proportion_ci`), default 0.95.",
    "jitter": "jitter : float\n    Vertical jitter of the points, in pass-rate units (at most 0.1).",
    "label": (
        "label : str\n"
        "    The ordinal label column (default ``difficulty``; ``easy < medium < hard`` of\n"
        "    :data:`depthlab.catalog.DIFFICULTY_ORDER` come first, other values after, sorted)."
    ),
    "adjust": (
        'adjust : {"holm", "bonferroni", "fdr_bh"} or None\n'
        "    Multiple-comparison adjustment of the printed p-values (None: raw only). The intervals\n"
        "    drawn are the unadjusted ones."
    ),
    "returns_axes": "Returns\n-------\nAxes\n    The Axes drawn into (``ax``, or the new one).",
    "returns_figure": (
        "Returns\n-------\nFigure\n    A new figure (no pyplot state); write it with :func:`depthlab.plots.save`."
    ),
}

#: Fill a figure function's docstring with :data:`FRAGMENTS` (the mechanism is :mod:`depthlab._docstrings`).
fill = filler(FRAGMENTS)
