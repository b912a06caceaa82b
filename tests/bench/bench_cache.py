"""Benchmark: a warm (cached) reload of a 3,560-trial TMax-shaped tree against the naive loader.

The tree is the real TMax Harbor job in ``../shared/data/tb2-jobs/tmax-27b`` (445 trials with
``result.json``, a chat-list ``agent/trajectory.json`` and ``agent/usage.json``) copied into 8
jobs, one per TMax model, as the released evaluation assets are: 8 x 445 = 3,560 trials. Each
copy's ``result.json`` gets its own trial id, job folder and model; the other files are hard
links (same bytes, no extra disk). Then, in one process:

* the naive loader: ``json.load`` of every result.json and trajectory.json + a pandas frame
  (best of 3);
* a cold ``read_trials`` (fills the cache), then warm reloads (best of 7);
* the ratio naive / warm (target >= 50), in wall time and in CPU time of this process (on a
  shared machine the warm reload's stats wait on the kernel, so the wall ratio drops with the
  load average, printed beside it);
* the changes the cache key promises to see, each checked on a warm reload: a result.json
  rewritten with its size and modification time restored, a usage.json that appears, a
  trial removed, a trajectory replaced by a FIFO. Each must be seen (the script fails if not).

Usage: ``python tests/bench/bench_cache.py [--jobs 8] [--root DIR]``. Skips (exit 0, with the
reason) when the real job is not there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("DEPTHLAB_SHARED", HERE.parents[2] / "shared"))
REAL_JOB = SHARED / "data" / "tb2-jobs" / "tmax-27b" / "terminal-bench-2-0"
MODELS = ("tmax-2b", "tmax-4b", "tmax-9b", "tmax-27b", "Qwen3.5-2B", "Qwen3.5-4B", "Qwen3.5-9B", "Qwen3.6-27B")


def build_tree(root: Path, n_jobs: int) -> int:
    """``n_jobs`` copies of the real job under ``root/<model>/terminal-bench-2-0``; returns the trial count."""
    trials = sorted(path for path in REAL_JOB.iterdir() if (path / "result.json").is_file())
    for index in range(n_jobs):
        model = MODELS[index % len(MODELS)] + ("" if index < len(MODELS) else f"-{index}")
        job = root / model / "terminal-bench-2-0"
        job.mkdir(parents=True)
        for name in ("config.json", "result.json"):  # the job's own files, as in the released assets
            shutil.copy(REAL_JOB / name, job / name)
        for trial in trials:
            target = job / trial.name
            for source in trial.rglob("*"):
                destination = target / source.relative_to(trial)
                if source.is_dir():
                    destination.mkdir(parents=True, exist_ok=True)
                elif source.name != "result.json":
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    os.link(source, destination)
            result = json.loads((trial / "result.json").read_text())
            result["id"] = f"{model}-{result.get('id')}"
            result["config"]["trials_dir"] = f"jobs/{model}"
            result["config"]["agent"]["model_name"] = f"openai/{model}"
            (target / "result.json").write_text(json.dumps(result, indent=2))
    return n_jobs * len(trials)


def naive(root: Path):
    """json.load every trial's result.json and trajectory.json, then one pandas frame."""
    import pandas as pd

    rows = []
    for job in sorted(root.glob("*/terminal-bench-2-0")):
        for trial in sorted(job.iterdir()):
            if not (trial / "result.json").is_file():
                continue
            with open(trial / "result.json") as handle:
                result = json.load(handle)
            turns = None
            trajectory = trial / "agent" / "trajectory.json"
            if trajectory.exists():
                with open(trajectory) as handle:
                    messages = json.load(handle)
                turns = sum(message.get("role") == "assistant" for message in messages)
            rewards = (result.get("verifier_result") or {}).get("rewards") or {}
            rows.append(
                {
                    "task": result["task_name"],
                    "trial": result["trial_name"],
                    "model": result["config"]["agent"]["model_name"],
                    "reward": rewards.get("reward"),
                    "exception": (result.get("exception_info") or {}).get("exception_type"),
                    "n_turns": turns,
                    "started_at": pd.Timestamp(result["started_at"]),
                }
            )
    return pd.DataFrame(rows)


def _best(function, repeat: int) -> tuple[float, float, object]:
    """Best wall time, best CPU time (this process: the warm reload and the naive loader use one) and the value."""
    best, best_cpu, value = float("inf"), float("inf"), None
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        value = function()
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return best, best_cpu, value


def check_changes(root: Path) -> list[tuple[str, bool]]:
    """Each change the documented key promises to see, made after a warm load, then a reload."""
    from depthlab.io import read_trials

    jobs = sorted(root.glob("*/terminal-bench-2-0"))
    trials = sorted(path for path in jobs[0].iterdir() if path.is_dir())
    outcomes = []

    # 1. a rewrite that keeps the size and restores the modification time
    result_path = trials[0] / "result.json"
    text = result_path.read_text()
    old, new = ('"reward": 1.0', '"reward": 0.0') if '"reward": 1.0' in text else ('"reward": 0.0', '"reward": 1.0')
    before = read_trials(root)
    info = os.stat(result_path)
    result_path.write_text(text.replace(old, new, 1))
    os.utime(result_path, ns=(info.st_atime_ns, info.st_mtime_ns))
    after = read_trials(root)
    source = str(result_path)
    reward = dict(zip(after.trials["source"], after.trials["reward"], strict=True))[source]
    outcomes.append(("result.json rewritten, size and mtime kept", reward == float(new.split(": ")[1])))

    # 2. an optional file that appears (usage.json gives turn_limit)
    usage = trials[1] / "agent" / "usage.json"
    kept = usage.read_bytes()
    usage.unlink()
    without = read_trials(root)
    usage.write_bytes(kept)
    with_usage = read_trials(root)
    source = str(trials[1] / "result.json")
    limit = dict(zip(with_usage.trials["source"], with_usage.trials["turn_limit"], strict=True))[source]
    limit_before = dict(zip(without.trials["source"], without.trials["turn_limit"], strict=True))[source]
    outcomes.append(("usage.json removed, then back", limit_before is None and limit is not None))

    # 3. a trial removed
    shutil.rmtree(trials[2])
    outcomes.append(("a trial removed", read_trials(root).trials.height == before.trials.height - 1))

    # 4. a trajectory replaced by a FIFO (not hung; since issue 26 it costs only N, with a note naming
    # it), then repaired
    trajectory = trials[3] / "agent" / "trajectory.json"
    data = trajectory.read_bytes()
    trajectory.unlink()
    os.mkfifo(trajectory)
    fifo = read_trials(root)
    trajectory.unlink()
    trajectory.write_bytes(data)
    repaired = read_trials(root)
    outcomes.append(
        (
            "trajectory became a FIFO, then a file",
            any(note.field == "n_turns" and str(trajectory) in note.reason for note in fifo.notes)
            and not repaired.notes
            and not fifo.rejected
            and not repaired.rejected,
        )
    )
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=len(MODELS))
    parser.add_argument("--root", type=Path, default=None)
    args = parser.parse_args()
    if not REAL_JOB.is_dir():
        print(f"skipped: the real TMax job is not at {REAL_JOB} (set DEPTHLAB_SHARED)")
        return 0
    root = args.root or Path(tempfile.mkdtemp(prefix="depthlab-bench-cache-"))
    cache_dir = Path(tempfile.mkdtemp(prefix="depthlab-bench-cache-dir-"))
    os.environ["DEPTHLAB_CACHE_DIR"] = str(cache_dir)
    tree = root / "tmax"
    try:
        n_trials = build_tree(tree, args.jobs)
        print(f"tree: {n_trials} trials in {args.jobs} jobs of the real TMax job under {tree}")
        from depthlab.io import read_trials

        naive(tree)  # warm the OS page cache for every contender alike
        naive_seconds, naive_cpu, frame = _best(lambda: naive(tree), 3)
        start = time.perf_counter()
        cold = read_trials(tree)
        cold_seconds = time.perf_counter() - start
        warm_seconds, warm_cpu, warm = _best(lambda: read_trials(tree), 7)
        if len(frame) != n_trials or cold.trials.height != n_trials or not warm.trials.equals(cold.trials):
            print(f"FAILED: rows differ: naive {len(frame)}, cold {cold.summary()}, warm {warm.summary()}")
            return 1
        load_average = ", ".join(f"{value:.1f}" for value in os.getloadavg())
        print(f"cores: {os.cpu_count()}  load average now: {load_average}")
        print(f"naive loader:  {naive_seconds * 1000:8.1f} ms  (CPU {naive_cpu * 1000:.1f} ms; json.load + pandas)")
        print(f"cold load:     {cold_seconds * 1000:8.1f} ms  (fills the cache)")
        print(f"warm reload:   {warm_seconds * 1000:8.1f} ms  (CPU {warm_cpu * 1000:.1f} ms)")
        wall, cpu = naive_seconds / warm_seconds, naive_cpu / warm_cpu
        print(f"ratio naive / warm: {wall:6.1f}x wall, {cpu:.1f}x CPU (target >= 50)")
        outcomes = check_changes(tree)
        for name, seen in outcomes:
            print(f"change seen on reload: {'yes' if seen else 'NO '}  {name}")
        return 0 if all(seen for _, seen in outcomes) else 1
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
        if args.root is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
