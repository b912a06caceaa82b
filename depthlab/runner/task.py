"""A Harbor task directory as the runner needs it: instruction, limits, timeouts, checksum.

Layout (Harbor, TB 2.x)::

    <task>/instruction.md  task.toml  environment/Dockerfile  solution/solve.sh  tests/test.sh

Only the ``task.toml`` fields that change how a trial runs are read here; labels
(difficulty, tags, ...) belong to :func:`depthlab.load_tasks`.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from depthlab.io.tasks import dirhash_sha256
from depthlab.runner.errors import UnsupportedTaskError

#: Compose file names that mark a multi-container task.
COMPOSE_FILES: tuple[str, ...] = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")

# Harbor's defaults when task.toml leaves a field out
_DEFAULT_AGENT_TIMEOUT_SEC = 600.0
_DEFAULT_VERIFIER_TIMEOUT_SEC = 600.0
_DEFAULT_BUILD_TIMEOUT_SEC = 600.0
_DEFAULT_CPUS = 1.0
_DEFAULT_MEMORY_MB = 2048
# Harbor 0.26's [environment].network_mode -> whether the container gets a network ("allowlist"
# is a network with a firewall Harbor sets up; the runner gives the network without it)
_NETWORK_MODES = {"no-network": False, "public": True, "allowlist": True}


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
    return path.parent if path.name in {"task.toml", "task.yaml"} else path


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

    @property
    def internet(self) -> bool:
        """Whether task.toml lets the container reach the internet (Harbor's default: yes)."""
        return self.allow_internet is not False

    @property
    def environment_dir(self) -> Path:
        return self.path / "environment"

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
        When ``environment/`` holds a compose file: several containers need Harbor.
    ValueError
        When task.toml is not valid TOML, or a limit or timeout is not a positive finite number
        (the message names the task.toml key): ``memory_mb = 0`` would mean no limit at all.

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
    for required in (instruction_file, toml_file):
        if not required.is_file():
            raise FileNotFoundError(f"The task {str(root)!r} has no {required.name}")
    try:
        config = tomllib.loads(toml_file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"The file {str(toml_file)!r} is not valid TOML: {error}") from None
    environment = _table(config, "environment")
    if not dockerfile.is_file() and not environment.get("docker_image"):
        raise FileNotFoundError(f"The task {str(root)!r} has no environment/Dockerfile and no docker_image")
    task_table = _table(config, "task")
    where = f"The task {str(root)!r}: task.toml"

    def number(table: str, key: str, default: float) -> float:
        return positive_number(_table(config, table).get(key, default), f"{where} [{table}].{key}")

    allow_internet = environment.get("allow_internet")
    if allow_internet is not None and not isinstance(allow_internet, bool):
        raise ValueError(f"{where} [environment].allow_internet must be true or false, got {allow_internet!r}")
    network_mode = environment.get("network_mode")
    if network_mode is not None:
        if network_mode not in _NETWORK_MODES:
            raise ValueError(
                f"{where} [environment].network_mode must be one of {list(_NETWORK_MODES)}, got {network_mode!r}"
            )
        allow_internet = _NETWORK_MODES[network_mode] if allow_internet is None else allow_internet
    return TaskSpec(
        path=root,
        name=str(task_table.get("name") or root.name),
        instruction=instruction_file.read_text(encoding="utf-8"),
        agent_timeout_sec=number("agent", "timeout_sec", _DEFAULT_AGENT_TIMEOUT_SEC),
        verifier_timeout_sec=number("verifier", "timeout_sec", _DEFAULT_VERIFIER_TIMEOUT_SEC),
        build_timeout_sec=number("environment", "build_timeout_sec", _DEFAULT_BUILD_TIMEOUT_SEC),
        cpus=number("environment", "cpus", _DEFAULT_CPUS),
        memory_mb=_memory_mb(environment, where),
        allow_internet=allow_internet,
        docker_image=environment.get("docker_image") or None,
        storage_mb=_size_mb(environment, "storage", where),
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


def _table(config: dict[str, Any], key: str) -> dict[str, Any]:
    value = config.get(key)
    return value if isinstance(value, dict) else {}


def _memory_mb(environment: dict[str, Any], where: str) -> int:
    megabytes = _size_mb(environment, "memory", where)
    if megabytes is None:
        return _DEFAULT_MEMORY_MB
    if megabytes < 6:  # Docker refuses memory limits below 6 MB
        raise ValueError(
            f"{where} [environment] memory must be at least 6 MB (Docker's smallest limit), got {megabytes:g} MB"
        )
    return megabytes


def _size_mb(environment: dict[str, Any], key: str, where: str) -> int | None:
    """``[environment].<key>_mb``, or the older ``<key> = "2G"`` string, in MB (None when absent)."""
    if f"{key}_mb" in environment:
        megabytes = positive_number(environment[f"{key}_mb"], f"{where} [environment].{key}_mb")
    elif key in environment:
        text = str(environment[key]).strip().upper().removesuffix("B").removesuffix("I")  # "2G", "2Gi", "2GB"
        units = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
        digits, unit = (text[:-1], text[-1]) if text[-1:] in units else (text, "M")
        try:
            value = float(digits)
        except ValueError:
            value = None
        megabytes = positive_number(value, f"{where} [environment].{key}") * units[unit] if value else 0
        if not megabytes:
            raise ValueError(
                f'{where} [environment].{key} must be a positive size such as "2G", got {environment[key]!r}'
            )
    else:
        return None
    return math.ceil(megabytes)
