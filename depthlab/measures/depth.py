"""Depth D from turn-capped runs: the evidence grid, the estimator and its summaries.

The evidence for one task is a grid of cells (model, cap). A cell is decided *pass* or
*fail* by the valid trials (status ``pass``/``fail``) at that cap, under a pass rule; a cell
without enough valid trials is *missing* (an infrastructure error is never a failure).

Rules (documented in :func:`estimate_depth`):

* ``upper`` = the smallest passing cap over every model; D can only be lower.
* A missing cell is *needed* when its result could still change D or the status:
  every missing cap below ``upper``, for every model; when nothing passes yet, every missing
  cap of a model whose top cap is not yet an observed failure.
* ``solved``: something passes and no cell is needed (every model failed every smaller cap).
  ``unsolved``: nothing passes and every model failed the top cap (D > top, right-censored).
  ``incomplete``: otherwise; ``caps_missing`` lists the needed caps.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import polars as pl

from depthlab import schema
from depthlab._checks import PASS_RULES, check_caps, check_choice, check_frame, check_models
from depthlab.schema import CAPS

TASK_KEYS: tuple[str, str] = ("dataset", "task")
CELL_KEYS: tuple[str, ...] = ("dataset", "task", "model", "cap")
_TRIAL_COLUMNS: tuple[str, ...] = ("dataset", "task", "model", "cap", "status")


def evidence_grid(
    trials: pl.DataFrame,
    *,
    caps: Sequence[int],
    models: Sequence[str] | None,
    pass_rule: str,
    attempts: int = 1,
    tasks: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per (dataset, task, model, cap) with the cell's state and whether it is needed.

    Parameters are assumed validated. ``tasks`` (columns dataset, task) fixes the task set;
    by default it is every task in ``trials``. With ``models`` None, the models counted in a
    dataset are those with any trial at a ladder cap in that dataset (invalid ones too: the
    model was run there). ``attempts`` is how many valid trials a cell is planned to have: a
    cell with fewer is decided only when the missing attempts cannot change its outcome.

    Columns: dataset, task, model, cap, n_valid, n_pass, state (pass|fail|missing),
    model_depth (the model's smallest passing cap), upper (min over models), top_state
    (the model's state at the top cap), needed (bool).
    """
    top = caps[-1]
    # a trial without a model cannot be credited to anyone: it is left out
    capped = trials.select(_TRIAL_COLUMNS).filter(pl.col("cap").is_in(caps) & pl.col("model").is_not_null())
    if models is not None:
        capped = capped.filter(pl.col("model").is_in(models))
    cells = (
        capped.filter(pl.col("status").is_in(("pass", "fail")))
        .group_by(CELL_KEYS)
        .agg(n_valid=pl.len().cast(pl.Int32), n_pass=(pl.col("status") == "pass").sum().cast(pl.Int32))
        .with_columns(pl.col("cap").cast(pl.Int32))
    )
    task_keys = (trials if tasks is None else tasks).select(TASK_KEYS).unique()
    if models is None:
        counted = capped.select("dataset", "model").unique()
    else:
        counted = task_keys.select("dataset").unique().join(pl.DataFrame({"model": list(models)}), how="cross")
    ladder = pl.DataFrame({"cap": list(caps)}, schema={"cap": pl.Int32})
    grid = (
        task_keys.join(counted, on="dataset", how="inner", nulls_equal=True)
        .join(ladder, how="cross")
        .join(cells, on=list(CELL_KEYS), how="left", nulls_equal=True)
        .with_columns(pl.col("n_valid", "n_pass").fill_null(0))
    )
    n_valid, n_pass = pl.col("n_valid"), pl.col("n_pass")
    if pass_rule == "any":
        passes_all = n_pass > 0
        pass_early, fail_early = n_pass > 0, pl.lit(False)
    else:  # majority: at least half of the valid attempts pass
        passes_all = 2 * n_pass >= n_valid
        pass_early, fail_early = 2 * n_pass >= attempts, 2 * (n_valid - n_pass) > attempts
    state = (
        pl.when(n_valid >= attempts)
        .then(pl.when(passes_all).then(pl.lit("pass")).otherwise(pl.lit("fail")))
        .when(pass_early)
        .then(pl.lit("pass"))
        .when(fail_early)
        .then(pl.lit("fail"))
        .otherwise(pl.lit("missing"))
    )
    model_keys = [*TASK_KEYS, "model"]
    grid = grid.with_columns(state=state).with_columns(
        model_depth=pl.when(pl.col("state") == "pass").then(pl.col("cap")).min().over(model_keys),
        top_state=pl.col("state").filter(pl.col("cap") == top).first().over(model_keys),
    )
    grid = grid.with_columns(upper=pl.col("model_depth").min().over(list(TASK_KEYS)))
    needed = (pl.col("state") == "missing") & (
        pl.when(pl.col("upper").is_not_null())
        .then(pl.col("cap") < pl.col("upper"))
        .otherwise(pl.col("top_state") != "fail")
    )
    return grid.with_columns(needed=needed).sort(CELL_KEYS)


def estimate_depth(
    trials: pl.DataFrame,
    *,
    caps: Sequence[int] = CAPS,
    models: Sequence[str] | None = None,
    pass_rule: str = "any",
) -> pl.DataFrame:
    """Estimate each task's depth D from turn-capped runs.

    Only trials with a ``cap`` on the ladder, a ``model`` and a valid status (``pass`` or
    ``fail``; never ``invalid``) count. A cell (model, cap) passes under ``pass_rule``: ``"any"`` valid attempt
    passes, or a ``"majority"`` (at least half) of the valid attempts pass. D is the minimum
    over models of each model's smallest passing cap.

    * ``solved``: D is pinned: for every model counted, every ladder cap below D was tried with
      valid trials and failed.
    * ``unsolved``: no cap passes and every model failed the top cap (D > top, right-censored).
    * ``incomplete``: otherwise. ``caps_missing`` lists exactly the caps whose runs are needed
      now, decided per model: below the smallest passing cap, every cap a model has not run
      validly (any of them could lower D); when nothing passes yet, every cap not run validly
      by a model whose top cap is not an observed failure. A later pass can make more caps
      needed (:func:`plan_missing` re-plans).

    Non-monotone evidence (a model passes at cap a and only fails at a larger cap b) is kept:
    D still uses the smallest passing cap, and the task is flagged in ``non_monotone``.

    Parameters
    ----------
    trials : pl.DataFrame
        The trials table (columns dataset, task, model, cap, status are used).
    caps : sequence of int, default CAPS
        The cap ladder, strictly increasing. Caps off the ladder are ignored.
    models : sequence of str, optional
        The models that count. Default: in each dataset, every model with a trial at a
        ladder cap there. A model with no valid trial on a task leaves every cap missing.
    pass_rule : {"any", "majority"}, default "any"
        How several attempts at one cap combine.

    Returns
    -------
    pl.DataFrame
        The depth table (:data:`depthlab.schema.DEPTH`), one row per task in ``trials``,
        sorted by dataset and task. ``caps_tried`` lists the caps with a valid trial by any
        model; ``depth_by_model`` is a JSON object model -> smallest passing cap (null if none).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> from depthlab.measures import estimate_depth
    >>> trials = schema.conform(pl.DataFrame({
    ...     "dataset": "demo", "task": "t", "model": "m",
    ...     "cap": [1, 2, 3], "status": ["fail", "fail", "pass"]}), "trials")
    >>> estimate_depth(trials).select("depth", "status").row(0)
    (3, 'solved')
    """
    function = "estimate_depth"
    check_frame(trials, "trials", function, _TRIAL_COLUMNS)
    caps = check_caps(caps, function)
    models = check_models(models, function)
    pass_rule = check_choice(pass_rule, "pass_rule", function, PASS_RULES)
    grid = evidence_grid(trials, caps=caps, models=models, pass_rule=pass_rule)
    return depth_from_grid(grid, trials.select(TASK_KEYS).unique(), caps=caps)


def depth_from_grid(grid: pl.DataFrame, task_keys: pl.DataFrame, *, caps: Sequence[int]) -> pl.DataFrame:
    """Collapse an :func:`evidence_grid` to the depth table (one row per row of ``task_keys``)."""
    models = grid.select("model").unique().to_series()
    quoted = pl.DataFrame({"model": models, "_quoted": [json.dumps(name) for name in models]})
    per_model = (
        grid.group_by([*TASK_KEYS, "model"])
        .agg(
            model_depth=pl.col("model_depth").first(),
            max_fail=pl.col("cap").filter(pl.col("state") == "fail").max(),
        )
        .join(quoted, on="model", how="left")
        .sort([*TASK_KEYS, "model"])
        .with_columns(
            _entry=pl.concat_str(
                pl.col("_quoted"), pl.lit(": "), pl.col("model_depth").cast(pl.String).fill_null("null")
            ),
            _non_monotone=pl.col("max_fail") > pl.col("model_depth"),
        )
        .group_by(TASK_KEYS, maintain_order=True)
        .agg(
            depth_by_model=pl.lit("{") + pl.col("_entry").str.join(", ") + pl.lit("}"),
            non_monotone=pl.col("_non_monotone").fill_null(False).any(),
            n_models=pl.len().cast(pl.Int32),
        )
    )
    per_task = grid.group_by(TASK_KEYS).agg(
        upper=pl.col("upper").first(),
        n_needed=pl.col("needed").sum(),
        all_top_failed=(pl.col("top_state") == "fail").all(),
        caps_tried=pl.col("cap").filter(pl.col("n_valid") > 0).unique().sort(),
        caps_missing=pl.col("cap").filter(pl.col("needed")).unique().sort(),
    )
    status = (
        pl.when(pl.col("n_models").fill_null(0) == 0)
        .then(pl.lit("incomplete"))
        .when(pl.col("upper").is_not_null() & (pl.col("n_needed") == 0))
        .then(pl.lit("solved"))
        .when(pl.col("upper").is_null() & pl.col("all_top_failed"))
        .then(pl.lit("unsolved"))
        .otherwise(pl.lit("incomplete"))
    )
    all_caps = pl.lit(pl.Series([list(caps)], dtype=pl.List(pl.Int32)))
    out = (
        task_keys.join(per_task, on=list(TASK_KEYS), how="left", nulls_equal=True)
        .join(per_model, on=list(TASK_KEYS), how="left", nulls_equal=True)
        .with_columns(status=status)
        .with_columns(
            depth=pl.when(pl.col("status") == "solved").then(pl.col("upper")),
            caps_tried=pl.col("caps_tried").fill_null(pl.lit(pl.Series([[]], dtype=pl.List(pl.Int32)))),
            # no model has run the task at all: every cap is missing
            caps_missing=pl.when(pl.col("n_models").fill_null(0) == 0).then(all_caps).otherwise(pl.col("caps_missing")),
            depth_by_model=pl.col("depth_by_model").fill_null("{}"),
            n_models=pl.col("n_models").fill_null(0),
            non_monotone=pl.col("non_monotone").fill_null(False),
        )
        .sort(TASK_KEYS)
    )
    return schema.conform(out, "depth")


def depth_summary(depth: pl.DataFrame, *, by: str | None = "dataset") -> pl.DataFrame:
    """Count tasks by depth status, and the non-monotone ones, per dataset (or overall).

    Parameters
    ----------
    depth : pl.DataFrame
        A depth table from :func:`estimate_depth`.
    by : {"dataset", None}, default "dataset"
        Group per dataset, or one overall row.

    Returns
    -------
    pl.DataFrame
        Columns [dataset,] n_tasks, n_solved, n_unsolved, n_incomplete, n_non_monotone.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> from depthlab.measures import depth_summary
    >>> depth = schema.conform(pl.DataFrame({"dataset": "d", "task": ["a", "b"],
    ...     "status": ["solved", "incomplete"], "non_monotone": [False, False]}), "depth")
    >>> depth_summary(depth).row(0)
    ('d', 2, 1, 0, 1, 0)
    """
    function = "depth_summary"
    check_frame(depth, "depth", function, ("dataset", "task", "status", "non_monotone"))
    if by not in ("dataset", None):
        raise ValueError(f"The 'by' parameter of {function} must be 'dataset' or None, got {by!r}")
    aggs = [
        pl.len().cast(pl.Int32).alias("n_tasks"),
        *[(pl.col("status") == name).sum().cast(pl.Int32).alias(f"n_{name}") for name in schema.DEPTH_STATUSES],
        pl.col("non_monotone").fill_null(False).sum().cast(pl.Int32).alias("n_non_monotone"),
    ]
    if by is None:
        return depth.select(aggs)
    return depth.group_by("dataset").agg(aggs).sort("dataset")


def second_model_effect(
    depth: pl.DataFrame, *, first_model: str | None = None, by: str | None = "dataset"
) -> pl.DataFrame:
    """How often adding the other models lowered D below what one model alone gives.

    Over solved tasks with two or more models: D is lowered for ``first_model`` when that
    model alone has no passing cap or a larger one than D. (The paper reports this for 25%
    of the existing tasks and 7% of its own.) Every cap below D was observed failing for
    every model on a solved task, so the comparison is pinned.

    Parameters
    ----------
    depth : pl.DataFrame
        A depth table from :func:`estimate_depth`.
    first_model : str, optional
        The model taken alone. Default: every model in turn (one row each).
    by : {"dataset", None}, default "dataset"
        Group per dataset, or one overall row per model.

    Returns
    -------
    pl.DataFrame
        Columns [dataset,] first_model, n_tasks, n_lowered, share_lowered.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> from depthlab.measures import second_model_effect
    >>> depth = schema.conform(pl.DataFrame({"dataset": "d", "task": ["a", "b"], "depth": [2, 3],
    ...     "status": "solved", "n_models": 2,
    ...     "depth_by_model": ['{"x": 5, "y": 2}', '{"x": 3, "y": 3}']}), "depth")
    >>> second_model_effect(depth, first_model="x").row(0)
    ('d', 'x', 2, 1, 0.5)
    """
    function = "second_model_effect"
    check_frame(depth, "depth", function, ("dataset", "task", "depth", "status", "depth_by_model", "n_models"))
    if by not in ("dataset", None):
        raise ValueError(f"The 'by' parameter of {function} must be 'dataset' or None, got {by!r}")
    if first_model is not None and (not isinstance(first_model, str) or not first_model):
        raise ValueError(f"The 'first_model' parameter of {function} must be a model name, got {first_model!r}")
    solved = depth.filter((pl.col("status") == "solved") & (pl.col("n_models") >= 2))
    rows: list[tuple[str | None, str, bool]] = []
    for dataset, depth_value, by_model in solved.select("dataset", "depth", "depth_by_model").iter_rows():
        for model, model_depth in json.loads(by_model).items():
            if first_model is None or model == first_model:
                rows.append((dataset, model, model_depth is None or model_depth > depth_value))
    long = pl.DataFrame(
        rows, schema={"dataset": pl.String, "first_model": pl.String, "lowered": pl.Boolean}, orient="row"
    )
    keys = ["dataset", "first_model"] if by == "dataset" else ["first_model"]
    return (
        long.group_by(keys)
        .agg(n_tasks=pl.len().cast(pl.Int32), n_lowered=pl.col("lowered").sum().cast(pl.Int32))
        .with_columns(share_lowered=pl.col("n_lowered") / pl.col("n_tasks"))
        .sort(keys)
    )
