"""Fixtures of the runner's tests: a real Docker Engine, FROM-scratch task images, and a real
HTTP server on 127.0.0.1 that speaks Chat Completions and answers from a script.

Docker tests fail (not skip) when ``DEPTHLAB_REQUIRE_DOCKER=1`` (CI), and skip with the reason
otherwise. Task folders are written once per session, so every image is built once.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from runner_helpers import API_KEY_ENV, BUSYBOX, CHAIN_DATA, ScriptedEndpoint, owned_containers, write_task


# ---------------------------------------------------------------- Docker -------------------
@pytest.fixture(scope="session")
def docker_client() -> Any:
    """A Docker client with a live engine, else fail (CI) or skip (elsewhere) with the reason."""
    required = os.environ.get("DEPTHLAB_REQUIRE_DOCKER") == "1"
    reason = _docker_problem()
    if reason is not None:
        message = (
            f"Docker tests need a running Docker Engine and /bin/busybox: {reason} (run `bash scripts/docker-up.sh`)"
        )
        if required:
            pytest.fail(message + "; DEPTHLAB_REQUIRE_DOCKER=1 makes this an error")
        pytest.skip(message)
    import docker

    return docker.from_env()


def _docker_problem() -> str | None:
    try:
        import docker
    except ImportError:
        return "the docker SDK is not installed"
    if not BUSYBOX.is_file():
        return f"{BUSYBOX} is missing (apt-get install busybox-static)"
    try:
        docker.from_env().ping()
    except Exception as error:  # any failure to reach the engine
        return f"the engine does not answer ({type(error).__name__}: {error})"
    return None


@pytest.fixture(scope="session")
def userland_image(docker_client: Any) -> str:
    """The real Debian 12 userland image of ``scripts/userland-up.sh`` (built once per engine, then cached)."""
    import subprocess

    script = Path(__file__).resolve().parents[2] / "scripts" / "userland-up.sh"
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900, check=False)
    name = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if not name:
        message = f"the Debian userland image could not be made: {done.stderr.strip()[-500:]}"
        if os.environ.get("DEPTHLAB_REQUIRE_DOCKER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return name


# ---------------------------------------------------------------- tasks --------------------
@pytest.fixture(scope="session")
def tasks_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Task folders shared by the session (so each image is built once)."""
    root = tmp_path_factory.mktemp("tasks") / "runner-tests"
    root.mkdir()
    # depth 3: /data/start names the next file, which names the file holding the answer
    write_task(
        root,
        "chain",
        instruction="Follow the chain of files that starts at /data/start and write the final answer to "
        "/app/answer.txt.",
        test_sh='if [ "$(cat /app/answer.txt 2>/dev/null)" = depth-three-secret ]; then echo 1 > '
        "/logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n",
        solve_sh="cp /data/south /app/answer.txt\n",
        data=CHAIN_DATA,
    )
    write_task(
        root,
        "hello",
        instruction="Write the word hello to /app/hello.txt.",
        test_sh='if [ "$(cat /app/hello.txt 2>/dev/null)" = hello ]; then echo 1 > /logs/verifier/reward.txt; '
        "else echo 0 > /logs/verifier/reward.txt; fi\n",
        solve_sh="echo hello > /app/hello.txt\n",
    )
    write_task(
        root,
        "slow-verifier",
        instruction="Nothing to do.",
        test_sh="sleep 30\necho 1 > /logs/verifier/reward.txt\n",
        solve_sh="true\n",
        verifier_timeout=1.0,
    )
    write_task(
        root,
        "multi-key",
        instruction="Nothing to do.",
        test_sh='echo \'{"segment_1": 1, "segment_2": 0}\' > /logs/verifier/reward.json\n',
        solve_sh="echo partial work; exit 3\n",
    )
    compose = root / "compose-task"
    shutil.copytree(root / "hello", compose)
    (compose / "environment" / "docker-compose.yaml").write_text("services: {}\n")
    return root


# ---------------------------------------------------------------- scripted endpoint --------
@pytest.fixture(scope="session")
def endpoint() -> Iterator[ScriptedEndpoint]:
    state = ScriptedEndpoint()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            with state.lock:
                state.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                policy, hook = state.policy, state.on_request
            if hook is not None:
                hook()
            answer = policy(body["messages"], body["model"]) if policy else (500, "no policy")
            status, text = answer if isinstance(answer, tuple) else (200, answer)
            if status != 200:
                payload = json.dumps({"error": {"message": text}}).encode()
            else:
                prompt_chars = sum(len(message["content"]) for message in body["messages"])
                payload = json.dumps(
                    {
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "model": body["model"],
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ],
                        "usage": {
                            "prompt_tokens": prompt_chars // 4,
                            "completion_tokens": len(text) // 4,
                            "total_tokens": prompt_chars // 4 + len(text) // 4,
                            "prompt_tokens_details": {"cached_tokens": 7},
                        },
                    }
                ).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield state
    server.shutdown()


# ---------------------------------------------------------------- scripted agents ----------
@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh fake API key in the environment variable the tests' clients read."""
    key = "sk-depthlab-" + os.urandom(12).hex()
    monkeypatch.setenv(API_KEY_ENV, key)
    return key


@pytest.fixture
def runner_labelled(docker_client: Any) -> Callable[..., list[Any]]:
    """Lists the runner's containers (all states) started by process ``pid`` (default: this one).

    Filtering by owner keeps the tests independent of other pytest-xdist workers' containers.
    """
    return lambda pid=None: owned_containers(docker_client, os.getpid() if pid is None else pid)
