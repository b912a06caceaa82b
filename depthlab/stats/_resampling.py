"""Where ties leave the BCa interval under-covering: a permutation p-value and a hierarchical bootstrap.

When nine tasks in ten sit at D = 1 (the paper's synthetic collections), D's ranks are one big tie
and a handful of values: the bootstrap distribution of a rank correlation is lumpy and the BCa
interval of pass ~ D | W covers a true zero less often than it says (tests/test_stats.py measures
it). Two alternatives that do not lean on a smooth bootstrap distribution:

* :func:`permutation_pvalue`: Freedman & Lane's (1983) permutation test of a (partial) Spearman
  correlation: every column ranked, x and y residualised on the covariates' ranks, the residuals
  of y permuted; the p-value is the share of permutations at least as extreme, counted with the
  observed one, (1 + #{|r*| >= |r|}) / (1 + B).
* :func:`hierarchical_bootstrap`: resample the levels the data were drawn at: collections with
  replacement, then tasks within each drawn collection, then runs within each drawn task, and
  recompute the statistic on the drawn tasks' means; a percentile interval, degenerate resamples
  (a constant column) left out and counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats as _scipy_stats

from depthlab._checks import check_frame, check_nonnegative_int, check_number, check_positive_int
from depthlab._defaults import AUDIT_N_BOOT, AUDIT_SEED


@dataclass(frozen=True)
class Resampled:
    """A statistic with the interval or p-value of a resampling scheme named in ``method``."""

    r: float
    ci_low: float
    ci_high: float
    p: float
    method: str  # "permutation" or "hierarchical bootstrap"
    n: int  # tasks
    n_resamples: int
    n_degenerate: int


def _partial_from_values(values: np.ndarray) -> float:
    """Partial Spearman of columns 0 and 1 given the rest (average ranks), NaN when undefined."""
    ranks = _scipy_stats.rankdata(values, axis=0)
    if np.any(ranks.std(axis=0) == 0):
        return math.nan
    corr = np.corrcoef(ranks, rowvar=False)
    try:
        inverse = np.linalg.inv(corr)
    except np.linalg.LinAlgError:
        return math.nan
    return float(-inverse[0, 1] / math.sqrt(inverse[0, 0] * inverse[1, 1]))


def _residuals(ranks: np.ndarray, covariates: np.ndarray) -> np.ndarray:
    design = np.column_stack([np.ones(len(ranks)), covariates])
    coef, *_ = np.linalg.lstsq(design, ranks, rcond=None)
    return ranks - design @ coef


def permutation_pvalue(
    df: pl.DataFrame,
    x: str,
    y: str,
    covar: str | Sequence[str] | None = None,
    *,
    n_perm: int = 10_000,
    seed: int | None = AUDIT_SEED,
) -> Resampled:
    """Freedman-Lane permutation p-value of the (partial) Spearman correlation of ``x`` and ``y`` given ``covar``.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"x": [1, 2, 3, 4, 5, 6, 7, 8], "y": [2, 1, 4, 3, 6, 5, 8, 7], "z": [1, 1, 2, 2, 3, 3, 4, 5]})
    >>> res = permutation_pvalue(df, "x", "y", n_perm=2000, seed=1)
    >>> res.method, res.p < 0.05
    ('permutation', True)
    """
    function = "permutation_pvalue"
    covars = [covar] if isinstance(covar, str) else list(covar or [])
    frame = check_frame(df, "df", function, (x, y, *covars)).select(x, y, *covars).drop_nulls()
    n_perm = check_positive_int(n_perm, "n_perm", function)
    values = frame.to_numpy().astype(np.float64)
    r = _partial_from_values(values)
    ranks = _scipy_stats.rankdata(values, axis=0)
    rx, ry = ranks[:, 0], ranks[:, 1]
    if covars:
        rx, ry = _residuals(rx, ranks[:, 2:]), _residuals(ry, ranks[:, 2:])
    else:
        rx, ry = rx - rx.mean(), ry - ry.mean()
    rng = np.random.default_rng(seed)
    permuted = ry[np.argsort(rng.random((n_perm, len(ry))), axis=1)]  # (B, n)
    denominator = np.sqrt((rx**2).sum() * (permuted**2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        stars = (permuted @ rx) / denominator
    observed = float((rx @ ry) / math.sqrt((rx**2).sum() * (ry**2).sum())) if math.isfinite(r) else math.nan
    valid = stars[np.isfinite(stars)]
    p = (1 + int((np.abs(valid) >= abs(observed) - 1e-12).sum())) / (1 + len(valid)) if valid.size else math.nan
    return Resampled(r, math.nan, math.nan, p, "permutation", len(values), n_perm, n_perm - len(valid))


def hierarchical_bootstrap(
    runs: pl.DataFrame,
    x: str,
    y: str,
    covar: str | Sequence[str] | None = None,
    *,
    levels: Sequence[str] = ("dataset", "task"),
    n_boot: int = AUDIT_N_BOOT,
    ci: float = 0.95,
    seed: int | None = AUDIT_SEED,
) -> Resampled:
    """Percentile interval of the (partial) Spearman of task means, resampling every level in turn, then runs.

    ``runs`` has one row per run (e.g. a ``passed`` column and the task's ``depth`` and ``work``);
    ``levels`` names the nested groups, outermost first: (collection, task), or (task,) alone. The statistic is
    computed on the per-task means (the last level); each resample draws the outer groups with
    replacement, then within each drawn group its inner groups, then each drawn task's runs.

    Examples
    --------
    >>> import polars as pl
    >>> runs = pl.DataFrame({"dataset": ["a"] * 12 + ["b"] * 12, "task": [f"t{i // 3}" for i in range(24)],
    ...     "passed": [1, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0] * 2, "depth": [1, 1, 1, 2, 2, 2, 3, 3, 3, 5, 5, 5] * 2})
    >>> res = hierarchical_bootstrap(runs, "passed", "depth", n_boot=200, seed=0)
    >>> res.n, res.r < 0, res.method
    (8, True, 'hierarchical bootstrap')
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
    # the nesting as index arrays: for each group of a level, the ranges of its children
    keys = frame.select(levels).with_row_index("_row")
    task_bounds = keys.group_by(levels, maintain_order=True).agg(pl.col("_row").min().alias("s"), pl.len().alias("n"))
    starts, sizes = task_bounds["s"].to_numpy(), task_bounds["n"].to_numpy()
    means = np.add.reduceat(values, starts, axis=0) / sizes[:, None]
    r = _partial_from_values(means)
    # the tasks of each outer group (two levels); with one level the tasks are drawn directly
    parents: list[list[list[int]]] = []
    if len(levels) == 2:
        outer = task_bounds.select(levels[0]).with_row_index("_task")
        parents.append(
            outer.group_by(levels[0], maintain_order=True).agg(pl.col("_task")).get_column("_task").to_list()
        )
    rng = np.random.default_rng(seed)
    boot = np.full(n_boot, np.nan)
    for b in range(n_boot):
        drawn = _draw_tasks(parents, len(starts), rng)
        rows = [starts[t] + rng.integers(0, sizes[t], sizes[t]) for t in drawn]
        sample = np.stack([values[index].mean(axis=0) for index in rows])
        boot[b] = _partial_from_values(sample)
    valid = boot[~np.isnan(boot)]
    alpha = (1 - ci) / 2
    low, high = (float(v) for v in np.quantile(valid, [alpha, 1 - alpha])) if valid.size else (math.nan, math.nan)
    return Resampled(r, low, high, math.nan, "hierarchical bootstrap", len(starts), n_boot, n_boot - len(valid))


def _draw_tasks(parents: list[list[list[int]]], n_tasks: int, rng: np.random.Generator) -> list[int]:
    """Task indices of one hierarchical draw: the outermost level first, then within each drawn group."""
    if not parents:
        return rng.integers(0, n_tasks, n_tasks).tolist()
    groups = list(parents[0])
    drawn_groups = [groups[i] for i in rng.integers(0, len(groups), len(groups))]
    out: list[int] = []
    for members in drawn_groups:
        members = list(members)
        out.extend(members[i] for i in rng.integers(0, len(members), len(members)))
    return out
