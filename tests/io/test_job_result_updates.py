"""A job's result.json is updated trial by trial: each trial's result.json read once, not the whole job each time."""

from __future__ import annotations

import json
from pathlib import Path

from depthlab.io import harbor_writer as hw
from depthlab.io.harbor import read_trial_result, record_exception
from depthlab.runner.output import JobDir

MODEL = "openai/gpt-5"
STARTED = "2026-03-01T12:00:00Z"
FINISHED = "2026-03-01T12:01:00Z"


def _add_trial(job: JobDir, task: str, reward: float | None) -> Path:
    """One finished trial written into ``job`` by the writer, as the runner writes it."""
    trial_dir = job.new_trial_dir(task)
    agent = hw.agent_config("oracle", MODEL, {})
    config = hw.trial_config(hw.task_config(f"tasks/{task}", "suite"), trial_dir.name, job.path, agent, job_id=job.id)
    result = hw.trial_result(
        config,
        result_id=f"r-{trial_dir.name}",
        task_name=task,
        task_path=f"tasks/{task}",
        trial_dir=trial_dir,
        source="suite",
        task_checksum="sum",
        agent=hw.agent_info("oracle", "1", MODEL),
        agent_result=hw.agent_result(10, 0, 1, None, None),
        rewards=None if reward is None else {"reward": reward},
        exception=None,
        started_at=STARTED,
        finished_at=FINISHED,
        phases={"environment_setup": hw.phase(STARTED, FINISHED)},
    )
    hw.write_json(trial_dir / "result.json", result)
    return trial_dir


def _stats(job_path: Path) -> dict:
    return json.loads((job_path / "result.json").read_text())["stats"]


def _recomputed(job: JobDir) -> dict:
    """The stats of the same trials read whole by a fresh reader (the old way: every file, once)."""
    fresh = JobDir(job.path.parent, job.name, job.config)
    trials = fresh.trial_results()
    result = hw.job_result(fresh.id, trials, started_at=STARTED, updated_at=STARTED, finished_at=None)
    return json.loads(hw.encode(result))["stats"]


def test_each_trial_is_read_once_and_the_stats_match_a_full_read(tmp_path: Path) -> None:
    job = JobDir(tmp_path, "job", {"n_attempts": 1})
    rewards = [1.0, 0.0, 1.0, None, 1.0, 0.0]
    for index, reward in enumerate(rewards):
        _add_trial(job, f"task-{index % 2}", reward)
        job.update_result()
        assert job.n_reads == index + 1  # the old update re-read every trial: 1 + 2 + ... + n reads
    assert _stats(job.path) == _recomputed(job)
    assert _stats(job.path)["n_completed_trials"] == len(rewards)
    job.update_result(finished=True)
    assert job.n_reads == len(rewards)  # nothing changed: nothing read
    assert json.loads((job.path / "result.json").read_text())["finished_at"] is not None


def test_a_rewritten_trial_is_read_again_and_a_removed_one_dropped(tmp_path: Path) -> None:
    job = JobDir(tmp_path, "job", {"n_attempts": 1})
    passed = _add_trial(job, "alpha", 1.0)
    gone = _add_trial(job, "beta", 0.0)
    job.update_result()
    assert job.n_reads == 2
    timeout = hw.exception_info("VerifierTimeoutError", "slow", "", FINISHED)
    record_exception(read_trial_result(passed / "result.json"), timeout, drop_rewards=True)
    for file in gone.iterdir():
        file.unlink()
    gone.rmdir()
    job.update_result()
    assert job.n_reads == 3  # only the rewritten trial
    stats = _stats(job.path)
    assert stats == _recomputed(job)
    assert stats["n_completed_trials"] == 1
    assert stats["n_errored_trials"] == 1
    (evals,) = stats["evals"].values()
    assert evals["exception_stats"] == {"VerifierTimeoutError": [passed.name]}


def test_a_resumed_job_reads_its_trials_once_and_skips_an_unreadable_one(tmp_path: Path) -> None:
    first = JobDir(tmp_path, "job", {"n_attempts": 1})
    for index in range(3):
        _add_trial(first, f"task-{index}", 1.0)
    broken = first.new_trial_dir("broken")
    (broken / "result.json").write_text("{not json")
    resumed = JobDir(tmp_path, "job", {"n_attempts": 1})
    assert len(resumed.trial_results()) == 3
    resumed.update_result()
    assert resumed.n_reads == 4  # each file once, the unreadable one included, and not again until it changes
    assert _stats(resumed.path)["n_completed_trials"] == 3
    hw.write_text(broken / "result.json", "{still not json}")  # changed: read again, still left out
    resumed.update_result()
    assert resumed.n_reads == 5
    assert _stats(resumed.path)["n_completed_trials"] == 3
