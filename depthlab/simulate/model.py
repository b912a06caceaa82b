"""The generative model of the simulated runs: tasks of known depth D* and work W*, models, trials.

Pure computation: nothing here writes a file (:mod:`depthlab.simulate.writing` does). Every draw
comes from the one ``numpy`` generator the caller passes, in a fixed order, so a seed fixes what
is written; :data:`MODEL_VERSION` names the model (bump it whenever a parameter changes what a
seed writes).

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
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from depthlab.catalog import DIFFICULTY_ORDER
from depthlab.io import harbor_writer
from depthlab.schema import CAPS

#: The simulated models (Harbor ``config.agent.model_name``).
MODELS: Final[tuple[str, ...]] = ("sim/model-a", "sim/model-b")

#: Version of the generative model: bump it whenever a parameter changes what a seed writes, so
#: that cached demo data (``depthlab reproduce``) built by an older model is not reused.
#: 6: task.toml by the one TOML writer and the jobs' stats counted as Harbor counts them (issue 43); the draws are 3's
MODEL_VERSION: Final[int] = 6

#: Harness limit of the uncapped public runs (TB2's official runs used 200 episodes too).
PUBLIC_TURN_LIMIT: Final[int] = 200

_INVALID_EXCEPTION = "EnvironmentStartTimeoutError"


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
            difficulty = _bucket(human, DIFFICULTY_ORDER, (0.05, 0.6, 0.35))
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
            difficulty = _bucket(generated, DIFFICULTY_ORDER, (0.02, 0.46, 0.52))
            for index, task in enumerate(members):
                task.metadata = {"difficulty": difficulty[index], "category": categories[index], "tags": ["bash"]}
        elif dataset == "facet":
            fallback = _bucket(generated, DIFFICULTY_ORDER, (0.3, 0.4, 0.3))
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


def _short_id(rng: np.random.Generator) -> str:
    # tolist: the draws as Python ints, the Sequence[int] trial_suffix takes (the same seven values)
    return harbor_writer.trial_suffix(rng.integers(len(harbor_writer.TRIAL_SUFFIX_ALPHABET), size=7).tolist())


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
