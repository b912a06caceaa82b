"""What every export shares: one trial's record (its row, its task's tables, its files and turns) and the report."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from depthlab._checks import check_frame
from depthlab.io import LoadError, read_steps
from depthlab.io.trajectories import trial_dir
from depthlab.io.trial_files import TrialFiles, read_trial_files

#: The peers depthlab exports to, in the order ``depthlab export`` lists them.
PEERS: tuple[str, ...] = ("scout", "docent", "metr")

#: The name of the tool call a turn's commands are carried in (one per turn: what the agent typed, one per line).
SHELL_TOOL = "shell"

_DEPTH_COLUMNS = ("depth", "depth_low", "depth_high", "status", "ci_low", "ci_high")
_TASK_COLUMNS = ("work", "expert_time_min")


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote, and one line per trial for whatever it could not carry.

    Attributes
    ----------
    peer : str
        ``scout``, ``docent`` or ``metr``.
    out : Path
        What was written (Scout: the database folder; Docent, METR: the JSONL file).
    n_trials, n_runs : int
        Trials given; runs (transcripts, agent runs, METR runs) written.
    left_out : tuple of str
        One line per trial not written (METR: an invalid trial has no score), ``<trial>: <why>``.
    not_carried : tuple of str
        One line per written trial missing a part (images, subagents, an unreadable trajectory...).

    ``n_trials == n_runs + len(left_out)``: no trial is lost unsaid.
    """

    peer: str
    out: Path
    n_trials: int
    n_runs: int
    left_out: tuple[str, ...]
    not_carried: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.n_trials != self.n_runs + len(self.left_out):
            raise RuntimeError(
                f"export {self.peer}: {self.n_trials} trials in, {self.n_runs} runs out and "
                f"{len(self.left_out)} left out do not add up"
            )

    def summary(self) -> str:
        """One line: trials in, runs out, left out, written with losses.

        Examples
        --------
        >>> ExportReport("metr", Path("runs.jsonl"), 3, 2, ("t1: invalid",), ()).summary()
        'metr: 3 trials in, 2 runs written to runs.jsonl, 1 left out, 0 written with parts not carried'
        """
        return (
            f"{self.peer}: {self.n_trials} trials in, {self.n_runs} runs written to {self.out}, "
            f"{len(self.left_out)} left out, {len(self.not_carried)} written with parts not carried"
        )

    def lines(self) -> list[str]:
        """The report as lines: the summary, then one line per trial left out or written with losses."""
        return [
            self.summary(),
            *(f"left out {line}" for line in self.left_out),
            *(f"not carried {line}" for line in self.not_carried),
        ]


@dataclass(frozen=True)
class TrialRecord:
    """One trial as the exports see it: its trials-table row, its task's D, W and checks, its files and turns."""

    row: dict[str, Any]
    task: dict[str, Any]
    files: TrialFiles
    messages: list[dict[str, Any]]
    not_carried: list[str]

    @property
    def name(self) -> str:
        """The trial's name as the report writes it (``job/trial``)."""
        return f"{self.row['job']}/{self.row['trial']}"

    @property
    def success(self) -> bool | None:
        """Passed or not; None for an invalid trial (Harbor's ``reward_valid`` false, or no reward at all)."""
        return None if self.row["status"] == "invalid" else bool(self.row["passed"])

    @property
    def cap_ended_run(self) -> bool:
        """The stated cap ended the run: a capped trial that hit its limit."""
        return self.row["cap"] is not None and bool(self.row["hit_limit"])


def check_inputs(
    trials: pl.DataFrame,
    depth: pl.DataFrame | None,
    tasks: pl.DataFrame | None,
    checks: pl.DataFrame | None,
    function: str,
) -> None:
    """The tables an export takes, each with the columns it reads."""
    check_frame(trials, "trials", function, ("dataset", "task", "job", "trial", "status", "source"))
    if depth is not None:
        check_frame(depth, "depth", function, ("dataset", "task", *_DEPTH_COLUMNS))
    if tasks is not None:
        check_frame(tasks, "tasks", function, ("dataset", "task", *_TASK_COLUMNS))
    if checks is not None:
        check_frame(checks, "checks", function, ("task", "check", "step", "outcome"))


def task_facts(
    depth: pl.DataFrame | None, tasks: pl.DataFrame | None, checks: pl.DataFrame | None
) -> dict[tuple[str | None, str], dict[str, Any]]:
    """Each task's D (and interval), W, expert minutes and check verdicts, by (dataset, task); checks by task."""
    facts: dict[tuple[str | None, str], dict[str, Any]] = {}
    if depth is not None:
        for row in depth.select("dataset", "task", *_DEPTH_COLUMNS).iter_rows(named=True):
            entry = facts.setdefault((row["dataset"], row["task"]), {})
            entry.update({("depth_status" if key == "status" else key): row[key] for key in _DEPTH_COLUMNS})
    if tasks is not None:
        for row in tasks.select("dataset", "task", *_TASK_COLUMNS).iter_rows(named=True):
            facts.setdefault((row["dataset"], row["task"]), {}).update({key: row[key] for key in _TASK_COLUMNS})
    if checks is not None:
        for row in checks.select("task", "check", "step", "outcome").iter_rows(named=True):
            verdicts = facts.setdefault((None, row["task"]), {}).setdefault("checks", [])
            verdicts.append({"check": row["check"], "step": row["step"], "outcome": row["outcome"]})
    return facts


def records(
    trials: pl.DataFrame,
    facts: dict[tuple[str | None, str], dict[str, Any]],
    *,
    messages: bool = True,
) -> Iterator[TrialRecord]:
    """Each trial's record, in the trials table's order (``messages=False``: no files read beyond Harbor's JSON)."""
    for row in trials.iter_rows(named=True):
        task = dict(facts.get((row["dataset"], row["task"]), {}))
        verdicts = facts.get((None, row["task"]), {}).get("checks")
        task["checks"] = verdicts
        folder = trial_dir(row["source"])
        files = read_trial_files(folder)
        lost = files.not_carried()
        chat: list[dict[str, Any]] = []
        if messages:
            chat, note = _messages(folder, files)
            lost.extend([note] if note else [])
        yield TrialRecord(row=row, task=task, files=files, messages=chat, not_carried=lost)


def _messages(folder: str, files: TrialFiles) -> tuple[list[dict[str, Any]], str | None]:
    """The trial's turns as chat messages (a user prompt, then per turn the assistant's message with its
    commands as one tool call, and what it saw back), or a note saying why there are none."""
    if files.trajectory_form is None:
        return [], "no trajectory recorded: the transcript has no messages"
    try:
        turns = read_steps(folder, max_chars=sys.maxsize, prompt=True)
    except LoadError as exc:
        return [], f"trajectory not read ({exc}): the transcript has no messages"
    chat: list[dict[str, Any]] = []
    for turn in turns.iter_rows(named=True):
        if turn["turn"] == 0:
            if turn["observation"] is not None:
                chat.append({"role": "user", "content": turn["observation"]})
            continue
        call_id = f"turn-{turn['turn']}"
        message: dict[str, Any] = {"role": "assistant", "content": turn["message"] or ""}
        if turn["commands"] is not None:
            message["tool_calls"] = [
                {"id": call_id, "function": SHELL_TOOL, "arguments": {"commands": turn["commands"]}}
            ]
        chat.append(message)
        if turn["observation"] is None:
            continue
        if turn["commands"] is not None:
            chat.append(
                {"role": "tool", "content": turn["observation"], "tool_call_id": call_id, "function": SHELL_TOOL}
            )
        else:
            chat.append({"role": "user", "content": turn["observation"]})
    return chat, None


def depthlab_metadata(record: TrialRecord) -> dict[str, Any]:
    """depthlab's facts about one trial and its task, as plain JSON values."""
    row, task = record.row, record.task
    return {
        "dataset": row["dataset"],
        "task": row["task"],
        "job": row["job"],
        "trial": row["trial"],
        "cap": row["cap"],
        "turn_limit": row["turn_limit"],
        "hit_limit": row["hit_limit"],
        "status": row["status"],
        "reward": row["reward"],
        "n_turns": row["n_turns"],
        "n_subagent_turns": row["n_subagent_turns"],
        "depth": task.get("depth"),
        "depth_low": task.get("depth_low"),
        "depth_high": task.get("depth_high"),
        "depth_status": task.get("depth_status"),
        "ci_low": task.get("ci_low"),
        "ci_high": task.get("ci_high"),
        "work": task.get("work"),
        "expert_time_min": task.get("expert_time_min"),
        "checks": task.get("checks"),
        "task_checksum": row["task_checksum"],
        "trajectory_form": record.files.trajectory_form,
        "not_carried": record.not_carried or None,
    }


def rewards_json(row: dict[str, Any]) -> str | None:
    """The trial's score as JSON: its rewards object whole when recorded, else its reward, else None."""
    if row["rewards"]:
        return str(row["rewards"])
    return None if row["reward"] is None else json.dumps(row["reward"])


def output_dir(out: str | Path) -> Path:
    """A folder to write into (made when absent)."""
    path = Path(out)
    path.mkdir(parents=True, exist_ok=True)
    return path
