"""Run Harbor tasks at a stated turn cap in Docker and write Harbor-format trials.

The runner fills the (task, model, cap) cells that :func:`depthlab.plan_missing` lists, on one
machine with a Docker Engine; its output loads back with :func:`depthlab.load_trials`.

>>> from depthlab.runner import HarnessConfig, cap_sentence
>>> HarnessConfig(cap=3).as_kwargs()["stated_cap"]
3

Pieces: :func:`load_task` (task.toml, checksum), :func:`ensure_image` (the prebuilt image, or a
build, cached), :class:`TaskContainer` (the container's lifecycle), :class:`Shell` (the persistent
shell) and :class:`~depthlab.runner.terminal.TmuxTerminal` (tmux, when the image has it),
:func:`remove_leftovers` (what a dead runner left), :mod:`~depthlab.runner.integrity` (the
verifier's files checked unchanged), :mod:`~depthlab.runner.watchdog` (the disk bound),
:class:`ChatClient` (any
OpenAI-compatible endpoint), :class:`TerminusAgent` (the capped loop; its docstring documents
the prompt and limits), :class:`OracleAgent` (runs solution/solve.sh), :func:`verify`,
:func:`run_trial` (one trial, every fault recorded), :class:`RunSettings` (the security
profiles ``harbor`` and ``strict``, :mod:`~depthlab.runner.profiles`), :func:`preflight` (the
oracle preflight, :mod:`~depthlab.runner.preflight`), and in :mod:`~depthlab.runner.scheduler`
:func:`run_tasks` (``depthlab run``) and :func:`fill` (``depthlab fill``: bounded concurrency,
resumable); :mod:`~depthlab.runner.plan_io` reads plan files. The Harbor files themselves are
built by :mod:`depthlab.io.harbor_writer`.
"""

from __future__ import annotations

from depthlab.runner.agent import AgentContext, HarnessConfig, TerminusAgent, cap_sentence, limit_output, parse_reply
from depthlab.runner.container import ContainerLimits, TaskContainer
from depthlab.runner.errors import (
    AgentTimeoutError,
    CancelledError,
    ContainerExitedError,
    EnvironmentBuildError,
    LLMEndpointError,
    RunnerError,
    UnsupportedTaskError,
    VerifierCheckError,
    VerifierTamperedError,
    VerifierTimeoutError,
)
from depthlab.runner.image import RUNNER_LABEL, ensure_image, image_tag
from depthlab.runner.leftovers import live_container_ids, remove_leftovers, remove_live_containers
from depthlab.runner.llm import ChatClient, ChatReply
from depthlab.runner.oracle import OracleAgent
from depthlab.runner.output import JobDir, Trajectory, remove_incomplete_trials
from depthlab.runner.plan_io import check_plan, plan_from_logs, read_plan
from depthlab.runner.preflight import PreflightReport, PreflightRow, preflight
from depthlab.runner.profiles import DEFAULT_PROFILE, PROFILES, RunSettings, limits_for
from depthlab.runner.scheduler import FillSummary, count_valid_trials, fill, job_name, run_tasks
from depthlab.runner.shell import Shell
from depthlab.runner.task import TaskSpec, load_task
from depthlab.runner.trial import TrialOutcome, run_trial
from depthlab.runner.verifier import read_rewards, verify

__all__ = [
    "DEFAULT_PROFILE",
    "PROFILES",
    "RUNNER_LABEL",
    "AgentContext",
    "AgentTimeoutError",
    "CancelledError",
    "ChatClient",
    "ChatReply",
    "ContainerExitedError",
    "ContainerLimits",
    "EnvironmentBuildError",
    "FillSummary",
    "HarnessConfig",
    "JobDir",
    "LLMEndpointError",
    "OracleAgent",
    "PreflightReport",
    "PreflightRow",
    "RunSettings",
    "RunnerError",
    "Shell",
    "TaskContainer",
    "TaskSpec",
    "TerminusAgent",
    "Trajectory",
    "TrialOutcome",
    "UnsupportedTaskError",
    "VerifierCheckError",
    "VerifierTamperedError",
    "VerifierTimeoutError",
    "cap_sentence",
    "check_plan",
    "count_valid_trials",
    "ensure_image",
    "fill",
    "image_tag",
    "job_name",
    "limit_output",
    "limits_for",
    "live_container_ids",
    "load_task",
    "parse_reply",
    "plan_from_logs",
    "preflight",
    "read_plan",
    "read_rewards",
    "remove_incomplete_trials",
    "remove_leftovers",
    "remove_live_containers",
    "run_tasks",
    "run_trial",
    "verify",
]
