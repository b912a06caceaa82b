"""Nulls of pass ~ D | W where pass rate and depth both follow work closely (issue 44), written apart from depthlab.

What "partial correlation 0 on ranks" means here. The audit's test is of the partial *Spearman*
correlation: the partial correlation of the columns' ranks, whose population value is the partial
correlation computed from the three population Spearman correlations (Pearson correlations of the
copula variables U = F(X)). Two nulls are different things:

* conditional independence (pass and D independent given W: what a scientist means by "D adds
  nothing to W"), and
* a zero population partial Spearman (what the statistic estimates).

The first does not give the second: with D = f(W) + noise and pass = g(W) + noise for monotone f,
g, the copula variables' regressions on U_W are not linear in general, their linear residuals share
the curvature, and the population partial Spearman is not 0; a test of it *should* reject more
often as n grows there (power, not size). So the generators below are built on the copula scale,
where both notions can be stated, and margins are applied afterwards (ranks ignore them):

* :func:`mixture_null` -- exact. U_D = U_W with probability pi, else an independent uniform; U_P
  likewise with independent coins and uniforms. Each U is uniform, E[U_D | U_W] = pi U_W +
  (1 - pi)/2 is linear, D and pass are conditionally independent given W, so Spearman(W, D) =
  Spearman(W, pass) = pi, Spearman(D, pass) = pi^2 and the population partial Spearman is exactly 0.
  Its residuals are heavy-tailed (most tasks sit on W's rank, a tenth anywhere) and their spread
  grows towards the ends of W.
* :func:`gaussian_null` -- conditional independence through a Gaussian copula: latent normals
  Z_D = rho Z_W + noise, Z_P = -(rho Z_W + noise), rho = 2 sin(pi 0.9 / 6) so that both Spearman
  correlations with W are 0.9 in magnitude (Spearman = (6/pi) asin(rho/2) for a normal pair). Its
  population partial Spearman is not exactly 0 but :data:`GAUSSIAN_PARTIAL_SPEARMAN` = -0.0077
  (Spearman(D, pass) = -(6/pi) asin(rho^2/2) = -0.8115 against (-0.9)(0.9) = -0.81): against the test's
  spread (about 1/sqrt(n - 3)) that moves the rejection rate at 0.05 by under 0.05 points up to
  n = 50. Its rank residuals are compressed at the ends of W (ranks are bounded) and spread in the
  middle, for D and pass alike: the heteroscedasticity that a permutation of residuals cannot see.
  This is the issue's regime ("both correlate about 0.9 with work"), on raw values an exact
  linear-normal null.

Margins: W lognormal (turns of work), D exponential in its latent (deep tasks rare), pass rate a
logistic of its latent; :func:`ladder_null` puts the Gaussian null's D on depthlab's ladder of caps
(ties; the population partial Spearman of tied margins is not computed here: a variant).

:func:`correlation_pvalue` is the test as it was before issue 44 (Freedman-Lane permuting the
plain partial correlation), written from the definition, for the before/after comparison of
``bench_permutation_size.py`` and ``tests/test_stats.py``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import stats as scipy_stats

SPEARMAN_WITH_WORK = 0.9
RHO = 2 * math.sin(math.pi * SPEARMAN_WITH_WORK / 6)  # the latent normal correlation whose Spearman is 0.9
_SPEARMAN_D_PASS = -(6 / math.pi) * math.asin(RHO**2 / 2)
GAUSSIAN_PARTIAL_SPEARMAN = (_SPEARMAN_D_PASS + SPEARMAN_WITH_WORK**2) / (1 - SPEARMAN_WITH_WORK**2)
LADDER = (1, 2, 3, 5, 10, 20, 40, 80)
COLUMNS = ("pass_rate", "depth", "work")


def gaussian_null(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 3) pass rate, depth, work: Gaussian copula, D and pass independent given W, |Spearman| 0.9 with W."""
    z_w = rng.normal(size=n)
    spread = math.sqrt(1 - RHO**2)
    z_d = RHO * z_w + spread * rng.normal(size=n)
    z_p = RHO * z_w + spread * rng.normal(size=n)
    return np.column_stack([1 / (1 + np.exp(1.5 * z_p)), np.exp(0.9 * z_d), np.exp(2.0 + 0.8 * z_w)])


def mixture_null(rng: np.random.Generator, n: int, pi: float = SPEARMAN_WITH_WORK) -> np.ndarray:
    """(n, 3) pass rate, depth, work: copula mixture, population partial Spearman exactly 0, Spearman pi with W."""
    u_w = rng.random(n)
    u_d = np.where(rng.random(n) < pi, u_w, rng.random(n))
    u_p = np.where(rng.random(n) < pi, u_w, rng.random(n))
    return np.column_stack([1 - u_p, -np.log1p(-u_d), np.exp(2.0 + 0.8 * scipy_stats.norm.ppf(u_w))])


def ladder_null(rng: np.random.Generator, n: int) -> np.ndarray:
    """:func:`gaussian_null` with D cut onto the ladder (shares 30/20/15/15/10/5/3/2%): ties in D."""
    values = gaussian_null(rng, n)
    cuts = 0.9 * scipy_stats.norm.ppf([0.3, 0.5, 0.65, 0.8, 0.9, 0.95, 0.98])  # log D = 0.9 Z_D, Z_D ~ N(0, 1)
    values[:, 1] = np.asarray(LADDER)[np.searchsorted(cuts, np.log(values[:, 1]))]
    return values


NULLS = {"gaussian": gaussian_null, "mixture": mixture_null, "ladder": ladder_null}


def correlation_pvalue(values: np.ndarray, n_perm: int, rng: np.random.Generator) -> float:
    """Freedman-Lane on ranks permuting the plain partial correlation (depthlab before issue 44).

    Column 0 is x, column 1 y (its reduced-model residuals permuted), the rest covariates. Every
    permutation when n! <= n_perm (p = share at least as extreme), else n_perm random ones and
    (1 + count) / (1 + n_perm). NaN when x or y is collinear with the covariates.
    """
    ranks = scipy_stats.rankdata(values, axis=0)
    n = len(ranks)
    design = np.column_stack([np.ones(n), ranks[:, 2:]])
    projector = design @ np.linalg.pinv(design)
    x = ranks[:, 0] - projector @ ranks[:, 0]
    e = ranks[:, 1] - projector @ ranks[:, 1]
    if x @ x < 1e-9 or e @ e < 1e-9:
        return math.nan
    exact = math.factorial(n) <= n_perm
    every = np.array(list(itertools.permutations(range(n)))) if exact else None
    orders = every if every is not None else np.argsort(rng.random((n_perm, n)), axis=1)
    permuted = e[orders] - e[orders] @ projector.T
    stars = np.abs(permuted @ x) / np.sqrt((permuted**2).sum(axis=1) * (x @ x))
    observed = abs(x @ e) / math.sqrt((x @ x) * (e @ e))
    count = int((stars >= observed - 1e-9).sum())
    return count / len(orders) if exact else (1 + count) / (1 + len(orders))


def wilson(successes: int, trials: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson's 95% interval of a binomial proportion."""
    if not trials:
        return math.nan, math.nan
    share = successes / trials
    centre = (share + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return centre - half, centre + half
