"""Rank statistics of the audit: partial Spearman with bootstrap CIs, sign test, quadrants, percentiles.

Everything here takes plain numbers in a polars (or pandas) frame and knows nothing of agents or
run logs. The formulas and their references are in the "Statistics" section of DESIGN.md.

Bootstrap
---------
Intervals come from resampling the rows (tasks) with replacement. A resample is represented by
how many times each row was drawn (a ``(B, n)`` matrix of counts), which lets the ranks of every
resample be computed at once from one sort of the original data: the average rank of a tie group
in a resample is the number of drawn rows below it plus half its own drawn count plus one half.
No Python loop runs per resample. The jackknife that gives the BCa acceleration is the same
computation with the weights ``1 - I``. Resamples where a column is constant (or the columns are
collinear) have no correlation: they are left out and counted in ``n_degenerate``.

With ``cluster=`` the rows are trials grouped in tasks; the statistic is computed on per-task
means and the bootstrap has two stages: draw tasks with replacement, then, for every drawn task,
draw its trials with replacement.

>>> import polars as pl
>>> from depthlab import stats
>>> df = pl.DataFrame({"pass_rate": [0.9, 0.7, 0.8, 0.2, 0.4, 0.1, 0.5], "depth": [1, 2, 1, 5, 3, 10, 3],
...                    "work": [3, 10, 4, 20, 8, 40, 12]})
>>> res = stats.partial_spearman(df, "pass_rate", "depth", "work", n_boot=2000, seed=0)
>>> res.n, res.k
(7, 1)
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import polars as pl
from scipy import special
from scipy import stats as _scipy_stats

__all__ = [
    "PartialCorr",
    "SignTest",
    "kendall_tau_b",
    "label_correlations",
    "partial_spearman",
    "quadrants",
    "sign_test",
    "spearman",
    "to_frame",
    "within_percentile",
]

Method = Literal["bca", "percentile"]
Seed = int | np.random.Generator | None
Order = Sequence[Any] | Mapping[str, Sequence[Any]] | None

_METHODS: tuple[str, ...] = ("bca", "percentile")
# Work on about this many matrix cells per batch (512 KiB of float64): the arrays of a batch then
# stay in the CPU cache, which measured 2-3x faster than 8 MiB batches at n = 734.
_BATCH_CELLS = 1 << 16
# When x (or y) and the covariates have a rank-correlation matrix with a smaller determinant, x is
# (numerically) collinear with the covariates and the partial correlation is undefined.
_SINGULAR_DET = 1e-12


# --------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class PartialCorr:
    """A rank (partial) correlation with its bootstrap confidence interval.

    Attributes
    ----------
    r : float
        The point estimate on all rows (Spearman's rho, partial when ``k > 0``, or Kendall's tau-b).
    ci_low, ci_high : float
        Bootstrap confidence interval at level ``ci``; NaN when ``n_boot == 0``.
    p : float
        Two-sided p-value (t-test with ``n - 2 - k`` degrees of freedom for Spearman, as R ppcor
        and pingouin; scipy's ``kendalltau`` test for Kendall).
    n : int
        Number of rows (tasks, or clusters with ``cluster=``) used.
    k : int
        Number of covariates.
    method : str
        ``"bca"`` or ``"percentile"``.
    n_boot : int
        Number of bootstrap resamples drawn (including degenerate ones).
    n_degenerate : int
        Resamples left out because a column was constant or the columns were collinear in them.
    n_dropped : int
        Rows dropped because a used column was null (trials, with ``cluster=``).
    x, y : str
        Correlated columns.
    covar : tuple of str
        Covariates controlled for.
    ci : float
        Confidence level of the interval.
    statistic : str
        ``"spearman"`` or ``"kendall_tau_b"``.
    cluster : str or None
        Column whose groups were resampled in two stages, if any.

    Examples
    --------
    >>> res = PartialCorr(r=0.5, ci_low=0.1, ci_high=0.8, p=0.01, n=30, k=1, method="bca", n_boot=1000,
    ...                   n_degenerate=0, n_dropped=0, x="x", y="y", covar=("z",))
    >>> print(res)
    spearman r(x, y | z) = +0.500, 95% CI [+0.100, +0.800] (bca, 1,000 resamples), p = 0.01, n = 30
    """

    r: float
    ci_low: float
    ci_high: float
    p: float
    n: int
    k: int
    method: str
    n_boot: int
    n_degenerate: int
    n_dropped: int
    x: str
    y: str
    covar: tuple[str, ...] = ()
    ci: float = 0.95
    statistic: str = "spearman"
    cluster: str | None = None

    def to_row(self) -> dict[str, Any]:
        """Return the result as a flat dict (``covar`` joined by ", "), one row of :func:`to_frame`."""
        row = asdict(self)
        row["covar"] = ", ".join(self.covar)
        return row

    def _label(self) -> str:
        given = f" | {', '.join(self.covar)}" if self.covar else ""
        return f"{self.statistic} r({self.x}, {self.y}{given})"

    def _notes(self) -> str:
        notes = [f"n = {self.n}"]
        if self.cluster is not None:
            notes[0] += f" clusters of {self.cluster!r}"
        if self.n_dropped:
            notes.append(f"{self.n_dropped} dropped for nulls")
        if self.n_degenerate:
            notes.append(f"{self.n_degenerate} degenerate resamples left out")
        return ", ".join(notes)

    def _interval(self) -> str:
        if self.n_boot == 0:
            return "no CI (n_boot=0)"
        return f"{self.ci:.0%} CI [{self.ci_low:+.3f}, {self.ci_high:+.3f}] ({self.method}, {self.n_boot:,} resamples)"

    def __str__(self) -> str:
        return f"{self._label()} = {self.r:+.3f}, {self._interval()}, p = {self.p:.3g}, {self._notes()}"

    def _repr_html_(self) -> str:
        return (
            "<table><tr><th style='text-align:left'>"
            + html.escape(self._label())
            + "</th><th>r</th><th>CI</th><th>p</th><th>n</th></tr><tr><td style='text-align:left'>"
            + html.escape(f"{self.method}, {self.n_boot:,} resamples; {self._notes()}")
            + f"</td><td>{self.r:+.3f}</td><td>"
            + html.escape(f"[{self.ci_low:+.3f}, {self.ci_high:+.3f}] ({self.ci:.0%})" if self.n_boot else "—")
            + f"</td><td>{self.p:.3g}</td><td>{self.n}</td></tr></table>"
        )


@dataclass(frozen=True)
class SignTest:
    """Result of :func:`sign_test`.

    Attributes
    ----------
    n_pos, n_neg, n_zero : int
        Positive, negative and zero differences (zeros are dropped from the test).
    p : float
        Exact two-sided binomial p-value of ``n_pos`` out of ``n_pos + n_neg`` at 1/2; NaN when no
        difference is non-zero.
    n_missing : int
        Pairs left out because a value was null or NaN.

    Examples
    --------
    >>> print(SignTest(n_pos=7, n_neg=2, n_zero=1, p=0.1796875))
    sign test: 7 positive, 2 negative (1 zero dropped), exact two-sided p = 0.18
    """

    n_pos: int
    n_neg: int
    n_zero: int
    p: float
    n_missing: int = 0

    def to_row(self) -> dict[str, Any]:
        """Return the result as a flat dict."""
        return asdict(self)

    def __str__(self) -> str:
        missing = f", {self.n_missing} missing" if self.n_missing else ""
        return (
            f"sign test: {self.n_pos} positive, {self.n_neg} negative ({self.n_zero} zero dropped{missing}), "
            f"exact two-sided p = {self.p:.3g}"
        )

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(str(self))}</p>"


def to_frame(results: Iterable[PartialCorr | SignTest]) -> pl.DataFrame:
    """Stack results (of one kind) into a polars frame, one row each.

    Parameters
    ----------
    results : iterable of PartialCorr or SignTest

    Returns
    -------
    polars.DataFrame

    Examples
    --------
    >>> to_frame([sign_test([1, 2, -1]), sign_test([3, 0, 1])]).get_column("n_pos").to_list()
    [2, 2]
    """
    rows = [result.to_row() for result in results]
    if not rows:
        return pl.DataFrame(schema={name: pl.Float64() for name in PartialCorr.__dataclass_fields__})
    return pl.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# correlations


def partial_spearman(
    df: Any,
    x: str,
    y: str,
    covar: str | Sequence[str] | None,
    *,
    n_boot: int = 10_000,
    ci: float = 0.95,
    method: Method = "bca",
    seed: Seed = None,
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
        drawn task, its trials with replacement. The p-value treats the task means as data.
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
    covars = _as_column_list(covar, "covar")
    columns = [x, y, *covars]
    _check_common("partial_spearman", columns=columns, names=_roles(len(covars)), n_boot=n_boot, ci=ci, method=method)
    frame, n_dropped = _numeric_frame(df, columns, _roles(len(covars)), order, "partial_spearman", cluster)
    rng = np.random.default_rng(seed)
    if cluster is None:
        values = frame.select(columns).to_numpy().astype(np.float64)
        r, boot, jack = _spearman_estimates(values, columns, n_boot, method, rng)
    else:
        values, starts, sizes = _clusters(frame, columns, cluster)
        r, boot, jack = _clustered_estimates(values, columns, starts, sizes, n_boot, method, rng)
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
        statistic="spearman",
        cluster=cluster,
    )


def spearman(
    df: Any,
    x: str,
    y: str,
    *,
    n_boot: int = 10_000,
    ci: float = 0.95,
    method: Method = "bca",
    seed: Seed = None,
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
    return partial_spearman(
        df, x, y, None, n_boot=n_boot, ci=ci, method=method, seed=seed, cluster=cluster, order=order
    )


def kendall_tau_b(
    df: Any,
    x: str,
    y: str,
    *,
    n_boot: int = 10_000,
    ci: float = 0.95,
    method: Method = "bca",
    seed: Seed = None,
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
    n_boot: int = 10_000,
    ci: float = 0.95,
    method: Method = "bca",
    seed: Seed = None,
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
    common = {"n_boot": n_boot, "ci": ci, "method": method, "seed": rng, "order": orders}
    return to_frame([spearman(df, label, value, **common), kendall_tau_b(df, label, value, **common)])


# --------------------------------------------------------------------------------------------
# sign test, percentiles, quadrants


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
            raise ValueError(
                f"The 'b' parameter of sign_test must have the length of 'a' ({len(diff)}), got {len(other)}"
            )
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
    groups = _as_column_list(by, "by")
    frame = _as_polars(df, "within_percentile")
    _require_columns(frame, [value, *groups], ("value", *["by"] * len(groups)), "within_percentile")
    _require_numeric(frame, value, "value", "within_percentile")
    column = pl.col(value).cast(pl.Float64).fill_nan(None)
    percentile = column.rank("average") / column.count()
    if groups:
        percentile = percentile.over(groups)
    return frame.select(percentile.alias(f"{value}_percentile")).to_series()


def quadrants(
    df: Any,
    *,
    depth: str = "depth",
    work: str = "work",
    value: str = "pass_rate",
    by: str | Sequence[str] | None = "dataset",
    depth_split: float = 2,
    work_split: float | Literal["median"] = "median",
    n_boot: int = 10_000,
    ci: float = 0.95,
    method: Method = "bca",
    seed: Seed = None,
) -> pl.DataFrame:
    """The 2×2 depth/work split with each cell's mean within-group percentile of ``value``.

    A task is *deep* when ``depth >= depth_split`` and has *large* work when ``work >= work_split``
    (``"median"``: the median work of the tasks used, pooled over groups). The percentile is
    :func:`within_percentile` of ``value`` by ``by``, computed among every row with a value (so a
    task's percentile does not depend on whether its depth is known); rows with a null depth or
    work are then left out. The interval bootstraps the cell's tasks (percentiles held fixed).

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
    >>> quadrants(df, n_boot=0).select("depth_class", "work_class", "n").rows()
    [('deep', 'large', 2), ('deep', 'small', 1), ('shallow', 'large', 1), ('shallow', 'small', 2)]
    """
    _check_common("quadrants", columns=[], names=(), n_boot=n_boot, ci=ci, method=method)
    frame = _as_polars(df, "quadrants")
    groups = _as_column_list(by, "by")
    _require_columns(
        frame, [depth, work, value, *groups], ("depth", "work", "value", *["by"] * len(groups)), "quadrants"
    )
    for column, name in ((depth, "depth"), (work, "work")):
        _require_numeric(frame, column, name, "quadrants")
    if not isinstance(depth_split, int | float) or isinstance(depth_split, bool):
        raise ValueError(f"The 'depth_split' parameter of quadrants must be a number, got {depth_split!r}")
    percentile_name = f"{value}_percentile"
    frame = frame.with_columns(within_percentile(frame, value, by=groups or None)).filter(
        pl.col(percentile_name).is_not_null() & pl.col(depth).is_not_null() & pl.col(work).is_not_null()
    )
    if work_split == "median":
        split = float(frame.get_column(work).median()) if frame.height else math.nan
    elif isinstance(work_split, int | float) and not isinstance(work_split, bool):
        split = float(work_split)
    else:
        raise ValueError(f"The 'work_split' parameter of quadrants must be 'median' or a number, got {work_split!r}")
    rng = np.random.default_rng(seed)
    rows = []
    for depth_class, deep in (("deep", True), ("shallow", False)):
        for work_class, large in (("large", True), ("small", False)):
            cell = frame.filter((pl.col(depth) >= depth_split) == deep, (pl.col(work) >= split) == large)
            percentiles = cell.get_column(percentile_name).to_numpy().astype(np.float64)
            mean = float(percentiles.mean()) if len(percentiles) else None
            low = high = None
            if len(percentiles) and n_boot:
                boot, jack = _row_bootstrap(_mean_statistic(percentiles), len(percentiles), n_boot, method, rng)
                low, high, _ = _interval(float(mean), boot, jack, ci, method)
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


# --------------------------------------------------------------------------------------------
# statistics of weighted samples: a (B, n) matrix of how often each row is in each resample


def _spearman_estimates(
    values: np.ndarray, columns: list[str], n_boot: int, method: str, rng: np.random.Generator
) -> tuple[float, np.ndarray, np.ndarray | None]:
    """Point estimate, bootstrap and jackknife replicates of the partial Spearman of rows of ``values``."""
    function = "partial_spearman"
    _check_rows(values, columns, _roles(len(columns) - 2), len(columns) - 2, function)
    statistic = _spearman_statistic(values)
    r = float(statistic(np.ones((1, len(values))))[0])
    if math.isnan(r):
        raise ValueError(
            f"The columns passed to {function} are collinear once ranked (a covariate carries the same ranks "
            "as x or y, or as another covariate): the partial correlation is undefined"
        )
    boot, jack = _row_bootstrap(statistic, len(values), n_boot, method, rng)
    return r, boot, jack


def _spearman_statistic(values: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Return weights (B, n) -> partial Spearman of columns 0 and 1 given the rest, NaN if degenerate."""
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
        return _partial_from_ranks(ranks, weighted, total / 2.0, total)

    return statistic


def _partial_from_ranks(
    ranks: np.ndarray, weighted: np.ndarray, mean_rank: np.ndarray | float, total: np.ndarray | float
) -> np.ndarray:
    """(m, B, n) ranks of B (weighted) samples -> (B,) partial correlation of columns 0 and 1 given the rest.

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
    undefined = constant | (minor_xx < _SINGULAR_DET) | (minor_yy < _SINGULAR_DET)
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
    return np.concatenate([statistic(1.0 - np.eye(n)[start : start + size]) for start in range(0, n, size)])


def _counts(draws: np.ndarray, n: int) -> np.ndarray:
    """(b, n) row indices -> (b, n) float counts of each row."""
    offsets = (np.arange(len(draws)) * n)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=len(draws) * n).reshape(len(draws), n).astype(np.float64)


def _batch_size(width: int) -> int:
    """Rows per batch of a (rows, width) matrix."""
    return max(1, _BATCH_CELLS // max(width, 1))


def _batches(array: np.ndarray, width: int) -> Iterator[np.ndarray]:
    size = _batch_size(width)
    for start in range(0, len(array), size):
        yield array[start : start + size]


def _result(
    r: float, boot: np.ndarray, jack: np.ndarray | None, *, ci: float, method: str, **fields: Any
) -> PartialCorr:
    """PartialCorr of an estimate, its bootstrap interval and the descriptive ``fields``."""
    low, high, n_degenerate = _interval(r, boot, jack, ci, method)
    return PartialCorr(r=r, ci_low=low, ci_high=high, method=method, ci=ci, n_degenerate=n_degenerate, **fields)


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


def _clusters(frame: pl.DataFrame, columns: list[str], cluster: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Trials sorted by cluster: values (N, m), first row of each cluster, cluster sizes."""
    ordered = frame.with_columns(pl.col(cluster).rank("dense").alias("__cluster")).sort(
        "__cluster", maintain_order=True
    )
    sizes = ordered.group_by("__cluster", maintain_order=True).len().get_column("len").to_numpy().astype(np.int64)
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    return ordered.select(columns).to_numpy().astype(np.float64), starts, sizes


def _clustered_estimates(
    values: np.ndarray,
    columns: list[str],
    starts: np.ndarray,
    sizes: np.ndarray,
    n_boot: int,
    method: str,
    rng: np.random.Generator,
) -> tuple[float, np.ndarray, np.ndarray | None]:
    """Partial Spearman of cluster means; two-stage bootstrap; jackknife over clusters."""
    means = np.add.reduceat(values, starts, axis=0) / sizes[:, None]
    r, _, jack = _spearman_estimates(means, columns, 0, "percentile", rng)
    n_clusters = len(means)
    if n_boot == 0:
        return r, np.empty(0), None
    if method == "bca":
        jack = _jackknife(_spearman_statistic(means), n_clusters)
    draws = rng.integers(0, n_clusters, (n_boot, n_clusters))
    largest = int(sizes.max())
    boot = []
    for batch in _batches(draws, n_clusters * largest):
        drawn_sizes = sizes[batch][:, :, None]  # (b, T, 1)
        picks = np.floor(rng.random((*batch.shape, largest)) * drawn_sizes).astype(np.intp)
        inside = np.arange(largest) < drawn_sizes
        rows = np.where(inside, starts[batch][:, :, None] + picks, 0)
        sampled = (values[rows] * inside[..., None]).sum(axis=2) / drawn_sizes  # (b, T, m)
        ranks = _scipy_stats.rankdata(sampled, axis=1).transpose(2, 0, 1)
        boot.append(_partial_from_ranks(ranks, ranks, (n_clusters + 1.0) / 2.0, n_clusters))
    return r, np.concatenate(boot), jack


# --------------------------------------------------------------------------------------------
# input handling


def _check_common(
    function: str, *, columns: list[str], names: Sequence[str], n_boot: Any, ci: Any, method: Any
) -> None:
    if method not in _METHODS:
        raise ValueError(f"The 'method' parameter of {function} must be one of {list(_METHODS)}, got {method!r}")
    if not isinstance(ci, int | float) or isinstance(ci, bool) or not 0 < ci < 1:
        raise ValueError(f"The 'ci' parameter of {function} must be a float in the open interval (0, 1), got {ci!r}")
    if not isinstance(n_boot, int | np.integer) or isinstance(n_boot, bool) or n_boot < 0:
        raise ValueError(f"The 'n_boot' parameter of {function} must be an int >= 0, got {n_boot!r}")
    for i, column in enumerate(columns):
        if not isinstance(column, str):
            raise ValueError(f"The '{names[i]}' parameter of {function} must be a column name, got {column!r}")
        if column in columns[:i]:
            raise ValueError(
                f"The '{names[i]}' parameter of {function} names column {column!r}, which is already used as "
                f"'{names[columns.index(column)]}': each column may appear once"
            )


def _as_column_list(columns: str | Sequence[str] | None, name: str) -> list[str]:
    if columns is None:
        return []
    if isinstance(columns, str):
        return [columns]
    if isinstance(columns, Sequence):
        return list(columns)
    raise ValueError(f"The '{name}' parameter must be a column name, a list of them or None, got {columns!r}")


def _as_polars(df: Any, function: str) -> pl.DataFrame:
    if isinstance(df, pl.DataFrame):
        return df
    if _is_pandas(df):
        return _pandas_as_polars(df)
    raise ValueError(f"The 'df' parameter of {function} must be a polars or pandas DataFrame, got {type(df).__name__}")


def _is_pandas(df: Any) -> bool:
    return type(df).__module__.startswith("pandas") and hasattr(df, "columns") and hasattr(df, "dtypes")


def _pandas_as_polars(df: Any) -> pl.DataFrame:
    """pandas -> polars, ordered Categoricals as their string values (their order is read by _pandas_orders)."""
    ordered = list(_pandas_orders(df))
    if ordered:
        df = df.astype(dict.fromkeys(ordered, "string"))
    return pl.from_pandas(df)


def _pandas_orders(df: Any) -> dict[str, list[str]]:
    """Categories, lowest first, of the ordered Categorical columns of a pandas frame."""
    import pandas as pd

    return {
        c: [str(v) for v in df[c].cat.categories]
        for c in df.columns
        if isinstance(df[c].dtype, pd.CategoricalDtype) and df[c].dtype.ordered
    }


def _require_columns(frame: pl.DataFrame, columns: Sequence[str], names: Sequence[str], function: str) -> None:
    for column, name in zip(columns, names, strict=True):
        if column not in frame.columns:
            raise ValueError(
                f"The '{name}' parameter of {function} names column {column!r}, which is not in the frame "
                f"(columns: {frame.columns})"
            )


def _is_numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric() or dtype == pl.Boolean


def _require_numeric(frame: pl.DataFrame, column: str, name: str, function: str) -> None:
    dtype = frame.schema[column]
    if not _is_numeric(dtype):
        raise ValueError(
            f"The '{name}' parameter of {function} names column {column!r} of dtype {dtype}, which is not numeric"
        )


def _numeric_frame(
    df: Any, columns: list[str], names: Sequence[str], order: Order, function: str, cluster: str | None
) -> tuple[pl.DataFrame, int]:
    """The used columns as Float64 (ordinal labels as their category positions), rows with nulls dropped."""
    orders: dict[str, list[Any]] = _pandas_orders(df) if _is_pandas(df) else {}
    frame = _as_polars(df, function)
    keys = [cluster] if cluster is not None else []
    _require_columns(frame, [*columns, *keys], (*names, *["cluster"] * len(keys)), function)
    if cluster is not None and cluster in columns:
        raise ValueError(f"The 'cluster' parameter of {function} names column {cluster!r}, which is also correlated")
    orders.update(_resolve_order(frame, columns, names, order, function))
    converted = []
    for column, name in zip(columns, names, strict=True):
        dtype = frame.schema[column]
        if column in orders:
            converted.append(_ordinal_positions(frame, column, name, orders[column], function))
        elif isinstance(dtype, pl.Enum):
            converted.append(pl.col(column).to_physical().cast(pl.Float64))
        elif _is_numeric(dtype):
            converted.append(pl.col(column).cast(pl.Float64).fill_nan(None))
        else:
            raise ValueError(
                f"The '{name}' parameter of {function} names column {column!r} of dtype {dtype}, which is not "
                "numeric; give an ordinal label its categories with order=[lowest, ..., highest]"
            )
    selected = frame.select(*[pl.col(k) for k in keys], *converted)
    kept = selected.drop_nulls()
    return kept, selected.height - kept.height


def _resolve_order(
    frame: pl.DataFrame, columns: list[str], names: Sequence[str], order: Order, function: str
) -> dict[str, list[Any]]:
    if order is None:
        return {}
    if isinstance(order, Mapping):
        unknown = [c for c in order if c not in columns]
        if unknown:
            raise ValueError(f"The 'order' parameter of {function} names columns that are not used: {unknown}")
        return {c: list(v) for c, v in order.items()}
    if isinstance(order, str) or not isinstance(order, Sequence):
        raise ValueError(
            f"The 'order' parameter of {function} must be a list of categories or a mapping, got {order!r}"
        )
    labels = [c for c in columns if not _is_numeric(frame.schema[c])]
    if len(labels) != 1:
        raise ValueError(
            f"The 'order' parameter of {function} is a list, which applies to the one non-numeric column, but "
            f"{len(labels)} are non-numeric ({labels}); pass a mapping {{column: categories}}"
        )
    return {labels[0]: list(order)}


def _ordinal_positions(frame: pl.DataFrame, column: str, name: str, order: list[Any], function: str) -> pl.Expr:
    if len(set(order)) != len(order):
        raise ValueError(f"The 'order' given for column {column!r} in {function} repeats a category: {order!r}")
    as_text = pl.col(column).cast(pl.String)
    present = frame.select(as_text.drop_nulls().unique()).to_series().to_list()
    unknown = sorted(set(present) - {str(v) for v in order})
    if unknown:
        raise ValueError(
            f"The '{name}' parameter of {function} names column {column!r}, whose values {unknown} are not in "
            f"its order {order!r}"
        )
    positions = {str(v): float(i) for i, v in enumerate(order)}
    return as_text.replace_strict(positions, default=None, return_dtype=pl.Float64).alias(column)


def _roles(k: int) -> tuple[str, ...]:
    """Parameter names of the columns x, y, covar..."""
    return ("x", "y", *["covar"] * k)


def _check_rows(values: np.ndarray, columns: list[str], names: Sequence[str], k: int, function: str) -> None:
    n = len(values)
    if n < k + 3:
        raise ValueError(
            f"The 'df' parameter of {function} must have at least k + 3 = {k + 3} rows without nulls "
            f"for {k} covariate(s), got {n}"
        )
    for c in range(values.shape[1]):
        if np.all(values[:, c] == values[0, c]):
            raise ValueError(
                f"The '{names[c]}' parameter of {function} names a constant column ({columns[c]!r}, every value "
                f"{values[0, c]!r}): its rank correlation is undefined"
            )


def _t_test_p(r: float, n: int, k: int) -> float:
    dof = n - 2 - k
    if dof <= 0:
        return math.nan
    if abs(r) >= 1:
        return 0.0
    t = r * math.sqrt(dof / (1 - r * r))
    return float(2 * _scipy_stats.t.sf(abs(t), dof))


def _as_float_vector(values: Any, name: str) -> np.ndarray:
    if isinstance(values, pl.Series):
        values = values.cast(pl.Float64).fill_null(math.nan).to_numpy()
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"The '{name}' parameter of sign_test must be numbers, got {values!r:.80}") from None
    if array.ndim != 1:
        raise ValueError(f"The '{name}' parameter of sign_test must be one-dimensional, got shape {array.shape}")
    return array
