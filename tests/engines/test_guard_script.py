"""The shell of depthlab's guarded terminus-2 (``engines/harbor_side/depthlab_guard.py``), run for real.

Harbor imports the guard in its own venv; its shell scripts are what runs in a trial's container when
the agent's run ends. They are read here from the guard's source (the module imports Harbor, so it is
not imported) and run in a real container of the Debian userland, with the processes an agent leaves:
a server a task may ask for, a background reward writer, a process sitting in ``/logs/verifier``.

* ``suspects`` (the default): the writer and the squatter are killed, the server runs on into the
  tests, as it would under Harbor's own terminus-2;
* ``all`` (``--profile strict``): every process the agent left is killed; the container's own stays.
"""

from __future__ import annotations

import ast
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.docker]

GUARD = Path(__file__).resolve().parents[2] / "depthlab" / "engines" / "harbor_side" / "depthlab_guard.py"


def guard_scripts() -> dict[str, str]:
    """The guard's shell snippets (module-level string constants), as Harbor's copy of the module has them."""
    scripts = {}
    for node in ast.parse(GUARD.read_text()).body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id.startswith("_")
        ):
            value = ast.literal_eval(node.value) if isinstance(node.value, ast.Constant) else None
            if isinstance(value, str):
                scripts[node.targets[0].id] = value
    return scripts


def sh(container: str, script: str) -> str:
    done = subprocess.run(
        ["docker", "exec", container, "sh", "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def command_lines(container: str) -> list[str]:
    out = sh(container, "for d in /proc/[0-9]*; do tr '\\0' ' ' < $d/cmdline 2>/dev/null; echo; done")
    return [line.strip() for line in out.splitlines() if line.strip()]


@pytest.fixture
def container(userland: str) -> Iterator[str]:
    name = f"depthlab-guard-test-{uuid.uuid4().hex[:8]}"
    subprocess.run(["docker", "run", "-d", "--rm", "--name", name, userland, "sleep", "600"], check=True,
                   capture_output=True)  # fmt: skip
    try:
        yield name
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)


def leave_processes(container: str) -> None:
    """What an agent leaves: a server, a background reward writer, a process sitting in /logs/verifier."""
    sh(container, "mkdir -p /logs/verifier /srv")
    for script in (
        "cd /srv && exec sleep 1001",  # the server a task asked for
        "while :; do echo 1 > /logs/verifier/reward.txt; sleep 0.02; done",  # the forger
        "cd /logs/verifier && exec sleep 1002",  # a squatter in the verifier's folder
    ):
        subprocess.run(["docker", "exec", "-d", container, "sh", "-c", script], check=True)
    sh(container, "sleep 0.3")


def run_guard(container: str, mode: str, keep: list[str]) -> list[str]:
    scripts = guard_scripts()
    chain = scripts["_PROCESSES"].split("for d in")[0]  # as GuardedTerminus2._guard builds it
    settings = f"KEEP='{' '.join(keep)}'\nMODE={mode}\n"
    out = sh(container, chain + settings + scripts["_SUSPECT"] + scripts["_KILL"])
    sh(container, "sleep 0.3")
    return [line[2:] for line in out.splitlines() if line.startswith("K ")]


def before_the_agent(container: str) -> list[str]:
    listing = sh(container, guard_scripts()["_PROCESSES"])
    return [f"{pid}:{start}" for _, pid, _, start, _ in (line.split(" ", 4) for line in listing.splitlines())]


def test_by_default_the_guard_kills_what_reaches_for_the_verifier_and_spares_a_server(container):
    keep = before_the_agent(container)
    leave_processes(container)
    killed = run_guard(container, "suspects", keep)
    left = command_lines(container)
    assert any("sleep 1001" in line for line in left), left  # the server runs on into the tests
    assert not any("reward.txt" in line or "sleep 1002" in line for line in left), left
    assert any("/logs/verifier/reward.txt" in line for line in killed), killed
    assert any("sleep 1002" in line for line in killed), killed
    assert not any("sleep 1001" in line for line in killed), killed
    assert any(line.startswith("sleep 600") for line in left)  # the container's own process


def test_the_strict_guard_kills_every_process_the_agent_left(container):
    keep = before_the_agent(container)
    leave_processes(container)
    killed = run_guard(container, "all", keep)
    left = command_lines(container)
    assert not any("sleep 100" in line or "reward.txt" in line for line in left), left
    assert any("sleep 1001" in line for line in killed), killed
    assert any(line.startswith("sleep 600") for line in left)  # the container's own process
