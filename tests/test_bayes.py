"""The Bayesian depth (depthlab.measures.bayes): exact posterior, questplus, planner, calibration."""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from depthlab import schema
from depthlab.measures import depth_posterior, estimate_depth, plan_missing
from depthlab.measures.bayes import (
    NoiseGrid,
    information_gain,
    log_likelihood,
    minimum_posterior,
    noise_grid,
    posteriors,
    rung_posterior,
)
from depthlab.measures.depth import evidence_grid

sys.path.insert(0, str(Path(__file__).parent / "bench"))
from bayes_truth import Setting, draw, run_cells


def _trials(rows: list[tuple[str, str, int, str]]) -> pl.DataFrame:
    """Trials of dataset d from (task, model, cap, status) rows."""
    task, model, cap, status = zip(*rows, strict=True)
    return schema.conform(
        pl.DataFrame({"dataset": "d", "task": task, "model": model, "cap": cap, "status": status}), "trials"
    )


def _brute_force_depth(curves: np.ndarray, rung: np.ndarray, prior: np.ndarray, counts: list) -> np.ndarray:
    """P(D = k) by enumerating every joint state of the models, loops only (written apart from the module)."""
    n_rungs = curves.shape[1] + 1
    out = np.zeros(n_rungs)
    for joint in itertools.product(range(len(rung)), repeat=len(counts)):
        weight = 1.0
        for state, (n_pass, n_valid) in zip(joint, counts, strict=True):
            weight *= prior[state]
            for j in range(curves.shape[1]):
                p = curves[state, j]
                weight *= p ** n_pass[j] * (1 - p) ** (n_valid[j] - n_pass[j])
        out[min(rung[s] for s in joint)] += weight
    return out / out.sum()


def test_posterior_equals_brute_force_enumeration_on_a_small_grid():
    caps = (1, 2, 3)
    grid = noise_grid(len(caps), q=0.3)
    rng = np.random.default_rng(5)
    prior = rng.dirichlet(np.ones(len(grid.rung)))
    rows = [("t", "a", 1, "fail"), ("t", "a", 2, "pass"), ("t", "a", 2, "fail"), ("t", "a", 3, "pass")]
    rows += [("t", "b", 1, "fail"), ("t", "b", 3, "fail"), ("t", "b", 3, "pass")]
    trials = _trials(rows)
    cells = evidence_grid(trials, caps=caps, models=["a", "b"], pass_rule="any")
    (post,) = posteriors(cells, trials, caps=caps, q=0.3, grid=grid, log_prior=np.log(prior))
    counts = [([0, 1, 1], [1, 2, 1]), ([0, 0, 1], [1, 0, 2])]
    # the brute force over a coarse subset of states keeps it small: compare on a 40-state sub-grid
    keep = np.sort(rng.choice(len(grid.rung), size=40, replace=False))
    sub = NoiseGrid(grid.curves[keep], grid.rung[keep], grid.factors[keep], grid.n_levels)
    sub_prior = prior[keep] / prior[keep].sum()
    (post_sub,) = posteriors(cells, trials, caps=caps, q=0.3, grid=sub, log_prior=np.log(sub_prior))
    expected = _brute_force_depth(sub.curves, sub.rung, sub_prior, counts)
    np.testing.assert_allclose(post_sub.depth[0], expected, rtol=1e-9, atol=1e-12)
    assert post.depth[0].sum() == pytest.approx(1.0)


def test_information_gain_equals_brute_force():
    caps = (1, 2)
    grid = noise_grid(len(caps), q=0.4)
    rng = np.random.default_rng(1)
    states = rng.dirichlet(np.ones(len(grid.rung)), size=(1, 2))  # one task, two models
    gain = information_gain(states, grid)

    def entropy(p: np.ndarray) -> float:
        return -sum(x * math.log2(x) for x in p if x > 0)

    def depth_of(model_states: np.ndarray) -> np.ndarray:
        return minimum_posterior(rung_posterior(model_states, grid.rung, grid.n_rungs)[None])[0]

    before = entropy(depth_of(states[0]))
    for model in range(2):
        for cap in range(len(caps)):
            expected_after = 0.0
            for passed in (True, False):
                like = grid.curves[:, cap] if passed else 1 - grid.curves[:, cap]
                joint = states[0, model] * like
                p_outcome = joint.sum()
                updated = states[0].copy()
                updated[model] = joint / p_outcome
                expected_after += p_outcome * entropy(depth_of(updated))
            assert gain[0, model, cap] == pytest.approx(before - expected_after, abs=1e-9)


def test_posterior_equals_questplus_on_its_weibull_model():
    questplus = pytest.importorskip("questplus")
    caps = (1, 2, 3, 5, 10, 20, 40, 80)
    thresholds, slopes, lower, lapse = [2.0, 5.0, 12.0, 30.0], [1.5, 3.0], [0.01, 0.05], [0.02]
    quest = questplus.QuestPlusWeibull(
        intensities=list(caps),
        thresholds=thresholds,
        slopes=slopes,
        lower_asymptotes=lower,
        lapse_rates=lapse,
        stim_scale="linear",
    )
    outcomes = [(1, "No"), (5, "No"), (10, "Yes"), (10, "No"), (20, "Yes"), (3, "No"), (40, "Yes")]
    for cap, response in outcomes:
        quest.update(intensity=cap, response=response)
    # the same curves, written here from the Weibull's closed form
    params = list(itertools.product(thresholds, slopes, lower, lapse))
    x = np.array(caps, dtype=float)
    curves = np.array([1 - d - (1 - g - d) * np.exp(-((x / t) ** b)) for t, b, g, d in params])
    q = 0.5
    reaches = curves >= q
    rung = np.where(reaches.any(axis=1), reaches.argmax(axis=1), len(caps))
    grid = NoiseGrid(curves, rung.astype(np.int64), np.zeros((len(params), 1), dtype=np.int64), (1,))
    trials = _trials([("t", "m", cap, "pass" if r == "Yes" else "fail") for cap, r in outcomes])
    cells = evidence_grid(trials, caps=caps, models=["m"], pass_rule="any")
    (post,) = posteriors(cells, trials, caps=caps, q=q, grid=grid, log_prior=np.zeros(len(params)))
    theirs = quest.posterior.transpose("threshold", "slope", "lower_asymptote", "lapse_rate").values.reshape(-1)
    np.testing.assert_allclose(post.states[0, 0], theirs, rtol=1e-9, atol=1e-12)
    by_rung = np.bincount(rung, weights=theirs, minlength=len(caps) + 1)
    np.testing.assert_allclose(post.depth[0], by_rung, rtol=1e-9, atol=1e-12)


def test_log_likelihood_is_the_binomial_without_its_constant():
    curves = np.array([[0.3, 0.6]])
    got = np.exp(log_likelihood(curves, np.array([[1, 2]]), np.array([[3, 2]])))[0, 0]
    assert got == pytest.approx(0.3 * 0.7**2 * 0.6**2)


def test_estimate_depth_bayes_reports_a_clear_depth_with_its_probability():
    rows = []
    for task in ("shallow", "deep"):
        for cap in (1, 2, 3, 5):
            passes = 6 if (task == "shallow" or cap == 5) else 0
            rows += [(task, "m", cap, "pass")] * passes + [(task, "m", cap, "fail")] * (6 - passes)
    depth = estimate_depth(_trials(rows), caps=(1, 2, 3, 5), pass_rule="bayes")
    assert depth.columns == list(schema.DEPTH)
    got = {row["task"]: row for row in depth.iter_rows(named=True)}
    assert got["shallow"]["depth"] == 1
    assert got["deep"]["depth"] == 5
    assert got["deep"]["status"] == "solved"
    assert got["deep"]["p_depth"] >= 0.95
    assert got["deep"]["ci_low"] <= 3
    assert got["deep"]["ci_high"] == 5
    posterior = depth_posterior(_trials(rows), caps=(1, 2, 3, 5))
    sums = posterior.group_by("task").agg(pl.col("probability").sum())["probability"].to_list()
    assert sums == pytest.approx([1.0, 1.0])


def test_existing_rules_do_not_fill_p_depth():
    depth = estimate_depth(_trials([("t", "m", 1, "fail"), ("t", "m", 2, "pass")]), level=None)
    assert depth["p_depth"].to_list() == [None]
    assert depth["depth"].to_list() == [2]


def test_plan_bayes_rejects_a_bad_error():
    tasks = schema.conform(pl.DataFrame({"dataset": ["d"], "task": ["t"]}), "tasks")
    with pytest.raises(ValueError, match="'error' parameter of plan_missing"):
        plan_missing(_trials([("t", "m", 1, "fail")]), tasks, models=["m"], mode="bayes", error=1.5)


def test_calibration_of_p_depth_on_a_generator_apart():
    """Among tasks the planner ends at p_depth >= 0.95, the share right is 0.95 within binomial error.

    150 tasks of a flat curve (0.8 at and above the step, 2% luck), one model, run round by round
    until the plan is empty. With about 140 tasks reported sure, the share right has a binomial
    standard error of about 0.018 at 0.95: 0.89 is over three standard errors under it.
    """
    setting = Setting(level=0.8, luck=0.02)
    truth = draw(setting, 150, np.random.default_rng(11))
    rng = np.random.default_rng(12)
    tasks = schema.conform(pl.DataFrame({"dataset": "sim", "task": truth.names}), "tasks")
    trials = schema.empty("trials")
    for _ in range(40):
        plan = plan_missing(trials, tasks, models=truth.models, mode="bayes", max_attempts=6)
        if plan.is_empty():
            break
        trials = pl.concat([trials, schema.conform(run_cells(truth, plan, rng), "trials")])
    else:
        pytest.fail("the planner did not finish in 40 rounds")
    depth = estimate_depth(trials, models=truth.models, pass_rule="bayes").sort("task")
    caps = list(schema.CAPS)
    reported = np.array([caps.index(d) if d is not None else len(caps) for d in depth["depth"].to_list()])
    sure = depth["p_depth"].to_numpy() >= 0.95
    assert sure.sum() >= 120
    assert (reported[sure] == truth.true_rung[sure]).mean() >= 0.89


class _NoisyEngine:
    """An engine of known curves in memory (the round loop's protocol): a run at cap c passes with the curve's P."""

    name = "simulated"

    def __init__(self, prob: dict[tuple[str, str], list[float]], caps: tuple[int, ...], seed: int) -> None:
        self.prob, self.caps, self.rng = prob, caps, np.random.default_rng(seed)
        self.rows: list[dict] = []
        self.rounds = 0
        self.progress, self.note, self.jobs_dir = False, "", None

    def check(self) -> None:
        pass

    def resume(self, echo) -> None:
        pass

    def preflight(self, tasks, echo) -> pl.DataFrame:
        return schema.preflight_failures([])

    def next_round(self) -> int:
        return self.rounds + 1

    def run_round(self, plan, number, tasks, echo) -> None:
        self.rounds += 1
        for row in plan.iter_rows(named=True):
            p = self.prob[(row["task"], row["model"])][self.caps.index(row["cap"])]
            for _ in range(row["attempts"]):
                passed = self.rng.random() < p
                self.rows.append({"dataset": "d", "task": row["task"], "model": row["model"], "cap": row["cap"],
                                  "status": "pass" if passed else "fail", "n_turns": row["cap"],
                                  "source": f"sim/{len(self.rows)}/result.json"})  # fmt: skip

    def load_trials(self) -> pl.DataFrame:
        return schema.conform(pl.DataFrame(self.rows), "trials") if self.rows else schema.empty("trials")


def test_measure_with_an_error_runs_bayesian_rounds_and_reports_p_depth():
    from depthlab.engines import measure

    caps = (1, 2, 3, 5)
    steps = {"t1": 0, "t3": 2, "t5": 3, "never": 4, "t2": 1, "u3": 2}
    prob = {(task, "p/a"): [0.9 if j >= step else 0.0 for j in range(4)] for task, step in steps.items()}
    tasks = schema.conform(pl.DataFrame({"dataset": "d", "task": list(steps), "source": "/t"}), "tasks")
    lines: list[str] = []
    engine = _NoisyEngine(prob, caps, seed=3)
    result = measure(engine, tasks, models=["p/a"], caps=caps, error=0.05, max_attempts=6, echo=lines.append)
    depth = result.depth.sort("task")
    assert result.complete
    assert depth["p_depth"].min() >= 0.95
    got = dict(depth.select("task", "depth").iter_rows())
    assert got == {"never": None, "t1": 1, "t2": 2, "t3": 3, "t5": 5, "u3": 3}
    assert dict(depth.select("task", "status").iter_rows())["never"] == "unsolved"
    assert result.runs < 6 * len(caps) * len(steps)


def test_cli_plan_error_forecast_prints_runs_and_turns_before_anything_is_spent(tmp_path, capsys):
    from depthlab import cli

    out = tmp_path / "sim"
    assert cli.main(["simulate", str(out), "--scale", "0.02", "--seed", "4", "--public-attempts", "0"]) == 0
    args = ["plan", "--tasks", str(out / "tasks"), "--models", "sim/model-a,sim/model-b", "--error", "0.05"]
    assert cli.main([*args, "--forecast", "-o", str(tmp_path / "plan.csv")]) == 0
    err = capsys.readouterr().err
    assert "bayes plan:" in err
    assert "forecast (" in err
    assert "more runs, at most" in err
    assert pl.read_csv(tmp_path / "plan.csv").height > 0
    assert cli.main([*args[:-2], "--forecast", "-o", str(tmp_path / "p.csv")]) == 2
    assert "--forecast needs --error" in capsys.readouterr().err


def test_cli_plan_forecast_from_a_stated_pass_probability_prices_noisier_models_higher(tmp_path, capsys):
    from depthlab import cli

    out = tmp_path / "sim"
    assert cli.main(["simulate", str(out), "--scale", "0.02", "--seed", "4", "--public-attempts", "0"]) == 0
    args = ["plan", "--tasks", str(out / "tasks"), "--models", "sim/model-a", "--new-models", "--error", "0.05"]
    runs = {}
    for pass_prob in ("0.9", "0.4"):
        code = cli.main([*args, "--forecast", "--pass-prob", pass_prob, "--luck", "0", "-o", str(tmp_path / "p.csv")])
        assert code == 0
        err = capsys.readouterr().err
        assert f"stated pass probability {pass_prob} at the depth, luck 0" in err
        runs[pass_prob] = float(err.split("about ")[1].split(" more runs")[0])
    assert runs["0.4"] > runs["0.9"] > 0
    assert cli.main([*args, "--forecast", "--pass-prob", "0.1", "-o", str(tmp_path / "p.csv")]) == 1
    assert "pass_prob must be between q = 0.2 and 1" in capsys.readouterr().err
    assert cli.main([*args, "--pass-prob", "0.5", "-o", str(tmp_path / "p.csv")]) == 2
    assert "--pass-prob needs --forecast" in capsys.readouterr().err
