"""Run Harbor trials one after another in one process: ``depthlab check --engine harbor``'s batches.

``python depthlab_trials.py CONFIG.json...`` (Harbor's venv's python, this folder on ``PYTHONPATH``)
validates each file as Harbor's ``TrialConfig`` and runs it with Harbor's own ``Trial`` (create, then
run), as ``harbor trials start --config CONFIG.json`` does, in order and in one event loop, so the
replays of a batch pay Harbor's start-up (its imports, the CLI) once instead of once each. Every
trial writes its own folder and ``result.json`` as under ``harbor trials start``, so a batch killed
half-way leaves the finished trials whole and the rest without a result (replayed by the next check).

A trial that cannot start (an invalid config, an agent that does not import) prints one line and the
next one runs; depthlab reports it from the missing ``result.json``. One line per trial goes to
stdout (``depthlab-harbor.log``): ``trial NAME: started``, then ``finished`` with its exception or
rewards. It imports Harbor and the standard library only (depthlab is not importable here).
"""

from __future__ import annotations

import sys
from pathlib import Path

from harbor.agents.factory import AgentFactory
from harbor.cli.utils import run_async
from harbor.models.trial.config import TrialConfig
from harbor.trial.trial import Trial


async def _run_all(paths: list[str]) -> int:
    failed = 0
    for path in paths:
        try:
            config = TrialConfig.model_validate_json(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            print(f"trial config {path}: cannot be read: {type(error).__name__}: {error}", flush=True)
            failed += 1
            continue
        print(f"trial {config.trial_name}: started ({path})", flush=True)
        try:
            AgentFactory.run_preflight(config.agent, skip_credential_checks=True)
            trial = await Trial.create(config)
            result = await trial.run()
        except Exception as error:  # this trial's fault: the next one still runs
            print(f"trial {config.trial_name}: could not run: {type(error).__name__}: {error}", flush=True)
            failed += 1
            continue
        info = result.exception_info
        outcome = f"{info.exception_type}: {info.exception_message}" if info else f"rewards {result.verifier_result}"
        print(f"trial {config.trial_name}: finished ({outcome})", flush=True)
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    return run_async(_run_all(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
