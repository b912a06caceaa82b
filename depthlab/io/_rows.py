"""The row every trial parser returns, and the checks that keep one bad value from failing a whole load.

A row is checked where it is made, so a value the trials table cannot hold (an integer past
its column's range, a reward that is not finite, negative turns, an empty task name) rejects
that trial with its path, instead of failing the frame built from every trial later.
"""

from __future__ import annotations

import math
from typing import Final

import polars as pl

from depthlab import schema
from depthlab.io._errors import Reject

# Rows as the parsers make them: times are microseconds since the epoch until the frame is built.
TIMES: Final[tuple[str, ...]] = ("started_at", "finished_at")

#: Columns of a parser's row: the trials table without ``attempt`` (numbered once all rows are
#: in), plus TB1's attempt hint and the trial's identity (its log's id, else job/trial/task/start),
#: which finds the same trial reached twice.
ROW_SCHEMA: Final[dict[str, pl.DataType]] = {
    **{name: (pl.Int64() if name in TIMES else dtype) for name, dtype in schema.TRIALS.items() if name != "attempt"},
    "attempt_hint": pl.Int32(),
    "identity": pl.String(),
}

_RANGES: Final[dict[type[pl.DataType], tuple[int, int]]] = {
    pl.Int32: (-(2**31), 2**31 - 1),
    pl.Int64: (-(2**63), 2**63 - 1),
}
_INTEGERS: Final[tuple[tuple[str, int, int], ...]] = tuple(
    (name, *_RANGES[type(dtype)]) for name, dtype in ROW_SCHEMA.items() if type(dtype) in _RANGES
)
#: Integer columns that count something, so cannot be negative.
_COUNTS: Final[frozenset[str]] = frozenset(
    {"cap", "turn_limit", "n_turns", "n_input_tokens", "n_output_tokens", "n_cache_tokens", "attempt_hint"}
)
_FLOATS: Final[tuple[str, ...]] = tuple(name for name, dtype in ROW_SCHEMA.items() if isinstance(dtype, pl.Float64))


def check_row(row: dict) -> dict:
    """Return ``row`` when every value fits its column; else reject it, naming the field."""
    path = row["source"]
    for name, low, high in _INTEGERS:
        value = row[name]
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise Reject(path, f"{name} must be an integer, got {value!r}")
        if name in _COUNTS and value < 0:
            raise Reject(path, f"{name} must not be negative, got {value}")
        if not low <= value <= high:
            raise Reject(path, f"{name} {value} is out of range for its column ({low} to {high})")
    for name in _FLOATS:
        value = row[name]
        if value is not None and not math.isfinite(value):
            raise Reject(path, f"{name} must be a finite number, got {value!r}")
    if not isinstance(row["task"], str) or not row["task"].strip():
        raise Reject(path, f"task name {row['task']!r} names no task")
    return row
