"""``depthlab check`` on the command line: the table to ``-o``, one line per bad task, the exit codes.
Static checks only, so no Docker is needed."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from depthlab.checks import read_checks
from depthlab.cli import main
from depthlab.simulate.checks import write_planted_tasks


def test_check_writes_the_table_and_says_what_is_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = write_planted_tasks(tmp_path / "tasks", "debian:12")
    (tmp_path / "tasks" / "broken").mkdir()
    (tmp_path / "tasks" / "broken" / "task.toml").write_text("[not toml")
    out = tmp_path / "checks.parquet"
    code = main(
        [
            "check",
            str(tmp_path / "tasks"),
            "--jobs-dir",
            str(tmp_path / "jobs"),
            "--checks",
            "named_in_instruction,fix_not_in_instruction",
            "-o",
            str(out),
        ]
    )
    assert code == 1  # faults found
    err = capsys.readouterr().err
    assert "depthlab check: broken: cannot be read" in err
    table = read_checks(out)
    assert set(table["task"]) == {*tasks, "broken"}
    faults = table.filter(pl.col("outcome") == "fault").select("task", "check").rows()
    assert sorted(faults) == [("fix-given", "fix_not_in_instruction"), ("path-missing", "named_in_instruction")]


def test_a_tb1_task_among_harbor_tasks_is_named_with_the_way_to_check_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a TB1 task (task.yaml) in a folder of Harbor tasks was left out without a word; Harbor runs it only migrated
    tasks = write_planted_tasks(tmp_path / "tasks", "debian:12")
    old = tmp_path / "tasks" / "tb1-task"
    old.mkdir()
    (old / "task.yaml").write_text("instruction: Print hello.\n")
    out = tmp_path / "checks.csv"
    argv = ["check", str(tmp_path / "tasks"), "--jobs-dir", str(tmp_path / "jobs"), "--checks", "named_in_instruction"]
    assert main([*argv, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "tb1-task: cannot be read:" in err
    assert "Terminal-Bench 1 task (task.yaml, no task.toml)" in err
    assert "harbor tasks migrate" in err
    table = read_checks(out)
    assert set(table["task"]) == {*tasks, "tb1-task"}
    assert table.filter(pl.col("task") == "tb1-task")["outcome"].to_list() == ["error"]


def test_check_of_clean_tasks_exits_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = write_planted_tasks(tmp_path / "tasks", "debian:12")
    argv = ["check", str(tasks["clean"]), "--jobs-dir", str(tmp_path / "jobs"), "--checks", "named_in_instruction"]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("task,step,step_index,check,outcome")  # no -o: CSV on stdout


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--repeat", "0"], "--repeat, --concurrency and --mutants must be at least 1"),
        (["--concurrency", "0"], "--repeat, --concurrency and --mutants must be at least 1"),
        (["--checks", "oracle,nope"], "checks"),
        (["-o", "out.txt"], "must end in .csv or .parquet"),
    ],
)
def test_a_mistake_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    tasks = write_planted_tasks(tmp_path / "tasks", "debian:12")
    assert main(["check", str(tasks["clean"]), "--jobs-dir", str(tmp_path / "jobs"), *argv]) == 2
    err = capsys.readouterr().err
    assert words in err
    assert len(err.strip().splitlines()) == 1
