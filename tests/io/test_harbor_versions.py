"""Harbor's own meaning, by the version that ran a job (depthlab.io.harbor_versions).

The real TMax job (Harbor 0.6.6, which wrote neither ``reward_valid`` nor any exception's policy) is judged
by Harbor 0.26's own ``TrialResult`` in its side venv; the version rules run on job folders written here.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import polars as pl
import pytest
from io_helpers import DROID_RUN, write_trial

from depthlab import estimate_depth
from depthlab.io import load_steps, read_trials
from depthlab.io.harbor_versions import STEPS_ISOLATED_SINCE, harbor_version_key
from depthlab.simulate import write_runs

TMAX = Path("tb2-jobs") / "tmax-27b" / "terminal-bench-2-0"
AGENT_ENDED = '{"should_retry":false,"should_grade":true,"has_valid_reward":true}'


@pytest.fixture
def tmax(shared_data: Path) -> Path:
    job = shared_data / TMAX
    if not job.is_dir():
        pytest.skip(f"the real TMax job is not at {job}")
    return job


def _job(folder: Path, version: str | None, retry: dict | None = None) -> Path:
    """A job folder: its lock.json naming ``version`` (none when None), its config.json with ``retry``."""
    folder.mkdir(parents=True, exist_ok=True)
    if version is not None:
        lock = {"schema_version": 1, "harbor": {"version": version}, "n_concurrent_trials": 1, "trials": []}
        (folder / "lock.json").write_text(json.dumps(lock))
    if retry is not None:
        (folder / "config.json").write_text(json.dumps({"job_name": folder.name, "retry": retry}))
    return folder


def _steps(*rewards: float) -> list[dict]:
    return [
        {
            "step_name": f"step-{index}",
            "agent_result": {"metadata": {"n_episodes": 2}},
            "verifier_result": {"rewards": {"reward": reward}},
        }
        for index, reward in enumerate(rewards, start=1)
    ]


def _multi_step(job: Path, name: str = "demo-task__ms", reward: float = 1.0, n_steps: int = 2) -> Path:
    cap = {"stated_cap": 1, "max_turns": 1}
    config = {"agent": {"name": "terminus-2", "model_name": "openai/gpt-5", "kwargs": cap}, "trials_dir": str(job)}
    return write_trial(
        job / name,
        config=config,
        step_results=_steps(*([reward] * n_steps)),
        verifier_result={"rewards": {"reward": reward}},
    )


def _timed_out(job: Path, **fields) -> Path:
    exception = {"exception_type": "AgentTimeoutError", "exception_message": "timed out", **fields}
    return write_trial(job / "demo-task__timeout", exception_info=exception)


def _row(folder: Path, **options) -> dict:
    load = read_trials(folder, cache=False, **options)
    assert load.trials.height == 1, load.summary()
    return load.trials.row(0, named=True)


# ------------------------------------------------------------------ the real job, judged by Harbor 0.26


def test_real_tmax_job_passes_equal_its_own_mean_reward_and_name_its_harbor(tmax):
    trials = read_trials(tmax, cache=False).trials
    job = json.loads((tmax / "result.json").read_text())
    (stats,) = job["stats"]["evals"].values()
    mean = stats["metrics"][0]["mean"]
    assert trials.height == job["n_total_trials"] == 445
    passes = int(trials["passed"].sum())
    assert passes == 190
    assert passes / trials.height == pytest.approx(mean, abs=1e-12)  # the job's own mean reward
    assert trials["harbor_version"].unique().to_list() == ["0.6.6"]
    assert trials["version_note"].null_count() == trials.height  # a single-step job: nothing to flag
    assert trials.filter(pl.col("status") == "invalid").height == 0


_HARBOR_JUDGE = """
import json, pathlib, sys
from harbor.models.job.config import JobConfig
from harbor.models.trial.result import TrialResult
job = pathlib.Path(sys.argv[1])
retry = JobConfig.model_validate_json((job / "config.json").read_bytes()).retry
out = {}
for path in sorted(job.glob("*/result.json")):
    result = TrialResult.model_validate_json(path.read_bytes())
    first = result.recorded_exceptions()[:1]
    policy = None
    if first:
        p = first[0].policy
        policy = {"should_retry": retry.is_retryable(first[0].exception_type), "should_grade": p.should_grade,
                  "has_valid_reward": p.has_valid_reward}
    out[str(path)] = [result.reward_valid, policy]
print(json.dumps(out))
"""


@pytest.mark.harbor
def test_real_tmax_reward_valid_and_policies_are_harbor_026s_own(tmax, harbor_python, harbor_env):
    done = subprocess.run(
        [str(harbor_python), "-c", _HARBOR_JUDGE, str(tmax)], capture_output=True, text=True, env=harbor_env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    harbor = json.loads(done.stdout)
    trials = read_trials(tmax, cache=False).trials
    ours = {
        source: [valid, None if policy is None else json.loads(policy)]
        for source, valid, policy in trials.select("source", "harbor_reward_valid", "exception_policy").iter_rows()
    }
    assert len(harbor) == 445
    assert ours == harbor
    assert sum(valid for valid, _ in harbor.values()) == 444  # the one timed-out trial with no reward


# ------------------------------------------------------------------ multi-step trials before the fix


def test_multi_step_trial_of_harbor_before_the_fix_is_invalid_with_the_reason(tmp_path):
    job = _job(tmp_path / "j", "0.23.0")
    _multi_step(job)
    row = _row(job)
    assert (row["status"], row["passed"], row["harbor_version"]) == ("invalid", None, "0.23.0")
    assert "Harbor 0.23.0" in row["version_note"]
    assert "/tests" in row["version_note"]
    assert "include_leaky_steps=True keeps it" in row["version_note"]
    assert row["harbor_reward_valid"] is True  # Harbor's own verdict is untouched: the status says the rest


def test_the_load_summary_counts_the_flagged_trials(tmp_path):
    job = _job(tmp_path / "j", "0.23.0")
    _multi_step(job, "demo-task__a")
    _multi_step(job, "demo-task__b", reward=0.0)
    summary = read_trials(job, cache=False).summary()
    assert "invalid 2" in summary
    assert "multi-step trials run before Harbor isolated its steps 2 (see version_note)" in summary


def test_include_leaky_steps_keeps_the_trial_and_its_note(tmp_path):
    job = _job(tmp_path / "j", "0.23.0")
    _multi_step(job)
    row = _row(job, include_leaky_steps=True)
    assert (row["status"], row["passed"]) == ("pass", True)
    assert "kept (include_leaky_steps=True)" in row["version_note"]


@pytest.mark.parametrize(
    ("version", "n_steps", "flagged"),
    [("0.24.0", 2, False), ("0.26.0", 2, False), (None, 2, False), ("0.23.0", 1, False), ("0.6.6", 3, True)],
)
def test_only_multi_step_trials_of_a_known_older_harbor_are_flagged(tmp_path, version, n_steps, flagged):
    job = _job(tmp_path / "j", version)
    _multi_step(job, n_steps=n_steps)
    row = _row(job)
    assert (row["version_note"] is not None) is flagged
    assert row["status"] == ("invalid" if flagged else "pass")
    assert row["harbor_version"] == version


def test_a_leaky_pass_leaves_d_and_comes_back_with_include_leaky_steps(tmp_path):
    job = _job(tmp_path / "j", "0.20.1")
    _multi_step(job, reward=1.0)
    assert estimate_depth(read_trials(job, cache=False).trials)["depth"].to_list() == [None]
    kept = read_trials(job, cache=False, include_leaky_steps=True).trials
    assert estimate_depth(kept)["depth"].to_list() == [1]


def test_include_leaky_steps_on_the_command_line(tmp_path, capsys):
    """``--include-leaky-steps``: the D of ``depth`` (the load every verb of run logs shares) and the statuses
    ``trials`` writes come back, as the Python API's ``include_leaky_steps=True`` gives them."""
    import argparse

    from depthlab import cli

    job = _job(tmp_path / "j", "0.20.1")
    _multi_step(job, reward=1.0)
    out, kept = tmp_path / "d.csv", tmp_path / "kept.csv"
    assert cli.main(["depth", str(job), "-o", str(out)]) == 0
    assert cli.main(["depth", str(job), "-o", str(kept), "--include-leaky-steps"]) == 0
    assert pl.read_csv(out)["depth"].to_list() == [None]
    assert pl.read_csv(kept)["depth"].to_list() == [1]
    assert cli.main(["trials", str(job), "-o", str(out), "--no-cache"]) == 0
    assert cli.main(["trials", str(job), "-o", str(kept), "--no-cache", "--include-leaky-steps"]) == 0
    assert pl.read_csv(out)["status"].to_list() == ["invalid"]
    assert pl.read_csv(kept)["status"].to_list() == ["pass"]
    assert "kept (include_leaky_steps=True)" in pl.read_csv(kept)["version_note"][0]
    for verb in ("depth", "plan", "export", "proxy", "trials"):  # every verb that loads run logs takes it
        parser = argparse.ArgumentParser()
        cli._command(verb).add_arguments(parser)
        assert parser.get_default("include_leaky_steps") is False, verb
        assert "--include-leaky-steps" in parser.format_help(), verb
    capsys.readouterr()


def test_load_steps_flags_the_steps_a_leaky_harbor_ran_after_another(tmp_path):
    """The simulator's multi-step trials (Harbor 0.26's full layout, each step's trajectory under
    ``steps/<name>/agent``), one job's lock naming a Harbor before the fix, another's the fix's release."""
    summary = write_runs(tmp_path / "sim", seed=3, scale=0.02, public_attempts=1, segments_as="steps")
    before = load_steps(summary.jobs_dir, cache=False)
    later_passes = before.filter((pl.col("step_index") > 1) & (pl.col("status") == "pass")).group_by("job").len()
    leaky_name, fixed_name = later_passes.sort("len", "job", descending=True)["job"].to_list()[:2]
    leaky_job, fixed_job = (summary.jobs_dir / "depth" / name for name in (leaky_name, fixed_name))
    _job(leaky_job, "0.23.0")
    _job(fixed_job, "0.24.0")

    def rows(table: pl.DataFrame, job: str) -> pl.DataFrame:
        return table.filter(pl.col("job") == job).sort("trial", "step_index")

    steps = load_steps([leaky_job, fixed_job], cache=False)
    leaky, fixed = rows(steps, leaky_name), rows(steps, fixed_name)
    assert leaky["harbor_version"].unique().to_list() == ["0.23.0"]
    assert fixed["harbor_version"].unique().to_list() == ["0.24.0"]
    # the fix's release: nothing flagged, every step as it ran
    assert fixed["version_note"].null_count() == fixed.height
    assert fixed["status"].to_list() == rows(before, fixed_name)["status"].to_list()
    # before it: a trial's first step ran before any verifier (as it ran, no note); every later step carries
    # its trial's note and is invalid, unless a gate skipped it
    notes = dict(read_trials(leaky_job, cache=False).trials.select("trial", "version_note").iter_rows())
    first, later = leaky.filter(pl.col("step_index") == 1), leaky.filter(pl.col("step_index") > 1)
    assert first["version_note"].null_count() == first.height
    assert first["status"].to_list() == rows(before, leaky_name).filter(pl.col("step_index") == 1)["status"].to_list()
    assert later["version_note"].to_list() == [notes[trial] for trial in later["trial"]]
    assert all("Harbor 0.23.0" in note for note in later["version_note"])
    ran = rows(before, leaky_name).filter(pl.col("step_index") > 1)["status"]
    assert later["status"].to_list() == ["skipped" if status == "skipped" else "invalid" for status in ran]
    assert (ran == "pass").sum() >= 1  # a pass the flag takes away
    # include_leaky_steps keeps every status, the note saying so
    kept = rows(load_steps(leaky_job, cache=False, include_leaky_steps=True), leaky_name)
    assert kept["status"].to_list() == rows(before, leaky_name)["status"].to_list()
    assert all("kept (include_leaky_steps=True)" in note for note in kept["version_note"].drop_nulls())
    assert kept["version_note"].null_count() == first.height


def test_the_fix_version_is_harbors_first_release_after_0_23_0():
    assert STEPS_ISOLATED_SINCE == (0, 24)
    last_leaky, first_fixed = harbor_version_key("0.23.0"), harbor_version_key("0.24.0rc1")
    assert last_leaky is not None
    assert first_fixed is not None
    assert last_leaky < STEPS_ISOLATED_SINCE <= first_fixed


# ------------------------------------------------------------------ reward_valid and the error policy


def test_pre_026_policy_retries_as_the_jobs_filter_said(tmp_path):
    # Harbor 0.26's table never retries an agent's timeout; this older job's filter excluded nothing
    job = _job(tmp_path / "j", "0.20.0", retry={"max_retries": 2, "exclude_exceptions": []})
    _timed_out(job)
    policy = json.loads(_row(job)["exception_policy"])
    assert policy == {"should_retry": True, "should_grade": True, "has_valid_reward": True}


def test_a_026_job_keeps_harbors_table_whatever_its_filter(tmp_path):
    job = _job(tmp_path / "j", "0.26.0", retry={"max_retries": 2, "exclude_exceptions": []})
    _timed_out(job)
    assert _row(job)["exception_policy"] == AGENT_ENDED


def test_a_recorded_override_makes_the_reward_invalid(tmp_path):
    job = _job(tmp_path / "j", "0.26.0")
    _timed_out(job, policy_override={"has_valid_reward": False})
    row = _row(job)
    assert json.loads(row["exception_policy"])["has_valid_reward"] is False
    assert (row["harbor_reward_valid"], row["status"]) == (False, "invalid")


def test_a_recorded_reward_valid_wins_over_the_rule(tmp_path):
    job = _job(tmp_path / "j", "0.26.0")
    write_trial(job / "demo-task__x", reward_valid=False)
    row = _row(job)
    assert (row["harbor_reward_valid"], row["exception_policy"], row["status"]) == (False, None, "invalid")


def test_an_older_jobs_embedded_trials_are_read_with_its_version(tmp_path):
    job = _job(tmp_path / "j", "0.5.0")
    entry = json.loads(write_trial(tmp_path / "scratch" / "demo-task__e").joinpath("result.json").read_text())
    (job / "result.json").write_text(json.dumps({"id": "j", "trial_results": [entry]}))
    row = _row(job)
    assert row["source"].endswith("result.json#trial_results[0]")
    assert (row["harbor_version"], row["harbor_reward_valid"]) == ("0.5.0", True)


# ------------------------------------------------------------------ bad job files, the cache, TB1


def test_a_broken_lock_costs_only_the_version_with_a_note(tmp_path):
    job = _job(tmp_path / "j", None)
    (job / "lock.json").write_text("{not json")
    _multi_step(job)
    load = read_trials(job, cache=False)
    row = load.trials.row(0, named=True)
    assert (row["harbor_version"], row["status"]) == (None, "pass")
    (note,) = load.notes
    assert note.field == "harbor_version"
    assert str(job / "lock.json") in note.reason


def test_a_version_naming_no_release_is_unknown_with_a_note(tmp_path):
    job = _job(tmp_path / "j", "main")
    _multi_step(job)
    load = read_trials(job, cache=False)
    assert load.trials["status"].to_list() == ["pass"]
    assert [note.field for note in load.notes] == ["harbor_version"]
    assert "'main'" in load.notes[0].reason


def test_a_cached_load_reads_the_jobs_version_again(tmp_path):
    job = _job(tmp_path / "j", "0.26.0")
    _multi_step(job)
    assert read_trials(job).trials["status"].to_list() == ["pass"]
    _job(job, "0.22.0")  # the job's lock rewritten: no trial file changed
    again = read_trials(job).trials
    assert again["harbor_version"].to_list() == ["0.22.0"]
    assert again["status"].to_list() == ["invalid"]


def test_tb1_trials_have_no_harbor_meaning(samples):
    trials = read_trials(samples / DROID_RUN, cache=False).trials
    assert trials.height > 0
    for column in ("harbor_reward_valid", "exception_policy", "harbor_version", "version_note"):
        assert trials[column].null_count() == trials.height, column
