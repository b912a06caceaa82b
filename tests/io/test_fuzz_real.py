"""Property-based fuzz over real run-log files (../shared/samples): no mutation crashes a load.

Each example copies one real tree (the TMax Harbor job, two TB1 leaderboard runs, a TB1 run),
mutates one of its real files (a byte flipped, the file cut short, bytes inserted, or one JSON
value replaced by a hostile one: integers past Int64, dates past year 9999 in UTC, 1e999,
``"nan"``, ``"a/"``, deep nesting, wrong types) and loads it. Properties:

* the load returns (no exception escapes ``strict=False``);
* counts reconcile: ``n_seen == rows + rejected + duplicates``;
* nothing is dropped silently: every trial of the clean tree is still a row, a rejection or a
  duplicate of its own file (or trial directory);
* every rejection names a path inside the tree and a reason;
* ``strict=True`` raises exactly the first rejection's text (or returns the same table).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from io_helpers import DROID_RUN, ORCHESTRATOR, TBA_RUN, TMAX_JOB

from depthlab.io import LoadError, read_trials

TREES = (TMAX_JOB, DROID_RUN, ORCHESTRATOR, TBA_RUN)
FUZZED_NAMES = ("result.json", "results.json", "trajectory.json", "run_metadata.json")
RUN_FILES = ("run_metadata.json", "tb.lock", "results.json")

HOSTILE = [
    2**63,
    2**64 + 1,
    -(2**70),
    -5,
    2**31,
    1e308,
    "9999-12-31T23:59:59-05:00",
    "0001-01-01T00:00:00+01:00",
    "nan",
    "a/",
    "",
    None,
    True,
    [],
    {},
    "__DEEP__",
    "__HUGE_FLOAT__",
]


def _files(samples: Path) -> list[tuple[str, str]]:
    found = []
    for tree in TREES:
        root = samples / tree
        for path in sorted(root.rglob("*")):
            if path.name in FUZZED_NAMES and path.is_file():
                found.append((tree, str(path.relative_to(root))))
    return found


def _replace_value(data: object, steps: list[int], value: object) -> object:
    """Replace the value reached by following ``steps`` (each picks a key or an index) with ``value``."""
    if not steps or not isinstance(data, dict | list) or not data:
        return value
    if isinstance(data, dict):
        key = sorted(data)[steps[0] % len(data)]
        data[key] = _replace_value(data[key], steps[1:], value)
    else:
        index = steps[0] % len(data)
        data[index] = _replace_value(data[index], steps[1:], value)
    return data


def _mutate(path: Path, mutation: tuple) -> None:
    data = path.read_bytes()
    kind = mutation[0]
    if kind == "flip":
        _, where, byte = mutation
        index = where % max(len(data), 1)
        data = data[:index] + bytes([data[index] ^ byte if data else byte]) + data[index + 1 :]
    elif kind == "truncate":
        data = data[: mutation[1] % max(len(data), 1)]
    elif kind == "insert":
        _, where, extra = mutation
        index = where % (len(data) + 1)
        data = data[:index] + extra + data[index:]
    else:
        _, steps, value = mutation
        text = json.dumps(_replace_value(json.loads(data), steps, value))
        text = text.replace('"__DEEP__"', "[" * 3000 + "]" * 3000).replace('"__HUGE_FLOAT__"', "1e999")
        data = text.encode()
    path.write_bytes(data)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)
_mutations = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(1, 255)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6)),
    st.tuples(st.just("insert"), st.integers(0, 10**6), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("json"), st.lists(st.integers(0, 50), max_size=5), st.sampled_from(HOSTILE) | _json_values),
)


def _unit_of(path: str) -> str:
    """The trial a source or rejection path belongs to: its file, or its Harbor trial directory."""
    path = path.split("#", 1)[0]
    parts = Path(path).parts
    if "agent" in parts or "verifier" in parts:  # a file inside a Harbor trial directory
        cut = max(parts.index(name) for name in ("agent", "verifier") if name in parts)
        return str(Path(*parts[:cut]))
    return str(Path(path).parent) if Path(path).name == "result.json" else path


@pytest.fixture(scope="module")
def real_files(samples):
    if not samples.is_dir():
        pytest.skip(f"real samples not found at {samples}")
    files = _files(samples)
    if not files:
        pytest.skip(f"no real run-log files under {samples}")
    return files


@pytest.fixture(scope="module")
def clean_units(samples, real_files):
    """For each tree: the trial units its clean load reaches (rows and rejections)."""
    units = {}
    for tree in TREES:
        load = read_trials(samples / tree, cache=False)
        units[tree] = {
            _unit_of(str(Path(path).relative_to(samples / tree)))
            for path in [*load.trials["source"].to_list(), *(item.path for item in load.rejected)]
        }
    return units


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), mutation=_mutations)
def test_mutated_real_files_never_crash_drop_or_miscount(samples, real_files, clean_units, data, mutation):
    tree, relative = data.draw(st.sampled_from(real_files))
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "tree"
        shutil.copytree(samples / tree, root, symlinks=True)
        target = root / relative
        if mutation[0] == "json":
            try:
                json.loads(target.read_bytes())
            except ValueError:
                mutation = ("truncate", 0)
        _mutate(target, mutation)

        load = read_trials(root, cache=False)

        assert load.n_seen == load.trials.height + len(load.rejected) + len(load.duplicates)
        for item in load.rejected:
            assert item.path.startswith(str(root)), item
            assert item.reason.strip(), item
        reached = {
            _unit_of(os.path.relpath(path.split("#", 1)[0], root))
            for path in [*load.trials["source"].to_list(), *(item.path for item in load.rejected), *load.duplicates]
        }
        # a TB1 run file every trial of the run needs (metadata, lock, run-level list) that cannot be
        # read rejects those trials under its own path: they are accounted for by that rejection
        run_files = [
            os.path.join(os.path.dirname(os.path.relpath(item.path.split("#", 1)[0], root)), "")
            for item in load.rejected
            if Path(item.path.split("#", 1)[0]).name in RUN_FILES
        ]
        missing = {unit for unit in clean_units[tree] - reached if not any(unit.startswith(d) for d in run_files)}
        assert not missing, (mutation, relative, missing)

        strict_error = None
        try:
            strict = read_trials(root, cache=False, strict=True)
        except LoadError as exc:
            strict_error = str(exc)
        if load.rejected:
            assert strict_error == str(load.rejected[0])
        else:
            assert strict_error is None
            assert strict.trials.equals(load.trials)
