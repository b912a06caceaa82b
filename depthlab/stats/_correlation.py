"""Rank correlations with bootstrap intervals: partial and semi-partial Spearman, Spearman, Kendall tau-b, labels."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl
from scipy import stats as _scipy_stats

from depthlab._defaults import N_BOOT, SEED
from depthlab.stats._engine import (
    _batch_size,
    _interval,
    _jackknife,
    _kendall_statistic,
    _partial_from_ranks,
    _row_bootstrap,
    _spearman_statistic,
)
from depthlab.stats._inputs import (
    Method,
    Order,
    Seed,
    _as_column_list,
    _check_common,
    _check_rows,
    _numeric_frame,
    _roles,
)
from depthlab.stats._results import PartialCorr, to_frame


def partial_spearman(
    df: Any,
    x: str,
    y: str,
    covar: str | Sequence[str] | None,
    *,
    n_boot: int = N_BOOT,
    ci: float = 0.95,
    method: Method = "bca",
    seed: Seed = SEED,
    cluster: str | None = None,
    order: Order = None,
) -> PartialCorr:
    """Spearman partial correlation of ``x`` and ``y`` given ``covar``, with a bootstrap CI.

    Every column is ranked (average ties) and the partial correlation is read off the inverse of
    the rank correlation matrix, ``-Ω_xy / sqrt(Ω_xx Ω_yy)``; with one covariate this is
    ``(ρxy − ρxz ρyz) / sqrt((1 − ρxz²)(1 − ρyz²))``. It equals R ``ppcor::pcor.test(method="spearman")``
    and ``pingouin.partial_corr(method="spearman")``. The p-value is the t-test of those packages,
    ``t = r sqrt((n − 2 − k) / (1 − r²))`` with ``n − 2 − k`` degrees of freedom.

    The interval resamples rows with replacement and re-ranks every resample (BCa with a jackknife
    acceleration by default, or percentile); degenerate resamples are left out and counted.

    Parameters
    ----------
    df : polars.DataFrame or pandas.DataFrame
        One row per task; or, with ``cluster``, one row per trial.
    x, y : str
        Columns to correlate: numeric, boolean, or ordinal (a polars Enum, a pandas ordered
        Categorical, or any column given an ``order``).
    covar : str, sequence of str or None
        Covariates to control for; None or ``[]`` gives the plain Spearman correlation.
    n_boot : int, default 10_000
        Number of bootstrap resamples; 0 skips the interval (``ci_low``/``ci_high`` are NaN).
    ci : float, default 0.95
        Confidence level, strictly between 0 and 1.
    method : {"bca", "percentile"}, default "bca"
    seed : int, numpy Generator or None
        Randomness of the resamples. The draws are those of ``scipy.stats.bootstrap`` with
        ``paired=True`` and the same generator, so the two give the same interval.
    cluster : str, optional
        Two-stage (cluster) bootstrap. ``df`` is then a long frame of trials and ``cluster`` names
        the task column: each task's value of every used column is its mean over the task's
        trials (e.g. a boolean ``passed`` becomes the pass rate; a per-task constant such as
        ``depth`` stays itself), the point estimate is computed on those means with ``n`` = the
        number of tasks, and every resample draws tasks with replacement and then, for each
        drawn task, its trials with replacement. Redrawing the trials adds their sampling noise on
        top of the spread between tasks, which already contains it, so the interval tends to err
        wide (Davison & Hinkley 1997, sec. 3.8). The p-value treats the task means as data.
    order : sequence or mapping of column -> sequence, optional
        Order of an ordinal label, lowest first (e.g. ``["easy", "medium", "hard"]``). A sequence
        applies to the one used column that is not numeric; a mapping names the columns.

    Returns
    -------
    PartialCorr

    Raises
    ------
    ValueError
        A missing, non-numeric or constant column, fewer rows than ``k + 3``, collinear columns,
        an unknown ``method``, ``ci`` outside (0, 1) or a negative ``n_boot``.

    Examples
    --------
    >>> import pingouin as pg
    >>> data = pg.read_dataset("partial_corr")
    >>> res = partial_spearman(data, "x", "y", ["cv1", "cv2", "cv3"], n_boot=1000, seed=1)
    >>> round(res.r, 7), round(res.p, 9)  # R ppcor::pcor.test(method="spearman")
    (0.5209208, 0.005336187)
    >>> res.ci_low < res.r < res.ci_high
    True
    """
    return _rank_partial(
        "partial_spearman",
        df,
        x,
        y,
        covar,
        n_boot=n_boot,
        ci=ci,
        method=method,
        seed=seed,
        cluster=cluster,
        order=order,
    )


def semipartial_spearman(
    df: Any,
    x: str,
    y: str,
    covar: str | Sequence[str] | None,
    *,
    n_boot: int = N_BOOT,
    ci: float = 0.95,
    method: Method = "bca",
    seed: Seed = SEED,
    cluster: str | None = None,
    order: Order = None,
) -> PartialCorr:
    """Spearman semi-partial (part) correlation of ``x`` and ``y`` with ``covar`` removed from ``y`` only.

    Every column is ranked (average ties); the result is the correlation of the ranks of ``x``
    (untouched) with the residual of the ranks of ``y`` after a least-squares regression on the
    ranks of the covariates. It equals R ``ppcor::spcor.test(x, y, z, method="spearman")`` and
    ``pingouin.partial_corr(x=x, y=y, y_covar=covar, method="spearman")`` (pingouin's ``x_covar``
    would residualize ``x`` instead: swap ``x`` and ``y`` here for that). The p-value is the t-test
    of those packages, ``t = r sqrt((n − 2 − k) / (1 − r²))`` with ``n − 2 − k`` degrees of freedom.

    The interval, the parameters and the errors are those of :func:`partial_spearman`, except that
    ``x`` may be collinear with the covariates (the semi-partial correlation is then 0).

    Returns
    -------
    PartialCorr
        With ``statistic="semipartial_spearman"``.

    Examples
    --------
    >>> import pingouin as pg
    >>> data = pg.read_dataset("partial_corr")
    >>> res = semipartial_spearman(data, "x", "y", ["cv1", "cv2", "cv3"], n_boot=1000, seed=1)
    >>> round(res.r, 7), round(res.p, 8)  # R ppcor::spcor.test(method="spearman")
    (0.4597143, 0.01584262)
    >>> res.ci_low < res.r < res.ci_high
    True
    """
    return _rank_partial(
        "semipartial_spearman",
        df,
        x,
        y,
        covar,
        n_boot=n_boot,
        ci=ci,
        method=method,
        seed=seed,
        cluster=cluster,
        order=order,
    )


def spearman(
    df: Any,
    x: str,
    y: str,
    *,
    n_boot: int = N_BOOT,
    ci: float = 0.95,
    method: Method = "bca",
    seed: Seed = SEED,
    cluster: str | None = None,
    order: Order = None,
) -> PartialCorr:
    """Spearman's rho of ``x`` and ``y`` with a bootstrap CI: :func:`partial_spearman` without covariates.

    See :func:`partial_spearman` for the parameters; ``x`` or ``y`` may be an ordinal label.

    Examples
    --------
    >>> import polars as pl
    >>> iq = [106, 100, 86, 101, 99, 103, 97, 113, 112, 110]  # Wikipedia, "Spearman's rank correlation"
    >>> tv = [7, 27, 2, 50, 28, 29, 20, 12, 6, 17]
    >>> res = spearman(pl.DataFrame({"iq": iq, "tv": tv}), "iq", "tv", n_boot=0)
    >>> round(res.r * 165, 9)
    -29.0
    """
    # its own name in error messages (the user called spearman, not partial_spearman)
    return _rank_partial(
        "spearman", df, x, y, None, n_boot=n_boot, ci=ci, method=method, seed=seed, cluster=cluster, order=order
    )


def kendall_tau_b(
    df: Any,
    x: str,
    y: str,
    *,
    n_boot: int = N_BOOT,
    ci: float = 0.95,
    method: Method = "bca",
    seed: Seed = SEED,
    order: Order = None,
) -> PartialCorr:
    """Kendall's tau-b of ``x`` and ``y`` with a bootstrap CI over rows.

    tau-b = (concordant − discordant) / sqrt((n0 − ties_x)(n0 − ties_y)) over all pairs of the
    (re)sample; pairs formed by two copies of one drawn row are tied in both. The p-value is
    ``scipy.stats.kendalltau``'s. Parameters as in :func:`partial_spearman` (no covariates, no
    clusters); ``x`` or ``y`` may be an ordinal label.

    Returns
    -------
    PartialCorr
        With ``statistic="kendall_tau_b"`` and ``k = 0``.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"label": ["easy", "hard", "medium", "hard"], "pass_rate": [0.9, 0.1, 0.5, 0.3]})
    >>> kendall_tau_b(df, "label", "pass_rate", order=["easy", "medium", "hard"], n_boot=0).r
    -0.9128709291752769
    """
    _check_common("kendall_tau_b", columns=[x, y], names=("x", "y"), n_boot=n_boot, ci=ci, method=method)
    frame, n_dropped = _numeric_frame(df, [x, y], ("x", "y"), order, "kendall_tau_b", None)
    values = frame.select([x, y]).to_numpy().astype(np.float64)
    _check_rows(values, [x, y], ("x", "y"), 0, "kendall_tau_b")
    statistic = _kendall_statistic(values)
    r = float(statistic(np.ones((1, len(values))))[0])
    rng = np.random.default_rng(seed)
    # tall batches: the matrix product per batch is ~14x faster at 1,024 rows than at 89 (n = 734)
    boot, jack = _row_bootstrap(statistic, len(values), n_boot, method, rng, size=1024)
    p = float(_scipy_stats.kendalltau(values[:, 0], values[:, 1]).pvalue)
    return _result(
        r,
        boot,
        jack,
        ci=ci,
        method=method,
        p=p,
        n=len(values),
        k=0,
        n_boot=n_boot,
        n_dropped=n_dropped,
        x=x,
        y=y,
        statistic="kendall_tau_b",
    )


def label_correlations(
    df: Any,
    label: str,
    value: str,
    *,
    order: Sequence[Any] | None = None,
    n_boot: int = N_BOOT,
    ci: float = 0.95,
    method: Method = "bca",
    seed: Seed = SEED,
) -> pl.DataFrame:
    """Spearman and Kendall tau-b of an ordinal label with a value, with bootstrap CIs.

    Parameters
    ----------
    df : polars.DataFrame or pandas.DataFrame
    label : str
        The ordinal label column (strings with ``order``, a polars Enum, a pandas ordered
        Categorical, or numbers).
    value : str
        The numeric column (e.g. ``pass_rate``).
    order : sequence, optional
        The label's categories, lowest first; required for a plain string column.
    n_boot, ci, method, seed
        As in :func:`partial_spearman`; one generator serves both rows.

    Returns
    -------
    polars.DataFrame
        Two rows (``statistic`` = spearman, kendall_tau_b), columns of :meth:`PartialCorr.to_row`.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"difficulty": ["easy", "medium", "hard", "hard", "easy", "medium"],
    ...                    "pass_rate": [0.9, 0.6, 0.2, 0.3, 0.7, 0.5]})
    >>> label_correlations(df, "difficulty", "pass_rate", order=["easy", "medium", "hard"], n_boot=500, seed=0
    ...                    ).get_column("statistic").to_list()
    ['spearman', 'kendall_tau_b']
    """
    rng = np.random.default_rng(seed)
    orders = None if order is None else {label: order}
    return to_frame(
        [
            spearman(df, label, value, n_boot=n_boot, ci=ci, method=method, seed=rng, order=orders),
            kendall_tau_b(df, label, value, n_boot=n_boot, ci=ci, method=method, seed=rng, order=orders),
        ]
    )


def _rank_partial(
    function: str,
    df: Any,
    x: str,
    y: str,
    covar: str | Sequence[str] | None,
    *,
    n_boot: int,
    ci: float,
    method: Method,
    seed: Seed,
    cluster: str | None,
    order: Order,
) -> PartialCorr:
    """The partial (or, for ``function="semipartial_spearman"``, semi-partial) Spearman behind both public names."""
    semipartial = function == "semipartial_spearman"
    covars = _as_column_list(covar, "covar", function)
    columns = [x, y, *covars]
    _check_common(function, columns=columns, names=_roles(len(covars)), n_boot=n_boot, ci=ci, method=method)
    frame, n_dropped = _numeric_frame(df, columns, _roles(len(covars)), order, function, cluster)
    rng = np.random.default_rng(seed)
    if cluster is None:
        values = frame.select(columns).to_numpy().astype(np.float64)
        r, boot, jack = _spearman_estimates(values, columns, n_boot, method, rng, function)
    else:
        values, starts, sizes = _clusters(frame, columns, cluster)
        r, boot, jack = _clustered_estimates(values, columns, starts, sizes, n_boot, method, rng, function)
    n = len(values) if cluster is None else len(sizes)
    return _result(
        r,
        boot,
        jack,
        ci=ci,
        method=method,
        p=_t_test_p(r, n, len(covars)),
        n=n,
        k=len(covars),
        n_boot=n_boot,
        n_dropped=n_dropped,
        x=x,
        y=y,
        covar=tuple(covars),
        statistic="semipartial_spearman" if semipartial else "spearman",
        cluster=cluster,
    )


def _spearman_estimates(
    values: np.ndarray, columns: list[str], n_boot: int, method: str, rng: np.random.Generator, function: str
) -> tuple[float, np.ndarray, np.ndarray | None]:
    """Point estimate, bootstrap and jackknife replicates of the (semi-)partial Spearman of rows of ``values``."""
    _check_rows(values, columns, _roles(len(columns) - 2), len(columns) - 2, function)
    statistic = _spearman_statistic(values, semipartial=function == "semipartial_spearman")
    r = float(statistic(np.ones((1, len(values))))[0])
    if math.isnan(r):
        residualized = "y" if function == "semipartial_spearman" else "x or y"
        raise ValueError(
            f"The columns passed to {function} are collinear once ranked (a covariate carries the same ranks "
            f"as {residualized}, or as another covariate): the correlation is undefined"
        )
    boot, jack = _row_bootstrap(statistic, len(values), n_boot, method, rng)
    return r, boot, jack


def _result(
    r: float, boot: np.ndarray, jack: np.ndarray | None, *, ci: float, method: str, **fields: Any
) -> PartialCorr:
    """PartialCorr of an estimate, its bootstrap interval and the descriptive ``fields``."""
    low, high, n_degenerate = _interval(r, boot, jack, ci, method)
    return PartialCorr(r=r, ci_low=low, ci_high=high, method=method, ci=ci, n_degenerate=n_degenerate, **fields)


def _clusters(frame: pl.DataFrame, columns: list[str], cluster: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Trials sorted by cluster: values (N, m), first row of each cluster, cluster sizes."""
    ordered = frame.with_columns(pl.col(cluster).rank("dense").alias("__cluster")).sort(
        "__cluster", maintain_order=True
    )
    sizes = ordered.group_by("__cluster", maintain_order=True).len().get_column("len").to_numpy().astype(np.int64)
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    return ordered.select(columns).to_numpy().astype(np.float64), starts, sizes


# Cells per batch of the two-stage bootstrap's (resamples, tasks, trials) draws: larger than the
# engine's batches because the per-batch work here is gathers and sums, not cache-bound passes.
_CLUSTER_BATCH_CELLS = 1 << 20


def _clustered_estimates(
    values: np.ndarray,
    columns: list[str],
    starts: np.ndarray,
    sizes: np.ndarray,
    n_boot: int,
    method: str,
    rng: np.random.Generator,
    function: str,
) -> tuple[float, np.ndarray, np.ndarray | None]:
    """(Semi-)partial Spearman of cluster means; two-stage bootstrap; jackknife over clusters."""
    semipartial = function == "semipartial_spearman"
    means = np.add.reduceat(values, starts, axis=0) / sizes[:, None]
    r, _, jack = _spearman_estimates(means, columns, 0, "percentile", rng, function)
    n_clusters, m = means.shape
    if n_boot == 0:
        return r, np.empty(0), None
    if method == "bca":
        jack = _jackknife(_spearman_statistic(means, semipartial=semipartial), n_clusters)
    draws = rng.integers(0, n_clusters, (n_boot, n_clusters))
    # Only columns that vary within some cluster need the second stage; the others (a task's depth
    # or work) are the same whichever trials are drawn. With one trial per task there are none.
    low, high = np.minimum.reduceat(values, starts, axis=0), np.maximum.reduceat(values, starts, axis=0)
    varying = [np.ascontiguousarray(values[:, c]) if (low[:, c] != high[:, c]).any() else None for c in range(m)]
    largest = int(sizes.max())
    balanced = bool((sizes == largest).all())
    size = _batch_size(n_clusters * largest, cells=_CLUSTER_BATCH_CELLS)
    boot = []
    for start in range(0, n_boot, size):
        batch = draws[start : start + size]
        sampled = means[batch]  # (b, T, m) a copy: the second stage overwrites the varying columns
        if any(column is not None for column in varying):
            drawn_sizes = sizes[batch][:, :, None]  # (b, T, 1)
            rows = starts[batch][:, :, None] + rng.integers(0, drawn_sizes, (*batch.shape, largest))
            inside = None if balanced else np.arange(largest) < drawn_sizes
            for c, column in enumerate(varying):
                if column is not None:
                    taken = column[rows]
                    if inside is not None:
                        taken *= inside
                    sampled[:, :, c] = taken.sum(axis=2) / drawn_sizes[:, :, 0]
        ranks = _scipy_stats.rankdata(sampled, axis=1).transpose(2, 0, 1)
        boot.append(_partial_from_ranks(ranks, ranks, (n_clusters + 1.0) / 2.0, n_clusters, semipartial=semipartial))
    return r, np.concatenate(boot), jack


def _t_test_p(r: float, n: int, k: int) -> float:
    dof = n - 2 - k
    if dof <= 0:
        return math.nan
    if abs(r) >= 1:
        return 0.0
    t = r * math.sqrt(dof / (1 - r * r))
    return float(2 * _scipy_stats.t.sf(abs(t), dof))
