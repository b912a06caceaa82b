"""The within-collection (pooled) rank partial correlation: collections pooled so that only within-collection
differences count.

Definition (fixed before any result was looked at)
--------------------------------------------------
Within each collection, every variable (x, y and the covariate) is replaced by its percentile rank
among that collection's tasks, ``(average rank - 0.5) / n``, so that it has mean 0.5 in every
collection. The collections are then pooled and the partial Pearson correlation of the percentiles
of x and y given the percentile of the covariate is taken,
``(r_xy - r_xz r_yz) / sqrt((1 - r_xz²)(1 - r_yz²))``. Because every collection's percentiles have
the same mean, the pooled covariances are sums of within-collection covariances: a difference
between collections (a deep collection with low pass rates) contributes nothing, and a collection
is weighted by its number of tasks. On one collection this is the rank partial correlation of
:func:`depthlab.stats.partial_spearman` itself.

The interval is a stratified bootstrap: tasks are resampled within each collection (each keeps its
size) and the percentiles recomputed in every resample; a 95% percentile interval, degenerate
resamples (a constant column) left out and counted. The p-value is the t-test with
``n - 3 - (collections - 1)`` degrees of freedom (a percentile per collection spends one degree of
freedom on each collection's mean).
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
import polars as pl
from scipy import stats as scipy_stats

from depthlab._defaults import AUDIT_N_BOOT, AUDIT_SEED
from depthlab.stats import PartialCorr

__all__ = ["STATISTIC", "within_collection_partial"]

#: The ``statistic`` name of the results of :func:`within_collection_partial`.
STATISTIC: Final[str] = "within_collection_spearman"


def within_collection_partial(
    frame: pl.DataFrame,
    x: str,
    y: str,
    covar: str,
    *,
    by: str = "dataset",
    n_boot: int = AUDIT_N_BOOT,
    seed: int = AUDIT_SEED,
) -> PartialCorr:
    """The within-collection rank partial correlation of ``x`` and ``y`` given ``covar`` (module docstring).

    Parameters
    ----------
    frame : pl.DataFrame
        One row per task, with ``by``, ``x``, ``y`` and ``covar`` (numeric, no nulls).
    x, y, covar : str
        The correlated columns and the covariate.
    by : str
        The collection column: percentiles are taken within each of its values.
    n_boot, seed : int
        Stratified bootstrap resamples (0: no interval) and their seed.

    Returns
    -------
    PartialCorr
        ``statistic`` is :data:`STATISTIC`, ``method`` ``"percentile"``.

    Examples
    --------
    Within each collection pass rate falls with D; between them the deep collection passes more:

    >>> frame = pl.DataFrame({"dataset": ["a"] * 4 + ["b"] * 4, "d": [1, 2, 3, 4, 11, 12, 13, 14],
    ...     "p": [0.4, 0.3, 0.2, 0.1, 0.9, 0.8, 0.7, 0.6], "w": [1, 3, 2, 4, 1, 3, 2, 4]})
    >>> round(within_collection_partial(frame, "d", "p", "w", n_boot=0).r, 3)
    -1.0
    """
    groups = [g.select(x, y, covar).cast(pl.Float64).to_numpy() for g in frame.partition_by(by, maintain_order=True)]
    n = sum(len(g) for g in groups)
    point = float(_partial(np.concatenate([_percentiles(g) for g in groups], axis=0))[()])
    low = high = math.nan
    degenerate = 0
    if n_boot:
        rng = np.random.default_rng(seed)
        sampled = [_percentiles(g[rng.integers(0, len(g), size=(n_boot, len(g)))]) for g in groups]
        boot = _partial(np.concatenate(sampled, axis=1))
        finite = boot[np.isfinite(boot)]
        degenerate = int(boot.size - finite.size)
        if finite.size:
            low, high = (float(v) for v in np.quantile(finite, [0.025, 0.975]))
    return PartialCorr(
        r=point,
        ci_low=low,
        ci_high=high,
        p=_t_test_p(point, n, len(groups)),
        n=n,
        k=1,
        method="percentile",
        n_boot=n_boot,
        n_degenerate=degenerate,
        n_dropped=0,
        x=x,
        y=y,
        covar=(covar,),
        statistic=STATISTIC,
    )


def _percentiles(values: np.ndarray) -> np.ndarray:
    # (..., n, 3): each column's average rank among the n tasks, as (rank - 0.5) / n (mean 0.5)
    n = values.shape[-2]
    return (scipy_stats.rankdata(values, axis=-2) - 0.5) / n


def _partial(percentiles: np.ndarray) -> np.ndarray:
    # (..., n, 3) -> (...): partial correlation of columns 0 and 1 given column 2; NaN when a column is constant
    centred = percentiles - percentiles.mean(axis=-2, keepdims=True)
    cov = np.einsum("...ni,...nj->...ij", centred, centred)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.diagonal(cov, axis1=-2, axis2=-1))
        r = cov / (sd[..., :, None] * sd[..., None, :])
        rxy, rxz, ryz = r[..., 0, 1], r[..., 0, 2], r[..., 1, 2]
        out = (rxy - rxz * ryz) / np.sqrt((1 - rxz**2) * (1 - ryz**2))
    return np.clip(out, -1.0, 1.0)


def _t_test_p(r: float, n: int, collections: int) -> float:
    dof = n - 3 - (collections - 1)
    if dof <= 0 or not math.isfinite(r):
        return math.nan
    if abs(r) >= 1:
        return 0.0
    t = r * math.sqrt(dof / (1 - r * r))
    return float(2 * scipy_stats.t.sf(abs(t), dof))
