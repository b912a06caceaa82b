"""Bad input: mutated real files are rejected with path + reason, the rest still loads."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from io_helpers import GOLDEN, TMAX_TRIALS, write_trial

from depthlab.io import LoadError, RejectedFilesWarning, load_trials, read_trials


def _mutate(path: Path, how: str) -> None:
    data = json.loads(path.read_text())
    if how == "truncated":
        path.write_text(path.read_text()[: len(path.read_text()) // 2])
    elif how == "empty":
        path.write_text("")
    elif how == "not_json":
        path.write_text("Traceback (most recent call last):\n  oops\n")
    elif how == "fields_deleted":
        del data["task_name"], data["task_id"]
        path.write_text(json.dumps(data))
    elif how == "types_swapped":
        data["verifier_result"] = ["reward", 1.0]
        path.write_text(json.dumps(data))
    elif how == "bad_timestamp":
        data["started_at"] = 12345
        path.write_text(json.dumps(data))
    elif how == "non_utf8":
        path.write_bytes(b'{"task_name": "caf\xe9"}')
    elif how == "top_level_list":
        path.write_text(json.dumps([data]))


MUTATIONS = ["truncated", "empty", "not_json", "fields_deleted", "types_swapped", "non_utf8"]


def test_a_bad_timestamp_costs_the_field_not_the_trial(tmax_job):
    bad = tmax_job / TMAX_TRIALS[0] / "result.json"
    _mutate(bad, "bad_timestamp")
    load = read_trials(tmax_job, cache=False)
    assert sorted(load.trials["trial"]) == sorted(TMAX_TRIALS)
    assert load.rejected == []
    assert load.trials.filter(load.trials["trial"] == TMAX_TRIALS[0])["started_at"].to_list() == [None]
    assert [str(note) for note in load.notes] == [f"{bad}: started_at: not a date: 12345"]
    assert "field notes 1 (started_at 1)" in load.summary()


@pytest.mark.parametrize("how", [*MUTATIONS, "top_level_list"])
def test_mutated_real_result_is_rejected_and_the_rest_loads(tmax_job, how):
    bad = tmax_job / TMAX_TRIALS[0] / "result.json"
    _mutate(bad, how)
    load = read_trials(tmax_job, cache=False)
    assert sorted(load.trials["trial"]) == sorted(TMAX_TRIALS[1:])
    assert [item.path for item in load.rejected] == [str(bad)]
    assert load.rejected[0].reason
    assert load.n_seen == load.trials.height + len(load.rejected)


def test_unknown_trajectory_version_costs_only_what_it_gives(tmax_job, samples):
    # An unreadable trajectory costs N at most (issue 26), never the trial: its reward stays.
    trajectory = json.loads((samples / GOLDEN / "hello-world-timeout.trajectory.json").read_text())
    trajectory["schema_version"] = "ATIF-v9.3"
    path = tmax_job / TMAX_TRIALS[1] / "agent" / "trajectory.json"
    path.write_text(json.dumps(trajectory))
    load = read_trials(tmax_job, cache=False)
    assert load.trials.height == 3
    assert load.rejected == []
    assert load.trials["reward"].null_count() == 0


def test_strict_raises_with_path_and_load_trials_warns(tmax_job):
    bad = tmax_job / TMAX_TRIALS[2] / "result.json"
    _mutate(bad, "truncated")
    with pytest.raises(LoadError, match=str(bad).replace("+", r"\+")):
        read_trials(tmax_job, strict=True, cache=False)
    with pytest.warns(RejectedFilesWarning, match=f"1 trials rejected: {bad}"):
        trials = load_trials(tmax_job, cache=False)
    assert trials.height == 2


def test_symlink_loop_fifo_and_directory_in_place_of_a_file(tmp_path):
    root = tmp_path / "runs"
    write_trial(root / "job" / "good__1")
    (root / "job" / "loop").symlink_to(root, target_is_directory=True)
    (root / "dangling").symlink_to(tmp_path / "nowhere")
    fifo_trial = root / "job" / "fifo__1"
    fifo_trial.mkdir()
    os.mkfifo(fifo_trial / "result.json")
    dir_trial = root / "job" / "dir__1"
    (dir_trial / "result.json").mkdir(parents=True)
    load = read_trials(root, cache=False)  # must return: a FIFO would block a naive open()
    assert load.trials["trial"].to_list() == ["good__1"]
    reasons = {Path(item.path).parent.name: item.reason for item in load.rejected}
    assert reasons["fifo__1"] == "not a regular file"
    assert reasons["dir__1"] == "a directory, not a file"
    assert load.n_seen == load.trials.height + len(load.rejected)


# Root reads a chmod-000 directory through the capabilities that override file permissions; the
# load then runs in a child without them (setpriv drops them from its bounding set).
_UNPRIVILEGED = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--")
_LOAD_AND_LIST_REJECTED = (
    "import json, sys; from depthlab.io import read_trials; "
    "print(json.dumps([item.path for item in read_trials(sys.argv[1], cache=False).rejected]))"
)


def test_unreadable_directory_is_reported(tmp_path):
    import subprocess
    import sys

    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("runs as root without setpriv (util-linux): cannot drop CAP_DAC_OVERRIDE")
        prefix = _UNPRIVILEGED
    locked = tmp_path / "runs" / "locked"
    write_trial(tmp_path / "runs" / "job" / "ok__1")
    locked.mkdir()
    locked.chmod(0)
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", _LOAD_AND_LIST_REJECTED, str(tmp_path / "runs")],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        locked.chmod(0o755)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == [str(locked)]


def test_bad_parameters_name_the_parameter(tmp_path):
    with pytest.raises(ValueError, match="'status_rule' parameter of read_trials"):
        read_trials(tmp_path, status_rule="strictest")
    with pytest.raises(ValueError, match="does not exist"):
        read_trials(tmp_path / "missing")
    with pytest.raises(ValueError, match="'paths' parameter"):
        read_trials([])


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)
_FIELDS = ["task_name", "trial_name", "config", "agent_info", "agent_result", "verifier_result", "exception_info"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    field=st.sampled_from(_FIELDS),
    value=_json_values,
    raw=st.binary(max_size=64),
    use_raw=st.booleans(),
)
def test_fuzzed_result_never_crashes_and_counts_reconcile(field, value, raw, use_raw):
    with tempfile.TemporaryDirectory() as folder:
        job = Path(folder) / "job"
        write_trial(job / "good__1")
        fuzzed = write_trial(job / "fuzz__1")
        if use_raw:
            (fuzzed / "result.json").write_bytes(raw)
        else:
            data = json.loads((fuzzed / "result.json").read_text())
            data[field] = value
            (fuzzed / "result.json").write_text(json.dumps(data))
        load = read_trials(job, cache=False)
        assert "good__1" in load.trials["trial"].to_list()
        assert load.n_seen == load.trials.height + len(load.rejected) == 2
        for item in load.rejected:
            assert item.path.startswith(str(job))
            assert item.reason


class _DYING:
    parent = 0
    packed = None


def _dies_in_the_worker(units, options):
    """A worker's chunk parse (sent by name: workers are forked from the test) that kills the worker at one trial."""
    if os.getpid() != _DYING.parent and any(path.endswith("t100__x") for _, path, _ in units):
        os._exit(9)
    return _DYING.packed(units, options)


_NO_WORKER = (os.cpu_count() or 1) < 2 or sys.platform != "linux"


@pytest.mark.skipif(_NO_WORKER, reason="needs a worker process (Linux, 2 cores)")
def test_a_worker_killed_mid_load_costs_no_trial(tmp_path, monkeypatch):
    """A worker that dies (killed, out of memory) while the walk still goes on: this process parses the rest."""
    from depthlab.io import trials

    for job in range(3):
        for index in range(400):
            write_trial(tmp_path / f"job-{job}" / f"t{index:03d}__x", trial_name=f"{job}-{index}")
    expected = read_trials(tmp_path, cache=False).trials  # (a parent and a worker share it)
    monkeypatch.setattr(_DYING, "parent", os.getpid())
    monkeypatch.setattr(_DYING, "packed", trials._parse_chunk_packed)
    monkeypatch.setattr(trials, "_parse_chunk_packed", _dies_in_the_worker)
    load = read_trials(tmp_path, cache=False)
    assert not load.rejected
    assert load.trials.equals(expected)


def _slow_in_the_worker(units, options):
    """A worker's chunk parse that hangs a while on its first chunk (a file on a stalled network mount)."""
    if os.getpid() != _DYING.parent and any(path.endswith("t000__x") for _, path, _ in units):
        time.sleep(3)
    return _DYING.packed(units, options)


@pytest.mark.skipif(_NO_WORKER or (os.cpu_count() or 1) > 8, reason="needs 2 to 8 cores (a bound below 149 chunks)")
def test_a_stuck_worker_bounds_the_chunks_parsed_ahead(tmp_path, monkeypatch):
    """While the chunk due waits on a stuck worker, this process parses only a bounded number ahead, then waits."""
    from depthlab.io import trials

    for index in range(1200):
        write_trial(tmp_path / "job" / f"t{index:03d}__x", trial_name=f"trial-{index}")
    expected = read_trials(tmp_path, cache=False).trials
    monkeypatch.setattr(trials, "_CHUNK_FIRST", 8)
    monkeypatch.setattr(trials, "_CHUNK_MAX", 8)  # 150 chunks
    monkeypatch.setattr(_DYING, "parent", os.getpid())
    monkeypatch.setattr(_DYING, "packed", trials._parse_chunk_packed)
    monkeypatch.setattr(trials, "_parse_chunk_packed", _slow_in_the_worker)
    parsed_at: list[float] = []
    parse_chunk = trials._parse_chunk

    def timed(units, options):
        parsed_at.append(time.monotonic())
        return parse_chunk(units, options)

    monkeypatch.setattr(trials, "_parse_chunk", timed)
    start = time.monotonic()
    load = read_trials(tmp_path, cache=False)
    assert load.trials.equals(expected)
    # the first chunk (the worker's) is due for 3 s; in 2 s, unbounded, this process parsed the other 149
    during = [at for at in parsed_at if at < start + 2]
    assert 0 < len(during) <= 12 * ((os.cpu_count() or 2) - 1)  # (four results per chunk kept in flight)


def test_many_trials_use_the_process_pool_and_keep_every_row(tmp_path):
    """Enough trials to cross the parallel threshold; results equal the one-process load."""
    for index in range(450):
        write_trial(tmp_path / "job" / f"t{index:03d}__x", task_name=f"task-{index % 7}")
    shutil.rmtree(tmp_path / "job" / "t000__x")
    (tmp_path / "job" / "t001__x" / "result.json").write_text("{")
    load = read_trials(tmp_path / "job", cache=False)
    assert load.trials.height == 448
    assert len(load.rejected) == 1
    assert load.trials.group_by("task").len()["len"].sum() == 448
