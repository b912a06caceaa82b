"""The six collections of the audit, one adapter each, behind one registry.

``load_dataset(name, root)`` returns an :class:`Audit` bundle: the tasks table (W and labels), the
trials with a stated turn cap (``capped``, for D) and the uncapped / leaderboard trials (``public``,
for N and pass rates), each row tagged with ``dataset = name``. ``list_datasets()`` lists the collections
with what their labels mean: a ``difficulty`` column is an author's rating only for TB2; SETA and
FACET difficulties are generation-time LLM labels (FACET's default to "medium"), RST's is inherited
from the synthesis seed (all ``"generated"``); TMax and TW have no difficulty label at all
(``difficulty_source`` ``"none"``). ``expert_time_min`` and
``junior_time_min`` hold human estimates only (TB2's authors); a generated collection's time
estimates stay in ``labels``.

A collection keeps only its own runs (their logs name it) and gives every task its own id.
Any other ``name`` loads a user's own Harbor tree (``<root>/tasks/``, ``<root>/jobs/``) with the
generic loaders, without guessing where a difficulty label came from.

Examples
--------
>>> import depthlab as dl
>>> dl.list_datasets().filter(name="tb2")["difficulty_source"].item()
'human'
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

import polars as pl

from depthlab._checks import check_choice, check_path, parameter_error, parameter_problem
from depthlab.catalog import ordered

# the adapters import only what this package needs anyway (polars, msgspec, io): importing them all
# costs about 1-4% of ``import depthlab.datasets`` (measured), so the registry holds the modules
from depthlab.datasets import facet, rst, seta, tb2, tmax, tw
from depthlab.datasets._base import Audit, DatasetInfo, make_audit
from depthlab.datasets._harbor_tree import load_root
from depthlab.io import STATUS_RULES

__all__ = ["ADAPTERS", "BUNDLED", "Audit", "DatasetInfo", "list_datasets", "load_dataset", "load_datasets"]

#: registry name -> adapter module (each has ``INFO``, ``load`` and ``load_bundled``)
ADAPTERS: dict[str, ModuleType] = {
    "tmax": tmax,
    "facet": facet,
    "seta": seta,
    "rst": rst,
    "tb2": tb2,
    "tw": tw,
}


def list_datasets() -> pl.DataFrame:
    """List the registered collections and what their labels mean.

    Returns
    -------
    pl.DataFrame
        One row per collection: ``name``, ``description`` (one line), ``curation`` (human or
        synthetic), ``difficulty_source`` (human, generated or none), ``human_labels``,
        ``generated_labels``, ``empirical_labels``, ``missing`` and ``layout`` (what
        :func:`load_dataset` expects under ``root``).

    Examples
    --------
    >>> import depthlab as dl
    >>> sorted(dl.list_datasets()["name"])
    ['facet', 'rst', 'seta', 'tb2', 'tmax', 'tw']
    """
    return pl.DataFrame([_adapter(name).INFO.row() for name in ordered(ADAPTERS)])


#: Collections whose published facts ship inside the package (``load_dataset(name)`` with no root).
BUNDLED: tuple[str, ...] = ("tb2",)


def load_dataset(name: str, root: str | Path | None = None, *, status_rule: str = "leaderboard") -> Audit:
    """Load one collection from ``root`` into an :class:`Audit` bundle.

    Parameters
    ----------
    name : str
        A registered collection (``list_datasets()["name"]``: tmax, facet, seta, rst, tb2, tw), or any
        other name for a user's own Harbor tree (``<root>/tasks/``, ``<root>/jobs/``), loaded with
        the generic loaders and ``difficulty_source`` left null (never guessed).
    root : str, Path or None
        The collection's directory; each adapter's docstring documents its layout. None loads the
        tables bundled with depthlab (only for the names in :data:`BUNDLED`: ``tb2``, the published
        TB2.0 task facts and 3,560 public trials; see ``depthlab/datasets/data/tb2/PROVENANCE.md``).
    status_rule : {"leaderboard", "all"}
        How a trial's status is decided (see :func:`depthlab.load_trials`).

    Returns
    -------
    Audit
        ``tasks``, ``capped``, ``public``, ``rejected`` and ``notes`` (what is missing).

    Examples
    --------
    >>> import depthlab as dl
    >>> tb2 = dl.load_dataset("tb2")  # the TB2.0 facts bundled with depthlab; a root loads a fetched copy
    >>> tb2.tasks.height, tb2.public.height
    (89, 3560)
    >>> tb2.notes[-1]
    'no capped runs: D cannot be estimated'
    """
    if not isinstance(name, str) or not name.strip() or "+" in name:
        raise parameter_error("name", "load_dataset", "a non-empty name without '+'", name)
    check_choice(status_rule, "status_rule", "load_dataset", STATUS_RULES)
    if root is None:
        if name not in BUNDLED:
            raise parameter_problem(
                "root",
                "load_dataset",
                f"is required for {name!r}: only {list(BUNDLED)} ship with depthlab (load_dataset(name) with no root)",
            )
        return _adapter(name).load_bundled(name=name, status_rule=status_rule)
    root = check_path(root, "root", "load_dataset")
    if name in ADAPTERS:
        return _adapter(name).load(root, name=name, status_rule=status_rule)
    return _load_generic(root, name=name, status_rule=status_rule)


def load_datasets(roots: Mapping[str, str | Path], *, status_rule: str = "leaderboard") -> Audit:
    """Load several collections and pool them (rows keep their ``dataset`` tag).

    Examples
    --------
    >>> from depthlab.datasets import load_datasets
    >>> pooled = load_datasets({"tb2": "data/public/tb2", "tw": "data/public/tw-tasks"})  # doctest: +SKIP
    """
    if not isinstance(roots, Mapping) or not roots:
        raise parameter_error("roots", "load_datasets", "a non-empty mapping name -> root", roots)
    return Audit.concat([load_dataset(name, root, status_rule=status_rule) for name, root in roots.items()])


def _adapter(name: str) -> ModuleType:
    return ADAPTERS[name]


def _load_generic(root: Path, *, name: str, status_rule: str) -> Audit:
    tree = load_root(root, name, difficulty_source=None, status_rule=status_rule, adopt_any_named=True)
    notes = [
        *tree.notes,
        f"'{name}' is not a registered collection: loaded as a generic Harbor tree; difficulty_source not stated",
    ]
    return make_audit(name, tree.tasks, tree.trials, rejected=tree.rejected, notes=notes)
