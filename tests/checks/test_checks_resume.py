"""``depthlab check`` killed (``kill -9``) mid-way and run again: no replay is done twice and none is lost,
and the table is the one an uninterrupted check gives."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from depthlab.runner.leftovers import TRIAL_LABEL
from depthlab.simulate.checks import write_planted_tasks

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
CHECKS = "oracle,before,key_removed,next_after_key"
# the clean two-step task: 2 oracle replays, 1 before per step, 1 key replay per step
REPLAYS = 6


def _check(task: Path, jobs: Path, out: Path, engine: list[str]) -> subprocess.Popen[str]:
    code = "import sys; from depthlab.cli import main; sys.exit(main())"
    return subprocess.Popen(
        [
            *(sys.executable, "-c", code, "check", str(task), "--jobs-dir", str(jobs)),
            *("--checks", CHECKS, "-o", str(out), *engine),
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _replays(jobs: Path) -> list[str]:
    keys = []
    for result in sorted((jobs / "depthlab-check").glob("*/result.json")):
        config = json.loads((result.parent / "config.json").read_text())
        keys.append(config["agent"]["kwargs"]["replay"])
    return keys


@pytest.mark.harbor  # both halves judge the replays with Harbor's models and viewer
@pytest.mark.parametrize("engine", ["local", "harbor"])
def test_a_killed_check_resumes_without_doing_a_replay_twice(
    engine: str,
    userland: str,
    docker_client: Any,
    harbor_check: Any,
    harbor_viewer: Any,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    on = ["--engine", "harbor", "--harbor", request.getfixturevalue("harbor_cmd")] if engine == "harbor" else []
    task = write_planted_tasks(tmp_path / "tasks", userland)["clean"]
    jobs, out = tmp_path / "jobs", tmp_path / "checks.csv"
    first = _check(task, jobs, out, on)
    deadline = time.monotonic() + 600
    while len(_replays(jobs)) < 2 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert first.poll() is None, first.communicate()
    os.killpg(first.pid, signal.SIGKILL)  # the whole process group, as a lost terminal would
    first.wait()
    done_before = {p.parent.name for p in (jobs / "depthlab-check").glob("*/result.json")}
    assert 2 <= len(done_before) < REPLAYS
    assert not out.exists()

    second = _check(task, jobs, out, on)
    _, stderr = second.communicate(timeout=900)
    assert second.returncode == 0, stderr
    keys = _replays(jobs)
    assert len(keys) == len(set(keys)) == REPLAYS  # none twice, none lost
    assert done_before <= {p.parent.name for p in (jobs / "depthlab-check").glob("*/result.json")}
    assert f"{REPLAYS - len(done_before)} replays run, {len(done_before)} found done" in stderr
    table = pl.read_csv(out)
    assert set(table["outcome"]) <= {"ok", "not_applicable"}
    assert table.height == 2 * 4

    # a third run replays nothing and gives the same table
    third = _check(task, jobs, tmp_path / "again.csv", on)
    _, stderr = third.communicate(timeout=300)
    assert third.returncode == 0, stderr
    assert f"0 replays run, {REPLAYS} found done" in stderr
    again = pl.read_csv(tmp_path / "again.csv")
    assert again.drop("seconds").equals(table.drop("seconds"))
    # the replays' job is Harbor's format: Harbor's own models load every file of it
    judged = harbor_check([jobs / "depthlab-check"])
    assert len(judged) >= 2 * REPLAYS + 2
    assert {path: error for path, error in judged.items() if error} == {}
    # ... and `harbor view` lists the job and every replay
    with harbor_viewer(jobs) as view:
        listed = {job["name"]: job for job in view.api("/api/jobs?page_size=100")["items"]}
        assert listed["depthlab-check"]["agents"] == ["depthlab-replay"]
        trials = view.api("/api/jobs/depthlab-check/trials?page_size=100")["items"]
        assert len(trials) == REPLAYS
    # this check's containers only (other checks and runs may share the Docker engine)
    # (the task's label comes from its image, which other modules' runs of the planted tasks share: a container
    # is this check's when its trial label names one of this job's replays)
    replays = {path.name for path in (jobs / "depthlab-check").iterdir()}
    leftovers = [
        container.name
        for container in docker_client.containers.list(all=True, filters={"label": "depthlab.task=planted/clean"})
        if any(container.labels.get(TRIAL_LABEL, "").startswith(replay) for replay in replays)
    ]
    assert leftovers == []
    trial_names = {name.lower() for name in replays}
    projects = {c.labels.get("com.docker.compose.project", "") for c in docker_client.containers.list(all=True)}
    assert not {project for project in projects if project.removesuffix("__env") in trial_names}
