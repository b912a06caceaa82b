"""D kept per task version (issue 45): a task's digest and parts, and what a change of each costs.

Harbor 0.26's own ``Packager.compute_content_hash`` (the digest its trial locks record), ``Task.checksum``
(the ``task_checksum`` its trial results record) and ``[task].version`` reading judge depthlab's
(``harbor`` mark: its side venv, no Docker).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import polars as pl
import pytest
from engines_helpers import engine_flags, measure_args, run_measure, write_chain_task

import depthlab as dl
from depthlab import schema
from depthlab.checks.core import check_tasks
from depthlab.engines._versions import NO_REGRADE, Regrade, diff_versions, regrade_blocker
from depthlab.engines.rounds import depth_table
from depthlab.io.task_versions import (
    PARTS,
    VERSIONS_FILE,
    TaskVersion,
    diff_action,
    read_versions,
    record_versions,
    task_version,
)
from depthlab.io.tasks import dirhash_sha256

#: Harbor's own digest, checksum and version of each task folder given as an argument.
_HARBOR_HASHES = """
import json, sys, warnings
from pathlib import Path
from harbor.models.job.lock import _task_package_version
from harbor.models.task.task import Task
from harbor.publisher.packager import Packager
warnings.simplefilter("ignore", DeprecationWarning)
out = {}
for folder in sys.argv[1:]:
    digest, _ = Packager.compute_content_hash(Path(folder))
    out[folder] = {"digest": "sha256:" + digest, "checksum": Task(folder).checksum,
                   "version": _task_package_version(Path(folder))}
print(json.dumps(out))
"""


def write_task(folder: Path, *, version: str | None = None, verifier_timeout: float = 60.0) -> Path:
    """A tiny single-step Harbor task: write ``hello`` to /app/out.txt."""
    (folder / "environment").mkdir(parents=True, exist_ok=True)
    (folder / "tests").mkdir(exist_ok=True)
    (folder / "solution").mkdir(exist_ok=True)
    (folder / "environment" / "Dockerfile").write_text("FROM debian:12\nWORKDIR /app\n")
    (folder / "instruction.md").write_text("Write hello to /app/out.txt.\n")
    (folder / "solution" / "solve.sh").write_text("#!/bin/bash\necho hello > /app/out.txt\n")
    (folder / "tests" / "test.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        "if grep -q hello /app/out.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
    )
    stated = f'version = "{version}"\n' if version else ""
    (folder / "task.toml").write_text(
        f'schema_version = "1.1"\n\n[task]\nname = "depthlab/{folder.name}"\n{stated}\n'
        f"[agent]\ntimeout_sec = 120.0\n\n[verifier]\ntimeout_sec = {verifier_timeout}\n\n"
        "[environment]\ncpus = 1\nmemory_mb = 1024\n"
    )
    return folder


def _varied_tasks(root: Path) -> list[Path]:
    """Task folders that exercise every rule of Harbor's digest: ignored names, unpublished files, nesting, steps."""
    plain = write_task(root / "plain", version="1.2.3")
    cluttered = write_task(root / "cluttered")
    (cluttered / "notes.txt").write_text("not published: outside Harbor's folders")
    (cluttered / "README.md").write_text("# published\n")
    (cluttered / "tests" / "__pycache__").mkdir()
    (cluttered / "tests" / "__pycache__" / "x.cpython-312.pyc").write_bytes(b"\0")
    (cluttered / "tests" / "helper.pyc").write_bytes(b"\1")
    (cluttered / "environment" / "files" / "deep").mkdir(parents=True)
    (cluttered / "environment" / "files" / "deep" / "data.bin").write_bytes(bytes(range(256)))
    (cluttered / "environment" / "files" / "a b.txt").write_text("space in name")
    (cluttered / "solution" / "solve.sh~").write_text("editor backup")
    (cluttered / "tests" / "link.sh").symlink_to("test.sh")
    steps = root / "steps"
    (steps / "environment").mkdir(parents=True)
    (steps / "environment" / "Dockerfile").write_text("FROM debian:12\n")
    for name in ("first", "second"):
        (steps / "steps" / name / "tests").mkdir(parents=True)
        (steps / "steps" / name / "solution").mkdir()
        (steps / "steps" / name / "instruction.md").write_text(f"Step {name}.\n")
        (steps / "steps" / name / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
        (steps / "steps" / name / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    (steps / "task.toml").write_text(
        'schema_version = "1.4"\n\n[task]\nname = "depthlab/steps"\nversion = "0.1.0"\n\n'
        '[[steps]]\nname = "first"\n\n[[steps]]\nname = "second"\n'
    )
    return [plain, cluttered, steps]


@pytest.mark.harbor
def test_digest_checksum_and_version_are_harbors(tmp_path: Path, harbor_python: Path) -> None:
    tasks = _varied_tasks(tmp_path)
    done = subprocess.run(
        [str(harbor_python), "-c", _HARBOR_HASHES, *map(str, tasks)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    harbor = json.loads(done.stdout)
    for task in tasks:
        ours = task_version(task)
        assert ours.digest == harbor[str(task)]["digest"], task.name
        assert ours.version == harbor[str(task)]["version"], task.name
        assert dirhash_sha256(task) == harbor[str(task)]["checksum"], task.name
    # the unpublished file changes the checksum trials record, not the digest: a version that costs no run
    before = task_version(tasks[1])
    (tasks[1] / "notes.txt").write_text("edited")
    assert task_version(tasks[1]) == before


@pytest.mark.harbor
def test_the_digest_is_harbors_on_real_published_tasks(shared: Path, harbor_python: Path) -> None:
    """The task folders of ../shared's samples (Harbor's cookbook recipes and example tasks), as published."""
    tasks = sorted({path.parent for path in (shared / "samples").rglob("task.toml")})
    if not tasks:
        pytest.skip(f"no task folder under {shared / 'samples'}")
    script = (
        "import json, sys\nfrom pathlib import Path\nfrom harbor.publisher.packager import Packager\n"
        "print(json.dumps({f: 'sha256:' + Packager.compute_content_hash(Path(f))[0] for f in sys.argv[1:]}))"
    )
    done = subprocess.run(
        [str(harbor_python), "-c", script, *map(str, tasks)], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    harbor = json.loads(done.stdout)
    ours = {str(task): task_version(task) for task in tasks}
    compared = {folder: version.digest for folder, version in ours.items() if version.digest is not None}
    assert compared == {folder: harbor[folder] for folder in compared}
    assert len(compared) >= len(tasks) // 2, "most published tasks have no ignore rules of their own"


def _changed_parts(task: Path, edit: str) -> list[str]:
    before = task_version(task)
    path, text = edit.split("=", 1)
    (task / path).write_text(text)
    after = task_version(task)
    return [part for part in PARTS if before.part(part) != after.part(part)]


@pytest.mark.parametrize(
    ("edit", "parts", "action"),
    [
        ("tests/test.sh=#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n", ["verifier"], "regrade"),
        ("instruction.md=Write hello, twice.\n", ["instruction"], "rerun"),
        ("environment/Dockerfile=FROM debian:12-slim\n", ["environment"], "rerun"),
        ("solution/solve.sh=#!/bin/bash\nprintf hello > /app/out.txt\n", ["solution"], "reuse"),
        ("README.md=# about\n", [], "reuse"),
    ],
)
def test_each_part_costs_what_its_change_invalidates(tmp_path: Path, edit: str, parts: list[str], action: str) -> None:
    task = write_task(tmp_path / "hello")
    before = task_version(task)
    assert _changed_parts(task, edit) == parts
    assert diff_action(before, task_version(task))[0] == action


def test_task_toml_tables_belong_to_their_parts(tmp_path: Path) -> None:
    task = write_task(tmp_path / "hello")
    before = task_version(task)
    write_task(task, verifier_timeout=90.0)
    assert diff_action(before, task_version(task)) == ("regrade", "the verifier changed")
    text = (task / "task.toml").read_text()
    (task / "task.toml").write_text(text.replace("[agent]\ntimeout_sec = 120.0", "[agent]\ntimeout_sec = 30.0"))
    assert diff_action(before, task_version(task)) == ("rerun", "the instruction changed")
    (task / "task.toml").write_text(text + '\n[metadata]\ndifficulty = "hard"\n')
    assert diff_action(before, task_version(task))[0] == "regrade"  # metadata in no part: the verifier still decides


def test_a_stated_version_is_read_as_harbor_reads_it_and_the_stricter_rule_wins(tmp_path: Path) -> None:
    old = write_task(tmp_path / "old", version="1.0.0")
    same_parts = task_version(old)
    for stated, expected in (("1.0.1", "reuse"), ("1.1.0", "regrade"), ("2.0.0", "rerun"), ("1.0.0-rc1", "rerun")):
        write_task(old, version=stated)
        assert diff_action(same_parts, task_version(old))[0] == expected, stated
    write_task(old, version="1.0.1", verifier_timeout=5.0)  # a patch bump over a changed verifier: regraded still
    assert diff_action(same_parts, task_version(old)) == ("regrade", "the verifier changed")
    assert diff_action(None, same_parts)[0] == "rerun"


_VERSION_PAIRS = [
    ("1.0.0", "1.0.0"),
    ("1.0.0", "1.0.1"),
    ("1.0.0", "1.1.0"),
    ("1.2.3", "1.3.0"),
    ("1.0.0", "2.0.0"),
    ("2.1.0", "1.1.0"),
    ("1.0.0", "1.0.0-rc1"),
    ("1.0.0", "1.0.0+build.5"),
    ("0.9.1", "0.9.0"),
]


@pytest.mark.harbor
def test_the_version_rule_is_harbors_run_diff(harbor_python: Path) -> None:
    """Same parts, two stated versions: the action is the one Harbor's ``job_diff._version_action`` gives."""
    script = (
        "import json, sys\nfrom harbor.job_diff import _version_action\n"
        "print(json.dumps([_version_action(a, b).value for a, b in json.loads(sys.argv[1])]))"
    )
    done = subprocess.run(
        [str(harbor_python), "-c", script, json.dumps(_VERSION_PAIRS)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    harbor = json.loads(done.stdout)
    parts = ("e", "i", "s", "v")
    ours = [
        diff_action(TaskVersion(None, old, *parts), TaskVersion(None, new, *parts))[0] for old, new in _VERSION_PAIRS
    ]
    assert ours == harbor
    assert set(harbor) == {"reuse", "regrade", "rerun"}


def test_the_record_keeps_each_version_and_refuses_a_bad_file(tmp_path: Path) -> None:
    task = write_task(tmp_path / "hello")
    version = task_version(task)
    record_versions(tmp_path / "jobs", {"abc": version})
    record_versions(tmp_path / "jobs", {"def": TaskVersion(None, None, "e", "i", "s", "v", digest_note="why")})
    assert read_versions(tmp_path / "jobs") == {
        "abc": version,
        "def": TaskVersion(None, None, "e", "i", "s", "v", digest_note="why"),
    }
    (tmp_path / "jobs" / VERSIONS_FILE).write_text("[1, 2]")
    with pytest.raises(ValueError, match=f"{VERSIONS_FILE}: not a record of task versions"):
        read_versions(tmp_path / "jobs")


def test_a_task_with_ignore_rules_of_its_own_states_why_it_has_no_digest(tmp_path: Path) -> None:
    task = write_task(tmp_path / "hello")
    (task / "tests" / ".harborignore").write_text("fixtures/\n")
    version = task_version(task)
    assert version.digest is None
    assert ".harborignore" in str(version.digest_note)


# ---------------------------------------------------------------- which changed task a regrade can grade
def _verifier_modes(root: Path) -> list[Path]:
    """Tasks whose verifiers resolve to every mode Harbor's rule distinguishes (task-level and per step)."""
    shared = write_task(root / "shared")
    separate = write_task(root / "separate")
    (separate / "task.toml").write_text(
        (separate / "task.toml").read_text().replace("[verifier]\n", '[verifier]\nenvironment_mode = "separate"\n')
    )
    by_environment = write_task(root / "by_environment")  # a [verifier.environment] table means separate
    (by_environment / "task.toml").write_text(
        (by_environment / "task.toml").read_text() + "\n[verifier.environment]\ncpus = 1\n"
    )
    folders = [shared, separate, by_environment]
    for name, second_mode in (("steps_mixed", "shared"), ("steps_separate", "separate")):
        steps = root / name
        (steps / "environment").mkdir(parents=True)
        (steps / "environment" / "Dockerfile").write_text("FROM debian:12\n")
        for step in ("first", "second"):
            (steps / "steps" / step / "tests").mkdir(parents=True)
            (steps / "steps" / step / "instruction.md").write_text(f"Step {step}.\n")
            (steps / "steps" / step / "tests" / "test.sh").write_text(
                "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"
            )
        (steps / "task.toml").write_text(
            f'schema_version = "1.4"\n\n[task]\nname = "depthlab/{name}"\n\n'
            '[verifier]\nenvironment_mode = "separate"\n\n'
            '[[steps]]\nname = "first"\n\n'
            f'[[steps]]\nname = "second"\n[steps.verifier]\nenvironment_mode = "{second_mode}"\n'
        )
        folders.append(steps)
    return folders


@pytest.mark.harbor
def test_a_task_is_regradable_exactly_when_harbor_says_so(tmp_path: Path, harbor_python: Path) -> None:
    """``regrade_blocker`` against Harbor 0.26's own ``harbor.trial.regrade.check_task_regradable``."""
    tasks = _verifier_modes(tmp_path)
    script = (
        "import json, sys\nfrom pathlib import Path\nfrom harbor.trial.regrade import check_task_regradable\n"
        "print(json.dumps({f: check_task_regradable(Path(f)) for f in sys.argv[1:]}))"
    )
    done = subprocess.run(
        [str(harbor_python), "-c", script, *map(str, tasks)], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    harbor = json.loads(done.stdout)
    ours = {str(task): regrade_blocker(task) is None for task in tasks}
    assert ours == {folder: why is None for folder, why in harbor.items()}
    assert sorted(ours.values()) == [False, False, True, True, True]
    assert "second" in str(regrade_blocker(tmp_path / "steps_mixed"))


@pytest.mark.parametrize("regrades", [False, True])
def test_a_verifier_change_regrades_or_says_why_each_task_is_re_run(tmp_path: Path, regrades: bool) -> None:
    """Shared mode blocks a regrade; a separate-mode task is regraded by an engine that can, else re-run."""
    shared, separate = _verifier_modes(tmp_path / "tasks")[:2]
    jobs = tmp_path / "jobs"
    before = dl.load_tasks([shared, separate])
    diff_versions(before.clear(), before, jobs, regrades=regrades)  # the first measurement records the versions
    rows = [0, 1, 1]  # the shared task once, the separate one twice (caps 1 and 2)
    old = schema.conform(
        pl.DataFrame(
            {
                "dataset": [before["dataset"][i] for i in rows],
                "task": [before["task"][i] for i in rows],
                "model": "m",
                "status": ["pass", "pass", "fail"],
                "cap": [1, 1, 2],
                "task_checksum": [before["checksum"][i] for i in rows],
                "job": "j",
                "trial": ["a", "b", "c"],
            }
        ),
        "trials",
    )
    for task in (shared, separate):
        (task / "tests" / "test.sh").write_text((task / "tests" / "test.sh").read_text() + "# changed\n")
    diff = diff_versions(old, dl.load_tasks([shared, separate]), jobs, regrades=regrades)
    assert diff.counts == {"regrade": 3}
    shared_why = "its verifier runs in shared mode (in the agent's container, gone once the trial ended)"
    if regrades:
        assert diff.to_regrade == [Regrade(str(jobs.absolute() / "j" / t), str(separate)) for t in ("b", "c")]
        diff.regraded += 2  # what the engine reports
        assert diff.render() == (
            "earlier task versions: 0 trial(s) reused, 2 regraded, 1 re-run (1 of them changed only in the "
            f"verifier, re-run: 1 as {shared_why})"
        )
        # a trial regraded already (a trial's config.source_trial names it) is not regraded again
        (jobs / "regrade__j" / "b__x").mkdir(parents=True)
        (jobs / "regrade__j" / "b__x" / "config.json").write_text(
            json.dumps({"task": {}, "source_trial": {"action": "regrade", "path": str(jobs.absolute() / "j" / "b")}})
        )
        again = diff_versions(old, dl.load_tasks([shared, separate]), jobs, regrades=True)
        assert [Path(item.trial_dir).name for item in again.to_regrade] == ["c"]
        assert again.regraded == 1
        assert diff.to_regrade[0].job_dir == jobs.absolute() / "regrade__j"
    else:
        assert diff.to_regrade == []
        assert diff.render() == (
            "earlier task versions: 0 trial(s) reused, 0 regraded, 3 re-run (3 of them changed only in the verifier, "
            f"re-run: 2 as {NO_REGRADE}; 1 as {shared_why})"
        )
    assert [line.split(":")[0].split()[0] for line in diff.lines] == ["separate", "shared"]
    assert "shared mode" in diff.lines[1]


# ---------------------------------------------------------------- every D, W and check verdict names its version
def test_every_d_w_and_check_verdict_names_the_task_version(tmp_path: Path) -> None:
    task = write_task(tmp_path / "tasks" / "hello", version="1.4.0")
    tasks = dl.load_tasks([task])
    checksum = dirhash_sha256(task)
    assert tasks.select("checksum", "task_version").row(0) == (checksum, "1.4.0")
    runs = {"dataset": tasks["dataset"][0], "task": "hello", "model": "m", "status": ["fail", "pass"]}
    trials = schema.conform(pl.DataFrame({**runs, "cap": [1, 2], "task_checksum": checksum}), "trials")
    named = [schema.TASK_CHECKSUM, schema.TASK_VERSION]
    # the round loop's D: the version measured, as the tasks table has it now
    assert depth_table(trials, tasks, models=["m"], caps=(1, 2)).select("depth", *named).row(0) == (
        2,
        checksum,
        "1.4.0",
    )
    # estimate_depth: the checksum the task's trials share, null where they ran on two versions
    assert dl.estimate_depth(trials, caps=(1, 2))[schema.TASK_CHECKSUM].to_list() == [checksum]
    mixed = trials.with_columns(task_checksum=pl.Series([checksum, "other"]))
    assert dl.estimate_depth(mixed, caps=(1, 2))[schema.TASK_CHECKSUM].to_list() == [None]
    # W: the audit table names the version its work was read from
    audit = dl.audit_table(tasks, trials, caps=(1, 2))
    assert audit.select("work", *named).row(0) == (1, checksum, "1.4.0")
    # a check verdict (a static check: no replay) names the version it checked
    report = check_tasks(task, jobs_dir=tmp_path / "jobs", checks=("named_in_instruction",))
    assert report.table.select(*named).unique().rows() == [(checksum, "1.4.0")]


# ---------------------------------------------------------------- measure on a changed task, both engines
@pytest.mark.docker
@pytest.mark.parametrize("engine", ["local", pytest.param("harbor", marks=pytest.mark.harbor)])
def test_a_task_fixed_upstream_costs_only_the_runs_its_change_invalidates(
    engine, userland, server, measure_env, request, tmp_path
):
    """Measured once (D = 3); a changed solution costs no run and no model call (its trials reused); a
    changed verifier sorts the trials as regradable, and both engines say why they re-run them (a shared-mode
    verifier, which no regrade can grade)."""
    task = write_chain_task(tmp_path / "tasks", 2, userland)
    jobs, out = tmp_path / "jobs", tmp_path / "depth.csv"
    args = measure_args(task, jobs, out, server.url, *engine_flags(engine, request), "--no-preflight", caps="3,5")
    first = run_measure(args, measure_env)
    assert first.returncode == 0, first.stderr[-3000:]
    assert pl.read_csv(out).select("depth", "status", schema.TASK_CHECKSUM).rows() == [
        (3, "solved", dirhash_sha256(task))
    ]
    n_first = dl.load_trials([jobs], cache=False).height
    assert (jobs / VERSIONS_FILE).is_file()

    (task / "solution").mkdir(exist_ok=True)
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\ncat /data/start\n")  # the solution alone changed
    calls = server.count()
    second = run_measure(args, measure_env)
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"earlier task versions: {n_first} trial(s) reused, 0 regraded, 0 re-run" in second.stderr
    assert server.count() == calls, "a reused trial costs no model call"
    assert dl.load_trials([jobs], cache=False).height == n_first
    # D stands, naming the task's version now (its earlier trials count for it)
    assert pl.read_csv(out).select("depth", "status", schema.TASK_CHECKSUM).rows() == [
        (3, "solved", dirhash_sha256(task))
    ]

    (task / "tests").mkdir(exist_ok=True)
    (task / "tests" / "test.sh").write_text(
        (task / "tests" / "test.sh").read_text() + "\n# a comment: the verifier changed\n"
    )
    third = run_measure(args, measure_env)
    assert third.returncode == 0, third.stderr[-3000:]
    assert f"0 regraded, {n_first} re-run ({n_first} of them changed only in the verifier, re-run: " in third.stderr
    assert "its verifier runs in shared mode" in third.stderr  # the same reason on both engines
    assert pl.read_csv(out).select("depth", "status").rows() == [(3, "solved")]


# ---------------------------------------------------------------- a verifier fixed upstream is regraded, both engines
ARTIFACT_TEST = "#!/bin/bash\nmkdir -p /logs/verifier\ngrep -qx {word} /logs/artifacts/answer.txt && echo 1 > \
/logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"


def _artifact_task(root: Path, image: str) -> Path:
    """A tiny task whose separate verifier reads the agent's answer from /logs/artifacts (regradable)."""
    task = root / "measure-artifact"
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(f"FROM {image}\nWORKDIR /app\nSTOPSIGNAL SIGKILL\n")
    (task / "instruction.md").write_text("Write hello to /logs/artifacts/answer.txt.\n")
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/artifacts\necho hello > /logs/artifacts/answer.txt\n"
    )
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text(ARTIFACT_TEST.format(word="hello"))
    (task / "task.toml").write_text(
        'schema_version = "1.1"\n[agent]\ntimeout_sec = 120.0\n'
        '[verifier]\ntimeout_sec = 60.0\nenvironment_mode = "separate"\n'
        "[environment]\ncpus = 1\nmemory_mb = 512\n"
    )
    return task


# the second step's own artifact, written by its setup.sh (not in the first step's artifacts); each verifier's
# reward is the one the change below gives it, so a regrade that kept a recorded reward or graded one step on
# another's artifacts reads differently
SECOND_STEP_SETUP = "#!/bin/bash\nmkdir -p /logs/artifacts\necho second > /logs/artifacts/second.txt\n"
SECOND_STEP_TEST = "#!/bin/bash\nmkdir -p /logs/verifier\ngrep -qx second /logs/artifacts/second.txt && echo {reward} \
> /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"


def _artifact_steps_task(root: Path, image: str) -> Path:
    """A two-step task whose separate verifiers each read their own step's artifacts (regradable): the first
    the agent's answer, the second what the second step's ``setup.sh`` wrote (no agent turn needed)."""
    task = root / "measure-artifact-steps"
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(f"FROM {image}\nWORKDIR /app\nSTOPSIGNAL SIGKILL\n")
    for name, instruction, test in (
        ("first", "Write hello to /logs/artifacts/answer.txt.\n", ARTIFACT_TEST.format(word="hello")),
        ("second", "Nothing more: say you are done.\n", SECOND_STEP_TEST.format(reward=1)),
    ):
        (task / "steps" / name / "tests").mkdir(parents=True)
        (task / "steps" / name / "solution").mkdir()
        (task / "steps" / name / "instruction.md").write_text(instruction)
        (task / "steps" / name / "tests" / "test.sh").write_text(test)
        (task / "steps" / name / "solution" / "solve.sh").write_text(
            "#!/bin/bash\nmkdir -p /logs/artifacts\necho hello > /logs/artifacts/answer.txt\n"
        )
    (task / "steps" / "second" / "workdir").mkdir()
    (task / "steps" / "second" / "workdir" / "setup.sh").write_text(SECOND_STEP_SETUP)
    (task / "task.toml").write_text(
        'schema_version = "1.4"\n[agent]\ntimeout_sec = 120.0\n'
        '[verifier]\ntimeout_sec = 60.0\nenvironment_mode = "separate"\n'
        '[environment]\ncpus = 1\nmemory_mb = 512\n\n[[steps]]\nname = "first"\n\n[[steps]]\nname = "second"\n'
    )
    return task


def _answering_policy(messages: list[dict[str, object]], model: str) -> str:
    """Write the answer in one command, then say done (and confirm)."""
    from engines_helpers import reply

    if any(message.get("role") == "assistant" for message in messages):
        return reply(complete=True)
    return reply("mkdir -p /logs/artifacts && echo hello > /logs/artifacts/answer.txt\n", complete=True)


@pytest.mark.docker
@pytest.mark.parametrize("engine", ["local", pytest.param("harbor", marks=pytest.mark.harbor)])
def test_a_changed_verifier_is_regraded_at_no_agent_cost(engine, userland, measure_env, request, tmp_path):
    """Measured once (cap 1, both passed): a single-step task and a two-step one, every verifier separate. The
    verifiers changed (the first wants another answer; the second step's gives 0.5): the second measure makes
    no model call, regrades both trials (each step of the two-step one on its own step's artifacts, every step
    graded again, the reward the mean of the new steps' rewards; its cap kept) and says so."""
    from engines_helpers import scripted_server

    single = _artifact_task(tmp_path / "tasks", userland)
    steps = _artifact_steps_task(tmp_path / "tasks", userland)
    jobs, out = tmp_path / "jobs", tmp_path / "depth.csv"
    with scripted_server(_answering_policy) as server:
        args = measure_args(
            tmp_path / "tasks", jobs, out, server.url, *engine_flags(engine, request), "--no-preflight", caps="1"
        )
        first = run_measure(args, measure_env)
        assert first.returncode == 0, first.stderr[-3000:]
        assert pl.read_csv(out).sort("task").select("task", "depth", "status").rows() == [
            ("measure-artifact", 1, "solved"),
            ("measure-artifact-steps", 1, "solved"),
        ]
        calls = server.count()
        assert calls > 0
        (single / "tests" / "test.sh").write_text(ARTIFACT_TEST.format(word="goodbye"))
        (steps / "steps" / "first" / "tests" / "test.sh").write_text(ARTIFACT_TEST.format(word="goodbye"))
        (steps / "steps" / "second" / "tests" / "test.sh").write_text(SECOND_STEP_TEST.format(reward=0.5))
        second = run_measure(args, measure_env)
        assert second.returncode == 0, second.stderr[-3000:]
        assert server.count() == calls, "a regrade costs no model call"
    assert "earlier task versions: 0 trial(s) reused, 2 regraded, 0 re-run" in second.stderr
    assert "2 of them regraded (the regrades count)" in second.stderr
    trials = dl.load_trials([jobs], cache=False)
    checksums = [dirhash_sha256(single), dirhash_sha256(steps)]
    regraded = trials.filter(pl.col("task_checksum").is_in(checksums)).sort("task")
    assert regraded.select("task", "cap", "model", "status", "reward").rows() == [
        ("measure-artifact", 1, "openai/m1", "fail", 0.0),
        ("measure-artifact-steps", 1, "openai/m1", "fail", 0.25),
    ]
    assert all(job.startswith("regrade__") for job in regraded["job"])
    assert pl.read_csv(out).sort("task").select("depth", "status", schema.TASK_CHECKSUM).rows() == [
        (None, "unsolved", checksum) for checksum in checksums
    ]
    # each step graded again by its own new verifier on its own step's artifacts
    graded_steps = dl.load_steps([jobs / job for job in regraded["job"].unique()], cache=False)
    assert graded_steps.select("step", "reward").rows() == [("first", 0.0), ("second", 0.5)]
    for job in regraded["job"].unique():
        config = json.loads(next((jobs / job).glob("*/config.json")).read_text())
        assert config["source_trial"]["action"] == "regrade"
    third = run_measure(args, measure_env)  # nothing left to do: the regrades are not made again
    assert third.returncode == 0, third.stderr[-3000:]
    assert dl.load_trials([jobs], cache=False).height == trials.height


def _recorded_steps_trial(trial: Path, task: Path, steps: list[str], *, artifacts: list[str]) -> Path:
    """A recorded multi-step trial of ``task`` (Harbor's files, as the runner writes them) that ran ``steps``,
    with saved artifacts for the steps in ``artifacts``."""
    from depthlab.io import harbor_writer as hw

    config = hw.trial_config(
        hw.task_config(task, "demo"), trial.name, trial.parent, hw.agent_config("terminus-2", "openai/m"), job_id="j"
    )
    now = "2026-01-01T00:00:00Z"
    records = [hw.step_result(name, agent_result=None, rewards={"reward": 1.0}) for name in steps]
    result = hw.trial_result(
        config, result_id="r", task_name=task.name, task_path=task, trial_dir=trial, source="demo",
        task_checksum="old", agent=hw.agent_info("terminus-2", "1", "openai/m"), agent_result=None,
        rewards={"reward": 1.0}, exception=None, started_at=now, finished_at=now, phases={}, step_results=records,
    )  # fmt: skip
    hw.write_json(trial / "config.json", config)
    hw.write_json(trial / "result.json", result)
    for name in artifacts:
        (trial / "steps" / name / "artifacts").mkdir(parents=True)
        (trial / "steps" / name / "artifacts" / "manifest.json").write_text("[]")
    return trial


def test_the_local_regrade_refuses_what_it_cannot_grade(tmp_path: Path) -> None:
    """A shared-mode task (or step), a trial recorded before the runner kept artifacts (graded on nothing, it
    would fail), and a multi-step trial whose recorded steps are not the task's (a gate stopped it: Harbor's
    regrade refuses it too) or whose step kept no artifacts."""
    from depthlab.runner.regrade import regrade_trial
    from depthlab.runner.task import load_task

    shared, separate, _, mixed, steps = _verifier_modes(tmp_path / "tasks")
    source = tmp_path / "jobs" / "fill__m__cap1" / "hello__abc"
    source.mkdir(parents=True)
    with pytest.raises(ValueError, match="shared mode"):
        regrade_trial(source, load_task(shared), tmp_path / "out", docker_client=None)
    with pytest.raises(ValueError, match=r"hello__abc: no artifacts/manifest\.json"):
        regrade_trial(source, load_task(separate), tmp_path / "out", docker_client=None)
    with pytest.raises(ValueError, match=r"its step\(s\) second verify in shared mode"):
        regrade_trial(source, load_task(mixed), tmp_path / "out", docker_client=None)
    jobs = tmp_path / "jobs" / "fill__m__cap1"
    stopped = _recorded_steps_trial(jobs / "steps__1", steps, ["first"], artifacts=["first"])
    with pytest.raises(ValueError, match=r"recorded steps \['first'\] are not the task's \['first', 'second'\]"):
        regrade_trial(stopped, load_task(steps), tmp_path / "out", docker_client=None)
    unsaved = _recorded_steps_trial(jobs / "steps__2", steps, ["first", "second"], artifacts=["first"])
    with pytest.raises(ValueError, match=r"steps__2: no steps/second/artifacts/manifest\.json"):
        regrade_trial(unsaved, load_task(steps), tmp_path / "out", docker_client=None)
    assert not (tmp_path / "out").exists()
