"""Fault-injection benchmark of the loaders: every fault in a fixed catalogue, on copies of real trees.

For each real tree of ``../shared/samples`` (the TMax Harbor job, three TB1 runs) and each of its
run-log files (result.json, results.json, trajectory.json, run_metadata.json), one load per fault:

* the file cut at 0, 1, 1/4, 1/2 and all but one of its bytes; 24 bytes flipped; bytes inserted;
* every JSON value down to depth 3 replaced by each hostile value (integers past Int64, -5,
  2**31, dates past year 9999 in UTC, 1e999, ``"nan"``, ``"a/"``, ``""``, null, true, [], {},
  nesting 3,000 deep), in turn (at most 400 such faults a file: a fixed random sample of the pairs);
* the file replaced by a FIFO, a directory, a dangling link, a 500 MB sparse file;

then the tree-level faults: every trial given twice (the job and each trial as overlapping
paths), the tree copied under a second folder, and a 450-trial job with deep files loaded
through the process pool. Each load is judged by :func:`faults.problems` (tests/io/faults.py).

Prints: loads attempted, crashes (must be 0), silent drops (0), miscounts (0), other problems,
and the peak memory of a process loading a trial whose trajectory is a 500 MB sparse file.
Exit status 1 when anything is not 0. Usage: ``python tests/bench/bench_faults.py [--limit N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "io"))
SHARED = Path(os.environ.get("DEPTHLAB_SHARED", HERE.parents[2] / "shared"))
SAMPLES = SHARED / "samples"

from faults import HOSTILE, NOT_A_FILE, TREES, fuzzed_files, json_paths, mutate, problems, units  # noqa: E402

MAX_DEPTH = 3
MAX_JSON_FAULTS = 400  # per file (a 166 KB TB1 run file has 1,400 values down to depth 3)


def catalogue(path: Path) -> list[tuple]:
    """Every fault of the catalogue for one file."""
    data = path.read_bytes()
    size = len(data)
    faults: list[tuple] = [("truncate", cut) for cut in sorted({0, 1, size // 4, size // 2, max(size - 1, 0)})]
    faults += [("flip", (size * k) // 24, 0x20 if k % 2 else 0x01) for k in range(24)]
    faults += [("insert", (size * k) // 4, b'{"\x00') for k in range(4)]
    try:
        document = json.loads(data)
    except ValueError:
        document = None
    if document is not None:
        paths = [where for where in json_paths(document) if len(where) <= MAX_DEPTH]
        pairs = [("json_at", where, value) for where in paths for value in HOSTILE]
        if len(pairs) > MAX_JSON_FAULTS:  # long files: a fixed sample of the pairs
            pairs = random.Random(0).sample(pairs, MAX_JSON_FAULTS)
        faults += pairs
    faults += [("replace", kind) for kind in NOT_A_FILE]
    return faults


def run_file_faults(limit: int | None) -> tuple[int, Counter, list[str]]:
    attempted, tally, examples = 0, Counter(), []
    for tree in TREES:
        source = SAMPLES / tree
        if not source.is_dir():
            continue
        from depthlab.io import read_trials

        clean = units(read_trials(source, cache=False), source)
        for relative in fuzzed_files(source):
            for fault in catalogue(source / relative):
                if limit is not None and attempted >= limit:
                    return attempted, tally, examples
                with tempfile.TemporaryDirectory() as folder:
                    root = Path(folder) / "tree"
                    shutil.copytree(source, root, symlinks=True)
                    mutate(root / relative, fault)
                    found = problems(root, clean)
                attempted += 1
                for problem in found:
                    tally[problem.split(":", 1)[0]] += 1
                    if len(examples) < 10:
                        examples.append(f"{relative} {fault!r:.80}: {problem:.200}")
    return attempted, tally, examples


def run_tree_faults() -> tuple[int, Counter, list[str]]:
    """Overlapping paths, a copied tree and the process pool, on the real TMax job."""
    from depthlab.io import read_trials

    source = SAMPLES / TREES[0]
    attempted, tally, examples = 0, Counter(), []

    def judge(name: str, ok: bool) -> None:
        nonlocal attempted
        attempted += 1
        if not ok:
            tally["silent drop" if "drop" in name else "miscount"] += 1
            examples.append(name)

    clean = read_trials(source, cache=False)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "job"
        shutil.copytree(source, root, symlinks=True)
        for trial in sorted(path for path in root.iterdir() if path.is_dir()):
            for paths in ([root, trial], [trial, root], [trial / "result.json", root]):
                load = read_trials(paths, cache=False)
                ok = load.trials.height == clean.trials.height and len(load.duplicates) == 1
                judge(f"overlapping paths {paths}: miscount", ok)
        shutil.copytree(root, Path(folder) / "copy" / "job", symlinks=True)
        load = read_trials([root, Path(folder) / "copy"], cache=False)
        judge("tree copied under a second folder: miscount", load.trials.height == clean.trials.height)

        big = Path(folder) / "big"
        template = next(path for path in root.iterdir() if path.is_dir())
        for index in range(450):
            trial = big / f"{template.name}-{index:03d}"
            shutil.copytree(template, trial, symlinks=True)
            result = json.loads((trial / "result.json").read_text())
            result["id"], result["trial_name"] = f"copy-{index}", trial.name
            deep = index % 50 == 7
            text = json.dumps(result).replace("}", ', "deep": "__DEEP__"}', 1) if deep else json.dumps(result)
            (trial / "result.json").write_text(text.replace('"__DEEP__"', "[" * 5000 + "]" * 5000))
        try:
            load = read_trials(big, cache=False)
        except Exception as exc:  # a crash through the pool
            tally["crash"] += 1
            examples.append(f"process pool: {type(exc).__name__}: {exc}")
            attempted += 1
        else:
            judge(
                "process pool: miscount", load.n_seen == 450 and len(load.rejected) == 9 and load.trials.height == 441
            )
    return attempted, tally, examples


def huge_trajectory_peak_mib() -> tuple[float, float]:
    """Peak RSS (MiB) of a fresh process loading a trial with a 500 MB sparse trajectory, and of an empty load."""
    source = SAMPLES / TREES[0]
    peaks = []
    with tempfile.TemporaryDirectory() as folder:
        for huge in (True, False):
            root = Path(folder) / ("huge" if huge else "plain")
            shutil.copytree(source, root, symlinks=True)
            if huge:
                trajectory = next(root.rglob("trajectory.json"))
                mutate(trajectory, ("replace", "sparse 500 MB"))
            code = (
                "import resource, sys; from depthlab.io import read_trials; "
                "load = read_trials(sys.argv[1], cache=False); "
                "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
            )
            output = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True)
            peaks.append(int(output.stdout.strip()) / 1024)
    return peaks[0], peaks[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="stop after this many file faults")
    args = parser.parse_args()
    if not SAMPLES.is_dir():
        print(f"skipped: real samples not found at {SAMPLES} (set DEPTHLAB_SHARED)")
        return 0
    start = time.perf_counter()
    attempted, tally, examples = run_file_faults(args.limit)
    tree_attempted, tree_tally, tree_examples = run_tree_faults()
    attempted += tree_attempted
    tally += tree_tally
    examples += tree_examples
    huge, plain = huge_trajectory_peak_mib()
    print(f"loads attempted: {attempted}  ({time.perf_counter() - start:.0f} s)")
    print(f"crashes:         {tally['crash'] + tally['strict crash']}   (must be 0)")
    print(f"silent drops:    {tally['silent drop']}   (must be 0)")
    print(f"miscounts:       {tally['miscount']}   (must be 0)")
    other = sum(tally.values()) - tally["crash"] - tally["strict crash"] - tally["silent drop"] - tally["miscount"]
    print(f"other problems:  {other}   (must be 0: rejections without path or reason, strict mismatches)")
    print(f"peak RSS loading a 500 MB sparse trajectory: {huge:.0f} MiB (the same tree without it: {plain:.0f} MiB)")
    for example in examples:
        print(f"  {example}")
    return 1 if sum(tally.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
