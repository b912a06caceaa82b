"""Docstring fragments the findings share, written once and substituted into each docstring (seaborn's approach).

A docstring names a fragment on a line of its own, ``{data}``; :func:`docstring` replaces that line
with the fragment, indented like the line, when the function is defined. Everything else in the
docstring is left as written (braces included), so a set of choices such as ``{"all", "solved"}``
needs no escaping.

Examples
--------
>>> @docstring
... def f(data):
...     '''Do something.
...
...     Parameters
...     ----------
...     {data}
...     '''
>>> print(f.__doc__.splitlines()[4].strip())
data : AuditData
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final, TypeVar

__all__ = ["FRAGMENTS", "docstring"]

#: The shared fragments, by name (unindented; :func:`docstring` indents them).
FRAGMENTS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "data": """\
data : AuditData
    The tables of one data source (:func:`depthlab.auditdata.audit_data`).""",
        "n_boot_seed": """\
n_boot, seed : int
    Bootstrap resamples for the CIs (0: none) and their seed.""",
        "returns": """\
Returns
-------
pl.DataFrame
    :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.""",
    }
)

_PLACEHOLDER = re.compile(r"^([ \t]*)\{(\w+)\}[ \t]*$", re.MULTILINE)

F = TypeVar("F", bound=Callable[..., object])


def docstring(function: F) -> F:
    """Substitute the :data:`FRAGMENTS` named on lines of their own in ``function``'s docstring."""

    def fill(match: re.Match[str]) -> str:
        indent, name = match.groups()
        if name not in FRAGMENTS:
            raise KeyError(f"{function.__qualname__}: no docstring fragment {name!r}; known: {sorted(FRAGMENTS)}")
        return "\n".join(indent + line if line else line for line in FRAGMENTS[name].splitlines())

    if function.__doc__:
        function.__doc__ = _PLACEHOLDER.sub(fill, function.__doc__)
    return function
