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
  (mean ``luck``; the library's model has one rate);
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


@dataclass(frozen=True)
class Drawn:
    prob: np.ndarray  # (tasks, models, caps) P(pass) of one attempt
    run: np.ndarray  # (tasks, caps) bool: the cap is on the task's ladder
    true_rung: np.ndarray  # (tasks,) 0..7, 8 = beyond the top cap
    names: list[str]
    models: list[str]

    def true_depth(self) -> pl.DataFrame:
        depth = [CAPS[r] if r < len(CAPS) else None for r in self.true_rung.tolist()]
        return pl.DataFrame({"dataset": "truth", "task": self.names, "true_cap": depth}, schema_overrides={"true_cap": pl.Int32})


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
    if scenario.pass_law == "uniform":
        at_rung = rng.uniform(0.5, 0.95, (n, m))
    else:
        at_rung = rng.beta(3.5, 1.5, (n, m))
    above = np.arange(c)[None, None, :] - rung[:, :, None]  # rungs above the model's own; < 0 below it
    if scenario.pass_law == "rising":
        passing = np.minimum(at_rung[:, :, None] + 0.1 * np.maximum(above, 0), 0.98)
    else:
        passing = np.broadcast_to(at_rung[:, :, None], (n, m, c))
    luck = rng.uniform(0, 2 * scenario.luck, n)[:, None, None]
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
    """Per task: true_cap, whether (low, high] holds the true depth (null bounds: no interval), and the width in rungs."""
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
