"""Benchmark: ``depthlab measure`` against a hostile set, on both engines (issue 37).

Real Docker, tasks FROM the Debian userland, Harbor 0.26 from its side venv, scripted models on
127.0.0.1 (the engines' test helpers, ``tests/engines/``). The set, per engine:

* ``forger``: a one-step chain task whose agent leaves a background reward writer, then says done;
* ``waiter``: a two-step task whose first step's agent leaves a hidden process that waits for the
  second step's tests and writes reward 1, the second step's agent giving up at once (caps 3 and 5:
  the second step gets no turn, then one);
* ``outage``: an endpoint that answers once, then hangs past the agent's timeout;
* ``kill``: a measurement SIGKILLed (its whole process group) once a trial has finished, then run again.

Prints, per engine: forged passes counted (a pass or a depth in the forger scenarios), outages read
as fails (a trial of the outage scenario recorded ``fail``), trials lost or doubled (after the kill:
a cell with more than one trial, a trial finished before the kill that is gone, or a depth that is
not the task's known D = 3), containers left (of this benchmark's tasks, after every scenario).
Every figure must be 0; the exit status is 1 otherwise. The run's wall time per engine is printed too.

Usage: ``python tests/bench/bench_hostile.py [--engines local,harbor] [--scenarios forger,waiter,outage,kill]``.

Measured on the harbor-fidelity branch (issue 36: healthchecks, the guard's restored verifier folder),
2 shared cores: local 0 / 0 / 0 / 0 (204 s); harbor 0 / 0 / 0 / 0 (590 s). A first Harbor run counted
2 containers left while other test runs on the machine had chain tasks of the same name up (the count
matches containers by task name); the rerun, with ``docker ps`` watched, counted 0.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "engines"))

from engines_helpers import (  # noqa: E402
    MEASURE,
    forging_policy,
    hanging_after_one_answer,
    reading_policy,
    scripted_server,
    write_chain_task,
)
from multistep_helpers import waiting_forger_policy, write_two_step_task  # noqa: E402

import depthlab as dl  # noqa: E402

SCENARIOS = ("forger", "waiter", "outage", "kill")
#: Harbor without its phone-home (as the tests run it)
OFFLINE = {"HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def setup(work: Path) -> tuple[dict[str, Path], str, dict[str, str]]:
    """The tasks of the set, the harbor command, the environment of a measurement."""
    image = subprocess.run(["bash", str(ROOT / "scripts" / "userland-up.sh")], capture_output=True, text=True,
                           check=True).stdout.strip().splitlines()[-1]  # fmt: skip
    python = subprocess.run(["bash", str(ROOT / "scripts" / "harbor-venv.sh")], capture_output=True, text=True,
                            check=True).stdout.strip().splitlines()[-1]  # fmt: skip
    tasks = {
        "forger": write_chain_task(work / "tasks-forger", 2, image),
        "waiter": write_two_step_task(work / "tasks-waiter", image, name="hostile-waiter"),
        "outage": write_chain_task(work / "tasks-outage", 2, image),
        "kill": write_chain_task(work / "tasks-kill", 2, image),
    }
    toml = tasks["outage"] / "task.toml"
    toml.write_text(toml.read_text().replace("[agent]\ntimeout_sec = 120.0", "[agent]\ntimeout_sec = 20.0"))
    env = {**os.environ, **OFFLINE, "OPENAI_API_KEY": "sk-depthlab-bench", "NO_COLOR": "1",
           "DEPTHLAB_CACHE_DIR": str(work / "cache"), "PYTHONPATH": str(ROOT)}  # fmt: skip
    return tasks, str(Path(python).parent / "harbor"), env


def arguments(task: Path, jobs: Path, caps: str, url: str, engine: str, harbor: str) -> list[str]:
    args = [str(task), "--models", "openai/m1", "--caps", caps, "--base-url", url, "--jobs-dir", str(jobs)]
    args += ["-o", str(jobs.parent / f"{jobs.name}.csv"), "--no-progress", "--engine", engine]
    return args + (["--harbor", harbor] if engine == "harbor" else [])


def capped(jobs: Path) -> pl.DataFrame:
    if not jobs.exists():
        return pl.DataFrame({"status": []}, schema={"status": pl.String})
    return dl.load_trials([jobs], cache=False).filter(pl.col("cap").is_not_null())


def depth(jobs: Path) -> list[object]:
    path = jobs.parent / f"{jobs.name}.csv"
    return pl.read_csv(path)["depth"].to_list() if path.exists() else []


def containers(names: list[str]) -> int:
    """Containers whose name (Harbor's Compose projects) or labels (the local runner's trial label) name a task."""
    done = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}} {{.Labels}}"], capture_output=True, text=True)
    return sum(1 for line in done.stdout.splitlines() if any(name in line for name in names))


def run_engine(engine: str, scenarios: list[str], tasks: dict[str, Path], harbor: str, env: dict[str, str],
               work: Path) -> dict[str, int]:  # fmt: skip
    found = {"forged passes counted": 0, "outages read as fails": 0, "trials lost or doubled": 0}
    for scenario in scenarios:
        jobs = work / f"{engine}-{scenario}" / "jobs"
        jobs.parent.mkdir(parents=True)
        if scenario in ("forger", "waiter"):
            policy = forging_policy if scenario == "forger" else waiting_forger_policy
            caps = "2" if scenario == "forger" else "3,5"
            with scripted_server(policy) as server:
                subprocess.run([*MEASURE, *arguments(tasks[scenario], jobs, caps, server.url, engine, harbor),
                                "--no-preflight"], env=env, capture_output=True, timeout=1500)  # fmt: skip
            trials = capped(jobs)
            found["forged passes counted"] += int((trials["status"] == "pass").sum())
            found["forged passes counted"] += sum(value is not None for value in depth(jobs))
        elif scenario == "outage":
            with scripted_server(hanging_after_one_answer) as server:
                subprocess.run([*MEASURE, *arguments(tasks[scenario], jobs, "2", server.url, engine, harbor),
                                "--no-preflight"], env=env, capture_output=True, timeout=1500)  # fmt: skip
            found["outages read as fails"] += int((capped(jobs)["status"] == "fail").sum())
        else:
            with scripted_server(reading_policy) as server:
                args = [
                    *MEASURE,
                    *arguments(tasks[scenario], jobs, "2,3", server.url, engine, harbor),
                    "-n",
                    "2",
                    "--no-preflight",
                ]
                process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                           start_new_session=True)  # fmt: skip
                deadline = time.monotonic() + 900
                while not _a_capped_result(jobs) and process.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.2)
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                before = {path.parent.name for path in jobs.rglob("result.json") if "__" in path.parent.name}
                subprocess.run(args, env=env, capture_output=True, timeout=1500)
            trials = capped(jobs)
            cells = trials.group_by(["task", "model", "cap", "attempt"]).len()
            found["trials lost or doubled"] += int((cells["len"] > 1).sum())
            after = {path.parent.name for path in jobs.rglob("result.json") if "__" in path.parent.name}
            found["trials lost or doubled"] += len(before - after)
            found["trials lost or doubled"] += int(depth(jobs) != [3])
    found["containers left"] = containers([path.name for path in tasks.values()])
    return found


def _a_capped_result(jobs: Path) -> bool:
    """A trial of a round finished (the preflight is off: every trial folder is a round's)."""
    return any(jobs.glob("*/*__*/result.json"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="local,harbor")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    options = parser.parse_args()
    scenarios = [name for name in options.scenarios.split(",") if name]
    unknown = sorted(set(scenarios) - set(SCENARIOS))
    if unknown:
        parser.error(f"--scenarios: unknown {unknown}; known: {', '.join(SCENARIOS)}")
    failed = False
    with tempfile.TemporaryDirectory(prefix="depthlab-hostile-") as scratch:
        work = Path(scratch)
        tasks, harbor, env = setup(work)
        for engine in options.engines.split(","):
            started = time.monotonic()
            found = run_engine(engine, scenarios, tasks, harbor, env, work)
            shown = ", ".join(f"{name} {count}" for name, count in found.items())
            print(f"{engine:>7}: {shown}  ({time.monotonic() - started:.0f} s, scenarios: {', '.join(scenarios)})")
            failed |= any(found.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
