"""What a changed task's recorded trials are worth to ``depthlab measure``, decided as Harbor's ``run --diff`` does.

The round loop records each task version it measures (:func:`depthlab.io.task_versions.record_versions`,
in the jobs folder), so when a task changes, the trials of its earlier version are sorted by what
changed (:func:`depthlab.io.task_versions.diff_action`): **reused** (no part an agent's trial reads
changed: they count for the task now), **regraded** (only the verifier changed) or **re-run** (the
environment or the instruction changed, or no record of the earlier version's parts). A regrade
grades recorded outputs with the new verifier, which Harbor's ``harbor trial regrade`` can do only
when every verifier of the changed task runs in a container of its own (``separate`` mode, reading
the agent's outputs from ``/logs/artifacts``): :func:`regrade_blocker` is that condition, Harbor's
``check_task_regradable``. A task that fails it is re-run with its reason; one that meets it has
its trials listed in :attr:`VersionDiff.to_regrade`, which the round loop hands to the engine's
``regrade`` (``harbor trial regrade`` on Harbor, a fresh verifier container on the recorded
artifacts on the local runner) before it plans: each regrade is a trial folder of the version now
(``config.source_trial`` naming the trial it grades again), so it counts, and its source, of the
earlier version, is set aside. A trial already regraded (some trial's ``source_trial`` names it) is
not regraded again.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import msgspec
import polars as pl

from depthlab.io.harbor import read_model
from depthlab.io.harbor_records import TrialConfigRecord, TrialResultRecord
from depthlab.io.harbor_task import TaskFormatError, read_task
from depthlab.io.harbor_writer import write_json
from depthlab.io.task_versions import TaskVersion, diff_action, read_versions, record_versions, versions_of

__all__ = [
    "NO_REGRADE",
    "REGRADE_JOB_PREFIX",
    "REUSED_COLUMN",
    "Regrade",
    "VersionDiff",
    "copy_job_config",
    "diff_versions",
    "keep_stated_cap",
    "regrade_blocker",
    "regraded_sources",
]

#: The private tasks column the loop counts reused trials by: the earlier checksums whose trials count now.
REUSED_COLUMN: Final[str] = "_reused_checksums"

#: Why a regradable trial (a separate-mode verifier, :func:`regrade_blocker`) is re-run by an engine
#: with no ``regrade``.
NO_REGRADE: Final[str] = "the engine cannot regrade"


#: The prefix of the job folder a recorded job's regrades go to (beside it, ``regrade__<job>``).
REGRADE_JOB_PREFIX: Final[str] = "regrade__"


@dataclass(frozen=True)
class Regrade:
    """One recorded trial to grade again: its folder, its job's folder and the task folder now."""

    trial_dir: str
    task_dir: str

    @property
    def job_dir(self) -> Path:
        """Where the regrade goes: ``regrade__<job>`` beside the source trial's job (its ``config.json`` copied in,
        as the cap and model of a trial are read from its job's config)."""
        source_job = Path(self.trial_dir).parent
        name = source_job.name
        return source_job.parent / (name if name.startswith(REGRADE_JOB_PREFIX) else REGRADE_JOB_PREFIX + name)


@dataclass
class VersionDiff:
    """The trials of earlier task versions, sorted: counts per action and one line per (task, version)."""

    counts: Counter[str] = field(default_factory=Counter)
    lines: list[str] = field(default_factory=list)
    reused: dict[str, list[str]] = field(default_factory=dict)  # task -> earlier checksums whose trials count
    regrade_reasons: Counter[str] = field(default_factory=Counter)  # why regradable trials were re-run -> trials
    to_regrade: list[Regrade] = field(default_factory=list)  # the engine's regrade grades these
    regraded: int = 0  # trials regraded: by this measurement (the engine's count) and earlier ones
    failed: int = 0  # of to_regrade, those the engine could not regrade (their cells are planned again)

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
            reasons = self.regrade_reasons + Counter({"the regrade failed": self.failed} if self.failed else {})
            why = "; ".join(f"{n} as {reason}" for reason, n in sorted(reasons.items(), key=_most_first))
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


def copy_job_config(source_job: Path, regrade_job: Path) -> None:
    """Copy ``source_job``'s ``config.json`` into ``regrade_job`` (made when absent), unless it has one."""
    regrade_job.mkdir(parents=True, exist_ok=True)
    target = regrade_job / "config.json"
    if not target.exists() and (source_job / "config.json").is_file():
        shutil.copyfile(source_job / "config.json", target)


def keep_stated_cap(source_trial: Path, regraded_trial: Path) -> None:
    """Put ``source_trial``'s ``extra_instructions`` back in ``regraded_trial``'s config (its file and its result's).

    Harbor 0.26's ``harbor trial regrade`` writes them empty, yet the agent's run it keeps was told them:
    the cap stated to it (``stated_cap``) is read from them, and without it the regrade counts for no cap.
    A file that cannot be read as Harbor's is left as it is (the loader reports it).
    """
    source = read_model(source_trial / "config.json", TrialConfigRecord)
    config = read_model(regraded_trial / "config.json", TrialConfigRecord)
    result = read_model(regraded_trial / "result.json", TrialResultRecord)
    if not (isinstance(source, TrialConfigRecord) and source.extra_instructions):
        return
    if isinstance(config, TrialConfigRecord):
        config = msgspec.structs.replace(config, extra_instructions=source.extra_instructions)
        write_json(regraded_trial / "config.json", config)
    if isinstance(result, TrialResultRecord):
        stated = msgspec.structs.replace(result.config, extra_instructions=source.extra_instructions)
        write_json(regraded_trial / "result.json", msgspec.structs.replace(result, config=stated), fsync=True)


def regraded_sources(jobs_dir: str | os.PathLike[str]) -> set[str]:
    """The trial folders (absolute, as written) some trial under ``jobs_dir`` regrades (its ``config.source_trial``).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> jobs = pathlib.Path(tempfile.mkdtemp())
    >>> (jobs / "regrade__j" / "t__1").mkdir(parents=True)
    >>> config = '{"trial_name": "t__1", "task": {}, "source_trial": {"path": "/x/j/t__0"}}'
    >>> _ = (jobs / "regrade__j" / "t__1" / "config.json").write_text(config)
    >>> sorted(regraded_sources(jobs))
    ['/x/j/t__0']
    """
    found: set[str] = set()
    for path in Path(jobs_dir).glob("*/*/config.json"):
        config = read_model(path, TrialConfigRecord)  # not a trial's config: the loader reports what it cannot read
        source = config.source_trial if isinstance(config, TrialConfigRecord) else None
        if source is not None and isinstance(source.get("path"), str):
            found.add(os.path.normpath(source["path"]))
    return found


def diff_versions(
    old: pl.DataFrame, tasks: pl.DataFrame, jobs_dir: str | os.PathLike[str] | None, *, regrades: bool
) -> VersionDiff:
    """Sort ``old`` (trials whose ``task_checksum`` is not their task's now) by what changed since they ran.

    Records the tasks' versions now in ``jobs_dir`` (when there is one) for the next measurement, then
    decides per (task, earlier checksum). ``regrades``: whether the engine can regrade (else a regradable
    trial is re-run, :data:`NO_REGRADE`); the trials to regrade are :attr:`VersionDiff.to_regrade`
    (``old`` needs ``job`` and ``trial`` for them), less those a trial of ``jobs_dir`` regrades already.
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
    done = regraded_sources(jobs_dir) if jobs_dir is not None else set()
    groups = old.group_by("task", "task_checksum", maintain_order=True).agg(
        pl.len().alias("n"), pl.col("job"), pl.col("trial")
    )
    for task, checksum, n, jobs, trials in groups.sort("task", "task_checksum").iter_rows():
        version = now.get(checksum_now.get(task) or "")
        if version is None:
            action, why = "rerun", "the task's version now cannot be read"
        else:
            action, why = diff_action(recorded.get(checksum), version)
        if action == "regrade":
            folder = folder_of[checksum_now[task]]
            blocker = regrade_blocker(folder) or (None if regrades else NO_REGRADE)
            if blocker is None and jobs_dir is not None:
                root = os.path.abspath(jobs_dir)
                paths = [os.path.join(root, str(job), str(trial)) for job, trial in zip(jobs, trials, strict=True)]
                diff.to_regrade += [Regrade(path, folder) for path in paths if os.path.normpath(path) not in done]
                diff.regraded += n - sum(os.path.normpath(path) not in done for path in paths)
                why = f"{why}; regraded"
            else:
                because = blocker or NO_REGRADE
                why = f"{why}; re-run, as {because}"
                diff.regrade_reasons[because] += n
        diff.counts[action] += n
        diff.lines.append(f"  {task} ({checksum[:12]}): {n} trial(s) {_WORDS[action]}: {why}")
        if action == "reuse":
            diff.reused.setdefault(task, []).append(checksum)
    return diff
