"""Benchmark of the container runner against a real Docker Engine and the scripted endpoint.

Prints, in one process:

* the persistent shell's cost per command (send keystrokes, wait for the sentinel, capture),
  against a fresh ``docker exec`` per command as the baseline;
* the harness overhead per agent turn (model call to the scripted endpoint + command + capture +
  trajectory write), from a 20-turn trial;
* whole trials per minute (image cached; container start, 3 turns, verifier, removal) at
  concurrency 1 and 2, and their ratio.

Run: ``.venv/bin/python tests/bench/bench_runner.py`` (needs Docker and /bin/busybox).
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runner"))

import docker
from runner_helpers import CHAIN_DATA, chain_policy, reply, write_task

from depthlab.runner import (
    ChatClient,
    ContainerLimits,
    HarnessConfig,
    TaskContainer,
    TerminusAgent,
    ensure_image,
    load_task,
    run_tasks,
)

N_COMMANDS = 200


def serve(policy_holder: dict) -> str:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            text = policy_holder["policy"](body["messages"], body["model"])
            payload = json.dumps(
                {
                    "choices": [{"message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.handle_error = lambda request, address: None  # a client killed mid-reply is part of some benchmarks
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def main() -> None:
    client = docker.from_env()
    root = Path(tempfile.mkdtemp())
    test_sh = (
        'if [ "$(cat /app/answer.txt 2>/dev/null)" = depth-three-secret ]; then echo 1 > /logs/verifier/reward.txt; '
        "else echo 0 > /logs/verifier/reward.txt; fi\n"
    )
    task = load_task(write_task(root, "chain", instruction="Follow /data/start.", test_sh=test_sh, data=CHAIN_DATA))
    image = ensure_image(client, task)

    with TaskContainer(client, image, ContainerLimits(cpus=1, memory_mb=256)) as box:
        shell = box.open_shell()
        shell.run("cat /data/start\n", 5)  # warm up
        started = time.perf_counter()
        for _ in range(N_COMMANDS):
            shell.run("cat /data/start\n", 5)
        shell_ms = (time.perf_counter() - started) / N_COMMANDS * 1000
        shell.close()
        started = time.perf_counter()
        for _ in range(N_COMMANDS // 4):
            box.exec(["cat", "/data/start"], timeout=10)
        exec_ms = (time.perf_counter() - started) / (N_COMMANDS // 4) * 1000
    print(f"persistent shell, per command:      {shell_ms:7.2f} ms")
    print(f"fresh docker exec (baseline):       {exec_ms:7.2f} ms   (shell is {exec_ms / shell_ms:.1f}x faster)")

    holder = {"policy": lambda messages, model: reply("cat /data/start\n")}
    url = serve(holder)
    chat = ChatClient(url, "bench/model", api_key_env=None)
    started = time.perf_counter()
    for _ in range(50):
        chat.complete([{"role": "user", "content": "hi"}])
    endpoint_ms = (time.perf_counter() - started) / 50 * 1000

    jobs = root / "jobs"
    turns = 20
    summary = run_tasks([task.path], TerminusAgent(chat, HarnessConfig(cap=turns)), jobs_dir=jobs, progress=False)
    result = json.loads((summary.outcomes[0].trial_dir / "result.json").read_text())
    phase = result["agent_execution"]
    seconds = (
        datetime.fromisoformat(phase["finished_at"].rstrip("Z"))
        - datetime.fromisoformat(phase["started_at"].rstrip("Z"))
    ).total_seconds()
    turn_ms = seconds / result["agent_result"]["metadata"]["n_episodes"] * 1000
    print(f"scripted endpoint round trip:       {endpoint_ms:7.2f} ms")
    print(
        f"harness turn (model+command+write): {turn_ms:7.2f} ms   "
        f"(overhead beyond endpoint and shell: {turn_ms - endpoint_ms - shell_ms:.2f} ms)"
    )

    holder["policy"] = chain_policy
    rates = {}
    n_trials = 6
    for concurrency in (1, 2):
        agent = TerminusAgent(ChatClient(url, "bench/model", api_key_env=None), HarnessConfig(cap=3))
        started = time.perf_counter()
        summary = run_tasks(
            [task.path], agent, jobs_dir=jobs, attempts=n_trials, concurrency=concurrency, progress=False
        )
        elapsed = time.perf_counter() - started
        passed = sum(1 for outcome in summary.outcomes if outcome.reward == 1.0)
        rates[concurrency] = n_trials / elapsed * 60
        print(
            f"trials per minute, concurrency {concurrency}:   {rates[concurrency]:7.1f}   "
            f"({passed}/{n_trials} passed, {elapsed / n_trials:.2f} s per trial)"
        )
    print(f"concurrency 2 / concurrency 1:      {rates[2] / rates[1]:7.2f}x")


if __name__ == "__main__":
    main()
