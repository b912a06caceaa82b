"""Exports to the tools researchers read runs in: Inspect Scout, Docent and METR's time-horizon input.

* :func:`export_scout`: an Inspect Scout transcript database (Parquet) ``transcripts_from`` opens.
* :func:`export_docent`: Docent AgentRuns (JSONL) in the shape of Docent's Harbor converter.
* :func:`export_metr`: METR's ``runs.jsonl`` with each task's human minutes.
* :func:`export_runs`: any of them by name (``depthlab export PEER RUNS... -o OUT``).

Each takes a trials table and depthlab's other tables (depth, tasks, checks), writes the peer's
format with depthlab's own writers (no peer package is imported or required), and returns an
:class:`ExportReport`: trials in, runs out, and one line per trial for what could not be carried.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from depthlab._checks import check_choice
from depthlab.export._trials import PEERS, ExportReport
from depthlab.export.docent import export_docent
from depthlab.export.metr import export_metr
from depthlab.export.scout import export_scout

__all__ = ["PEERS", "ExportReport", "export_docent", "export_metr", "export_runs", "export_scout"]


def export_runs(
    peer: str,
    trials: pl.DataFrame,
    out: str | Path,
    *,
    depth: pl.DataFrame | None = None,
    tasks: pl.DataFrame | None = None,
    checks: pl.DataFrame | None = None,
) -> ExportReport:
    """Export trials to ``peer`` (:data:`PEERS`): :func:`export_scout`, :func:`export_docent` or :func:`export_metr`.

    METR's runs carry no check verdicts: ``checks`` is not used for ``metr``.

    Examples
    --------
    >>> import polars as pl
    >>> export_runs("excel", pl.DataFrame(), "out")
    Traceback (most recent call last):
    ...
    ValueError: The 'peer' parameter of export_runs must be one of ['scout', 'docent', 'metr'], got 'excel'
    """
    check_choice(peer, "peer", "export_runs", PEERS)
    if peer == "scout":
        return export_scout(trials, out, depth=depth, tasks=tasks, checks=checks)
    if peer == "docent":
        return export_docent(trials, out, depth=depth, tasks=tasks, checks=checks)
    return export_metr(trials, out, depth=depth, tasks=tasks)
