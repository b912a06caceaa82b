"""The mutants of step s from a snapshot of steps 1..s-1 (the local engine's reuse) give the verdicts of
replaying every mutant from scratch: on a planted task, on a task whose earlier step leaves files the
step needs, and on one whose earlier step leaves a process running (which a snapshot cannot carry:
the check finds it and replays that step's mutants from scratch, and says so).

The planted tasks are the planted run's (tests/checks/conftest.py): the check with reuse starts from a copy
of that run's replays (made with reuse, the default), so their mutants are read from there, not replayed
again; every mutant is replayed from scratch for the check without reuse."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from depthlab.checks import check_tasks
from depthlab.checks.replay import JOB_NAME, read_replay
from depthlab.engines.replays import FROM_SNAPSHOT, SNAPSHOT_LABEL

pytestmark = pytest.mark.docker

_HEAD = 'schema_version = "1.4"\n[task]\nname = "reuse/{name}"\n'
_TAIL = (
    "[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 30.0\n"
    '[environment]\ncpus = 1\nmemory_mb = 512\nnetwork_mode = "no-network"\n'
)


def _reward(condition: str) -> str:
    return (
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        f"if {condition}; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
    )


def _two_steps(root: Path, name: str, image: str, first: tuple[str, str], second: tuple[str, str]) -> Path:
    """A two-step task: each step's (test condition, solve.sh body)."""
    folder = root / name
    files = {
        "environment/Dockerfile": f"FROM {image}\nRUN mkdir -p /app\nWORKDIR /app\n",
        "task.toml": _HEAD.format(name=name)
        + "".join(f'[[steps]]\nname = "{step}"\nmin_reward = 1.0\n' for step in ("first", "second"))
        + _TAIL,
    }
    for step, (condition, body) in zip(("first", "second"), (first, second), strict=True):
        files[f"steps/{step}/instruction.md"] = f"Do the {step} step."
        files[f"steps/{step}/tests/test.sh"] = _reward(condition)
        files[f"steps/{step}/solution/solve.sh"] = "#!/bin/bash\n" + body
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def tasks(planted_run: dict[str, Any], userland: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reuse")
    planted = planted_run["tasks"]
    layered = _two_steps(
        root,
        "layered",
        userland,
        (
            '[ -s /app/data/seed.txt ] && [ "$(cat /app/data/seed.txt)" = 42 ]',
            "mkdir -p /app/data\necho 42 > /app/data/seed.txt\n",
        ),
        (
            '[ "$(cat /app/data/double.txt 2>/dev/null)" = 84 ] && [ -f /app/data/log.txt ]',
            "cd /app/data\n"
            "echo $(( $(cat seed.txt) * 2 )) > double.txt\n"
            "echo done > log.txt\n"
            "echo unused > extra.txt\n"  # a silent line: no check reads it
            "cp double.txt double.bak\n",  # silent too
        ),
    )
    server = _two_steps(
        root,
        "server",
        userland,
        (
            "[ -f /app/beat ]",
            "setsid sh -c 'while :; do date +%s%N > /app/beat; sleep 0.2; done' >/dev/null 2>&1 < /dev/null &\n",
        ),
        (
            # the beat still changes: the process step 1 left running is needed
            'a=$(cat /app/beat); sleep 1; [ "$(cat /app/beat)" != "$a" ] && [ -f /app/mark ]',
            "touch /app/mark\necho note > /app/note.txt\n",
        ),
    )
    return {"clean": planted["clean"], "passes-before": planted["passes-before"], "layered": layered, "server": server}


def _mutant_outcomes(report: Any) -> dict[tuple[str, str], tuple[bool, str | None]]:
    """(task, mutant key) -> (its step passed, how it started), from the trials of the report's mutants rows
    (the job holds the planted run's other replays too)."""
    found = {}
    mutants = report.table.filter(pl.col("check") == "mutants")["trials"].drop_nulls()
    for trial in sorted({Path(path) for joined in mutants for path in joined.split(";")}):
        result = trial / "result.json"
        config = json.loads((result.parent / "config.json").read_text())
        key = config["agent"]["kwargs"]["replay"]
        if not key.startswith("mutant:"):
            continue
        step = key.split(":")[1]
        replay = read_replay(key, result.parent, reused=False)
        task = json.loads(result.read_text())["task_name"]
        run = replay.steps.get(step)
        found[(task, key)] = (run is not None and run.passed, replay.start)
    return found


@pytest.fixture(scope="module")
def runs(
    tasks: dict[str, Path], planted_run: dict[str, Any], docker_client: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[bool, Any]:
    out = {}
    for reuse in (False, True):
        jobs = tmp_path_factory.mktemp(f"jobs-reuse-{reuse}")
        if reuse:  # the planted tasks' replays with reuse: the planted run's
            shutil.copytree(planted_run["jobs"], jobs, dirs_exist_ok=True)
        report = check_tasks(
            list(tasks.values()), jobs_dir=jobs, docker_client=docker_client, checks=["mutants"], repeat=1, reuse=reuse
        )
        out[reuse] = (report, jobs)
    return out


def _verdicts(table: pl.DataFrame) -> list[tuple[Any, ...]]:
    rows = table.filter(pl.col("check") == "mutants").sort("task", "step")
    return list(rows.select("task", "step", "outcome", "caught", "total").iter_rows())


def test_reuse_gives_the_from_scratch_verdicts_mutant_by_mutant(runs: dict[bool, Any]) -> None:
    (scratch, _), (reused, _) = runs[False], runs[True]
    assert _verdicts(reused.table) == _verdicts(scratch.table)
    by_scratch, by_reuse = _mutant_outcomes(scratch), _mutant_outcomes(reused)
    assert {key: passed for key, (passed, _) in by_reuse.items()} == {
        key: passed for key, (passed, _) in by_scratch.items()
    }
    layered = {row[1]: row for row in _verdicts(reused.table) if row[0] == "layered"}
    assert layered["second"][2:] == ("fault", 3, 5)  # echo unused and cp are silent; cd, double, log caught
    assert all(start is None for _, start in by_scratch.values())


def test_reuse_starts_from_a_snapshot_unless_a_process_is_left_running(runs: dict[bool, Any]) -> None:
    report, _ = runs[True]
    starts = {key: start for key, (_, start) in _mutant_outcomes(report).items()}
    second = {task: start for (task, key), start in starts.items() if key.startswith("mutant:second:")}
    assert second["reuse/layered"] == FROM_SNAPSHOT
    assert (second["reuse/server"] or "").startswith("from scratch: the earlier steps leave processes running")
    assert "while :" in (second["reuse/server"] or "")
    assert [start for (task, key), start in starts.items() if task == "planted/clean" and ":use:" in key] == [
        FROM_SNAPSHOT
    ]
    assert all(start is None for (_, key), start in starts.items() if key.startswith(("mutant:first:", "mutant:make:")))
    evidence = dict(
        report.table.filter(pl.col("check") == "mutants")
        .select(pl.col("task") + "@" + pl.col("step"), "evidence")
        .iter_rows()
    )
    assert evidence["layered@second"].endswith("; from a snapshot of step 1")
    assert "from scratch: the earlier steps leave processes running" in evidence["server@second"]
    server = [row for row in _verdicts(report.table) if row[:2] == ("server", "second")]
    # from scratch the beat runs: only the touch is caught (the note is silent), not both as a snapshot would say
    assert server == [("server", "second", "fault", 1, 2)]


def test_the_snapshots_are_removed_when_the_check_ends(runs: dict[bool, Any], docker_client: Any) -> None:
    _, jobs = runs[True]
    left = docker_client.images.list(filters={"label": f"{SNAPSHOT_LABEL}={(jobs / JOB_NAME).resolve()}"})
    assert left == []
