"""The Harbor files depthlab writes, declared once, in Harbor 0.26's full shape.

Each struct here is one of Harbor's pydantic models as Harbor itself serialises it (its
``model_dump_json``): every field, in Harbor's order, nulls included; a field Harbor leaves out
when empty (its ``exclude_if``) is :data:`msgspec.UNSET` by default, so it is left out here too.
:mod:`depthlab.io.harbor_writer` builds them and encodes them with msgspec; no module writes a
Harbor file from a dict.

The structs that *read* Harbor's files (:mod:`depthlab.io.harbor_models`) stay lean, for the
loaders' speed: each decodes only the fields depthlab uses. Their fields are these structs'
fields under the same names, each taking every value its record's field can hold (types and
optionality; ``tests/io/test_harbor_records.py`` checks every one, so a field is stated once:
here), and ``tests/harbor/test_harbor_conformance.py`` compares these with
Harbor's own JSON schemas field by field, so a new Harbor field is a failing test.

Job-level files: a job's ``config.json`` (:class:`JobConfigRecord`), ``result.json``
(:class:`JobResultRecord`) and ``lock.json`` (:class:`JobLockRecord`, Harbor 0.26's ``JobLock``: the
resolved inputs of every trial, with the tasks' content digests; Harbor writes it with ``exclude_none``,
and so does :func:`depthlab.io.harbor_writer.write_lock`). The runner writes one per job, as Harbor does;
its ``harbor`` names no Harbor version (depthlab is not Harbor). :class:`depthlab.io.harbor_models.JobLock`
reads a lock back.

ATIF trajectories (``agent/trajectory.json``, :data:`ATIF_RECORDS`) are declared here too, in Harbor's
``harbor.models.trajectories`` field order; Harbor writes them with ``exclude_none``, so every optional
field is ``UNSET`` by default and left out unless given (``tests/io/test_atif_harbor.py`` holds them to
Harbor's models and validates a written file with Harbor's own).
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from depthlab.io.harbor_models import ErrorPolicy, ErrorPolicyOverride, recorded_exceptions, rewards_count

#: The ``schema_version`` Harbor 0.26 writes in a trial's and a job's config and result.
DOCUMENT_VERSION: Final = 1

_UNSET: Any = msgspec.UNSET


class _Record(msgspec.Struct):
    """A Harbor document (encoded in field order; ``UNSET`` fields left out, as Harbor's ``exclude_if``)."""


# ------------------------------------------------------------------------------ trial config


class TaskConfigRecord(_Record, kw_only=True):
    """A trial config's ``task`` (Harbor's trial ``TaskConfig``: a local folder, a git task or a package)."""

    path: str | None = None
    git_url: str | None = None
    git_commit_id: str | None = None
    name: str | None = None
    ref: str | None = None
    overwrite: bool = False
    download_dir: str | None = None
    source: str | None = None


class AgentConfigRecord(_Record, kw_only=True):
    """Harbor's ``AgentConfig`` (a trial's ``config.agent``, an entry of a job's ``agents``)."""

    name: str | None = None
    import_path: str | None = None
    model_name: str | None = None
    base_url: str | None = None
    model_api_key_name: str | None = None
    model_api_format: str | None = None
    skip_model_parsing: bool = False
    n_concurrent: int | None = None
    concurrency_group: str | None = None
    skills: list[str] = msgspec.field(default_factory=list)
    override_timeout_sec: float | None = None
    override_setup_timeout_sec: float | None = None
    max_timeout_sec: float | None = None
    resume_trajectory: bool = False
    load_trajectory: str | None = None
    extra_allowed_hosts: list[str] = msgspec.field(default_factory=list)
    include_logs: list[str] = _UNSET
    exclude_logs: list[str] = _UNSET
    kwargs: dict[str, Any] = msgspec.field(default_factory=dict)
    env: dict[str, str] = _UNSET
    mcp_servers: list[Any] = msgspec.field(default_factory=list)


class EnvironmentConfigRecord(_Record, kw_only=True):
    """Harbor's ``EnvironmentConfig``; ``kwargs`` records depthlab's container limits."""

    type: str | None = "docker"
    import_path: str | None = None
    force_build: bool = False
    delete: bool = True
    stream: bool = False
    cpu_enforcement_policy: str = "auto"
    memory_enforcement_policy: str = "auto"
    override_cpus: float | None = None
    override_memory_mb: int | None = None
    override_storage_mb: int | None = None
    override_gpus: int | None = None
    override_tpu: Any = None
    mounts: list[Any] | None = None
    extra_docker_compose: list[str] = msgspec.field(default_factory=list)
    env: dict[str, str] = _UNSET
    kwargs: dict[str, Any] = msgspec.field(default_factory=dict)
    extra_allowed_hosts: list[str] = msgspec.field(default_factory=list)


class VerifierConfigRecord(_Record, kw_only=True):
    """Harbor's ``VerifierConfig``."""

    override_timeout_sec: float | None = None
    max_timeout_sec: float | None = None
    include_logs: list[str] = _UNSET
    exclude_logs: list[str] = _UNSET
    env: dict[str, str] = _UNSET
    import_path: str = _UNSET
    kwargs: dict[str, Any] = _UNSET
    disable: bool = False
    extra_allowed_hosts: list[str] = _UNSET


class TrialConfigRecord(_Record, kw_only=True):
    """Harbor's ``TrialConfig`` (a trial's ``config.json``, repeated as ``result.config``)."""

    schema_version: Literal[1] = DOCUMENT_VERSION
    task: TaskConfigRecord
    trial_name: str = ""
    trials_dir: str = "trials"
    install_only: bool = False
    timeout_multiplier: float = 1.0
    agent_timeout_multiplier: float | None = None
    verifier_timeout_multiplier: float | None = None
    agent_setup_timeout_multiplier: float | None = None
    environment_build_timeout_multiplier: float | None = None
    agent: AgentConfigRecord = msgspec.field(default_factory=AgentConfigRecord)
    user_agent: dict[str, Any] | None = None
    environment: EnvironmentConfigRecord = msgspec.field(default_factory=EnvironmentConfigRecord)
    verifier: VerifierConfigRecord = msgspec.field(default_factory=VerifierConfigRecord)
    override_error_policy: dict[str, ErrorPolicyOverride] = msgspec.field(default_factory=dict)
    artifacts: list[Any] = msgspec.field(default_factory=list)
    extra_instruction_paths: list[str] = msgspec.field(default_factory=list)
    extra_instructions: list[str] = msgspec.field(default_factory=list)
    job_id: str | None = None
    source_trial: dict[str, Any] | None = None


# ------------------------------------------------------------------------------ trial result


class ModelInfoRecord(_Record, kw_only=True):
    """Harbor's ``ModelInfo``: a model's name without its provider, and the provider."""

    name: str
    provider: str | None = None


class AgentInfoRecord(_Record, kw_only=True):
    """Harbor's ``AgentInfo`` (``agent_info``)."""

    name: str
    version: str
    model_info: ModelInfoRecord | None = None


class AgentContextRecord(_Record, kw_only=True):
    """Harbor's ``AgentContext`` (``agent_result``); terminus-2 keeps its turns as ``metadata.n_episodes``."""

    n_input_tokens: int | None = None
    n_cache_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None
    model_usage: dict[str, Any] | None = None
    rollout_details: list[Any] | None = None
    metadata: dict[str, Any] | None = None


class VerifierResultRecord(_Record, kw_only=True):
    """Harbor's ``VerifierResult``."""

    rewards: dict[str, float] | None = None


class ExceptionInfoRecord(_Record, kw_only=True):
    """Harbor's ``ExceptionInfo`` with the ``policy`` Harbor computes and writes beside it.

    ``occurred_at`` as the writer gives it (Harbor's own is an ISO time); ``policy_override`` is
    written only when the job set one, as Harbor does.
    """

    exception_type: str
    exception_message: str
    exception_traceback: str
    occurred_at: str
    policy_override: ErrorPolicyOverride = _UNSET
    policy: ErrorPolicy


class TimingInfoRecord(_Record, kw_only=True):
    """Harbor's ``TimingInfo`` of one phase (ISO times)."""

    started_at: str | None = None
    finished_at: str | None = None


class LocalTaskIdRecord(_Record, kw_only=True):
    """Harbor's ``LocalTaskId`` (``task_id`` of a trial of a local task folder)."""

    path: str


class StepResultRecord(_Record, kw_only=True):
    """Harbor's ``StepResult``: one step of a multi-step trial (an entry of ``step_results``)."""

    step_name: str
    agent_result: AgentContextRecord | None = None
    verifier_result: VerifierResultRecord | None = None
    exception_info: ExceptionInfoRecord | None = None
    agent_execution: TimingInfoRecord | None = None
    verifier: TimingInfoRecord | None = None


class TrialResultRecord(_Record, kw_only=True):
    """Harbor's ``TrialResult`` (a trial's ``result.json``) with the ``reward_valid`` Harbor computes and writes."""

    schema_version: Literal[1] = DOCUMENT_VERSION
    id: str
    task_name: str
    trial_name: str
    trial_uri: str
    task_id: LocalTaskIdRecord
    source: str | None = None
    task_checksum: str
    config: TrialConfigRecord
    agent_info: AgentInfoRecord
    agent_result: AgentContextRecord | None = None
    verifier_result: VerifierResultRecord | None = None
    verifier_environment_mode: str | None = None
    exception_info: ExceptionInfoRecord | None = None
    started_at: str | None = None
    finished_at: str | None = None
    environment_setup: TimingInfoRecord | None = None
    agent_setup: TimingInfoRecord | None = None
    agent_execution: TimingInfoRecord | None = None
    verifier: TimingInfoRecord | None = None
    step_results: list[StepResultRecord] | None = None
    reward_valid: bool

    def recorded_exceptions(self) -> list[ExceptionInfoRecord]:
        """Harbor's order: the trial's exception first, then its steps' in step order."""
        return recorded_exceptions(self.exception_info, [step.exception_info for step in self.step_results or ()])

    def harbor_reward_valid(self) -> bool:
        """Harbor's ``reward_valid`` of this result as it stands (:func:`depthlab.io.harbor_models.rewards_count`
        on its rewards and every recorded exception's policy): what the writer records, and what a rewrite
        recomputes."""
        rewards = self.verifier_result.rewards if self.verifier_result is not None else None
        return rewards_count(rewards, [info.policy for info in self.recorded_exceptions()])


# ------------------------------------------------------------------------------ job files


class RetryConfigRecord(_Record, kw_only=True):
    """Harbor's ``RetryConfig`` (a job's ``retry``): depthlab's jobs retry nothing."""

    max_retries: int = 0
    include_exceptions: list[str] | None = None
    exclude_exceptions: list[str] | None = msgspec.field(default_factory=list)
    wait_multiplier: float = 1.0
    min_wait_sec: float = 1.0
    max_wait_sec: float = 60.0


class DatasetConfigRecord(_Record, kw_only=True):
    """Harbor's ``DatasetConfig`` (an entry of a job's ``datasets``): a local folder of task folders."""

    path: str | None = None
    name: str | None = None
    version: str | None = None
    ref: str | None = None
    registry_url: str | None = None
    registry_path: str | None = None
    repo: str | None = None
    overwrite: bool = False
    download_dir: str | None = None
    task_names: list[str] | None = None
    exclude_task_names: list[str] | None = None
    n_tasks: int | None = None


class JobConfigRecord(_Record, kw_only=True):
    """Harbor's ``JobConfig`` (a job's ``config.json``; ``harbor run --config FILE`` runs it)."""

    schema_version: Literal[1] = DOCUMENT_VERSION
    job_name: str = ""
    jobs_dir: str = "jobs"
    n_attempts: int = 1
    install_only: bool = False
    skip_credential_checks: bool = False
    timeout_multiplier: float = 1.0
    agent_timeout_multiplier: float | None = None
    verifier_timeout_multiplier: float | None = None
    agent_setup_timeout_multiplier: float | None = None
    environment_build_timeout_multiplier: float | None = None
    debug: bool = False
    n_concurrent_trials: int = 1
    quiet: bool = True
    retry: RetryConfigRecord = msgspec.field(default_factory=RetryConfigRecord)
    override_error_policy: dict[str, ErrorPolicyOverride] = msgspec.field(default_factory=dict)
    environment: EnvironmentConfigRecord = msgspec.field(default_factory=EnvironmentConfigRecord)
    verifier: VerifierConfigRecord = msgspec.field(default_factory=VerifierConfigRecord)
    metrics: list[Any] = msgspec.field(default_factory=list)
    agents: list[AgentConfigRecord] = msgspec.field(default_factory=list)
    user_agent: dict[str, Any] | None = None
    datasets: list[DatasetConfigRecord] = msgspec.field(default_factory=list)
    tasks: list[TaskConfigRecord] = msgspec.field(default_factory=list)
    artifacts: list[Any] = msgspec.field(default_factory=list)
    extra_instruction_paths: list[str] = msgspec.field(default_factory=list)
    extra_instructions: list[str] = msgspec.field(default_factory=list)
    source_jobs: list[Any] = msgspec.field(default_factory=list)


class AgentDatasetStatsRecord(_Record, kw_only=True):
    """Harbor's ``AgentDatasetStats``: one eval (agent, model, source) of a job's ``stats.evals``."""

    n_trials: int = 0
    n_errors: int = 0
    metrics: list[dict[str, Any]] = msgspec.field(default_factory=list)
    pass_at_k: dict[int, float] = msgspec.field(default_factory=dict)
    reward_stats: dict[str, dict[str, list[str]]] = msgspec.field(default_factory=dict)
    exception_stats: dict[str, list[str]] = msgspec.field(default_factory=dict)


class JobStatsRecord(_Record, kw_only=True):
    """Harbor's ``JobStats`` (a job result's ``stats``)."""

    n_completed_trials: int = 0
    n_errored_trials: int = 0
    n_running_trials: int = 0
    n_pending_trials: int = 0
    n_cancelled_trials: int = 0
    n_retries: int = 0
    evals: dict[str, AgentDatasetStatsRecord] = msgspec.field(default_factory=dict)
    n_input_tokens: int | None = None
    n_cache_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None


class JobResultRecord(_Record, kw_only=True):
    """Harbor's ``JobResult`` (a job's ``result.json``), written without its trials (Harbor's ``exclude``)."""

    schema_version: Literal[1] = DOCUMENT_VERSION
    id: str
    started_at: str
    updated_at: str | None = None
    finished_at: str | None = None
    n_total_trials: int
    stats: JobStatsRecord
    trial_results: list[TrialResultRecord] = _UNSET


# ------------------------------------------------------------------------------ job lock


class HarborLockInfoRecord(_Record, kw_only=True):
    """Harbor's ``HarborLockInfo`` (a job lock's ``harbor``): the Harbor that ran the job; all null (left out)
    in a lock depthlab's runner writes, no Harbor having run it."""

    version: str | None = None
    git_commit_hash: str | None = None
    is_editable: bool | None = None


class TaskLockRecord(_Record, kw_only=True):
    """Harbor's ``TaskLock``: a trial's task, its ``digest`` ``"sha256:"`` and Harbor's content hash."""

    name: str
    version: str | None = None
    type: Literal["local", "git", "package"] = "local"
    digest: str
    source: str | None = None
    path: str | None = None
    git_url: str | None = None
    git_commit_id: str | None = None


class ExtraInstructionLockRecord(_Record, kw_only=True):
    """Harbor's ``ExtraInstructionLock``: an extra instruction's file (or none: given as text) and digest."""

    path: str | None = None
    digest: str


class VerifierLockRecord(VerifierConfigRecord, kw_only=True):
    """Harbor's ``VerifierLock``: the trial's verifier config and its resolved environment mode (None: per step)."""

    environment_mode: Literal["shared", "separate"] | None = None


class TrialLockRecord(_Record, kw_only=True):
    """Harbor's ``TrialLock`` (schema 2): one trial's resolved inputs, an entry of a job lock's ``trials``."""

    schema_version: int = 2
    task: TaskLockRecord
    install_only: bool = False
    timeout_multiplier: float = 1.0
    agent_timeout_multiplier: float | None = None
    verifier_timeout_multiplier: float | None = None
    agent_setup_timeout_multiplier: float | None = None
    environment_build_timeout_multiplier: float | None = None
    extra_instructions: list[ExtraInstructionLockRecord] | None = None
    agent: AgentConfigRecord
    user_agent: dict[str, Any] | None = None
    user_persona: ExtraInstructionLockRecord | None = None
    user_prompt_template: ExtraInstructionLockRecord | None = None
    bridge_prompt: ExtraInstructionLockRecord | None = None
    bridge_inputs: dict[str, ExtraInstructionLockRecord] = msgspec.field(default_factory=dict)
    skills: list[dict[str, Any]] = msgspec.field(default_factory=list)
    environment: EnvironmentConfigRecord
    extra_docker_compose: list[dict[str, Any]] | None = None
    verifier: VerifierLockRecord
    artifacts: list[Any] = msgspec.field(default_factory=list)
    override_error_policy: dict[str, ErrorPolicyOverride] = msgspec.field(default_factory=dict)
    source_trial: dict[str, Any] | None = None


class JobLockRecord(_Record, kw_only=True):
    """Harbor's ``JobLock`` (schema 3, a job's ``lock.json``)."""

    schema_version: int = 3
    created_at: str
    harbor: HarborLockInfoRecord = msgspec.field(default_factory=HarborLockInfoRecord)
    n_concurrent_trials: int
    retry: RetryConfigRecord
    trials: list[TrialLockRecord] = msgspec.field(default_factory=list)


#: The job lock's records, each with the Harbor model it is (``harbor.models.job.lock``' class names).
LOCK_RECORDS: Final[dict[str, type[msgspec.Struct]]] = {
    "HarborLockInfo": HarborLockInfoRecord,
    "TaskLock": TaskLockRecord,
    "ExtraInstructionLock": ExtraInstructionLockRecord,
    "VerifierLock": VerifierLockRecord,
    "TrialLock": TrialLockRecord,
    "JobLock": JobLockRecord,
}


# ------------------------------------------------------------------------------ ATIF trajectory


class AtifToolCallRecord(_Record, kw_only=True):
    """Harbor's ATIF ``ToolCall``: one call of a tool an agent step made."""

    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = _UNSET


class AtifObservationResultRecord(_Record, kw_only=True):
    """Harbor's ATIF ``ObservationResult``: what one call (or the environment) returned."""

    source_call_id: str | None = _UNSET
    content: str | list[dict[str, Any]] | None = _UNSET
    subagent_trajectory_ref: list[dict[str, Any]] | None = _UNSET
    extra: dict[str, Any] | None = _UNSET


class AtifObservationRecord(_Record, kw_only=True):
    """Harbor's ATIF ``Observation`` of a step."""

    results: list[AtifObservationResultRecord]


class AtifMetricsRecord(_Record, kw_only=True):
    """Harbor's ATIF ``Metrics`` of one step (a count the endpoint did not report is left out)."""

    prompt_tokens: int | None = _UNSET
    completion_tokens: int | None = _UNSET
    cached_tokens: int | None = _UNSET
    cost_usd: float | None = _UNSET
    prompt_token_ids: list[int] | None = _UNSET
    completion_token_ids: list[int] | None = _UNSET
    logprobs: list[float] | None = _UNSET
    extra: dict[str, Any] | None = _UNSET


class AtifStepRecord(_Record, kw_only=True):
    """Harbor's ATIF ``Step``: one message of the user, the agent or the system."""

    step_id: int
    timestamp: str | None = _UNSET
    source: Literal["system", "user", "agent"]
    model_name: str | None = _UNSET
    reasoning_effort: str | float | None = _UNSET
    message: str | list[dict[str, Any]]
    reasoning_content: str | None = _UNSET
    tool_calls: list[AtifToolCallRecord] | None = _UNSET
    observation: AtifObservationRecord | None = _UNSET
    metrics: AtifMetricsRecord | None = _UNSET
    is_copied_context: bool | None = _UNSET
    llm_call_count: int | None = _UNSET
    extra: dict[str, Any] | None = _UNSET


class AtifAgentRecord(_Record, kw_only=True):
    """Harbor's ATIF ``Agent``: the agent that wrote the trajectory."""

    name: str
    version: str
    model_name: str | None = _UNSET
    tool_definitions: list[dict[str, Any]] | None = _UNSET
    extra: dict[str, Any] | None = _UNSET


class AtifFinalMetricsRecord(_Record, kw_only=True):
    """Harbor's ATIF ``FinalMetrics``: the trajectory's totals (a total of no reported count left out)."""

    total_prompt_tokens: int | None = _UNSET
    total_completion_tokens: int | None = _UNSET
    total_cached_tokens: int | None = _UNSET
    total_cost_usd: float | None = _UNSET
    total_steps: int | None = _UNSET
    extra: dict[str, Any] | None = _UNSET


class TrajectoryRecord(_Record, kw_only=True):
    """Harbor's ATIF ``Trajectory``: an agent's ``trajectory.json``."""

    schema_version: str
    session_id: str | None = _UNSET
    trajectory_id: str | None = _UNSET
    agent: AtifAgentRecord
    steps: list[AtifStepRecord]
    notes: str | None = _UNSET
    final_metrics: AtifFinalMetricsRecord | None = _UNSET
    continued_trajectory_ref: str | None = _UNSET
    extra: dict[str, Any] | None = _UNSET
    subagent_trajectories: list[TrajectoryRecord] | None = _UNSET


#: The ATIF records, each with the Harbor model it is (``harbor.models.trajectories``' class names), for the test
#: that holds them to Harbor's models.
ATIF_RECORDS: Final[dict[str, type[msgspec.Struct]]] = {
    "ToolCall": AtifToolCallRecord,
    "ObservationResult": AtifObservationResultRecord,
    "Observation": AtifObservationRecord,
    "Metrics": AtifMetricsRecord,
    "Step": AtifStepRecord,
    "Agent": AtifAgentRecord,
    "FinalMetrics": AtifFinalMetricsRecord,
    "Trajectory": TrajectoryRecord,
}


#: Every record, for the tests that hold them to Harbor's models and the readers to them.
RECORDS: Final[tuple[type[msgspec.Struct], ...]] = (
    TaskConfigRecord,
    AgentConfigRecord,
    EnvironmentConfigRecord,
    VerifierConfigRecord,
    TrialConfigRecord,
    ModelInfoRecord,
    AgentInfoRecord,
    AgentContextRecord,
    VerifierResultRecord,
    ExceptionInfoRecord,
    TimingInfoRecord,
    LocalTaskIdRecord,
    StepResultRecord,
    TrialResultRecord,
    RetryConfigRecord,
    DatasetConfigRecord,
    JobConfigRecord,
    AgentDatasetStatsRecord,
    JobStatsRecord,
    JobResultRecord,
)
