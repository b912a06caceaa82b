"""The cleanup of leftovers: every runner container is labelled, and removed when its runner is gone.

Every container carries the label ``depthlab.runner`` and an owner label ``<host>:<pid>``;
:func:`remove_leftovers` removes those whose owner process is gone (after a ``kill -9``), and
:func:`remove_live_containers` removes this process's own (on Ctrl-C, SIGTERM or at exit).
The containers themselves stop within seconds of their runner's death (see
:mod:`depthlab.runner.container`); this module removes what is left.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import threading
from pathlib import Path
from typing import Any

from depthlab.runner.image import RUNNER_LABEL

__all__ = [
    "OWNER_LABEL",
    "RUNNER_LABEL",
    "TRIAL_LABEL",
    "force_remove",
    "forget",
    "live_container_ids",
    "owner",
    "register",
    "remove_leftovers",
    "remove_live_containers",
]

OWNER_LABEL = "depthlab.owner"
TRIAL_LABEL = "depthlab.trial"

_LIVE: dict[str, Any] = {}  # container id -> docker Container, for removal on interrupt
_LIVE_LOCK = threading.Lock()


def register(container: Any) -> None:
    """Remember ``container`` (a docker Container) for :func:`remove_live_containers`."""
    with _LIVE_LOCK:
        _LIVE[container.id] = container


def forget(container: Any) -> None:
    """Stop remembering ``container`` (it is being removed)."""
    with _LIVE_LOCK:
        _LIVE.pop(container.id, None)


def remove_leftovers(client: Any) -> int:
    """Remove runner containers whose owner process on this host no longer runs.

    Returns the number removed. Containers of live runner processes (another ``depthlab fill``)
    are left alone, and so are containers the runner did not start (no owner label), though made from
    an image it built.

    Examples
    --------
    >>> import docker  # doctest: +SKIP
    >>> remove_leftovers(docker.from_env())  # doctest: +SKIP
    0
    """
    import docker.errors

    removed = 0
    host = socket.gethostname()
    # the low-level list: the high-level one inspects each container and fails on one removed meanwhile
    for summary in client.api.containers(all=True, filters={"label": RUNNER_LABEL}):
        owner = (summary.get("Labels") or {}).get(OWNER_LABEL, "")
        if not owner:
            # not started by a runner: a container made from an image the runner built carries that image's
            # runner label (a user's own `docker run` of it, another tool's), and is not the runner's to remove
            continue
        owner_host, _, owner_pid = owner.rpartition(":")
        if owner_host == host and owner_pid.isdigit() and _pid_alive(int(owner_pid)):
            continue
        with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
            client.api.remove_container(summary["Id"], force=True)
            removed += 1
    return removed


def remove_live_containers() -> int:
    """Remove every container this process started and has not removed yet (interrupt path)."""
    with _LIVE_LOCK:
        containers = list(_LIVE.values())
        _LIVE.clear()
    for container in containers:
        force_remove(container)
    return len(containers)


def live_container_ids() -> list[str]:
    """Ids of the containers this process has running."""
    with _LIVE_LOCK:
        return list(_LIVE)


def force_remove(container: Any) -> None:
    """Remove ``container`` (killing it); one already gone is no error."""
    import docker.errors

    with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
        container.remove(force=True)


def owner() -> str:
    """The owner label of this process's containers: ``<host>:<pid>``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (killed, not yet reaped by its parent) is not alive for our purpose
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return False
    return True


atexit.register(remove_live_containers)
