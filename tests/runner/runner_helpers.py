"""Helpers of the runner's tests: task folders with FROM-scratch busybox images, the scripted
Chat Completions endpoint's state, and scripted agent policies."""

from __future__ import annotations

import json
import re
import shutil
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BUSYBOX = Path("/bin/busybox")
API_KEY_ENV = "DEPTHLAB_TEST_API_KEY"

Policy = Callable[[list[dict[str, str]], str], "tuple[int, str] | str"]

DOCKERFILE = """FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
RUN ["/bin/busybox", "mkdir", "-p", "/app", "/tmp", "/logs"]
{extra}WORKDIR /app
"""


def write_task(
    root: Path,
    name: str,
    *,
    instruction: str,
    test_sh: str,
    solve_sh: str | None = None,
    data: dict[str, str] | None = None,
    toml: str = "",
    verifier_timeout: float = 60.0,
) -> Path:
    """Write a Harbor task folder whose image is busybox FROM scratch (plus /data files)."""
    task = root / name
    env = task / "environment"
    env.mkdir(parents=True)
    shutil.copy2(BUSYBOX, env / "busybox")  # a tmp build context, not the repository
    extra = ""
    if data:
        (env / "data").mkdir()
        for file_name, text in data.items():
            (env / "data" / file_name).write_text(text)
        extra = "COPY data /data\n"
    (env / "Dockerfile").write_text(DOCKERFILE.format(extra=extra))
    (task / "instruction.md").write_text(instruction)
    (task / "task.toml").write_text(
        f"[agent]\ntimeout_sec = 120.0\n[verifier]\ntimeout_sec = {verifier_timeout}\n"
        + "[environment]\ncpus = 1\nmemory_mb = 256\n"
        + toml
    )
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text(test_sh)
    if solve_sh is not None:
        (task / "solution").mkdir()
        (task / "solution" / "solve.sh").write_text(solve_sh)
    return task


CHAIN_DATA = {"start": "NEXT=north\n", "north": "LAST=south\n", "south": "depth-three-secret\n"}


@dataclass
class ScriptedEndpoint:
    """A Chat Completions server on 127.0.0.1 whose replies come from ``policy(messages, model)``.

    ``policy`` returns the reply text, or ``(status, text)`` to answer with an HTTP error.
    ``on_request`` runs on every request (e.g. to ``docker inspect`` the running containers).
    """

    url: str = ""
    policy: Policy | None = None
    on_request: Callable[[], None] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self, policy: Policy, on_request: Callable[[], None] | None = None) -> None:
        with self.lock:
            self.policy, self.on_request = policy, on_request
            self.requests.clear()


def reply(*commands: str, complete: bool = False, duration: float = 5.0) -> str:
    """A well-formed terminus-style JSON reply."""
    return json.dumps(
        {
            "analysis": "scripted",
            "plan": "scripted",
            "commands": [{"keystrokes": command, "duration": duration} for command in commands],
            "task_complete": complete,
        }
    )


def chain_policy(messages: list[dict[str, str]], model: str) -> str:
    """Follow the file chain, one file per turn, reading each step from the last observation."""
    last = messages[-1]["content"]
    if len(messages) == 1:
        return reply("cat /data/start\n")
    if "marked the task as complete" in last:
        return reply(complete=True)
    if match := re.search(r"^NEXT=(\w+)$", last, re.MULTILINE):
        return reply(f"cat /data/{match.group(1)}\n")
    if match := re.search(r"^LAST=(\w+)$", last, re.MULTILINE):
        return reply(f"cp /data/{match.group(1)} /app/answer.txt\n", complete=True)
    return reply()


def owned_containers(docker_client: Any, pid: int) -> list[Any]:
    """The runner's containers (all states) whose owner label names process ``pid`` on this host."""
    from depthlab.runner.leftovers import OWNER_LABEL, RUNNER_LABEL

    owner = f"{socket.gethostname()}:{pid}"
    # the low-level list (ids and labels): the high-level one fails on a container removed meanwhile
    found = docker_client.api.containers(all=True, filters={"label": [RUNNER_LABEL, f"{OWNER_LABEL}={owner}"]})
    return [docker_client.containers.prepare_model(summary) for summary in found]
