"""depthlab.widgets.explore: builds from the tables, and driving its widgets from code updates what it shows."""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

import ipywidgets
import polars as pl
import pytest

from depthlab import schema, widgets
from depthlab.io import load_trials, read_steps
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
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    # a saved notebook shows the text form: it must tell the reader to run the notebook
    assert bundle["text/plain"] == widgets.LIVE_ONLY
    assert explorer.collection.options == ("tb2", "tmax")
    assert explorer.models.options == ("m1", "m2")
    assert explorer.models.value == ("m1", "m2")
    # every cap, status and model: every task of the collection, with its runs
    assert explorer.task_table()["task"].to_list() == ["alpha", "beta", "gamma"]
    assert explorer.task_table()["runs"].to_list() == [2, 4, 1]
    assert "every task</b> of tb2: 7 runs by m1, m2" in explorer._task_caption.value


def test_sliding_the_cap_and_filtering_update_the_task_table_and_its_caption(tables):
    explorer = widgets.explore(*tables)
    explorer.cap.value = 1
    table = explorer.task_table()
    assert table["task"].to_list() == ["alpha", "beta", "gamma"]
    assert table["passes"].to_list() == [1, 0, 0]
    assert "3 runs by m1, m2 at stated cap 1" in explorer._task_caption.value
    explorer.status.value = "pass"
    assert explorer.task_table()["task"].to_list() == ["alpha"]
    assert [value for _, value in explorer.task.options] == ["alpha"]
    assert "1 of 3 tasks</b> of tb2: 1 run by m1, m2 at stated cap 1 with status pass" in explorer._task_caption.value
    explorer.status.value = widgets.ALL
    explorer.cap.value = 3
    explorer.models.value = ("m2",)
    assert explorer.task_table()["task"].to_list() == ["beta"]
    assert explorer.task_table()["runs"].to_list() == [2]  # the invalid trial is a run too, shown by status
    explorer.cap.value = widgets.UNCAPPED
    explorer.models.value = ("m1", "m2")
    assert explorer.task_table()["task"].to_list() == ["alpha"]
    assert "without a stated cap" in explorer._task_caption.value


def test_an_empty_pane_says_which_filter_emptied_it(tables):
    explorer = widgets.explore(*tables)
    explorer.models.value = ("m2",)
    explorer.cap.value = 2
    assert explorer.task_table().is_empty()
    assert explorer.task.value is None
    assert "tb2 has 3 runs by m2, but none at stated cap 2 (they are at stated caps 1, 3)" in (
        explorer._task_caption.value
    )
    assert "No task selected" in explorer._runs_caption.value
    assert "no task is selected" in explorer._grid_caption.value
    assert explorer._grid.layout.display == "none"
    assert explorer.run.options == ()
    assert explorer.task.layout.display == explorer.run.layout.display == "none"  # the captions say why
    explorer.cap.value = 3
    explorer.status.value = "pass"
    explorer.task.value = "beta"
    explorer.models.value = ("m1",)
    assert "tb2 has 4 runs by m1, but none at stated cap 3 (they are at stated caps 1, 2 and uncapped)" in (
        explorer._task_caption.value
    )
    explorer.models.value = ()
    assert "no model is chosen" in explorer._task_caption.value


def test_the_runs_of_the_selected_task_follow_every_filter(tables):
    explorer = widgets.explore(*tables)
    explorer.task.value = "beta"
    assert [value for _, value in explorer.run.options] == ["beta__c1", "beta__c2", "beta__c3", "beta__c3x"]
    assert explorer.run.options[0][0] == "cap 1 · m1 · attempt – · fail · 1 turn"
    assert explorer.run.options[3][0] == "cap 3 · m2 · attempt – · invalid · no turn count"
    explorer.cap.value = 2
    assert [value for _, value in explorer.run.options] == ["beta__c2"]
    assert explorer.run_details()["cap"] == 2
    assert "stated cap 2" in explorer._run_view.value
    assert "1 run of beta</b> by m1, m2 at stated cap 2; 3 more are hidden by the filters" in (
        explorer._runs_caption.value
    )
    assert "Outlined: the chosen run (m1, cap 2)." in explorer._grid_caption.value
    explorer.cap.value = 3
    explorer.status.value = "invalid"
    assert [value for _, value in explorer.run.options] == ["beta__c3x"]
    assert explorer.run_details()["status"] == "invalid"
    explorer.status.value = "pass"
    explorer.models.value = ("m2",)
    assert [value for _, value in explorer.run.options] == ["beta__c3"]
    explorer.status.value = "fail"
    # beta has no failed run by m2 at cap 3: the task leaves the table and the panes say so
    assert explorer.task.value is None
    assert explorer.run.value is None
    assert explorer._run_view.value == ""


def test_the_evidence_grid_of_the_selected_task_follows_models_and_cap(tables):
    explorer = widgets.explore(*tables)
    explorer.task.value = "beta"
    cells = explorer.evidence()
    assert set(cells["model"]) == {"m1", "m2"}
    states = {(m, c): s for m, c, s in cells.select("model", "cap", "state").rows()}
    assert (states[("m1", 1)], states[("m1", 2)], states[("m2", 3)]) == ("fail", "fail", "pass")
    caption = explorer._grid_caption.value
    assert "D not pinned (incomplete)" in caption
    assert "each model's own D: m1 –, m2 3" in caption
    assert "plan_missing would run next: m2 at cap 1" in caption
    png = explorer._grid.value
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    explorer.cap.value = 2
    assert explorer._grid.value != png  # the chosen cap's column is shaded
    assert "Shaded: stated cap 2." in explorer._grid_caption.value
    explorer.models.value = ("m2",)
    # m2 has no run of beta at cap 2: the task leaves the table, and with it the grid
    assert explorer.task.value is None
    assert explorer._grid.layout.display == "none"
    explorer.cap.value = 3
    assert explorer.task.value == "beta"
    assert set(explorer.evidence()["model"]) == {"m2"}
    assert "over 1 chosen model (" in explorer._grid_caption.value
    assert "D not pinned (incomplete)" in explorer._grid_caption.value


def test_choosing_a_collection_resets_models_and_tasks(tables):
    explorer = widgets.explore(*tables)
    explorer.models.value = ("m1",)
    explorer.collection.value = "tmax"
    assert explorer.models.options == ("m3",)
    assert explorer.models.value == ("m3",)
    explorer.cap.value = 2
    assert explorer.task_table()["task"].to_list() == ["delta"]
    assert explorer.task.value == "delta"
    assert "plan_missing would run next: m3 at cap 1" in explorer._grid_caption.value  # cap 1 was never run


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
    assert explorer.run.label.startswith(f"cap {run['cap']} · {run['model']} · attempt {run['attempt']} · ")
    turns = explorer.run_turns()
    assert turns.height == run["n_turns"]
    trajectory = json.loads((Path(run["source"]).parent / "agent" / "trajectory.json").read_text())
    typed = [
        call["arguments"]["keystrokes"].rstrip("\n")
        for step in trajectory["steps"]
        for call in step.get("tool_calls") or []
        if "keystrokes" in call["arguments"]
    ]
    # one command line per call (a run that ends by marking the task complete adds that call)
    lines = [line for text in turns["commands"].drop_nulls() for line in text.split("\n")]
    assert [line for line in lines if line != "mark_task_complete()"] == typed
    shown = explorer._run_view.value
    assert f"{run['n_turns']} turns of {run['trial']}" in shown
    assert all(html.escape(command) in shown for command in typed)
    assert shown.count("<tr>") == run["n_turns"] + 1  # header and one row per turn

    broken = trials.filter(pl.col("n_turns").is_null() & pl.col("cap").is_not_null()).row(0, named=True)
    explorer.collection.value = broken["dataset"]
    explorer.cap.value = broken["cap"]
    explorer.task.value = broken["task"]
    explorer.run.value = broken["trial"]
    assert explorer.run_turns() is None
    assert "no readable trajectory" in explorer._run_view.value
    assert "<table" not in explorer._run_view.value


def test_a_run_without_a_source_file_gets_a_note(tables):
    explorer = widgets.explore(*tables)
    explorer.task.value = "beta"
    explorer.run.value = "beta__c2"
    assert explorer.run_details()["cap"] == 2
    assert explorer.run_turns() is None
    assert "no turns: the run has no source file" in explorer._run_view.value


def test_a_run_shows_each_turns_dependencies(tmp_path):
    # a plain import, not importorskip: the depth proxy is part of depthlab, so a broken import must fail here
    from depthlab.measures import turn_dependencies

    write_runs(tmp_path, seed=2, scale=0.01)
    trials = load_trials(tmp_path / "jobs", cache=False)
    audit = schema.conform(trials.select("dataset", "task").unique(), "audit")
    run = trials.filter(pl.col("cap").is_null() & (pl.col("n_turns") > 2)).sort("trial").row(0, named=True)
    explorer = widgets.explore(audit, trials)
    explorer.collection.value = run["dataset"]
    explorer.cap.value = widgets.UNCAPPED
    explorer.task.value = run["task"]
    explorer.run.value = run["trial"]
    folder = Path(run["source"]).parent
    expected = turn_dependencies(read_steps(folder, prompt=True, max_chars=sys.maxsize))
    turns = explorer.run_turns()
    assert turns["level"].to_list() == expected["level"].to_list()
    shown = explorer._run_view.value
    assert "<th>level</th><th>uses</th>" in shown
    for level, uses in expected.select("level", "uses").rows():
        assert f"<td>{level}</td><td>{html.escape(uses or '–')}</td>" in shown
