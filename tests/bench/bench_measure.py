"""Benchmark: ``depthlab measure``'s round loop on a simulated 1,000-task, 2-model measurement.

The real loop (:func:`depthlab.engines.measure`) drives an in-process engine whose trials come
from known depths (a run at cap c passes iff c >= the task's depth for that model); each round
the engine also builds the round's Harbor job configs with the real
:meth:`depthlab.engines.HarborEngine.round_configs` (what ``--engine harbor`` would hand to
``harbor run``), so the figures are depthlab's own cost per round, without the trials' run time.

Prints, in one run:

* per round: the runs planned, the Harbor jobs it becomes, the loop's own time (load, plan,
  budget, depth table: everything but the trials) and configs' build time, and the process's
  peak resident memory after the round;
* rounds needed, the runs of the adaptive rounds against the exhaustive sweep (tasks x models x
  caps) and against the sweep planner (``plan_missing(mode="sweep")`` from scratch, then its
  second round), as ratios, all in this process; the depths are checked against the truth.

Usage: ``python tests/bench/bench_measure.py [--tasks N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import polars as pl

from depthlab import schema
from depthlab.engines import HarborEngine, measure
from depthlab.measures import plan_missing

CAPS = schema.CAPS
MODELS = ("openai/model-a", "openai/model-b")


def truth(n_tasks: int, seed: int) -> dict[str, dict[str, int | None]]:
    """Per task and model, the smallest passing cap (None: unsolved), skewed shallow as TB2's are."""
    rng = np.random.default_rng(seed)
    depth_index = rng.choice(len(CAPS), size=n_tasks, p=[0.12, 0.14, 0.14, 0.16, 0.14, 0.1, 0.08, 0.12])
    unsolved = rng.random(n_tasks) < 0.15
    table: dict[str, dict[str, int | None]] = {}
    for index in range(n_tasks):
        name = f"task-{index:04d}"
        base = int(depth_index[index])
        second = min(base + int(rng.integers(0, 3)), len(CAPS))  # the other model is as good or worse
        table[name] = {
            MODELS[0]: None if unsolved[index] else CAPS[base],
            MODELS[1]: None if unsolved[index] or second >= len(CAPS) else CAPS[second],
        }
    return table


class BenchEngine:
    """Trials from :func:`truth`, held in memory; the round's Harbor configs built as the Harbor engine would."""

    name = "bench"

    def __init__(self, depths: dict[str, dict[str, int | None]]) -> None:
        self.depths = depths
        self.frames: list[pl.DataFrame] = []
        self.harbor = HarborEngine("/tmp/bench-measure-jobs", base_url="http://127.0.0.1:8000/v1")
        self.rounds: list[dict[str, float]] = []
        self._mark = time.perf_counter()
        self.progress = False
        self.note = ""
        self.jobs_dir = None  # the trials live in memory: no folder to lock

    def check(self) -> None:
        pass

    def resume(self, echo) -> None:
        pass

    def preflight(self, tasks, echo) -> pl.DataFrame:
        return schema.preflight_failures()

    def next_round(self) -> int:
        return len(self.rounds) + 1

    def run_round(self, plan: pl.DataFrame, number: int, tasks: pl.DataFrame, echo) -> None:
        loop_seconds = time.perf_counter() - self._mark
        started = time.perf_counter()
        configs = self.harbor.round_configs(plan, tasks, number)
        config_seconds = time.perf_counter() - started
        rows = plan.select("dataset", "task", "model", "cap")
        depth = pl.Series([self.depths[t][m] for t, m in zip(rows["task"], rows["model"], strict=True)], dtype=pl.Int32)
        status = pl.when(depth.is_not_null() & (pl.col("cap") >= depth)).then(pl.lit("pass")).otherwise(pl.lit("fail"))
        offset = sum(frame.height for frame in self.frames)
        trials = rows.with_columns(
            status=status,
            agent=pl.lit("terminus-2"),
            n_input_tokens=pl.lit(20_000),
            n_output_tokens=pl.lit(800),
            cost_usd=pl.lit(0.01),
            source=pl.format("bench/{}/result.json", pl.int_range(offset, offset + rows.height)),
        )
        self.frames.append(schema.conform(trials, "trials"))
        self.rounds.append(
            {
                "runs": plan.height,
                "jobs": len(configs),
                "loop": loop_seconds,
                "configs": config_seconds,
                "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
        self._mark = time.perf_counter()

    def load_trials(self) -> pl.DataFrame:
        return pl.concat(self.frames) if self.frames else schema.empty("trials")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    depths = truth(args.tasks, args.seed)
    tasks = schema.conform(
        pl.DataFrame({"dataset": "bench", "task": list(depths), "source": [f"/tasks/{t}" for t in depths]}), "tasks"
    )
    engine = BenchEngine(depths)
    baseline_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    result = measure(engine, tasks, models=MODELS, caps=CAPS, preflight=False, progress=False, echo=lambda _: None)
    total = time.perf_counter() - started
    print(f"simulated measurement: {args.tasks} tasks x {len(MODELS)} models, ladder {CAPS}")
    print(f"{'round':>5} {'runs':>6} {'jobs':>4} {'loop s':>7} {'configs s':>9} {'peak RSS MB':>11}")
    for number, row in enumerate(engine.rounds, 1):
        print(
            f"{number:>5} {row['runs']:>6} {row['jobs']:>4} {row['loop']:>7.3f} {row['configs']:>9.3f} "
            f"{row['rss_mb']:>11.0f}"
        )
    # the truth, by the rules: the smallest cap where some model passes; unsolved if none does
    expected = {t: min((d for d in by.values() if d is not None), default=None) for t, by in depths.items()}
    got = dict(result.depth.select("task", "depth").iter_rows())
    assert result.complete, result.stopped
    assert got == expected, "the measured depths differ from the truth"

    # baselines, in this process: the exhaustive sweep, and the sweep planner (one plan of every needed cell)
    started = time.perf_counter()
    sweep_plan = plan_missing(schema.empty("trials"), tasks, models=MODELS, caps=CAPS, mode="sweep")
    sweep_plan_seconds = time.perf_counter() - started
    runs, sweep = result.runs, result.sweep_runs
    per_round = [row["loop"] for row in engine.rounds]
    print(f"rounds needed: {len(engine.rounds)} (the ladder has {len(CAPS)} caps)")
    print(f"adaptive runs: {runs}; exhaustive sweep: {sweep} ({runs / sweep:.2f} of it, {sweep / runs:.1f}x fewer)")
    print(f"sweep planner's first round: {sweep_plan.height} runs ({runs / sweep_plan.height:.2f} of it)")
    print(
        f"loop time per round: median {np.median(per_round):.3f} s, max {max(per_round):.3f} s; the sweep planner's "
        f"one plan: {sweep_plan_seconds:.3f} s (max round / sweep plan = {max(per_round) / sweep_plan_seconds:.1f}x)"
    )
    peak = engine.rounds[-1]["rss_mb"]
    print(
        f"whole loop without trials: {total:.2f} s; peak RSS {peak:.0f} MB ({peak - baseline_mb:.0f} MB over the start)"
    )
    print(f"statuses: {result.status_counts()}")


if __name__ == "__main__":
    main()
