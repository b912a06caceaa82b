"""Terminal-Bench 1 runs and the TB1 leaderboard tree."""

from __future__ import annotations

import json
import shutil

import polars as pl
from io_helpers import DROID_RUN, ORCHESTRATOR, TBA_RUN, read_json

from depthlab import schema
from depthlab.io import read_trials


def test_droid_submission_accuracy_equals_its_own_results(samples):
    run_file = samples / DROID_RUN / "tb_rc2_sonnet_1" / "results.json"
    published = read_json(run_file)
    load = read_trials(samples / DROID_RUN, cache=False)
    schema.check(load.trials, "trials")
    trials = load.trials
    assert trials.height == len(published["results"])
    assert trials["trial"].n_unique() == trials.height  # the trial with its own file is not counted twice
    assert trials["passed"].mean() == published["accuracy"]
    assert int(trials["passed"].sum()) == published["n_resolved"]
    assert set(trials.filter(pl.col("passed"))["task"]) == set(published["resolved_ids"])
    assert trials["model"].unique().to_list() == ["claude-4-sonnet"]
    assert trials["agent"].unique().to_list() == [read_json(run_file.parent / "run_metadata.json")["agent_name"]]
    hello = trials.filter(pl.col("task") == "hello-world").row(0, named=True)
    assert hello["source"].endswith("hello-world.1-of-1.tb_rc2_sonnet_1/results.json")
    assert (hello["attempt"], hello["job"], hello["status"]) == (1, "tb_rc2_sonnet_1", "pass")


def test_orchestrator_variant_uuid_no_timestamps(samples):
    trials = read_trials(samples / ORCHESTRATOR, cache=False).trials
    row = trials.row(0, named=True)
    assert trials.height == 1
    assert (row["task"], row["attempt"], row["started_at"]) == ("hello-world", 1, None)
    assert (row["agent"], row["model"]) == ("LeadArchitectAgent", "claude-4.1-opus")
    assert (row["n_input_tokens"], row["n_output_tokens"]) == (14673, 785)


def test_tb1_harness_run(samples):
    row = read_trials(samples / TBA_RUN, cache=False).trials.row(0, named=True)
    entry = read_json(samples / TBA_RUN / "results.json")["results"][0]
    assert (row["task"], row["trial"], row["status"]) == (entry["task_id"], entry["trial_name"], "fail")
    assert row["exception"] == entry["failure_mode"]
    assert row["n_input_tokens"] is None  # 0 and 0 means "not reported"


def test_attempts_from_n_of_m_and_from_run_order(samples, tmp_path):
    source = read_json(samples / ORCHESTRATOR / "hello-world" / "hello-world.1-of-5" / "results.json")
    one_run = tmp_path / "one_run"
    for attempt in (3, 1, 2):
        name = f"hello-world.{attempt}-of-3"
        (one_run / "hello-world" / name).mkdir(parents=True)
        (one_run / "hello-world" / name / "results.json").write_text(json.dumps(dict(source, trial_name=name)))
    rows = read_trials(one_run, cache=False).trials.sort("trial")
    assert rows["attempt"].to_list() == [1, 2, 3]

    # five runs of one attempt each: attempts follow the runs' start times
    droid = read_json(samples / DROID_RUN / "tb_rc2_sonnet_1" / "results.json")["results"][0]
    many = tmp_path / "many_runs"
    for run, hour in zip(["r_c", "r_a", "r_b"], [12, 10, 11], strict=True):
        entry = dict(
            droid, trial_name=f"{droid['task_id']}.1-of-1.{run}", trial_started_at=f"2025-09-23T{hour}:00:00+00:00"
        )
        (many / run).mkdir(parents=True)
        (many / run / "results.json").write_text(json.dumps({"id": run, "results": [entry]}))
    by_job = dict(read_trials(many, cache=False).trials.select("job", "attempt").iter_rows())
    assert by_job == {"r_a": 1, "r_b": 2, "r_c": 3}


def test_timestamp_named_run_file(samples, tmp_path):
    folder = tmp_path / "goose"
    folder.mkdir()
    shutil.copy(samples / DROID_RUN / "tb_rc2_sonnet_1" / "results.json", folder / "2025-09-01__10-00-00_results.json")
    trials = read_trials(folder, cache=False).trials
    assert trials.height == 80
    assert trials["job"].unique().to_list() == ["2025-09-01__10-00-00"]


def test_run_without_metadata_takes_names_from_folders(samples, tmp_path):
    entry = read_json(samples / DROID_RUN / "tb_rc2_sonnet_1" / "results.json")["results"][0]
    for run in ("run1_2025-08-10__05-27-18", "run2_2025-08-10__21-53-39"):
        name = f"{entry['task_id']}.1-of-1.{run.split('_', 1)[1]}"
        trial = tmp_path / "20250811_cursor-cli_claude-4-sonnet" / run / entry["task_id"] / name
        trial.mkdir(parents=True)
        start = f"2025-08-1{run[3]}T00:00:00+00:00"
        (trial / "results.json").write_text(json.dumps(dict(entry, trial_name=name, trial_started_at=start)))
    trials = read_trials(tmp_path, cache=False).trials.sort("attempt")
    assert trials["job"].to_list() == ["run1_2025-08-10__05-27-18", "run2_2025-08-10__21-53-39"]
    assert trials["attempt"].to_list() == [1, 2]
    assert trials["agent"].unique().to_list() == ["cursor-cli"]
    assert trials["model"].unique().to_list() == ["claude-4-sonnet"]
