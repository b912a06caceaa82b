"""Fault injection on copies of real run-log trees, shared by the fuzz test and the fault benchmark.

A *fault* changes one file of a tree: a byte flipped, the file cut short, bytes inserted, one
JSON value replaced by a hostile one (integers past Int64, dates past year 9999 in UTC, 1e999,
``"nan"``, ``"a/"``, nesting 3,000 deep, wrong types), or the file replaced by something that is
not a file (a FIFO, a directory, a dangling link, a 500 MB sparse file). :func:`problems` loads
the tree and lists what went wrong: an exception out of ``strict=False`` (a crash), counts that
do not reconcile, a trial of the clean tree that is neither a row, a rejection nor a duplicate
(a silent drop), a rejection without a path inside the tree or without a reason, and
``strict=True`` not raising exactly the first rejection.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from depthlab.io import LoadError, notes_text, read_trials

#: Real trees under ../shared/samples the faults are injected into.
TREES = (
    "hamishivi_tmax/evaluation_assets/daytona/tmax-27b/terminal-bench-2-0",
    "laude-institute_terminal-bench-leaderboard/results/terminal-bench-core@0.1.1/20250923_droid_claude-4-sonnet",
    "laude-institute_terminal-bench-leaderboard/results/terminal-bench-core:0.1.1/20250906_orchestrator_claude-4.1-opus",
    "justin-handsman-devrev_terminal-bench-agent/runs/2025-09-14__14-24-59",
)
#: Files faults are injected into.
FUZZED_NAMES = ("result.json", "results.json", "trajectory.json", "run_metadata.json", "reward.txt")
#: Files a whole TB1 run needs: when one cannot be read, its trials are rejected under its path.
RUN_FILES = ("run_metadata.json", "tb.lock", "results.json")

DEEP_MARK, HUGE_FLOAT_MARK = "__DEEP__", "__HUGE_FLOAT__"
HOSTILE: tuple = (
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
    DEEP_MARK,
    HUGE_FLOAT_MARK,
)
#: Faults that replace the file by something that is not a regular file of a sane size.
NOT_A_FILE = ("fifo", "directory", "dangling link", "sparse 500 MB")


def fuzzed_files(root: Path) -> list[str]:
    """Paths (relative to ``root``) of the files faults can be injected into."""
    return sorted(
        str(path.relative_to(root)) for path in root.rglob("*") if path.name in FUZZED_NAMES and path.is_file()
    )


def json_paths(data: object, prefix: tuple = ()) -> list[tuple]:
    """Every path (a tuple of keys and indices) to a value in a JSON document, the root excluded."""
    found = []
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        found.append((*prefix, key))
        found.extend(json_paths(value, (*prefix, key)))
    return found


def replace_at(data: object, steps: list[int], value: object) -> object:
    """Replace the value reached by following ``steps`` (each picks a key or an index, modulo) with ``value``."""
    if not steps or not isinstance(data, dict | list) or not data:
        return value
    if isinstance(data, dict):
        key = sorted(data)[steps[0] % len(data)]
        data[key] = replace_at(data[key], steps[1:], value)
    else:
        index = steps[0] % len(data)
        data[index] = replace_at(data[index], steps[1:], value)
    return data


def set_path(data: object, path: tuple, value: object) -> object:
    """Set the value at ``path`` (from :func:`json_paths`) to ``value``."""
    if not path:
        return value
    data[path[0]] = set_path(data[path[0]], path[1:], value)  # type: ignore[index]
    return data


def dumps(data: object) -> bytes:
    """JSON text with the deep-nesting and out-of-range-float marks written out."""
    text = json.dumps(data)
    text = text.replace(json.dumps(DEEP_MARK), "[" * 3000 + "]" * 3000)
    return text.replace(json.dumps(HUGE_FLOAT_MARK), "1e999").encode()


def mutate(path: Path, fault: tuple) -> None:
    """Apply one fault to ``path``: ``("flip", where, xor)``, ``("truncate", where)``,
    ``("insert", where, bytes)``, ``("json", steps, value)``, ``("json_at", path, value)`` or
    ``("replace", kind)`` with a kind of :data:`NOT_A_FILE`."""
    kind = fault[0]
    if kind == "replace":
        _replace(path, fault[1])
        return
    data = path.read_bytes()
    if kind == "flip":
        _, where, byte = fault
        index = where % max(len(data), 1)
        data = data[:index] + bytes([data[index] ^ byte if data else byte]) + data[index + 1 :]
    elif kind == "truncate":
        data = data[: fault[1] % max(len(data), 1)]
    elif kind == "insert":
        _, where, extra = fault
        index = where % (len(data) + 1)
        data = data[:index] + extra + data[index:]
    elif kind == "json":
        data = dumps(replace_at(json.loads(data), fault[1], fault[2]))
    else:
        data = dumps(set_path(json.loads(data), fault[1], fault[2]))
    path.write_bytes(data)


def _replace(path: Path, kind: str) -> None:
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "dangling link":
        path.symlink_to(path.parent / "gone-away")
    else:
        with open(path, "wb") as handle:
            handle.truncate(500 * 1024 * 1024)


def unit_of(path: str) -> str:
    """The trial a source or rejection path belongs to: its file, or its Harbor trial directory."""
    path = path.split("#", 1)[0]
    parts = Path(path).parts
    if "agent" in parts or "verifier" in parts:  # a file inside a Harbor trial directory
        cut = max(parts.index(name) for name in ("agent", "verifier") if name in parts)
        return str(Path(*parts[:cut]))
    return str(Path(path).parent) if Path(path).name == "result.json" else path


def units(load, root: Path) -> set[str]:
    """The trial units a load reached (rows, rejections, duplicates), relative to ``root``."""
    paths = [*load.trials["source"].to_list(), *(item.path for item in load.rejected), *load.duplicates]
    return {unit_of(os.path.relpath(path.split("#", 1)[0], root)) for path in paths}


def problems(root: Path, clean_units: set[str]) -> list[str]:
    """Load ``root`` (faulted) and say what went wrong; an empty list means it held."""
    try:
        load = read_trials(root, cache=False)
    except Exception as exc:  # a crash is what is being counted
        return [f"crash: {type(exc).__name__}: {exc}"]
    found = []
    if load.n_seen != load.trials.height + len(load.rejected) + len(load.duplicates):
        found.append(f"miscount: {load.summary()}")
    for item in load.rejected:
        if not item.path.startswith(str(root)) or not item.reason.strip():
            found.append(f"rejection without a path in the tree or a reason: {item}")
    run_dirs = [
        os.path.join(os.path.dirname(os.path.relpath(item.path.split("#", 1)[0], root)), "")
        for item in load.rejected
        if Path(item.path.split("#", 1)[0]).name in RUN_FILES
    ]
    dropped = {unit for unit in clean_units - units(load, root) if not any(unit.startswith(d) for d in run_dirs)}
    found.extend(f"silent drop: {unit}" for unit in sorted(dropped))
    for note in load.notes:
        if not note.path.startswith(str(root)) or not note.reason.strip():
            found.append(f"field note without a path in the tree or a reason: {note}")
    # strict raises the first rejection; with none, the first field's note line (a field-level loss)
    expected = str(load.rejected[0]) if load.rejected else None
    if expected is None and load.notes:
        expected = notes_text(next(iter(load.notes_by_field().values())))
    try:
        strict = read_trials(root, cache=False, strict=True)
    except LoadError as exc:
        if str(exc) != expected:
            found.append(f"strict raised {exc!s}, expected {expected}")
    except Exception as exc:  # a crash under strict=True
        found.append(f"strict crash: {type(exc).__name__}: {exc}")
    else:
        if expected is not None or not strict.trials.equals(load.trials):
            found.append("strict=True did not raise the first rejection or field note")
    return found
