"""The parquet cache: reused while nothing changed, noticed when a file changes, appears or goes."""

from __future__ import annotations

import io
import json
import os
import shutil

import polars as pl
import pytest
from io_helpers import TMAX_TRIALS, write_trial

from depthlab.cli import main
from depthlab.io import _fastresults, cache, harbor, read_trials
from depthlab.io._files import MAX_FILE_BYTES
from depthlab.io.cache import cache_dir


def _rewrite_keep_stat(path, text):
    """Change a file's bytes but keep its size and modification time (a copy tool restoring times does this)."""
    info = os.stat(path)
    path.write_text(text)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


@pytest.fixture
def parsed(monkeypatch):
    """The trial directories the loader parses, by its fast path or its careful one (small loads: one process)."""
    seen: list[str] = []
    careful, fast = harbor.trial_dir_rows, _fastresults.trial_row

    def spy(trial_dir, *args, **kwargs):
        if not seen or seen[-1] != os.path.basename(trial_dir):  # (a trial the fast path declined is seen once)
            seen.append(os.path.basename(trial_dir))
        return careful(trial_dir, *args, **kwargs)

    def fast_spy(trial_dir, *args, **kwargs):
        seen.append(os.path.basename(trial_dir))
        return fast(trial_dir, *args, **kwargs)

    monkeypatch.setattr(harbor, "trial_dir_rows", spy)
    monkeypatch.setattr(_fastresults, "trial_row", fast_spy)
    return seen


def test_unchanged_tree_is_served_from_the_cache(tmax_job, parsed):
    first = read_trials(tmax_job)
    assert any(cache_dir().glob("trials-*.entry"))
    assert sorted(parsed) == sorted(TMAX_TRIALS)
    parsed.clear()
    second = read_trials(tmax_job)
    assert parsed == []  # nothing parsed, nothing walked
    assert second.trials.equals(first.trials)


def test_a_rewrite_that_restores_size_and_mtime_is_still_seen(tmax_job):
    """The key is the status-change time, which no user-level tool can set back."""
    first = read_trials(tmax_job)
    result = tmax_job / TMAX_TRIALS[2] / "result.json"
    _rewrite_keep_stat(result, result.read_text().replace('"reward": 1.0', '"reward": 0.0'))
    second = read_trials(tmax_job)
    assert first.trials.filter(first.trials["trial"] == TMAX_TRIALS[2])["reward"][0] == 1.0
    assert second.trials.filter(second.trials["trial"] == TMAX_TRIALS[2])["reward"][0] == 0.0


def test_changed_file_is_noticed(tmax_job):
    first = read_trials(tmax_job)
    result = tmax_job / TMAX_TRIALS[2] / "result.json"
    data = json.loads(result.read_text())
    data["verifier_result"]["rewards"]["reward"] = 0.0
    result.write_text(json.dumps(data))
    second = read_trials(tmax_job)
    assert first.trials.filter(first.trials["trial"] == TMAX_TRIALS[2])["reward"][0] == 1.0
    assert second.trials.filter(second.trials["trial"] == TMAX_TRIALS[2])["reward"][0] == 0.0


def test_added_and_removed_trials_are_noticed(tmax_job):
    assert read_trials(tmax_job).trials.height == 3
    write_trial(tmax_job / "extra__1")
    assert read_trials(tmax_job).trials.height == 4
    shutil.rmtree(tmax_job / TMAX_TRIALS[0])
    assert read_trials(tmax_job).trials.height == 3


def test_trajectory_change_is_noticed(tmp_path):
    trial = write_trial(tmp_path / "job" / "t__1", agent_result={"metadata": None})
    assert read_trials(trial).trials["n_turns"][0] is None
    (trial / "agent").mkdir()
    (trial / "agent" / "trajectory.json").write_text(json.dumps([{"role": "assistant"}] * 3))
    assert read_trials(trial).trials["n_turns"][0] == 3


def test_rejections_are_cached_too(tmax_job):
    (tmax_job / TMAX_TRIALS[0] / "result.json").write_text("")
    first = read_trials(tmax_job)
    second = read_trials(tmax_job)
    assert second.rejected == first.rejected
    assert second.n_seen == first.n_seen == 3


def test_only_changed_trials_are_parsed_again(tmax_job, parsed):
    first = read_trials(tmax_job)
    changed = tmax_job / TMAX_TRIALS[1] / "result.json"
    data = json.loads(changed.read_text())
    data["verifier_result"]["rewards"]["reward"] = 1.0
    changed.write_text(json.dumps(data))
    write_trial(tmax_job / "extra__1")
    parsed.clear()

    second = read_trials(tmax_job)
    assert sorted(parsed) == sorted([TMAX_TRIALS[1], "extra__1"])  # the others come from the cache
    rewards = dict(second.trials.select("trial", "reward").iter_rows())
    assert rewards[TMAX_TRIALS[1]] == 1.0
    assert "extra__1" in rewards
    assert second.n_seen == 4
    fresh = read_trials(tmax_job, cache=False)
    assert second.trials.equals(fresh.trials)
    assert second.trials.drop("source").columns == first.trials.drop("source").columns


def test_partial_reload_keeps_rejections_and_attempts(tmp_path):
    for hour in (3, 1, 2):
        write_trial(tmp_path / "job" / f"h{hour}__1", started_at=f"2026-01-01T0{hour}:00:00Z")
    (tmp_path / "job" / "bad__1").mkdir()
    (tmp_path / "job" / "bad__1" / "result.json").write_text("{")
    first = read_trials(tmp_path / "job")
    write_trial(tmp_path / "job" / "h0__1", started_at="2026-01-01T00:00:00Z")
    second = read_trials(tmp_path / "job")
    assert [item.path for item in second.rejected] == [item.path for item in first.rejected]
    attempts = dict(second.trials.select("trial", "attempt").iter_rows())
    assert attempts == {"h0__1": 1, "h1__1": 2, "h2__1": 3, "h3__1": 4}
    assert second.n_seen == second.trials.height + len(second.rejected) == 5
    assert second.trials.equals(read_trials(tmp_path / "job", cache=False).trials)


def test_tb1_run_metadata_change_reaches_every_trial(samples, tmp_path):
    from io_helpers import DROID_RUN

    run = tmp_path / "20250923_droid_claude-4-sonnet"
    shutil.copytree(samples / DROID_RUN, run)
    assert read_trials(run).trials["model"].unique().to_list() == ["claude-4-sonnet"]
    metadata_path = run / "tb_rc2_sonnet_1" / "run_metadata.json"
    metadata = json.loads(metadata_path.read_text())
    metadata["model_name"] = "anthropic/claude-sonnet-4"
    metadata_path.write_text(json.dumps(metadata))
    assert read_trials(run).trials["model"].unique().to_list() == ["anthropic/claude-sonnet-4"]


# issue 12: files rejected before reading are keyed; the parquet is checked; eviction ------------


def _bad_reward(trial, kind):
    path = trial / "verifier" / "reward.txt"
    path.parent.mkdir(exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "dangling link":
        path.symlink_to(trial / "target.txt")
    elif kind == "too large":
        with open(path, "wb") as handle:
            handle.truncate(MAX_FILE_BYTES + 1)
    return path


def _repair(path, kind):
    # a link is never followed, even once it resolves (issue 32): the repair is a real file in its place
    if kind == "directory":
        path.rmdir()
    else:
        path.unlink()
    path.write_text("1\n")


@pytest.mark.parametrize("kind", ["fifo", "directory", "dangling link", "too large"])
def test_a_file_rejected_before_reading_is_read_again_once_repaired(tmp_path, kind):
    trial = write_trial(tmp_path / "job" / "t__1", verifier_result=...)
    path = _bad_reward(trial, kind)
    first = read_trials(tmp_path / "job")
    assert [item.path for item in first.rejected] == [str(path)]
    assert read_trials(tmp_path / "job").rejected == first.rejected  # cached while unchanged
    _repair(path, kind)
    second = read_trials(tmp_path / "job")
    assert second.rejected == []
    assert second.trials["reward"].to_list() == [1.0]


def test_a_result_link_is_never_followed_and_a_file_in_its_place_is_seen(tmp_path):
    write_trial(tmp_path / "job" / "good__1")
    (tmp_path / "job" / "t__1").mkdir()
    link = tmp_path / "job" / "t__1" / "result.json"
    link.symlink_to(tmp_path / "real.json")
    assert len(read_trials(tmp_path / "job").rejected) == 1
    write_trial(tmp_path / "scratch")
    shutil.copy(tmp_path / "scratch" / "result.json", tmp_path / "real.json")
    # the link now resolves: still refused, whatever it points at (an agent's link to a host file)
    (refused,) = read_trials(tmp_path / "job").rejected
    assert "not followed" in refused.reason
    link.unlink()
    shutil.copy(tmp_path / "real.json", link)
    load = read_trials(tmp_path / "job")
    assert load.rejected == []
    assert load.trials.height == 2


def _entry_file():
    entries = list(cache_dir().glob("trials-*.entry"))
    assert len(entries) == 1
    return entries[0]


def _rewrite_table(path, change):
    """Replace the table inside an entry (header and remembered files kept) by ``change(table)``."""
    data = path.read_bytes()
    start = len(cache._MAGIC) + cache._LENGTH
    end = start + int.from_bytes(data[len(cache._MAGIC) : start], "little")
    buffer = io.BytesIO()
    change(pl.read_parquet(io.BytesIO(data[end:]))).write_parquet(buffer)
    path.write_bytes(data[:end] + buffer.getvalue())


def test_a_table_that_lost_rows_is_a_miss(tmax_job):
    first = read_trials(tmax_job)
    _rewrite_table(_entry_file(), lambda table: table.head(1))  # valid parquet, not the one the entry describes
    second = read_trials(tmax_job)
    assert second.trials.equals(first.trials)
    assert second.n_seen == second.trials.height == 3


def test_a_table_with_another_schema_is_a_miss(tmax_job):
    first = read_trials(tmax_job)
    _rewrite_table(_entry_file(), lambda table: table.with_columns(pl.col("n_turns").cast(pl.Float64)))
    assert read_trials(tmax_job).trials.equals(first.trials)


def test_a_fifo_in_place_of_the_cache_entry_does_not_hang(tmax_job):
    first = read_trials(tmax_job)
    path = _entry_file()
    path.unlink()
    os.mkfifo(path)
    second = read_trials(tmax_job)  # would block forever on a plain open()
    assert second.trials.equals(first.trials)


@pytest.mark.parametrize("cut", [0, 10, 40, -100, -8])
def test_a_truncated_or_garbage_entry_is_a_miss(tmax_job, cut):
    first = read_trials(tmax_job)
    path = _entry_file()
    data = path.read_bytes()
    path.write_bytes(data[:cut] if cut else b"PAR1 not really")
    assert read_trials(tmax_job).trials.equals(first.trials)


_DAMAGE = {
    "one integer fewer": lambda meta: setattr(meta, "sizes", meta.sizes[:-8]),
    "a column cut inside an integer": lambda meta: setattr(meta, "sizes", meta.sizes[:-3]),
    "a base past the last unit": lambda meta: setattr(
        meta, "base", (2**40).to_bytes(8, "little") * (len(meta.base) // 8)
    ),
    "a name past the last name": lambda meta: setattr(
        meta, "name", (2**40).to_bytes(8, "little") * (len(meta.name) // 8)
    ),
}


@pytest.mark.parametrize("damage", sorted(_DAMAGE))
def test_an_entry_whose_file_columns_are_damaged_is_a_miss(tmax_job, damage):
    """The remembered files' integer columns are read in place: a damaged one is a miss, never a crash."""
    import msgspec

    first = read_trials(tmax_job)
    path = _entry_file()
    data = path.read_bytes()
    start = len(cache._MAGIC) + cache._LENGTH
    end = start + int.from_bytes(data[len(cache._MAGIC) : start], "little")
    meta = msgspec.msgpack.decode(data[start:end], type=cache._Meta)
    _DAMAGE[damage](meta)
    encoded = msgspec.msgpack.encode(meta)
    path.write_bytes(cache._MAGIC + len(encoded).to_bytes(cache._LENGTH, "little") + encoded + data[end:])
    second = read_trials(tmax_job)
    assert second.trials.equals(first.trials)
    assert cache.load(_entry_file().name[len("trials-") : -len(".entry")]) is not None  # (written anew)


def test_an_entry_whose_header_states_a_huge_length_is_a_miss(tmax_job):
    first = read_trials(tmax_job)
    path = _entry_file()
    data = path.read_bytes()
    at = len(cache._MAGIC)
    path.write_bytes(data[:at] + (2**62).to_bytes(cache._LENGTH, "little") + data[at + cache._LENGTH :])
    assert read_trials(tmax_job).trials.equals(first.trials)


def _entry(key, size, used):
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"trials-{key}.entry").write_bytes(b"p" * size)
    os.utime(folder / f"trials-{key}.entry", (used, used))


def test_eviction_by_age_then_least_recently_used_beyond_the_size_limit(monkeypatch):
    now = 2_000_000_000.0
    _entry("old", 10, now - (cache.MAX_AGE_DAYS + 1) * 86400)
    _entry("a", 400_000, now - 300)
    _entry("b", 400_000, now - 200)
    _entry("c", 400_000, now - 100)
    monkeypatch.setenv("DEPTHLAB_CACHE_MAX_MB", "1")
    removed = cache.evict(keep="a", now=now)
    assert removed == ["old", "b"]  # "a" is the entry just written, whatever its age
    assert sorted(key for key, _, _ in cache._entries(cache_dir())) == ["a", "c"]


def test_bad_size_limit_names_the_variable_and_costs_only_the_eviction(monkeypatch, tmax_job):
    monkeypatch.setenv("DEPTHLAB_CACHE_MAX_MB", "lots")
    with pytest.raises(ValueError, match="DEPTHLAB_CACHE_MAX_MB must be a positive number"):
        cache.max_bytes()
    with pytest.warns(UserWarning, match="not evicted: DEPTHLAB_CACHE_MAX_MB"):
        assert read_trials(tmax_job).trials.height == 3
    assert main(["cache", "info"]) == 1


def test_a_load_touches_its_entry_and_saving_evicts(tmax_job, tmp_path, monkeypatch):
    read_trials(tmax_job)
    meta = _entry_file()
    os.utime(meta, (1, 1))
    read_trials(tmax_job)
    assert os.stat(meta).st_mtime > 1  # used now: evicted last
    _entry("stale", 10, 1)
    write_trial(tmp_path / "other" / "t__1")
    read_trials(tmp_path / "other")  # a save evicts what is older than MAX_AGE_DAYS
    assert not (cache_dir() / "trials-stale.entry").exists()
    assert meta.exists()


def test_cache_command_info_and_clear(tmax_job, capsys):
    read_trials(tmax_job)
    (cache_dir() / ".trials-x.parquet.123").write_bytes(b"left over")
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert str(cache_dir()) in out
    assert "in 1 entries, and 1 temporary files" in out
    assert main(["cache", "clear"]) == 0
    assert "removed 1 entries" in capsys.readouterr().out
    assert list(cache_dir().iterdir()) == []
    assert cache.info().entries == 0


def test_a_load_shared_with_workers_is_remembered_whole(tmp_path, parsed):
    """Over the parallel threshold (chunks parsed by a worker and by this process, the walk still going):
    the reload is the same table, and a change in the first chunk, in the last, or a trial gone is seen."""
    root = tmp_path / "board"
    for job in range(3):
        (root / f"job-{job}").mkdir(parents=True)
        (root / f"job-{job}" / "result.json").write_text(json.dumps({"n_total_trials": 400}))
        for index in range(400):
            trial = root / f"job-{job}" / f"t{index:03d}__x"
            fields = {"task_name": f"task-{index % 7}", "trial_name": f"{job}-{index}"}
            if index % 5 == 0:  # no verifier result and no turns: its reward files and agent/ are probes
                fields.update(verifier_result=None, agent_result={"n_input_tokens": 10})
            write_trial(trial, **fields)
    first = read_trials(root)
    assert first.trials.height == 1200
    assert not first.rejected
    parsed.clear()
    again = read_trials(root)
    assert parsed == []  # every trial's files remembered as they are: nothing parsed again
    assert again.trials.equals(first.trials)
    for trial in ("job-0/t001__x", "job-2/t399__x"):
        result = root / trial / "result.json"
        data = json.loads(result.read_text())
        data["verifier_result"]["rewards"]["reward"] = 0.0
        result.write_text(json.dumps(data))
    shutil.rmtree(root / "job-1" / "t200__x")
    (root / "job-1" / "t205__x" / "verifier").mkdir()  # a reward file appears where none was
    (root / "job-1" / "t205__x" / "verifier" / "reward.txt").write_text("1")
    parsed.clear()
    changed = read_trials(root)
    assert sorted(parsed) == ["t001__x", "t205__x", "t399__x"]  # only what changed (a trial gone is dropped)
    assert changed.trials.filter(pl.col("trial") == "1-205")["reward"].to_list() == [1.0]
    assert changed.trials.height == 1199
    failed = changed.trials.filter(pl.col("reward") == 0.0)["source"].to_list()
    assert sorted(os.path.relpath(path, root) for path in failed) == [
        os.path.join("job-0", "t001__x", "result.json"),
        os.path.join("job-2", "t399__x", "result.json"),
    ]
