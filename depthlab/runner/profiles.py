"""The security profiles, and the settings a trial runs under beyond its task.

Two profiles, named in every trial's ``config.json`` (``environment.kwargs.profile``):

``harbor`` (the default): a task runs as Harbor runs it
    Docker's default capabilities (root can run ``apt-get``), ``no-new-privileges``, the pid,
    memory and CPU limits, and the network task.toml allows: ``allow_internet`` (or Harbor
    0.26's ``network_mode``), true when task.toml does not say, as in Harbor. Image builds
    have a network. So the depth D measured here means what the paper's D means.
``strict``: the agent cannot reach the verifier's files at all
    No network (container and, unless task.toml says ``allow_internet = true``, the image
    build), every capability dropped. Tasks whose verifier or reference solution installs
    packages or downloads at run time cannot pass here (the oracle preflight says so).

``--no-network`` (``RunSettings(network=False)``) turns the network off under either profile.
What each profile guarantees about the grade is in :mod:`depthlab.runner.verifier`.

>>> from depthlab.runner.profiles import RunSettings
>>> RunSettings(profile="strict").as_record()["profile"]
'strict'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from depthlab._checks import check_choice, check_positive_int
from depthlab._defaults import DEFAULT_STORAGE_MB, PIDS_LIMIT
from depthlab.runner.container import DEFAULT_PROFILE, PROFILES, ContainerLimits
from depthlab.runner.task import TaskSpec

__all__ = ["DEFAULT_PROFILE", "DEFAULT_STORAGE_MB", "PROFILES", "RunSettings", "limits_for"]

# DEFAULT_STORAGE_MB (a container's disk bound when task.toml states none: an unbounded agent could
# fill the host's disk) and PIDS_LIMIT are both engines' facts, written once in depthlab._defaults


@dataclass(frozen=True)
class RunSettings:
    """How trials run beyond what their task says: the profile and the user's options.

    Parameters
    ----------
    profile : {"harbor", "strict"}, default "harbor"
        The security profile (see the module docstring).
    network : bool or None, default None
        None: as task.toml says (Harbor's default: a network) under ``harbor``, none under
        ``strict``. False: no network (``--no-network``). True: a network even where task.toml
        says ``allow_internet = false`` (``--allow-network``; not under ``strict``).
    cap_add : tuple of str, default ()
        Capabilities added to the profile's (``--cap-add``).
    pids_limit : int, default :data:`depthlab._defaults.PIDS_LIMIT` (1024)
        Largest number of processes in a container.
    user : str or None, default None
        The agent's user (``--agent-user``); None: the image's user.
    build_network : bool or None, default None
        Whether image builds and pulls get a network; None: yes under ``harbor`` (also with
        ``network=False``, which is the container's), under ``strict`` only when task.toml says
        ``allow_internet = true``.
    force_build : bool, default False
        Build ``environment/Dockerfile`` even when task.toml names a prebuilt ``docker_image``.
    storage_mb : int or None, default None
        The disk bound of every container, overriding task.toml's ``storage_mb`` (which, when
        absent, is :data:`DEFAULT_STORAGE_MB`).

    Examples
    --------
    >>> RunSettings(profile="strict", network=True)
    Traceback (most recent call last):
    ...
    ValueError: RunSettings: the 'strict' profile has no network, but network=True was given
    """

    profile: str = DEFAULT_PROFILE
    network: bool | None = None
    cap_add: tuple[str, ...] = field(default_factory=tuple)
    pids_limit: int = PIDS_LIMIT
    user: str | None = None
    build_network: bool | None = None
    force_build: bool = False
    storage_mb: int | None = None

    def __post_init__(self) -> None:
        check_choice(self.profile, "profile", "RunSettings", PROFILES)
        check_positive_int(self.pids_limit, "pids_limit", "RunSettings")
        if self.storage_mb is not None:
            check_positive_int(self.storage_mb, "storage_mb", "RunSettings")
        if self.profile == "strict" and self.network:
            raise ValueError("RunSettings: the 'strict' profile has no network, but network=True was given")
        object.__setattr__(self, "cap_add", tuple(name.strip().upper() for name in self.cap_add if name.strip()))

    def limits(self, task: TaskSpec) -> ContainerLimits:
        """The container limits of ``task`` under these settings (see :func:`limits_for`)."""
        return limits_for(task, self)

    def as_record(self) -> dict[str, Any]:
        """The settings as a JSON-ready dict."""
        return {**asdict(self), "cap_add": list(self.cap_add)}


def limits_for(task: TaskSpec, settings: RunSettings | None = None) -> ContainerLimits:
    """The :class:`ContainerLimits` of ``task`` under ``settings`` (default: the ``harbor`` profile).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from depthlab.runner.task import load_task
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "environment").mkdir()
    >>> _ = (root / "environment" / "Dockerfile").write_text("FROM scratch\\n")
    >>> _ = (root / "instruction.md").write_text("Say hi.")
    >>> _ = (root / "task.toml").write_text("[environment]\\nallow_internet = false\\n")
    >>> limits_for(load_task(root)).network, limits_for(load_task(root), RunSettings(network=True)).network
    (False, True)
    """
    settings = settings or RunSettings()
    strict = settings.profile == "strict"
    if strict:
        network = False
    elif settings.network is not None:
        network = settings.network
    else:
        network = task.internet
    if settings.build_network is not None:
        build_network = settings.build_network
    else:
        build_network = task.allow_internet is True if strict else True  # Harbor builds with a network
    return ContainerLimits(
        cpus=task.cpus,
        memory_mb=task.memory_mb,
        pids_limit=settings.pids_limit,
        network=network,
        cap_add=settings.cap_add,
        user=settings.user,
        build_network=build_network,
        profile=settings.profile,
        storage_mb=settings.storage_mb or task.storage_mb or DEFAULT_STORAGE_MB,
    )
