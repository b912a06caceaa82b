"""The fast path of results-only Harbor trials (``depthlab.io._fastresults``) against the careful path, trial by trial.

Every trial the fast path takes must give the careful path's row (no note, no rejection) and the
files the careful path remembers; every other trial must be left whole to the careful path. The
trials are the real TMax job's (results only, as ``fetch --results-only`` leaves them) and copies
of a few of them with one JSON value replaced by each hostile value of ``faults.HOSTILE``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from faults import HOSTILE, json_paths, mutate
from io_helpers import TMAX_JOB, write_trial

from depthlab.io import _fastresults, harbor, read_trials
from depthlab.io._errors import Reject
from depthlab.io._files import ABSENT
from depthlab.io.cache import SKIP

OPTIONS = [
    harbor.Options(dataset=None, status_rule="leaderboard", cap_rule="stated_cap"),
    harbor.Options(dataset="tb2", status_rule="all", cap_rule="turn_limit"),
]


def _results_only(job: Path, target: Path) -> list[Path]:
    """Copies of the job's trials with their result.json only."""
    trials = []
    for trial in sorted(job.iterdir()):
        if (trial / "result.json").is_file():
            (target / trial.name).mkdir(parents=True)
            shutil.copyfile(trial / "result.json", target / trial.name / "result.json")
            trials.append(target / trial.name)
    return trials


def _taken(trial: Path, options: harbor.Options) -> bool:
    """Compare the two paths on one trial; True when the fast path took it."""
    found = _fastresults.stamps()
    row = _fastresults.trial_row(str(trial), options, "fallback", found, {})
    deps: list = []
    try:
        parsed = harbor.trial_dir_rows(str(trial), options, "fallback", deps)
    except Reject:
        parsed = None
    if row is None:
        assert found.units == [], "a declined trial left files behind"
        assert found.sizes == [[] for _ in _fastresults.NAMES]
        return False
    assert parsed is not None, f"{trial}: the fast path took a trial the careful path rejects"
    rows, rejected = parsed
    assert rejected == []
    assert len(rows) == 1
    assert dict(zip(_fastresults.FIELDS, row, strict=True)) == rows[0], trial
    expected = [(str(trial / "result.json"), found.sizes[0][0], found.times[0][0])]
    for column in (2, 3, 1, 4):  # the careful path's order: reward files, agent/, lock.json
        if found.sizes[column][0] != SKIP:
            expected.append((str(trial / _fastresults.NAMES[column]), ABSENT, 0))
    assert deps == expected
    assert found.units == [str(trial)]
    return True


@pytest.fixture
def real_trials(shared: Path, tmp_path: Path) -> list[Path]:
    job = shared / "data" / "tb2-jobs" / "tmax-27b" / "terminal-bench-2-0"
    if not job.is_dir():
        job = shared / "samples" / TMAX_JOB
    return _results_only(job, tmp_path / "job")


@pytest.mark.parametrize("options", OPTIONS)
def test_every_real_results_only_trial_is_taken_and_gives_the_careful_row(real_trials, options):
    assert len(real_trials) >= 3
    assert all(_taken(trial, options) for trial in real_trials)


def test_one_hostile_value_anywhere_gives_the_careful_row_or_is_left_to_it(real_trials):
    # a trial with an exception and one without, every value down to depth 3, every hostile value
    picked = [real_trials[0], *[t for t in real_trials if b'"exception_type"' in (t / "result.json").read_bytes()][:1]]
    taken = declined = 0
    for trial in picked:
        clean = (trial / "result.json").read_bytes()
        paths = [path for path in json_paths(json.loads(clean)) if len(path) <= 3]
        for path in paths:
            for value in HOSTILE:
                (trial / "result.json").write_bytes(clean)
                mutate(trial / "result.json", ("json_at", path, value))
                for options in OPTIONS:
                    if _taken(trial, options):
                        taken += 1
                    else:
                        declined += 1
        (trial / "result.json").write_bytes(clean)
    assert taken > 1000  # both ways were exercised
    assert declined > 1000


def test_a_trial_with_an_agent_folder_and_no_turns_is_left_to_the_careful_path(tmp_path):
    trial = write_trial(tmp_path / "job" / "t__1", agent_result={"metadata": None})
    assert _taken(trial, OPTIONS[0])  # no agent/: the probe is remembered as absent
    (trial / "agent").mkdir()
    assert not _taken(trial, OPTIONS[0])  # its trajectory or episode dirs are counted there
    counted = write_trial(tmp_path / "job" / "t__2")  # n_episodes: agent/ is not looked at
    (counted / "agent").mkdir()
    assert _taken(counted, OPTIONS[0])


@pytest.mark.parametrize(
    "fields",
    [
        {"verifier_result": None, "reward file": True},  # the reward file is read
        {"verifier_result": ..., "reward file": True},
        {"task_name": None, "task_id": {"path": "tasks/demo"}},
        {"verifier_result": {"rewards": {"reward": "__HUGE_FLOAT__"}}},
        {"agent_result": {"n_input_tokens": 10.0}},  # a whole float: the careful path makes it an int
        {"agent_execution": {"started_at": "2026-01-01T00:10:00Z", "finished_at": "2026-01-01T00:00:00Z"}},
        {"config": {"agent": {"kwargs": {"max_turns": -1}}}},
        {"step_results": [{"step_name": "one", "verifier_result": {"rewards": {"reward": 1.0}}}]},  # multi-step
        {"lock file": True},  # its task digest and stated cap are read
    ],
)
def test_what_needs_a_note_a_file_or_a_rejection_is_left_to_the_careful_path(tmp_path, fields):
    reward_file = fields.pop("reward file", False)
    lock_file = fields.pop("lock file", False)
    trial = write_trial(tmp_path / "job" / "t__1", **fields)
    if lock_file:
        assert _taken(trial, OPTIONS[0])  # none there: remembered as absent
        (trial / "lock.json").write_text("{}")
    if reward_file:
        assert _taken(trial, OPTIONS[0])  # none there: both are remembered as absent
        (trial / "verifier").mkdir()
        (trial / "verifier" / "reward.txt").write_text("1")
    text = (trial / "result.json").read_text().replace('"__HUGE_FLOAT__"', "1e999")
    (trial / "result.json").write_text(text)
    assert not _taken(trial, OPTIONS[0])


def test_a_load_is_the_same_with_and_without_the_fast_path(real_trials, monkeypatch, tmp_path):
    root = real_trials[0].parent
    bad = write_trial(root / "bad__1", verifier_result={"rewards": {"reward": "x"}})  # a rejection
    write_trial(root / "noted__1", agent_result={"n_input_tokens": -3})  # a field note
    fast = read_trials(root, cache=False)
    monkeypatch.setattr(_fastresults, "trial_row", lambda *args: None)
    careful = read_trials(root, cache=False)
    assert fast.trials.equals(careful.trials)
    assert (fast.rejected, fast.notes, fast.n_seen, fast.duplicates) == (
        careful.rejected,
        careful.notes,
        careful.n_seen,
        careful.duplicates,
    )
    assert [item.path for item in fast.rejected] == [str(bad / "result.json")]
    assert fast.n_seen == fast.trials.height + len(fast.rejected) + len(fast.duplicates)


def test_each_column_of_the_fast_row_is_in_its_place(tmp_path):
    # FIELDS is ROW_SCHEMA's order; the fast row is a positional tuple: on a trial whose values all
    # differ, any two columns swapped in the tuple differ from the careful path's row by name
    trial = write_trial(
        tmp_path / "job" / "unique__1",
        id="trial-id-1",
        task_checksum="sum-1",
        config={
            "agent": {"name": "t2", "model_name": "p/m", "kwargs": {"stated_cap": 7, "max_turns": 9}},
            "trials_dir": "jobs/the-job",
        },
        agent_result={
            "n_input_tokens": 11,
            "n_cache_tokens": 13,
            "n_output_tokens": 12,
            "cost_usd": 0.25,
            "metadata": {"n_episodes": 4},
        },
        verifier_result={"rewards": {"reward": 0.75}},
        exception_info={"exception_type": "AgentTimeoutError", "exception_message": "slow"},
        agent_execution={"started_at": "2026-01-01T00:00:01Z", "finished_at": "2026-01-01T00:00:03Z"},
    )
    options = harbor.Options(dataset="ds", status_rule="leaderboard", cap_rule="stated_cap")
    row = _fastresults.trial_row(str(trial), options, "fallback", _fastresults.stamps(), {})
    assert row is not None
    named = dict(zip(_fastresults.FIELDS, row, strict=True))
    (careful,), _ = harbor.trial_dir_rows(str(trial), options, "fallback", [])
    assert named == careful
    values = [value for value in row if value is not None and not isinstance(value, bool)]
    assert len(values) >= 20
    assert len({repr(value) for value in values}) == len(values)  # no two columns share a value here


def test_the_fast_struct_is_the_models_declaration_with_its_bounds():
    """FastResult is made from harbor_models.TrialResult (issue 43): the same fields, encoded names, defaults and
    types, but the bounded ones, and each bound is a type the model's own accepts whole or in part."""
    import msgspec

    from depthlab.io.harbor_models import TrialResult

    fast = {field.name: field for field in msgspec.structs.fields(_fastresults.FastResult)}
    model = {field.name: field for field in msgspec.structs.fields(TrialResult)}
    assert set(fast) == set(model)
    assert set(_fastresults.BOUNDED) <= set(model)
    for name, field in model.items():
        mine = fast[name]
        assert (mine.encode_name, mine.default, mine.default_factory) == (
            field.encode_name,
            field.default,
            field.default_factory,
        )
        if name not in _fastresults.BOUNDED:
            assert mine.type == field.type, name
    # a bounded agent_result decodes into the model's type: the bound only narrows
    bounded = msgspec.json.encode({"agent_result": {"n_input_tokens": 3, "metadata": {"n_episodes": 2}}})
    assert msgspec.json.decode(bounded, type=_fastresults.FastResult).agent_result.n_input_tokens == 3
    assert msgspec.json.decode(bounded, type=TrialResult).agent_result.n_input_tokens == 3
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"agent_result": {"n_input_tokens": -1}}', type=_fastresults.FastResult)
