"""read_steps: the turns of one trial, on real samples, golden terminus-2 files, simulator output and bad input."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from io_helpers import GOLDEN, TBA_RUN, TMAX_JOB, TMAX_TRIALS, read_json, write_trial
from test_atif import SCENARIOS, _golden_trial

from depthlab.io import LoadError, load_trials, read_steps, read_trials
from depthlab.io.atif import STEPS_SCHEMA, count_turns
from depthlab.simulate import write_runs


def _n_turns(trial) -> int | None:
    return read_trials(trial, cache=False).trials["n_turns"][0]


def test_tmax_chat_trajectories_match_n_turns_and_timing(samples):
    trials = load_trials(samples / TMAX_JOB, cache=False)
    assert sorted(trials["trial"].to_list()) == sorted(TMAX_TRIALS)
    for row in trials.iter_rows(named=True):
        steps = read_steps(os.path.dirname(row["source"]))
        assert steps.schema == pl.Schema(STEPS_SCHEMA)
        assert steps.height == row["n_turns"]
        assert steps["turn"].to_list() == list(range(1, steps.height + 1))
        # independent reference: TMax's timing.json logs each step's command (cut to a prefix)
        timing = read_json(samples / TMAX_JOB / row["trial"] / "agent" / "timing.json")
        for command, logged in zip(steps["commands"], timing, strict=False):
            assert command.startswith(logged["cmd"][:100])
        assert steps["message"].str.len_chars().min() > 0


def test_tmax_observation_is_the_following_tool_messages(samples):
    trial = samples / TMAX_JOB / TMAX_TRIALS[2]
    messages = read_json(trial / "agent" / "trajectory.json")
    first_tool = next(m["content"] for m in messages if m["role"] == "tool")
    steps = read_steps(trial)
    assert steps["observation"][0] == first_tool
    short = read_steps(trial, max_chars=10)
    assert short["observation"][0] == first_tool[:10] + " [...]"


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_golden_terminus_rows_equal_n_turns(samples, tmp_path, scenario):
    trial = _golden_trial(samples, tmp_path, SCENARIOS[scenario])
    steps = read_steps(trial)
    assert steps.height == _n_turns(trial) == count_turns(trial / "agent" / "trajectory.json")
    main = read_json(trial / "agent" / "trajectory.json")
    first_agent = next(step for step in main["steps"] if step["source"] == "agent")
    # raw_content runs keep the whole response as the message; read_steps shows its analysis and plan
    assert steps["message"][0].split("\n")[0].removeprefix("Analysis: ") in first_agent["message"]
    assert steps["n_input_tokens"][0] == first_agent["metrics"]["prompt_tokens"]
    assert steps["n_output_tokens"][0] == first_agent["metrics"]["completion_tokens"]


def test_golden_summarized_and_linear_history_give_the_same_turns(samples, tmp_path):
    summarized = read_steps(_golden_trial(samples, tmp_path / "a", SCENARIOS["summarization"]))
    linear = read_steps(_golden_trial(samples, tmp_path / "b", SCENARIOS["linear"]))
    # the linear-history golden run kept raw responses (raw_content=True), parsed here like terminus-2 does
    assert linear["message"].to_list() == summarized["message"].to_list()
    shell = pl.col("commands").is_not_null() & (pl.col("commands") != "mark_task_complete()")
    assert linear.filter(shell)["commands"].to_list() == summarized.filter(shell)["commands"].to_list()
    subagent = read_json(samples / GOLDEN / f"{SCENARIOS['summarization']}.trajectory.summarization-1-summary.json")
    own = [
        step["message"] for step in subagent["steps"] if step["source"] == "agent" and not step.get("is_copied_context")
    ]
    assert own
    assert not set(own) & set(summarized["message"].to_list())
    keystrokes = [
        call["arguments"]["keystrokes"].removesuffix("\n")
        for step in read_json(samples / GOLDEN / f"{SCENARIOS['summarization']}.trajectory.json")["steps"]
        for call in step.get("tool_calls") or []
        if call["function_name"] == "bash_command"
    ]
    assert summarized.filter(shell)["commands"].to_list() == keystrokes


def test_golden_parse_error_turn_has_no_commands(samples, tmp_path):
    steps = read_steps(_golden_trial(samples, tmp_path, SCENARIOS["invalid_json"]))
    assert steps["commands"][0] is None
    assert steps["observation"][0].startswith("Previous response had parsing errors")


def test_simulated_runs_rows_equal_n_turns(tmp_path):
    write_runs(tmp_path, seed=5, scale=0.01, invalid_rate=0.2)
    trials = load_trials(tmp_path / "jobs", cache=False)
    valid = trials.filter(pl.col("n_turns").is_not_null()).sort("n_turns", descending=True)
    assert valid.height > 0
    for row in valid.head(4).iter_rows(named=True):
        trial_dir = os.path.dirname(row["source"])
        steps = read_steps(trial_dir)
        assert steps.height == row["n_turns"]
        trajectory = read_json(Path(trial_dir) / "agent" / "trajectory.json")
        assert steps["n_input_tokens"].sum() == trajectory["final_metrics"]["total_prompt_tokens"]
        assert steps["n_output_tokens"].sum() == trajectory["final_metrics"]["total_completion_tokens"]
        times = steps["timestamp"]
        assert times.null_count() == 0
        assert times.is_sorted()
        assert times.n_unique() == steps.height
        assert times.dt.replace_time_zone(None)[0] >= datetime.fromisoformat(trajectory["steps"][0]["timestamp"][:19])
    missing = trials.filter(pl.col("n_turns").is_null())
    for source in missing["source"].head(2):
        with pytest.raises(LoadError, match=r"no agent/trajectory\.json"):
            read_steps(os.path.dirname(source))


def _episodes(agent, responses, prompts):
    for index, (response, prompt) in enumerate(zip(responses, prompts, strict=True)):
        folder = agent / f"episode-{index}"
        folder.mkdir(parents=True)
        (folder / "prompt.txt").write_text(prompt)
        if response is not None:
            (folder / "response.txt").write_text(response)


def test_harbor_episode_dirs_in_numeric_order(tmp_path):
    trial = write_trial(tmp_path / "job" / "ep__1", agent_result=None)
    count = 12
    responses = [
        "ok " + json.dumps({"analysis": f"saw {i}", "plan": f"do {i}", "commands": [{"keystrokes": f"cmd{i}\n"}]})
        for i in range(count)
    ]
    _episodes(trial / "agent", responses, [f"output before {i}" for i in range(count)])
    steps = read_steps(trial)
    assert steps.height == _n_turns(trial) == count
    assert steps["commands"].to_list() == [f"cmd{i}" for i in range(count)]
    assert steps["message"][10] == "Analysis: saw 10\nPlan: do 10"
    assert steps["observation"].to_list() == [f"output before {i}" for i in range(1, count)] + [None]
    assert steps["timestamp"].null_count() == count


def test_xml_raw_and_missing_responses(tmp_path):
    trial = write_trial(tmp_path / "job" / "xml__1", agent_result=None)
    xml = "<response><analysis>empty dir</analysis><plan>list</plan><commands>"
    xml += '<keystrokes duration="0.1">ls -la\n</keystrokes><keystrokes>pwd\n</keystrokes></commands></response>'
    _episodes(trial / "agent", [xml, "I cannot parse this", None], ["p0", "p1", "p2"])
    steps = read_steps(trial)
    assert steps["message"].to_list() == ["Analysis: empty dir\nPlan: list", "I cannot parse this", None]
    assert steps["commands"].to_list() == ["ls -la\npwd", None, None]


def test_tb1_agent_logs_rows_equal_n_turns(samples, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(samples / TBA_RUN, run)
    trial_file = next(run.glob("*/*/results.json"))
    responses = [
        json.dumps({"state_analysis": f"s{i}", "explanation": f"e{i}", "commands": [f"k{i}"]}) for i in range(3)
    ]
    _episodes(trial_file.parent / "agent-logs", responses, ["a", "b", "c"])
    (trial_file.parent / "agent-logs" / "episode-0" / "response.txt").rename(
        trial_file.parent / "agent-logs" / "episode-0" / "response.json"
    )
    row = load_trials(run, cache=False).row(0, named=True)
    steps = read_steps(os.path.dirname(row["source"]))
    assert steps.height == row["n_turns"] == 3
    assert steps["commands"].to_list() == ["k0", "k1", "k2"]
    assert steps["message"][0] == "State analysis: s0\nExplanation: e0"


def test_llm_call_count_and_copied_steps(tmp_path):
    trial = write_trial(tmp_path / "job" / "calls__1", agent_result=None)
    (trial / "agent").mkdir()
    steps = [
        {"step_id": 1, "source": "user", "message": "task"},
        {"step_id": 2, "source": "agent", "message": "old", "is_copied_context": True},
        {
            "step_id": 3,
            "source": "agent",
            "message": "batched",
            "llm_call_count": 3,
            "timestamp": "2026-01-02T03:04:05",
        },
        {"step_id": 4, "source": "agent", "message": [{"type": "text", "text": "look"}, {"type": "image"}]},
    ]
    (trial / "agent" / "trajectory.json").write_text(json.dumps({"schema_version": "ATIF-v1.7", "steps": steps}))
    table = read_steps(trial)
    assert table.height == _n_turns(trial) == 4
    assert table["message"].to_list() == ["batched", None, None, "look\n[image]"]
    assert table["timestamp"][0] == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_chat_list_with_openai_tool_calls(tmp_path):
    trial = write_trial(tmp_path / "job" / "chat__1", agent_result=None)
    (trial / "agent").mkdir()
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": "ls"})}}
    other = {"id": "c2", "type": "function", "function": {"name": "finish", "arguments": '{"ok": true}'}}
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "first", "tool_calls": [call, other]},
        {"role": "tool", "content": "a.txt"},
        {"role": "tool", "content": "done"},
        {"role": "assistant", "content": "second"},
    ]
    (trial / "agent" / "trajectory.json").write_text(json.dumps(messages))
    table = read_steps(trial)
    assert table.height == _n_turns(trial) == 2
    assert table["commands"].to_list() == ['ls\nfinish({"ok":true})', None]
    assert table["observation"].to_list() == ["a.txt\ndone", None]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("", "empty file"),
        ('{"schema_version": "ATIF-v1.6", "steps": [', "not valid JSON"),
        ('{"schema_version": "ATIF-v9", "steps": []}', "unknown trajectory schema_version"),
        ('{"schema_version": "ATIF-v1.6", "steps": [], "continued_trajectory_ref": "trajectory.json"}', "loops back"),
        ('{"steps": []}', "unexpected shape"),
    ],
)
def test_bad_trajectory_is_a_load_error_naming_the_file(tmp_path, content, reason):
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "trajectory.json").write_text(content)
    with pytest.raises(LoadError, match=reason) as info:
        read_steps(tmp_path)
    assert str(tmp_path / "agent" / "trajectory.json") in str(info.value)


def test_bad_arguments(tmp_path):
    with pytest.raises(LoadError, match="not a directory"):
        read_steps(tmp_path / "absent")
    with pytest.raises(LoadError, match=r"no agent/trajectory\.json"):
        read_steps(tmp_path)
    with pytest.raises(ValueError, match="'max_chars' parameter of read_steps"):
        read_steps(tmp_path, max_chars=0)
