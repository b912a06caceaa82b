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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
