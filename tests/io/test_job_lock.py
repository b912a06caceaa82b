"""A job's lock.json, written by the runner as Harbor 0.26 writes one per job, judged by Harbor's own code.

Harbor (its side venv) is the reference three ways: its ``Packager.compute_content_hash`` gives the task digests,
its ``build_trial_lock`` locks the same trial config to the same entry, and its ``JobLock`` model reads the file
and dumps it back byte for byte (keys in its order, None fields left out). The lock names no Harbor version:
depthlab's runner is not Harbor.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import msgspec
import pytest
from io_helpers import keys_in_order

from depthlab.io import harbor_records as hr
from depthlab.io import harbor_writer as hw
from depthlab.io.harbor_lock import content_hash
from depthlab.runner.output import JobDir

_HARBOR_SIDE = """
import json, sys
from pathlib import Path
from types import SimpleNamespace
from harbor.models.job import lock as locks
from harbor.models.trial.config import TrialConfig
from harbor.publisher.packager import Packager
request = json.load(sys.stdin)
job = Path(request["job"])
written = (job / "lock.json").read_text()
parsed = locks.JobLock.model_validate_json(written)
entries = []
for name in request["trials"]:
    config = TrialConfig.model_validate_json((job / name / "config.json").read_text())
    resolved = SimpleNamespace(path=Path(config.task.path), content_hash=None, resolved_git_commit_id=None)
    entries.append(json.loads(locks.build_trial_lock(trial_config=config, task_download_result=resolved)
                              .model_dump_json(exclude_none=True)))
json.dump({
    "fields": {name: list(getattr(locks, name).model_fields) for name in request["models"]},
    "hashes": {path: Packager.compute_content_hash(Path(path))[0] for path in request["tasks"]},
    "dump": json.loads(parsed.model_dump_json(exclude_none=True)),
    "entries": entries,
}, sys.stdout)
"""


def _task(root: Path, name: str, toml: str) -> Path:
    folder = root / name
    for part in ("tests/__pycache__", "solution", "environment"):
        (folder / part).mkdir(parents=True)
    (folder / "task.toml").write_text(toml)
    (folder / "instruction.md").write_text("Write 42 to /app/answer.txt.\n")
    (folder / "README.md").write_text("A task.\n")
    (folder / "notes.txt").write_text("not packaged\n")
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (folder / "tests" / "__pycache__" / "helper.pyc").write_bytes(b"\0ignored")
    (folder / "solution" / "solve.sh").write_text("#!/bin/bash\necho 42 > /app/answer.txt\n")
    (folder / "solution" / "solve.sh~").write_text("an editor's backup, ignored\n")
    (folder / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    return folder


def _add_trial(job: JobDir, task: Path, extra_instructions: list[str]) -> str:
    trial_dir = job.new_trial_dir(task.name)
    agent = hw.agent_config("oracle", None, {})
    config = hw.trial_config(hw.task_config(task, "suite"), trial_dir.name, job.path, agent, job_id=job.id)
    config.extra_instructions = extra_instructions
    hw.write_json(trial_dir / "config.json", config)
    result = hw.trial_result(
        config,
        result_id=f"r-{trial_dir.name}",
        task_name=task.name,
        task_path=task,
        trial_dir=trial_dir,
        source="suite",
        task_checksum="sum",
        agent=hw.agent_info("oracle", "1", None),
        agent_result=None,
        rewards={"reward": 1.0},
        exception=None,
        started_at="2026-03-01T12:00:00Z",
        finished_at="2026-03-01T12:01:00Z",
        phases={},
    )
    hw.write_json(trial_dir / "result.json", result)
    return trial_dir.name


@pytest.mark.harbor
def test_the_runners_job_lock_is_the_one_harbor_writes(harbor_python, tmp_path):
    tasks = tmp_path / "tasks"
    single = _task(tasks, "single", 'version = "1.0"\n[task]\nname = "org/single"\nversion = "2.1.0"\n')
    separate = _task(tasks, "separate", 'version = "1.0"\n[verifier.environment]\ndocker_image = "debian"\n')
    job = JobDir(tmp_path / "jobs", "job", {"n_attempts": 1, "n_concurrent_trials": 3})
    names = [_add_trial(job, single, []), _add_trial(job, separate, ["You have at most 3 turns."])]
    job.update_result()
    lock_path = job.path / "lock.json"
    request = {
        "job": str(job.path),
        "trials": sorted(names),
        "models": list(hr.LOCK_RECORDS),
        "tasks": [str(single), str(separate)],
    }
    done = subprocess.run(
        [str(harbor_python), "-c", _HARBOR_SIDE], input=json.dumps(request), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    harbor = json.loads(done.stdout)

    for name, record in hr.LOCK_RECORDS.items():  # Harbor's fields, in its order
        assert [field.encode_name for field in msgspec.structs.fields(record)] == harbor["fields"][name], name
    assert {path: content_hash(path) for path in request["tasks"]} == harbor["hashes"]
    ours = json.loads(lock_path.read_text())
    assert keys_in_order(ours) == keys_in_order(harbor["dump"])  # read and written back by Harbor: the same
    assert ours["trials"] == harbor["entries"]  # each trial locked as Harbor's build_trial_lock locks it
    assert ours["harbor"] == {}  # no Harbor version: depthlab's runner is not Harbor
    assert ours["n_concurrent_trials"] == 3
    assert [entry["verifier"].get("environment_mode") for entry in ours["trials"]] == ["separate", "shared"]
    assert ours["trials"][1]["task"]["version"] == "2.1.0"


def test_the_lock_is_rewritten_per_trial_and_left_out_when_a_trial_cannot_be_locked(tmp_path):
    tasks = tmp_path / "tasks"
    first = _task(tasks, "first", 'version = "1.0"\n')
    job = JobDir(tmp_path / "jobs", "job", {"n_attempts": 1})
    _add_trial(job, first, [])
    job.update_result()
    lock = json.loads((job.path / "lock.json").read_text())
    assert [entry["task"]["digest"] for entry in lock["trials"]] == [f"sha256:{content_hash(first)}"]
    created = lock["created_at"]
    resumed = JobDir(tmp_path / "jobs", "job", {"n_attempts": 1})
    _add_trial(resumed, first, [])
    resumed.update_result()
    lock = json.loads((job.path / "lock.json").read_text())
    assert len(lock["trials"]) == 2
    assert lock["created_at"] == created  # a resumed job keeps its lock's creation time
    own_rules = _task(tasks, "own-rules", 'version = "1.0"\n')
    (own_rules / ".gitignore").write_text("*.log\n")  # rules depthlab does not apply: no digest, no lock
    assert content_hash(own_rules) is None
    _add_trial(resumed, own_rules, [])
    resumed.update_result()
    assert not (job.path / "lock.json").exists()
    assert json.loads((job.path / "result.json").read_text())["stats"]["n_completed_trials"] == 3
