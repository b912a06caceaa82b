"""What a changed task's recorded trials are worth to ``depthlab measure``, decided as Harbor's ``run --diff`` does.

The round loop records each task version it measures (:func:`depthlab.io.task_versions.record_versions`,
in the jobs folder), so when a task changes, the trials of its earlier version are sorted by what
changed (:func:`depthlab.io.task_versions.diff_action`): **reused** (no part an agent's trial reads
changed: they count for the task now), **regraded** (only the verifier changed) or **re-run** (the
environment or the instruction changed, or no record of the earlier version's parts). A regrade
grades recorded outputs with the new verifier, which Harbor's ``harbor trial regrade`` can do only
when every verifier of the changed task runs in a container of its own (``separate`` mode, reading
the agent's outputs from ``/logs/artifacts``): :func:`regrade_blocker` is that condition, Harbor's
``check_task_regradable``. A task that fails it is re-run with its reason; one that meets it is
re-run too for now, as neither engine regrades yet (:data:`REGRADE_AS_RERUN`): the local runner
keeps no trial's artifacts, and the Harbor engine does not call ``harbor trial regrade``.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Final

import polars as pl

from depthlab.io.harbor_task import TaskFormatError, read_task
from depthlab.io.task_versions import TaskVersion, diff_action, read_versions, record_versions, versions_of

__all__ = ["REGRADE_AS_RERUN", "REUSED_COLUMN", "VersionDiff", "diff_versions", "regrade_blocker"]

#: The private tasks column the loop counts reused trials by: the earlier checksums whose trials count now.
REUSED_COLUMN: Final[str] = "_reused_checksums"

#: Why a regradable trial (a separate-mode verifier, :func:`regrade_blocker`) is re-run, per engine.
REGRADE_AS_RERUN: Final[dict[str, str]] = {
    "local": "the local runner keeps no trial's /logs/artifacts to regrade from (its container is removed)",
    "harbor": "the Harbor engine does not call harbor trial regrade yet",
}


@dataclass
class VersionDiff:
    """The trials of earlier task versions, sorted: counts per action and one line per (task, version)."""

    counts: Counter[str] = field(default_factory=Counter)
    lines: list[str] = field(default_factory=list)
    reused: dict[str, list[str]] = field(default_factory=dict)  # task -> earlier checksums whose trials count
    regrade_reasons: Counter[str] = field(default_factory=Counter)  # why regradable trials were re-run -> trials

    @property
    def regraded(self) -> int:
        """Trials regraded (none yet: a regrade is re-run on both engines, :data:`REGRADE_AS_RERUN`)."""
        return 0

    @property
    def rerun(self) -> int:
        """Trials whose cells are planned again: the re-runs and the regrades re-run."""
        return self.counts["rerun"] + self.counts["regrade"] - self.regraded

    def render(self) -> str:
        """``earlier task versions: N trial(s) reused, N regraded, N re-run`` and why regrades were re-run."""
        line = (
            f"earlier task versions: {self.counts['reuse']} trial(s) reused, {self.regraded} regraded, "
            f"{self.rerun} re-run"
        )
        regradable = self.counts["regrade"] - self.regraded
        if regradable:
            why = "; ".join(f"{n} as {reason}" for reason, n in sorted(self.regrade_reasons.items(), key=_most_first))
            line += f" ({regradable} of them changed only in the verifier, re-run: {why})"
        return line


def regrade_blocker(task_dir: str | os.PathLike[str]) -> str | None:
    """Why the task at ``task_dir`` cannot be regraded from recorded artifacts, or None when it can.

    Harbor 0.26's ``harbor.trial.regrade.check_task_regradable``: the task's verifier (each step's, on a
    multi-step task) must run in ``separate`` mode, since a shared-mode verifier needs the agent's live
    container, which no longer exists.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> task = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (task / "task.toml").write_text('schema_version = "1.4"\\n[verifier]\\nenvironment_mode = "separate"\\n')
    >>> regrade_blocker(task) is None
    True
    >>> _ = (task / "task.toml").write_text('schema_version = "1.4"\\n')
    >>> print(regrade_blocker(task))
    its verifier runs in shared mode (in the agent\'s container, gone once the trial ended)
    """
    try:
        task = read_task(task_dir)
    except TaskFormatError as error:
        return f"its task.toml cannot be read: {error}"
    if task.steps:
        shared = [step.name for step in task.steps if step.verifier_mode != "separate"]
        if shared:
            return f"its step(s) {', '.join(shared)} verify in shared mode (in the agent's container, gone)"
        return None
    if task.verifier_mode != "separate":
        return "its verifier runs in shared mode (in the agent's container, gone once the trial ended)"
    return None


def _most_first(reason_count: tuple[str, int]) -> tuple[int, str]:
    return -reason_count[1], reason_count[0]


_WORDS: Final[dict[str, str]] = {"reuse": "reused", "regrade": "regraded", "rerun": "re-run"}


def diff_versions(old: pl.DataFrame, tasks: pl.DataFrame, jobs_dir: object, engine: str) -> VersionDiff:
    """Sort ``old`` (trials whose ``task_checksum`` is not their task's now) by what changed since they ran.

    Records the tasks' versions now in ``jobs_dir`` (when there is one) for the next measurement, then
    decides per (task, earlier checksum). ``engine`` names why a regradable trial is re-run.
    """
    if not {"checksum", "source"} <= set(tasks.columns):
        return VersionDiff()  # tasks not read from folders (a simulation): no version to decide by
    pairs = [  # a task's source is its task.toml (or task.yaml): the version is its folder's
        (checksum, source if os.path.isdir(source) else os.path.dirname(source))
        for checksum, source in tasks.select("checksum", "source").iter_rows()
        if checksum is not None and source is not None
    ]
    now = versions_of(pairs)
    folder_of = dict(pairs)
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
            blocker = regrade_blocker(folder_of[checksum_now[task]])
            because = blocker or REGRADE_AS_RERUN.get(engine, "the engine cannot regrade")
            why = f"{why}; re-run, as {because}"
            diff.regrade_reasons[because] += n
        diff.counts[action] += n
        diff.lines.append(f"  {task} ({checksum[:12]}): {n} trial(s) {_WORDS[action]}: {why}")
        if action == "reuse":
            diff.reused.setdefault(task, []).append(checksum)
    return diff
