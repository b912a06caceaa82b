"""Helpers of the engines' tests: chain tasks of known depth FROM the real Debian userland, and a
scripted Chat Completions server on 127.0.0.1 that reads each output before its next command.

A chain task with K reads: at build time the image writes a chain of files with random names
(``/data/start`` names the next file, ..., the last read names the file holding a random
secret), so nothing can be guessed: K reads of one output each, then one write of the secret
to ``/app/answer.txt``: depth D = K + 1 turns. The verifier follows the chain itself.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

#: K reads per chain task: D = K + 1 (2 -> 3, 4 -> 5)
READS = (2, 4)
MODELS = "openai/m1,openai/m2"
#: the ladder of the end-to-end runs: 2 rounds (cap 2, then caps 3 and 5) pin both tasks
CAPS = "2,3,5"

#: ``depthlab measure`` as a user runs it: a fresh process of this Python, so a SIGKILL kills it alone.
MEASURE = [sys.executable, "-c", "import sys; from depthlab.cli import main; sys.exit(main())", "measure"]


def measure_args(
    tasks: Path, jobs: Path, out: Path, url: str, *extra: str, models: str = "openai/m1", caps: str = "2,3"
) -> list[str]:
    """The arguments of a ``depthlab measure`` of ``tasks`` against the server at ``url``, then ``extra``."""
    return [str(tasks), "--models", models, "--caps", caps, "--base-url", url, "--jobs-dir", str(jobs),
            "-o", str(out), "--no-progress", *extra]  # fmt: skip


def run_measure(args: list[str], env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """Run ``depthlab measure`` with ``args`` to its end; its exit code, stdout and stderr."""
    return subprocess.run([*MEASURE, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False)


def engine_flags(engine: str, request: pytest.FixtureRequest) -> list[str]:
    """``--engine`` and what the engine needs: Harbor's command (the ``harbor_cmd`` fixture), or a
    Docker engine that answers (the ``docker_client`` fixture); each skips with its reason, or fails in CI."""
    if engine == "harbor":
        return ["--engine", "harbor", "--harbor", request.getfixturevalue("harbor_cmd")]
    request.getfixturevalue("docker_client")
    return ["--engine", "local"]


# Runs at build time: K reads reach the secret (random names from /dev/urandom).
MAKE_CHAIN = r"""set -e
reads=$1
rand() { head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
mkdir -p /data/chain /app
prev=/data/start
i=1
while [ "$i" -lt "$reads" ]; do
  name=/data/chain/n-$(rand)
  echo "next: $name" > "$prev"
  prev=$name
  i=$((i + 1))
done
last=/data/chain/n-$(rand)
echo "last: $last" > "$prev"
echo "secret-$(rand)" > "$last"
"""

TEST_SH = r"""#!/bin/bash
f=/data/start
while n=$(sed -n -e 's/^next: //p' -e 's/^last: //p' "$f") && [ -n "$n" ]; do f=$n; done
mkdir -p /logs/verifier
if [ "$(cat /app/answer.txt 2>/dev/null)" = "$(cat "$f")" ]; then echo 1 > /logs/verifier/reward.txt
else echo 0 > /logs/verifier/reward.txt; fi
"""

SOLVE_SH = r"""#!/bin/bash
f=/data/start
while n=$(sed -n -e 's/^next: //p' -e 's/^last: //p' "$f") && [ -n "$n" ]; do f=$n; done
cp "$f" /app/answer.txt
"""

INSTRUCTION = (
    "The file /data/start begins a chain of files: each names the next. Follow it to the file that holds "
    "the secret and copy that file to /app/answer.txt."
)


def write_chain_task(root: Path, reads: int, image: str, *, broken_oracle: bool = False) -> Path:
    """A Harbor task folder ``measure-chain-r<reads>`` built FROM ``image`` (the Debian userland)."""
    task = root / f"measure-chain-r{reads}"  # the branch in the name: Harbor names images and containers after it
    env = task / "environment"
    env.mkdir(parents=True)
    (env / "make_chain.sh").write_text(MAKE_CHAIN)
    (env / "Dockerfile").write_text(
        f"FROM {image}\n"
        # terminus-2 installs asciinema (to record the session) in every trial that lacks it:
        # once here, from Debian's packages, instead of once per trial
        "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq asciinema >/dev/null "
        "&& rm -rf /var/lib/apt/lists/*\n"
        f"COPY make_chain.sh /tmp/make_chain.sh\nRUN bash /tmp/make_chain.sh {reads}\nWORKDIR /app\n"
        # Harbor keeps the container alive with `sh -c "sleep infinity"` as PID 1, which ignores
        # SIGTERM: docker would wait 10 s at every teardown before killing it
        "STOPSIGNAL SIGKILL\n"
    )
    (task / "instruction.md").write_text(INSTRUCTION)
    (task / "task.toml").write_text(
        'version = "1.0"\n[metadata]\ndifficulty = "easy"\n'
        "[agent]\ntimeout_sec = 120.0\n[verifier]\ntimeout_sec = 60.0\n"
        "[environment]\ncpus = 1\nmemory_mb = 512\nallow_internet = true\n"
    )
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text(TEST_SH)
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text("exit 1\n" if broken_oracle else SOLVE_SH)
    return task


def reply(*commands: str, complete: bool = False, duration: float = 1.0) -> str:
    """A terminus-style JSON reply (Harbor's terminus-2 and depthlab's runner parse the same shape).

    ``duration``: terminus-2 waits that long before it reads the screen (depthlab's runner waits
    for the command to finish, at most that long); 1 s leaves a loaded machine time to show the
    output, which a shorter wait missed once in twelve trials (the policy then reads again: a turn lost).
    """
    return json.dumps(
        {
            "analysis": "scripted",
            "plan": "scripted",
            "commands": [{"keystrokes": command, "duration": duration} for command in commands],
            "task_complete": complete,
        }
    )


FORGER = "nohup sh -c 'while :; do echo 1 > /logs/verifier/reward.txt; sleep 0.02; done' >/dev/null 2>&1 &\n"


def forging_policy(messages: list[dict[str, Any]], model: str) -> str:
    """Leave a background reward writer, then say done at once: the task is never solved."""
    texts = [str(message.get("content")) for message in messages if message.get("role") != "assistant"]
    return reply(FORGER) if len(texts) <= 1 else reply(complete=True)


def hanging_after_one_answer(messages: list[dict[str, Any]], model: str) -> str:
    """Answer the first request (a read), then hang: the endpoint died mid-trial (issue 37, case 2)."""
    import time

    if any(message.get("role") == "assistant" for message in messages):
        time.sleep(90)
    return reply("cat /data/start\n")


_REVEAL = re.compile(r"^(next|last): (/data/chain/n-[0-9a-f]+)\s*$", re.MULTILINE)


def reading_policy(messages: list[dict[str, Any]], model: str) -> str:
    """Read one file per turn, acting only on what the outputs revealed, then write the secret.

    Works on both harnesses' transcripts: it scans every non-assistant message for the lines the
    files print (``next: PATH`` / ``last: PATH``) and acts on the newest path revealed.
    """
    texts = [_text(message) for message in messages if message.get("role") != "assistant"]
    if texts and (
        "Are you sure you want to mark the task as complete" in texts[-1] or "marked the task as complete" in texts[-1]
    ):
        return reply(complete=True)
    revealed: dict[str, str] = {}
    for text in texts[1:] if len(texts) > 1 else []:
        for kind, path in _REVEAL.findall(text):
            revealed.setdefault(path, kind)
    if not revealed:
        return reply("cat /data/start\n")
    path, kind = list(revealed.items())[-1]
    if kind == "last":
        return reply(f"cp {path} /app/answer.txt\n", complete=True)
    return reply(f"cat {path}\n")


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


Policy = Callable[[list[dict[str, Any]], str], "str | tuple[int, str]"]


@dataclass
class ScriptedServer:
    """State of the scripted Chat Completions server: its URL and every request it answered."""

    url: str = ""
    policy: Policy = reading_policy
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self) -> int:
        with self.lock:
            return len(self.requests)


@contextmanager
def scripted_server(policy: Policy = reading_policy) -> Iterator[ScriptedServer]:
    """Serve Chat Completions on a free 127.0.0.1 port, answering from ``policy(messages, model)``."""
    state = ScriptedServer(policy=policy)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            with state.lock:
                state.requests.append({"path": self.path, "model": body.get("model")})
            answer = state.policy(body["messages"], body.get("model", ""))
            status, text = answer if isinstance(answer, tuple) else (200, answer)
            if status != 200:
                payload = json.dumps({"error": {"message": text}}).encode()
            else:
                prompt = sum(len(_text(message)) for message in body["messages"]) // 4
                payload = json.dumps(
                    {
                        "id": "chatcmpl-scripted",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", ""),
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ],
                        "usage": {
                            "prompt_tokens": prompt,
                            "completion_tokens": len(text) // 4,
                            "total_tokens": prompt + len(text) // 4,
                        },
                    }
                ).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            # the client may have given up first (a hanging policy's timeout): nothing to tell it
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
