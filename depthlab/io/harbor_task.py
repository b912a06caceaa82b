"""One Harbor task directory, read whole and typed: task.toml of schema 1.0 to 1.4, its steps and their files.

:func:`read_task` is the one reader of a Harbor ``task.toml``: :func:`depthlab.load_tasks` builds the
tasks table from it, and a runner reads from it what a trial needs (per step: the instruction, the
tests, the reference solution, the workdir, the ``min_reward`` gate; the reward strategy, the
verifier's environment mode, the network mode).

Versions (``schema_version``, or the older ``version`` key; none written is Harbor's current one, 1.4,
as Harbor's own ``TaskConfig`` defaults it):

* 1.0 to 1.4 are read as they are (1.4 is Harbor 0.26's: ``[task]`` package table, ``[[steps]]``,
  ``[verifier] environment_mode``, ``[environment] network_mode``, ``artifacts``);
* any other version (``1.5``, ``2.0``, ``"x"``) is read as Harbor 0.26 reads it: Harbor's
  ``TaskConfig`` takes any ``schema_version`` string (its ``handle_version_rename`` maps the older
  ``version`` key, and nothing checks the value), so its fields are read as 1.4's, with a
  :class:`NewerTaskFormatWarning` and a ``note`` saying so (``strict=True`` raises instead): fields
  a newer version adds are not known here.

Harbor's rules followed here (``harbor.models.task``):

* ``network_mode``: ``[environment].network_mode``; else the older ``allow_internet`` (true:
  ``public``, false: ``no-network``); else unstated (None), which Harbor runs as ``public``.
* ``verifier_mode``: ``[verifier].environment_mode``; else ``separate`` when ``[verifier.environment]``
  is given; else ``shared``. A step's own ``[steps.verifier]`` mode wins over the task's.
* A multi-step task has no top-level instruction: each step's ``steps/<name>/instruction.md`` is
  given in turn; its tests are ``steps/<name>/tests/`` (else the task's ``tests/``), its reference
  solution ``steps/<name>/solution/solve.sh``, its files ``steps/<name>/workdir/``.
* The reference solution is ``solve.bat`` for ``[environment] os = "windows"``, ``solve.sh`` otherwise
  (Harbor's oracle looks only for its OS's script).
* The agent sees an instruction without its leading canary lines (``agent_instruction``).

The rules themselves are :mod:`depthlab.io.harbor_models`'s (:class:`~depthlab.io.harbor_models.TaskConfig`);
this module reads the task's files beside them.
* ``multi_step_reward_strategy``: ``mean`` (Harbor's default when unset on a multi-step task) or ``final``.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import msgspec
import tomli_w

from depthlab._atomic import write_text
from depthlab.io.harbor_models import (
    CURRENT_TASK_SCHEMA,
    DEFAULT_OS,
    NETWORK_MODES,
    TASK_OS,
    TASK_SCHEMA_VERSIONS,
    VERIFIER_MODES,
    EnvironmentSection,
    StepConfig,
    TaskConfig,
    TaskFormatError,
    strip_canary,
)

if TYPE_CHECKING:
    import polars as pl

#: task.toml versions read as they are.
KNOWN_VERSIONS: Final[tuple[str, ...]] = TASK_SCHEMA_VERSIONS
_LATEST: Final[tuple[int, ...]] = tuple(int(part) for part in CURRENT_TASK_SCHEMA.split("."))

__all__ = [
    "KNOWN_VERSIONS",
    "NETWORK_MODES",
    "VERIFIER_MODES",
    "HarborTask",
    "NewerTaskFormatWarning",
    "TaskFormatError",
    "TaskStep",
    "TaskTomlSyntaxError",
    "agent_timeouts",
    "config_text",
    "parse_config",
    "read_config",
    "read_task",
    "read_text",
    "size_mb",
    "step_gates",
    "storage_bounds",
    "storage_limit_mb",
    "task_models",
    "write_config",
]


class TaskTomlSyntaxError(TaskFormatError):
    """A task.toml that is not TOML at all (the parser's error is its ``__cause__``)."""


class NewerTaskFormatWarning(UserWarning):
    """A task.toml of a version depthlab does not know (``1.5``, ``2.0``) was read as Harbor reads it, as the latest."""


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
    verifier_env : dict
        ``[steps.verifier.env]``: the variables the step's verifier is given (over the task's).
    artifacts : tuple of str
        The step's own ``artifacts``: collected after the step, beside the task's (Harbor's order).
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
    verifier_env: dict[str, str] = field(default_factory=dict)
    artifacts: tuple[str, ...] = ()

    @property
    def agent_instruction(self) -> str | None:
        """The instruction as the agent sees it (Harbor strips its leading canary lines)."""
        return None if self.instruction is None else strip_canary(self.instruction)


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
        The version as written (Harbor's current one, ``"1.4"``, when none is).
    note : str or None
        How the file was read when not plainly (a version depthlab does not know, read as 1.4 as Harbor reads it).
    metadata, package : dict
        ``[metadata]`` (the labels) and ``[task]`` (name, version, description, authors, keywords).
    instruction, solution : str or None
        ``instruction.md`` and the reference solution (``solution/solve.sh``, ``solution/solve.bat``
        for a Windows task); a multi-step task has its steps' instead.
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
    model : TaskConfig
        task.toml as :mod:`depthlab.io.harbor_models` types it (every section, Harbor's rules as methods).
    task_os : str
        ``linux`` or ``windows`` (``[environment] os``).
    solution_file : str
        The reference solution's file name for the task's OS (``solve.sh`` or ``solve.bat``).
    verifier_env, environment_env : dict
        ``[verifier.env]`` (the verifier's variables) and ``[environment.env]`` (the container's).
    skills_dir : str or None
        ``[environment] skills_dir`` (copied into the agent's skills folder).
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
    model: TaskConfig = field(default_factory=TaskConfig, repr=False)
    task_os: str = "linux"
    solution_file: str = "solve.sh"
    verifier_env: dict[str, str] = field(default_factory=dict)
    environment_env: dict[str, str] = field(default_factory=dict)
    skills_dir: str | None = None

    @property
    def multi_step(self) -> bool:
        """Whether the task declares ``[[steps]]``."""
        return bool(self.steps)

    @property
    def agent_instruction(self) -> str | None:
        """The instruction as the agent sees it (Harbor strips its leading canary lines)."""
        return None if self.instruction is None else strip_canary(self.instruction)


def read_task(task_dir: str | os.PathLike[str], *, strict: bool = False, decode_errors: str = "replace") -> HarborTask:
    """Read one Harbor task directory (``task.toml`` and the files it names).

    Parameters
    ----------
    task_dir : str or path-like
        A directory holding ``task.toml``.
    strict : bool, default False
        Raise :class:`TaskFormatError` on a version depthlab does not know instead of reading it as
        Harbor does, with a :class:`NewerTaskFormatWarning`.
    decode_errors : {"replace", "strict"}, default "replace"
        How undecodable bytes in task.toml are taken (:func:`read_config`).

    Returns
    -------
    HarborTask

    Raises
    ------
    TaskFormatError
        When task.toml is missing, not TOML, or has a field of the wrong type (or, with ``strict``, a
        version depthlab does not know).

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
    model = TaskConfig.from_toml_dict(config, path)
    version, note = _version(model, path, strict)
    task_mode = model.verifier_mode()
    solution = model.solution_file()
    steps = tuple(_steps(model, folder, solution))
    dockerfile = os.path.join(folder, "tests", "Dockerfile")
    return HarborTask(
        path=folder,
        config_path=path,
        name=model.short_name() or os.path.basename(folder),
        schema_version=version,
        note=note,
        metadata=model.metadata,
        package=_table(config, "task", path),
        instruction=read_text(os.path.join(folder, "instruction.md")),
        solution=read_text(os.path.join(folder, "solution", solution)),
        network_mode=model.network_mode(),
        verifier_mode=task_mode,
        verifier_dockerfile=dockerfile if os.path.isfile(dockerfile) else None,
        reward_strategy=model.reward_strategy(),
        steps=steps,
        agent_timeout_sec=model.agent.timeout_sec,
        verifier_timeout_sec=model.verifier.timeout_sec,
        config=config,
        model=model,
        task_os=model.task_os(),
        solution_file=solution,
        verifier_env=dict(model.verifier.env or {}),
        environment_env=dict(model.environment.env or {}),
        skills_dir=model.environment.skills_dir,
    )


def step_gates(
    path: str | os.PathLike[str],
) -> tuple[list[tuple[str, float | None, dict[str, float] | None]], str | None]:
    """The declared steps of the task.toml ``path`` as (name, min_reward, per-key min_rewards), and its reward strategy.

    Only task.toml is read (a trial's reader needs no more of the task); :class:`TaskFormatError` when it cannot be.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> toml = pathlib.Path(tempfile.mkdtemp()) / "task.toml"
    >>> _ = toml.write_text('multi_step_reward_strategy = "final"\\n[[steps]]\\nname = "a"\\nmin_reward = 1\\n')
    >>> step_gates(toml)
    ([('a', 1.0, None)], 'final')
    """
    model = TaskConfig.from_toml_dict(read_config(path), os.fspath(path))
    gates = [(step.name, *step.gate()) for step in model.steps or []]
    return gates, model.reward_strategy()


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
    return parse_config(text, where)


def parse_config(text: str, where: str) -> dict[str, Any]:
    """task.toml text parsed, nothing checked: depthlab's one TOML parse (:func:`read_config` reads files with it).

    Raises
    ------
    TaskTomlSyntaxError
        When ``text`` is not TOML (``where`` names it); the parser's error is its ``__cause__``.

    Examples
    --------
    >>> parse_config('[task]\\nname = "org/hello"\\n', "row 3")
    {'task': {'name': 'org/hello'}}
    >>> parse_config("[task", "row 3")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    depthlab.io.harbor_task.TaskTomlSyntaxError: row 3: not valid TOML: Expected ']' at the end of a table ...
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TaskTomlSyntaxError(where, f"not valid TOML: {exc}") from exc


def config_text(config: TaskConfig | Mapping[str, Any], *, header: str | None = None) -> str:
    """The task.toml text of ``config`` (the typed model, or a table :func:`read_config` gives): the one TOML writer.

    Written by ``tomli_w``: every value TOML has (dates and times stay dates and times, any string
    quoted as TOML quotes it), so :func:`parse_config` gives back what was written. A table is held
    to the model first (:meth:`TaskConfig.from_toml_dict`, keys the model does not know kept as
    they are), so no task.toml is written that depthlab's own reader would refuse. ``header``, when
    given, is a comment put first (one ``# `` line per line of it).

    Raises
    ------
    TaskFormatError
        When ``config`` is a table the task model refuses (its path is ``"task.toml being written"``).

    Examples
    --------
    >>> import datetime
    >>> table = {"task": {"name": 'a "b"'}, "metadata": {"created": datetime.date(2025, 1, 2)}}
    >>> parse_config(config_text(table), "t") == table
    True
    >>> model = TaskConfig(schema_version="1.4", steps=[StepConfig(name="a", min_reward=1.0)])
    >>> print(config_text(model, header="written by a test"), end="")
    # written by a test
    schema_version = "1.4"
    steps = [
        { name = "a", min_reward = 1.0 },
    ]
    >>> config_text({"agent": {"timeout_sec": "soon"}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    depthlab.io.harbor_models.TaskFormatError: task.toml being written: [agent].timeout_sec must be a finite number, ...
    """
    if isinstance(config, TaskConfig):
        table = _without_empty_tables(msgspec.to_builtins(config))
    else:
        TaskConfig.from_toml_dict(config, "task.toml being written")
        table = config
    comment = "".join(f"# {line}\n" for line in header.splitlines()) if header else ""
    return comment + tomli_w.dumps(table, multiline_strings=False)


def _without_empty_tables(value: Any) -> Any:
    """The model's builtins without the sections it defaults to empty (``[agent]`` unwritten stays unwritten)."""
    if isinstance(value, dict):
        kept = {key: _without_empty_tables(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item != {}}
    if isinstance(value, list):
        return [_without_empty_tables(item) for item in value]
    return value


def write_config(
    path: str | os.PathLike[str], config: TaskConfig | Mapping[str, Any], *, header: str | None = None
) -> None:
    """Write ``config`` as the task.toml ``path`` (:func:`config_text`, atomically)."""
    write_text(path, config_text(config, header=header))


def read_text(path: str) -> str | None:
    """The text of a regular file (undecodable bytes replaced), or None when there is none."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", errors="replace")
    except OSError as exc:
        raise TaskFormatError(path, f"cannot read: {exc.strerror or exc}") from None


def _version(model: TaskConfig, path: str, strict: bool) -> tuple[str, str | None]:
    """The version as written, and a note when it is not one depthlab knows (Harbor's rule: any version is read)."""
    version = model.version()
    if version in KNOWN_VERSIONS:
        return version, None
    known = f"known: {KNOWN_VERSIONS[0]} to {KNOWN_VERSIONS[-1]}"
    parts = version.split(".")
    numbers = tuple(int(part) for part in parts) if all(part.isdigit() for part in parts) else None
    newer = numbers is not None and numbers > _LATEST
    what = "is newer than known" if newer else "is not one depthlab knows"
    note = (
        f"task.toml schema version {version!r} {what} ({known}): read as {KNOWN_VERSIONS[-1]}, "
        "as Harbor 0.26 reads any version"
    )
    if strict:
        raise TaskFormatError(path, note)
    warnings.warn(f"{path}: {note}", NewerTaskFormatWarning, stacklevel=3)
    return version, note


def _steps(model: TaskConfig, folder: str, solution: str) -> list[TaskStep]:
    steps = []
    for index, step in enumerate(model.steps or [], start=1):
        step_dir = os.path.join(folder, "steps", step.name)
        tests = os.path.join(step_dir, "tests")
        workdir = os.path.join(step_dir, "workdir")
        min_reward, min_rewards = step.gate()
        steps.append(
            TaskStep(
                index=index,
                name=step.name,
                path=step_dir,
                instruction=read_text(os.path.join(step_dir, "instruction.md")),
                solution=read_text(os.path.join(step_dir, "solution", solution)),
                tests_dir=tests if os.path.isdir(tests) else os.path.join(folder, "tests"),
                workdir=workdir if os.path.isdir(workdir) else None,
                min_reward=min_reward,
                min_rewards=min_rewards,
                verifier_mode=model.step_verifier_mode(step),
                agent_timeout_sec=step.agent.timeout_sec,
                verifier_timeout_sec=step.verifier.timeout_sec,
                verifier_env=dict(step.verifier.env or {}),
                # tables are refused before a run (io.task_rules); a string is a path
                artifacts=tuple(str(item) for item in step.artifacts or ()),
            )
        )
    return steps


def _table(config: dict, key: str, path: str) -> dict:
    value = config.get(key, {})
    if not isinstance(value, dict):
        raise TaskFormatError(path, f"[{key}] must be a table, got {type(value).__name__}")
    return value


# ----------------------------------------------------------------------------------------------------
# Harbor's defaults and size strings (``harbor.models.task.config``), for every reader of task.toml:
# what a field left out means, and how Harbor converts the older ``memory``/``storage`` sizes.

#: ``[agent].timeout_sec``, ``[verifier].timeout_sec`` and ``[environment].build_timeout_sec`` when unset.
DEFAULT_AGENT_TIMEOUT_SEC: Final[float] = 600.0
DEFAULT_VERIFIER_TIMEOUT_SEC: Final[float] = 600.0
DEFAULT_BUILD_TIMEOUT_SEC: Final[float] = 600.0
#: Harbor's values of ``[environment].os`` (case-insensitive), and its default (written once, in harbor_models).
TASK_OSES: Final[tuple[str, ...]] = TASK_OS
DEFAULT_TASK_OS: Final[str] = DEFAULT_OS

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


def storage_limit_mb(environment: EnvironmentSection) -> int | None:
    """The disk bound a task states in MB: ``storage_mb``, else the older ``storage`` size as Harbor converts it.

    None when it states none (or none Harbor could use: those are :mod:`depthlab.io.task_rules`' to refuse).

    Examples
    --------
    >>> storage_limit_mb(EnvironmentSection(storage_mb=512)), storage_limit_mb(EnvironmentSection(storage="1G"))
    (512, 1024)
    >>> storage_limit_mb(EnvironmentSection(storage="lots")) is None
    True
    """
    if environment.storage_mb is not None and environment.storage_mb > 0:
        return environment.storage_mb
    return size_mb(environment.storage) or None


def task_models(tasks: pl.DataFrame) -> dict[str, TaskConfig | None]:
    """Task -> its task.toml as the typed model, for a tasks table (``task``, ``source``); None where it cannot be read.

    What a task is bounded by (:func:`storage_limit_mb`, the agent's timeout) the engines read from it.
    """
    models: dict[str, TaskConfig | None] = {}
    for task, source in tasks.select("task", "source").iter_rows():
        path = source if os.path.basename(str(source)) == "task.toml" else os.path.join(str(source), "task.toml")
        try:
            models[str(task)] = TaskConfig.from_toml_dict(read_config(path, decode_errors="strict"), path)
        except TaskFormatError:
            models[str(task)] = None
    return models


def storage_bounds(tasks: pl.DataFrame) -> dict[str, int | None]:
    """Task -> the disk bound its task.toml states in MB (:func:`storage_limit_mb`); None when it states none."""
    return {
        task: None if model is None else storage_limit_mb(model.environment)
        for task, model in task_models(tasks).items()
    }


def agent_timeouts(tasks: pl.DataFrame, default: float = DEFAULT_AGENT_TIMEOUT_SEC) -> dict[str, float]:
    """Task -> its ``[agent] timeout_sec`` (``default``, Harbor's and the runner's, when unset or unusable)."""
    timeouts: dict[str, float] = {}
    for task, model in task_models(tasks).items():
        value = None if model is None else model.agent.timeout_sec
        timeouts[task] = float(value) if value is not None and math.isfinite(value) and value > 0 else default
    return timeouts


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
    gate = step.min_reward if step.min_reward is not None else step.min_rewards
    return StepConfig(name=step.name, min_reward=gate).passes_gate(rewards)
