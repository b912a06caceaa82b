"""Simulated Harbor run logs of tasks with known depth D* and work W* (demo and validation data).

This is a demo and a validation tool. Its numbers are made up by the generative model below;
they are **never a claim about the real collections**, only collections *named* after them so
that the audit notebooks and the loaders can be exercised end to end.

Generative model
----------------
Tasks. Seven collections: six named after the real ones (``tmax``, ``facet``, ``seta``,
``rst``, ``tb2``, ``tw``) and ``depth``, in the style of the paper's own set. At ``scale=1``
there are 734 tasks (tb2 89, tw 100, tmax 140, facet 120, seta 120, rst 105, depth 60). Each
task of the six has a true depth ``k`` (turns that must follow one another, each needing the
previous output), drawn log-normally per collection: the four synthetic collections are
mostly shallow (k = 1 for about seven tasks in ten, rarely above 3), tw and tb2 deeper (tb2
deepest). A work ``W* = k + extra`` (operations that could be batched) makes W and D correlate
only moderately. A share of tasks (tb2 most) is beyond both models.

Each ``depth`` task is *derived* from an original task of the six (same environment): its first
segment is the original, followed by 2-5 further segments (3-6 in all), so it is deeper. Its
``reward.json`` has one key per segment (``segment_1`` ...) plus ``reward`` (1 when every
segment passes); a run stops at its first failed segment, so later keys are absent. Its
task.toml carries ``[metadata] derived_from = "<dataset>/<task>"`` (the original, for paired
tests) and ``environment`` (the original's environment name) and ``segments``.

Models. Two models (:data:`MODELS`) differ in how many extra turns they waste
(``e_m = k + Poisson(overhead_m * k)``, the model's effective depth), in batching (operations per
turn) and in per-turn reliability:

* **Capped runs** (every model x every cap of the ladder, one attempt): stated cap K, recorded as
  ``config.agent.kwargs.stated_cap = max_turns = K``. The run passes iff ``K >= e_m`` (the
  assumption the estimator relies on), unless ``flip_rate`` > 0 flips outcomes at random
  (non-monotone evidence). So the true ladder depth is ``d_star`` = the smallest ladder cap
  >= min over models of ``e_m`` (null when above the top cap or when no model can solve it).
* **Uncapped public runs** (``public_attempts`` per model; ``max_turns`` 200, a harness limit, no
  stated cap): the model batches badly, taking ``N = max(e_m, W/batch_m)`` turns plus
  exploration, times log-normal noise, so N overstates D and follows W. It passes with
  probability ``reliability_m ** e_m`` (each sequential turn can go wrong; with reliability
  near 0.9 a one-turn task passes about 9 runs in 10 and a ten-turn one about 1 in 4), so the
  pass rate falls with D beyond W, and N carries nothing about passing beyond D. A model that cannot
  solve a task fails its public runs after the usual number of turns; a task beyond every
  model makes them flail, often into the harness limit (``hit_limit``).
* **Trajectories** carry the information flow of that story: a run's *planted chain* is its
  effective depth ``e_m`` when it passes (all of it that fits in its turns) and one read short
  when it fails. Each chain turn reads a file whose random name only the previous chain turn's
  output revealed; the other turns are batching habits (``./ops/op_NNN.sh``), ``ls``/``pwd`` and
  re-reads of files already read, which depend on nothing new. The trajectory's
  ``extra.planted_chain`` records the length, so :func:`depthlab.depth_proxy` can be checked
  against it trial by trial, and its task value against D*.
* **Infrastructure errors**: with probability ``invalid_rate`` a cell also gets an extra
  trial that died with ``EnvironmentStartTimeoutError`` (invalid: no reward, no trajectory),
  before its valid attempt.

Labels. TB2's author ratings (difficulty, expert/junior time) are driven by k and W with
moderate noise (and the difficulty leans to hard for tasks beyond both models), so they track
the pass rate; the generated labels of SETA/FACET/TMax/TW follow W with much noise (FACET's
difficulty is mostly the default "medium"), so they track it weakly. RST carries no labels.
Every task has ``solution/solve.sh`` with exactly W command lines (plus a shebang, comments
and blank lines); real TMax ships no solution.

Deterministic for a seed. See :func:`write_runs`, and :func:`run_cells` / :func:`write_cells`
/ :func:`replay_plan` to "run" planned cells from the true model.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import msgspec
import numpy as np
import polars as pl

from depthlab import schema
from depthlab._checks import check_nonnegative_int, check_number
from depthlab.io import harbor_writer
from depthlab.schema import CAPS

#: The simulated models (Harbor ``config.agent.model_name``).
MODELS: Final[tuple[str, ...]] = ("sim/model-a", "sim/model-b")
#: Version of the generative model: bump it whenever a parameter changes what a seed writes, so
#: that cached demo data (``depthlab reproduce``) built by an older model is not reused.
MODEL_VERSION: Final[int] = 3
#: Harness limit of the uncapped public runs (TB2's official runs used 200 episodes too).
PUBLIC_TURN_LIMIT: Final[int] = 200

_AGENT = "terminus-2"
_AGENT_VERSION = "2.0.0"
_INVALID_EXCEPTION = "EnvironmentStartTimeoutError"
_BASE_TIME = datetime(2026, 6, 1, tzinfo=UTC)
_ENCODER = msgspec.json.Encoder()


@dataclass(frozen=True)
class _ModelSpec:
    name: str
    overhead: float  # extra wasted turns per unit of true depth (Poisson rate)
    incapable: float  # chance the model cannot solve a task at all
    batch: float  # operations per turn when uncapped
    reliability: float  # chance a sequential turn goes right, uncapped
    explore: float  # mean extra exploration turns, uncapped


_MODEL_SPECS: Final[tuple[_ModelSpec, ...]] = (
    _ModelSpec(MODELS[0], overhead=0.25, incapable=0.04, batch=1.6, reliability=0.87, explore=3.0),
    _ModelSpec(MODELS[1], overhead=0.4, incapable=0.06, batch=1.3, reliability=0.89, explore=4.0),
)


@dataclass(frozen=True)
class _CollectionSpec:
    name: str
    n_tasks: int  # at scale 1
    depth_median: float  # median true depth k
    depth_sigma: float  # log-normal spread of k
    extra_work_median: float  # median W - k
    beyond: float  # share of tasks beyond both models


_SPECS: Final[dict[str, _CollectionSpec]] = {
    spec.name: spec
    for spec in (
        _CollectionSpec("tmax", 140, 1.0, 0.8, 12.0, 0.05),
        _CollectionSpec("facet", 120, 0.9, 0.8, 8.0, 0.04),
        _CollectionSpec("seta", 120, 1.0, 0.85, 9.0, 0.05),
        _CollectionSpec("rst", 105, 0.9, 0.75, 7.0, 0.04),
        _CollectionSpec("tb2", 89, 3.0, 1.0, 18.0, 0.2),
        _CollectionSpec("tw", 100, 2.0, 0.9, 9.0, 0.08),
        _CollectionSpec("depth", 60, 0.0, 0.0, 0.0, 0.0),  # derived from the others
    )
}
#: The seven simulated collections, in writing order (the seed stream follows it; their display
#: order, names, colours and curation are in :mod:`depthlab.catalog`).
COLLECTIONS: Final[tuple[str, ...]] = tuple(_SPECS)

_VERBS = ("fix", "build", "recover", "configure", "migrate", "debug", "optimize", "extract", "patch", "audit")
_NOUNS = ("parser", "server", "archive", "pipeline", "cache", "schema", "cluster", "kernel", "index", "report")
_CATEGORIES = ("software-engineering", "system-administration", "security", "data-science", "debugging", "networking")


@dataclass
class _Task:
    dataset: str
    name: str
    depth_true: int
    work: int
    effective: dict[str, int | None]  # model -> effective depth (None: never passes)
    segments: tuple[int, ...] = ()  # true depth of each segment (depth collection)
    derived_from: str | None = None
    environment: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    instruction: str = ""
    checksum: str = ""


@dataclass(frozen=True)
class SimulationSummary:
    """What :func:`write_runs` wrote, and the truth to compare estimates with.

    Attributes
    ----------
    out_dir, tasks_dir, jobs_dir : Path
        The output root, ``<out>/tasks`` (one folder per collection) and ``<out>/jobs``
        (``<out>/jobs/<dataset>/<job>/<trial>``).
    job_dirs : tuple of Path
        Every job directory written.
    n_tasks, n_trials, n_invalid, n_files : int
        Counts of what was written (``n_invalid`` trials are infrastructure errors).
    seconds : float
        Wall time of the write.
    truth : pl.DataFrame
        One row per task: dataset, task, depth_true (turns in sequence), d_star (the ladder
        depth the estimator should find; null when no model passes the top cap), w_star,
        n_segments, segments (list), derived_from, environment, checksum.
    model_truth : pl.DataFrame
        One row per (task, model): dataset, task, model, effective_depth (null: never passes),
        model_depth (the model's smallest passing ladder cap, null if none).
    models, caps : tuple
        The models and the cap ladder simulated.
    """

    out_dir: Path
    tasks_dir: Path
    jobs_dir: Path
    job_dirs: tuple[Path, ...]
    n_tasks: int
    n_trials: int
    n_invalid: int
    n_files: int
    seconds: float
    truth: pl.DataFrame
    model_truth: pl.DataFrame
    models: tuple[str, ...] = MODELS
    caps: tuple[int, ...] = CAPS


# ----------------------------------------------------------------------------------------
# public entry points


def write_runs(
    out_dir: str | Path,
    *,
    seed: int = 0,
    scale: float = 1.0,
    flip_rate: float = 0.0,
    invalid_rate: float = 0.03,
    public_attempts: int = 3,
) -> SimulationSummary:
    """Write simulated task dirs and Harbor job dirs of known depth under ``out_dir``.

    Parameters
    ----------
    out_dir : str or Path
        Output root; ``tasks/`` and ``jobs/`` are created (existing ones are replaced).
    seed : int, default 0
        Everything written is a function of the seed (and the other parameters).
    scale : float, default 1.0
        Task counts relative to the paper's size (734 tasks at 1.0); each collection keeps
        at least one task. Small scales serve tests.
    flip_rate : float, default 0.0
        Chance that a capped run's outcome is flipped (breaks monotonicity; 0 keeps the
        estimator's assumption true).
    invalid_rate : float, default 0.03
        Chance that a cell also has an infrastructure-error trial (invalid).
    public_attempts : int, default 3
        Uncapped public runs per task and model.

    Returns
    -------
    SimulationSummary
        Paths, counts and the true D*/W* per task.

    Examples
    --------
    >>> import tempfile
    >>> from depthlab.simulate import write_runs
    >>> summary = write_runs(tempfile.mkdtemp(), seed=1, scale=0.01)
    >>> summary.n_tasks, sorted(summary.truth["dataset"].unique())[:2]
    (7, ['depth', 'facet'])
    """
    started = time.perf_counter()
    function = "write_runs"
    check_nonnegative_int(seed, "seed", function)
    check_number(scale, "scale", function, low=0, high=20, low_open=True)
    for name, rate in (("flip_rate", flip_rate), ("invalid_rate", invalid_rate)):
        check_number(rate, name, function, low=0, high=1, high_open=True)
    check_nonnegative_int(public_attempts, "public_attempts", function)

    out = Path(out_dir)
    tasks_dir, jobs_dir = out / "tasks", out / "jobs"
    for folder in (tasks_dir, jobs_dir):
        if folder.exists():
            shutil.rmtree(folder)
    rng = np.random.default_rng(seed)
    tasks = _generate_tasks(rng, scale)
    n_files = sum(_write_task_dir(tasks_dir, task) for task in tasks)

    writer = _JobWriter(jobs_dir, rng)
    _write_all_jobs(writer, tasks, rng, flip_rate=flip_rate, invalid_rate=invalid_rate, public_attempts=public_attempts)
    truth, model_truth = _truth_frames(tasks)
    return SimulationSummary(
        out_dir=out,
        tasks_dir=tasks_dir,
        jobs_dir=jobs_dir,
        job_dirs=tuple(writer.job_dirs),
        n_tasks=len(tasks),
        n_trials=writer.n_trials,
        n_invalid=writer.n_invalid,
        n_files=n_files + writer.n_files,
        seconds=time.perf_counter() - started,
        truth=truth,
        model_truth=model_truth,
    )


def _write_all_jobs(
    writer: _JobWriter,
    tasks: list[_Task],
    rng: np.random.Generator,
    *,
    flip_rate: float,
    invalid_rate: float,
    public_attempts: int,
) -> None:
    """Capped jobs (every model x cap) and public jobs per collection, in a fixed order (determinism)."""
    for dataset in COLLECTIONS:
        members = [task for task in tasks if task.dataset == dataset]
        for spec in _MODEL_SPECS:
            for cap in CAPS:
                trials = []
                for task in members:
                    if rng.random() < invalid_rate:
                        trials.append(_invalid_trial(task, spec.name, cap, cap))
                    passed = _passes_capped(task.effective[spec.name], cap)
                    if flip_rate and rng.random() < flip_rate:
                        passed = not passed
                    trials.append(_capped_trial(task, spec, cap, passed, rng))
                writer.write_job(dataset, f"{dataset}__{_slug(spec.name)}__cap-{cap:02d}", spec.name, cap, trials)
            if public_attempts:
                trials = []
                for task in members:
                    for _ in range(public_attempts):
                        if rng.random() < invalid_rate:
                            trials.append(_invalid_trial(task, spec.name, None, PUBLIC_TURN_LIMIT))
                        trials.append(_public_trial(task, spec, rng))
                writer.write_job(dataset, f"{dataset}__{_slug(spec.name)}__public", spec.name, None, trials)


def run_cells(plan: pl.DataFrame, summary: SimulationSummary, *, seed: int = 0) -> pl.DataFrame:
    """ "Run" the cells of a plan from the true model, in memory, as trials-table rows.

    Each planned cell (dataset, task, model, cap, attempts) gets ``attempts`` valid trials
    whose outcome follows the simulation's assumption (pass iff ``cap >= effective_depth``).

    Parameters
    ----------
    plan : pl.DataFrame
        A plan from :func:`depthlab.measures.plan_missing`.
    summary : SimulationSummary
        The simulation the plan's tasks come from.
    seed : int, default 0
        Seeds the trial names and times.

    Returns
    -------
    pl.DataFrame
        Trials table rows (:data:`depthlab.schema.TRIALS`).

    Examples
    --------
    >>> import tempfile
    >>> import polars as pl
    >>> from depthlab.simulate import run_cells, write_runs
    >>> summary = write_runs(tempfile.mkdtemp(), scale=0.01, public_attempts=0)
    >>> row = summary.truth.row(0, named=True)
    >>> plan = pl.DataFrame({"dataset": [row["dataset"]], "task": [row["task"]], "model": ["sim/model-a"],
    ...                      "cap": [80], "attempts": [2]})
    >>> run_cells(plan, summary).height
    2
    """
    effective = _effective_lookup(summary, plan)
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for dataset, task, model, cap, attempts, depth in effective:
        for attempt in range(int(attempts)):
            passed = _passes_capped(depth, cap)
            n_turns = min(cap, depth) if passed and depth is not None else cap
            started = _BASE_TIME + timedelta(days=30, seconds=len(rows) * 60)
            rows.append(
                {
                    "dataset": dataset,
                    "task": task,
                    "agent": _AGENT,
                    "model": model,
                    "cap": cap,
                    "turn_limit": cap,
                    "job": "replay",
                    "trial": harbor_writer.trial_name(task, _short_id(rng)),
                    "attempt": attempt + 1,
                    "reward": 1.0 if passed else 0.0,
                    "passed": passed,
                    "status": "pass" if passed else "fail",
                    "n_turns": n_turns,
                    "hit_limit": n_turns >= cap,
                    "started_at": started,
                    "finished_at": started + timedelta(seconds=12 * n_turns),
                }
            )
    return schema.conform(pl.DataFrame(rows, infer_schema_length=None), "trials")


def write_cells(
    plan: pl.DataFrame, summary: SimulationSummary, *, job_name: str = "planned", seed: int = 0
) -> list[Path]:
    """Write the cells of a plan as Harbor job dirs, "run" from the true model.

    One job per (dataset, model, cap) under ``summary.jobs_dir/<dataset>/<job_name>__...``;
    each planned cell gets ``attempts`` valid trials (pass iff ``cap >= effective_depth``).

    Returns
    -------
    list of Path
        The job directories written.

    Examples
    --------
    >>> import tempfile
    >>> import polars as pl
    >>> from depthlab.simulate import write_cells, write_runs
    >>> summary = write_runs(tempfile.mkdtemp(), scale=0.01, public_attempts=0)
    >>> row = summary.truth.row(0, named=True)
    >>> plan = pl.DataFrame({"dataset": [row["dataset"]], "task": [row["task"]], "model": ["sim/model-a"],
    ...                      "cap": [80], "attempts": [1]})
    >>> len(write_cells(plan, summary, job_name="extra"))
    1
    """
    if not isinstance(job_name, str) or not job_name or "/" in job_name:
        raise ValueError(f"The 'job_name' parameter of write_cells must be a plain name, got {job_name!r}")
    tasks = _tasks_from_summary(summary)
    specs = {spec.name: spec for spec in _MODEL_SPECS}
    rng = np.random.default_rng(seed)
    groups: dict[tuple[str, str, int], list[_Trial]] = {}
    for dataset, task_name, model, cap, attempts, _depth in _effective_lookup(summary, plan):
        task = tasks[(dataset, task_name)]
        spec = specs.get(model) or _ModelSpec(model, 0.0, 0.0, 1.0, 1.0, 0.0)
        trials = groups.setdefault((dataset, model, cap), [])
        for _ in range(int(attempts)):
            trials.append(_capped_trial(task, spec, cap, _passes_capped(task.effective.get(model), cap), rng))
    writer = _JobWriter(summary.jobs_dir, rng)
    for (dataset, model, cap), trials in sorted(groups.items()):
        writer.write_job(dataset, f"{job_name}__{_slug(model)}__cap-{cap:02d}", model, cap, trials)
    return writer.job_dirs


@dataclass(frozen=True)
class PlanReplay:
    """Result of :func:`replay_plan`: runs and rounds to pin every D, and the final depth table."""

    mode: str
    runs: int
    rounds: int
    sweep_runs: int
    depth: pl.DataFrame


def replay_plan(
    summary: SimulationSummary,
    *,
    mode: str = "adaptive",
    attempts: int = 1,
    trials: pl.DataFrame | None = None,
    max_rounds: int = 50,
) -> PlanReplay:
    """Plan, run (in memory, from the true model), re-plan, until nothing is missing.

    Starts from ``trials`` (default: no capped runs at all) and counts the runs the planner
    needs, against the exhaustive sweep (tasks x models x caps x attempts).

    Examples
    --------
    >>> import tempfile
    >>> from depthlab.simulate import replay_plan, write_runs
    >>> summary = write_runs(tempfile.mkdtemp(), scale=0.02, public_attempts=0)
    >>> replay = replay_plan(summary, mode="adaptive")
    >>> replay.runs < replay.sweep_runs
    True
    """
    from depthlab.measures import estimate_depth, plan_missing, sweep_runs

    tasks = summary.truth.select("dataset", "task")
    known = schema.empty("trials") if trials is None else trials
    runs = rounds = 0
    while True:
        plan = plan_missing(known, tasks, models=summary.models, caps=summary.caps, attempts=attempts, mode=mode)
        if plan.is_empty():
            break
        rounds += 1
        if rounds > max_rounds:
            raise RuntimeError(f"replay_plan did not converge in {max_rounds} rounds")
        runs += int(plan["attempts"].sum())
        known = pl.concat([known, run_cells(plan, summary, seed=rounds)])
    depth = estimate_depth(known, caps=summary.caps, models=summary.models)
    return PlanReplay(
        mode=mode,
        runs=runs,
        rounds=rounds,
        sweep_runs=sweep_runs(tasks.height, n_models=len(summary.models), caps=summary.caps, attempts=attempts),
        depth=depth,
    )


# ----------------------------------------------------------------------------------------
# the generative model


def _ladder_depth(depth: int | None, caps: Sequence[int] = CAPS) -> int | None:
    if depth is None:
        return None
    return next((cap for cap in caps if cap >= depth), None)


def _passes_capped(effective: int | None, cap: int) -> bool:
    return effective is not None and cap >= effective


def _generate_tasks(rng: np.random.Generator, scale: float) -> list[_Task]:
    tasks: list[_Task] = []
    serial = 0
    for dataset in COLLECTIONS:
        spec = _SPECS[dataset]
        n = max(1, round(spec.n_tasks * scale))
        if dataset == "depth":
            tasks.extend(_derive_depth_tasks(rng, n, tasks, serial))
            serial += n
            continue
        depth = np.maximum(1, np.rint(spec.depth_median * np.exp(rng.normal(0, spec.depth_sigma, n)))).astype(int)
        extra = np.rint(spec.extra_work_median * np.exp(rng.normal(0, 0.8, n))).astype(int)
        beyond = rng.random(n) < spec.beyond
        for i in range(n):
            serial += 1
            k = int(depth[i])
            task = _Task(
                dataset=dataset,
                name=_task_name(dataset, serial, rng),
                depth_true=k,
                work=k + int(extra[i]),
                effective=_effective_depths(rng, k, bool(beyond[i])),
            )
            tasks.append(task)
    _assign_labels(rng, tasks)
    return tasks


def _effective_depths(
    rng: np.random.Generator, depth: int, beyond: bool, capable: dict[str, bool] | None = None
) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for spec in _MODEL_SPECS:
        able = not beyond and rng.random() >= spec.incapable and (capable is None or capable[spec.name])
        out[spec.name] = depth + int(rng.poisson(spec.overhead * depth)) if able else None
    return out


def _derive_depth_tasks(rng: np.random.Generator, n: int, originals: list[_Task], serial: int) -> list[_Task]:
    picks = rng.choice(len(originals), size=min(n, len(originals)), replace=False)
    derived = []
    for offset, index in enumerate(picks):
        original = originals[int(index)]
        n_segments = int(rng.integers(3, 7))
        segments = (original.depth_true, *(1 + int(rng.poisson(1.0)) for _ in range(n_segments - 1)))
        depth = sum(segments)
        work = original.work + sum(segment + int(rng.poisson(3)) for segment in segments[1:])
        capable = {model: value is not None for model, value in original.effective.items()}
        derived.append(
            _Task(
                dataset="depth",
                name=f"deep-{original.name}-{serial + offset + 1:04d}",
                depth_true=depth,
                work=work,
                effective=_effective_depths(rng, depth, False, capable),
                segments=segments,
                derived_from=f"{original.dataset}/{original.name}",
                environment=original.name,
            )
        )
    return derived


def _task_name(dataset: str, serial: int, rng: np.random.Generator) -> str:
    if dataset == "tmax":
        return f"task_{serial:06d}_{rng.bytes(4).hex()}"
    return f"{_VERBS[int(rng.integers(len(_VERBS)))]}-{_NOUNS[int(rng.integers(len(_NOUNS)))]}-{serial:04d}"


def _ranks(values: np.ndarray) -> np.ndarray:
    """Normal scores of ``values`` (rank-based, so labels depend on order, not scale)."""
    order = values.argsort(kind="stable").argsort(kind="stable")
    return (order + 0.5) / len(values) - 0.5


def _bucket(score: np.ndarray, labels: Sequence[str], shares: Sequence[float]) -> list[str]:
    """Cut ``score`` into ``labels`` by quantile ``shares`` (cumulative)."""
    cuts = np.quantile(score, np.cumsum(shares)[:-1]) if len(score) > 1 else np.array([])
    return [labels[int(np.searchsorted(cuts, value, side="right"))] for value in score]


def _assign_labels(rng: np.random.Generator, tasks: list[_Task]) -> None:
    for dataset in COLLECTIONS:
        members = [task for task in tasks if task.dataset == dataset]
        if not members:
            continue
        k = np.log([task.depth_true for task in members])
        w = np.log([task.work for task in members])
        n = len(members)
        noise = rng.normal(0, 1, n)
        # generated labels see the solution's size (W), with much noise; author ratings see depth
        # too, and authors know which of their tasks no model solves
        generated = _ranks(w) + 0.45 * noise
        beyond = np.array([all(value is None for value in task.effective.values()) for task in members])
        human = 0.75 * _ranks(k) + 0.25 * _ranks(w) + 0.12 * noise + 0.3 * beyond
        categories = [_CATEGORIES[int(i)] for i in rng.integers(len(_CATEGORIES), size=n)]
        if dataset == "tb2":
            difficulty = _bucket(human, ("easy", "medium", "hard"), (0.05, 0.6, 0.35))
            expert = np.rint(np.exp(2.8 + 0.45 * k + 0.2 * w + rng.normal(0, 0.35, n)) / 5) * 5 + 5
            junior = np.rint(expert * rng.uniform(2, 4, n) / 5) * 5
            for index, task in enumerate(members):
                task.metadata = {
                    "author_name": "Sim Author",
                    "author_email": "author@example.org",
                    "difficulty": difficulty[index],
                    "category": categories[index],
                    "tags": [categories[index].split("-")[0], _NOUNS[index % len(_NOUNS)]],
                    "expert_time_estimate_min": float(expert[index]),
                    "junior_time_estimate_min": float(junior[index]),
                }
        elif dataset == "seta":
            difficulty = _bucket(generated, ("easy", "medium", "hard"), (0.02, 0.46, 0.52))
            for index, task in enumerate(members):
                task.metadata = {"difficulty": difficulty[index], "category": categories[index], "tags": ["bash"]}
        elif dataset == "facet":
            fallback = _bucket(generated, ("easy", "medium", "hard"), (0.3, 0.4, 0.3))
            default = rng.random(n) < 0.85
            for index, task in enumerate(members):
                task.metadata = {
                    "difficulty": "medium" if default[index] else fallback[index],
                    "category": "terminal_task_synthesis",
                    "tags": [f"skill-{_NOUNS[index % len(_NOUNS)]}", f"skill-{_VERBS[index % len(_VERBS)]}"],
                }
        elif dataset == "tmax":
            complexity = _bucket(generated, ("short", "moderate", "complex", "intricate"), (0.3, 0.35, 0.25, 0.1))
            commands = ("bash-only", "bash+code", "bash+code+services")
            for index, task in enumerate(members):
                task.metadata = {
                    "task_complexity": complexity[index],
                    "command_complexity": commands[int(rng.integers(3))],
                    "domain": categories[index],
                }
        elif dataset == "tw":
            hours = np.round(np.exp(-0.5 + 0.5 * generated * 2 + rng.normal(0, 0.4, n)), 2)
            for index, task in enumerate(members):
                task.metadata = {
                    "category": categories[index],
                    "tags": [categories[index].split("-")[0]],
                    "difficulty_explanation": "Reconstructed from a terminal recording; needs several dependent steps.",
                    "solution_explanation": "Replays the recorded commands with fixes.",
                    "verification_explanation": "Checks the final state of the files the recording touched.",
                    "expert_time_estimate_hours": float(hours[index]),
                }
        elif dataset == "depth":
            for task in members:
                task.metadata = {
                    "category": "multi-segment",
                    "segments": len(task.segments),
                    "derived_from": task.derived_from,
                    "environment": task.environment,
                }
        for task in members:
            task.instruction = _instruction(task)


def _instruction(task: _Task) -> str:
    words = task.name.split("-")
    lines = [
        f"# {task.name}",
        "",
        f"The environment in /app needs work: {' '.join(words[:2])}.",
        "Inspect the files first: each step depends on what the previous one prints.",
    ]
    for index, segment in enumerate(task.segments, start=1):
        lines.append(f"Part {index}: finish stage {index} ({segment} dependent steps) before moving on.")
    lines.append("Leave the result where the tests expect it.")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------
# task directories


def _write_task_dir(tasks_dir: Path, task: _Task) -> int:
    root = tasks_dir / task.dataset / task.name
    (root / "solution").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "environment").mkdir()
    files = {
        "task.toml": _task_toml(task),
        "instruction.md": task.instruction,
        "solution/solve.sh": _solve_sh(task),
        "tests/test.sh": _test_sh(task),
        "environment/Dockerfile": "FROM ubuntu:24.04\nWORKDIR /app\n",
    }
    digest = hashlib.sha256()
    for relative in sorted(files):
        data = files[relative].encode()
        (root / relative).write_bytes(data)
        digest.update(relative.encode() + b"\0" + hashlib.sha256(data).digest())
    task.checksum = digest.hexdigest()
    return len(files)


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return _ENCODER.encode(str(value)).decode()  # a JSON string is a TOML basic string here (ASCII)


def _task_toml(task: _Task) -> str:
    tb2 = task.dataset == "tb2"
    lines = (
        ['version = "1.0"'] if tb2 else ['schema_version = "1.1"', "", "[task]", f'name = "{task.dataset}/{task.name}"']
    )
    if task.metadata:
        lines += ["", "[metadata]"] + [f"{key} = {_toml_value(value)}" for key, value in task.metadata.items()]
    timeout = 900.0 if tb2 else 600.0
    lines += [
        "",
        "[verifier]",
        f"timeout_sec = {timeout}",
        "",
        "[agent]",
        f"timeout_sec = {timeout}",
        "",
        "[environment]",
        "build_timeout_sec = 600.0",
        "cpus = 1",
        'memory = "2G"' if tb2 else "memory_mb = 2048",
        'storage = "10G"' if tb2 else "storage_mb = 10240",
    ]
    return "\n".join(lines) + "\n"


def _solve_sh(task: _Task) -> str:
    lines = ["#!/bin/bash", "# Reference solution (simulated): one operation per line.", ""]
    bounds = np.cumsum(task.segments) if task.segments else ()
    for index in range(1, task.work + 1):
        if index % 7 == 1 and index > 1:
            lines += ["", f"# step group {index // 7 + 1}"]
        lines.append(f"./ops/op_{index:03d}.sh >> /app/log.txt")
    if len(bounds):
        lines.append(f"# segments end at depth {', '.join(map(str, bounds))}")
    return "\n".join(lines) + "\n"


def _test_sh(task: _Task) -> str:
    if task.segments:
        keys = ", ".join(f'\\"segment_{index}\\": $s{index}' for index in range(1, len(task.segments) + 1))
        checks = "\n".join(
            f"s{index}=0; [ -f /app/stage_{index}.ok ] && s{index}=1" for index in range(1, len(task.segments) + 1)
        )
        return f'#!/bin/bash\nmkdir -p /logs/verifier\n{checks}\necho "{{{keys}}}" > /logs/verifier/reward.json\n'
    return (
        "#!/bin/bash\n"
        "mkdir -p /logs/verifier\n"
        "if [ -f /app/done.ok ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
    )


# ----------------------------------------------------------------------------------------
# trials and jobs


@dataclass
class _Trial:
    task: _Task
    model: str
    cap: int | None
    turn_limit: int
    n_turns: int | None
    rewards: dict[str, float] | None
    exception: str | None = None
    chain: int = 0  # turns of the trajectory that each read what the previous one revealed


def _planted_chain(task: _Task, effective: int | None, n_turns: int, passed: bool) -> int:
    """The chain a run's trajectory carries: a passing run read its effective depth in sequence
    (all of it that fits in its turns); a failing one stopped one read short."""
    needed = min(n_turns, effective if effective is not None else task.depth_true)
    return max(1, needed if passed else needed - 1) if n_turns else 0


def _capped_trial(task: _Task, spec: _ModelSpec, cap: int, passed: bool, rng: np.random.Generator) -> _Trial:
    effective = task.effective.get(spec.name)
    if passed:
        uncapped = _uncapped_turns(task, spec, effective or cap, rng)
        n_turns = max(1, min(cap, uncapped))
    else:
        n_turns = cap
    rewards = _rewards(task, effective, cap, passed)
    chain = _planted_chain(task, effective, n_turns, rewards["reward"] == 1.0)
    return _Trial(task, spec.name, cap, cap, n_turns, rewards, chain=chain)


def _public_trial(task: _Task, spec: _ModelSpec, rng: np.random.Generator) -> _Trial:
    effective = task.effective[spec.name]
    if effective is None:
        if all(value is None for value in task.effective.values()):
            # beyond every model: it flails, and often runs into the harness limit
            flail = PUBLIC_TURN_LIMIT if rng.random() < 0.3 else 3 * task.depth_true
        else:
            # beyond this model only: it works as long as usual and fails (N says nothing of passing)
            flail = task.depth_true + int(rng.poisson(spec.overhead * task.depth_true))
        n_turns = min(PUBLIC_TURN_LIMIT, _uncapped_turns(task, spec, flail, rng))
        chain = _planted_chain(task, flail, n_turns, False)
        return _Trial(task, spec.name, None, PUBLIC_TURN_LIMIT, n_turns, _rewards(task, None, 0, False), chain=chain)
    n_turns = min(PUBLIC_TURN_LIMIT, _uncapped_turns(task, spec, effective, rng))
    if task.segments:
        reached = _segments_passed_uncapped(task, effective, spec.reliability, rng)
        rewards = _segment_rewards(len(task.segments), reached)
    else:
        passed = bool(rng.random() < spec.reliability**effective)
        rewards = {"reward": 1.0 if passed else 0.0}
    chain = _planted_chain(task, effective, n_turns, rewards["reward"] == 1.0)
    return _Trial(task, spec.name, None, PUBLIC_TURN_LIMIT, n_turns, rewards, chain=chain)


def _invalid_trial(task: _Task, model: str, cap: int | None, turn_limit: int) -> _Trial:
    return _Trial(task, model, cap, turn_limit, None, None, _INVALID_EXCEPTION)


def _uncapped_turns(task: _Task, spec: _ModelSpec, effective: int, rng: np.random.Generator) -> int:
    base = max(effective, math.ceil(task.work / spec.batch)) + rng.poisson(spec.explore)
    return max(1, round(base * math.exp(rng.normal(0, 0.25))))


def _segment_bounds(task: _Task, effective: int) -> list[int]:
    """Effective depth at which each segment is done (overhead spread over the segments)."""
    total = sum(task.segments)
    cumulative = np.cumsum(task.segments)
    return [math.ceil(effective * value / total) for value in cumulative]


def _segments_passed_uncapped(task: _Task, effective: int, reliability: float, rng: np.random.Generator) -> int:
    passed, previous = 0, 0
    for bound in _segment_bounds(task, effective):
        if rng.random() >= reliability ** (bound - previous):
            break
        passed, previous = passed + 1, bound
    return passed


def _segment_rewards(n_segments: int, passed: int) -> dict[str, float]:
    # a run stops at its first failed segment: later segments have no key
    rewards = {f"segment_{index}": 1.0 for index in range(1, passed + 1)}
    if passed < n_segments:
        rewards[f"segment_{passed + 1}"] = 0.0
    rewards["reward"] = 1.0 if passed == n_segments else 0.0
    return rewards


def _rewards(task: _Task, effective: int | None, cap: int, passed: bool) -> dict[str, float]:
    if not task.segments:
        return {"reward": 1.0 if passed else 0.0}
    if passed:
        return _segment_rewards(len(task.segments), len(task.segments))
    if effective is None:
        return _segment_rewards(len(task.segments), 0)
    done = sum(1 for bound in _segment_bounds(task, effective) if bound <= cap)
    return _segment_rewards(len(task.segments), min(done, len(task.segments) - 1))


def _slug(model: str) -> str:
    return model.replace("/", "-")


def _short_id(rng: np.random.Generator) -> str:
    return harbor_writer.trial_suffix(rng.integers(len(harbor_writer.TRIAL_SUFFIX_ALPHABET), size=7))


def _iso(moment: datetime) -> str:
    return harbor_writer.iso_time(moment)


class _JobWriter:
    """Writes Harbor job dirs (JobConfig, JobResult, one trial dir per trial) with :mod:`depthlab.io.harbor_writer`."""

    def __init__(self, jobs_dir: Path, rng: np.random.Generator) -> None:
        self.jobs_dir = jobs_dir
        self.rng = rng
        self.job_dirs: list[Path] = []
        self.n_trials = self.n_invalid = self.n_files = 0

    def write_job(self, dataset: str, job_name: str, model: str, cap: int | None, trials: list[_Trial]) -> None:
        job_dir = self.jobs_dir / dataset / job_name
        job_dir.mkdir(parents=True, exist_ok=False)
        job_id = str(uuid.UUID(bytes=self.rng.bytes(16), version=4))
        agent = harbor_writer.agent_config(_AGENT, model, harbor_writer.cap_kwargs(cap, turn_limit=PUBLIC_TURN_LIMIT))
        job_start = _BASE_TIME + timedelta(hours=len(self.job_dirs))
        task_names = sorted({trial.task.name for trial in trials})
        config = harbor_writer.job_config(
            job_name,
            f"jobs/{dataset}",
            [agent],
            datasets=[harbor_writer.dataset_config(f"tasks/{dataset}", task_names)],
            n_concurrent_trials=4,
            quiet=False,
        )
        _write_json(job_dir / "config.json", config)
        results = []
        moment = job_start
        for trial in trials:
            result, finished = self._write_trial(job_dir, job_name, job_id, dataset, agent, trial, moment)
            moment = finished + timedelta(seconds=5)
            results.append(result)
        result = harbor_writer.job_result(
            job_id,
            results,
            started_at=harbor_writer.job_time(job_start),
            updated_at=harbor_writer.job_time(moment),
            finished_at=harbor_writer.job_time(moment),
        )
        _write_json(job_dir / "result.json", result)
        self.job_dirs.append(job_dir)
        self.n_files += 2

    def _write_trial(
        self,
        job_dir: Path,
        job_name: str,
        job_id: str,
        dataset: str,
        agent: dict[str, Any],
        trial: _Trial,
        started: datetime,
    ) -> tuple[dict[str, Any], datetime]:
        task = trial.task
        name = harbor_writer.trial_name(task.name, _short_id(self.rng))
        trial_dir = os.path.join(job_dir, name)
        turns = trial.n_turns or 0
        setup_end = started + timedelta(seconds=20)
        agent_end = setup_end + timedelta(seconds=11 * turns + 3)
        finished = agent_end + timedelta(seconds=15)
        task_path = f"tasks/{dataset}/{task.name}"
        config = harbor_writer.trial_config(
            harbor_writer.task_config(task_path, dataset), name, f"jobs/{dataset}/{job_name}", agent, job_id=job_id
        )
        invalid = trial.exception is not None
        dirs = [trial_dir]
        files: list[tuple[str, bytes]] = []
        exception = None
        if invalid:
            message = "Environment did not start within 600.0 seconds"
            traceback = f"Traceback (most recent call last):\n{trial.exception}: {message}\n"
            exception = harbor_writer.exception_info(
                trial.exception or "", message, traceback, harbor_writer.job_time(setup_end)
            )
            files.append((os.path.join(trial_dir, "exception.txt"), traceback.encode()))
            self.n_invalid += 1
        else:
            agent_dir, verifier_dir = os.path.join(trial_dir, "agent"), os.path.join(trial_dir, "verifier")
            dirs += [agent_dir, verifier_dir]
            trajectory = _ENCODER.encode(_trajectory(trial, name, setup_end))
            files.append((os.path.join(agent_dir, "trajectory.json"), trajectory))
            reward_name, reward_text = harbor_writer.reward_file(trial.rewards or {"reward": 0.0})
            files.append((os.path.join(verifier_dir, reward_name), reward_text.encode()))
        usage = harbor_writer.agent_result(
            n_input_tokens=2500 * turns + 1800,
            n_cache_tokens=1200 * turns,
            n_output_tokens=310 * turns,
            cost_usd=round(0.0000025 * 2500 * turns + 0.00001 * 310 * turns, 6),
            metadata={"n_episodes": turns, "summarization_count": 0},
        )
        phases = {"environment_setup": harbor_writer.phase(_iso(started), _iso(setup_end))}
        if not invalid:
            phases["agent_setup"] = harbor_writer.phase(_iso(setup_end), _iso(setup_end))
            phases["agent_execution"] = harbor_writer.phase(_iso(setup_end), _iso(agent_end))
            phases["verifier"] = harbor_writer.phase(_iso(agent_end), _iso(finished))
        result = harbor_writer.trial_result(
            config,
            result_id=str(uuid.UUID(bytes=self.rng.bytes(16), version=4)),
            task_name=task.name,
            task_path=task_path,
            trial_dir=trial_dir,
            source=dataset,
            task_checksum=task.checksum,
            agent=harbor_writer.agent_info(_AGENT, _AGENT_VERSION, trial.model),
            agent_result=None if invalid else usage,
            rewards=trial.rewards,
            exception=exception,
            started_at=_iso(started),
            finished_at=_iso(setup_end if invalid else finished),
            phases=phases,
        )
        files.append((os.path.join(trial_dir, "config.json"), _ENCODER.encode(config)))
        files.append((os.path.join(trial_dir, "result.json"), _ENCODER.encode(result)))
        _write_files(dirs, files)
        self.n_trials += 1
        self.n_files += len(files)
        return result, finished


def _trajectory(trial: _Trial, session: str, started: datetime) -> dict[str, Any]:
    """An ATIF trajectory: the prompt as a user step, then one agent step per turn.

    The turns carry the trial's planted chain (:func:`_turn_script`); the root's
    ``extra.planted_chain`` records its length, the truth a depth proxy should recover.
    """
    cap_line = f"\n\nYou have at most {trial.cap} turns." if trial.cap is not None else ""
    steps: list[dict[str, Any]] = [
        {"step_id": 1, "timestamp": _iso(started), "source": "user", "message": trial.task.instruction + cap_line}
    ]
    turns = trial.n_turns or 0
    for turn, (command, output) in enumerate(_turn_script(turns, trial.chain, session)):
        calls = [
            {
                "tool_call_id": f"call_{turn}_1",
                "function_name": "bash_command",
                "arguments": {"keystrokes": f"{command}\n", "duration": 1.0},
            }
        ]
        if turn == turns - 1:
            calls.append(
                {"tool_call_id": f"call_{turn}_task_complete", "function_name": "mark_task_complete", "arguments": {}}
            )
        steps.append(
            {
                "step_id": turn + 2,
                "timestamp": _iso(started + timedelta(seconds=11 * (turn + 1))),
                "source": "agent",
                "model_name": trial.model,
                "message": f"Analysis: step {turn + 1} output read.\nPlan: run the next operation.",
                "tool_calls": calls,
                # the terminal echoes the command line before its output
                "observation": {"results": [{"content": f"root@sim:/app# {command}\n{output}"}]},
                "metrics": {"prompt_tokens": 2500, "completion_tokens": 310, "cached_tokens": 1200},
            }
        )
    document = harbor_writer.trajectory(
        session,
        steps,
        agent_name=_AGENT,
        agent_version=_AGENT_VERSION,
        model_name=trial.model,
        extra={"parser": "json"},
    )
    document["extra"] = {"planted_chain": trial.chain}  # ATIF's root extra (v1.1 on)
    return document


def _turn_script(turns: int, chain: int, session: str) -> list[tuple[str, str]]:
    """(command, output) of each turn: ``chain`` turns that each read a file whose name only the
    previous one printed, spread among turns that depend on nothing.

    Chain turn 1 reads ``/app/data/start.txt`` (a name the agent types) and learns the name of the
    next file; chain turn j reads the file chain turn j-1 revealed. Names are random identifiers
    (the proxy's rule counts them), so nothing can be guessed. The other turns are batching habits
    (``./ops/op_NNN.sh``, names the agent types), looks around (``ls``, ``pwd``: plain words) and
    re-reads of a file already read (they reveal nothing new, so they never lengthen the chain).
    Seeded by the trial's session name, so the trial's other random draws are untouched.
    """
    if turns <= 0:
        return []
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(session.encode()).digest()[:8], "little"))
    names = ["start.txt"] + [f"{_short_id(rng)}-{index}.part" for index in range(1, chain + 1)]
    places = set(rng.choice(turns, size=chain, replace=False).tolist()) if chain else set()
    script: list[tuple[str, str]] = []
    done = 0  # chain turns so far
    for turn in range(turns):
        if turn in places:
            done += 1
            revealed = f"next: /app/data/{names[done]}" if done < chain else f"result {_short_id(rng)}-final saved"
            script.append((f"cat /app/data/{names[done - 1]}", revealed))
            continue
        habit = rng.random()
        if habit < 0.55:
            script.append((f"./ops/op_{turn + 1:03d}.sh", f"op {turn + 1} ok"))
        elif habit < 0.75 and done:
            again = int(rng.integers(done))  # a file already read: its content was seen before
            shown = f"next: /app/data/{names[again + 1]}" if again + 1 < chain else "result saved"
            script.append((f"cat /app/data/{names[again]}", shown))
        elif habit < 0.9:
            script.append(("ls /app", "ops  data  logs"))
        else:
            script.append(("pwd", "/app"))
    return script


def _write_files(dirs: list[str], files: list[tuple[str, bytes]]) -> None:
    for folder in dirs:
        os.mkdir(folder)
    for path, data in files:
        with open(path, "wb") as handle:
            handle.write(data)


def _write_json(path: str | Path, value: object) -> None:
    with open(path, "wb") as handle:
        handle.write(_ENCODER.encode(value))


# ----------------------------------------------------------------------------------------
# truth


def _truth_frames(tasks: Iterable[_Task]) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows, model_rows = [], []
    for task in tasks:
        reachable = [value for value in task.effective.values() if value is not None]
        rows.append(
            {
                "dataset": task.dataset,
                "task": task.name,
                "depth_true": task.depth_true,
                "d_star": _ladder_depth(min(reachable)) if reachable else None,
                "w_star": task.work,
                "n_segments": len(task.segments),
                "segments": list(task.segments),
                "derived_from": task.derived_from,
                "environment": task.environment,
                "checksum": task.checksum,
            }
        )
        for model, effective in task.effective.items():
            model_rows.append(
                {
                    "dataset": task.dataset,
                    "task": task.name,
                    "model": model,
                    "effective_depth": effective,
                    "model_depth": _ladder_depth(effective),
                }
            )
    truth = pl.DataFrame(
        rows,
        schema={
            "dataset": pl.String,
            "task": pl.String,
            "depth_true": pl.Int32,
            "d_star": pl.Int32,
            "w_star": pl.Int32,
            "n_segments": pl.Int32,
            "segments": pl.List(pl.Int32),
            "derived_from": pl.String,
            "environment": pl.String,
            "checksum": pl.String,
        },
    )
    model_truth = pl.DataFrame(
        model_rows,
        schema={
            "dataset": pl.String,
            "task": pl.String,
            "model": pl.String,
            "effective_depth": pl.Int32,
            "model_depth": pl.Int32,
        },
    )
    return truth, model_truth


def _effective_lookup(summary: SimulationSummary, plan: pl.DataFrame) -> list[tuple]:
    """Planned cells joined to the models' true effective depths (unknown model: never passes)."""
    missing = [column for column in ("dataset", "task", "model", "cap", "attempts") if column not in plan.columns]
    if missing:
        raise ValueError(f"The 'plan' parameter must have the columns {missing}, got {plan.columns}")
    joined = plan.join(
        summary.model_truth.select("dataset", "task", "model", "effective_depth"),
        on=["dataset", "task", "model"],
        how="left",
    )
    return joined.select("dataset", "task", "model", "cap", "attempts", "effective_depth").rows()


def _tasks_from_summary(summary: SimulationSummary) -> dict[tuple[str, str], _Task]:
    """Rebuild the per-task records the trial writer needs from the summary's truth frames."""
    effective: dict[tuple[str, str], dict[str, int | None]] = {}
    for dataset, task, model, depth in summary.model_truth.select(
        "dataset", "task", "model", "effective_depth"
    ).iter_rows():
        effective.setdefault((dataset, task), {})[model] = depth
    out = {}
    for row in summary.truth.iter_rows(named=True):
        key = (row["dataset"], row["task"])
        instruction = summary.tasks_dir / row["dataset"] / row["task"] / "instruction.md"
        task = _Task(
            dataset=row["dataset"],
            name=row["task"],
            depth_true=row["depth_true"],
            work=row["w_star"],
            effective=effective.get(key, {}),
            segments=tuple(row["segments"] or ()),
            derived_from=row["derived_from"],
            environment=row["environment"],
            instruction=instruction.read_text() if instruction.exists() else "",
            checksum=row["checksum"] or "",
        )
        out[key] = task
    return out
