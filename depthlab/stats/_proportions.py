"""Intervals on pass rates and p-values adjusted over a family of tests, from statsmodels."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from depthlab._checks import check_choice, check_number, parameter_problem

#: Interval methods for a binomial proportion (statsmodels ``proportion_confint`` names).
PROPORTION_METHODS: tuple[str, ...] = ("wilson", "beta")
#: Family-wise (holm, bonferroni) and false-discovery (fdr_bh) adjustments (statsmodels ``multipletests``).
ADJUST_METHODS: tuple[str, ...] = ("holm", "bonferroni", "fdr_bh")


def proportion_ci(
    passes: Sequence[float] | np.ndarray | pl.Series,
    n: Sequence[float] | np.ndarray | pl.Series,
    *,
    ci: float = 0.95,
    method: str = "wilson",
) -> tuple[np.ndarray, np.ndarray]:
    """Confidence intervals of pass rates ``passes / n``: Wilson score (default) or Clopper-Pearson.

    Parameters
    ----------
    passes, n : array-like of int
        Passing runs and runs, element-wise (``0 <= passes <= n``; ``n = 0`` gives NaN bounds).
    ci : float
        Coverage, in (0, 1).
    method : {"wilson", "beta"}
        ``"wilson"``: the Wilson score interval; ``"beta"``: the exact Clopper-Pearson interval.

    Returns
    -------
    (low, high) : tuple of np.ndarray

    Notes
    -----
    The Wilson interval stays inside [0, 1] and keeps near-nominal coverage at the small run
    counts and extreme rates of agent benchmarks, where the normal (Wald) interval collapses to
    a point at 0 % or 100 %. Clopper-Pearson is exact but conservative.

    References
    ----------
    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical inference.
    *JASA* 22(158), 209-212. Brown, Cai & DasGupta (2001). Interval estimation for a binomial
    proportion. *Statistical Science* 16(2), 101-133.

    Examples
    --------
    >>> low, high = proportion_ci([0, 5], [10, 10])
    >>> [round(float(v), 4) for v in (low[0], high[0], low[1], high[1])]
    [0.0, 0.2775, 0.2366, 0.7634]
    """
    from statsmodels.stats.proportion import proportion_confint

    function = "proportion_ci"
    check_number(ci, "ci", function, low=0, high=1, low_open=True, high_open=True, kind="a float")
    check_choice(method, "method", function, PROPORTION_METHODS)
    k = np.asarray(passes, dtype=float)
    total = np.asarray(n, dtype=float)
    if k.shape != total.shape:
        raise parameter_problem("passes", function, f"must have the shape of 'n' {total.shape}, got {k.shape}")
    if np.any(k < 0) or np.any(k > total):
        raise parameter_problem("passes", function, f"must lie in [0, n] element-wise, got {k.tolist()}")
    low = np.full(k.shape, np.nan)
    high = np.full(k.shape, np.nan)
    some = total > 0
    if np.any(some):
        low[some], high[some] = proportion_confint(k[some], total[some], alpha=1 - ci, method=method)
    return low, high


def adjust_p(p: Sequence[float | None] | np.ndarray | pl.Series, *, method: str = "holm") -> np.ndarray:
    """p-values adjusted for the number of tests in the family (missing values stay missing).

    Parameters
    ----------
    p : array-like of float
        Raw p-values of the family (None or NaN: not tested, left out of the count).
    method : {"holm", "bonferroni", "fdr_bh"}
        Holm's step-down (family-wise error, default), Bonferroni, or Benjamini-Hochberg (false
        discovery rate).

    Returns
    -------
    np.ndarray
        Adjusted p-values, NaN where ``p`` was missing.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. *Scandinavian Journal
    of Statistics* 6(2), 65-70.

    Examples
    --------
    >>> adjust_p([0.01, 0.04, None, 0.03]).round(3).tolist()
    [0.03, 0.06, nan, 0.06]
    """
    from statsmodels.stats.multitest import multipletests

    check_choice(method, "method", "adjust_p", ADJUST_METHODS)
    raw = np.array([np.nan if value is None else value for value in p], dtype=float)
    out = np.full(raw.shape, np.nan)
    present = ~np.isnan(raw)
    if np.any((raw[present] < 0) | (raw[present] > 1)):
        raise parameter_problem("p", "adjust_p", f"must hold probabilities in [0, 1], got {raw.tolist()}")
    if np.any(present):
        out[present] = multipletests(raw[present], method=method)[1]
    return out
