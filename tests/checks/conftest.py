"""The planted tasks' local checks, run once per test run and read by every module of checks that needs them.

``check_tasks`` on the planted tasks (:mod:`depthlab.simulate.checks`) builds their images and replays
each step in Docker: minutes of work. ``test_checks_planted`` reads the full run, ``test_checks_harbor``
sets Harbor's table beside the local one and ``test_checks_reuse`` starts its check with reuse from its
replays; they read the run made here once (``once_per_run``, tests/conftest.py: once per test run, also
across pytest-xdist's workers). A module that needs a subset
of the checks (fewer oracle replays, fewer tasks) checks them again on a copy of this run's jobs folder
(``jobs``): each replay it needs is found there and reused (``replays_reused``), none is run twice.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from depthlab.checks import CheckReport, check_tasks
from depthlab.simulate.checks import write_bad_tasks, write_planted_tasks

#: The checks of the bad inputs (:data:`depthlab.simulate.checks.BAD`), on both engines.
BAD_CHECKS = ["oracle", "before", "key_removed"]
#: Oracle replays of the planted and bad runs: one. No test of them reads a second (the coin-flip task's
#: ten, test_checks_planted, and the CLI's default two, test_checks_resume, are the tests of ``repeat``).
PLANTED_REPEAT = BAD_REPEAT = 1


@pytest.fixture(scope="session")
def planted_run(once_per_run: Any, userland: str, docker_client: Any) -> dict[str, Any]:
    """Every planted task but the coin-flip one, checked on the local engine at one oracle replay
    (:data:`PLANTED_REPEAT`): ``tasks`` (name -> folder, the coin-flip task's too), ``jobs`` (the replays),
    ``report``."""

    def compute(work: Path) -> dict[str, Any]:
        tasks = write_planted_tasks(work / "tasks", userland)
        report = check_tasks(
            [path for name, path in tasks.items() if name != "flaky"],
            jobs_dir=work / "jobs",
            docker_client=docker_client,
            repeat=PLANTED_REPEAT,
        )
        return {"tasks": {name: str(path) for name, path in tasks.items()}, "jobs": str(work / "jobs"),
                **_saved(report, work / "report")}  # fmt: skip

    record = once_per_run("checks-planted", compute)
    return {"tasks": {name: Path(path) for name, path in record["tasks"].items()}, "jobs": Path(record["jobs"]),
            "report": _report(record)}  # fmt: skip


@pytest.fixture(scope="session")
def bad_run(once_per_run: Any, planted_run: dict[str, Any], userland: str, docker_client: Any) -> dict[str, Any]:
    """The bad inputs and the planted ``unmarked`` task checked together on the local engine (:data:`BAD_CHECKS`,
    :data:`BAD_REPEAT`; the unmarked task's replays are the planted run's): ``bad`` (name -> folder), ``checks``,
    ``repeat``, ``report``."""

    def compute(work: Path) -> dict[str, Any]:
        bad = write_bad_tasks(work / "bad", userland)
        jobs = work / "jobs"
        shutil.copytree(planted_run["jobs"], jobs)
        report = check_tasks(
            [*bad.values(), planted_run["tasks"]["unmarked"]],
            jobs_dir=jobs,
            docker_client=docker_client,
            checks=BAD_CHECKS,
            repeat=BAD_REPEAT,
        )
        return {"bad": {name: str(path) for name, path in bad.items()}, **_saved(report, work / "report")}

    record = once_per_run("checks-bad", compute)
    bad = {name: Path(path) for name, path in record["bad"].items()}
    return {"bad": bad, "checks": BAD_CHECKS, "repeat": BAD_REPEAT, "report": _report(record)}


def _saved(report: CheckReport, stem: Path) -> dict[str, Any]:
    report.table.write_parquet(stem.with_suffix(".parquet"))
    return {"table": str(stem.with_suffix(".parquet")), "problems": report.problems,
            "replays_run": report.replays_run, "replays_reused": report.replays_reused}  # fmt: skip


def _report(record: dict[str, Any]) -> CheckReport:
    return CheckReport(
        pl.read_parquet(record["table"]),
        list(record["problems"]),
        replays_run=record["replays_run"],
        replays_reused=record["replays_reused"],
    )
