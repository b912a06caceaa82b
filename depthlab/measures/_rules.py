"""The pass rules on arrays of counts: which cells of a (model, cap) row pass, and the model's D.

Shared by :func:`depthlab.measures.estimate_depth` (every rule's cell states, :func:`cell_states`), the
``attempts="auto"`` planner (what one more attempt could change) and the noisy simulation's rule
table (thousands of tasks at once, no frame per replication). Every function takes ``n_pass`` and
``n_valid`` of shape (..., C): the last axis is the cap ladder, increasing.

The rules, fixed before any result was looked at:

* ``"any"``: a cap passes when some valid attempt passes (the paper's rule).
* ``"majority"``: a cap passes when at least half of its valid attempts pass.
* ``"isotonic"``: P(pass | cap) is fitted non-decreasing in the cap by weighted least squares
  (isotonic regression of the attempts' outcomes, each attempt weight 1); a cap passes when its
  fitted P is at least ``q`` (0.5 by default), in the manner of a time horizon read off a fitted
  success curve. Caps with no valid attempt take no part in the fit.

The rules' names are :data:`depthlab._checks.PASS_RULES` (the public functions validate against
it, and this module dispatches on it); each rule is written here once.
"""

from __future__ import annotations

import numpy as np

from depthlab._checks import PASS_RULES

#: A cell's state in :func:`cell_states`: decided pass, decided fail, or still missing.
PASS, FAIL, MISSING = 1, 0, -1

#: Floating slack when a fitted share is compared with q (1/3 + 1/6 must count as 1/2).
_EPS = 1e-9


def isotonic_fit(n_pass: np.ndarray, n_valid: np.ndarray) -> np.ndarray:
    """Weighted isotonic (non-decreasing) fit of n_pass / n_valid along the last axis; NaN where n_valid = 0.

    The max-min formula of isotonic regression: at cap i the fit is the largest over a <= i of the
    smallest over b >= i of the pooled share sum(n_pass[a..b]) / sum(n_valid[a..b]) (Barlow et al.
    1972, thm 1.4.4), which equals pool-adjacent-violators. Caps without attempts add nothing to
    any pool, so they drop out of the fit.

    Examples
    --------
    >>> isotonic_fit(np.array([0, 1, 0, 3]), np.array([3, 3, 3, 3])).round(3).tolist()
    [0.0, 0.167, 0.167, 1.0]
    """
    passes = np.asarray(n_pass, dtype=np.float64)
    valid = np.asarray(n_valid, dtype=np.float64)
    c = passes.shape[-1]
    cum_p = np.concatenate([np.zeros((*passes.shape[:-1], 1)), np.cumsum(passes, axis=-1)], axis=-1)
    cum_v = np.concatenate([np.zeros((*valid.shape[:-1], 1)), np.cumsum(valid, axis=-1)], axis=-1)
    # pooled[..., a, b] = share over caps a..b (inclusive); NaN where no attempt lies in a..b
    a_idx, b_idx = np.triu_indices(c)
    pooled = np.full((*passes.shape[:-1], c, c), np.nan)
    num = cum_p[..., b_idx + 1] - cum_p[..., a_idx]
    den = cum_v[..., b_idx + 1] - cum_v[..., a_idx]
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled[..., a_idx, b_idx] = np.where(den > 0, num / den, np.nan)
    fitted = np.full(passes.shape, np.nan)
    for i in range(c):
        # smallest over b >= i for each a <= i, then largest over a (an empty pool is ignored)
        block = pooled[..., : i + 1, i:]
        low = np.where(np.isnan(block), np.inf, block).min(axis=-1)
        low = np.where(np.isinf(low), -np.inf, low)
        fitted[..., i] = low.max(axis=-1)
    fitted[valid == 0] = np.nan
    return fitted


def cell_passes(n_pass: np.ndarray, n_valid: np.ndarray, rule: str, q: float = 0.5) -> np.ndarray:
    """Boolean (..., C): the cap passes under ``rule`` (False where it has no valid attempt)."""
    passes = np.asarray(n_pass)
    valid = np.asarray(n_valid)
    if rule == "any":
        return passes > 0
    if rule == "majority":
        return (valid > 0) & (2 * passes >= valid)
    if rule == "isotonic":
        fitted = isotonic_fit(passes, valid)
        return (valid > 0) & (np.nan_to_num(fitted, nan=-1.0) >= q - _EPS)
    raise ValueError(f"unknown pass rule {rule!r}; expected one of {PASS_RULES}")


def cell_states(n_pass: np.ndarray, n_valid: np.ndarray, rule: str, attempts: int = 1, q: float = 0.5) -> np.ndarray:
    """Int8 (..., C): each cell :data:`PASS`, :data:`FAIL` or :data:`MISSING` when ``attempts`` are planned per cell.

    A cell with ``attempts`` valid trials or more is decided by :func:`cell_passes`. A cell with
    fewer is decided early only when the attempts still missing cannot change its outcome: under
    ``"any"`` one pass decides it; under ``"majority"`` passes (or failures) already over half of
    ``attempts``; under ``"isotonic"`` never (every other cap's attempts move its fitted share).

    Examples
    --------
    Three attempts planned: one pass decides ``any``; two failures of three decide ``majority``.

    >>> n_pass, n_valid = np.array([1, 0, 0]), np.array([1, 2, 0])
    >>> cell_states(n_pass, n_valid, "any", attempts=3).tolist()
    [1, -1, -1]
    >>> cell_states(n_pass, n_valid, "majority", attempts=3).tolist()
    [-1, 0, -1]
    """
    passes = np.asarray(n_pass)
    valid = np.asarray(n_valid)
    decided = cell_passes(passes, valid, rule, q)
    state = np.where(valid >= attempts, np.where(decided, PASS, FAIL), MISSING).astype(np.int8)
    if rule == "any":
        state[(valid < attempts) & (passes > 0)] = PASS
    elif rule == "majority":
        early = valid < attempts
        state[early & (2 * passes >= attempts)] = PASS
        state[early & (2 * (valid - passes) > attempts)] = FAIL
    return state


def model_depth_index(n_pass: np.ndarray, n_valid: np.ndarray, rule: str, q: float = 0.5) -> np.ndarray:
    """Index on the ladder of the smallest passing cap, per row; C (one past the top) when none passes.

    Examples
    --------
    One lucky pass in three at cap 2 (index 1), every attempt passing at cap 5 (index 3):

    >>> n_pass, n_valid = np.array([0, 1, 0, 3]), np.array([3, 3, 3, 3])
    >>> [int(model_depth_index(n_pass, n_valid, rule)) for rule in ("any", "majority", "isotonic")]
    [1, 3, 3]
    """
    passing = cell_passes(n_pass, n_valid, rule, q)
    c = passing.shape[-1]
    return np.where(passing.any(axis=-1), passing.argmax(axis=-1), c)
