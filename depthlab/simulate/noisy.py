"""A noisy generative model of turn-capped runs, of known true D: how sure each D rule is.

The demo's model (:mod:`depthlab.simulate.model`) passes a capped run exactly when the cap reaches
the model's effective depth. Real models are noisier: the same model passes the same task at the
same cap some times and not others. Here a task's pass probability rises smoothly with the cap,

``P_m(pass | cap c) = luck + (1 - luck) * logistic(slope_m * (log c - log h_tm))``

with ``h_tm`` the task's horizon for model m (turns; log-normal over tasks around
``depth_median``, each model's horizon the task's times a log-normal factor of sd
``model_spread``), ``slope_m`` a slope per model (uniform in ``slope_range``), and ``luck`` a
small chance of a pass at any cap (the rare non-monotone luck). A share ``beyond`` of tasks is
beyond every model (P = luck at every cap).

**The true D** (fixed before any rule was run on it): the smallest ladder cap at which some model's
P(pass | cap) is at least one half, min over models, in the manner of a 50% time horizon; none
(beyond the top, right-censored) when no cap on the ladder reaches one half. Errors are counted
in *rungs* of the ladder (the index of a cap; "beyond the top" is one rung above the top cap).
A rule's D is **within one rung** when the rung difference is at most 1.

Everything is drawn from one ``numpy`` generator seeded by the caller: a seed fixes every table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from depthlab import schema
from depthlab._checks import PASS_RULES
from depthlab.measures import estimate_depth, plan_missing
from depthlab.measures._rules import model_depth_index
from depthlab.schema import CAPS

#: The D rules the rule table compares (``"any"`` is the paper's): every pass rule, named once in
#: :data:`depthlab._checks.PASS_RULES`.
RULES: tuple[str, ...] = PASS_RULES


@dataclass(frozen=True)
class NoisyModel:
    """Parameters of the noisy model (module docstring); the defaults are a TB2-like mix of depths.

    ``depth_median`` 1 with ``depth_sigma`` 0.3 puts about nine tasks in ten at D = 1, where the
    paper places the synthetic collections.
    """

    n_tasks: int = 200
    n_models: int = 2
    depth_median: float = 4.0
    depth_sigma: float = 1.2
    model_spread: float = 0.35
    slope_range: tuple[float, float] = (2.0, 5.0)
    luck: float = 0.03
    beyond: float = 0.1
    caps: tuple[int, ...] = CAPS


@dataclass(frozen=True)
class NoisyTasks:
    """One draw of tasks: ``prob`` (tasks, models, caps) of passing, the true rung per task."""

    model: NoisyModel
    prob: np.ndarray
    true_rung: np.ndarray  # (tasks,) index of the true D on the ladder; len(caps) = beyond the top
    slope: np.ndarray | None = None  # (models,) the slopes drawn, to check a fit against

    @property
    def names(self) -> list[str]:
        return [f"task-{i:04d}" for i in range(len(self.true_rung))]

    @property
    def models(self) -> list[str]:
        return [f"noisy/model-{m}" for m in range(self.prob.shape[1])]

    def truth(self) -> pl.DataFrame:
        """The true ladder D per task (:data:`depthlab.schema.NOISY_TRUTH`: ``d_star``, null beyond the top cap).

        ``d_star`` is the name the demo's truth table (:mod:`depthlab.simulate.truth`) gives the same
        quantity, the true D on the ladder.
        """
        caps = self.model.caps
        depth = [caps[r] if r < len(caps) else None for r in self.true_rung.tolist()]
        return pl.DataFrame({"dataset": "noisy", "task": self.names, "d_star": depth}, schema=schema.NOISY_TRUTH)

    def tasks(self) -> pl.DataFrame:
        """The tasks table of the draw (dataset, task)."""
        return schema.conform(pl.DataFrame({"dataset": "noisy", "task": self.names}), "tasks")


def pass_probability(
    log_horizon: np.ndarray, slope: np.ndarray, luck: float, caps: Sequence[int], beyond: np.ndarray
) -> np.ndarray:
    """The model's P(pass) per (task, model, cap): ``luck + (1 - luck) * logistic(slope_m * (log c - log h_tm))``.

    ``log_horizon`` is (tasks, models) (or (tasks, 1): every model at the task's horizon), ``slope``
    (models,), ``beyond`` (tasks,) the tasks beyond every model (P = luck at every cap). The one
    place the model's curve is written: :func:`draw_tasks` and the fitted model's noise-alone draws
    (:func:`depthlab.simulate.noisy_fit.draw_noise_alone`) both read it.
    """
    log_caps = np.log(np.asarray(caps, dtype=np.float64))
    curve = 1.0 / (1.0 + np.exp(-slope[None, :, None] * (log_caps[None, None, :] - log_horizon[:, :, None])))
    curve[beyond] = 0.0
    return luck + (1.0 - luck) * curve


def true_rungs(prob: np.ndarray) -> np.ndarray:
    """The true D's rung per task (module docstring): the smallest cap where some model's P reaches 1/2.

    ``prob`` is (tasks, models, caps); the rung is ``caps`` long (one past the top) when none does.
    """
    reaches = prob >= 0.5
    return np.where(reaches.any(axis=2), reaches.argmax(axis=2), prob.shape[2]).min(axis=1)


def draw_tasks(model: NoisyModel, rng: np.random.Generator) -> NoisyTasks:
    """Draw ``model.n_tasks`` tasks with ``model.n_models`` models: their pass probabilities and true D."""
    n, m = model.n_tasks, model.n_models
    horizon = np.log(model.depth_median) + model.depth_sigma * rng.standard_normal(n)
    per_model = horizon[:, None] + model.model_spread * rng.standard_normal((n, m))
    slope = rng.uniform(*model.slope_range, m)
    beyond = rng.random(n) < model.beyond
    prob = pass_probability(per_model, slope, model.luck, model.caps, beyond)
    return NoisyTasks(model=model, prob=prob, true_rung=true_rungs(prob), slope=slope)


def draw_counts(tasks: NoisyTasks, attempts: np.ndarray | int, rng: np.random.Generator) -> np.ndarray:
    """Passes among ``attempts`` runs of every (task, model, cap): binomial draws, shape of ``tasks.prob``."""
    return rng.binomial(np.broadcast_to(np.asarray(attempts), tasks.prob.shape), tasks.prob)


def counts_to_trials(tasks: NoisyTasks, n_pass: np.ndarray, n_valid: np.ndarray) -> pl.DataFrame:
    """The trials table of counts (one row per attempt: passes first, then failures, in each cell)."""
    t, m, c = np.nonzero(n_valid)
    valid = n_valid[t, m, c]
    rows = np.repeat(np.arange(len(t)), valid)
    within = np.arange(len(rows)) - np.repeat(np.cumsum(valid) - valid, valid)
    passed = within < n_pass[t, m, c][rows]
    names, models, caps = np.array(tasks.names), np.array(tasks.models), np.asarray(tasks.model.caps)
    frame = pl.DataFrame(
        {
            "dataset": "noisy",
            "task": names[t[rows]],
            "model": models[m[rows]],
            "cap": caps[c[rows]].astype(np.int32),
            "status": np.where(passed, "pass", "fail"),
        }
    )
    return schema.conform(frame, "trials")


def rung_errors(rung: np.ndarray, true_rung: np.ndarray) -> dict[str, float]:
    """Bias (mean rung difference), spread (its sd), share exact and share within one rung."""
    diff = rung.astype(np.int64) - true_rung.astype(np.int64)
    return {
        "bias": float(diff.mean()),
        "spread": float(diff.std()),
        "exact": float((diff == 0).mean()),
        "within_one": float((np.abs(diff) <= 1).mean()),
    }


def rule_table(
    model: NoisyModel | None = None,
    *,
    attempts: Sequence[int] = (1, 2, 3, 4, 5),
    n_models: Sequence[int] = (1, 2, 3, 4),
    rules: Sequence[str] = RULES,
    q: float = 0.5,
    replications: int = 5,
    seed: int = 0,
) -> pl.DataFrame:
    """Each D rule's bias and spread, in rungs, by attempts per cell and number of models.

    Every cell of the ladder gets ``attempts`` runs (a full sweep). Per replication one set of
    tasks with ``max(n_models)`` models is drawn; the first k models count for ``n_models = k``
    (so adding models never changes the ones already there), and the attempts are nested too (the
    first a attempts of the five).

    Returns
    -------
    pl.DataFrame
        Columns rule, attempts, n_models, bias, spread, exact, within_one, n_tasks (pooled over
        the replications).

    Examples
    --------
    >>> table = rule_table(NoisyModel(n_tasks=50), attempts=[1], n_models=[1], replications=1)
    >>> table.columns
    ['rule', 'attempts', 'n_models', 'bias', 'spread', 'exact', 'within_one', 'n_tasks']
    """
    model = model or NoisyModel()
    rng = np.random.default_rng(seed)
    widest = NoisyModel(**{**model.__dict__, "n_models": max(n_models)})
    top = max(attempts)
    estimated: dict[tuple[str, int, int], list[np.ndarray]] = {}
    truths: dict[int, list[np.ndarray]] = {k: [] for k in n_models}
    for _ in range(replications):
        tasks = draw_tasks(widest, rng)
        # one outcome per attempt, so that a attempts are the first a of the most
        outcomes = rng.random((*tasks.prob.shape, top)) < tasks.prob[..., None]
        for k in n_models:
            truths[k].append(true_rungs(tasks.prob[:, :k]))
            for a in attempts:
                n_pass = outcomes[:, :k, :, :a].sum(axis=-1)
                n_valid = np.full(n_pass.shape, a)
                for rule in rules:
                    rung = model_depth_index(n_pass, n_valid, rule, q).min(axis=1)
                    estimated.setdefault((rule, a, k), []).append(rung)
    rows = []
    for (rule, a, k), rungs in estimated.items():
        got, truth = np.concatenate(rungs), np.concatenate(truths[k][: len(rungs)])
        rows.append({"rule": rule, "attempts": a, "n_models": k, **rung_errors(got, truth), "n_tasks": len(got)})
    return pl.DataFrame(rows).sort("rule", "attempts", "n_models")


def replay_attempts(
    tasks: NoisyTasks,
    *,
    attempts: int | str,
    pass_rule: str = "isotonic",
    q: float = 0.5,
    max_attempts: int = 3,
    mode: str = "adaptive",
    seed: int = 0,
    max_rounds: int = 60,
) -> dict[str, float]:
    """Run :func:`~depthlab.measures.plan_missing` round by round on the noisy tasks until its plan is empty.

    Each planned cell's further attempts are drawn from the true pass probabilities. Returns the
    runs spent, the rounds, and the rule's rung errors against the true D (:func:`rung_errors`).
    """
    rng = np.random.default_rng(seed)
    shape = tasks.prob.shape
    n_pass = np.zeros(shape, dtype=np.int64)
    n_valid = np.zeros(shape, dtype=np.int64)
    task_index = {name: i for i, name in enumerate(tasks.names)}
    model_index = {name: i for i, name in enumerate(tasks.models)}
    cap_index = {cap: i for i, cap in enumerate(tasks.model.caps)}
    frame, rounds = tasks.tasks(), 0
    for rounds in range(1, max_rounds + 1):  # noqa: B007 (the count is returned)
        plan = plan_missing(
            counts_to_trials(tasks, n_pass, n_valid),
            frame,
            models=tasks.models,
            caps=tasks.model.caps,
            attempts=attempts,
            max_attempts=max_attempts,
            mode=mode,
            pass_rule=pass_rule,
            q=q,
        )
        if plan.height == 0:
            break
        t = np.array([task_index[x] for x in plan["task"].to_list()])
        m = np.array([model_index[x] for x in plan["model"].to_list()])
        c = np.array([cap_index[x] for x in plan["cap"].to_list()])
        more = plan["attempts"].to_numpy()
        n_pass[t, m, c] += rng.binomial(more, tasks.prob[t, m, c])
        n_valid[t, m, c] += more
    trials = counts_to_trials(tasks, n_pass, n_valid)
    depth = estimate_depth(trials, caps=tasks.model.caps, pass_rule=pass_rule, q=q, level=None)  # D alone
    by_task = dict(zip(depth["task"].to_list(), depth["depth"].to_list(), strict=True))
    caps = tasks.model.caps
    rung = np.array([caps.index(d) if (d := by_task.get(name)) is not None else len(caps) for name in tasks.names])
    return {"runs": float(n_valid.sum()), "rounds": float(rounds), **rung_errors(rung, tasks.true_rung)}


def censored_coverage(
    *,
    replications: int = 200,
    n_tasks: int = 100,
    n_boot: int = 500,
    median: float = 3.0,
    sigma: float = 1.3,
    ladders: Sequence[Sequence[int]] = (CAPS, (1, 2, 10, 80)),
    seed: int = 0,
) -> pl.DataFrame:
    """How often :func:`~depthlab.measures.censored.censored_depth`'s intervals cover the true shares.

    Each replication draws ``n_tasks`` true turn counts, log-normal around ``median``; task i is
    measured on ``ladders[i % len(ladders)]`` (by default every other task on a ladder with gaps),
    so its D is the interval of that ladder's rung that holds its turns, or beyond 80 (unsolved).
    The truth is the log-normal's own: share D <= 3 = P(turns <= 3), share D >= 5 = 1 - that.

    Returns
    -------
    pl.DataFrame
        Columns statistic, truth, coverage, replications.
    """
    from scipy.stats import norm

    from depthlab.measures.censored import censored_depth

    rng = np.random.default_rng(seed)
    truth = float(norm.cdf((np.log(3.0) - np.log(median)) / sigma))
    truths = {"share_le_3": truth, "share_ge_5": 1.0 - truth}
    hits = dict.fromkeys(truths, 0)
    for r in range(replications):
        turns = np.exp(np.log(median) + sigma * rng.standard_normal(n_tasks))
        low: list[int] = []
        high: list[int | None] = []
        status: list[str] = []
        for i, t in enumerate(turns):
            ladder = list(ladders[i % len(ladders)])
            rung = next((j for j, cap in enumerate(ladder) if cap >= t), None)
            if rung is None:
                low.append(ladder[-1])
                high.append(None)
                status.append("unsolved")
            else:
                low.append(0 if rung == 0 else ladder[rung - 1])
                high.append(ladder[rung])
                status.append("solved")
        depth = schema.conform(
            pl.DataFrame(
                {
                    "dataset": "sim",
                    "task": [f"t{i}" for i in range(n_tasks)],
                    "status": status,
                    "depth": high,
                    "depth_low": low,
                    "depth_high": high,
                }
            ),
            "depth",
        )
        table = censored_depth(depth, n_boot=n_boot, seed=seed * 100_003 + r).filter(pl.col("variant") == "censored")
        for statistic, value in truths.items():
            row = table.filter(pl.col("statistic") == statistic).row(0, named=True)
            hits[statistic] += int(row["ci_low"] - 1e-12 <= value <= row["ci_high"] + 1e-12)
    return pl.DataFrame(
        {
            "statistic": list(truths),
            "truth": list(truths.values()),
            "coverage": [hits[s] / replications for s in truths],
            "replications": replications,
        }
    )
