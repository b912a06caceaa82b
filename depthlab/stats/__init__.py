"""Rank statistics of the audit: (semi-)partial Spearman with bootstrap CIs, sign test, quadrants, percentiles.

Everything here takes plain numbers in a polars (or pandas) frame and knows nothing of agents or
run logs. Each function states its formula in its Notes and its sources in its References.

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

import warnings
from typing import Any, Final

from depthlab.stats._correlation import (
    kendall_tau_b,
    label_correlations,
    partial_spearman,
    semipartial_spearman,
    spearman,
)
from depthlab.stats._groups import quadrant_cells, sign_test, within_percentile
from depthlab.stats._proportions import adjust_p, proportion_ci
from depthlab.stats._resampling import Resampled, hierarchical_bootstrap, permutation_pvalue
from depthlab.stats._results import PartialCorr, SignTest, to_frame

__all__ = [
    "PartialCorr",
    "Resampled",
    "SignTest",
    "adjust_p",
    "hierarchical_bootstrap",
    "kendall_tau_b",
    "label_correlations",
    "partial_spearman",
    "permutation_pvalue",
    "proportion_ci",
    "quadrant_cells",
    "semipartial_spearman",
    "sign_test",
    "spearman",
    "to_frame",
    "within_percentile",
]

#: Old name -> new name of every renamed function: importable under the old name with a
#: DeprecationWarning, to be removed in a later release (kept out of ``__all__``).
#: ``quadrants`` became :func:`quadrant_cells` because :func:`depthlab.plots.quadrants` draws them.
DEPRECATED_ALIASES: Final[dict[str, str]] = {"quadrants": "quadrant_cells"}


def __getattr__(name: str) -> Any:
    if name in DEPRECATED_ALIASES:
        new = DEPRECATED_ALIASES[name]
        warnings.warn(
            f"depthlab.stats.{name} is deprecated: use depthlab.stats.{new}", DeprecationWarning, stacklevel=2
        )
        return globals()[new]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
