"""Paired and grouped statistics: sign test, within-group percentiles, the depth/work quadrants."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import polars as pl
from scipy import stats as _scipy_stats

from depthlab._checks import check_choice, check_number, parameter_error, parameter_problem
from depthlab._defaults import N_BOOT, SEED
from depthlab.stats._engine import _interval, _mean_statistic, _row_bootstrap
from depthlab.stats._inputs import (
    Method,
    Seed,
    _as_column_list,
    _as_float_vector,
    _as_polars,
    _check_common,
    _require_columns,
    _require_numeric,
)
from depthlab.stats._results import SignTest


def sign_test(a: Any, b: Any = None) -> SignTest:
    """Exact two-sided sign test of paired values (or of differences when ``b`` is None).

    Zero differences are dropped and counted; pairs with a null/NaN are left out and counted. The
    p-value is ``min(1, 2 P(X <= min(n_pos, n_neg)))`` for X ~ Binomial(n_pos + n_neg, 1/2), as
    ``statsmodels.stats.descriptivestats.sign_test`` and ``scipy.stats.binomtest``.

    Parameters
    ----------
    a : array-like of numbers
        First values of each pair, or the differences.
    b : array-like of numbers, optional
        Second values of each pair (same length as ``a``); the difference is ``a - b``.

    Returns
    -------
    SignTest

    Examples
    --------
    >>> sign_test([1, 2, 3, 1, 1, 2, 5, -1, -2, 0]).p
    0.1796875
    """
    diff = _as_float_vector(a, "a")
    if b is not None:
        other = _as_float_vector(b, "b")
        if len(other) != len(diff):
            raise parameter_problem("b", "sign_test", f"must have the length of 'a' ({len(diff)}), got {len(other)}")
        diff = diff - other
    missing = np.isnan(diff)
    diff = diff[~missing]
    n_pos, n_neg = int((diff > 0).sum()), int((diff < 0).sum())
    n = n_pos + n_neg
    p = math.nan if n == 0 else min(1.0, 2.0 * float(_scipy_stats.binom.cdf(min(n_pos, n_neg), n, 0.5)))
    return SignTest(n_pos=n_pos, n_neg=n_neg, n_zero=len(diff) - n, p=p, n_missing=int(missing.sum()))


def within_percentile(df: Any, value: str, by: str | Sequence[str] | None = "dataset") -> pl.Series:
    """Percentile of ``value`` within each group of ``by``, in (0, 1].

    Convention: the average rank of the value among the group's non-null values (ties share the
    mean of their ranks) divided by the number of those values. The smallest of n distinct values
    gets 1/n and the largest 1; a group of one gets 1. Nulls (and NaN) stay null. For a pass rate,
    lower means harder than the rest of its dataset.

    Parameters
    ----------
    df : polars.DataFrame or pandas.DataFrame
    value : str
        Numeric column.
    by : str, sequence of str or None, default "dataset"
        Grouping columns; None ranks over the whole frame.

    Returns
    -------
    polars.Series
        Named ``f"{value}_percentile"``, aligned with the rows of ``df``.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"dataset": ["a", "a", "a", "b", "b"], "pass_rate": [0.1, 0.5, 0.5, 0.2, None]})
    >>> within_percentile(df, "pass_rate").round(4).to_list()
    [0.3333, 0.8333, 0.8333, 1.0, None]
    """
    groups = _as_column_list(by, "by", "within_percentile")
    frame = _as_polars(df, "within_percentile")
    _require_columns(frame, [value, *groups], ("value", *["by"] * len(groups)), "within_percentile")
    _require_numeric(frame, value, "value", "within_percentile")
    column = pl.col(value).cast(pl.Float64).fill_nan(None)
    percentile = column.rank("average") / column.count()
    if groups:
        percentile = percentile.over(groups)
    return frame.select(percentile.alias(f"{value}_percentile")).to_series()


def quadrant_cells(
    df: Any,
    *,
    depth: str = "depth",
    work: str = "work",
    value: str = "pass_rate",
    by: str | Sequence[str] | None = "dataset",
    depth_split: float = 2,
    work_split: float | Literal["median"] = "median",
    work_ties: Literal["large", "small"] = "large",
    n_boot: int = N_BOOT,
    ci: float = 0.95,
    method: Method = "bca",
    seed: Seed = SEED,
) -> pl.DataFrame:
    """The 2×2 depth/work split with each cell's mean within-group percentile of ``value``.

    A task is *deep* when ``depth >= depth_split`` and has *large* work when ``work >= work_split``
    (``"median"``: the median work of the tasks used, pooled over groups); a task whose work equals
    the split is *large* by default, *small* with ``work_ties="small"`` (``work > work_split``). The percentile is
    :func:`within_percentile` of ``value`` by ``by``, computed among every row with a value (so a
    task's percentile does not depend on whether its depth is known); rows with a null depth or
    work are then left out. In the audit table an unsolved task (D above the top cap) has a null
    depth: fill it (e.g. ``pl.col("depth").fill_null(160)``) to count it as deep. The interval
    bootstraps the cell's tasks (percentiles held fixed).

    Parameters
    ----------
    df : polars.DataFrame or pandas.DataFrame
        The audit table (one row per task).
    depth, work, value : str
        Column names.
    by : str, sequence of str or None, default "dataset"
        Groups within which the percentile is taken.
    depth_split : float, default 2
    work_split : float or "median", default "median"
    work_ties : {"large", "small"}, default "large"
        The work class of a task whose work equals the split.
    n_boot, ci, method, seed
        As in :func:`partial_spearman`; one generator serves the four cells.

    Returns
    -------
    polars.DataFrame
        Four rows (deep/large, deep/small, shallow/large, shallow/small) with columns
        ``depth_class, work_class, n, mean_percentile, ci_low, ci_high, mean_<value>,
        depth_split, work_split``. An empty cell has ``n = 0`` and nulls.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"dataset": ["a"] * 6, "depth": [1, 1, 5, 5, 2, 1], "work": [3, 30, 4, 40, 35, 5],
    ...                    "pass_rate": [0.9, 0.7, 0.5, 0.1, 0.2, 0.8]})
    >>> quadrant_cells(df, n_boot=0).select("depth_class", "work_class", "n").rows()
    [('deep', 'large', 2), ('deep', 'small', 1), ('shallow', 'large', 1), ('shallow', 'small', 2)]
    """
    _check_common("quadrant_cells", columns=[], names=(), n_boot=n_boot, ci=ci, method=method)
    frame = _as_polars(df, "quadrant_cells")
    groups = _as_column_list(by, "by", "quadrant_cells")
    _require_columns(
        frame, [depth, work, value, *groups], ("depth", "work", "value", *["by"] * len(groups)), "quadrant_cells"
    )
    for column, name in ((depth, "depth"), (work, "work")):
        _require_numeric(frame, column, name, "quadrant_cells")
    check_number(depth_split, "depth_split", "quadrant_cells")
    percentile_name = f"{value}_percentile"
    frame = frame.with_columns(within_percentile(frame, value, by=groups or None)).filter(
        pl.col(percentile_name).is_not_null() & pl.col(depth).is_not_null() & pl.col(work).is_not_null()
    )
    if work_split == "median":
        split = float(frame.get_column(work).median()) if frame.height else math.nan
    elif isinstance(work_split, int | float) and not isinstance(work_split, bool):
        split = float(work_split)
    else:
        raise parameter_error("work_split", "quadrant_cells", "'median' or a number", work_split)
    check_choice(work_ties, "work_ties", "quadrant_cells", ("large", "small"))
    is_large = pl.col(work) >= split if work_ties == "large" else pl.col(work) > split
    rng = np.random.default_rng(seed)
    rows = []
    for depth_class, deep in (("deep", True), ("shallow", False)):
        for work_class, large in (("large", True), ("small", False)):
            cell = frame.filter((pl.col(depth) >= depth_split) == deep, is_large == large)
            percentiles = cell.get_column(percentile_name).to_numpy().astype(np.float64)
            mean = float(percentiles.mean()) if len(percentiles) else None
            low = high = None
            if mean is not None and n_boot:
                boot, jack = _row_bootstrap(_mean_statistic(percentiles), len(percentiles), n_boot, method, rng)
                low, high, _ = _interval(mean, boot, jack, ci, method)
            rows.append(
                {
                    "depth_class": depth_class,
                    "work_class": work_class,
                    "n": cell.height,
                    "mean_percentile": mean,
                    "ci_low": low,
                    "ci_high": high,
                    f"mean_{value}": cell.get_column(value).cast(pl.Float64).mean(),
                    "depth_split": float(depth_split),
                    "work_split": split,
                }
            )
    return pl.DataFrame(
        rows, schema_overrides={"mean_percentile": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64}
    )
