"""Which (task, model, cap) runs are still needed to pin each task's depth D.

The evidence rules are :func:`depthlab.measures.estimate_depth`'s: a pass at cap c makes every
larger cap useless for D, and D is pinned only when every model failed every smaller cap. A
failure prunes nothing below it (the estimator demands observed failures there), while a pass
prunes everything above. So the cheapest order is bottom-up:

* ``"sweep"`` plans every needed cell at once (one round, or two when a pass appears where a
  model had only run the top cap).
* ``"adaptive"`` plans one round of a search over the ladder that climbs every model in step.
  A cell is *pending* for the climb while its task is unfinished (some cell is needed) and the
  cell is missing below ``upper`` (the smallest passing cap; the whole ladder while nothing
  passes). Pending cells include those of a model whose top cap already failed: they are not
  needed yet, but any later pass makes them needed, and running them in step keeps the bound
  below. Per task the round holds the pending cells at the lowest pending cap; and once the
  lower half of the ladder has failed while nothing passes (that cap is at least
  ``caps[len(caps) // 2]``, 10 on the default ladder), also the needed top-cap cells, since
  one failure there per model ends the task as ``unsolved``. On the default ladder, after
  failures at caps 1, 2 and 3 the next round is cap 5; after 1 to 5 it is caps 10 and 80.
  Run the round, load the new trials, call again; it stops planning when every task is solved
  or unsolved, after at most ``len(caps)`` rounds with a plan when every run is valid: a round
  decides every cell at its cap, cells below it are already decided, and a pass only makes
  cells below it needed, so the lowest pending cap rises by at least one rung per round.
  (Climbing only the *needed* cells breaks this: a model whose top-cap failure is known
  waits while another climbs, and a pass high up then sends it back to cap 1, up to
  ``2 * len(caps) - 1`` rounds. The price of the bound is a few runs of such a model that are
  wasted when the task ends unsolved.) Bisecting between the largest failure and the
  smallest pass saves rounds but not runs: a failure in the middle still leaves every cap
  below it to be observed.

Attempts where they decide (``attempts="auto"``): the mode's cells are planned with one attempt,
and a further attempt goes only to a cell whose outcome can still change D under the pass rule
within the budget of ``max_attempts`` per cell. A cell can still change D when filling its
remaining budget with passes, or with failures, would move the task's D (the minimum over models
of each model's smallest passing cap, the missing cells left out). Candidates are the cells run
fewer than ``max_attempts`` times and, under ``"isotonic"``, each model's next cap above its
smallest passing cap when not yet run: failures there can pool a lone pass below them away (a
lucky pass just above a failed cap). A failure far below D, whose neighbours failed too, is
decided by one attempt: no number of passes within the budget lifts its pooled share to ``q``.
Under ``"any"`` every failure below D stays open (one pass would lower D), so ``"auto"`` pays
off under ``"majority"`` and ``"isotonic"``; the benchmark ``tests/bench/bench_depth_rules.py``
prints its runs and accuracy beside fixed attempts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from depthlab._checks import (
    PASS_RULES,
    check_caps,
    check_choice,
    check_frame,
    check_models,
    check_nonnegative_int,
    check_number,
    check_positive_int,
    parameter_error,
)
from depthlab.measures._rules import model_depth_index
from depthlab.measures.bayes import BAYES_ERROR, BAYES_Q, RUN_COST, plan_round_table
from depthlab.measures.depth import CELL_KEYS, TASK_KEYS, evidence_grid
from depthlab.schema import CAPS, PLAN

PLAN_MODES: tuple[str, ...] = ("sweep", "adaptive", "bayes")

#: The plan table's columns (declared in :data:`depthlab.schema.PLAN`; this name is kept for users).
PLAN_SCHEMA: dict[str, pl.DataType] = PLAN


def plan_missing(
    trials: pl.DataFrame,
    tasks: pl.DataFrame,
    *,
    models: Sequence[str],
    caps: Sequence[int] = CAPS,
    attempts: int | str = 1,
    mode: str = "sweep",
    pass_rule: str = "any",
    q: float | None = None,
    max_attempts: int = 3,
    error: float = BAYES_ERROR,
    run_cost: float = RUN_COST,
) -> pl.DataFrame:
    """The cells (dataset, task, model, cap, attempts) still to run to pin D for every task.

    Uses what is known: valid capped trials of ``models`` in ``trials``. A cell counts as run
    when it has ``attempts`` valid trials or when the attempts still missing cannot change its
    outcome under ``pass_rule`` (with "any", one valid pass decides it). Infrastructure errors
    (``invalid``) leave a cell missing. ``attempts`` in the output is how many more valid
    attempts the cell needs.

    Parameters
    ----------
    trials : pl.DataFrame
        The trials table (capped runs are used; other rows are ignored).
    tasks : pl.DataFrame
        The tasks to plan for (columns dataset, task), e.g. the tasks table.
    models : sequence of str
        The models that must each fail every cap below D.
    caps : sequence of int, default CAPS
        The cap ladder.
    attempts : int or "auto", default 1
        Valid attempts per cell; ``"auto"``: one, and more only in cells whose outcome can still
        change D (module docstring), up to ``max_attempts``.
    mode : {"sweep", "adaptive", "bayes"}, default "sweep"
        ``"sweep"``: every needed cell now. ``"adaptive"``: one round of the bottom-up search
        described in the module docstring; re-plan after running it. ``"bayes"``: one round of the
        runs with the most expected information about each unfinished task's D per expected cost
        (:mod:`depthlab.measures.bayes`), until D's posterior puts ``1 - error`` on one rung;
        ``attempts`` and ``pass_rule`` are then ignored (each planned cell is one run).
    pass_rule : {"any", "majority", "isotonic"}, default "any"
        As in :func:`estimate_depth`.
    q : float, optional
        The isotonic rule's threshold, as in :func:`estimate_depth` (default 0.5); under
        ``mode="bayes"`` the threshold of the depth's definition (default 0.2).
    max_attempts : int, default 3
        With ``attempts="auto"``: the most valid attempts any cell gets; under ``mode="bayes"`` the
        same per cell (a task whose every cell has them is finished: its budget is spent).
    error : float, default 0.05
        ``mode="bayes"``: a task is finished once its D's posterior puts ``1 - error`` on one rung.
    run_cost : float, default 5.0
        ``mode="bayes"``: what a run costs beyond its turns, in turns (container start, verifier).

    Returns
    -------
    pl.DataFrame
        Columns dataset, task, model, cap, attempts (Int32), sorted; empty when every task is
        solved or unsolved.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> from depthlab.measures import plan_missing
    >>> tasks = schema.conform(pl.DataFrame({"dataset": ["d"], "task": ["t"]}), "tasks")
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": "a",
    ...     "cap": [1, 2], "status": ["fail", "pass"]}), "trials")
    >>> plan_missing(trials, tasks, models=["a", "b"]).rows()
    [('d', 't', 'b', 1, 1)]

    The Bayesian planner picks, per task, the runs that tell most about D per turn:

    >>> plan_missing(trials, tasks, models=["a", "b"], mode="bayes").select("model", "cap").rows()
    [('a', 1), ('a', 2), ('b', 1)]
    """
    function = "plan_missing"
    check_frame(trials, "trials", function, ("dataset", "task", "model", "cap", "status"))
    check_frame(tasks, "tasks", function, TASK_KEYS)
    models = check_models(models, function, required=True)
    caps = check_caps(caps, function)
    auto = attempts == "auto"
    if not auto:
        if isinstance(attempts, str):
            raise parameter_error("attempts", function, "a positive integer or 'auto'", attempts)
        attempts = check_positive_int(attempts, "attempts", function)
    max_attempts = check_positive_int(max_attempts, "max_attempts", function)
    mode = check_choice(mode, "mode", function, PLAN_MODES)
    pass_rule = check_choice(pass_rule, "pass_rule", function, PASS_RULES)
    bayes = mode == "bayes"
    q = (BAYES_Q if bayes else 0.5) if q is None else q
    q = check_number(q, "q", function, low=0, high=1, low_open=True, high_open=bayes, kind="a share")
    if bayes:
        error = check_number(error, "error", function, low=0, high=1, low_open=True, high_open=True, kind="a share")
        run_cost = check_number(run_cost, "run_cost", function, low=0, kind="a number of turns")
        cells = evidence_grid(trials, caps=caps, models=models, pass_rule="any", tasks=tasks)
        return plan_round_table(
            cells, trials, caps=caps, error=error, q=q, max_attempts=max_attempts, run_cost=run_cost
        )
    per_cell = 1 if auto else int(attempts)
    grid = evidence_grid(trials, caps=caps, models=models, pass_rule=pass_rule, attempts=per_cell, tasks=tasks, q=q)
    planned = _adaptive_round(caps) if mode == "adaptive" else pl.col("needed")
    if auto:
        grid = grid.with_columns(_open=_open_cells(grid, len(models), len(caps), pass_rule, q, max_attempts))
        planned = planned | pl.col("_open")
    return (
        grid.filter(planned)
        .select(*CELL_KEYS, attempts=pl.max_horizontal(per_cell - pl.col("n_valid"), 1).cast(pl.Int32))
        .sort(CELL_KEYS)
        .cast(PLAN_SCHEMA)
    )


def _open_cells(grid: pl.DataFrame, n_models: int, n_caps: int, rule: str, q: float, budget: int) -> pl.Series:
    """Per row of the grid (sorted by CELL_KEYS): the cell's outcome can still change D within the budget.

    The grid holds every (task, model, cap) once, so its counts reshape to (tasks, models, caps).
    For each candidate cell the budget left is filled with passes, then with failures, and the
    task's D recomputed: the cell is open when either moves it.
    """
    shape = (grid.height // (n_models * n_caps), n_models, n_caps)
    n_pass = grid["n_pass"].to_numpy().astype(np.int64).reshape(shape)
    n_valid = grid["n_valid"].to_numpy().astype(np.int64).reshape(shape)
    own = model_depth_index(n_pass, n_valid, rule, q)  # (tasks, models)
    current = own.min(axis=1)
    # the smallest D of the other models, per (task, model): the task's D if this model's changes
    ordered = np.sort(own, axis=1)
    others = np.where(own == ordered[:, :1], ordered[:, 1:2] if n_models > 1 else n_caps, ordered[:, :1])
    candidate = (n_valid > 0) & (n_valid < budget)
    if rule == "isotonic":
        above = own + 1
        next_cap = np.arange(n_caps)[None, None, :] == above[:, :, None]
        candidate |= next_cap & (n_valid == 0)
    t, m, c = np.nonzero(candidate)
    open_cell = np.zeros(shape, dtype=bool)
    if len(t):
        rows_pass, rows_valid = n_pass[t, m].copy(), n_valid[t, m].copy()  # (k, caps)
        left = budget - n_valid[t, m, c]
        changes = np.zeros(len(t), dtype=bool)
        for passes in (left, np.zeros_like(left)):
            trial_pass, trial_valid = rows_pass.copy(), rows_valid.copy()
            trial_pass[np.arange(len(t)), c] += passes
            trial_valid[np.arange(len(t)), c] += left
            moved = np.minimum(model_depth_index(trial_pass, trial_valid, rule, q), others[t, m])
            changes |= moved != current[t]
        open_cell[t, m, c] = changes
    return pl.Series(open_cell.reshape(-1))


def _adaptive_round(caps: Sequence[int]) -> pl.Expr:
    """Over :func:`evidence_grid`'s columns: the cells of one round of the adaptive climb (module docstring)."""
    needed = pl.col("needed")
    task_unfinished = needed.any().over(TASK_KEYS)
    below_upper = pl.col("upper").is_null() | (pl.col("cap") < pl.col("upper"))
    pending = (pl.col("state") == "missing") & below_upper & task_unfinished
    lowest = pl.col("cap").filter(pending).min().over(TASK_KEYS)
    # once the lower half of the ladder failed and nothing passes, one top-cap run per model
    # can end the task as unsolved; probing earlier costs more on the many shallow tasks
    top_probe = (pl.col("cap") == caps[-1]) & pl.col("upper").is_null() & (lowest >= caps[len(caps) // 2])
    return (pending & (pl.col("cap") == lowest)) | (needed & top_probe)


def sweep_runs(n_tasks: int, *, n_models: int, caps: Sequence[int] = CAPS, attempts: int = 1) -> int:
    """Runs of the exhaustive sweep: tasks x models x caps x attempts.

    The baseline that :func:`plan_missing`'s adaptive mode is measured against
    (see :func:`depthlab.simulate.replay_plan` for the adaptive count on simulated tasks).

    Examples
    --------
    >>> sweep_runs(734, n_models=2)
    11744
    """
    function = "sweep_runs"
    check_nonnegative_int(n_tasks, "n_tasks", function)
    n_models = check_positive_int(n_models, "n_models", function)
    attempts = check_positive_int(attempts, "attempts", function)
    return n_tasks * n_models * len(check_caps(caps, function)) * attempts
