"""Inspect Scout: a transcript database (a folder of Parquet files in Scout's transcript schema).

Scout (PyPI ``inspect-scout``) opens a folder of Parquet files whose columns are its transcript fields
(``transcript_id`` required; ``score``, ``score_explanation``, ``success``, ``limit``, ``messages`` ...)
as a transcript database: ``inspect_scout.transcripts_from(folder)``. Every further column is the
transcript's metadata. depthlab writes that file with its own writer (polars), never importing Scout;
the columns are :data:`depthlab.schema.SCOUT_TRANSCRIPTS`, and ``tests/export`` reads the database back
with Scout's own loader in Scout's side venv (``scripts/scout-venv.sh``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from depthlab._atomic import atomic_path
from depthlab.export._trials import (
    ExportReport,
    TrialRecord,
    check_inputs,
    depthlab_metadata,
    output_dir,
    records,
    rewards_json,
    task_facts,
)
from depthlab.schema import SCOUT_TRANSCRIPTS

#: The Parquet file of one export, inside the database folder (Scout reads every ``*.parquet`` there).
SCOUT_FILE = "transcripts_depthlab.parquet"

#: Scout's ``source_type`` of depthlab's transcripts.
SOURCE_TYPE = "depthlab"

#: Scout's ``date``: ISO 8601, as Python's ``datetime.isoformat`` writes a UTC time.
_ISO_FORMAT = "%Y-%m-%dT%H:%M:%S%.6f%:z"

#: The report beside the database (one line per trial not carried whole).
REPORT_FILE = "depthlab-export-report.txt"


def export_scout(
    trials: pl.DataFrame,
    out: str | Path,
    *,
    depth: pl.DataFrame | None = None,
    tasks: pl.DataFrame | None = None,
    checks: pl.DataFrame | None = None,
) -> ExportReport:
    """Write trials as an Inspect Scout transcript database that ``inspect_scout.transcripts_from(out)`` opens.

    One transcript per trial: ``score`` (the rewards, JSON), ``success`` (passed; null for an invalid
    trial, whose reward Harbor marks not valid), ``score_explanation`` (the verifier's output),
    ``limit`` (``"turns"`` when the stated cap ended the run), the messages (the trajectory's turns, in
    any form :func:`depthlab.io.read_steps` reads), and depthlab's metadata as columns: dataset, cap,
    status, N, and the task's D with its intervals, W, expert minutes and check verdicts where given.

    Parameters
    ----------
    trials : pl.DataFrame
        A trials table (:func:`depthlab.read_trials`); its ``source`` names each trial's folder.
    out : str or Path
        The database folder (made when absent); the file is :data:`SCOUT_FILE` in it, replaced whole.
    depth, tasks, checks : pl.DataFrame, optional
        A depth table (:func:`depthlab.estimate_depth`), a tasks table, a checks table, joined on
        (dataset, task) (checks on task).

    Returns
    -------
    ExportReport
        Trials in, transcripts written, and one line per trial with a part not carried.

    Examples
    --------
    >>> import tempfile, depthlab as dl
    >>> from depthlab.simulate import write_runs
    >>> runs = write_runs(tempfile.mkdtemp(), scale=0.01, seed=1, public_attempts=0)
    >>> trials = dl.read_trials(runs.jobs_dir).trials
    >>> report = export_scout(trials, tempfile.mkdtemp())
    >>> report.n_runs == trials.height
    True
    """
    check_inputs(trials, depth, tasks, checks, "export_scout")
    folder = output_dir(out)
    dated = trials.with_columns(iso_date=pl.col("started_at").dt.strftime(_ISO_FORMAT))
    rows = [_transcript(record) for record in records(dated, task_facts(depth, tasks, checks))]
    table = pl.DataFrame(rows, schema=SCOUT_TRANSCRIPTS, orient="row")
    with atomic_path(folder / SCOUT_FILE) as path:
        table.write_parquet(path)
    lost = tuple(f"{row['job']}/{row['trial']}: {row['not_carried']}" for row in rows if row["not_carried"])
    report = ExportReport("scout", folder, trials.height, table.height, (), lost)
    with atomic_path(folder / REPORT_FILE) as path:
        path.write_text("\n".join(report.lines()) + "\n", encoding="utf-8")
    return report


def _transcript(record: TrialRecord) -> dict[str, Any]:
    row = record.row
    metadata = depthlab_metadata(record)
    tokens = [row[key] for key in ("n_input_tokens", "n_output_tokens") if row[key] is not None]
    error = None
    if row["exception"]:
        error = f"{row['exception']}: {row['exception_message']}" if row["exception_message"] else row["exception"]
    transcript: dict[str, Any] = {
        "transcript_id": f"{row['dataset']}/{row['job']}/{row['trial']}",
        "source_type": SOURCE_TYPE,
        "source_id": row["job"],
        "source_uri": Path(row["source"]).resolve().as_uri(),
        "date": row["iso_date"],
        "task_set": row["dataset"],
        "task_id": row["task"],
        "task_repeat": row["attempt"],
        "agent": row["agent"],
        "agent_args": json.dumps({"stated_cap": row["cap"]}) if row["cap"] is not None else None,
        "model": row["model"],
        "model_options": None,
        "score": rewards_json(row),
        "score_explanation": record.files.verifier_output,
        "success": record.success,
        "message_count": len(record.messages),
        "total_time": row["agent_seconds"],
        "total_tokens": sum(tokens) if tokens else None,
        "error": error,
        "limit": "turns" if record.cap_ended_run else None,
        "trust_content": None,
        "messages": json.dumps(record.messages),
        "events": "[]",
        "timelines": None,
        "events_data": None,
    }
    for key in SCOUT_TRANSCRIPTS:
        if key not in transcript:
            value = metadata[key]
            transcript[key] = json.dumps(value) if isinstance(value, list) else value
    if isinstance(metadata["not_carried"], list):
        transcript["not_carried"] = "; ".join(metadata["not_carried"])
    return transcript
