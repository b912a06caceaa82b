"""The tasks no engine runs, refused on both engines with one line naming the cause, before any model call.

Harbor 0.26 refuses these tasks when it loads them (``harbor.models.task``: the step-name rules of
``step_name.py``, the unique-name validator of ``TaskConfig.steps``, ``Task._validate_tests``), but
only inside ``harbor run``, as a traceback or "No tasks matched the filter(s)", and depthlab's
runner ran some of them. One rule for both engines, applied by the round loop before the
preflight (:func:`depthlab.engines.rounds.measure`), so a refused task costs nothing on either:

* ``steps = []`` (no step declared: Harbor reads a single-step task) without the single-step
  task's ``instruction.md`` or ``tests/test.sh``, the line saying both;
* a step name Harbor cannot use as one folder on every host (empty, ``.``/``..``, a path
  separator, a control or Windows-reserved character, a trailing dot or space, a device name,
  more than 255 UTF-8 bytes), or two names equal once Unicode-normalised (NFC) and case-folded
  ("café" written NFC and NFD: one folder on macOS's and Windows' file systems);
* a step with no ``steps/<name>/instruction.md``, or no test script (``steps/<name>/tests/test.sh``
  nor the shared ``tests/test.sh``; ``test.bat`` under ``os = "windows"``), unless its verifier's
  image brings the tests (``[verifier.environment] docker_image``); a single-step task with no
  ``instruction.md`` or no ``tests/test.sh`` likewise;
* an instruction that is not UTF-8 text (Harbor reads it as UTF-8 and fails; the local runner
  used to send replacement characters).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Any

import polars as pl

from depthlab import schema
from depthlab.io.harbor_task import TaskFormatError, read_config

#: Characters Harbor refuses in a step name (its ``step_name._INVALID_CHARACTERS``: Windows' reserved
#: characters, path separators, control characters).
_INVALID_CHARACTERS = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
_DEVICE_NAME = re.compile(r"^(CON|PRN|AUX|NUL|CONIN\$|CONOUT\$|(?:COM|LPT)[1-9¹²³])$", re.IGNORECASE)
#: What :func:`refused_tasks`' table says of its rows (the heading of the round loop's message).
REFUSED = "no engine can run the task as written"


def refused_tasks(tasks: pl.DataFrame) -> pl.DataFrame:
    """The tasks of ``tasks`` (a tasks table) that no engine runs: task, reason (one line), output ('').

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "t"
    >>> folder.mkdir()
    >>> _ = (folder / "task.toml").write_text('schema_version = "1.4"\\nsteps = []\\n')
    >>> print(refused_tasks(pl.DataFrame({"task": ["t"], "source": [str(folder)]}))["reason"][0])
    task.toml: steps = [] declares no step, so it is a single-step task, and it has no instruction.md
    """
    rows = []
    for task, source in tasks.select("task", "source").iter_rows():
        folder = Path(str(source))
        if folder.name == "task.toml":
            folder = folder.parent
        if not (folder / "task.toml").is_file():
            continue  # a TB1 task (task.yaml): Harbor does not read it
        problem = task_refusal(folder)
        if problem:
            rows.append({"task": task, "reason": problem, "output": ""})
    return schema.preflight_failures(rows)


def task_refusal(folder: str | Path) -> str | None:
    """Why no engine runs the task folder ``folder`` (one line), or None when one can.

    A task.toml that cannot be read is left to the checks that read it (its reason is theirs).

    Examples
    --------
    >>> import tempfile, pathlib, unicodedata
    >>> task = pathlib.Path(tempfile.mkdtemp())
    >>> names = [unicodedata.normalize(form, "café") for form in ("NFC", "NFD")]
    >>> toml = 'schema_version = "1.4"\\n' + "".join(f'[[steps]]\\nname = "{name}"\\n' for name in names)
    >>> _ = (task / "task.toml").write_text(toml, encoding="utf-8")
    >>> print(task_refusal(task))  # doctest: +NORMALIZE_WHITESPACE
    task.toml: steps[1].name 'cafe\\u0301' is steps[0].name 'caf\\xe9'
    once Unicode-normalised (NFC) and case-folded: ...
    """
    where = Path(folder)
    try:
        config = read_config(where / "task.toml", decode_errors="strict")
    except TaskFormatError:
        return None
    steps = config.get("steps")
    if steps is None:
        return _single_step_refusal(where, config)
    if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
        return None  # the task reader names this one
    if not steps:  # Harbor reads it as a single-step task: refused only when that one cannot run
        problem = _single_step_refusal(where, config)
        if problem:
            return f"task.toml: steps = [] declares no step, so it is a single-step task, and {problem}"
        return None
    seen: dict[str, tuple[int, str]] = {}
    for index, step in enumerate(steps):
        name = step.get("name")
        problem = _name_problem(name)
        if problem:
            return f"task.toml: steps[{index}].name {name!r} {problem}"
        key = unicodedata.normalize("NFC", str(name)).casefold()
        if key in seen:
            first, other = seen[key]
            return (
                # ascii(): the two names look the same on screen, their code points do not
                f"task.toml: steps[{index}].name {name!a} is steps[{first}].name {other!a} once Unicode-normalised "
                "(NFC) and case-folded: Harbor refuses names that are one folder on some file systems"
            )
        seen[key] = (index, str(name))
    for index, step in enumerate(steps):
        name = str(step["name"])
        step_dir = where / "steps" / name
        if not step_dir.is_dir():
            return f"step {index + 1} ({name!r}) has no folder steps/{name}/"
        problem = _instruction_problem(step_dir / "instruction.md", f"steps/{name}/instruction.md")
        if problem:
            return f"step {index + 1} ({name!r}): {problem}"
        if not _bundled_tests(config, step):
            script = _test_script(config)
            if not (step_dir / "tests" / script).is_file() and not (where / "tests" / script).is_file():
                return (
                    f"step {index + 1} ({name!r}) has no tests: neither steps/{name}/tests/{script} nor tests/{script}"
                )
    return None


def _single_step_refusal(folder: Path, config: dict[str, Any]) -> str | None:
    problem = _instruction_problem(folder / "instruction.md", "instruction.md")
    if problem:
        return problem
    script = _test_script(config)
    if not _bundled_tests(config, {}) and not (folder / "tests" / script).is_file():
        return f"it has no tests: no tests/{script}"
    return None


def _name_problem(name: object) -> str | None:
    """What makes ``name`` no portable folder name (Harbor's ``validate_step_name``), or None."""
    if not isinstance(name, str):
        return "is not a text"
    if (
        not name.strip()
        or name in {".", ".."}
        or name.endswith((".", " "))
        or _INVALID_CHARACTERS.search(name)
        or _DEVICE_NAME.fullmatch(name.partition(".")[0].rstrip(" "))
    ):
        return (
            "is no portable folder name (empty, '.' or '..', a path separator, a control or reserved "
            "character, a trailing dot or space, or a device name)"
        )
    if len(name.encode("utf-8")) > 255:
        return "is longer than 255 UTF-8 bytes"
    return None


def _instruction_problem(path: Path, shown: str) -> str | None:
    if not path.is_file():
        return f"it has no {shown}"
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        return (
            f"{shown} is not UTF-8 text (byte 0x{error.object[error.start]:02x} at offset {error.start}): "
            "Harbor cannot read it"
        )
    except OSError as error:
        return f"{shown} cannot be read: {error.strerror or error}"
    return None


def _test_script(config: dict[str, Any]) -> str:
    environment = config.get("environment")
    windows = isinstance(environment, dict) and str(environment.get("os", "")).lower() == "windows"
    return "test.bat" if windows else "test.sh"


def _bundled_tests(config: dict[str, Any], step: dict[str, Any]) -> bool:
    """Whether the step's (or the task's) verifier runs in a prebuilt image, which brings its tests."""
    for section in (step.get("verifier"), config.get("verifier")):
        environment = section.get("environment") if isinstance(section, dict) else None
        if isinstance(environment, dict) and environment.get("docker_image"):
            return True
    return False
