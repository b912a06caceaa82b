"""Trial status and turn-count rules, stated literally (not read back from the library's own constants)."""

from __future__ import annotations

import json
import re

import pytest
from io_helpers import write_trial

from depthlab.io import read_trials
from depthlab.io.atif import count_turns
from depthlab.io.status import harness_turn_limit, stated_cap, trial_status, turn_limit_cap

# The Terminal-Bench 2 leaderboard keeps a trial that ended in one of these (its reward, or 0).
KEPT = ["AgentTimeoutError", "PermissionError", "NonZeroAgentExitCodeError"]
# The leaderboard also listed these, but Harbor's error policy gives them no valid reward (its
# reward_valid is false): the verifier did not finish, so the trial is invalid, as Harbor says.
GRADED_INVALID = ["VerifierTimeoutError"]  # RewardFileNotFoundError stays a counted fail (io.status)
# Infrastructure failures and anything else: the trial is invalid (the cell is still missing).
DROPPED = ["DaytonaError", "CancelledError", "RuntimeError", "AgentSetupTimeoutError", "agenttimeouterror", ""]


@pytest.mark.parametrize("exception", KEPT)
def test_kept_exceptions_count_with_their_reward(exception):
    assert trial_status(1.0, exception, "leaderboard") == "pass"
    assert trial_status(0.5, exception, "leaderboard") == "fail"
    assert trial_status(None, exception, "leaderboard") == "fail"


@pytest.mark.parametrize("exception", GRADED_INVALID)
def test_exceptions_harbor_calls_the_reward_invalid_make_the_trial_invalid(exception):
    assert trial_status(0.0, exception, "leaderboard") == "invalid"
    assert trial_status(None, exception, "leaderboard") == "invalid"
    assert trial_status(1.0, exception, "all") == "pass"


def test_a_reward_harbor_recorded_as_invalid_makes_the_trial_invalid():
    assert trial_status(1.0, None, "leaderboard", reward_valid=False) == "invalid"
    assert trial_status(1.0, None, "leaderboard", reward_valid=True) == "pass"
    assert trial_status(1.0, None, "all", reward_valid=False) == "pass"


@pytest.mark.parametrize("exception", DROPPED)
def test_other_exceptions_make_the_trial_invalid_under_the_leaderboard_rule(exception):
    assert trial_status(1.0, exception, "leaderboard") == "invalid"
    assert trial_status(None, exception, "leaderboard") == "invalid"
    # Harbor's own metric counts every trial: a missing reward is 0
    assert trial_status(None, exception, "all") == "fail"
    assert trial_status(1.0, exception, "all") == "pass"


@pytest.mark.parametrize(
    ("reward", "status"), [(None, "fail"), (0.0, "fail"), (0.999, "fail"), (1.0, "pass"), (1.5, "pass")]
)
def test_a_pass_is_full_credit(reward, status):
    assert trial_status(reward, None, "leaderboard") == status


def _turns(tmp_path, make_agent_dir) -> int | None:
    """n_turns of one trial without n_episodes metadata, after ``make_agent_dir(trial / "agent")``."""
    trial = write_trial(
        tmp_path / "job" / "t__1", agent_result={"n_input_tokens": 1, "n_output_tokens": 1, "metadata": None}
    )
    make_agent_dir(trial / "agent")
    load = read_trials(tmp_path / "job", cache=False)
    assert not load.rejected
    return load.trials.row(0, named=True)["n_turns"]


def test_an_empty_agent_directory_is_unknown_turns_not_zero(tmp_path):
    assert _turns(tmp_path, lambda agent: agent.mkdir()) is None


def test_no_agent_directory_is_unknown_turns(tmp_path):
    assert _turns(tmp_path, lambda agent: None) is None


def test_episode_directories_are_counted_and_other_entries_are_not(tmp_path):
    def episodes(agent):
        for name in ("episode-0", "episode-1", "episode-2"):
            (agent / name).mkdir(parents=True)
        (agent / "episode-notes.txt").write_text("a file, not an episode")
        (agent / "other").mkdir()

    assert _turns(tmp_path, episodes) == 3


def _config(**kwargs) -> dict:
    return {"agent": {"name": "terminus-2", "kwargs": kwargs}}


@pytest.mark.parametrize(("value", "cap"), [(5, 5), ("5", 5), (5.0, 5), (0, 0), (2**31 - 1, 2**31 - 1), (None, None)])
def test_stated_cap_reads_integers_written_any_way(value, cap):
    assert stated_cap(_config(stated_cap=value, max_turns=99)) == cap


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (2**31, "config.agent.kwargs.stated_cap must be a non-negative integer, got 2147483648"),
        (-1, "config.agent.kwargs.stated_cap must be a non-negative integer, got -1"),
        (2.5, "config.agent.kwargs.stated_cap must be a non-negative integer, got 2.5"),
        ("many", "config.agent.kwargs.stated_cap must be an integer, got 'many'"),
        ([5], "config.agent.kwargs.stated_cap must be an integer, got [5]"),
        (True, "config.agent.kwargs.stated_cap must be an integer, got True"),
    ],
)
def test_stated_cap_rejects_what_is_not_a_cap(value, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        stated_cap(_config(stated_cap=value))


@pytest.mark.parametrize("config", [None, [], {}, {"agent": "terminus-2"}, {"agent": {"kwargs": ["max_turns"]}}])
def test_configs_without_agent_kwargs_have_no_cap_or_limit(config):
    assert stated_cap(config) is None
    assert harness_turn_limit(config) is None


def test_harness_turn_limit_precedence_and_the_turn_limit_rule():
    config = _config(max_turns=None, max_episodes=200, episodes=5, max_steps=7)
    assert harness_turn_limit(config) == turn_limit_cap(config) == 200
    assert harness_turn_limit(_config(episodes=5, max_steps=7)) == turn_limit_cap(_config(episodes=5)) == 5
    assert turn_limit_cap(_config(max_steps="30")) == 30
    assert stated_cap(config) is None  # a harness limit is not a stated cap
    with pytest.raises(ValueError, match=r"^config\.agent\.kwargs\.max_episodes must be an integer, got 'lots'$"):
        harness_turn_limit(_config(max_episodes="lots"))


# ---------------------------------------------------------------- trajectory continuations


def _segment(path, n_agent_steps: int, ref: str | None = None, version: str = "ATIF-v1.7") -> None:
    steps = [{"step_id": i + 1, "source": "agent", "message": "m"} for i in range(n_agent_steps)]
    body = {"schema_version": version, "steps": steps}
    if ref is not None:
        body["continued_trajectory_ref"] = ref
    path.write_text(json.dumps(body))


def test_a_chain_of_continuations_counts_every_segment(tmp_path):
    _segment(tmp_path / "trajectory.json", 2, "trajectory.cont-1.json")
    _segment(tmp_path / "trajectory.cont-1.json", 3, "trajectory.cont-2.json")
    _segment(tmp_path / "trajectory.cont-2.json", 4, "trajectory.cont-3.json")
    _segment(tmp_path / "trajectory.cont-3.json", 1)
    assert count_turns(tmp_path / "trajectory.json") == 10


def test_a_loop_further_down_the_chain_is_refused_naming_the_file_that_loops(tmp_path):
    _segment(tmp_path / "trajectory.json", 1, "trajectory.cont-1.json")
    _segment(tmp_path / "trajectory.cont-1.json", 1, "trajectory.cont-2.json")
    _segment(tmp_path / "trajectory.cont-2.json", 1, "trajectory.cont-1.json")
    with pytest.raises(ValueError, match=r"trajectory\.cont-2\.json.*loops back to 'trajectory\.cont-1\.json'"):
        count_turns(tmp_path / "trajectory.json")


@pytest.mark.parametrize(
    ("content", "reason"),
    [("{not json", "not valid JSON|invalid JSON|JSON"), (None, "unknown trajectory schema_version 'ATIF-v9.9'")],
)
def test_a_bad_continuation_is_reported_with_its_own_path(tmp_path, content, reason):
    _segment(tmp_path / "trajectory.json", 1, "trajectory.cont-1.json")
    _segment(tmp_path / "trajectory.cont-1.json", 1, "trajectory.cont-2.json")
    if content is None:
        _segment(tmp_path / "trajectory.cont-2.json", 1, version="ATIF-v9.9")
    else:
        (tmp_path / "trajectory.cont-2.json").write_text(content)
    with pytest.raises(ValueError, match=reason) as error:
        count_turns(tmp_path / "trajectory.json")
    assert str(tmp_path / "trajectory.cont-2.json") in str(error.value)


def test_a_bad_trajectory_costs_its_trials_turns_with_a_note_naming_the_file(tmp_path):
    trial = write_trial(tmp_path / "job" / "t__1", agent_result={"metadata": None})
    (trial / "agent").mkdir()
    (trial / "agent" / "trajectory.json").write_text("{not json")
    load = read_trials(tmp_path / "job", cache=False)
    assert load.rejected == []
    assert load.trials["n_turns"].to_list() == [None]
    assert [(note.field, str(trial / "agent" / "trajectory.json") in note.reason) for note in load.notes] == [
        ("n_turns", True)
    ]


def test_a_new_episode_directory_reaches_a_cached_load(tmp_path):
    trial = write_trial(tmp_path / "job" / "t__1", agent_result={"metadata": None})
    for index in range(2):
        (trial / "agent" / f"episode-{index}").mkdir(parents=True)
    assert read_trials(tmp_path / "job").trials["n_turns"].to_list() == [2]
    (trial / "agent" / "episode-2").mkdir()
    assert read_trials(tmp_path / "job").trials["n_turns"].to_list() == [3]


def test_the_continuation_limit_is_exact(tmp_path, monkeypatch):
    from depthlab.io import atif

    monkeypatch.setattr(atif, "_MAX_CONTINUATIONS", 3)
    names = ["trajectory.json", *(f"trajectory.cont-{i}.json" for i in range(1, 5))]
    for name, ref in zip(names, [*names[1:4], None], strict=False):
        _segment(tmp_path / name, 1, ref)
    assert count_turns(tmp_path / "trajectory.json") == 4  # 3 continuations: at the limit
    _segment(tmp_path / names[3], 1, names[4])
    _segment(tmp_path / names[4], 1)
    with pytest.raises(ValueError, match="loops back"):  # a 4th is one too many
        count_turns(tmp_path / "trajectory.json")
