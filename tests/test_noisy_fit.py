"""The noisy model fitted by maximum likelihood recovers the parameters it was drawn with, and its
noise-alone draws give second-model drops only by luck (none without luck)."""

from __future__ import annotations

import numpy as np
import pytest

from depthlab.simulate.noisy import NoisyModel, counts_to_trials, draw_counts, draw_tasks
from depthlab.simulate.noisy_fit import NoisyFit, drop_share, fit_noisy_model, noise_drop_share


@pytest.fixture(scope="module")
def drawn():
    rng = np.random.default_rng(7)
    model = NoisyModel(n_tasks=400, n_models=2, luck=0.05, beyond=0.1, depth_median=4.0, depth_sigma=1.0)
    tasks = draw_tasks(model, rng)
    attempts = np.full(tasks.prob.shape, 3)
    trials = counts_to_trials(tasks, draw_counts(tasks, attempts, rng), attempts)
    return model, tasks, trials


def test_the_fit_recovers_the_slopes_luck_and_horizons_it_was_drawn_with(drawn):
    model, tasks, trials = drawn
    fit = fit_noisy_model(trials, caps=model.caps)
    assert fit.converged
    assert fit.models == tuple(tasks.models)
    assert fit.n_tasks == model.n_tasks
    assert fit.attempts == 3
    # each model's slope within 30% of the one drawn (they differ: the fit tells them apart)
    assert tasks.slope is not None
    for fitted, true in zip(fit.slopes, tasks.slope, strict=True):
        assert fitted == pytest.approx(true, rel=0.3)
    assert fit.luck == pytest.approx(model.luck, abs=0.02)
    assert fit.beyond == pytest.approx(model.beyond, abs=0.05)
    assert np.log(fit.depth_median) == pytest.approx(np.log(model.depth_median), abs=0.25)
    assert fit.depth_sigma == pytest.approx(model.depth_sigma, rel=0.25)
    assert fit.model_spread == pytest.approx(model.model_spread, abs=0.2)
    assert "luck 0.0" in fit.describe()


def test_a_fit_with_no_runs_says_so():
    empty = counts_to_trials(draw_tasks(NoisyModel(n_tasks=5), np.random.default_rng(0)),
                             np.zeros((5, 2, 8), int), np.zeros((5, 2, 8), int))  # fmt: skip
    with pytest.raises(ValueError, match="no valid capped run of \\['a'\\]"):
        fit_noisy_model(empty, models=["a"])
    with pytest.raises(ValueError, match="'models' parameter of fit_noisy_model"):
        fit_noisy_model(empty)


def _fit(luck: float) -> NoisyFit:
    return NoisyFit(models=("a", "b"), caps=(1, 2, 3, 5, 10, 20, 40, 80), slopes=(3.0, 3.0), luck=luck, beyond=0.1,
                    depth_median=4.0, depth_sigma=1.2, model_spread=0.0, log_likelihood=0.0, n_tasks=300,
                    attempts=1, converged=True)  # fmt: skip


def test_noise_alone_drops_come_from_noise_and_vanish_without_it():
    noisy = noise_drop_share(_fit(0.03), replications=4, seed=1)
    assert len(noisy) == 4
    assert 0.05 < noisy.mean() < 0.6
    # nearly noiseless (steep, no luck): two models of one horizon hardly ever disagree
    steep = NoisyFit(**{**_fit(1e-6).__dict__, "slopes": (200.0, 200.0)})
    assert noise_drop_share(steep, replications=3, seed=1).max() < 0.02
    # seeded: the same seed gives the same shares
    assert np.array_equal(noise_drop_share(_fit(0.03), replications=4, seed=1), noisy)


def test_the_observed_share_pools_every_first_model(drawn):
    _, _, trials = drawn
    share, determined = drop_share(trials)
    assert determined > 0
    assert share is not None
    assert 0 < share < 1


TRUTH = {"slopes": (2.5, 4.0), "luck": 0.04, "beyond": 0.12, "median": 5.0, "sigma": 1.1}


@pytest.mark.parametrize(("link", "horizons"), [("logistic", "normal"), ("probit", "normal"), ("logistic", "t3")])
def test_the_fit_recovers_its_parameters_from_a_generator_written_apart(link, horizons, depth_truth):
    """Issue 38: the model written again from the fit's docstring (tests/bench/depth_truth.py), not
    simulate.noisy.draw_tasks, and twice misspecified (a probit curve; t-distributed horizons).
    Bench (5 draws of 400 tasks, 2 attempts, means): slopes within 4% (probit: 14% high), luck within 0.001,
    beyond within 0.01 (t3: 0.02 high), median within 4%, sigma within 2% (t3: 25% low, the t's tails read as
    beyond), and the noise-alone drop share within 0.016 of the generator's own noise-alone runs."""
    trials = depth_truth.logistic_horizon_runs(
        400, **TRUTH, spread=0.3, attempts=2, rng=np.random.default_rng(4000), link=link, horizons=horizons
    )
    fit = fit_noisy_model(trials)
    assert fit.converged
    slope_tolerance = 0.2 if link == "probit" else 0.1
    for fitted, true in zip(fit.slopes, TRUTH["slopes"], strict=True):
        assert fitted == pytest.approx(true, rel=slope_tolerance)
    assert fit.luck == pytest.approx(TRUTH["luck"], abs=0.01)
    assert fit.beyond == pytest.approx(TRUTH["beyond"], abs=0.06)
    assert fit.depth_median == pytest.approx(TRUTH["median"], rel=0.1)
    assert fit.depth_sigma == pytest.approx(TRUTH["sigma"], rel=0.35 if horizons == "t3" else 0.1)
    assert fit.model_spread == pytest.approx(0.3, abs=0.1)


def test_the_noise_alone_share_matches_the_generators_own_noise_alone_runs(depth_truth):
    """Fitted to runs where every model sits at the task's horizon, the noise-alone share the fit predicts is
    the share of drops those runs show (bench: within 0.015 on average over 5 draws)."""
    rng = np.random.default_rng(4001)
    alone = depth_truth.logistic_horizon_runs(400, **TRUTH, spread=0.0, attempts=2, rng=rng)
    observed, _ = drop_share(alone)
    predicted = noise_drop_share(fit_noisy_model(alone), replications=6, seed=1)
    assert observed is not None
    assert predicted.mean() == pytest.approx(observed, abs=0.05)
