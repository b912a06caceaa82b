"""Issue 12: no one trial can crash a load, nothing is silently dropped or counted twice.

Each case writes one bad trial beside a good one and checks that the bad one is a rejection
with its path and a reason, that ``strict=True`` raises the same text, and that the counts
reconcile: ``n_seen == rows + rejected + duplicates``.
"""

from __future__ import annotations

import json
import os
import shutil
import tracemalloc
from pathlib import Path

import polars as pl
import pytest
from io_helpers import DROID_RUN, TMAX_TRIALS, write_trial

from depthlab.io import DuplicateTrialsWarning, LoadError, load_trials, read_trials
from depthlab.io._files import MAX_FILE_BYTES

DEEP = 1000  # the depth the issue found: a RecursionError before


def _reconciles(load) -> bool:
    return load.n_seen == load.trials.height + len(load.rejected) + len(load.duplicates)


def _rejected_alone(root: Path, bad_path: Path, reason_part: str) -> None:
    """The bad trial is the one rejection (path, reason); strict raises the same text; the good one loads."""
    load = read_trials(root, cache=False)
    assert [item.path for item in load.rejected] == [str(bad_path)], load.rejected
    assert reason_part in load.rejected[0].reason
    assert "good__1" in load.trials["trial"].to_list()
    assert _reconciles(load)
    with pytest.raises(LoadError) as raised:
        read_trials(root, cache=False, strict=True)
    assert str(raised.value) == str(load.rejected[0])


def _deep(text: str, marker: str = '"__DEEP__"', depth: int = DEEP) -> str:
    return text.replace(marker, "[" * depth + "]" * depth)


# values out of their column's range -------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("config", {"agent": {"name": "x", "kwargs": {"max_turns": 2**40}}}, "max_turns"),
        ("task_name", "a/", "names no task"),
        ("task_name", "org/ ", "names no task"),
    ],
)
def test_values_the_table_cannot_hold_reject_only_their_trial(tmp_path, field, value, reason):
    job = tmp_path / "job"
    write_trial(job / "good__1")
    bad = write_trial(job / "bad__1", **{field: value})
    _rejected_alone(job, bad / "result.json", reason)


@pytest.mark.parametrize(
    ("field", "value", "column", "reason"),
    [
        ("agent_result", {"n_input_tokens": 2**63}, "n_input_tokens", "out of range"),
        ("agent_result", {"n_output_tokens": 2**70}, "n_output_tokens", "out of range"),
        ("agent_result", {"n_cache_tokens": -1}, "n_cache_tokens", "must not be negative"),
        ("agent_result", {"metadata": {"n_episodes": 2**31}}, "n_turns", "out of range"),
        ("agent_result", {"metadata": {"n_episodes": -5}}, "n_turns", "must not be negative"),
        ("started_at", "9999-12-31T23:59:59-05:00", "started_at", "out of range in UTC"),
        ("finished_at", "0001-01-01T00:00:00+01:00", "finished_at", "out of range in UTC"),
        (
            "agent_execution",
            {"started_at": "2026-01-01T00:00:00Z", "finished_at": "9999-12-31T23:59:59-05:00"},
            "agent_seconds",
            "agent_execution.finished_at",
        ),
    ],
)
def test_values_that_only_describe_the_run_null_only_their_field(tmp_path, field, value, column, reason):
    """Issue 22: the trial keeps its row (its reward), the field is null with a note; strict raises the note."""
    job = tmp_path / "job"
    write_trial(job / "good__1")
    bad = write_trial(job / "bad__1", **{field: value})
    load = read_trials(job, cache=False)
    assert load.rejected == []
    row = load.trials.filter(load.trials["trial"] == "bad__1").row(0, named=True)
    assert row[column] is None
    assert row["status"] == "pass"
    assert [(note.path, note.field) for note in load.notes] == [(str(bad / "result.json"), column)]
    assert reason in load.notes[0].reason
    assert _reconciles(load)
    with pytest.raises(LoadError) as raised:
        read_trials(job, cache=False, strict=True)
    assert reason in str(raised.value)
    assert str(bad / "result.json") in str(raised.value)


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e999", "1_0", "0x1", "", "1.0 2.0", "١"])
def test_reward_txt_must_be_a_finite_plain_number(tmp_path, text):
    job = tmp_path / "job"
    write_trial(job / "good__1")
    bad = write_trial(job / "bad__1", verifier_result=...)
    (bad / "verifier").mkdir()
    (bad / "verifier" / "reward.txt").write_text(text)
    _rejected_alone(job, bad / "verifier" / "reward.txt", "reward is not")


def test_reward_txt_plain_numbers_still_read(tmp_path):
    for name, text in [("a__1", "1\n"), ("b__1", " 0.5 "), ("c__1", "1e0"), ("d__1", "-0")]:
        trial = write_trial(tmp_path / "job" / name, verifier_result=...)
        (trial / "verifier").mkdir()
        (trial / "verifier" / "reward.txt").write_text(text)
    load = read_trials(tmp_path / "job", cache=False)
    assert dict(load.trials.select("trial", "reward").iter_rows()) == {
        "a__1": 1.0,
        "b__1": 0.5,
        "c__1": 1.0,
        "d__1": 0.0,
    }


def test_reward_json_out_of_float_range_is_rejected(tmp_path):
    job = tmp_path / "job"
    write_trial(job / "good__1")
    bad = write_trial(job / "bad__1", verifier_result=...)
    (bad / "verifier").mkdir()
    (bad / "verifier" / "reward.json").write_text('{"reward": 1e999}')
    _rejected_alone(job, bad / "verifier" / "reward.json", "out of range")


# deep nesting -------------------------------------------------------------------------------------


def test_deep_result_is_a_rejection_not_a_recursion_error(tmp_path):
    job = tmp_path / "job"
    write_trial(job / "good__1")
    bad = write_trial(job / "bad__1", extra="__DEEP__")
    path = bad / "result.json"
    path.write_text(_deep(path.read_text()))
    _rejected_alone(job, path, "nested too deeply")


def test_deep_trajectory_costs_only_the_turns_with_a_note(tmp_path):
    job = tmp_path / "job"
    write_trial(job / "good__1")
    bad = write_trial(job / "bad__1", agent_result={"metadata": None})
    (bad / "agent").mkdir()
    path = bad / "agent" / "trajectory.json"
    steps = [{"step_id": 1, "source": "agent", "message": "ls", "extra": "__DEEP__"}]
    path.write_text(_deep(json.dumps({"schema_version": "ATIF-v1.6", "steps": steps})))
    load = read_trials(job, cache=False)
    assert load.rejected == []
    assert load.trials.height == 2
    row = load.trials.filter(pl.col("trial") == "bad__1").row(0, named=True)
    assert row["n_turns"] is None
    assert row["status"] == "pass"
    assert [(note.field, "nested too deeply" in note.reason) for note in load.notes] == [("n_turns", True)]


def test_deep_tb1_results_file_is_a_rejection(samples, tmp_path):
    run = tmp_path / "submission"
    shutil.copytree(samples / DROID_RUN, run)
    path = next(run.rglob("hello-world.1-of-1*/results.json"))
    data = json.loads(path.read_text())
    data["extra"] = "__DEEP__"
    path.write_text(_deep(json.dumps(data)))
    load = read_trials(run, cache=False)
    assert [item.path for item in load.rejected] == [str(path)]
    assert "nested too deeply" in load.rejected[0].reason
    assert _reconciles(load)


def test_deep_files_through_the_process_pool(tmp_path):
    """Over the parallel threshold: workers turn the deep files into rejections too."""
    job = tmp_path / "job"
    for index in range(420):
        write_trial(
            job / f"t{index:03d}__x", task_name=f"task-{index % 5}", extra="__DEEP__" if index % 100 == 7 else 0
        )
    deep = sorted(job.glob("t*07__x/result.json"))
    for path in deep:
        path.write_text(_deep(path.read_text(), depth=5000))
    load = read_trials(job, cache=False)
    assert sorted(item.path for item in load.rejected) == sorted(map(str, deep))
    assert load.trials.height == 420 - len(deep)
    assert _reconciles(load)


# size ---------------------------------------------------------------------------------------------


def test_huge_trajectory_is_refused_from_its_size_without_reading_it(tmp_path):
    """A 500 MB trajectory (sparse: no disk used) is refused before a byte is read."""
    job = tmp_path / "job"
    write_trial(job / "good__1")
    bad = write_trial(job / "bad__1", agent_result={"metadata": None})
    (bad / "agent").mkdir()
    path = bad / "agent" / "trajectory.json"
    with open(path, "wb") as handle:
        handle.truncate(500 * 1024 * 1024)
    tracemalloc.start()
    try:
        load = read_trials(job, cache=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MAX_FILE_BYTES // 16  # nothing near the file's size was allocated
    # the trajectory costs its turns only (a note naming it), never the trial's reward
    assert load.rejected == []
    assert load.trials.height == 2
    assert [(note.field, "too large" in note.reason, str(path) in note.reason) for note in load.notes] == [
        ("n_turns", True, True)
    ]
    assert _reconciles(load)


# files that look like a trial but cannot be used ----------------------------------------------


def test_dangling_result_link_is_a_rejection(tmp_path):
    job = tmp_path / "job"
    write_trial(job / "good__1")
    (job / "bad__1").mkdir()
    (job / "bad__1" / "result.json").symlink_to(tmp_path / "nowhere.json")
    _rejected_alone(job, job / "bad__1" / "result.json", "broken symbolic link")


def test_dangling_result_link_in_the_only_trial_of_a_job(tmp_path):
    """The job's own result.json must not make the job look like a trial and hide the link."""
    job = tmp_path / "job"
    (job / "bad__1").mkdir(parents=True)
    (job / "bad__1" / "result.json").symlink_to(tmp_path / "nowhere.json")
    (job / "result.json").write_text(json.dumps({"id": "j", "n_total_trials": 1, "stats": {}}))
    load = read_trials(job, cache=False)
    assert [item.path for item in load.rejected] == [str(job / "bad__1" / "result.json")]
    assert _reconciles(load)


@pytest.mark.parametrize("kind", ["fifo", "directory", "dangling link"])
@pytest.mark.parametrize("name", ["reward.txt", "reward.json"])
def test_reward_file_that_is_not_a_file_is_rejected_not_a_fail(tmp_path, kind, name):
    job = tmp_path / "job"
    write_trial(job / "good__1")
    bad = write_trial(job / "bad__1", verifier_result=...)
    (bad / "verifier").mkdir()
    path = bad / "verifier" / name
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "gone.txt")
    reason = {"fifo": "not a regular file", "directory": "a directory", "dangling link": "broken symbolic link"}[kind]
    _rejected_alone(job, path, reason)


def test_old_job_file_with_embedded_trials_and_no_trial_folders(tmp_path):
    job = tmp_path / "job"
    template = json.loads((write_trial(tmp_path / "scratch" / "x__1") / "result.json").read_text())
    entries = [dict(template, trial_name=f"t{index}__1", task_name=f"task-{index}") for index in range(3)]
    entries.append(dict(template, trial_name="bad__1", task_name="a/"))
    job.mkdir()
    (job / "result.json").write_text(json.dumps({"id": "j", "n_total_trials": 4, "trial_results": entries}))
    load = read_trials(job, cache=False)
    assert sorted(load.trials["trial"]) == ["t0__1", "t1__1", "t2__1"]
    assert [item.path for item in load.rejected] == [f"{job / 'result.json'}#trial_results[3]"]
    assert load.n_seen == 4
    assert _reconciles(load)
    cached = read_trials(job)
    assert read_trials(job).trials.equals(cached.trials)


def test_unreadable_job_file_beside_its_trials_is_a_rejection(tmp_path):
    job = tmp_path / "job"
    write_trial(job / "good__1")
    (job / "result.json").write_text('{"id": "j", "trial_results": [')
    load = read_trials(job, cache=False)
    assert load.trials["trial"].to_list() == ["good__1"]
    assert [item.path for item in load.rejected] == [str(job / "result.json")]
    assert _reconciles(load)


def test_an_unforeseen_error_in_one_trial_is_its_rejection(tmp_path, monkeypatch):
    """Whatever a parser raises (here a bug simulated in both row builders) rejects that trial only."""
    from depthlab.io import _fastresults, harbor

    def flaky(original):
        def builder(result, path, *args, **kwargs):
            if "bad__1" in path:
                raise ZeroDivisionError("simulated parser bug")
            return original(result, path, *args, **kwargs)

        return builder

    monkeypatch.setattr(harbor, "result_row", flaky(harbor.result_row))
    monkeypatch.setattr(_fastresults, "_row", flaky(_fastresults._row))  # the fast path hands the trial on
    job = tmp_path / "job"
    write_trial(job / "good__1")
    write_trial(job / "bad__1")
    _rejected_alone(job, job / "bad__1" / "result.json", "ZeroDivisionError: simulated parser bug")


# duplicates -------------------------------------------------------------------------------------


def _tree(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    for hour in (1, 2, 3):
        write_trial(runs / "job" / f"h{hour}__1", started_at=f"2026-01-01T0{hour}:00:00Z")
    return runs


@pytest.mark.parametrize(
    "paths",
    [
        lambda runs: [runs / "job", runs / "job" / "h2__1"],
        lambda runs: [runs / "job" / "h2__1", runs / "job"],
        lambda runs: [runs, runs / "job"],
        lambda runs: [runs / "job" / "h2__1" / "result.json", runs / "job"],
    ],
    ids=["job+trial", "trial+job", "root+job", "file+job"],
)
def test_overlapping_paths_load_each_trial_once_and_say_so(tmp_path, paths):
    runs = _tree(tmp_path)
    load = read_trials(paths(runs), cache=False)
    assert sorted(load.trials["trial"]) == ["h1__1", "h2__1", "h3__1"]
    assert sorted(load.trials["attempt"]) == [1, 2, 3]
    assert len(load.duplicates) >= 1
    assert _reconciles(load)
    assert f"duplicates collapsed {len(load.duplicates)}" in load.summary()


def test_job_copied_under_two_folders_is_loaded_once(tmp_path):
    runs = _tree(tmp_path)
    shutil.copytree(runs / "job", tmp_path / "backup" / "job")
    load = read_trials([runs, tmp_path / "backup"], cache=False)
    assert sorted(load.trials["trial"]) == ["h1__1", "h2__1", "h3__1"]
    assert sorted(load.trials["attempt"]) == [1, 2, 3]
    assert len(load.duplicates) == 3
    assert all(path.startswith(str(tmp_path / "runs")) for path in load.duplicates)  # the later path is left out
    assert all(path.startswith(str(tmp_path / "backup")) for path in load.trials["source"])
    assert _reconciles(load)
    with pytest.warns(DuplicateTrialsWarning, match="3 trials reached twice were loaded once"):
        load_trials([runs, tmp_path / "backup"], cache=False)


def test_a_trial_is_the_same_when_id_job_name_task_and_start_agree(tmp_path):
    write_trial(tmp_path / "a" / "t__1", id="uuid-1")
    write_trial(tmp_path / "b" / "t__1", id="uuid-1")  # a copy: one trial
    write_trial(tmp_path / "c" / "t__1", id="uuid-2")  # another id: another trial
    write_trial(tmp_path / "d" / "t__2", id="uuid-1")  # a seeded generator's repeated id, another name
    write_trial(tmp_path / "e" / "t__1", id="uuid-1", started_at="2026-01-02T00:00:00Z")  # another start
    load = read_trials(tmp_path, cache=False)
    assert load.trials.height == 4
    assert load.duplicates == [str(tmp_path / "b" / "t__1" / "result.json")]
    assert _reconciles(load)


def test_duplicates_survive_the_cache(tmp_path):
    runs = _tree(tmp_path)
    shutil.copytree(runs / "job", tmp_path / "backup" / "job")
    cold = read_trials([runs, tmp_path / "backup"])
    warm = read_trials([runs, tmp_path / "backup"])
    assert warm.trials.equals(cold.trials)
    assert warm.duplicates == cold.duplicates
    assert warm.n_seen == cold.n_seen
    write_trial(runs / "job" / "h4__1", started_at="2026-01-01T04:00:00Z")  # a partial reload
    partial = read_trials([runs, tmp_path / "backup"])
    fresh = read_trials([runs, tmp_path / "backup"], cache=False)
    assert partial.trials.equals(fresh.trials)
    assert sorted(partial.duplicates) == sorted(fresh.duplicates)
    assert partial.n_seen == fresh.n_seen
    assert _reconciles(partial)


def test_real_tmax_job_loaded_through_two_overlapping_paths(tmax_job):
    load = read_trials([tmax_job, tmax_job / TMAX_TRIALS[0], tmax_job / TMAX_TRIALS[1] / "result.json"], cache=False)
    assert sorted(load.trials["trial"]) == sorted(TMAX_TRIALS)
    assert len(load.duplicates) == 2
    assert _reconciles(load)
