"""What D costs and how often it is wrong: the paper's sweep, today's climb and the Bayesian planner, simulated.

A collection of tasks of known depth at threshold ``q`` (:func:`step_curves`: per model a flat
pass probability from its rung up, a luck rate below; the rung uniform over the ladder and beyond
it) is measured by each design, round by round until its plan is empty (:func:`replay_design`):

* ``"sweep-1"``, ``"sweep-5"``: the paper's design, every cap once (or five times), D by ``any``;
* ``"climb"``: today's adaptive climb, ``isotonic`` at ``q`` with ``attempts="auto"``;
* ``"planner"``: ``mode="bayes"`` to a stated ``error``, optionally held to a budget of runs per task.

:func:`depth_cost` puts them side by side: runs and turns per task, the misplaced share (the
reported rung, beyond the ladder counting as one, is not the true depth at ``q``), and for the
planner the share right among tasks it reports at ``p_depth >= 1 - error``. Everything here is
simulated; the independent check of the planner, on a generator written apart from the library,
is ``tests/bench/bench_bayes_planner.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from depthlab import schema
from depthlab.measures import estimate_depth, plan_missing
from depthlab.measures.bayes import BAYES_ERROR, BAYES_Q

#: The designs :func:`replay_design` knows.
DESIGNS: tuple[str, ...] = ("sweep-1", "sweep-5", "climb", "planner")
#: The most valid runs the planner gives one (task, model, cap) cell.
PLANNER_MAX_ATTEMPTS = 8
_DATASET = "sim"


@dataclass(frozen=True)
class KnownDepths:
    """A simulated collection: ``prob`` (tasks, models, caps) P(pass), ``true_rung`` (tasks,) the depth at q."""

    prob: np.ndarray
    true_rung: np.ndarray
    caps: tuple[int, ...]
    tasks: list[str]
    models: list[str]


def step_curves(
    n_tasks: int,
    *,
    pass_prob: float,
    luck: float,
    n_models: int = 1,
    caps: Sequence[int] = schema.CAPS,
    q: float = BAYES_Q,
    seed: int = 0,
) -> KnownDepths:
    """Tasks whose models pass with ``pass_prob`` from their rung up and with ``luck`` below it.

    The first model's rung is uniform over the ladder and beyond it; each further model's is 0, 1
    or 2 rungs deeper (shares 0.5, 0.3, 0.2). The true depth at ``q`` is the minimum over models
    of the first cap whose pass probability reaches ``q``.

    Examples
    --------
    >>> known = step_curves(5, pass_prob=0.5, luck=0.02, seed=1)
    >>> known.prob.shape, bool(np.all((known.true_rung >= 0) & (known.true_rung <= len(known.caps))))
    ((5, 1, 8), True)
    """
    if not (q <= pass_prob <= 1.0 and 0.0 <= luck < q):
        raise ValueError(f"step_curves: pass_prob must be in [q, 1] and luck in [0, q) (q = {q:g})")
    rng = np.random.default_rng(seed)
    n_rungs = len(caps) + 1
    base = rng.integers(0, n_rungs, size=n_tasks)
    rungs = [base] + [
        np.minimum(base + rng.choice(3, size=n_tasks, p=[0.5, 0.3, 0.2]), n_rungs - 1) for _ in range(1, n_models)
    ]
    index = np.arange(len(caps))
    prob = np.stack([np.where(index[None, :] >= r[:, None], pass_prob, luck) for r in rungs], axis=1)
    reaches = prob >= q
    first = np.where(reaches.any(axis=2), reaches.argmax(axis=2), len(caps))
    return KnownDepths(
        prob=prob,
        true_rung=first.min(axis=1),
        caps=tuple(int(c) for c in caps),
        tasks=[f"task{i:04d}" for i in range(n_tasks)],
        models=[f"model-{chr(ord('a') + m)}" for m in range(n_models)],
    )


def run_plan(known: KnownDepths, plan: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
    """A plan's runs drawn from the known curves: trials rows; a failure takes its cap's turns, a pass 1 to cap."""
    task_index = {name: i for i, name in enumerate(known.tasks)}
    model_index = {name: i for i, name in enumerate(known.models)}
    cap_index = {cap: i for i, cap in enumerate(known.caps)}
    cells = plan.select("task", "model", "cap", "attempts").rows()
    tasks, models, caps = [], [], []
    for task, model, cap, attempts in cells:
        tasks += [task] * attempts
        models += [model] * attempts
        caps += [cap] * attempts
    p = np.array(
        [known.prob[task_index[t], model_index[m], cap_index[c]] for t, m, c in zip(tasks, models, caps, strict=True)]
    )
    passed = rng.random(len(p)) < p
    cap_array = np.array(caps, dtype=np.int64)
    turns = np.where(passed, np.ceil(rng.random(len(p)) * cap_array).clip(1), cap_array)
    return schema.conform(
        pl.DataFrame(
            {
                "dataset": _DATASET,
                "task": tasks,
                "model": models,
                "cap": caps,
                "status": np.where(passed, "pass", "fail").tolist(),
                "n_turns": turns.astype(np.int64).tolist(),
            }
        ),
        "trials",
    )


def _within_budget(plan: pl.DataFrame, trials: pl.DataFrame, budget: int) -> pl.DataFrame:
    """The plan cut so that no task has more than ``budget`` runs (cells in plan order)."""
    spent = trials.group_by("task").agg(spent=pl.len()) if trials.height else pl.DataFrame({"task": [], "spent": []})
    cut = (
        plan.join(spent.cast({"task": pl.String, "spent": pl.Int64}), on="task", how="left")
        .with_columns(pl.col("spent").fill_null(0))
        .with_columns(room=pl.lit(budget) - pl.col("spent") - pl.col("attempts").cum_sum().over("task"))
        .with_columns(attempts=(pl.col("attempts") + pl.col("room").clip(upper_bound=0)).cast(pl.Int32))
    )
    return cut.filter(pl.col("attempts") > 0).select(plan.columns)


def replay_design(
    known: KnownDepths,
    design: str,
    *,
    error: float = BAYES_ERROR,
    q: float = BAYES_Q,
    budget: int | None = None,
    seed: int = 0,
    max_rounds: int = 80,
) -> dict[str, float]:
    """Measure ``known`` with one design (:data:`DESIGNS`) until its plan is empty: cost and error per task.

    ``budget``: under ``"planner"``, at most this many runs per task. Returns runs, turns and
    rounds per task, the misplaced share, and (planner only, else NaN) the share of tasks reported
    at ``p_depth >= 1 - error`` and the share right among them.

    Examples
    --------
    >>> known = step_curves(6, pass_prob=0.9, luck=0.0, seed=2)
    >>> result = replay_design(known, "sweep-1")
    >>> result["runs"], 0.0 <= result["misplaced"] <= 1.0
    (8.0, True)
    """
    if design not in DESIGNS:
        raise ValueError(f"replay_design: design must be one of {', '.join(DESIGNS)}, got {design!r}")
    rng = np.random.default_rng(seed)
    tasks = schema.conform(pl.DataFrame({"dataset": _DATASET, "task": known.tasks}), "tasks")
    trials = schema.empty("trials")
    options: dict[str, object] = {"models": known.models, "caps": known.caps}
    if design.startswith("sweep"):
        options |= {"mode": "sweep", "attempts": int(design.split("-")[1])}
        max_rounds = 1
    elif design == "climb":
        options |= {"mode": "adaptive", "pass_rule": "isotonic", "attempts": "auto", "q": q}
    else:
        options |= {"mode": "bayes", "error": error, "q": q, "max_attempts": PLANNER_MAX_ATTEMPTS}
    rounds = 0
    for _ in range(max_rounds):
        plan = plan_missing(trials, tasks, **options)  # type: ignore[arg-type]
        if budget is not None:
            plan = _within_budget(plan, trials, budget)
        if plan.is_empty():
            break
        rounds += 1
        trials = pl.concat([trials, run_plan(known, plan, rng)])
    rules: dict[str, dict[str, object]] = {
        "sweep-1": {"pass_rule": "any"},
        "sweep-5": {"pass_rule": "any"},
        "climb": {"pass_rule": "isotonic", "q": q},
        "planner": {"pass_rule": "bayes", "error": error, "q": q},
    }
    rule = rules[design]
    depth = estimate_depth(trials, models=known.models, caps=known.caps, level=None, **rule).sort("task")  # type: ignore[arg-type]
    cap_rung = {cap: i for i, cap in enumerate(known.caps)}
    reported = np.array([len(known.caps) if d is None else cap_rung[d] for d in depth["depth"].to_list()])
    reported = np.where(depth["status"].to_numpy() == "incomplete", -1, reported) if design != "planner" else reported
    right = reported == known.true_rung
    n = len(known.tasks)
    sure = depth["p_depth"].fill_null(0.0).to_numpy() >= 1.0 - error
    planner = design == "planner"
    return {
        "runs": trials.height / n,
        "turns": float(trials["n_turns"].sum()) / n,
        "rounds": float(rounds),
        "misplaced": float(1.0 - right.mean()),
        "sure": float(sure.mean()) if planner else float("nan"),
        "right_when_sure": float(right[sure].mean()) if planner and sure.any() else float("nan"),
    }


def depth_cost(
    pass_probs: Sequence[float] = (0.8, 0.5),
    *,
    luck: float = 0.02,
    n_tasks: int = 100,
    n_models: int = 1,
    errors: Sequence[float] = (0.2, 0.1, 0.05),
    at_sweep_runs: bool = True,
    seed: int = 0,
) -> pl.DataFrame:
    """Cost and error of every design side by side, per pass probability at the depth (simulated).

    One row per (pass_prob, design): the sweeps at 1 and 5 attempts, the climb, the planner at each
    of ``errors`` and, with ``at_sweep_runs``, the planner (error 0.05) held to each sweep's runs
    per task (``"planner at sweep-K runs"``). Columns: pass_prob, luck, design, error, runs, turns,
    rounds, misplaced, sure, right_when_sure (the last two null but for the planner).

    Examples
    --------
    >>> table = depth_cost((0.9,), n_tasks=4, errors=(0.2,), at_sweep_runs=False)
    >>> table["design"].to_list()
    ['sweep-1', 'sweep-5', 'climb', 'planner']
    """
    rows = []
    for number, pass_prob in enumerate(pass_probs):
        known = step_curves(n_tasks, pass_prob=pass_prob, luck=luck, n_models=n_models, seed=seed + number)
        runs: list[tuple[str, float | None, int | None, str]] = [
            ("sweep-1", None, None, "sweep-1"),
            ("sweep-5", None, None, "sweep-5"),
            ("climb", None, None, "climb"),
        ]
        runs += [("planner", error, None, "planner") for error in errors]
        if at_sweep_runs:
            per_task = len(known.caps) * n_models
            runs += [("planner", BAYES_ERROR, k * per_task, f"planner at sweep-{k} runs") for k in (1, 5)]
        for design, error, budget, label in runs:
            result = replay_design(
                known, design, error=BAYES_ERROR if error is None else error, budget=budget, seed=seed + 1000 + number
            )
            rows.append({"pass_prob": pass_prob, "luck": luck, "design": label, "error": error, **result})
    return pl.DataFrame(rows).with_columns(pl.col("sure", "right_when_sure").fill_nan(None))
