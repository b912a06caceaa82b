"""Every task Harbor 0.26 accepts is read (issue 46): a task.toml whose version depthlab does not know (``2.0``, the
version a public Harbor-format corpus writes) is read as Harbor's own ``Task`` reads it, with a warning and a note,
never refused, by the loader, the runner and the engines' refusal rules alike.

Harbor's side venv judges the file (its ``Task`` model, no Docker): skips with the reason without it, fails
under ``DEPTHLAB_REQUIRE_HARBOR=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import polars as pl
import pytest

import depthlab as dl
from depthlab.checks.core import check_tasks
from depthlab.io.harbor_task import NewerTaskFormatWarning, read_task
from depthlab.io.task_rules import ENGINES, refusal, refused_tasks, task_config_problems
from depthlab.runner.task import load_task

pytestmark = pytest.mark.harbor

#: What Harbor's own model makes of a task folder: the fields both read.
_HARBOR_READS = """
import json, sys
from harbor.models.task.task import Task
task = Task(sys.argv[1])
config = task.config
print(json.dumps({
    "schema_version": config.schema_version,
    "name": config.task.name if config.task else None,
    "agent_timeout_sec": config.agent.timeout_sec,
    "verifier_timeout_sec": config.verifier.timeout_sec,
    "network_mode": config.environment.network_mode.value,
    "cpus": config.environment.cpus,
    "memory_mb": config.environment.memory_mb,
    "difficulty": config.metadata.get("difficulty"),
}))
"""


def _write_task(folder: Path, version_key: str) -> Path:
    """A single-step task in Harbor's format whose task.toml says ``<version_key> = "2.0"``."""
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "solution").mkdir()
    (folder / "environment" / "Dockerfile").write_text("FROM debian:12\nWORKDIR /app\n")
    (folder / "instruction.md").write_text("Write hello to /app/out.txt.\n")
    (folder / "solution" / "solve.sh").write_text("#!/bin/bash\necho hello > /app/out.txt\n")
    (folder / "tests" / "test.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier\ngrep -q hello /app/out.txt && echo 1 > /logs/verifier/reward.txt\n"
    )
    (folder / "task.toml").write_text(
        f'{version_key} = "2.0"\n\n[task]\nname = "corpus/{folder.name}"\n\n[metadata]\ndifficulty = "easy"\n\n'
        "[agent]\ntimeout_sec = 120.0\n\n[verifier]\ntimeout_sec = 45.0\n\n"
        '[environment]\nnetwork_mode = "no-network"\ncpus = 2\nmemory_mb = 1024\n'
    )
    return folder


@pytest.mark.parametrize("version_key", ["version", "schema_version"])
def test_a_version_2_task_is_read_as_harbor_reads_it(harbor_python, tmp_path, version_key):
    folder = _write_task(tmp_path / "tasks" / "v2", version_key)
    done = subprocess.run(
        [str(harbor_python), "-c", _HARBOR_READS, str(folder)],
        env={**os.environ, "HARBOR_TELEMETRY": "0"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]  # Harbor accepts the task
    harbor = json.loads(done.stdout.strip().splitlines()[-1])
    assert harbor["schema_version"] == "2.0"

    with pytest.warns(NewerTaskFormatWarning, match="'2.0' is newer than known .*as Harbor 0.26 reads any version"):
        task = read_task(folder)
    ours = {
        "schema_version": task.schema_version,
        "name": task.model.task.name if task.model.task else None,
        "agent_timeout_sec": task.agent_timeout_sec,
        "verifier_timeout_sec": task.verifier_timeout_sec,
        "network_mode": task.network_mode,
        "cpus": task.model.environment.cpus,
        "memory_mb": task.model.environment.memory_mb,
        "difficulty": task.metadata.get("difficulty"),
    }
    assert ours == harbor
    assert "read as 1.4" in str(task.note)

    with pytest.warns(NewerTaskFormatWarning):
        load = dl.read_tasks(tmp_path / "tasks")
    assert load.rejected == []
    assert load.tasks.select("task", "schema_version", "difficulty").rows() == [("v2", "2.0", "easy")]
    with pytest.warns(NewerTaskFormatWarning):
        spec = load_task(folder)  # the local runner reads it too
    assert (spec.agent_timeout_sec, spec.verifier_timeout_sec, spec.cpus, spec.memory_mb) == (120.0, 45.0, 2.0, 1024)
    assert spec.internet is False
    assert [refusal(folder, engine) for engine in ENGINES] == [None, None]  # on no engine refused
    tasks = pl.DataFrame({"task": ["v2"], "source": [str(folder)]})
    assert refused_tasks(tasks).height == task_config_problems(tasks).height == 0


def test_the_static_checks_run_on_a_version_2_task(tmp_path):
    """``depthlab check`` refused every check of such a task ("unknown task.toml schema version '2.0'")."""
    folder = _write_task(tmp_path / "tasks" / "v2", "version")
    with pytest.warns(NewerTaskFormatWarning):
        report = check_tasks(
            [folder], jobs_dir=tmp_path / "jobs", checks=("named_in_instruction", "fix_not_in_instruction")
        )
    rows = report.table.select("task", "check", "outcome").rows()
    assert rows == [("v2", "named_in_instruction", "ok"), ("v2", "fix_not_in_instruction", "not_marked")]
