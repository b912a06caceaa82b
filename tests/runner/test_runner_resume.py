"""``depthlab fill`` stopped by SIGTERM and by ``kill -9`` mid-run, then resumed: nothing lost,
nothing duplicated, no container left behind. Real subprocesses, Docker and HTTP server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from runner_helpers import API_KEY_ENV, chain_policy

import depthlab
from depthlab.runner import ChatClient, HarnessConfig, TerminusAgent, fill, read_plan

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
MODELS = ("scripted/alpha", "scripted/beta")


IN_FLIGHT = {"requests": 0}
IN_FLIGHT_LOCK = threading.Lock()


def slow_chain(messages, model):
    """The chain agent, answering slowly; while a reply is pending its trial's container surely runs."""
    with IN_FLIGHT_LOCK:
        IN_FLIGHT["requests"] += 1
    try:
        time.sleep(0.5)
        return chain_policy(messages, model)
    finally:
        with IN_FLIGHT_LOCK:
            IN_FLIGHT["requests"] -= 1


def start_fill(plan: Path, tasks: Path, jobs: Path, url: str, key: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "depthlab.cli", "fill", str(plan), "--tasks", str(tasks)]
    command += ["--models", ",".join(MODELS), "--jobs-dir", str(jobs), "--base-url", url]
    command += ["--api-key-env", API_KEY_ENV, "--concurrency", "2", "--no-progress"]
    env = {**os.environ, API_KEY_ENV: key}
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def wait_for(condition, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the fill to get going")
        time.sleep(0.1)


def complete_trials(jobs: Path) -> set[str]:
    # the trials of the plan's jobs; the oracle preflight's job sits in the hidden .preflight folder
    return {path.parent.name for path in jobs.glob("*/*/result.json") if not path.parts[-3].startswith(".")}


def incomplete_trials(jobs: Path) -> list[str]:
    # hidden folders (the oracle preflight's) are skipped, as the loaders skip them
    return [
        path.name
        for path in jobs.glob("*/*")
        if path.is_dir() and not path.parent.name.startswith(".") and not (path / "result.json").exists()
    ]


def test_fill_survives_sigterm_and_kill_9_and_resumes_exactly(
    docker_client, tasks_root, endpoint, runner_labelled, tmp_path, api_key
):
    endpoint.reset(slow_chain)
    plan_file = tmp_path / "plan.csv"
    pl.DataFrame(
        [
            {"dataset": "runner-tests", "task": "chain", "model": model, "cap": cap, "attempts": 2}
            for model in MODELS
            for cap in (2, 3)
        ]
    ).write_csv(plan_file)
    jobs = tmp_path / "jobs"

    # SIGTERM: the fill removes its containers and unfinished trial folders, then exits
    process = start_fill(plan_file, tasks_root, jobs, endpoint.url, api_key)
    wait_for(lambda: IN_FLIGHT["requests"] > 0)
    process.send_signal(signal.SIGTERM)
    output = process.communicate(timeout=60)[0].decode()
    assert process.returncode == 130, output
    assert runner_labelled(process.pid) == []
    assert incomplete_trials(jobs) == []

    # kill -9: containers and half-written trials stay behind
    process = start_fill(plan_file, tasks_root, jobs, endpoint.url, api_key)
    before = complete_trials(jobs)
    wait_for(lambda: len(complete_trials(jobs)) > len(before) and IN_FLIGHT["requests"] > 0)
    process.kill()
    process.wait(timeout=30)
    survivors = complete_trials(jobs)
    assert runner_labelled(process.pid) != []
    # they stop themselves: their keep-alive reads end-of-file once the killed runner's socket closes
    wait_for(lambda: all(box.status != "running" for box in runner_labelled(process.pid)), timeout=15)
    assert incomplete_trials(jobs) != []

    # resume in-process: leftovers cleaned, only the missing trials run
    def factory(model: str, cap: int | None) -> TerminusAgent:
        client = ChatClient(endpoint.url, model, api_key_env=API_KEY_ENV, max_retries=1, backoff_sec=0.01)
        return TerminusAgent(client, HarnessConfig(cap=cap))

    endpoint.reset(chain_policy)
    summary = fill(
        read_plan(plan_file),
        tasks_dir=tasks_root,
        jobs_dir=jobs,
        agent_factory=factory,
        docker_client=docker_client,
        progress=False,
    )
    # the killed fill's containers are gone: this fill removed them, unless a fill of another test
    # worker (same host, same Docker daemon; it removes every dead owner's leftovers) was first
    assert runner_labelled(process.pid) == []
    assert summary.n_leftover_containers >= 1 or os.environ.get("PYTEST_XDIST_WORKER")
    assert summary.n_incomplete_removed >= 1
    assert summary.n_trials_already_done == len(survivors)
    assert len(summary.outcomes) == 8 - len(survivors)
    after = complete_trials(jobs)
    assert survivors <= after  # nothing lost
    assert len(after) == 8  # nothing duplicated
    assert incomplete_trials(jobs) == []
    assert runner_labelled(process.pid) == []
    assert runner_labelled() == []
    trials = depthlab.load_trials(jobs, cache=False)
    assert Counter(zip(trials["model"], trials["cap"], strict=True)) == {(m, c): 2 for m in MODELS for c in (2, 3)}
    assert set(trials.filter(pl.col("cap") == 3)["status"]) == {"pass"}
    assert set(trials.filter(pl.col("cap") == 2)["status"]) == {"fail"}
