"""Multi-step Harbor trials: ``step_results`` read step by step, and the trial they add up to.

A trial of a ``[[steps]]`` task (Harbor 0.26, ``harbor.trial.multi_step``) runs its steps in
order in one environment; each step has its own agent run, verifier and exception, recorded in
``result.json`` as ``step_results[i]`` (``step_name``, ``agent_result``, ``verifier_result``,
``exception_info``, ``agent_execution``), its files under ``steps/<name>/`` (``agent/`` with the
step's trajectory, ``verifier/``). The trial has no top-level ``agent_result``; its
``verifier_result`` is Harbor's reward over the steps. A step whose reward misses its
``min_reward`` (or that raised with no verifier result) stops the trial: the steps after it are
not run and have no entry.

What depthlab reads (this module; :mod:`depthlab.io.harbor` builds the trial's row from it):

* per step: its rewards and main reward (``reward``, else the mean of its keys), status (the
  trial's status rule on the step's reward and exception), turns (``metadata.n_episodes``, else
  ``steps/<name>/agent/trajectory.json``, else its ``episode-*`` folders; a trajectory that cannot
  be read costs the step's turns, with a note), tokens, cost, agent seconds, exception;
* the declared steps, from the task's ``task.toml`` when the task folder the trial names is on
  this machine (``task_id.path`` as Harbor recorded it; a relative one is resolved against the folder
  Harbor ran in, recovered from the job's own folder, never against this process's working
  directory); else the steps that ran are all that is known; declared steps with no entry are ``skipped``;
* the trial: ``n_steps`` (declared, else run), ``steps_passed``, ``first_failed_step``, N = the sum
  of its steps' turns (null when one step's is unknown), tokens and cost summed over the steps
  (Harbor's ``compute_token_cost_totals``), the first exception (trial-level first, then steps in
  order: Harbor's ``recorded_exceptions``), and, when ``result.json`` records no trial reward, the
  reward Harbor computes (:func:`depthlab.io.harbor_models.multi_step_rewards`).
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field
from typing import Any

import msgspec

from depthlab.io import atif
from depthlab.io._errors import Reject
from depthlab.io._files import Dep, read_bytes_if_exists
from depthlab.io._rows import note
from depthlab.io.harbor_models import (
    StepAgentResult,
    StepResult,
    TaskConfig,
    TaskFormatError,
    TypedPhase,
    main_reward,
    multi_step_rewards,
)
from depthlab.io.harbor_models import decode_steps as _decode
from depthlab.io.status import trial_status

__all__ = ["StepResult", "main_reward"]  # (their home is harbor_models; kept importable from here)


@dataclass
class StepRead:
    """One step of a trial as read: a row of :func:`depthlab.load_steps` without the trial's columns."""

    step_index: int
    step: str
    status: str
    rewards: dict[str, float] | None = None
    reward: float | None = None
    n_turns: int | None = None
    n_subagent_turns: int | None = None
    n_input_tokens: int | None = None
    n_output_tokens: int | None = None
    n_cache_tokens: int | None = None
    cost_usd: float | None = None
    agent_seconds: float | None = None
    exception: str | None = None
    exception_message: str | None = None
    ran: bool = True


@dataclass
class TrialSteps:
    """What a multi-step trial's steps add up to (see the module docstring)."""

    steps: list[StepRead]
    n_steps: int
    steps_passed: int
    first_failed_step: int | None
    strategy: str | None  # the task's multi_step_reward_strategy, when its task.toml was read
    n_turns: int | None
    n_subagent_turns: int | None
    n_input_tokens: int | None
    n_output_tokens: int | None
    n_cache_tokens: int | None
    cost_usd: float | None
    agent_seconds: float | None
    exception: str | None
    exception_message: str | None
    notes: list[str] = field(default_factory=list)
    results: list[StepResult] = field(default_factory=list)  # step_results decoded (for Harbor's reward_valid)

    def rewards(self) -> dict[str, float] | None:
        """The trial's rewards as Harbor computes them from the steps (its strategy, else ``mean``)."""
        return multi_step_rewards([step.rewards for step in self.steps if step.ran], self.strategy)


def decode_steps(raw: msgspec.Raw | bytes, path: str) -> list[StepResult]:
    """``step_results`` of a trial's result.json; a list that does not fit rejects the trial (its rewards are in it)."""
    try:
        return _decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as exc:
        raise Reject(path, f"step_results: unexpected shape ({exc})") from None


def read_trial_steps(
    results: list[StepResult],
    trial_dir: str | None,
    task_dir: str | None,
    status_rule: str,
    deps: list[Dep],
    path: str,
) -> TrialSteps:
    """Read every step of a multi-step trial (``results``: its decoded ``step_results``; ``task_dir``: the
    task folder it ran, resolved by :meth:`depthlab.io.harbor_models.TrialResultBase.task_dir`)."""
    notes: list[str] = []
    declared, strategy = _declared(task_dir, deps)
    steps = []
    for index, result in enumerate(results, start=1):
        steps.append(_step(index, result, trial_dir, status_rule, deps, notes, path))
    ran = {step.step for step in steps}
    if declared is not None and declared[: len(steps)] == [step.step for step in steps]:
        for index, name in enumerate(declared[len(steps) :], start=len(steps) + 1):
            steps.append(StepRead(step_index=index, step=name, status="skipped", ran=False))
    elif declared is not None and not set(declared) >= ran:
        note(notes, "n_steps", f"the steps run {sorted(ran)} are not the task's {declared}: the steps run are counted")
    run = [step for step in steps if step.ran]
    failed = next((step.step_index for step in run if step.status != "pass"), None)
    if failed is None and len(run) < len(steps):
        failed = len(run) + 1  # every step run passed, yet the trial stopped (its own exception): not passed
    turns = [step.n_turns for step in run]
    subagents = [step.n_subagent_turns for step in run if step.n_subagent_turns is not None]
    first = next((step for step in run if step.exception is not None), None)
    if None in turns and any(t is not None for t in turns):  # (no step with turns: an agent that records none)
        missing = [step.step for step in run if step.n_turns is None]
        note(notes, "n_turns", f"turns unknown for step(s) {missing}: the trial's N (their sum) is null")
    seconds = [step.agent_seconds for step in run if step.agent_seconds is not None]
    return TrialSteps(
        steps=steps,
        n_steps=len(steps),
        steps_passed=sum(1 for step in run if step.status == "pass"),
        first_failed_step=failed,
        strategy=strategy,
        n_turns=None if None in turns or not run else sum(t for t in turns if t is not None),
        n_subagent_turns=sum(subagents) if subagents else None,
        n_input_tokens=_total(step.n_input_tokens for step in run),
        n_output_tokens=_total(step.n_output_tokens for step in run),
        n_cache_tokens=_total(step.n_cache_tokens for step in run),
        cost_usd=_total(step.cost_usd for step in run),
        agent_seconds=sum(seconds) if seconds else None,
        exception=first.exception if first else None,
        exception_message=first.exception_message if first else None,
        notes=notes,
        results=list(results),
    )


def _step(
    index: int,
    result: StepResult,
    trial_dir: str | None,
    status_rule: str,
    deps: list[Dep],
    notes: list[str],
    path: str,
) -> StepRead:
    name = result.step_name or f"step-{index}"
    rewards = result.verifier_result.rewards if result.verifier_result else None
    for key, value in (rewards or {}).items():
        if not math.isfinite(value):
            raise Reject(path, f"step_results[{index - 1}] reward {key!r} is not finite: {value!r}")
    reward = main_reward(rewards)
    info = result.exception_info
    exception = info.kind() if info is not None else None
    message = info.message() if info is not None else None
    valid = (info.policy().has_valid_reward if info is not None else True) if rewards else None
    agent = result.agent_result or StepAgentResult()
    turns = _count(agent.metadata.n_episodes if agent.metadata else None, "n_turns", name, notes)
    subagents = None
    if turns is None and trial_dir is not None:
        try:  # a step's trajectory that cannot be read costs its N, with a note
            turns, subagents = atif.agent_dir_counts(os.path.join(trial_dir, "steps", name, "agent"), deps)
        except Reject as exc:
            note(notes, "n_turns", f"step {name}: {exc.reason} ({exc.path})")
            turns = subagents = None
    return StepRead(
        step_index=index,
        step=name,
        status=trial_status(reward, exception, status_rule, reward_valid=valid),
        rewards=rewards,
        reward=reward,
        n_turns=turns,
        n_subagent_turns=subagents,
        n_input_tokens=_count(agent.n_input_tokens, "n_input_tokens", name, notes),
        n_output_tokens=_count(agent.n_output_tokens, "n_output_tokens", name, notes),
        n_cache_tokens=_count(agent.n_cache_tokens, "n_cache_tokens", name, notes),
        cost_usd=_cost(agent.cost_usd, name, notes),
        agent_seconds=_seconds(result.agent_execution),
        exception=exception,
        exception_message=message,
    )


def _declared(task_dir: str | None, deps: list[Dep]) -> tuple[list[str] | None, str | None]:
    """The task's declared step names and reward strategy, when its task.toml is on this machine."""
    if not task_dir:
        return None, None
    path = os.path.join(task_dir, "task.toml")
    try:
        data = read_bytes_if_exists(path, deps)
    except Reject:
        return None, None
    if data is None:
        return None, None
    try:
        config = TaskConfig.from_toml_dict(tomllib.loads(data.decode("utf-8", errors="replace")), path)
    except (tomllib.TOMLDecodeError, TaskFormatError):
        return None, None  # the task's own load reports it; the trial keeps the steps it ran
    return [step.name for step in config.steps or []] or None, config.reward_strategy()


def _count(value: Any, field: str, name: str, notes: list[str]) -> int | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        note(notes, field, f"step {name}: not a count: {value!r}")
        return None
    return value


def _cost(value: Any, name: str, notes: list[str]) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        note(notes, "cost_usd", f"step {name}: not a cost: {value!r}")
        return None
    return float(value)


def _seconds(phase: TypedPhase | None) -> float | None:
    if phase is None or phase.started_at is None or phase.finished_at is None:
        return None
    start, end = phase.started_at, phase.finished_at
    if (start.tzinfo is None) != (end.tzinfo is None):
        return None
    return (end - start).total_seconds()


def _total(values: Any) -> Any:
    present = [value for value in values if value is not None]
    return sum(present) if present else None
