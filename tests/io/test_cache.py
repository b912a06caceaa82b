"""The parquet cache: reused while nothing changed, noticed when a file changes, appears or goes."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from io_helpers import TMAX_TRIALS, write_trial

from depthlab.io import harbor, read_trials
from depthlab.io.cache import cache_dir


def _rewrite_keep_stat(path, text):
    """Change a file's bytes but keep its size and modification time (a copy tool restoring times does this)."""
    info = os.stat(path)
    path.write_text(text)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


@pytest.fixture
def parsed(monkeypatch):
    """The trial directories the loader parses (small loads stay in this process)."""
    seen: list[str] = []
    original = harbor.trial_dir_rows

    def spy(trial_dir, *args, **kwargs):
        seen.append(os.path.basename(trial_dir))
        return original(trial_dir, *args, **kwargs)

    monkeypatch.setattr(harbor, "trial_dir_rows", spy)
    return seen


def test_unchanged_tree_is_served_from_the_cache(tmax_job, parsed):
    first = read_trials(tmax_job)
    assert any(cache_dir().glob("trials-*.parquet"))
    assert sorted(parsed) == sorted(TMAX_TRIALS)
    parsed.clear()
    second = read_trials(tmax_job)
    assert parsed == []  # nothing parsed, nothing walked
    assert second.trials.equals(first.trials)


def test_a_rewrite_that_restores_size_and_mtime_is_still_seen(tmax_job):
    """The key is the status-change time, which no user-level tool can set back."""
    first = read_trials(tmax_job)
    result = tmax_job / TMAX_TRIALS[2] / "result.json"
    _rewrite_keep_stat(result, result.read_text().replace('"reward": 1.0', '"reward": 0.0'))
    second = read_trials(tmax_job)
    assert first.trials.filter(first.trials["trial"] == TMAX_TRIALS[2])["reward"][0] == 1.0
    assert second.trials.filter(second.trials["trial"] == TMAX_TRIALS[2])["reward"][0] == 0.0


def test_changed_file_is_noticed(tmax_job):
    first = read_trials(tmax_job)
    result = tmax_job / TMAX_TRIALS[2] / "result.json"
    data = json.loads(result.read_text())
    data["verifier_result"]["rewards"]["reward"] = 0.0
    result.write_text(json.dumps(data))
    second = read_trials(tmax_job)
    assert first.trials.filter(first.trials["trial"] == TMAX_TRIALS[2])["reward"][0] == 1.0
    assert second.trials.filter(second.trials["trial"] == TMAX_TRIALS[2])["reward"][0] == 0.0


def test_added_and_removed_trials_are_noticed(tmax_job):
    assert read_trials(tmax_job).trials.height == 3
    write_trial(tmax_job / "extra__1")
    assert read_trials(tmax_job).trials.height == 4
    shutil.rmtree(tmax_job / TMAX_TRIALS[0])
    assert read_trials(tmax_job).trials.height == 3


def test_trajectory_change_is_noticed(tmp_path):
    trial = write_trial(tmp_path / "job" / "t__1", agent_result={"metadata": None})
    assert read_trials(trial).trials["n_turns"][0] is None
    (trial / "agent").mkdir()
    (trial / "agent" / "trajectory.json").write_text(json.dumps([{"role": "assistant"}] * 3))
    assert read_trials(trial).trials["n_turns"][0] == 3


def test_rejections_are_cached_too(tmax_job):
    (tmax_job / TMAX_TRIALS[0] / "result.json").write_text("")
    first = read_trials(tmax_job)
    second = read_trials(tmax_job)
    assert second.rejected == first.rejected
    assert second.n_seen == first.n_seen == 3


def test_only_changed_trials_are_parsed_again(tmax_job, parsed):
    first = read_trials(tmax_job)
    changed = tmax_job / TMAX_TRIALS[1] / "result.json"
    data = json.loads(changed.read_text())
    data["verifier_result"]["rewards"]["reward"] = 1.0
    changed.write_text(json.dumps(data))
    write_trial(tmax_job / "extra__1")
    parsed.clear()

    second = read_trials(tmax_job)
    assert sorted(parsed) == sorted([TMAX_TRIALS[1], "extra__1"])  # the others come from the cache
    rewards = dict(second.trials.select("trial", "reward").iter_rows())
    assert rewards[TMAX_TRIALS[1]] == 1.0
    assert "extra__1" in rewards
    assert second.n_seen == 4
    fresh = read_trials(tmax_job, cache=False)
    assert second.trials.equals(fresh.trials)
    assert second.trials.drop("source").columns == first.trials.drop("source").columns


def test_partial_reload_keeps_rejections_and_attempts(tmp_path):
    for hour in (3, 1, 2):
        write_trial(tmp_path / "job" / f"h{hour}__1", started_at=f"2026-01-01T0{hour}:00:00Z")
    (tmp_path / "job" / "bad__1").mkdir()
    (tmp_path / "job" / "bad__1" / "result.json").write_text("{")
    first = read_trials(tmp_path / "job")
    write_trial(tmp_path / "job" / "h0__1", started_at="2026-01-01T00:00:00Z")
    second = read_trials(tmp_path / "job")
    assert [item.path for item in second.rejected] == [item.path for item in first.rejected]
    attempts = dict(second.trials.select("trial", "attempt").iter_rows())
    assert attempts == {"h0__1": 1, "h1__1": 2, "h2__1": 3, "h3__1": 4}
    assert second.n_seen == second.trials.height + len(second.rejected) == 5
    assert second.trials.equals(read_trials(tmp_path / "job", cache=False).trials)


def test_tb1_run_metadata_change_reaches_every_trial(samples, tmp_path):
    from io_helpers import DROID_RUN

    run = tmp_path / "20250923_droid_claude-4-sonnet"
    shutil.copytree(samples / DROID_RUN, run)
    assert read_trials(run).trials["model"].unique().to_list() == ["claude-4-sonnet"]
    metadata_path = run / "tb_rc2_sonnet_1" / "run_metadata.json"
    metadata = json.loads(metadata_path.read_text())
    metadata["model_name"] = "anthropic/claude-sonnet-4"
    metadata_path.write_text(json.dumps(metadata))
    assert read_trials(run).trials["model"].unique().to_list() == ["anthropic/claude-sonnet-4"]
