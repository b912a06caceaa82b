"""The depth proxy on Harbor's own golden terminus-2 files: summarization and linear-history continuations."""

from __future__ import annotations

import polars as pl
from test_atif import SCENARIOS, _golden_trial

from depthlab.io import read_steps, read_trials
from depthlab.measures.proxy import turn_dependencies


def _dependencies(trial) -> pl.DataFrame:
    return turn_dependencies(read_steps(trial, prompt=True, max_chars=10**9))


def test_summarized_and_linear_history_runs_give_the_same_chain(samples, tmp_path):
    summarized = _dependencies(_golden_trial(samples, tmp_path / "a", SCENARIOS["summarization"]))
    linear = _dependencies(_golden_trial(samples, tmp_path / "b", SCENARIOS["linear"]))
    # the continuation files re-copy the prefix (marked copied) and the summarization subagents are not turns:
    # both layouts of the same run give the same turns, so the same levels and dependencies
    assert summarized.height == linear.height > 0
    assert summarized.select("level", "depends_on", "identifiers").equals(
        linear.select("level", "depends_on", "identifiers")
    )
    assert summarized["level"].min() == 1


def test_every_golden_scenario_reads(samples, tmp_path):
    for name, prefix in SCENARIOS.items():
        trial = _golden_trial(samples, tmp_path / name, prefix)
        deps = _dependencies(trial)
        # one row per turn the trials reader counts (an empty read would pass every check below)
        n_turns = read_trials(trial, cache=False).trials["n_turns"][0]
        assert deps.height == n_turns > 0, name
        assert deps["turn"].to_list() == list(range(1, deps.height + 1)), name
        levels = deps["level"].to_list()
        for row in deps.iter_rows(named=True):
            assert all(source < row["turn"] for source in row["depends_on"]), name
            assert row["level"] == 1 + max((levels[s - 1] for s in row["depends_on"]), default=0), name
