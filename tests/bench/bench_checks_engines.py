"""Benchmark: a replay of ``depthlab check`` on each engine, as a ratio (Harbor's seconds per replay over local's).

The same planted task (:func:`depthlab.simulate.checks.write_planted_tasks`, ``clean``: two steps)
checked with the replayed checks ``oracle`` and ``before`` (``--repeat 2``: 4 replays) on the local
engine and on Harbor, alternately, each in a fresh jobs folder, in this process; the tables must agree
(every column but the seconds, the evidence and the trial folders). Prints per engine and round the
wall seconds per replay and the seconds inside the trials (their results' start to end), then the
ratios of Harbor's medians to local's.

Needs Docker, the Debian userland image (``scripts/userland-up.sh``) and Harbor's side venv
(``scripts/harbor-venv.sh``). Usage: ``python tests/bench/bench_checks_engines.py [--rounds N] [--harbor CMD]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from depthlab import schema
from depthlab.checks import check_tasks
from depthlab.simulate.checks import write_planted_tasks

ROOT = Path(__file__).resolve().parents[2]
SAME = [name for name in schema.CHECKS if name not in ("seconds", "evidence", "trials")]


def _script_output(script: str) -> str:
    done = subprocess.run(["bash", str(ROOT / "scripts" / script)], capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--harbor", default=None, help="the harbor command (default: the side venv's)")
    args = parser.parse_args()
    image = _script_output("userland-up.sh")
    harbor = args.harbor or str(Path(_script_output("harbor-venv.sh")).parent / "harbor")
    root = Path(tempfile.mkdtemp(prefix="bench-checks-"))
    task = write_planted_tasks(root / "tasks", image)["clean"]
    wall: dict[str, list[float]] = {"local": [], "harbor": []}
    inside: dict[str, list[float]] = {"local": [], "harbor": []}
    tables = {}
    for number in range(1, args.rounds + 1):
        for engine in ("local", "harbor"):
            start = time.perf_counter()
            report = check_tasks(
                task,
                jobs_dir=root / f"jobs-{engine}-{number}",
                engine=engine,
                harbor=harbor,
                checks=["oracle", "before"],
                repeat=2,
            )
            seconds = time.perf_counter() - start
            replays = report.replays_run
            wall[engine].append(seconds / replays)
            inside[engine].append(float(report.table["seconds"].sum()) / replays)
            tables[engine] = report.table.select(SAME)
            print(
                f"round {number} {engine:6s}: {replays} replays, {seconds:6.1f} s wall, "
                f"{wall[engine][-1]:5.1f} s/replay wall, {inside[engine][-1]:5.1f} s/replay inside the trials"
            )
        if not tables["local"].equals(tables["harbor"]):
            raise SystemExit(f"the engines' tables differ:\n{tables['local']}\n{tables['harbor']}")
    ratio_wall = statistics.median(wall["harbor"]) / statistics.median(wall["local"])
    ratio_inside = statistics.median(inside["harbor"]) / statistics.median(inside["local"])
    print(f"harbor / local, seconds per replay: {ratio_wall:.1f}x wall, {ratio_inside:.1f}x inside the trials")


if __name__ == "__main__":
    main()
