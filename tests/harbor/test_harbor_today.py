"""depthlab reads what today's Harbor (0.26, the side venv) writes: ``harbor tasks init`` output, a
3-step task FROM the Debian userland run by Harbor's oracle (a right run, and a run whose second
step is wrong), and terminus-2 against a scripted model on 127.0.0.1 writing ATIF-v1.8 trajectories
for a single-step and a 2-step task. Harbor's own files are the truth every number is checked against.

Skips with the reason without Harbor, Docker or the userland image; fails instead under
``DEPTHLAB_REQUIRE_HARBOR=1`` / ``DEPTHLAB_REQUIRE_DOCKER=1``.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engines"))
from engines_helpers import scripted_server
from harbor_runs import run_job, tasks_init, write_multistep_task, write_single_task, writing_policy

import depthlab as dl
from depthlab.io import harbor_writer, read_steps
from depthlab.io.tasks import count_work

pytestmark = pytest.mark.harbor

CAP = 5


def _results(job: Path) -> dict[str, dict]:
    """Task folder name -> Harbor's result.json of its trial in ``job``."""
    out = {}
    for path in sorted(job.glob("*/result.json")):
        result = json.loads(path.read_text())
        out[result["task_name"].rsplit("/", 1)[-1]] = result
    return out


# ------------------------------------------------------------------------------------- tasks init


def test_harbor_tasks_init_output_loads_with_its_w(harbor_python, tmp_path):
    tasks_init(harbor_python, tmp_path / "tasks", "demo/single")
    multi = tasks_init(harbor_python, tmp_path / "tasks", "demo/multi", "--steps", "3")
    for index in (1, 2, 3):  # give each step's scaffolded solution `index` working lines
        solve = multi / "steps" / f"step-{index}" / "solution" / "solve.sh"
        solve.write_text(solve.read_text() + "\n" + "echo work >> /app/log\n" * index)
    single_solve = (tmp_path / "tasks" / "single" / "solution" / "solve.sh").read_text()
    tasks = dl.load_tasks(tmp_path / "tasks")
    rows = {row["task"]: row for row in tasks.iter_rows(named=True)}
    assert set(rows) == {"single", "multi"}
    assert {row["schema_version"] for row in rows.values()} == {"1.4"}  # what Harbor 0.26 writes
    assert (rows["single"]["work"], rows["single"]["n_steps"]) == (count_work(single_solve)[0], None)
    assert (rows["multi"]["work"], rows["multi"]["n_steps"], rows["multi"]["reward_strategy"]) == (6, 3, "mean")
    assert {(row["network_mode"], row["verifier_mode"]) for row in rows.values()} == {("public", "separate")}
    steps = dl.load_task_steps(tmp_path / "tasks")
    assert steps.select("step_index", "step", "work").rows() == [(1, "step-1", 1), (2, "step-2", 2), (3, "step-3", 3)]


# ------------------------------------------------------------------------------------- the oracle


@pytest.fixture(scope="module")
def oracle_job(userland, harbor_cmd, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("harbor-today-oracle")
    write_multistep_task(root / "tasks", "hr26-steps-right", userland)
    write_multistep_task(root / "tasks", "hr26-steps-wrong2", userland, wrong=[2])
    # no gate, final step decides: Harbor runs every step and takes the last one's reward
    write_multistep_task(root / "tasks", "hr26-steps-final", userland, wrong=[2], strategy="final", min_reward=None)
    return run_job(harbor_cmd, root / "jobs", "hr26-oracle", root / "tasks", harbor_writer.agent_config("oracle", None))


@pytest.mark.docker
def test_oracle_steps_load_as_harbor_recorded_them(oracle_job):
    harbor = _results(oracle_job)
    trials = dl.load_trials(oracle_job.parent, cache=False)
    assert trials.height == 3
    for row in trials.iter_rows(named=True):
        result = harbor[row["task"]]
        assert row["reward"] == result["verifier_result"]["rewards"]["reward"]  # Harbor's own trial reward
    rows = {row["task"]: row for row in trials.iter_rows(named=True)}
    expect = {  # (reward, status, n_steps, steps_passed, first_failed_step)
        "hr26-steps-right": (1.0, "pass", 3, 3, None),
        "hr26-steps-wrong2": (0.5, "fail", 3, 1, 2),  # mean over the steps that ran; step 3 gated
        "hr26-steps-final": (1.0, "pass", 3, 2, 2),  # no gate: the final step's reward
    }
    got = {
        task: tuple(rows[task][c] for c in ("reward", "status", "n_steps", "steps_passed", "first_failed_step"))
        for task in expect
    }
    assert got == expect
    steps = dl.load_steps(oracle_job.parent, cache=False)
    for task, result in harbor.items():
        ran = [(s["step_name"], s["verifier_result"]["rewards"]["reward"]) for s in result["step_results"]]
        mine = steps.filter(pl.col("task") == task).sort("step_index")
        assert mine.filter(pl.col("status") != "skipped").select("step", "reward").rows() == ran
    assert steps.filter(pl.col("task") == "hr26-steps-wrong2")["status"].to_list() == ["pass", "fail", "skipped"]


@pytest.mark.docker
def test_oracle_trials_get_their_lock_digest_and_their_tasks_w(oracle_job):
    trials = dl.load_trials(oracle_job.parent, cache=False)
    for row in trials.iter_rows(named=True):
        lock = json.loads((Path(row["source"]).parent / "lock.json").read_text())
        assert row["task_digest"] == lock["task"]["digest"]
    tasks = dl.load_tasks(oracle_job.parent.parent / "tasks")
    assert tasks["work"].to_list() == [6, 6, 6]  # 1 + 2 + 3 working lines over the three steps


@pytest.mark.docker
def test_a_trial_reward_harbor_did_not_record_is_computed_as_harbor_computes_it(oracle_job, tmp_path):
    copy = tmp_path / "jobs" / oracle_job.name
    shutil.copytree(oracle_job, copy)
    for path in copy.glob("*/result.json"):
        result = json.loads(path.read_text())
        result.pop("verifier_result")
        path.write_text(json.dumps(result))
    mine = dl.read_trials(copy, cache=False)
    original = dl.load_trials(oracle_job.parent, cache=False)
    assert mine.trials.sort("task")["reward"].to_list() == original.sort("task")["reward"].to_list()
    assert {note.field for note in mine.notes} == {"reward"}


# ------------------------------------------------------------------------------------- terminus-2


@pytest.fixture(scope="module")
def terminus_job(userland, harbor_cmd, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("harbor-today-terminus")
    write_single_task(root / "tasks", "hr26-t2-single", userland)
    write_multistep_task(root / "tasks", "hr26-t2-steps", userland, n_steps=2)
    with scripted_server(writing_policy) as server:
        agent = harbor_writer.agent_config(
            "terminus-2", "openai/scripted", {harbor_writer.TURN_LIMIT_KEY: CAP, "api_base": server.url}
        )
        return run_job(
            harbor_cmd,
            root / "jobs",
            "hr26-terminus",
            root / "tasks",
            agent,
            extra_instructions=harbor_writer.stated_cap_instructions(CAP),
            env={"OPENAI_API_KEY": "sk-depthlab-harbor-today"},
        )


def _episodes(result: dict) -> int:
    if result.get("step_results"):
        return sum(step["agent_result"]["metadata"]["n_episodes"] for step in result["step_results"])
    return result["agent_result"]["metadata"]["n_episodes"]


@pytest.mark.docker
def test_terminus_trajectories_are_atif_1_8_and_their_n_is_read(terminus_job):
    versions = {json.loads(p.read_text())["schema_version"] for p in terminus_job.rglob("trajectory.json")}
    assert versions == {"ATIF-v1.8"}
    harbor = _results(terminus_job)
    trials = dl.load_trials(terminus_job.parent, cache=False)
    got = {row["task"]: (row["n_turns"], row["cap"], row["cap_mismatch"]) for row in trials.iter_rows(named=True)}
    assert got == {task: (_episodes(result), CAP, False) for task, result in harbor.items()}
    assert all(n >= 1 for n, _, _ in got.values())


@pytest.mark.docker
def test_without_n_episodes_n_comes_from_the_atif_1_8_trajectories(terminus_job, tmp_path):
    copy = tmp_path / "jobs" / terminus_job.name
    shutil.copytree(terminus_job, copy)
    for path in copy.glob("*/result.json"):
        result = json.loads(path.read_text())
        for context in [result.get("agent_result"), *(s["agent_result"] for s in result.get("step_results") or [])]:
            if context and context.get("metadata"):
                context["metadata"].pop("n_episodes")
        path.write_text(json.dumps(result))
    harbor = _results(terminus_job)
    load = dl.read_trials(copy, cache=False)
    assert load.rejected == []
    assert load.notes == []
    got = {row["task"]: row["n_turns"] for row in load.trials.iter_rows(named=True)}
    assert got == {task: _episodes(result) for task, result in harbor.items()}
    steps = dl.load_steps(copy, cache=False)
    harbor_steps = harbor["hr26-t2-steps"]["step_results"]
    assert steps["n_turns"].to_list() == [s["agent_result"]["metadata"]["n_episodes"] for s in harbor_steps]


@pytest.mark.docker
def test_read_steps_of_a_multi_step_trial_reads_its_steps_trajectories(terminus_job):
    # issue 36: read_steps raised "no agent/trajectory.json" on a multi-step trial, whose N the trials
    # table takes from steps/*/agent/trajectory.json; its rows are now the steps' turns, in step order
    trials = dl.load_trials(terminus_job.parent, cache=False)
    for row in trials.iter_rows(named=True):
        turns = read_steps(Path(row["source"]).parent)
        assert turns.height == row["n_turns"], row["task"]
        assert turns["turn"].to_list() == list(range(1, row["n_turns"] + 1))
    (multi,) = [row for row in trials.iter_rows(named=True) if row["task"] == "hr26-t2-steps"]
    first = read_steps(Path(multi["source"]).parent, prompt=True).row(0, named=True)
    assert "ok-1" in first["observation"]  # the first step's instruction, as terminus-2 was given it


def test_the_writers_multi_step_trial_passes_harbors_models(harbor_check, tmp_path):
    steps = [
        harbor_writer.step_result(
            f"step-{index}",
            agent_result=harbor_writer.agent_result(n_input_tokens=10, metadata={"n_episodes": index}),
            rewards={"reward": reward},
            agent_execution=harbor_writer.phase("2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"),
        )
        for index, reward in ((1, 1.0), (2, 0.0))
    ]
    config = harbor_writer.trial_config(
        harbor_writer.task_config("tasks/t", "demo"),
        "t__abcdefg",
        "jobs/j",
        harbor_writer.agent_config("terminus-2", "openai/m"),
        job_id="00000000-0000-4000-8000-000000000000",
    )
    result = harbor_writer.trial_result(
        config,
        result_id="00000000-0000-4000-8000-000000000001",
        task_name="t",
        task_path="tasks/t",
        trial_dir=tmp_path / "j" / "t__abcdefg",
        source="demo",
        task_checksum="0" * 64,
        agent=harbor_writer.agent_info("terminus-2", "2.0.0", "openai/m"),
        agent_result=None,
        rewards=harbor_writer.multi_step_rewards([harbor_writer.step_rewards(step) for step in steps]),
        exception=None,
        started_at="2026-01-01T00:00:00Z",
        finished_at="2026-01-01T00:03:00Z",
        phases={},
        step_results=steps,
    )
    path = tmp_path / "j" / "t__abcdefg" / "result.json"
    path.parent.mkdir(parents=True)
    harbor_writer.write_json(path, result)
    assert harbor_check([("trial_result", path)]) == {str(path): None}
    row = dl.load_trials(tmp_path / "j", cache=False).row(0, named=True)
    assert (row["reward"], row["n_turns"], row["n_steps"], row["first_failed_step"]) == (0.5, 3, 2, 2)
