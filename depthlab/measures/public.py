"""Turn counts N and public pass rates, from the uncapped (public, leaderboard-style) runs.

Both use the valid uncapped trials: ``cap`` null and ``status`` ``pass`` or ``fail``. Which
trials are valid, and whether a missing reward is a failure, is the trials table's status rule
(``load_trials(..., status_rule=...)``, the leaderboard rule by default); nothing here re-decides it.
"""

from __future__ import annotations

import polars as pl

from depthlab._checks import check_choice, check_frame

_VALID_UNCAPPED = pl.col("cap").is_null() & pl.col("status").is_in(("pass", "fail"))


def public_trials(trials: pl.DataFrame) -> pl.DataFrame:
    """The valid uncapped trials (``cap`` null, ``status`` pass or fail)."""
    return trials.filter(_VALID_UNCAPPED)


def turn_counts(trials: pl.DataFrame) -> pl.DataFrame:
    """Per (dataset, task, model): the median turns and the share of runs that hit the harness limit.

    Uses the valid uncapped trials only (``cap`` null, ``status`` pass or fail); trials without
    a turn count are left out of the median but kept in ``n_trials``.

    Parameters
    ----------
    trials : pl.DataFrame
        The trials table (columns dataset, task, model, cap, status, n_turns, hit_limit).

    Returns
    -------
    pl.DataFrame
        Columns dataset, task, model, n_turns (median, Float64), hit_limit_share (Float64,
        over trials with a known ``hit_limit``), n_trials (Int32), sorted by the keys.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> from depthlab.measures import turn_counts
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": "m",
    ...     "status": ["pass", "fail", "invalid"], "n_turns": [4, 10, 1],
    ...     "hit_limit": [False, True, False]}), "trials")
    >>> turn_counts(trials).row(0)
    ('d', 't', 'm', 7.0, 0.5, 2)
    """
    check_frame(trials, "trials", "turn_counts", ("dataset", "task", "model", "cap", "status", "n_turns", "hit_limit"))
    keys = ["dataset", "task", "model"]
    return (
        public_trials(trials)
        .group_by(keys)
        .agg(
            n_turns=pl.col("n_turns").cast(pl.Float64).median(),
            hit_limit_share=pl.col("hit_limit").cast(pl.Float64).mean(),
            n_trials=pl.len().cast(pl.Int32),
        )
        .sort(keys)
    )


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
    keys = ["dataset", "task"] if by == "task" else ["dataset", "task", "model"]
    return (
        public_trials(trials)
        .group_by(keys)
        .agg(pass_rate=(pl.col("status") == "pass").mean(), n_valid=pl.len().cast(pl.Int32))
        .sort(keys)
    )
