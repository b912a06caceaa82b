"""Benchmark: writing Harbor files through the typed records (issue 36) against the dict writer they replace.

Times are CPU seconds of this process (see ``_best``). Both writers run in this one process: the
baseline is depthlab as of a git revision (default ``f28462f``, the last commit before the writer
built records), extracted with ``git archive`` and imported under another package name
(``depthlab_base``), so the two are timed side by side, in alternation, on the same machine state.
Prints, each as a ratio new / baseline (below 1: faster):

* the simulator: :func:`depthlab.simulate.write_runs` writing a demo collection (``--scale``, default
  0.2: ~4,000 trials, each a config.json, a result.json and a trajectory), best of ``--repeats``;
* the runner's path: ``--trials`` trial results (config, result with an exception or a multi-step
  trial's steps) built and written with :func:`~depthlab.io.harbor_writer.write_json` (indented,
  atomic), best of ``--repeats``;
* the encoding alone of those results (build excluded): the records through msgspec against the
  baseline's dicts through ``json.dumps(indent=4)``.

The new writer writes more per file (every field of Harbor 0.26's models, nulls included: about
1.6x the bytes of a trial's result.json), so the ratios are for more output, not the same output.

Usage: ``python tests/bench/bench_writer.py [--scale 0.2] [--trials 2000] [--repeats 3] [--base REV]``.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[2]


def _baseline(revision: str, into: Path) -> str:
    """depthlab at ``revision`` importable as ``depthlab_base`` from ``into``; the package name."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "depthlab"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    package = into / "depthlab_base"
    (into / "depthlab").rename(package)
    pattern = re.compile(r"\bdepthlab(?=[.\s\"'])")
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        path.write_text(pattern.sub("depthlab_base", text), encoding="utf-8")
    sys.path.insert(0, str(into))
    return "depthlab_base"


def _best(function: Any, repeats: int) -> float:
    """The least CPU time (user + system, this process) of ``repeats`` calls: the machine is shared, and the
    wall clock of a file-writing run swings with the other processes' disk use; the CPU time much less."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        function()
        times.append(time.process_time() - start)
    return min(times)


def _simulator(package: str, out: Path, scale: float) -> Any:
    simulate = importlib.import_module(f"{package}.simulate")

    def run() -> None:
        shutil.rmtree(out, ignore_errors=True)
        simulate.write_runs(out, seed=0, scale=scale)

    return run


def _runner_trials(hw: ModuleType, root: Path, n_trials: int) -> tuple[list[tuple[Path, Any, Any]], Any]:
    """``n_trials`` (folder, config, result) built as the runner builds them; and the builder itself."""

    def build() -> list[tuple[Path, Any, Any]]:
        built = []
        for index in range(n_trials):
            name = hw.trial_name("task-name", f"{index:07d}")
            trial_dir = root / name
            agent = hw.agent_config("depthlab-terminus", "openai/gpt-x", hw.cap_kwargs(5, prompt_version="v3"))
            environment = hw.environment_config("docker", {"cpus": 1, "memory_mb": 2048, "pids_limit": 512})
            config = hw.trial_config(
                hw.task_config(f"/data/tasks/task-{index % 50}", "suite"),
                name,
                root,
                agent,
                job_id="job-1",
                environment=environment,
                verifier=hw.verifier_config(120.0),
            )
            moment = "2026-01-01T00:00:00.000000Z"
            phases = {phase: hw.phase(moment, moment) for phase in hw.PHASES}
            steps, usage, exception = None, hw.agent_result(100, 10, 20, 0.01, {"n_episodes": 5}), None
            rewards: dict[str, float] | None = {"reward": float(index % 3 == 0)}
            if index % 4 == 1:
                exception = hw.exception_info("AgentTimeoutError", "timed out", "Traceback\n" * 20, moment)
            if index % 4 == 2:
                phases.pop("agent_execution")
                steps = [
                    hw.step_result(
                        f"step-{step}",
                        agent_result=hw.agent_result(50, 5, 10, 0.005, {"n_episodes": 2}),
                        rewards={"reward": 1.0},
                        agent_execution=hw.phase(moment, moment),
                        verifier=hw.phase(moment, moment),
                    )
                    for step in (1, 2, 3)
                ]
                usage, rewards = None, {"reward": 1.0}
            result = hw.trial_result(
                config,
                result_id=f"r-{index}",
                task_name=f"task-{index % 50}",
                task_path=f"/data/tasks/task-{index % 50}",
                trial_dir=trial_dir,
                source="suite",
                task_checksum="0" * 64,
                agent=hw.agent_info("depthlab-terminus", "1.0", "openai/gpt-x"),
                agent_result=usage,
                rewards=rewards,
                exception=exception,
                started_at=moment,
                finished_at=moment,
                phases=phases,
                step_results=steps,
            )
            built.append((trial_dir, config, result))
        return built

    return build(), build


def _write_all(hw: ModuleType, built: Any) -> Any:
    def run() -> None:
        for trial_dir, config, result in built():
            hw.write_json(trial_dir / "config.json", config)
            hw.write_json(trial_dir / "result.json", result)

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.2)
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--base", default="f28462f")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="bench-writer-") as scratch:
        work = Path(scratch)
        base = _baseline(args.base, work / "base")
        new_hw = importlib.import_module("depthlab.io.harbor_writer")
        base_hw = importlib.import_module(f"{base}.io.harbor_writer")

        packages = (("new", "depthlab"), ("base", base))
        sims = {name: _simulator(package, work / f"sim-{name}", args.scale) for name, package in packages}
        times: dict[str, list[float]] = {"new": [], "base": []}
        for repeat in range(args.repeats):  # in alternation, each first in turn: a slower moment hits both
            for name, run in sorted(sims.items(), reverse=repeat % 2 == 1):
                times[name].append(_best(run, 1))
        sim = {name: min(values) for name, values in times.items()}
        pairs = sorted(new / old for new, old in zip(times["new"], times["base"], strict=True))
        median = pairs[len(pairs) // 2] if len(pairs) % 2 else (pairs[len(pairs) // 2 - 1] + pairs[len(pairs) // 2]) / 2
        n_files = sum(1 for path in (work / "sim-new").rglob("*") if path.is_file())

        built_new, rebuild_new = _runner_trials(new_hw, work / "runner-new", args.trials)
        built_base, rebuild_base = _runner_trials(base_hw, work / "runner-base", args.trials)
        write = {
            "new": _best(_write_all(new_hw, lambda: rebuild_new()), args.repeats),
            "base": _best(_write_all(base_hw, lambda: rebuild_base()), args.repeats),
        }
        results_new = [result for _, _, result in built_new]
        results_base = [result for _, _, result in built_base]
        encode = {  # what write_json does before the atomic write, each
            "new": _best(lambda: [msgspec.json.format(new_hw.encode(r), indent=4) for r in results_new], args.repeats),
            "base": _best(lambda: [json.dumps(r, indent=4, default=str) for r in results_base], args.repeats),
        }
        size_new = len(new_hw.encode(results_new[0]))
        size_base = len(json.dumps(results_base[0], separators=(",", ":")))

    print(f"simulator, scale {args.scale} ({n_files} files): new {sim['new']:.2f} s, baseline {sim['base']:.2f} s, "
          f"ratio of the best {sim['new'] / sim['base']:.2f}; of each pair: median {median:.2f} "
          f"(range {pairs[0]:.2f} to {pairs[-1]:.2f}, {len(pairs)} pairs)")  # fmt: skip
    print(f"runner path, {args.trials} trials built and written: new {write['new']:.2f} s, "
          f"baseline {write['base']:.2f} s, ratio {write['new'] / write['base']:.2f}")  # fmt: skip
    print(f"encoding alone, {args.trials} results: new {encode['new']:.3f} s, baseline {encode['base']:.3f} s, "
          f"ratio {encode['new'] / encode['base']:.2f}")  # fmt: skip
    print(f"a result.json's compact size: new {size_new} bytes, baseline {size_base} bytes "
          f"({size_new / size_base:.2f}x: every field of Harbor 0.26's models)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
