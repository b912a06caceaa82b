"""Fault-injection benchmark of the runner against a real Docker Engine and a scripted endpoint.

Prints, in one process (the runner itself runs as ``depthlab run`` / ``depthlab fill``
subprocesses, so its memory is its own):

* the runner's peak memory (VmHWM) through a trial whose shell floods ``--flood-mb`` MiB
  (default 1024) while the model thinks, against the same trial without a flood (baseline);
  target: under 300 MB;
* trials lost or duplicated across ``--kills`` (default 4) ``kill -9`` of ``depthlab fill`` at
  random moments, then a resume to completion (targets: 0 and 0);
* containers of a killed fill still running ``--after`` seconds after the kill (default 60;
  target 0), and the longest time one took to stop. The check polls, so it ends as soon as
  every container stopped: the full wait happens only when one does not.

Run: ``.venv/bin/python tests/bench/bench_runner_faults.py [--flood-mb 1024] [--kills 4] [--after 60]``
(needs Docker and /bin/busybox).
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runner"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import docker
import polars as pl
from bench_runner import serve
from runner_helpers import CHAIN_DATA, chain_policy, reply, write_task

from depthlab.runner.leftovers import OWNER_LABEL, RUNNER_LABEL

ROOT = Path(__file__).resolve().parents[2]
MODELS = ("bench/alpha", "bench/beta")
CAPS = (2, 3)
ATTEMPTS = 2


def running_containers(client: docker.DockerClient, pid: int) -> list[str]:
    owner = f"{socket.gethostname()}:{pid}"
    found = client.api.containers(filters={"label": [RUNNER_LABEL, f"{OWNER_LABEL}={owner}"], "status": "running"})
    return [summary["Id"] for summary in found]


def flood_finished(client: docker.DockerClient, pid: int) -> bool:
    ids = running_containers(client, pid)
    if not ids:
        return False
    probe = client.api.exec_create(ids[0], ["test", "-e", "/tmp/flood-done"])
    client.api.exec_start(probe["Id"])
    return client.api.exec_inspect(probe["Id"])["ExitCode"] == 0


def peak_memory_mb(command: list[str], state: dict) -> tuple[float, int]:
    """Run ``command`` (its pid goes into ``state["pid"]``); return (its peak resident memory in MB, exit code)."""
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state["pid"] = process.pid
    peak_kb = 0
    status = Path(f"/proc/{process.pid}/status")
    while process.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):  # the kernel's high-water mark: no spike is missed
                    peak_kb = max(peak_kb, int(line.split()[1]))
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    return peak_kb / 1024, process.returncode


def flood_benchmark(client: docker.DockerClient, root: Path, holder: dict, url: str, flood_mb: int) -> None:
    task = write_task(
        root / "tasks",
        "flood",
        instruction="Write hello to /app/hello.txt.",
        test_sh='if [ "$(cat /app/hello.txt)" = hello ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n',
    )
    state: dict = {}

    def policy(messages: list[dict], model: str) -> str:
        turn = sum(1 for message in messages if message["role"] == "assistant") + 1
        if turn == 1:
            flood = f"yes | head -c {state['bytes']}" if state["bytes"] else "true"
            return reply(f"{flood}; touch /tmp/flood-done\n", duration=0.5)
        if turn == 2:  # the model "thinks" until the flood is over
            deadline = time.monotonic() + 900
            while time.monotonic() < deadline and not flood_finished(client, state["pid"]):
                time.sleep(0.5)
            return reply("echo hello > /app/hello.txt\n", complete=True)
        return reply(complete=True)

    holder["policy"] = policy
    results = {}
    for label, size in (("no flood (baseline)", 0), (f"{flood_mb} MiB flood", flood_mb << 20)):
        state["bytes"] = size
        jobs = root / f"jobs-flood-{size}"
        command = [sys.executable, "-m", "depthlab.cli", "run", str(task), "--model", "bench/model", "--cap", "5"]
        command += ["--base-url", url, "--api-key-env", "", "--jobs-dir", str(jobs), "--no-progress"]
        started = time.perf_counter()
        results[label], code = peak_memory_mb(command, state)
        elapsed = time.perf_counter() - started
        (result,) = jobs.glob("*/*/result.json")
        record = json.loads(result.read_text())
        reward = (record["verifier_result"] or {}).get("rewards")
        print(
            f"runner peak memory, {label + ':':24s} {results[label]:7.1f} MB   "
            f"(exit {code}, rewards {reward}, {elapsed:.1f} s)"
        )
    flood, baseline = results[f"{flood_mb} MiB flood"], results["no flood (baseline)"]
    verdict = "under" if flood < 300 else "OVER"
    print(f"flood / baseline peak memory:            {flood / baseline:7.2f}x   ({verdict} the 300 MB target)")


def kill_benchmark(client: docker.DockerClient, root: Path, holder: dict, url: str, kills: int, after: float) -> None:
    tasks = root / "chain-tasks"
    test_sh = (
        'if [ "$(cat /app/answer.txt 2>/dev/null)" = depth-three-secret ]; then echo 1 > /logs/verifier/reward.txt; '
        "else echo 0 > /logs/verifier/reward.txt; fi\n"
    )
    write_task(tasks, "chain", instruction="Follow /data/start.", test_sh=test_sh, data=CHAIN_DATA)

    def slow_chain(messages: list[dict], model: str) -> str:
        time.sleep(0.3)
        return chain_policy(messages, model)

    holder["policy"] = slow_chain
    plan = root / "plan.csv"
    rows = [
        {"dataset": "bench", "task": "chain", "model": m, "cap": c, "attempts": ATTEMPTS} for m in MODELS for c in CAPS
    ]
    pl.DataFrame(rows).write_csv(plan)
    jobs = root / "jobs-kill"
    command = [sys.executable, "-m", "depthlab.cli", "fill", str(plan), "--tasks", str(tasks)]
    command += ["--models", ",".join(MODELS), "--jobs-dir", str(jobs), "--base-url", url, "--api-key-env", ""]
    command += ["--concurrency", "2", "--no-progress"]
    generator = random.Random(12)
    ever_complete: set[str] = set()
    lost: set[str] = set()
    stop_times: list[float] = []
    still_running = 0
    for round_number in range(kills):
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # a random moment once the fill is running trials (imports take a few seconds)
        wait_until = time.monotonic() + 60
        while not running_containers(client, process.pid) and time.monotonic() < wait_until:
            time.sleep(0.1)
        time.sleep(generator.uniform(0.0, 4.0))
        had_containers = len(running_containers(client, process.pid))
        process.send_signal(signal.SIGKILL)
        process.wait()
        killed = time.monotonic()
        while running_containers(client, process.pid) and time.monotonic() - killed < after:
            time.sleep(0.1)
        stop_times.append(time.monotonic() - killed)
        still_running += len(running_containers(client, process.pid))
        complete = {path.parent.name for path in jobs.glob("*/*/result.json")}
        lost |= ever_complete - complete
        ever_complete |= complete
        print(
            f"kill -9 #{round_number + 1}: {had_containers} container(s) running, {len(complete)} trial(s) complete, "
            f"containers stopped {stop_times[-1]:.1f} s after the kill"
        )
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    complete = {path.parent.name for path in jobs.glob("*/*/result.json")}
    lost |= ever_complete - complete
    import depthlab

    trials = depthlab.load_trials(jobs, cache=False)
    valid = trials.filter(pl.col("status") != "invalid")
    per_cell = Counter(zip(valid["model"], valid["cap"], strict=True))
    duplicated = sum(max(0, count - ATTEMPTS) for count in per_cell.values())
    missing = sum(max(0, ATTEMPTS - per_cell.get((m, c), 0)) for m in MODELS for c in CAPS)
    print(
        f"resume after {kills} kills: exit {done.returncode}, {len(complete)} trials complete, {missing} cell(s) short"
    )
    print(f"trials lost across the kills:            {len(lost):7d}   (target 0)")
    print(f"trials duplicated:                       {duplicated:7d}   (target 0)")
    print(f"containers running {after:g} s after a kill:  {still_running:7d}   (target 0)")
    print(f"longest time for a container to stop:    {max(stop_times):7.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flood-mb", type=int, default=1024)
    parser.add_argument("--kills", type=int, default=4)
    parser.add_argument("--after", type=float, default=60.0)
    args = parser.parse_args()
    client = docker.from_env()
    holder: dict = {"policy": lambda messages, model: reply()}
    url = serve(holder)
    with tempfile.TemporaryDirectory(prefix="depthlab-bench-faults-") as folder:
        root = Path(folder)
        flood_benchmark(client, root, holder, url, args.flood_mb)
        kill_benchmark(client, root, holder, url, args.kills, args.after)


if __name__ == "__main__":
    main()
