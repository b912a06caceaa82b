"""depthlab.widgets.explore: builds from the tables, and driving its widgets from code updates what it shows."""

from __future__ import annotations

import html
import json
from pathlib import Path

import ipywidgets
import polars as pl
import pytest

from depthlab import schema, widgets
from depthlab.io import load_trials
from depthlab.simulate import write_runs


@pytest.fixture
def tables() -> tuple[pl.DataFrame, pl.DataFrame]:
    audit = schema.conform(
        pl.DataFrame(
            {
                "dataset": ["tb2", "tb2", "tb2", "tmax"],
                "task": ["alpha", "beta", "gamma", "delta"],
                "depth": [1, 3, None, 2],
                "depth_status": ["solved", "solved", "unsolved", "solved"],
                "work": [5, 40, 90, 12],
            }
        ),
        "audit",
    )
    rows = [
        # (dataset, task, model, cap, status, n_turns, trial)
        ("tb2", "alpha", "m1", 1, "pass", 1, "alpha__c1"),
        ("tb2", "beta", "m1", 1, "fail", 1, "beta__c1"),
        ("tb2", "beta", "m1", 2, "fail", 2, "beta__c2"),
        ("tb2", "beta", "m2", 3, "pass", 3, "beta__c3"),
        ("tb2", "beta", "m2", 3, "invalid", None, "beta__c3x"),
        ("tb2", "gamma", "m2", 1, "fail", 1, "gamma__c1"),
        ("tb2", "alpha", "m1", None, "pass", 7, "alpha__pub"),
        ("tmax", "delta", "m3", 2, "pass", 2, "delta__c2"),
    ]
    trials = schema.conform(
        pl.DataFrame(
            rows, schema=["dataset", "task", "model", "cap", "status", "n_turns", "trial"], orient="row"
        ).with_columns(turn_limit=pl.col("cap").fill_null(200), rewards=pl.lit('{"reward": 1.0}')),
        "trials",
    )
    return audit, trials


def test_explorer_builds_a_displayable_widget(tables):
    explorer = widgets.explore(*tables)
    assert isinstance(explorer.widget, ipywidgets.VBox)
    assert "application/vnd.jupyter.widget-view+json" in explorer._repr_mimebundle_()
    assert explorer.collection.options == ("tb2", "tmax")
    assert explorer.model.options == (widgets.ALL, "m1", "m2")
    # uncapped, every model, every status: every task of the collection, with its matching runs
    assert explorer.task_table()["task"].to_list() == ["alpha", "beta", "gamma"]
    assert explorer.task_table()["runs"].to_list() == [1, 0, 0]


def test_sliding_the_cap_and_filtering_update_the_task_table(tables):
    explorer = widgets.explore(*tables)
    explorer.cap.value = 1
    table = explorer.task_table()
    assert table["task"].to_list() == ["alpha", "beta", "gamma"]
    assert table["passes"].to_list() == [1, 0, 0]
    assert "3 tasks" in explorer._table.value
    explorer.status.value = "pass"
    assert explorer.task_table()["task"].to_list() == ["alpha"]
    assert explorer.task.options == ("alpha",)
    explorer.status.value = widgets.ALL
    explorer.cap.value = 3
    explorer.model.value = "m2"
    assert explorer.task_table()["task"].to_list() == ["beta"]
    assert explorer.task_table()["runs"].to_list() == [2]  # the invalid trial is a run too, shown by status


def test_choosing_a_collection_resets_models_and_tasks(tables):
    explorer = widgets.explore(*tables)
    explorer.model.value = "m1"
    explorer.collection.value = "tmax"
    assert explorer.model.options == (widgets.ALL, "m3")
    assert explorer.model.value == widgets.ALL
    explorer.cap.value = 2
    assert explorer.task_table()["task"].to_list() == ["delta"]
    assert explorer.task.value == "delta"


def test_a_selected_task_shows_its_runs_by_cap_and_one_run(tables):
    explorer = widgets.explore(*tables)
    explorer.cap.value = 1
    explorer.task.value = "beta"
    runs = explorer.runs_by_cap()
    # valid runs only: cap 1 and 2 by m1 (failed), cap 3 by m2 (passed); the invalid trial is left out
    assert runs.select("cap", "model", "runs", "passes").rows() == [(1, "m1", 1, 0), (2, "m1", 1, 0), (3, "m2", 1, 1)]
    assert "runs of beta" in explorer._runs.value
    assert set(explorer.run.options) == {"beta__c1", "beta__c2", "beta__c3", "beta__c3x"}
    explorer.run.value = "beta__c2"
    details = explorer.run_details()
    assert (details["cap"], details["n_turns"], details["status"]) == (2, 2, "fail")
    assert "stated cap 2" in explorer._turns.value


def test_explore_rejects_bad_input(tables):
    audit, trials = tables
    with pytest.raises(ValueError, match=r"'trials' parameter of explore must have the columns \['n_turns'\]"):
        widgets.explore(audit, trials.drop("n_turns"))
    with pytest.raises(ValueError, match="'audit' parameter of explore must have at least one task"):
        widgets.explore(audit.clear(), trials)
    with pytest.raises(TypeError, match="'audit' parameter of explore must be a polars DataFrame"):
        widgets.explore(audit.to_pandas(), trials)


def test_a_simulated_run_shows_its_turns_from_its_trajectory(tmp_path):
    write_runs(tmp_path, seed=2, scale=0.01, invalid_rate=0.3)
    trials = load_trials(tmp_path / "jobs", cache=False)
    audit = schema.conform(trials.select("dataset", "task").unique(), "audit")
    capped = trials.filter(pl.col("cap").is_not_null() & (pl.col("n_turns") > 1))
    run = capped.sort("n_turns", "trial", descending=[True, False]).row(0, named=True)
    explorer = widgets.explore(audit, trials)
    explorer.collection.value = run["dataset"]
    explorer.cap.value = run["cap"]
    explorer.task.value = run["task"]
    explorer.run.value = run["trial"]
    turns = explorer.run_turns()
    assert turns.height == run["n_turns"]
    trajectory = json.loads((Path(run["source"]).parent / "agent" / "trajectory.json").read_text())
    typed = [
        call["arguments"]["keystrokes"].rstrip("\n")
        for step in trajectory["steps"]
        for call in step.get("tool_calls") or []
        if "keystrokes" in call["arguments"]
    ]
    assert turns["commands"].head(len(typed)).to_list() == typed
    shown = explorer._turns.value
    assert f"{run['n_turns']} turns of {run['trial']}" in shown
    assert all(html.escape(command) in shown for command in typed)
    assert shown.count("<tr>") == run["n_turns"] + 1  # header and one row per turn

    broken = trials.filter(pl.col("n_turns").is_null() & pl.col("cap").is_not_null()).row(0, named=True)
    explorer.collection.value = broken["dataset"]
    explorer.cap.value = broken["cap"]
    explorer.task.value = broken["task"]
    explorer.run.value = broken["trial"]
    assert explorer.run_turns() is None
    assert "no readable trajectory" in explorer._turns.value
    assert "<table" not in explorer._turns.value


def test_a_run_without_a_source_file_gets_a_note(tables):
    explorer = widgets.explore(*tables)
    explorer.cap.value = 1
    explorer.task.value = "beta"
    explorer.run.value = "beta__c2"
    assert explorer.run_turns() is None
    assert "no turns: the run has no source file" in explorer._turns.value
