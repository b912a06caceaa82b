"""``task.toml`` values Harbor would misread, found before any trial runs (even under ``--no-preflight``).

Harbor 0.26's task model (``harbor.models.task.config``) accepts some values that make a trial
meaningless rather than refused: ``timeout_sec = -5`` or ``nan`` give a timeout before the
agent's first call, recorded as the model's fail; a ``memory``/``storage`` size it cannot parse
("lots") aborts every job that holds the task, so every rerun aborts too. A task with such a
value is left out with the reason, as a task whose oracle fails is, so no model is paid for it.

task.toml is read, and its sizes converted, through :mod:`depthlab.io.harbor_task` (``read_config``,
``section``, ``size_mb``), as the runner reads it. The rules follow Harbor's fields:
``[agent]``/``[verifier]`` ``timeout_sec`` (float, must be finite and > 0 to mean a time),
``[environment]`` ``build_timeout_sec`` (likewise), ``cpus`` (> 0), ``memory_mb``/``storage_mb``
(int > 0), and the deprecated ``memory``/``storage`` sizes (``"<number>G|M|K"``, which Harbor
converts to megabytes).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import polars as pl

from depthlab import schema
from depthlab._text import toml_key
from depthlab.io.harbor_task import DEFAULT_AGENT_TIMEOUT_SEC, TaskFormatError, read_config, section, size_mb

_TIMES = (("agent", "timeout_sec"), ("verifier", "timeout_sec"), ("environment", "build_timeout_sec"))


def task_config_problems(tasks: pl.DataFrame) -> pl.DataFrame:
    """The tasks whose ``task.toml`` holds a value Harbor would misread: task, reason, output ('').

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "t"
    >>> folder.mkdir()
    >>> _ = (folder / "task.toml").write_text('[agent]\\ntimeout_sec = -5.0\\n[environment]\\nmemory = "lots"\\n')
    >>> tasks = pl.DataFrame({"task": ["t"], "source": [str(folder / "task.toml")]})
    >>> for problem in task_config_problems(tasks)["reason"].to_list()[0].split("; "):
    ...     print(problem)
    task.toml: [agent].timeout_sec must be a finite number of seconds > 0, got -5.0
    [environment].memory must be a size like '2G' or '512M', got 'lots'
    """
    rows = []
    for task, source in tasks.select("task", "source").iter_rows():
        path = Path(str(source))
        if path.name != "task.toml":
            path = path / "task.toml"
        if not path.is_file():
            continue  # a TB1 task (task.yaml): Harbor does not read it
        try:
            config = read_config(path, decode_errors="strict")  # as Harbor reads it
        except TaskFormatError as error:
            rows.append({"task": task, "reason": f"task.toml cannot be read: {error.__cause__ or error}", "output": ""})
            continue
        problems = config_problems(config)
        if problems:
            rows.append({"task": task, "reason": "task.toml: " + "; ".join(problems), "output": ""})
    return schema.preflight_failures(rows)


def config_problems(config: dict[str, Any]) -> list[str]:
    """What in a parsed ``task.toml`` Harbor would misread (empty when nothing)."""
    problems: list[str] = []
    sections: list[tuple[str, dict[str, Any]]] = [("", config)]
    for index, step in enumerate(config.get("steps") or []):
        if isinstance(step, dict):
            sections.append((f"steps[{index}].", step))
    for prefix, part in sections:
        for table, key in _TIMES:
            value = _get(part, table, key)
            if value is not _MISSING and not _positive(value):
                name = toml_key(f"{prefix}{table}.{key}")
                problems.append(f"{name} must be a finite number of seconds > 0, got {value!r}")
    environments = [("environment", section(config, "environment"))]
    environments.append(("verifier.environment", section(config, "verifier", "environment")))
    for name, environment in environments:
        if not environment:
            continue
        cpus = environment.get("cpus", _MISSING)
        if cpus is not _MISSING and cpus is not None and not _positive(cpus):
            problems.append(f"{toml_key(f'{name}.cpus')} must be a number > 0, got {cpus!r}")
        for key in ("memory_mb", "storage_mb"):
            value = environment.get(key, _MISSING)
            if value is not _MISSING and value is not None and not (_int(value) and value > 0):
                problems.append(f"{toml_key(f'{name}.{key}')} must be a whole number of megabytes > 0, got {value!r}")
        for key in ("memory", "storage"):
            value = environment.get(key, _MISSING)
            if value is not _MISSING and not (size_mb(value) or 0) > 0:
                problems.append(f"{toml_key(f'{name}.{key}')} must be a size like '2G' or '512M', got {value!r}")
    return problems


_MISSING: Any = object()


def _config_or_empty(source: object) -> dict[str, Any]:
    """The task.toml a tasks table's ``source`` names, parsed; empty when it cannot be read."""
    path = Path(str(source))
    path = path if path.name == "task.toml" else path / "task.toml"
    try:
        return read_config(path, decode_errors="strict")
    except TaskFormatError:
        return {}


def _get(config: dict[str, Any], table: str, key: str) -> Any:
    return section(config, table).get(key, _MISSING)


def _int(value: object) -> bool:
    """A whole number as pydantic takes one for an int field (512 or 512.0, never True)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _positive(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value) and value > 0


def storage_bounds(tasks: pl.DataFrame) -> dict[str, int | None]:
    """Task -> its ``[environment] storage_mb`` (or ``storage`` size) in MB; None when it states none."""
    bounds: dict[str, int | None] = {}
    for task, source in tasks.select("task", "source").iter_rows():
        environment = section(_config_or_empty(source), "environment")
        value = environment.get("storage_mb")
        if isinstance(value, int | float) and _int(value) and value > 0:
            bounds[str(task)] = int(value)
        else:
            bounds[str(task)] = size_mb(environment.get("storage")) or None
    return bounds


def agent_timeouts(tasks: pl.DataFrame, default: float = DEFAULT_AGENT_TIMEOUT_SEC) -> dict[str, float]:
    """Task -> its ``[agent] timeout_sec`` (``default``, Harbor's and the runner's, when unset or unusable)."""
    timeouts: dict[str, float] = {}
    for task, source in tasks.select("task", "source").iter_rows():
        value = section(_config_or_empty(source), "agent").get("timeout_sec")
        timeouts[str(task)] = float(value) if isinstance(value, int | float) and _positive(value) else default
    return timeouts
