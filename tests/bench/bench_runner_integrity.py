"""Benchmark of what the runner's guarantees cost, against a real Docker Engine, in one process.

Prints three ratios, each against a baseline measured in the same process:

* the verifier with its integrity checks (fresh /tests, snapshots before and after, the daemon's
  read of /tests, the second read of the reward files) against running ``tests/test.sh`` alone;
* the oracle preflight of 4 tasks read from its cache against the same preflight run;
* a command in the tmux terminal (send-keys and one capture, no wait) against the persistent shell,
  on the Debian userland image (skipped when ``scripts/userland-up.sh`` cannot make it).

Run: ``.venv/bin/python tests/bench/bench_runner_integrity.py`` (needs Docker and /bin/busybox).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runner"))

import docker
from runner_helpers import write_task

from depthlab.runner import ContainerLimits, TaskContainer, ensure_image, load_task, preflight, verify
from depthlab.runner.container import script_command
from depthlab.runner.terminal import TmuxTerminal

N_VERIFY = 8
N_COMMANDS = 30
TEST_SH = 'if [ "$(cat /app/hello.txt 2>/dev/null)" = hello ]; then echo 1 > /logs/verifier/reward.txt; fi\n'


def bench_verifier(client: docker.DockerClient, root: Path) -> None:
    task = load_task(write_task(root, "bench-verify", instruction="x", test_sh=TEST_SH, solve_sh="true\n"))
    image = ensure_image(client, task)
    with TaskContainer(client, image, ContainerLimits(cpus=1, memory_mb=256)) as box:
        box.exec(["sh", "-c", "mkdir -p /app /tests && echo hello > /app/hello.txt"], timeout=30)
        box.put_directory(task.path / "tests", "/tests")
        started = time.perf_counter()
        for index in range(N_VERIFY):
            box.exec_to_file(script_command("/tests/test.sh"), root / f"bare-{index}.txt", timeout=60)
        bare = (time.perf_counter() - started) / N_VERIFY
        started = time.perf_counter()
        for index in range(N_VERIFY):
            assert verify(box, task, root / f"verifier-{index}", timeout_sec=60) == {"reward": 1.0}
        checked = (time.perf_counter() - started) / N_VERIFY
    print(
        f"verifier: test.sh alone {bare * 1000:.0f} ms, with the integrity checks {checked * 1000:.0f} ms "
        f"(ratio {checked / bare:.1f}x; the reward files' second read waits 500 ms of it)"
    )


def bench_preflight(client: docker.DockerClient, root: Path) -> None:
    tasks = [
        write_task(
            root, f"bench-pre-{index}", instruction="x", test_sh=TEST_SH, solve_sh="echo hello > /app/hello.txt\n"
        )
        for index in range(4)
    ]
    started = time.perf_counter()
    first = preflight(tasks, jobs_dir=root / "pre", docker_client=client)
    run = time.perf_counter() - started
    started = time.perf_counter()
    again = preflight(tasks, jobs_dir=root / "pre", docker_client=client)
    cached = time.perf_counter() - started
    assert all(row.passed for row in first.rows)
    assert all(row.cached for row in again.rows)
    print(f"preflight of 4 tasks: run {run:.2f} s, from the cache {cached * 1000:.1f} ms (ratio {run / cached:.0f}x)")


def bench_terminal(client: docker.DockerClient, root: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "userland-up.sh"
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    image = done.stdout.strip()
    if not image:
        print(f"terminal: skipped (no userland image: {done.stderr.strip()[-200:]})")
        return
    with TaskContainer(client, image, ContainerLimits(cpus=1, memory_mb=512)) as box:
        shell = box.open_shell()
        started = time.perf_counter()
        for index in range(N_COMMANDS):
            assert str(index) in shell.run(f"echo {index}\n", 10)
        per_shell = (time.perf_counter() - started) / N_COMMANDS
        shell.close()
        terminal = TmuxTerminal(box)
        terminal.run("", 0.5)
        terminal.observe()
        started = time.perf_counter()
        for index in range(N_COMMANDS):
            terminal.run(f"echo {index}\n", 0.0)
            assert str(index) in terminal.observe()
        per_tmux = (time.perf_counter() - started) / N_COMMANDS
        terminal.close()
    print(
        f"terminal: persistent shell {per_shell * 1000:.0f} ms per command, tmux {per_tmux * 1000:.0f} ms "
        f"without its wait (ratio {per_tmux / per_shell:.1f}x)"
    )


def main() -> None:
    client = docker.from_env()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        bench_verifier(client, root)
        bench_preflight(client, root)
        bench_terminal(client, root)


if __name__ == "__main__":
    main()
