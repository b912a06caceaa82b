"""Segmented tasks written as Harbor multi-step tasks, and their runs as Harbor multi-step trials.

``write_runs(..., segments_as="steps")`` writes each task of the ``depth`` collection (the segmented
ones) the way Harbor 0.26 writes a segmented task: ``task.toml`` of schema 1.4 with one
``[[steps]]`` entry per segment (``min_reward = 1.0``: a failed segment stops the run), each step's
``steps/<name>/instruction.md``, ``solution/solve.sh`` and ``tests/test.sh``; and each run of it
the way Harbor records a multi-step trial: ``step_results`` (one per segment that ran, with its own
agent result, verifier result and timings), each step's files under ``steps/<name>/agent/`` and
``steps/<name>/verifier/``, no top-level ``agent_result``, and the trial's reward computed over the
steps by Harbor's rule (:func:`depthlab.io.harbor_writer.multi_step_rewards`) with the strategy
:data:`STEP_REWARD_STRATEGY`.

The draws are the same as with the default ``segments_as="rewards"`` (per-segment reward keys in
one ``reward.json``): the same seed gives the same tasks, trials, trial names, turn counts and
segment outcomes, so the truth tables are equal and a run reads the same in both layouts. Only
the layout differs; what is split across the steps is split deterministically:

* a task's W* over its steps in proportion to the segments' true depths (each step at least one
  line; the steps' lines add up to W*, the W of a multi-step task);
* a run's turns over the steps it ran in proportion to the same depths (they add up to its N),
  and its trajectory's turns in order, so the steps' trajectories together are the single-step
  trajectory's turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from depthlab.io import harbor_writer
from depthlab.io.harbor_records import AgentContextRecord, StepResultRecord
from depthlab.io.harbor_task import config_text
from depthlab.simulate.model import _Task, _Trial

#: The two layouts of a segmented task and its runs (``write_runs(segments_as=...)``).
SEGMENT_LAYOUTS: Final[tuple[str, ...]] = ("rewards", "steps")

#: The multi-step tasks' ``multi_step_reward_strategy``: ``final`` makes a trial's reward 1 exactly
#: when its last step, hence every step (the gates stop at a failed one), passed: the ``reward`` of
#: the per-segment layout, so pass/fail and the trial reward are the same in both layouts.
STEP_REWARD_STRATEGY: Final[str] = "final"

#: A step's gate: a segment not passed stops the run.
MIN_REWARD: Final[float] = 1.0


def step_name(index: int) -> str:
    """The folder name of a task's segment ``index`` (1-based) as a Harbor step.

    Examples
    --------
    >>> step_name(2)
    'segment-2'
    """
    return f"segment-{index}"


def split(total: int, weights: Sequence[int]) -> list[int]:
    """``total`` split into integers in proportion to ``weights`` (largest remainder, ties to the first).

    Examples
    --------
    >>> split(10, [1, 1, 1])
    [4, 3, 3]
    >>> split(0, [2, 1])
    [0, 0]
    """
    whole = sum(weights)
    shares = [total * weight // whole for weight in weights]
    left = total - sum(shares)
    order = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % whole), i))
    for index in order[:left]:
        shares[index] += 1
    return shares


def segment_work(task: _Task) -> list[int]:
    """W* of each segment of a segmented task (they add up to the task's W*; each at least 1)."""
    return split(task.work, task.segments)


def task_files(task: _Task) -> dict[str, str]:
    """The files of a segmented task as a Harbor multi-step task (relative path -> text)."""
    names = [step_name(index) for index in range(1, len(task.segments) + 1)]
    config: dict[str, Any] = {
        "schema_version": "1.4",
        "multi_step_reward_strategy": STEP_REWARD_STRATEGY,
        "task": {"name": f"{task.dataset}/{task.name}"},
    }
    if task.metadata:
        config["metadata"] = dict(task.metadata)
    config["steps"] = [{"name": name, "min_reward": MIN_REWARD} for name in names]
    config["verifier"] = {"timeout_sec": 600.0}
    config["agent"] = {"timeout_sec": 600.0}
    config["environment"] = {"build_timeout_sec": 600.0, "cpus": 1, "memory_mb": 2048, "storage_mb": 10240}
    files = {"task.toml": config_text(config), "environment/Dockerfile": "FROM ubuntu:24.04\nWORKDIR /app\n"}
    first_op = 1
    for index, (name, work) in enumerate(zip(names, segment_work(task), strict=True), start=1):
        files[f"steps/{name}/instruction.md"] = step_instruction(task, index)
        files[f"steps/{name}/solution/solve.sh"] = _solve_sh(index, first_op, work)
        files[f"steps/{name}/tests/test.sh"] = (
            "#!/bin/bash\n"
            "mkdir -p /logs/verifier\n"
            f"if [ -f /app/stage_{index}.ok ]; then echo 1 > /logs/verifier/reward.txt; "
            "else echo 0 > /logs/verifier/reward.txt; fi\n"
        )
        first_op += work
    return files


def step_instruction(task: _Task, index: int) -> str:
    """The instruction of segment ``index`` (the first also introduces the task)."""
    lines = [f"# {task.name}: part {index} of {len(task.segments)}", ""]
    if index == 1:
        words = task.name.split("-")
        lines += [
            f"The environment in /app needs work: {' '.join(words[:2])}.",
            "Inspect the files first: each step depends on what the previous one prints.",
        ]
    else:
        lines.append(f"Part {index - 1} is done; carry on from where it left the files.")
    lines.append(f"Finish stage {index} ({task.segments[index - 1]} dependent steps) and leave /app/stage_{index}.ok.")
    return "\n".join(lines) + "\n"


def _solve_sh(index: int, first_op: int, work: int) -> str:
    lines = ["#!/bin/bash", f"# Reference solution of segment {index} (simulated): one operation per line.", ""]
    lines += [f"./ops/op_{op:03d}.sh >> /app/log.txt" for op in range(first_op, first_op + work)]
    # the stage marker rides on the last operation's line, so the script's command lines stay W
    lines[-1] += f" && touch /app/stage_{index}.ok"
    return "\n".join(lines) + "\n"


def segments_run(rewards: dict[str, float], n_segments: int) -> list[float]:
    """The reward of each segment a run reached, in order, from the per-segment reward keys."""
    return [rewards[f"segment_{index}"] for index in range(1, n_segments + 1) if f"segment_{index}" in rewards]


def trial_steps(
    trial: _Trial,
    script: list[tuple[str, str]],
    agent_start: datetime,
) -> list[tuple[str, list[tuple[str, str]], float, datetime, datetime, datetime]]:
    """The steps a valid run of a segmented task ran: (name, its turns' script, reward, agent start,
    agent end = verifier start, verifier end), the turns split in proportion to the segments' depths."""
    task = trial.task
    rewards = segments_run(trial.rewards or {}, len(task.segments))
    turns = split(len(script), task.segments[: len(rewards)])
    out = []
    cursor, moment = 0, agent_start
    for index, (reward, count) in enumerate(zip(rewards, turns, strict=True), start=1):
        agent_end = moment + timedelta(seconds=11 * count + 1)
        verifier_end = agent_end + timedelta(seconds=5)
        out.append((step_name(index), script[cursor : cursor + count], reward, moment, agent_end, verifier_end))
        cursor += count
        moment = verifier_end
    return out


def agent_usage(turns: int) -> AgentContextRecord:
    """Harbor's ``agent_result`` of a simulated agent that took ``turns`` turns (tokens and cost grow per turn)."""
    return harbor_writer.agent_result(
        n_input_tokens=2500 * turns + 1800,
        n_cache_tokens=1200 * turns,
        n_output_tokens=310 * turns,
        cost_usd=round(0.0000025 * 2500 * turns + 0.00001 * 310 * turns, 6),
        metadata={"n_episodes": turns, "summarization_count": 0},
    )


def step_result(
    name: str, turns: int, reward: float, started: datetime, agent_end: datetime, verifier_end: datetime, iso: Any
) -> StepResultRecord:
    """Harbor's ``StepResult`` of one simulated step (usage as the single-step layout counts it per turn)."""
    usage = agent_usage(turns)
    return harbor_writer.step_result(
        name,
        agent_result=usage,
        rewards={"reward": reward},
        agent_execution=harbor_writer.phase(iso(started), iso(agent_end)),
        verifier=harbor_writer.phase(iso(agent_end), iso(verifier_end)),
    )
