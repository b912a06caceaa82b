"""Each field of a Harbor file is declared once: in io.harbor_records; the readers of io.harbor_models decode a subset.

The readers stay lean for the loaders' speed, so they are separate structs; this test holds every reader to the
record of the file it reads (same encoded names, none of its own; and types and optionality: every value the
record's field can hold decodes into the reader's field, a narrower one named with why), and every record the
writer builds decodes through the readers with the values it was built with.
"""

from __future__ import annotations

import inspect

import msgspec
import pytest

from depthlab.io import harbor_models as hm
from depthlab.io import harbor_records as hr
from depthlab.io import harbor_writer as hw

#: Each reader of harbor_models and the record of the file (part) it reads.
READS: dict[type, type] = {
    hm.TrialResultBase: hr.TrialResultRecord,
    hm.TrialResult: hr.TrialResultRecord,
    hm.LenientTrialResult: hr.TrialResultRecord,
    hm.JudgedTrialResult: hr.TrialResultRecord,
    hm.ConfigOnly: hr.TrialResultRecord,
    hm.StepResult: hr.StepResultRecord,
    hm.TaskId: hr.LocalTaskIdRecord,
    hm.AgentInfo: hr.AgentInfoRecord,
    hm.ModelInfo: hr.ModelInfoRecord,
    hm.AgentResult: hr.AgentContextRecord,
    hm.TypedAgentResult: hr.AgentContextRecord,
    hm.StepAgentResult: hr.AgentContextRecord,
    hm.VerifierResult: hr.VerifierResultRecord,
    hm.ExceptionInfo: hr.ExceptionInfoRecord,
    hm.Phase: hr.TimingInfoRecord,
    hm.TypedPhase: hr.TimingInfoRecord,
    hm.TrialConfig: hr.TrialConfigRecord,
    hm.AgentConfig: hr.AgentConfigRecord,
    hm.JobConfig: hr.JobConfigRecord,
    hm.DatasetConfig: hr.DatasetConfigRecord,
    hm.JobResult: hr.JobResultRecord,
}
#: Fields a reader decodes that its record does not write, and why.
NOT_WRITTEN: dict[type, dict[str, str]] = {
    hm.TrialResultBase: {"n_total_trials": "a job-level result.json's key: it tells a job's result from a trial's"},
    hm.TrialResult: {"n_total_trials": "as TrialResultBase"},
    hm.LenientTrialResult: {"n_total_trials": "as TrialResultBase"},
    hm.JudgedTrialResult: {"n_total_trials": "as TrialResultBase"},
    hm.TaskId: {
        name: "a git or package task's id: depthlab writes local tasks only" for name in ("name", "org", "git_url")
    },
}
#: Readers of files depthlab does not write (task.toml is written as TOML text; locks are Harbor's own), and the
#: structs the records share with the readers (the error policy).
NOT_A_WRITTEN_FILE = {
    hm.TaskConfig,
    hm.PackageInfo,
    hm.AgentSection,
    hm.EnvironmentSection,
    hm.VerifierSection,
    hm.StepConfig,
    hm.SolutionSection,
    hm.TrialLock,
    hm.TaskLock,
    hm.InstructionLock,
    hm.JobLock,
    hm.HarborInfo,
    hm.HealthcheckConfig,  # a task.toml table
    hm.Usage,  # an agent's agent/usage.json
    hm.Metadata,  # the keys of agent_result.metadata, a free object in Harbor's model
    hm.ErrorPolicy,  # shared: ExceptionInfoRecord.policy is this struct
    hm.ErrorPolicyOverride,  # shared: the records' override_error_policy and policy_override hold it
}


def _names(struct: type) -> set[str]:
    return {field.encode_name for field in msgspec.structs.fields(struct)}


@pytest.mark.parametrize("reader", list(READS), ids=lambda struct: struct.__name__)
def test_every_field_a_reader_decodes_is_its_records(reader):
    record = READS[reader]
    left = NOT_WRITTEN.get(reader, {})
    assert set(left) <= _names(reader), f"{reader.__name__}: fields listed as not written that it does not decode"
    assert _names(reader) - set(left) <= _names(record), (reader.__name__, _names(reader) - _names(record))
    assert not set(left) & _names(record), f"{reader.__name__}: listed as not written, yet {record.__name__} has it"


def test_every_reader_of_the_model_is_paired_or_named():
    structs = {
        value
        for value in vars(hm).values()
        if inspect.isclass(value) and issubclass(value, msgspec.Struct) and value.__module__ == hm.__name__
    }
    assert structs - set(READS) - NOT_A_WRITTEN_FILE == set(), "pair a new reader with its record (or name it)"
    assert set(READS) <= structs
    assert set(READS.values()) <= set(hr.RECORDS)


def _trial(steps: bool, exception: str | None) -> hr.TrialResultRecord:
    agent = hw.agent_config("terminus-2", "p/m", hw.cap_kwargs(3))
    config = hw.trial_config(hw.task_config("tasks/t", "d"), "t__abcdefg", "jobs/j", agent, job_id="j-1")
    error = None if exception is None else hw.exception_info(exception, "m", "tb", "2026-01-01T00:00:00")
    records = None
    rewards: dict[str, float] | None = {"reward": 1.0, "style": 0.5}
    if steps:
        records = [
            hw.step_result(
                "one",
                agent_result=hw.agent_result(5, 0, 7, 0.1, {"n_episodes": 2}),
                rewards={"reward": 1.0},
                agent_execution=hw.phase("2026-01-01T00:00:00Z", "2026-01-01T00:00:09Z"),
                exception=error,
            )
        ]
        error, rewards = None, hw.multi_step_rewards([{"reward": 1.0}])
    return hw.trial_result(
        config,
        result_id="r-1",
        task_name="t",
        task_path="tasks/t",
        trial_dir="/jobs/j/t__abcdefg",
        source="d",
        task_checksum="c",
        agent=hw.agent_info("terminus-2", "2", "p/m"),
        agent_result=None if steps else hw.agent_result(5, 0, 7, 0.1, {"n_episodes": 3}),
        rewards=rewards,
        exception=error,
        started_at="2026-01-01T00:00:00.000000Z",
        finished_at="2026-01-01T00:01:00.000000Z",
        phases={"agent_execution": None if steps else hw.phase("2026-01-01T00:00:01Z", "2026-01-01T00:00:31Z")},
        step_results=records,
    )


@pytest.mark.parametrize("steps", [False, True], ids=["single-step", "multi-step"])
@pytest.mark.parametrize("exception", [None, "AgentTimeoutError", "VerifierTimeoutError"])
def test_a_written_result_decodes_through_every_reader_with_its_values(steps, exception):
    record = _trial(steps, exception)
    data = hw.encode(record)
    assert msgspec.json.decode(data, type=hr.TrialResultRecord) == record  # the record reads back whole
    for reader in (hm.TrialResult, hm.LenientTrialResult, hm.JudgedTrialResult):
        read = msgspec.json.decode(data, type=reader)
        decoded = hm.decode_steps(read.step_results) if read.multi_step() else []
        assert read.rewards() == (record.verifier_result.rewards if record.verifier_result else None)
        assert read.reward_valid(decoded) is record.reward_valid
        assert read.reward_valid_ is record.reward_valid  # what Harbor's rule gives is what is recorded
        assert read.first_exception_type(decoded) == exception
        assert read.config is not None
        assert read.config.agent is not None
        assert read.config.agent.kwargs == {"max_turns": 3, "stated_cap": 3}
    assert record.reward_valid is (exception != "VerifierTimeoutError")


def test_a_written_job_config_and_result_decode_through_the_readers():
    agents = [hw.agent_config("a", "p/m"), hw.agent_config("b", "p/n")]
    config = hw.job_config("j", "jobs", agents, datasets=hw.dataset_configs([("t", "x"), ("t", "y")]), n_attempts=3)
    read = msgspec.json.decode(hw.encode(config), type=hm.JobConfig)
    assert (read.job_name, read.n_attempts, read.n_tasks(), read.n_trials()) == ("j", 3, 2, 12)
    result = hw.job_result("id-1", [_trial(False, None)], started_at="s", updated_at="u", finished_at="f")
    job = msgspec.json.decode(hw.encode(result), type=hm.JobResult)
    assert (job.id, job.started_at, job.finished_at, job.n_total_trials, job.trial_results) == (
        "id-1",
        "s",
        "f",
        1,
        None,
    )
    assert result.stats.evals["terminus-2__m__d"].n_trials == 1


def test_job_stats_from_records_and_from_results_read_back_agree():
    trials = [_trial(False, None), _trial(True, "AgentTimeoutError"), _trial(False, "VerifierTimeoutError")]
    written = hw.job_result("j", trials, started_at="s", updated_at="u", finished_at=None)
    read = [msgspec.json.decode(hw.encode(trial), type=hm.TrialResult) for trial in trials]
    assert hw.job_result("j", read, started_at="s", updated_at="u", finished_at=None) == written
    # Harbor's counting: a multi-step trial's steps' tokens and exceptions count (issue 43)
    assert (written.stats.n_input_tokens, written.stats.n_errored_trials) == (15, 2)


def test_fields_harbor_leaves_out_when_empty_are_left_out():
    agent = hw.as_object(hw.agent_config("a", None))
    assert {"env", "include_logs", "exclude_logs"}.isdisjoint(agent)
    assert (agent["kwargs"], agent["skills"]) == ({}, [])
    verifier = hw.as_object(hw.verifier_config(30.0))
    assert verifier == {"override_timeout_sec": 30.0, "max_timeout_sec": None, "disable": False}
    info = hw.as_object(hw.exception_info("AgentTimeoutError", "m", "tb", "t"))
    assert "policy_override" not in info
    assert info["policy"] == {"should_retry": False, "should_grade": True, "has_valid_reward": True}


@pytest.mark.parametrize("steps", [False, True], ids=["single-step", "multi-step"])
def test_an_exception_recorded_in_a_result_recomputes_reward_valid(steps, tmp_path):
    """io.harbor.record_exception: the one rewrite of a trial's result (the engines' verdicts, the checks' disk
    stop): through the record, ``reward_valid`` recomputed by Harbor's rule, Harbor's own result kept beside."""
    from depthlab.io.harbor import read_trial_result, record_exception

    path, kept = tmp_path / "result.json", tmp_path / "harbor-result.json"
    written = _trial(steps, "AgentTimeoutError")
    assert written.reward_valid is True
    hw.write_json(path, written)
    timeout = hw.exception_info("VerifierTimeoutError", "slow", "", "2026-01-01T00:00:00")
    assert record_exception(read_trial_result(path), timeout, keep_original=kept) is False
    read = read_trial_result(path)
    assert not isinstance(read, str)
    assert (read.result.reward_valid_, read.result.exception_info.kind()) == (False, "VerifierTimeoutError")
    assert msgspec.json.decode(kept.read_bytes(), type=hr.TrialResultRecord) == written
    rewritten = msgspec.json.decode(path.read_bytes(), type=hr.TrialResultRecord)
    assert msgspec.structs.replace(rewritten, exception_info=written.exception_info, reward_valid=True) == written
    agent_ended = hw.exception_info("AgentTimeoutError", "late", "", "2026-01-01T00:00:00")
    assert record_exception(read, agent_ended) is True  # valid again: recomputed, not kept
    assert record_exception(read_trial_result(path), agent_ended, drop_rewards=True) is False  # no reward: invalid
    assert msgspec.json.decode(path.read_bytes(), type=hr.TrialResultRecord).verifier_result is None


def test_an_exception_recorded_in_an_older_harbors_result_keeps_its_keys(tmp_path):
    """A result not of Harbor 0.26's full shape (an older Harbor: no policy, a key of its own) keeps every key,
    its exception and reward_valid changed."""
    import json

    from depthlab.io.harbor import read_trial_result, record_exception

    path = tmp_path / "result.json"
    older = {"task_name": "t", "verifier_result": {"rewards": {"reward": 1.0}}, "custom": [1], "reward_valid": True}
    path.write_text(json.dumps(older))
    timeout = hw.exception_info("VerifierTimeoutError", "slow", "", "2026-01-01T00:00:00")
    assert record_exception(read_trial_result(path), timeout) is False
    assert json.loads(path.read_text()) == {**older, "exception_info": hw.as_object(timeout), "reward_valid": False}


# ------------------------------------------------------------------------ types and optionality, not names only

#: Reader fields whose type is narrower than their record's, and why that is sound (each checked below by decoding).
_TYPED_TIME = (
    "the typed pass's time: a value that is no ISO time sends the file to LenientTrialResult, which takes any value "
    "field by field (io.harbor.decode_result); the writer's times decode as times "
    "(test_a_written_result_decodes_through_every_reader_with_its_values)"
)
NARROWER: dict[tuple[type, str], str] = {
    (hm.TrialResult, "started_at"): _TYPED_TIME,
    (hm.TrialResult, "finished_at"): _TYPED_TIME,
    (hm.TypedPhase, "started_at"): _TYPED_TIME,
    (hm.TypedPhase, "finished_at"): _TYPED_TIME,
}


def _members(info: msgspec.inspect.Type) -> list[msgspec.inspect.Type]:
    members = info.types if isinstance(info, msgspec.inspect.UnionType) else (info,)
    return [member for member in members if getattr(member, "cls", None) is not msgspec.UnsetType]


def _accepts(reader: msgspec.inspect.Type, record: msgspec.inspect.Type) -> bool:
    """Whether every value ``record``'s type holds decodes into ``reader``'s type (a struct: the reader READS pairs
    with that record, itself checked field by field)."""
    i = msgspec.inspect
    if isinstance(reader, i.AnyType | i.RawType):
        return True
    readers = _members(reader)
    return all(any(_accepts_one(one, theirs) for one in readers) for theirs in _members(record))


def _accepts_one(reader: msgspec.inspect.Type, record: msgspec.inspect.Type) -> bool:
    i = msgspec.inspect
    if isinstance(reader, i.AnyType | i.RawType):
        return True
    if isinstance(record, i.LiteralType):
        return all(_accepts_one(reader, i.type_info(type(value))) for value in record.values)
    if isinstance(reader, i.DictType) and isinstance(record, i.StructType):  # a struct is written as an object
        return isinstance(reader.key_type, i.StrType) and isinstance(reader.value_type, i.AnyType)
    if isinstance(reader, i.StructType) and isinstance(record, i.DictType):  # a free object read by the keys it has
        return isinstance(record.key_type, i.StrType) and all(
            not field.required and _accepts(field.type, record.value_type) for field in reader.fields
        )
    if isinstance(reader, i.StructType) or isinstance(record, i.StructType):
        return (
            isinstance(reader, i.StructType)
            and isinstance(record, i.StructType)
            and (READS.get(reader.cls) is record.cls or reader.cls is record.cls)
        )
    if isinstance(reader, i.DictType) and isinstance(record, i.DictType):
        return _accepts(reader.key_type, record.key_type) and _accepts(reader.value_type, record.value_type)
    if isinstance(reader, i.ListType) and isinstance(record, i.ListType):
        return _accepts(reader.item_type, record.item_type)
    if isinstance(reader, i.FloatType) and isinstance(record, i.IntType):
        return True
    return type(reader) is type(record) and getattr(reader, "__dict__", None) == getattr(record, "__dict__", None)


@pytest.mark.parametrize("reader", list(READS), ids=lambda struct: struct.__name__)
def test_every_reader_field_takes_every_value_its_record_writes(reader):
    """Types and optionality, not names only (issue 43): every value the record's field can hold (null included
    where it is optional) decodes into the reader's field, so the lean readers are derived from the records in
    fact, not by name; a narrower reader field is named in NARROWER with why."""
    record = READS[reader]
    theirs = {field.encode_name: field for field in msgspec.structs.fields(record)}
    record_info = {field.encode_name: field.type for field in msgspec.inspect.type_info(record).fields}
    narrower = []
    for field in msgspec.inspect.type_info(reader).fields:
        if field.encode_name not in theirs:
            continue  # NOT_WRITTEN
        if not _accepts(field.type, record_info[field.encode_name]):
            narrower.append(field.name)
    named = [name for kind, name in NARROWER if kind is reader]
    assert sorted(narrower) == sorted(named), (
        f"{reader.__name__} cannot take what {record.__name__} writes in {narrower}"
    )
