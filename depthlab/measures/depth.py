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

import numpy as np
import polars as pl

from depthlab import schema
from depthlab._checks import (
    PASS_RULES,
    check_caps,
    check_choice,
    check_frame,
    check_model_name,
    check_models,
    check_number,
    parameter_error,
)
from depthlab.measures._noise import true_depth_rungs
from depthlab.measures._rules import FAIL, MISSING, PASS, cell_states
from depthlab.measures.bayes import BAYES_ERROR, BAYES_Q, depth_columns, plan_round_table, posteriors
from depthlab.schema import CAPS

TASK_KEYS: tuple[str, str] = ("dataset", "task")
CELL_KEYS: tuple[str, ...] = ("dataset", "task", "model", "cap")
_TRIAL_COLUMNS: tuple[str, ...] = ("dataset", "task", "model", "cap", "status")
#: The grid's state names, indexed by a :func:`~depthlab.measures._rules.cell_states` code minus MISSING.
_STATE_NAMES = np.array([name for _, name in sorted({MISSING: "missing", FAIL: "fail", PASS: "pass"}.items())])


def evidence_grid(
    trials: pl.DataFrame,
    *,
    caps: Sequence[int],
    models: Sequence[str] | None,
    pass_rule: str,
    attempts: int = 1,
    tasks: pl.DataFrame | None = None,
    q: float = 0.5,
) -> pl.DataFrame:
    """One row per (dataset, task, model, cap) with the cell's state and whether it is needed.

    Parameters are assumed validated. ``tasks`` (columns dataset, task) fixes the task set;
    by default it is every task in ``trials``. With ``models`` None, the models counted in a
    dataset are those with any trial at a ladder cap in that dataset (invalid ones too: the
    model was run there). ``attempts`` is how many valid trials a cell is planned to have: a
    cell with fewer is decided only when the missing attempts cannot change its outcome
    (under ``"isotonic"`` a cell is decided once it has ``attempts`` valid trials: its state is
    the fitted P(pass | cap) against ``q``, which every other cap's attempts move).

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
    grid = _cell_states(grid.sort(CELL_KEYS), len(caps), pass_rule, attempts, q)
    model_keys = [*TASK_KEYS, "model"]
    grid = grid.with_columns(
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


def _cell_states(grid: pl.DataFrame, n_caps: int, rule: str, attempts: int, q: float) -> pl.DataFrame:
    """Add ``state`` (pass|fail|missing) by :func:`depthlab.measures._rules.cell_states` (rows sorted by CELL_KEYS).

    Every (dataset, task, model) has exactly one row per ladder cap (the grid is a cross join with
    the ladder), so the sorted counts reshape to (groups, caps) and are decided at once.
    """
    shape = (grid.height // n_caps, n_caps)
    n_pass = grid["n_pass"].to_numpy().reshape(shape)
    n_valid = grid["n_valid"].to_numpy().reshape(shape)
    states = cell_states(n_pass, n_valid, rule, attempts, q).reshape(-1)
    return grid.with_columns(state=pl.Series(_STATE_NAMES[states - MISSING], dtype=pl.String))


#: The level of the interval for the true depth (``ci_low``, ``ci_high``) where none is given.
DEPTH_LEVEL = 0.9


def estimate_depth(
    trials: pl.DataFrame,
    *,
    caps: Sequence[int] = CAPS,
    models: Sequence[str] | None = None,
    pass_rule: str = "any",
    q: float | None = None,
    level: float | None = DEPTH_LEVEL,
    error: float = BAYES_ERROR,
) -> pl.DataFrame:
    """Estimate each task's depth D from turn-capped runs, and an interval for its true depth.

    Only trials with a ``cap`` on the ladder, a ``model`` and a valid status (``pass`` or
    ``fail``; never ``invalid``) count. A cell (model, cap) passes under ``pass_rule``: ``"any"`` valid attempt
    passes (the paper's rule), a ``"majority"`` (at least half) of the valid attempts pass, or
    ``"isotonic"``: the model's P(pass | cap) is fitted non-decreasing in the cap over all its
    attempts (isotonic regression) and the cap passes when the fitted P is at least ``q``. D is
    the minimum over models of each model's smallest passing cap.

    **The ladder's interval** (``depth_low``, ``depth_high``] is D's rounding to the ladder, not
    an interval for the true depth: D = 10 on the default ladder reads "more than 5 turns and at
    most 10", which holds of the true depth only when the runs are free of noise. For a solved
    task ``depth_high`` = D and ``depth_low`` the largest ladder cap below D (0 below the first;
    a ladder with gaps gives a wider interval); for an unsolved task ``depth_low`` = the top cap
    and ``depth_high`` is null (right-censored); for an incomplete task both are null. Under
    noise (a pass probability of 0.5-0.95 at and above the true depth, a lucky pass below it)
    the true depth lies in it for 28-99% of tasks, depending on the rule and the attempts.

    **The interval for the true depth** (``ci_low``, ``ci_high``], at ``level``: the rungs the
    task's true depth can be at under a noise model fitted to the capped runs themselves, per
    dataset (a pass probability per task and model at and above its depth, Beta-distributed
    around a mean per model, and a luck rate below it, shared by the dataset's tasks; the fit's
    own uncertainty carried by drawing its parameters; :mod:`depthlab.measures._noise` states the
    model and the interval whole). The true depth lies in (``ci_low``, ``ci_high``]; ``ci_high``
    is null when the true depth may lie beyond the top cap. It is given for every task with a
    counted model, incomplete ones too (missing cells widen it), and is the same under every
    pass rule. Its coverage and width on noisy data of known depth from generators apart from the
    model are in the docs ("How sure is D") and ``tests/bench/bench_depth_interval.py``.

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

    **pass_rule="bayes"**: each task's posterior over its depth at threshold ``q`` (the smallest cap
    whose pass probability reaches ``q``, minimum over models), under a model of monotone pass curves
    with priors fitted across the dataset's tasks (:mod:`depthlab.measures.bayes`). ``depth`` is the
    posterior mode's cap (null when the mode is beyond the ladder), ``p_depth`` its posterior
    probability; ``status`` is ``solved`` (mode on the ladder) or ``unsolved`` (mode beyond it) when
    ``p_depth`` reaches ``1 - error``, ``incomplete`` otherwise; ``depth_low``/``depth_high`` are the
    mode's rounding to the ladder; ``ci_low``/``ci_high`` the shortest run of rungs holding ``level``
    of the same posterior; ``caps_missing`` the caps of the planner's next round
    (:func:`plan_missing` with ``mode="bayes"``); ``depth_by_model`` each model's own posterior mode.

    Parameters
    ----------
    trials : pl.DataFrame
        The trials table (columns dataset, task, model, cap, status are used).
    caps : sequence of int, default CAPS
        The cap ladder, strictly increasing. Caps off the ladder are ignored.
    models : sequence of str, optional
        The models that count. Default: in each dataset, every model with a trial at a
        ladder cap there. A model with no valid trial on a task leaves every cap missing.
    pass_rule : {"any", "majority", "isotonic", "bayes"}, default "any"
        How several attempts at one cap combine; ``"bayes"``: D at a stated error (above).
    q : float, optional
        The ``"isotonic"`` rule's threshold on the fitted P(pass | cap), in (0, 1] (default 0.5);
        under ``"bayes"`` the threshold of the depth's definition (default 0.2); ignored by the
        other rules.
    level : float or None, default 0.9
        The share of tasks whose true depth the interval (``ci_low``, ``ci_high``] should hold,
        in (0, 1); None leaves both columns null (and skips the noise model's fit; under
        ``"bayes"`` the interval is then the posterior's at ``1 - error``).
    error : float, default 0.05
        ``"bayes"`` only: the error a D is reported at.

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
    >>> estimate_depth(trials).select("depth", "depth_low", "depth_high", "status").row(0)
    (3, 2, 3, 'solved')

    One run per cell of one task says little about noise: its true depth is more than 1 turn, and
    may lie beyond the top cap.

    >>> estimate_depth(trials).select("ci_low", "ci_high").row(0)
    (1, None)

    One lucky pass in three attempts at cap 2, every attempt passing at cap 5: the paper's rule
    takes the lucky pass, the isotonic fit pools it with the failures around it.

    >>> lucky = schema.conform(pl.DataFrame({"dataset": "demo", "task": "t", "model": "m",
    ...     "cap": [1] * 3 + [2] * 3 + [3] * 3 + [5] * 3,
    ...     "status": ["fail"] * 3 + ["pass", "fail", "fail"] + ["fail"] * 3 + ["pass"] * 3}), "trials")
    >>> [estimate_depth(lucky, pass_rule=rule)["depth"].item() for rule in ("any", "isotonic")]
    [2, 5]

    Under ``"bayes"``, the same runs give D with its probability (one task: its priors are weak).

    >>> bayes = estimate_depth(lucky, pass_rule="bayes").select("depth", "p_depth", "status")
    >>> bayes["depth"].item(), bayes["p_depth"].item() > 0.5, bayes["status"].item()
    (5, True, 'incomplete')
    """
    function = "estimate_depth"
    check_frame(trials, "trials", function, _TRIAL_COLUMNS)
    caps = check_caps(caps, function)
    models = check_models(models, function)
    pass_rule = check_choice(pass_rule, "pass_rule", function, (*PASS_RULES, "bayes"))
    bayes = pass_rule == "bayes"
    q = (BAYES_Q if bayes else 0.5) if q is None else q
    q = check_number(q, "q", function, low=0, high=1, low_open=True, high_open=bayes, kind="a share")
    error = check_number(error, "error", function, low=0, high=1, low_open=True, high_open=True, kind="a share")
    if level is not None:
        level = check_number(level, "level", function, low=0, high=1, low_open=True, high_open=True, kind="a share")
    if bayes:
        return _trials_version(bayes_depth(trials, caps=caps, models=models, q=q, error=error, level=level), trials)
    grid = evidence_grid(trials, caps=caps, models=models, pass_rule=pass_rule, q=q)
    depth = depth_from_grid(grid, trials.select(TASK_KEYS).unique(), caps=caps)
    if level is not None:
        intervals = true_depth_columns(grid, caps=caps, level=level)
        depth = (
            depth.drop("ci_low", "ci_high")
            .join(intervals, on=list(TASK_KEYS), how="left", nulls_equal=True)
            .select(depth.columns)
        )
    return _trials_version(depth, trials)


def _trials_version(depth: pl.DataFrame, trials: pl.DataFrame) -> pl.DataFrame:
    """``depth`` naming the ``task_checksum`` each task's trials share (null where they ran on several or name none)."""
    if schema.TASK_CHECKSUM not in trials.columns:
        return depth
    shared = (
        trials.group_by(TASK_KEYS)
        .agg(pl.col(schema.TASK_CHECKSUM).drop_nulls().unique().alias("_versions"))
        .select(
            *TASK_KEYS,
            pl.when(pl.col("_versions").list.len() == 1)
            .then(pl.col("_versions").list.first())
            .otherwise(None)
            .alias(schema.TASK_CHECKSUM),
        )
    )
    named = depth.drop(schema.TASK_CHECKSUM).join(shared, on=list(TASK_KEYS), how="left", nulls_equal=True)
    return named.select(depth.columns)


def bayes_depth(
    trials: pl.DataFrame,
    *,
    caps: Sequence[int],
    models: Sequence[str] | None,
    q: float,
    error: float,
    level: float | None,
    tasks: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """:func:`estimate_depth` with ``pass_rule="bayes"`` (inputs validated): the depth table from the posterior."""
    grid = evidence_grid(trials, caps=caps, models=models, pass_rule="any", tasks=tasks)
    ladder = depth_from_grid(grid, (trials if tasks is None else tasks).select(TASK_KEYS).unique(), caps=caps)
    frames = [
        depth_columns(post, caps=caps, error=error, level=level) for post in posteriors(grid, trials, caps=caps, q=q)
    ]
    # the planner's next round names the caps still worth running
    plan = plan_round_table(grid, trials, caps=caps, error=error, q=q, max_attempts=_BAYES_MAX_ATTEMPTS)
    missing = plan.group_by(TASK_KEYS).agg(_missing=pl.col("cap").unique().sort())
    replaced = ["depth", "p_depth", "status", "depth_low", "depth_high", "ci_low", "ci_high"]
    replaced += ["depth_by_model", "n_models"]
    if not frames:
        return ladder
    posterior = pl.concat(frames)
    out = (
        ladder.drop(replaced)
        .join(posterior, on=list(TASK_KEYS), how="left", nulls_equal=True)
        .join(missing, on=list(TASK_KEYS), how="left", nulls_equal=True)
        .with_columns(
            caps_missing=pl.col("_missing").fill_null(pl.lit(pl.Series([[]], dtype=pl.List(pl.Int32)))),
            status=pl.col("status").fill_null("incomplete"),
            n_models=pl.col("n_models").fill_null(0),
            depth_by_model=pl.col("depth_by_model").fill_null("{}"),
        )
    )
    return schema.conform(out, "depth").sort(TASK_KEYS)


#: The planner's limit on valid attempts per cell where :func:`estimate_depth` names the caps still missing.
_BAYES_MAX_ATTEMPTS = 6


def true_depth_columns(grid: pl.DataFrame, *, caps: Sequence[int], level: float = DEPTH_LEVEL) -> pl.DataFrame:
    """Columns dataset, task, ci_low, ci_high: the interval for each task's true depth, per dataset of the grid.

    The grid is :func:`evidence_grid`'s (sorted by CELL_KEYS, every (task, model, cap) once); each
    dataset's counts are fitted on their own (:func:`depthlab.measures._noise.true_depth_rungs`).
    """
    below = np.array([0, *caps])
    frames = []
    for part in grid.partition_by("dataset", maintain_order=True):
        n_models = part["model"].n_unique()
        shape = (part.height // (n_models * len(caps)), n_models, len(caps))
        n_pass = part["n_pass"].to_numpy().astype(np.int64).reshape(shape)
        n_valid = part["n_valid"].to_numpy().astype(np.int64).reshape(shape)
        low, high = true_depth_rungs(n_pass, n_valid, level)
        tops = np.array([*caps, 0])[high]
        frames.append(
            part.select(TASK_KEYS)
            .unique(maintain_order=True)
            .with_columns(
                ci_low=pl.Series(below[low], dtype=pl.Int32),
                ci_high=pl.Series(np.where(high < len(caps), tops, -1), dtype=pl.Int32).replace(-1, None),
            )
        )
    if not frames:
        return pl.DataFrame(schema={name: schema.DEPTH[name] for name in (*TASK_KEYS, "ci_low", "ci_high")})
    return pl.concat(frames)


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
    # the rung below each cap: D = caps[i] means more than caps[i - 1] turns (0 below the first)
    below = dict(zip(caps, (0, *caps[:-1]), strict=True))
    out = (
        task_keys.join(per_task, on=list(TASK_KEYS), how="left", nulls_equal=True)
        .join(per_model, on=list(TASK_KEYS), how="left", nulls_equal=True)
        .with_columns(status=status)
        .with_columns(
            depth=pl.when(pl.col("status") == "solved").then(pl.col("upper")),
            depth_high=pl.when(pl.col("status") == "solved").then(pl.col("upper")),
            depth_low=pl.when(pl.col("status") == "solved")
            .then(pl.col("upper").replace_strict(below, default=None, return_dtype=pl.Int32))
            .when(pl.col("status") == "unsolved")
            .then(pl.lit(caps[-1], dtype=pl.Int32)),
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


def depth_posterior(
    trials: pl.DataFrame,
    *,
    models: Sequence[str] | None = None,
    caps: Sequence[int] = schema.CAPS,
    q: float = BAYES_Q,
) -> pl.DataFrame:
    """Each task's posterior over its depth at threshold ``q``: one row per (task, rung).

    Parameters
    ----------
    trials : pl.DataFrame
        The trials table (capped valid runs count; columns dataset, task, model, cap, status).
    models : sequence of str, optional
        The models D is the minimum over; default every model with a capped run in the dataset.
    caps : sequence of int, default CAPS
        The ladder.
    q : float, default 0.2
        The threshold of the definition (module docstring).

    Returns
    -------
    pl.DataFrame
        :data:`depthlab.schema.DEPTH_POSTERIOR`: dataset, task, depth (the rung's cap; null beyond
        the ladder), probability; sorted by dataset, task, rung.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": "m",
    ...     "cap": [1] * 4 + [2] * 4, "status": ["fail"] * 4 + ["pass"] * 4}), "trials")
    >>> from depthlab.measures import depth_posterior
    >>> table = depth_posterior(trials, caps=[1, 2])
    >>> table["depth"].to_list()
    [1, 2, None]
    >>> bool(table["probability"][1] > 0.9)
    True
    """
    function = "depth_posterior"
    check_frame(trials, "trials", function, ("dataset", "task", "model", "cap", "status"))
    caps = check_caps(caps, function)
    models = check_models(models, function)
    q = check_number(q, "q", function, low=0, high=1, low_open=True, high_open=True, kind="a share")
    rung_caps = [*caps, None]
    frames = [
        post.keys.join(pl.DataFrame({"depth": rung_caps}, schema={"depth": pl.Int32}), how="cross").with_columns(
            probability=pl.Series(post.depth.reshape(-1), dtype=pl.Float64)
        )
        for post in posteriors(evidence_grid(trials, caps=caps, models=models, pass_rule="any"), trials, caps=caps, q=q)
    ]
    if not frames:
        return pl.DataFrame(schema=schema.DEPTH_POSTERIOR)
    return pl.concat(frames).cast(schema.DEPTH_POSTERIOR)


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
        raise parameter_error("by", function, "'dataset' or None", by)
    aggs = [
        pl.len().cast(pl.Int32).alias("n_tasks"),
        *[(pl.col("status") == name).sum().cast(pl.Int32).alias(f"n_{name}") for name in schema.DEPTH_STATUSES],
        pl.col("non_monotone").fill_null(False).sum().cast(pl.Int32).alias("n_non_monotone"),
    ]
    if by is None:
        return depth.select(aggs)
    return depth.group_by("dataset").agg(aggs).sort("dataset")


def depth_intervals(depth: pl.DataFrame, *, interval: str = "ladder") -> pl.DataFrame:
    """Count tasks by the interval their D stands for, per dataset and depth status: the ladder's, or the true depth's.

    ``interval="ladder"`` (default): D's rounding to the ladder, (``depth_low``, ``depth_high``]: a
    solved task's D = 10 on the ladder 1, 2, 3, 5, 10, ... reads "more than 5 turns and at most 10";
    an unsolved task is right-censored above the top cap (``depth_high`` null); an incomplete one
    has neither bound. Under noise this is not where the true depth lies (a lucky pass sets D low, a
    miss sets it high): ``interval="true_depth"`` counts the intervals for the true depth
    (``ci_low``, ``ci_high``] instead (:func:`estimate_depth`'s ``level``), which every task with a
    counted model has, incomplete ones too.

    Parameters
    ----------
    depth : pl.DataFrame
        A depth table from :func:`estimate_depth`.
    interval : {"ladder", "true_depth"}, default "ladder"
        Which interval to count.

    Returns
    -------
    pl.DataFrame
        Columns dataset, status, then depth_low, depth_high (or ci_low, ci_high), n_tasks; sorted by
        dataset and interval, the right-censored ones last.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> depth = schema.conform(pl.DataFrame({"dataset": "d", "task": ["a", "b", "c"],
    ...     "status": ["solved", "solved", "unsolved"], "depth_low": [5, 5, 80],
    ...     "depth_high": [10, 10, None], "ci_low": [3, 5, 40], "ci_high": [10, 10, None]}), "depth")
    >>> depth_intervals(depth).rows()
    [('d', 'solved', 5, 10, 2), ('d', 'unsolved', 80, None, 1)]
    >>> depth_intervals(depth, interval="true_depth").rows()
    [('d', 'solved', 3, 10, 1), ('d', 'solved', 5, 10, 1), ('d', 'unsolved', 40, None, 1)]
    """
    function = "depth_intervals"
    interval = check_choice(interval, "interval", function, ("ladder", "true_depth"))
    low, high = ("depth_low", "depth_high") if interval == "ladder" else ("ci_low", "ci_high")
    check_frame(depth, "depth", function, ("dataset", "status", low, high))
    return (
        depth.group_by("dataset", "status", low, high)
        .agg(pl.len().cast(pl.Int32).alias("n_tasks"))
        .sort("dataset", high, low, nulls_last=True)
    )


def second_model_effect(
    trials: pl.DataFrame,
    *,
    first_model: str | None = None,
    by: str | None = "dataset",
    caps: Sequence[int] = CAPS,
    models: Sequence[str] | None = None,
    pass_rule: str = "any",
) -> pl.DataFrame:
    """How often adding the other models lowered D below what one model alone gives.

    Over tasks solved with two or more models, D (the minimum over models) is set against
    ``first_model``'s own evidence at the caps from D up:

    * **not lowered**: the model passes at cap D (it alone gives the same D);
    * **lowered**: the model's own runs show it needs more than D: it fails at D, or at a larger
      cap (a model that fails at cap c needs more than c turns);
    * **undetermined**: neither, e.g. the model was never run at D or above, or only passed at a
      larger cap without being run at D. Alone it might give D too, so the task is not counted as
      lowered; ``n_undetermined`` counts these and ``share_lowered`` is taken over the determined
      tasks. :func:`second_model_runs` lists the runs (the model at cap D) that would determine them.

    The paper reports this for 25% of the existing tasks and 7% of its own.

    Parameters
    ----------
    trials : pl.DataFrame
        The trials table (its capped trials are used; columns dataset, task, model, cap, status).
    first_model : str, optional
        The model taken alone. Default: every model in turn (one row each).
    by : {"dataset", None}, default "dataset"
        Group per dataset, or one overall row per model.
    caps, models, pass_rule
        As in :func:`estimate_depth`.

    Returns
    -------
    pl.DataFrame
        Columns [dataset,] first_model, n_tasks (solved with two or more models), n_determined,
        n_lowered, n_undetermined, share_lowered (n_lowered / n_determined; null when none is
        determined).

    Examples
    --------
    Model a fails cap 1 and is never run at cap 2; model b fails cap 1 and passes cap 2: D = 2, and
    whether a alone would also give 2 is unknown.

    >>> import polars as pl
    >>> from depthlab import schema
    >>> from depthlab.measures import second_model_effect
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": ["a", "b", "b"],
    ...     "cap": [1, 1, 2], "status": ["fail", "fail", "pass"]}), "trials")
    >>> second_model_effect(trials, first_model="a").row(0)
    ('d', 'a', 1, 0, 0, 1, None)
    """
    function = "second_model_effect"
    check_frame(trials, "trials", function, _TRIAL_COLUMNS)
    if by not in ("dataset", None):
        raise parameter_error("by", function, "'dataset' or None", by)
    if first_model is not None:
        check_model_name(first_model, "first_model", function)
    caps = check_caps(caps, function)
    models = check_models(models, function)
    pass_rule = check_choice(pass_rule, "pass_rule", function, PASS_RULES)
    grid = evidence_grid(trials, caps=caps, models=models, pass_rule=pass_rule)
    depth = depth_from_grid(grid, trials.select(TASK_KEYS).unique(), caps=caps)
    solved = depth.filter((pl.col("status") == "solved") & (pl.col("n_models") >= 2)).select(*TASK_KEYS, "depth")
    cells = grid.join(solved, on=list(TASK_KEYS), how="inner", nulls_equal=True)
    if first_model is not None:
        cells = cells.filter(pl.col("model") == first_model)
    per_model = cells.group_by([*TASK_KEYS, "model"]).agg(
        passes_at_depth=((pl.col("cap") == pl.col("depth")) & (pl.col("state") == "pass")).any(),
        fails_from_depth=((pl.col("cap") >= pl.col("depth")) & (pl.col("state") == "fail")).any(),
    )
    lowered = ~pl.col("passes_at_depth") & pl.col("fails_from_depth")
    determined = pl.col("passes_at_depth") | pl.col("fails_from_depth")
    keys = ["dataset", "first_model"] if by == "dataset" else ["first_model"]
    return (
        per_model.rename({"model": "first_model"})
        .group_by(keys)
        .agg(
            n_tasks=pl.len().cast(pl.Int32),
            n_determined=determined.sum().cast(pl.Int32),
            n_lowered=lowered.sum().cast(pl.Int32),
            n_undetermined=(~determined).sum().cast(pl.Int32),
        )
        .with_columns(
            share_lowered=pl.when(pl.col("n_determined") > 0).then(pl.col("n_lowered") / pl.col("n_determined"))
        )
        .sort(keys)
    )


def second_model_runs(
    trials: pl.DataFrame,
    *,
    first_model: str,
    caps: Sequence[int] = CAPS,
    pass_rule: str = "any",
) -> pl.DataFrame:
    """The runs that would decide :func:`second_model_effect` where it is undetermined: ``first_model`` at cap D.

    One row per task solved with two or more models on which ``first_model`` has neither passed at
    D nor failed at D or above; a valid run of it at cap D (the task's depth) decides whether the
    other models lowered D. Feed the rows to ``depthlab fill`` like a plan.

    Returns
    -------
    pl.DataFrame
        Columns dataset, task, model, cap (Int32), sorted.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": ["a", "b", "b"],
    ...     "cap": [1, 1, 2], "status": ["fail", "fail", "pass"]}), "trials")
    >>> second_model_runs(trials, first_model="a").row(0)
    ('d', 't', 'a', 2)
    """
    function = "second_model_runs"
    check_frame(trials, "trials", function, _TRIAL_COLUMNS)
    check_model_name(first_model, "first_model", function)
    caps = check_caps(caps, function)
    pass_rule = check_choice(pass_rule, "pass_rule", function, PASS_RULES)
    grid = evidence_grid(trials, caps=caps, models=None, pass_rule=pass_rule)
    depth = depth_from_grid(grid, trials.select(TASK_KEYS).unique(), caps=caps)
    solved = depth.filter((pl.col("status") == "solved") & (pl.col("n_models") >= 2)).select(*TASK_KEYS, "depth")
    cells = grid.filter(pl.col("model") == first_model).join(solved, on=list(TASK_KEYS), how="inner", nulls_equal=True)
    undetermined = (
        cells.group_by([*TASK_KEYS, "model"])
        .agg(
            decided=(
                ((pl.col("cap") == pl.col("depth")) & (pl.col("state") == "pass"))
                | ((pl.col("cap") >= pl.col("depth")) & (pl.col("state") == "fail"))
            ).any(),
            cap=pl.col("depth").first().cast(pl.Int32),
        )
        .filter(~pl.col("decided"))
    )
    return undetermined.select(*TASK_KEYS, "model", "cap").sort([*TASK_KEYS, "model"])
