"""One Harbor task directory, read whole and typed: task.toml of schema 1.0 to 1.4, its steps and their files.

:func:`read_task` is the one reader of a Harbor ``task.toml``: :func:`depthlab.load_tasks` builds the
tasks table from it, and a runner reads from it what a trial needs (per step: the instruction, the
tests, the reference solution, the workdir, the ``min_reward`` gate; the reward strategy, the
verifier's environment mode, the network mode).

Versions (``schema_version``, or the older ``version`` key; none written means 1.0):

* 1.0 to 1.4 are read as they are (1.4 is Harbor 0.26's: ``[task]`` package table, ``[[steps]]``,
  ``[verifier] environment_mode``, ``[environment] network_mode``, ``artifacts``);
* a newer minor version of major 1 (``1.5``) is read as 1.4 with a :class:`NewerTaskFormatWarning`
  and a ``note`` saying so (``strict=True`` raises instead): its new fields are not known here;
* any other version (``2.0``, ``"x"``) is a :class:`TaskFormatError` naming the path and the reason.

Harbor's rules followed here (``harbor.models.task``):

* ``network_mode``: ``[environment].network_mode``; else the older ``allow_internet`` (true:
  ``public``, false: ``no-network``); else unstated (None), which Harbor runs as ``public``.
* ``verifier_mode``: ``[verifier].environment_mode``; else ``separate`` when ``[verifier.environment]``
  is given; else ``shared``. A step's own ``[steps.verifier]`` mode wins over the task's.
* A multi-step task has no top-level instruction: each step's ``steps/<name>/instruction.md`` is
  given in turn; its tests are ``steps/<name>/tests/`` (else the task's ``tests/``), its reference
  solution ``steps/<name>/solution/solve.sh``, its files ``steps/<name>/workdir/``.
* ``multi_step_reward_strategy``: ``mean`` (Harbor's default when unset on a multi-step task) or ``final``.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
import warnings
from dataclasses import dataclass, field
from typing import Any, Final

from depthlab.io.harbor_writer import DEFAULT_REWARD_STRATEGY, REWARD_STRATEGIES

#: task.toml versions read as they are.
KNOWN_VERSIONS: Final[tuple[str, ...]] = ("1.0", "1.1", "1.2", "1.3", "1.4")
#: Harbor's values of ``network_mode``, ``environment_mode`` and ``multi_step_reward_strategy``.
NETWORK_MODES: Final[tuple[str, ...]] = ("no-network", "public", "allowlist")
VERIFIER_MODES: Final[tuple[str, ...]] = ("shared", "separate")
_LATEST: Final[tuple[int, int]] = (1, 4)


class TaskFormatError(Exception):
    """A task's files cannot be read as a task; ``path`` and ``reason`` say which and why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


class NewerTaskFormatWarning(UserWarning):
    """A task.toml of a newer minor version than depthlab knows was read as the latest known one."""


@dataclass(frozen=True)
class TaskStep:
    """One ``[[steps]]`` entry of a multi-step task, with its files.

    Attributes
    ----------
    index : int
        1-based position in task.toml.
    name : str
        The step's name: its folder under ``steps/``.
    path : str
        ``<task>/steps/<name>``.
    instruction : str or None
        Text of ``steps/<name>/instruction.md`` (None: missing).
    solution : str or None
        Text of ``steps/<name>/solution/solve.sh`` (None: missing).
    tests_dir : str
        ``steps/<name>/tests`` when it exists, else the task's ``tests`` (shared tests).
    workdir : str or None
        ``steps/<name>/workdir`` when it exists: copied into the container before the step
        (its ``setup.sh`` run there).
    min_reward : float or None
        The gate on the ``reward`` key: the trial stops after this step when its reward is
        below it (or it has none). None: no gate, or a per-key gate (:attr:`min_rewards`).
    min_rewards : dict or None
        A per-key gate (``min_reward = {key = value, ...}``): every key must reach its value.
    verifier_mode : str
        The step's verifier environment mode (``shared`` or ``separate``), resolved as Harbor does.
    agent_timeout_sec, verifier_timeout_sec : float or None
        ``[steps.agent]`` / ``[steps.verifier]`` ``timeout_sec`` (None: the task's).
    """

    index: int
    name: str
    path: str
    instruction: str | None
    solution: str | None
    tests_dir: str
    workdir: str | None
    min_reward: float | None
    min_rewards: dict[str, float] | None
    verifier_mode: str
    agent_timeout_sec: float | None = None
    verifier_timeout_sec: float | None = None


@dataclass(frozen=True)
class HarborTask:
    """A Harbor task directory as :func:`read_task` reads it.

    Attributes
    ----------
    path, config_path : str
        The task directory and its task.toml.
    name : str
        ``[task].name`` without its ``org/`` prefix, else the directory name.
    schema_version : str
        The version as written (``"1.0"`` when none is).
    note : str or None
        How the file was read when not plainly (a newer minor version read as 1.4).
    metadata, package : dict
        ``[metadata]`` (the labels) and ``[task]`` (name, version, description, authors, keywords).
    instruction, solution : str or None
        ``instruction.md`` and ``solution/solve.sh`` (a multi-step task has its steps' instead).
    network_mode : str or None
        ``no-network``, ``public`` or ``allowlist`` (``allow_internet`` mapped); None: unstated.
    verifier_mode : str
        ``shared`` or ``separate`` (the task-level verifier, resolved as Harbor does).
    verifier_dockerfile : str or None
        ``tests/Dockerfile`` when it exists (the separate verifier's image).
    reward_strategy : str or None
        ``mean`` or ``final`` for a multi-step task (Harbor's default ``mean`` when unset); None otherwise.
    steps : tuple of TaskStep
        The declared ``[[steps]]``, in order; empty for a single-step task.
    agent_timeout_sec, verifier_timeout_sec : float or None
        ``[agent]`` / ``[verifier]`` ``timeout_sec``.
    config : dict
        task.toml as parsed (what a runner checks it can run as Harbor does: artifacts,
        healthchecks, users).
    """

    path: str
    config_path: str
    name: str
    schema_version: str
    note: str | None
    metadata: dict[str, Any]
    package: dict[str, Any]
    instruction: str | None
    solution: str | None
    network_mode: str | None
    verifier_mode: str
    verifier_dockerfile: str | None
    reward_strategy: str | None
    steps: tuple[TaskStep, ...] = field(default_factory=tuple)
    agent_timeout_sec: float | None = None
    verifier_timeout_sec: float | None = None
    config: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def multi_step(self) -> bool:
        """Whether the task declares ``[[steps]]``."""
        return bool(self.steps)


def read_task(task_dir: str | os.PathLike[str], *, strict: bool = False, decode_errors: str = "replace") -> HarborTask:
    """Read one Harbor task directory (``task.toml`` and the files it names).

    Parameters
    ----------
    task_dir : str or path-like
        A directory holding ``task.toml``.
    strict : bool, default False
        Raise :class:`TaskFormatError` on a newer minor version instead of reading it with a
        :class:`NewerTaskFormatWarning`.
    decode_errors : {"replace", "strict"}, default "replace"
        How undecodable bytes in task.toml are taken (:func:`read_config`).

    Returns
    -------
    HarborTask

    Raises
    ------
    TaskFormatError
        When task.toml is missing, not TOML, of an unknown version, or has a field of the wrong type.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> task = pathlib.Path(tempfile.mkdtemp()) / "two"
    >>> for name in ("a", "b"):
    ...     (task / "steps" / name / "solution").mkdir(parents=True)
    ...     _ = (task / "steps" / name / "instruction.md").write_text(f"Do {name}.")
    ...     _ = (task / "steps" / name / "solution" / "solve.sh").write_text("echo hi\\n")
    >>> _ = (task / "task.toml").write_text('schema_version = "1.4"\\n'
    ...     '[[steps]]\\nname = "a"\\nmin_reward = 1.0\\n[[steps]]\\nname = "b"\\n')
    >>> spec = read_task(task)
    >>> [(step.index, step.name, step.min_reward) for step in spec.steps], spec.reward_strategy
    ([(1, 'a', 1.0), (2, 'b', None)], 'mean')
    """
    folder = os.path.abspath(os.fspath(task_dir))
    path = os.path.join(folder, "task.toml")
    config = read_config(path, decode_errors=decode_errors)
    version, note = _version(config, path, strict)
    package = _table(config, "task", path)
    metadata = _table(config, "metadata", path)
    environment = _table(config, "environment", path)
    verifier = _table(config, "verifier", path)
    agent = _table(config, "agent", path)
    name = package.get("name")
    task_mode = _verifier_mode(verifier, path, "verifier") or "shared"
    steps = tuple(_steps(config, folder, path, task_mode))
    strategy = _choice(config.get("multi_step_reward_strategy"), REWARD_STRATEGIES, "multi_step_reward_strategy", path)
    dockerfile = os.path.join(folder, "tests", "Dockerfile")
    return HarborTask(
        path=folder,
        config_path=path,
        name=str(name).rsplit("/", 1)[-1] if name else os.path.basename(folder),
        schema_version=version,
        note=note,
        metadata=metadata,
        package=package,
        instruction=read_text(os.path.join(folder, "instruction.md")),
        solution=read_text(os.path.join(folder, "solution", "solve.sh")),
        network_mode=_network_mode(environment, path),
        verifier_mode=task_mode,
        verifier_dockerfile=dockerfile if os.path.isfile(dockerfile) else None,
        reward_strategy=(strategy or DEFAULT_REWARD_STRATEGY) if steps else None,
        steps=steps,
        agent_timeout_sec=_seconds(agent.get("timeout_sec"), "[agent].timeout_sec", path),
        verifier_timeout_sec=_seconds(verifier.get("timeout_sec"), "[verifier].timeout_sec", path),
        config=config,
    )


def step_gates(config: dict, path: str) -> tuple[list[tuple[str, float | None, dict[str, float] | None]], str | None]:
    """The declared steps of a parsed task.toml as (name, min_reward, per-key min_rewards), and its reward strategy.

    Only task.toml is read (a trial's reader needs no more of the task).

    Examples
    --------
    >>> step_gates({"steps": [{"name": "a", "min_reward": 1}], "multi_step_reward_strategy": "final"}, "task.toml")
    ([('a', 1.0, None)], 'final')
    """
    steps = config.get("steps")
    if steps is None:
        return [], None
    if not isinstance(steps, list) or not all(isinstance(item, dict) for item in steps):
        raise TaskFormatError(path, f"[[steps]] must be an array of tables, got {type(steps).__name__}")
    gates = []
    for index, item in enumerate(steps):
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise TaskFormatError(path, f"steps[{index}].name must be a folder name, got {name!r}")
        gates.append((name, *_min_reward(item.get("min_reward"), f"steps[{index}].min_reward", path)))
    strategy = _choice(config.get("multi_step_reward_strategy"), REWARD_STRATEGIES, "multi_step_reward_strategy", path)
    return gates, (strategy or DEFAULT_REWARD_STRATEGY) if gates else None


def read_config(path: str | os.PathLike[str], *, decode_errors: str = "replace") -> dict[str, Any]:
    """A ``task.toml`` parsed, and nothing checked: the one place task.toml files are read.

    Parameters
    ----------
    path : str or path-like
        The task.toml file.
    decode_errors : {"replace", "strict"}, default "replace"
        How undecodable bytes are taken: replaced (the loaders), or refused as Harbor's own
        reader refuses them (a check of what Harbor would make of the file).

    Raises
    ------
    TaskFormatError
        When the file is missing, cannot be read or is not TOML; the underlying error, when there
        is one, is its ``__cause__``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> toml = pathlib.Path(tempfile.mkdtemp()) / "task.toml"
    >>> _ = toml.write_text("[agent]\\ntimeout_sec = 60.0\\n")
    >>> read_config(toml)
    {'agent': {'timeout_sec': 60.0}}
    """
    where = os.fspath(path)
    if not os.path.isfile(where):
        raise TaskFormatError(where, "not a regular file")
    try:
        with open(where, "rb") as handle:
            text = handle.read().decode("utf-8", errors=decode_errors)
    except OSError as exc:
        raise TaskFormatError(where, f"cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TaskFormatError(where, f"cannot read: {exc}") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TaskFormatError(where, f"not valid TOML: {exc}") from exc


def read_text(path: str) -> str | None:
    """The text of a regular file (undecodable bytes replaced), or None when there is none."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", errors="replace")
    except OSError as exc:
        raise TaskFormatError(path, f"cannot read: {exc.strerror or exc}") from None


def _version(config: dict, path: str, strict: bool) -> tuple[str, str | None]:
    raw = config.get("schema_version", config.get("version", "1.0"))
    version = str(raw)
    if version in KNOWN_VERSIONS:
        return version, None
    known = f"known: {KNOWN_VERSIONS[0]} to {KNOWN_VERSIONS[-1]}"
    parts = version.split(".")
    if len(parts) == 2 and all(part.isdigit() for part in parts):
        major, minor = int(parts[0]), int(parts[1])
        if major == _LATEST[0] and minor > _LATEST[1]:
            note = f"task.toml schema version {version!r} is newer than known ({known}): read as {KNOWN_VERSIONS[-1]}"
            if strict:
                raise TaskFormatError(path, note)
            warnings.warn(f"{path}: {note}", NewerTaskFormatWarning, stacklevel=3)
            return version, note
    raise TaskFormatError(path, f"unknown task.toml schema version {version!r} ({known})")


def _steps(config: dict, folder: str, path: str, task_mode: str) -> list[TaskStep]:
    declared = config.get("steps")
    if declared is None:
        return []
    if not isinstance(declared, list) or not all(isinstance(item, dict) for item in declared):
        raise TaskFormatError(path, f"[[steps]] must be an array of tables, got {type(declared).__name__}")
    steps, seen = [], set()
    for index, item in enumerate(declared, start=1):
        name = item.get("name")
        if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name:
            raise TaskFormatError(path, f"steps[{index - 1}].name must be a folder name, got {name!r}")
        if name.casefold() in seen:
            raise TaskFormatError(path, f"step name {name!r} is given twice")
        seen.add(name.casefold())
        where = f"steps[{index - 1}]"
        step_dir = os.path.join(folder, "steps", name)
        tests = os.path.join(step_dir, "tests")
        workdir = os.path.join(step_dir, "workdir")
        min_reward, min_rewards = _min_reward(item.get("min_reward"), f"{where}.min_reward", path)
        step_verifier = _table(item, "verifier", path, where)
        step_agent = _table(item, "agent", path, where)
        steps.append(
            TaskStep(
                index=index,
                name=name,
                path=step_dir,
                instruction=read_text(os.path.join(step_dir, "instruction.md")),
                solution=read_text(os.path.join(step_dir, "solution", "solve.sh")),
                tests_dir=tests if os.path.isdir(tests) else os.path.join(folder, "tests"),
                workdir=workdir if os.path.isdir(workdir) else None,
                min_reward=min_reward,
                min_rewards=min_rewards,
                verifier_mode=_verifier_mode(step_verifier, path, f"{where}.verifier") or task_mode,
                agent_timeout_sec=_seconds(step_agent.get("timeout_sec"), f"{where}.agent.timeout_sec", path),
                verifier_timeout_sec=_seconds(step_verifier.get("timeout_sec"), f"{where}.verifier.timeout_sec", path),
            )
        )
    return steps


def _table(config: dict, key: str, path: str, where: str | None = None) -> dict:
    value = config.get(key, {})
    if not isinstance(value, dict):
        shown = f"{where}.{key}" if where else f"[{key}]"
        raise TaskFormatError(path, f"{shown} must be a table, got {type(value).__name__}")
    return value


def _choice(value: Any, choices: tuple[str, ...], where: str, path: str) -> str | None:
    if value is None:
        return None
    if value not in choices:
        raise TaskFormatError(path, f"{where} must be one of {list(choices)}, got {value!r}")
    return str(value)


def _network_mode(environment: dict, path: str) -> str | None:
    mode = _choice(environment.get("network_mode"), NETWORK_MODES, "[environment].network_mode", path)
    if mode is not None:
        return mode
    allow = environment.get("allow_internet")
    if allow is None:
        return None
    if not isinstance(allow, bool):
        raise TaskFormatError(path, f"[environment].allow_internet must be true or false, got {allow!r}")
    return "public" if allow else "no-network"


def _verifier_mode(verifier: dict, path: str, where: str) -> str | None:
    mode = _choice(verifier.get("environment_mode"), VERIFIER_MODES, f"[{where}].environment_mode", path)
    if mode is not None:
        return mode
    return "separate" if verifier.get("environment") is not None else None


def _min_reward(value: Any, where: str, path: str) -> tuple[float | None, dict[str, float] | None]:
    if value is None:
        return None, None
    if isinstance(value, dict):
        return None, {str(key): _number(item, f"{where}.{key}", path) for key, item in value.items()}
    return _number(value, where, path), None


def _number(value: Any, where: str, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TaskFormatError(path, f"{where} must be a finite number, got {value!r}")
    return float(value)


def _seconds(value: Any, where: str, path: str) -> float | None:
    return None if value is None else _number(value, where, path)


# ----------------------------------------------------------------------------------------------------
# Harbor's defaults and size strings (``harbor.models.task.config``), for every reader of task.toml:
# what a field left out means, and how Harbor converts the older ``memory``/``storage`` sizes.

#: ``[agent].timeout_sec``, ``[verifier].timeout_sec`` and ``[environment].build_timeout_sec`` when unset.
DEFAULT_AGENT_TIMEOUT_SEC: Final[float] = 600.0
DEFAULT_VERIFIER_TIMEOUT_SEC: Final[float] = 600.0
DEFAULT_BUILD_TIMEOUT_SEC: Final[float] = 600.0
#: Harbor's values of ``[environment].os`` (case-insensitive), and its default.
TASK_OSES: Final[tuple[str, ...]] = ("linux", "windows")
DEFAULT_TASK_OS: Final[str] = "linux"

# a size Harbor converts to a meaningful number of megabytes ("1e3G", "inf" or "-1G" it reads as
# nonsense or not at all); the unit is required
_SIZE: Final = re.compile(r"^\s*(\d+(\.\d*)?|\.\d+)\s*([GMK])\s*$", re.IGNORECASE)


def size_mb(text: object) -> int | None:
    """Megabytes of an older ``memory``/``storage`` size as Harbor converts it, or None when it cannot.

    Harbor truncates (``int``): ``"0.5K"`` is 0 MB, which a caller reads as no size.

    Examples
    --------
    >>> size_mb("2G"), size_mb(" 512m "), size_mb("1.5K"), size_mb("lots"), size_mb("2Gi")
    (2048, 512, 0, None, None)
    """
    match = _SIZE.match(text) if isinstance(text, str) else None
    if match is None:
        return None
    number, unit = float(match[1]), match[3].upper()
    return int(number * 1024 if unit == "G" else number if unit == "M" else number / 1024)


def section(config: object, *keys: str) -> dict[str, Any]:
    """The table at ``keys`` of a parsed task.toml (``section(config, "verifier", "env")``); empty when any is absent
    or not a table. The lenient reading of a check that reports what is wrong rather than raising.

    Examples
    --------
    >>> section({"verifier": {"env": {"A": "1"}}}, "verifier", "env"), section({"verifier": 3}, "verifier")
    ({'A': '1'}, {})
    """
    value = config
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def passes_gate(step: TaskStep, rewards: dict[str, float] | None) -> bool:
    """Whether ``step``'s ``min_reward`` lets a multi-step trial go on after it (Harbor's rule: a missing key is -inf).

    Examples
    --------
    >>> step = TaskStep(1, "a", "steps/a", None, None, "tests", None, 1.0, None, "shared")
    >>> passes_gate(step, {"reward": 1.0}), passes_gate(step, {"reward": 0.5}), passes_gate(step, None)
    (True, False, False)
    """
    gates = {"reward": step.min_reward} if step.min_reward is not None else dict(step.min_rewards or {})
    return all((rewards or {}).get(key, -math.inf) >= value for key, value in gates.items())
