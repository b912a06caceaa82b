"""depthlab.stats against independent references: R (run afresh), pingouin, scipy, statsmodels, simulation."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pingouin as pg
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats as scipy_stats
from statsmodels.stats.descriptivestats import sign_test as statsmodels_sign_test

from depthlab import stats
from depthlab.stats._engine import _spearman_statistic


@pytest.fixture(scope="module")
def ppcor_data() -> pd.DataFrame:
    """pingouin's example data for partial_corr (n = 30), one data set given to tests/r/ppcor_reference.R."""
    return pg.read_dataset("partial_corr")


R_SCRIPT = Path(__file__).parent / "r" / "ppcor_reference.R"
R_COVARS = (("cv1",), ("cv1", "cv2"), ("cv1", "cv2", "cv3"))
TIED_COVARS = (("z",), ("z", "w"), ("z", "w", "v"))


def _rscript() -> str:
    """The Rscript on PATH; without one the R reference is skipped, or fails under DEPTHLAB_REQUIRE_R=1 (CI)."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        if os.environ.get("DEPTHLAB_REQUIRE_R") == "1":
            pytest.fail("DEPTHLAB_REQUIRE_R=1 but Rscript is not on PATH (make r installs r-base-core)")
        pytest.skip("Rscript not found: the R reference is not run (make r installs r-base-core)")
    return rscript


def _run_r(rscript: str, script: Path, folder: Path, cases: list[dict[str, str]], timeout: float) -> pd.DataFrame:
    """A reference script of tests/r run afresh on ``cases`` (written to ``folder``/cases.csv): one row per case."""
    pd.DataFrame(cases).to_csv(folder / "cases.csv", index=False)
    done = subprocess.run(
        [rscript, str(script), str(folder / "cases.csv"), str(folder / "out.csv")],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = pd.read_csv(folder / "out.csv", dtype={"id": str})
    assert len(out) == len(cases)
    return out


@pytest.fixture(scope="module")
def r_reference(ppcor_data, tmp_path_factory) -> dict[tuple, tuple[float, float, int, int]]:
    """Fresh output of tests/r/ppcor_reference.R (base R): case -> (r, p, n, k).

    Cases: (data, kind, covar) with data "ppcor" (pingouin's partial_corr data set) or
    "tied<seed>" (:func:`tied_frame`), kind "partial" or "semipartial", Spearman throughout.
    Skipped without Rscript, unless DEPTHLAB_REQUIRE_R=1 (CI), where that is a failure.
    """
    rscript = _rscript()
    folder = tmp_path_factory.mktemp("r")
    frames = {"ppcor": (ppcor_data, R_COVARS)} | {f"tied{seed}": (tied_frame(seed), TIED_COVARS) for seed in range(3)}
    cases = []
    for name, (frame, covars) in frames.items():
        frame.to_csv(folder / f"{name}.csv", index=False)
        for kind in ("partial", "semipartial"):
            for covar in covars:
                cases.append(
                    {
                        "id": "|".join([name, kind, *covar]),
                        "data": str(folder / f"{name}.csv"),
                        "x": "x",
                        "y": "y",
                        "covar": ";".join(covar),
                        "method": "spearman",
                        "kind": kind,
                    }
                )
    out = _run_r(rscript, R_SCRIPT, folder, cases, timeout=120)
    return {
        (name, kind, tuple(covar)): (float(row.r), float(row.p), int(row.n), int(row.k))
        for row in out.itertuples()
        for name, kind, *covar in [row.id.split("|")]
    }


def tied_frame(seed: int, n: int = 50) -> pd.DataFrame:
    """Random data with many ties in every column (small integer ranges) and some dependence."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 5, n)
    w = rng.integers(0, 4, n)
    x = z + rng.integers(0, 4, n)
    y = x // 2 + w + rng.integers(0, 3, n)
    return pd.DataFrame({"x": x, "y": y, "z": z, "w": w, "v": rng.normal(size=n).round(1)})


def naive_partial_spearman(data: np.ndarray) -> float:
    """Independent statistic for scipy.stats.bootstrap: rank with scipy, invert the correlation matrix."""
    ranks = scipy_stats.rankdata(data, axis=0)
    precision = np.linalg.inv(np.corrcoef(ranks.T))
    return -precision[0, 1] / math.sqrt(precision[0, 0] * precision[1, 1])


# ---------------------------------------------------------------------------------------------
# point estimates and p-values


@pytest.mark.parametrize("covar", R_COVARS)
@pytest.mark.parametrize("kind", ["partial", "semipartial"])
def test_equals_r_ppcor_formulas(ppcor_data, r_reference, kind, covar):
    # tests/r/ppcor_reference.R run now: ppcor's pcor.test / spcor.test(method = "spearman") in base R
    r, p, n, k = r_reference[("ppcor", kind, covar)]
    function = stats.partial_spearman if kind == "partial" else stats.semipartial_spearman
    res = function(ppcor_data, "x", "y", list(covar), n_boot=0)
    assert (res.r, res.p) == pytest.approx((r, p), rel=1e-10, abs=1e-13)
    assert (res.n, res.k, res.n_dropped) == (n, k, 0) == (30, len(covar), 0)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("covar", TIED_COVARS)
@pytest.mark.parametrize("kind", ["partial", "semipartial"])
def test_equals_r_ppcor_formulas_on_tied_data(r_reference, seed, covar, kind):
    # ties: R's rank() averages them, as ppcor's cor(method = "spearman") does
    r, p, n, _ = r_reference[(f"tied{seed}", kind, covar)]
    function = stats.partial_spearman if kind == "partial" else stats.semipartial_spearman
    res = function(pl.from_pandas(tied_frame(seed)), "x", "y", list(covar), n_boot=0)
    assert (res.r, res.p, res.n) == pytest.approx((r, p, n), rel=1e-10, abs=1e-13)


def test_pingouin_documented_value_one_covariate(ppcor_data):
    # pingouin.partial_corr(method="spearman", covar="cv1") as listed in DESIGN.md
    res = stats.partial_spearman(ppcor_data, "x", "y", "cv1", n_boot=0)
    assert res.r == pytest.approx(0.578485443, abs=5e-10)
    assert res.p == pytest.approx(0.0010117992, abs=5e-11)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("covar", [["z"], ["z", "w"], ["z", "w", "v"]])
def test_equals_pingouin_on_tied_data(seed, covar):
    # pingouin.partial_corr(method="spearman"), run here on random data with ties: r and p to 1e-10
    df = tied_frame(seed)
    ref = pg.partial_corr(df, x="x", y="y", covar=covar, method="spearman")
    res = stats.partial_spearman(pl.from_pandas(df), "x", "y", covar, n_boot=0)
    assert res.r == pytest.approx(ref["r"].iloc[0], abs=1e-10)
    assert res.p == pytest.approx(ref["p_val"].iloc[0], abs=1e-10)


def test_one_covariate_closed_form():
    # Closed form (ρxy − ρxz ρyz) / √((1−ρxz²)(1−ρyz²)) with scipy.stats.spearmanr for each ρ
    df = tied_frame(7, n=80)
    rho = {pair: scipy_stats.spearmanr(df[pair[0]], df[pair[1]]).statistic for pair in ("xy", "xz", "yz")}
    expected = (rho["xy"] - rho["xz"] * rho["yz"]) / math.sqrt((1 - rho["xz"] ** 2) * (1 - rho["yz"] ** 2))
    assert stats.partial_spearman(df, "x", "y", "z", n_boot=0).r == pytest.approx(expected, abs=1e-12)


def test_wikipedia_spearman_example():
    # Wikipedia, "Spearman's rank correlation coefficient", worked example: ρ = −29/165
    df = pl.DataFrame(
        {"iq": [106, 100, 86, 101, 99, 103, 97, 113, 112, 110], "tv": [7, 27, 2, 50, 28, 29, 20, 12, 6, 17]}
    )
    res = stats.spearman(df, "iq", "tv", n_boot=0)
    assert res.r == pytest.approx(-29 / 165, abs=1e-12)
    # p of the t-test with n − 2 df equals scipy.stats.spearmanr's
    assert res.p == pytest.approx(scipy_stats.spearmanr(df["iq"], df["tv"]).pvalue, abs=1e-12)
    assert res.k == 0
    assert res.covar == ()


@pytest.mark.parametrize("seed", [3, 4])
def test_kendall_tau_b_matches_scipy(seed):
    # scipy.stats.kendalltau (tau-b by default), statistic and p, on data with ties
    df = tied_frame(seed, n=40)
    res = stats.kendall_tau_b(df, "x", "y", n_boot=0)
    ref = scipy_stats.kendalltau(df["x"], df["y"])
    assert res.r == pytest.approx(ref.statistic, abs=1e-12)
    assert res.p == pytest.approx(ref.pvalue, abs=1e-12)
    assert res.statistic == "kendall_tau_b"


# ---------------------------------------------------------------------------------------------
# bootstrap intervals


def scipy_row_interval(statistic, data: np.ndarray, n_resamples: int, method: str, seed: int):
    """scipy.stats.bootstrap over the rows of ``data`` with a per-resample loop statistic (the reference)."""
    return scipy_stats.bootstrap(
        (np.arange(len(data)),),
        lambda i: statistic(data[i]),
        vectorized=False,
        paired=True,
        n_resamples=n_resamples,
        method="BCa" if method == "bca" else "percentile",
        rng=np.random.default_rng(seed),
    ).confidence_interval


@pytest.mark.parametrize("method", ["bca", "percentile"])
@pytest.mark.parametrize(("covar", "n"), [(["z"], 45), (["z", "w"], 31), ([], 28)])
def test_interval_equals_scipy_bootstrap(method, covar, n):
    # scipy.stats.bootstrap(paired=True) with a per-resample loop statistic (rank + invert) and the
    # same generator draws the same resamples: the intervals must agree to rounding.
    df = tied_frame(11, n=n)
    columns = ["x", "y", *covar]
    data = df[columns].to_numpy().astype(float)
    ref = scipy_row_interval(naive_partial_spearman, data, 499, method, 99)
    res = stats.partial_spearman(df, "x", "y", covar, n_boot=499, method=method, seed=99)
    assert res.n_degenerate == 0
    assert (res.ci_low, res.ci_high) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_kendall_interval_equals_scipy_bootstrap():
    # scipy.stats.bootstrap (BCa) over scipy.stats.kendalltau, same generator
    df = tied_frame(5, n=35)
    x, y = df["x"].to_numpy(), df["y"].to_numpy()
    ref = scipy_stats.bootstrap(
        (np.arange(len(x)),),
        lambda i: scipy_stats.kendalltau(x[i], y[i]).statistic,
        vectorized=False,
        n_resamples=500,
        rng=np.random.default_rng(3),
    ).confidence_interval
    res = stats.kendall_tau_b(df, "x", "y", n_boot=500, seed=3)
    assert (res.ci_low, res.ci_high) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_both_methods_contain_estimate(ppcor_data):
    for method in ("bca", "percentile"):
        res = stats.partial_spearman(ppcor_data, "x", "y", ["cv1", "cv2"], n_boot=2000, method=method, seed=0)
        assert res.ci_low < res.r < res.ci_high, (method, res)
        assert res.method == method
        assert res.n_boot == 2000


def test_seed_reproducible_and_n_boot_zero(ppcor_data):
    a = stats.partial_spearman(ppcor_data, "x", "y", "cv1", n_boot=300, seed=5)
    b = stats.partial_spearman(ppcor_data, "x", "y", "cv1", n_boot=300, seed=5)
    c = stats.partial_spearman(ppcor_data, "x", "y", "cv1", n_boot=300, seed=6)
    assert a == b
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)
    none = stats.partial_spearman(ppcor_data, "x", "y", "cv1", n_boot=0)
    assert math.isnan(none.ci_low)
    assert math.isnan(none.ci_high)
    assert none.r == a.r


def test_degenerate_resamples_counted():
    # Count, from the very same draws (numpy's stream for (n_boot, n) indices), the resamples in
    # which x or y is constant; exactly those must be left out.
    x = np.array([0, 0, 0, 0, 0, 0, 1, 2])
    y = np.array([3, 1, 2, 5, 4, 6, 0, 7])
    n_boot = 2000
    draws = np.random.default_rng(8).integers(0, len(x), (n_boot, len(x)))
    constant = (np.ptp(x[draws], axis=1) == 0) | (np.ptp(y[draws], axis=1) == 0)
    assert constant.sum() > 50  # the design makes constant resamples common
    res = stats.spearman(pl.DataFrame({"x": x, "y": y}), "x", "y", n_boot=n_boot, seed=8, method="percentile")
    assert res.n_degenerate == int(constant.sum())
    # Spearman of each kept resample: Pearson of scipy's row-wise ranks
    rx, ry = (scipy_stats.rankdata(v[draws[~constant]], axis=1) for v in (x, y))
    rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
    kept = (rx * ry).sum(axis=1) / np.sqrt((rx**2).sum(axis=1) * (ry**2).sum(axis=1))
    assert (res.ci_low, res.ci_high) == pytest.approx(tuple(np.percentile(kept, [2.5, 97.5])), abs=1e-12)


def test_collinear_resamples_counted_with_covariate():
    # z is x with rows 3 and 4 swapped: unless a resample draws both rows, x and z have equal ranks
    # in it and the partial correlation given z is undefined. Find, from the same draws and with
    # scipy's ranks, the resamples where x or y is perfectly rank-correlated with z or constant.
    x = np.arange(10.0)
    z = x.copy()
    z[[3, 4]] = z[[4, 3]]
    y = np.array([2, 1, 4, 3, 6, 5, 8, 7, 10, 9.0])
    data = np.c_[x, y, z]
    draws = np.random.default_rng(4).integers(0, 10, (1000, 10))
    undefined = []
    for rows in draws:
        ranks = scipy_stats.rankdata(data[rows], axis=0)
        if np.ptp(ranks, axis=0).min() == 0:
            undefined.append(True)
            continue
        corr = np.corrcoef(ranks.T)
        undefined.append(bool(np.isclose(abs(corr[0, 2]), 1) or np.isclose(abs(corr[1, 2]), 1)))
    res = stats.partial_spearman(pl.DataFrame({"x": x, "y": y, "z": z}), "x", "y", "z", n_boot=1000, seed=4)
    assert sum(undefined) > 100
    assert res.n_degenerate == sum(undefined)


def test_x_and_y_with_equal_ranks_give_one():
    # The partial correlation is the correlation of the residuals of x's and y's ranks regressed on
    # z's ranks (numpy lstsq here); with equal ranks those residuals are identical, so r = 1. (pingouin
    # warns of a rank-deficient matrix and returns -1 from its pseudo-inverse here.)
    x = np.array([1.0, 2, 3, 4, 5, 6])
    z = np.array([3.0, 1, 2, 6, 4, 5])
    design = np.c_[np.ones(6), scipy_stats.rankdata(z)]
    residual = scipy_stats.rankdata(x) - design @ np.linalg.lstsq(design, scipy_stats.rankdata(x), rcond=None)[0]
    assert np.corrcoef(residual, residual)[0, 1] == pytest.approx(1.0)
    df = pl.DataFrame({"x": x, "y": 10 * x, "z": z})
    assert stats.partial_spearman(df, "x", "y", "z", n_boot=0).r == pytest.approx(1.0, abs=1e-12)


def residual_partial_spearman(sample: np.ndarray) -> float:
    """Reference: correlate the residuals of x's and y's ranks after least squares on z's ranks."""
    ranks = scipy_stats.rankdata(sample, axis=0)
    design = np.c_[np.ones(len(ranks)), ranks[:, 2:]]
    residuals = ranks[:, :2] - design @ np.linalg.lstsq(design, ranks[:, :2], rcond=None)[0]
    spread = np.sqrt((residuals**2).sum(axis=0))
    if np.ptp(ranks, axis=0).min() == 0 or spread.min() < 1e-9 * len(ranks):
        return math.nan
    return float(residuals[:, 0] @ residuals[:, 1] / (spread[0] * spread[1]))


@settings(max_examples=60, deadline=None)
@given(
    values=arrays(np.int64, (9, 3), elements=st.integers(0, 4)),
    counts=arrays(np.int64, 9, elements=st.integers(0, 3)),
)
def test_weighted_ranks_equal_the_expanded_sample(values, counts):
    # The engine ranks a resample from its row counts; the reference repeats the rows and ranks
    # them with scipy. Ties, repeated rows, constant and collinear columns all occur here.
    expected = residual_partial_spearman(np.repeat(values, counts, axis=0)) if counts.sum() >= 2 else math.nan
    got = _spearman_statistic(values.astype(float))(counts[None, :].astype(float))[0]
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-9)


# ---------------------------------------------------------------------------------------------
# coverage on simulated data of known truth


@pytest.mark.slow
def test_bca_coverage_gaussian_copula():
    # Gaussian copula: the population Spearman correlation is 6/π·asin(ρ/2) (Pearson 1907, Kruskal
    # 1958); the population partial Spearman is the partial correlation of that matrix. Marginals
    # are transformed monotonically (exp, cube) so the data are not Gaussian but the ranks are.
    # 600 replications: the coverage estimate has standard error ≈ 0.9 points, so 93–97% is a
    # ±2.2 SE band around 95%.
    sigma = np.array([[1.0, 0.5, 0.4], [0.5, 1.0, 0.6], [0.4, 0.6, 1.0]])
    spearman_matrix = 6 / np.pi * np.arcsin(sigma / 2)
    precision = np.linalg.inv(spearman_matrix)
    truth = -precision[0, 1] / math.sqrt(precision[0, 0] * precision[1, 1])
    rng = np.random.default_rng(2024)
    chol = np.linalg.cholesky(sigma)
    replications, covered = 600, 0
    for _ in range(replications):
        draw = rng.standard_normal((150, 3)) @ chol.T
        df = pl.DataFrame({"x": draw[:, 0], "y": np.exp(draw[:, 1]), "z": draw[:, 2] ** 3})
        res = stats.partial_spearman(df, "x", "y", "z", n_boot=1000, seed=rng)
        covered += res.ci_low <= truth <= res.ci_high
    assert 0.93 <= covered / replications <= 0.97


# ---------------------------------------------------------------------------------------------
# cluster (two-stage) bootstrap


def clustered_trials(seed: int, tasks: int, trials: int, noise: float) -> pl.DataFrame:
    """Tasks with a latent difficulty; every trial of a task shares it (correlated within task)."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=tasks)
    work = latent + rng.normal(size=tasks)
    task = np.repeat(np.arange(tasks), trials)
    score = latent[task] + noise * rng.normal(size=tasks * trials)
    return pl.DataFrame({"task": task, "work": work[task] + 0.01 * rng.normal(size=tasks * trials), "score": score})


def test_cluster_interval_wider_than_treating_trials_as_independent():
    # Trials of a task are strongly correlated: resampling trials as if independent (n = 600 rows)
    # understates the uncertainty of a 30-task correlation; the two-stage bootstrap must not.
    trials = clustered_trials(0, tasks=30, trials=20, noise=0.3)
    naive = stats.spearman(trials, "work", "score", n_boot=1000, seed=1)
    clustered = stats.spearman(trials, "work", "score", n_boot=1000, seed=1, cluster="task")
    assert clustered.n == 30
    assert naive.n == 600
    assert clustered.cluster == "task"
    assert clustered.ci_high - clustered.ci_low > 2 * (naive.ci_high - naive.ci_low)
    assert clustered.ci_low < clustered.r < clustered.ci_high


def test_cluster_with_one_trial_per_task_is_the_row_bootstrap():
    # With one trial per task the second stage can only redraw that trial: the task draws come
    # first from the generator, so the two-stage bootstrap equals the row bootstrap exactly.
    trials = clustered_trials(2, tasks=25, trials=1, noise=0.5)
    for method in ("bca", "percentile"):
        rows = stats.partial_spearman(trials, "score", "work", None, n_boot=400, seed=3, method=method)
        clustered = stats.partial_spearman(
            trials, "score", "work", [], n_boot=400, seed=3, method=method, cluster="task"
        )
        assert (clustered.r, clustered.ci_low, clustered.ci_high) == pytest.approx(
            (rows.r, rows.ci_low, rows.ci_high), abs=1e-12
        )


def test_cluster_bootstrap_with_unequal_task_sizes_equals_a_plain_loop():
    # Tasks of 1 to 6 trials. Reference: the same generator calls (tasks drawn, then for each drawn
    # task as many trial draws as its largest task has, of which the first `size` are that task's
    # resample), the arithmetic by hand: per-task means in a loop, scipy's spearmanr, np.percentile.
    rng = np.random.default_rng(12)
    sizes = rng.integers(1, 7, 24)
    latent = rng.normal(size=len(sizes))
    task = np.repeat(np.arange(len(sizes)), sizes)
    score = latent[task] + rng.normal(size=len(task))
    trials = pl.DataFrame({"task": task, "work": (latent + rng.normal(size=len(sizes)))[task], "score": score})
    n_boot = 300
    res = stats.spearman(trials, "work", "score", n_boot=n_boot, seed=4, cluster="task", method="percentile")

    groups = [score[task == t] for t in range(len(sizes))]
    work = trials.group_by("task").agg(pl.col("work").first()).sort("task")["work"].to_numpy()
    assert res.r == pytest.approx(scipy_stats.spearmanr(work, [g.mean() for g in groups]).statistic, abs=1e-12)
    draws_rng = np.random.default_rng(4)
    draws = draws_rng.integers(0, len(sizes), (n_boot, len(sizes)))
    picks = draws_rng.integers(0, sizes[draws][:, :, None], (n_boot, len(sizes), int(sizes.max())))
    boot = []
    for b in range(n_boot):
        means = [groups[t][picks[b, j, : sizes[t]]].mean() for j, t in enumerate(draws[b])]
        boot.append(scipy_stats.spearmanr(work[draws[b]], means).statistic)
    low, high = np.percentile(boot, [2.5, 97.5])
    assert (res.ci_low, res.ci_high) == pytest.approx((low, high), abs=1e-12)


def test_cluster_point_estimate_uses_task_means():
    trials = clustered_trials(4, tasks=20, trials=5, noise=1.0).with_columns(passed=pl.col("score") > 0)
    means = trials.group_by("task").agg(pl.col("work", "passed").mean())
    expected = scipy_stats.spearmanr(means["work"], means["passed"]).statistic
    res = stats.spearman(trials, "work", "passed", n_boot=200, seed=0, cluster="task")
    assert res.r == pytest.approx(expected, abs=1e-12)
    assert res.ci_low <= res.r <= res.ci_high


# ---------------------------------------------------------------------------------------------
# labels


def test_label_order_as_list_enum_and_pandas_ordered():
    order = ["easy", "medium", "hard"]
    labels = ["easy", "hard", "medium", "hard", "easy", "medium", "hard", "easy"]
    rates = [0.9, 0.2, 0.6, 0.4, 0.7, 0.5, 0.1, 0.8]
    codes = [order.index(v) for v in labels]
    expected = scipy_stats.spearmanr(codes, rates).statistic
    as_list = stats.spearman(pl.DataFrame({"d": labels, "p": rates}), "d", "p", order=order, n_boot=0)
    as_enum = stats.spearman(
        pl.DataFrame({"d": pl.Series(labels, dtype=pl.Enum(order)), "p": rates}), "d", "p", n_boot=0
    )
    pandas = pd.DataFrame({"d": pd.Categorical(labels, categories=order, ordered=True), "p": rates})
    as_pandas = stats.spearman(pandas, "d", "p", n_boot=0)
    assert as_list.r == as_enum.r == as_pandas.r == pytest.approx(expected, abs=1e-12)
    # a reversed order flips the sign
    assert stats.spearman(pl.DataFrame({"d": labels, "p": rates}), "d", "p", order=order[::-1], n_boot=0).r == (
        pytest.approx(-expected, abs=1e-12)
    )


def test_label_correlations_frame():
    rng = np.random.default_rng(0)
    order = ["easy", "medium", "hard"]
    codes = rng.integers(0, 3, 60)
    df = pl.DataFrame({"difficulty": [order[c] for c in codes], "pass_rate": rng.random(60) - 0.2 * codes})
    table = stats.label_correlations(df, "difficulty", "pass_rate", order=order, n_boot=500, seed=1)
    assert table.get_column("statistic").to_list() == ["spearman", "kendall_tau_b"]
    r = dict(zip(table["statistic"], table["r"], strict=True))
    assert r["spearman"] == pytest.approx(scipy_stats.spearmanr(codes, df["pass_rate"]).statistic, abs=1e-12)
    assert r["kendall_tau_b"] == pytest.approx(scipy_stats.kendalltau(codes, df["pass_rate"]).statistic, abs=1e-12)
    assert (table["ci_low"] < table["r"]).all()
    assert (table["r"] < table["ci_high"]).all()


def test_partial_correlation_of_label_given_work():
    # "rank partial correlation of a label with D controlling for W": label codes against pingouin
    df = tied_frame(9, n=60)
    order = ["a", "b", "c", "d", "e", "f", "g", "h"]
    labelled = pl.from_pandas(df).with_columns(pl.col("x").map_elements(lambda v: order[v], return_dtype=pl.String))
    ref = pg.partial_corr(df, x="x", y="y", covar="z", method="spearman")
    res = stats.partial_spearman(labelled, "x", "y", "z", order=order, n_boot=0)
    assert res.r == pytest.approx(ref["r"].iloc[0], abs=1e-10)


# ---------------------------------------------------------------------------------------------
# nulls, results


def test_nulls_dropped_and_counted():
    df = tied_frame(1, n=40)
    with_nulls = pl.from_pandas(df).with_columns(
        pl.when(pl.int_range(pl.len()) % 7 == 0).then(None).otherwise(pl.col("z")).alias("z"),
        pl.when(pl.int_range(pl.len()) == 3).then(float("nan")).otherwise(pl.col("v")).alias("v"),
    )
    res = stats.partial_spearman(with_nulls, "x", "y", ["z", "v"], n_boot=0)
    complete = df.drop(index=[i for i in range(40) if i % 7 == 0 or i == 3])
    ref = pg.partial_corr(complete, x="x", y="y", covar=["z", "v"], method="spearman")
    assert res.n_dropped == 7
    assert res.n == 33
    assert res.r == pytest.approx(ref["r"].iloc[0], abs=1e-10)


def test_result_printing_and_rows(ppcor_data):
    res = stats.partial_spearman(ppcor_data, "x", "y", ["cv1", "cv2"], n_boot=200, seed=0)
    text = str(res)
    assert "r(x, y | cv1, cv2)" in text
    assert f"{res.r:+.3f}" in text
    assert "95% CI" in text
    assert "<table>" in res._repr_html_()
    assert "cv1, cv2" in res._repr_html_()
    row = res.to_row()
    assert row["covar"] == "cv1, cv2"
    assert row["r"] == res.r
    frame = stats.to_frame([res, stats.spearman(ppcor_data, "x", "y", n_boot=0)])
    assert frame.height == 2
    assert frame["covar"].to_list() == ["cv1, cv2", ""]
    assert frame["k"].to_list() == [2, 0]
    with pytest.raises(AttributeError):
        res.r = 0.0  # frozen


# ---------------------------------------------------------------------------------------------
# sign test


def test_sign_test_seven_against_two():
    # DESIGN.md: 7 positive, 2 negative → exact two-sided p = 0.1796875 (= 2·46/512)
    res = stats.sign_test([1, 2, 3, 1, 1, 2, 5, -1, -2, 0, 0])
    assert (res.n_pos, res.n_neg, res.n_zero) == (7, 2, 2)
    assert res.p == 0.1796875


@pytest.mark.parametrize("seed", range(4))
def test_sign_test_matches_scipy_and_statsmodels(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 6, 25)
    b = rng.integers(0, 5, 25)
    res = stats.sign_test(a, b)
    diff = a - b
    n_pos, n_neg = int((diff > 0).sum()), int((diff < 0).sum())
    assert (res.n_pos, res.n_neg, res.n_zero) == (n_pos, n_neg, int((diff == 0).sum()))
    assert res.p == pytest.approx(scipy_stats.binomtest(n_pos, n_pos + n_neg, 0.5).pvalue, rel=1e-12)
    assert res.p == pytest.approx(statsmodels_sign_test(diff)[1], rel=1e-12)


@pytest.mark.parametrize(("diff", "n"), [([1, -1], 2), ([2, 1, -1, -3, 0], 4), ([1, -1, 1, -1, 1, -1, 2, -2], 8)])
def test_sign_test_equal_counts_give_p_one(diff, n):
    # 2 P(X <= n/2) exceeds 1 when the counts are equal: the two-sided p is 1 (scipy binomtest)
    res = stats.sign_test(diff)
    assert res.n_pos == res.n_neg == n // 2
    assert res.p == 1.0 == scipy_stats.binomtest(n // 2, n, 0.5).pvalue


def test_sign_test_missing_and_empty():
    res = stats.sign_test(pl.Series([1.0, None, 2.0, float("nan")]), [0, 0, 0, 0])
    assert (res.n_pos, res.n_missing) == (2, 2)
    assert res.p == 0.5
    assert math.isnan(stats.sign_test([0, 0]).p)
    assert "2 positive" in str(res)
    with pytest.raises(ValueError, match="'b' parameter of sign_test must have the length"):
        stats.sign_test([1, 2], [1])


# ---------------------------------------------------------------------------------------------
# within-group percentiles and quadrants


def test_within_percentile_matches_rankdata_per_group():
    rng = np.random.default_rng(3)
    df = pl.DataFrame({"dataset": rng.choice(["a", "b", "c"], 50), "pass_rate": rng.integers(0, 6, 50) / 5})
    df = df.with_columns(
        pl.when(pl.int_range(pl.len()) == 4).then(None).otherwise(pl.col("pass_rate")).alias("pass_rate")
    )
    got = stats.within_percentile(df, "pass_rate")
    assert got.name == "pass_rate_percentile"
    assert got.len() == 50
    assert got[4] is None
    for name in ("a", "b", "c"):
        mask = (df["dataset"] == name) & df["pass_rate"].is_not_null()
        values = df.filter(mask)["pass_rate"].to_numpy()
        expected = scipy_stats.rankdata(values) / len(values)
        assert got.filter(mask).to_numpy() == pytest.approx(expected, abs=1e-12)
    overall = stats.within_percentile(df.to_pandas(), "pass_rate", by=None).drop_nulls().to_numpy()
    values = df["pass_rate"].drop_nulls().to_numpy()
    assert overall == pytest.approx(scipy_stats.rankdata(values) / len(values), abs=1e-12)


def audit_like(seed: int, n: int = 120) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    depth = rng.choice([1, 2, 3, 5, 10], n)
    work = rng.integers(1, 100, n)
    return pl.DataFrame(
        {
            "dataset": rng.choice(["tb2", "seta"], n),
            "depth": depth,
            "work": work,
            "pass_rate": np.clip(1 - 0.08 * depth - 0.003 * work + 0.2 * rng.random(n), 0, 1),
        }
    )


def rankdata_percentile(df: pl.DataFrame, value: str, by: str = "dataset") -> pl.Series:
    """Independent reference: scipy's average ranks / count within each group, over non-null values."""
    out = np.full(df.height, np.nan)
    values = df[value].to_numpy().astype(np.float64)
    groups = df[by].to_numpy()
    for name in np.unique(groups):
        rows = np.flatnonzero((groups == name) & ~np.isnan(values))
        out[rows] = scipy_stats.rankdata(values[rows]) / len(rows)
    return pl.Series(f"{value}_percentile", out).fill_nan(None)


def test_quadrant_percentiles_rank_rows_with_a_null_depth_too():
    # An unsolved task has a null depth: it is left out of the cells but still ranked, so the other
    # tasks' percentiles do not depend on whether it was solved (quadrants' docstring).
    df = audit_like(5, n=60).with_columns(
        depth=pl.when(pl.int_range(pl.len()) % 4 == 0).then(None).otherwise(pl.col("depth"))
    )
    table = stats.quadrant_cells(df, n_boot=0)
    percentile = rankdata_percentile(df, "pass_rate")  # over all 60 rows, null depths included
    known = df["depth"].is_not_null()
    median = float(np.median(df.filter(known)["work"].to_numpy()))
    assert table["n"].sum() == int(known.sum()) == 45
    for row in table.iter_rows(named=True):
        mask = (
            known
            & ((df["depth"] >= 2) == (row["depth_class"] == "deep"))
            & ((df["work"] >= median) == (row["work_class"] == "large"))
        )
        assert row["n"] == int(mask.sum())
        assert row["mean_percentile"] == pytest.approx(float(percentile.filter(mask).mean()), abs=1e-12)


def test_quadrants_counts_means_and_intervals():
    df = audit_like(0)
    table = stats.quadrant_cells(df, n_boot=800, seed=2)
    percentile = rankdata_percentile(df, "pass_rate")
    median = float(np.median(df["work"].to_numpy()))
    assert table["work_split"].to_list() == [median] * 4
    for row in table.iter_rows(named=True):
        mask = ((df["depth"] >= 2) == (row["depth_class"] == "deep")) & (
            (df["work"] >= median) == (row["work_class"] == "large")
        )
        assert row["n"] == int(mask.sum())
        assert row["mean_percentile"] == pytest.approx(float(percentile.filter(mask).mean()), abs=1e-12)
        assert row["ci_low"] < row["mean_percentile"] < row["ci_high"]
    assert table["n"].sum() == df.height
    # the first cell's interval is scipy.stats.bootstrap's of the mean with the same generator
    first = percentile.filter((df["depth"] >= 2) & (df["work"] >= median)).to_numpy()
    ref = scipy_stats.bootstrap((first,), np.mean, n_resamples=800, rng=np.random.default_rng(2)).confidence_interval
    assert (table["ci_low"][0], table["ci_high"][0]) == pytest.approx((ref.low, ref.high), abs=1e-12)
    # deep tasks are harder in this simulation: a lower percentile than shallow ones
    deep = table.filter(pl.col("depth_class") == "deep")["mean_percentile"].mean()
    shallow = table.filter(pl.col("depth_class") == "shallow")["mean_percentile"].mean()
    assert deep < shallow


def test_quadrants_numeric_split_and_empty_cell():
    df = audit_like(1, n=40)
    table = stats.quadrant_cells(df, work_split=1000, depth_split=3, n_boot=0)
    large = table.filter(pl.col("work_class") == "large")
    assert large["n"].to_list() == [0, 0]
    assert large["mean_percentile"].null_count() == 2
    assert table.filter(pl.col("depth_class") == "deep")["n"].sum() == int((df["depth"] >= 3).sum())


# ---------------------------------------------------------------------------------------------
# invalid input


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"method": "student"},
            r"'method' parameter of partial_spearman must be one of \['bca', 'percentile'\], got 'student'",
        ),
        ({"ci": 1.5}, r"'ci' parameter of partial_spearman must be a float in the open interval \(0, 1\), got 1.5"),
        ({"ci": 0}, r"'ci' parameter .* got 0"),
        ({"n_boot": -1}, r"'n_boot' parameter of partial_spearman must be an int >= 0, got -1"),
        ({"covar": "nope"}, r"'covar' parameter of partial_spearman names column 'nope', which is not in the frame"),
        ({"covar": "x"}, r"'covar' parameter .* names column 'x', which is already used as 'x'"),
        (
            {"covar": ["cv1", "cv2", "cv3", "label"]},
            r"'covar' parameter .* column 'label' of dtype String, which is not numeric",
        ),
        ({"covar": "flat"}, r"'covar' parameter of partial_spearman names a constant column \('flat'"),
        ({"order": ["a", "b"]}, r"'order' parameter .* is a list, which applies to the one non-numeric column, but 0"),
        ({"cluster": "x"}, r"'cluster' parameter .* names column 'x', which is also correlated"),
    ],
)
def test_invalid_input(ppcor_data, kwargs, message):
    df = ppcor_data.assign(label="a", flat=1.0)
    args = {"covar": "cv1", **kwargs}
    covar = args.pop("covar")
    with pytest.raises(ValueError, match=message):
        stats.partial_spearman(df, "x", "y", covar, **{"n_boot": 10, **args})


def test_invalid_input_rows_and_frames(ppcor_data):
    few = ppcor_data.head(4)
    with pytest.raises(ValueError, match=r"at least k \+ 3 = 5 rows without nulls for 2 covariate\(s\), got 4"):
        stats.partial_spearman(few, "x", "y", ["cv1", "cv2"])
    with pytest.raises(
        ValueError, match="'df' parameter of partial_spearman must be a polars or pandas DataFrame, got dict"
    ):
        stats.partial_spearman({"x": [1]}, "x", "y", None)
    with pytest.raises(ValueError, match=r"whose values \['medium'\] are not in its order"):
        stats.spearman(
            pl.DataFrame({"d": ["easy", "medium", "hard"], "p": [1, 2, 3]}), "d", "p", order=["easy", "hard"]
        )
    collinear = ppcor_data.assign(twice=ppcor_data["x"] * 2)
    with pytest.raises(ValueError, match="collinear once ranked"):
        stats.partial_spearman(collinear, "x", "y", "twice", n_boot=0)
    with pytest.raises(ValueError, match="'method' parameter of kendall_tau_b"):
        stats.kendall_tau_b(ppcor_data, "x", "y", method="abc")
    with pytest.raises(
        ValueError, match="'work_split' parameter of quadrant_cells must be 'median' or a number, got 'mean'"
    ):
        stats.quadrant_cells(audit_like(0), work_split="mean", n_boot=0)
    with pytest.raises(ValueError, match="'value' parameter of within_percentile names column 'nope'"):
        stats.within_percentile(audit_like(0), "nope")


# ---------------------------------------------------------------------------------------------
# real data: Terminal-Bench 2.0 public trials (../shared/data, read in place)


def test_tb2_public_trials_cluster_and_labels(shared_data):
    # 3,560 real TB2 trials of 8 models on 89 tasks; W = solution lines (../shared/data/SOURCES.md)
    tasks = pl.read_csv(shared_data / "tb2_tasks.csv").select("task_id", "difficulty", "solution_lines")
    trials = pl.read_csv(shared_data / "tb2_public_results.csv").select("task_id", "passed").join(tasks, on="task_id")
    per_task = (
        trials.drop_nulls("passed")
        .group_by("task_id", "difficulty", "solution_lines")
        .agg(pass_rate=pl.col("passed").mean())
    )
    clustered = stats.spearman(trials, "solution_lines", "passed", cluster="task_id", n_boot=1000, seed=0)
    assert clustered.n == per_task.height
    assert clustered.n_dropped == trials["passed"].null_count()
    assert clustered.r == pytest.approx(
        scipy_stats.spearmanr(per_task["solution_lines"], per_task["pass_rate"]).statistic, abs=1e-12
    )
    assert clustered.ci_low < clustered.r < clustered.ci_high
    naive = stats.spearman(trials, "solution_lines", "passed", n_boot=1000, seed=0)
    assert clustered.ci_high - clustered.ci_low > naive.ci_high - naive.ci_low

    order = ["easy", "medium", "hard"]
    table = stats.label_correlations(per_task, "difficulty", "pass_rate", order=order, n_boot=1000, seed=0)
    codes = [order.index(v) for v in per_task["difficulty"]]
    spearman_row = table.row(0, named=True)
    assert spearman_row["r"] == pytest.approx(scipy_stats.spearmanr(codes, per_task["pass_rate"]).statistic, abs=1e-12)
    assert spearman_row["n"] == per_task.height


# ---------------------------------------------------------------------------------------------
# semi-partial (part) Spearman: covariates removed from y only


def residual_semipartial_spearman(data: np.ndarray) -> float:
    """Independent definition: Pearson of rank(x) with the OLS residual of rank(y) on the covariates' ranks."""
    ranks = scipy_stats.rankdata(data, axis=0)
    design = np.column_stack([np.ones(len(ranks)), ranks[:, 2:]])
    residual = ranks[:, 1] - design @ np.linalg.lstsq(design, ranks[:, 1], rcond=None)[0]
    return float(np.corrcoef(ranks[:, 0], residual)[0, 1])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("covar", [["z"], ["z", "w"], ["z", "w", "v"]])
def test_semipartial_equals_pingouin_on_tied_data(seed, covar):
    # pingouin.partial_corr(method="spearman"): y_covar removes the covariates from y (ppcor's
    # spcor.test(x, y, z)); x_covar removes them from x, which is this function with x and y swapped.
    df = tied_frame(seed)
    from_y = pg.partial_corr(df, x="x", y="y", y_covar=covar, method="spearman")
    from_x = pg.partial_corr(df, x="x", y="y", x_covar=covar, method="spearman")
    res = stats.semipartial_spearman(pl.from_pandas(df), "x", "y", covar, n_boot=0)
    swapped = stats.semipartial_spearman(df, "y", "x", covar, n_boot=0)
    assert (res.r, res.p) == pytest.approx((from_y["r"].iloc[0], from_y["p_val"].iloc[0]), abs=1e-10)
    assert (swapped.r, swapped.p) == pytest.approx((from_x["r"].iloc[0], from_x["p_val"].iloc[0]), abs=1e-10)
    assert res.r == pytest.approx(residual_semipartial_spearman(df[["x", "y", *covar]].to_numpy(float)), abs=1e-12)
    assert abs(res.r - swapped.r) > 1e-6  # the two semi-partials differ on this data


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_semipartial_interval_equals_scipy_bootstrap(method):
    # Same resamples as scipy.stats.bootstrap(paired=True) with the residual definition computed per resample
    df = tied_frame(12, n=33)
    data = df[["x", "y", "z", "w"]].to_numpy().astype(float)
    ref = scipy_row_interval(residual_semipartial_spearman, data, 299, method, 7)
    res = stats.semipartial_spearman(df, "x", "y", ["z", "w"], n_boot=299, method=method, seed=7)
    assert res.n_degenerate == 0
    assert (res.ci_low, res.ci_high) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_semipartial_interval_contains_estimate_and_prints(ppcor_data):
    for method in ("bca", "percentile"):
        res = stats.semipartial_spearman(ppcor_data, "x", "y", "cv1", n_boot=2000, method=method, seed=0)
        assert res.ci_low < res.r < res.ci_high
    assert str(res).startswith("semipartial_spearman r(x, y | cv1 removed from y only) = +")


def test_semipartial_x_collinear_with_covariate_is_zero_y_collinear_is_an_error(ppcor_data):
    # Only y is residualized: x carrying the covariate's ranks leaves nothing of x outside it that
    # could correlate with y's residual (r = 0); y carrying them leaves no residual at all.
    df = ppcor_data.assign(x_twice=ppcor_data["x"] * 2, y_twice=ppcor_data["y"] * 2)
    assert stats.semipartial_spearman(df, "x", "y", "x_twice", n_boot=0).r == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match=r"semipartial_spearman are collinear once ranked .* as y, or as another"):
        stats.semipartial_spearman(df, "x", "y", "y_twice", n_boot=0)


def test_semipartial_cluster_with_one_trial_per_task_is_the_row_bootstrap():
    trials = clustered_trials(3, tasks=25, trials=1, noise=0.5).with_columns(z=pl.col("work") ** 3 + pl.col("score"))
    rows = stats.semipartial_spearman(trials, "score", "work", "z", n_boot=300, seed=3)
    clustered = stats.semipartial_spearman(trials, "score", "work", "z", n_boot=300, seed=3, cluster="task")
    assert (clustered.r, clustered.ci_low, clustered.ci_high) == pytest.approx(
        (rows.r, rows.ci_low, rows.ci_high), abs=1e-12
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "student"}, r"'method' parameter of semipartial_spearman must be one of \['bca', 'percentile'\]"),
        ({"ci": 1.5}, r"'ci' parameter of semipartial_spearman must be a float in the open interval \(0, 1\)"),
        ({"n_boot": -1}, r"'n_boot' parameter of semipartial_spearman must be an int >= 0, got -1"),
        ({"covar": "nope"}, r"'covar' parameter of semipartial_spearman names column 'nope', which is not in"),
        ({"covar": "y"}, r"'covar' parameter of semipartial_spearman names column 'y', which is already used as 'y'"),
        ({"covar": "label"}, r"'covar' parameter of semipartial_spearman .* dtype String, which is not numeric"),
        ({"covar": "flat"}, r"'covar' parameter of semipartial_spearman names a constant column \('flat'"),
        ({"df": {"x": [1]}}, r"'df' parameter of semipartial_spearman must be a polars or pandas DataFrame"),
        ({"covar": ["cv1", "cv2"], "df": "few"}, r"semipartial_spearman must have at least k \+ 3 = 5 rows"),
    ],
)
def test_semipartial_invalid_input(ppcor_data, kwargs, message):
    args = {"covar": "cv1", "df": ppcor_data.assign(label="a", flat=1.0), "n_boot": 10, **kwargs}
    if isinstance(args["df"], str):
        args["df"] = ppcor_data.head(4)
    df, covar = args.pop("df"), args.pop("covar")
    with pytest.raises(ValueError, match=message):
        stats.semipartial_spearman(df, "x", "y", covar, **args)


# ---------------------------------------------------------------------------------------------
# results as text, HTML and rows (what a notebook shows)


def test_partial_corr_text_html_and_row():
    res = stats.PartialCorr(
        r=0.5,
        ci_low=0.1,
        ci_high=0.8,
        p=0.0123,
        n=30,
        k=1,
        method="bca",
        n_boot=1000,
        n_degenerate=2,
        n_dropped=3,
        x="x",
        y="y",
        covar=("z", "w"),
        statistic="semipartial_spearman",
        cluster="task",
    )
    label = "semipartial_spearman r(x, y | z, w removed from y only)"
    notes = "n = 30 clusters of 'task', 3 dropped for nulls, 2 degenerate resamples left out"
    assert str(res) == f"{label} = +0.500, 95% CI [+0.100, +0.800] (bca, 1,000 resamples), p = 0.0123, {notes}"
    assert res._repr_html_() == (
        "<table><tr><th style='text-align:left'>"
        + label
        + "</th><th>r</th><th>CI</th><th>p</th><th>n</th></tr><tr><td style='text-align:left'>"
        + "bca, 1,000 resamples; "
        + notes.replace("'", "&#x27;")
        + "</td><td>+0.500</td><td>[+0.100, +0.800] (95%)</td><td>0.0123</td><td>30</td></tr></table>"
    )
    assert res.to_row()["covar"] == "z, w"
    plain = stats.PartialCorr(
        r=-0.25,
        ci_low=math.nan,
        ci_high=math.nan,
        p=0.5,
        n=10,
        k=0,
        method="bca",
        n_boot=0,
        n_degenerate=0,
        n_dropped=0,
        x="a",
        y="b",
    )
    assert str(plain) == "spearman r(a, b) = -0.250, no CI (n_boot=0), p = 0.5, n = 10"
    assert "<td>-0.250</td><td>—</td><td>0.5</td><td>10</td>" in plain._repr_html_()


def test_sign_test_text_html_and_row():
    res = stats.SignTest(n_pos=7, n_neg=2, n_zero=1, p=0.1796875, n_missing=2)
    text = "sign test: 7 positive, 2 negative (1 zero dropped, 2 missing), exact two-sided p = 0.18"
    assert str(res) == text
    assert res._repr_html_() == f"<p>{text}</p>"
    assert res.to_row() == {"n_pos": 7, "n_neg": 2, "n_zero": 1, "p": 0.1796875, "n_missing": 2}
    assert (
        str(stats.SignTest(1, 0, 0, 1.0)) == "sign test: 1 positive, 0 negative (0 zero dropped), exact two-sided p = 1"
    )
    assert (
        stats.SignTest(1, 0, 0, 1.0)._repr_html_()
        == "<p>sign test: 1 positive, 0 negative (0 zero dropped), exact two-sided p = 1</p>"
    )


def test_sign_test_reads_lists_with_none_and_names_bad_input():
    res = stats.sign_test([1, None, -2, 3], [0, 0, 0, None])
    assert (res.n_pos, res.n_neg, res.n_missing) == (1, 1, 2)
    for args, message in [
        ((["x", 1],), "The 'a' parameter of sign_test must be numbers, got ['x', 1]"),
        (([1, 2], ["x", 1]), "The 'b' parameter of sign_test must be numbers, got ['x', 1]"),
        (([[1, 2], [3, 4]],), "The 'a' parameter of sign_test must be one-dimensional, got shape (2, 2)"),
        (([1, 2], [[1], [2]]), "The 'b' parameter of sign_test must be one-dimensional, got shape (2, 1)"),
    ]:
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            stats.sign_test(*args)


def test_a_one_task_quadrant_gets_its_interval_without_warnings():
    # BCa's jackknife of a one-task cell leaves no row: that replicate is NaN, silently
    import warnings

    df = pl.DataFrame({"dataset": "d", "depth": [1, 1, 1, 5], "work": [1, 9, 2, 9], "pass_rate": [0.9, 0.5, 0.7, 0.1]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = stats.quadrant_cells(df, n_boot=50, seed=0, method="bca")
    deep_large = table.filter((pl.col("depth_class") == "deep") & (pl.col("work_class") == "large")).row(0, named=True)
    assert deep_large["n"] == 1
    assert deep_large["mean_percentile"] == deep_large["ci_low"] == deep_large["ci_high"] == 0.25


def test_a_label_value_outside_its_order_is_named_with_the_parameter():
    df = pl.DataFrame({"difficulty": ["easy", "hard", "epic", "easy"] * 3, "pass_rate": [0.9, 0.2, 0.1, 0.8] * 3})
    message = (
        "The 'x' parameter of spearman names column 'difficulty', whose values ['epic'] are not in its order "
        "['easy', 'medium', 'hard']"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        stats.spearman(df, "difficulty", "pass_rate", order=["easy", "medium", "hard"], n_boot=0)


def test_cluster_bootstrap_with_one_resample():
    trials = clustered_trials(6, tasks=12, trials=3, noise=0.5)
    res = stats.spearman(trials, "work", "score", n_boot=1, seed=0, cluster="task", method="percentile")
    assert res.n_boot == 1
    assert math.isfinite(res.ci_low)
    assert res.ci_low == res.ci_high  # one replicate: the interval is that value


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda df: stats.partial_spearman(df, "x", "y", 5, n_boot=0),
            "The 'covar' parameter of partial_spearman must be a column name, a list of them or None, got 5",
        ),
        (
            lambda df: stats.kendall_tau_b(df, "nope", "y", n_boot=0),
            "The 'x' parameter of kendall_tau_b names column 'nope', which is not in the frame "
            "(columns: ['x', 'y', 'a', 'b'])",
        ),
        (
            lambda df: stats.within_percentile(df, "x", by="nope"),
            "The 'by' parameter of within_percentile names column 'nope', which is not in the frame "
            "(columns: ['x', 'y', 'a', 'b'])",
        ),
        (
            lambda df: stats.kendall_tau_b(df, "a", "b", order=["p", "q"], n_boot=0),
            "The 'order' parameter of kendall_tau_b is a list, which applies to the one non-numeric column, but 2 "
            "are non-numeric (['a', 'b']); pass a mapping {column: categories}",
        ),
    ],
)
def test_messages_name_the_function_and_parameter(call, message):
    df = pl.DataFrame({"x": [1, 2, 3, 4, 5, 6], "y": [2, 1, 4, 3, 6, 5], "a": ["p", "q"] * 3, "b": ["r", "s"] * 3})
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        call(df)


def test_kendall_has_no_covariates():
    res = stats.kendall_tau_b(tied_frame(3, n=40), "x", "y", n_boot=0)
    assert (res.k, res.covar, res.statistic) == (0, (), "kendall_tau_b")


# --- honest intervals where ties dominate (issue 29) -------------------------------------------


def _null_tied_sample(rng: np.random.Generator, n: int) -> pl.DataFrame:
    """pass ~ W only; D independent of both, 90% of tasks at D = 1 (the paper's synthetic regime): true partial 0."""
    work = rng.lognormal(2.0, 0.8, n)
    pass_rate = 1 / (1 + np.exp(0.8 * (np.log(work) - 2.0) + rng.normal(0, 1, n)))
    depth = np.where(rng.random(n) < 0.9, 1, rng.choice([2, 3, 5, 10], n))
    return pl.DataFrame({"pass_rate": pass_rate, "depth": depth.astype(float), "work": work})


def test_bca_undercovers_a_true_zero_at_n30_with_90pct_at_depth_1_and_permutation_holds_its_size():
    # regime: n = 30 tasks, 90% at D = 1, pass ~ D | W with D independent (true partial correlation 0).
    # The issue measured BCa coverage of 77% here; the permutation test rejects at no more than its 5%.
    from depthlab.stats import permutation_pvalue

    rng = np.random.default_rng(2029)
    covered = rejected = reps = 0
    while reps < 150:
        df = _null_tied_sample(rng, 30)
        if df["depth"].n_unique() < 2:
            continue
        reps += 1
        res = stats.partial_spearman(df, "pass_rate", "depth", "work", n_boot=1000, seed=reps)
        covered += res.ci_low <= 0 <= res.ci_high
        rejected += permutation_pvalue(df, "pass_rate", "depth", "work", n_perm=999, seed=reps).p < 0.05
    assert covered / reps < 0.9  # BCa under-covers in this regime (nominal 95%)
    # permutation: 2.2% measured at 1,000 samples of this regime, 2.0% here (binomial sd 1.8% at 150
    # replications): conservative since issue 44's studentised statistic (5.1% with the plain one)
    assert rejected / reps <= 0.09


def test_permutation_pvalue_against_an_exact_enumeration():
    import itertools

    from depthlab.stats import permutation_pvalue

    df = pl.DataFrame({"x": [3.0, 1.0, 4.0, 1.5, 5.0, 9.0], "y": [2.0, 7.0, 1.0, 8.0, 2.5, 8.5]})
    rx = scipy_stats.rankdata(df["x"]) - 3.5
    ry = scipy_stats.rankdata(df["y"]) - 3.5

    def studentised(b):  # DiCiccio & Romano's (2017) studentised correlation of centred ranks
        return abs(rx @ b) / math.sqrt(np.sum(rx**2 * b**2))

    observed = studentised(ry)
    extreme = sum(studentised(ry[list(p)]) >= observed - 1e-12 for p in itertools.permutations(range(6)))
    exact = extreme / 720
    res = permutation_pvalue(df, "x", "y", n_perm=20_000, seed=3)
    assert res.p == pytest.approx(exact, abs=0.015)
    assert res.r == pytest.approx(scipy_stats.spearmanr(df["x"], df["y"]).statistic)


def test_hierarchical_bootstrap_is_wider_when_collections_differ_and_counts_degenerate():
    from depthlab.stats import hierarchical_bootstrap

    rng = np.random.default_rng(5)
    rows = []
    for c in range(4):
        shift = rng.normal(0, 1.0)
        for t in range(15):
            depth = rng.integers(1, 6)
            for _ in range(3):
                rows.append(
                    {
                        "dataset": f"c{c}",
                        "task": f"c{c}-t{t}",
                        "depth": float(depth),
                        "passed": float(rng.random() < 1 / (1 + np.exp(0.5 * depth - shift))),
                    }
                )
    runs = pl.DataFrame(rows)
    two = hierarchical_bootstrap(runs, "passed", "depth", levels=("dataset", "task"), n_boot=400, seed=1)
    one = hierarchical_bootstrap(runs, "passed", "depth", levels=("task",), n_boot=400, seed=1)
    means = runs.group_by("task").agg(pl.col("passed", "depth").mean())
    assert two.r == pytest.approx(scipy_stats.spearmanr(means["passed"], means["depth"]).statistic)
    assert two.n == 60
    assert two.method == "hierarchical bootstrap"
    assert two.ci_high - two.ci_low > one.ci_high - one.ci_low
    # one task with one run: every resample is that task, depth constant: all degenerate
    single = hierarchical_bootstrap(runs.head(1), "passed", "depth", levels=("task",), n_boot=20, seed=0)
    assert single.n_degenerate == 20


# --- issue 38: textbook Freedman-Lane, its size down to n = 6, task groups, the bootstrap's coverage ---

FL_SCRIPT = Path(__file__).parent / "r" / "freedman_lane_reference.R"


def textbook_freedman_lane(values: np.ndarray, orders: np.ndarray) -> tuple[float, float]:
    """Freedman & Lane on ranks from the definition, one permutation at a time: (r, share |t*| >= |t|).

    y* = fitted + residuals[π] of the reduced model y ~ Z; with a = resid(x ~ Z), b = resid(y* ~ Z),
    t* = sum(a b) / sqrt(sum(a² b²)) (studentised, issue 44; 0 when every a_i b_i is 0), each fit by
    numpy's least squares; r = corr(a, resid(y ~ Z)). ``orders`` are the permutations, the identity
    among them.
    """
    ranks = scipy_stats.rankdata(values, axis=0)
    x, y = ranks[:, 0], ranks[:, 1]
    design = np.column_stack([np.ones(len(ranks)), ranks[:, 2:]])

    def residual(v):
        return v - design @ np.linalg.lstsq(design, v, rcond=None)[0]

    def studentised(b):
        spread = math.sqrt(float(np.sum(rx**2 * b**2)))
        return float(rx @ b) / spread if spread > 0 else 0.0

    fitted, e = y - residual(y), residual(y)
    rx = residual(x)
    r = np.corrcoef(rx, residual(y))[0, 1]
    observed = studentised(residual(y))
    stars = np.array([studentised(residual(fitted + e[order])) for order in orders])
    return float(r), float(np.mean(np.abs(stars) >= abs(observed) - 1e-9))


def _fl_cases() -> dict[str, tuple[pd.DataFrame, tuple[str, ...]]]:
    """Small data sets for the exact (enumerated) Freedman-Lane test: continuous, tied, n = 6 and 7."""
    out = {}
    for seed, n in ((0, 6), (1, 6), (2, 7)):
        rng = np.random.default_rng(seed)
        z = rng.normal(size=(n, 3))
        frame = pd.DataFrame({"x": z.sum(axis=1) + rng.normal(size=n), "y": rng.normal(size=n) + 0.8 * z[:, 0]})
        for j, name in enumerate(("z", "w", "v")):
            frame[name] = z[:, j].round(0) if seed == 1 else z[:, j]  # seed 1: covariates full of ties
        out[f"n{n}s{seed}"] = (frame, ("z", "w", "v"))
    return out


@pytest.fixture(scope="module")
def r_freedman_lane(tmp_path_factory) -> dict[tuple[str, tuple[str, ...]], tuple[float, float, int]]:
    """Fresh output of tests/r/freedman_lane_reference.R (base R, every permutation): case -> (r, p, n!)."""
    rscript = _rscript()
    folder = tmp_path_factory.mktemp("r_fl")
    cases = []
    for name, (frame, covars) in _fl_cases().items():
        frame.to_csv(folder / f"{name}.csv", index=False)
        for k in range(len(covars) + 1):
            covar = covars[:k]
            cases.append({"id": "|".join([name, *covar]), "data": str(folder / f"{name}.csv"), "x": "x", "y": "y"})
            cases[-1]["covar"] = ";".join(covar)
    out = _run_r(rscript, FL_SCRIPT, folder, cases, timeout=600)
    return {
        (name, tuple(covar)): (float(row.r), float(row.p), int(row.n_perm))
        for row in out.itertuples()
        for name, *covar in [row.id.split("|")]
    }


@pytest.mark.parametrize("k", [0, 1, 2, 3])
@pytest.mark.parametrize("case", ["n6s0", "n6s1", "n7s2"])
def test_freedman_lane_equals_r_and_the_textbook_definition_over_every_permutation(r_freedman_lane, case, k):
    # n! <= n_perm: every permutation is enumerated, so the p-value is exact and must equal R's to rounding
    frame, covars = _fl_cases()[case]
    covar = list(covars[:k])
    res = stats.permutation_pvalue(pl.from_pandas(frame), "x", "y", covar, n_perm=10_000, seed=0)
    r, p, n_perm = r_freedman_lane[(case, tuple(covar))]
    assert res.exact
    assert res.n_resamples == n_perm == math.factorial(len(frame))
    assert res.p == pytest.approx(p, abs=1e-12)
    assert res.r == pytest.approx(r, abs=1e-12)
    if k:  # pingouin has no permutation test; its partial Spearman is the statistic permuted
        with np.errstate(divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # its Fisher-z interval needs n > 3 + k
            reference = pg.partial_corr(frame, "x", "y", covar, method="spearman")["r"].iloc[0]
        assert res.r == pytest.approx(reference)
    import itertools

    orders = np.array(list(itertools.permutations(range(len(frame)))))
    ours = textbook_freedman_lane(frame[["x", "y", *covar]].to_numpy(), orders)
    assert (res.r, res.p) == pytest.approx(ours, abs=1e-12)


def test_freedman_lane_monte_carlo_p_agrees_with_the_textbook_definition():
    # n = 25, three covariates: random permutations. The two draw different permutations, so they agree
    # within Monte Carlo error: sd of a difference of two p-values near 0.1 from 4,000 draws each is 0.007
    rng = np.random.default_rng(11)
    n = 25
    z = rng.normal(size=(n, 3))
    x = z.sum(axis=1) + rng.normal(size=n)
    y = 0.35 * x - z[:, 0] + rng.normal(size=n)
    frame = pl.DataFrame({"x": x, "y": y, "z": z[:, 0], "w": z[:, 1], "v": z[:, 2]})
    res = stats.permutation_pvalue(frame, "x", "y", ["z", "w", "v"], n_perm=4000, seed=1)
    orders = np.vstack([np.arange(n), np.argsort(rng.random((4000, n)), axis=1)])
    r, share = textbook_freedman_lane(frame.to_numpy(), orders)
    assert not res.exact
    assert res.r == pytest.approx(r, abs=1e-12)
    assert 0.02 < res.p < 0.5  # a p-value where the Monte Carlo comparison has something to compare
    assert res.p == pytest.approx(share, abs=4 * 0.007)


def kennedy_pvalue(values: np.ndarray, orders: np.ndarray) -> float:
    """The variant this module had before (Kennedy 1995): permuted residuals not residualised again."""
    ranks = scipy_stats.rankdata(values, axis=0)
    design = np.column_stack([np.ones(len(ranks)), ranks[:, 2:]])
    hat = design @ np.linalg.pinv(design)
    rx, ry = ranks[:, 0] - hat @ ranks[:, 0], ranks[:, 1] - hat @ ranks[:, 1]
    permuted = ry[orders]
    stars = permuted @ rx / np.sqrt((rx @ rx) * (permuted**2).sum(axis=1))
    observed = abs(rx @ ry) / math.sqrt((rx @ rx) * (ry @ ry))
    return float(np.mean(np.abs(stars) >= observed - 1e-9))


def test_freedman_lane_holds_its_size_on_exact_nulls_down_to_n6_with_one_to_three_covariates():
    # Exact null: y independent of x and z, x depending on z. 400 samples per (n, k), 3,600 in all.
    # Monte Carlo error: one cell's rejection rate at a true 5% has sd 1.09% (400 samples), the pooled
    # rate 0.36% (3,600); the bounds are nominal + 3 sd. Measured (this seed, the studentised statistic of
    # issue 44): 2.5-7.0% per cell, 4.9% pooled (the plain statistic: 3.5-6.5%, 4.9%); Kennedy's variant,
    # this module's code before issue 38, 36% at n = 6 with three covariates (issue 38 measured 18.1%).
    import itertools

    all_six = np.array(list(itertools.permutations(range(6))))
    rates, kennedy = {}, []
    for n in (6, 8, 12):
        for k in (1, 2, 3):
            rng = np.random.default_rng(1000 * n + k)
            rejected = 0
            for rep in range(400):
                z = rng.normal(size=(n, k))
                x, y = z.sum(axis=1) + 0.5 * rng.normal(size=n), rng.normal(size=n)
                frame = pl.DataFrame({"x": x, "y": y, **{f"z{j}": z[:, j] for j in range(k)}})
                res = stats.permutation_pvalue(frame, "x", "y", [f"z{j}" for j in range(k)], n_perm=499, seed=rep)
                rejected += res.p <= 0.05
                if n == 6 and k == 3:
                    kennedy.append(kennedy_pvalue(frame.to_numpy(), all_six) <= 0.05)
            rates[(n, k)] = rejected / 400
    assert all(rate <= 0.05 + 3 * 0.0109 for rate in rates.values()), rates
    pooled = sum(rates.values()) / len(rates)
    assert pooled <= 0.05 + 3 * 0.0036, rates
    assert pooled >= 0.05 - 3 * 0.0036, rates  # not conservative either: a valid test near its level
    assert np.mean(kennedy) > 0.12  # the old variant's excess, which this test would have caught


def test_permutation_p_needs_min_tasks_to_reach_005_and_is_exact_there():
    # the smallest n a row reports: schema.MIN_TASKS = 6 units, 6! = 720 permutations, so the smallest
    # exact p is 1/720 and p <= 0.05 is reachable; at n = 3 (3! = 6 permutations) the smallest is 1/6
    import itertools

    from depthlab.schema import MIN_TASKS

    assert MIN_TASKS == 6
    assert 1 / math.factorial(MIN_TASKS) < 0.05 < 1 / math.factorial(3)
    # the most extreme arrangement of the studentised statistic |Σab| / sqrt(Σa²b²) at n = 6 (centred
    # ranks a, b), found by enumeration: it and its mirror are the only two, so p = 2/720
    centred = np.arange(6) - 2.5
    arrangements = np.array(list(itertools.permutations(range(6))))
    statistic = np.abs(centred[arrangements] @ centred) / np.sqrt(centred[arrangements] ** 2 @ centred**2)
    extreme = arrangements[int(np.argmax(statistic))] + 1.0
    frame = pl.DataFrame({"x": [1.0, 2, 3, 4, 5, 6], "y": extreme})
    res = stats.permutation_pvalue(frame, "x", "y", n_perm=2000)
    assert res.exact
    assert res.p == pytest.approx(2 / 720)
    # the studentised statistic's price at tiny n: perfect agreement is not its most extreme arrangement
    # (the products a_i b_i are unequal, so their spread is large): p = 56/720 at n = 6, under 0.05 from 7
    perfect = pl.DataFrame({"x": [1.0, 2, 3, 4, 5, 6, 7], "y": [1.0, 2, 3, 4, 5, 6, 7]})
    assert stats.permutation_pvalue(perfect.head(6), "x", "y", n_perm=2000).p == pytest.approx(56 / 720)
    assert stats.permutation_pvalue(perfect, "x", "y", n_perm=10_000).p < 0.05
    assert stats.permutation_pvalue(frame.head(3), "x", "y", n_perm=2000).p >= 1 / 6


def _duplicated_null(rng: np.random.Generator, n_groups: int, size: int) -> pl.DataFrame:
    """Exact null between groups (y independent of x and w); each group's tasks near-duplicates of one seed."""
    w = rng.normal(size=n_groups)
    x, y = w + 0.5 * rng.normal(size=n_groups), rng.normal(size=n_groups)
    noise = 0.05
    rows = [
        {
            "task_group": f"g{g}",
            "task": f"g{g}-{i}",
            "x": x[g] + noise * rng.normal(),
            "y": y[g] + noise * rng.normal(),
            "w": w[g] + noise * rng.normal(),
        }
        for g in range(n_groups)
        for i in range(size)
    ]
    return pl.DataFrame(rows)


def test_near_duplicates_kept_together_hold_the_size_counted_independent_they_do_not():
    # 10 seeds rewritten 3 times each (30 tasks), exact null between seeds. Counted as 30 independent
    # tasks the permutation test rejects at 0.05 in 31% of samples (measured, 300 samples); with the
    # task group as the unit (cluster="task_group") in 5.7%, nominal within Monte Carlo error (sd 1.3%).
    # The hierarchical bootstrap alike: levels=("task",) covers the true zero in 69% of samples,
    # levels=("task_group", "task") in 99% (150 samples; 10 groups, percentile, 95%).
    rng = np.random.default_rng(38)
    independent = together = covered_tasks = covered_groups = 0
    reps = 300
    for rep in range(reps):
        frame = _duplicated_null(rng, 10, 3)
        independent += stats.permutation_pvalue(frame, "x", "y", "w", n_perm=499, seed=rep).p <= 0.05
        grouped = stats.permutation_pvalue(frame, "x", "y", "w", n_perm=499, seed=rep, cluster="task_group")
        assert grouped.n == 10
        together += grouped.p <= 0.05
        if rep < 150:
            one = stats.hierarchical_bootstrap(frame, "y", "x", "w", levels=("task",), n_boot=300, seed=rep)
            two = stats.hierarchical_bootstrap(
                frame, "y", "x", "w", levels=("task_group", "task"), n_boot=300, seed=rep
            )
            assert (one.n, two.n, two.n_groups) == (30, 30, 10)
            covered_tasks += one.ci_low <= 0 <= one.ci_high
            covered_groups += two.ci_low <= 0 <= two.ci_high
    assert independent / reps > 0.2
    assert together / reps <= 0.05 + 3 * 0.0126
    assert covered_groups - covered_tasks > 0.2 * 150


def test_the_hierarchical_bootstrap_draws_as_a_plain_loop_does():
    # the vectorised draws against the definition written as a loop: groups, tasks within each, runs within
    # each; the two replicate distributions agree in mean and spread within Monte Carlo error
    rng = np.random.default_rng(3)
    rows = []
    for g in range(8):
        for t in range(int(rng.integers(1, 4))):
            depth, work = float(rng.integers(1, 6)), float(rng.integers(1, 30))
            rows += [
                {"g": f"g{g}", "task": f"t{t}", "passed": float(rng.random() < 0.6), "depth": depth, "work": work}
                for _ in range(int(rng.integers(1, 5)))
            ]
    runs = pl.DataFrame(rows)
    res = stats.hierarchical_bootstrap(runs, "passed", "depth", "work", levels=("g", "task"), n_boot=3000, seed=2)
    tasks = runs.group_by("g", "task", maintain_order=True).agg(pl.col("passed", "depth", "work"))
    groups = tasks.group_by("g", maintain_order=True).agg(pl.col("passed", "depth", "work"))
    loop = []
    for _ in range(2000):
        sample = []
        for gi in rng.integers(0, groups.height, groups.height):
            members = groups.row(int(gi), named=True)
            for ti in rng.integers(0, len(members["passed"]), len(members["passed"])):
                passes = members["passed"][ti]
                drawn = [passes[j] for j in rng.integers(0, len(passes), len(passes))]
                sample.append([np.mean(drawn), members["depth"][ti][0], members["work"][ti][0]])
        try:
            with np.errstate(invalid="ignore", divide="ignore"):
                loop.append(naive_partial_spearman(np.array(sample)))
        except np.linalg.LinAlgError:  # a constant column: a degenerate resample
            loop.append(np.nan)
    loop_values = np.array(loop)[~np.isnan(loop)]
    assert res.n_groups == 8
    assert res.n == tasks.height
    means = runs.group_by("g", "task").agg(pl.col("passed", "depth", "work").mean())
    assert res.r == pytest.approx(naive_partial_spearman(means.select("passed", "depth", "work").to_numpy()))
    ours_low, ours_high = res.ci_low, res.ci_high
    low, high = np.quantile(loop_values, [0.025, 0.975])
    assert ours_low == pytest.approx(low, abs=0.08)
    assert ours_high == pytest.approx(high, abs=0.08)
    assert abs(res.n_degenerate / 3000 - (2000 - len(loop_values)) / 2000) < 0.03


def test_hierarchical_bootstrap_under_covers_a_null_in_the_tie_regime_at_one_and_two_runs_per_task():
    # n = 30 tasks, 90% at D = 1, pass ~ W only (true partial correlation 0), each task's runs drawn at its
    # pass probability. The 95% percentile interval covers the zero in 72% of samples at one run per task
    # (the percentile bootstrap of the task means) and 86% at two (this test: 250 samples, 400 resamples;
    # 65% and 88% at 400 samples of another seed); the issue measured 66% and 82%.
    # Monte Carlo sd at 250 samples: 2.8% and 2.2%. The permutation p-value on the same samples rejects
    # at 0.05 in 0.8% and 2.8% (studentised, issue 44; 3.6% and 5.6% with the plain statistic): under its level.
    rng = np.random.default_rng(2038)
    coverage, rejection = {}, {}
    for runs in (1, 2):
        covered = rejected = reps = 0
        while reps < 250:
            work = rng.lognormal(2.0, 0.8, 30)
            chance = 1 / (1 + np.exp(0.8 * (np.log(work) - 2.0) + rng.normal(0, 1, 30)))
            depth = np.where(rng.random(30) < 0.9, 1, rng.choice([2, 3, 5, 10], 30)).astype(float)
            if len(set(depth)) < 2:
                continue
            reps += 1
            frame = pl.DataFrame(
                {
                    "task": np.repeat(np.arange(30), runs),
                    "passed": (rng.random(30 * runs) < np.repeat(chance, runs)).astype(float),
                    "depth": np.repeat(depth, runs),
                    "work": np.repeat(work, runs),
                }
            )
            res = stats.hierarchical_bootstrap(
                frame, "passed", "depth", "work", levels=("task",), n_boot=400, seed=reps
            )
            covered += res.ci_low <= 0 <= res.ci_high
            means = frame.group_by("task").agg(pl.col("passed", "depth", "work").mean())
            rejected += stats.permutation_pvalue(means, "passed", "depth", "work", n_perm=499, seed=reps).p <= 0.05
        coverage[runs], rejection[runs] = covered / reps, rejected / reps
    assert coverage[1] < 0.8, coverage  # far under its 95%
    assert coverage[2] < 0.95 - 3 * 0.014, coverage  # still under it at two runs
    assert coverage[1] < coverage[2], coverage
    assert all(rate <= 0.05 + 3 * 0.0138 for rate in rejection.values()), rejection


# --- issue 44: the permutation test's size where pass rate and depth both follow work -------------


def _work_dependence():
    """tests/bench/work_dependence.py: the nulls (written apart from depthlab) and the test before issue 44."""
    import importlib.util

    path = Path(__file__).parent / "bench" / "work_dependence.py"
    spec = importlib.util.spec_from_file_location("work_dependence", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_permutation_size_holds_where_pass_and_depth_both_follow_work():
    # Spearman 0.9 of pass rate and of depth with work, D and pass independent given W (the nulls and
    # what "partial correlation 0 on ranks" means for each: tests/bench/work_dependence.py). Before
    # issue 44 (the plain partial correlation permuted) the test rejected at 0.05 in 8.3-9.3% of these
    # nulls from n = 6 to 50 (tests/bench/bench_permutation_size.py, 2,000 data sets a cell); the
    # studentised statistic in 5.3-6.7%. Here 500 data sets at n = 12 and at n = 30 (1,000 pooled,
    # binomial sd 0.69% at 5%), both tests on the same data sets. The bound is the sweep's largest
    # excess (1.7 points, n = 6) plus 3 sd: what the studentised test is measured to hold, not 5%.
    # Measured on these data sets: 8.9% before, 5.9% now; the mixture null below 5.5%.
    wd = _work_dependence()
    estimand = wd.GAUSSIAN_PARTIAL_SPEARMAN  # the null's population partial Spearman, ~0
    assert estimand == pytest.approx(-0.0077, abs=5e-4)
    before = now = drawn = 0
    for n in (12, 30):
        rng = np.random.default_rng(4400 + n)
        for rep in range(500):
            values = wd.gaussian_null(rng, n)
            frame = pl.DataFrame(dict(zip(wd.COLUMNS, values.T, strict=True)))
            before += wd.correlation_pvalue(values, 199, rng) <= 0.05
            now += stats.permutation_pvalue(frame, "pass_rate", "depth", "work", n_perm=199, seed=rep).p <= 0.05
            drawn += 1
    assert now / drawn <= 0.05 + 0.017 + 3 * 0.0069, (before, now)
    assert before > now, (before, now)  # the same data sets: the plain statistic's excess, which this catches
    # the exact null (population partial Spearman 0, heavy-tailed residuals): 400 defined data sets at n = 12
    rng = np.random.default_rng(4412)
    rejected = defined = 0
    while defined < 400:
        values = wd.mixture_null(rng, 12)
        res = stats.permutation_pvalue(
            pl.DataFrame(dict(zip(wd.COLUMNS, values.T, strict=True))), "pass_rate", "depth", "work", n_perm=199, seed=0
        )
        if math.isnan(res.p):  # depth's ranks collinear with work's: no p-value reported
            continue
        defined += 1
        rejected += res.p <= 0.05
    assert rejected / defined <= 0.05 + 3 * 0.0109, rejected
