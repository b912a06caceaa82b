"""``check_tasks`` on tasks with planted verifier faults of known truth (:mod:`depthlab.simulate.checks`):
every planted fault is reported, and no other; bad inputs give one line each and the other tasks go on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from depthlab import schema
from depthlab.checks import check_tasks
from depthlab.simulate.checks import BAD, PLANTED

pytestmark = pytest.mark.docker

FAULTS = ("fault", "flaky")


@pytest.fixture(scope="module")
def planted(planted_run: dict[str, Any]) -> dict[str, Path]:
    return planted_run["tasks"]


@pytest.fixture(scope="module")
def report(planted_run: dict[str, Any]) -> Any:
    """Every planted task but the coin-flip one, at one oracle replay (once per test run:
    tests/checks/conftest.py)."""
    return planted_run["report"]


def found(table: pl.DataFrame) -> dict[tuple[str, str, str], str]:
    rows = table.filter(pl.col("outcome").is_in(FAULTS)).iter_rows(named=True)
    return {(row["task"], row["step"], row["check"]): row["outcome"] for row in rows}


def test_check_reports_every_planted_fault_and_no_other(report: Any) -> None:
    schema.check(report.table, "checks")
    planted = {key: value for key, value in PLANTED.items() if key[0] != "flaky"}
    assert found(report.table.filter(pl.col("check") != "lint")) == planted
    assert report.problems == []
    assert report.table.filter(pl.col("outcome") == "error").height == 0


def test_every_task_step_and_check_has_one_row(report: Any) -> None:
    rows = report.table.filter(pl.col("check") != "lint")
    assert rows.select("task", "step", "check").is_duplicated().sum() == 0
    # 7 tasks, 10 steps, 7 checks per step besides lint
    assert rows.height == 10 * 7
    assert report.table.filter(pl.col("check") == "lint").height == 7


def test_mutants_count_the_commands_caught_and_the_silent_line(report: Any) -> None:
    blind = report.table.filter((pl.col("task") == "blind") & (pl.col("check") == "mutants")).row(0, named=True)
    assert (blind["caught"], blind["total"], blind["work"], blind["replays"]) == (1, 2, 2, 2)
    assert "echo two > /app/two.txt" in blind["evidence"]
    clean = report.table.filter((pl.col("task") == "clean") & (pl.col("check") == "mutants"))
    assert clean["caught"].to_list() == clean["total"].to_list() == [2, 1]


def test_an_unmarked_step_is_not_marked_never_a_pass_or_a_fail(report: Any) -> None:
    rows = report.table.filter(pl.col("task") == "unmarked")
    outcome = dict(zip(rows["check"], rows["outcome"], strict=True))
    assert outcome["key_removed"] == outcome["next_after_key"] == outcome["fix_not_in_instruction"] == "not_marked"
    assert outcome["before"] == outcome["mutants"] == outcome["oracle"] == "ok"


def test_the_replays_are_harbor_trials_the_loader_reads(report: Any) -> None:
    from depthlab.runner.output import load_job_trials

    trial_dirs = {Path(p).parent.parent for p in ";".join(report.table["trials"].drop_nulls()).split(";")}
    assert len(trial_dirs) == 1
    trials = load_job_trials(trial_dirs.pop())
    assert trials.height == report.replays_run
    assert set(trials["agent"]) == {"depthlab-replay"}


def test_a_coin_flip_verifier_is_flaky(planted: dict[str, Path], docker_client: Any, tmp_path: Path) -> None:
    # missed with probability 2 * 2**-10 (every replay the same by chance)
    report = check_tasks(
        planted["flaky"], jobs_dir=tmp_path, repeat=10, docker_client=docker_client, checks=["oracle", "before"]
    )
    outcome = dict(zip(report.table["check"], report.table["outcome"], strict=True))
    assert outcome == {"oracle": "flaky", "before": "not_applicable"}


def test_bad_input_is_one_line_each_and_the_other_tasks_go_on(bad_run: dict[str, Any]) -> None:
    report = bad_run["report"]  # the bad inputs and the unmarked task, checked together (tests/checks/conftest.py)
    assert len(report.problems) == len(BAD)
    for name, words in BAD.items():
        line = next(problem for problem in report.problems if problem.startswith(f"{name}:"))
        assert words in line, line
        rows = report.table.filter(pl.col("task") == name)
        assert rows.filter(pl.col("outcome").is_in(["ok", "fault"])).height <= (2 if name == "open-mark" else 1)
        assert rows["evidence"].str.contains(words, literal=True).any(), rows
    unmarked = report.table.filter(pl.col("task") == "unmarked")
    assert unmarked["outcome"].to_list() == ["ok", "ok", "not_marked"]
