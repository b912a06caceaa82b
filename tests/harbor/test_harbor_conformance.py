"""depthlab's one model of Harbor's files (:mod:`depthlab.io.harbor_models`) against Harbor's own, both ways.

* The records depthlab writes (:mod:`depthlab.io.harbor_records`) are Harbor's models field for field, in
  Harbor's order, none left out (``WRITTEN``): a new Harbor field fails here until the writer writes it.
* Field by field: every struct of the model is compared with the Harbor model it stands for, from
  ``harbor tasks schema`` (task.toml) and Harbor's pydantic JSON schemas (``model_json_schema`` of
  ``TrialResult``, ``TrialConfig``, ``JobResult``, ``TrialLock`` in the side venv). A field Harbor has
  must be decoded or listed below, with why, among the fields depthlab leaves out on purpose; a field
  depthlab decodes must be Harbor's (or an older name Harbor still accepts, listed too). So a new
  Harbor field is a failing test here, not drift.
* The error policy, the default task.toml version and the canary rule are Harbor's, name by name.
* Harbor's models accept every file depthlab writes (the simulator's jobs and its multi-step tasks and
  runs, the runner's job folder and a trial with an exception, through :mod:`depthlab.io.harbor_writer`;
  plan's configs in ``test_harbor_formats.py``), and depthlab's model decodes every Harbor file of the
  shared samples and the TMax job (the files the pinned Harbor writes in the tests are decoded, into the
  records too, in ``test_harbor_model_defects.py``).

Needs Harbor's side venv; skips with the reason without it (fails under ``DEPTHLAB_REQUIRE_HARBOR=1``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from depthlab.io import harbor_models as hm
from depthlab.io import harbor_records as hr
from depthlab.io import harbor_versions as hv
from depthlab.io import harbor_writer as hw
from depthlab.simulate import write_runs

sys.path.insert(0, str(Path(__file__).parent))
from harbor_runs import decode_harbor_files

pytestmark = pytest.mark.harbor

# ------------------------------------------------------------------------ what depthlab leaves out

#: Harbor fields depthlab deliberately does not decode, per (Harbor model, depthlab struct), with why.
TASK_TOML: dict[type, tuple[str, dict[str, str]]] = {
    hm.TaskConfig: ("$root", {}),
    hm.PackageInfo: ("PackageInfo", {}),
    hm.AgentSection: ("AgentConfig", {}),
    hm.EnvironmentSection: (
        "EnvironmentConfig",
        {
            "gpu_types": "accelerators: no column and no runner support (the runner refuses GPU tasks on its own)",
            "tpu": "accelerators, as gpu_types",
        },
    ),
    hm.VerifierSection: ("VerifierConfig", {"collect": "compose collect hooks: Harbor's engine runs them"}),
    hm.StepConfig: ("StepConfig", {}),
    hm.SolutionSection: ("SolutionConfig", {}),
}
#: Keys depthlab decodes that Harbor's schema does not list: older names Harbor still accepts.
TASK_TOML_OLDER: dict[type, set[str]] = {
    hm.TaskConfig: {"version"},  # Harbor renames it to schema_version
    hm.EnvironmentSection: {"memory", "storage"},  # Harbor converts them to memory_mb and storage_mb
}

_TIMING = "a phase's timing: only the agent's phase is a column (agent_seconds)"
_RUN_SETTINGS = "how the trial was run (timeouts, environment, artifacts): no column reads it"
RESULTS: dict[type, tuple[str, str, dict[str, str]]] = {
    hm.TrialResult: (
        "TrialResult",
        "$root",
        {
            "schema_version": "the result document's version: 1 is the only one",
            "trial_uri": "where the trial folder was when it ran: the folder read is the one found",
            "verifier_environment_mode": "the task's verifier_mode is read from task.toml",
            "environment_setup": _TIMING,
            "agent_setup": _TIMING,
            "verifier": _TIMING,
        },
    ),
    hm.StepResult: ("TrialResult", "StepResult", {"verifier": _TIMING}),
    hm.ExceptionInfo: (
        "TrialResult",
        "ExceptionInfo",
        {
            "exception_traceback": "text for a reader, not a column",
            "occurred_at": "the trial's own times are the columns",
            "policy": "computed by Harbor from the type and the override: ExceptionInfo.policy() does the same",
        },
    ),
    hm.AgentInfo: ("TrialResult", "AgentInfo", {}),
    hm.ModelInfo: ("TrialResult", "ModelInfo", {}),
    hm.TypedAgentResult: (
        "TrialResult",
        "AgentContext",
        {
            "model_usage": "per-model split of the tokens: their totals are the columns",
            "rollout_details": "token ids and logprobs for training: not a column",
        },
    ),
    hm.StepAgentResult: (
        "TrialResult",
        "AgentContext",
        {"model_usage": "as TypedAgentResult", "rollout_details": "as TypedAgentResult"},
    ),
    hm.VerifierResult: ("TrialResult", "VerifierResult", {}),
    hm.TypedPhase: ("TrialResult", "TimingInfo", {}),
    hm.TrialConfig: (
        "TrialConfig",
        "$root",
        {
            name: _RUN_SETTINGS
            for name in (
                "agent_setup_timeout_multiplier",
                "agent_timeout_multiplier",
                "artifacts",
                "environment",
                "environment_build_timeout_multiplier",
                "extra_instruction_paths",
                "install_only",
                "job_id",
                "override_error_policy",
                "schema_version",
                "source_trial",
                "timeout_multiplier",
                "user_agent",
                "verifier",
                "verifier_timeout_multiplier",
            )
        }
        | {
            "trial_name": "the result's own trial_name is read",
            "task": "the result's task_id names the task (the fast path decodes no more than it reads)",
        },
    ),
    hm.AgentConfig: (
        "TrialConfig",
        "AgentConfig",
        {
            name: _RUN_SETTINGS
            for name in (
                "base_url",
                "concurrency_group",
                "env",
                "exclude_logs",
                "extra_allowed_hosts",
                "include_logs",
                "load_trajectory",
                "max_timeout_sec",
                "mcp_servers",
                "model_api_format",
                "model_api_key_name",
                "n_concurrent",
                "override_setup_timeout_sec",
                "override_timeout_sec",
                "resume_trajectory",
                "skills",
                "skip_model_parsing",
            )
        },
    ),
    hm.JobResult: (
        "JobResult",
        "$root",
        {
            name: "a job's own bookkeeping: its trials' results are the rows"
            for name in ("schema_version", "stats", "updated_at")
        },
    ),
    hm.JobConfig: (
        "JobConfig",
        "$root",
        {
            name: "how the job is run: depthlab reads what sizes it (attempts, agents, tasks) and its name"
            for name in (
                "agent_setup_timeout_multiplier",
                "agent_timeout_multiplier",
                "artifacts",
                "debug",
                "environment",
                "environment_build_timeout_multiplier",
                "extra_instruction_paths",
                "extra_instructions",
                "install_only",
                "jobs_dir",
                "metrics",
                "n_concurrent_trials",
                "override_error_policy",
                "quiet",
                "retry",
                "schema_version",
                "skip_credential_checks",
                "source_jobs",
                "tasks",
                "timeout_multiplier",
                "user_agent",
                "verifier",
                "verifier_timeout_multiplier",
            )
        },
    ),
    hm.DatasetConfig: (
        "JobConfig",
        "DatasetConfig",
        {
            name: "a registry dataset's coordinates and filters: depthlab's jobs name local folders and task names"
            for name in (
                "download_dir",
                "exclude_task_names",
                "n_tasks",
                "name",
                "overwrite",
                "ref",
                "registry_path",
                "registry_url",
                "repo",
                "version",
            )
        },
    ),
    hm.JobLock: ("JobLock", "$root", {"retry": "the job's retry settings, recorded: its trials' locks are read"}),
    hm.HarborInfo: (
        "JobLock",
        "HarborLockInfo",
        {"git_commit_hash": "which Harbor build: its version is read", "is_editable": "as git_commit_hash"},
    ),
    hm.TrialLock: (
        "TrialLock",
        "$root",
        {
            name: "the lock's record of the run's settings: only the task digest and the instructions are read"
            for name in (
                "agent",
                "agent_setup_timeout_multiplier",
                "agent_timeout_multiplier",
                "artifacts",
                "bridge_inputs",
                "bridge_prompt",
                "environment",
                "environment_build_timeout_multiplier",
                "extra_docker_compose",
                "install_only",
                "override_error_policy",
                "skills",
                "source_trial",
                "timeout_multiplier",
                "user_agent",
                "user_persona",
                "user_prompt_template",
                "verifier",
                "verifier_timeout_multiplier",
            )
        },
    ),
    hm.TaskLock: (
        "TrialLock",
        "TaskLock",
        {
            name: "how the task was located: its digest is what a trial is matched on"
            for name in ("git_commit_id", "git_url", "name", "path", "source", "type", "version")
        },
    ),
    hm.InstructionLock: ("TrialLock", "ExtraInstructionLock", {}),
    hm.ErrorPolicyOverride: ("TrialResult", "ErrorPolicyOverride", {}),
    hm.ErrorPolicy: ("TrialResult", "ErrorPolicy", {}),
    # the retry filter an older job's policies are computed from (io.harbor_versions)
    hv.RetryConfig: (
        "JobConfig",
        "RetryConfig",
        {
            name: "the wait between retries: no column reads it"
            for name in ("max_wait_sec", "min_wait_sec", "wait_multiplier")
        },
    ),
}
#: Keys depthlab decodes beyond the Harbor model's: a job-level result.json's key (it tells the two apart).
RESULTS_EXTRA: dict[type, set[str]] = {hm.TrialResult: {"n_total_trials"}}
#: task_id is a union of three Harbor models; depthlab's TaskId decodes their names, except these.
TASK_ID_LEFT_OUT = {"git_commit_id": "which commit: the task is named by its path", "ref": "a package's version ref"}

_SIDE = """
import json, subprocess, sys
from harbor.models.job.config import JobConfig
from harbor.models.job.lock import JobLock, TrialLock
from harbor.models.job.result import JobResult
from harbor.models.task.config import TaskConfig
from harbor.models.trial.config import TrialConfig
from harbor.models.trial.error_policy import ERROR_POLICIES, UNKNOWN_ERROR_POLICY
from harbor.models.trial.result import TrialResult

def props(model):
    schema = model.model_json_schema(mode="serialization")
    found = {"$root": list(schema.get("properties", {}))}  # in Harbor's order, the order it writes them in
    for name, item in schema.get("$defs", {}).items():
        if "properties" in item:
            found[name] = list(item["properties"])
    return found

policy = lambda p: [p.should_retry, p.should_grade, p.has_valid_reward]
print(json.dumps({
    "task": json.loads(subprocess.run([sys.argv[1], "tasks", "schema"], capture_output=True, check=True).stdout),
    "models": {m.__name__: props(m) for m in (TrialResult, TrialConfig, JobResult, JobConfig, JobLock, TrialLock)},
    "policies": {name: policy(p) for name, p in ERROR_POLICIES.items()},
    "unknown_policy": policy(UNKNOWN_ERROR_POLICY),
    "default_version": TaskConfig().schema_version,
}))
"""


@pytest.fixture(scope="module")
def harbor_schemas(harbor_python: Path) -> dict:
    done = subprocess.run(
        [str(harbor_python), "-c", _SIDE, str(harbor_python.parent / "harbor")],
        env={**os.environ, "HARBOR_TELEMETRY": "0", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _ours(struct: type) -> set[str]:
    return {field.encode_name for field in msgspec.structs.fields(struct)}


def _task_fields(schema: dict, definition: str) -> set[str]:
    where = schema if definition == "$root" else schema["$defs"][definition]
    return set(where["properties"])


@pytest.mark.parametrize("struct", list(TASK_TOML), ids=lambda struct: struct.__name__)
def test_task_toml_model_has_every_field_of_harbor_tasks_schema(harbor_schemas, struct):
    definition, left_out = TASK_TOML[struct]
    harbor = _task_fields(harbor_schemas["task"], definition)
    assert set(left_out) <= harbor, f"{struct.__name__}: fields listed as left out that Harbor no longer has"
    assert harbor - set(left_out) == _ours(struct) - TASK_TOML_OLDER.get(struct, set()), definition


@pytest.mark.parametrize("struct", list(RESULTS), ids=lambda struct: struct.__name__)
def test_result_models_have_every_field_of_harbors_models(harbor_schemas, struct):
    model, definition, left_out = RESULTS[struct]
    harbor = set(harbor_schemas["models"][model][definition])
    assert set(left_out) <= harbor, f"{struct.__name__}: fields listed as left out that Harbor no longer has"
    assert harbor - set(left_out) == _ours(struct) - RESULTS_EXTRA.get(struct, set()), (model, definition)


#: Each record depthlab writes (io.harbor_records) and the Harbor model it is: (Harbor model, its definition).
WRITTEN: dict[type, tuple[str, str]] = {
    hr.TaskConfigRecord: ("TrialConfig", "TaskConfig"),
    hr.AgentConfigRecord: ("TrialConfig", "AgentConfig"),
    hr.EnvironmentConfigRecord: ("TrialConfig", "EnvironmentConfig"),
    hr.VerifierConfigRecord: ("TrialConfig", "VerifierConfig"),
    hr.TrialConfigRecord: ("TrialConfig", "$root"),
    hr.ModelInfoRecord: ("TrialResult", "ModelInfo"),
    hr.AgentInfoRecord: ("TrialResult", "AgentInfo"),
    hr.AgentContextRecord: ("TrialResult", "AgentContext"),
    hr.VerifierResultRecord: ("TrialResult", "VerifierResult"),
    hr.ExceptionInfoRecord: ("TrialResult", "ExceptionInfo"),
    hr.TimingInfoRecord: ("TrialResult", "TimingInfo"),
    hr.LocalTaskIdRecord: ("TrialResult", "LocalTaskId"),
    hr.StepResultRecord: ("TrialResult", "StepResult"),
    hr.TrialResultRecord: ("TrialResult", "$root"),
    hr.RetryConfigRecord: ("JobConfig", "RetryConfig"),
    hr.DatasetConfigRecord: ("JobConfig", "DatasetConfig"),
    hr.JobConfigRecord: ("JobConfig", "$root"),
    hr.AgentDatasetStatsRecord: ("JobResult", "AgentDatasetStats"),
    hr.JobStatsRecord: ("JobResult", "JobStats"),
    hr.JobResultRecord: ("JobResult", "$root"),
}


def test_every_record_is_listed():
    assert set(WRITTEN) == set(hr.RECORDS)


@pytest.mark.parametrize("record", list(WRITTEN), ids=lambda struct: struct.__name__)
def test_the_written_records_are_harbors_models_field_for_field_in_harbors_order(harbor_schemas, record):
    """depthlab writes every field Harbor's model serialises (none left out, none of its own), in Harbor's order."""
    model, definition = WRITTEN[record]
    harbor = harbor_schemas["models"][model][definition]
    assert [field.encode_name for field in msgspec.structs.fields(record)] == harbor, (model, definition)


def test_task_id_decodes_the_names_of_harbors_three_task_ids(harbor_schemas):
    models = harbor_schemas["models"]["TrialResult"]
    harbor = set(models["LocalTaskId"]) | set(models["GitTaskId"]) | set(models["PackageTaskId"])
    assert harbor - set(TASK_ID_LEFT_OUT) == _ours(hm.TaskId)


def test_error_policy_is_harbors_name_by_name(harbor_schemas):
    ours = {name: [p.should_retry, p.should_grade, p.has_valid_reward] for name, p in hm.ERROR_POLICIES.items()}
    assert ours == harbor_schemas["policies"]
    unknown = hm.UNKNOWN_ERROR_POLICY
    assert [unknown.should_retry, unknown.should_grade, unknown.has_valid_reward] == harbor_schemas["unknown_policy"]


def test_the_current_task_schema_version_is_harbors_default(harbor_schemas):
    assert harbor_schemas["default_version"] == hm.CURRENT_TASK_SCHEMA
    assert hm.TaskConfig().version() == harbor_schemas["default_version"]


def test_the_enumerations_are_harbors(harbor_schemas):
    defs = harbor_schemas["task"]["$defs"]
    assert set(hm.NETWORK_MODES) == set(defs["NetworkMode"]["enum"])
    assert set(hm.TASK_OS) == set(defs["TaskOS"]["enum"])
    assert set(hm.VERIFIER_MODES) == set(defs["VerifierEnvironmentMode"]["enum"])
    assert set(hm.REWARD_STRATEGIES) == set(defs["MultiStepRewardStrategy"]["enum"])


# ------------------------------------------------------------------------ Harbor judges depthlab's files


def test_harbor_accepts_the_simulators_multi_step_tasks_and_runs(harbor_check, tmp_path):
    summary = write_runs(tmp_path / "sim", seed=3, scale=0.005, public_attempts=1, segments_as="steps")
    tasks = sorted(path.parent for path in (summary.out_dir / "tasks").rglob("task.toml"))
    jobs = sorted(path for path in (summary.out_dir / "jobs").glob("*/*") if (path / "config.json").is_file())
    assert tasks
    assert jobs
    errors = harbor_check([*(("task", task) for task in tasks[::3]), *jobs[::7]])
    assert sum(Path(path).name == "result.json" for path in errors) > 5
    assert {path: error for path, error in errors.items() if error} == {}


def test_harbor_accepts_the_runners_job_files_and_a_trial_with_its_exception(harbor_check, tmp_path):
    """The runner's JobDir (config.json, result.json rewritten from its trials) and a trial shaped as the runner
    writes one (an exception with Harbor's policy beside it, reward_valid), without Docker."""
    from depthlab.runner import OracleAgent
    from depthlab.runner.output import JobDir
    from depthlab.runner.scheduler import job_config

    job = JobDir(tmp_path / "jobs", "runner-job", job_config(OracleAgent()))
    name = hw.trial_name("t")
    agent = hw.agent_config("oracle", None, OracleAgent().config_kwargs(), override_timeout_sec=30.0)
    config = hw.trial_config(hw.task_config(tmp_path / "tasks" / "t", "suite"), name, job.path, agent, job_id=job.id)
    error = hw.exception_info("VerifierTimeoutError", "slow", "Traceback", "2026-01-01T00:00:00.000001")
    result = hw.trial_result(
        config,
        result_id="00000000-0000-4000-8000-000000000002",
        task_name="t",
        task_path=tmp_path / "tasks" / "t",
        trial_dir=job.path / name,
        source="suite",
        task_checksum="0" * 64,
        agent=hw.agent_info("oracle", "1", None),
        agent_result=hw.agent_result(metadata={"n_episodes": 1}),
        rewards={"reward": 0.0},
        exception=error,
        started_at=hw.utc_now(),
        finished_at=hw.utc_now(),
        phases={"agent_execution": hw.phase(hw.utc_now(), hw.utc_now())},
    )
    assert result.reward_valid is False  # Harbor's rule: a verifier timeout's reward is not valid
    hw.write_json(job.path / name / "config.json", config)
    hw.write_json(job.path / name / "result.json", result)
    job.update_result(finished=True)
    kinds = [("job_config", job.path / "config.json"), ("job_result", job.path / "result.json")]
    kinds += [("trial_config", job.path / name / "config.json"), ("trial_result", job.path / name / "result.json")]
    assert harbor_check(kinds) == {str(path): None for _, path in kinds}
    written = json.loads((job.path / "result.json").read_text())
    assert written["stats"]["n_errored_trials"] == 1
    assert written["finished_at"]


def _stats_trial(job: Path, task: str, attempt: int, rewards, exception: str | None = None, steps: bool = False):
    """One trial of a job whose stats are compared with Harbor's, written as the runner writes one."""
    name = f"{task}__{attempt}"
    agent = hw.agent_config("terminus-2", "p/m", hw.cap_kwargs(3))
    ids = f"00000000-0000-4000-8000-{sum(map(ord, name)):012d}"
    config = hw.trial_config(hw.task_config(f"tasks/{task}", "suite"), name, job, agent, job_id=ids)
    error = None if exception is None else hw.exception_info(exception, "m", "tb", "2026-01-01T00:00:00")
    step_records = None
    usage = hw.agent_result(5, 1, 7, 0.25, {"n_episodes": 2})
    if steps:
        step_records = [hw.step_result("one", agent_result=usage, rewards=rewards, exception=error)]
        error, usage = None, None
    result = hw.trial_result(
        config, result_id=ids, task_name=task, task_path=f"tasks/{task}", trial_dir=job / name,
        source="suite", task_checksum="c", agent=hw.agent_info("terminus-2", "2", "p/m"), agent_result=usage,
        rewards=rewards, exception=error, started_at="2026-01-01T00:00:00Z", finished_at="2026-01-01T00:01:00Z",
        phases={}, step_results=step_records,
    )  # fmt: skip
    hw.write_json(job / name / "result.json", result)
    return result


def test_job_stats_are_harbors_on_the_same_trials(harbor_entries, tmp_path):
    """A job's stats count as Harbor's ``Job`` counts them (issue 43): trials whose reward is valid, every recorded
    exception (a step's too), the mean over the counted trials, pass@k, token totals over steps."""
    job = tmp_path / "job"
    trials = [
        _stats_trial(job, "a", 1, {"reward": 1.0}),
        _stats_trial(job, "a", 2, {"reward": 0.0}, "AgentTimeoutError"),  # valid: counted
        _stats_trial(job, "b", 1, {"reward": 1.0}, "VerifierTimeoutError"),  # invalid: not counted
        _stats_trial(job, "b", 2, None, "RewardFileNotFoundError"),  # no reward
        _stats_trial(job, "c", 1, {"reward": 1.0}, "CancelledError", steps=True),  # a step's exception
        _stats_trial(job, "c", 2, {"reward": 0.0}, steps=True),
    ]
    (entry,) = harbor_entries([("job_stats", job)])
    assert entry["error"] is None
    harbors = entry["stats"]
    written = hw.as_object(hw.job_result("j", trials, started_at="s", updated_at="u", finished_at="f").stats)
    assert written == harbors
    read = [msgspec.json.decode((job / t.trial_name / "result.json").read_bytes(), type=hm.TrialResult) for t in trials]
    assert hw.as_object(hw.job_result("j", read, started_at="s", updated_at="u", finished_at="f").stats) == harbors
    assert (harbors["n_errored_trials"], harbors["n_cancelled_trials"]) == (4, 1)  # the check can fail
    assert harbors["evals"]["terminus-2__m__suite"]["n_trials"] == 3  # a__1, a__2, c__2


def test_a_nan_reward_is_written_as_harbor_writes_it(harbor_python):
    """A NaN reward held by a record is written ``null``, as Harbor's pydantic writes it (issue 43: the same bytes;
    neither engine's verifier lets one through: tests/engines/test_harbor_fidelity.py)."""
    side = "from harbor.models.verifier.result import VerifierResult as V; print(V(rewards={'reward': float('nan')})"
    harbors = subprocess.run(
        [str(harbor_python), "-c", side + ".model_dump_json())"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert harbors == '{"rewards":{"reward":null}}'
    assert hw.encode(hr.VerifierResultRecord(rewards={"reward": float("nan")})).decode() == harbors


# ------------------------------------------------------------------------ depthlab decodes Harbor's files


def test_the_model_decodes_every_harbor_file_of_the_samples(samples):
    counts = decode_harbor_files(samples)
    assert counts["trial_result"] >= 3
    assert counts["task"] >= 10  # the cookbook's recipes among them


def test_the_model_decodes_every_trial_of_the_tmax_job(shared_data):
    job = shared_data / "tb2-jobs" / "tmax-27b"
    if not job.is_dir():
        pytest.skip(f"the TMax job is not at {job}")
    counts = decode_harbor_files(job)
    assert counts["trial_result"] == 445
    assert counts["job_result"] == 1
