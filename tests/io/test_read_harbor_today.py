"""Harbor 0.26's formats read whole, on files written here (shaped after what Harbor 0.26 writes:
``harbor.models.task.config``, ``trial.result``, ``job.lock``, ``trajectories``); the same readers
are tested on files Harbor itself wrote in tests/harbor/test_harbor_today.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from io_helpers import write_trial

import depthlab as dl
from depthlab.io import LoadError, harbor_writer
from depthlab.io.harbor_lock import lock_stated_cap
from depthlab.io.harbor_task import NewerTaskFormatWarning, TaskFormatError, read_task


def _task(root: Path, name: str, toml: str, steps: dict[str, int] | None = None) -> Path:
    task = root / name
    task.mkdir(parents=True)
    (task / "task.toml").write_text(toml)
    (task / "instruction.md").write_text("do it now\n")
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\necho one\n")
    for step, lines in (steps or {}).items():
        (task / "steps" / step / "solution").mkdir(parents=True)
        (task / "steps" / step / "instruction.md").write_text(f"step {step} words here\n")
        (task / "steps" / step / "solution" / "solve.sh").write_text("# comment\n" + "echo x\n" * lines)
    return task


# ----------------------------------------------------------------------------------------- tasks


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2", "1.3", "1.4"])
def test_every_known_task_version_is_read(tmp_path, version):
    _task(tmp_path / "d", "t", f'schema_version = "{version}"\n[environment]\nallow_internet = false\n')
    row = dl.load_tasks(tmp_path / "d").row(0, named=True)
    assert (row["schema_version"], row["work"], row["network_mode"], row["note"]) == (version, 1, "no-network", None)


def test_a_newer_minor_version_is_read_with_a_warning_and_a_note_strict_raises(tmp_path):
    _task(tmp_path / "d", "t", 'schema_version = "1.9"\n')
    with pytest.warns(NewerTaskFormatWarning, match="newer than known"):
        row = dl.load_tasks(tmp_path / "d").row(0, named=True)
    assert row["work"] == 1
    assert "read as 1.4" in row["note"]
    with pytest.raises(LoadError, match=r"1\.9.*newer than known"):
        dl.load_tasks(tmp_path / "d", strict=True)


@pytest.mark.parametrize("version", ["2.0", "x"])
def test_any_other_version_is_read_as_harbor_reads_it_with_a_warning_and_a_note(tmp_path, version):
    # Harbor 0.26 reads any schema_version string (its handle_version_rename; nothing checks the value)
    _task(tmp_path / "d", "t", f'schema_version = "{version}"\n[environment]\nallow_internet = false\n')
    with pytest.warns(NewerTaskFormatWarning, match=f"{version}.*as Harbor 0.26 reads any version"):
        load = dl.read_tasks(tmp_path / "d")
    assert load.rejected == []
    row = load.tasks.row(0, named=True)
    assert (row["schema_version"], row["work"], row["network_mode"]) == (version, 1, "no-network")
    assert "read as 1.4" in row["note"]
    with pytest.raises(LoadError, match=f"{version}.*(newer than known|not one depthlab knows)"):
        dl.load_tasks(tmp_path / "d", strict=True)


def test_measure_reports_a_rejected_task_as_rejected_not_as_not_found(tmp_path, capsys):
    from depthlab import cli

    _task(tmp_path / "d", "t", 'schema_version = "1.4"\n[agent]\ntimeout_sec = "soon"\n')
    out = str(tmp_path / "d.csv")
    assert cli.main(["measure", str(tmp_path / "d"), "--models", "openai/m", "-o", out]) == 1
    err = capsys.readouterr().err
    assert "task rejected" in err
    assert "[agent].timeout_sec must be a finite number, got 'soon'" in err
    assert "1 task folders rejected" in err
    assert "no task folders found" not in err


def test_a_multi_step_task_has_the_sum_of_its_steps_w_and_a_steps_table(tmp_path):
    toml = (
        'schema_version = "1.4"\nmulti_step_reward_strategy = "final"\n'
        '[[steps]]\nname = "one"\nmin_reward = 1.0\n[steps.verifier]\nenvironment_mode = "separate"\n'
        '[[steps]]\nname = "two"\nmin_reward = {reward = 0.5, style = 1}\n'
        '[verifier]\nenvironment_mode = "shared"\n[environment]\nnetwork_mode = "allowlist"\n'
    )
    _task(tmp_path / "d", "multi", toml, {"one": 2, "two": 3})
    row = dl.load_tasks(tmp_path / "d").row(0, named=True)
    assert (row["n_steps"], row["work"], row["solution_lines_total"], row["instruction_words"]) == (2, 5, 7, 8)
    assert (row["reward_strategy"], row["network_mode"], row["verifier_mode"]) == ("final", "allowlist", "shared")
    steps = dl.load_task_steps(tmp_path / "d")
    assert steps.select("step_index", "step", "work", "min_reward", "verifier_mode").rows() == [
        (1, "one", 2, 1.0, "separate"),
        (2, "two", 3, None, "shared"),
    ]
    assert json.loads(steps["min_rewards"][1]) == {"reward": 0.5, "style": 1.0}
    spec = read_task(tmp_path / "d" / "multi")
    assert [step.tests_dir for step in spec.steps] == [str(tmp_path / "d" / "multi" / "tests")] * 2  # shared tests


def test_a_step_without_a_solution_leaves_w_null_with_a_reason(tmp_path):
    task = _task(tmp_path / "d", "multi", 'schema_version = "1.4"\n[[steps]]\nname = "a"\n[[steps]]\nname = "b"\n')
    (task / "steps" / "a" / "solution").mkdir(parents=True)
    (task / "steps" / "a" / "solution" / "solve.sh").write_text("echo\n")
    row = dl.load_tasks(tmp_path / "d").row(0, named=True)
    assert row["work"] is None
    assert row["work_note"] == "no steps/b/solution/solve.sh"


def test_bad_step_fields_are_rejections(tmp_path):
    for name, body in {
        "dup": '[[steps]]\nname = "a"\n[[steps]]\nname = "A"\n',
        "gate": '[[steps]]\nname = "a"\nmin_reward = "high"\n',
        "path": '[[steps]]\nname = "../x"\n',
    }.items():
        _task(tmp_path / "d", name, 'schema_version = "1.4"\n' + body)
    reasons = sorted(item.reason for item in dl.read_tasks(tmp_path / "d").rejected)
    assert reasons == [
        "step name 'A' is given twice",
        "steps[0].min_reward must be a finite number, got 'high'",
        "steps[0].name must be a folder name, got '../x'",
    ]
    with pytest.raises(TaskFormatError):
        read_task(tmp_path / "d" / "dup")


# ----------------------------------------------------------------------------------------- trajectories


def _atif(steps: int, version: str = "ATIF-v1.8", **extra) -> dict:
    body = [{"step_id": 1, "source": "user", "message": "go"}]
    body += [{"step_id": i + 2, "source": "agent", "message": "ls"} for i in range(steps)]
    return {"schema_version": version, "agent": {"name": "a", "version": "1"}, "steps": body, **extra}


def _trial_with_trajectory(folder: Path, trajectory: dict) -> Path:
    trial = write_trial(folder, agent_result={"metadata": None})
    (trial / "agent").mkdir()
    (trial / "agent" / "trajectory.json").write_text(json.dumps(trajectory))
    return trial


def test_atif_1_8_turns_are_n_and_subagents_are_counted_apart(tmp_path):
    nested = _atif(1, trajectory_id="inner")
    sub = _atif(4, trajectory_id="sub-1", subagent_trajectories=[nested])
    _trial_with_trajectory(tmp_path / "job" / "t__1", _atif(3, subagent_trajectories=[sub]))
    row = dl.read_trials(tmp_path / "job", cache=False).trials.row(0, named=True)
    assert (row["n_turns"], row["n_subagent_turns"]) == (3, 5)


def test_an_unknown_trajectory_version_costs_n_never_the_trial(tmp_path):
    _trial_with_trajectory(tmp_path / "job" / "t__1", _atif(3, version="ATIF-v2.0"))
    load = dl.read_trials(tmp_path / "job", cache=False)
    row = load.trials.row(0, named=True)
    assert load.rejected == []
    assert (row["reward"], row["status"], row["n_turns"]) == (1.0, "pass", None)
    assert [note.field for note in load.notes] == ["n_turns"]
    assert "unknown trajectory schema_version 'ATIF-v2.0' (known: ATIF-v1.0 to ATIF-v1.8)" in load.notes[0].reason
    with pytest.raises(LoadError, match=r"ATIF-v2\.0"):
        dl.read_trials(tmp_path / "job", cache=False, strict=True)


# ----------------------------------------------------------------------------------------- locks


def _lock(trial: Path, *texts: str) -> None:
    import hashlib

    digests = [{"path": None, "digest": "sha256:" + hashlib.sha256(text.encode()).hexdigest()} for text in texts]
    lock = {"schema_version": 2, "task": {"name": "t", "type": "local", "digest": "sha256:" + "ab" * 32}}
    (trial / "lock.json").write_text(json.dumps({**lock, "extra_instructions": digests or None}))


def test_a_lock_gives_the_task_digest_and_the_cap_its_instructions_state(tmp_path):
    job = tmp_path / "job"
    agent = {"name": "terminus-2", "model_name": "openai/m", "kwargs": {"max_turns": 5}}
    agree = write_trial(job / "agree__1", config={"agent": agent})
    _lock(agree, "Be brief.", harbor_writer.stated_cap_instructions(5)[0])
    differ = write_trial(job / "differ__1", config={"agent": agent})
    _lock(differ, harbor_writer.stated_cap_instructions(3)[0])
    plain = write_trial(job / "plain__1", config={"agent": agent})
    _lock(plain)
    rows = {row["trial"]: row for row in dl.load_trials(job, cache=False).iter_rows(named=True)}
    assert rows["agree__1"]["task_digest"] == "sha256:" + "ab" * 32
    assert [(rows[t]["cap"], rows[t]["cap_mismatch"]) for t in ("agree__1", "differ__1", "plain__1")] == [
        (5, False),
        (3, True),
        (None, None),
    ]
    assert lock_stated_cap(None) is None


def test_a_stated_cap_kwarg_that_differs_from_the_enforced_limit_is_flagged(tmp_path):
    agent = {"name": "terminus-2", "model_name": "openai/m", "kwargs": {"stated_cap": 5, "max_turns": 10}}
    write_trial(tmp_path / "job" / "t__1", config={"agent": agent})
    row = dl.load_trials(tmp_path / "job", cache=False).row(0, named=True)
    assert (row["cap"], row["turn_limit"], row["cap_mismatch"]) == (5, 10, True)


def test_an_unreadable_lock_costs_the_digest_only(tmp_path):
    trial = write_trial(tmp_path / "job" / "t__1")
    (trial / "lock.json").write_text("{not json")
    load = dl.read_trials(tmp_path / "job", cache=False)
    assert load.trials.height == 1
    assert load.trials["task_digest"][0] is None
    assert [note.field for note in load.notes] == ["task_digest"]


# ----------------------------------------------------------------------------------------- multi-step trials


def _multi_trial(folder: Path, step_rewards: list[float | None], *, strategy: str = "mean", recorded: bool = True):
    """A multi-step trial written with depthlab's Harbor writer (one turn per step per reward point + 1)."""
    steps = [
        harbor_writer.step_result(
            f"s{index}",
            agent_result=harbor_writer.agent_result(n_input_tokens=100 * index, metadata={"n_episodes": index}),
            rewards=None if reward is None else {"reward": reward},
        )
        for index, reward in enumerate(step_rewards, start=1)
    ]
    total = harbor_writer.multi_step_rewards([harbor_writer.step_rewards(step) for step in steps], strategy)
    fields = {
        "agent_result": None,
        "step_results": [harbor_writer.as_object(step) for step in steps],
        "verifier_result": {"rewards": total} if recorded else ...,
    }
    return write_trial(folder, **fields)


def test_a_multi_step_trial_sums_its_steps_and_names_its_first_failed_step(tmp_path):
    _multi_trial(tmp_path / "job" / "t__1", [1.0, 0.0])
    row = dl.read_trials(tmp_path / "job", cache=False).trials.row(0, named=True)
    assert (row["reward"], row["status"], row["n_turns"], row["n_input_tokens"]) == (0.5, "fail", 3, 300)
    assert (row["n_steps"], row["steps_passed"], row["first_failed_step"]) == (2, 1, 2)


def test_declared_steps_not_run_are_skipped_in_load_steps(tmp_path):
    task = _task(
        tmp_path / "tasks",
        "t",
        'schema_version = "1.4"\n' + "".join(f'[[steps]]\nname = "s{i}"\nmin_reward = 1.0\n' for i in (1, 2, 3)),
    )
    trial = _multi_trial(tmp_path / "job" / "t__1", [1.0, 0.0])
    result = json.loads((trial / "result.json").read_text())
    (trial / "result.json").write_text(json.dumps({**result, "task_id": {"path": str(task)}}))
    row = dl.read_trials(tmp_path / "job", cache=False).trials.row(0, named=True)
    assert (row["n_steps"], row["steps_passed"], row["first_failed_step"]) == (3, 1, 2)
    steps = dl.load_steps(tmp_path / "job", cache=False)
    assert steps.select("step_index", "step", "status", "reward", "n_turns").rows() == [
        (1, "s1", "pass", 1.0, 1),
        (2, "s2", "fail", 0.0, 2),
        (3, "s3", "skipped", None, None),
    ]


@pytest.mark.parametrize(("strategy", "expected"), [("mean", 2 / 3), ("final", 1.0)])
def test_an_unrecorded_trial_reward_is_computed_by_the_tasks_strategy(tmp_path, strategy, expected):
    task = _task(
        tmp_path / "tasks",
        "t",
        f'schema_version = "1.4"\nmulti_step_reward_strategy = "{strategy}"\n'
        + "".join(f'[[steps]]\nname = "s{i}"\n' for i in (1, 2, 3)),
    )
    trial = _multi_trial(tmp_path / "job" / "t__1", [1.0, 0.0, 1.0], recorded=False)
    result = json.loads((trial / "result.json").read_text())
    (trial / "result.json").write_text(json.dumps({**result, "task_id": {"path": str(task)}}))
    load = dl.read_trials(tmp_path / "job", cache=False)
    assert load.trials["reward"][0] == pytest.approx(expected)
    assert [note.field for note in load.notes] == ["reward"]


def test_a_bad_step_results_list_rejects_the_trial_alone(tmp_path):
    write_trial(tmp_path / "job" / "good__1")
    write_trial(tmp_path / "job" / "bad__1", step_results=[{"step_name": "a", "verifier_result": {"rewards": "x"}}])
    load = dl.read_trials(tmp_path / "job", cache=False)
    assert load.trials["trial"].to_list() == ["good__1"]
    assert [("step_results" in item.reason, Path(item.path).parent.name) for item in load.rejected] == [
        (True, "bad__1")
    ]
