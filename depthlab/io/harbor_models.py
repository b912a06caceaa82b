"""One typed model of Harbor's files, and Harbor's rules on them, written once.

Every reader and writer of Harbor's formats in depthlab goes through these structs (msgspec, the
names of Harbor 0.26's pydantic models where they help a reader): ``task.toml``
(:class:`TaskConfig` and its sections), a trial's ``result.json`` (:class:`TrialResult`, its
:class:`StepResult` entries), a trial's ``config.json`` (:class:`TrialConfig`), a job's
``result.json`` (:class:`JobResult`), the trial's ``lock.json`` (:class:`TrialLock`) and Harbor's
error policy (:class:`ErrorPolicy`, :func:`policy_for`). The rules Harbor applies to them are
methods or functions here, so no module interprets a Harbor file by hand:

* the main reward of a rewards dict (:func:`main_reward`), the multi-step reward strategies
  (:data:`REWARD_STRATEGIES`, :func:`multi_step_rewards`), a step's gate (:meth:`StepConfig.gate`);
* which rewards are valid (:meth:`TrialResult.reward_valid`: Harbor's own recorded value, else its
  rule: a verifier result with rewards and every recorded exception's policy giving a valid reward);
* canary stripping (:func:`strip_canary`: the lines Harbor removes before the agent sees an
  instruction);
* the reference solution file per OS (:meth:`TaskConfig.solution_file`: ``solve.bat`` for
  ``os = "windows"``, ``solve.sh`` otherwise);
* the task folder a trial names (:func:`resolve_task_path`: ``task_id.path`` as Harbor recorded it,
  a relative one resolved against the folder Harbor ran in, recovered from the job's own folder and
  its ``trials_dir``, never against this process's working directory);
* the task.toml version (:meth:`TaskConfig.version`: none written is Harbor's current one,
  :data:`CURRENT_TASK_SCHEMA`, as Harbor's ``TaskConfig`` defaults it), and the step name rule
  (:func:`step_name_problem`).

The structs decode only what depthlab reads; unknown keys are skipped (``tests/harbor/
test_harbor_conformance.py`` lists, against Harbor's own JSON schemas, every field depthlab leaves
out on purpose, so a new Harbor field shows up as a failing test). Fields whose value only describes
a run (token counts, costs, dates) are decoded as any JSON value in the lenient structs and checked
field by field by the loaders, so one bad value costs that field, not the trial.
"""

from __future__ import annotations

import math
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Annotated, Any, Final, TypeVar

import msgspec

from depthlab._text import toml_key

#: A number of turns or steps that fits its Int32 column.
Turns = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]

#: A JSON ``null``, as the default of a field kept raw.
NULL: Final = msgspec.Raw(b"null")


class TaskFormatError(Exception):
    """A task's files cannot be read as a task; ``path`` and ``reason`` say which and why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


# ---------------------------------------------------------------------------------- task.toml

#: task.toml schema versions read as they are, oldest first.
TASK_SCHEMA_VERSIONS: Final[tuple[str, ...]] = ("1.0", "1.1", "1.2", "1.3", "1.4")
#: The version Harbor 0.26 gives a task.toml that writes none (its ``TaskConfig.schema_version`` default).
CURRENT_TASK_SCHEMA: Final[str] = TASK_SCHEMA_VERSIONS[-1]
#: Harbor's ``[environment] network_mode`` values, and what it runs when none is stated.
NETWORK_MODES: Final[tuple[str, ...]] = ("no-network", "public", "allowlist")
DEFAULT_NETWORK_MODE: Final[str] = "public"
#: Harbor's ``[verifier] environment_mode`` values.
VERIFIER_MODES: Final[tuple[str, ...]] = ("shared", "separate")
#: Harbor's ``[environment] os`` values (case-insensitive in task.toml), and its default.
TASK_OS: Final[tuple[str, ...]] = ("linux", "windows")
DEFAULT_OS: Final[str] = "linux"
#: Harbor's ``multi_step_reward_strategy`` values, and its default when a multi-step task leaves it unset.
REWARD_STRATEGIES: Final[tuple[str, ...]] = ("mean", "final")
DEFAULT_REWARD_STRATEGY: Final[str] = "mean"
#: A reference solution's file name per OS (Harbor's oracle looks only for its OS's extension).
SOLUTION_FILES: Final[Mapping[str, str]] = MappingProxyType({"linux": "solve.sh", "windows": "solve.bat"})


class PackageInfo(msgspec.Struct, omit_defaults=True):
    """``[task]``: the package's name (``org/name``), version, description, authors, keywords."""

    name: str | None = None
    version: str | None = None
    description: str | None = None
    authors: list[Any] | None = None
    keywords: list[Any] | None = None


class AgentSection(msgspec.Struct, omit_defaults=True):
    """``[agent]`` (and ``[steps.agent]``)."""

    timeout_sec: float | None = None
    user: str | int | None = None
    network_mode: str | None = None
    allowed_hosts: list[str] | None = None


class HealthcheckConfig(msgspec.Struct, frozen=True):
    """``[environment.healthcheck]`` or ``[steps.healthcheck]``, with Harbor 0.26's defaults.

    Harbor's ``HealthcheckConfig`` mirrors Docker's HEALTHCHECK: ``command`` runs with bash in the
    agent's container until it exits 0; a failure within ``start_period_sec`` of the first try does
    not count (the next try comes after ``start_interval_sec``); after that, ``retries`` consecutive
    failures (``interval_sec`` apart) fail it. Each try may run ``timeout_sec`` (whole seconds).

    Examples
    --------
    >>> config = TaskConfig.from_toml_dict({"environment": {"healthcheck": {"command": "true", "retries": 5}}}, "t")
    >>> check = config.environment.healthcheck
    >>> check.retries, check.interval_sec, check.timeout_sec, check.start_period_sec
    (5, 5.0, 30.0, 0.0)
    """

    command: str
    interval_sec: float = 5.0
    timeout_sec: float = 30.0
    start_period_sec: float = 0.0
    start_interval_sec: float = 5.0
    retries: int = 3

    def _check(self, where: str, path: str) -> None:
        for name in ("interval_sec", "timeout_sec", "start_period_sec", "start_interval_sec", "retries"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise TaskFormatError(path, f"{where}.{name} must be a non-negative finite number, got {value!r}")


class EnvironmentSection(msgspec.Struct, omit_defaults=True):
    """``[environment]`` (and a separate verifier's ``[verifier.environment]``)."""

    os: str | None = None
    network_mode: str | None = None
    allow_internet: bool | None = None  # the older key: true is public, false no-network
    allowed_hosts: list[str] | None = None
    docker_image: str | None = None
    build_timeout_sec: float | None = None
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    memory: Any = None  # the older sizes ("2G"), which Harbor converts to memory_mb/storage_mb (io.harbor_task.size_mb)
    storage: Any = None
    gpus: int | None = None
    env: dict[str, str] | None = None
    skills_dir: str | None = None
    workdir: str | None = None
    mcp_servers: list[Any] | None = None
    healthcheck: HealthcheckConfig | None = None

    def resolved_os(self) -> str:
        """``linux`` or ``windows`` (Harbor lower-cases the value; none written is ``linux``)."""
        return (self.os or DEFAULT_OS).lower()

    def resolved_network_mode(self) -> str | None:
        """``network_mode``, else the older ``allow_internet`` mapped, else None (unstated: Harbor runs ``public``)."""
        if self.network_mode is not None:
            return self.network_mode
        if self.allow_internet is None:
            return None
        return "public" if self.allow_internet else "no-network"


class VerifierSection(msgspec.Struct, omit_defaults=True):
    """``[verifier]`` (and ``[steps.verifier]``)."""

    timeout_sec: float | None = None
    env: dict[str, str] | None = None
    user: str | int | None = None
    environment_mode: str | None = None
    environment: EnvironmentSection | None = None
    network_mode: str | None = None
    allowed_hosts: list[str] | None = None

    def mode(self) -> str | None:
        """``environment_mode``; else ``separate`` when ``[verifier.environment]`` is given; else None (the default)."""
        if self.environment_mode is not None:
            return self.environment_mode
        return "separate" if self.environment is not None else None


class StepConfig(msgspec.Struct, omit_defaults=True):
    """One ``[[steps]]`` entry."""

    name: str
    agent: AgentSection = msgspec.field(default_factory=AgentSection)
    verifier: VerifierSection = msgspec.field(default_factory=VerifierSection)
    min_reward: float | dict[str, float] | None = None
    healthcheck: HealthcheckConfig | None = None
    artifacts: list[Any] | None = None

    def gate(self) -> tuple[float | None, dict[str, float] | None]:
        """(the gate on the ``reward`` key, a per-key gate): at most one is set."""
        if isinstance(self.min_reward, dict):
            return None, {str(key): float(value) for key, value in self.min_reward.items()}
        return (None if self.min_reward is None else float(self.min_reward)), None

    def passes_gate(self, rewards: Mapping[str, float] | None) -> bool:
        """Whether a step with these rewards lets the trial go on (a missing reward or key is below any gate).

        Examples
        --------
        >>> gated = StepConfig(name="a", min_reward=1.0)
        >>> gated.passes_gate({"reward": 1.0}), gated.passes_gate({"reward": 0.5}), gated.passes_gate(None)
        (True, False, False)
        >>> StepConfig(name="b", min_reward={"style": 0.5}).passes_gate({"reward": 1.0})
        False
        """
        single, per_key = self.gate()
        if per_key is not None:
            gates = per_key
        elif single is not None:
            gates = {"reward": single}
        else:
            return True
        return all((rewards or {}).get(key, -math.inf) >= value for key, value in gates.items())


class SolutionSection(msgspec.Struct, omit_defaults=True):
    """``[solution]``."""

    env: dict[str, str] | None = None


class TaskConfig(msgspec.Struct, omit_defaults=True):
    """A ``task.toml`` (schema 1.0 to 1.4), typed.

    Examples
    --------
    >>> config = TaskConfig.from_toml_dict({"environment": {"os": "Windows"}}, "task.toml")
    >>> config.version(), config.solution_file(), config.network_mode()
    ('1.4', 'solve.bat', None)
    """

    schema_version: str | float | None = None
    version_: str | float | None = msgspec.field(default=None, name="version")  # the older key
    task: PackageInfo | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    verifier: VerifierSection = msgspec.field(default_factory=VerifierSection)
    agent: AgentSection = msgspec.field(default_factory=AgentSection)
    environment: EnvironmentSection = msgspec.field(default_factory=EnvironmentSection)
    solution: SolutionSection = msgspec.field(default_factory=SolutionSection)
    source: str | None = None
    multi_step_reward_strategy: str | None = None
    steps: list[StepConfig] | None = None
    artifacts: list[Any] | None = None

    @classmethod
    def from_toml_dict(cls, config: Mapping[str, Any], path: str) -> TaskConfig:
        """A parsed task.toml as the model, every rule on values checked; :class:`TaskFormatError` otherwise."""
        try:
            typed = msgspec.convert(config, cls, strict=False, str_keys=True)
        except msgspec.ValidationError as exc:
            raise TaskFormatError(path, _convert_reason(str(exc), config)) from None
        typed._check(path)
        return typed

    def version(self) -> str:
        """The schema version as written (``schema_version``, else ``version``), else Harbor's current one."""
        raw = self.schema_version if self.schema_version is not None else self.version_
        return CURRENT_TASK_SCHEMA if raw is None else str(raw)

    def network_mode(self) -> str | None:
        """The environment's network mode as stated (``allow_internet`` mapped); None: unstated (Harbor: ``public``)."""
        return self.environment.resolved_network_mode()

    def verifier_mode(self) -> str:
        """The task-level verifier's environment mode, resolved as Harbor does (default ``shared``)."""
        return self.verifier.mode() or "shared"

    def step_verifier_mode(self, step: StepConfig) -> str:
        """A step's verifier mode: its own ``[steps.verifier]`` mode, else the task's."""
        return step.verifier.mode() or self.verifier_mode()

    def task_os(self) -> str:
        """The task's OS (``linux`` or ``windows``)."""
        return self.environment.resolved_os()

    def solution_file(self) -> str:
        """The reference solution's file name Harbor's oracle runs for this task's OS."""
        return SOLUTION_FILES[self.task_os()]

    def reward_strategy(self) -> str | None:
        """``mean`` or ``final`` for a multi-step task (Harbor's default ``mean`` when unset); None otherwise."""
        if not self.steps:
            return None
        return self.multi_step_reward_strategy or DEFAULT_REWARD_STRATEGY

    def short_name(self) -> str | None:
        """``[task].name`` without its ``org/`` prefix (None when not written)."""
        name = self.task.name if self.task is not None else None
        return name.rsplit("/", 1)[-1] if name else None

    def _check(self, path: str) -> None:
        if self.multi_step_reward_strategy is not None:
            _choice(self.multi_step_reward_strategy, REWARD_STRATEGIES, "multi_step_reward_strategy", path)
        _choice(self.environment.network_mode, NETWORK_MODES, toml_key("environment.network_mode"), path)
        if self.environment.os is not None:
            _choice(self.environment.os.lower(), TASK_OS, toml_key("environment.os"), path)
        _choice(self.verifier.environment_mode, VERIFIER_MODES, toml_key("verifier.environment_mode"), path)
        _finite(self.agent.timeout_sec, toml_key("agent.timeout_sec"), path)
        _finite(self.verifier.timeout_sec, toml_key("verifier.timeout_sec"), path)
        if self.environment.healthcheck is not None:
            self.environment.healthcheck._check("[environment.healthcheck]", path)
        seen: set[str] = set()
        for index, step in enumerate(self.steps or []):
            where = f"steps[{index}]"
            problem = step_name_problem(step.name)
            if problem is not None:
                raise TaskFormatError(path, f"{where}.name must be a folder name, got {step.name!r}")
            key = step_name_key(step.name)
            if key in seen:
                raise TaskFormatError(path, f"step name {step.name!r} is given twice")
            seen.add(key)
            single, per_key = step.gate()
            _finite(single, f"{where}.min_reward", path)
            for key_name, value in (per_key or {}).items():
                _finite(value, f"{where}.min_reward.{key_name}", path)
            _choice(step.verifier.environment_mode, VERIFIER_MODES, f"{where}.verifier.environment_mode", path)
            _finite(step.agent.timeout_sec, f"{where}.agent.timeout_sec", path)
            _finite(step.verifier.timeout_sec, f"{where}.verifier.timeout_sec", path)
            if step.healthcheck is not None:
                step.healthcheck._check(f"{where}.healthcheck", path)


_CONVERT = re.compile(r"Expected `(?P<expected>[^`]+)`, got `(?P<got>[^`]+)`(?: - at `\$(?P<at>[^`]*)`)?")
_STEP = re.compile(r"\.?([^.\[]+)|\[(\d+)\]")


def _convert_reason(message: str, config: Mapping[str, Any]) -> str:
    """msgspec's reason in task.toml's words (``[metadata] must be a table, got str``, ``steps[0].min_reward
    must be a finite number, got 'high'``)."""
    match = _CONVERT.match(message)
    if match is None:
        return message
    where = (match["at"] or "").lstrip(".")
    expected = match["expected"]
    if where.endswith("[...]"):  # a value of a table ([verifier.env] A = 1): the table named, as a whole
        where = where.removesuffix("[...]")
        table: Any = config
        for key, index in _STEP.findall(where):
            table = table.get(key) if key and isinstance(table, Mapping) else table[int(index)] if index else None
        kind = "text" if expected.startswith("str") else expected
        return f"{toml_key(where)} must be a table of {kind} values, got {table!r}"
    if "float" in expected or "int" in expected:
        wanted = "a finite number"
    elif expected.startswith("object"):
        wanted = "a table"
    elif expected.startswith("array"):
        wanted = "an array"
    else:
        wanted = "a string" if expected.startswith("str") else expected
    value: Any = config
    for key, index in _STEP.findall(where):
        value = value.get(key) if key and isinstance(value, Mapping) else value[int(index)] if index else None
    if wanted in ("a table", "an array"):
        got = type(value).__name__  # (the old messages name the type a section came as)
    else:
        got = repr(value) if isinstance(value, str | int | float | bool) else match["got"]
    return f"{toml_key(where, table=wanted == 'a table')} must be {wanted}, got {got}"


def _choice(value: str | None, choices: tuple[str, ...], where: str, path: str) -> None:
    if value is not None and value not in choices:
        raise TaskFormatError(path, f"{where} must be one of {list(choices)}, got {value!r}")


def _finite(value: float | None, where: str, path: str) -> None:
    if value is not None and not math.isfinite(value):
        raise TaskFormatError(path, f"{where} must be a finite number, got {value!r}")


_UNPORTABLE = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
_DEVICE = re.compile(r"(CON|PRN|AUX|NUL|CONIN\$|CONOUT\$|(?:COM|LPT)[1-9¹²³])", re.IGNORECASE)


def step_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a step's folder on every OS (Harbor's rule), or None when it can.

    Examples
    --------
    >>> step_name_problem("step-1") is None, step_name_problem("a/b"), step_name_problem("NUL.txt")
    (True, 'a path separator or reserved character', 'a Windows device name')
    """
    if not name.strip() or name in {".", ".."}:
        return "empty or a dot folder"
    if name.endswith((".", " ")):
        return "a trailing dot or space"
    if _UNPORTABLE.search(name):
        return "a path separator or reserved character"
    if _DEVICE.fullmatch(name.partition(".")[0].rstrip(" ")):
        return "a Windows device name"
    if len(name.encode("utf-8")) > 255:
        return "longer than 255 UTF-8 bytes"
    return None


def step_name_key(name: str) -> str:
    """What two step names must not share (case-insensitive, Unicode-normalising file systems)."""
    return unicodedata.normalize("NFC", name).casefold()


_CANARY = re.compile(r"(<!--.*canary.*-->|#.*canary.*)", re.IGNORECASE)


def strip_canary(text: str) -> str:
    """An instruction as the agent sees it: Harbor drops its leading canary comment lines and the blank lines after.

    A canary line is an HTML comment or a ``#`` comment naming "canary" (a marker that keeps the
    text out of training data); only those at the top are dropped.

    Examples
    --------
    >>> strip_canary("<!-- harbor-canary GUID 1234 -->\\n\\nWrite hello.\\n")
    'Write hello.\\n'
    >>> strip_canary("Write hello.\\n# canary at the end stays\\n")
    'Write hello.\\n# canary at the end stays\\n'
    """
    lines = text.split("\n")
    start = 0
    while start < len(lines) and _CANARY.fullmatch(lines[start].strip()):
        start += 1
    while start < len(lines) and not lines[start].strip():
        start += 1
    return "\n".join(lines[start:])


# ---------------------------------------------------------------------------------- error policy


class ErrorPolicy(msgspec.Struct, frozen=True):
    """What Harbor does after an exception: retry the trial, grade it, and whether its reward is valid."""

    should_retry: bool
    should_grade: bool
    has_valid_reward: bool


class ErrorPolicyOverride(msgspec.Struct, frozen=True, omit_defaults=True):
    """A job's ``override_error_policy`` entry (recorded on ``exception_info.policy_override``)."""

    should_retry: bool | None = None
    should_grade: bool | None = None
    has_valid_reward: bool | None = None

    def apply(self, policy: ErrorPolicy) -> ErrorPolicy:
        """``policy`` with the fields this override sets."""
        return ErrorPolicy(
            should_retry=policy.should_retry if self.should_retry is None else self.should_retry,
            should_grade=policy.should_grade if self.should_grade is None else self.should_grade,
            has_valid_reward=policy.has_valid_reward if self.has_valid_reward is None else self.has_valid_reward,
        )


#: Harbor's policy for an exception type it does not list: retried, graded, its reward valid.
UNKNOWN_ERROR_POLICY: Final = ErrorPolicy(should_retry=True, should_grade=True, has_valid_reward=True)

# Harbor 0.26's table (harbor.models.trial.error_policy), grouped by policy; the conformance test
# compares it with Harbor's own, name by name.
_INFRASTRUCTURE = (
    "EnvironmentStartTimeoutError SandboxBuildFailedError AgentSetupTimeoutError HealthcheckError "
    "SandboxLikelyOutOfMemoryError MemoryLimitExceededError SSHAccessError GKEExecStreamClosedError "
    "GKEPodNotFoundError RuntimeRequestError AddTestsDirError DownloadVerifierDirError"
)
_TRANSIENT_API = (
    "ApiError ApiRateLimitError ApiInternalServerError ApiOverloadedError ApiConnectionClosedError "
    "ApiResponseStalledError UnknownApiError NetworkConnectionError ApiConnectionError ApiUsageLimitError "
    "RateLimitError InternalServerError ServiceUnavailableError APIConnectionError APIError Timeout"
)
_GRADED_INVALID = (
    "UnsupportedModelParametersError BadRequestError UnprocessableEntityError UnsupportedParamsError "
    "APIResponseValidationError BudgetExceededError VerifierTimeoutError RewardFileNotFoundError "
    "RewardFileEmptyError VerifierOutputParseError"
)
_FATAL = (
    "AgentAuthenticationError ModelNotFoundError ApiProviderResourceNotFoundError AuthenticationError "
    "PermissionDeniedError NotFoundError ServiceOperationsUnsupportedError VercelScopeError DspyImportError "
    "MissingExtraError RegradeError CancelledError"
)
_AGENT_ENDED = (
    "NonZeroAgentExitCodeError AgentTimeoutError ContextWindowExceededError OutputTokenExceededError "
    "ContextLengthExceededError OutputLengthExceededError AgentSafetyRefusalError ContentPolicyViolationError"
)
_GROUPS: Final[tuple[tuple[ErrorPolicy, str], ...]] = (
    (ErrorPolicy(should_retry=True, should_grade=False, has_valid_reward=False), _INFRASTRUCTURE),
    (ErrorPolicy(should_retry=True, should_grade=True, has_valid_reward=False), _TRANSIENT_API),
    (ErrorPolicy(should_retry=False, should_grade=True, has_valid_reward=False), _GRADED_INVALID),
    (ErrorPolicy(should_retry=False, should_grade=False, has_valid_reward=False), _FATAL),
    (ErrorPolicy(should_retry=False, should_grade=True, has_valid_reward=True), _AGENT_ENDED),
)
#: Harbor's error policy by exception type name.
ERROR_POLICIES: Final[Mapping[str, ErrorPolicy]] = MappingProxyType(
    {name: policy for policy, names in _GROUPS for name in names.split()}
)


def policy_for(exception_type: str, override: ErrorPolicyOverride | None = None) -> ErrorPolicy:
    """Harbor's policy for an exception type (:data:`UNKNOWN_ERROR_POLICY` for one it does not list).

    Examples
    --------
    >>> policy_for("VerifierTimeoutError").has_valid_reward, policy_for("AgentTimeoutError").has_valid_reward
    (False, True)
    """
    policy = ERROR_POLICIES.get(exception_type, UNKNOWN_ERROR_POLICY)
    return override.apply(policy) if override is not None else policy


# ---------------------------------------------------------------------------------- rewards

_E = TypeVar("_E")  # an exception record: the readers' ExceptionInfo or the writer's ExceptionInfoRecord


def reward_valid(
    recorded: bool | None, rewards: Mapping[str, float] | None, exceptions: Sequence[ExceptionInfo]
) -> bool:
    """Harbor's ``reward_valid``: the value a result records, else rewards recorded and every recorded
    exception's policy giving a valid reward (Harbor's rule, written once).

    Examples
    --------
    >>> reward_valid(None, {"reward": 0.0}, [ExceptionInfo(exception_type="VerifierTimeoutError")])
    False
    >>> reward_valid(None, {"reward": 1.0}, [ExceptionInfo(exception_type="AgentTimeoutError")])
    True
    """
    if recorded is not None:
        return recorded
    return rewards_count(rewards, [info.policy() for info in exceptions])


def rewards_count(rewards: Mapping[str, float] | None, policies: Iterable[ErrorPolicy]) -> bool:
    """Harbor's rule for ``reward_valid`` (written once: the readers' :func:`reward_valid` and the writer's records
    use it): rewards recorded, and every recorded exception's policy giving a valid reward.

    Examples
    --------
    >>> rewards_count({"reward": 1.0}, [policy_for("AgentTimeoutError")]), rewards_count({}, [])
    (True, False)
    """
    return bool(rewards) and all(policy.has_valid_reward for policy in policies)


def recorded_exceptions(trial: _E | None, steps: Iterable[_E | None]) -> list[_E]:
    """Harbor's order of a trial's exceptions (its ``recorded_exceptions``, written once for the readers and the
    records): the trial's own first, then its steps' in step order.

    Examples
    --------
    >>> recorded_exceptions("trial", [None, "step 2"])
    ['trial', 'step 2']
    """
    found = [trial] if trial is not None else []
    return found + [info for info in steps if info is not None]


def main_reward(rewards: Mapping[str, float] | None) -> float | None:
    """The one number of a rewards dict: ``reward`` when present, else the mean of the keys (None when empty).

    Examples
    --------
    >>> main_reward({"reward": 1.0, "style": 0.0}), main_reward({"a": 1.0, "b": 0.0}), main_reward({})
    (1.0, 0.5, None)
    """
    if not rewards:
        return None
    if "reward" in rewards:
        return rewards["reward"]
    return sum(rewards.values()) / len(rewards)


def multi_step_rewards(
    rewards: Sequence[Mapping[str, float] | None], strategy: str | None = None
) -> dict[str, float] | None:
    """A multi-step trial's rewards from its steps' rewards, as Harbor 0.26 computes them.

    ``rewards`` holds each step's rewards in order (None: a step with no verifier result).

    ``final``: the last step's rewards as they are. ``mean`` (Harbor's default): per key, the
    mean over the steps with a verifier result (a key missing from one counts 0 there; a step
    without a verifier result is left out of the denominator); None when no step has one.

    Examples
    --------
    >>> multi_step_rewards([{"reward": 1.0}, {"reward": 0.0}], "mean")
    {'reward': 0.5}
    >>> multi_step_rewards([{"reward": 1.0}, None])
    {'reward': 1.0}
    >>> multi_step_rewards([{"reward": 1.0}, {"reward": 0.0}], "final")
    {'reward': 0.0}
    """
    if not rewards:
        return None
    chosen = strategy or DEFAULT_REWARD_STRATEGY
    if chosen not in REWARD_STRATEGIES:
        raise ValueError(
            f"The 'strategy' parameter of multi_step_rewards must be one of {list(REWARD_STRATEGIES)}, got {strategy!r}"
        )
    if chosen == "final":
        last = rewards[-1]
        return None if last is None else dict(last)
    valid = [item for item in rewards if item is not None]
    keys = sorted({key for item in valid for key in item})
    if not keys:
        return None
    return {key: sum(float(item.get(key, 0.0)) for item in valid) / len(valid) for key in keys}


# ---------------------------------------------------------------------------------- results


class TaskId(msgspec.Struct):
    """``task_id``: a local task (``path``), a git one (``git_url``, ``path`` in its repository) or a package."""

    path: str | None = None
    name: str | None = None
    org: str | None = None
    git_url: str | None = None

    def task_name(self) -> str | None:
        """The task's name: ``name``, else the last part of ``path``."""
        if self.name:
            return self.name
        return os.path.basename(self.path.rstrip("/")) if self.path else None


class Metadata(msgspec.Struct):
    """``agent_result.metadata``: terminus-2 records its turns as ``n_episodes``."""

    n_episodes: Any = None


class ModelInfo(msgspec.Struct):
    name: str | None = None
    provider: str | None = None

    def label(self) -> str | None:
        """``provider/name`` (the name alone without a provider; None without a name)."""
        if not self.name:
            return None
        return f"{self.provider}/{self.name}" if self.provider else self.name


class AgentInfo(msgspec.Struct):
    name: str | None = None
    version: str | None = None
    model_info: ModelInfo | None = None


class AgentResult(msgspec.Struct):
    """``agent_result`` (Harbor's ``AgentContext``), its values kept as any JSON value (the loader checks them)."""

    n_input_tokens: Any = None
    n_cache_tokens: Any = None
    n_output_tokens: Any = None
    cost_usd: Any = None
    metadata: msgspec.Raw = NULL


class TypedAgentResult(msgspec.Struct):
    """:class:`AgentResult` with ``metadata`` decoded (the typed pass)."""

    n_input_tokens: Any = None
    n_cache_tokens: Any = None
    n_output_tokens: Any = None
    cost_usd: Any = None
    metadata: Metadata | None = None


class VerifierResult(msgspec.Struct):
    rewards: dict[str, float] | None = None


class ExceptionInfo(msgspec.Struct):
    """``exception_info``; its policy is Harbor's for the type, with the override the job recorded on it."""

    exception_type: str | None = None
    exception_message: Any = None
    policy_override: ErrorPolicyOverride | None = None

    def kind(self) -> str:
        """The exception's type name (``UnknownException`` when none is recorded)."""
        return self.exception_type or "UnknownException"

    def message(self) -> str | None:
        value = self.exception_message
        return None if value is None else value if isinstance(value, str) else str(value)

    def policy(self) -> ErrorPolicy:
        return policy_for(self.kind(), self.policy_override)


class Phase(msgspec.Struct):
    """A phase's ``TimingInfo`` kept as any JSON values (a bad date costs its field)."""

    started_at: Any = None
    finished_at: Any = None


class TypedPhase(msgspec.Struct):
    started_at: datetime | None = None
    finished_at: datetime | None = None


class AgentConfig(msgspec.Struct):
    """A trial config's ``agent``."""

    name: str | None = None
    import_path: str | None = None
    model_name: str | None = None
    kwargs: dict[str, Any] | None = None


class TrialConfig(msgspec.Struct):
    """The part of a trial's ``config`` (in ``config.json`` and ``result.json``) depthlab reads."""

    agent: AgentConfig | None = None
    trials_dir: str | None = None
    extra_instructions: list[str] | None = None  # may state the cap (io.status.stated_cap)

    def agent_kwargs(self) -> dict[str, Any]:
        """``agent.kwargs`` ({} when absent or null)."""
        return (self.agent.kwargs if self.agent is not None else None) or {}


class StepAgentResult(msgspec.Struct):
    n_input_tokens: Any = None
    n_cache_tokens: Any = None
    n_output_tokens: Any = None
    cost_usd: Any = None
    metadata: Metadata | None = None


class StepResult(msgspec.Struct):
    """One entry of ``step_results`` (a multi-step trial's step)."""

    step_name: str | None = None
    agent_result: StepAgentResult | None = None
    verifier_result: VerifierResult | None = None
    exception_info: ExceptionInfo | None = None
    agent_execution: TypedPhase | None = None


class TrialResultBase(msgspec.Struct):
    """The fields and rules every decoding of a trial's result.json shares (the careful, lenient and fast ones)."""

    id: str | None = None
    task_name: str | None = None
    trial_name: str | None = None
    task_id: TaskId | None = None
    source: str | None = None
    task_checksum: str | None = None
    config: TrialConfig | None = None
    verifier_result: VerifierResult | msgspec.UnsetType | None = msgspec.UNSET
    reward_valid_: bool | None = msgspec.field(default=None, name="reward_valid")  # written by Harbor >= 0.26
    exception_info: ExceptionInfo | None = None
    step_results: msgspec.Raw = NULL  # a multi-step trial's steps (decode_steps)
    n_total_trials: int | None = None  # only in a job-level result.json

    def rewards(self) -> dict[str, float] | None:
        """``verifier_result.rewards`` (None when absent or null)."""
        recorded = self.verifier_result
        return recorded.rewards if isinstance(recorded, VerifierResult) else None

    def multi_step(self) -> bool:
        return self.step_results is not NULL and bytes(self.step_results) != b"null"

    def recorded_exceptions(self, steps: Sequence[StepResult] = ()) -> list[ExceptionInfo]:
        """Harbor's order: the trial's exception first, then its steps' in step order."""
        return recorded_exceptions(self.exception_info, [step.exception_info for step in steps])

    def reward_valid(self, steps: Sequence[StepResult] = ()) -> bool:
        """Whether Harbor counts this trial's reward: its recorded ``reward_valid``, else Harbor's rule
        (rewards recorded, and every recorded exception's policy gives a valid reward)."""
        return reward_valid(self.reward_valid_, self.rewards(), self.recorded_exceptions(steps))

    def graded(self, steps: Sequence[StepResult] = ()) -> bool:
        """Whether Harbor graded the trial: a ``verifier_result`` with rewards (an empty dict counts), or a
        step with a non-empty one."""
        return self.rewards() is not None or any(
            step.verifier_result is not None and step.verifier_result.rewards for step in steps
        )

    def first_exception_type(self, steps: Sequence[StepResult] = ()) -> str | None:
        """The trial's exception type, else its first step's that records one (a multi-step trial records an
        agent's timeout per step); None when none is recorded."""
        for info in self.recorded_exceptions(steps):
            if info.exception_type:
                return info.exception_type
        return None

    def exceptions_allow_reward(self, steps: Sequence[StepResult] = ()) -> bool:
        """Whether every recorded exception's policy (with its recorded override) gives a valid reward."""
        return reward_valid(None, {"": 0.0}, self.recorded_exceptions(steps))

    def job_trials_dir(self) -> str | None:
        return self.config.trials_dir if self.config is not None else None

    def task_dir(self, trial_dir: str | None) -> str | None:
        """The task folder this trial ran (:func:`resolve_task_path`), None when not on this machine."""
        if self.task_id is None or self.task_id.git_url is not None:
            return None  # a git task's path is inside its repository, not on this machine
        return resolve_task_path(self.task_id.path, trial_dir, self.job_trials_dir())


class TrialResult(TrialResultBase):
    """Harbor's ``TrialResult`` (a trial's result.json), as the trials table uses it, in one typed pass.

    A file whose describing parts do not fit (a date that is not one, an ``agent_result`` that is
    not an object) is decoded again as :class:`LenientTrialResult`, part by part.
    """

    agent_info: AgentInfo | None = None
    agent_result: TypedAgentResult | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    agent_execution: TypedPhase | None = None


class LenientTrialResult(TrialResultBase):
    """:class:`TrialResult` with every describing part kept raw or untyped, checked field by field."""

    agent_info: msgspec.Raw = NULL
    agent_result: msgspec.Raw = NULL
    started_at: Any = None
    finished_at: Any = None
    agent_execution: msgspec.Raw = NULL


class JudgedTrialResult(LenientTrialResult):
    """:class:`LenientTrialResult` with the verifier phase's times: what the engines' verdicts read (a reward file
    written after ``verifier.finished_at`` had another writer). Kept out of the loaders' structs, which do not
    read it."""

    verifier: Phase | None = None

    def agent_name(self) -> str | None:
        """``agent_info.name`` (None when absent or not an object of Harbor's shape)."""
        return _lenient_part(self.agent_info, AgentInfo).name

    def n_output_tokens(self) -> Any:
        """``agent_result.n_output_tokens`` as recorded (None when absent or not an object of Harbor's shape)."""
        return _lenient_part(self.agent_result, AgentResult).n_output_tokens


def _lenient_part(raw: msgspec.Raw, type_: Any) -> Any:
    try:
        decoded = msgspec.json.decode(raw, type=type_ | None)
    except (msgspec.ValidationError, msgspec.DecodeError):
        decoded = None
    return type_() if decoded is None else decoded


class JobResult(msgspec.Struct):
    """A job's result.json (Harbor's ``JobResult``), the part depthlab reads: older ones embed their trials'
    results in ``trial_results``; ``finished_at`` is set once Harbor finished the job."""

    id: Any = None
    started_at: Any = None
    finished_at: Any = None  # kept as any JSON value: a job's bookkeeping, never a reason to reject its trials
    n_total_trials: int | None = None
    trial_results: list[msgspec.Raw] | None = None


class DatasetConfig(msgspec.Struct):
    """An entry of a job config's ``datasets``: a folder of task folders and the task names run from it."""

    path: str | None = None
    task_names: list[str] | None = None


class JobConfig(msgspec.Struct):
    """A job's config.json (Harbor's ``JobConfig``), the part depthlab reads."""

    job_name: str | None = None
    n_attempts: int = 1
    agents: list[AgentConfig] | None = None
    datasets: list[DatasetConfig] | None = None

    def n_tasks(self) -> int:
        """The tasks its datasets name (1 when they name none: Harbor runs what the dataset holds)."""
        return sum(len(entry.task_names or []) for entry in self.datasets or []) or 1

    def n_trials(self) -> int:
        """The trials the job runs: attempts x agents (Harbor's default is one agent) x tasks.

        Examples
        --------
        >>> two_agents = [AgentConfig(), AgentConfig()]
        >>> JobConfig(n_attempts=2, agents=two_agents, datasets=[DatasetConfig("t", ["a"])]).n_trials()
        4
        """
        return self.n_attempts * (len(self.agents or []) or 1) * self.n_tasks()


class HarborInfo(msgspec.Struct):
    """A job lock's ``harbor``: the Harbor that ran the job."""

    version: str | None = None


class JobLock(msgspec.Struct):
    """Harbor's ``JobLock`` (a job's lock.json, Harbor >= 0.6): the resolved inputs of every trial."""

    schema_version: int | None = None
    created_at: str | None = None
    harbor: HarborInfo | None = None
    n_concurrent_trials: int | None = None
    trials: list[TrialLock] | None = None


class ConfigOnly(msgspec.Struct):
    """A result.json's ``config`` whole (what a callable cap rule is given)."""

    config: dict[str, Any] | None = None


class Usage(msgspec.Struct):
    """``agent/usage.json`` of some agents."""

    max_steps: Turns | None = None


class TaskLock(msgspec.Struct):
    digest: str | None = None


class InstructionLock(msgspec.Struct):
    digest: str | None = None
    path: str | None = None


class TrialLock(msgspec.Struct):
    """Harbor's ``TrialLock`` (a trial's lock.json): the task's digest and the extra instructions' digests."""

    schema_version: int | None = None
    task: TaskLock | None = None
    extra_instructions: list[InstructionLock] | None = None


def decode_steps(raw: msgspec.Raw | bytes) -> list[StepResult]:
    """``step_results`` decoded (msgspec's errors pass through: the caller rejects the trial)."""
    return msgspec.json.decode(raw, type=list[StepResult])


# ---------------------------------------------------------------------------------- task paths


def resolve_task_path(task_path: str | None, trial_dir: str | None, trials_dir: str | None) -> str | None:
    """The task folder a trial's ``task_id.path`` names, on this machine, or None when it cannot be found.

    Harbor records the path as given on its command line: absolute, or relative to the folder
    ``harbor run`` ran in. That folder is recovered from the trial's own place, never from this
    process's working directory: the job folder (the trial folder's parent) is where Harbor put
    ``trials_dir``, so a relative ``trials_dir`` of ``k`` parts ends the folder it ran in by ``k``
    parts. With an absolute (or unrecorded) ``trials_dir``, the job folder and its parents are
    tried in turn, the first holding ``<task path>/task.toml`` taken.

    Examples
    --------
    >>> resolve_task_path("tasks/a", "/data/run/jobs/j1/a__x", "jobs/j1")
    '/data/run/tasks/a'
    >>> resolve_task_path("/abs/tasks/a", None, None)
    '/abs/tasks/a'
    """
    if not task_path:
        return None
    expanded = os.path.expanduser(task_path)
    if os.path.isabs(expanded):
        return os.path.normpath(expanded)
    if trial_dir is None:
        return None
    job_dir = os.path.dirname(os.path.abspath(trial_dir))
    if trials_dir and not os.path.isabs(os.path.expanduser(trials_dir)):
        parts = [part for part in os.path.normpath(trials_dir).split(os.sep) if part not in ("", ".")]
        if ".." not in parts:
            ran_in = job_dir
            for _ in parts:
                ran_in = os.path.dirname(ran_in)
            return os.path.normpath(os.path.join(ran_in, expanded))
    folder = job_dir
    while True:
        candidate = os.path.normpath(os.path.join(folder, expanded))
        if os.path.isfile(os.path.join(candidate, "task.toml")):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
