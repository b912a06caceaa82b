"""stats.proportion_ci and stats.adjust_p against closed forms and scipy, independently of statsmodels."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from depthlab import stats


def _wilson(k: int, n: int, z: float) -> tuple[float, float]:
    phat = k / n
    centre = (phat + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize("ci", [0.9, 0.95, 0.99])
def test_wilson_interval_is_the_closed_form(ci):
    k = np.array([0, 1, 3, 7, 10, 25])
    n = np.array([10, 10, 4, 9, 10, 60])
    low, high = stats.proportion_ci(k, n, ci=ci)
    z = sps.norm.ppf(1 - (1 - ci) / 2)
    expected = np.array([_wilson(int(a), int(b), z) for a, b in zip(k, n, strict=True)])
    assert low == pytest.approx(np.clip(expected[:, 0], 0, 1), abs=1e-12)
    assert high == pytest.approx(np.clip(expected[:, 1], 0, 1), abs=1e-12)


def test_clopper_pearson_is_the_beta_quantiles():
    k, n = np.array([0, 2, 9, 10]), np.array([10, 10, 10, 10])
    low, high = stats.proportion_ci(k, n, method="beta")
    ref_low = np.where(k == 0, 0.0, sps.beta.ppf(0.025, k, n - k + 1))
    ref_high = np.where(k == n, 1.0, sps.beta.ppf(0.975, k + 1, n - k))
    assert low == pytest.approx(ref_low, abs=1e-10)
    assert high == pytest.approx(ref_high, abs=1e-10)


def test_proportion_ci_leaves_empty_cells_missing_and_rejects_bad_input():
    low, high = stats.proportion_ci([0, 1], [0, 2])
    assert np.isnan(low[0])
    assert np.isnan(high[0])
    assert 0 < low[1] < 0.5 < high[1] < 1
    with pytest.raises(ValueError, match=r"'passes' parameter of proportion_ci must lie in \[0, n\]"):
        stats.proportion_ci([3], [2])
    with pytest.raises(ValueError, match=r"'method' parameter of proportion_ci must be one of \['wilson', 'beta'\]"):
        stats.proportion_ci([1], [2], method="wald")
    with pytest.raises(ValueError, match=r"'ci' parameter of proportion_ci must be a float in the open interval"):
        stats.proportion_ci([1], [2], ci=95)


def test_holm_and_benjamini_hochberg_by_hand():
    rng = np.random.default_rng(5)
    p = rng.uniform(0, 0.2, 9)
    m = p.size
    order = np.argsort(p)
    holm = np.empty(m)
    running = 0.0
    for rank, index in enumerate(order):  # step-down: (m - rank) * p, kept monotone, capped at 1
        running = max(running, (m - rank) * p[index])
        holm[index] = min(1.0, running)
    assert stats.adjust_p(p) == pytest.approx(holm, abs=1e-12)
    bh = np.empty(m)
    running = 1.0
    for rank in range(m - 1, -1, -1):  # step-up: p * m / (rank + 1), kept monotone from the top
        index = order[rank]
        running = min(running, p[index] * m / (rank + 1))
        bh[index] = running
    assert stats.adjust_p(p, method="fdr_bh") == pytest.approx(bh, abs=1e-12)
    assert stats.adjust_p(p, method="bonferroni") == pytest.approx(np.minimum(1, p * m), abs=1e-12)


def test_adjust_p_skips_missing_values_in_the_count():
    out = stats.adjust_p([0.01, None, float("nan"), 0.02])
    assert np.isnan(out[1])
    assert np.isnan(out[2])
    assert out[[0, 3]] == pytest.approx([0.02, 0.02])
    with pytest.raises(ValueError, match=r"'p' parameter of adjust_p must hold probabilities"):
        stats.adjust_p([1.5])
