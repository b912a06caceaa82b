"""Run Harbor trials in one process, a few at once: ``depthlab check --engine harbor``'s batches.

``python depthlab_trials.py [--concurrency N] CONFIG.json...`` (Harbor's venv's python, this folder on
``PYTHONPATH``) validates each file as Harbor's ``TrialConfig`` and runs it with Harbor's own ``Trial``
(create, then run), as ``harbor trials start --config CONFIG.json`` does, in one event loop, at most
``N`` at a time (default 1: in order), bounded by a semaphore as Harbor's own ``TrialQueue`` bounds a
job's ``n_concurrent_trials``; trials of one task share its image, whose build Harbor's docker
environment serializes. So the replays of a batch pay Harbor's start-up (its imports, the CLI) once
instead of once each, and overlap their waits (image, containers, the verifier). Every trial writes
its own folder and ``result.json`` as under ``harbor trials start``, so a batch killed half-way
leaves the finished trials whole and the rest (at most ``N`` started) without a result (replayed by
the next check).

A trial that cannot start (an invalid config, an agent that does not import) prints one line and the
others run; depthlab reports it from the missing ``result.json``. One line per trial goes to
stdout (``depthlab-harbor.log``): ``trial NAME: started``, then ``finished`` with its exception or
rewards. It imports Harbor and the standard library only (depthlab is not importable here).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from harbor.agents.factory import AgentFactory
from harbor.cli.utils import run_async
from harbor.models.trial.config import TrialConfig
from harbor.trial.trial import Trial


async def _run_one(path: str, slots: asyncio.Semaphore) -> bool:
    """Run one trial config once a slot is free; whether it ran to a result."""
    async with slots:
        try:
            config = TrialConfig.model_validate_json(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            print(f"trial config {path}: cannot be read: {type(error).__name__}: {error}", flush=True)
            return False
        print(f"trial {config.trial_name}: started ({path})", flush=True)
        try:
            AgentFactory.run_preflight(config.agent, skip_credential_checks=True)
            trial = await Trial.create(config)
            result = await trial.run()
        except Exception as error:  # this trial's fault: the others still run
            print(f"trial {config.trial_name}: could not run: {type(error).__name__}: {error}", flush=True)
            return False
        info = result.exception_info
        outcome = f"{info.exception_type}: {info.exception_message}" if info else f"rewards {result.verifier_result}"
        print(f"trial {config.trial_name}: finished ({outcome})", flush=True)
        return True


async def _run_all(paths: list[str], concurrency: int) -> int:
    slots = asyncio.Semaphore(concurrency)
    ran = await asyncio.gather(*(_run_one(path, slots) for path in paths))
    return 0 if all(ran) else 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="depthlab_trials.py")
    parser.add_argument("--concurrency", type=int, default=1, help="trials at once (default 1)")
    parser.add_argument("configs", nargs="*")
    args = parser.parse_args(argv)
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    return run_async(_run_all(args.configs, args.concurrency))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
