"""What a task needs that an engine cannot give: one rule set, each rule once, for the engines, preflight and checks.

Each rule is a :class:`TaskRule`: a name, the engines that cannot give what it finds (data, not code:
``("local", "harbor")`` for a task no engine runs, ``("local",)`` for what only Harbor runs), the
heading its refusals are reported under, and one check of the task's folder and its parsed
task.toml. :data:`RULES` holds them in the order they are asked; :func:`refusal` gives the first
reason an engine has to refuse a task folder.

* **No engine runs it** (:data:`REFUSED`; Harbor 0.26 refuses these tasks when it loads them:
  ``harbor.models.task``'s step-name rules, the unique-name validator of ``TaskConfig.steps``,
  ``Task._validate_tests``; but only inside ``harbor run``, as a traceback or "No tasks matched the
  filter(s)"), applied by the round loop before the preflight (:func:`depthlab.engines.rounds.measure`),
  so a refused task costs nothing on either engine:

  * ``steps = []`` (no step declared: Harbor reads a single-step task) without the single-step
    task's ``instruction.md`` or ``tests/test.sh``, the line saying both;
  * a step name Harbor cannot use as one folder on every host
    (:func:`~depthlab.io.harbor_models.step_name_problem`), or two names equal once
    Unicode-normalised (NFC) and case-folded ("café" written NFC and NFD: one folder on macOS's and
    Windows' file systems);
  * a step with no ``steps/<name>/instruction.md``, or no test script (``steps/<name>/tests/test.sh``
    nor the shared ``tests/test.sh``; ``test.bat`` under ``os = "windows"``), unless its verifier's
    image brings the tests (``[verifier.environment] docker_image``); a single-step task with no
    ``instruction.md`` or no ``tests/test.sh`` likewise;
  * an instruction that is not UTF-8 text (Harbor reads it as UTF-8 and fails).

* **Harbor would misread it** (:data:`MISREAD`; found even under ``--no-preflight``): Harbor's task
  model accepts values that make a trial meaningless rather than refused: ``timeout_sec = -5`` or
  ``nan`` (a timeout before the agent's first call, recorded as the model's fail), a
  ``memory``/``storage`` size it cannot parse ("lots", which aborts every job that holds the task).
  The rules follow Harbor's fields: ``[agent]``/``[verifier]`` ``timeout_sec`` and ``[environment]``
  ``build_timeout_sec`` (finite, > 0), ``cpus`` (> 0), ``memory_mb``/``storage_mb`` (whole, > 0), the
  deprecated ``memory``/``storage`` sizes (``"<number>G|M|K"``, :func:`~depthlab.io.harbor_task.size_mb`).

* **Only Harbor runs it** (:data:`LOCAL_CANNOT`; the local runner refuses it when it reads the task,
  :func:`depthlab.runner.task.load_task`, one line naming ``--engine harbor``): a Windows task, an
  ``allowlist`` network (Harbor's firewall), MCP servers, artifacts given as tables, a user set for
  a verifier or an agent, collect hooks, a verifier environment other than a ``tests/Dockerfile``.

* **The machine lacks a variable** (:func:`unset_host_variables`): a ``${VAR}`` with no default, the
  whole value of a key of ``[environment.env]`` or ``[verifier.env]`` (and ``[solution.env]`` when the
  reference solution runs), with ``VAR`` unset where depthlab runs. Harbor 0.26 stops the whole job on
  it before any trial (``harbor.cli.jobs``' check, its ``get_required_host_vars``); the round loop
  refuses the measurement the same way on both engines, where the local runner used to record one
  invalid trial per task.

These rules read task.toml leniently, as parsed (a check that reports what is wrong rather than
raising); every other reader takes a task through :func:`~depthlab.io.harbor_task.read_task`'s
typed model.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import polars as pl

from depthlab import schema
from depthlab._text import toml_key
from depthlab.io.harbor_models import TASK_OS, step_name_key, step_name_problem
from depthlab.io.harbor_task import DEFAULT_TASK_OS, HarborTask, TaskFormatError, read_config, section, size_mb

#: The engines of ``depthlab measure`` and ``depthlab check``.
LOCAL: Final[str] = "local"
HARBOR: Final[str] = "harbor"
ENGINES: Final[tuple[str, ...]] = (LOCAL, HARBOR)
#: The headings a rule's refusals are reported under.
REFUSED: Final[str] = "no engine can run the task as written"
MISREAD: Final[str] = "the task's configuration would be misread"
LOCAL_CANNOT: Final[str] = "the local runner cannot run it as Harbor does"

__all__ = [
    "ENGINES",
    "HARBOR",
    "LOCAL",
    "LOCAL_CANNOT",
    "MISREAD",
    "REFUSED",
    "RULES",
    "TaskRule",
    "config_problems",
    "local_unsupported",
    "refusal",
    "refused_tasks",
    "rules_for",
    "task_config_problems",
    "unset_host_variables",
]

#: A task.toml ``env`` value Harbor takes from the host: wholly ``${NAME}`` or ``${NAME:-default}`` (its
#: ``harbor.utils.env`` pattern, matched against the whole value: ``"c ${Y}"`` is a literal).
HOST_TEMPLATE: Final = re.compile(r"\$\{(?P<name>[^}:]+)(?::-(?P<default>.*))?\}")
#: The task.toml tables whose unset ``${VAR}`` Harbor's job refuses before any trial (``[solution.env]`` only
#: when the oracle runs), as :func:`~depthlab._text.toml_key` names them.
JOB_HOST_TABLES: Final[tuple[str, ...]] = ("environment.env", "verifier.env")
SOLUTION_HOST_TABLE: Final[str] = "solution.env"

Check = Callable[[Path, dict[str, Any]], "str | None"]


@dataclass(frozen=True)
class TaskRule:
    """One thing a task may need that an engine cannot give.

    Attributes
    ----------
    name : str
        The rule's name.
    engines : tuple of str
        The engines that cannot give it (a task it finds is refused on each of them).
    heading : str
        What its refusals are reported under (:data:`REFUSED`, :data:`MISREAD`, :data:`LOCAL_CANNOT`).
    check : callable
        ``check(folder, config)``: the reason (one line) the task at ``folder`` with the parsed
        task.toml ``config`` is refused, or None.
    """

    name: str
    engines: tuple[str, ...]
    heading: str
    check: Check


def rules_for(engine: str, heading: str | None = None) -> tuple[TaskRule, ...]:
    """The rules that refuse a task on ``engine`` (those of ``heading`` only, when given), in order.

    Examples
    --------
    >>> [rule.name for rule in rules_for("harbor")]
    ['harbor-refuses', 'misread-values']
    >>> [rule.name for rule in rules_for("local", LOCAL_CANNOT)][:2]
    ['windows', 'allowlist-network']
    """
    return tuple(rule for rule in RULES if engine in rule.engines and heading in (None, rule.heading))


def refusal(folder: str | os.PathLike[str], engine: str, heading: str | None = None) -> str | None:
    """Why ``engine`` refuses the task folder ``folder`` (the first rule's reason, one line), or None.

    A task.toml that cannot be read is left to the readers that read it (its reason is theirs).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> task = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (task / "task.toml").write_text('[environment]\\nos = "windows"\\n')
    >>> refusal(task, "harbor")
    'it has no instruction.md'
    >>> (task / "tests").mkdir()
    >>> _ = (task / "instruction.md").write_text("Say hi.")
    >>> _ = (task / "tests" / "test.bat").write_text("echo 1")
    >>> refusal(task, "harbor") is None, refusal(task, "local")
    (True, "has [environment] os = 'windows': a Windows task cannot run in a Linux container")
    """
    where = Path(folder)
    try:
        config = read_config(where / "task.toml", decode_errors="strict")  # as Harbor reads it
    except TaskFormatError:
        return None
    for rule in rules_for(engine, heading):
        problem = rule.check(where, config)
        if problem:
            return problem
    return None


def local_unsupported(task: HarborTask) -> str | None:
    """What of ``task`` the local runner cannot run as Harbor does (a phrase), or None: the :data:`LOCAL_CANNOT` rules.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from depthlab.io.harbor_task import read_task
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (root / "task.toml").write_text('[environment]\\nnetwork_mode = "allowlist"\\n')
    >>> local_unsupported(read_task(root))[:30]
    'has network_mode = "allowlist"'
    """
    for rule in rules_for(LOCAL, LOCAL_CANNOT):
        problem = rule.check(Path(task.path), task.config)
        if problem:
            return problem
    return None


# --------------------------------------------------------------------------- tables of tasks


def refused_tasks(tasks: pl.DataFrame) -> pl.DataFrame:
    """The tasks of ``tasks`` (a tasks table) no engine runs (:data:`REFUSED`): task, reason (one line), output ('').

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
    for task, folder in _harbor_tasks(tasks):
        problem = refusal(folder, HARBOR, REFUSED)
        if problem:
            rows.append({"task": task, "reason": problem, "output": ""})
    return schema.preflight_failures(rows)


def task_config_problems(tasks: pl.DataFrame) -> pl.DataFrame:
    """The tasks whose ``task.toml`` holds a value Harbor would misread (:data:`MISREAD`): task, reason, output ('').

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
    for task, folder in _harbor_tasks(tasks):
        try:
            read_config(folder / "task.toml", decode_errors="strict")  # as Harbor reads it
        except TaskFormatError as error:
            rows.append({"task": task, "reason": f"task.toml cannot be read: {error.__cause__ or error}", "output": ""})
            continue
        problem = refusal(folder, HARBOR, MISREAD)
        if problem:
            rows.append({"task": task, "reason": problem, "output": ""})
    return schema.preflight_failures(rows)


def unset_host_variables(
    tasks: pl.DataFrame, *, oracle: bool, host: Mapping[str, str] | None = None
) -> list[tuple[str, str, str]]:
    """(task, ``[table].key``, variable) of every ``${VAR}`` without a default that ``tasks`` take from ``host``
    (default: this process's environment) and ``host`` lacks; ``oracle``: the reference solution runs (its
    ``[solution.env]`` counts too). Harbor's job refuses all of these before any trial (module docstring).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "t"
    >>> folder.mkdir()
    >>> _ = (folder / "task.toml").write_text(
    ...     '[verifier.env]\\nJUDGE = "${JUDGE_MODEL}"\\nMODE = "${MODE:-fast}"\\nNOTE = "a ${B}"\\n'
    ...     '[solution.env]\\nKEY = "${SOLVER_KEY}"\\n')
    >>> tasks = pl.DataFrame({"task": ["t"], "source": [str(folder)]})
    >>> unset_host_variables(tasks, oracle=False, host={})
    [('t', '[verifier.env].JUDGE', 'JUDGE_MODEL')]
    >>> unset_host_variables(tasks, oracle=True, host={"JUDGE_MODEL": "m"})
    [('t', '[solution.env].KEY', 'SOLVER_KEY')]
    """
    host = os.environ if host is None else host
    tables = (*JOB_HOST_TABLES, *((SOLUTION_HOST_TABLE,) if oracle else ()))
    found = []
    for task, folder in _harbor_tasks(tasks):
        try:
            config = read_config(folder / "task.toml")
        except TaskFormatError:
            continue  # reported by task_config_problems
        for table in tables:
            for key, value in section(config, *table.split(".")).items():
                template = HOST_TEMPLATE.fullmatch(value) if isinstance(value, str) else None
                if template is not None and template["default"] is None and template["name"] not in host:
                    found.append((task, f"[{table}].{key}", template["name"]))
    return found


def _harbor_tasks(tasks: pl.DataFrame) -> list[tuple[str, Path]]:
    """(task, its folder) of the tasks table's Harbor tasks (a TB1 task's task.yaml Harbor does not read)."""
    found = []
    for task, source in tasks.select("task", "source").iter_rows():
        folder = Path(str(source))
        if folder.name == "task.toml":
            folder = folder.parent
        if (folder / "task.toml").is_file():
            found.append((str(task), folder))
    return found


# --------------------------------------------------------------------------- no engine runs it


def _harbor_refuses(where: Path, config: dict[str, Any]) -> str | None:
    """Harbor's loader refuses the task: its steps, their names, instructions and tests (module docstring)."""
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
        key = step_name_key(str(name))
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
    problem = step_name_problem(name)
    if problem is None:
        return None
    if problem.startswith("longer than"):
        return f"is {problem}"
    return (
        "is no portable folder name (empty, '.' or '..', a path separator, a control or reserved "
        "character, a trailing dot or space, or a device name)"
    )


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
    windows = str(section(config, "environment").get("os", "")).lower() == "windows"
    return "test.bat" if windows else "test.sh"


def _bundled_tests(config: dict[str, Any], step: dict[str, Any]) -> bool:
    """Whether the step's (or the task's) verifier runs in a prebuilt image, which brings its tests."""
    return any(section(part, "verifier", "environment").get("docker_image") for part in (step, config))


# --------------------------------------------------------------------------- Harbor would misread it

_TIMES = (("agent", "timeout_sec"), ("verifier", "timeout_sec"), ("environment", "build_timeout_sec"))
_MISSING: Any = object()


def _misread(where: Path, config: dict[str, Any]) -> str | None:
    problems = config_problems(config)
    return "task.toml: " + "; ".join(problems) if problems else None


def config_problems(config: dict[str, Any]) -> list[str]:
    """What in a parsed ``task.toml`` Harbor would misread (empty when nothing).

    Examples
    --------
    >>> config = {"steps": [{"name": "a", "agent": {"timeout_sec": float("nan")}}], "environment": {"cpus": 0}}
    >>> for problem in config_problems(config):
    ...     print(problem)
    steps[0].agent.timeout_sec must be a finite number of seconds > 0, got nan
    [environment].cpus must be a number > 0, got 0
    """
    problems: list[str] = []
    sections: list[tuple[str, dict[str, Any]]] = [("", config)]
    for index, step in enumerate(config.get("steps") or []):
        if isinstance(step, dict):
            sections.append((f"steps[{index}].", step))
    for prefix, part in sections:
        for table, key in _TIMES:
            value = section(part, table).get(key, _MISSING)
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
            if value is not _MISSING and value is not None and not (_whole(value) and value > 0):
                problems.append(f"{toml_key(f'{name}.{key}')} must be a whole number of megabytes > 0, got {value!r}")
        for key in ("memory", "storage"):
            value = environment.get(key, _MISSING)
            if value is not _MISSING and not (size_mb(value) or 0) > 0:
                problems.append(f"{toml_key(f'{name}.{key}')} must be a size like '2G' or '512M', got {value!r}")
    return problems


def _whole(value: object) -> bool:
    """A whole number as pydantic takes one for an int field (512 or 512.0, never True)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _positive(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value) and value > 0


# --------------------------------------------------------------------------- only Harbor runs it


def _windows(where: Path, config: dict[str, Any]) -> str | None:
    task_os = section(config, "environment").get("os", DEFAULT_TASK_OS)
    if str(task_os).lower() == DEFAULT_TASK_OS:  # Harbor reads the value case-insensitively
        return None
    if str(task_os).lower() in TASK_OS:
        return f"has [environment] os = {task_os!r}: a Windows task cannot run in a Linux container"
    return f"has [environment] os = {task_os!r}, not one of Harbor's {list(TASK_OS)}"


def _allowlist(where: Path, config: dict[str, Any]) -> str | None:
    # (the older allow_internet maps to public or no-network only)
    if section(config, "environment").get("network_mode") == "allowlist":
        return 'has network_mode = "allowlist" (Harbor\'s firewall)'
    return None


def _mcp_servers(where: Path, config: dict[str, Any]) -> str | None:
    # servers Harbor's agent is told of, which the runner's agent is not
    if section(config, "environment").get("mcp_servers"):
        return "declares [[environment.mcp_servers]] (servers Harbor's agent is told of)"
    return None


def _artifact_tables(where: Path, config: dict[str, Any]) -> str | None:
    if any(not isinstance(item, str) for item in config.get("artifacts") or ()):
        return "gives artifacts as tables"
    for index, step in enumerate(config.get("steps") or ()):
        if isinstance(step, dict) and any(not isinstance(item, str) for item in step.get("artifacts") or ()):
            return f"gives artifacts in steps[{index}]"
    return None


def _verifier_setup(where: Path, config: dict[str, Any]) -> str | None:
    """A user set for a verifier or its agent, collect hooks, a verifier image other than a tests/Dockerfile."""
    tables = [("[verifier]", section(config, "verifier"), section(config, "agent"), where / "tests")]
    for index, step in enumerate(config.get("steps") or ()):
        if isinstance(step, dict):
            tests = where / "steps" / str(step.get("name")) / "tests"
            tables.append((f"steps[{index}].verifier", section(step, "verifier"), section(step, "agent"), tests))
    for place, verifier, agent, tests in tables:
        if verifier.get("user") is not None or agent.get("user") is not None:
            return f"sets a user in {place} or its agent"
        if verifier.get("collect"):
            return f"has collect hooks in {place}"
        separate = section(verifier, "environment")
        if separate and (separate.get("docker_image") or (tests / "docker-compose.yaml").is_file()):
            return f"has a verifier environment other than a tests/Dockerfile in {place}"
    return None


#: Every rule, in the order they are asked (a Windows task first: it has no Linux files to check).
RULES: Final[tuple[TaskRule, ...]] = (
    TaskRule("harbor-refuses", ENGINES, REFUSED, _harbor_refuses),
    TaskRule("misread-values", ENGINES, MISREAD, _misread),
    TaskRule("windows", (LOCAL,), LOCAL_CANNOT, _windows),
    TaskRule("allowlist-network", (LOCAL,), LOCAL_CANNOT, _allowlist),
    TaskRule("mcp-servers", (LOCAL,), LOCAL_CANNOT, _mcp_servers),
    TaskRule("artifact-tables", (LOCAL,), LOCAL_CANNOT, _artifact_tables),
    TaskRule("verifier-setup", (LOCAL,), LOCAL_CANNOT, _verifier_setup),
)
