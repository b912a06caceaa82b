"""Docent: AgentRuns as JSONL, in the shape Docent's Harbor converter builds, for every trajectory depthlab reads.

Docent (PyPI ``docent``) converts a Harbor trial to an ``AgentRun`` (``docent.sdk.integrations.harbor``):
one transcript of chat messages and ``metadata["harbor"]`` holding the trial's paths and its
``config.json`` and ``result.json`` whole. Its converter needs an ATIF trajectory; depthlab builds the
messages from the turns it reads in any form (ATIF, chat-message lists, terminus episode directories,
multi-step trials), so every trial becomes a run, and adds ``metadata["depthlab"]``. Written with
depthlab's own JSON writer, never importing Docent; ``tests/export`` validates each line with Docent's
own ``AgentRun`` model in Docent's side venv (``scripts/docent-venv.sh``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import polars as pl

from depthlab import _atomic
from depthlab.export._trials import (
    ExportReport,
    TrialRecord,
    check_inputs,
    depthlab_metadata,
    records,
    task_facts,
)
from depthlab.io.trajectories import trial_dir


def export_docent(
    trials: pl.DataFrame,
    out: str | Path,
    *,
    depth: pl.DataFrame | None = None,
    tasks: pl.DataFrame | None = None,
    checks: pl.DataFrame | None = None,
) -> ExportReport:
    """Write trials as Docent AgentRuns, one JSON object per line, each with ``metadata["depthlab"]``.

    Parameters
    ----------
    trials : pl.DataFrame
        A trials table (:func:`depthlab.read_trials`); its ``source`` names each trial's folder.
    out : str or Path
        The JSONL file, replaced whole; the report is written beside it (``<out>.report.txt``).
    depth, tasks, checks : pl.DataFrame, optional
        A depth table, a tasks table, a checks table, joined on (dataset, task) (checks on task).

    Returns
    -------
    ExportReport
        Trials in, runs written, and one line per trial with a part not carried.

    Examples
    --------
    >>> import json, pathlib, tempfile, depthlab as dl
    >>> from depthlab.simulate import write_runs
    >>> runs = write_runs(tempfile.mkdtemp(), scale=0.01, seed=1, public_attempts=0)
    >>> trials = dl.read_trials(runs.jobs_dir).trials
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "runs.jsonl"
    >>> report = export_docent(trials, out)
    >>> first = json.loads(out.read_text().splitlines()[0])
    >>> sorted(first["metadata"]), report.n_runs == trials.height
    (['converted_from', 'depthlab', 'harbor', 'source_format'], True)
    """
    check_inputs(trials, depth, tasks, checks, "export_docent")
    path = Path(out)
    lines = []
    lost = []
    for record in records(trials, task_facts(depth, tasks, checks)):
        # ASCII only, as Docent writes its JSONL: a raw U+2028 or \x1c would split the line for Python's splitlines
        lines.append(json.dumps(_agent_run(record), ensure_ascii=True, separators=(",", ":")))
        if record.not_carried:
            lost.append(f"{record.name}: {'; '.join(record.not_carried)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic.write_text(path, "".join(line + "\n" for line in lines))
    report = ExportReport("docent", path, trials.height, len(lines), (), tuple(lost))
    _atomic.write_text(f"{path}.report.txt", "\n".join(report.lines()) + "\n")
    return report


def _agent_run(record: TrialRecord) -> dict[str, Any]:
    row = record.row
    folder = trial_dir(row["source"])
    name = row["agent"] or "agent"
    files = record.files
    form = files.trajectory_form
    trial_path = os.path.basename(folder)
    transcript = {
        "name": name,
        "description": f"{name} on {row['task']} ({form or 'no'} trajectory, read by depthlab)",
        "messages": [_docent_message(message) for message in record.messages],
        "metadata": {"agent_name": name, "default_model_name": row["model"]},
    }
    return {
        "name": name,
        "description": f"{row['dataset']}/{row['task']}: {row['job']}/{row['trial']}",
        "transcripts": [transcript],
        "transcript_groups": [],
        "metadata": {
            "source_format": form,
            "converted_from": "depthlab",
            "harbor": {
                "trajectory_path": None if files.trajectory_path is None else f"{trial_path}/{files.trajectory_path}",
                "trial_path": trial_path,
                "config_json": files.config,
                "result_json": files.result,
            },
            "depthlab": depthlab_metadata(record),
        },
    }


def _docent_message(message: dict[str, Any]) -> dict[str, Any]:
    """A chat message in Docent's form: tool calls typed ``function``."""
    if "tool_calls" not in message:
        return message
    calls = [{**call, "type": "function"} for call in message["tool_calls"]]
    return {**message, "tool_calls": calls}
