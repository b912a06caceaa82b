"""Noisy capped runs of known true depth, written apart from the library (not ``depthlab.simulate.noisy``, not
``depthlab.measures._noise``): the ground truth the interval for the true depth and the planner are checked on.

One scenario (:class:`Scenario`) draws ``n_tasks`` tasks and ``n_models`` models on the ladder:

* each task has a base rung (its true depth), from a shape over the rungs: ``"spread"`` (roughly even
  over 1 to 80, a share ``beyond`` past the top) or ``"shallow"`` (most at cap 1, as the synthetic
  collections, a share ``beyond`` past the top);
* one model, picked at random per task, is at the base rung; each other model is 0, 1 or 2 rungs deeper
  (probabilities 0.6, 0.25, 0.15): the task's true depth is the smallest model rung;
* a model's pass probability on the task at and above its rung is drawn per (task, model): ``"beta"``
  Beta(3.5, 1.5) (mean 0.7), ``"uniform"`` 0.5-0.95 (issue 38's setting), or ``"rising"`` (Beta
  draw at the rung, rising by 0.1 a rung above it, at most 0.98: a curve the library's model does not
  have);
* below its rung an attempt passes by luck, with a rate drawn per task uniform in [0, 2 x ``luck``]
  (mean ``luck``, the same for every model of the task: the library's model draws it per task and
  model), or ``luck`` itself with ``luck_law="fixed"``;
* ``attempts`` valid attempts per cell; with ``gap`` > 0 each task's ladder misses each cap with that
  probability (the same caps for every model of the task; at least one cap kept): the cells are not run.

Everything comes from one ``numpy`` generator seeded by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

CAPS = (1, 2, 3, 5, 10, 20, 40, 80)


@dataclass(frozen=True)
class Scenario:
    n_tasks: int = 300
    n_models: int = 2
    attempts: int = 3
    luck: float = 0.05
    gap: float = 0.0
    pass_law: str = "beta"  # beta | uniform | rising
    shape: str = "spread"  # spread | shallow
    beyond: float = 0.15
    luck_law: str = "task"  # task: uniform in [0, 2 x luck] per task, shared by its models | fixed: luck everywhere


@dataclass(frozen=True)
class Drawn:
    prob: np.ndarray  # (tasks, models, caps) P(pass) of one attempt
    run: np.ndarray  # (tasks, caps) bool: the cap is on the task's ladder
    true_rung: np.ndarray  # (tasks,) 0..7, 8 = beyond the top cap
    names: list[str]
    models: list[str]

    def true_depth(self) -> pl.DataFrame:
        depth = [CAPS[r] if r < len(CAPS) else None for r in self.true_rung.tolist()]
        return pl.DataFrame(
            {"dataset": "truth", "task": self.names, "true_cap": depth}, schema_overrides={"true_cap": pl.Int32}
        )


def draw(scenario: Scenario, rng: np.random.Generator) -> Drawn:
    n, m, c = scenario.n_tasks, scenario.n_models, len(CAPS)
    if scenario.shape == "spread":
        weights = np.full(c, (1 - scenario.beyond) / c)
    else:  # shallow: 70% at cap 1, the rest falling off
        weights = (1 - scenario.beyond) * np.array([0.7, 0.1, 0.06, 0.05, 0.04, 0.03, 0.01, 0.01])
    base = rng.choice(c + 1, size=n, p=np.append(weights, scenario.beyond))
    extra = rng.choice(3, size=(n, m), p=[0.6, 0.25, 0.15])
    extra[np.arange(n), rng.integers(0, m, n)] = 0
    rung = np.minimum(base[:, None] + extra, c)  # (tasks, models)
    at_rung = rng.uniform(0.5, 0.95, (n, m)) if scenario.pass_law == "uniform" else rng.beta(3.5, 1.5, (n, m))
    above = np.arange(c)[None, None, :] - rung[:, :, None]  # rungs above the model's own; < 0 below it
    if scenario.pass_law == "rising":
        passing = np.minimum(at_rung[:, :, None] + 0.1 * np.maximum(above, 0), 0.98)
    else:
        passing = np.broadcast_to(at_rung[:, :, None], (n, m, c))
    luck = rng.uniform(0, 2 * scenario.luck, n)[:, None, None] if scenario.luck_law == "task" else scenario.luck
    prob = np.where(above >= 0, passing, luck)
    run = rng.random((n, c)) >= scenario.gap
    run[~run.any(axis=1), rng.integers(0, c)] = True
    return Drawn(
        prob=prob,
        run=run,
        true_rung=rung.min(axis=1),
        names=[f"t{i:05d}" for i in range(n)],
        models=[f"model-{j}" for j in range(m)],
    )


def runs(drawn: Drawn, attempts: int, rng: np.random.Generator) -> pl.DataFrame:
    """The trials (dataset, task, model, cap, status): ``attempts`` attempts in every cell on the task's ladder."""
    outcomes = rng.random((*drawn.prob.shape, attempts)) < drawn.prob[..., None]
    on_ladder = np.broadcast_to(drawn.run[:, None, :, None], outcomes.shape)
    t, m, c, _ = np.nonzero(on_ladder)
    return pl.DataFrame(
        {
            "dataset": "truth",
            "task": np.array(drawn.names)[t],
            "model": np.array(drawn.models)[m],
            "cap": np.array(CAPS, dtype=np.int32)[c],
            "status": np.where(outcomes[on_ladder], "pass", "fail"),
        }
    )


def covered(depth: pl.DataFrame, drawn: Drawn, low: str, high: str) -> pl.DataFrame:
    """Per task: true_cap, whether (low, high] holds the true depth (null: no interval), the width in rungs."""
    below = {0: 0, **{cap: i + 1 for i, cap in enumerate(CAPS)}}  # a lower bound -> the first rung it admits
    joined = depth.join(drawn.true_depth(), on=["dataset", "task"])
    true_rung = pl.col("true_cap").replace_strict({cap: i for i, cap in enumerate(CAPS)}, default=len(CAPS))
    first = pl.col(low).replace_strict(below, default=None)
    last = pl.col(high).replace_strict({cap: i for i, cap in enumerate(CAPS)}, default=None).fill_null(len(CAPS))
    return joined.with_columns(
        has=pl.col(low).is_not_null(),
        hit=pl.when(pl.col(low).is_not_null()).then((true_rung >= first) & (true_rung <= last)),
        width=pl.when(pl.col(low).is_not_null()).then(last - first + 1),
    )


# ------------------------------------------------------------------ what the bench prints and the tests assert


def interval_row(scenario: Scenario, seed: int, *, level: float = 0.9, rules: tuple[str, ...] = ()) -> dict:
    """One scenario: the true-depth interval's coverage and median width; the ladder interval's coverage per rule.

    The ladder interval (``depth_low``, ``depth_high``] exists for solved and unsolved tasks; its
    coverage is over those (``ladder_has_<rule>`` says which share of tasks has one).
    """
    from depthlab.measures import estimate_depth

    rng = np.random.default_rng(seed)
    drawn = draw(scenario, rng)
    trials = runs(drawn, scenario.attempts, rng)
    depth = estimate_depth(trials, level=level)
    ci = covered(depth, drawn, "ci_low", "ci_high")
    row = {
        **{k: getattr(scenario, k) for k in ("attempts", "n_models", "luck", "gap", "pass_law", "shape", "n_tasks")},
        "coverage": float(ci["hit"].mean()),
        "median_width": float(ci["width"].median()),
        "beyond_open": float(ci.filter(pl.col("ci_high").is_null()).height / ci.height),
    }
    for rule in rules:
        ladder = covered(estimate_depth(trials, pass_rule=rule, level=None), drawn, "depth_low", "depth_high")
        row[f"ladder_{rule}"] = float(ladder["hit"].mean()) if ladder["has"].any() else None
        row[f"ladder_has_{rule}"] = float(ladder["has"].mean())
    return row


def noisy_tasks(drawn: Drawn):
    """The draw as :class:`depthlab.simulate.noisy.NoisyTasks`, for the planner's replay (its whole ladder is run)."""
    from depthlab.simulate.noisy import NoisyModel, NoisyTasks

    n, m, _ = drawn.prob.shape
    return NoisyTasks(model=NoisyModel(n_tasks=n, n_models=m, caps=CAPS), prob=drawn.prob, true_rung=drawn.true_rung)


def planner_rows(scenario: Scenario, seeds: range, *, pass_rule: str = "isotonic") -> dict:
    """``attempts="auto"`` against fixed 3 under ``pass_rule``, the adaptive climb replayed on this generator's tasks.

    Returns the runs of each (summed over the seeds), auto's share of fixed 3's runs, and each one's
    share exact and within one rung of the true depth (mean over the seeds).
    """
    from depthlab.simulate.noisy import replay_attempts

    totals = {key: np.zeros(3) for key in ("fixed3", "auto")}
    for seed in seeds:
        tasks = noisy_tasks(draw(scenario, np.random.default_rng(seed)))
        for key, attempts in (("fixed3", 3), ("auto", "auto")):
            got = replay_attempts(tasks, attempts=attempts, pass_rule=pass_rule, seed=seed)
            totals[key] += [got["runs"], got["exact"], got["within_one"]]
    n = len(seeds)
    return {
        "pass_rule": pass_rule,
        "runs_fixed3": totals["fixed3"][0],
        "runs_auto": totals["auto"][0],
        "auto_share": totals["auto"][0] / totals["fixed3"][0],
        "exact_fixed3": totals["fixed3"][1] / n,
        "exact_auto": totals["auto"][1] / n,
        "within_one_fixed3": totals["fixed3"][2] / n,
        "within_one_auto": totals["auto"][2] / n,
    }


# ------------------------------------------------------------------ the noisy model's own generator, written again


def logistic_horizon_runs(
    n_tasks: int,
    *,
    slopes: tuple[float, ...],
    luck: float,
    beyond: float,
    median: float,
    sigma: float,
    spread: float,
    attempts: int,
    rng: np.random.Generator,
    link: str = "logistic",
    horizons: str = "normal",
) -> pl.DataFrame:
    """Runs of the model :func:`depthlab.simulate.noisy_fit.fit_noisy_model` fits, written from its docstring alone.

    ``P_m(pass | c) = luck + (1 - luck) * F(slope_m * (log c - log h_tm))``, ``log h_tm = log median + sigma * u_t
    + spread * z_tm``, a share ``beyond`` at luck everywhere. ``link="probit"`` makes F the normal CDF (scaled
    to the logistic's slope at 0) and ``horizons="t3"`` draws u from Student's t with 3 degrees of freedom
    scaled to unit sd: two ways the fitted model is wrong.
    """
    from scipy.stats import norm

    m = len(slopes)
    u = rng.standard_normal(n_tasks) if horizons == "normal" else rng.standard_t(3, n_tasks) / np.sqrt(3.0)
    log_h = np.log(median) + sigma * u[:, None] + spread * rng.standard_normal((n_tasks, m))
    x = np.asarray(slopes)[None, :, None] * (np.log(np.array(CAPS))[None, None, :] - log_h[:, :, None])
    curve = 1 / (1 + np.exp(-x)) if link == "logistic" else norm.cdf(x * np.sqrt(2 * np.pi) / 4)  # slope 1/4 at 0
    curve[rng.random(n_tasks) < beyond] = 0.0
    prob = luck + (1 - luck) * curve
    drawn = Drawn(prob=prob, run=np.ones((n_tasks, len(CAPS)), dtype=bool), true_rung=np.zeros(n_tasks, dtype=int),
                  names=[f"t{i:05d}" for i in range(n_tasks)], models=[f"model-{j}" for j in range(m)])  # fmt: skip
    return runs(drawn, attempts, rng)
