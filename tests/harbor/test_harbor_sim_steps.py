"""Harbor itself judges the simulator's multi-step layout (``write_runs(segments_as="steps")``): its
segmented tasks load as Harbor ``Task``s (schema 1.4 ``[[steps]]``, each step's files where Harbor
looks for them), its trials and jobs with Harbor's models, and Harbor's viewer shows a multi-step
trial's steps with the rewards written. Runs in the pinned Harbor's side venv (skips without it)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from depthlab.simulate import steps as sim_steps
from depthlab.simulate import write_runs

# the suite's own helpers in tests/conftest.py, loaded under a name of their own ("conftest" is
# ambiguous: other folders have one too)
_ROOT_CONFTEST = Path(__file__).parents[1] / "conftest.py"
_spec = importlib.util.spec_from_file_location("depthlab_tests_root_conftest", _ROOT_CONFTEST)
assert _spec is not None
assert _spec.loader is not None
_root = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_root)
harbor_files, run_harbor_check = _root.harbor_files, _root.run_harbor_check

pytestmark = pytest.mark.harbor


@pytest.fixture(scope="module")
def stepped(tmp_path_factory):
    summary = write_runs(
        tmp_path_factory.mktemp("sim-steps") / "out",
        seed=5,
        scale=0.05,
        public_attempts=2,
        invalid_rate=0.1,
        segments_as="steps",
    )
    assert summary.n_invalid > 0  # an invalid run of a multi-step task is judged too
    return summary


def test_simulated_multi_step_tasks_load_as_harbor_tasks(stepped, harbor_python):
    folders = sorted(path for path in (stepped.tasks_dir / "depth").iterdir() if path.is_dir())
    truth = {row["task"]: row["segments"] for row in stepped.truth.iter_rows(named=True)}
    assert len(folders) >= 2
    entries = run_harbor_check(harbor_python, [("task", folder) for folder in folders])
    assert [entry["error"] for entry in entries] == [None] * len(folders)
    for folder, entry in zip(folders, entries, strict=True):
        task = entry["task"]
        assert task["valid"] is True
        assert task["name"] == f"depth/{folder.name}"
        assert task["strategy"] == sim_steps.STEP_REWARD_STRATEGY
        names = [sim_steps.step_name(index) for index in range(1, len(truth[folder.name]) + 1)]
        assert [step["name"] for step in task["steps"]] == names
        assert {step["min_reward"] for step in task["steps"]} == {1.0}
        for index, step in enumerate(task["steps"], start=1):
            assert step["instruction"].startswith(f"# {folder.name}: part {index} of {len(names)}")


def test_simulated_multi_step_jobs_load_with_harbor_models(stepped, harbor_python):
    jobs = sorted(path for path in (stepped.jobs_dir / "depth").iterdir() if (path / "config.json").is_file())
    files = [pair for job in jobs for pair in harbor_files(job)]
    steps_trajectories = sorted(stepped.jobs_dir.glob("depth/*/*/steps/*/agent/trajectory.json"))
    assert steps_trajectories  # harbor_files lists a trial's top-level trajectory only
    files += [("trajectory", path) for path in steps_trajectories[::3]]
    entries = run_harbor_check(harbor_python, files)
    assert {entry["path"]: entry["error"] for entry in entries if entry["error"]} == {}
    results = [Path(path) for kind, path in files if kind == "trial_result"]
    stepped_results = [json.loads(path.read_text()) for path in results]
    assert sum(bool(result["step_results"]) for result in stepped_results) > 20  # multi-step trials were judged


def _multi_step_trial(jobs: Path) -> tuple[str, str, dict]:
    """A public multi-step trial whose run stopped at a failed step after a passed one (else any with steps)."""
    found = []
    for path in sorted(jobs.glob("*__public/*/result.json")):
        result = json.loads(path.read_text())
        rewards = [step["verifier_result"]["rewards"]["reward"] for step in result["step_results"] or []]
        if rewards:
            found.append((rewards[0] == 1.0 and rewards[-1] == 0.0, path.parent.parent.name, path.parent.name, result))
    found.sort(key=lambda item: not item[0])
    _, job, trial, result = found[0]
    return job, trial, result


def test_harbor_view_shows_a_simulated_multi_step_trials_steps(stepped, harbor_viewer, tmp_path):
    jobs = stepped.jobs_dir / "depth"
    job, trial, written = _multi_step_trial(jobs)
    with harbor_viewer(jobs) as view:
        shown = view.api(f"/api/jobs/{job}/trials/{trial}")
        steps = shown["step_results"]
        assert [step["step_name"] for step in steps] == [step["step_name"] for step in written["step_results"]]
        assert [step["verifier_result"]["rewards"] for step in steps] == [
            step["verifier_result"]["rewards"] for step in written["step_results"]
        ]
        assert shown["verifier_result"] == written["verifier_result"]
        for step in written["step_results"]:
            trajectory = view.api(f"/api/jobs/{job}/trials/{trial}/trajectory?step={step['step_name']}")
            agent_turns = sum(entry["source"] == "agent" for entry in trajectory["steps"])
            assert agent_turns == step["agent_result"]["metadata"]["n_episodes"]
        browser = shutil.which("chromium")
        if browser is None:
            message = "chromium is missing (`make harbor` installs Debian's chromium)"
            if os.environ.get("DEPTHLAB_REQUIRE_HARBOR") == "1":
                pytest.fail(message)
            pytest.skip(message)
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--virtual-time-budget=15000"]
        flags += ["--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1", "--disable-background-networking"]
        flags += ["--disable-component-update", "--disable-sync", "--no-pings", "--disable-default-apps"]
        flags += [f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,900"]
        dom = subprocess.run(
            [browser, *flags, "--dump-dom", f"{view.url}/jobs/{job}/trials/{trial}"],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
    # the trial page as the viewer's JavaScript renders it: its Steps card names every step run
    assert "Steps" in dom
    for step in written["step_results"]:
        assert step["step_name"] in dom, f"the trial page does not show step {step['step_name']!r}"
