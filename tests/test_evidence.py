"""depthlab.evidence: one task's grid agrees with the estimator and the planner, and draws what it says."""

from __future__ import annotations

import polars as pl
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from depthlab import evidence, schema
from depthlab.io import load_trials
from depthlab.measures import estimate_depth, plan_missing
from depthlab.simulate import write_runs


def _trials(rows: list[tuple]) -> pl.DataFrame:
    frame = pl.DataFrame(rows, schema=["task", "model", "cap", "status", "n_turns", "attempt"], orient="row")
    return schema.conform(frame.with_columns(dataset=pl.lit("d")), "trials")


@pytest.fixture
def trials() -> pl.DataFrame:
    return _trials(
        [
            ("t", "a", 1, "fail", 1, 1),
            ("t", "a", 2, "invalid", None, 1),
            ("t", "a", 3, "pass", 3, 1),
            ("t", "a", 3, "pass", 2, 2),
            ("t", "b", 2, "fail", 2, 1),
            ("t", "b", 5, "pass", 4, 1),
            ("u", "b", 1, "pass", 1, 1),  # another task of the collection: b counts, a too
        ]
    )


def test_cells_have_the_state_turns_and_marks_of_their_runs(trials):
    cells = evidence.task_evidence(trials, "d", "t", caps=(1, 2, 3, 5))
    assert cells.columns == list(evidence.EVIDENCE)
    by_cell = {(row["model"], row["cap"]): row for row in cells.iter_rows(named=True)}
    assert len(by_cell) == 8  # 2 models x 4 caps, missing cells included
    assert [by_cell[("a", c)]["state"] for c in (1, 2, 3, 5)] == ["fail", "invalid", "pass", "missing"]
    assert [by_cell[("b", c)]["state"] for c in (1, 2, 3, 5)] == ["missing", "fail", "missing", "pass"]
    assert by_cell[("a", 3)]["turns"] == [3, 2]  # by attempt
    assert by_cell[("a", 2)]["turns"] == [None]
    assert by_cell[("a", 2)]["n_runs"] == 1
    assert (by_cell[("a", 1)]["model_depth"], by_cell[("b", 1)]["model_depth"]) == (3, 5)


def test_depth_and_plan_agree_with_the_estimator_and_the_planner(trials):
    caps = (1, 2, 3, 5)
    cells = evidence.task_evidence(trials, "d", "t", caps=caps)
    depth = estimate_depth(trials, caps=caps).filter(pl.col("task") == "t").row(0, named=True)
    assert (cells["depth"][0], cells["depth_status"][0]) == (depth["depth"], depth["status"]) == (None, "incomplete")
    keys = pl.DataFrame({"dataset": ["d"], "task": ["t"]})
    for mode, column in (("sweep", "needed"), ("adaptive", "next")):
        plan = plan_missing(trials, keys, models=["a", "b"], caps=caps, mode=mode)
        assert sorted(cells.filter(pl.col(column)).select("model", "cap").rows()) == sorted(
            plan.select("model", "cap").rows()
        ), mode
    # a model's failures are needed below the smallest pass (3): a at 2 (only invalid), b at 1
    assert sorted(cells.filter(pl.col("needed")).select("model", "cap").rows()) == [("a", 2), ("b", 1)]


def test_models_choose_the_grid_rows_and_the_estimate(trials):
    cells = evidence.task_evidence(trials, "d", "t", models=["a"], caps=(1, 2, 3, 5))
    assert set(cells["model"]) == {"a"}
    assert cells["depth_status"][0] == "incomplete"  # a's cap 2 was only an infrastructure error
    solved = evidence.task_evidence(trials.filter(pl.col("status") != "invalid"), "d", "t", models=["b"], caps=(2, 5))
    assert (solved["depth"][0], solved["depth_status"][0]) == (5, "solved")


def test_the_grid_agrees_with_estimate_depth_on_simulated_runs(tmp_path):
    write_runs(tmp_path, seed=3, scale=0.01, invalid_rate=0.3)
    trials = load_trials(tmp_path / "jobs", cache=False)
    depth = estimate_depth(trials)
    for row in depth.iter_rows(named=True):
        cells = evidence.task_evidence(trials, row["dataset"], row["task"])
        assert (cells["depth"][0], cells["depth_status"][0]) == (row["depth"], row["status"])
        missing = cells.filter(pl.col("needed"))["cap"].unique().sort().to_list()
        assert missing == row["caps_missing"]


def test_the_plot_draws_one_patch_per_cell_in_its_state_colour(trials):
    cells = evidence.task_evidence(trials, "d", "t", caps=(1, 2, 3, 5))
    ax = evidence.evidence_plot(cells, cap=2, selected=("a", 3))
    patches = [p for p in ax.patches if isinstance(p, Rectangle)]
    colours = [p.get_facecolor() for p in patches if p.get_width() == pytest.approx(0.9)]
    assert len(colours) == 8
    from matplotlib.colors import to_rgba

    expected = sorted(to_rgba(evidence.STATE_COLOURS[s]) for s in cells["state"])
    assert sorted(colours) == expected
    texts = [t.get_text() for t in ax.texts]
    # a's cap 2 had only an infrastructure error and is still needed; b's cap 1 is the next run
    assert sorted(text for text in texts if text) == sorted(["1", "×\nneeded", "3,2", "next", "2", "4"])
    assert ax.get_title() == "d / t: D not pinned (incomplete)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3", "5"]
    outlined = [p for p in patches if not p.get_fill()]
    assert [p.get_x() for p in outlined] == [pytest.approx(2 - 0.5)]


def test_example_tasks_and_the_static_figure():
    audit = pl.DataFrame(
        {
            "dataset": ["d", "d", "d", "d", "e"],
            "task": ["a", "b", "c", "x", "y"],
            "depth": [1, 5, None, None, 20],
            "depth_status": ["solved", "solved", "unsolved", "incomplete", "solved"],
        }
    )
    picked = evidence.example_tasks(audit, n=5)
    assert picked.rows() == [
        ("e", "y", "deepest solved"),
        ("d", "a", "solved at D = 1"),
        ("d", "c", "unsolved"),
        ("d", "x", "incomplete"),
        ("d", "b", "solved"),
    ]
    assert evidence.example_tasks(audit, n=2).height == 2
    trials = _trials([("a", "m", 1, "pass", 1, 1), ("c", "m", 1, "fail", 1, 1)])
    fig = evidence.evidence_grids(trials, pl.DataFrame({"dataset": ["d", "d", "d"], "task": ["a", "c", "a"]}))
    assert isinstance(fig, Figure)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    solved, unsolved = "d / a: D = 1 (solved)", "d / c: D not pinned (incomplete)"
    assert [ax.get_title() for ax in visible] == [solved, unsolved, solved]


def test_bad_parameters_name_the_parameter(trials):
    with pytest.raises(ValueError, match="'task' parameter of task_evidence"):
        evidence.task_evidence(trials, "d", "")
    with pytest.raises(ValueError, match="'trials' parameter of task_evidence"):
        evidence.task_evidence(trials.drop("n_turns"), "d", "t")
    with pytest.raises(ValueError, match="'n' parameter of example_tasks"):
        evidence.example_tasks(pl.DataFrame({"dataset": [], "task": [], "depth": [], "depth_status": []}), n=0)
    with pytest.raises(ValueError, match="'ncols' parameter of evidence_grids"):
        evidence.evidence_grids(trials, trials.select("dataset", "task"), ncols=0)
    assert evidence.task_evidence(trials, "other", "t").is_empty()
