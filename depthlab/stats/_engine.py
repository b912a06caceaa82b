"""Statistics of weighted samples and the bootstrap around them.

A resample is a (B, n) matrix of how often each row was drawn; every statistic here maps such a
matrix to B values at once (NaN where the resample is degenerate). See depthlab.stats for the idea.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import special

# Work on about this many matrix cells per batch (512 KiB of float64): the arrays of a batch then
# stay in the CPU cache, which measured 2-3x faster than 8 MiB batches at n = 734.
_BATCH_CELLS = 1 << 16
# When x (or y) and the covariates have a rank-correlation matrix with a smaller determinant, x is
# (numerically) collinear with the covariates and the partial correlation is undefined.
_SINGULAR_DET = 1e-12


def _spearman_statistic(values: np.ndarray, *, semipartial: bool = False) -> Callable[[np.ndarray], np.ndarray]:
    """Return weights (B, n) -> partial Spearman of columns 0 and 1 given the rest, NaN if degenerate.

    With ``semipartial`` the rest is removed from column 1 only (see :func:`_partial_from_ranks`).
    """
    n, m = values.shape
    # Per column: the sort order and, in sorted order, where each tie group starts.
    layouts = []
    for c in range(m):
        order = np.argsort(values[:, c], kind="stable")
        ordered = values[order, c]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        group_of_sorted = np.cumsum(np.r_[True, ordered[1:] != ordered[:-1]]) - 1
        group = np.empty(n, dtype=np.intp)
        group[order] = group_of_sorted
        layouts.append((order, starts, group))

    # Buffers reused from batch to batch (keyed by batch rows): allocating them afresh every batch
    # made the first call ~40% slower, all in page faults.
    workspace: dict[int, tuple[np.ndarray, ...]] = {}

    def statistic(weights: np.ndarray) -> np.ndarray:
        rows = len(weights)
        if rows not in workspace:
            workspace[rows] = (np.empty((m, rows, n)), np.empty((m, rows, n)), *np.empty((3, rows, n)))
        ranks, weighted, gathered, grouped, cumulative = workspace[rows]
        for c, (order, starts, group) in enumerate(layouts):
            groups = len(starts)
            counts = np.take(weights, order, axis=1, out=gathered)
            if groups < n:  # ties: count the drawn rows of each tie group
                counts = np.add.reduceat(counts, starts, axis=1, out=grouped[:, :groups])
            # average rank of each group minus 1/2: drawn rows up to and including it, less half its own
            group_rank = np.cumsum(counts, axis=1, out=cumulative[:, :groups])
            counts *= 0.5
            group_rank -= counts
            np.take(group_rank, group, axis=1, out=ranks[c])
        np.multiply(ranks, weights, out=weighted)
        total = weights.sum(axis=1)
        return _partial_from_ranks(ranks, weighted, total / 2.0, total, semipartial=semipartial)

    return statistic


def _partial_from_ranks(
    ranks: np.ndarray,
    weighted: np.ndarray,
    mean_rank: np.ndarray | float,
    total: np.ndarray | float,
    *,
    semipartial: bool = False,
) -> np.ndarray:
    """(m, B, n) ranks of B (weighted) samples -> (B,) partial correlation of columns 0 and 1 given the rest.

    With ``semipartial`` the rest is removed from column 1 only: the result is the correlation of
    column 0 with the residual of column 1 on the rest (R ppcor ``spcor.test(x, y, z)``).

    ``weighted`` is the ranks times the row weights (the ranks themselves when every weight is 1),
    ``mean_rank`` the (weighted) mean of every column's ranks and ``total`` the sample size. The
    scatter is sum(w r_a r_b) - total * mean^2: ranks are multiples of 1/2, so for any realistic n
    every term is exact in float64 and nothing is lost to cancellation.
    """
    m = len(ranks)
    scatter = np.empty((ranks.shape[1], m, m))
    for a in range(m):
        for b in range(a, m):
            scatter[:, a, b] = scatter[:, b, a] = np.einsum("bi,bi->b", weighted[a], ranks[b])
    scatter -= (np.asarray(total) * np.asarray(mean_rank) ** 2).reshape(-1, 1, 1)
    variance = np.diagonal(scatter, axis1=1, axis2=2)
    constant = (variance <= 0).any(axis=1)
    scale = np.sqrt(np.where(variance > 0, variance, 1.0))
    corr = scatter / scale[:, :, None] / scale[:, None, :]
    # r = -P01 / sqrt(P00 P11) with P the inverse of corr; P is the adjugate over the determinant,
    # so r = M10 / sqrt(M00 M11) with M the minors. This needs no inverse, so x and y with equal
    # ranks give r = 1 rather than a singular matrix; r is undefined only when x or y is collinear
    # with the covariates (M11 or M00 vanishes). With no covariates it is corr[0, 1].
    rest = list(range(2, m))
    minor_xx = _det(corr[:, [1, *rest]][:, :, [1, *rest]])
    minor_yy = _det(corr[:, [0, *rest]][:, :, [0, *rest]])
    minor_yx = _det(corr[:, [0, *rest]][:, :, [1, *rest]])
    undefined = constant | (minor_xx < _SINGULAR_DET)
    if semipartial:
        # cov(x, y residual) = M10 / det(C) and var(y residual) = M00 / det(C), with C the covariates'
        # correlation matrix (Schur complements), so r = M10 / sqrt(M00 det C): x may be collinear
        # with the covariates (r = 0), but y may not, nor the covariates with each other.
        minor_yy = _det(corr[:, rest][:, :, rest])
    undefined |= minor_yy < _SINGULAR_DET
    with np.errstate(invalid="ignore", divide="ignore"):
        r = minor_yx / np.sqrt(minor_xx * minor_yy)
    r[undefined] = np.nan
    return np.clip(r, -1.0, 1.0)


def _det(matrices: np.ndarray) -> np.ndarray:
    """Determinants of a stack of square matrices (1 for 0 x 0)."""
    if matrices.shape[-1] == 1:
        return matrices[:, 0, 0]
    return np.linalg.det(matrices)


def _kendall_statistic(values: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Return weights (B, n) -> Kendall's tau-b of the two columns, NaN where a column is constant."""
    x, y = values[:, 0], values[:, 1]
    concordance = (np.sign(x[:, None] - x[None, :]) * np.sign(y[:, None] - y[None, :])).astype(np.float32)
    # one-hot (n, groups) membership of each column's tie groups: weights @ membership counts them
    memberships = []
    for column in (x, y):
        group = np.unique(column, return_inverse=True)[1].ravel()
        memberships.append(np.eye(group.max() + 1)[group])

    def statistic(weights: np.ndarray) -> np.ndarray:
        total = weights.sum(axis=1)
        pairs = total * (total - 1.0) / 2.0
        # float32 is exact here (entries -1/0/1 times counts, sums below 2**24) and twice as fast
        score = 0.5 * np.einsum("bi,bi->b", (weights.astype(np.float32) @ concordance).astype(np.float64), weights)
        untied = []
        for membership in memberships:
            counts = weights @ membership
            untied.append(pairs - (counts * (counts - 1.0) / 2.0).sum(axis=1))
        denominator = np.sqrt(untied[0] * untied[1])
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(denominator > 0, score / denominator, np.nan)

    return statistic


def _mean_statistic(values: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Return weights (B, n) -> weighted mean of ``values``, NaN for all-zero weights (jackknife of one row)."""

    def statistic(weights: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return weights @ values / weights.sum(axis=1)

    return statistic


# --------------------------------------------------------------------------------------------
# bootstrap machinery


def _row_bootstrap(
    statistic: Callable[[np.ndarray], np.ndarray],
    n: int,
    n_boot: int,
    method: str,
    rng: np.random.Generator,
    *,
    size: int | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Bootstrap and (for BCa) jackknife replicates of a statistic of row weights, ``size`` resamples a batch."""
    if n_boot == 0:
        return np.empty(0), None
    # Drawn batch by batch: numpy's stream is the same as one (n_boot, n) draw, scipy.stats.bootstrap's.
    size = size or _batch_size(n)
    boot = np.concatenate(
        [statistic(_counts(rng.integers(0, n, (min(size, n_boot - start), n)), n)) for start in range(0, n_boot, size)]
    )
    return boot, (_jackknife(statistic, n, size=size) if method == "bca" else None)


def _jackknife(statistic: Callable[[np.ndarray], np.ndarray], n: int, *, size: int | None = None) -> np.ndarray:
    """Leave-one-out replicates: the statistic under the weights 1 - I, ``size`` rows a batch."""
    size = size or _batch_size(n)
    replicates = []
    for start in range(0, n, size):
        left_out = np.arange(start, min(start + size, n))
        weights = np.ones((len(left_out), n))
        weights[np.arange(len(left_out)), left_out] = 0.0
        replicates.append(statistic(weights))
    return np.concatenate(replicates)


def _counts(draws: np.ndarray, n: int) -> np.ndarray:
    """(b, n) row indices -> (b, n) float counts of each row."""
    offsets = (np.arange(len(draws)) * n)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=len(draws) * n).reshape(len(draws), n).astype(np.float64)


def _batch_size(width: int, *, cells: int = _BATCH_CELLS) -> int:
    """Rows per batch of a (rows, width) matrix of about ``cells`` cells."""
    return max(1, cells // max(width, 1))


def _interval(
    estimate: float, boot: np.ndarray, jack: np.ndarray | None, ci: float, method: str
) -> tuple[float, float, int]:
    """(low, high, n_degenerate) from bootstrap replicates; BCa as scipy.stats.bootstrap (Efron & Tibshirani 14.3)."""
    valid = boot[~np.isnan(boot)]
    n_degenerate = len(boot) - len(valid)
    if len(valid) == 0:
        return math.nan, math.nan, n_degenerate
    alpha = (1.0 - ci) / 2.0
    if method == "percentile":
        low, high = np.percentile(valid, [100 * alpha, 100 * (1 - alpha)])
        return float(low), float(high), n_degenerate
    # Bias correction: the share of replicates below the estimate (ties count half), kept off 0
    # and 1 so that an estimate outside the bootstrap distribution gives its edge, not NaN.
    share = ((valid < estimate).sum() + (valid <= estimate).sum()) / (2.0 * len(valid))
    share = min(max(share, 0.5 / len(valid)), 1 - 0.5 / len(valid))
    z0 = float(special.ndtri(share))
    jack = jack[~np.isnan(jack)] if jack is not None else np.empty(0)
    spread = jack.mean() - jack if len(jack) else np.zeros(1)
    denominator = 6.0 * float((spread**2).sum()) ** 1.5
    acceleration = float((spread**3).sum()) / denominator if denominator > 0 else 0.0
    bounds = []
    for z in (special.ndtri(alpha), special.ndtri(1 - alpha)):
        bounds.append(float(special.ndtr(z0 + (z0 + z) / (1 - acceleration * (z0 + z)))))
    low, high = np.percentile(valid, [100 * bounds[0], 100 * bounds[1]])
    return float(low), float(high), n_degenerate
