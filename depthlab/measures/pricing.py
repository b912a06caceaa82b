"""Cost as a column: each trial's tokens priced from a price table, beside the cost it recorded.

A trial records its tokens (``n_input_tokens``, which by Harbor's definition include the cached
ones, ``n_cache_tokens``, ``n_output_tokens``) and perhaps a ``cost_usd`` its agent computed. The
priced cost is the tokens at a price table's list prices (:func:`depthlab.io.read_prices`: the
public prices LiteLLM publishes, shipped with depthlab, or a user's table):

``(input - cached) * input price + cached * cache-read price + output * output price``,

cached tokens at the input price when the table states no cache-read price. Where both exist they
are compared (:data:`COST_TOLERANCE`), so a wrong price, a self-hosted model recorded at 0 or an
agent that priced tokens itself is seen, not averaged in.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from depthlab._checks import check_frame, check_number
from depthlab.io.prices import read_prices
from depthlab.schema import CAPS, COST_PER_DEPTH, COST_PER_TASK, COST_PER_TURN, DEPTH_COST, PRICED_TRIALS, PRICES

#: Relative difference under which a recorded cost agrees with the priced one: 5%, plus a
#: micro-dollar for rounding. List prices change by more than that when they change (a new tier
#: or model version), and agents that price tokens themselves round to cents or less.
COST_TOLERANCE = 0.05
#: Dollars added to the tolerance, so costs of a few micro-dollars rounded apart still agree.
COST_ROUNDING_USD = 1e-6

_TOKENS = ("n_input_tokens", "n_cache_tokens", "n_output_tokens")


def price_trials(
    trials: pl.DataFrame, prices: pl.DataFrame | None = None, *, tolerance: float = COST_TOLERANCE
) -> pl.DataFrame:
    """The trials table with each trial's tokens priced: ``cost_priced_usd``, ``price_model``, ``cost_check``.

    Parameters
    ----------
    trials : polars.DataFrame
        The trials table (``model``, the token columns and ``cost_usd`` are read).
    prices : polars.DataFrame, optional
        A price table (``schema.PRICES``; :func:`depthlab.io.read_prices`); None: the one shipped.
    tolerance : float, default COST_TOLERANCE (0.05)
        Relative difference up to which ``cost_usd`` and the priced cost agree.

    Returns
    -------
    polars.DataFrame
        ``trials`` with the columns of ``schema.PRICED_TRIALS``. A trial's model is looked up as
        written, then without its provider prefix (``anthropic/claude-sonnet-4-5`` is priced as
        ``claude-sonnet-4-5`` when the table has no row of the full name). ``cost_check``: ``agree``
        or ``disagree`` (both costs known), ``no recorded cost``, ``no price`` (the model is not in
        the table) or ``no tokens`` (input or output tokens not recorded).

    Examples
    --------
    >>> import polars as pl
    >>> prices = pl.DataFrame({"model": ["m"], "input_usd_per_token": [1e-6], "output_usd_per_token": [4e-6],
    ...     "cache_read_usd_per_token": [1e-7]})
    >>> trials = pl.DataFrame({"model": ["vendor/m", "m", "other"], "n_input_tokens": [1000, 1000, 5],
    ...     "n_cache_tokens": [600, None, 0], "n_output_tokens": [100, 100, 5], "cost_usd": [0.00086, 0.5, None]})
    >>> price_trials(trials, prices).select(pl.col("cost_priced_usd").round(8), "cost_check").rows()
    [(0.00086, 'agree'), (0.0014, 'disagree'), (None, 'no price')]
    """
    function = "price_trials"
    frame = check_frame(trials, "trials", function, ("model", *_TOKENS, "cost_usd"))
    table = read_prices() if prices is None else check_frame(prices, "prices", function, tuple(PRICES))
    tolerance = check_number(tolerance, "tolerance", function, low=0, kind="a non-negative number")
    table = table.select(list(PRICES)).unique("model", keep="first")
    keyed = frame.with_row_index("_row").with_columns(
        pl.col("model").alias("_exact"), pl.col("model").str.replace(r"^[^/]+/", "").alias("_bare")
    )
    exact = keyed.join(table.rename({"model": "_exact"}), on="_exact", how="left")
    bare = keyed.select("_row", "_bare").join(table.rename({"model": "_bare"}), on="_bare", how="left")
    price_columns = list(PRICES)[1:]
    has_exact = pl.col("input_usd_per_token").is_not_null()
    merged = exact.join(bare.rename({c: f"_bare_{c}" for c in price_columns}), on="_row", how="left").with_columns(
        *(pl.when(has_exact).then(pl.col(c)).otherwise(pl.col(f"_bare_{c}")).alias(c) for c in price_columns),
        pl.when(has_exact)
        .then(pl.col("_exact"))
        .when(pl.col("_bare_input_usd_per_token").is_not_null())
        .then(pl.col("_bare"))
        .alias("price_model"),
    )
    cached = pl.col("n_cache_tokens").fill_null(0).cast(pl.Float64)
    priced = (
        (pl.col("n_input_tokens").cast(pl.Float64) - cached) * pl.col("input_usd_per_token")
        + cached * pl.col("cache_read_usd_per_token").fill_null(pl.col("input_usd_per_token"))
        + pl.col("n_output_tokens").cast(pl.Float64) * pl.col("output_usd_per_token")
    )
    no_tokens = pl.col("n_input_tokens").is_null() | pl.col("n_output_tokens").is_null()
    merged = merged.with_columns(pl.when(no_tokens).then(None).otherwise(priced).alias("cost_priced_usd"))
    gap = (pl.col("cost_priced_usd") - pl.col("cost_usd")).abs()
    larger = pl.max_horizontal(pl.col("cost_priced_usd").abs(), pl.col("cost_usd").abs())
    allowed = tolerance * larger + COST_ROUNDING_USD
    check = (
        pl.when(pl.col("price_model").is_null())
        .then(pl.lit("no price"))
        .when(no_tokens)
        .then(pl.lit("no tokens"))
        .when(pl.col("cost_usd").is_null())
        .then(pl.lit("no recorded cost"))
        .when(gap <= allowed)
        .then(pl.lit("agree"))
        .otherwise(pl.lit("disagree"))
    )
    merged = merged.with_columns(check.alias("cost_check")).sort("_row")
    return frame.with_columns(
        merged.select(pl.col(name).cast(dtype) for name, dtype in PRICED_TRIALS.items()).get_columns()
    )


def cost_per_task(priced: pl.DataFrame) -> pl.DataFrame:
    """What measuring each task cost: its trials' priced and recorded dollars (``schema.COST_PER_TASK``).

    ``priced`` is :func:`price_trials`' output. A sum is null when no trial of the task has that
    cost (unknown, not zero).

    Examples
    --------
    >>> import polars as pl
    >>> priced = pl.DataFrame({"dataset": ["d"] * 3, "task": ["a", "a", "b"], "cost_priced_usd": [0.5, None, 0.25],
    ...     "cost_usd": [None, None, 0.3], "cost_check": ["no recorded cost", "no price", "disagree"]})
    >>> cost_per_task(priced).select("task", "n_priced", "cost_priced_usd", "cost_usd").rows()
    [('a', 1, 0.5, None), ('b', 1, 0.25, 0.3)]
    """
    function = "cost_per_task"
    frame = check_frame(priced, "priced", function, ("dataset", "task", "cost_priced_usd", "cost_usd", "cost_check"))
    out = frame.group_by("dataset", "task", maintain_order=True).agg(
        pl.len().alias("n_trials"),
        pl.col("cost_priced_usd").is_not_null().sum().alias("n_priced"),
        _known_sum("cost_priced_usd"),
        _known_sum("cost_usd"),
        (pl.col("cost_check") == "disagree").sum().alias("n_disagree"),
    )
    return out.select(pl.col(name).cast(dtype) for name, dtype in COST_PER_TASK.items()).sort("dataset", "task")


def cost_per_depth(priced: pl.DataFrame, depth: pl.DataFrame) -> pl.DataFrame:
    """What measuring tasks of each D cost (``schema.COST_PER_DEPTH``): dollars per D and per task at that D.

    ``priced`` is :func:`price_trials`' output; ``depth`` the depth table
    (:func:`depthlab.measures.estimate_depth`: ``dataset``, ``task``, ``depth``, ``status``), one
    row per dataset, D and status (an incomplete task's D is not yet pinned: it is kept apart from
    a solved task's). Every task of ``depth`` counts, those without a priced trial in ``n_tasks``
    only; the mean per task is over the tasks with one.

    Examples
    --------
    >>> import polars as pl
    >>> priced = pl.DataFrame({"dataset": ["d"] * 3, "task": ["a", "a", "b"], "cost_priced_usd": [0.5, 0.1, 0.25],
    ...     "cost_usd": [None] * 3, "cost_check": ["no recorded cost"] * 3})
    >>> depth = pl.DataFrame({"dataset": ["d", "d", "d"], "task": ["a", "b", "c"], "depth": [1, 1, 3],
    ...     "status": ["solved", "solved", "incomplete"]})
    >>> cost_per_depth(priced, depth).select("depth", "status", "n_tasks", "n_tasks_priced",
    ...     "cost_priced_usd_per_task").rows()
    [(1, 'solved', 2, 2, 0.425), (3, 'incomplete', 1, 0, None)]
    """
    function = "cost_per_depth"
    per_task = cost_per_task(priced)
    keys = ("dataset", "task", "depth", "status")
    tasks = check_frame(depth, "depth", function, keys).select(keys)
    joined = tasks.join(per_task, on=["dataset", "task"], how="left", nulls_equal=True)
    out = joined.group_by("dataset", "depth", "status").agg(
        pl.len().alias("n_tasks"),
        (pl.col("n_priced").fill_null(0) > 0).sum().alias("n_tasks_priced"),
        _known_sum("cost_priced_usd"),
        pl.col("cost_priced_usd").mean().alias("cost_priced_usd_per_task"),
        _known_sum("cost_usd"),
    )
    out = out.select(pl.col(name).cast(dtype) for name, dtype in COST_PER_DEPTH.items())
    return out.sort("dataset", "depth", "status", nulls_last=True)


def price_depth(
    priced: pl.DataFrame, depth: pl.DataFrame, *, caps: Sequence[int] = CAPS, models: Sequence[str] | None = None
) -> pl.DataFrame:
    """The depth table with what each task's D cost: ``depth`` with the columns of ``schema.DEPTH_COST``.

    Parameters
    ----------
    priced : polars.DataFrame
        :func:`price_trials`' output: the trials D was estimated from, priced.
    depth : polars.DataFrame
        The depth table (:func:`depthlab.measures.estimate_depth`).
    caps : sequence of int, default CAPS
        The ladder D was estimated on.
    models : sequence of str, optional
        The models that count for D; None: every model with a run at a ladder cap (as
        :func:`~depthlab.measures.estimate_depth`).

    Returns
    -------
    polars.DataFrame
        ``depth`` (its rows and order) with ``n_runs``, ``n_runs_priced``, ``cost_priced_usd``,
        ``cost_usd`` and ``n_cost_disagree`` over every trial of the task in ``priced``, and
        ``depth_cost_priced_usd`` / ``depth_cost_usd`` over the runs D rests on (a ladder cap, a
        counted model; invalid runs too: they were paid for). The priced and the recorded cost
        stand side by side; a sum with no known cost is null (unknown), not 0.

    Examples
    --------
    >>> import polars as pl
    >>> priced = pl.DataFrame({"dataset": ["d"] * 3, "task": ["a", "a", "a"], "model": ["m", "m", "m"],
    ...     "cap": [1, 2, None], "cost_priced_usd": [0.5, 0.25, 2.0], "cost_usd": [0.5, None, None],
    ...     "cost_check": ["agree", "no recorded cost", "no recorded cost"]})
    >>> depth = pl.DataFrame({"dataset": ["d", "d"], "task": ["a", "b"], "depth": [2, None]})
    >>> price_depth(priced, depth, caps=(1, 2)).select("task", "n_runs", "cost_priced_usd",
    ...     "depth_cost_priced_usd", "depth_cost_usd").rows()
    [('a', 3, 2.75, 0.75, 0.5), ('b', 0, None, None, None)]
    """
    function = "price_depth"
    columns = ("dataset", "task", "model", "cap", "cost_priced_usd", "cost_usd", "cost_check")
    frame = check_frame(priced, "priced", function, columns)
    table = check_frame(depth, "depth", function, ("dataset", "task"))
    ladder = pl.col("cap").is_in(list(caps)) & pl.col("model").is_not_null()
    if models is not None:
        ladder = ladder & pl.col("model").is_in(list(models))
    per_task = frame.group_by("dataset", "task").agg(
        pl.len().alias("n_runs"),
        pl.col("cost_priced_usd").is_not_null().sum().alias("n_runs_priced"),
        _known_sum("cost_priced_usd"),
        _known_sum("cost_usd"),
        (pl.col("cost_check") == "disagree").sum().alias("n_cost_disagree"),
        _known_sum("cost_priced_usd", ladder).alias("depth_cost_priced_usd"),
        _known_sum("cost_usd", ladder).alias("depth_cost_usd"),
    )
    counts = ("n_runs", "n_runs_priced", "n_cost_disagree")
    joined = table.drop(list(DEPTH_COST), strict=False).join(
        per_task, on=["dataset", "task"], how="left", nulls_equal=True, maintain_order="left"
    )
    return joined.with_columns(pl.col(c).fill_null(0) for c in counts).with_columns(
        pl.col(name).cast(dtype) for name, dtype in DEPTH_COST.items()
    )


def cost_per_turn(priced: pl.DataFrame, *, models: Sequence[str] | None = None) -> pl.DataFrame:
    """Dollars per turn of the priced runs made, per dataset (``schema.COST_PER_TURN``): a forecast's price.

    A forecast counts turns (:func:`depthlab.measures.bayes.forecast`); the runs already made say
    what a turn costs: their tokens per turn at the price table's prices. The rate is the priced
    runs' cost over their turns (runs with a priced cost and a turn count above 0), so a long run
    weighs by its turns.

    Parameters
    ----------
    priced : polars.DataFrame
        :func:`price_trials`' output (``dataset``, ``model``, ``n_turns``, ``cost_priced_usd``).
    models : sequence of str, optional
        Only these models' runs; None: every run.

    Examples
    --------
    >>> import polars as pl
    >>> priced = pl.DataFrame({"dataset": ["d"] * 3, "model": ["m", "m", "x"], "n_turns": [2, 6, 4],
    ...     "cost_priced_usd": [0.1, 0.3, None]})
    >>> cost_per_turn(priced).select("n_runs", "n_runs_priced", "n_turns", "usd_per_turn").rows()
    [(3, 2, 8, 0.05)]
    """
    function = "cost_per_turn"
    frame = check_frame(priced, "priced", function, ("dataset", "model", "n_turns", "cost_priced_usd"))
    if models is not None:
        frame = frame.filter(pl.col("model").is_in(list(models)))
    usable = pl.col("cost_priced_usd").is_not_null() & (pl.col("n_turns").fill_null(0) > 0)
    out = frame.group_by("dataset", maintain_order=True).agg(
        pl.len().alias("n_runs"),
        usable.sum().alias("n_runs_priced"),
        pl.col("n_turns").filter(usable).sum().alias("n_turns"),
        _known_sum("cost_priced_usd", usable),
    )
    rate = pl.when(pl.col("n_turns") > 0).then(pl.col("cost_priced_usd") / pl.col("n_turns"))
    out = out.with_columns(rate.alias("usd_per_turn"))
    return out.select(pl.col(name).cast(dtype) for name, dtype in COST_PER_TURN.items()).sort("dataset")


def _known_sum(column: str, where: pl.Expr | None = None) -> pl.Expr:
    """The sum of a column's known values (of the rows ``where`` holds), null when none is known (unknown, not 0)."""
    values = pl.col(column) if where is None else pl.col(column).filter(where)
    return pl.when(values.is_not_null().any()).then(values.sum()).alias(column)
