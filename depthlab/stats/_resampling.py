"""Where ties leave the BCa interval under-covering: a permutation p-value and a hierarchical bootstrap.

When nine tasks in ten sit at D = 1 (the paper's synthetic collections), D's ranks are one big tie
and a handful of values: the bootstrap distribution of a rank correlation is lumpy and the BCa
interval of pass ~ D | W covers a true zero less often than it says (tests/test_stats.py measures
it). Of the two tools here, only the first holds its level there:

* :func:`permutation_pvalue`: Freedman & Lane's (1983) permutation test of a (partial) Spearman
  correlation (Anderson & Legendre 1999; Winkler et al. 2014): every column ranked; y's ranks
  regressed on the covariates' ranks (the reduced model); its residuals permuted and added back to
  its fit, the permuted vector residualised on the covariates again; and, since issue 44, a
  studentised statistic compared (the residuals' covariance over its heteroscedasticity-consistent
  standard error, DiCiccio & Romano 2017), not the plain partial correlation. Measured on exact
  nulls down to n = 6 with one to three covariates it rejects at 0.05 in 2.5-7.0% of samples (400
  a cell, 4.9% pooled); where pass rate and depth both follow work (Spearman 0.9) with D and pass
  independent given W, in 5.3-6.7% from n = 6 to 50 where the plain statistic rejected in
  8.0-9.3% (tests/bench/bench_permutation_size.py). It is the tool that holds its level there.
* :func:`hierarchical_bootstrap`: resample the levels the data were drawn at (collections or task
  groups, then tasks, then runs) and recompute the statistic on the drawn tasks' means; a
  percentile interval, degenerate resamples (a constant column) left out and counted. It describes
  the spread of a hierarchy; it does not fix the ties: with one run per task it *is* the percentile
  bootstrap of the task means, and in the tie regime its 95% interval covers a true zero in 65-72%
  of samples at one run per task and 86-88% at two (tests/test_stats.py measures
  both).

Both take the unit that is exchangeable under the null: rows of one ``cluster`` (a task group of
near-duplicates) are permuted as one (the test runs on the groups' means), and the bootstrap draws
whole groups when ``levels`` names them first.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats as _scipy_stats

from depthlab._checks import check_frame, check_nonnegative_int, check_number, check_positive_int, check_string
from depthlab._defaults import N_BOOT, N_PERM, SEED
from depthlab.stats._engine import _partial_from_ranks

# A permutation that only swaps tied values (or equal residuals) gives the observed statistic
# again, up to the rounding of a different order of sums: it must count as "at least as extreme".
# The studentised statistic is at most sqrt(n) and its rounding ~1e-15 sqrt(n), so 1e-9 separates the two.
_TIE_TOLERANCE = 1e-9
# Rows of permuted residuals per batch (n values each): bounds the memory at large n_perm * n.
_PERM_BATCH_CELLS = 1 << 20


@dataclass(frozen=True)
class Resampled:
    """A statistic with the interval or p-value of a resampling scheme named in ``method``.

    ``n`` counts the exchangeable units: tasks, or task groups with ``cluster=``/grouped levels
    (``n_groups``); ``exact`` says a permutation p-value enumerated every permutation.
    """

    r: float
    ci_low: float
    ci_high: float
    p: float
    method: str  # "permutation" or "hierarchical bootstrap"
    n: int  # tasks (or groups: the units permuted)
    n_resamples: int
    n_degenerate: int
    exact: bool = False
    n_groups: int | None = None  # outer groups drawn first (hierarchical bootstrap with two levels)


def _partial_of_rows(values: np.ndarray) -> float:
    """Partial Spearman of columns 0 and 1 given the rest (average ranks), NaN when undefined.

    The engine's minors (:func:`depthlab.stats._engine._partial_from_ranks`), not an inverse: the
    one implementation :func:`depthlab.stats.partial_spearman` uses.
    """
    n = len(values)
    ranks = _scipy_stats.rankdata(values, axis=0).T[:, None, :]  # (m, 1, n)
    return float(_partial_from_ranks(ranks, ranks, (n + 1.0) / 2.0, float(n))[0])


def _orthonormal_design(covariate_ranks: np.ndarray) -> np.ndarray:
    """An orthonormal basis (n, k + 1) of the intercept and the covariates' ranks (the reduced model)."""
    design = np.column_stack([np.ones(len(covariate_ranks)), covariate_ranks])
    basis, triangle = np.linalg.qr(design)
    # a covariate collinear with the others adds no direction: keep the columns that carry one
    keep = np.abs(np.diag(triangle)) > 1e-10 * max(1.0, float(np.abs(triangle).max()))
    return basis[:, keep]


def _residualise(vectors: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """Residuals of each row of ``vectors`` (B, n), or of one vector (n,), on the columns of ``basis``."""
    return vectors - (vectors @ basis) @ basis.T


def _studentised(rx: np.ndarray, permuted: np.ndarray) -> np.ndarray:
    """|t| of each row of ``permuted`` (B, n) against ``rx`` (n,): ``|Σ a b| / sqrt(Σ a² b²)``.

    The covariance of the two residual vectors over its heteroscedasticity-consistent standard
    error under the null (DiCiccio & Romano 2017's studentised correlation, on Freedman-Lane's
    residuals); 0 where every product a_i b_i is 0 (the numerator is 0 then too).
    """
    numerator = np.abs(permuted @ rx)
    spread = np.sqrt((permuted**2) @ (rx**2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(spread > 0, numerator / np.where(spread > 0, spread, 1.0), 0.0)


def _permutations(n: int, n_perm: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """Every permutation of n when there are at most ``n_perm`` of them (exact), else ``n_perm`` random ones."""
    if math.factorial(n) <= n_perm:
        return np.array(list(itertools.permutations(range(n))), dtype=np.intp), True
    return np.argsort(rng.random((n_perm, n)), axis=1), False


def permutation_pvalue(
    df: pl.DataFrame,
    x: str,
    y: str,
    covar: str | Sequence[str] | None = None,
    *,
    n_perm: int = N_PERM,
    seed: int | None = SEED,
    cluster: str | None = None,
) -> Resampled:
    """Freedman-Lane permutation p-value (studentised) of the (partial) Spearman of ``x`` and ``y`` given ``covar``.

    Parameters
    ----------
    df : polars.DataFrame
        One row per task; or, with ``cluster``, rows grouped in clusters.
    x, y : str
        The columns correlated; ``y``'s reduced-model residuals are permuted.
    covar : str, sequence of str or None
        Covariates; None gives the plain Spearman correlation and its permutation test.
    n_perm : int, default 10_000
        Random permutations; when the units have at most ``n_perm`` permutations (n! of them:
        up to seven units at the default) every one is enumerated instead and the p-value is exact.
    seed : int or None
        Randomness of the permutations (None: fresh draws each call).
    cluster : str, optional
        Units that are exchangeable only as a whole (near-duplicates of one seed, ``task_group``):
        each cluster's value of every column is its mean over its rows, and the clusters are
        permuted, so ``n`` is the number of clusters (:func:`depthlab.stats.partial_spearman`'s
        ``cluster`` takes the same means).

    Returns
    -------
    Resampled
        ``r`` the partial Spearman (:func:`depthlab.stats.partial_spearman`'s), ``p`` the
        permutation p-value, ``n`` the units, ``n_resamples`` the permutations, ``exact``.
        NaN ``r`` and ``p`` when the correlation is undefined (a constant column, or x or y
        collinear with the covariates).

    Notes
    -----
    Every column is ranked (average ties); the test is Freedman & Lane's on those ranks. With
    ``Z = [1, ranks of covar]``, ``e = (I - H_Z) ry`` the residuals of y's reduced model and
    ``a = (I - H_Z) rx``, each permutation ``π`` gives ``y* = H_Z ry + e_π``, whose residual on the
    covariates is ``b = (I - H_Z) y* = (I - H_Z) e_π`` (the permuted vector residualised again: without
    it, Kennedy's 1995 variant, the test rejects too often at small n), and the statistic

    ``t*_π = |Σ a_i b_i| / sqrt(Σ a_i² b_i²)``,

    the covariance of the two residual vectors over its heteroscedasticity-consistent standard
    error under the null (DiCiccio & Romano's 2017 studentised correlation; 0 when every product is
    0). The p-value is ``(1 + #{t* >= t}) / (1 + B)`` over B random permutations (the observed one
    counted, Phipson & Smyth 2010), or ``#{t* >= t} / n!`` over all of them. ``r`` is still the
    plain partial Spearman; only the statistic the permutations are compared on is studentised.

    Why studentised (issue 44): the plain partial correlation's permutation distribution assumes
    the residuals' spread is the same at every value of the covariates. On ranks it is not when x
    and y both follow a covariate closely (ranks are bounded, so both are squeezed at the ends of
    W and spread in the middle); their product then varies more than any permutation shows, and
    with pass rate and depth both at Spearman 0.9 with work, D and pass independent given W, the
    plain statistic rejected at 0.05 in 8.0-9.3% of nulls from n = 6 to 50 (on raw values, a linear
    normal null, it held 5%). Studentising makes the statistic asymptotically pivotal under that
    heteroscedasticity (DiCiccio & Romano 2017; Anderson & Robinson 2001 on Freedman-Lane's
    asymptotics; Winkler et al. 2014 on pivotal statistics): 5.3-6.7% on that null, 3.8-5.1% on a
    null whose population partial Spearman is exactly 0 (a copula mixture), 4.7-6.0% with D on the
    ladder (2,000 data sets a cell, Wilson intervals in tests/bench/bench_permutation_size.py). What
    remains over 5% on the first null is the sample partial Spearman's own bias there (its mean is
    -0.09 at n = 12 and -0.04 at n = 50 against a population value of -0.008: rank statistics are
    nonlinear), which no permutation of residuals sees.

    Its price at very small n: the most extreme arrangement is the one whose products a_i b_i are
    most equal, not perfect agreement. Two variables in the same order at n = 6 get p = 56/720 =
    0.078 (the plain statistic gave 2/720); from n = 7 perfect agreement is below 0.05, and p <= 0.05
    stays reachable at n = 6 (smallest p 2/720).

    The residuals are exchangeable only approximately (Anderson & Legendre 1999), so the size is
    measured, not assumed: on exact nulls (y independent of x and the covariates, x depending on
    them) the rejection rate at 0.05 is 2.5-7.0% at n = 6, 8 and 12 with one to three covariates
    (400 samples each, Monte Carlo sd 1.1%; 4.9% pooled; tests/test_stats.py checks it within 3 sd),
    where Kennedy's variant (this function before issue 38) rejected in 36% at n = 6 with three
    covariates. The audit's rows report a p-value from ``schema.MIN_TASKS`` = 6 units up: 720
    distinct permutations, so p can fall well below 0.05, and the smallest n at which the size is
    measured.

    References
    ----------
    Freedman, D. & Lane, D. (1983). A nonstochastic interpretation of reported significance levels.
    J. Business & Economic Statistics 1(4), 292-298.
    Anderson, M. J. & Legendre, P. (1999). An empirical comparison of permutation methods for tests
    of partial regression coefficients in a linear model. J. Stat. Comput. Simul. 62, 271-303.
    Anderson, M. J. & Robinson, J. (2001). Permutation tests for linear models. Australian & New
    Zealand Journal of Statistics 43(1), 75-88.
    DiCiccio, C. J. & Romano, J. P. (2017). Robust permutation tests for correlation and regression
    coefficients. J. American Statistical Association 112(519), 1211-1220.
    Winkler, A. M. et al. (2014). Permutation inference for the general linear model.
    NeuroImage 92, 381-397.
    Phipson, B. & Smyth, G. K. (2010). Permutation p-values should never be zero.
    Stat. Appl. Genet. Mol. Biol. 9(1), 39.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"x": [1, 2, 3, 4, 5, 6, 7, 8], "y": [2, 1, 4, 3, 6, 5, 8, 7], "z": [1, 1, 2, 2, 3, 3, 4, 5]})
    >>> res = permutation_pvalue(df, "x", "y", n_perm=2000, seed=1)
    >>> res.method, res.p < 0.05, res.exact
    ('permutation', True, False)
    >>> permutation_pvalue(df.head(6), "x", "y", "z").exact  # 6! = 720 permutations, all of them
    True
    """
    function = "permutation_pvalue"
    covars = [covar] if isinstance(covar, str) else list(covar or [])
    columns = [x, y, *covars]
    if cluster is not None:
        cluster = check_string(cluster, "cluster", function)
    frame = check_frame(df, "df", function, (*columns, *([cluster] if cluster else [])))
    frame = frame.select(*([cluster] if cluster else []), *columns).drop_nulls()
    n_perm = check_positive_int(n_perm, "n_perm", function)
    if cluster is not None:
        frame = frame.group_by(cluster, maintain_order=True).agg(pl.col(columns).cast(pl.Float64).mean())
    values = frame.select(columns).to_numpy().astype(np.float64)
    n = len(values)
    r = _partial_of_rows(values) if n else math.nan
    if not math.isfinite(r):
        return Resampled(r, math.nan, math.nan, math.nan, "permutation", n, 0, 0)
    ranks = _scipy_stats.rankdata(values, axis=0)
    basis = _orthonormal_design(ranks[:, 2:])
    rx = _residualise(ranks[:, 0], basis)
    residuals = _residualise(ranks[:, 1], basis)  # e: the reduced model's residuals of y
    observed = float(_studentised(rx, residuals[None, :])[0])
    rng = np.random.default_rng(seed)
    orders, exact = _permutations(n, n_perm, rng)
    extreme = valid = 0
    batch = max(1, _PERM_BATCH_CELLS // n)
    for start in range(0, len(orders), batch):
        # (I - H_Z) y* = (I - H_Z) e_π: the reduced fit H_Z ry lies in the covariates' span
        stars = _studentised(rx, _residualise(residuals[orders[start : start + batch]], basis))
        finite = stars[np.isfinite(stars)]
        valid += finite.size
        extreme += int((finite >= observed - _TIE_TOLERANCE).sum())
    # exact: the identity is among the enumerated permutations; random: it is added (Phipson & Smyth)
    p = (extreme / valid if valid else math.nan) if exact else (1 + extreme) / (1 + valid)
    return Resampled(r, math.nan, math.nan, p, "permutation", n, len(orders), len(orders) - valid, exact=exact)


def hierarchical_bootstrap(
    runs: pl.DataFrame,
    x: str,
    y: str,
    covar: str | Sequence[str] | None = None,
    *,
    levels: Sequence[str] = ("dataset", "task"),
    n_boot: int = N_BOOT,
    ci: float = 0.95,
    seed: int | None = SEED,
) -> Resampled:
    """Percentile interval of the (partial) Spearman of task means, resampling every level in turn, then runs.

    ``runs`` has one row per run (e.g. a ``passed`` column and the task's ``depth`` and ``work``);
    ``levels`` names the nested groups, outermost first: (collection, task), (task group, task),
    or (task,) alone. The statistic is computed on the per-task means (the last level); each
    resample draws the outer groups with replacement, then within each drawn group its tasks, then
    each drawn task's runs.

    Notes
    -----
    This is a percentile bootstrap, and it inherits the percentile bootstrap's trouble with ties:
    with one run per task and ``levels=("task",)`` it is the percentile bootstrap of the task
    means. Where nine tasks in ten sit at D = 1 its 95% interval of pass ~ D | W covers a true zero
    in 65-72% of samples at one run per task, 86-88% at two (n = 30, two seeds of
    250-400 samples; the issue measured 66% and 82%; tests/test_stats.py). There, the tool that
    holds its level is :func:`permutation_pvalue` (2.5-3.6% and 4.3-5.6% rejections at 0.05 on the
    same samples).

    Examples
    --------
    >>> import polars as pl
    >>> runs = pl.DataFrame({"dataset": ["a"] * 12 + ["b"] * 12, "task": [f"t{i // 3}" for i in range(24)],
    ...     "passed": [1, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0] * 2, "depth": [1, 1, 1, 2, 2, 2, 3, 3, 3, 5, 5, 5] * 2})
    >>> res = hierarchical_bootstrap(runs, "passed", "depth", n_boot=200, seed=0)
    >>> res.n, res.n_groups, res.r < 0, res.method
    (8, 2, True, 'hierarchical bootstrap')
    """
    function = "hierarchical_bootstrap"
    covars = [covar] if isinstance(covar, str) else list(covar or [])
    levels = list(levels)
    if len(levels) not in (1, 2):
        raise ValueError(
            f"The 'levels' parameter of {function} must name one or two columns (outer group, task), got {levels}"
        )
    columns = [x, y, *covars]
    frame = check_frame(runs, "runs", function, (*levels, *columns)).select(*levels, *columns).drop_nulls()
    n_boot = check_nonnegative_int(n_boot, "n_boot", function)
    ci = check_number(ci, "ci", function, low=0, high=1, low_open=True, high_open=True, kind="a float")
    frame = frame.sort(levels)
    values = frame.select(columns).to_numpy().astype(np.float64)
    # the nesting as index arrays: each task's rows, and each outer group's tasks (contiguous once sorted)
    keys = frame.select(levels).with_row_index("_row")
    task_bounds = keys.group_by(levels, maintain_order=True).agg(pl.col("_row").min().alias("s"), pl.len().alias("n"))
    starts = task_bounds["s"].to_numpy().astype(np.intp)
    sizes = task_bounds["n"].to_numpy().astype(np.intp)
    means = np.add.reduceat(values, starts, axis=0) / sizes[:, None] if len(starts) else np.empty((0, len(columns)))
    r = _partial_of_rows(means) if len(means) else math.nan
    if len(levels) == 2:
        grouped = task_bounds.group_by(levels[0], maintain_order=True).len()
        group_sizes = grouped.get_column("len").to_numpy().astype(np.intp)
    else:
        group_sizes = np.ones(len(starts), dtype=np.intp)  # each task its own group
    rng = np.random.default_rng(seed)
    boot = _hierarchical_replicates(values, starts, sizes, means, group_sizes, n_boot, rng) if len(starts) else None
    boot = boot if boot is not None else np.full(n_boot, np.nan)
    valid = boot[~np.isnan(boot)]
    alpha = (1 - ci) / 2
    low, high = (float(v) for v in np.quantile(valid, [alpha, 1 - alpha])) if valid.size else (math.nan, math.nan)
    n_groups = len(group_sizes) if len(levels) == 2 else None
    return Resampled(
        r, low, high, math.nan, "hierarchical bootstrap", len(starts), n_boot, n_boot - len(valid), n_groups=n_groups
    )


# Cells per batch of (resamples, tasks, runs) draws, as the two-stage bootstrap's of partial_spearman.
_HIER_BATCH_CELLS = 1 << 20


def _hierarchical_replicates(
    values: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    means: np.ndarray,
    group_sizes: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Partial Spearman of B hierarchical resamples: groups, then tasks within each, then runs within each.

    Resamples of equal size (the same number of drawn tasks) are ranked and correlated together;
    only the columns that vary within a task are redrawn from its runs (a task's depth is its depth
    whichever runs are drawn).
    """
    n_groups = len(group_sizes)
    group_starts = np.r_[0, np.cumsum(group_sizes)[:-1]]
    # stage 1 and 2: the drawn groups, then as many of each drawn group's tasks as it has
    drawn_groups = rng.integers(0, n_groups, (n_boot, n_groups))
    slots = group_sizes[drawn_groups]  # (B, G) tasks each drawn group contributes
    flat_groups = np.repeat(drawn_groups.ravel(), slots.ravel())
    picks = (rng.random(flat_groups.size) * group_sizes[flat_groups]).astype(np.intp)
    flat_tasks = group_starts[flat_groups] + picks
    lengths = slots.sum(axis=1)
    offsets = np.r_[0, np.cumsum(lengths)]
    low, high = np.minimum.reduceat(values, starts, axis=0), np.maximum.reduceat(values, starts, axis=0)
    varying = [c for c in range(values.shape[1]) if (low[:, c] != high[:, c]).any()]
    largest = int(sizes.max())
    boot = np.full(n_boot, np.nan)
    for length in np.unique(lengths):
        which = np.flatnonzero(lengths == length)
        tasks = np.stack([flat_tasks[offsets[b] : offsets[b + 1]] for b in which])  # (b, L)
        batch = max(1, _HIER_BATCH_CELLS // max(1, int(length) * largest))
        for first in range(0, len(which), batch):
            drawn = tasks[first : first + batch]
            sample = means[drawn]  # (b, L, m), a copy: the varying columns are redrawn below
            if varying:
                drawn_sizes = sizes[drawn][:, :, None]
                rows = starts[drawn][:, :, None] + (rng.random((*drawn.shape, largest)) * drawn_sizes).astype(np.intp)
                inside = np.arange(largest) < drawn_sizes
                for c in varying:
                    sample[:, :, c] = (values[rows, c] * inside).sum(axis=2) / drawn_sizes[:, :, 0]
            ranks = _scipy_stats.rankdata(sample, axis=1).transpose(2, 0, 1)  # (m, b, L)
            boot[which[first : first + batch]] = _partial_from_ranks(ranks, ranks, (length + 1.0) / 2.0, float(length))
    return boot
