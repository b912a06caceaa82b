"""An unset ``${VAR}`` without default in task.toml's env is refused before any trial, on both engines.

Harbor 0.26 stops its whole job on one (``harbor.cli.jobs``' check of the tasks' ``[environment.env]``,
``[verifier.env]`` and, for the oracle, ``[solution.env]``); the local runner used to record one invalid trial
per task instead. ``depthlab measure`` now refuses the measurement on both engines after the engine's check,
naming each task, key and variable, before the jobs folder gets any trial.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import polars as pl
import pytest

from depthlab.engines import HarborEngine, LocalEngine, measure
from depthlab.io import load_tasks
from depthlab.io.task_rules import unset_host_variables

UNSET = "DEPTHLAB_TEST_NEVER_SET_VARIABLE"

# (env tables of task.toml, as TOML) -> what both rules must find missing with an empty host
TABLES = {
    "verifier": f'[verifier.env]\nJUDGE = "${{{UNSET}}}"\nMODE = "${{MODE_X:-fast}}"\nNOTE = "a ${{{UNSET}}}"\n',
    "environment": f'[environment.env]\nFLAG = "${{{UNSET}_2}}"\nPLAIN = "1"\n',
    "solution": f'[solution.env]\nKEY = "${{{UNSET}_3}}"\n',
    "step": f'[[steps]]\nname = "one"\n[steps.verifier.env]\nJ = "${{{UNSET}_4}}"\n',
}


def _task(root: Path, name: str, env_toml: str) -> Path:
    folder = root / name
    (folder / "tests").mkdir(parents=True)
    (folder / "solution").mkdir()
    (folder / "environment").mkdir()
    (folder / "task.toml").write_text(f'version = "1.0"\n\n[agent]\ntimeout_sec = 60.0\n\n{env_toml}')
    (folder / "instruction.md").write_text("Write 42 to /app/answer.txt.\n")
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (folder / "solution" / "solve.sh").write_text("#!/bin/bash\necho 42 > /app/answer.txt\n")
    (folder / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\nWORKDIR /app\n")
    return folder


def _tasks_table(root: Path) -> pl.DataFrame:
    return pl.DataFrame(
        {"task": [folder.name for folder in sorted(root.iterdir())], "source": [str(f) for f in sorted(root.iterdir())]}
    )


def test_the_rule_names_each_unset_variable_in_the_tables_harbors_job_checks(tmp_path):
    for name, env_toml in TABLES.items():
        _task(tmp_path, name, env_toml)
    tasks = _tasks_table(tmp_path)
    assert unset_host_variables(tasks, oracle=False, host={}) == [
        ("environment", "[environment.env].FLAG", f"{UNSET}_2"),
        ("verifier", "[verifier.env].JUDGE", UNSET),
    ]
    with_oracle = unset_host_variables(tasks, oracle=True, host={UNSET: "set"})
    assert with_oracle == [
        ("environment", "[environment.env].FLAG", f"{UNSET}_2"),
        ("solution", "[solution.env].KEY", f"{UNSET}_3"),
    ]
    assert unset_host_variables(tasks, oracle=True, host=dict.fromkeys([UNSET, f"{UNSET}_2", f"{UNSET}_3"], "")) == []


@pytest.mark.harbor
def test_the_rule_is_harbors_own(tmp_path, harbor_python):
    """Harbor's ``get_required_host_vars`` over the same tables, with an empty host, finds the same variables."""
    for name, env_toml in TABLES.items():
        _task(tmp_path, name, env_toml)
    script = (
        "import json, sys, tomllib\nfrom harbor.utils.env import get_required_host_vars\n"
        "found = {}\n"
        "for path in sys.argv[1:]:\n"
        "    config = tomllib.load(open(path + '/task.toml', 'rb'))\n"
        "    names = []\n"
        "    for table in ('environment', 'verifier', 'solution'):\n"
        "        env = config.get(table, {}).get('env', {})\n"
        "        names += [name for name, default in get_required_host_vars(env) if default is None]\n"
        "    found[path.rsplit('/', 1)[-1]] = sorted(names)\n"
        "json.dump(found, sys.stdout)\n"
    )
    folders = [str(folder) for folder in sorted(tmp_path.iterdir())]
    done = subprocess.run([str(harbor_python), "-c", script, *folders], capture_output=True, text=True, check=True)
    harbors = {task: names for task, names in json.loads(done.stdout).items() if names}
    ours: dict[str, list[str]] = {}
    for task, _, name in unset_host_variables(_tasks_table(tmp_path), oracle=True, host={}):
        ours.setdefault(task, []).append(name)
    assert ours == harbors


@pytest.mark.parametrize(
    "engine", [pytest.param("local", marks=pytest.mark.docker), pytest.param("harbor", marks=pytest.mark.harbor)]
)
def test_both_engines_refuse_the_measurement_before_any_trial(engine, request, tmp_path, monkeypatch):
    monkeypatch.delenv(UNSET, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-depthlab-host-variables-test")
    root = tmp_path / "tasks"
    _task(root, "needs-a-judge", TABLES["verifier"])
    jobs = tmp_path / "jobs"
    url = "http://127.0.0.1:9/v1"  # never called: the refusal comes first
    if engine == "harbor":
        chosen = HarborEngine(jobs, base_url=url, harbor=request.getfixturevalue("harbor_cmd"))
    else:
        request.getfixturevalue("docker_client")
        chosen = LocalEngine(jobs, base_url=url)
    with pytest.raises(ValueError, match=rf"needs-a-judge: \[verifier\.env\]\.JUDGE takes \$\{{{UNSET}\}}") as refused:
        measure(chosen, load_tasks([root]), models=["openai/m1"], caps=[2, 3], progress=False, echo=lambda _: None)
    assert "Harbor stops a job" in str(refused.value)
    assert list(jobs.rglob("result.json")) == []  # not one trial, not even the oracle's


@pytest.mark.harbor
def test_a_variable_given_to_harbors_engine_counts_as_set(request, tmp_path, monkeypatch):
    """Harbor's child gets the engine's ``env`` too: a variable given there is not refused (it is, unset, on local)."""
    from depthlab.engines.rounds import _refuse_unset_host_variables

    monkeypatch.delenv(UNSET, raising=False)
    root = tmp_path / "tasks"
    _task(root, "needs-a-judge", TABLES["verifier"])
    tasks = load_tasks([root])
    harbor = HarborEngine(
        tmp_path / "jobs", base_url="http://127.0.0.1:9/v1", harbor=request.getfixturevalue("harbor_cmd")
    )
    given = HarborEngine(
        tmp_path / "jobs",
        base_url="http://127.0.0.1:9/v1",
        harbor=request.getfixturevalue("harbor_cmd"),
        env={UNSET: "m"},
    )
    _refuse_unset_host_variables(given, tasks, oracle=True)  # no refusal
    with pytest.raises(ValueError, match=UNSET):
        _refuse_unset_host_variables(harbor, tasks, oracle=True)
