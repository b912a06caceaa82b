"""Benchmark: the vectorized BCa bootstrap of a partial Spearman against a per-resample pingouin loop.

Workload (issue 4): n = 734 tasks, one covariate, 10,000 BCa resamples. The baseline is what one
would write without depthlab: a Python loop that resamples the rows and calls
``pingouin.partial_corr(method="spearman")`` on every resample. The loop is timed over a few
hundred resamples and extrapolated linearly to 10,000 (each iteration is the same work), which
the output says. Both run in this process, one after the other, so the ratio holds on a busy
machine even when the absolute times do not.

Run: ``.venv/bin/python tests/bench/bench_stats.py [--loop 300] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd
import pingouin as pg
import polars as pl

from depthlab import stats

N_TASKS = 734
N_BOOT = 10_000


def _data(seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    work = np.maximum(rng.lognormal(3, 1, N_TASKS).round(), 1)  # ties, like lines of a solution
    depth = rng.choice([1, 2, 3, 5, 10, 20, 40, 80], N_TASKS)
    pass_rate = np.clip(0.9 - 0.1 * np.log(depth) - 0.02 * np.log(work) + 0.2 * rng.normal(size=N_TASKS), 0, 1)
    return pl.DataFrame({"pass_rate": (pass_rate * 8).round() / 8, "depth": depth, "work": work})


def _pingouin_loop(frame: pd.DataFrame, iterations: int, seed: int) -> float:
    """Seconds for ``iterations`` resamples, each ranked and correlated by pingouin."""
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(iterations):
            sample = frame.iloc[rng.integers(0, len(frame), len(frame))]
            pg.partial_corr(sample, x="pass_rate", y="depth", covar="work", method="spearman")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loop", type=int, default=300, help="pingouin loop iterations to time (default 300)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of depthlab (default 3)")
    args = parser.parse_args()

    df = _data()
    times, cpu_times = [], []
    for i in range(args.repeat):
        start, cpu_start = time.perf_counter(), time.process_time()
        result = stats.partial_spearman(df, "pass_rate", "depth", "work", n_boot=N_BOOT, method="bca", seed=i)
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    loop = _pingouin_loop(df.to_pandas(), args.loop, seed=0)
    per_resample = loop / args.loop
    extrapolated = per_resample * N_BOOT

    best, first = min(times), times[0]
    print(f"machine load (1, 5, 15 min): {os.getloadavg()} on {os.cpu_count()} CPUs")
    print(f"partial Spearman, n = {N_TASKS}, 1 covariate, {N_BOOT:,} BCa resamples (+ {N_TASKS} jackknife)")
    print(f"  {result}")
    print(
        f"  depthlab.stats.partial_spearman: first run {first:.3f} s, best of {args.repeat} {best:.3f} s "
        f"(CPU time {cpu_times[0]:.3f} s first, {min(cpu_times):.3f} s best)"
    )
    print(
        f"  pingouin.partial_corr loop: {args.loop} resamples in {loop:.2f} s = {per_resample * 1e3:.2f} ms each, "
        f"extrapolated to {N_BOOT:,}: {extrapolated:.1f} s"
    )
    print(f"  ratio (loop / depthlab): {extrapolated / first:.0f}x on the first run, {extrapolated / best:.0f}x best")
    print(
        f"  targets: >= 100x faster: {'met' if extrapolated / best >= 100 else 'MISSED'}; "
        f"< 1 s: {'met' if best < 1 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
