"""Turn counts from ATIF trajectories (terminus-2 golden files) and chat lists."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from io_helpers import GOLDEN, write_trial

from depthlab.io import read_trials
from depthlab.io.atif import count_turns

SCENARIOS = {
    "summarization": "hello-world-context-summarization",
    "linear": "hello-world-context-summarization-linear-history",
    "invalid_json": "hello-world-invalid-json",
    "timeout": "hello-world-timeout",
}


def _episodes_from_tool_calls(path) -> int:
    """Independent reference: terminus-2 names tool calls call_<episode>_<i>, episodes are 0-based."""
    steps = json.loads(path.read_text())["steps"]
    ids = [call["tool_call_id"] for step in steps for call in step.get("tool_calls") or []]
    return max(int(re.match(r"call_(\d+)_", tool_id).group(1)) for tool_id in ids) + 1


def _golden_trial(samples, tmp_path, prefix):
    """A Harbor trial dir whose agent/ holds a golden scenario's files, without n_episodes in result.json."""
    trial = write_trial(tmp_path / "job" / f"{prefix}__1", agent_result={"metadata": None})
    agent = trial / "agent"
    agent.mkdir()
    for source in (samples / GOLDEN).glob(f"{prefix}.trajectory*.json"):
        suffix = source.name[len(prefix) + len(".trajectory") :]
        if prefix == SCENARIOS["summarization"] and suffix.startswith(".cont"):
            continue
        if suffix.startswith("-linear") or (prefix != SCENARIOS["linear"] and ".cont" in suffix):
            continue
        shutil.copy(source, agent / f"trajectory{suffix}")
    return trial


@pytest.mark.parametrize("scenario", ["summarization", "invalid_json", "timeout"])
def test_golden_turns_equal_terminus_episode_count(samples, tmp_path, scenario):
    prefix = SCENARIOS[scenario]
    trial = _golden_trial(samples, tmp_path, prefix)
    expected = _episodes_from_tool_calls(samples / GOLDEN / f"{prefix}.trajectory.json")
    row = read_trials(trial, cache=False).trials.row(0, named=True)
    assert row["n_turns"] == expected
    assert count_turns(trial / "agent" / "trajectory.json") == expected


def test_summarization_subagent_files_are_not_counted(samples, tmp_path):
    prefix = SCENARIOS["summarization"]
    trial = _golden_trial(samples, tmp_path, prefix)
    assert len(list((trial / "agent").glob("trajectory.summarization-*.json"))) == 3
    with_subagents = read_trials(trial, cache=False).trials["n_turns"][0]
    for extra in (trial / "agent").glob("trajectory.summarization-*.json"):
        extra.unlink()
    assert read_trials(trial, cache=False).trials["n_turns"][0] == with_subagents


def test_linear_history_continuation_counts_like_the_summarized_run(samples, tmp_path):
    """The same run written with linear_history: turns split across trajectory.json and cont-1, copies skipped."""
    linear = _golden_trial(samples, tmp_path / "a", SCENARIOS["linear"])
    assert (linear / "agent" / "trajectory.cont-1.json").exists()
    summarized = _golden_trial(samples, tmp_path / "b", SCENARIOS["summarization"])
    linear_turns = read_trials(linear, cache=False).trials["n_turns"][0]
    assert linear_turns == read_trials(summarized, cache=False).trials["n_turns"][0]
    main_only = json.loads((linear / "agent" / "trajectory.json").read_text())
    assert linear_turns > sum(step["source"] == "agent" for step in main_only["steps"])


def test_all_atif_versions_and_llm_call_count(tmp_path):
    for minor in range(8):
        steps = [
            {"step_id": 1, "source": "user", "message": "task"},
            {"step_id": 2, "source": "agent", "message": "a"},
            {"step_id": 3, "source": "agent", "message": "b", "llm_call_count": 3},
            {"step_id": 4, "source": "agent", "message": "old", "is_copied_context": True},
        ]
        path = tmp_path / f"v{minor}.json"
        path.write_text(json.dumps({"schema_version": f"ATIF-v1.{minor}", "steps": steps}))
        assert count_turns(path) == 4


def test_unknown_version_and_continuation_loop_are_errors(tmp_path):
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps({"schema_version": "ATIF-v2.0", "steps": []}))
    with pytest.raises(ValueError, match="unknown trajectory schema_version"):
        count_turns(path)
    looped = {"schema_version": "ATIF-v1.7", "steps": [], "continued_trajectory_ref": "trajectory.json"}
    path.write_text(json.dumps(looped))
    with pytest.raises(ValueError, match="loops back"):
        count_turns(path)


def test_chat_list_counts_assistant_messages(tmp_path):
    roles = ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps([{"role": role, "content": "x"} for role in roles]))
    assert count_turns(path) == roles.count("assistant")


def test_episode_directories_are_the_last_resort(tmp_path):
    trial = write_trial(tmp_path / "job" / "ep__1", agent_result=None)
    for index in range(5):
        (trial / "agent" / f"episode-{index}").mkdir(parents=True)
    assert read_trials(trial, cache=False).trials["n_turns"][0] == 5
