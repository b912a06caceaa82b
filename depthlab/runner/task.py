"""A Harbor task directory as the runner needs it: instruction, limits, timeouts, checksum, steps.

Layout (Harbor, TB 2.x)::

    <task>/instruction.md  task.toml  environment/Dockerfile  solution/solve.sh  tests/test.sh

A multi-step task (Harbor 0.26, ``[[steps]]``) has ``steps/<name>/instruction.md``,
``solution/solve.sh``, ``tests/`` (else the task's ``tests/``) and ``workdir/`` per step instead
of the top-level instruction; :mod:`depthlab.runner.multistep` runs it. Its steps, reward
strategy and verifier modes come from :func:`depthlab.io.harbor_task.read_task`, the one reader of
task.toml's Harbor fields.

Only the ``task.toml`` fields that change how a trial runs are read here, through
:mod:`depthlab.io.harbor_task` (its steps, network mode, verifier modes, Harbor's defaults and size
strings); labels (difficulty, tags, ...) belong to :func:`depthlab.load_tasks`. What the runner
accepts it applies as Harbor does: ``[verifier.env]`` and ``[steps.verifier.env]`` reach the tests
(:func:`depthlab.runner.verifier.verifier_environment`), ``skills_dir`` is listed to the agent
(:mod:`depthlab.runner.skills`), ``[solution.env]`` reaches the reference solution, and
``[environment.healthcheck]`` / ``[steps.healthcheck]`` gate the agent (:class:`HealthcheckConfig`,
:func:`depthlab.runner.trial.run_healthcheck`). What it cannot run as Harbor does (a Windows task, an
``allowlist`` network, a verifier environment other than a ``tests/Dockerfile`` or the task's own
image, per-step users, artifacts given as tables, MCP servers)
is refused when the task is read (:class:`UnsupportedTaskError`, one line naming ``--engine harbor``).
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from depthlab._text import toml_key
from depthlab.io.harbor_models import EnvironmentSection, HealthcheckConfig
from depthlab.io.harbor_task import (
    DEFAULT_AGENT_TIMEOUT_SEC,
    DEFAULT_BUILD_TIMEOUT_SEC,
    DEFAULT_VERIFIER_TIMEOUT_SEC,
    TaskFormatError,
    TaskStep,
    TaskTomlSyntaxError,
    read_task,
    size_mb,
)
from depthlab.io.task_rules import local_unsupported
from depthlab.io.tasks import TASK_FILES, dirhash_sha256
from depthlab.runner.errors import UnsupportedTaskError

#: Compose file names that mark a multi-container task.
COMPOSE_FILES: tuple[str, ...] = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")

# the runner's own bounds when task.toml states none (Harbor's docker environment then sets no limit;
# an agent here never gets the whole host); Harbor's defaults (timeouts) are io.harbor_task's
_DEFAULT_CPUS = 1.0
_DEFAULT_MEMORY_MB = 2048
# the end of every refusal: the other engine runs what this runner cannot
_USE_HARBOR = "run it with `depthlab measure --engine harbor` (or `harbor run`)"


def task_folder(source: str | os.PathLike[str]) -> Path:
    """The task folder a tasks table's ``source`` names (the folder itself, or its ``task.toml``).

    Examples
    --------
    >>> task_folder("tasks/chain-r3/task.toml").as_posix()
    'tasks/chain-r3'
    >>> task_folder("tasks/chain-r3/").as_posix()
    'tasks/chain-r3'
    """
    path = Path(os.fspath(source))
    return path.parent if path.name in TASK_FILES else path


@dataclass(frozen=True)
class TaskSpec:
    """What the runner reads from one Harbor task directory.

    Attributes
    ----------
    path : Path
        The task directory (absolute).
    name : str
        ``[task].name`` of task.toml when present, else the directory name (Harbor's rule).
    instruction : str
        Text of instruction.md.
    agent_timeout_sec, verifier_timeout_sec, build_timeout_sec : float
        ``[agent].timeout_sec``, ``[verifier].timeout_sec``, ``[environment].build_timeout_sec``.
    cpus : float
        ``[environment].cpus``.
    memory_mb : int
        ``[environment].memory_mb``, or the older ``memory = "2G"`` string converted to MB.
    allow_internet : bool or None
        ``[environment].allow_internet`` (or Harbor 0.26's ``network_mode``: ``"no-network"`` is
        false, ``"public"`` and ``"allowlist"`` true), None when task.toml does not say: Harbor
        then gives the container a network (:attr:`internet`).
    docker_image : str or None
        ``[environment].docker_image``: a prebuilt image, used when present locally, pulled when
        absent and the network allows (:func:`depthlab.runner.ensure_image`).
    storage_mb : int or None
        ``[environment].storage_mb`` (or the older ``storage = "10G"``): the most the agent may
        write to the container's disk. None: no bound.
    steps : tuple of depthlab.io.harbor_task.TaskStep
        The ``[[steps]]`` of a multi-step task, as :func:`~depthlab.io.harbor_task.read_task` reads
        them (empty otherwise; ``instruction`` is then empty).
    reward_strategy : str or None
        ``mean`` or ``final`` for a multi-step task (Harbor's rule), None otherwise.
    verifier_mode : str
        ``shared`` or ``separate``: where the task's (or this step's) tests run.
    artifacts : tuple of str
        ``artifacts`` of task.toml: paths in the agent's container copied into a separate
        verifier's container (beside ``/logs/artifacts``, always copied).
    tests_dir, solution_dir, environment_path : Path or None
        Where the tests, the reference solution and the image's build context are, when not
        ``tests/``, ``solution/`` and ``environment/`` (a step's, a separate verifier's).
    verifier_env : dict of str to str
        ``[verifier.env]`` (and, for a step, its ``[steps.verifier.env]`` over it, Harbor's order):
        the variables the tests run with, ``${VAR}`` and ``${VAR:-default}`` taken from the
        runner's own environment when the tests start (:func:`depthlab.runner.verifier.verifier_environment`).
    environment_env : dict of str to str
        ``[environment.env]``: the variables of every process in the agent's container (the
        container's own environment, ``${VAR}`` templates taken from the runner's when it starts),
        as Harbor gives them to every command it runs there.
    skills_dir : str or None
        ``[environment].skills_dir``: the folder in the container whose ``*/SKILL.md`` the agent
        is told about, as Harbor's terminus-2 does.
    step_verifier_envs : dict of str to dict
        Each step's own ``[steps.verifier.env]``, by step name (:meth:`for_step` applies it).
    solution_env : dict of str to str
        ``[solution.env]``: the variables the reference solution runs with (Harbor's oracle resolves
        its ``${VAR}`` templates from the host, as for the tests).
    healthcheck : HealthcheckConfig or None
        ``[environment.healthcheck]``: run once after the container starts, before any agent.
    step_healthchecks : dict of str to HealthcheckConfig
        Each step's ``[steps.healthcheck]``, by step name: run after the step's ``setup.sh``, before
        its agent (as well as the task's, never instead of it).
    """

    path: Path
    name: str
    instruction: str
    agent_timeout_sec: float
    verifier_timeout_sec: float
    build_timeout_sec: float
    cpus: float
    memory_mb: int
    allow_internet: bool | None
    docker_image: str | None
    storage_mb: int | None = None
    steps: tuple[TaskStep, ...] = ()
    reward_strategy: str | None = None
    verifier_mode: str = "shared"
    artifacts: tuple[str, ...] = ()
    tests_dir: Path | None = None
    solution_dir: Path | None = None
    environment_path: Path | None = None
    verifier_env: dict[str, str] = field(default_factory=dict, hash=False)
    environment_env: dict[str, str] = field(default_factory=dict, hash=False)
    skills_dir: str | None = None
    step_verifier_envs: dict[str, dict[str, str]] = field(default_factory=dict, hash=False, repr=False)
    solution_env: dict[str, str] = field(default_factory=dict, hash=False, repr=False)
    healthcheck: HealthcheckConfig | None = None
    step_healthchecks: dict[str, HealthcheckConfig] = field(default_factory=dict, hash=False, repr=False)

    @property
    def internet(self) -> bool:
        """Whether task.toml lets the container reach the internet (Harbor's default: yes)."""
        return self.allow_internet is not False

    @property
    def environment_dir(self) -> Path:
        return self.environment_path or self.path / "environment"

    @property
    def tests_path(self) -> Path:
        """The tests the verifier copies to ``/tests``."""
        return self.tests_dir or self.path / "tests"

    @property
    def tests_folders(self) -> tuple[Path, ...]:
        """The folders the verifier lays over each other in ``/tests``, in order: a step's own ``tests/``
        over the task's shared ``tests/`` (Harbor 0.26's ``Verifier``: the shared folder is uploaded
        first, so on a name clash the step's file wins); a single-step task's ``tests/`` alone."""
        shared = self.path / "tests"
        own = self.tests_path
        if own == shared or not shared.is_dir():
            return (own,)
        return (shared, own) if own.is_dir() else (shared,)

    @property
    def solution_path(self) -> Path:
        """The reference solution the oracle copies to ``/solution``."""
        return self.solution_dir or self.path / "solution"

    @property
    def multi_step(self) -> bool:
        return bool(self.steps)

    @property
    def missing_solution(self) -> str | None:
        """The reference solution the oracle lacks (``solution/solve.sh``, or the first step's without one), or None."""
        for step in self.steps or ():
            if step.solution is None:
                return f"steps/{step.name}/solution/solve.sh"
        if not self.steps and not (self.solution_path / "solve.sh").is_file():
            return "solution/solve.sh"
        return None

    def for_step(self, step: TaskStep) -> TaskSpec:
        """The task as one step of it is run: the step's instruction, tests, solution, timeouts, verifier
        mode, verifier environment (the step's variables over the task's, as Harbor merges them) and
        artifacts (the task's, then the step's own, as Harbor collects them after the step)."""
        return dataclasses.replace(
            self,
            instruction=step.instruction or "",
            tests_dir=Path(step.tests_dir),
            solution_dir=Path(step.path) / "solution",
            agent_timeout_sec=step.agent_timeout_sec or self.agent_timeout_sec,
            verifier_timeout_sec=step.verifier_timeout_sec or self.verifier_timeout_sec,
            verifier_mode=step.verifier_mode,
            verifier_env={**self.verifier_env, **self.step_verifier_envs.get(step.name, {})},
            artifacts=tuple(dict.fromkeys((*self.artifacts, *step.artifacts))),
            steps=(),
            step_verifier_envs={},
            step_healthchecks={},
        )

    def verifier_image_task(self) -> TaskSpec | None:
        """The task whose image a separate verifier runs in: ``tests/Dockerfile`` when there is one, else
        None (the task's own image, with the tests copied in)."""
        for folder in (self.tests_path, self.path / "tests"):  # the step's tests first (Harbor's order)
            if (folder / "Dockerfile").is_file():
                return dataclasses.replace(
                    self, name=f"{self.name}-verifier", environment_path=folder, docker_image=None
                )
        return None

    @property
    def checksum(self) -> str:
        """sha256 dirhash of the whole task directory (Harbor's ``task_checksum``)."""
        return dirhash_sha256(self.path)


def load_task(path: str | os.PathLike[str]) -> TaskSpec:
    """Read a Harbor task directory.

    Parameters
    ----------
    path : str or PathLike
        A directory holding ``instruction.md``, ``task.toml`` and ``environment/Dockerfile``.

    Returns
    -------
    TaskSpec

    Raises
    ------
    FileNotFoundError
        When the directory or one of the required files is missing.
    UnsupportedTaskError
        When ``environment/`` holds a compose file (several containers need Harbor), or the task
        asks for what the runner cannot run as Harbor does (the local-only rules of
        :mod:`depthlab.io.task_rules`).
    ValueError
        When task.toml is not valid TOML, a limit or timeout is not a positive finite number
        (the message names the task.toml key: ``memory_mb = 0`` would mean no limit at all), a
        size is not one Harbor reads, a ``[verifier.env]`` value is not text, or ``skills_dir``
        is not an absolute path.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "environment").mkdir()
    >>> _ = (root / "environment" / "Dockerfile").write_text("FROM scratch\\n")
    >>> _ = (root / "instruction.md").write_text("Say hi.")
    >>> _ = (root / "task.toml").write_text("[agent]\\ntimeout_sec = 60.0\\n")
    >>> load_task(root).agent_timeout_sec
    60.0
    """
    root = Path(path).resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"The task directory {str(root)!r} does not exist")
    for compose in COMPOSE_FILES:
        if (root / "environment" / compose).is_file():
            raise UnsupportedTaskError(
                f"The task {str(root)!r} defines several containers (environment/{compose}); "
                "the depthlab runner runs single-container tasks only. Run it with Harbor "
                "(`harbor run`, see `depthlab plan --harbor-configs`)."
            )
    instruction_file = root / "instruction.md"
    toml_file = root / "task.toml"
    dockerfile = root / "environment" / "Dockerfile"
    if not toml_file.is_file():
        if (root / "task.yaml").is_file():  # Harbor itself reads a TB1 task only once it is migrated
            raise FileNotFoundError(
                f"The task {str(root)!r} is a Terminal-Bench 1 task (task.yaml, no task.toml): "
                "Harbor's `harbor tasks migrate -i TASK -o OUT` writes the Harbor task it runs"
            )
        raise FileNotFoundError(f"The task {str(root)!r} has no task.toml")
    try:
        harbor = read_task(root, decode_errors="strict")  # Harbor reads task.toml as strict UTF-8
    except TaskFormatError as error:
        if isinstance(error.__cause__, UnicodeDecodeError):
            raise error.__cause__ from None
        if isinstance(error, TaskTomlSyntaxError):
            raise ValueError(f"The file {str(toml_file)!r} is not valid TOML: {error.__cause__}") from None
        raise ValueError(f"The task {str(root)!r}: task.toml {error.reason}") from None
    if problem := local_unsupported(harbor):  # before anything else: a Windows task has no Linux files to check
        raise UnsupportedTaskError(
            f"The task {str(root)!r} {problem}: the local runner cannot run it as Harbor does; {_USE_HARBOR}."
        )
    for step in harbor.steps:
        if step.instruction is None:
            raise FileNotFoundError(f"The task {str(root)!r} has no steps/{step.name}/instruction.md")
    if not harbor.steps and not instruction_file.is_file():
        raise FileNotFoundError(f"The task {str(root)!r} has no instruction.md")
    model = harbor.model
    environment = model.environment
    if not dockerfile.is_file() and not environment.docker_image:
        raise FileNotFoundError(f"The task {str(root)!r} has no environment/Dockerfile and no docker_image")
    where = f"The task {str(root)!r}: task.toml"

    def number(value: float | None, key: str, default: float) -> float:
        return positive_number(default if value is None else value, f"{where} {toml_key(key)}")

    skills_dir = environment.skills_dir
    if skills_dir is not None and not skills_dir.startswith("/"):
        # Harbor looks the folder up in the container: a relative path names no fixed place there
        raise ValueError(
            f"{where} [environment].skills_dir must be an absolute path in the container, got {skills_dir!r}"
        )
    return TaskSpec(
        path=root,
        name=str(model.task.name if model.task is not None and model.task.name else root.name),
        instruction="" if harbor.steps else instruction_file.read_text(encoding="utf-8"),
        agent_timeout_sec=number(model.agent.timeout_sec, "agent.timeout_sec", DEFAULT_AGENT_TIMEOUT_SEC),
        verifier_timeout_sec=number(model.verifier.timeout_sec, "verifier.timeout_sec", DEFAULT_VERIFIER_TIMEOUT_SEC),
        build_timeout_sec=number(
            environment.build_timeout_sec, "environment.build_timeout_sec", DEFAULT_BUILD_TIMEOUT_SEC
        ),
        cpus=number(environment.cpus, "environment.cpus", _DEFAULT_CPUS),
        memory_mb=_memory_mb(environment, where),
        # Harbor's network mode (network_mode, else the older allow_internet); "allowlist" is refused above
        allow_internet=None if harbor.network_mode is None else harbor.network_mode != "no-network",
        docker_image=environment.docker_image or None,
        storage_mb=_environment_mb(environment, "storage", where),
        steps=harbor.steps,
        reward_strategy=harbor.reward_strategy,
        verifier_mode=harbor.verifier_mode,
        artifacts=tuple(str(item) for item in model.artifacts or ()),
        verifier_env=harbor.verifier_env,
        environment_env=harbor.environment_env,
        skills_dir=skills_dir,
        step_verifier_envs={step.name: step.verifier_env for step in harbor.steps},
        solution_env=dict(model.solution.env or {}),
        healthcheck=environment.healthcheck,
        step_healthchecks={
            step.name: typed.healthcheck
            for step, typed in zip(harbor.steps, model.steps or (), strict=False)
            if typed.healthcheck is not None
        },
    )


def positive_number(value: object, what: str) -> float:
    """``value`` as a float when it is a positive finite number, else ValueError naming ``what``.

    Examples
    --------
    >>> positive_number(2, "[agent].timeout_sec")
    2.0
    >>> positive_number(-1, "The task 't': task.toml [agent].timeout_sec")
    Traceback (most recent call last):
    ...
    ValueError: The task 't': task.toml [agent].timeout_sec must be a positive finite number, got -1
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be a positive finite number, got {value!r}")
    return float(value)


def _memory_mb(environment: EnvironmentSection, where: str) -> int:
    megabytes = _environment_mb(environment, "memory", where)
    if megabytes is None:
        return _DEFAULT_MEMORY_MB
    if megabytes < 6:  # Docker refuses memory limits below 6 MB
        key = toml_key("environment.memory_mb" if environment.memory_mb is not None else "environment.memory")
        raise ValueError(f"{where} {key} must be at least 6 MB (Docker's smallest limit), got {megabytes:g} MB")
    return megabytes


def _environment_mb(environment: EnvironmentSection, key: str, where: str) -> int | None:
    """``[environment].<key>_mb``, or the older ``<key> = "2G"`` as Harbor converts it, in MB (None when absent)."""
    megabytes = getattr(environment, f"{key}_mb")
    if megabytes is not None:
        return math.ceil(positive_number(megabytes, f"{where} {toml_key(f'environment.{key}_mb')}"))
    older = getattr(environment, key)
    if older is None:
        return None
    converted = size_mb(older)
    if not converted:  # Harbor cannot read it, or reads it as 0 MB
        name = toml_key(f"environment.{key}")
        raise ValueError(f'{where} {name} must be a positive size such as "2G", got {older!r}')
    return converted
