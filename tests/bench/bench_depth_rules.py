"""Benchmark: how sure each D rule is on a noisy model of known D, and attempts spent where they decide.

Prints, in one run (all seeded):

* the rules' table (:func:`depthlab.simulate.noisy.rule_table`): each rule's bias and spread in
  rungs, share exact and within one rung of the true D, by attempts per cell (1-5) and number of
  models (1-4), and per rule the fewest attempts giving D within one rung in 90% of tasks;
* ``--attempts auto`` against fixed 3 attempts under the isotonic rule, the adaptive climb
  replayed on the noisy model over ``--replications`` draws: runs (as a ratio of fixed 3's) and
  accuracy (share exact, share within one rung). Target: auto's ratio <= 0.70 at fixed 3's accuracy;
* the coverage of the censored shares' 95% intervals over 200 replications (target >= 0.90).

Usage: ``python tests/bench/bench_depth_rules.py [--replications R] [--coverage-replications C]``.
"""

from __future__ import annotations

import argparse

import numpy as np
import polars as pl

from depthlab.simulate.noisy import NoisyModel, censored_coverage, draw_tasks, replay_attempts, rule_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=12)
    parser.add_argument("--coverage-replications", type=int, default=200)
    args = parser.parse_args()
    pl.Config.set_tbl_rows(100)
    pl.Config.set_tbl_cols(10)

    table = rule_table(NoisyModel(), replications=5, seed=0)
    print("The rules on the noisy model (bias and spread in rungs; 1,000 tasks per row):")
    print(table)
    enough = (
        table.filter(pl.col("within_one") >= 0.9)
        .group_by("rule", "n_models")
        .agg(pl.col("attempts").min().alias("attempts_for_90pct_within_one"))
        .sort("rule", "n_models")
    )
    print("Fewest attempts per cell for D within one rung in 90% of tasks (absent: none of 1-5 reaches it):")
    print(enough)

    totals = {key: np.zeros(3) for key in ("fixed 3", "auto")}
    for r in range(args.replications):
        tasks = draw_tasks(NoisyModel(), np.random.default_rng(1000 + r))
        for key, attempts in (("fixed 3", 3), ("auto", "auto")):
            got = replay_attempts(tasks, attempts=attempts, pass_rule="isotonic", seed=1000 + r)
            totals[key] += [got["runs"], got["exact"], got["within_one"]]
    fixed, auto = totals["fixed 3"], totals["auto"]
    n = args.replications
    print(f"\nisotonic rule, adaptive climb, {n} draws of 200 tasks x 2 models:")
    for key, value in totals.items():
        print(f"  {key:8s} runs {value[0]:9.0f}  exact {value[1] / n:.3f}  within one rung {value[2] / n:.3f}")
    print(f"  auto / fixed 3 runs: {auto[0] / fixed[0]:.3f} (target <= 0.70)")

    coverage = censored_coverage(replications=args.coverage_replications, n_boot=500, seed=0)
    print(f"\ncensored shares, 95% percentile bootstrap, {args.coverage_replications} replications:")
    print(coverage)


if __name__ == "__main__":
    main()
