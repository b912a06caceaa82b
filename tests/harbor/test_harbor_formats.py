"""Harbor itself judges depthlab's Harbor files: plan job configs and the simulator's jobs load with
Harbor's own pydantic models (the pinned Harbor in its Python >= 3.12 side venv, see
scripts/harbor-venv.sh). The runner's jobs are judged in tests/runner/test_runner_harbor.py."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import msgspec
import pytest

from depthlab import cli
from depthlab.io import harbor_records as hr
from depthlab.io import harbor_writer as hw
from depthlab.io import load_trials
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
    config = hw.as_object(hw.job_config("bad", "jobs", [hw.agent_config("terminus-2", "p/m")]))
    config["datasets"] = [{"path": "tasks", "name": "terminal-bench"}]
    config["n_attempts"] = "many"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(config))
    trajectory = tmp_path / "trajectory.json"
    trajectory.write_text(json.dumps({"schema_version": "ATIF-v1.6", "agent": {"name": "a"}, "steps": []}))
    errors = harbor_check([("job_config", path), ("trajectory", trajectory)])
    assert "n_attempts" in errors[str(path)]
    assert errors[str(trajectory)] is not None


@pytest.fixture(scope="module")
def plan_configs(simulated, tmp_path_factory) -> list[Path]:
    configs = tmp_path_factory.mktemp("configs")
    args = ["plan", "--tasks", str(simulated / "tasks" / "tmax"), str(simulated / "tasks" / "depth")]
    args += ["--models", "sim/model-a,sim/model-b", "--caps", "1,2,3", "--attempts", "2"]
    assert cli.main([*args, "-o", str(configs / "plan.csv"), "--harbor-configs", str(configs)]) == 0
    return sorted(configs.glob("*.json"))


def test_plan_harbor_configs_load_as_harbor_job_configs(plan_configs, harbor_check):
    assert len(plan_configs) == 2 * 3  # models x caps
    errors = harbor_check([("job_config", path) for path in plan_configs])
    assert errors == {str(path): None for path in plan_configs}
    for path in plan_configs:
        config = json.loads(path.read_text())
        assert len(config["datasets"]) == 2  # one entry per task folder


def test_harbor_run_dry_run_accepts_plan_configs(plan_configs, harbor_python, harbor_env, simulated, tmp_path):
    """``harbor run --config FILE --dry-run`` checks what the models do not: the agent's kwargs
    (terminus-2 rejects unknown ones) and the tasks the datasets name."""
    n_tasks = sum(1 for path in [simulated / "tasks" / "tmax", simulated / "tasks" / "depth"] for _ in path.iterdir())
    harbor = str(harbor_python.parent / "harbor")
    for path in plan_configs[:2]:  # one model's caps 1 and 2 (each dry run takes seconds)
        done = subprocess.run(  # no API key here, and the model is never called: skip that check
            [harbor, "run", "--config", str(path), "--dry-run", "--skip-credential-checks"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=harbor_env,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert f"Dry run OK — {2 * n_tasks} trial(s)" in " ".join(done.stdout.split()), done.stdout[-2000:]


def test_trials_harbor_would_run_from_a_plan_config_load_at_the_stated_cap(plan_configs, harbor_plan, tmp_path):
    """Harbor expands a plan config into trial configs; wrapped in results, they load at cap K."""
    path = next(path for path in plan_configs if "__cap-02" in path.name)
    trial_configs = harbor_plan(path)
    datasets = json.loads(path.read_text())["datasets"]
    assert len(trial_configs) == 2 * sum(len(entry["task_names"]) for entry in datasets)  # 2 attempts
    job_dir = tmp_path / "jobs" / "harbor-run"
    for index, config in enumerate(trial_configs):
        name = config["trial_name"] or hw.trial_name(Path(config["task"]["path"]).name)
        assert re.fullmatch(r".{1,32}__[A-Za-z0-9]{7}", name)  # Harbor's naming rule is the writer's
        # Harbor's own trial config, as depthlab's record (so the record holds what Harbor writes)
        record = msgspec.convert({**config, "trial_name": name}, hr.TrialConfigRecord)
        assert hw.as_object(record) == {**config, "trial_name": name}
        result = hw.trial_result(
            record,
            result_id=f"r-{index}",
            task_name=Path(config["task"]["path"]).name,
            task_path=config["task"]["path"],
            trial_dir=job_dir / name,
            source="sim",
            task_checksum="c",
            agent=hw.agent_info(config["agent"]["name"], "2.0.0", config["agent"]["model_name"]),
            agent_result=hw.agent_result(metadata={"n_episodes": 2}),
            rewards={"reward": 1.0},
            exception=None,
            started_at="2026-01-01T00:00:00.000000Z",
            finished_at="2026-01-01T00:01:00.000000Z",
            phases={},
        )
        hw.write_json(job_dir / name / "result.json", result)
    trials = load_trials([tmp_path / "jobs"], cache=False, strict=True)
    assert trials.height == len(trial_configs)
    assert trials["cap"].to_list() == [2] * trials.height  # stated by extra_instructions, enforced by max_turns
    assert set(trials["model"]) == {json.loads(path.read_text())["agents"][0]["model_name"]}


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
