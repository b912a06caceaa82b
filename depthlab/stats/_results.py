"""Result types of depthlab.stats: what a correlation or a sign test returns, and a frame of them."""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl


@dataclass(frozen=True)
class PartialCorr:
    """A rank (partial) correlation with its bootstrap confidence interval.

    Attributes
    ----------
    r : float
        The point estimate on all rows (Spearman's rho, partial or semi-partial when ``k > 0``, or
        Kendall's tau-b).
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
        ``"spearman"``, ``"semipartial_spearman"`` (``covar`` removed from ``y`` only) or
        ``"kendall_tau_b"``.
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
        if self.covar and self.statistic == "semipartial_spearman":
            given += f" removed from {self.y} only"
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
    >>> from depthlab.stats import sign_test
    >>> to_frame([sign_test([1, 2, -1]), sign_test([3, 0, 1])]).get_column("n_pos").to_list()
    [2, 2]
    """
    rows = [result.to_row() for result in results]
    if not rows:
        return pl.DataFrame(schema={name: pl.Float64() for name in PartialCorr.__dataclass_fields__})
    return pl.DataFrame(rows)
