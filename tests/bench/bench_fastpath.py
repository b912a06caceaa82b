"""Benchmark: the fast path of a results-only trial (``io._fastresults.trial_row``) against a baseline revision.

Issue 43 derives the fast path's struct from the model's declaration and builds its row by column name;
this measures what that costs. Both versions run in this one process: the baseline is depthlab as of a
git revision (``--base``), extracted and imported as ``depthlab_base`` (as ``bench_writer.py`` does).
The tree is :mod:`results_tree`'s (copies of the real TMax job's trials, result.json and config.json
only; it needs the shared samples). Each version reads every trial with ``trial_row``, in alternation,
each first in turn; the CPU time of this process is kept per round, and the ratio new / baseline is
printed for the best of each and as the median of the rounds' pairs (below 1: faster).

Usage: ``python tests/bench/bench_fastpath.py [--trials 20000] [--rounds 7] [--base REV]``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_writer import ROOT, _baseline
from results_tree import write_results_tree


def _reader(package: str, trial_dirs: list[str]) -> Any:
    fast = importlib.import_module(f"{package}.io._fastresults")
    harbor = importlib.import_module(f"{package}.io.harbor")
    options = harbor.Options(None, "leaderboard", "stated_cap")

    def run() -> int:
        found = fast.stamps()
        jobs: dict[str, str | None] = {}
        taken = 0
        for trial in trial_dirs:
            taken += fast.trial_row(trial, options, "bench", found, jobs) is not None
        return taken

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--base", default="4f669f9")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="bench-fastpath-") as scratch:
        work = Path(scratch)
        base = _baseline(args.base, work / "base")
        write_results_tree(work / "tree", args.trials)
        trial_dirs = sorted(
            folder for folder, _, files in os.walk(work / "tree") if "result.json" in files and "__" in folder
        )
        readers = {"new": _reader("depthlab", trial_dirs), "base": _reader(base, trial_dirs)}
        taken = {name: run() for name, run in readers.items()}  # warm: page cache, imports
        times: dict[str, list[float]] = {"new": [], "base": []}
        for round_ in range(args.rounds):
            for name, run in sorted(readers.items(), reverse=round_ % 2 == 1):
                start = time.process_time()
                run()
                times[name].append(time.process_time() - start)
    pairs = sorted(new / old for new, old in zip(times["new"], times["base"], strict=True))
    best = min(times["new"]) / min(times["base"])
    print(f"{len(trial_dirs)} trials, taken by the fast path: new {taken['new']}, baseline {taken['base']}")
    per_trial = {name: min(values) / len(trial_dirs) * 1e6 for name, values in times.items()}
    median = pairs[len(pairs) // 2]
    print(f"CPU per trial: new {per_trial['new']:.1f} us, baseline {per_trial['base']:.1f} us; ratio of the best "
          f"{best:.3f}, median of {len(pairs)} pairs {median:.3f} ({pairs[0]:.3f} to {pairs[-1]:.3f})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
