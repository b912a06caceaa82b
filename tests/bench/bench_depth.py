"""Benchmark: estimate_depth on 200,000 trials, and the planner's runs against the exhaustive sweep.

Prints, in one run:

* ``estimate_depth`` wall time on a trials table of ``--trials`` rows (default 200,000: tasks x
  2 models x 8 caps, with repeats, infrastructure errors and uncapped runs mixed in), against a
  naive baseline (a per-task Python loop over dicts applying the same rules), as a ratio. The
  two results are checked to agree. D alone (``level=None``); then with the interval for the true
  depth (the default ``level=0.9``), as a ratio of D alone.
* On the scale-1.0 simulation (734 tasks, 2 models, 8 caps): the runs the adaptive planner needs
  to pin every depth (plan a round, run it from the true model, re-plan), the runs of the sweep
  planner from scratch, and the exhaustive sweep (tasks x models x caps x attempts); the target
  is adaptive <= half the sweep, with the same depths.

Usage: ``python tests/bench/bench_depth.py [--trials N] [--attempts K] [--root DIR]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from depthlab import schema
from depthlab.measures import estimate_depth
from depthlab.simulate import replay_plan, write_runs

CAPS = schema.CAPS


def _trials(n_rows: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n_tasks = max(1, n_rows // 20)  # ~16 capped cells per task plus repeats and public runs
    task = rng.integers(n_tasks, size=n_rows)
    depth = rng.choice(CAPS, size=n_tasks)
    model = rng.integers(2, size=n_rows)
    cap_index = rng.integers(-1, len(CAPS), size=n_rows)  # -1: an uncapped run
    cap = np.where(cap_index >= 0, np.array(CAPS)[np.maximum(cap_index, 0)], -1)
    passes = (cap >= depth[task] + model) & (cap > 0)
    flips = rng.random(n_rows) < 0.02
    status = np.where(passes ^ flips, "pass", "fail")
    status = np.where(rng.random(n_rows) < 0.03, "invalid", status)
    frame = pl.DataFrame(
        {
            "dataset": np.where(task % 3 == 0, "tb2", "seta"),
            "task": [f"task-{i}" for i in task],
            "model": np.where(model == 0, "m/a", "m/b"),
            "cap": pl.Series(cap, dtype=pl.Int32).replace(-1, None),
            "status": status,
        }
    )
    return schema.conform(frame, "trials")


def _naive_depth(trials: pl.DataFrame) -> dict[tuple[str, str], tuple[str, int | None]]:
    """The same rules, written the obvious way: one Python loop per task over dict rows."""
    models: dict[str, set[str]] = {}
    by_task: dict[tuple[str, str], list[dict]] = {}
    for row in trials.iter_rows(named=True):
        by_task.setdefault((row["dataset"], row["task"]), []).append(row)
        if row["cap"] in CAPS:
            models.setdefault(row["dataset"], set()).add(row["model"])
    out = {}
    for key, rows in by_task.items():
        cells: dict[tuple[str, int], list[str]] = {}
        for row in rows:
            if row["cap"] in CAPS and row["status"] in ("pass", "fail"):
                cells.setdefault((row["model"], row["cap"]), []).append(row["status"])
        state = {cell: ("pass" if "pass" in statuses else "fail") for cell, statuses in cells.items()}
        counted = models.get(key[0], set())
        passes = [cap for (_, cap), value in state.items() if value == "pass"]
        if not counted:
            out[key] = ("incomplete", None)
        elif passes:
            upper = min(passes)
            pinned = all((m, c) in state for m in counted for c in CAPS if c < upper)
            out[key] = ("solved", upper) if pinned else ("incomplete", None)
        elif all(state.get((m, CAPS[-1])) == "fail" for m in counted):
            out[key] = ("unsolved", None)
        else:
            out[key] = ("incomplete", None)
    return out


def _time(function, *args, repeat: int = 3):
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function(*args)
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200_000)
    parser.add_argument("--attempts", type=int, default=1)
    parser.add_argument("--root", default=None, help="where to write the simulation (default: a temp dir)")
    args = parser.parse_args()

    trials = _trials(args.trials)
    # D and the ladder's interval alone, the rules the naive loop applies; the interval for the true
    # depth (level=0.9, the default) is timed apart below
    fast, depth = _time(lambda frame: estimate_depth(frame, level=None), trials)
    slow, naive = _time(_naive_depth, trials, repeat=1)
    got = {(d, t): (s, v) for d, t, s, v in depth.select("dataset", "task", "status", "depth").iter_rows()}
    if got != naive:
        raise SystemExit("estimate_depth and the naive loop disagree")
    print(f"estimate_depth on {trials.height:,} trials ({depth.height:,} tasks): {fast:.3f} s (best of 3)")
    print(f"naive per-task Python loop:                         {slow:.3f} s")
    print(f"speed-up: {slow / fast:.1f}x")
    with_interval, _ = _time(estimate_depth, trials)
    print(f"with the true-depth interval (level=0.9): {with_interval:.3f} s, {with_interval / fast:.2f}x D alone")

    with tempfile.TemporaryDirectory(dir=args.root) as folder:
        start = time.perf_counter()
        summary = write_runs(Path(folder) / "sim", seed=0, scale=1.0, public_attempts=0)
        written = time.perf_counter() - start
        adaptive = replay_plan(summary, mode="adaptive", attempts=args.attempts)
        sweep = replay_plan(summary, mode="sweep", attempts=args.attempts)
    same = adaptive.depth.select("dataset", "task", "status", "depth").equals(
        sweep.depth.select("dataset", "task", "status", "depth")
    )
    print(f"\nsimulation scale 1.0: {summary.n_tasks} tasks, 2 models, {len(CAPS)} caps")
    print(f"(capped logs written in {written:.1f} s)")
    print(f"exhaustive sweep (tasks x models x caps x attempts): {adaptive.sweep_runs:,} runs")
    print(f"sweep planner from scratch:   {sweep.runs:,} runs in {sweep.rounds} rounds")
    print(
        f"adaptive planner:             {adaptive.runs:,} runs in {adaptive.rounds} rounds "
        f"= {adaptive.runs / adaptive.sweep_runs:.2f} of the sweep (target <= 0.50); same depths: {same}"
    )


if __name__ == "__main__":
    main()
