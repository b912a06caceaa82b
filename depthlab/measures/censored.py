"""D's distribution with its censoring: the Turnbull estimator over every task, unsolved ones included.

D is interval-censored: a solved task's D lies in (depth_low, depth_high] (the rung below D, D],
an unsolved one's in (top cap, infinity). Summaries over the solved tasks alone ("median D of
solved tasks", "share with D <= 3 among solved") drop the unsolved, which are the deepest. The
nonparametric maximum-likelihood estimate of the distribution of such intervals is Turnbull's
(1976): its mass sits on the *innermost intervals* (a left end followed by a right end with no
other end between), found by the self-consistency (EM) iteration. When every task shares one
ladder the innermost intervals are its rungs and the estimate is the plain share of tasks per
rung, unsolved ones included; with ladders of gaps (caps skipped) it spreads the coarse intervals
over the fine ones as the likelihood says.

D is read on the ladder: the mass of an innermost interval (l, r] is D = r (the smallest cap
that reaches it), so ``share_le_3`` is the mass with r <= 3, ``share_ge_5`` the mass with r >= 5
(beyond the top included) and ``median`` the smallest r where the cumulative mass reaches one
half (null when that is beyond the top cap). Incomplete tasks (no interval yet) are left out.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl

from depthlab import schema
from depthlab._checks import check_frame, check_nonnegative_int, check_number
from depthlab._defaults import AUDIT_N_BOOT, AUDIT_SEED
from depthlab.measures.depth import TASK_KEYS

#: Columns of :func:`censored_depth`'s table (declared in :mod:`depthlab.schema`).
CENSORED_COLUMNS = schema.CENSORED_DEPTH

_STATISTICS: tuple[str, ...] = ("share_le_3", "share_ge_5", "median")


def innermost_intervals(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """(J, 2) innermost intervals (l, r] of the half-open intervals (low_i, high_i] (high may be inf).

    Examples
    --------
    >>> innermost_intervals(np.array([0, 1, 0]), np.array([1, 2, 2])).tolist()
    [[0.0, 1.0], [1.0, 2.0]]
    """
    ends = sorted(
        [(float(v), 1, "L") for v in np.asarray(low)] + [(float(v), 0, "R") for v in np.asarray(high)],
        key=lambda e: (e[0], e[1]),  # at a tie a right end comes first: (a, b] and (b, c] do not overlap
    )
    out = [(a[0], b[0]) for a, b in itertools.pairwise(ends) if a[2] == "L" and b[2] == "R"]
    return np.array(sorted(set(out)), dtype=np.float64).reshape(-1, 2)


def turnbull(
    low: np.ndarray, high: np.ndarray, weights: np.ndarray | None = None, *, tol: float = 1e-10, max_iter: int = 5000
) -> tuple[np.ndarray, np.ndarray]:
    """Turnbull's NPMLE of interval-censored data: (innermost intervals (J, 2), masses (..., J)).

    ``weights`` (..., n) counts each interval (a bootstrap's draw counts, many at once); the
    masses have its leading shape. Self-consistency: p_j <- sum_i w_i a_ij p_j / sum_k a_ik p_k / sum w.

    Examples
    --------
    One ladder: the estimate is the share per rung, the unsolved (1, inf) included.

    >>> inner, mass = turnbull(np.array([0, 0, 1, 2]), np.array([1, 1, 2, np.inf]))
    >>> inner.tolist(), mass.round(3).tolist()
    ([[0.0, 1.0], [1.0, 2.0], [2.0, inf]], [0.5, 0.25, 0.25])
    """
    low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    inner = innermost_intervals(low, high)
    contains = (inner[None, :, 0] >= low[:, None]) & (inner[None, :, 1] <= high[:, None])  # (n, J)
    w = np.ones(len(low)) if weights is None else np.asarray(weights, dtype=np.float64)
    total = w.sum(axis=-1, keepdims=True)
    mass = np.full((*w.shape[:-1], len(inner)), 1.0 / max(len(inner), 1))
    a = contains.astype(np.float64)
    for _ in range(max_iter):
        denom = mass @ a.T  # (..., n)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(w > 0, w / denom, 0.0)
            new = mass * (ratio @ a) / total
        if np.nanmax(np.abs(new - mass), initial=0.0) < tol:
            mass = new
            break
        mass = new
    return inner, mass


def _statistics(inner: np.ndarray, mass: np.ndarray) -> dict[str, np.ndarray]:
    right = inner[:, 1]
    cumulative = np.cumsum(mass[..., np.argsort(right, kind="stable")], axis=-1)
    ordered = np.sort(right)
    reached = cumulative >= 0.5 - 1e-12
    median = np.where(reached.any(axis=-1), ordered[np.argmax(reached, axis=-1)], np.inf)
    return {
        "share_le_3": mass[..., right <= 3].sum(axis=-1),
        "share_ge_5": mass[..., right >= 5].sum(axis=-1),
        "median": median,
    }


def _solved_statistics(depth: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    """The paper's solved-only figures, per row of weights (NaN where no solved task is drawn)."""
    total = weights.sum(axis=-1)
    order = np.argsort(depth, kind="stable")
    cumulative = np.cumsum(weights[..., order], axis=-1)
    # the lower median of the drawn solved tasks
    reached = cumulative >= total[..., None] / 2.0 - 1e-12
    median = depth[order][np.argmax(reached, axis=-1)].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "share_le_3": np.where(total > 0, (weights * (depth <= 3)).sum(axis=-1) / total, np.nan),
            "share_ge_5": np.where(total > 0, (weights * (depth >= 5)).sum(axis=-1) / total, np.nan),
            "median": np.where(total > 0, median, np.nan),
        }


def censored_depth(
    depth: pl.DataFrame, *, n_boot: int = AUDIT_N_BOOT, ci: float = 0.95, seed: int | None = AUDIT_SEED
) -> pl.DataFrame:
    """Per collection: share D <= 3, share D >= 5 and median D over every task (Turnbull) beside the solved-only ones.

    The ``censored`` variant counts unsolved tasks as right-censored above the top cap (module
    docstring); ``solved_only`` is the paper's figure (solved tasks only), set beside it, never in
    its place. Intervals: tasks resampled with replacement within the collection, ``n_boot``
    times, the statistic recomputed, a percentile interval; a resample with no solved task has
    no solved-only figure and is counted in ``n_degenerate``. A median beyond the top cap is null.

    Parameters
    ----------
    depth : pl.DataFrame
        A depth table (:func:`~depthlab.measures.estimate_depth`; columns dataset, task, status,
        depth, depth_low, depth_high).
    n_boot : int, default 2000
        Bootstrap resamples (0: no interval).
    ci : float, default 0.95
    seed : int or None, default 0

    Returns
    -------
    pl.DataFrame
        :data:`CENSORED_COLUMNS`, one row per collection, statistic and variant.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> depth = schema.conform(pl.DataFrame({"dataset": "d", "task": list("abcd"),
    ...     "status": ["solved", "solved", "solved", "unsolved"], "depth": [1, 2, 10, None],
    ...     "depth_low": [0, 1, 5, 80], "depth_high": [1, 2, 10, None]}), "depth")
    >>> table = censored_depth(depth, n_boot=0)
    >>> table.filter(statistic="share_le_3").select("variant", "value").rows()
    [('censored', 0.5), ('solved_only', 0.6666666666666666)]
    """
    function = "censored_depth"
    check_frame(depth, "depth", function, (*TASK_KEYS, "status", "depth", "depth_low", "depth_high"))
    n_boot = check_nonnegative_int(n_boot, "n_boot", function)
    ci = check_number(ci, "ci", function, low=0, high=1, low_open=True, high_open=True, kind="a float")
    rng = np.random.default_rng(seed)
    alpha = (1.0 - ci) / 2.0
    rows = []
    known = depth.filter(pl.col("status").is_in(("solved", "unsolved")))
    for (dataset,), group in known.sort(TASK_KEYS).group_by("dataset", maintain_order=True):
        low = group["depth_low"].cast(pl.Float64).to_numpy()
        high = group["depth_high"].cast(pl.Float64).fill_null(math.inf).to_numpy()
        n = len(low)
        solved = group["status"].to_numpy() == "solved"
        draws = np.zeros((0, n))
        if n_boot:
            draws = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(n_boot)]).astype(float)
        inner, mass = turnbull(low, high)
        point = _statistics(inner, mass)
        boot = _statistics(inner, turnbull(low, high, draws)[1]) if n_boot else None
        solved_depth = group["depth"].to_numpy()[solved].astype(np.float64)
        solved_point = _solved_statistics(solved_depth, np.ones(int(solved.sum())))
        solved_boot = _solved_statistics(solved_depth, draws[:, solved]) if n_boot else None
        for variant, est, reps, size in (
            ("censored", point, boot, n),
            ("solved_only", solved_point, solved_boot, int(solved.sum())),
        ):
            for statistic in _STATISTICS:
                value = float(est[statistic])
                ci_low = ci_high = None
                n_degenerate = 0
                if reps is not None:
                    values = reps[statistic]
                    valid = values[~np.isnan(values)]
                    n_degenerate = len(values) - len(valid)
                    if len(valid):
                        ci_low, ci_high = (
                            float(x) for x in np.quantile(valid, [alpha, 1 - alpha], method="inverted_cdf")
                        )
                rows.append(
                    {
                        "dataset": dataset,
                        "statistic": statistic,
                        "variant": variant,
                        "value": _finite(value),
                        "ci_low": _finite(ci_low),
                        "ci_high": _finite(ci_high),
                        "interval": f"percentile{round(100 * ci)}" if n_boot else None,
                        "n_tasks": size,
                        "n_unsolved": int((~solved).sum()) if variant == "censored" else 0,
                        "n_degenerate": n_degenerate,
                    }
                )
    return pl.DataFrame(rows, schema=CENSORED_COLUMNS)


def censored_distribution(depth: pl.DataFrame) -> pl.DataFrame:
    """Per collection: D's share at each cap, over every task (Turnbull) and over solved tasks only.

    The distribution :func:`censored_depth`'s statistics are read from: the ``censored`` variant's
    mass of each innermost interval, at its right end (null: beyond the top cap, the unsolved
    tasks), and the ``solved_only`` variant's share of the solved tasks at each D (the paper's).

    Parameters
    ----------
    depth : pl.DataFrame
        A depth table, as in :func:`censored_depth`.

    Returns
    -------
    pl.DataFrame
        :data:`depthlab.schema.CENSORED_DISTRIBUTION`, one row per collection, variant and D, D
        ascending (beyond the top last).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> depth = schema.conform(pl.DataFrame({"dataset": "d", "task": list("abcd"),
    ...     "status": ["solved", "solved", "solved", "unsolved"], "depth": [1, 2, 10, None],
    ...     "depth_low": [0, 1, 5, 80], "depth_high": [1, 2, 10, None]}), "depth")
    >>> censored_distribution(depth).filter(variant="censored").select("depth", "share").rows()
    [(1, 0.25), (2, 0.25), (10, 0.25), (None, 0.25)]
    """
    function = "censored_distribution"
    check_frame(depth, "depth", function, (*TASK_KEYS, "status", "depth", "depth_low", "depth_high"))
    rows: list[dict[str, object]] = []
    known = depth.filter(pl.col("status").is_in(("solved", "unsolved")))
    for (dataset,), group in known.sort(TASK_KEYS).group_by("dataset", maintain_order=True):
        low = group["depth_low"].cast(pl.Float64).to_numpy()
        high = group["depth_high"].cast(pl.Float64).fill_null(math.inf).to_numpy()
        inner, mass = turnbull(low, high)
        right = inner[:, 1]
        censored = {r: float(mass[right == r].sum()) for r in np.unique(right)}
        solved = group.filter(pl.col("status") == "solved")["depth"].to_numpy().astype(np.float64)
        solved_only = {d: float((solved == d).mean()) for d in np.unique(solved)}
        for variant, shares, size in (("censored", censored, group.height), ("solved_only", solved_only, len(solved))):
            total = 0.0
            for d in sorted(shares):
                total += shares[d]
                depth_at = None if math.isinf(d) else int(d)
                rows.append({"dataset": dataset, "variant": variant, "depth": depth_at, "share": shares[d],
                             "cumulative": total, "n_tasks": size})  # fmt: skip
    return pl.DataFrame(rows, schema=schema.CENSORED_DISTRIBUTION)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
