"""Facts about the collections, written once: display order, display names, colours, curation and label order.

This module sits at the bottom of the house (it imports nothing from depthlab), so the data layer
(:mod:`depthlab.datasets`), the measures (:mod:`depthlab.measures.audit`), the simulator
(:mod:`depthlab.simulate`) and the figures (:mod:`depthlab.plots`) all read the same facts.

* :data:`ORDER`: human-curated collections first, then the synthetic ones, then the paper's own
  DEPTH set; :func:`ordered` sorts any set of collection names that way (unknown names last,
  alphabetically).
* :data:`NAMES` and :func:`name`: display names (``"tw"`` is shown as ``"TW-Verified"``).
* :data:`PALETTE` and :func:`color`: one colour per collection, the same in every figure
  (Okabe-Ito hues, colour-blind safe; DEPTH a dark violet). Grey is reserved for *pooled* rows
  and black for *medians*, so neither ever stands for a collection; a collection outside the
  palette (a user's own Harbor tree) gets a stable colour chosen by a hash of its name.
* :data:`CURATION`: ``"human"`` when people wrote or reviewed the tasks (Terminal-Bench 2.0;
  TerminalWorld-Verified, reviewed by its authors), ``"synthetic"`` when an LLM pipeline generated
  them (TMax, FACET, SETA, RST, and the paper's own DEPTH set).
* :data:`OWN`, :data:`SYNTHETIC`, :data:`HUMAN`, :data:`AUDITED`: the paper's groups of collections,
  derived from :data:`ORDER` and :data:`CURATION` (never restated): its own DEPTH-style set, the
  synthetic and the human-curated audited collections, and the six it audits (synthetic first).

Examples
--------
>>> from depthlab import catalog
>>> catalog.ordered({"depth", "my-tasks", "tb2"})
['tb2', 'depth', 'my-tasks']
>>> catalog.name("tw"), catalog.CURATION["tw"]
('TW-Verified', 'human')
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final

__all__ = [
    "AUDITED",
    "CURATION",
    "HUMAN",
    "MEDIAN_COLOUR",
    "NAMES",
    "ORDER",
    "OWN",
    "PALETTE",
    "POOLED_COLOUR",
    "RUN_NAMES",
    "SYNTHETIC",
    "color",
    "name",
    "ordered",
    "run_collection",
]

#: Display order of the collections: human-curated first, then synthetic, then DEPTH.
ORDER: Final[tuple[str, ...]] = ("tb2", "tw", "tmax", "facet", "seta", "rst", "depth")

#: Display names of the collections.
NAMES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "tb2": "TB2",
        "tw": "TW-Verified",
        "tmax": "TMax",
        "facet": "FACET",
        "seta": "SETA",
        "rst": "RST",
        "depth": "DEPTH",
    }
)

#: One colour per collection, the same in every figure.
PALETTE: Final[Mapping[str, str]] = MappingProxyType(
    {
        "tb2": "#0072B2",
        "tw": "#56B4E9",
        "tmax": "#D55E00",
        "facet": "#E69F00",
        "seta": "#009E73",
        "rst": "#CC79A7",
        "depth": "#5E3C99",
    }
)

#: Curation of each collection (names not listed have none).
CURATION: Final[Mapping[str, str]] = MappingProxyType(
    {
        "tb2": "human",
        "tw": "human",
        "tmax": "synthetic",
        "facet": "synthetic",
        "seta": "synthetic",
        "rst": "synthetic",
        "depth": "synthetic",
    }
)

#: The paper's own multi-segment DEPTH-style set (synthetic, but not one of the collections it audits).
OWN: Final[str] = "depth"

#: The paper's synthetic (LLM-generated) audited collections, in display order; its own set is not among them.
SYNTHETIC: Final[tuple[str, ...]] = tuple(c for c in ORDER if CURATION.get(c) == "synthetic" and c != OWN)

#: The paper's human-curated collections, in display order.
HUMAN: Final[tuple[str, ...]] = tuple(c for c in ORDER if CURATION.get(c) == "human")

#: The six collections the paper audits: the synthetic ones, then the human-curated ones.
AUDITED: Final[tuple[str, ...]] = (*SYNTHETIC, *HUMAN)

#: The dataset names a collection's own runs give in their logs (Harbor's trial ``source``, a job's
#: ``datasets[].name``, a registry id, TB1's ``dataset_name``), or the release folder the runner names
#: them after. A run is a collection's only when its logs give one of these names (and its tasks are
#: the collection's tasks); any other run under the collection's root is foreign. Terminal-Bench 2's
#: runs call it ``terminal-bench`` (Harbor's registry name ``terminal-bench@2.0``).
RUN_NAMES: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "tb2": (
            "tb2",
            "terminal-bench",
            "terminal-bench@2.0",
            "terminal-bench-2",
            "terminal-bench-2.0",
            "terminal-bench-2-0",
        ),
        "tw": ("tw", "terminalworld", "terminal-world", "terminalworld-verified", "artifacts"),
        "tmax": ("tmax", "tmax-15k", "tmax/tmax-15k-harbor", "tmax-15k-harbor"),
        "facet": ("facet", "facet-terminal", "facet-terminal-tasks-6k"),
        "seta": ("seta", "seta-env", "seta-env@1.0", "seta_synth", "seta_evolve"),
        "rst": ("rst", "rts", "recursive-task-synthesis"),
    }
)

#: The difficulty labels' order, easiest first (TB2's author ratings and the generated labels use these words).
DIFFICULTY_ORDER: Final[tuple[str, ...]] = ("easy", "medium", "hard")

#: Colour of rows pooled over collections (never a collection's colour).
POOLED_COLOUR: Final[str] = "#7F7F7F"

#: Colour of median marks (never a collection's colour).
MEDIAN_COLOUR: Final[str] = "#000000"

# colours for collections outside PALETTE, chosen by a stable hash: no grey (pooled), no black (medians)
_EXTRA_COLOURS: Final[tuple[str, ...]] = ("#F0E442", "#8C564B", "#17BECF", "#BCBD22", "#E7298A", "#66A61E")


def ordered(names: Iterable[str | None]) -> list[str]:
    """The distinct collection names of ``names`` in display order; unknown names last, sorted.

    >>> ordered(["tw", "tb2", "zeta", "alpha", "tw", None])
    ['tb2', 'tw', 'alpha', 'zeta']
    """
    present = {value for value in names if value is not None}
    return [key for key in ORDER if key in present] + sorted(present - set(ORDER))


def run_collection(dataset: str | None, collections: Iterable[str] = ORDER) -> str | None:
    """The collection among ``collections`` whose runs give ``dataset`` as their name, else None.

    Names are compared without case (Harbor's registry names are lower case; a release folder
    may not be).

    >>> run_collection("terminal-bench"), run_collection("SETA_Synth"), run_collection("my-bench")
    ('tb2', 'seta', None)
    """
    if dataset is None:
        return None
    wanted = dataset.strip().lower()
    return next((c for c in collections if wanted in RUN_NAMES.get(c, (c,))), None)


def name(dataset: str) -> str:
    """Display name of a collection (its key when unknown).

    >>> name("tb2"), name("my-tasks")
    ('TB2', 'my-tasks')
    """
    return NAMES.get(dataset, dataset)


def color(dataset: str) -> str:
    """Colour of a collection: fixed for known collections, stable by name for others.

    >>> color("tb2")
    '#0072B2'
    >>> color("my-tasks") == color("my-tasks") and color("my-tasks") != POOLED_COLOUR
    True
    """
    if dataset in PALETTE:
        return PALETTE[dataset]
    digest = int(hashlib.sha1(dataset.encode()).hexdigest(), 16)
    return _EXTRA_COLOURS[digest % len(_EXTRA_COLOURS)]
