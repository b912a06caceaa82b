"""``check_tasks`` on the cookbook's real ``simple-task`` recipe (harbor-framework/harbor-cookbook), local engine.

The recipe's verifier downloads its tools while it runs (``apt-get install curl``, then ``curl
https://astral.sh/uv/...``, then ``uvx pytest``): offline (the paper's rule, ``offline=True``) its
oracle cannot pass, and the row must say why in one line from the verifier's own output. With the
task's own network (the default, as Harbor runs it) it passes where astral.sh is reachable; on a
machine that reaches only package registries (this project's CI) it fails for the same named reason.
The copy's image is the Debian userland (``FROM ubuntu:24.04`` cannot be pulled here); nothing else
changes. One oracle replay per setting, run once for the module.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from depthlab.checks import CheckReport, check_tasks
from depthlab.runner.image import image_tag
from depthlab.runner.task import load_task

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def simple_task(samples: Path, userland: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = samples / "harbor-framework_harbor-cookbook" / "harbor_cookbook" / "recipes" / "simple-task"
    if not source.is_dir():
        pytest.skip(f"the cookbook's simple-task recipe is not at {source}")
    target = tmp_path_factory.mktemp("cookbook") / "simple-task"
    shutil.copytree(source, target)
    (target / "environment" / "Dockerfile").write_text(f"FROM {userland}\nWORKDIR /app\n")
    return target


@pytest.fixture(scope="module")
def checked(
    simple_task: Path, docker_client: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[CheckReport, list[str]]]:
    found = {}
    for setting, offline in (("offline", True), ("task", False)):
        lines: list[str] = []
        report = check_tasks(
            simple_task,
            jobs_dir=tmp_path_factory.mktemp(f"jobs-{setting}"),
            checks=["oracle"],
            repeat=1,
            offline=offline,
            docker_client=docker_client,
            progress=lines.append,
        )
        found[setting] = (report, lines)
    return found


def test_offline_the_oracle_row_says_the_tests_need_the_network(checked: dict[str, Any]) -> None:
    report, _ = checked["offline"]
    row = report.table.row(0, named=True)
    assert row["outcome"] == "fault"
    assert row["evidence"] == (
        "the full solution fails its checks in 1 replays: the tests need the network "
        "(could not resolve host astral.sh); replays offline (--offline)"
    )


def test_with_the_tasks_network_it_passes_or_names_the_host_it_cannot_reach(checked: dict[str, Any]) -> None:
    report, _ = checked["task"]
    row = report.table.row(0, named=True)
    assert row["evidence"].endswith("; replays with the network the task allows")
    if row["outcome"] != "ok":  # no internet here (package registries only): the same named cause
        assert row["outcome"] == "fault"
        assert "(could not resolve host astral.sh)" in row["evidence"], row["evidence"]


def test_one_progress_line_per_replay_and_one_per_task(checked: dict[str, Any]) -> None:
    for report, lines in checked.values():
        replay_lines = [line for line in lines if " oracle#1: " in line]
        assert len(replay_lines) == report.replays_run == 1
        assert replay_lines[0].startswith("[0:")  # the time since the check started
        assert replay_lines[0].endswith(" s)")  # the replay's own seconds
        assert lines[-1] == f"simple-task: 1 {report.table['outcome'].item()}"


def test_the_task_image_built_for_the_check_is_removed(
    checked: dict[str, Any], simple_task: Path, docker_client: Any
) -> None:
    import docker.errors

    with pytest.raises(docker.errors.ImageNotFound):
        docker_client.images.get(image_tag(load_task(simple_task)))
