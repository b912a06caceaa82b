"""Run in Docent's side venv (scripts/docent-venv.sh): validate depthlab's AgentRuns with Docent's own model,
and convert Harbor trials with Docent's own converter, printing one JSON object per run.

    python read_docent.py read FILE.jsonl...     each line through docent's AgentRun.model_validate_json
    python read_docent.py convert ROOT           each Harbor trial under ROOT through docent's Harbor converter
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def summary(run: object) -> dict[str, object]:
    transcript = run.transcripts[0]  # type: ignore[attr-defined]
    messages = transcript.messages
    return {
        "roles": [message.role for message in messages],
        "tool_calls": sum(len(getattr(message, "tool_calls", None) or []) for message in messages),
        "metadata": run.metadata,  # type: ignore[attr-defined]
    }


def read(files: list[str]) -> None:
    from docent.data_models.agent_run import AgentRun

    for file in files:
        for line in Path(file).read_text(encoding="utf-8").splitlines():
            print(json.dumps({"file": file, **summary(AgentRun.model_validate_json(line))}))


def convert(root: str) -> None:
    from docent.sdk.integrations.harbor import (
        ConversionError,
        convert_harbor_trial_to_agent_run,
        find_harbor_trial_dirs,
    )

    for trial in find_harbor_trial_dirs(root):
        try:
            run = convert_harbor_trial_to_agent_run(trial)
        except ConversionError as exc:
            print(json.dumps({"trial": trial.name, "error": str(exc)}))
            continue
        print(json.dumps({"trial": trial.name, **summary(run)}))


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    read(rest) if command == "read" else convert(rest[0])
