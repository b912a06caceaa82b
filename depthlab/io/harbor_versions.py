"""Harbor's own meaning of a trial, by the Harbor version that ran its job.

Harbor 0.26 writes into each trial's result.json ``reward_valid`` (whether its reward counts) and, on each
recorded exception, its ``policy`` (retry it, grade it, is its reward valid: Harbor's table in
``harbor.models.trial.error_policy``, changed by a job's ``override_error_policy``). An older Harbor wrote
neither, and one older than 0.24 ran multi-step tasks without clearing the grader between steps. The trials
table states the same for every trial, whichever Harbor wrote it:

* ``harbor_reward_valid``: the recorded ``reward_valid``, else Harbor 0.26's rule on the recorded rewards and
  every recorded exception (:meth:`depthlab.io.harbor_models.TrialResultBase.reward_valid`).
* ``exception_policy``: the policy of the trial's exception (the first recorded: the trial's own, then its
  steps' in order), as JSON. Harbor's table with the override the exception records; for a job run by a
  Harbor older than 0.26 (which recorded no policy and had no ``override_error_policy``) ``should_retry`` is
  the job's own retry filter (its config.json's ``retry``: ``exclude_exceptions`` wins, then
  ``include_exceptions``; :class:`RetryConfig`), the one fact 0.26 derives that filter from.
* ``harbor_version``: ``harbor.version`` of the job's lock.json (:class:`depthlab.io.harbor_models.JobLock`);
  null when the job has no lock (depthlab's local runner writes none) or its lock names no version.
* A multi-step trial (more than one declared step) of a job run by a Harbor older than
  :data:`STEPS_ISOLATED_SINCE` is ``invalid`` (``passed`` null), with a ``version_note`` saying why: until
  Harbor emptied ``/tests`` and ``/logs/verifier`` before every agent step, a step's agent could read the
  previous step's tests and reward, so its pass says less than it claims. A trial's result does not record
  its steps' verifier mode, so every such trial is flagged, the separate-verifier ones too.
  ``include_leaky_steps=True`` keeps their status (the note stays). An unknown version flags nothing.

Where the cutoff comes from: Harbor's fix is its pull request #1961 (commit ``4008e2d``, as a public issue
thread names it; Harbor's repository could not be fetched to run ``git tag --contains`` on it). Harbor's
released packages pin the release: the 0.23.0 wheel empties ``/tests`` and ``/logs/verifier`` only as a
shared verifier starts (``Trial._run_step_verifier``), so they stay in the agent's container through the
next step; the 0.24.0 wheel's ``MultiStepTrial._prepare_step`` empties them before the next step's setup and
agent (its ``_shared_verifier_dirs_need_reset`` flag). 0.24.0 is the first release with the fix.

The job files are read once per job, after the rows are in (:func:`apply_versions`), so a job's lock is
never one trial's concern: a lock.json or config.json that cannot be read costs only what it would have
told, with a field note on each of the job's trials.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, TypeVar

import msgspec
import polars as pl

from depthlab.io._errors import Reject
from depthlab.io._files import decode_json, read_bytes_if_exists
from depthlab.io._rows import NOTES
from depthlab.io.harbor_models import (
    ErrorPolicy,
    ErrorPolicyOverride,
    ExceptionInfo,
    JobLock,
    StepResult,
    TrialResultBase,
    policy_for,
)

__all__ = [
    "POLICY_RECORDED_SINCE",
    "STEPS_ISOLATED_SINCE",
    "JobErrorPolicy",
    "JobVersion",
    "RetryConfig",
    "apply_versions",
    "first_exception",
    "harbor_version_key",
    "leaky_steps",
    "leaky_version",
    "policy_json",
    "read_job_version",
]

#: The first Harbor that records ``reward_valid`` and each exception's ``policy`` (and reads
#: ``override_error_policy``); a job run by an older one has its policies computed here.
POLICY_RECORDED_SINCE: Final[tuple[int, ...]] = (0, 26)
#: The first Harbor release that clears ``/tests`` and ``/logs/verifier`` before each agent step of a
#: multi-step trial (harbor#1961, commit 4008e2d: absent from the 0.23.0 wheel, in the 0.24.0 wheel).
STEPS_ISOLATED_SINCE: Final[tuple[int, ...]] = (0, 24)

_T = TypeVar("_T")
_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")


class RetryConfig(msgspec.Struct):
    """A job config's ``retry`` (Harbor's ``RetryConfig``), the part that decides which exceptions are retried."""

    max_retries: int = 0
    include_exceptions: list[str] | None = None
    exclude_exceptions: list[str] | None = None

    def is_retryable(self, exception_type: str) -> bool:
        """Harbor's rule: an excluded type is never retried; else any type when no list includes, or a listed one.

        Examples
        --------
        >>> retry = RetryConfig(exclude_exceptions=["AgentTimeoutError"])
        >>> retry.is_retryable("AgentTimeoutError"), retry.is_retryable("DaytonaError")
        (False, True)
        >>> RetryConfig(include_exceptions=["ApiError"]).is_retryable("DaytonaError")
        False
        """
        if exception_type in (self.exclude_exceptions or ()):
            return False
        return not self.include_exceptions or exception_type in self.include_exceptions


class JobErrorPolicy(msgspec.Struct):
    """A job config's error policy: its ``retry`` and (Harbor >= 0.26) its ``override_error_policy``."""

    retry: RetryConfig | None = None
    override_error_policy: dict[str, ErrorPolicyOverride] | None = None


@dataclass(frozen=True)
class JobVersion:
    """What a job's folder says of the Harbor that ran it: its version, its error policy, and what could not be read."""

    version: str | None = None
    policy: JobErrorPolicy | None = None
    notes: tuple[str, ...] = ()

    def key(self) -> tuple[int, ...] | None:
        return harbor_version_key(self.version)

    def older_than(self, since: tuple[int, ...]) -> bool:
        """Whether the version is known and older than ``since`` (an unknown version is older than nothing)."""
        key = self.key()
        return key is not None and key < since


def harbor_version_key(version: str | None) -> tuple[int, ...] | None:
    """A Harbor version's release as numbers (major, minor, patch), None when it names none.

    A pre-release (``0.24.0rc1``, ``0.24.0.dev3``) counts as its release: the fix is judged by the line it is on.

    Examples
    --------
    >>> harbor_version_key("0.6.6") < harbor_version_key("0.24.0") < harbor_version_key("0.26.0.dev1")
    True
    >>> harbor_version_key("unknown") is None
    True
    """
    if not version:
        return None
    found = _VERSION.match(version.strip())
    if found is None:
        return None
    return tuple(int(part or 0) for part in found.groups())


def first_exception(result: TrialResultBase, steps: Iterable[StepResult] = ()) -> ExceptionInfo | None:
    """The trial's exception the row shows: its own, else its first step's that records one (Harbor's order)."""
    recorded = result.recorded_exceptions(list(steps))
    return recorded[0] if recorded else None


def policy_json(policy: ErrorPolicy | None) -> str | None:
    """An error policy as the ``exception_policy`` column holds it (Harbor's JSON of it).

    Examples
    --------
    >>> from depthlab.io.harbor_models import policy_for
    >>> policy_json(policy_for("AgentTimeoutError"))
    '{"should_retry":false,"should_grade":true,"has_valid_reward":true}'
    """
    return None if policy is None else msgspec.json.encode(policy).decode()


def read_job_version(job_dir: str) -> JobVersion:
    """The Harbor version (lock.json) of the job folder ``job_dir`` and, for a Harbor older than 0.26, its error
    policy (config.json).

    A file that is absent says nothing; one that cannot be read is a note (``"harbor_version: <reason>
    (<path>)"``), never an error.
    """
    notes: list[str] = []
    lock = _read(os.path.join(job_dir, "lock.json"), JobLock, notes)
    version = lock.harbor.version if lock is not None and lock.harbor is not None else None
    key = harbor_version_key(version)
    if version is not None and key is None:
        notes.append(f"harbor_version: {version!r} names no release: read as unknown ({job_dir}/lock.json)")
    policy = None
    if key is not None and key < POLICY_RECORDED_SINCE:  # (only an older job's policy is computed here)
        policy = _read(os.path.join(job_dir, "config.json"), JobErrorPolicy, notes)
    return JobVersion(version, policy, tuple(notes))


def _read(path: str, type_: type[_T], notes: list[str]) -> _T | None:
    try:
        data = read_bytes_if_exists(path, [])
        return None if data is None else decode_json(data, path, type_)
    except Reject as exc:
        notes.append(f"harbor_version: {exc.reason} ({exc.path})")
        return None


def leaky_steps(job: JobVersion, n_steps: int | None) -> bool:
    """Whether a trial of ``n_steps`` declared steps in ``job`` ran before Harbor isolated its steps.

    Examples
    --------
    >>> leaky_steps(JobVersion("0.23.0"), 2), leaky_steps(JobVersion("0.24.0"), 2), leaky_steps(JobVersion(), 2)
    (True, False, False)
    """
    return n_steps is not None and n_steps > 1 and job.older_than(STEPS_ISOLATED_SINCE)


def leaky_version(version: str | None) -> bool:
    """Whether the Harbor ``version`` ran multi-step trials before it isolated their steps (unknown: no).

    Examples
    --------
    >>> leaky_version("0.23.0"), leaky_version("0.24.0"), leaky_version(None)
    (True, False, False)
    """
    return JobVersion(version).older_than(STEPS_ISOLATED_SINCE)


def _leak_note(version: str, kept: bool) -> str:
    outcome = "kept (include_leaky_steps=True)" if kept else "invalid (include_leaky_steps=True keeps it)"
    since = ".".join(map(str, STEPS_ISOLATED_SINCE))
    return (
        f"multi-step trial run by Harbor {version}, before {since} emptied /tests and /logs/verifier between "
        f"steps: a step's agent could read the previous step's tests and reward; {outcome}"
    )


def _older_policy(job: JobVersion, exception: str) -> str | None:
    """A pre-0.26 job's policy of ``exception``: Harbor's table, ``should_retry`` from the job's retry filter."""
    table = policy_for(exception)
    retry = job.policy.retry if job.policy is not None else None
    if retry is None:
        return policy_json(table)
    return policy_json(
        ErrorPolicy(
            should_retry=retry.is_retryable(exception),
            should_grade=table.should_grade,
            has_valid_reward=table.has_valid_reward,
        )
    )


# A trial folder's row names <job>/<trial>/result.json; an entry of an older job's result.json names
# <job>/result.json#trial_results[<i>]. Any other source (TB1's results.json) is no Harbor job's.
_TRIAL_FILE = os.sep + "result.json"
_EMBEDDED = "#trial_results["
_LAST_PART = r"[\\/][^\\/]*$" if os.sep == "\\" else r"/[^/]*$"


def _job_dirs(source: pl.Series) -> pl.Series:
    """Each row's job folder (null for a row of no Harbor job's), from its ``source``.

    A suffix stripped and one anchored replace: the three replaces this took at first cost 10x as much
    over 100,000 rows (0.43 s against 0.04 s, measured on one loaded machine)."""
    trial_file = pl.col("source").str.ends_with(_TRIAL_FILE)
    trial_dir = pl.col("source").str.strip_suffix(_TRIAL_FILE)
    frame = source.to_frame("source")
    folders = frame.select(
        pl.when(trial_file).then(trial_dir.str.replace(_LAST_PART, "")).otherwise(None).alias("job_dir")
    ).to_series()
    embedded = frame.select(pl.col("source").str.contains(_EMBEDDED, literal=True)).to_series()
    if embedded.any():  # (rare: an older job's result.json holding its trials)
        where = embedded.arg_true()
        files = [text.rpartition(_EMBEDDED)[0] for text in source.gather(where).to_list()]
        folders = folders.scatter(where, [os.path.dirname(file) for file in files])
    return folders


def apply_versions(table: pl.DataFrame, *, include_leaky_steps: bool = False) -> pl.DataFrame:
    """``table`` (rows of the loaders, with ``source``) with ``harbor_version`` and ``version_note`` set, the
    pre-0.26 jobs' ``exception_policy`` from their retry filter, and the leaky multi-step trials ``invalid``
    (unless ``include_leaky_steps``); the job files' notes added to the rows' field notes.

    Each job folder is read once (:func:`read_job_version`); rows that are no Harbor job's are left as they are.
    """
    unknown = [pl.lit(None, pl.String()).alias("harbor_version"), pl.lit(None, pl.String()).alias("version_note")]
    if table.height == 0:
        return table.with_columns(unknown)
    job_dir = _job_dirs(table["source"])
    jobs = {folder: read_job_version(folder) for folder in job_dir.unique().drop_nulls().to_list()}
    if not any(job.version is not None or job.notes for job in jobs.values()):
        return table.with_columns(unknown)  # no job names its Harbor (TB1, depthlab's runner, a results-only tree)
    # small per-job and per-(job, exception) lookups, joined back: the work is per job, not per trial
    versions = {folder: job.version for folder, job in jobs.items()}
    notes = {folder: "\n".join(job.notes) for folder, job in jobs.items() if job.notes}
    older = {folder for folder, job in jobs.items() if job.older_than(POLICY_RECORDED_SINCE)}
    leaky = {folder for folder, job in jobs.items() if job.older_than(STEPS_ISOLATED_SINCE)}
    frame = table.with_columns(job_dir.alias("_job_dir"))
    job = pl.col("_job_dir")
    version = job.replace_strict(versions, default=None, return_dtype=pl.String())
    is_leaky = job.is_in(list(leaky)) & (pl.col("n_steps") > 1)
    columns = [version.alias("harbor_version")]
    notes_expr = job.replace_strict(notes, default=None, return_dtype=pl.String()) if notes else None
    if leaky:
        leak_notes = {folder: _leak_note(jobs[folder].version or "", include_leaky_steps) for folder in leaky}
        leak_note = job.replace_strict(leak_notes, default=None, return_dtype=pl.String())
        columns.append(pl.when(is_leaky).then(leak_note).otherwise(None).alias("version_note"))
        if not include_leaky_steps:
            columns += [
                pl.when(is_leaky).then(pl.lit("invalid")).otherwise(pl.col("status")).alias("status"),
                pl.when(is_leaky).then(None).otherwise(pl.col("passed")).alias("passed"),
            ]
    else:
        columns.append(pl.lit(None, pl.String()).alias("version_note"))
    if older:
        pairs = frame.filter(job.is_in(list(older)) & pl.col("exception").is_not_null()).select("_job_dir", "exception")
        lookup = {
            f"{folder}\x1f{exception}": _older_policy(jobs[folder], exception)
            for folder, exception in pairs.unique().iter_rows()
        }
        key = pl.concat_str(job, pl.lit("\x1f"), pl.col("exception"))
        recomputed = key.replace_strict(lookup, default=None, return_dtype=pl.String())
        columns.append(pl.coalesce(recomputed, pl.col("exception_policy")).alias("exception_policy"))
    if notes_expr is not None and NOTES in frame.columns:
        columns.append(
            pl.when(notes_expr.is_null())
            .then(pl.col(NOTES))
            .when(pl.col(NOTES).is_null())
            .then(notes_expr)
            .otherwise(pl.concat_str(pl.col(NOTES), pl.lit("\n"), notes_expr))
            .alias(NOTES)
        )
    return frame.with_columns(columns).drop("_job_dir")
