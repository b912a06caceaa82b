"""Column names and polars dtypes of every depthlab table, in one place.

Every loader builds its frame through :func:`empty` / :func:`conform` so that the
tables have exactly these columns, in this order, with these dtypes. Nested values
whose keys vary between rows (``rewards``, ``labels``, ``depth_by_model``) are JSON
object strings, so they survive CSV output and concatenation across sources.

Tables
------
trials
    One row per trial (one agent+model on one task, one attempt).
tasks
    One row per task (W, labels).
depth
    One row per task, from :func:`depthlab.estimate_depth`.
audit
    One row per task joining tasks, depth, N and public pass rate.

Further frames declared here (not in :data:`TABLES`): :data:`PLAN` (the cells still to run),
:data:`STEPS` (a trajectory's turns) and :data:`PREFLIGHT_FAILURES` (tasks whose oracle failed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import polars as pl

from depthlab._checks import check_choice

#: The turn-cap ladder stated to the agent.
CAPS: Final[tuple[int, ...]] = (1, 2, 3, 5, 10, 20, 40, 80)

#: The fewest tasks a correlation of the audit is computed on (findings and the proxy's
#: correlations say "fewer than MIN_TASKS tasks" instead of a number below it).
MIN_TASKS: Final[int] = 6

#: Trial status values. ``invalid`` is an infrastructure failure: the cell is still missing.
STATUSES: Final[tuple[str, ...]] = ("pass", "fail", "invalid")

#: Depth status values.
DEPTH_STATUSES: Final[tuple[str, ...]] = ("solved", "unsolved", "incomplete")

#: Where a difficulty label comes from.
DIFFICULTY_SOURCES: Final[tuple[str, ...]] = ("human", "generated", "none")

_UTC = pl.Datetime("us", "UTC")

TRIALS: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "agent": pl.String(),
    "model": pl.String(),
    "cap": pl.Int32(),  # turn cap stated to the agent; null = uncapped
    "turn_limit": pl.Int32(),  # limit the harness enforced (max_turns, max_episodes, ...)
    "job": pl.String(),
    "trial": pl.String(),
    "attempt": pl.Int32(),  # 1-based, from started_at order within (dataset, task, agent, model, cap)
    "reward": pl.Float64(),
    "rewards": pl.String(),  # JSON object of every reward key, kept whole
    "passed": pl.Boolean(),
    "status": pl.String(),  # pass | fail | invalid
    "exception": pl.String(),  # exception type name, null when none
    "n_turns": pl.Int32(),
    "hit_limit": pl.Boolean(),
    "n_input_tokens": pl.Int64(),
    "n_output_tokens": pl.Int64(),
    "n_cache_tokens": pl.Int64(),
    "cost_usd": pl.Float64(),
    "started_at": _UTC,
    "finished_at": _UTC,
    "agent_seconds": pl.Float64(),
    "task_checksum": pl.String(),
    "source": pl.String(),  # path of the file the row was read from
}

TASKS: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "work": pl.Int32(),  # non-blank, non-comment lines of the reference solution
    "solution_lines_total": pl.Int32(),
    "has_solution": pl.Boolean(),
    "work_note": pl.String(),  # why work is null, when it is
    "difficulty": pl.String(),
    "difficulty_source": pl.String(),  # human | generated | none
    "category": pl.String(),
    "tags": pl.List(pl.String()),
    "expert_time_min": pl.Float64(),
    "junior_time_min": pl.Float64(),
    "labels": pl.String(),  # JSON object of further label fields (e.g. TMax task_complexity)
    "instruction_words": pl.Int32(),
    "checksum": pl.String(),
    "source": pl.String(),
}

DEPTH: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "depth": pl.Int32(),  # smallest passing ladder cap, min over models; null unless solved
    "status": pl.String(),  # solved | unsolved | incomplete
    "caps_tried": pl.List(pl.Int32()),
    "caps_missing": pl.List(pl.Int32()),
    "depth_by_model": pl.String(),  # JSON object model -> smallest passing cap (null if none)
    "n_models": pl.Int32(),
    "non_monotone": pl.Boolean(),  # a pass at cap a and only failures at some larger cap b
}

AUDIT: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "curation": pl.String(),  # human | synthetic
    "work": pl.Int32(),
    "difficulty": pl.String(),
    "difficulty_source": pl.String(),
    "category": pl.String(),
    "expert_time_min": pl.Float64(),
    "depth": pl.Int32(),
    "depth_status": pl.String(),
    "n_turns": pl.Float64(),  # median turns of valid uncapped (public) runs, pooled over models
    "hit_limit_share": pl.Float64(),
    "pass_rate": pl.Float64(),  # mean pass over valid public trials, pooled over models
    "n_public_trials": pl.Int32(),
    "proxy_depth": pl.Int32(),  # trajectory depth proxy (depthlab.depth_proxy): lower median over passing runs
    "proxy_n_passing": pl.Int32(),  # passing uncapped runs with a readable trajectory the proxy was read from
}

#: The cells still to run (:func:`depthlab.measures.planning.plan_missing`; ``depthlab plan``).
PLAN: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "model": pl.String(),
    "cap": pl.Int32(),
    "attempts": pl.Int32(),  # further valid attempts to run in this cell
}

#: One row per agent turn of a trajectory (:func:`depthlab.io.atif.read_steps`).
STEPS: Final[dict[str, pl.DataType]] = {
    "turn": pl.Int32(),
    "timestamp": _UTC,
    "message": pl.String(),
    "commands": pl.String(),
    "observation": pl.String(),
    "n_input_tokens": pl.Int64(),
    "n_output_tokens": pl.Int64(),
}

#: The tasks a measurement's preflight excluded (an oracle that did not pass), with why.
PREFLIGHT_FAILURES: Final[dict[str, pl.DataType]] = {
    "task": pl.String(),
    "reason": pl.String(),
    "output": pl.String(),  # the tail of what the oracle or the verifier printed
}


def preflight_failures(rows: list[dict[str, str]] | None = None) -> pl.DataFrame:
    """The preflight failures table (:data:`PREFLIGHT_FAILURES`) of ``rows``; empty without them."""
    return pl.DataFrame(rows or [], schema=PREFLIGHT_FAILURES)


TABLES: Final[dict[str, dict[str, pl.DataType]]] = {
    "trials": TRIALS,
    "tasks": TASKS,
    "depth": DEPTH,
    "audit": AUDIT,
}


def empty(table: str) -> pl.DataFrame:
    """Return an empty frame of ``table`` ('trials', 'tasks', 'depth' or 'audit')."""
    return pl.DataFrame(schema=_columns(table, "schema.empty"))


def conform(df: pl.DataFrame, table: str) -> pl.DataFrame:
    """Select and cast ``df`` to ``table``'s columns, adding missing ones as nulls.

    Extra columns are dropped; the order is the schema's.
    """
    columns = _columns(table, "schema.conform")
    exprs = [
        (pl.col(name).cast(dtype, strict=False) if name in df.columns else pl.lit(None, dtype=dtype)).alias(name)
        for name, dtype in columns.items()
    ]
    return df.select(exprs)


def check(df: pl.DataFrame, table: str) -> None:
    """Raise ValueError when ``df`` does not have exactly ``table``'s columns and dtypes."""
    columns = _columns(table, "schema.check")
    got = dict(zip(df.columns, df.dtypes, strict=True))
    if list(got) != list(columns):
        raise ValueError(f"The {table} table must have columns {list(columns)}, got {list(got)}")
    wrong = {name: str(got[name]) for name, dtype in columns.items() if got[name] != dtype}
    if wrong:
        raise ValueError(f"The {table} table has columns of the wrong dtype: {wrong}")


def _columns(table: str, function: str) -> Mapping[str, pl.DataType]:
    return TABLES[check_choice(table, "table", function, sorted(TABLES))]
