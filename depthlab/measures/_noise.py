"""The noise model of turn-capped runs that D's interval rests on, fitted to the runs themselves.

D (:func:`depthlab.measures.estimate_depth`) reads each cell's attempts with a pass rule and takes
the smallest passing cap; under noise (a model that passes a task some times and not others, a
lucky pass below the depth) that D is not the true depth, and the ladder's interval
(``depth_low``, ``depth_high``] is only the rounding of D to the ladder. This module gives an
interval for the true depth instead. Everything below was fixed before any coverage was measured.

**The model.** Each (task, model) row of the evidence grid has a true rung ``r`` on the ladder
(0 to C - 1, or C: beyond the top cap), the model's own depth on the task. An attempt at a cap
below ``r`` passes by luck; at a cap at or above ``r`` it passes with probability ``p``. Both
vary from row to row: the row's luck rate is drawn once from a Beta distribution of mean ``luck``
and concentration ``luck_concentration`` (shared by every task and model of a collection), its
``p`` once from a Beta distribution of mean ``pass_mean[m]`` and concentration
``concentration[m]`` (per model). So a row's attempts below its rung share one luck rate and its
attempts at and above share one ``p``: the row's likelihood is a product of two beta-binomials.
The rungs of the rows are drawn independently from one distribution ``rung_share`` over the
C + 1 rungs. The task's true depth is the smallest rung over its models (the task's D is the
minimum over models; a model never run on the task still counts, at its prior rung, as it counts
in D). Cells without a valid attempt add nothing: a gapped ladder leaves the rungs between its
caps to the prior.

**The fit.** The parameters (``rung_share``, ``luck``, each model's ``pass_mean`` and
``concentration``) are fitted per collection by maximising the marginal likelihood of every row's
counts (the rungs summed out), with weak priors that keep the estimate finite on small or
degenerate data (Dirichlet(1.5) on ``rung_share``, Beta(1.5, 1.5) on ``luck`` and each
``pass_mean``, a normal prior of sd 2 on each log concentration, around log 5 for the pass
probabilities and log 20 for luck); scipy's L-BFGS-B on transformed parameters with the exact
gradient.

**The fit's uncertainty, carried.** ``draws`` parameter vectors are drawn from the normal
approximation of the fit (the inverse Hessian of the negative log posterior at the fit, on the
transformed parameters); each gives every row a posterior over its rung, P(r >= k). How the rungs
of one task's models depend on each other is left open: the task's P(depth >= k) lies between the
product of its models' P(r >= k) (rungs independent) and their minimum (rungs moving together),
Fréchet's bounds, each averaged over the draws.

**The interval** at ``level``: the shortest run of consecutive rungs [first, last] with
lower(first) - upper(last + 1) >= ``level``, where lower and upper are those two bounds on
P(depth >= k): whatever the dependence between the models' rungs, the run holds at least ``level``
of the task's depth (of equal runs, the one holding the most). It is reported as the ladder's
interval is, the true depth in (``ci_low``, ``ci_high``]: ``ci_low`` the cap below the run's lowest
rung (0 below the first), ``ci_high`` the cap of its highest rung, null when the run reaches the
rung beyond the top cap. Its width is counted in rungs (the run's length, beyond the top counting
as one).

**What it claims.** Over the tasks of a collection, the true depth lies in the interval in at least
``level`` of the tasks: tested on generators written apart from this one
(``tests/bench/depth_truth.py``, used by ``tests/test_measures.py`` and
``tests/bench/bench_depth_interval.py``), whose pass probabilities, luck and curves differ from the
model's.

**Two revisions, after looking at coverage** (each reported, neither hidden). (1) The first model
had one luck rate for every row (a binomial below the rung). On the 54 scenarios of the bench's
grid (300 tasks each, Beta pass probabilities) its 90% interval covered 0.84-1.00 of tasks, below
0.9 where the generator's luck varies by task (uniform in 0-20%) and three models add their lucky
passes: 0.837 at 3 attempts with gaps, 0.873 and 0.887 at 1 attempt. Luck became Beta-distributed
per row, as the pass probability already was: the minimum rose to 0.893. (2) The task's depth was
then the minimum over models with their rungs independent (the product of the P(r >= k)), and the
interval the shortest run holding ``level`` of that one distribution. At 200 tasks, 1 attempt, 3
models and 10% luck it covered 0.80-0.92 (three seeds: 0.875 on average, 0.918 with a fixed luck
rate): the generator's models share most of their depth, so independence makes a high minimum
too unlikely. The interval became the one that holds under any dependence (above): 0.935-0.97 on
the same scenarios, a median width one rung more at 1 attempt (5 against 4), the same at 3.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from depthlab._defaults import AUDIT_SEED

#: Parameter vectors drawn from the fit's normal approximation (a task's mass at a rung moves by under 0.01
#: between seeds at this many).
DRAWS = 100
#: Weak priors of the fit (module docstring): Dirichlet and Beta pseudo-counts, and the log concentration's.
_RUNG_PSEUDO = 0.5
_SHARE_PSEUDO = 0.5
_LOG_CONCENTRATION_PRIOR = float(np.log(5.0))  # a pass probability's, around log 5
_LOG_LUCK_CONCENTRATION_PRIOR = float(np.log(20.0))  # luck's, around log 20 (a rate of 5% varies by about 5%)
_LOG_CONCENTRATION_SD = 2.0
#: Bounds of a log concentration (0.2: p nearly 0 or 1 per task; 1,000: every task at the mean).
_LOG_CONCENTRATION_BOUNDS = (float(np.log(0.2)), float(np.log(1000.0)))
_LOGIT_BOUND = 9.0  # a share within about 1e-4 of 0 or 1
_HESSIAN_STEP = 1e-4
_CHUNK_CELLS = 200_000  # draws x rows evaluated at once (x rungs: about 15 MB a array)
_MIN_CURVATURE = 1e-4  # an eigenvalue below this is a direction the data do not inform: held at this


@dataclass(frozen=True)
class NoiseFit:
    """The noise model fitted to one collection's capped runs (:mod:`depthlab.measures._noise`).

    ``theta`` is the transformed parameter vector (rung logits against the last rung, logit luck and
    its log concentration, then per model logit pass mean and log concentration), ``covariance`` its
    normal approximation's.
    """

    theta: np.ndarray
    covariance: np.ndarray
    n_rungs: int
    n_models: int
    n_rows: int
    converged: bool

    @property
    def rung_share(self) -> np.ndarray:
        return _softmax(self.theta[: self.n_rungs - 1])

    @property
    def luck(self) -> float:
        """The mean luck rate (a row's rate is Beta-distributed around it)."""
        return float(_expit(self.theta[self.n_rungs - 1]))

    @property
    def luck_concentration(self) -> float:
        return float(np.exp(self.theta[self.n_rungs]))

    @property
    def pass_mean(self) -> np.ndarray:
        return _expit(self.theta[self.n_rungs + 1 :: 2])

    @property
    def concentration(self) -> np.ndarray:
        return np.exp(self.theta[self.n_rungs + 2 :: 2])


def _expit(x: np.ndarray | float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


def _softmax(free: np.ndarray) -> np.ndarray:
    logits = np.concatenate([free, np.zeros((*free.shape[:-1], 1))], axis=-1)
    logits = logits - logits.max(axis=-1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class _Rows:
    """The distinct rows' counts split at each rung r (arrays (rows, C + 1)): passes and failures below r, at and
    above; each distinct (model, counts) row once, with how many (task, model) rows it stands for."""

    pass_below: np.ndarray
    fail_below: np.ndarray
    pass_above: np.ndarray
    fail_above: np.ndarray
    model: np.ndarray  # (rows,) the row's model index
    count: np.ndarray  # (rows,) how many (task, model) rows hold these counts
    inverse: np.ndarray  # (tasks * models,) each (task, model) row's distinct row


def _split_counts(n_pass: np.ndarray, n_valid: np.ndarray, *, run_only: bool = False) -> _Rows:
    """Rows of (tasks, models, caps) counts, made distinct, split at every rung (rung C: every cap below).

    Rows holding the same counts have the same likelihood, so each is computed once (a collection's
    rows repeat a few hundred patterns). ``run_only`` leaves out the rows without a valid attempt.
    """
    t, m, c = n_pass.shape
    model = np.tile(np.arange(m), t)[:, None]
    keys = np.concatenate([model, n_pass.reshape(t * m, c), n_valid.reshape(t * m, c)], axis=1).astype(np.int64)
    if run_only:
        keys = keys[n_valid.reshape(t * m, c).sum(axis=1) > 0]
    distinct, inverse, count = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    passes = distinct[:, 1 : 1 + c].astype(np.float64)
    fails = distinct[:, 1 + c :].astype(np.float64) - passes
    zero = np.zeros((len(distinct), 1))
    pass_below = np.concatenate([zero, np.cumsum(passes, axis=1)], axis=1)
    fail_below = np.concatenate([zero, np.cumsum(fails, axis=1)], axis=1)
    return _Rows(
        pass_below=pass_below,
        fail_below=fail_below,
        pass_above=pass_below[:, -1:] - pass_below,
        fail_above=fail_below[:, -1:] - fail_below,
        model=distinct[:, 0],
        count=count.astype(np.float64),
        inverse=inverse.reshape(-1),
    )


def _rising(start: np.ndarray, n: int, power: int) -> np.ndarray:
    """Sums over i < k of log(start + i) (``power`` 0) or of 1 / (start + i) (``power`` -1), for k = 0..n.

    Along a new last axis: lnB(a + K, b + F) - lnB(a, b) and its derivatives at integer counts are
    read off these tables, so no Beta or digamma function is evaluated per row.
    """
    terms = start[..., None] + np.arange(n)[None, :]
    steps = np.log(terms) if power == 0 else 1.0 / terms
    return np.concatenate([np.zeros((*start.shape, 1)), np.cumsum(steps, axis=-1)], axis=-1)


def _beta_binomial(
    mean: np.ndarray, concentration: np.ndarray, group: np.ndarray, passes: np.ndarray, fails: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """lnB(a + K, b + F) - lnB(a, b) per row and rung, and its derivatives in a and b.

    ``mean`` and ``concentration`` are (..., groups) (leading axes: parameter draws), ``group``
    (rows,) each row's group, ``passes`` and ``fails`` (rows, rungs) integer counts: the
    probability of a row's attempts when they share one probability drawn from Beta(a, b),
    a = mean x concentration, b = (1 - mean) x concentration. Results are (..., rows, rungs).
    """
    a, b = mean * concentration, (1.0 - mean) * concentration
    most = int((passes + fails).max(initial=0))
    g, both = group[:, None], passes + fails
    value = (
        _rising(a, most, 0)[..., g, passes] + _rising(b, most, 0)[..., g, fails] - _rising(a + b, most, 0)[..., g, both]
    )
    total = _rising(a + b, most, -1)[..., g, both]
    return value, _rising(a, most, -1)[..., g, passes] - total, _rising(b, most, -1)[..., g, fails] - total


def _unpack(theta: np.ndarray, n_rungs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rung shares, and the Beta means and concentrations of the groups: luck first, then each model."""
    share = _softmax(theta[..., : n_rungs - 1])
    mean = _expit(theta[..., n_rungs - 1 :: 2])
    concentration = np.exp(theta[..., n_rungs::2])
    return share, mean, concentration


def _row_log_likelihood(theta: np.ndarray, rows: _Rows) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """log P(row's counts | rung r) per distinct row and rung (..., rows, rungs), and the gradient's pieces.

    ``theta`` may carry leading axes (parameter draws); the rung count is the rows' own.
    """
    n_rungs = rows.pass_below.shape[1]
    _, mean, concentration = _unpack(theta, n_rungs)
    luck_group = np.zeros(len(rows.model), dtype=np.int64)
    as_int = {
        name: getattr(rows, name).astype(np.int64) for name in ("pass_below", "fail_below", "pass_above", "fail_above")
    }
    lucky, la, lb = _beta_binomial(
        mean[..., :1], concentration[..., :1], luck_group, as_int["pass_below"], as_int["fail_below"]
    )
    passing, pa, pb = _beta_binomial(
        mean[..., 1:], concentration[..., 1:], rows.model, as_int["pass_above"], as_int["fail_above"]
    )
    return lucky + passing, (la, lb, pa, pb)


def _negative_log_posterior(theta: np.ndarray, rows: _Rows, n_rungs: int, n_models: int) -> tuple[float, np.ndarray]:
    """The objective of the fit and its exact gradient (module docstring)."""
    share, mean, kappa = _unpack(theta, n_rungs)
    ll, (la, lb, pa, pb) = _row_log_likelihood(theta, rows)
    joint = ll + np.log(share)[None, :]
    top = joint.max(axis=1, keepdims=True)
    marginal = top[:, 0] + np.log(np.exp(joint - top).sum(axis=1))
    # the rows' posteriors over their rungs, each distinct row counted as often as it occurs
    weight = np.exp(joint - marginal[:, None]) * rows.count[:, None]
    value = float((marginal * rows.count).sum())
    grad = np.zeros_like(theta)
    # rung logits (the last rung's fixed at 0): the softmax's gradient, plus the Dirichlet prior's
    grad[: n_rungs - 1] = (weight.sum(axis=0) - rows.count.sum() * share)[:-1] + _RUNG_PSEUDO * (
        1.0 - n_rungs * share[:-1]
    )
    value += _RUNG_PSEUDO * float(np.log(share).sum())
    # per group (luck, then each model): d/da and d/db summed over its rows, then through the
    # transforms (logit mean, log concentration), plus the priors
    by_a = np.concatenate([[(weight * la).sum()], np.bincount(rows.model, (weight * pa).sum(axis=1), n_models)])
    by_b = np.concatenate([[(weight * lb).sum()], np.bincount(rows.model, (weight * pb).sum(axis=1), n_models)])
    centre = np.array([_LOG_LUCK_CONCENTRATION_PRIOR, *[_LOG_CONCENTRATION_PRIOR] * n_models])
    log_kappa = theta[n_rungs::2]
    grad[n_rungs - 1 :: 2] = (by_a - by_b) * kappa * mean * (1.0 - mean) + _SHARE_PSEUDO * (1.0 - 2.0 * mean)
    grad[n_rungs::2] = (
        by_a * mean * kappa + by_b * (1.0 - mean) * kappa - (log_kappa - centre) / _LOG_CONCENTRATION_SD**2
    )
    value += float((_SHARE_PSEUDO * (np.log(mean) + np.log1p(-mean))).sum())
    value -= float(((log_kappa - centre) ** 2).sum() / (2.0 * _LOG_CONCENTRATION_SD**2))
    return -value, -grad


def _bounds(n_rungs: int, n_models: int) -> list[tuple[float, float]]:
    rungs = [(-3 * _LOGIT_BOUND, 3 * _LOGIT_BOUND)] * (n_rungs - 1)
    luck = [(-_LOGIT_BOUND, -0.05), _LOG_CONCENTRATION_BOUNDS]
    return rungs + luck + [(-_LOGIT_BOUND, _LOGIT_BOUND), _LOG_CONCENTRATION_BOUNDS] * n_models


def fit_noise(n_pass: np.ndarray, n_valid: np.ndarray) -> NoiseFit:
    """Fit the model (module docstring) to counts of shape (tasks, models, caps); rows never run add nothing.

    Examples
    --------
    Two models, 300 tasks at rung 2 or beyond, 3 attempts per cell, p = 0.8 at and above the rung,
    5% luck below:

    >>> rng = np.random.default_rng(0)
    >>> rung = np.where(rng.random(300) < 0.8, 2, 8)
    >>> p = np.where(np.arange(8)[None, None, :] >= rung[:, None, None], 0.8, 0.05) * np.ones((1, 2, 1))
    >>> n_valid = np.full(p.shape, 3)
    >>> fit = fit_noise(rng.binomial(n_valid, p), n_valid)
    >>> round(fit.luck, 2), fit.pass_mean.round(1).tolist(), fit.rung_share[[2, 8]].round(1).tolist()
    (0.05, [0.8, 0.8], [0.7, 0.3])
    """
    from scipy.optimize import minimize

    _, m, c = n_pass.shape
    n_rungs = c + 1
    rows = _split_counts(n_pass, n_valid, run_only=True)
    luck = [np.log(0.05 / 0.95), _LOG_LUCK_CONCENTRATION_PRIOR]
    start = np.concatenate([np.zeros(n_rungs - 1), luck, np.tile([np.log(0.7 / 0.3), _LOG_CONCENTRATION_PRIOR], m)])
    bounds = _bounds(n_rungs, m)
    result = minimize(
        _negative_log_posterior, start, args=(rows, n_rungs, m), jac=True, method="L-BFGS-B", bounds=bounds
    )
    theta = result.x
    covariance = _covariance(theta, rows, n_rungs, m)
    return NoiseFit(theta, covariance, n_rungs, m, int(rows.count.sum()), bool(result.success))


def _covariance(theta: np.ndarray, rows: _Rows, n_rungs: int, n_models: int) -> np.ndarray:
    """The inverse Hessian of the objective at ``theta`` (central differences of the exact gradient)."""
    k = len(theta)
    hessian = np.zeros((k, k))
    for i in range(k):
        step = np.zeros(k)
        step[i] = _HESSIAN_STEP
        up = _negative_log_posterior(theta + step, rows, n_rungs, n_models)[1]
        down = _negative_log_posterior(theta - step, rows, n_rungs, n_models)[1]
        hessian[i] = (up - down) / (2 * _HESSIAN_STEP)
    hessian = (hessian + hessian.T) / 2
    values, vectors = np.linalg.eigh(hessian)
    values = np.maximum(values, _MIN_CURVATURE)
    return (vectors / values) @ vectors.T


def _log_normalise(joint: np.ndarray) -> np.ndarray:
    """Posterior weights from log joint probabilities along the last axis."""
    top = joint.max(axis=-1, keepdims=True)
    weights = np.exp(joint - top)
    return weights / weights.sum(axis=-1, keepdims=True)


def depth_survival(
    fit: NoiseFit, n_pass: np.ndarray, n_valid: np.ndarray, *, draws: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on each task's P(true depth >= rung k), (tasks, C + 1) each, the fit's uncertainty carried.

    Each row's posterior over its rung is the model's; how the rungs of one task's models depend on
    each other is left open, so P(min over models >= k) is bounded by the product of the models'
    P(r >= k) (independent rungs) below and their minimum (rungs moving together) above (Fréchet's
    bounds). Both are averaged over the parameter draws.
    """
    t, m, _ = n_pass.shape
    rows = _split_counts(n_pass, n_valid)
    low, high = np.array(_bounds(fit.n_rungs, fit.n_models)).T
    thetas = rng.multivariate_normal(fit.theta, fit.covariance, size=draws, method="eigh")
    thetas = np.clip(thetas, low, high)
    lower, upper = np.zeros((t, fit.n_rungs)), np.zeros((t, fit.n_rungs))
    # chunks of draws bound the arrays held at once: (draws, distinct rows, rungs) and (draws, tasks, models, rungs)
    for chunk in np.array_split(thetas, min(draws, max(1, draws * max(len(rows.count), t * m) // _CHUNK_CELLS))):
        ll, _ = _row_log_likelihood(chunk, rows)  # (draws, distinct rows, rungs)
        joint = ll + np.log(_softmax(chunk[:, : fit.n_rungs - 1]))[:, None, :]
        at_least = np.cumsum(_log_normalise(joint)[..., ::-1], axis=-1)[..., ::-1]  # P(r >= k) per row
        per_model = at_least[:, rows.inverse].reshape(len(chunk), t, m, fit.n_rungs)
        lower += per_model.prod(axis=2).sum(axis=0)
        upper += per_model.min(axis=2).sum(axis=0)
    return np.clip(lower / draws, 0.0, 1.0), np.clip(upper / draws, 0.0, 1.0)


def robust_interval(lower: np.ndarray, upper: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The shortest run of rungs [first, last] with lower[first] - upper[last + 1] >= level, per task.

    ``lower`` and ``upper`` bound P(depth >= k) (:func:`depth_survival`): whatever the dependence
    between the models' rungs, P(first <= depth <= last) is at least that difference. Of runs equally
    short, the one holding the most (then the lowest).

    Examples
    --------
    Independent, the models put 0.95 of the task's depth at rungs 1-2; moving together, they leave
    0.2 above rung 2, so the run must reach rung 3:

    >>> lower = np.array([[1.0, 0.97, 0.4, 0.02, 0.0]])
    >>> upper = np.array([[1.0, 0.99, 0.6, 0.2, 0.01]])
    >>> robust_interval(lower, upper, 0.9)
    (array([1]), array([3]))
    """
    n_rungs = lower.shape[1]
    upper_next = np.concatenate([upper, np.zeros((len(upper), 1))], axis=1)
    first, last = np.triu_indices(n_rungs)
    held = lower[:, first] - upper_next[:, last + 1]
    width = (last - first + 1).astype(np.float64)
    score = np.where(held >= level - 1e-9, width - held / 2.0, np.inf)
    best = np.argmin(score, axis=1)
    return first[best], last[best]


def true_depth_rungs(
    n_pass: np.ndarray, n_valid: np.ndarray, level: float, *, draws: int = DRAWS, seed: int = AUDIT_SEED
) -> tuple[np.ndarray, np.ndarray]:
    """The first and last rung of each task's interval for its true depth (module docstring), (tasks,) each.

    ``n_pass`` and ``n_valid`` are one collection's counts, (tasks, models, caps). With no valid
    attempt at all nothing is known: every interval is the whole ladder and beyond.
    """
    t, _, c = n_pass.shape
    if not n_valid.any():
        return np.zeros(t, dtype=np.int64), np.full(t, c, dtype=np.int64)
    fit = fit_noise(n_pass, n_valid)
    lower, upper = depth_survival(fit, n_pass, n_valid, draws=draws, rng=np.random.default_rng(seed))
    return robust_interval(lower, upper, level)
