"""Noisy capped runs of known depth at threshold q, written apart from :mod:`depthlab.measures.bayes`.

The generator the Bayesian planner is checked on (``tests/bench/bench_bayes_planner.py`` and
``tests/test_bayes.py``). Its shapes are not the library's grid of curves:

* ``"flat"``: a model passes with probability ``level`` at every cap from its rung up (a step);
* ``"linear"``: ``level`` at the rung, ``+ slope`` a rung above it, at most 0.98;
* ``"exp"``: the curve in turns, ``level * (1 - exp(-(c - D + 1) / tau))`` at caps c >= D turns, D
  the model's step in turns (a ladder cap): at the step it can sit under q, so the depth at q is
  the first cap where the curve reaches q, not the step;
* below the step, a lucky pass at rate ``luck`` (the same for every task), or, with ``luck_high``,
  at a rate drawn per task uniform in ``luck`` to ``luck_high`` (shared by the task's models).

The task's step rung is drawn ``"uniform"`` over the ladder and beyond it, or ``"skewed"`` (weight
0.5 ** r on rung r); a second model's step is 0, 1 or 2 rungs deeper (0.5, 0.3, 0.2). The true
depth at q is the minimum over models of each model's first cap where its curve reaches ``q``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

CAPS = (1, 2, 3, 5, 10, 20, 40, 80)


@dataclass(frozen=True)
class Truth:
    """One collection: P(pass) per (task, model, cap), and each task's true rung at q (len(CAPS) = beyond)."""

    prob: np.ndarray
    true_rung: np.ndarray
    step_weights: np.ndarray  # the step's distribution over rungs (for a planner told the noise)
    names: list[str]
    models: list[str]


@dataclass(frozen=True)
class Setting:
    shape: str = "flat"  # flat | linear | exp
    level: float = 0.8
    slope: float = 0.2
    tau: float = 3.0
    luck: float = 0.02
    n_models: int = 1
    depths: str = "uniform"  # uniform | skewed
    q: float = 0.2
    luck_high: float | None = None  # luck per task uniform in [luck, luck_high] when set

    def curve(self, step: int) -> np.ndarray:
        """P(pass) at each cap of a model whose step is at rung ``step`` (len(CAPS) = beyond)."""
        caps = np.array(CAPS, dtype=float)
        index = np.arange(len(CAPS))
        if self.shape == "flat":
            above = np.full(len(CAPS), self.level)
        elif self.shape == "linear":
            above = np.minimum(self.level + self.slope * (index - step), 0.98)
        else:
            start = CAPS[step] if step < len(CAPS) else np.inf
            above = self.level * (1 - np.exp(-(caps - start + 1) / self.tau))
        return np.where(index >= step, above, self.luck)


def draw(setting: Setting, n_tasks: int, rng: np.random.Generator) -> Truth:
    n_rungs = len(CAPS) + 1
    weights = np.ones(n_rungs) if setting.depths == "uniform" else 0.5 ** np.arange(n_rungs)
    weights = weights / weights.sum()
    base = rng.choice(n_rungs, size=n_tasks, p=weights)
    steps = [base]
    for _ in range(1, setting.n_models):
        steps.append(np.minimum(base + rng.choice(3, size=n_tasks, p=[0.5, 0.3, 0.2]), n_rungs - 1))
    prob = np.stack([np.stack([setting.curve(int(s)) for s in model]) for model in steps], axis=1)
    if setting.luck_high is not None:  # drawn after the steps: the steps are those of the same seed without it
        task_luck = rng.uniform(setting.luck, setting.luck_high, size=n_tasks)
        below = np.arange(len(CAPS))[None, None, :] < np.stack(steps, axis=1)[:, :, None]
        prob = np.where(below, task_luck[:, None, None], prob)
    reaches = prob >= setting.q
    first = np.where(reaches.any(axis=2), reaches.argmax(axis=2), len(CAPS))
    return Truth(
        prob=prob,
        true_rung=first.min(axis=1),
        step_weights=weights,
        names=[f"task{i:04d}" for i in range(n_tasks)],
        models=[f"model{m}" for m in range(setting.n_models)],
    )


def run_cells(truth: Truth, plan: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
    """Run a plan's cells (each of its attempts) on the truth: trials rows (dataset, task, model, cap, status, n_turns).

    A failure uses every turn of its cap; a pass a uniform share of them (at least one).
    """
    if plan.is_empty():
        return pl.DataFrame()
    task_index = {name: i for i, name in enumerate(truth.names)}
    model_index = {name: i for i, name in enumerate(truth.models)}
    rows = plan.select("task", "model", "cap", "attempts").rows()
    tasks, models, caps, statuses, turns = [], [], [], [], []
    for task, model, cap, attempts in rows:
        p = truth.prob[task_index[task], model_index[model], CAPS.index(cap)]
        for _ in range(attempts):
            passed = bool(rng.random() < p)
            tasks.append(task)
            models.append(model)
            caps.append(cap)
            statuses.append("pass" if passed else "fail")
            turns.append(int(rng.integers(1, cap + 1)) if passed else cap)
    return pl.DataFrame(
        {"dataset": "sim", "task": tasks, "model": models, "cap": caps, "status": statuses, "n_turns": turns}
    )
