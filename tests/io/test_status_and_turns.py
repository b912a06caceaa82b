"""Trial status and turn-count rules, stated literally (not read back from the library's own constants)."""

from __future__ import annotations

import pytest
from io_helpers import write_trial

from depthlab.io import read_trials
from depthlab.io.status import trial_status

# The Terminal-Bench 2 leaderboard keeps a trial that ended in one of these (its reward, or 0).
KEPT = [
    "AgentTimeoutError",
    "VerifierTimeoutError",
    "RewardFileNotFoundError",
    "PermissionError",
    "NonZeroAgentExitCodeError",
]
# Infrastructure failures and anything else: the trial is invalid (the cell is still missing).
DROPPED = ["DaytonaError", "CancelledError", "RuntimeError", "AgentSetupTimeoutError", "agenttimeouterror", ""]


@pytest.mark.parametrize("exception", KEPT)
def test_kept_exceptions_count_with_their_reward(exception):
    assert trial_status(1.0, exception, "leaderboard") == "pass"
    assert trial_status(0.5, exception, "leaderboard") == "fail"
    assert trial_status(None, exception, "leaderboard") == "fail"


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
