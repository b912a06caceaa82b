"""Task checks by replay: do a task's verifiers see its key steps? (``depthlab check``).

:func:`check_tasks` replays every task's reference solutions, whole and edited, in fresh
containers and reads each step's verdict; the table (:data:`depthlab.schema.CHECKS`) has one row per
task, step and check. The modules: ``script`` (a solution's key-step mark and top-level commands),
``replay`` (the resumable jobs folder, the replays handed to an engine and read back; the engines
run them, :mod:`depthlab.engines.replays`), ``causes`` (a failed step's cause in one line), ``static``
(the instruction rules and ``harbor lint``), ``core`` (the checks and the table, the same on both engines).
"""

from depthlab.checks.core import (
    CHECK_NAMES,
    CheckReport,
    check_tasks,
    faults_found,
    read_checks,
    select_checks,
    summarize_checks,
)
from depthlab.checks.script import KEY_BEGIN, KEY_END, MarkError

__all__ = [
    "CHECK_NAMES",
    "KEY_BEGIN",
    "KEY_END",
    "CheckReport",
    "MarkError",
    "check_tasks",
    "faults_found",
    "read_checks",
    "select_checks",
    "summarize_checks",
]
