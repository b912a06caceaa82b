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

Further frames declared here (not in :data:`TABLES`): :data:`PLAN` (the cells still to run),
:data:`TRAJECTORY_STEPS` (a trajectory's turns) and :data:`PREFLIGHT_FAILURES` (tasks whose oracle failed).
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

#: The Harbor that ran a trial's job and what that version changes in the row (depthlab.io.harbor_versions): the
#: trials table's and the steps table's alike, so a multi-step trial of a Harbor older than its between-steps fix
#: is flagged the same way in both (null for a TB1 trial, or a job whose lock names no Harbor).
HARBOR_VERSION_COLUMNS: Final[dict[str, pl.DataType]] = {
    "harbor_version": pl.String(),  # the Harbor that ran the trial's job (its lock.json's harbor.version)
    "version_note": pl.String(),  # why that version changes the row (a multi-step trial before the between-steps fix)
}

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
    # Harbor's meaning, by the version that wrote the trial (depthlab.io.harbor_versions); null for a TB1 trial
    "harbor_reward_valid": pl.Boolean(),  # Harbor's reward_valid: as recorded (Harbor >= 0.26), else by its rule
    "exception_policy": pl.String(),  # JSON {should_retry, should_grade, has_valid_reward} of the trial's exception
    **HARBOR_VERSION_COLUMNS,
    "source": pl.String(),  # path of the file the row was read from
}

#: The column naming the task version a row was measured on: the trials table's ``task_checksum`` (Harbor's
#: ``Task.checksum``, the Dirhash of the task folder; the tasks table's ``checksum``), carried by every D (the
#: depth table), W (the audit table) and check verdict (the checks table), so a result names what it measured.
TASK_CHECKSUM: Final[str] = "task_checksum"
#: The column of the version a task's task.toml states (``[task].version``, Harbor's semantic version), beside it.
TASK_VERSION: Final[str] = "task_version"
_VERSION_COLUMNS: Final[dict[str, pl.DataType]] = {TASK_CHECKSUM: pl.String(), TASK_VERSION: pl.String()}

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
    "task_version": pl.String(),  # [task].version when task.toml states one
    "source": pl.String(),
    # the collection's cluster of near-duplicate tasks (RST's rewrites of one seed): bootstraps resample
    # whole groups where a collection has them; null elsewhere
    "task_group": pl.String(),
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
    **HARBOR_VERSION_COLUMNS,  # a step a leaky Harbor ran after another (its agent could read that one's tests)
    "source": pl.String(),  # the trial's result.json
}

DEPTH: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "depth": pl.Int32(),  # smallest passing ladder cap, min over models; null unless solved
    # the ladder's interval (its rounding), not an interval for the true depth: the turns D stands for
    "depth_low": pl.Int32(),  # D > depth_low: the ladder cap below D (0 below the first); the top cap if unsolved
    "depth_high": pl.Int32(),  # D <= depth_high: D itself when solved; null when unsolved (right-censored)
    "status": pl.String(),  # solved | unsolved | incomplete
    "caps_tried": pl.List(pl.Int32()),
    "caps_missing": pl.List(pl.Int32()),
    "depth_by_model": pl.String(),  # JSON object model -> smallest passing cap (null if none)
    "n_models": pl.Int32(),
    "non_monotone": pl.Boolean(),  # a pass at cap a and only failures at some larger cap b
    # an interval for the task's true depth under the noise model fitted to the runs (estimate_depth's level):
    # the true depth in (ci_low, ci_high]; ci_high null when it may lie beyond the top cap; null when not computed
    "ci_low": pl.Int32(),
    "ci_high": pl.Int32(),
    # pass_rule="bayes": the posterior probability of the reported rung (depth, or beyond the top cap); else null
    "p_depth": pl.Float64(),
    **_VERSION_COLUMNS,  # the task version D was measured on; null where its trials ran on several
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
    "task_group": pl.String(),  # the task's cluster of near-duplicates (schema.TASKS), null where none
    **_VERSION_COLUMNS,  # the task version its W was read from (the tasks table's checksum)
}

#: The cells still to run (:func:`depthlab.measures.planning.plan_missing`; ``depthlab plan``).
PLAN: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "model": pl.String(),
    "cap": pl.Int32(),
    "attempts": pl.Int32(),  # further valid attempts to run in this cell
}

#: One row per agent turn of a trajectory (:func:`depthlab.io.atif.read_steps`; ATIF calls a turn a step).
TRAJECTORY_STEPS: Final[dict[str, pl.DataType]] = {
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


#: The checks of ``depthlab check``, in the table's order (:mod:`depthlab.checks`).
CHECK_NAMES: Final[tuple[str, ...]] = (
    "oracle",
    "before",
    "key_removed",
    "next_after_key",
    "mutants",
    "named_in_instruction",
    "fix_not_in_instruction",
    "lint",
)

#: A check's outcome: ``ok`` the task meets the rule, ``fault`` it does not; ``flaky`` (replays differ),
#: ``not_marked`` (no key-step mark), ``not_applicable``, ``error`` (the check could not be made), ``note``
#: (the rule is met, something beside it is worth reading: a style rule of ``harbor lint``, a hidden verifier input).
CHECK_OUTCOMES: Final[tuple[str, ...]] = ("ok", "fault", "flaky", "not_marked", "not_applicable", "error", "note")

#: One row per task, step and check (:func:`depthlab.checks.check_tasks`). ``step`` is the step's name
#: (the task's for a single-step task; null for a task-wide check, ``lint``); ``caught``/``total`` the
#: mutants caught of those replayed (for a static check ``total`` is what it checked); ``work`` the
#: step's W; ``replays`` and ``seconds`` what the check cost (replays shared by checks are counted once,
#: the oracle's on its first step); ``evidence`` one line of why; ``trials`` the replays' trial folders.
CHECKS: Final[dict[str, pl.DataType]] = {
    "task": pl.String(),
    "step": pl.String(),
    "step_index": pl.Int32(),
    "check": pl.String(),
    "outcome": pl.String(),
    "caught": pl.Int32(),
    "total": pl.Int32(),
    "work": pl.Int32(),
    "replays": pl.Int32(),
    "seconds": pl.Float64(),
    "evidence": pl.String(),
    "trials": pl.String(),
    **_VERSION_COLUMNS,  # the task version the check replayed
}


#: The paper's verifier-rule counts beside this data's (:func:`depthlab.findings.verifiers_see_key_steps`):
#: one row per rule and source (``paper`` or ``data``), the steps meeting the rule (``k``) of those judged
#: (``n``: outcome ``ok`` or ``fault``), the share and its 95% Wilson interval, and which sample it is.
KEY_STEP_RULES: Final[dict[str, pl.DataType]] = {
    "check": pl.String(),
    "source": pl.String(),
    "k": pl.Int64(),
    "n": pl.Int64(),
    "share": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "sample": pl.String(),
}


TABLES: Final[dict[str, dict[str, pl.DataType]]] = {
    "trials": TRIALS,
    "tasks": TASKS,
    "task_steps": TASK_STEPS,
    "steps": STEPS,
    "depth": DEPTH,
    "audit": AUDIT,
    "checks": CHECKS,
}


def empty(table: str) -> pl.DataFrame:
    """Return an empty frame of ``table`` (a key of :data:`TABLES`: 'trials', 'tasks', 'depth', ...)."""
    return pl.DataFrame(schema=_columns(table, "schema.empty"))


def version_columns(tasks: pl.DataFrame) -> pl.DataFrame:
    """A tasks table's version of each task as a D, W or check verdict names it: ``dataset``, ``task``,
    :data:`TASK_CHECKSUM` (the tasks table's ``checksum``) and :data:`TASK_VERSION`, one row per task.

    Examples
    --------
    >>> tasks = conform(pl.DataFrame({"dataset": ["d"], "task": ["t"], "checksum": ["ab12"]}), "tasks")
    >>> version_columns(tasks).rows()
    [('d', 't', 'ab12', None)]
    """
    checksum = pl.col("checksum") if "checksum" in tasks.columns else pl.lit(None, dtype=pl.String)
    version = pl.col(TASK_VERSION) if TASK_VERSION in tasks.columns else pl.lit(None, dtype=pl.String)
    return tasks.select(
        "dataset", "task", checksum.cast(pl.String).alias(TASK_CHECKSUM), version.cast(pl.String).alias(TASK_VERSION)
    ).unique(["dataset", "task"], keep="first", maintain_order=True)


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


# ---------------------------------------------------------------------------------------------
# Tables of the findings, the paper's comparison and the depth proxy (each declared once here; the
# modules that build them read these: depthlab.findings, depthlab.paper, depthlab.measures.proxy)

#: Columns of every findings table (:mod:`depthlab.findings`).
FINDING: Final[dict[str, pl.DataType]] = {
    "key": pl.String(),  # the statistic, e.g. "pcorr_pass_depth_given_work"
    "group": pl.String(),  # the collection, group of collections, model or cell it is computed on
    "value": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "interval": pl.String(),  # "ci95" (confidence interval), "range" (span of values) or null
    "p": pl.Float64(),
    "n": pl.Int64(),
    "unit": pl.String(),  # what n counts: tasks, runs, pairs
    "collections": pl.String(),  # the collections of the sample, comma-separated
    "models": pl.String(),  # the models whose runs count, comma-separated
    "data": pl.String(),  # "simulated" or "real"
    "detail": pl.String(),  # one line: the definition's choices, counts behind a share
}

#: Columns of :func:`depthlab.paper.table`: every number the paper reports.
PAPER_REPORTED: Final[dict[str, pl.DataType]] = {
    "key": pl.String(),
    "description": pl.String(),
    "sample": pl.String(),
    "paper": pl.String(),  # the number as printed
    "value": pl.Float64(),
    "low": pl.Float64(),
    "high": pl.Float64(),
    "interval": pl.String(),
    "function": pl.String(),
}

#: Columns of :func:`depthlab.paper.compare`: this data's findings beside the paper's numbers.
PAPER_COMPARISON: Final[dict[str, pl.DataType]] = {
    "key": pl.String(),
    "description": pl.String(),
    "paper": pl.String(),
    "paper_sample": pl.String(),
    "this_data": pl.String(),
    "this_sample": pl.String(),
    "function": pl.String(),
    "paper_value": pl.Float64(),
    "this_value": pl.Float64(),
    "this_low": pl.Float64(),
    "this_high": pl.Float64(),
    "data": pl.String(),
}

#: Columns of :func:`depthlab.measures.proxy.turn_dependencies`.
PROXY_DEPENDENCIES: Final[dict[str, pl.DataType]] = {
    "turn": pl.Int32(),
    "level": pl.Int32(),
    "depends_on": pl.List(pl.Int32()),
    "identifiers": pl.List(pl.List(pl.String())),  # aligned with depends_on
    "on_chain": pl.Boolean(),  # on one longest chain (the one traced back from the last deepest turn)
    "uses": pl.String(),  # the same, readable: "t3: a_1, b_2; t5: x_9" (null when the turn depends on nothing)
}
#: Columns of ``depth_proxy(per="trial")``.
PROXY_TRIALS: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "model": pl.String(),
    "trial": pl.String(),
    "passed": pl.Boolean(),
    "n_turns": pl.Int32(),  # turns of the trajectory read (may differ from the trials table's count)
    "proxy_depth": pl.Int32(),  # null when the trajectory could not be read
}
#: Columns of ``depth_proxy(per="task")``.
PROXY_TASKS: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "proxy_depth": pl.Int32(),  # lower median over passing trials with a readable trajectory
    "proxy_depth_min": pl.Int32(),
    "n_passing": pl.Int32(),  # passing trials with a readable trajectory
    "proxy_rung": pl.Int32(),  # smallest ladder cap >= proxy_depth (null above the top cap)
}

#: Columns of :func:`depthlab.measures.proxy.proxy_correlations` (``PartialCorr.to_row``'s, question to note).
PROXY_CORRELATIONS: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "question": pl.String(),
    "label": pl.String(),  # "<dataset>: <question>", for depthlab.plots.forest
    "r": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "p": pl.Float64(),
    "n": pl.Int64(),
    "k": pl.Int64(),
    "method": pl.String(),
    "n_boot": pl.Int64(),
    "n_degenerate": pl.Int64(),
    "n_dropped": pl.Int64(),
    "x": pl.String(),
    "y": pl.String(),
    "covar": pl.String(),
    "ci": pl.Float64(),
    "statistic": pl.String(),
    "cluster": pl.String(),
    "note": pl.String(),
}

#: Columns of :func:`depthlab.measures.proxy.proxy_summary`: the proxy beside D and N, per collection.
PROXY_COVERAGE: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    **dict.fromkeys(("n_tasks", "n_proxy", "n_depth", "n_both"), pl.Int32()),
    **dict.fromkeys(
        ("median_proxy", "median_depth", "median_turns", "rho_proxy_depth", "rho_proxy_turns", "share_same_rung"),
        pl.Float64(),
    ),
}

#: Columns of :func:`depthlab.evidence.task_evidence`: one task's model x cap grid.
EVIDENCE: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "model": pl.String(),
    "cap": pl.Int32(),
    "state": pl.String(),  # pass | fail | invalid | missing
    "n_runs": pl.Int32(),  # every run in the cell, invalid ones too
    "n_valid": pl.Int32(),
    "n_pass": pl.Int32(),
    "turns": pl.List(pl.Int32()),  # turns each run took, by attempt (null for a run without a count)
    "model_depth": pl.Int32(),  # the model's own D: its smallest passing cap
    "depth": pl.Int32(),  # the task's estimated D over the models in the grid; null unless solved
    "depth_status": pl.String(),  # solved | unsolved | incomplete
    "needed": pl.Boolean(),  # plan_missing's sweep would run this cell
    "next": pl.Boolean(),  # plan_missing's adaptive mode runs this cell in its next round
}

#: Columns of :func:`depthlab.evidence.example_tasks`: the telling tasks for static evidence grids.
EXAMPLE_TASKS: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "why": pl.String(),  # deepest solved | solved at D = 1 | unsolved | incomplete | solved
}

#: Columns of :attr:`depthlab.simulate.SimulationSummary.truth`: the demo's true depth and work per task.
SIMULATED_TRUTH: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "depth_true": pl.Int32(),  # turns that must happen in sequence (not a ladder cap)
    "d_star": pl.Int32(),  # the true D on the ladder: the cap the estimator should find; null beyond the top cap
    "w_star": pl.Int32(),
    "n_segments": pl.Int32(),
    "segments": pl.List(pl.Int32()),
    "derived_from": pl.String(),
    "environment": pl.String(),
    "checksum": pl.String(),
}

#: Columns of :attr:`depthlab.simulate.SimulationSummary.model_truth`: each model's true depth per task.
SIMULATED_MODEL_TRUTH: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "model": pl.String(),
    "effective_depth": pl.Int32(),  # turns the model needs (null: never passes)
    "model_depth": pl.Int32(),  # the model's smallest passing ladder cap (null: none)
}

#: Columns of :meth:`depthlab.simulate.noisy.NoisyTasks.truth`: the noisy model's true D per task.
NOISY_TRUTH: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "d_star": pl.Int32(),  # the true D on the ladder (the same name as SIMULATED_TRUTH's); null beyond the top cap
}

#: Columns of :func:`depthlab.measures.censored.censored_distribution`: D's share per ladder cap, two variants.
CENSORED_DISTRIBUTION: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "variant": pl.String(),  # censored (Turnbull, every task) | solved_only (the paper's)
    "depth": pl.Int32(),  # the cap D is read as (the right end of its interval); null: beyond the top cap
    "share": pl.Float64(),  # the mass at this D
    "cumulative": pl.Float64(),  # the mass at this D or below
    "n_tasks": pl.Int64(),  # tasks in the variant's sample
}

#: Columns of :func:`depthlab.measures.censored.censored_depth`: D's distribution with unsolved tasks right-censored.
CENSORED_DEPTH: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "statistic": pl.String(),  # share_le_3 | share_ge_5 | median
    "variant": pl.String(),  # censored (Turnbull, every task) | solved_only (the paper's)
    "value": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "interval": pl.String(),  # "percentile95": a 95% percentile bootstrap interval over tasks
    "n_tasks": pl.Int64(),  # tasks in the sample (solved and unsolved; solved only for solved_only)
    "n_unsolved": pl.Int64(),
    "n_degenerate": pl.Int64(),  # resamples where the statistic is undefined (left out)
}

#: Columns of the Inspect Scout transcript database :func:`depthlab.export.export_scout` writes: Scout's own
#: transcript fields first (its parquet schema: strings, ``task_repeat``, ``message_count`` and ``total_tokens``
#: integers, ``success`` and ``trust_content`` booleans, ``total_time`` a float; JSON fields as strings), then
#: depthlab's metadata, one column each (Scout reads every column beyond its own as the transcript's metadata).
SCOUT_TRANSCRIPTS: Final[dict[str, pl.DataType]] = {
    "transcript_id": pl.String(),
    "source_type": pl.String(),
    "source_id": pl.String(),
    "source_uri": pl.String(),
    "date": pl.String(),
    "task_set": pl.String(),
    "task_id": pl.String(),
    "task_repeat": pl.Int64(),
    "agent": pl.String(),
    "agent_args": pl.String(),
    "model": pl.String(),
    "model_options": pl.String(),
    "score": pl.String(),  # JSON: the trial's rewards object (every key), else its reward
    "score_explanation": pl.String(),  # the verifier's output
    "success": pl.Boolean(),  # passed; null for an invalid trial (no valid reward)
    "message_count": pl.Int64(),
    "total_time": pl.Float64(),  # the agent's seconds
    "total_tokens": pl.Int64(),
    "error": pl.String(),
    "limit": pl.String(),  # "turns" when the stated turn cap ended the run
    "trust_content": pl.Boolean(),
    "messages": pl.String(),  # JSON list of chat messages
    "events": pl.String(),  # JSON list (empty: depthlab records turns, not events)
    "timelines": pl.String(),
    "events_data": pl.String(),
    # depthlab's metadata
    "dataset": pl.String(),
    "job": pl.String(),
    "trial": pl.String(),
    "cap": pl.Int64(),  # the stated turn cap; null: uncapped
    "turn_limit": pl.Int64(),
    "status": pl.String(),  # pass | fail | invalid
    "reward": pl.Float64(),
    "n_turns": pl.Int64(),  # N of this trial
    "n_subagent_turns": pl.Int64(),
    "depth": pl.Int64(),  # the task's D (null unless solved)
    "depth_low": pl.Int64(),
    "depth_high": pl.Int64(),
    "depth_status": pl.String(),
    "ci_low": pl.Int64(),
    "ci_high": pl.Int64(),
    "work": pl.Int64(),  # the task's W
    "expert_time_min": pl.Float64(),
    "checks": pl.String(),  # JSON list of the task's check verdicts ({check, step, outcome}); null: not given
    "task_checksum": pl.String(),
    "trajectory_form": pl.String(),  # atif | chat-list | episodes | multi-step; null: no trajectory
    "not_carried": pl.String(),  # what the transcript could not carry; null: nothing
}

#: Columns of METR's ``runs.jsonl`` (:func:`depthlab.export.export_metr`): METR's seven, then the run's own.
METR_RUNS: Final[dict[str, pl.DataType]] = {
    "task_id": pl.String(),  # "<dataset>/<task>"
    "task_family": pl.String(),  # the task itself: a Terminal-Bench task is a family of one
    "alias": pl.String(),  # agent, model and stated cap: one curve per alias
    "score_binarized": pl.Int64(),
    "score_cont": pl.Float64(),
    "human_minutes": pl.Float64(),  # the task's expert time estimate; null where it states none
    "invsqrt_task_weight": pl.Float64(),  # 1/sqrt(tasks in the family), shared by the alias's runs of the task
    "run_id": pl.String(),
    "model": pl.String(),
    "cap": pl.Int64(),
    "depth": pl.Int64(),
}

#: Columns of :func:`depthlab.io.read_prices`: list prices per token in US dollars, one row per model.
PRICES: Final[dict[str, pl.DataType]] = {
    "model": pl.String(),  # as the price table names it (LiteLLM's key: "claude-sonnet-4-5", "openrouter/...")
    "input_usd_per_token": pl.Float64(),  # uncached input
    "output_usd_per_token": pl.Float64(),
    "cache_read_usd_per_token": pl.Float64(),  # null: none stated; cached input is then priced as input
}

#: Columns :func:`depthlab.measures.price_trials` adds to the trials table.
PRICED_TRIALS: Final[dict[str, pl.DataType]] = {
    "cost_priced_usd": pl.Float64(),  # the trial's tokens at the price table's prices; null: no price or no tokens
    "price_model": pl.String(),  # the price table's row it was priced by
    "cost_check": pl.String(),  # agree | disagree | no recorded cost | no price | no tokens (COST_CHECKS)
}

#: What :func:`depthlab.measures.price_trials` says of a trial's recorded ``cost_usd`` against its priced tokens.
COST_CHECKS: Final[tuple[str, ...]] = ("agree", "disagree", "no recorded cost", "no price", "no tokens")

#: Columns of :func:`depthlab.measures.cost_per_task`: what measuring each task cost.
COST_PER_TASK: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "n_trials": pl.Int64(),
    "n_priced": pl.Int64(),  # trials with a priced cost
    "cost_priced_usd": pl.Float64(),  # sum over the priced trials; null when none is
    "cost_usd": pl.Float64(),  # sum of the recorded costs; null when none is recorded
    "n_disagree": pl.Int64(),  # trials whose recorded cost disagrees with the priced one
}

#: Columns of :func:`depthlab.measures.cost_per_depth`: what measuring tasks of each D cost.
COST_PER_DEPTH: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "depth": pl.Int32(),  # null: unsolved (beyond the ladder) or no D
    "status": pl.String(),  # the depth status: solved | unsolved | incomplete
    "n_tasks": pl.Int64(),
    "n_tasks_priced": pl.Int64(),  # tasks with at least one priced trial
    "cost_priced_usd": pl.Float64(),  # sum over the tasks' priced trials
    "cost_priced_usd_per_task": pl.Float64(),  # its mean over the tasks with a priced trial
    "cost_usd": pl.Float64(),  # sum of the recorded costs
}

#: Columns :func:`depthlab.measures.price_depth` adds to the depth table: what each task's D cost.
DEPTH_COST: Final[dict[str, pl.DataType]] = {
    "n_runs": pl.Int64(),  # the task's trials in the table priced (every model and cap, invalid ones too)
    "n_runs_priced": pl.Int64(),  # those with a priced cost
    "cost_priced_usd": pl.Float64(),  # their tokens at the price table's prices, summed; null when none is priced
    "cost_usd": pl.Float64(),  # their recorded costs summed; null when none is recorded
    "n_cost_disagree": pl.Int64(),  # runs whose recorded cost disagrees with the priced one (COST_TOLERANCE)
    "depth_cost_priced_usd": pl.Float64(),  # the same sum over the runs D rests on: ladder caps, counted models
    "depth_cost_usd": pl.Float64(),  # the recorded costs of those runs
}

#: Columns of :func:`depthlab.measures.cost_per_turn`: dollars per turn of the priced runs made, per dataset.
COST_PER_TURN: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "n_runs": pl.Int64(),  # the runs considered
    "n_runs_priced": pl.Int64(),  # those with a priced cost and a turn count, the ones the rate is read from
    "n_turns": pl.Int64(),  # their turns
    "cost_priced_usd": pl.Float64(),  # their priced cost
    "usd_per_turn": pl.Float64(),  # cost_priced_usd / n_turns; null when no run is priced
}

#: Columns of :func:`depthlab.measures.bayes.depth_posterior`: each task's posterior over its depth at threshold q.
DEPTH_POSTERIOR: Final[dict[str, pl.DataType]] = {
    "dataset": pl.String(),
    "task": pl.String(),
    "depth": pl.Int32(),  # the rung's cap; null: beyond the top cap
    "probability": pl.Float64(),  # posterior probability that the task's depth at q is this rung
}
