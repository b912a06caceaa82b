"""Helpers shared by the loader tests (constants and a minimal Harbor trial writer)."""

from __future__ import annotations

import json
from pathlib import Path

TMAX_JOB = "hamishivi_tmax/evaluation_assets/daytona/tmax-27b/terminal-bench-2-0"
GOLDEN = "Zun-Wang_harbor/tests/golden/terminus_2"
LEADERBOARD = "laude-institute_terminal-bench-leaderboard/results"
DROID_RUN = f"{LEADERBOARD}/terminal-bench-core@0.1.1/20250923_droid_claude-4-sonnet"
ORCHESTRATOR = f"{LEADERBOARD}/terminal-bench-core:0.1.1/20250906_orchestrator_claude-4.1-opus"
TBA_RUN = "justin-handsman-devrev_terminal-bench-agent/runs/2025-09-14__14-24-59"
TMAX_TRIALS = ("hf-model-inference__M3XAghy", "mteb-retrieve__nNvzHmk", "prove-plus-comm__4K4LrFz")


def write_trial(folder: Path, **fields) -> Path:
    """A minimal Harbor trial dir: result.json with ``fields`` over sensible defaults."""
    folder.mkdir(parents=True, exist_ok=True)
    result = {
        "task_name": "demo-task",
        "trial_name": folder.name,
        "source": "demo",
        "config": {"agent": {"name": "terminus-2", "model_name": "openai/gpt-5", "kwargs": {}}, "trials_dir": "jobs/j"},
        "agent_info": {"name": "terminus-2", "version": "2.0.0", "model_info": {"name": "gpt-5", "provider": "openai"}},
        "agent_result": {"n_input_tokens": 10, "n_output_tokens": 5, "metadata": {"n_episodes": 3}},
        "verifier_result": {"rewards": {"reward": 1.0}},
        "exception_info": None,
        "started_at": "2026-01-01T00:00:00Z",
        "finished_at": "2026-01-01T00:10:00Z",
    }
    result.update(fields)
    result = {key: value for key, value in result.items() if value is not ...}
    (folder / "result.json").write_text(json.dumps(result))
    return folder


def read_json(path: Path):
    return json.loads(path.read_text())


def keys_in_order(value: object) -> object:
    """``value`` with every object as its list of (key, value) pairs, so a comparison sees the key order."""
    if isinstance(value, dict):
        return [(key, keys_in_order(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [keys_in_order(item) for item in value]
    return value
