"""One refusal rule on both engines, before any model call (issue 37, item 7).

Tasks Harbor refuses when it loads them (a step with no tests or no instruction, two step names
equal once Unicode-normalised, an instruction that is not UTF-8, ``steps = []`` with no
single-step task to read) used to surface on ``--engine harbor`` as Harbor's traceback, while the
local engine ran some of them. ``depthlab measure`` now refuses each on both engines with one line
naming the cause: no model request, no trial, no Harbor job. Harbor's own task loader (its side
venv) refuses the same tasks, so the rule is Harbor's and not a stricter one of depthlab's.
"""

from __future__ import annotations

import subprocess

import pytest
from engines_helpers import engine_flags, measure_args, run_measure
from refusal_tasks import CAUSES, write_refused_tasks

pytestmark = [pytest.mark.docker, pytest.mark.harbor]


@pytest.fixture(scope="module")
def refused(userland, tmp_path_factory):
    return write_refused_tasks(tmp_path_factory.mktemp("refused"), userland)


@pytest.mark.parametrize("engine", ["local", "harbor"])
def test_both_engines_refuse_the_same_tasks_in_one_line_before_any_model_call(
    engine, refused, server, request, measure_env, tmp_path
):
    before = server.count()
    jobs, out = tmp_path / "jobs", tmp_path / "depth.csv"
    extra = engine_flags(engine, request)
    run = run_measure(measure_args(refused, jobs, out, server.url, *extra), measure_env, timeout=300)
    assert run.returncode == 1, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    assert "No tasks matched" not in run.stderr
    lines = run.stderr.splitlines()
    # a task.toml Harbor's model refuses (the NFC/NFD pair of step names) is rejected as the tasks are
    # read, one line naming its path and cause; the rest are left out by the refusal rule, one line each
    rejected = {task: line for task in CAUSES for line in lines if f"task rejected: {refused / task}/" in line}
    assert set(rejected) <= {"refuse-cafe-nfc-nfd"}, rejected
    assert all("given twice" in line for line in rejected.values()), rejected
    left_out = len(CAUSES) - len(rejected)
    assert f"oracle preflight: {left_out} task(s) left out, no engine can run the task as written:" in lines
    for task, cause in CAUSES.items():
        if task in rejected:
            continue
        named = [line for line in lines if line.startswith(f"  {task}: ")]
        assert len(named) == 1, (task, run.stderr[-3000:])
        assert cause in named[0], (cause, named[0])
    assert server.count() == before  # no model was called
    ran = list(jobs.rglob("result.json")) if jobs.exists() else []
    assert ran == []  # no trial, not even the oracle's
    assert not out.exists()


def test_harbors_own_loader_refuses_every_one_of_them(refused, harbor_python):
    script = (
        "import sys\nfrom harbor.models.task.task import Task\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n        Task(path)\n        print(path, 'accepted')\n"
        "    except Exception as error:\n        print(path, 'refused', type(error).__name__)\n"
    )
    paths = [str(refused / task) for task in CAUSES]
    done = subprocess.run([str(harbor_python), "-c", script, *paths], capture_output=True, text=True, check=True)
    verdicts = dict(line.rsplit(" ", 2)[:2] for line in done.stdout.splitlines())
    assert verdicts == dict.fromkeys(paths, "refused"), done.stdout
