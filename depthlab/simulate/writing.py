"""The writing of simulated runs: task dirs and Harbor job dirs, through the one Harbor writer.

Every Harbor document (job and trial configs and results, ATIF trajectories, reward files) is
built by :mod:`depthlab.io.harbor_writer`, the format's one statement; this module only lays the
files out (``<out>/tasks/<dataset>/<task>``, ``<out>/jobs/<dataset>/<job>/<trial>``) and writes
them compactly. The files go into folders :func:`write_runs` has just emptied and nothing reads
before it returns, so they are written directly, not through :mod:`depthlab._atomic` (tens of
thousands of small files; a rename each would double the time).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from depthlab._checks import check_choice, check_nonnegative_int, check_number
from depthlab.io import harbor_writer
from depthlab.io.harbor_records import (
    AgentConfigRecord,
    AtifMetricsRecord,
    AtifObservationRecord,
    AtifObservationResultRecord,
    AtifStepRecord,
    AtifToolCallRecord,
    StepResultRecord,
    TrajectoryRecord,
    TrialResultRecord,
)
from depthlab.io.harbor_task import config_text
from depthlab.schema import CAPS
from depthlab.simulate import steps as _steps
from depthlab.simulate.model import (
    _MODEL_SPECS,
    COLLECTIONS,
    PUBLIC_TURN_LIMIT,
    _capped_trial,
    _generate_tasks,
    _invalid_trial,
    _passes_capped,
    _public_trial,
    _short_id,
    _Task,
    _Trial,
    _turn_script,
)
from depthlab.simulate.truth import SimulationSummary, _truth_frames

_AGENT = "terminus-2"

_AGENT_VERSION = "2.0.0"

_BASE_TIME = datetime(2026, 6, 1, tzinfo=UTC)

_ENCODER = msgspec.json.Encoder()
#: Every simulated agent step's token counts (no cost reported).
_STEP_METRICS = AtifMetricsRecord(prompt_tokens=2500, completion_tokens=310, cached_tokens=1200)


def write_runs(
    out_dir: str | Path,
    *,
    seed: int = 0,
    scale: float = 1.0,
    flip_rate: float = 0.0,
    invalid_rate: float = 0.03,
    public_attempts: int = 3,
    segments_as: str = "rewards",
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
    segments_as : {"rewards", "steps"}, default "rewards"
        How a segmented task (the ``depth`` collection) and its runs are written: ``"rewards"``,
        one task with one verifier writing a reward key per segment (``segment_1`` ...);
        ``"steps"``, a Harbor multi-step task (schema 1.4 ``[[steps]]``, a step per segment with its
        ``min_reward`` gate) whose runs are Harbor multi-step trials (``step_results``), see
        :mod:`depthlab.simulate.steps`. The draws, hence the truth and every run's outcome, are the
        same in both.

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
    check_choice(segments_as, "segments_as", function, _steps.SEGMENT_LAYOUTS)
    as_steps = segments_as == "steps"

    out = Path(out_dir)
    tasks_dir, jobs_dir = out / "tasks", out / "jobs"
    for folder in (tasks_dir, jobs_dir):
        if folder.exists():
            shutil.rmtree(folder)
    rng = np.random.default_rng(seed)
    tasks = _generate_tasks(rng, scale)
    n_files = sum(_write_task_dir(tasks_dir, task, as_steps=as_steps) for task in tasks)

    writer = _JobWriter(jobs_dir, rng, as_steps=as_steps)
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


def _write_task_dir(tasks_dir: Path, task: _Task, *, as_steps: bool = False) -> int:
    root = tasks_dir / task.dataset / task.name
    if as_steps and task.segments:
        files = _steps.task_files(task)
    else:
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
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(data)
        digest.update(relative.encode() + b"\0" + hashlib.sha256(data).digest())
    task.checksum = digest.hexdigest()
    return len(files)


def _task_toml(task: _Task) -> str:
    tb2 = task.dataset == "tb2"
    config: dict[str, Any] = (
        {"version": "1.0"} if tb2 else {"schema_version": "1.1", "task": {"name": f"{task.dataset}/{task.name}"}}
    )
    if task.metadata:
        config["metadata"] = dict(task.metadata)
    timeout = 900.0 if tb2 else 600.0
    config["verifier"] = {"timeout_sec": timeout}
    config["agent"] = {"timeout_sec": timeout}
    sizes = {"memory": "2G", "storage": "10G"} if tb2 else {"memory_mb": 2048, "storage_mb": 10240}
    config["environment"] = {"build_timeout_sec": 600.0, "cpus": 1, **sizes}
    return config_text(config)


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


def _slug(model: str) -> str:
    return model.replace("/", "-")


def _iso(moment: datetime) -> str:
    return harbor_writer.iso_time(moment)


class _JobWriter:
    """Writes Harbor job dirs (JobConfig, JobResult, one trial dir per trial) with :mod:`depthlab.io.harbor_writer`."""

    def __init__(self, jobs_dir: Path, rng: np.random.Generator, *, as_steps: bool = False) -> None:
        self.jobs_dir = jobs_dir
        self.rng = rng
        self.as_steps = as_steps
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
        job_result = harbor_writer.job_result(
            job_id,
            results,
            started_at=harbor_writer.job_time(job_start),
            updated_at=harbor_writer.job_time(moment),
            finished_at=harbor_writer.job_time(moment),
        )
        _write_json(job_dir / "result.json", job_result)
        self.job_dirs.append(job_dir)
        self.n_files += 2

    def _write_trial(
        self,
        job_dir: Path,
        job_name: str,
        job_id: str,
        dataset: str,
        agent: AgentConfigRecord,
        trial: _Trial,
        started: datetime,
    ) -> tuple[TrialResultRecord, datetime]:
        task = trial.task
        name = harbor_writer.trial_name(task.name, _short_id(self.rng))
        trial_dir = os.path.join(job_dir, name)
        turns = trial.n_turns or 0
        setup_end = started + timedelta(seconds=20)
        agent_end = setup_end + timedelta(seconds=11 * turns + 3)
        finished = agent_end + timedelta(seconds=15)
        stepped = self.as_steps and bool(task.segments)
        task_path = f"tasks/{dataset}/{task.name}"
        if stepped:  # absolute, as Harbor records it, so a reader finds the task's declared steps
            task_path = os.path.abspath(self.jobs_dir.parent / task_path)
        config = harbor_writer.trial_config(
            harbor_writer.task_config(task_path, dataset), name, f"jobs/{dataset}/{job_name}", agent, job_id=job_id
        )
        invalid = trial.exception is not None
        step_results: list[StepResultRecord] = []
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
        elif stepped:
            step_results, finished = self._write_steps(trial, name, trial_dir, setup_end, dirs, files)
        else:
            agent_dir, verifier_dir = os.path.join(trial_dir, "agent"), os.path.join(trial_dir, "verifier")
            dirs += [agent_dir, verifier_dir]
            trajectory = _ENCODER.encode(_trajectory(trial, name, setup_end))
            files.append((os.path.join(agent_dir, "trajectory.json"), trajectory))
            reward_name, reward_text = harbor_writer.reward_file(trial.rewards or {"reward": 0.0})
            files.append((os.path.join(verifier_dir, reward_name), reward_text.encode()))
        usage = _steps.agent_usage(turns)
        phases = dict.fromkeys(harbor_writer.PHASES)
        phases["environment_setup"] = harbor_writer.phase(_iso(started), _iso(setup_end))
        if not invalid:
            phases["agent_setup"] = harbor_writer.phase(_iso(setup_end), _iso(setup_end))
        if not invalid and not stepped:  # a multi-step trial times its agent and verifier per step
            phases["agent_execution"] = harbor_writer.phase(_iso(setup_end), _iso(agent_end))
            phases["verifier"] = harbor_writer.phase(_iso(agent_end), _iso(finished))
        rewards = trial.rewards
        if stepped and not invalid:
            rewards = harbor_writer.multi_step_rewards(
                [harbor_writer.step_rewards(step) for step in step_results], _steps.STEP_REWARD_STRATEGY
            )
        result = harbor_writer.trial_result(
            config,
            result_id=str(uuid.UUID(bytes=self.rng.bytes(16), version=4)),
            task_name=task.name,
            task_path=task_path,
            trial_dir=trial_dir,
            source=dataset,
            task_checksum=task.checksum,
            agent=harbor_writer.agent_info(_AGENT, _AGENT_VERSION, trial.model),
            agent_result=None if invalid or stepped else usage,
            rewards=rewards,
            exception=exception,
            started_at=_iso(started),
            finished_at=_iso(setup_end if invalid else finished),
            phases=phases,
            step_results=step_results if stepped and not invalid else None,
        )
        files.append((os.path.join(trial_dir, "config.json"), harbor_writer.encode(config)))
        files.append((os.path.join(trial_dir, "result.json"), harbor_writer.encode(result)))
        _write_files(dirs, files)
        self.n_trials += 1
        self.n_files += len(files)
        return result, finished

    def _write_steps(
        self,
        trial: _Trial,
        name: str,
        trial_dir: str,
        agent_start: datetime,
        dirs: list[str],
        files: list[tuple[str, bytes]],
    ) -> tuple[list[StepResultRecord], datetime]:
        """A valid run of a segmented task as Harbor's multi-step trial: its step results, and the
        files of each step under ``steps/<name>/`` (added to ``dirs`` and ``files``); and its end."""
        script = _turn_script(trial.n_turns or 0, trial.chain, name)
        ran = _steps.trial_steps(trial, script, agent_start)
        step_results = []
        dirs.append(os.path.join(trial_dir, "steps"))
        done = 0
        for index, (step, turns, reward, started, agent_end, verifier_end) in enumerate(ran, start=1):
            step_dir = os.path.join(trial_dir, "steps", step)
            agent_dir, verifier_dir = os.path.join(step_dir, "agent"), os.path.join(step_dir, "verifier")
            dirs += [step_dir, agent_dir, verifier_dir]
            message = _steps.step_instruction(trial.task, index)
            document = _trajectory(trial, f"{name}.{step}", started, script=turns, message=message, first=done)
            files.append((os.path.join(agent_dir, "trajectory.json"), _ENCODER.encode(document)))
            reward_name, reward_text = harbor_writer.reward_file({"reward": reward})
            files.append((os.path.join(verifier_dir, reward_name), reward_text.encode()))
            step_results.append(_steps.step_result(step, len(turns), reward, started, agent_end, verifier_end, _iso))
            done += len(turns)
        finished = (ran[-1][5] if ran else agent_start) + timedelta(seconds=5)
        return step_results, finished


def _trajectory(
    trial: _Trial,
    session: str,
    started: datetime,
    *,
    script: list[tuple[str, str]] | None = None,
    message: str | None = None,
    first: int = 0,
) -> TrajectoryRecord:
    """An ATIF trajectory: the prompt as a user step, then one agent step per turn.

    The turns carry the trial's planted chain (:func:`_turn_script`); the root's
    ``extra.planted_chain`` records its length, the truth a depth proxy should recover. A step of
    a multi-step trial gives its ``script`` (its share of the run's turns, ``first`` turns ran
    before it) and its instruction as ``message``; each step's agent marks its step complete on
    its last turn, and its trajectory records no chain (the chain spans the steps).
    """
    cap_line = f"\n\nYou have at most {trial.cap} turns." if trial.cap is not None and not first else ""
    prompt = (trial.task.instruction if message is None else message) + cap_line
    steps = [AtifStepRecord(step_id=1, timestamp=_iso(started), source="user", message=prompt)]
    if script is None:
        script = _turn_script(trial.n_turns or 0, trial.chain, session)
    turns = len(script)
    for turn, (command, output) in enumerate(script):
        calls = [
            AtifToolCallRecord(
                tool_call_id=f"call_{turn}_1",
                function_name="bash_command",
                arguments={"keystrokes": f"{command}\n", "duration": 1.0},
            )
        ]
        if turn == turns - 1:
            calls.append(
                AtifToolCallRecord(
                    tool_call_id=f"call_{turn}_task_complete", function_name="mark_task_complete", arguments={}
                )
            )
        # the terminal echoes the command line before its output
        seen = AtifObservationResultRecord(content=f"root@sim:/app# {command}\n{output}")
        steps.append(
            AtifStepRecord(
                step_id=turn + 2,
                timestamp=_iso(started + timedelta(seconds=11 * (turn + 1))),
                source="agent",
                model_name=trial.model,
                message=f"Analysis: step {first + turn + 1} output read.\nPlan: run the next operation.",
                tool_calls=calls,
                observation=AtifObservationRecord(results=[seen]),
                metrics=_STEP_METRICS,
            )
        )
    document = harbor_writer.trajectory(
        session,
        steps,
        agent_name=_AGENT,
        agent_version=_AGENT_VERSION,
        model_name=trial.model,
        extra={"parser": "json"},
    )
    if document.final_metrics:
        # the simulator has written its unknown cost total as null since its first release (Harbor leaves it
        # out); kept, so simulated files, and the tables and digests made of them, stay byte for byte the same
        document.final_metrics.total_cost_usd = None
    if message is None:
        document.extra = {"planted_chain": trial.chain}  # ATIF's root extra (v1.1 on)
    return document


def _write_files(dirs: list[str], files: list[tuple[str, bytes]]) -> None:
    for folder in dirs:
        os.mkdir(folder)
    for path, data in files:
        with open(path, "wb") as handle:
            handle.write(data)


def _write_json(path: str | Path, value: object) -> None:
    with open(path, "wb") as handle:
        handle.write(_ENCODER.encode(value))
