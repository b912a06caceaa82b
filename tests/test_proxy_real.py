"""The depth proxy on the real TB2 Harbor job of 445 trials (../shared/data/tb2-jobs/tmax-27b), skipped without it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

import depthlab as dl
from depthlab.io import read_steps
from depthlab.measures.proxy import turn_dependencies


@pytest.fixture(scope="module")
def job(shared_data: Path) -> Path:
    path = shared_data / "tb2-jobs" / "tmax-27b"
    if not path.is_dir():
        pytest.skip(f"the real TB2 job is not at {path}")
    return path


@pytest.fixture(scope="module")
def trials(job: Path) -> pl.DataFrame:
    return dl.load_trials(job, cache=False)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPTHLAB_CACHE_DIR", str(tmp_path / "cache"))


def test_every_real_trajectory_gets_a_proxy_within_its_turns(trials):
    per_trial = dl.depth_proxy(trials, per="trial")
    assert per_trial.height == trials.height == 445
    assert per_trial["proxy_depth"].null_count() == 0
    joined = per_trial.join(trials.select("trial", table_turns="n_turns"), on="trial")
    # the trials table counted the same assistant messages
    assert (joined["n_turns"] == joined["table_turns"]).all()
    assert (joined["proxy_depth"] >= 1).all()
    assert (joined["proxy_depth"] <= joined["n_turns"]).all()
    # on real runs the chain is much shorter than the run: most turns could have been batched
    assert joined["proxy_depth"].median() < joined["n_turns"].median() / 2


def test_per_task_counts_the_passing_trials(trials):
    per_task = dl.depth_proxy(trials)
    assert per_task.height == 89
    passing = trials.group_by("task").agg(n=(pl.col("status") == "pass").sum().cast(pl.Int32))
    check = per_task.join(passing, on="task")
    assert (check["n_passing"] == check["n"]).all()
    assert (per_task["proxy_depth"].is_null() == (per_task["n_passing"] == 0)).all()
    assert (per_task["proxy_depth_min"] <= per_task["proxy_depth"]).all()


def _occurs(name: str, text: str) -> bool:
    """``name`` is a whole run of [A-Za-z0-9_.-] in ``text``, up to leading/trailing dots and dashes."""
    return re.search(rf"(?<![A-Za-z0-9_.\-])[.\-]*{re.escape(name)}[.\-]*(?![A-Za-z0-9_.\-])", text) is not None


def test_each_real_dependency_is_an_identifier_first_printed_by_the_turn_it_names(job, trials):
    """An independent re-reading of the rule with plain substring search on the raw messages."""
    checked = 0
    for source in trials.sort("trial")["source"].to_list()[::40]:
        folder = Path(source).parent
        messages = json.loads((folder / "agent" / "trajectory.json").read_text())
        first = next(i for i, m in enumerate(messages) if m["role"] == "assistant")
        given = "\n".join(m["content"] or "" for m in messages[:first])
        typed, outputs = [], []  # per turn: what the agent wrote, what it then read
        for message in messages:
            if message["role"] == "assistant":
                calls = message.get("tool_calls") or []
                commands = [json.loads(call["function"]["arguments"])["command"] for call in calls]
                typed.append("\n".join(commands))  # the primary rule reads commands, not the agent's messages
                outputs.append("")
            elif typed:
                outputs[-1] += (message["content"] or "") + "\n"
        deps = turn_dependencies(read_steps(folder, prompt=True, max_chars=10**9))
        assert deps.height == len(typed)
        for row in deps.iter_rows(named=True):
            t = row["turn"]
            for s, names in zip(row["depends_on"], row["identifiers"], strict=True):
                assert s < t
                for name in names:
                    assert _occurs(name, typed[t - 1])
                    assert _occurs(name, outputs[s - 1])
                    assert not _occurs(name, given)
                    assert not any(_occurs(name, text) for text in typed[:s])  # not typed before s printed it
                    assert not any(_occurs(name, text) for text in outputs[: s - 1])
                    checked += 1
            expected = 1 + max((deps["level"][s - 1] for s in row["depends_on"]), default=0)
            assert row["level"] == expected
    assert checked > 20


def test_real_tb2_correlations_are_pingouins_on_the_tasks_with_a_proxy(trials, shared_data):
    pingouin = pytest.importorskip("pingouin")
    bundle = dl.load_dataset("tb2", shared_data)  # 89 tasks (W, author ratings), 3,560 public trials of 8 models
    tb2_trials = trials.with_columns(dataset=pl.lit("tb2"))
    audit = dl.audit_table(bundle.tasks, bundle.trials, proxy=dl.depth_proxy(tb2_trials))
    table = dl.proxy_correlations(audit, n_boot=300, seed=0)
    sample = audit.drop_nulls(["proxy_depth", "work", "pass_rate"])
    # the proxy exists for the tasks TMax-27B passed at least once
    assert sample.height == trials.filter(pl.col("status") == "pass")["task"].n_unique()
    frame = sample.to_pandas()
    for row in table.filter(pl.col("y") == "pass_rate").iter_rows(named=True):
        expected = pingouin.partial_corr(frame, x=row["x"], y="pass_rate", covar=row["covar"], method="spearman")
        assert row["n"] == sample.height
        assert row["r"] == pytest.approx(expected["r"].iloc[0], abs=1e-9)


def test_the_bundled_per_trial_proxy_is_the_one_read_from_the_real_job(trials):
    from depthlab.datasets.tb2 import BUNDLED_DIR
    from depthlab.measures.proxy import RULE_VERSION

    bundled = pl.read_parquet(BUNDLED_DIR / "proxy_trials.parquet")
    assert bundled["rule_version"].unique().to_list() == [RULE_VERSION]  # rebuild it when the rule changes
    fresh = dl.depth_proxy(trials.with_columns(dataset=pl.lit("tb2")), per="trial")
    key = ["task", "trial"]
    assert (
        bundled.select(*key, "passed", "n_turns", "proxy_depth")
        .sort(key)
        .equals(fresh.select(*key, "passed", "n_turns", "proxy_depth").sort(key))
    )
