"""The parquet cache: reused while nothing changed, noticed when a file changes, appears or goes."""

from __future__ import annotations

import json
import os
import shutil

from io_helpers import TMAX_TRIALS, write_trial

from depthlab.io import read_trials
from depthlab.io.cache import cache_dir


def _rewrite_keep_stat(path, text):
    """Change a file's bytes but keep its size and mtime: only a cache hit can still see the old value."""
    info = os.stat(path)
    path.write_text(text)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def test_unchanged_tree_is_served_from_the_cache(tmax_job):
    first = read_trials(tmax_job)
    assert any(cache_dir().glob("trials-*.parquet"))
    result = tmax_job / TMAX_TRIALS[2] / "result.json"
    text = result.read_text()
    _rewrite_keep_stat(result, text.replace('"reward": 1.0', '"reward": 0.0'))
    second = read_trials(tmax_job)
    assert second.trials.equals(first.trials)  # served from the cache: the edit is invisible
    assert not read_trials(tmax_job, cache=False).trials.equals(first.trials)


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
