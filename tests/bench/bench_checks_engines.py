"""Benchmark: what a replay of ``depthlab check`` costs, as ratios against a baseline run in the same process.

Three parts (``--part``, default all), each timing one way against its baseline, alternately, in fresh
jobs folders, and requiring the same table (every column but the seconds, the evidence and the trial
folders):

``engines``
    Harbor's seconds per replay over the local engine's: the planted ``clean`` task
    (:func:`depthlab.simulate.checks.write_planted_tasks`, two steps) with the checks ``oracle`` and
    ``before`` (``repeat=2``: 4 replays).
``batch``
    On Harbor, the replays in two batches (every task's oracle replays, then the others), one Harbor
    process each (``batch=True``, the default), against one ``harbor trials start`` per replay
    (``batch=False``): the planted ``clean`` and ``blind`` tasks, ``oracle`` and ``before``,
    ``repeat=1`` (5 replays); wall seconds per replay, per-replay over batched.
``reuse``
    On the local engine, the mutants of a step started from a ``docker commit`` snapshot of the earlier
    steps (``reuse=True``, the default) against each replayed from scratch (``reuse=False``): a two-step
    task (:func:`reuse_task`) whose first step takes :data:`STEP_ONE_SECONDS` and whose second has
    :data:`MUTANTS` top-level commands, checked with ``mutants`` (and the oracle it needs, ``repeat=1``);
    wall seconds of the whole check and the mutants' seconds inside their trials, scratch over reuse.

Needs Docker, the Debian userland image (``scripts/userland-up.sh``) and, for ``engines`` and ``batch``,
Harbor's side venv (``scripts/harbor-venv.sh``). Usage:
``python tests/bench/bench_checks_engines.py [--part engines|batch|reuse] [--rounds N] [--harbor CMD]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from depthlab import schema
from depthlab.checks import check_tasks
from depthlab.simulate.checks import write_planted_tasks

ROOT = Path(__file__).resolve().parents[2]
SAME = [name for name in schema.CHECKS if name not in ("seconds", "evidence", "trials")]
#: The reuse task: its first step's seconds (the work a snapshot saves each mutant) and its second's commands.
STEP_ONE_SECONDS = 3
MUTANTS = 4


def _script_output(script: str) -> str:
    done = subprocess.run(["bash", str(ROOT / "scripts" / script)], capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def reuse_task(root: Path, image: str) -> Path:
    """A two-step task: step 1 takes STEP_ONE_SECONDS and writes a file; step 2, MUTANTS commands, each graded."""
    folder = root / "reuse"
    words = [f"w{index}" for index in range(MUTANTS)]
    grade = " && ".join(f"[ -f /app/{word} ]" for word in words)
    files = {
        "environment/Dockerfile": f"FROM {image}\nRUN mkdir -p /app\nWORKDIR /app\n",
        "task.toml": 'schema_version = "1.4"\n[task]\nname = "bench/reuse"\n[[steps]]\nname = "prepare"\n'
        '[[steps]]\nname = "build"\n[environment]\ncpus = 1\nmemory_mb = 512\n',
        "steps/prepare/instruction.md": "Write ready to /app/ready.",
        "steps/prepare/tests/test.sh": _reward("[ -f /app/ready ]"),
        "steps/prepare/solution/solve.sh": f"#!/bin/bash\nsleep {STEP_ONE_SECONDS}\necho ready > /app/ready\n",
        "steps/build/instruction.md": "Create " + ", ".join(f"/app/{word}" for word in words) + ".",
        "steps/build/tests/test.sh": _reward(f"[ -f /app/ready ] && {grade}"),
        "steps/build/solution/solve.sh": "#!/bin/bash\n" + "".join(f"touch /app/{word}\n" for word in words),
    }
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    return folder


def _reward(condition: str) -> str:
    return (
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        f"if {condition}; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
    )


def _compare(
    label: str,
    ways: dict[str, dict[str, Any]],
    task: Path | list[Path],
    root: Path,
    rounds: int,
    checks: list[str],
    repeat: int,
    inside: Callable[[Any], float],
) -> dict[str, tuple[float, float]]:
    """Run each way ``rounds`` times, alternately; per way the medians (wall s per replay, inside s per replay)."""
    wall: dict[str, list[float]] = {way: [] for way in ways}
    trial: dict[str, list[float]] = {way: [] for way in ways}
    for number in range(1, rounds + 1):
        tables = {}
        for way, options in ways.items():
            start = time.perf_counter()
            report = check_tasks(
                task, jobs_dir=root / f"jobs-{label}-{way}-{number}", checks=checks, repeat=repeat, **options
            )
            seconds = time.perf_counter() - start
            replays = report.replays_run
            wall[way].append(seconds / replays)
            trial[way].append(inside(report) / replays)
            tables[way] = report.table.select(SAME)
            print(
                f"{label} round {number} {way:9s}: {replays} replays, {seconds:6.1f} s wall, "
                f"{wall[way][-1]:5.1f} s/replay wall, {trial[way][-1]:5.1f} s/replay inside the trials",
                flush=True,
            )
        first, *others = tables.values()
        if any(not first.equals(other) for other in others):
            raise SystemExit(f"{label}: the tables differ:\n" + "\n".join(str(table) for table in tables.values()))
    return {way: (statistics.median(wall[way]), statistics.median(trial[way])) for way in ways}


def _outside(medians: tuple[float, float]) -> float:
    """Seconds a replay costs outside its trial (wall minus inside), at least a millisecond."""
    return max(medians[0] - medians[1], 1e-3)


def _seconds(report: Any) -> float:
    return float(report.table["seconds"].sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("engines", "batch", "reuse"), action="append")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--harbor", default=None, help="the harbor command (default: the side venv's)")
    args = parser.parse_args()
    parts = args.part or ["engines", "batch", "reuse"]
    image = _script_output("userland-up.sh")
    root = Path(tempfile.mkdtemp(prefix="bench-checks-"))
    planted = write_planted_tasks(root / "tasks", image)
    clean = planted["clean"]
    if {"engines", "batch"} & set(parts):
        harbor = args.harbor or str(Path(_script_output("harbor-venv.sh")).parent / "harbor")
    if "engines" in parts:
        ways = {"local": {"engine": "local"}, "harbor": {"engine": "harbor", "harbor": harbor}}
        got = _compare("engines", ways, clean, root, args.rounds, ["oracle", "before"], 2, _seconds)
        print(
            f"engines: harbor / local, seconds per replay: {got['harbor'][0] / got['local'][0]:.2f}x wall, "
            f"{got['harbor'][1] / got['local'][1]:.2f}x inside the trials"
        )
    if "batch" in parts:
        ways = {
            "one-each": {"engine": "harbor", "harbor": harbor, "batch": False},
            "batched": {"engine": "harbor", "harbor": harbor, "batch": True},
        }
        tasks = [planted["clean"], planted["blind"]]
        got = _compare("batch", ways, tasks, root, args.rounds, ["oracle", "before"], 1, _seconds)
        print(
            f"batch: Harbor, one process per replay / batched, seconds per replay: "
            f"{got['one-each'][0] / got['batched'][0]:.2f}x wall ({got['one-each'][0]:.1f} s against "
            f"{got['batched'][0]:.1f} s), {got['one-each'][1] / got['batched'][1]:.2f}x inside the trials, "
            f"{_outside(got['one-each']) / _outside(got['batched']):.2f}x outside them (Harbor's start-up and the rest)"
        )
    if "reuse" in parts:
        task = reuse_task(root / "tasks", image)
        ways = {"scratch": {"reuse": False}, "snapshot": {"reuse": True}}

        def mutants_seconds(report: Any) -> float:
            return float(report.table.filter(report.table["check"] == "mutants")["seconds"].sum())

        got = _compare("reuse", ways, task, root, args.rounds, ["mutants"], 1, mutants_seconds)
        print(
            f"reuse: local, mutants from scratch / from a snapshot: {got['scratch'][0] / got['snapshot'][0]:.2f}x "
            f"wall per replay of the whole check ({got['scratch'][0]:.1f} s against {got['snapshot'][0]:.1f} s), "
            f"{got['scratch'][1] / got['snapshot'][1]:.2f}x the mutants' seconds inside their trials"
        )


if __name__ == "__main__":
    main()
