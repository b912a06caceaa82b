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
task_steps
    One row per declared step of a multi-step task (per-step W, instruction words, ``min_reward``).
steps
    One row per (trial, declared step) of multi-step trials (:func:`depthlab.load_steps`).
depth
    One row per task, from :func:`depthlab.estimate_depth`.
audit
    One row per task joining tasks, depth, N and public pass rate.
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

#: Step status values: a trial's, or ``skipped`` when a gate (``min_reward``) stopped the trial before the step.
STEP_STATUSES: Final[tuple[str, ...]] = (*STATUSES, "skipped")

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
    "exception_message": pl.String(),  # its message, as the log records it
    "n_turns": pl.Int32(),  # the main agent's turns (a multi-step trial: summed over its steps)
    "n_subagent_turns": pl.Int32(),  # turns of embedded ATIF subagents (not in n_turns); null when none recorded
    "n_steps": pl.Int32(),  # a multi-step trial's declared steps (else the steps it ran); null: single-step
    "steps_passed": pl.Int32(),  # steps whose reward is a pass
    "first_failed_step": pl.Int32(),  # 1-based index of the first step run and not passed; null when none
    "hit_limit": pl.Boolean(),
    "n_input_tokens": pl.Int64(),
    "n_output_tokens": pl.Int64(),
    "n_cache_tokens": pl.Int64(),
    "cost_usd": pl.Float64(),
    "started_at": _UTC,
    "finished_at": _UTC,
    "agent_seconds": pl.Float64(),
    "task_checksum": pl.String(),
    "task_digest": pl.String(),  # lock.json's task digest ("sha256:..."), when the trial has a lock
    "cap_mismatch": pl.Boolean(),  # the cap stated to the agent differs from the limit the harness enforced
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
    "instruction_words": pl.Int32(),  # a multi-step task: summed over its steps' instructions
    "n_steps": pl.Int32(),  # declared [[steps]]; null for a single-step task
    "reward_strategy": pl.String(),  # multi_step_reward_strategy: mean | final (null: single-step)
    "network_mode": pl.String(),  # no-network | public | allowlist (older allow_internet mapped); null: unstated
    "verifier_mode": pl.String(),  # verifier environment_mode: shared | separate; null: unstated
    "schema_version": pl.String(),  # task.toml's format version as written
    "note": pl.String(),  # how the task was read when not plainly (a newer format version)
    "checksum": pl.String(),
    "source": pl.String(),
}

TASK_STEPS: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "step_index": pl.Int32(),  # 1-based, in task.toml's order
    "step": pl.String(),  # the step's name (its folder under steps/)
    "work": pl.Int32(),  # working lines of the step's solution/solve.sh
    "solution_lines_total": pl.Int32(),
    "has_solution": pl.Boolean(),
    "instruction_words": pl.Int32(),
    "min_reward": pl.Float64(),  # the gate on the step's "reward" key; null: no gate
    "min_rewards": pl.String(),  # JSON object of a per-key gate, kept whole
    "verifier_mode": pl.String(),
    "source": pl.String(),
}

STEPS: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "agent": pl.String(),
    "model": pl.String(),
    "cap": pl.Int32(),
    "job": pl.String(),
    "trial": pl.String(),
    "step_index": pl.Int32(),  # 1-based
    "step": pl.String(),
    "status": pl.String(),  # pass | fail | invalid | skipped (a gate stopped the trial before it)
    "reward": pl.Float64(),
    "rewards": pl.String(),
    "n_turns": pl.Int32(),
    "n_input_tokens": pl.Int64(),
    "n_output_tokens": pl.Int64(),
    "n_cache_tokens": pl.Int64(),
    "cost_usd": pl.Float64(),
    "agent_seconds": pl.Float64(),
    "exception": pl.String(),
    "exception_message": pl.String(),
    "source": pl.String(),  # the trial's result.json
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

TABLES: Final[dict[str, dict[str, pl.DataType]]] = {
    "trials": TRIALS,
    "tasks": TASKS,
    "task_steps": TASK_STEPS,
    "steps": STEPS,
    "depth": DEPTH,
    "audit": AUDIT,
}


def empty(table: str) -> pl.DataFrame:
    """Return an empty frame of ``table`` (a key of :data:`TABLES`: 'trials', 'tasks', 'depth', ...)."""
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
