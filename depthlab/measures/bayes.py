"""D to a stated error: each task's depth as a posterior on the ladder, and the runs that decide it.

**The definition, fixed before any result was seen.** A model's pass probability on a task rises
(weakly) with the turn cap. Its *depth at threshold q* is the smallest ladder cap whose pass
probability reaches ``q``; beyond the top cap when none does. The task's depth D is the minimum
over its models. The default ``q = 0.2`` reads "solvable at all within the cap": a model that
solves a task one time in five at 10 turns can do it in 10 turns, and a cap where it passes less
often than that is where lucky passes live (a few percent) and where no practical number of runs
separates "can" from "got lucky". ``error`` is the probability that the reported rung (beyond the
ladder counting as one rung) is not the task's depth at ``q``.

**The noise model** (no step assumed above the depth). Per (task, model), a monotone pass curve
over the ladder's C caps, from a grid of curves: a rung ``r`` (0 to C - 1, or C beyond the top);
below it the pass probability is a luck rate ``luck`` (under ``q``); at ``r`` it is ``level`` (at
least ``q``) and above it rises towards a ``plateau`` (0.75, 0.9 or 1) as
``plateau - (plateau - level) * rise**k`` at ``k`` rungs above ``r`` (``rise`` 1 is flat, a step;
0.7 and 0.4 rise; 0 jumps to the plateau a rung above the depth; a level at or above the plateau
stays flat). So a curve that starts just over ``q`` at its depth and climbs slowly, or jumps, or
levels off under 1, is as plausible a priori as a step. Every such curve has depth at ``q`` exactly
``r``. ``level`` runs over 7 values from ``q`` to 0.99, ``luck`` over 0-15% (those under ``q``), so a
curve is (r, level, rise, luck, plateau):
9 x 7 x 4 x 6 x 3 = 4,536 states on the default ladder at ``q = 0.2``, and the posterior is exact
enumeration over them (no sampling).

**The priors, fitted across the dataset's tasks every time** (empirical Bayes). Per dataset and
model, the prior over states is a product of a joint distribution over (rung, rise) and one over
each other curve parameter (level, luck, plateau), fitted by EM on the marginal likelihood of the
dataset's (task, model) counts, each cell with a Dirichlet(1) pseudo-count so that a small or
uninformative collection keeps a spread prior. The rise is fitted per rung because the ladder is
not evenly spaced in turns (1, 2, 3, 5, then doubling): a curve that climbs smoothly in turns climbs
slowly per rung at the bottom of the ladder and fast at the top, and one rise for every rung read
shallow tasks' slow climbs as a depth one rung up (docs/depth_uncertainty.md, "Why p_depth missed").
So a collection of shallow tasks puts its prior mass low and costs fewer runs, and the luck rate is
learned, not assumed. The models' rungs on one task are taken as independent given the priors:
D's posterior is that of the minimum of independent rungs, P(D >= k) = prod_m P(r_m >= k).

**The planner** (:func:`bayes_round`): for every unfinished task, every (model, cap) run is scored
by the mutual information between its outcome and D (bits) per expected cost; the cost is
``run_cost`` plus the run's turns: a run at cap c costs at most c turns, and where the cell has
runs with a turn count their mean is used. A round holds, per task, each model's best run whose
score is at least half the task's best (so a round may hold one run per model, never more): the
models' rungs are independent, so their runs' information adds. A task is finished when its
posterior puts ``1 - error`` on one rung, or when every cell has ``max_attempts`` valid runs.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl

from depthlab import schema
from depthlab._defaults import AUDIT_SEED

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: The default threshold: the depth of a (task, model) is the smallest cap whose pass probability reaches it.
BAYES_Q = 0.2
#: The default error: a task's D is reported once its posterior puts 1 - error on one rung.
BAYES_ERROR = 0.05
#: The turns a run costs beyond its own (container start, build, verifier), in the planner's cost.
RUN_COST = 5.0

#: Greedy steps in one round of the planner (at most this many runs per task and model a round).
ROUND_BATCH = 4

_LEVEL_STEPS = 7
_RISES = (1.0, 0.7, 0.4, 0.0)
_LUCKS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.15)
_PLATEAUS = (0.75, 0.9, 1.0)
#: The rise's place among :func:`noise_grid`'s factors (level, rise, luck, plateau).
_RISE_FACTOR = 1
_EM_ITERATIONS = 40
_TINY = 1e-12


@dataclass(frozen=True)
class NoiseGrid:
    """The curves a (task, model) can have: ``curves[s, j]`` is P(pass) at cap j under state s.

    ``rung[s]`` is the state's depth at q (0 to C - 1, C beyond the top cap); ``factors[s, i]`` the
    index of the state's i-th curve parameter, ``n_levels[i]`` its number of values. The fitted prior
    is a product over the rung and the factors, except that the factors in ``per_rung`` are fitted
    jointly with the rung (one distribution of them per rung).
    """

    curves: FloatArray
    rung: IntArray
    factors: IntArray
    n_levels: tuple[int, ...]
    per_rung: tuple[int, ...] = ()

    @property
    def n_rungs(self) -> int:
        """Rungs of the ladder plus the one beyond it."""
        return int(self.curves.shape[1]) + 1


@functools.lru_cache(maxsize=8)
def noise_grid(n_caps: int, q: float = BAYES_Q) -> NoiseGrid:
    """The grid of monotone pass curves of the module docstring, for a ladder of ``n_caps`` caps.

    Examples
    --------
    >>> grid = noise_grid(8)
    >>> grid.curves.shape, grid.n_rungs
    ((4536, 8), 9)
    >>> bool(np.all(np.diff(grid.curves, axis=1) >= 0))
    True
    """
    levels, lucks = _levels(q), _lucks(q)
    sizes = (len(levels), len(_RISES), len(lucks), len(_PLATEAUS))
    curves, rungs, factors = [], [], []
    caps = np.arange(n_caps)
    for rung in range(n_caps + 1):
        for index in itertools.product(*(range(size) for size in sizes)):
            level, rise, luck, plateau = levels[index[0]], _RISES[index[1]], lucks[index[2]], _PLATEAUS[index[3]]
            above = caps - rung
            top = max(plateau, level)
            curve = np.where(above >= 0, top - (top - level) * rise ** np.maximum(above, 0), luck)
            curves.append(curve)
            rungs.append(rung)
            factors.append(index)
    return NoiseGrid(
        curves=np.array(curves, dtype=np.float64),
        rung=np.array(rungs, dtype=np.int64),
        factors=np.array(factors, dtype=np.int64),
        n_levels=sizes,
        per_rung=(_RISE_FACTOR,),
    )


def _levels(q: float) -> FloatArray:
    """The grid's pass probabilities at the depth: 7 from ``q`` to 0.99."""
    return np.asarray(q + (0.99 - q) * np.linspace(0.0, 1.0, _LEVEL_STEPS), dtype=np.float64)


def _lucks(q: float) -> list[float]:
    """The grid's luck rates: those under ``q``."""
    return [luck for luck in _LUCKS if luck < q]


def stated_log_prior(n_caps: int, *, pass_prob: float, luck: float, q: float = BAYES_Q) -> FloatArray:
    """A prior over :func:`noise_grid`'s states (S,) from a stated pass probability at the depth and luck rate.

    For pricing a measurement before any run (``depthlab plan --forecast --pass-prob P --luck L``):
    the rung is uniform over the ladder and beyond it, 90% of the level's weight sits on the grid
    level nearest ``pass_prob`` and 90% of the luck's on the grid rate nearest ``luck`` (the rest
    spread evenly: a statement is a guess), the rise and plateau uniform.

    Raises
    ------
    ValueError
        When ``pass_prob`` is not in [q, 1] or ``luck`` not in [0, q).

    Examples
    --------
    >>> prior = np.exp(stated_log_prior(8, pass_prob=0.5, luck=0.02))
    >>> grid = noise_grid(8)
    >>> round(float(prior.sum()), 6), round(float(prior[grid.factors[:, 0] == 2].sum()), 3)
    (1.0, 0.9)
    """
    if not q <= pass_prob <= 1.0:
        raise ValueError(
            f"pass_prob must be between q = {q:g} and 1 (the pass probability at the depth): {pass_prob!r}"
        )
    if not 0.0 <= luck < q:
        raise ValueError(f"luck must be at least 0 and under q = {q:g} (a lucky pass is under it): {luck!r}")
    grid = noise_grid(n_caps, q)
    level_index = int(np.abs(_levels(q) - pass_prob).argmin())
    stated = (level_index, None, int(np.abs(np.array(_lucks(q)) - luck).argmin()), None)
    marginals = [np.full(grid.n_rungs, 1.0 / grid.n_rungs)]
    for size, index in zip(grid.n_levels, stated, strict=True):
        share = np.full(size, 1.0 / size)
        if index is not None and size > 1:
            share = np.full(size, 0.1 / (size - 1))
            share[index] = 0.9
        marginals.append(share)
    indices = [grid.rung] + [grid.factors[:, i] for i in range(grid.factors.shape[1])]
    return _product_log_prior(marginals, indices)


def log_likelihood(curves: FloatArray, n_pass: npt.ArrayLike, n_valid: npt.ArrayLike) -> FloatArray:
    """Log-likelihood of counts (..., C) under every state: (..., S), binomial without its constant.

    Examples
    --------
    >>> curves = np.array([[0.5, 0.5], [0.1, 0.9]])
    >>> np.round(np.exp(log_likelihood(curves, [0, 1], [1, 1])), 3).tolist()
    [0.25, 0.81]
    """
    passes = np.asarray(n_pass, dtype=np.float64)
    fails = np.asarray(n_valid, dtype=np.float64) - passes
    log_p = np.log(np.clip(curves, _TINY, 1.0))
    log_q = np.log(np.clip(1.0 - curves, _TINY, 1.0))
    return passes @ log_p.T + fails @ log_q.T


def _normalise_log(log_weights: FloatArray) -> FloatArray:
    """exp(log_weights) normalised over the last axis."""
    shifted = np.exp(log_weights - log_weights.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def fit_log_prior(
    grid: NoiseGrid,
    loglik: FloatArray,
    iterations: int = _EM_ITERATIONS,
    weights: FloatArray | None = None,
) -> FloatArray:
    """Empirical-Bayes log prior over states (S,) from one model's rows' log-likelihoods (rows, S).

    The prior is a product of a distribution over (rung, each of ``grid.per_rung``'s factors) and one
    over each other curve parameter, each fitted by EM with a Dirichlet(1) pseudo-count on every cell
    (module docstring). ``weights`` (rows,): how many tasks each row stands for (rows of equal counts
    are fitted once).

    Examples
    --------
    >>> grid = noise_grid(2, q=0.5)
    >>> shallow = log_likelihood(grid.curves, np.tile([3, 3], (50, 1)), np.tile([3, 3], (50, 1)))
    >>> rungs = np.bincount(grid.rung, weights=np.exp(fit_log_prior(grid, shallow)))
    >>> round(float(rungs[0]), 3)  # (50 tasks + 4 pseudo-counts) / (50 + 12): one per (rung, rise) cell
    0.871
    """
    indices, sizes = _prior_factors(grid)
    marginals = [np.full(size, 1.0 / size) for size in sizes]
    log_prior = _product_log_prior(marginals, indices)
    for _ in range(iterations):
        row_weights = np.ones(len(loglik)) if weights is None else weights
        # a plain sum, not BLAS's matrix product: from about 4,000 states OpenBLAS threads it, and on a
        # loaded machine that made the whole fit 3-5x slower (the same sum either way)
        posterior = np.einsum("r,rs->s", row_weights, _normalise_log(loglik + log_prior))
        marginals = [
            (np.bincount(index, weights=posterior, minlength=len(share)) + 1.0) / (posterior.sum() + len(share))
            for index, share in zip(indices, marginals, strict=True)
        ]
        log_prior = _product_log_prior(marginals, indices)
    return log_prior


def _prior_factors(grid: NoiseGrid) -> tuple[list[IntArray], list[int]]:
    """The fitted prior's factors: each state's index in each and each one's number of values.

    The first is the rung joined with every factor of ``grid.per_rung`` (one cell per combination);
    then each other factor alone.

    Examples
    --------
    >>> indices, sizes = _prior_factors(noise_grid(8))
    >>> sizes
    [36, 7, 6, 3]
    """
    joint, joint_size = grid.rung.copy(), grid.n_rungs
    for i in grid.per_rung:
        joint = joint * grid.n_levels[i] + grid.factors[:, i]
        joint_size *= grid.n_levels[i]
    others = [i for i in range(len(grid.n_levels)) if i not in grid.per_rung]
    return [joint] + [grid.factors[:, i] for i in others], [joint_size] + [grid.n_levels[i] for i in others]


def _product_log_prior(marginals: Sequence[FloatArray], indices: Sequence[IntArray]) -> FloatArray:
    """Log of the product prior, normalised over the states."""
    log_prior = sum(np.log(share)[index] for index, share in zip(indices, marginals, strict=True))
    log_prior = np.asarray(log_prior, dtype=np.float64)
    return log_prior - np.log(np.exp(log_prior - log_prior.max()).sum()) - log_prior.max()


def rung_posterior(state_posterior: FloatArray, rung: IntArray, n_rungs: int) -> FloatArray:
    """Sum a state posterior (..., S) to a posterior over rungs (..., R).

    Examples
    --------
    >>> rung_posterior(np.array([0.2, 0.3, 0.5]), np.array([0, 0, 1]), 3).tolist()
    [0.5, 0.5, 0.0]
    """
    onehot = np.zeros((len(rung), n_rungs))
    onehot[np.arange(len(rung)), rung] = 1.0
    return state_posterior @ onehot


def minimum_posterior(rungs: FloatArray) -> FloatArray:
    """Posterior of the minimum over models (axis -2) of independent rungs: (..., M, R) -> (..., R).

    Examples
    --------
    >>> np.round(minimum_posterior(np.array([[0.5, 0.5], [0.5, 0.5]])), 3).tolist()
    [0.75, 0.25]
    """
    survival = np.flip(np.cumsum(np.flip(rungs, -1), -1), -1)  # P(r >= k)
    joint = np.prod(survival, axis=-2)
    return joint - np.concatenate([joint[..., 1:], np.zeros_like(joint[..., :1])], axis=-1)


def _entropy(distribution: FloatArray) -> FloatArray:
    """Entropy in bits over the last axis."""
    clipped = np.clip(distribution, _TINY, 1.0)
    return -(distribution * np.log2(clipped)).sum(axis=-1)


def information_gain(state_posterior: FloatArray, grid: NoiseGrid) -> FloatArray:
    """Mutual information (bits) between one run's outcome and D, per (task, model, cap): (T, M, S) -> (T, M, C).

    Examples
    --------
    >>> grid = noise_grid(2, q=0.5)
    >>> prior = np.full((1, 1, len(grid.rung)), 1 / len(grid.rung))
    >>> gain = information_gain(prior, grid)
    >>> gain.shape, bool(np.all(gain > 0))
    ((1, 1, 2), True)
    """
    n_rungs = grid.n_rungs
    rungs = rung_posterior(state_posterior, grid.rung, n_rungs)  # (T, M, R)
    onehot = np.zeros((len(grid.rung), n_rungs))
    onehot[np.arange(len(grid.rung)), grid.rung] = 1.0
    # P(rung = r, pass at cap j) per (task, model): (T, M, C, R)
    joint_pass = np.swapaxes(state_posterior[..., None] * grid.curves, -1, -2) @ onehot
    p_pass = joint_pass.sum(axis=-1)  # (T, M, C)
    survival = np.flip(np.cumsum(np.flip(rungs, -1), -1), -1)  # (T, M, R)
    n_models = rungs.shape[1]
    gain = np.zeros(p_pass.shape)
    before = _entropy(minimum_posterior(rungs))  # (T,)
    for model in range(n_models):
        others = np.prod(np.delete(survival, model, axis=1), axis=1)  # (T, R), ones when alone
        expected_after = np.zeros(p_pass.shape[0::2])  # (T, C)
        for outcome_joint, outcome_p in (
            (joint_pass[:, model], p_pass[:, model]),
            (rungs[:, model, None, :] - joint_pass[:, model], 1.0 - p_pass[:, model]),
        ):
            conditional = outcome_joint / np.clip(outcome_p[..., None], _TINY, None)  # (T, C, R)
            cond_survival = np.flip(np.cumsum(np.flip(conditional, -1), -1), -1) * others[:, None, :]
            depth = cond_survival - np.concatenate([cond_survival[..., 1:], np.zeros_like(cond_survival[..., :1])], -1)
            expected_after += outcome_p * _entropy(depth)
        gain[:, model] = np.maximum(before[:, None] - expected_after, 0.0)
    return gain


@dataclass(frozen=True)
class Posterior:
    """The posterior of one dataset's tasks: ``states`` (T, M, S), ``rungs`` (T, M, R), ``depth`` (T, R).

    ``n_pass``/``n_valid`` are the counts (T, M, C) it rests on, ``turns`` (T, M, C) the mean turn
    count of each cell's valid runs (NaN where none has one), ``keys`` the tasks (dataset, task) in
    order, ``models`` the models in order, ``grid`` the curves it enumerates, ``log_prior`` (M, S)
    the prior it used.
    """

    keys: pl.DataFrame
    models: tuple[str, ...]
    states: FloatArray
    rungs: FloatArray
    depth: FloatArray
    n_pass: IntArray
    n_valid: IntArray
    turns: FloatArray
    grid: NoiseGrid
    log_prior: FloatArray


def posteriors(
    cells: pl.DataFrame,
    trials: pl.DataFrame,
    *,
    caps: Sequence[int],
    q: float,
    grid: NoiseGrid | None = None,
    log_prior: FloatArray | None = None,
) -> list[Posterior]:
    """The posteriors of every dataset's tasks, priors fitted per dataset and model (inputs assumed validated).

    ``cells`` is :func:`depthlab.measures.depth.evidence_grid`'s table of the ``trials`` (its
    counts; ``trials`` gives the turn counts). ``log_prior`` (M, S) or (S,) replaces the fitted
    priors (a planner told the noise); ``grid`` replaces the default curves.
    """
    grid = noise_grid(len(caps), q) if grid is None else grid
    cells = cells.join(_mean_turns(trials), on=["dataset", "task", "model", "cap"], how="left", nulls_equal=True)
    out = []
    for part in cells.partition_by("dataset", maintain_order=True):
        names = tuple(part["model"].unique(maintain_order=True).to_list())
        shape = (part.height // (len(names) * len(caps)), len(names), len(caps))
        n_pass = part["n_pass"].to_numpy().astype(np.int64).reshape(shape)
        n_valid = part["n_valid"].to_numpy().astype(np.int64).reshape(shape)
        loglik = log_likelihood(grid.curves, n_pass, n_valid)  # (T, M, S)
        if log_prior is None:
            prior = np.stack([_fitted(grid, n_pass[:, m], n_valid[:, m]) for m in range(len(names))])
        else:
            prior = np.broadcast_to(log_prior, (len(names), len(grid.rung)))
        states = _normalise_log(loglik + prior[None])
        rungs = rung_posterior(states, grid.rung, grid.n_rungs)
        out.append(
            Posterior(
                keys=part.select("dataset", "task").unique(maintain_order=True),
                models=names,
                states=states,
                rungs=rungs,
                depth=minimum_posterior(rungs),
                n_pass=n_pass,
                n_valid=n_valid,
                turns=part["_turns"].fill_null(np.nan).to_numpy().astype(np.float64).reshape(shape),
                grid=grid,
                log_prior=np.asarray(prior, dtype=np.float64),
            )
        )
    return out


def _fitted(grid: NoiseGrid, n_pass: IntArray, n_valid: IntArray) -> FloatArray:
    """:func:`fit_log_prior` on one model's counts (tasks, C), each distinct row of counts once, weighted."""
    rows, inverse_counts = np.unique(np.concatenate([n_pass, n_valid], axis=1), axis=0, return_counts=True)
    n_caps = n_pass.shape[1]
    loglik = log_likelihood(grid.curves, rows[:, :n_caps], rows[:, n_caps:])
    return fit_log_prior(grid, loglik, weights=inverse_counts.astype(np.float64))


def _mean_turns(trials: pl.DataFrame) -> pl.DataFrame:
    """Columns dataset, task, model, cap, _turns: the mean turn count of each cell's valid runs that have one."""
    keys = ["dataset", "task", "model", "cap"]
    if "n_turns" not in trials.columns:
        return pl.DataFrame(schema={**{k: trials.schema[k] for k in keys}, "_turns": pl.Float64}).with_columns(
            pl.col("cap").cast(pl.Int32)
        )
    return (
        trials.filter(pl.col("status").is_in(("pass", "fail")) & pl.col("n_turns").is_not_null())
        .group_by(keys)
        .agg(_turns=pl.col("n_turns").cast(pl.Float64).mean())
        .with_columns(pl.col("cap").cast(pl.Int32))
    )


def depth_columns(posterior: Posterior, *, caps: Sequence[int], error: float, level: float | None) -> pl.DataFrame:
    """Per task of one dataset: depth, p_depth, status, depth_low, depth_high, ci_low, ci_high, depth_by_model."""
    mode = posterior.depth.argmax(axis=1)
    p_depth = posterior.depth.max(axis=1)
    n_caps = len(caps)
    decided = p_depth >= 1.0 - error
    status = np.where(decided, np.where(mode < n_caps, "solved", "unsolved"), "incomplete")
    cap_of = np.array([*caps, -1])
    below = np.array([0, *caps])
    depth = np.where(mode < n_caps, cap_of[mode], -1)
    low_rung, high_rung = credible_rungs(posterior.depth, level if level is not None else 1.0 - error)
    model_modes, names = posterior.rungs.argmax(axis=2), posterior.models
    by_model = [
        json.dumps({name: int(cap_of[r]) if r < n_caps else None for name, r in zip(names, row, strict=True)})
        for row in model_modes.tolist()
    ]
    return posterior.keys.with_columns(
        depth=pl.Series(depth, dtype=pl.Int32).replace(-1, None),
        p_depth=pl.Series(p_depth, dtype=pl.Float64),
        status=pl.Series(status, dtype=pl.String),
        depth_low=pl.Series(np.where(mode < n_caps, below[mode], caps[-1]), dtype=pl.Int32),
        depth_high=pl.Series(depth, dtype=pl.Int32).replace(-1, None),
        ci_low=pl.Series(below[low_rung], dtype=pl.Int32),
        ci_high=pl.Series(np.where(high_rung < n_caps, cap_of[high_rung], -1), dtype=pl.Int32).replace(-1, None),
        depth_by_model=pl.Series(by_model, dtype=pl.String),
        n_models=pl.lit(len(posterior.models), dtype=pl.Int32),
    )


def credible_rungs(depth: FloatArray, level: float) -> tuple[IntArray, IntArray]:
    """The shortest run of consecutive rungs holding ``level`` of each row's mass (of equal runs, the heaviest).

    Examples
    --------
    >>> low, high = credible_rungs(np.array([[0.05, 0.6, 0.3, 0.05]]), 0.85)
    >>> int(low[0]), int(high[0])
    (1, 2)
    """
    n_rows, n_rungs = depth.shape
    cumulative = np.concatenate([np.zeros((n_rows, 1)), np.cumsum(depth, axis=1)], axis=1)
    best_low = np.zeros(n_rows, dtype=np.int64)
    best_high = np.full(n_rows, n_rungs - 1, dtype=np.int64)
    found = np.zeros(n_rows, dtype=bool)
    for width in range(1, n_rungs + 1):
        starts = np.arange(n_rungs - width + 1)
        mass = cumulative[:, starts + width] - cumulative[:, starts]  # (rows, starts)
        best = mass.argmax(axis=1)
        fits = (mass.max(axis=1) >= level - 1e-12) & ~found
        best_low[fits] = starts[best[fits]]
        best_high[fits] = starts[best[fits]] + width - 1
        found |= fits
    return best_low, best_high


def bayes_round(
    posterior: Posterior,
    *,
    caps: Sequence[int],
    error: float,
    max_attempts: int,
    run_cost: float = RUN_COST,
    batch: int = ROUND_BATCH,
) -> tuple[IntArray, IntArray, IntArray]:
    """One round of the planner on one dataset's posterior: (task index, model index, cap index) of each run.

    A run's cost is ``run_cost`` plus its expected turns: the mean turn count of the cell's runs
    where known (at most the cap), else the cap. The round is built in ``batch`` greedy steps: each
    step adds, per unfinished task, each model's best run (score at least half the task's best),
    then updates the task's posterior as if each added run gave its more likely outcome, so a later
    step plans past it (a cell may get several attempts); a task whose updated posterior puts
    ``1 - error`` on one rung gets no further run in the round.
    """
    ladder = np.asarray(caps, dtype=np.float64)
    expected_turns = np.where(np.isnan(posterior.turns), ladder, np.minimum(posterior.turns, ladder))
    cost = run_cost + expected_turns
    states = posterior.states.copy()
    n_valid = posterior.n_valid.copy()
    curves = posterior.grid.curves
    picked: list[tuple[IntArray, IntArray, IntArray]] = []
    for _ in range(batch):
        rungs = rung_posterior(states, posterior.grid.rung, posterior.grid.n_rungs)
        unfinished = minimum_posterior(rungs).max(axis=1) < 1.0 - error
        open_cell = n_valid < max_attempts
        tasks = np.flatnonzero(unfinished & open_cell.any(axis=(1, 2)))
        if not len(tasks):
            break
        gain = information_gain(states[tasks], posterior.grid)
        score = np.where(open_cell[tasks] & (gain > 1e-9), gain / cost[tasks], 0.0)  # (t, M, C)
        best_cap = score.argmax(axis=2)  # (t, M)
        best_score = score.max(axis=2)
        chosen = (best_score > 0) & (best_score >= 0.5 * best_score.max(axis=1, keepdims=True))
        t, m = np.nonzero(chosen)
        if not len(t):
            break
        task, cap = tasks[t], best_cap[t, m]
        picked.append((task.astype(np.int64), m.astype(np.int64), cap.astype(np.int64)))
        # the believed outcome: the more likely one under the current posterior
        p_pass = (states[task, m] * curves[:, cap].T).sum(axis=1)
        likelihood = np.where((p_pass >= 0.5)[:, None], curves[:, cap].T, 1.0 - curves[:, cap].T)
        updated = states[task, m] * likelihood
        states[task, m] = updated / np.clip(updated.sum(axis=1, keepdims=True), _TINY, None)
        n_valid[task, m, cap] += 1
    if not picked:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    task_index, model_index, cap_index = (np.concatenate(parts) for parts in zip(*picked, strict=True))
    return task_index, model_index, cap_index


def plan_round_table(
    cells: pl.DataFrame,
    trials: pl.DataFrame,
    *,
    caps: Sequence[int],
    error: float,
    q: float,
    max_attempts: int,
    run_cost: float = RUN_COST,
    grid: NoiseGrid | None = None,
    log_prior: FloatArray | None = None,
) -> pl.DataFrame:
    """The plan table (:data:`depthlab.schema.PLAN`) of one round of the planner (inputs assumed validated).

    ``grid`` and ``log_prior`` as in :func:`posteriors` (a planner told the true noise).
    """
    frames = []
    for post in posteriors(cells, trials, caps=caps, q=q, grid=grid, log_prior=log_prior):
        t, m, c = bayes_round(post, caps=caps, error=error, max_attempts=max_attempts, run_cost=run_cost)
        keys = post.keys[t.tolist()] if len(t) else post.keys.clear()
        runs = keys.with_columns(
            model=pl.Series([post.models[i] for i in m.tolist()], dtype=pl.String),
            cap=pl.Series([caps[i] for i in c.tolist()], dtype=pl.Int32),
        )
        frames.append(runs.group_by("dataset", "task", "model", "cap").agg(attempts=pl.len().cast(pl.Int32)))
    if not frames:
        return pl.DataFrame(schema=schema.PLAN)
    return pl.concat(frames).sort(["dataset", "task", "model", "cap"]).cast(schema.PLAN)


@dataclass(frozen=True)
class Forecast:
    """What the planner is expected to spend before every task is finished (:func:`forecast`)."""

    runs: float  # further runs, mean over the draws
    turns: float  # at most this many further turns (a run at cap c counted as c turns), mean over the draws
    rounds: float  # further rounds, mean over the draws
    n_tasks: int


def forecast(
    posterior: Posterior,
    *,
    caps: Sequence[int],
    error: float,
    max_attempts: int,
    run_cost: float = RUN_COST,
    draws: int = 3,
    seed: int = AUDIT_SEED,
) -> Forecast:
    """The runs, turns and rounds the planner needs to finish one dataset's tasks, before any is spent.

    Each draw gives every (task, model) a curve drawn from its posterior now (the prior fitted to
    the runs already made; a task without runs draws from the prior), then replays the planner
    round by round on outcomes drawn from those curves, the prior held fixed, until every task is
    finished. A run at cap c is counted as c turns (an upper bound: a pass may take fewer).

    Examples
    --------
    >>> import polars as pl
    >>> grid = noise_grid(3, 0.2)
    >>> zeros = np.zeros((4, 1, 3), dtype=np.int64)
    >>> prior = np.full((1, len(grid.rung)), -np.log(len(grid.rung)))
    >>> states = np.exp(np.broadcast_to(prior, (4, 1, len(grid.rung))))
    >>> rungs = rung_posterior(states, grid.rung, grid.n_rungs)
    >>> post = Posterior(pl.DataFrame({"dataset": ["d"] * 4, "task": list("abcd")}), ("m",), states, rungs,
    ...     minimum_posterior(rungs), zeros, zeros, np.full((4, 1, 3), np.nan), grid, prior)
    >>> result = forecast(post, caps=(1, 2, 3), error=0.05, max_attempts=4)
    >>> result.n_tasks, 0 < result.runs <= 4 * 3 * 4
    (4, True)
    """
    rng = np.random.default_rng(seed)
    grid = posterior.grid
    n_tasks, n_models, n_caps = posterior.n_valid.shape
    ladder = np.asarray(caps, dtype=np.float64)
    totals = np.zeros(3)
    for _ in range(draws):
        flat = posterior.states.reshape(-1, posterior.states.shape[-1])
        cumulative = np.cumsum(flat, axis=1)
        drawn = (cumulative < rng.random((len(flat), 1)) * cumulative[:, -1:]).sum(axis=1)
        truth = grid.curves[np.minimum(drawn, len(grid.rung) - 1)].reshape(n_tasks, n_models, n_caps)
        n_pass, n_valid = posterior.n_pass.copy(), posterior.n_valid.copy()
        for _round in range(max_attempts * n_caps * n_models + 1):
            states = _normalise_log(log_likelihood(grid.curves, n_pass, n_valid) + posterior.log_prior[None])
            rungs = rung_posterior(states, grid.rung, grid.n_rungs)
            current = Posterior(
                posterior.keys, posterior.models, states, rungs, minimum_posterior(rungs), n_pass, n_valid,
                posterior.turns, grid, posterior.log_prior,
            )  # fmt: skip
            t, m, c = bayes_round(current, caps=caps, error=error, max_attempts=max_attempts, run_cost=run_cost)
            if not len(t):
                break
            passed = rng.random(len(t)) < truth[t, m, c]
            np.add.at(n_valid, (t, m, c), 1)
            np.add.at(n_pass, (t, m, c), passed.astype(np.int64))
            totals += (len(t), ladder[c].sum(), 1)
    runs, turns, rounds = totals / draws
    return Forecast(runs=float(runs), turns=float(turns), rounds=float(rounds), n_tasks=n_tasks)
