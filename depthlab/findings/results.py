"""A notebook's results: its findings and the "paper reports / this data gives" table, written as JSON.

Reporting code: it sits with the findings (layer 5), above the data library it reads
(:class:`~depthlab.auditdata.AuditData`), so loading data never imports the findings.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import polars as pl

from depthlab import _atomic, paper
from depthlab.auditdata import AuditData
from depthlab.findings._core import stack

__all__ = ["record_results"]


def record_results(
    notebook: str,
    findings: pl.DataFrame | Sequence[pl.DataFrame],
    *,
    results_dir: str | Path,
    data: AuditData,
    figures: Iterable[str | Path] = (),
) -> pl.DataFrame:
    """Write a notebook's findings to ``<results_dir>/<notebook>.json`` and return the paper-versus-data table.

    Parameters
    ----------
    notebook : str
        Notebook name, e.g. ``"03_depth_predicts_difficulty"``.
    findings : pl.DataFrame or sequence of them
        Tables from :mod:`depthlab.findings` (the columns of :data:`depthlab.findings.FINDING`).
    results_dir : str or Path
        Folder of the results JSON files.
    data : AuditData
        The data the findings were computed on: its source and whether it is simulated are written
        at the top of the JSON.
    figures : iterable of str or Path
        The figures the notebook saved (paths from :func:`depthlab.plots.save`, or names).

    Returns
    -------
    pl.DataFrame
        :func:`depthlab.paper.compare` of the findings the paper also reports.

    Examples
    --------
    >>> import tempfile
    >>> from depthlab import findings
    >>> from depthlab.auditdata import audit_data
    >>> data = audit_data("tb2")
    >>> folder = tempfile.mkdtemp()
    >>> out = record_results("01_x", findings.collection_counts(data), results_dir=folder, data=data)
    >>> out["key"].to_list(), sorted(p.name for p in Path(folder).iterdir())
    (['audited_tasks'], ['01_x.json'])
    """
    table = stack(findings)
    comparison = paper.compare(table)
    names = list(dict.fromkeys(Path(f).stem for f in figures))
    payload = {
        "notebook": notebook,
        "data": {"kind": data.kind, "source": data.source, "banner": data.banner()},
        "findings": [{k: _json_value(v) for k, v in row.items()} for row in table.to_dicts()],
        "figures": names,
        "comparison": [{k: _json_value(v) for k, v in row.items()} for row in comparison.to_dicts()],
    }
    _atomic.write_text(Path(results_dir) / f"{notebook}.json", json.dumps(payload, indent=1, default=str) + "\n")
    return comparison


def _json_value(value: object) -> object:
    # JSON has no NaN or infinity: a number that is not finite is written as null
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    return value
