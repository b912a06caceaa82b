"""Exception types recorded in a trial's ``exception_info``.

The names match Harbor's where Harbor has one (``AgentTimeoutError``, ``VerifierTimeoutError``,
``RewardFileNotFoundError``, ...), because the loaders' status rule keys on these names: the
leaderboard rule counts an agent or verifier timeout as a valid (failed) trial, and every other
exception as ``invalid`` (an infrastructure failure whose cell is still missing).
"""

from __future__ import annotations


class RunnerError(Exception):
    """Base class of every error the runner records in a trial."""


class UnsupportedTaskError(RunnerError):
    """The task cannot run here (several containers, no Dockerfile, ...)."""


class EnvironmentBuildError(RunnerError):
    """The task image could not be built."""


class EnvironmentStartError(RunnerError):
    """The task container could not be started."""


class ContainerExitedError(RunnerError):
    """The task container died while the trial ran."""


class AgentTimeoutError(RunnerError):
    """The agent ran past the task's agent timeout (Harbor name; a valid trial)."""


class NonZeroAgentExitCodeError(RunnerError):
    """The oracle's solve.sh exited non-zero (Harbor name; a valid trial)."""


class LLMEndpointError(RunnerError):
    """The Chat Completions endpoint failed after every retry (an invalid trial)."""


class VerifierTimeoutError(RunnerError):
    """tests/test.sh ran past the task's verifier timeout (Harbor name)."""


class HealthcheckError(RunnerError):
    """A task's or a step's healthcheck never passed within its retries (Harbor name; an invalid trial)."""


class AddTestsDirError(RunnerError):
    """tests/ could not be copied into the container (Harbor name)."""


class RewardFileNotFoundError(RunnerError):
    """The verifier wrote neither reward.txt nor reward.json (Harbor name)."""


class RewardFileEmptyError(RunnerError):
    """reward.txt is empty (Harbor name)."""


class VerifierOutputParseError(RunnerError):
    """reward.txt or reward.json could not be parsed (Harbor name)."""


class VerifierTamperedError(RunnerError):
    """Another process changed /tests or the verifier's folder while the tests ran (an invalid trial)."""


class VerifierCheckError(RunnerError):
    """A check of the verifier's files (tampering, the copy, late or foreign writes) could not run, so
    the reward is not graded (an invalid trial)."""


class CancelledError(RunnerError):
    """The run was interrupted (Ctrl-C / SIGTERM); the trial is left incomplete and redone on resume."""
