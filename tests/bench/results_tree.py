"""A TB2-leaderboard-shaped tree of result files only, as ``depthlab fetch tb2-leaderboard --results-only`` leaves it.

``write_results_tree(root, n_trials)`` writes ``n_trials`` Harbor trial directories, each with
``result.json`` and ``config.json`` and nothing else (no ``agent/``, no ``verifier/``), laid out as
the leaderboard repository is: ``submissions/terminal-bench/2.0/<agent>__<model>/<job>/<trial>/``,
jobs of 445 trials (the real TMax job's size) with the job's own ``result.json`` and
``config.json``.

The files are the real trials' shapes: every trial is a copy of one of the 445 real trials of
``$DEPTHLAB_SHARED/data/tb2-jobs/tmax-27b`` (its ``result.json`` and ``config.json`` byte for byte,
with its id, trial name, job folder and model rewritten for its copy), so key order, nesting,
null fields, exception records and timestamp formats are the real ones. Without the real job
(no ``DEPTHLAB_SHARED``) the three sample trials of the repository's test data are used.

Usage: ``python tests/bench/results_tree.py ROOT [--trials 100000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("DEPTHLAB_SHARED", HERE.parents[2] / "shared"))
REAL_JOB = SHARED / "data" / "tb2-jobs" / "tmax-27b" / "terminal-bench-2-0"
SAMPLE_JOB = SHARED / "samples" / "hamishivi_tmax" / "evaluation_assets" / "daytona" / "tmax-27b" / "terminal-bench-2-0"
PER_JOB = 445
MODELS = ("tmax-2b", "tmax-4b", "tmax-9b", "tmax-27b", "Qwen3.5-2B", "Qwen3.5-4B", "Qwen3.5-9B", "Qwen3.6-27B")


def templates() -> tuple[Path, list[tuple[dict, bytes]]]:
    """The real job used, and each of its trials as (parsed result.json, config.json bytes)."""
    job = REAL_JOB if REAL_JOB.is_dir() else SAMPLE_JOB
    if not job.is_dir():
        raise SystemExit(f"no real Harbor job at {REAL_JOB} or {SAMPLE_JOB}; set DEPTHLAB_SHARED")
    found = []
    for trial in sorted(job.iterdir()):
        if (trial / "result.json").is_file():
            config = trial / "config.json"
            found.append(
                (json.loads((trial / "result.json").read_bytes()), config.read_bytes() if config.is_file() else b"{}")
            )
    return job, found


def write_results_tree(root: Path, n_trials: int) -> int:
    """Write the tree; returns the bytes of the trials' result.json files (what the loader reads)."""
    job_template, trials = templates()
    job_result = (job_template / "result.json").read_bytes()
    job_config = (job_template / "config.json").read_bytes()
    written = 0
    for start in range(0, n_trials, PER_JOB):
        index = start // PER_JOB
        model = MODELS[index % len(MODELS)]
        submission = root / "submissions" / "terminal-bench" / "2.0" / f"agent-{index // len(MODELS)}__{model}"
        job_name = f"job-{index:04d}"
        job = submission / job_name
        job.mkdir(parents=True)
        (job / "result.json").write_bytes(job_result)
        (job / "config.json").write_bytes(job_config)
        for offset in range(min(PER_JOB, n_trials - start)):
            result, config = trials[offset % len(trials)]
            name = f"{result['trial_name'].rsplit('__', 1)[0]}__{index:04d}{offset:03d}"
            copy = dict(result)
            copy["id"] = f"{index:04d}-{offset:03d}-{result.get('id')}"
            copy["trial_name"] = name
            copy["config"] = dict(result["config"], trial_name=name, trials_dir=f"jobs/{job_name}")
            copy["config"]["agent"] = dict(result["config"]["agent"], model_name=f"openai/{model}")
            trial = job / name
            trial.mkdir()
            data = json.dumps(copy, indent=4).encode()
            (trial / "result.json").write_bytes(data)
            (trial / "config.json").write_bytes(config)
            written += len(data)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--trials", type=int, default=100_000)
    args = parser.parse_args()
    start = time.perf_counter()
    size = write_results_tree(args.root, args.trials)
    print(f"wrote {args.trials} trials ({size / 1e6:.0f} MB of result.json) in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
