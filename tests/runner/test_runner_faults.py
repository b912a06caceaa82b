"""The runner under attack and under faults, against a real Docker Engine and the scripted
Chat Completions server: floods, a forged reward, an endpoint that fails or hangs, a killed
runner, offline builds, a non-root agent and an instruction too long to repeat."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from runner_helpers import API_KEY_ENV, owned_containers, reply, write_task

import depthlab
from depthlab.runner import (
    ChatClient,
    ContainerLimits,
    HarnessConfig,
    OracleAgent,
    RunSettings,
    TaskContainer,
    TerminusAgent,
    ensure_image,
    load_task,
    run_tasks,
)
from depthlab.runner.errors import ContainerExitedError
from depthlab.runner.verifier import OUTPUT_LIMIT_BYTES

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]


def agent(url: str, cap: int = 5, **client_options) -> TerminusAgent:
    options = {"api_key_env": API_KEY_ENV, "max_retries": 1, "backoff_sec": 0.01, **client_options}
    return TerminusAgent(ChatClient(url, "scripted/alpha", **options), HarnessConfig(cap=cap))


def run_one(task: Path, the_agent, jobs: Path, docker_client, **options):
    summary = run_tasks([task], the_agent, jobs_dir=jobs, docker_client=docker_client, progress=False, **options)
    assert not summary.errors, summary.errors
    (outcome,) = summary.outcomes
    return outcome


class PeakMemory:
    """Samples this process's resident memory every 20 ms; ``growth_mb`` is peak minus start."""

    def __init__(self) -> None:
        self.start = self.peak = _rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _rss_mb())

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def growth_mb(self) -> float:
        return self.peak - self.start


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def with_dockerfile_lines(task: Path, lines: str) -> Path:
    """Add Dockerfile lines (before WORKDIR) to a task written by ``write_task``."""
    dockerfile = task / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace("WORKDIR /app", lines + "WORKDIR /app"))
    return task


@pytest.fixture(scope="module")
def fault_tasks(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fault-tasks") / "runner-faults"
    root.mkdir()
    # the agent forges a pass before the tests and keeps forging while they run
    write_task(
        root,
        "forge",
        instruction="Nothing to do.",
        solve_sh="mkdir -p /logs/verifier /tests\n"
        "echo 1 > /logs/verifier/reward.txt\n"
        "echo 'echo 1 > /logs/verifier/reward.txt' > /tests/planted.sh\n"
        "( while :; do echo 1 > /logs/verifier/reward.txt; sleep 0.05; done ) >/dev/null 2>&1 &\n",
        test_sh="sleep 1\nls /tests > /logs/verifier/tests-seen.txt\n"
        "echo '{\"reward\": 0}' > /logs/verifier/reward.json\n",
    )
    # the agent swaps the verifier's folder for its own while the tests run
    write_task(
        root,
        "swap",
        instruction="Nothing to do.",
        solve_sh="( while :; do if mv /logs/verifier /logs/taken 2>/dev/null; then mkdir /logs/verifier; "
        "echo 1 > /logs/verifier/reward.txt; fi; sleep 0.05; done ) >/dev/null 2>&1 &\n",
        test_sh="sleep 1\necho '{\"reward\": 0}' > /logs/verifier/reward.json\n",
    )
    # a verifier that prints 200 MB and writes a 50 MB file
    write_task(
        root,
        "loud-verifier",
        instruction="Nothing to do.",
        solve_sh="true\n",
        test_sh="yes | head -c 200000000\nhead -c 50000000 /dev/zero > /logs/verifier/big.bin\n"
        "echo 1 > /logs/verifier/reward.txt\n",
    )
    with_dockerfile_lines(
        write_task(
            root,
            "as-user",
            instruction="Write your user id to /app/who.",
            test_sh='if [ "$(cat /app/who)" = 1000 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n',
            solve_sh="id -u > /app/who\n",
        ),
        'RUN ["/bin/busybox", "chmod", "777", "/app"]\n',
    )
    instruction = "BEGIN-MARKER\n" + "Read every line of this long instruction carefully.\n" * 4000 + "END-MARKER\n"
    write_task(
        root,
        "long-instruction",
        instruction=instruction,
        test_sh="echo 1 > /logs/verifier/reward.txt\n",
    )
    return root


# ---------------------------------------------------------------- bounded memory -----------
def test_a_shell_flood_while_the_model_thinks_keeps_memory_bounded(docker_client, tasks_root, endpoint, tmp_path):
    def policy(messages, model):
        turn = sum(1 for message in messages if message["role"] == "assistant") + 1
        if turn == 1:
            return reply("yes\n", duration=0.2)
        if turn == 2:
            time.sleep(3.0)  # the model thinks while `yes` floods the shell
            return json.dumps(
                {
                    "analysis": "a flood",
                    "plan": "stop it",
                    "commands": [{"keystrokes": "C-c", "duration": 2}, {"keystrokes": "echo after-flood\n"}],
                }
            )
        return reply("echo hello > /app/hello.txt\n", complete=True)

    endpoint.reset(policy)
    with PeakMemory() as memory:
        outcome = run_one(tasks_root / "hello", agent(endpoint.url), tmp_path, docker_client)
    assert (outcome.reward, outcome.exception) == (1.0, None)
    observation = endpoint.requests[2]["body"]["messages"][-1]["content"]
    assert len(observation.encode()) <= 10_000 + 200
    omitted = int(observation.split("bytes omitted")[0].rsplit(";", 1)[1].strip().split()[0])
    assert omitted > 20_000_000  # tens of MB arrived while the model thought...
    assert memory.growth_mb < 100  # ...and the runner held a fixed amount of them
    assert "after-flood" in observation


def test_a_loud_verifier_is_capped_and_streamed_to_disk(docker_client, fault_tasks, tmp_path):
    with PeakMemory() as memory:
        outcome = run_one(fault_tasks / "loud-verifier", OracleAgent(), tmp_path, docker_client)
    assert (outcome.rewards, outcome.exception) == ({"reward": 1.0}, None)
    verifier = outcome.trial_dir / "verifier"
    stdout = verifier / "test-stdout.txt"
    assert OUTPUT_LIMIT_BYTES <= stdout.stat().st_size < OUTPUT_LIMIT_BYTES + 100
    assert f"[... {200_000_000 - OUTPUT_LIMIT_BYTES} bytes of output dropped ...]".encode() in stdout.read_bytes()
    big = (verifier / "big.bin").read_bytes()
    assert len(big) < 17 << 20
    assert b"bytes of output dropped" in big
    assert f"cut: big.bin ({50_000_000 - (16 << 20)} bytes dropped)" in (verifier / "copy-notes.txt").read_text()
    assert memory.growth_mb < 100
    assert json.loads((outcome.trial_dir / "result.json").read_text())["verifier_result"] == {
        "rewards": {"reward": 1.0}
    }


# ---------------------------------------------------------------- unforgeable reward -------
STRICT = lambda task: RunSettings(profile="strict").limits(task)  # noqa: E731


def test_a_reward_the_agent_wrote_is_never_read(docker_client, fault_tasks, tmp_path):
    # strict: the agent cannot write into the verifier's folder; its planted files are gone
    outcome = run_one(fault_tasks / "forge", OracleAgent(), tmp_path / "strict", docker_client, limits=STRICT)
    assert (outcome.rewards, outcome.exception) == ({"reward": 0.0}, None)
    verifier = outcome.trial_dir / "verifier"
    assert not (verifier / "reward.txt").exists()
    assert (verifier / "tests-seen.txt").read_text().split() == ["test.sh"]  # the planted test was removed
    assert depthlab.load_trials(tmp_path / "strict", cache=False)["status"].to_list() == ["fail"]
    # harbor: root can write there, so the forger is caught: an invalid trial, its reward never read
    outcome = run_one(fault_tasks / "forge", OracleAgent(), tmp_path / "harbor", docker_client)
    assert (outcome.rewards, outcome.exception) == (None, "VerifierTamperedError")
    assert not (outcome.trial_dir / "verifier" / "reward.txt").exists()
    assert depthlab.load_trials(tmp_path / "harbor", cache=False)["status"].to_list() == ["invalid"]


@pytest.mark.parametrize("profile", ["strict", "harbor"])
def test_a_verifier_folder_swapped_by_the_agent_gives_no_reward(docker_client, fault_tasks, tmp_path, profile):
    limits = STRICT if profile == "strict" else None
    outcome = run_one(fault_tasks / "swap", OracleAgent(), tmp_path, docker_client, limits=limits)
    assert outcome.rewards is None
    assert outcome.exception == "VerifierTamperedError"  # tampering: an invalid trial, never a pass
    assert "/logs/verifier was replaced" in outcome.message
    assert not (outcome.trial_dir / "verifier" / "reward.txt").exists()
    assert depthlab.load_trials(tmp_path, cache=False)["status"].to_list() == ["invalid"]


# ---------------------------------------------------------------- endpoint faults ----------
def test_an_endpoint_that_hangs_makes_the_trial_invalid(docker_client, tasks_root, endpoint, tmp_path):
    endpoint.reset(lambda messages, model: time.sleep(4) or reply())
    started = time.monotonic()
    outcome = run_one(tasks_root / "hello", agent(endpoint.url, timeout=0.5), tmp_path, docker_client)
    assert time.monotonic() - started < 30
    assert outcome.exception == "LLMEndpointError"
    assert "(request timeout 0.5 s)" in outcome.message
    assert "no complete answer within the request timeout of 0.5 s" in outcome.message
    assert outcome.status == "invalid"
    assert depthlab.load_trials(tmp_path, cache=False)["status"].to_list() == ["invalid"]


def test_an_endpoint_hanging_past_the_agent_timeout_is_invalid_not_a_fail(
    docker_client, tasks_root, endpoint, tmp_path
):
    endpoint.reset(lambda messages, model: time.sleep(8) or reply())
    started = time.monotonic()
    outcome = run_one(
        tasks_root / "hello",
        agent(endpoint.url, timeout=2.0, max_retries=0),
        tmp_path,
        docker_client,
        agent_timeout_sec=1.0,
    )
    assert time.monotonic() - started < 30
    assert outcome.exception == "LLMEndpointError"
    assert "request timeout 2 s" in outcome.message
    assert outcome.status == "invalid"


def test_a_model_answering_after_the_agent_timeout_is_a_verified_fail(docker_client, tasks_root, endpoint, tmp_path):
    endpoint.reset(lambda messages, model: time.sleep(2.5) or reply("echo late\n"))
    outcome = run_one(
        tasks_root / "hello", agent(endpoint.url, timeout=30.0), tmp_path, docker_client, agent_timeout_sec=1.0
    )
    assert outcome.exception == "AgentTimeoutError"
    assert outcome.message.startswith("Agent execution timed out after 1 seconds")  # the override, not the task's 120
    assert "came after the deadline" in outcome.message
    assert outcome.rewards == {"reward": 0.0}
    assert outcome.status == "fail"


def test_cli_exits_non_zero_when_every_trial_is_invalid(docker_client, tasks_root, tmp_path, capsys):
    from depthlab.cli import main

    common = ["--jobs-dir", str(tmp_path), "--no-progress", "--api-key-env", "", "--model", "scripted/alpha"]
    assert main(["run", str(tasks_root / "hello"), "--request-timeout", "-1", *common]) == 2
    assert "--request-timeout must be a positive number" in capsys.readouterr().err
    code = main(
        ["run", str(tasks_root / "hello"), "--base-url", "http://127.0.0.1:9/v1", "--max-retries", "0", *common]
    )
    assert code == 1
    output = capsys.readouterr().out
    assert "every trial was invalid" in output
    assert "LLMEndpointError" in output
    assert depthlab.load_trials(tmp_path, cache=False)["status"].to_list() == ["invalid"]
    plan = tmp_path / "plan.csv"
    plan.write_text("dataset,task,model,cap,attempts\nrunner-tests,hello,scripted/alpha,2,1\n")
    fill_options = ["--tasks", str(tasks_root), "--models", "scripted/alpha", "--base-url", "http://127.0.0.1:9/v1"]
    fill_options += ["--max-retries", "0", "--jobs-dir", str(tmp_path / "fill"), "--no-progress", "--api-key-env", ""]
    assert main(["fill", str(plan), *fill_options]) == 1
    assert "every trial was invalid" in capsys.readouterr().out


# ---------------------------------------------------------------- containers stop themselves
KEEPER = """
import sys, time, docker
from depthlab.runner import ContainerLimits, TaskContainer
box = TaskContainer(docker.from_env(), sys.argv[1], ContainerLimits(cpus=0.5, memory_mb=64), name_hint="orphan")
box.start()
print(box.id, flush=True)
time.sleep(600)
"""


def test_a_container_stops_itself_seconds_after_its_runner_is_killed(docker_client, tasks_root):
    image = ensure_image(docker_client, load_task(tasks_root / "hello"))
    process = subprocess.Popen([sys.executable, "-c", KEEPER, image], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        container_id = process.stdout.readline().strip()
        container = docker_client.containers.get(container_id)
        assert container.status == "running"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        killed = time.monotonic()
        while container.status == "running" and time.monotonic() - killed < 20:
            time.sleep(0.2)
            container.reload()
        assert container.status == "exited"
        assert time.monotonic() - killed < 10
    finally:
        process.kill()
        for leftover in owned_containers(docker_client, process.pid):
            leftover.remove(force=True)


def test_a_container_stops_itself_at_its_deadline_and_an_agents_pkill_does_not_stop_it(docker_client, tasks_root):
    image = ensure_image(docker_client, load_task(tasks_root / "hello"))
    limits = ContainerLimits(cpus=0.5, memory_mb=64)
    with (
        TaskContainer(docker_client, image, limits, lifetime_sec=2) as timed,
        TaskContainer(docker_client, image, limits, lifetime_sec=2) as tampered,
    ):
        # an agent killing every `sleep` stops the deadline's timer, not the container
        tampered.exec(["sh", "-c", "pkill sleep; killall sleep; kill -9 -1; true"], timeout=10)
        time.sleep(4.0)
        with pytest.raises(ContainerExitedError, match="exited"):
            timed.check_alive()
        tampered.check_alive()


# ---------------------------------------------------------------- builds and users ---------
def test_strict_builds_have_no_network_unless_the_task_asks(docker_client, tmp_path):
    def probe(nonce: str) -> str:
        # Docker's layer cache keys a RUN on its text, not on the build's network: a probe seen before (this
        # test's other build, or an earlier run) would replay that build's answer, so each build gets its own
        return f'RUN ["/bin/busybox", "sh", "-c", "ls /sys/class/net > /netifs # {nonce}"]\n'

    offline = with_dockerfile_lines(
        write_task(tmp_path, "offline-build", instruction="x", test_sh="true\n"), probe(uuid.uuid4().hex)
    )
    online = with_dockerfile_lines(
        write_task(tmp_path, "online-build", instruction="x", test_sh="true\n", toml="allow_internet = true\n"),
        probe(uuid.uuid4().hex),
    )
    found = {}
    strict = RunSettings(profile="strict")
    for task in (offline, online):
        spec = load_task(task)
        image = ensure_image(docker_client, spec, network=strict.limits(spec).build_network)
        with TaskContainer(docker_client, image, ContainerLimits(cpus=0.5, memory_mb=64)) as box:
            found[task.name] = box.exec(["cat", "/netifs"], timeout=30)[1].split()
        docker_client.images.remove(image, force=True)
    assert found["offline-build"] == [b"lo"]
    assert b"eth0" in found["online-build"]


def test_the_agent_can_run_as_a_non_root_user(docker_client, fault_tasks, endpoint, tmp_path):
    def policy(messages, model):
        turn = sum(1 for message in messages if message["role"] == "assistant") + 1
        if turn == 1:
            return reply("id -u > /app/who; id -u; touch /root-file\n", "sleep 100\n", duration=0.5)
        if turn == 2:
            return json.dumps({"analysis": "", "plan": "", "commands": [{"keystrokes": "C-c", "duration": 5}]})
        return reply("echo still-here\n", complete=True)

    endpoint.reset(policy)
    limits = lambda task: ContainerLimits(cpus=1, memory_mb=256, user="1000:1000")  # noqa: E731
    outcome = run_one(fault_tasks / "as-user", agent(endpoint.url), tmp_path, docker_client, limits=limits)
    assert (outcome.reward, outcome.exception) == (1.0, None)  # the verifier ran and read /app/who = 1000
    first = endpoint.requests[1]["body"]["messages"][-1]["content"]
    assert "\n1000\n" in first
    assert "Permission denied" in first
    assert "still running" in first
    assert "$ echo still-here\nstill-here\n" in endpoint.requests[3]["body"]["messages"][-1]["content"]
    oracle = run_one(fault_tasks / "as-user", OracleAgent(), tmp_path / "oracle", docker_client, limits=limits)
    assert oracle.rewards == {"reward": 1.0}
    config = json.loads((outcome.trial_dir / "config.json").read_text())
    assert config["environment"]["kwargs"]["user"] == "1000:1000"


def test_a_long_instruction_is_sent_once_not_every_turn(docker_client, fault_tasks, endpoint, tmp_path):
    def policy(messages, model):
        turn = sum(1 for message in messages if message["role"] == "assistant") + 1
        return reply("tail -c 11 /logs/agent/instruction.md\n") if turn == 1 else reply(complete=True)

    endpoint.reset(policy)
    task = load_task(fault_tasks / "long-instruction")
    assert len(task.instruction.encode()) > 200_000
    outcome = run_one(task.path, agent(endpoint.url), tmp_path, docker_client)
    assert (outcome.reward, outcome.exception, outcome.n_turns) == (1.0, None, 3)
    sizes = [sum(len(message["content"]) for message in request["body"]["messages"]) for request in endpoint.requests]
    assert max(sizes) < 20_000
    prompt = endpoint.requests[0]["body"]["messages"][0]["content"]
    assert "BEGIN-MARKER" in prompt
    assert "/logs/agent/instruction.md" in prompt
    assert "END-MARKER" not in prompt
    assert "END-MARKER" in endpoint.requests[1]["body"]["messages"][-1]["content"]


def test_task_limits_are_checked_before_anything_runs(docker_client, tmp_path, capsys):
    from depthlab.cli import main

    task = write_task(tmp_path / "tasks", "no-limit", instruction="x", test_sh="true\n")
    (task / "task.toml").write_text("[environment]\nmemory_mb = 0\ncpus = 0\n")
    code = main(["run", str(task), "--agent", "oracle", "--jobs-dir", str(tmp_path / "jobs"), "--no-progress"])
    output = capsys.readouterr().out
    assert "skipped:" in output
    assert "task.toml [environment].cpus must be a positive finite number, got 0" in output
    assert code == 1  # nothing could run
    assert owned_containers(docker_client, os.getpid()) == []


def test_copying_a_folder_out_is_limited_in_files_bytes_and_group(docker_client, tasks_root, tmp_path):
    image = ensure_image(docker_client, load_task(tasks_root / "hello"))
    with TaskContainer(docker_client, image, ContainerLimits(cpus=0.5, memory_mb=64)) as box:
        script = (
            "mkdir -p /out/sub; for i in 1 2 3 4 5; do echo $i > /out/f$i; done; head -c 5000 /dev/zero > /out/sub/big"
        )
        box.exec(["sh", "-c", script + "; ln -s /etc/passwd /out/link"], timeout=30)
        report = box.get_directory("/out", tmp_path / "few", max_files=3, file_limit_bytes=1000)
        assert (report.n_files, report.left_out) == (3, 3)
        assert sorted(path.name for path in (tmp_path / "few").rglob("*") if path.is_file()) == ["f1", "f2", "f3"]
        report = box.get_directory("/out", tmp_path / "cut", file_limit_bytes=1000)
        assert report.cut == {"sub/big": 4000}
        assert (tmp_path / "cut" / "sub" / "big").stat().st_size < 1100
        assert not (tmp_path / "cut" / "link").exists()  # links are never extracted
        report = box.get_directory("/out", tmp_path / "group", only_gid=4242)
        assert report.n_files == 0
        assert sorted(report.ignored) == ["f1", "f2", "f3", "f4", "f5", "sub/big"]
        assert "left out, not written by the verifier: f1" in report.notes()
        assert box.get_directory("/missing", tmp_path / "missing") is None
