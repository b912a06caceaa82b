"""Goldens of the numbers ``depthlab reproduce`` writes (``results/*.json``), and how to compare with them.

``results_demo.json`` and ``results_tb2.json`` hold, per notebook, every findings row as
``[key, group, value, ci_low, ci_high, p, n]``, from the reproduce runs of ``tests/test_notebooks.py``
(the demo at scale 0.15, seed 5, 200 resamples; the bundled TB2 facts, seed 5, 200 resamples).
A change of numbers is made deliberately: run those tests with ``DEPTHLAB_UPDATE_GOLDEN=1`` to
rewrite them, and say in the commit message which rows changed and why.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
COLUMNS = ("key", "group", "value", "ci_low", "ci_high", "p", "n")


def numbers(results: dict[str, dict[str, Any]]) -> dict[str, list[list[Any]]]:
    """The compact golden of a reproduce run's results (``Reproduction.results``)."""
    return {
        notebook: [[row[c] for c in COLUMNS] for row in result["findings"]]
        for notebook, result in sorted(results.items())
    }


def differences(got: dict[str, list[list[Any]]], expected: dict[str, list[list[Any]]]) -> list[str]:
    """Every row that differs, one line each (empty when the numbers are the same)."""
    out = []
    for notebook in sorted(set(got) | set(expected)):
        a, b = got.get(notebook, []), expected.get(notebook, [])
        if len(a) != len(b):
            out.append(f"{notebook}: {len(a)} rows, golden has {len(b)}")
        for row, gold in zip(a, b, strict=False):
            if row[:2] != gold[:2] or not all(_same(x, y) for x, y in zip(row[2:], gold[2:], strict=True)):
                out.append(f"{notebook}: {row} != golden {gold}")
    return out


def check(results: dict[str, dict[str, Any]], name: str) -> list[str]:
    """Compare a run with ``results_<name>.json``; with ``DEPTHLAB_UPDATE_GOLDEN=1`` rewrite it instead."""
    path = HERE / f"results_{name}.json"
    got = numbers(results)
    if os.environ.get("DEPTHLAB_UPDATE_GOLDEN") == "1":
        write(path, got)
        return []
    return differences(got, json.loads(path.read_text()))


def write(path: Path, golden: dict[str, list[list[Any]]]) -> None:
    """Write a golden with one row per line (a changed number is one changed line in a diff)."""
    parts = [
        f"{json.dumps(notebook)}: [\n" + ",\n".join(f" {json.dumps(row)}" for row in rows) + "\n]"
        for notebook, rows in golden.items()
    ]
    path.write_text("{\n" + ",\n".join(parts) + "\n}\n")


def _same(x: Any, y: Any) -> bool:
    if x is None or y is None:
        return x is y
    return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
