"""Whole trials against a real Docker Engine and the scripted Chat Completions server, read back
through the real loaders and the real depth estimator."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import docker.errors
import polars as pl
import pytest
from runner_helpers import API_KEY_ENV, chain_policy, owned_containers, reply

import depthlab
from depthlab import schema
from depthlab.runner import ChatClient, HarnessConfig, OracleAgent, TerminusAgent, fill, run_tasks

pytestmark = pytest.mark.docker

MODELS = ("scripted/alpha", "scripted/beta")
CAPS = (1, 2, 3, 5)


def agent_factory(url: str, *, max_retries: int = 1):
    def make(model: str, cap: int | None) -> TerminusAgent:
        client = ChatClient(url, model, api_key_env=API_KEY_ENV, max_retries=max_retries, backoff_sec=0.01)
        return TerminusAgent(client, HarnessConfig(cap=cap))

    return make


def run_hello(agent, jobs_dir, docker_client, tasks_root, **options):
    """Run the ``hello`` task with ``agent`` into one new job under ``jobs_dir``, without a progress bar."""
    return run_tasks(
        [tasks_root / "hello"], agent, jobs_dir=jobs_dir, docker_client=docker_client, progress=False, **options
    )


@pytest.fixture(scope="module")
def depth_fill(docker_client, tasks_root, endpoint, tmp_path_factory):
    """Fill the depth-3 chain task at caps 1, 2, 3, 5 for two models, watching the containers."""
    key = "sk-depthlab-" + os.urandom(12).hex()
    previous = os.environ.get(API_KEY_ENV)
    os.environ[API_KEY_ENV] = key
    inspections: list[dict] = []

    def inspect_running() -> None:
        for container in owned_containers(docker_client, os.getpid()):
            with contextlib.suppress(docker.errors.NotFound):  # a trial may just have ended
                container.reload()
                inspections.append(container.attrs)

    endpoint.reset(chain_policy, on_request=inspect_running)
    jobs = tmp_path_factory.mktemp("jobs")
    plan = pl.DataFrame(
        [
            {"dataset": "runner-tests", "task": "chain", "model": m, "cap": c, "attempts": 1}
            for m in MODELS
            for c in CAPS
        ]
    )
    try:
        summary = fill(
            plan,
            tasks_dir=tasks_root,
            jobs_dir=jobs,
            agent_factory=agent_factory(endpoint.url),
            docker_client=docker_client,
            concurrency=2,
            progress=False,
        )
        requests = list(endpoint.requests)
    finally:
        if previous is None:
            os.environ.pop(API_KEY_ENV, None)
        else:
            os.environ[API_KEY_ENV] = previous
    return {
        "jobs": jobs,
        "plan": plan,
        "summary": summary,
        "inspections": inspections,
        "key": key,
        "requests": requests,
    }


def test_depth_three_task_is_recovered_through_the_loaders(depth_fill):
    summary = depth_fill["summary"]
    assert len(summary.outcomes) == 8
    assert not summary.errors
    assert not summary.exceptions
    trials = depthlab.load_trials(depth_fill["jobs"], cache=False)
    schema.check(trials, "trials")
    assert sorted(zip(trials["model"], trials["cap"], strict=True)) == sorted((m, c) for m in MODELS for c in CAPS)
    by_cap = trials.group_by("cap").agg(pl.col("status").unique(), pl.col("n_turns").unique()).sort("cap")
    # one file per turn: caps 1 and 2 stop short; cap 3 finishes at the cap; cap 5 confirms in turn 4
    assert by_cap["status"].to_list() == [["fail"], ["fail"], ["pass"], ["pass"]]
    assert by_cap["n_turns"].to_list() == [[1], [2], [3], [4]]
    assert trials["turn_limit"].to_list() == trials["cap"].to_list()
    depth = depthlab.estimate_depth(trials)
    row = depth.filter(pl.col("task") == "chain").row(0, named=True)
    assert row["depth"] == 3
    assert row["status"] == "solved"
    assert json.loads(row["depth_by_model"]) == dict.fromkeys(MODELS, 3)


def test_trial_folders_are_harbor_format(depth_fill):
    jobs: Path = depth_fill["jobs"]
    # the oracle preflight's job sits in the hidden .preflight folder, which the loaders skip
    results = sorted(path for path in jobs.glob("*/*/result.json") if not path.parts[-3].startswith("."))
    assert len(results) == 8
    for path in results:
        trial = path.parent
        result = json.loads(path.read_text())
        config = json.loads((trial / "config.json").read_text())
        assert result["config"] == config
        cap = config["agent"]["kwargs"]["stated_cap"]
        assert config["agent"]["kwargs"]["max_turns"] == cap
        assert config["agent"]["kwargs"]["output_limit_bytes"] == 10_000
        # the default profile, named in every trial: the network task.toml allows (Harbor's default: yes)
        assert config["environment"]["kwargs"]["profile"] == "harbor"
        assert config["environment"]["kwargs"]["network_mode"] == "bridge"
        assert result["agent_info"]["model_info"]["provider"] == "scripted"
        assert result["trial_name"] == trial.name
        assert len(result["task_checksum"]) == 64
        for phase in ("environment_setup", "agent_setup", "agent_execution", "verifier"):
            assert result[phase]["started_at"] <= result[phase]["finished_at"]
        reward = float((trial / "verifier" / "reward.txt").read_text())
        assert result["verifier_result"]["rewards"] == {"reward": reward}
        trajectory = json.loads((trial / "agent" / "trajectory.json").read_text())
        assert trajectory["schema_version"] == "ATIF-v1.6"
        assert [step["step_id"] for step in trajectory["steps"]] == list(range(1, len(trajectory["steps"]) + 1))
        agent_steps = [step for step in trajectory["steps"] if step["source"] == "agent"]
        assert len(agent_steps) == result["agent_result"]["metadata"]["n_episodes"]
        assert f"at most {cap} turn" in trajectory["steps"][0]["message"]
        prompt_tokens = sum(step["metrics"]["prompt_tokens"] for step in agent_steps)
        assert result["agent_result"]["n_input_tokens"] == prompt_tokens
        assert trajectory["final_metrics"]["total_prompt_tokens"] == prompt_tokens
        assert result["agent_result"]["n_cache_tokens"] == 7 * len(agent_steps)
    job_dirs = sorted(path for path in jobs.iterdir() if path.is_dir() and not path.name.startswith("."))
    assert len(job_dirs) == 8  # one Harbor job per (model, cap)
    for job in job_dirs:
        job_result = json.loads((job / "result.json").read_text())
        assert job_result["n_total_trials"] == job_result["stats"]["n_completed_trials"] == 1
        job_config = json.loads((job / "config.json").read_text())
        assert job_config["agents"][0]["kwargs"]["stated_cap"] in CAPS


def test_api_key_is_used_but_never_stored_nor_given_to_containers(depth_fill):
    key = depth_fill["key"].encode()
    assert all(
        request["headers"]["Authorization"] == f"Bearer {depth_fill['key']}" for request in depth_fill["requests"]
    )
    files = [path for path in depth_fill["jobs"].rglob("*") if path.is_file()]
    assert len(files) > 8 * 5
    assert [str(path) for path in files if key in path.read_bytes()] == []
    assert depth_fill["inspections"], "the endpoint never saw a running container"
    for attrs in depth_fill["inspections"]:
        assert key not in json.dumps(attrs).encode()
        host = attrs["HostConfig"]
        assert host["NetworkMode"] == "bridge"  # the harbor profile: as task.toml allows
        assert host["Privileged"] is False
        assert not host["CapDrop"]  # Docker's default capabilities, as in Harbor
        assert "no-new-privileges" in host["SecurityOpt"]
        assert host["Memory"] == 256 * 1024 * 1024
        assert host["NanoCpus"] == 1_000_000_000
        assert host["PidsLimit"] == 1024


def test_a_second_fill_finds_every_cell_done(depth_fill, docker_client, tasks_root, endpoint):
    endpoint.reset(lambda messages, model: (500, "must not be called"))
    summary = fill(
        depth_fill["plan"],
        tasks_dir=tasks_root,
        jobs_dir=depth_fill["jobs"],
        agent_factory=agent_factory(endpoint.url),
        docker_client=docker_client,
        progress=False,
    )
    assert summary.outcomes == []
    assert summary.n_trials_already_done == 8
    assert endpoint.requests == []


def test_oracle_passes_solvable_tasks_and_faults_are_recorded(docker_client, tasks_root, tmp_path):
    summary = run_tasks(
        [tasks_root / name for name in ("chain", "hello", "multi-key", "slow-verifier", "compose-task")],
        OracleAgent(),
        jobs_dir=tmp_path,
        job_name="oracle",
        docker_client=docker_client,
        concurrency=2,
        progress=False,
    )
    outcomes = {outcome.task: outcome for outcome in summary.outcomes}
    assert sorted(outcomes) == ["chain", "hello", "multi-key", "slow-verifier"]
    assert (outcomes["chain"].rewards, outcomes["chain"].exception) == ({"reward": 1.0}, None)
    assert (outcomes["hello"].rewards, outcomes["hello"].exception) == ({"reward": 1.0}, None)
    # solve.sh exits 3: graded all the same, as Harbor's oracle grades it, the exit code recorded
    assert (outcomes["multi-key"].rewards, outcomes["multi-key"].exception) == ({"segment_1": 1, "segment_2": 0}, None)
    assert (outcomes["multi-key"].trial_dir / "agent" / "exit-code.txt").read_text() == "3"
    assert outcomes["slow-verifier"].exception == "VerifierTimeoutError"
    assert outcomes["slow-verifier"].rewards is None
    assert len(summary.skipped) == 1
    assert "Harbor" in summary.skipped[0]
    assert "docker-compose.yaml" in summary.skipped[0]
    trials = depthlab.load_trials(tmp_path, cache=False)
    assert trials["cap"].null_count() == 4
    assert dict(zip(trials["task"], trials["status"], strict=True)) == {
        "chain": "pass",
        "hello": "pass",
        "multi-key": "fail",  # no "reward" key: a valid failure
        "slow-verifier": "invalid",  # a verifier timeout: Harbor gives it no valid reward
    }


def test_malformed_reply_is_shown_to_the_model_and_counts_as_a_turn(docker_client, tasks_root, endpoint, tmp_path):
    def policy(messages, model):
        turn = sum(1 for message in messages if message["role"] == "assistant") + 1
        if turn == 1:
            return "I think I will write the file now."
        if turn == 2:
            return reply("echo hello > /app/hello.txt\n", complete=True)
        return reply(complete=True)

    endpoint.reset(policy)
    summary = run_hello(agent_factory(endpoint.url)("scripted/alpha", 5), tmp_path, docker_client, tasks_root)
    (outcome,) = summary.outcomes
    assert (outcome.reward, outcome.exception, outcome.n_turns) == (1.0, None, 3)
    second_prompt = endpoint.requests[1]["body"]["messages"][-1]["content"]
    assert second_prompt.startswith("Previous response had parsing errors:\nERROR: No JSON object")
    result = json.loads((outcome.trial_dir / "result.json").read_text())
    assert result["agent_result"]["metadata"]["parse_errors"] == 1
    assert result["agent_result"]["metadata"]["task_complete"] is True
    trials = depthlab.load_trials(tmp_path, cache=False)
    assert trials["n_turns"].to_list() == [3]


def test_endpoint_errors_are_retried_then_recorded_as_invalid(docker_client, tasks_root, endpoint, tmp_path):
    endpoint.reset(lambda messages, model: (500, "internal error"))
    summary = run_hello(
        agent_factory(endpoint.url, max_retries=2)("scripted/alpha", 3), tmp_path, docker_client, tasks_root
    )
    (outcome,) = summary.outcomes
    assert outcome.exception == "LLMEndpointError"
    assert "after 3 attempt" in outcome.message
    assert len(endpoint.requests) == 3
    assert (outcome.trial_dir / "exception.txt").is_file()
    trials = depthlab.load_trials(tmp_path, cache=False)
    assert trials["status"].to_list() == ["invalid"]


def test_a_hang_past_the_agent_timeout_is_a_verified_failure(docker_client, tasks_root, endpoint, tmp_path):
    endpoint.reset(lambda messages, model: reply("sleep 1000\n", duration=600))
    started = time.monotonic()
    summary = run_hello(
        agent_factory(endpoint.url)("scripted/alpha", 5), tmp_path, docker_client, tasks_root, agent_timeout_sec=2.0
    )
    assert time.monotonic() - started < 30
    (outcome,) = summary.outcomes
    assert outcome.exception == "AgentTimeoutError"
    assert outcome.rewards == {"reward": 0.0}  # the verifier still ran, as in Harbor
    assert outcome.n_turns == 1
    trials = depthlab.load_trials(tmp_path, cache=False)
    assert trials["status"].to_list() == ["fail"]


def test_a_container_that_dies_mid_trial_is_recorded_as_invalid(docker_client, tasks_root, endpoint, tmp_path):
    def kill_on_second_request() -> None:
        if len(endpoint.requests) == 2:
            for container in owned_containers(docker_client, os.getpid()):
                container.kill()

    endpoint.reset(lambda messages, model: reply("echo still here\n"), on_request=kill_on_second_request)
    summary = run_hello(agent_factory(endpoint.url)("scripted/alpha", 5), tmp_path, docker_client, tasks_root)
    (outcome,) = summary.outcomes
    assert outcome.exception == "ContainerExitedError"
    assert outcome.n_turns == 2
    assert owned_containers(docker_client, os.getpid()) == []
    assert depthlab.load_trials(tmp_path, cache=False)["status"].to_list() == ["invalid"]


def test_cli_fill_plans_from_run_logs_and_cli_run_runs_the_oracle(depth_fill, tasks_root, endpoint, tmp_path, api_key):
    from depthlab.cli import main

    only_chain = tmp_path / "tasks" / "runner-tests"
    shutil.copytree(tasks_root / "chain", only_chain / "chain")
    endpoint.reset(chain_policy)
    jobs = tmp_path / "jobs"
    common = ["--jobs-dir", str(jobs), "--base-url", endpoint.url, "--api-key-env", API_KEY_ENV, "--no-progress"]
    # the earlier fill's logs pin D for alpha and beta; a third model needs caps 1, 2 and 3
    code = main(
        [
            "fill",
            str(depth_fill["jobs"]),
            "--tasks",
            str(only_chain),
            "--models",
            "scripted/gamma",
            "--caps",
            "1,2,3",
            *common,
        ]
    )
    assert code == 0
    trials = depthlab.load_trials(jobs, cache=False)
    assert sorted(trials["cap"].to_list()) == [1, 2, 3]
    assert set(trials["model"]) == {"scripted/gamma"}
    assert len(endpoint.requests) == 1 + 2 + 3
    assert main(["run", str(only_chain / "chain"), "--agent", "oracle", "--job-name", "oracle", *common]) == 0
    (result,) = (jobs / "oracle").glob("*/result.json")
    assert json.loads(result.read_text())["verifier_result"]["rewards"] == {"reward": 1.0}


@pytest.fixture
def small_disk(tmp_path):
    """A 512 KiB tmpfs (needs root and CAP_SYS_ADMIN; skipped elsewhere, it is not about Docker)."""
    mount_point = tmp_path / "small-disk"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount_point)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill up: {done.stderr.decode().strip()}")
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_a_full_disk_mid_fill_is_reported_not_a_crash(docker_client, tasks_root, endpoint, small_disk):
    def fill_the_disk() -> None:
        if len(endpoint.requests) == 2:  # during the first trial's second turn
            with contextlib.suppress(OSError), (small_disk / "ballast").open("wb") as handle:
                while True:
                    handle.write(b"\0" * 65536)

    endpoint.reset(lambda messages, model: reply("echo working\n"), on_request=fill_the_disk)
    summary = run_hello(
        agent_factory(endpoint.url)("scripted/alpha", 5), small_disk / "jobs", docker_client, tasks_root, attempts=3
    )
    assert summary.outcomes == []
    trial_errors = [message for message in summary.errors if message.startswith("hello")]
    assert len(trial_errors) == 3
    assert all("No space left on device" in message for message in summary.errors)
    assert owned_containers(docker_client, os.getpid()) == []
