"""The runner's jobs, judged by Harbor itself: every file loads with Harbor's models, and
``harbor view`` (Harbor's own viewer, on 127.0.0.1) lists the job's agent, model and trials,
through its HTTP API and in headless Chromium."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from runner_helpers import API_KEY_ENV, chain_policy

from depthlab.runner import ChatClient, HarnessConfig, OracleAgent, TerminusAgent, run_tasks

pytestmark = [pytest.mark.docker, pytest.mark.harbor]

MODEL = "scripted/alpha"
JOB = "depthlab-harbor-view"


@pytest.fixture(scope="module")
def runner_jobs(docker_client, tasks_root, endpoint, tmp_path_factory) -> Path:
    """Two runner jobs: terminus at cap 5 on chain + hello (model scripted/alpha), and the oracle."""
    previous = os.environ.get(API_KEY_ENV)
    os.environ[API_KEY_ENV] = "sk-depthlab-" + os.urandom(12).hex()
    endpoint.reset(chain_policy)
    jobs = tmp_path_factory.mktemp("harbor-jobs")
    try:
        agent = TerminusAgent(ChatClient(endpoint.url, MODEL, api_key_env=API_KEY_ENV), HarnessConfig(cap=5))
        tasks = [tasks_root / "chain", tasks_root / "hello"]
        summary = run_tasks(tasks, agent, jobs_dir=jobs, job_name=JOB, docker_client=docker_client, progress=False)
        assert len(summary.outcomes) == 2
        assert not summary.errors
        summary = run_tasks(
            [tasks_root / "hello"],
            OracleAgent(),
            jobs_dir=jobs,
            job_name="oracle",
            docker_client=docker_client,
            progress=False,
        )
        assert summary.outcomes[0].reward == 1.0
    finally:
        if previous is None:
            os.environ.pop(API_KEY_ENV, None)
        else:
            os.environ[API_KEY_ENV] = previous
    return jobs


def test_runner_files_load_with_harbor_models(runner_jobs, harbor_check):
    errors = harbor_check([runner_jobs / JOB, runner_jobs / "oracle"])
    names = sorted(Path(path).relative_to(runner_jobs).as_posix() for path in errors)
    assert sum(name.endswith("agent/trajectory.json") for name in names) == 2  # terminus trials only
    assert sum(name.endswith("/result.json") for name in names) == 2 + 3  # 2 jobs, 3 trials
    assert {path: error for path, error in errors.items() if error} == {}


@pytest.fixture(scope="module")
def harbor_view(runner_jobs, harbor_viewer) -> Iterator:
    with harbor_viewer(runner_jobs) as view:
        yield view


def test_harbor_view_api_lists_agent_model_and_trials(harbor_view, runner_jobs):
    jobs = {job["name"]: job for job in harbor_view.api("/api/jobs")["items"]}
    assert set(jobs) == {JOB, "oracle"}
    job = jobs[JOB]
    assert job["agents"] == ["depthlab-terminus"]
    assert job["providers"] == ["scripted"]
    assert job["models"] == ["alpha"]
    assert job["n_total_trials"] == job["n_completed_trials"] == 2
    assert job["environment_type"] == "docker"
    assert job["datasets"] == ["runner-tests"]  # the task folder
    assert jobs["oracle"]["agents"] == ["oracle"]
    assert jobs["oracle"]["models"] == []
    trials = harbor_view.api(f"/api/jobs/{JOB}/trials")["items"]
    on_disk = sorted(path.parent.name for path in (runner_jobs / JOB).glob("*/result.json"))
    assert sorted(trial["name"] for trial in trials) == on_disk
    for trial in trials:
        assert trial["agent_name"] == "depthlab-terminus"
        assert (trial["model_provider"], trial["model_name"]) == ("scripted", "alpha")
        written = json.loads((runner_jobs / JOB / trial["name"] / "result.json").read_text())
        assert trial["reward"] == written["verifier_result"]["rewards"]["reward"]
    assert sorted(trial["reward"] for trial in trials) == [0.0, 1.0]  # chain solved, hello not (chain policy)


def test_harbor_view_in_headless_chromium_shows_the_job(harbor_view, tmp_path):
    """The jobs page as a person sees it: a screenshot, read back with OCR, names job, agent and model."""
    browser, ocr = _tool("chromium"), _tool("tesseract")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--virtual-time-budget=15000"]
    # loopback only: no host resolves but 127.0.0.1, and none of the browser's background services
    flags += ["--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1", "--disable-background-networking"]
    flags += ["--disable-component-update", "--disable-sync", "--no-pings", "--disable-default-apps"]
    flags += [f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,900"]
    expected = (JOB, "depthlab-terminus", "alpha", "runner-tests")  # job, agent, model, source
    # up to three screenshots: on a loaded machine the first may be taken before the page's API call answers
    # (the page's frame alone reads "HARBOR")
    for attempt in range(3):
        screenshot = tmp_path / f"jobs-{attempt}.png"
        subprocess.run(
            [browser, *flags, f"--screenshot={screenshot}", harbor_view.url],
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        seen = subprocess.run([ocr, str(screenshot), "stdout"], capture_output=True, text=True, timeout=120, check=True)
        read = seen.stdout.lower()  # OCR may take a monospace l for an L
        if all(shown in read for shown in expected):
            break
    for shown in expected:
        assert shown in read, f"the screenshot does not show {shown!r}; OCR read: {seen.stdout[:1500]}"
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", harbor_view.url], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "oracle" in dom  # the other job, rendered by the viewer's JavaScript from the API


def _tool(name: str) -> str:
    """The path of a Debian tool the browser test needs (``make harbor`` installs them)."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is missing (`make harbor` installs Debian's chromium and tesseract-ocr)"
        if os.environ.get("DEPTHLAB_REQUIRE_HARBOR") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path
