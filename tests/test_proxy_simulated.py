"""The depth proxy against known truth in files: simulated trajectories with a planted chain of reads."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import depthlab as dl
from depthlab.measures.proxy import rung_agreement, trial_proxy
from depthlab.simulate import write_runs


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim")
    summary = write_runs(out, seed=3, scale=0.12)
    trials = dl.load_trials(summary.jobs_dir, cache=False)
    return summary, trials


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPTHLAB_CACHE_DIR", str(tmp_path / "cache"))


def _planted(source: str) -> int:
    trajectory = json.loads((Path(source).parent / "agent" / "trajectory.json").read_text())
    return trajectory["extra"]["planted_chain"]


def test_the_proxy_recovers_every_planted_chain_exactly(simulated):
    _, trials = simulated
    per_trial = dl.depth_proxy(trials, per="trial")
    uncapped = trials.filter(pl.col("cap").is_null() & pl.col("status").is_in(("pass", "fail")))
    assert per_trial.height == uncapped.height > 300
    planted = [_planted(source) for source in uncapped["source"].to_list()]
    assert per_trial["proxy_depth"].to_list() == planted
    # the chains are not trivial: they vary, and the runs hold many more turns than the chain
    assert len(set(planted)) >= 5
    assert (per_trial["n_turns"] > per_trial["proxy_depth"]).mean() > 0.5


def test_capped_trajectories_carry_their_chain_too(simulated):
    _, trials = simulated
    capped = trials.filter(pl.col("cap").is_not_null() & (pl.col("status") != "invalid")).sample(40, seed=0)
    for source in capped["source"].to_list():
        assert trial_proxy(Path(source).parent) == _planted(source)


def test_the_task_proxy_tracks_d_star_by_rung(simulated):
    summary, trials = simulated
    per_task = dl.depth_proxy(trials)
    agreement = rung_agreement(per_task, summary.truth, column="d_star")
    solved = agreement.filter(pl.col("d_star").is_not_null())
    with_proxy = solved["n_tasks"].sum() - solved["n_no_proxy"].sum()
    assert solved["n_same"].sum() / with_proxy > 0.7
    # a passing run reads its whole effective depth, which is at least the task's smallest one
    assert solved["n_below"].sum() <= 0.05 * with_proxy
    joined = per_task.join(summary.truth, on=["dataset", "task"]).drop_nulls(["proxy_depth", "d_star"])
    assert joined.select(pl.corr("proxy_depth", "d_star", method="spearman")).item() > 0.8
    # tasks no model can solve have no passing run, so no proxy (as they have no D)
    unsolvable = summary.model_truth.group_by("dataset", "task").agg(pl.col("effective_depth").is_null().all())
    unsolvable = unsolvable.filter(pl.col("effective_depth")).select("dataset", "task")
    beyond = per_task.join(unsolvable, on=["dataset", "task"])
    assert beyond.height > 0
    assert (beyond["n_passing"] == 0).all()
    assert beyond["proxy_depth"].is_null().all()
