"""Benchmark: the trajectory depth proxy on the real TB2 job of 445 trials, against a plain read of the same bytes.

Reads ``../shared/data/tb2-jobs/tmax-27b`` (a real Harbor job, one chat-list trajectory per trial;
set ``--job`` to use another) and prints, in one run:

* the plain read: every ``agent/trajectory.json`` read into memory (bytes only, no parsing);
* the parse alone: the same bytes decoded with msgspec (the package's JSON parser);
* ``depth_proxy(per="trial", cache=False)``, cold (best of three; both cores through the worker
  pool), and one worker for comparison;
* ``depth_proxy`` again with its cache warm;

with throughput in MB/s of trajectory bytes and the ratios to the plain read. The OS page cache is
warmed first, so every contender reads from memory. Usage:
``python tests/bench/bench_proxy.py [--job DIR]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(os.environ.get("DEPTHLAB_SHARED", ROOT.parent / "shared")) / "data" / "tb2-jobs" / "tmax-27b"


def _best(function, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job", type=Path, default=JOB)
    parser.add_argument("--big-mb", type=float, default=250.0, help="size of the big trajectory (issue 22)")
    parser.add_argument(
        "--read-big", action="store_true", help="also read it past the budget (about 17x the file in memory)"
    )
    args = parser.parse_args()
    if not args.job.is_dir():
        print(f"skipped: the real job is not at {args.job} (set DEPTHLAB_SHARED or --job)")
        return 0
    os.environ["DEPTHLAB_CACHE_DIR"] = tempfile.mkdtemp(prefix="depthlab-bench-proxy-")

    import depthlab as dl
    from depthlab.io import trajectories

    trials = dl.load_trials(args.job, cache=False)
    files = [Path(source).parent / "agent" / "trajectory.json" for source in trials["source"].to_list()]
    files = [path for path in files if path.is_file()]
    n_bytes = sum(path.stat().st_size for path in files)
    megabytes = n_bytes / 1e6

    def plain_read() -> None:
        for path in files:
            path.read_bytes()

    def parse_only() -> None:
        for path in files:
            msgspec.json.decode(path.read_bytes())

    def cold() -> None:
        dl.depth_proxy(trials, per="trial", cache=False)

    def one_worker() -> None:
        saved = trajectories._PARALLEL_MIN
        trajectories._PARALLEL_MIN = sys.maxsize
        try:
            dl.depth_proxy(trials, per="trial", cache=False)
        finally:
            trajectories._PARALLEL_MIN = saved

    plain_read()  # warm the page cache for everyone
    t_read = _best(plain_read)
    t_parse = _best(parse_only)
    t_cold = _best(cold)
    t_one = _best(one_worker, repeat=1)
    dl.depth_proxy(trials, per="trial")
    t_warm = _best(lambda: dl.depth_proxy(trials, per="trial"))

    print(f"{len(files)} real trajectories, {megabytes:.1f} MB, {os.cpu_count()} cores")
    for name, seconds in (
        ("plain read of the bytes", t_read),
        ("msgspec decode of the same bytes", t_parse),
        ("depth_proxy, cold, worker pool", t_cold),
        ("depth_proxy, cold, one process", t_one),
        ("depth_proxy, cache warm", t_warm),
    ):
        print(
            f"  {name:34s} {seconds * 1000:9.1f} ms  {megabytes / seconds:8.1f} MB/s  "
            f"{seconds / t_read:7.1f}x the plain read"
        )
    print(f"  trajectories per second, cold: {len(files) / t_cold:,.0f}; pool speed-up {t_one / t_cold:.2f}x")
    _big_trajectory(dl, trials, args.big_mb, args.read_big)
    return 0


def _big_trajectory(dl, trials, megabytes: float, read_it: bool) -> None:
    """Issue 22: one real trial whose trajectory gets an output of ``megabytes`` of distinct identifiers."""
    import json
    import shutil
    import tracemalloc
    import warnings

    import polars as pl

    row = trials.filter(pl.col("status") == "pass").row(0, named=True)
    source = Path(row["source"]).parent
    folder = Path(tempfile.mkdtemp(prefix="depthlab-bench-big-")) / source.name
    shutil.copytree(source, folder)
    path = folder / "agent" / "trajectory.json"
    messages = json.loads(path.read_text())
    count = int(megabytes * 1e6 / 13)
    with path.open("w") as out:  # streamed: the benchmark itself never holds the big text
        out.write(json.dumps(messages)[:-1] + ', {"role": "tool", "content": "')
        for start in range(0, count, 100_000):
            out.write(" ".join(f"id_{i:07d}_x" for i in range(start, min(count, start + 100_000))) + " ")
        out.write('"}]')
    size = path.stat().st_size
    one = pl.DataFrame([{**row, "source": str(folder / "result.json")}], schema=trials.schema)
    print(f"one trial with a trajectory of {size / 1e6:.0f} MB of distinct identifiers:")
    runs = [("default budget", None)] + ([("budget raised past it", size + 1)] if read_it else [])
    for label, budget in runs:
        kwargs = {} if budget is None else {"max_trajectory_bytes": budget}
        tracemalloc.start()
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = dl.depth_proxy(one, per="trial", cache=False, **kwargs)
        seconds = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        reason = str(caught[0].message)[-110:] if caught else "read"
        print(
            f"  {label:22s} proxy {table['proxy_depth'][0]}, {seconds:6.2f} s, peak Python memory "
            f"{peak / 1e6:7.1f} MB ({peak / size:.3f}x the file); {reason}"
        )
    shutil.rmtree(folder.parent, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
