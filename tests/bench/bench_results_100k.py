"""Benchmark: 100,000 leaderboard trials with result files only (``fetch --results-only``), against the naive loader.

The tree is written by :mod:`results_tree` (copies of the real TMax job's trials, result.json and
config.json only). Then, with the OS page cache warm for every contender alike:

* reading the bytes: open and read every trial's ``result.json`` (what the loader has to read),
  and reading and parsing them with msgspec (the fastest JSON parser here);
* the naive loader: ``json.load`` of every result.json + a pandas frame;
* a cold ``read_trials`` (no depthlab cache; it fills it) and a cached reload;
* the stat floor of the cached reload: one ``stat`` of every file and folder whose change the
  cache must notice (each trial's ``result.json``; its ``agent/``, its ``lock.json`` and, for a
  trial without a verifier result, its reward files, probed absent by ``access``, the cheapest call
  that answers; every folder walked), in a bare loop;
* peak memory: the resident set of this process before and after the cold load (``getrusage``)
  and of the largest worker process, beside the size of the trials table itself; and a cached
  reload in a new process (as a new notebook kernel makes it), its time and its peak beyond the table;

each contender runs ``--rounds`` times, taking turns, and its best wall and CPU time are kept (the
memory is that of the first cold load); and the ratios, each against its target (issue 31): cold /
read and parse <= 1.5 in wall time and <= 2 in CPU time, naive / cold >= 3, cached / stat floor
<= 2, and the memory left over by the load once the table is subtracted <= 100 MiB. Usage:
``python tests/bench/bench_results_100k.py [--trials 100000] [--root DIR] [--keep] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_tree import write_results_tree


def _trial_results(root: Path) -> list[str]:
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        if "result.json" in filenames and not any(
            os.path.exists(os.path.join(dirpath, name, "result.json")) for name in dirnames[:1]
        ):
            files.append(os.path.join(dirpath, "result.json"))
            dirnames.clear()
    return files


def _read_bytes(files: list[str]) -> int:
    total = 0
    for path in files:
        with open(path, "rb") as handle:
            total += len(handle.read())
    return total


def _read_parse(files: list[str]) -> None:
    import msgspec

    decode = msgspec.json.decode
    for path in files:
        with open(path, "rb") as handle:
            decode(handle.read())


def _stat_floor_paths(tree: Path, files: list[str]) -> tuple[list[bytes], list[bytes]]:
    """The files and folders a cached reload must stat, and the paths it must find still absent."""
    import msgspec

    class _Verifier(msgspec.Struct):
        verifier_result: dict | None = None

    trial_dirs = {os.path.dirname(path) for path in files}
    present = [os.fsencode(path) for path in files]
    probes = []
    for path in files:
        folder = os.path.dirname(path)
        probes += [os.fsencode(os.path.join(folder, name)) for name in ("agent", "lock.json")]
        with open(path, "rb") as handle:
            if msgspec.json.decode(handle.read(), type=_Verifier).verifier_result is None:
                probes += [
                    os.fsencode(os.path.join(folder, "verifier", name)) for name in ("reward.txt", "reward.json")
                ]
    for dirpath, dirnames, _ in os.walk(tree):
        if dirpath not in trial_dirs:
            present.append(os.fsencode(dirpath))
        dirnames[:] = [name for name in dirnames if os.path.join(dirpath, name) not in trial_dirs]
    return present, probes


def _stat_floor(present: list[bytes], probes: list[bytes]) -> None:
    # a probe by the cheapest call that answers it (access, which does not raise for an absent path)
    stat, access, exists = os.stat, os.access, os.F_OK
    for path in present:
        stat(path)
    for path in probes:
        access(path, exists, follow_symlinks=False)


def _naive(files: list[str]):
    import pandas as pd

    rows = []
    for path in files:
        with open(path) as handle:
            result = json.load(handle)
        rewards = (result.get("verifier_result") or {}).get("rewards") or {}
        rows.append(
            {
                "task": result["task_name"],
                "trial": result["trial_name"],
                "model": result["config"]["agent"]["model_name"],
                "reward": rewards.get("reward"),
                "exception": (result.get("exception_info") or {}).get("exception_type"),
                "n_input_tokens": (result.get("agent_result") or {}).get("n_input_tokens"),
                "started_at": pd.Timestamp(result["started_at"]),
            }
        )
    return pd.DataFrame(rows)


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the loader's workers)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


CPU: dict[str, float] = {}


def _timed(function, name: str = ""):
    """Wall seconds and the value; the CPU seconds are kept in ``CPU[name]`` (a shared machine's wall time is noisy)."""
    start, cpu = time.perf_counter(), _cpu()
    value = function()
    CPU[name] = min(CPU.get(name, float("inf")), _cpu() - cpu)
    return time.perf_counter() - start, value


def _rss_mib() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def _current_mib() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# A cached reload as a new notebook kernel makes it: its own process, the cache written by this one.
# (its peak is the kernel's high-water mark of its own memory: getrusage would report the larger
# one of this process, from which it was forked before it ran Python anew)
_FRESH_RELOAD = """
import json, sys, time
sys.path[:0] = json.loads(sys.argv[2])
from depthlab.io import read_trials
def status(field):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) / 1024 for line in handle if line.startswith(field + ":"))
before = status("VmRSS")
start = time.perf_counter()
load = read_trials(sys.argv[1])
seconds = time.perf_counter() - start
print(json.dumps([seconds, status("VmHWM") - before - load.trials.estimated_size() / 2**20]))
"""


def _fresh_reload(tree: Path) -> tuple[float, float]:
    """Wall seconds and peak MiB beyond the table of a cached reload in a new process."""
    import subprocess

    command = [sys.executable, "-c", _FRESH_RELOAD, str(tree), json.dumps(sys.path)]
    seconds, beyond = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    return seconds, beyond


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--root", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="times each contender runs (the best is kept)")
    args = parser.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="depthlab-bench-100k-"))
    cache_dir = Path(tempfile.mkdtemp(prefix="depthlab-bench-100k-cache-"))
    os.environ["DEPTHLAB_CACHE_DIR"] = str(cache_dir)
    tree = root / "leaderboard"
    try:
        if not tree.exists():
            seconds, _ = _timed(lambda: write_results_tree(tree, args.trials))
            print(f"wrote {args.trials} trials under {tree} in {seconds:.0f} s")
        from depthlab.io import read_trials  # after the tree: the loader's memory is measured from here

        files = _trial_results(tree)
        _read_bytes(files)  # warm the page cache for everyone
        read_seconds, n_bytes = _timed(lambda: _read_bytes(files), "read")
        read_seconds = min(read_seconds, _timed(lambda: _read_bytes(files), "read")[0])
        parse_seconds = min(_timed(lambda: _read_parse(files), "parse")[0] for _ in range(2))
        before = _current_mib()
        cold, load = _timed(lambda: read_trials(tree), "cold")
        after_own, children = _rss_mib()
        assert load.trials.height == args.trials, load.summary()
        table_mib = load.trials.estimated_size() / 2**20
        cached, again = _timed(lambda: read_trials(tree), "cached")
        assert again.trials.equals(load.trials)
        present, probes = _stat_floor_paths(tree, files)
        floor = _timed(lambda: _stat_floor(present, probes), "floor")[0]
        naive, frame = _timed(lambda: _naive(files), "naive")
        assert len(frame) == args.trials
        del frame, again
        # each contender again, taking turns, the best of each kept: a burst of load on this shared
        # machine then weighs on all alike (a cold load fills an emptied cache each time)
        for _ in range(args.rounds - 1):
            parse_seconds = min(parse_seconds, _timed(lambda: _read_parse(files), "parse")[0])
            shutil.rmtree(cache_dir)
            cache_dir.mkdir()
            cold = min(cold, _timed(lambda: read_trials(tree), "cold")[0])
            cached = min(cached, _timed(lambda: read_trials(tree), "cached")[0])
            floor = min(floor, _timed(lambda: _stat_floor(present, probes), "floor")[0])
            naive = min(naive, _timed(lambda: _naive(files), "naive")[0])
        fresh_seconds, fresh_beyond = _fresh_reload(tree)  # (the last round's cold load filled the cache)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
        if not args.keep and args.root is None:
            shutil.rmtree(root, ignore_errors=True)

    load_average = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"{args.trials} trials, {n_bytes / 1e6:.0f} MB of result.json; {os.cpu_count()} cores, load {load_average}")
    print(f"read the bytes:   {read_seconds:7.2f} s  (CPU {CPU['read']:.2f} s)")
    print(f"read and parse:   {parse_seconds:7.2f} s  (CPU {CPU['parse']:.2f} s; msgspec, one process)")
    print(f"naive loader:     {naive:7.2f} s  (CPU {CPU['naive']:.2f} s; json.load + pandas)")
    print(
        f"cold read_trials: {cold:7.2f} s  (CPU {CPU['cold']:.2f} s with its workers; {n_bytes / 1e6 / cold:.0f} MB/s)"
    )
    print(f"cached reload:    {cached:7.3f} s  (CPU {CPU['cached']:.3f} s)")
    print(f"stat floor:       {floor:7.3f} s  (CPU {CPU['floor']:.3f} s; {len(present)} stats, {len(probes)} probes)")
    print(
        f"memory: this process {before:.0f} MiB before the load, peak {after_own:.0f} MiB; largest worker "
        f"{children:.0f} MiB; the trials table {table_mib:.0f} MiB"
    )
    print(
        f"cached reload in a new process: {fresh_seconds:.2f} s, peak {fresh_beyond:.0f} MiB beyond the table "
        "(what a new notebook kernel spends)"
    )
    beyond = after_own - before - table_mib
    checks = [
        ("cold / read and parse, wall", cold / parse_seconds, "<=", 1.5),
        ("cold / read and parse, CPU", CPU["cold"] / CPU["parse"], "<=", 2.0),
        ("naive / cold, wall", naive / cold, ">=", 3.0),
        ("cached / stat floor, wall", cached / floor, "<=", 2.0),
        ("peak beyond the table, MiB", beyond, "<=", 100.0),
    ]
    print(
        f"ratio cold / read the bytes:           {cold / read_seconds:7.2f}x wall, {CPU['cold'] / CPU['read']:.2f}x CPU"
    )
    print(f"ratio naive / cold, CPU:               {CPU['naive'] / CPU['cold']:7.2f}x")
    print(
        f"ratio naive / cached:                  {naive / cached:7.1f}x wall, {CPU['naive'] / CPU['cached']:.1f}x CPU"
    )
    print(f"ratio cached / stat floor, CPU:        {CPU['cached'] / CPU['floor']:7.2f}x")
    for name, value, sense, target in checks:
        met = value <= target if sense == "<=" else value >= target
        print(f"{name + ':':38s} {value:7.2f}   (target {sense} {target:g}: {'met' if met else 'NOT met'})")


if __name__ == "__main__":
    main()
