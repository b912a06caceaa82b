"""The row every trial parser returns, and the checks that keep one bad value from failing a whole load.

A row is checked where it is made, so one bad value never fails the frame built from every
trial later. Two kinds of field are told apart:

* what decides the trial's status or identity (task name, reward, exception, cap, the harness's
  turn limit): a value the table cannot hold rejects the trial, with its path and reason;
* what only describes the run (:data:`DESCRIPTIVE`: token counts, cost, times, durations, turns
  counted, the agent's metadata): a bad value is set to null and the row keeps a *field note*
  (``"<field>: <reason>"``, in the :data:`NOTES` column), so its pass or fail is not lost.

One rule for every count and amount that describes the run (tokens, turns, cost): an integer
or a finite number, at least 0, at most its column's limit (cost: :data:`MAX_COST_USD`).
"""

from __future__ import annotations

import math
from typing import Final

import polars as pl

from depthlab import schema
from depthlab.io._errors import Reject

# Rows as the parsers make them: times are microseconds since the epoch until the frame is built.
TIMES: Final[tuple[str, ...]] = ("started_at", "finished_at")

#: Column of a parser's row (and of the cached table) holding its field notes, one per line (null: none).
NOTES: Final[str] = "_notes"

#: Columns of the trials table set once every row is in, not by a parser: ``attempt`` (numbered in order) and
#: what the Harbor version of a trial's job means (read from the job's files once per job:
#: :mod:`depthlab.io.harbor_versions`).
SET_AFTER: Final[tuple[str, ...]] = ("attempt", "harbor_version", "version_note")

#: Columns of a parser's row: the trials table without :data:`SET_AFTER`, plus TB1's attempt hint and the
#: trial's identity (its log's id, else job/trial/task/start), which finds the same trial reached twice.
ROW_SCHEMA: Final[dict[str, pl.DataType]] = {
    **{
        name: (pl.Int64() if name in TIMES else dtype) for name, dtype in schema.TRIALS.items() if name not in SET_AFTER
    },
    "attempt_hint": pl.Int32(),
    "identity": pl.String(),
    NOTES: pl.String(),
}

#: Fields that describe the run without deciding its status: a bad value is nulled with a note.
DESCRIPTIVE: Final[frozenset[str]] = frozenset(
    {
        "n_turns",
        "n_input_tokens",
        "n_output_tokens",
        "n_cache_tokens",
        "cost_usd",
        "started_at",
        "finished_at",
        "agent_seconds",
        "task_checksum",
        "agent",
        "model",
        "exception_message",
        "n_subagent_turns",
        "task_digest",
        "cap_mismatch",
    }
)
#: Columns a parser may leave out of its row (formats that have no such record): null.
OPTIONAL: Final[tuple[str, ...]] = (
    "exception_message",
    "n_subagent_turns",
    "n_steps",
    "steps_passed",
    "first_failed_step",
    "task_digest",
    "cap_mismatch",
    "harbor_reward_valid",
    "exception_policy",
)
#: The largest cost of one trial taken as real, in US dollars; a larger one is nulled with a note.
MAX_COST_USD: Final[float] = 1e6

_RANGES: Final[dict[type[pl.DataType], tuple[int, int]]] = {
    pl.Int32: (-(2**31), 2**31 - 1),
    pl.Int64: (-(2**63), 2**63 - 1),
}
_INTEGERS: Final[tuple[tuple[str, int, int], ...]] = tuple(
    (name, *_RANGES[type(dtype)]) for name, dtype in ROW_SCHEMA.items() if type(dtype) in _RANGES
)
#: Integer columns that count something, so cannot be negative.
_COUNTS: Final[frozenset[str]] = frozenset(
    {
        "cap",
        "turn_limit",
        "n_turns",
        "n_subagent_turns",
        "n_steps",
        "steps_passed",
        "first_failed_step",
        "n_input_tokens",
        "n_output_tokens",
        "n_cache_tokens",
        "attempt_hint",
    }
)
# (name, low, high, the least value a row may hold: 0 for counts)
_INTEGER_BOUNDS: Final[tuple[tuple[str, int, int, int], ...]] = tuple(
    (name, low, high, 0 if name in _COUNTS else low) for name, low, high in _INTEGERS
)
_FLOATS: Final[tuple[str, ...]] = tuple(name for name, dtype in ROW_SCHEMA.items() if isinstance(dtype, pl.Float64))


def note(notes: list[str], field: str, reason: str) -> None:
    """Record that ``field`` was set to null, and why."""
    notes.append(f"{field}: {reason}")


def check_row(row: dict, notes: list[str] | None = None) -> dict:
    """Return ``row`` with every value fitting its column: a bad descriptive field nulled with a note, else a rejection.

    ``notes`` are the field notes the parser already made (a date it could not read, ...).
    """
    path = row["source"]
    notes = [] if notes is None else notes
    for name in OPTIONAL:
        row.setdefault(name, None)
    for name, low, high, least in _INTEGER_BOUNDS:
        value = row[name]
        if value is None or (type(value) is int and least <= value <= high):
            continue  # the common case, decided at once
        reason = None
        if isinstance(value, float) and value.is_integer() and name in DESCRIPTIVE:
            value = row[name] = int(value)  # 1000.0 tokens is 1000 tokens
        if isinstance(value, bool) or not isinstance(value, int):
            reason = f"{name} must be an integer, got {value!r}"
        elif name in _COUNTS and value < 0:
            reason = f"{name} must not be negative, got {value}"
        elif not low <= value <= high:
            reason = f"{name} {value} is out of range for its column ({low} to {high})"
        if reason is None:
            continue
        if name not in DESCRIPTIVE:
            raise Reject(path, reason)
        note(notes, name, reason.removeprefix(f"{name} "))
        row[name] = None
    for name in _FLOATS:
        value = row[name]
        if value is None:
            continue
        reason = None
        if isinstance(value, bool) or not isinstance(value, int | float):
            reason = f"must be a number, got {value!r}"
        elif not math.isfinite(value):
            reason = f"must be a finite number, got {value!r}"
        elif name == "cost_usd" and not 0 <= value <= MAX_COST_USD:
            reason = f"must be between 0 and {MAX_COST_USD:g} US dollars, got {value!r}"
        elif name == "agent_seconds" and value < 0:
            reason = f"must not be negative (the phase ends before it starts), got {value!r}"
        if reason is None:
            row[name] = float(value)
            continue
        if name not in DESCRIPTIVE:
            raise Reject(path, f"{name} {reason}")
        note(notes, name, reason)
        row[name] = None
    for name in ("agent", "model", "task_checksum", "exception_message", "task_digest"):
        if row[name] is not None and not isinstance(row[name], str):
            note(notes, name, f"must be a string, got {row[name]!r}")
            row[name] = None
    if not isinstance(row["task"], str) or not row["task"].strip():
        raise Reject(path, f"task name {row['task']!r} names no task")
    if row["hit_limit"] is not None and (row["n_turns"] is None or row["turn_limit"] is None):
        row["hit_limit"] = None  # its turns were nulled above
    for name in _TEXTS:
        value = row[name]
        if type(value) is str and not value.isascii() and not _utf8(value):
            row[name] = shown(value)
            if name == "source":
                note(notes, name, "the path is not UTF-8; its bytes are shown as \\x escapes")
    row[NOTES] = "\n".join(notes) if notes else None
    return row


_TEXTS: Final[tuple[str, ...]] = tuple(
    name for name, dtype in ROW_SCHEMA.items() if isinstance(dtype, pl.String) and name != NOTES
)


def _utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(text: str) -> str:
    """``text`` as the tables can hold it: a file name's bytes that are not UTF-8 shown as ``\\xNN`` escapes.

    Examples
    --------
    >>> import os
    >>> shown(os.fsdecode(b"trial-\\xff"))
    'trial-\\\\xff'
    >>> shown("caf\u00e9")
    'café'
    """
    if _utf8(text):
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
