"""The misreadings of issue 36, each shown on what Harbor 0.26 itself writes, and fixed through
:mod:`depthlab.io.harbor_models`.

One real ``harbor run`` of the oracle, started (as a user starts it) from its own folder with relative
paths (``jobs``, ``tasks``): a 3-step task whose second step's reference solution is wrong (its gate
stops the trial before step 3) and a task whose verifier outlives its timeout. ``harbor tasks init``
writes the tasks whose instructions carry canary lines; Harbor's own ``Task`` says what the agent sees,
which solution its oracle runs on Windows and which schema version an unversioned task.toml has.

Skips with the reason without Harbor, Docker or the userland image; fails instead under
``DEPTHLAB_REQUIRE_HARBOR=1`` / ``DEPTHLAB_REQUIRE_DOCKER=1``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from harbor_runs import OFFLINE, decode_harbor_files, tasks_init, write_multistep_task, write_single_task

import depthlab as dl
from depthlab.io import harbor_writer
from depthlab.io.harbor_models import TrialResult, strip_canary
from depthlab.io.tasks import count_work

pytestmark = pytest.mark.harbor


def _side(harbor_python: Path, code: str, *args: str) -> str:
    """Run ``code`` in Harbor's side venv (Harbor's own answer), its stdout."""
    done = subprocess.run(
        [str(harbor_python), "-c", code, *args],
        env={**os.environ, **OFFLINE},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def relative_job(userland, harbor_cmd, tmp_path_factory) -> Path:
    """Harbor run from its own folder, every path relative: ``jobs/io36`` holds the trials."""
    root = tmp_path_factory.mktemp("harbor-io36")
    write_multistep_task(root / "tasks", "io36-gated", userland, wrong=[2])
    slow = write_single_task(root / "tasks", "io36-slow-verifier", userland)
    (slow / "tests" / "test.sh").write_text("#!/bin/bash\nsleep 60\necho 1 > /logs/verifier/reward.txt\n")
    toml = slow / "task.toml"
    toml.write_text(
        toml.read_text().replace(
            '[verifier]\nenvironment_mode = "shared"\ntimeout_sec = 60.0',
            ('[verifier]\nenvironment_mode = "shared"\ntimeout_sec = 3.0'),
        )
    )
    config = harbor_writer.job_config(
        "io36",
        "jobs",
        [harbor_writer.agent_config("oracle", None)],
        datasets=[harbor_writer.dataset_config("tasks", None)],
        n_concurrent_trials=2,
    )
    harbor_writer.write_json(root / "io36.json", config)
    done = subprocess.run(
        [harbor_cmd, "run", "--config", "io36.json", "--yes"],
        cwd=root,
        env={**os.environ, **OFFLINE},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    job = root / "jobs" / "io36"
    if len(list(job.glob("*/result.json"))) != 2:
        raise AssertionError(
            f"harbor run wrote no trials ({done.returncode}): {done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return job


def _harbor_results(job: Path) -> dict[str, dict]:
    return {
        json.loads(path.read_text())["task_name"].rsplit("/", 1)[-1]: json.loads(path.read_text())
        for path in job.glob("*/result.json")
    }


@pytest.mark.docker
def test_depthlabs_model_decodes_every_file_this_harbor_run_wrote(relative_job):
    counts = decode_harbor_files(relative_job.parent.parent, as_records=True)  # the job, its trials, locks, tasks
    assert counts == {
        "trial_result": 2,
        "job_result": 1,
        "trial_config": 2,
        "job_config": 1,
        "lock": 2,
        "job_lock": 1,
        "task": 2,
    }


@pytest.mark.docker
def test_harbor_recorded_the_task_path_relative(relative_job):
    result = _harbor_results(relative_job)["io36-gated"]
    assert result["task_id"]["path"] == "tasks/io36-gated"  # as given on its command line, not absolute
    assert [step["step_name"] for step in result["step_results"]] == ["step-1", "step-2"]  # gated after step 2


@pytest.mark.docker
@pytest.mark.parametrize("where", ["elsewhere", "the job", "a moved copy"])
def test_a_gated_trial_has_its_declared_steps_from_any_working_directory(relative_job, tmp_path, monkeypatch, where):
    # issue 36: the relative task_id.path was resolved against this process's cwd: from any other
    # folder the gated trial showed n_steps 1 (then 2) instead of 3, and its skipped step vanished
    job = relative_job
    if where == "a moved copy":  # the run folder (jobs and tasks) moved as a whole
        shutil.copytree(relative_job.parent.parent, tmp_path / "moved")
        job = tmp_path / "moved" / "jobs" / "io36"
    monkeypatch.chdir(job if where == "the job" else tmp_path)
    row = dl.load_trials(job, cache=False).filter(pl.col("task") == "io36-gated").row(0, named=True)
    assert (row["n_steps"], row["steps_passed"], row["first_failed_step"]) == (3, 1, 2)
    steps = dl.load_steps(job, cache=False).filter(pl.col("task") == "io36-gated").sort("step_index")
    assert steps.select("step", "status").rows() == [("step-1", "pass"), ("step-2", "fail"), ("step-3", "skipped")]


@pytest.mark.docker
def test_a_verifier_timeout_is_an_invalid_trial_as_harbor_says(relative_job):
    harbor = _harbor_results(relative_job)["io36-slow-verifier"]
    assert harbor["exception_info"]["exception_type"] == "VerifierTimeoutError"
    assert harbor["reward_valid"] is False  # Harbor's own verdict (its error policy)
    trials = {row["task"]: row for row in dl.load_trials(relative_job, cache=False).iter_rows(named=True)}
    assert (trials["io36-slow-verifier"]["status"], trials["io36-slow-verifier"]["passed"]) == ("invalid", None)
    for task, result in _harbor_results(relative_job).items():  # depthlab's model agrees with Harbor's verdict
        typed = msgspec.json.decode(json.dumps(result), type=TrialResult)
        assert typed.reward_valid() is result["reward_valid"], task
        result.pop("reward_valid")  # and computes it as Harbor does where a file does not record it
        assert msgspec.json.decode(json.dumps(result), type=TrialResult).reward_valid() is typed.reward_valid(), task


def test_instruction_words_count_what_the_agent_sees_after_harbors_canary_strip(harbor_python, tmp_path):
    single = tasks_init(harbor_python, tmp_path / "tasks", "demo/canary", "--include-canary-strings")
    tasks_init(harbor_python, tmp_path / "tasks", "demo/canary-steps", "--steps", "2", "--include-canary-strings")
    assert "canary" in (single / "instruction.md").read_text().splitlines()[0].lower()  # Harbor wrote one
    seen = json.loads(
        _side(
            harbor_python,
            "import json, sys\nfrom harbor.models.task.task import Task\n"
            "single, multi = Task(sys.argv[1]), Task(sys.argv[2])\n"
            "print(json.dumps([single.instruction, [multi.step_instruction(s.name) for s in multi.config.steps]]))",
            str(single),
            str(tmp_path / "tasks" / "canary-steps"),
        )
    )
    rows = {row["task"]: row for row in dl.load_tasks(tmp_path / "tasks").iter_rows(named=True)}
    assert rows["canary"]["instruction_words"] == len(seen[0].split())
    assert rows["canary-steps"]["instruction_words"] == sum(len(text.split()) for text in seen[1])
    raw = (single / "instruction.md").read_text()
    assert len(raw.split()) > len(seen[0].split())  # the canary words were counted before
    assert strip_canary(raw) == seen[0]  # depthlab's strip is Harbor's


def test_a_windows_task_has_the_w_of_the_solve_bat_harbors_oracle_runs(harbor_python, tmp_path):
    task = tasks_init(harbor_python, tmp_path / "tasks", "demo/win")
    toml = task / "task.toml"
    text, found = re.subn(r'^os = "linux"$', 'os = "windows"', toml.read_text(), flags=re.MULTILINE)
    if not found:  # (the template states no OS)
        text = text.replace("[environment]\n", '[environment]\nos = "windows"\n', 1)
    toml.write_text(text)
    (task / "solution" / "solve.sh").unlink()
    (task / "solution" / "solve.bat").write_text(
        "@echo off\r\nREM write it\r\n:: then check\r\necho hi > C:\\app\\out.txt\r\n"
    )
    found = _side(
        harbor_python,
        "import sys\nfrom harbor.models.task.task import Task\nt = Task(sys.argv[1])\n"
        "print(t.config.environment.os.value, t.paths.discovered_solve_path_for(t.config.environment.os).name)",
        str(task),
    ).split()
    assert found == ["windows", "solve.bat"]  # what Harbor's oracle runs
    row = dl.load_tasks(tmp_path / "tasks").row(0, named=True)
    assert (row["has_solution"], row["work"], row["work_note"]) == (True, 2, None)  # @echo off and the echo
    assert count_work((task / "solution" / "solve.bat").read_text(), batch=True) == (2, 4)


def test_an_unversioned_task_toml_has_harbors_default_version(harbor_python, tmp_path):
    default = _side(
        harbor_python, "from harbor.models.task.config import TaskConfig\nprint(TaskConfig().schema_version)"
    )
    task = tmp_path / "tasks" / "plain"
    (task / "solution").mkdir(parents=True)
    (task / "solution" / "solve.sh").write_text("echo hi\n")
    (task / "instruction.md").write_text("Say hi.\n")
    (task / "task.toml").write_text("[agent]\ntimeout_sec = 60.0\n")
    assert dl.load_tasks(tmp_path / "tasks")["schema_version"].to_list() == [default.strip()]
    assert default.strip() == "1.4"  # (issue 36: it was labelled 1.0)
