"""Issue 22: damage a careful user's disk and a busy machine produce, each on its own copy of a real Harbor job.

Every case: no exception escapes a non-strict load, every result that can be read is a row, every
loss is a reason with a path (a rejection, or a field note when only a describing field is lost),
and the counts reconcile.
"""

from __future__ import annotations

import json
import os
import subprocess
import tracemalloc
import warnings
from pathlib import Path

import polars as pl
import pytest
from io_helpers import TMAX_TRIALS, write_trial

import depthlab as dl
from depthlab import schema
from depthlab.cli import main
from depthlab.io import FieldNotesWarning, LoadError, cache, load_trials, read_trials, trials
from depthlab.io.cache import CacheNotWrittenWarning, cache_dir

PASSING = TMAX_TRIALS[2]  # prove-plus-comm: reward 1 in the real job


def _reconciles(load) -> bool:
    return load.n_seen == load.trials.height + len(load.rejected) + len(load.duplicates)


def _rewards(load) -> dict[str, float]:
    return dict(load.trials.select("trial", "reward").iter_rows())


# a file name that is not UTF-8 ------------------------------------------------------------------


@pytest.mark.parametrize("where", ["trial", "job"])
def test_a_folder_name_that_is_not_utf8_loads_its_trials(tmax_job, tmp_path, where):
    if where == "trial":
        bad = os.fsencode(tmax_job) + b"/" + PASSING.encode() + b"-\xff"
        os.rename(os.fsencode(tmax_job / PASSING), bad)
        root = tmax_job
    else:
        root = tmp_path / "jobs"
        root.mkdir()
        os.rename(os.fsencode(tmax_job), os.fsencode(root) + b"/tmax-\xe9")
    load = read_trials(root, cache=False)
    assert sorted(load.trials["task"]) == sorted(trial.split("__")[0] for trial in TMAX_TRIALS)
    assert load.rejected == []
    assert _reconciles(load)
    escaped = "\\xff" if where == "trial" else "\\xe9"
    assert [note.field for note in load.notes] == ["source"] * (1 if where == "trial" else 3)
    assert all(escaped in note.path for note in load.notes)
    with pytest.raises(LoadError, match="the path is not UTF-8"):
        read_trials(root, strict=True, cache=False)
    first = read_trials(root)  # the cache stores the path as its bytes
    again = read_trials(root)
    assert again.trials.equals(first.trials)
    assert first.trials.height == 3
    with pytest.warns(FieldNotesWarning, match=r"source of \d trials: .*the path is not UTF-8"):
        load_trials(root)  # the warning's text holds the escaped path: nothing raises on the way to stderr


def test_a_run_file_name_that_is_not_utf8_is_a_rejection_with_its_path(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / os.fsdecode(b"x\xff_results.json")).write_text("{broken")
    load = read_trials(tmp_path, cache=False)
    assert len(load.rejected) == 1
    assert "\\xff" in load.rejected[0].path
    assert "not valid JSON" in load.rejected[0].reason
    assert _reconciles(load)


# field-level damage ------------------------------------------------------------------------------


def _damage(result: Path, change) -> None:
    data = json.loads(result.read_text())
    change(data)
    result.write_text(json.dumps(data))


DAMAGE = {
    "tokens past Int64": (lambda d: d["agent_result"].update(n_input_tokens=2**64), "n_input_tokens"),
    "tokens as a float": (lambda d: d["agent_result"].update(n_output_tokens=1e30), "n_output_tokens"),
    "negative tokens": (lambda d: d["agent_result"].update(n_output_tokens=-3), "n_output_tokens"),
    "negative cost": (lambda d: d["agent_result"].update(cost_usd=-0.5), "cost_usd"),
    "absurd cost": (lambda d: d["agent_result"].update(cost_usd=1e12), "cost_usd"),
    "cost as text": (lambda d: d["agent_result"].update(cost_usd="free"), "cost_usd"),
    "date past the calendar": (lambda d: d.update(started_at="10000-01-01T00:00:00Z"), "started_at"),
    "date as a number": (lambda d: d.update(finished_at=1767225600), "finished_at"),
    "phase ends before it starts": (
        lambda d: d.update(
            agent_execution={"started_at": "2026-01-02T00:00:00Z", "finished_at": "2026-01-01T00:00:00Z"}
        ),
        "agent_seconds",
    ),
    "metadata not an object": (lambda d: d["agent_result"].update(metadata="lost"), "agent_result.metadata"),
    "agent_info mis-shaped": (lambda d: d.update(agent_info=["vanillux2"]), "agent_info"),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_damage_to_a_describing_field_keeps_the_real_result(tmax_job, case):
    change, field = DAMAGE[case]
    result = tmax_job / PASSING / "result.json"
    _damage(result, change)
    load = read_trials(tmax_job, cache=False)
    assert load.rejected == []
    assert _rewards(load)[PASSING] == 1.0  # the real pass is not lost
    assert [(note.path, note.field) for note in load.notes] == [(str(result), field)]
    assert f"field notes 1 ({field} 1)" in load.summary()
    with pytest.warns(FieldNotesWarning) as caught:
        load_trials(tmax_job, cache=False)
    assert [str(w.message) for w in caught if w.category is FieldNotesWarning] == [
        f"{field} of 1 trials: {result}: {load.notes[0].reason}"
    ]
    with pytest.raises(LoadError) as raised:
        read_trials(tmax_job, cache=False, strict=True)
    assert str(raised.value) == str(next(w.message for w in caught if w.category is FieldNotesWarning))


def test_one_warning_line_per_field_and_the_notes_survive_the_cache(tmax_job):
    for trial in TMAX_TRIALS:
        _damage(tmax_job / trial / "result.json", lambda d: d["agent_result"].update(n_cache_tokens=-1))
    _damage(tmax_job / PASSING / "result.json", lambda d: d.update(started_at="yesterday"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_trials(tmax_job)
        load_trials(tmax_job)  # from the cache: the same notes
    lines = [str(w.message) for w in caught if w.category is FieldNotesWarning]
    assert len(lines) == 4
    assert lines[:2] == lines[2:]
    assert lines[0].startswith("n_cache_tokens of 3 trials: ")
    assert lines[1].startswith("started_at of 1 trials: ")
    assert read_trials(tmax_job).summary().endswith("field notes 4 (n_cache_tokens 3, started_at 1)")


def test_what_decides_the_status_still_rejects_the_trial(tmax_job):
    result = tmax_job / PASSING / "result.json"
    _damage(result, lambda d: d.update(verifier_result={"rewards": {"reward": "yes"}}))
    load = read_trials(tmax_job, cache=False)
    assert [item.path for item in load.rejected] == [str(result)]
    assert PASSING not in load.trials["trial"].to_list()
    assert _reconciles(load)


# which reward wins --------------------------------------------------------------------------------


def test_a_null_verifier_result_gives_way_to_the_reward_file_with_a_note(tmax_job):
    result = tmax_job / PASSING / "result.json"
    _damage(result, lambda d: d.update(verifier_result=None))
    assert (tmax_job / PASSING / "verifier" / "reward.txt").read_text().strip() == "1"
    load = read_trials(tmax_job, cache=False)
    assert _rewards(load)[PASSING] == 1.0
    assert load.trials.filter(pl.col("trial") == PASSING)["status"].to_list() == ["pass"]
    assert [str(note) for note in load.notes] == [
        f'{result}: reward: "verifier_result" is null but verifier/reward.txt holds 1: the reward file is used'
    ]
    with pytest.warns(FieldNotesWarning, match="reward of 1 trials"):
        load_trials(tmax_job, cache=False)


def test_a_recorded_reward_wins_over_the_reward_file(tmax_job):
    (tmax_job / PASSING / "verifier" / "reward.txt").write_text("0")
    load = read_trials(tmax_job, cache=False)
    assert _rewards(load)[PASSING] == 1.0
    assert load.notes == []


# the cache cannot pair a table with other files' stamps ------------------------------------------


@pytest.mark.parametrize("order", ["stale writer last", "stale writer first"])
def test_two_interleaved_loads_with_a_reward_change_serve_the_new_reward(tmax_job, monkeypatch, order):
    """Load A reads the old result, Harbor rewrites it, load B reads the new one; their saves land in either order."""
    result = tmax_job / PASSING / "result.json"
    saves = []
    real_save = cache.save
    monkeypatch.setattr(trials._cache, "save", lambda *args: saves.append(args))
    stale = read_trials(tmax_job)  # A: reward 1, its save held back
    _damage(result, lambda d: d.update(verifier_result={"rewards": {"reward": 0.0}}))
    fresh = read_trials(tmax_job)  # B: reward 0
    assert _rewards(stale)[PASSING] == 1.0
    assert _rewards(fresh)[PASSING] == 0.0
    monkeypatch.setattr(trials._cache, "save", real_save)
    for args in saves if order == "stale writer first" else reversed(saves):
        real_save(*args)
    for _ in range(2):
        assert _rewards(read_trials(tmax_job))[PASSING] == 0.0
    assert _rewards(read_trials(tmax_job, cache=False))[PASSING] == 0.0


# a full disk under the cache ----------------------------------------------------------------------


@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 KiB tmpfs: room for a folder, not for a cache entry (needs root and mount)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); a full disk cannot be made")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_under_the_cache_costs_only_speed(tmax_job, tiny_disk, monkeypatch):
    monkeypatch.setenv("DEPTHLAB_CACHE_DIR", str(tiny_disk))
    (tiny_disk / "filler").write_bytes(b"x" * 60_000)
    expected = read_trials(tmax_job, cache=False)
    with pytest.warns(CacheNotWrittenWarning, match="could not be written") as caught:
        load = read_trials(tmax_job)
    assert len([w for w in caught if w.category is CacheNotWrittenWarning]) == 1
    assert load.trials.equals(expected.trials)
    assert sorted(os.listdir(tiny_disk)) == ["filler"]  # no temporary file left
    with pytest.warns(CacheNotWrittenWarning):
        assert read_trials(tmax_job).trials.equals(expected.trials)  # the next load is whole too
    info = cache.info()
    assert (info.entries, info.temporary_files) == (0, 0)


def test_cache_info_counts_temporary_files_and_clear_removes_them(tmax_job, capsys):
    read_trials(tmax_job)
    (cache_dir() / ".trials-abc.entry.1234abcd.depthlab-tmp").write_bytes(b"x" * 1000)
    assert cache.info().temporary_files == 1
    assert main(["cache", "info"]) == 0
    assert "1 temporary files" in capsys.readouterr().out
    cache.clear()
    assert list(cache_dir().iterdir()) == []


def test_a_corrupt_entry_is_a_miss_never_a_crash(tmax_job):
    expected = read_trials(tmax_job)
    entry = next(cache_dir().glob("trials-*.entry"))
    data = entry.read_bytes()
    entry.write_bytes(data[: len(data) // 2] + b"\0" * (len(data) - len(data) // 2))  # same size, thrift garbage
    assert read_trials(tmax_job).trials.equals(expected.trials)


# symbolic links -----------------------------------------------------------------------------------


def test_a_link_leaving_the_paths_given_is_not_followed(tmax_job, tmp_path):
    notes = tmp_path / "notes"  # no run logs at its top or one level down
    (notes / "deep" / "far__2").mkdir(parents=True)
    write_trial(notes / "deep" / "far__2" / "x")  # two levels down: not looked for
    (tmax_job / "root-link").symlink_to("/")
    (tmax_job / "notes-link").symlink_to(notes)
    load = read_trials(tmax_job, cache=False)
    assert load.trials.height == 3
    assert sorted(item.path for item in load.rejected) == [str(tmax_job / "notes-link"), str(tmax_job / "root-link")]
    assert all("leaves the paths given and holds no run logs" in item.reason for item in load.rejected)
    assert _reconciles(load)
    (tmax_job / "root-link").unlink()
    followed = read_trials(tmax_job, cache=False, follow_links=True)
    assert "x" in followed.trials["trial"].to_list()
    assert followed.rejected == []
    inside = read_trials([tmax_job, notes], cache=False)  # a link into another path given is followed
    assert inside.rejected == []


def test_a_link_farm_of_jobs_kept_elsewhere_is_followed(tmax_job, tmp_path):
    """Runs arranged as links to jobs (or to folders of jobs) elsewhere: each target is run logs itself."""
    farm = tmp_path / "farm"
    farm.mkdir()
    (farm / "job-link").symlink_to(tmax_job)
    (farm / "folder-link").symlink_to(tmax_job.parent)
    load = read_trials(farm, cache=False)
    assert load.rejected == []
    assert load.trials.height == 3  # the same job reached through both links is walked once
    assert _reconciles(load)


def test_link_loops_inside_the_tree_still_end(tmax_job):
    (tmax_job / PASSING / "loop").symlink_to("..")
    (tmax_job / "again").symlink_to(tmax_job)
    load = read_trials(tmax_job, cache=False)
    assert load.trials.height == 3
    assert load.rejected == []


# the depth proxy's budget ---------------------------------------------------------------------------


def _big_trajectory(trial: Path, megabytes: float) -> None:
    """The real trajectory, with one more output of distinct identifiers (``id_000001_x`` ...)."""
    path = trial / "agent" / "trajectory.json"
    messages = json.loads(path.read_text())
    count = int(megabytes * 1e6 / 12)
    messages.append({"role": "tool", "content": " ".join(f"id_{i:06d}_x" for i in range(count))})
    path.write_text(json.dumps(messages))


def test_a_trajectory_past_the_budget_has_a_null_proxy_with_the_reason(tmax_job):
    base = load_trials(tmax_job, cache=False)
    expected = dl.depth_proxy(base, per="trial", cache=False)
    _big_trajectory(tmax_job / PASSING, 4)
    size = (tmax_job / PASSING / "agent" / "trajectory.json").stat().st_size
    tracemalloc.start()
    try:
        with pytest.warns(dl.io.RejectedFilesWarning, match="past the budget of 1000000 bytes"):
            table = dl.depth_proxy(base, per="trial", cache=False, max_trajectory_bytes=1_000_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < size / 2  # the file is refused from its size: never read
    depth = dict(table.select("trial", "proxy_depth").iter_rows())
    assert depth[PASSING] is None
    others = expected.filter(pl.col("trial") != PASSING)
    assert (
        others.select("trial", "proxy_depth").rows()
        == table.filter(pl.col("trial") != PASSING).select("trial", "proxy_depth").rows()
    )
    with pytest.raises(LoadError, match=f"{size} bytes is past the budget"):
        dl.depth_proxy(base, cache=False, strict=True, max_trajectory_bytes=1_000_000)
    within = dl.depth_proxy(base, per="trial", cache=False)  # under the default budget it is read
    assert dict(within.select("trial", "proxy_depth").iter_rows())[PASSING] is not None


def test_the_proxy_cache_keeps_results_per_budget(tmax_job):
    base = load_trials(tmax_job, cache=False)
    _big_trajectory(tmax_job / PASSING, 1.5)
    with pytest.warns(dl.io.RejectedFilesWarning):
        small = dl.depth_proxy(base, per="trial", max_trajectory_bytes=1_000_000)
    large = dl.depth_proxy(base, per="trial")
    assert small.filter(pl.col("trial") == PASSING)["proxy_depth"].to_list() == [None]
    assert large.filter(pl.col("trial") == PASSING)["proxy_depth"].to_list() != [None]


def test_field_notes_do_not_reach_the_trials_table(tmax_job):
    _damage(tmax_job / PASSING / "result.json", lambda d: d["agent_result"].update(cost_usd=-1))
    schema.check(read_trials(tmax_job).trials, "trials")


def test_rows_turned_into_columns_in_batches_give_the_same_table(tmax_job, monkeypatch):
    """The load holds one batch of rows at a time (memory: the table plus a batch); the table is the same."""
    whole = read_trials(tmax_job, cache=False)
    monkeypatch.setattr(trials, "_FRAME_ROWS", 2)
    batched = read_trials(tmax_job, cache=False)
    assert batched.trials.equals(whole.trials)
    assert batched.n_seen == whole.n_seen


def test_a_trajectory_appearing_beside_a_results_only_trial_is_seen_by_the_cache(tmax_job, tmp_path):
    """A results-only trial (no agent/) is one remembered probe; its trajectory arriving later is noticed."""
    import shutil

    full = read_trials(tmax_job, cache=False).trials.filter(pl.col("trial") == PASSING)["n_turns"].to_list()
    agent = tmax_job / PASSING / "agent"
    shutil.move(agent, tmp_path / "agent")
    assert read_trials(tmax_job).trials.filter(pl.col("trial") == PASSING)["n_turns"].to_list() == [None]
    shutil.move(tmp_path / "agent", agent)
    assert read_trials(tmax_job).trials.filter(pl.col("trial") == PASSING)["n_turns"].to_list() == full
    assert full != [None]
