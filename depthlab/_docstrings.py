"""The one docstring-fragment mechanism: shared numpydoc blocks, written once, filled in at definition.

A package keeps its own fragments where they belong (the figures' in :mod:`depthlab.plots._docstrings`,
the findings' in :mod:`depthlab.findings._docs`) and builds its decorator with :func:`filler`. A
docstring names a fragment by a line holding only ``{name}``; the decorator puts the block there,
indented as that line (seaborn's approach). Only such whole-line tokens are replaced, so the braces
of a dict or of a set of choices (``{"all", "solved"}``) are left alone, and a token with no fragment
fails when the function is defined (a typo cannot ship).

Examples
--------
>>> fill = filler({"ax": "ax : matplotlib Axes, optional\\n    Where to draw."})
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

import re
from collections.abc import Callable, Mapping
from typing import Final, TypeVar

__all__ = ["filler"]

_TOKEN: Final[re.Pattern[str]] = re.compile(r"^(?P<indent>[ \t]*)\{(?P<name>\w+)\}[ \t]*$")

Function = TypeVar("Function", bound=Callable[..., object])


def filler(fragments: Mapping[str, str]) -> Callable[[Function], Function]:
    """A decorator filling each whole-line ``{name}`` of a docstring with ``fragments[name]``, indented.

    ``fragments`` maps a name to an unindented numpydoc block. An unknown name raises ``KeyError``
    naming the function and the fragment.
    """

    def fill(function: Function) -> Function:
        if not function.__doc__:
            return function
        lines = []
        for line in function.__doc__.split("\n"):
            match = _TOKEN.match(line)
            if match is None:
                lines.append(line)
                continue
            name = match["name"]
            if name not in fragments:
                raise KeyError(
                    f"{function.__qualname__}'s docstring names the fragment {{{name}}}, which does not exist; "
                    f"known: {sorted(fragments)}"
                )
            lines += [match["indent"] + part if part else "" for part in fragments[name].split("\n")]
        function.__doc__ = "\n".join(lines)
        return function

    return fill
