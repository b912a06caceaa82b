"""Harbor itself judges depthlab's Harbor files: plan job configs and the simulator's jobs load with
Harbor's own pydantic models (the pinned Harbor in its Python >= 3.12 side venv, see
scripts/harbor-venv.sh). The runner's jobs are judged in tests/runner/test_runner_harbor.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from depthlab import cli
from depthlab.io import harbor_writer
from depthlab.simulate import write_runs

pytestmark = pytest.mark.harbor


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> Path:
    summary = write_runs(
        tmp_path_factory.mktemp("sim") / "out", seed=5, scale=0.01, public_attempts=1, invalid_rate=0.2
    )
    assert summary.n_invalid > 0  # the invalid-trial shape is judged too
    return summary.out_dir


def test_the_judge_can_fail(harbor_check, tmp_path):
    """A config Harbor rejects (a registry name beside a local path) is reported with its reason."""
    config = harbor_writer.job_config("bad", "jobs", [harbor_writer.agent_config("terminus-2", "p/m")])
    config["datasets"] = [{"path": "tasks", "name": "terminal-bench"}]
    config["n_attempts"] = "many"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(config))
    trajectory = tmp_path / "trajectory.json"
    trajectory.write_text(json.dumps({"schema_version": "ATIF-v1.6", "agent": {"name": "a"}, "steps": []}))
    errors = harbor_check([("job_config", path), ("trajectory", trajectory)])
    assert "n_attempts" in errors[str(path)]
    assert errors[str(trajectory)] is not None


def test_plan_harbor_configs_load_as_harbor_job_configs(simulated, harbor_check, tmp_path):
    configs = tmp_path / "configs"
    args = ["plan", "--tasks", str(simulated / "tasks" / "tmax"), str(simulated / "tasks" / "depth")]
    args += ["--models", "sim/model-a,sim/model-b", "--caps", "1,2,3", "--attempts", "2"]
    assert cli.main([*args, "-o", str(tmp_path / "plan.csv"), "--harbor-configs", str(configs)]) == 0
    files = sorted(configs.glob("*.json"))
    assert len(files) == 2 * 3  # models x caps
    errors = harbor_check([("job_config", path) for path in files])
    assert errors == {str(path): None for path in files}
    for path in files:
        config = json.loads(path.read_text())
        assert len(config["datasets"]) == 2  # one entry per task folder
        agent = config["agents"][0]
        assert agent["kwargs"][harbor_writer.STATED_CAP_KEY] == agent["kwargs"][harbor_writer.TURN_LIMIT_KEY]


def test_simulated_jobs_load_with_harbor_models(simulated, harbor_check):
    jobs = sorted(path for path in (simulated / "jobs").glob("*/*") if (path / "config.json").is_file())
    assert len(jobs) == 7 * 2 * 9  # collections x models x (8 caps + public)
    errors = harbor_check(jobs[::5])
    kinds = {Path(path).name for path in errors}
    assert kinds == {"config.json", "result.json", "trajectory.json"}
    assert sum(Path(path).name == "result.json" for path in errors) > 30
    assert {path: error for path, error in errors.items() if error} == {}


def test_harbor_view_lists_agent_model_and_source_of_simulated_jobs(simulated, harbor_viewer):
    """Harbor's viewer shows a job's agent and model only when Harbor accepts its JobConfig."""
    with harbor_viewer(simulated / "jobs" / "tmax") as view:
        jobs = view.api("/api/jobs?page_size=100")["items"]
    assert len(jobs) == 2 * 9
    for job in jobs:
        model = job["name"].split("__")[1].removeprefix("sim-")
        assert (job["agents"], job["providers"], job["models"]) == (["terminus-2"], ["sim"], [model])
        assert job["datasets"] == ["tmax"]
