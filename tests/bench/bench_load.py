"""Benchmark: loading a realistic synthetic Harbor tree into the trials table.

Writes ``--trials`` Harbor trial directories (default 20,000) in jobs of 500, shaped like the
real samples: ``config.json`` (~1.7 KB), ``result.json`` (~4-5 KB, with a traceback when an
exception occurred), ``verifier/reward.txt`` and ``test-stdout.txt`` and an agent trajectory:
half the jobs are terminus-2 runs (ATIF ``trajectory.json`` of ~30 KB, ``n_episodes`` in
``result.json``), half are a custom agent with a chat-message-list ``trajectory.json``
(~15 KB, as in TMax) that must be read to count turns. Then prints, in one run:

* cold load (best of two, no depthlab cache; the OS page cache is warmed first for every
  contender alike) time, CPU seconds and throughput over the bytes the loader had to read;
* cached reload time;
* peak resident memory of the loader (parent and worker processes, from getrusage);
* a naive baseline: ``json.load`` of every result.json and trajectory.json + a pandas frame;
* the practical limit: reading and parsing the same JSON bytes with msgspec (fastest parser
  here), for the files the loader needs and for every JSON file the naive baseline reads;

and the ratios. Usage: ``python tests/bench/bench_load.py [--trials N] [--root DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

_TRACEBACK = "Traceback (most recent call last):\n" + '  File "/venv/lib/harbor/trial/trial.py", line 370\n' * 30
_OBSERVATION = "drwxr-xr-x 2 root root 4096 Jan  1 00:00 some-directory-name\n" * 12


def _write_tree(root: Path, n_trials: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    per_job = 500
    for job_index in range((n_trials + per_job - 1) // per_job):
        terminus = job_index % 2 == 0
        job = root / f"job-{job_index:03d}"
        job.mkdir(parents=True)
        model = f"openai/model-{job_index % 4}"
        agent_config = {
            "name": "terminus-2" if terminus else None,
            "import_path": None if terminus else "Custom:Agent",
            "model_name": model,
            "kwargs": {"max_episodes": 200} if terminus else {"max_steps": 64},
        }
        (job / "config.json").write_text(json.dumps({"job_name": job.name, "agents": [agent_config]}, indent=4))
        (job / "result.json").write_text(json.dumps({"id": "j", "n_total_trials": per_job, "stats": {}}, indent=4))
        for index in range(min(per_job, n_trials - job_index * per_job)):
            name = f"task-{index % 89:02d}__{job_index:03d}{index:04d}"
            trial = job / name
            (trial / "agent").mkdir(parents=True)
            (trial / "verifier").mkdir()
            turns = rng.randint(1, 40)
            reward = float(rng.random() < 0.4)
            timed_out = rng.random() < 0.15
            config = {
                "task": {"path": name.split("__")[0], "git_url": "https://github.com/x/y.git", "source": "tb"},
                "trial_name": name,
                "trials_dir": f"jobs/{job.name}",
                "agent": agent_config,
                "environment": {"type": "docker", "force_build": False, "delete": True, "env": {}, "kwargs": {}},
                "verifier": {"override_timeout_sec": None, "max_timeout_sec": None, "env": {}, "disable": False},
                "job_id": "j",
            }
            (trial / "config.json").write_text(json.dumps(config, indent=4))
            phase = {"started_at": "2026-06-18T18:56:03.138560Z", "finished_at": "2026-06-18T19:11:44.535723Z"}
            result = {
                "id": f"{job_index}-{index}",
                "task_name": name.split("__")[0],
                "trial_name": name,
                "trial_uri": f"file:///jobs/{job.name}/{name}",
                "task_id": {"git_url": "https://github.com/x/y.git", "git_commit_id": "69671fba", "path": name},
                "source": "tb",
                "task_checksum": "4fde6e809c475b000ae3ea4135f906ffe4775bccae7dafd0b123f4ecc9fcf697",
                "config": config,
                "agent_info": {"name": "terminus-2" if terminus else "custom", "version": "1", "model_info": None},
                "agent_result": {
                    "n_input_tokens": rng.randint(1000, 10**6),
                    "n_cache_tokens": 0,
                    "n_output_tokens": rng.randint(100, 10**4),
                    "cost_usd": 0.01,
                    "rollout_details": None,
                    "metadata": {"n_episodes": turns, "api_request_times_msec": [812.5] * turns} if terminus else None,
                },
                "verifier_result": {"rewards": {"reward": reward}},
                "exception_info": {
                    "exception_type": "AgentTimeoutError",
                    "exception_message": "Agent execution timed out after 900.0 seconds",
                    "exception_traceback": _TRACEBACK,
                    "occurred_at": "2026-06-18T12:11:05.428598",
                }
                if timed_out
                else None,
                "started_at": phase["started_at"],
                "finished_at": phase["finished_at"],
                "environment_setup": phase,
                "agent_setup": phase,
                "agent_execution": phase,
                "verifier": phase,
                "step_results": None,
            }
            (trial / "result.json").write_text(json.dumps(result, indent=4))
            (trial / "verifier" / "reward.txt").write_text(f"{int(reward)}\n")
            (trial / "verifier" / "test-stdout.txt").write_text("PASSED test_outputs.py::test_x\n" * 100)
            if terminus:
                steps = [{"step_id": 1, "source": "user", "message": "Task instruction " * 40}]
                for turn in range(turns):
                    steps.append(
                        {
                            "step_id": turn + 2,
                            "source": "agent",
                            "model_name": model,
                            "message": "Analysis: looking at the output.\nPlan: run the next command.",
                            "tool_calls": [
                                {
                                    "tool_call_id": f"call_{turn}_1",
                                    "function_name": "bash_command",
                                    "arguments": {"keystrokes": "ls -la\n", "duration": 0.1},
                                }
                            ],
                            "observation": {"results": [{"content": _OBSERVATION}]},
                            "metrics": {"prompt_tokens": 1000, "completion_tokens": 50},
                        }
                    )
                trajectory = {
                    "schema_version": "ATIF-v1.6",
                    "session_id": "s",
                    "agent": {"name": "terminus-2", "version": "2.0.0"},
                }
                trajectory["steps"] = steps
                (trial / "agent" / "trajectory.json").write_text(json.dumps(trajectory, indent=2))
            else:
                messages = [{"role": "system", "content": "You are a helpful assistant. " * 20}]
                messages.append({"role": "user", "content": "Please solve this task: " * 30})
                for _ in range(turns):
                    messages.append(
                        {
                            "role": "assistant",
                            "content": "THOUGHT: next step",
                            "tool_calls": [{"id": "c", "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}],
                        }
                    )
                    messages.append({"role": "tool", "content": _OBSERVATION[:400]})
                (trial / "agent" / "trajectory.json").write_text(json.dumps(messages, indent=2))
                (trial / "agent" / "usage.json").write_text(json.dumps({"prompt_tokens": 1, "max_steps": 64}))


def _naive(root: Path):
    """json.load every trial's result.json and trajectory.json, then one pandas frame."""
    import pandas as pd

    rows = []
    for job in sorted(root.iterdir()):
        if not job.is_dir():
            continue
        for trial in sorted(job.iterdir()):
            if not trial.is_dir():
                continue
            with open(trial / "result.json") as handle:
                result = json.load(handle)
            turns = None
            trajectory_path = trial / "agent" / "trajectory.json"
            if trajectory_path.exists():
                with open(trajectory_path) as handle:
                    trajectory = json.load(handle)
                if isinstance(trajectory, list):
                    turns = sum(message.get("role") == "assistant" for message in trajectory)
                else:
                    turns = sum(step.get("source") == "agent" for step in trajectory["steps"])
            rewards = (result.get("verifier_result") or {}).get("rewards") or {}
            exception = (result.get("exception_info") or {}).get("exception_type")
            rows.append(
                {
                    "task": result["task_name"],
                    "trial": result["trial_name"],
                    "model": result["config"]["agent"]["model_name"],
                    "reward": rewards.get("reward"),
                    "exception": exception,
                    "n_turns": turns,
                    "started_at": pd.Timestamp(result["started_at"]),
                }
            )
    return pd.DataFrame(rows)


def _json_files(root: Path, loader_only: bool) -> list[str]:
    files = []
    for job in root.iterdir():
        if not job.is_dir():
            continue
        for trial in job.iterdir():
            if not trial.is_dir():
                continue
            files.append(str(trial / "result.json"))
            chat = (trial / "agent" / "usage.json").exists()
            if not loader_only or chat:
                files.append(str(trial / "agent" / "trajectory.json"))
            if loader_only and chat:
                files.append(str(trial / "agent" / "usage.json"))
    return files


def _read_parse(files: list[str]) -> tuple[float, int]:
    import msgspec

    decode = msgspec.json.decode
    total = 0
    start = time.perf_counter()
    for path in files:
        with open(path, "rb") as handle:
            data = handle.read()
        total += len(data)
        decode(data)
    return time.perf_counter() - start, total


def _cpu() -> float:
    """User + system CPU seconds of this process and its finished children."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _peak_mib() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument("--root", type=Path, default=None, help="where to write the tree (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the tree afterwards")
    args = parser.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="depthlab-bench-"))
    cache_dir = Path(tempfile.mkdtemp(prefix="depthlab-bench-cache-"))
    os.environ["DEPTHLAB_CACHE_DIR"] = str(cache_dir)
    tree = root / "jobs"
    try:
        start = time.perf_counter()
        _write_tree(tree, args.trials)
        print(f"wrote {args.trials} trials in {time.perf_counter() - start:.1f}s under {tree}")

        from depthlab.io import read_trials

        os.sync()  # let the writes reach the disk first, so they do not slow the first timed load
        needed_files = _json_files(tree, loader_only=True)
        all_files = _json_files(tree, loader_only=False)
        _read_parse(all_files)  # warm the OS page cache, so every contender reads from memory

        # Best of two, interleaved, for everything fast (the machine may be shared and noisy);
        # CPU seconds (this process and its workers) are printed beside wall time.
        before_own, _ = _peak_mib()
        cold = warm = needed_seconds = all_seconds = float("inf")
        cold_cpu = naive_cpu = 0.0
        for _ in range(2):
            seconds, needed_bytes = _read_parse(needed_files)
            needed_seconds = min(needed_seconds, seconds)
            seconds, all_bytes = _read_parse(all_files)
            all_seconds = min(all_seconds, seconds)
            shutil.rmtree(cache_dir, ignore_errors=True)
            cpu, start = _cpu(), time.perf_counter()
            load = read_trials(tree)
            if time.perf_counter() - start < cold:
                cold, cold_cpu = time.perf_counter() - start, _cpu() - cpu
            start = time.perf_counter()
            cached = read_trials(tree)
            warm = min(warm, time.perf_counter() - start)
        after_own, children = _peak_mib()
        assert load.trials.height == args.trials, load.summary()
        assert cached.trials.equals(load.trials)

        cpu, start = _cpu(), time.perf_counter()
        naive_frame = _naive(tree)
        naive, naive_cpu = time.perf_counter() - start, _cpu() - cpu
        assert len(naive_frame) == args.trials

    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)

    mib = 1024 * 1024
    load_average = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"cores: {os.cpu_count()}  python {sys.version.split()[0]}  load average now: {load_average}")
    read_mb = needed_bytes / mib
    print(f"cold load:          {cold:7.2f} s  ({read_mb / cold:6.1f} MB/s over the {read_mb:.0f} MB the loader reads)")
    print(f"cached reload:      {warm:7.3f} s")
    print(f"cold load CPU:      {cold_cpu:7.2f} s  (this process + workers)")
    print(
        f"naive baseline:     {naive:7.2f} s  (json.load of {all_bytes / mib:.0f} MB + pandas; CPU {naive_cpu:.2f} s)"
    )
    print(f"read+parse, needed: {needed_seconds:7.2f} s  (msgspec, one process, the files the loader reads)")
    print(f"read+parse, all:    {all_seconds:7.2f} s  (msgspec, one process, every file the naive baseline reads)")
    print(f"peak RSS:           parent {after_own:.0f} MiB (before the load {before_own:.0f} MiB)", end="")
    print(f", largest worker {children:.0f} MiB")
    print(f"ratio naive / cold:          {naive / cold:6.1f}x   (target >= 3; CPU seconds {naive_cpu / cold_cpu:.1f}x)")
    print(f"ratio cold / read+parse:     {cold / needed_seconds:6.2f}x   (target <= 2; needed bytes)")
    print(f"ratio cold / read+parse all: {cold / all_seconds:6.2f}x")
    print(f"ratio naive / cached:        {naive / warm:6.1f}x   (target >= 50)")


if __name__ == "__main__":
    main()
