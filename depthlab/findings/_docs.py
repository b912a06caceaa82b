"""Docstring fragments the findings share, written once and substituted into each docstring (seaborn's approach).

A docstring names a fragment on a line of its own, ``{data}``; :func:`docstring` replaces that line
with the fragment, indented like the line, when the function is defined (the mechanism, shared with
the figures' fragments, is :func:`depthlab._docstrings.filler`). Everything else in the docstring is
left as written (braces included), so a set of choices such as ``{"all", "solved"}`` needs no escaping.

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

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from depthlab._defaults import AUDIT_N_BOOT, AUDIT_SEED
from depthlab._docstrings import filler

__all__ = ["FRAGMENTS", "docstring"]

#: The shared fragments, by name (unindented; :func:`docstring` indents them).
FRAGMENTS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "data": """\
data : AuditData
    The tables of one data source (:func:`depthlab.auditdata.audit_data`).""",
        "n_boot_seed": f"""\
n_boot, seed : int
    Bootstrap resamples for the CIs (0: none) and their seed; default {AUDIT_N_BOOT:,} and {AUDIT_SEED},
    the audit's (:mod:`depthlab._defaults` says why they differ from :mod:`depthlab.stats`').""",
        "returns": """\
Returns
-------
pl.DataFrame
    :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.""",
    }
)

#: Fill a finding's docstring with :data:`FRAGMENTS` (the mechanism is :mod:`depthlab._docstrings`).
docstring = filler(FRAGMENTS)
