"""Benchmark: how sure D is under noise, on runs of known true depth from a generator written apart from the library.

The generator is ``tests/bench/depth_truth.py`` (not ``depthlab.simulate.noisy``, not the noise model of
``depthlab.measures._noise``): pass probabilities Beta, uniform 0.5-0.95 or rising with the cap per (task, model),
luck varying by task, models up to two rungs apart, ladders with missing caps. Prints, in one run (all seeded):

* the interval for the true depth (``estimate_depth(level=0.9)``'s ``ci_low``/``ci_high``): its coverage
  of the true depth and its median width in rungs, by attempts (1-5), models (1-3), luck (0-10%), gaps,
  pass law and depth shape; targets: coverage >= 0.90 within Monte Carlo error (300 tasks: sd 0.017), a
  median width of at most 3 rungs at 3 attempts;
* the ladder interval (``depth_low``/``depth_high``)'s coverage of the true depth under each pass rule,
  on issue 38's setting (pass probability uniform 0.5-0.95, 5% luck);
* ``attempts="auto"`` against fixed 3 attempts on this generator's tasks: runs (auto's share of fixed 3's)
  and accuracy (share exact, within one rung), under the isotonic and majority rules;
* the noisy model's fit (``depthlab.simulate.noisy_fit``) on runs of its own model written again here, and
  on two misspecified versions (probit curve, t-distributed horizons): parameter recovery, and the
  noise-alone share of second-model drops against the share the generator's noise-alone runs show.

Usage: ``python tests/bench/bench_depth_interval.py [--tasks 300] [--quick]``.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from depth_truth import Scenario, interval_row, logistic_horizon_runs, planner_rows

from depthlab.simulate.noisy_fit import NoisyFit, drop_share, fit_noisy_model, noise_drop_share


def interval_tables(n_tasks: int, quick: bool) -> None:
    rows = []
    attempts = (1, 3) if quick else (1, 2, 3, 4, 5)
    grid = itertools.product(attempts, (1, 2, 3), (0.0, 0.05, 0.1), (0.0, 0.25))
    start = time.perf_counter()
    for i, (a, m, luck, gap) in enumerate(grid):
        rows.append(interval_row(Scenario(n_tasks=n_tasks, n_models=m, attempts=a, luck=luck, gap=gap), seed=i))
    for j, (law, shape, gap) in enumerate(itertools.product(("uniform", "rising"), ("spread", "shallow"), (0.0, 0.25))):
        for a in (1, 3, 5):
            scenario = Scenario(n_tasks=n_tasks, n_models=2, attempts=a, luck=0.05, gap=gap, pass_law=law, shape=shape)
            rows.append(interval_row(scenario, seed=1000 + 10 * j + a))
    for k, (a, m) in enumerate(itertools.product((1, 3, 5), (1, 2, 3))):  # small collections: 40 tasks, 20 draws each
        small = [interval_row(Scenario(n_tasks=40, n_models=m, attempts=a, luck=0.05), seed=5000 + 100 * k + r)
                 for r in range(20)]  # fmt: skip
        rows.append({**small[0], "n_tasks": 800, "shape": "spread (40-task collections)",
                     "coverage": float(np.mean([r["coverage"] for r in small])),
                     "median_width": float(np.median([r["median_width"] for r in small])),
                     "beyond_open": float(np.mean([r["beyond_open"] for r in small]))})  # fmt: skip
    table = pl.DataFrame(rows)
    seconds = time.perf_counter() - start
    print(f"The interval for the true depth at level 0.9 ({len(rows)} scenarios, {seconds:.0f} s):")
    print(table)
    print("Summary by attempts (every scenario):")
    print(
        table.group_by("attempts")
        .agg(
            pl.col("coverage").min().alias("min_coverage"),
            pl.col("coverage").mean().alias("mean_coverage"),
            pl.col("median_width").median().alias("median_of_median_widths"),
            pl.col("median_width").max().alias("max_median_width"),
            pl.len().alias("scenarios"),
        )
        .sort("attempts")
    )
    print(f"Coverage below 0.90 - 3 sd ({0.9 - 3 * np.sqrt(0.09 / n_tasks):.3f}):")
    print(table.filter(pl.col("coverage") < 0.9 - 3 * np.sqrt(0.09 / n_tasks)))


def ladder_table(n_tasks: int, quick: bool) -> None:
    rows = []
    for i, (a, m) in enumerate(itertools.product((1, 3, 5) if quick else (1, 2, 3, 4, 5), (1, 2, 3))):
        scenario = Scenario(n_tasks=n_tasks, n_models=m, attempts=a, luck=0.05, pass_law="uniform")
        rows.append(interval_row(scenario, seed=2000 + i, rules=("any", "majority", "isotonic")))
    table = pl.DataFrame(rows).select("attempts", "n_models", "coverage", "median_width", pl.col("^ladder_.*$"))
    print("\nThe ladder interval (depth_low, depth_high] against the true depth (issue 38's setting: pass 0.5-0.95,")
    print("5% luck; coverage over the tasks it exists for), beside the interval for the true depth (coverage):")
    print(table)
    ladder = table.select(pl.col("^ladder_(any|majority|isotonic)$")).unpivot()["value"]
    print(f"ladder interval's coverage over the grid: {ladder.min():.2f}-{ladder.max():.2f}")


def planner_table(quick: bool) -> None:
    seeds = range(3000, 3004 if quick else 3012)
    rows = []
    for rule in ("isotonic", "majority"):
        for law in ("beta", "uniform"):
            got = planner_rows(Scenario(n_tasks=200, n_models=2, luck=0.05, pass_law=law), seeds, pass_rule=rule)
            rows.append({"pass_law": law, **got})
    print(f"\nattempts='auto' (at most 3) against fixed 3, adaptive climb, {len(seeds)} draws of 200 tasks x 2 models")
    print("of this generator (luck 5%):")
    print(pl.DataFrame(rows))


def fit_table(quick: bool) -> None:
    truth = {"slopes": (2.5, 4.0), "luck": 0.04, "beyond": 0.12, "median": 5.0, "sigma": 1.1}
    rows = []
    for link, horizons in (("logistic", "normal"), ("probit", "normal"), ("logistic", "t3")):
        for r in range(2 if quick else 5):
            rng = np.random.default_rng(4000 + r)
            trials = logistic_horizon_runs(400, **truth, spread=0.3, attempts=2, rng=rng, link=link, horizons=horizons)
            fit = fit_noisy_model(trials)
            # the noise-alone drop share: this generator's runs with every model at the task's horizon, against
            # the fitted model's noise-alone draws
            alone = logistic_horizon_runs(400, **truth, spread=0.0, attempts=2, rng=rng, link=link, horizons=horizons)
            observed, _ = drop_share(alone)
            fitted_alone = fit_noisy_model(alone)
            predicted = noise_drop_share(NoisyFit(**{**fitted_alone.__dict__}), replications=10, seed=r)
            rows.append({
                "link": link, "horizons": horizons, "draw": r,
                "slope_0": fit.slopes[0], "slope_1": fit.slopes[1], "luck": fit.luck, "beyond": fit.beyond,
                "median": fit.depth_median, "sigma": fit.depth_sigma, "spread": fit.model_spread,
                "drop_share_alone": observed, "noise_drop_share": float(predicted.mean()),
            })  # fmt: skip
    table = pl.DataFrame(rows)
    print(f"\nThe noisy model's fit on its model written again (truth: {truth}, spread 0.3; 400 tasks, 2 attempts):")
    print(table)
    print(
        table.group_by("link", "horizons", maintain_order=True).agg(
            pl.col("slope_0", "slope_1", "luck", "beyond", "median", "sigma", "spread").mean(),
            (pl.col("noise_drop_share") - pl.col("drop_share_alone")).abs().mean().alias("drop_share_error"),
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="fewer attempts and draws")
    parser.add_argument("--part", choices=("interval", "ladder", "planner", "fit"), action="append")
    args = parser.parse_args()
    pl.Config.set_tbl_rows(200)
    pl.Config.set_tbl_cols(20)
    pl.Config.set_tbl_width_chars(200)
    parts = args.part or ["interval", "ladder", "planner", "fit"]
    if "interval" in parts:
        interval_tables(args.tasks, args.quick)
    if "ladder" in parts:
        ladder_table(args.tasks, args.quick)
    if "planner" in parts:
        planner_table(args.quick)
    if "fit" in parts:
        fit_table(args.quick)


if __name__ == "__main__":
    main()
