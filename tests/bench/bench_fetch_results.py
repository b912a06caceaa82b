"""Benchmark: ``fetch("tb2-leaderboard", results_only=True)`` of 10,000 trials from a loopback hub, then loading them.

The hub is the loopback imitation of the Hugging Face endpoints of ``tests/datasets/test_fetch.py``;
its repository is a leaderboard-shaped tree of ``--trials`` copies of the real TMax trials
(:mod:`results_tree`) with a trajectory beside each, which ``results_only`` must leave behind. Prints
the bytes and files taken, the time of the fetch (checksums included) and of the first load, and
what that means over a network: the fetch is bound by round trips (two files a trial, eight at a
time), so its time there is about ``files / 8 x round-trip``. Usage:
``python tests/bench/bench_fetch_results.py [--trials 10000]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "datasets"))
from results_tree import write_results_tree  # noqa: E402 - the generator beside this file
from test_fetch import _Hub  # noqa: E402 - the loopback hub of the fetch tests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="depthlab-bench-fetch-"))
    os.environ["DEPTHLAB_CACHE_DIR"] = str(work / "cache")
    try:
        tree = work / "repo"
        write_results_tree(tree, args.trials)
        files = {str(path.relative_to(tree)): path.read_bytes() for path in tree.rglob("*") if path.is_file()}
        for rel in [rel for rel in files if rel.endswith("/result.json") and rel.count("/") > 5]:
            files[rel.rsplit("/", 1)[0] + "/agent/trajectory.json"] = b"[]" * 2000  # left behind by results_only
        from depthlab.datasets.fetch import SOURCES, fetch
        from depthlab.io import read_trials

        with _Hub(SOURCES["tb2-leaderboard"].location, files, lfs=set()) as hub:
            start = time.perf_counter()
            dest = fetch("tb2-leaderboard", work / "lb", url=hub.url, results_only=True, progress=False)
            seconds = time.perf_counter() - start
        taken = [path for path in dest.rglob("*") if path.is_file() and path.name != ".depthlab-fetch.json"]
        size = sum(path.stat().st_size for path in taken)
        start = time.perf_counter()
        load = read_trials(dest)
        load_seconds = time.perf_counter() - start
        assert load.trials.height == args.trials, load.summary()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    per_10k = 10_000 / args.trials
    offered = sum(map(len, files.values())) / 1e6
    print(f"{args.trials} trials: {len(taken)} files, {size / 1e6:.1f} MB taken of {offered:.0f} MB")
    print(
        f"fetch over loopback: {seconds:.1f} s ({seconds * per_10k:.1f} s, {size * per_10k / 1e6:.0f} MB a 10k trials)"
    )
    print(f"first load of the fetched tree: {load_seconds:.1f} s")
    for rtt in (0.05, 0.2):
        minutes = len(taken) * per_10k / 8 * rtt / 60
        print(f"over a network with a {rtt * 1000:.0f} ms round trip: about {minutes:.0f} min per 10k trials")


if __name__ == "__main__":
    main()
