"""The noisy model fitted to a data set's capped runs, and the second-model drops noise alone would give.

:mod:`depthlab.simulate.noisy`'s model, ``P_m(pass | cap c) = luck + (1 - luck) * logistic(slope_m *
(log c - log h_tm))``, with ``log h_tm = mu + sigma * u_t + spread * z_tm`` (``u``, ``z`` standard
normal) and a share ``beyond`` of tasks beyond every model (P = luck at every cap), is fitted by
maximum likelihood to the counts of passes among valid attempts in every (task, model, cap) cell.
The horizons are random effects: each task's likelihood integrates them out by Gauss-Hermite
quadrature (the task's horizon, then each model's), so the parameters are ``mu``, ``sigma``,
``spread``, ``luck``, ``beyond`` and one slope per model, whatever the number of tasks. Cells never
run add nothing. The optimiser is scipy's L-BFGS-B on bounded, transformed parameters.

**Noise alone.** :func:`noise_drop_share` draws tasks from the fitted model with the models'
horizons held equal to the task's (``spread`` = 0), so that every model has the same true D (up
to the shift luck gives the point where P = 1/2, far under a rung), runs every cell of the ladder
with the data's attempts per cell, and takes
:func:`~depthlab.measures.second_model_effect`'s share of lowered tasks: a second model lowers D
there only by luck. Set beside the observed share, it says how much of the observed one noise
could explain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from depthlab._checks import check_caps, check_frame, check_models, check_positive_int
from depthlab._defaults import AUDIT_SEED
from depthlab.measures import second_model_effect
from depthlab.measures.depth import evidence_grid
from depthlab.schema import CAPS
from depthlab.simulate.noisy import NoisyModel, NoisyTasks, counts_to_trials, pass_probability, true_rungs

_U_NODES = 16  # Gauss-Hermite nodes for the task's horizon
_Z_NODES = 6  # and for each model's departure from it
#: Bounds of the transformed parameters: mu (log turns), log sigma, log spread, logit luck, logit beyond, log slope.
_BOUNDS = [
    (np.log(0.2), np.log(2000.0)),
    (np.log(0.05), np.log(5.0)),
    (np.log(1e-3), np.log(3.0)),
    (-9.0, -0.5),
    (-9.0, 4.0),
]
_SLOPE_BOUNDS = (np.log(0.2), np.log(40.0))


@dataclass(frozen=True)
class NoisyFit:
    """The fitted noisy model: horizons log-normal (``depth_median``, ``depth_sigma``), ``model_spread``,
    ``luck``, ``beyond``, one slope per model (in ``models``' order), on ``caps``."""

    models: tuple[str, ...]
    caps: tuple[int, ...]
    slopes: tuple[float, ...]
    luck: float
    beyond: float
    depth_median: float
    depth_sigma: float
    model_spread: float
    log_likelihood: float
    n_tasks: int
    attempts: int  # the median valid attempts of a run cell, used by the noise-alone draws
    converged: bool

    def describe(self) -> str:
        """One line: the fitted parameters."""
        slopes = ", ".join(f"{s:.2g}" for s in self.slopes)
        return (
            f"fitted slopes {slopes}; luck {self.luck:.3f}; beyond {self.beyond:.2f}; horizon median "
            f"{self.depth_median:.3g} turns, sigma {self.depth_sigma:.2f}, model spread {self.model_spread:.2f}"
        )


def cell_counts(
    trials: pl.DataFrame, *, models: Sequence[str], caps: Sequence[int] = CAPS
) -> tuple[np.ndarray, np.ndarray, list[tuple[str, str]]]:
    """Passes and valid attempts per (task, model, cap) of the capped ``trials``: arrays (tasks, models, caps).

    The task keys (dataset, task) come third, in the arrays' order.
    """
    grid = evidence_grid(trials, caps=caps, models=list(models), pass_rule="any")
    grid = grid.sort("dataset", "task", "model", "cap")
    keys = grid.select("dataset", "task").unique(maintain_order=True).rows()
    shape = (len(keys), len(models), len(caps))
    # evidence_grid holds every (task, model, cap) once; models sort as their names do
    order = np.argsort(np.argsort(list(models)))
    n_pass = grid["n_pass"].to_numpy().astype(np.int64).reshape(shape)[:, order]
    n_valid = grid["n_valid"].to_numpy().astype(np.int64).reshape(shape)[:, order]
    return n_pass, n_valid, keys


def _negative_log_likelihood(theta: np.ndarray, n_pass: np.ndarray, n_fail: np.ndarray, x: np.ndarray) -> float:
    from scipy.special import expit, logsumexp

    mu, sigma, spread = theta[0], np.exp(theta[1]), np.exp(theta[2])
    luck, beyond, slopes = expit(theta[3]), expit(theta[4]), np.exp(theta[5:])
    u, wu = np.polynomial.hermite_e.hermegauss(_U_NODES)
    z, wz = np.polynomial.hermite_e.hermegauss(_Z_NODES)
    log_wu, log_wz = np.log(wu / wu.sum()), np.log(wz / wz.sum())
    h = mu + sigma * u[:, None] + spread * z[None, :]  # (U, Z) log horizons
    # P per (model, cap, U, Z)
    curve = expit(slopes[:, None, None, None] * (x[None, :, None, None] - h[None, None, :, :]))
    p = np.clip(luck + (1.0 - luck) * curve, 1e-12, 1 - 1e-12)
    ll = np.einsum("tmc,mcuz->tmuz", n_pass, np.log(p)) + np.einsum("tmc,mcuz->tmuz", n_fail, np.log1p(-p))
    per_model = logsumexp(ll + log_wz[None, None, None, :], axis=3)  # (T, M, U)
    solvable = logsumexp(per_model.sum(axis=1) + log_wu[None, :], axis=1)  # (T,)
    lost = (n_pass.sum(axis=(1, 2)) * np.log(luck)) + (n_fail.sum(axis=(1, 2)) * np.log1p(-luck))
    task = np.logaddexp(np.log1p(-beyond) + solvable, np.log(beyond) + lost)
    return -float(task.sum())


def fit_noisy_model(
    trials: pl.DataFrame, *, models: Sequence[str] | None = None, caps: Sequence[int] = CAPS
) -> NoisyFit:
    """Fit the noisy model's parameters to the capped ``trials`` by maximum likelihood (module docstring).

    Parameters
    ----------
    trials : pl.DataFrame
        The trials table; its valid capped runs of ``models`` are used.
    models : sequence of str, optional
        The models (one slope each). Default: every model with capped runs.
    caps : sequence of int, default CAPS
        The cap ladder.

    Returns
    -------
    NoisyFit

    Examples
    --------
    >>> import numpy as np
    >>> from depthlab.simulate.noisy import NoisyModel, counts_to_trials, draw_counts, draw_tasks
    >>> rng = np.random.default_rng(0)
    >>> tasks = draw_tasks(NoisyModel(n_tasks=100), rng)
    >>> trials = counts_to_trials(tasks, draw_counts(tasks, 2, rng), np.full(tasks.prob.shape, 2))
    >>> fit = fit_noisy_model(trials)
    >>> len(fit.slopes), fit.converged
    (2, True)
    """
    from scipy.optimize import minimize

    function = "fit_noisy_model"
    check_frame(trials, "trials", function, ("dataset", "task", "model", "cap", "status"))
    caps = check_caps(caps, function)
    capped = trials.filter(pl.col("cap").is_not_null())
    if models is None:
        models = sorted(set(capped["model"].drop_nulls().to_list()))
    models = check_models(models, function, required=True)
    n_pass, n_valid, keys = cell_counts(capped, models=models, caps=caps)
    if not keys or n_valid.sum() == 0:
        raise ValueError(f"{function}: no valid capped run of {list(models)} to fit the noisy model to")
    x = np.log(np.asarray(caps, dtype=np.float64))
    n_fail = (n_valid - n_pass).astype(np.float64)
    run = n_valid > 0
    # start: the horizon median at the ladder's middle, moderate slopes, little luck
    start = np.array([float(np.median(x)), np.log(1.0), np.log(0.3), -4.0, -2.0, *([np.log(3.0)] * len(models))])
    bounds = _BOUNDS + [_SLOPE_BOUNDS] * len(models)
    result = minimize(
        _negative_log_likelihood,
        start,
        args=(n_pass.astype(np.float64), n_fail, x),
        method="L-BFGS-B",
        bounds=bounds,
        options={"ftol": 1e-7},  # a likelihood change under 1e-7 of itself moves no parameter that matters here
    )
    theta = result.x
    from scipy.special import expit

    return NoisyFit(
        models=tuple(models),
        caps=tuple(caps),
        slopes=tuple(float(s) for s in np.exp(theta[5:])),
        luck=float(expit(theta[3])),
        beyond=float(expit(theta[4])),
        depth_median=float(np.exp(theta[0])),
        depth_sigma=float(np.exp(theta[1])),
        model_spread=float(np.exp(theta[2])),
        log_likelihood=-float(result.fun),
        n_tasks=len(keys),
        attempts=max(1, int(np.median(n_valid[run]))),
        converged=bool(result.success),
    )


def draw_noise_alone(fit: NoisyFit, n_tasks: int, rng: np.random.Generator) -> NoisyTasks:
    """Tasks from ``fit`` with every model's horizon the task's (``spread`` = 0): the models share the true D."""
    n_tasks = check_positive_int(n_tasks, "n_tasks", "draw_noise_alone")
    horizon = np.log(fit.depth_median) + fit.depth_sigma * rng.standard_normal(n_tasks)
    beyond = rng.random(n_tasks) < fit.beyond
    # one horizon column broadcast over the models: every model at the task's horizon
    prob = pass_probability(horizon[:, None], np.asarray(fit.slopes), fit.luck, fit.caps, beyond)
    model = NoisyModel(n_tasks=n_tasks, n_models=len(fit.models), caps=fit.caps, luck=fit.luck)
    return NoisyTasks(model=model, prob=prob, true_rung=true_rungs(prob))


def drop_share(
    trials: pl.DataFrame, *, caps: Sequence[int] = CAPS, models: Sequence[str] | None = None
) -> tuple[float | None, int]:
    """Lowered over determined tasks, pooled over every first model (:func:`second_model_effect`); and how many.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": ["a", "a", "b", "b"],
    ...     "cap": [1, 2, 1, 2], "status": ["fail", "fail", "fail", "pass"]}), "trials")
    >>> drop_share(trials)  # b lowers a's D (a fails at D = 2); a does not lower b's
    (0.5, 2)
    """
    effect = second_model_effect(trials, by=None, caps=caps, models=models)
    determined = int(effect["n_determined"].sum()) if effect.height else 0
    lowered = int(effect["n_lowered"].sum()) if effect.height else 0
    return (lowered / determined if determined else None), determined


def noise_drop_share(
    fit: NoisyFit, *, replications: int = 20, n_tasks: int | None = None, seed: int = AUDIT_SEED
) -> np.ndarray:
    """The share of second-model drops in each of ``replications`` noise-alone draws from ``fit``.

    Each draw holds ``n_tasks`` tasks (default the fitted data's), every cell of the ladder run
    ``fit.attempts`` times; the share pools every first model as :func:`drop_share` does. A draw
    with no determined task is left out.

    Examples
    --------
    >>> fit = NoisyFit(models=("a", "b"), caps=CAPS, slopes=(3.0, 3.0), luck=0.03, beyond=0.1, depth_median=4.0,
    ...                depth_sigma=1.2, model_spread=0.0, log_likelihood=0.0, n_tasks=100, attempts=1, converged=True)
    >>> shares = noise_drop_share(fit, replications=3)
    >>> bool(0 < shares.mean() < 1)
    True
    """
    function = "noise_drop_share"
    replications = check_positive_int(replications, "replications", function)
    size = check_positive_int(n_tasks if n_tasks is not None else fit.n_tasks, "n_tasks", function)
    rng = np.random.default_rng(seed)
    shares = []
    for _ in range(replications):
        tasks = draw_noise_alone(fit, size, rng)
        n_valid = np.full(tasks.prob.shape, fit.attempts)
        trials = counts_to_trials(tasks, rng.binomial(n_valid, tasks.prob), n_valid)
        share, _ = drop_share(trials, caps=fit.caps)
        if share is not None:
            shares.append(share)
    return np.asarray(shares, dtype=np.float64)
