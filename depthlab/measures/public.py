"""Turn counts N and public pass rates, from the uncapped (public, leaderboard-style) runs.

Both use the valid uncapped trials: ``cap`` null and ``status`` ``pass`` or ``fail``. Which
trials are valid, and whether a missing reward is a failure, is the trials table's status rule
(``load_trials(..., status_rule=...)``, the leaderboard rule by default); nothing here re-decides it.
"""

from __future__ import annotations

from typing import Final

import polars as pl

from depthlab._checks import check_choice, check_frame

_VALID_UNCAPPED = pl.col("cap").is_null() & pl.col("status").is_in(("pass", "fail"))


def public_trials(trials: pl.DataFrame) -> pl.DataFrame:
    """The valid uncapped trials (``cap`` null, ``status`` pass or fail)."""
    return trials.filter(_VALID_UNCAPPED)


def turn_counts(trials: pl.DataFrame, *, by: str = "model") -> pl.DataFrame:
    """Per (dataset, task, model): the median turns and the share of runs that hit the harness limit.

    Uses the valid uncapped trials only (``cap`` null, ``status`` pass or fail); trials without
    a turn count are left out of the median but kept in ``n_valid``.

    Parameters
    ----------
    trials : pl.DataFrame
        The trials table (columns dataset, task, model, cap, status, n_turns, hit_limit).
    by : {"model", "task"}, default "model"
        ``"model"`` gives one row per (dataset, task, model); ``"task"`` pools every model's
        trials of a task (the audit table's N).

    Returns
    -------
    pl.DataFrame
        Columns dataset, task, [model,] n_turns (median, Float64), hit_limit_share (Float64,
        over trials with a known ``hit_limit``), n_valid (Int32: the valid uncapped trials, the
        count :func:`pass_rates` calls ``n_valid`` too), sorted by the keys. With ``by="model"``
        the same count is also given as ``n_trials``, its former name (deprecated; to be removed).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> from depthlab.measures import turn_counts
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": "m",
    ...     "status": ["pass", "fail", "invalid"], "n_turns": [4, 10, 1],
    ...     "hit_limit": [False, True, False]}), "trials")
    >>> turn_counts(trials).select("model", "n_turns", "hit_limit_share", "n_valid").row(0)
    ('m', 7.0, 0.5, 2)
    """
    function = "turn_counts"
    check_frame(trials, "trials", function, ("dataset", "task", "model", "cap", "status", "n_turns", "hit_limit"))
    by = check_choice(by, "by", function, ("model", "task"))
    keys = _keys(by)
    out = public_trials(trials).group_by(keys).agg(*_TURNS, _N_VALID).sort(keys)
    # ``n_trials``: the same count under its former name, kept for callers of the per-model table
    return out.with_columns(n_trials=pl.col("n_valid")) if by == "model" else out


def pass_rates(trials: pl.DataFrame, *, by: str = "task") -> pl.DataFrame:
    """Public pass rate: the mean of ``status == "pass"`` over valid uncapped trials.

    Valid means ``status`` is ``pass`` or ``fail`` under the trials table's status rule (the
    one ``load_trials`` applied, the Terminal-Bench leaderboard's by default); ``invalid``
    trials (infrastructure errors) are left out, never counted as failures.

    Parameters
    ----------
    trials : pl.DataFrame
        The trials table (columns dataset, task, model, cap, status).
    by : {"task", "model"}, default "task"
        ``"task"`` pools every model's trials of a task; ``"model"`` gives one row per
        (dataset, task, model).

    Returns
    -------
    pl.DataFrame
        Columns dataset, task, [model,] pass_rate (Float64), n_valid (Int32), sorted by the keys.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> from depthlab.measures import pass_rates
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": ["a", "a", "b"],
    ...     "status": ["pass", "invalid", "fail"]}), "trials")
    >>> pass_rates(trials).row(0)
    ('d', 't', 0.5, 2)
    """
    function = "pass_rates"
    check_frame(trials, "trials", function, ("dataset", "task", "model", "cap", "status"))
    by = check_choice(by, "by", function, ("task", "model"))
    keys = _keys(by)
    return public_trials(trials).group_by(keys).agg(_PASS_RATE, _N_VALID).sort(keys)


def public_measures(trials: pl.DataFrame) -> pl.DataFrame:
    """Per (dataset, task), pooled over models: :func:`turn_counts` and :func:`pass_rates` in one pass.

    The audit table's N, ``hit_limit_share``, ``pass_rate`` and ``n_valid`` (the same aggregations
    as ``turn_counts(by="task")`` and ``pass_rates(by="task")``, grouped once), unsorted.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": ["a", "b"],
    ...     "status": ["pass", "fail"], "n_turns": [4, 10], "hit_limit": [False, True]}), "trials")
    >>> public_measures(trials).row(0)
    ('d', 't', 7.0, 0.5, 0.5, 2)
    """
    return public_trials(trials).group_by(_keys("task")).agg(*_TURNS, _PASS_RATE, _N_VALID)


def _keys(by: str) -> list[str]:
    return ["dataset", "task"] if by == "task" else ["dataset", "task", "model"]


# the aggregations over valid uncapped trials, written once for turn_counts, pass_rates and the audit table
_TURNS: Final[tuple[pl.Expr, ...]] = (
    pl.col("n_turns").cast(pl.Float64).median().alias("n_turns"),
    pl.col("hit_limit").cast(pl.Float64).mean().alias("hit_limit_share"),
)
_PASS_RATE: Final[pl.Expr] = (pl.col("status") == "pass").mean().alias("pass_rate")
_N_VALID: Final[pl.Expr] = pl.len().cast(pl.Int32).alias("n_valid")
