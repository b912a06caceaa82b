"""Harbor trial and job directories: the real TMax job and hand-made variants of the format."""

from __future__ import annotations

import json
from datetime import datetime

import polars as pl
import pytest
from io_helpers import TMAX_TRIALS, read_json, write_trial

from depthlab import schema
from depthlab.io import read_trials


def _by_trial(load) -> dict[str, dict]:
    return {row["trial"]: row for row in load.trials.iter_rows(named=True)}


def test_real_tmax_job_rows_match_their_files(tmax_job):
    load = read_trials(tmax_job, cache=False)
    schema.check(load.trials, "trials")
    assert load.n_seen == 3
    assert not load.rejected
    rows = _by_trial(load)
    assert set(rows) == set(TMAX_TRIALS)
    for name in TMAX_TRIALS:
        result = read_json(tmax_job / name / "result.json")
        row = rows[name]
        assert row["task"] == result["task_name"]
        assert row["model"] == result["config"]["agent"]["model_name"]
        assert row["agent"] == result["agent_info"]["name"]
        assert row["job"] == "swerl-qwen36-27b-tmax-step160-vanillux2-daytona-tblite"
        assert row["dataset"] == result["source"]
        assert row["reward"] == result["verifier_result"]["rewards"]["reward"]
        assert json.loads(row["rewards"]) == result["verifier_result"]["rewards"]
        assert row["task_checksum"] == result["task_checksum"]
        assert row["n_input_tokens"] == result["agent_result"]["n_input_tokens"]
        assert row["started_at"] == datetime.fromisoformat(result["started_at"])
        phase = result["agent_execution"]
        expected_seconds = (
            datetime.fromisoformat(phase["finished_at"]) - datetime.fromisoformat(phase["started_at"])
        ).total_seconds()
        assert row["agent_seconds"] == pytest.approx(expected_seconds)
        # custom agent: chat-list trajectory, turn limit from its usage.json
        messages = read_json(tmax_job / name / "agent" / "trajectory.json")
        assert row["n_turns"] == sum(message["role"] == "assistant" for message in messages)
        assert row["turn_limit"] == read_json(tmax_job / name / "agent" / "usage.json")["max_steps"]
        assert row["cap"] is None  # a harness limit is not a stated cap


def test_agent_timeout_with_reward_one_passes_under_leaderboard_rule(tmax_job):
    row = _by_trial(read_trials(tmax_job, cache=False))["hf-model-inference__M3XAghy"]
    assert row["exception"] == "AgentTimeoutError"
    assert (row["reward"], row["status"], row["passed"]) == (1.0, "pass", True)


def test_rewards_and_exceptions_agree_with_the_job_level_result(tmax_job):
    """The job's own reward_stats/exception_stats are an independent record of each trial."""
    rows = _by_trial(read_trials(tmax_job, cache=False))
    evals = next(iter(read_json(tmax_job / "result.json")["stats"]["evals"].values()))
    for name, row in rows.items():
        assert name in evals["reward_stats"]["reward"][str(row["reward"])]
        if row["exception"]:
            assert name in evals["exception_stats"][row["exception"]]


def test_turns_agree_with_the_public_results_table(tmax_job, shared_data):
    """shared/data/tb2_public_results.csv was tabulated independently from the same job."""
    public = pl.read_csv(shared_data / "tb2_public_results.csv").filter(pl.col("trial").is_in(list(TMAX_TRIALS)))
    public = public.filter(pl.col("submission") == "vanillux2-agent__tmax-27b")
    rows = _by_trial(read_trials(tmax_job, cache=False))
    assert public.height == 3
    for record in public.iter_rows(named=True):
        row = rows[record["trial"]]
        assert (row["n_turns"], row["turn_limit"], row["reward"]) == (
            record["n_turns"],
            record["max_steps"],
            record["reward"],
        )


def test_status_rules_keep_invalid_apart(tmp_path):
    job = tmp_path / "job"
    write_trial(job / "a__1", verifier_result=None, exception_info={"exception_type": "DaytonaError"})
    write_trial(job / "b__1", verifier_result=None, exception_info={"exception_type": "VerifierTimeoutError"})
    write_trial(job / "c__1", verifier_result={"rewards": {"reward": 0.0}})
    leaderboard = _by_trial(read_trials(job, cache=False))
    # a verifier timeout: Harbor's error policy gives it no valid reward (issue 36; it counted as a fail)
    assert [leaderboard[name]["status"] for name in ("a__1", "b__1", "c__1")] == ["invalid", "invalid", "fail"]
    assert leaderboard["a__1"]["passed"] is None
    every = _by_trial(read_trials(job, status_rule="all", cache=False))
    assert every["a__1"]["status"] == "fail"
    assert every["a__1"]["passed"] is False


def test_identity_variants_task_id_shapes_prefixes_and_model_info(tmp_path):
    job = tmp_path / "job"
    write_trial(job / "t1__x", task_name=..., task_id={"path": "tasks/alpha/"})
    write_trial(
        job / "t2__x",
        task_name=...,
        task_id={"git_url": "https://example.org/r.git", "git_commit_id": "abc", "path": "beta"},
    )
    write_trial(job / "t3__x", task_name=..., task_id={"org": "terminal-bench", "name": "gamma", "ref": "1"})
    write_trial(job / "t4__x", task_name="terminal-bench/delta", agent_info={"name": "a", "model_info": None})
    write_trial(
        job / "t5__x",
        config={"agent": {"name": None, "import_path": "pkg:Agent", "kwargs": {}}},
        agent_info={"name": None, "model_info": {"name": "m", "provider": "p"}},
    )
    rows = _by_trial(read_trials(job, cache=False))
    assert [rows[f"t{i}__x"]["task"] for i in range(1, 5)] == ["alpha", "beta", "gamma", "delta"]
    assert rows["t4__x"]["model"] == "openai/gpt-5"  # model_info null: config.agent.model_name
    assert (rows["t5__x"]["model"], rows["t5__x"]["agent"]) == ("p/m", "pkg:Agent")


def test_multi_key_reward_json_is_kept_whole(tmp_path):
    segments = {"segment_1": 1.0, "segment_2": 1.0, "segment_3": 0.0}
    write_trial(tmp_path / "job" / "s__1", verifier_result={"rewards": segments})
    row = read_trials(tmp_path / "job", cache=False).trials.row(0, named=True)
    assert json.loads(row["rewards"]) == segments
    assert row["reward"] == pytest.approx(sum(segments.values()) / len(segments))
    assert row["status"] == "fail"  # partial credit is not a pass


def test_reward_files_are_read_when_the_result_has_no_verifier_key(tmp_path):
    text_trial = write_trial(tmp_path / "job" / "txt__1", verifier_result=...)
    (text_trial / "verifier").mkdir()
    (text_trial / "verifier" / "reward.txt").write_text("1\n")
    json_trial = write_trial(tmp_path / "job" / "json__1", verifier_result=...)
    (json_trial / "verifier").mkdir()
    (json_trial / "verifier" / "reward.json").write_text(json.dumps({"reward": 0.0, "tests": 0.5}))
    rows = _by_trial(read_trials(tmp_path / "job", cache=False))
    assert rows["txt__1"]["reward"] == 1.0
    assert rows["txt__1"]["status"] == "pass"
    assert json.loads(rows["json__1"]["rewards"]) == {"reward": 0.0, "tests": 0.5}


@pytest.mark.parametrize("limit_key", ["max_turns", "max_episodes", "episodes", "max_steps"])
def test_terminus_episodes_turn_limit_and_hit_limit(tmp_path, limit_key):
    kwargs = {limit_key: 4}
    config = {"agent": {"name": "terminus-2", "model_name": "openai/gpt-5", "kwargs": kwargs}}
    write_trial(tmp_path / "job" / "hit__1", config=config, agent_result={"metadata": {"n_episodes": 4}})
    write_trial(tmp_path / "job" / "under__1", config=config, agent_result={"metadata": {"n_episodes": 2}})
    rows = _by_trial(read_trials(tmp_path / "job", cache=False))
    assert (rows["hit__1"]["n_turns"], rows["hit__1"]["turn_limit"], rows["hit__1"]["hit_limit"]) == (4, 4, True)
    assert rows["under__1"]["hit_limit"] is False
    assert rows["hit__1"]["cap"] is None


def test_cap_rules(tmp_path):
    stated = {"agent": {"name": "t", "model_name": "m", "kwargs": {"stated_cap": 5, "max_turns": 5}}}
    safety = {"agent": {"name": "t", "model_name": "m", "kwargs": {"max_episodes": 200}}}
    write_trial(tmp_path / "job" / "stated__1", config=stated)
    write_trial(tmp_path / "job" / "safety__1", config=safety)
    default = _by_trial(read_trials(tmp_path / "job", cache=False))
    assert (default["stated__1"]["cap"], default["safety__1"]["cap"]) == (5, None)
    assert default["safety__1"]["turn_limit"] == 200
    as_limit = _by_trial(read_trials(tmp_path / "job", cache=False, cap_rule="turn_limit"))
    assert as_limit["safety__1"]["cap"] == 200
    custom = _by_trial(read_trials(tmp_path / "job", cap_rule=lambda config: len(config["agent"]["kwargs"])))
    assert (custom["stated__1"]["cap"], custom["safety__1"]["cap"]) == (2, 1)
    with pytest.raises(ValueError, match="'cap_rule' parameter of read_trials"):
        read_trials(tmp_path / "job", cap_rule="sometimes")


def test_attempt_follows_start_order_within_task_agent_model_cap(tmp_path):
    starts = {"late__1": "2026-01-01T03:00:00Z", "early__1": "2026-01-01T01:00:00Z", "mid__1": "2026-01-01T02:00:00"}
    for name, start in starts.items():
        write_trial(tmp_path / "job" / name, started_at=start)
    write_trial(tmp_path / "job" / "other__1", task_name="other-task")
    rows = _by_trial(read_trials(tmp_path / "job", cache=False))
    assert [rows[name]["attempt"] for name in ("early__1", "mid__1", "late__1")] == [1, 2, 3]
    assert rows["other__1"]["attempt"] == 1


def test_embedded_trial_results_are_not_double_counted(tmp_path):
    job = tmp_path / "job"
    on_disk = write_trial(job / "disk__1")
    embedded = read_json(on_disk / "result.json")
    only_in_job = dict(embedded, trial_name="gone__1", task_name="gone-task")
    job_result = {"id": "j", "n_total_trials": 2, "stats": {"n_trials": 2, "n_errors": 0, "evals": {}}}
    job_result["trial_results"] = [embedded, only_in_job]
    (job / "result.json").write_text(json.dumps(job_result))
    (job / "config.json").write_text(json.dumps({"job_name": "job"}))
    load = read_trials(job, cache=False)
    assert sorted(load.trials["trial"]) == ["disk__1", "gone__1"]
    assert load.n_seen == 2


def test_dataset_tag_default_and_explicit(tmp_path):
    write_trial(tmp_path / "runs" / "job" / "a__1", source=None)
    write_trial(tmp_path / "runs" / "job" / "b__1", source="tb2")
    rows = _by_trial(read_trials(tmp_path / "runs", cache=False))
    assert (rows["a__1"]["dataset"], rows["b__1"]["dataset"]) == ("runs", "tb2")
    tagged = read_trials(tmp_path / "runs", dataset="mine", cache=False).trials
    assert tagged["dataset"].unique().to_list() == ["mine"]
