"""Readers of run logs and task directories: file formats in, depthlab tables out.

* :func:`read_trials` / :func:`load_trials`: Harbor jobs and trials (TB2), TB1 runs and
  leaderboard trees -> the trials table (``depthlab.schema.TRIALS``).
* :func:`load_tasks` / :func:`read_tasks`: Harbor task dirs (task.toml 1.0 to 1.4) and TB1 task
  dirs (task.yaml) -> the tasks table (``depthlab.schema.TASKS``); :func:`load_task_steps`: the
  declared steps of multi-step tasks (``depthlab.schema.TASK_STEPS``);
  :func:`depthlab.io.harbor_task.read_task`: one Harbor task read whole and typed (for a runner).
* :mod:`depthlab.io.harbor_versions`: what a trial means by the Harbor version that ran its job
  (``harbor_reward_valid``, ``exception_policy``, ``harbor_version``, ``version_note``; the multi-step
  trials of a Harbor older than 0.24 ``invalid`` unless ``include_leaky_steps=True``).
* :func:`load_steps`: the steps of multi-step trials, one row per (trial, declared step)
  (``depthlab.schema.STEPS``).
* :func:`read_steps`: the turns of one trial (ATIF, chat list or terminus episode dirs) as a
  table: message, commands, observation, tokens per turn.
* :mod:`depthlab.io.harbor_writer`: the one writer of the Harbor format (job and trial configs
  and results, ATIF trajectories, reward files, trial names, the stated-cap key), used by the
  runner, the simulator and ``depthlab plan --harbor-configs``.
* :mod:`depthlab.io.trajectories`: whole trajectories read in batch (worker processes, a
  per-trial cache, a size budget) for a measure given as a pure function of the turns (the
  depth proxy's rule lives in :mod:`depthlab.measures.proxy`).
* :class:`Reject` (raised by a reader with the path and reason), :class:`Rejected` (what a
  load reports) and :func:`warning_text` (the one line a warning about them gives) are the
  vocabulary other layers use to report bad files.

Nothing here computes statistics.
"""

from __future__ import annotations

from depthlab.io._errors import (
    DuplicateTrialsWarning,
    FieldNote,
    FieldNotesWarning,
    LoadError,
    Reject,
    Rejected,
    RejectedFilesWarning,
    notes_text,
    warning_text,
)
from depthlab.io._files import MAX_FILE_BYTES
from depthlab.io.atif import read_steps
from depthlab.io.prices import price_provenance, price_source, read_prices
from depthlab.io.status import STATUS_RULES, trial_status
from depthlab.io.step_table import load_steps
from depthlab.io.tasks import TaskLoad, load_task_steps, load_tasks, read_tasks
from depthlab.io.trials import TrialLoad, load_trials, read_trials

__all__ = [
    "MAX_FILE_BYTES",
    "STATUS_RULES",
    "DuplicateTrialsWarning",
    "FieldNote",
    "FieldNotesWarning",
    "LoadError",
    "Reject",
    "Rejected",
    "RejectedFilesWarning",
    "TaskLoad",
    "TrialLoad",
    "load_steps",
    "load_task_steps",
    "load_tasks",
    "load_trials",
    "notes_text",
    "price_provenance",
    "price_source",
    "read_prices",
    "read_steps",
    "read_tasks",
    "read_trials",
    "trial_status",
    "warning_text",
]
