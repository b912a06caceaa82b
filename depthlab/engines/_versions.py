"""What a changed task's recorded trials are worth to ``depthlab measure``, decided as Harbor's ``run --diff`` does.

The round loop records each task version it measures (:func:`depthlab.io.task_versions.record_versions`,
in the jobs folder), so when a task changes, the trials of its earlier version are sorted by what
changed (:func:`depthlab.io.task_versions.diff_action`): **reused** (no part an agent's trial reads
changed: they count for the task now), **regraded** (only the verifier changed) or **re-run** (the
environment or the instruction changed, or no record of the earlier version's parts). A regrade
needs the trial's final state: the local runner keeps none (its container is removed when the trial
ends), and Harbor's ``harbor trial regrade`` grades only a separate-mode verifier from recorded
artifacts, which the Harbor engine does not call yet; so on both engines a regrade is re-run, and
the summary says so (:data:`REGRADE_AS_RERUN`).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Final

import polars as pl

from depthlab.io.task_versions import TaskVersion, diff_action, read_versions, record_versions, versions_of

__all__ = ["REGRADE_AS_RERUN", "REUSED_COLUMN", "VersionDiff", "diff_versions"]

#: The private tasks column the loop counts reused trials by: the earlier checksums whose trials count now.
REUSED_COLUMN: Final[str] = "_reused_checksums"

#: Why a regrade is a re-run, per engine (the same rule on both: neither keeps what a regrade needs).
REGRADE_AS_RERUN: Final[dict[str, str]] = {
    "local": "the local runner keeps no trial's final state (its container is removed when the trial ends)",
    "harbor": "harbor trial regrade grades a separate-mode verifier from recorded artifacts only, "
    "and the Harbor engine does not call it yet",
}


@dataclass
class VersionDiff:
    """The trials of earlier task versions, sorted: counts per action and one line per (task, version)."""

    counts: Counter[str] = field(default_factory=Counter)
    lines: list[str] = field(default_factory=list)
    reused: dict[str, list[str]] = field(default_factory=dict)  # task -> earlier checksums whose trials count

    @property
    def regraded(self) -> int:
        """Trials regraded (none yet: a regrade is re-run on both engines, :data:`REGRADE_AS_RERUN`)."""
        return 0

    @property
    def rerun(self) -> int:
        """Trials whose cells are planned again: the re-runs and the regrades re-run."""
        return self.counts["rerun"] + self.counts["regrade"] - self.regraded

    def render(self, engine: str) -> str:
        """``earlier task versions: N trial(s) reused, N regraded, N re-run`` and why regrades were re-run."""
        line = (
            f"earlier task versions: {self.counts['reuse']} trial(s) reused, {self.regraded} regraded, "
            f"{self.rerun} re-run"
        )
        regradable = self.counts["regrade"] - self.regraded
        if regradable:
            why = REGRADE_AS_RERUN.get(engine, "the engine cannot regrade")
            line += f" ({regradable} of them changed only in the verifier, re-run: {why})"
        return line


_WORDS: Final[dict[str, str]] = {"reuse": "reused", "regrade": "regraded", "rerun": "re-run"}


def diff_versions(old: pl.DataFrame, tasks: pl.DataFrame, jobs_dir: object, engine: str) -> VersionDiff:
    """Sort ``old`` (trials whose ``task_checksum`` is not their task's now) by what changed since they ran.

    Records the tasks' versions now in ``jobs_dir`` (when there is one) for the next measurement, then
    decides per (task, earlier checksum). ``engine`` names why a regrade is a re-run.
    """
    if not {"checksum", "source"} <= set(tasks.columns):
        return VersionDiff()  # tasks not read from folders (a simulation): no version to decide by
    pairs = [  # a task's source is its task.toml (or task.yaml): the version is its folder's
        (checksum, source if os.path.isdir(source) else os.path.dirname(source))
        for checksum, source in tasks.select("checksum", "source").iter_rows()
        if checksum is not None and source is not None
    ]
    now = versions_of(pairs)
    recorded: dict[str, TaskVersion] = {}
    if jobs_dir is not None:
        recorded = read_versions(str(jobs_dir))
        record_versions(str(jobs_dir), now)
    diff = VersionDiff()
    if old.height == 0:
        return diff
    checksum_now = dict(tasks.select("task", "checksum").iter_rows())
    groups = old.group_by("task", "task_checksum", maintain_order=True).agg(pl.len().alias("n"))
    for task, checksum, n in groups.sort("task", "task_checksum").iter_rows():
        version = now.get(checksum_now.get(task) or "")
        if version is None:
            action, why = "rerun", "the task's version now cannot be read"
        else:
            action, why = diff_action(recorded.get(checksum), version)
        if action == "regrade":
            why = f"{why}; re-run, as {REGRADE_AS_RERUN.get(engine, 'the engine cannot regrade')}"
        diff.counts[action] += n
        diff.lines.append(f"  {task} ({checksum[:12]}): {n} trial(s) {_WORDS[action]}: {why}")
        if action == "reuse":
            diff.reused.setdefault(task, []).append(checksum)
    return diff
