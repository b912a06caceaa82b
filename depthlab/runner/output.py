"""Harbor-format output: job and trial directories, ATIF trajectories, all written atomically.

Layout (what Harbor writes, and what :func:`depthlab.load_trials` reads back)::

    <jobs_dir>/<job_name>/config.json      JobConfig
    <jobs_dir>/<job_name>/result.json      JobResult, rewritten after every trial
    <jobs_dir>/<job_name>/<trial_name>/config.json, result.json (written last),
        agent/trajectory.json (ATIF-v1.5), agent/episode-<i>/{prompt,response}.txt,
        verifier/reward.txt (+ reward.json, test-stdout.txt when the task writes them), exception.txt

Every file is written to a temporary name in the same folder and renamed, so a reader never
sees half a file. A trial directory is complete once its ``result.json`` exists; one without it
was interrupted and is deleted and redone on resume, as Harbor does.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import string
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ATIF_VERSION = "ATIF-v1.5"
_NAME_ALPHABET = string.ascii_letters + string.digits
_JOB_LOCKS: dict[Path, threading.Lock] = {}
_JOB_LOCKS_GUARD = threading.Lock()


def write_json(path: Path, value: Any) -> None:
    """Write ``value`` as indented JSON to ``path`` atomically (temporary file, then rename)."""
    write_text(path, json.dumps(value, indent=4, default=str) + "\n")


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def utc_now() -> str:
    """The current time as an ISO string with a ``Z`` suffix (Harbor's trial-level format)."""
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def trial_name(task_name: str) -> str:
    """A fresh Harbor-style trial name: ``<task[:32]>__<7 random characters>``.

    Examples
    --------
    >>> name = trial_name("terminal-bench/hello-world")
    >>> name.split("__")[0], len(name.split("__")[1])
    ('hello-world', 7)
    """
    short = task_name.rsplit("/", 1)[-1][:32].rstrip("_-")
    return f"{short}__{''.join(secrets.choice(_NAME_ALPHABET) for _ in range(7))}"


class Trajectory:
    """An ATIF trajectory, rewritten to ``path`` after every step (as terminus-2 does)."""

    def __init__(self, path: Path, *, agent_name: str, agent_version: str, model_name: str | None, extra: dict) -> None:
        self.path = path
        self.session_id = str(uuid.uuid4())
        self.agent = {"name": agent_name, "version": agent_version, "model_name": model_name, "extra": extra}
        self.steps: list[dict[str, Any]] = []

    def add(self, source: str, message: str, **fields: Any) -> None:
        """Append a step (``source`` is "user", "agent" or "system") and rewrite the file."""
        step = {"step_id": len(self.steps) + 1, "timestamp": utc_now(), "source": source, "message": message}
        step.update({key: value for key, value in fields.items() if value is not None})
        self.steps.append(step)
        self.write()

    def final_metrics(self) -> dict[str, Any]:
        metrics = [step.get("metrics", {}) for step in self.steps if step["source"] == "agent"]
        return {
            "total_prompt_tokens": _sum(m.get("prompt_tokens") for m in metrics),
            "total_completion_tokens": _sum(m.get("completion_tokens") for m in metrics),
            "total_cached_tokens": _sum(m.get("cached_tokens") for m in metrics),
            "total_cost_usd": _sum(m.get("cost_usd") for m in metrics),
            "total_steps": len(self.steps),
        }

    def write(self) -> None:
        write_json(
            self.path,
            {
                "schema_version": ATIF_VERSION,
                "session_id": self.session_id,
                "agent": self.agent,
                "steps": self.steps,
                "final_metrics": self.final_metrics(),
            },
        )


class JobDir:
    """A Harbor job directory the runner adds trials to; reopening it resumes it.

    Parameters
    ----------
    jobs_dir : Path
        Parent folder of all jobs.
    job_name : str
        Folder name of this job.
    config : dict
        The JobConfig to write as ``config.json`` (``job_name`` and ``jobs_dir`` are filled in).

    Examples
    --------
    >>> import tempfile
    >>> job = JobDir(Path(tempfile.mkdtemp()), "demo", {"n_attempts": 1})
    >>> job.new_trial_dir("hello").name.startswith("hello__")
    True
    """

    def __init__(self, jobs_dir: Path, job_name: str, config: dict[str, Any]) -> None:
        self.path = Path(jobs_dir) / job_name
        self.path.mkdir(parents=True, exist_ok=True)
        self.name = job_name
        self.id = self._existing_id() or str(uuid.uuid4())
        self.config = {"job_name": job_name, "jobs_dir": str(Path(jobs_dir)), **config}
        self.started_at = self._existing_started_at() or datetime.now().isoformat()
        self.n_planned = 0
        with _job_lock(self.path):
            write_json(self.path / "config.json", self.config)

    def _existing_result(self) -> dict[str, Any]:
        with contextlib.suppress(OSError, ValueError):
            value = json.loads((self.path / "result.json").read_text(encoding="utf-8"))
            if isinstance(value, dict):
                return value
        return {}

    def _existing_id(self) -> str | None:
        return self._existing_result().get("id")

    def _existing_started_at(self) -> str | None:
        return self._existing_result().get("started_at")

    def remove_incomplete(self) -> list[str]:
        """Delete trial folders without ``result.json`` (interrupted trials); return their names."""
        return remove_incomplete_trials(self.path)

    def trial_results(self) -> list[dict[str, Any]]:
        """The ``result.json`` of every complete trial in the job."""
        results = []
        for file in sorted(self.path.glob("*/result.json")):
            with contextlib.suppress(OSError, ValueError):
                value = json.loads(file.read_text(encoding="utf-8"))
                if isinstance(value, dict):
                    results.append(value)
        return results

    def new_trial_dir(self, task_name: str) -> Path:
        """Create and return a fresh, uniquely named trial folder."""
        while True:
            path = self.path / trial_name(task_name)
            try:
                path.mkdir()
                return path
            except FileExistsError:
                continue

    def update_result(self, *, finished: bool = False) -> None:
        """Rewrite the job's ``result.json`` from the trials on disk (so it is right after a resume)."""
        with _job_lock(self.path):
            trials = self.trial_results()
            write_json(self.path / "result.json", _job_result(self, trials, finished=finished))


def remove_incomplete_trials(job_path: Path) -> list[str]:
    """Delete the trial folders of ``job_path`` that have no ``result.json``; return their names.

    Examples
    --------
    >>> import tempfile
    >>> job = Path(tempfile.mkdtemp())
    >>> (job / "t__abc").mkdir()
    >>> remove_incomplete_trials(job)
    ['t__abc']
    """
    removed = []
    for child in sorted(Path(job_path).iterdir()):
        if child.is_dir() and not (child / "result.json").exists():
            shutil.rmtree(child, ignore_errors=True)
            removed.append(child.name)
    return removed


def _job_result(job: JobDir, trials: list[dict[str, Any]], *, finished: bool) -> dict[str, Any]:
    evals: dict[str, dict[str, Any]] = {}
    totals = {"n_input_tokens": 0, "n_cache_tokens": 0, "n_output_tokens": 0, "cost_usd": 0.0}
    n_errored = 0
    for trial in trials:
        info = trial.get("agent_info") or {}
        model = ((trial.get("config") or {}).get("agent") or {}).get("model_name")
        key = "__".join(part for part in (info.get("name"), model, trial.get("source") or "adhoc") if part)
        entry = evals.setdefault(
            key, {"n_trials": 0, "n_errors": 0, "metrics": [], "reward_stats": {}, "exception_stats": {}, "_sum": 0.0}
        )
        exception = (trial.get("exception_info") or {}).get("exception_type")
        if exception:
            entry["n_errors"] += 1
            n_errored += 1
            entry["exception_stats"].setdefault(exception, []).append(trial.get("trial_name"))
        rewards = (trial.get("verifier_result") or {}).get("rewards") or {}
        if rewards:
            entry["n_trials"] += 1
            for name, value in rewards.items():
                entry["reward_stats"].setdefault(name, {}).setdefault(str(float(value)), []).append(
                    trial.get("trial_name")
                )
        entry["_sum"] += float(rewards.get("reward", 0.0) or 0.0)
        entry.setdefault("_all", 0)
        entry["_all"] += 1
        result = trial.get("agent_result") or {}
        for field in totals:
            totals[field] += result.get(field) or 0
    for entry in evals.values():
        entry["metrics"] = [{"mean": entry.pop("_sum") / max(entry.pop("_all"), 1)}]  # missing reward counts 0
    now = datetime.now().isoformat()
    return {
        "id": job.id,
        "started_at": job.started_at,
        "updated_at": now,
        "finished_at": now if finished else None,
        "n_total_trials": max(job.n_planned, len(trials)),
        "stats": {
            "n_completed_trials": len(trials),
            "n_errored_trials": n_errored,
            "n_running_trials": 0,
            "n_pending_trials": max(job.n_planned - len(trials), 0),
            "n_cancelled_trials": 0,
            "n_retries": 0,
            **totals,
            "evals": evals,
        },
    }


def _job_lock(path: Path) -> threading.Lock:
    with _JOB_LOCKS_GUARD:
        return _JOB_LOCKS.setdefault(path.resolve(), threading.Lock())


def _sum(values: Any) -> Any:
    present = [value for value in values if value is not None]
    return sum(present) if present else None
