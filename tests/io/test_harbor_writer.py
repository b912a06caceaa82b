"""The one Harbor writer: what it writes, load_trials reads back field for field."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from depthlab import schema
from depthlab.io import harbor_writer as hw
from depthlab.io import load_trials, read_steps
from depthlab.io.status import stated_cap

START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
# (task, cap, rewards, exception, turns, turns in metadata?)
TRIALS = [
    ("org/chain-three", 3, {"reward": 1.0}, None, 3, True),
    ("chain-three", 2, {"reward": 0.0}, "AgentTimeoutError", 2, False),  # turns from the trajectory
    ("segments", 5, {"reward": 0.0, "segment_1": 1.0, "segment_2": 0.0}, None, 4, True),
    ("broken-env", 5, None, "EnvironmentStartTimeoutError", 0, False),
]


def _write_job(jobs_dir: Path, model: str) -> list[dict]:
    """A job of four trials written with the writer alone; returns what each trial should load as."""
    job_dir = jobs_dir / "roundtrip-job"
    agent = hw.agent_config("depthlab-terminus", model, hw.cap_kwargs(3))
    hw.write_json(job_dir / "config.json", hw.job_config("roundtrip-job", jobs_dir, [agent]))
    expected, results = [], []
    for index, (task, cap, rewards, exception, turns, in_metadata) in enumerate(TRIALS):
        name = hw.trial_name(task)
        trial_dir = job_dir / name
        agent = hw.agent_config("depthlab-terminus", model, hw.cap_kwargs(cap, prompt_version="v1"))
        config = hw.trial_config(hw.task_config(f"tasks/{task}", "suite"), name, job_dir, agent, job_id="j-1")
        started = START + timedelta(minutes=10 * index)
        agent_start, agent_end = started + timedelta(seconds=5), started + timedelta(seconds=5 + 7 * turns)
        finished = agent_end + timedelta(seconds=3)
        steps = [hw.atif_step(1, hw.iso_time(agent_start), "user", "Do it. You have at most turns.")]
        steps += [
            hw.atif_step(
                turn + 2,
                hw.iso_time(agent_start + timedelta(seconds=7 * turn)),
                "agent",
                f"Plan: step {turn + 1}",
                model_name=model,
                tool_calls=[{"tool_call_id": f"c{turn}", "function_name": "bash_command", "arguments": {}}],
                metrics={"prompt_tokens": 100, "completion_tokens": 10, "cached_tokens": None},
            )
            for turn in range(turns)
        ]
        if turns:
            trajectory = hw.trajectory(
                "s-1", steps, agent_name="depthlab-terminus", agent_version="1", model_name=model
            )
            hw.write_json(trial_dir / "agent" / "trajectory.json", trajectory)
        if rewards is not None:
            reward_name, text = hw.reward_file(rewards)
            hw.write_text(trial_dir / "verifier" / reward_name, text)
        error = None if exception is None else hw.exception_info(exception, "it failed", "Traceback", "2026-03-01")
        phases = {"environment_setup": hw.phase(hw.iso_time(started), hw.iso_time(agent_start))}
        if turns:
            phases["agent_execution"] = hw.phase(hw.iso_time(agent_start), hw.iso_time(agent_end))
        usage = hw.agent_result(100 * turns, 0, 10 * turns, 0.01, {"n_episodes": turns} if in_metadata else None)
        result = hw.trial_result(
            config,
            result_id=f"r-{index}",
            task_name=task,
            task_path=f"tasks/{task}",
            trial_dir=trial_dir,
            source="suite",
            task_checksum=f"sum-{index}",
            agent=hw.agent_info("depthlab-terminus", "1", model),
            agent_result=usage,
            rewards=rewards,
            exception=error,
            started_at=hw.iso_time(started),
            finished_at=hw.iso_time(finished),
            phases=phases,
        )
        hw.write_json(trial_dir / "result.json", result)
        results.append(result)
        expected.append(
            {
                "trial": name,
                "task": task.rsplit("/", 1)[-1],
                "cap": cap,
                "turn_limit": cap,
                "reward": None if rewards is None else rewards["reward"],
                "rewards": rewards,
                "exception": exception,
                "n_turns": turns if turns else None,
                "started_at": started,
                "finished_at": finished,
                "agent_seconds": (agent_end - agent_start).total_seconds() if turns else None,
                "task_checksum": f"sum-{index}",
                "n_input_tokens": 100 * turns,
            }
        )
    now = hw.job_time(START + timedelta(hours=1))
    hw.write_json(
        job_dir / "result.json", hw.job_result("j-1", results, started_at=now, updated_at=now, finished_at=now)
    )
    return expected


def test_written_trials_load_back_field_for_field(tmp_path):
    expected = _write_job(tmp_path / "jobs", "provider/model-x")
    load = load_trials([tmp_path / "jobs"], cache=False, strict=True)
    schema.check(load, "trials")
    rows = {row["trial"]: row for row in load.iter_rows(named=True)}
    assert set(rows) == {entry["trial"] for entry in expected}
    for entry in expected:
        row = rows[entry["trial"]]
        assert row["agent"] == "depthlab-terminus"
        assert row["model"] == "provider/model-x"
        assert row["job"] == "roundtrip-job"
        assert row["dataset"] == "suite"
        for field in ("task", "cap", "turn_limit", "reward", "exception", "n_turns", "task_checksum", "n_input_tokens"):
            assert row[field] == entry[field], (entry["trial"], field)
        assert (None if row["rewards"] is None else json.loads(row["rewards"])) == entry["rewards"]
        for field in ("started_at", "finished_at"):
            assert row[field] == entry[field]
        if entry["agent_seconds"] is None:
            assert row["agent_seconds"] is None
        else:
            assert row["agent_seconds"] == pytest.approx(entry["agent_seconds"])
    statuses = {rows[entry["trial"]]["task"] + str(entry["cap"]): rows[entry["trial"]]["status"] for entry in expected}
    assert statuses == {"chain-three3": "pass", "chain-three2": "fail", "segments5": "fail", "broken-env5": "invalid"}


def test_written_trajectory_reads_back_as_steps(tmp_path):
    _write_job(tmp_path / "jobs", "provider/model-x")
    trial_dir = next(path.parent for path in (tmp_path / "jobs").glob("*/segments__*/result.json"))
    steps = read_steps(trial_dir)
    assert steps.height == 4  # one row per agent turn
    assert steps["message"].to_list() == [f"Plan: step {turn}" for turn in range(1, 5)]


def test_job_result_counts_and_eval_key(tmp_path):
    _write_job(tmp_path / "jobs", "provider/model-x")
    result = json.loads((tmp_path / "jobs" / "roundtrip-job" / "result.json").read_text())
    assert result["n_total_trials"] == result["stats"]["n_completed_trials"] == 4
    assert result["stats"]["n_errored_trials"] == 2
    # Harbor's key: agent, model without provider, source
    ((key, entry),) = result["stats"]["evals"].items()
    assert key == "depthlab-terminus__model-x__suite"
    # Harbor's Mean: over the trials whose reward counts (three of four), key by key when there are several
    assert entry["metrics"] == [{"reward": 1 / 3, "segment_1": 1 / 3, "segment_2": 0.0}]
    by_reward = {value: len(names) for value, names in entry["reward_stats"]["reward"].items()}
    assert by_reward == {"1.0": 1, "0.0": 2}
    assert entry["reward_stats"]["segment_1"] == {"1.0": [entry["reward_stats"]["segment_2"]["0.0"][0]]}
    assert set(entry["exception_stats"]) == {"AgentTimeoutError", "EnvironmentStartTimeoutError"}


def test_cap_key_is_the_one_the_reader_reads():
    config = {"agent": hw.as_object(hw.agent_config("a", "p/m", hw.cap_kwargs(7)))}
    assert stated_cap(config) == 7
    uncapped = hw.as_object(hw.agent_config("a", "p/m", hw.cap_kwargs(None, turn_limit=200)))
    assert stated_cap({"agent": uncapped}) is None
    assert hw.cap_kwargs(7)[hw.STATED_CAP_KEY] == 7


def test_a_cap_stated_through_extra_instructions_is_read_only_when_it_matches_max_turns():
    """How a Harbor run of a ``plan --harbor-configs`` job records its cap (terminus-2 takes no stated_cap)."""
    agent = hw.as_object(hw.agent_config("terminus-2", "p/m", {hw.TURN_LIMIT_KEY: 3}))
    assert stated_cap({"agent": agent, "extra_instructions": hw.stated_cap_instructions(3)}) == 3
    assert stated_cap({"agent": agent, "extra_instructions": hw.stated_cap_instructions(5)}) is None
    assert stated_cap({"agent": agent, "extra_instructions": ["Be careful."]}) is None
    assert stated_cap({"agent": agent}) is None  # a limit alone is not a stated cap


def test_trial_names_follow_one_rule():
    name = hw.trial_name("org/" + "x" * 30 + "--yy", "AbC1234")
    assert name == "x" * 30 + "__AbC1234"  # cut to 32, trailing '-' stripped, org prefix dropped
    fresh = {hw.trial_name("t") for _ in range(200)}
    assert len(fresh) == 200
    assert all(len(n.split("__")[1]) == hw.TRIAL_SUFFIX_LENGTH for n in fresh)
    assert all(set(n.split("__")[1]) <= set(hw.TRIAL_SUFFIX_ALPHABET) for n in fresh)


def test_bad_arguments_say_which_parameter():
    with pytest.raises(ValueError, match="'source' parameter of atif_step"):
        hw.atif_step(1, "t", "robot", "m")
    with pytest.raises(ValueError, match="'phases' parameter of trial_result"):
        hw.trial_result(
            {"trial_name": "t"},
            result_id="r",
            task_name="t",
            task_path="t",
            trial_dir="t",
            source=None,
            task_checksum="c",
            agent={},
            agent_result=None,
            rewards=None,
            exception=None,
            started_at="s",
            finished_at="f",
            phases={"warmup": None},
        )
