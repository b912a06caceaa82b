"""The Harbor engine's task copies, without Docker: real task.toml files written back read the same, and a
copy keeps the replayed steps only, ungated, with the rest of the task untouched."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from depthlab.engines.harbor_replays import replay_task
from depthlab.io.harbor_task import config_text
from depthlab.runner.task import load_task
from depthlab.simulate.checks import write_planted_tasks

COOKBOOK = Path("/work/shared/samples/harbor-framework_harbor-cookbook")


def test_real_task_tomls_written_back_read_the_same() -> None:
    if not COOKBOOK.is_dir():
        pytest.skip(f"the cookbook's tasks are not at hand ({COOKBOOK})")
    files = sorted(COOKBOOK.rglob("task.toml"))
    assert files
    for path in files:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
        assert tomllib.loads(config_text(config)) == config, path


def test_config_text_writes_every_value_kind_tomllib_reads() -> None:
    config = {
        "s": 'quote " and \\ and \n and ü',
        "n": 3,
        "x": 1.5,
        "inf": float("inf"),
        "b": False,
        "list": [1, "two", [3]],
        "inline": [{"a": 1}, {"a": 2}],
        "dotted key": {"nested": {"deep": "yes"}},
        "steps": [{"name": "a", "min_reward": {"reward": 1.0}}, {"name": "b"}],
    }
    assert tomllib.loads(config_text(config)) == config


def test_a_copy_holds_the_replayed_steps_ungated_and_is_reused(tmp_path: Path) -> None:
    tasks = write_planted_tasks(tmp_path / "tasks", "debian:12")
    task = load_task(tasks["clean"])
    copy = replay_task(task, 1, tmp_path / "copies")
    config = tomllib.loads((copy / "task.toml").read_text())
    original = tomllib.loads((task.path / "task.toml").read_text())
    assert config["steps"] == [{"name": "make"}]
    assert original["steps"][0]["min_reward"] == 1.0  # the task itself is untouched
    assert config["task"] == original["task"]  # the same name: its trials read as the task's
    assert (copy / "steps" / "make" / "solution" / "solve.sh").read_text() == (
        task.path / "steps" / "make" / "solution" / "solve.sh"
    ).read_text()
    assert replay_task(task, 1, tmp_path / "copies") == copy
    assert replay_task(task, None, tmp_path / "copies") != copy
    assert len(load_task(replay_task(task, None, tmp_path / "copies")).steps) == 2
