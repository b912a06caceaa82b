"""Benchmark: the size of the audit's permutation test where pass rate and depth both follow work (issue 44).

For each null of ``work_dependence.py`` (written apart from depthlab; its docstring says what
"partial correlation 0 on ranks" means for each) and each n, draws data sets and counts how often
p <= 0.05 for the test as it was before issue 44 (Freedman-Lane permuting the plain partial
correlation, ``work_dependence.correlation_pvalue``) and for ``depthlab.stats.permutation_pvalue``
(the studentised statistic), on the same data sets. Data sets where the partial correlation is
undefined (depth's ranks collinear with work's: frequent in the mixture null at small n) are
redrawn: the rates are conditional on a p-value being reported. Each rate is printed with Wilson's
95% interval; a valid test's interval reaches down to 5%.

Run: ``.venv/bin/python tests/bench/bench_permutation_size.py [--samples 2000] [--perm 999]``
(about 3 minutes at the defaults on one core).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from work_dependence import COLUMNS, GAUSSIAN_PARTIAL_SPEARMAN, NULLS, correlation_pvalue, wilson

from depthlab.stats import permutation_pvalue

SIZES = (6, 8, 12, 20, 30, 50)


def sweep(name: str, n: int, samples: int, n_perm: int) -> tuple[int, int]:
    """(rejections before, rejections now) at 0.05 over ``samples`` defined data sets of the null ``name``."""
    rng = np.random.default_rng(1000 * n + len(name))
    before = now = drawn = 0
    while drawn < samples:
        values = NULLS[name](rng, n)
        old = correlation_pvalue(values, n_perm, rng)
        if math.isnan(old):
            continue
        drawn += 1
        frame = pl.DataFrame(dict(zip(COLUMNS, values.T, strict=True)))
        new = permutation_pvalue(frame, "pass_rate", "depth", "work", n_perm=n_perm, seed=drawn).p
        before += old <= 0.05
        now += new <= 0.05
    return before, now


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000, help="data sets per null and n (default 2000)")
    parser.add_argument("--perm", type=int, default=999, help="permutations per test (default 999)")
    parser.add_argument("--nulls", default=",".join(NULLS), help="comma-separated nulls (default all)")
    args = parser.parse_args()
    print(f"rejections at 0.05 in {args.samples} data sets per cell, {args.perm} permutations (simulated nulls)")
    print(f"gaussian null's population partial Spearman: {GAUSSIAN_PARTIAL_SPEARMAN:.4f}; mixture's: 0 exactly")
    print(f"{'null':<9}{'n':>4}  {'before (plain r)':<26}{'now (studentised)':<26}")
    for name in args.nulls.split(","):
        for n in SIZES:
            before, now = sweep(name, n, args.samples, args.perm)
            cells = []
            for count in (before, now):
                low, high = wilson(count, args.samples)
                cells.append(f"{count / args.samples:6.3f} [{low:.3f}, {high:.3f}]")
            print(f"{name:<9}{n:>4}  {cells[0]:<26}{cells[1]:<26}", flush=True)


if __name__ == "__main__":
    main()
