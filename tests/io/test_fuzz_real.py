"""Property-based fuzz over real run-log files (../shared/samples): no fault crashes a load.

Each example copies one real tree (the TMax Harbor job, two TB1 leaderboard runs, a TB1 run),
injects one fault into one of its real files (:mod:`faults`: a byte flipped, the file cut
short, bytes inserted, one JSON value replaced by a hostile one, or the file replaced by a FIFO,
a directory, a dangling link or a 500 MB sparse file) and loads it. The properties, checked by
:func:`faults.problems`: no exception escapes ``strict=False``; ``n_seen == rows + rejected +
duplicates``; every trial of the clean tree is still a row, a rejection or a duplicate; every
rejection names a path inside the tree and a reason; ``strict=True`` raises exactly the first
rejection's text.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from faults import HOSTILE, NOT_A_FILE, TREES, fuzzed_files, mutate, problems, units
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from depthlab.io import read_trials

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)
_faults = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(1, 255)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6)),
    st.tuples(st.just("insert"), st.integers(0, 10**6), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("json"), st.lists(st.integers(0, 50), max_size=5), st.sampled_from(HOSTILE) | _json_values),
    st.tuples(st.just("replace"), st.sampled_from(NOT_A_FILE)),
)


@pytest.fixture(scope="module")
def real_files(samples):
    files = [(tree, name) for tree in TREES if (samples / tree).is_dir() for name in fuzzed_files(samples / tree)]
    if not files:
        pytest.skip(f"no real run-log files under {samples}")
    return files


@pytest.fixture(scope="module")
def clean_units(samples, real_files):
    """For each tree: the trial units its clean load reaches."""
    return {tree: units(read_trials(samples / tree, cache=False), samples / tree) for tree in TREES}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), fault=_faults)
def test_faults_in_real_files_never_crash_drop_or_miscount(samples, real_files, clean_units, data, fault):
    tree, relative = data.draw(st.sampled_from(real_files))
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "tree"
        shutil.copytree(samples / tree, root, symlinks=True)
        target = root / relative
        if fault[0] == "json":
            try:
                json.loads(target.read_bytes())
            except ValueError:
                fault = ("truncate", 0)
        mutate(target, fault)
        assert problems(root, clean_units[tree]) == [], fault
