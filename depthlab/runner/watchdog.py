"""The disk watchdog: the bytes an agent writes to its container are bounded.

Docker can cap a container's writable layer itself (``--storage-opt size=``) only on some storage
drivers (overlay2 on xfs with project quotas, devicemapper, btrfs, zfs). Where the driver
refuses, this watchdog reads the writable layer's size from the daemon (``SizeRw``) every
``interval_sec`` and, once it passes the bound, stops the container: the trial is then the
agent's fail with the reason (``RewardFileNotFoundError``, "the agent wrote ... over the bound").
A writer faster than the watchdog's interval overshoots by at most what it writes in one
interval; the runner checks the size once more when the agent's phase ends.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["DiskWatchdog", "writable_layer_mb"]


def writable_layer_mb(client: Any, container_id: str) -> float | None:
    """Megabytes in the container's writable layer, from the daemon (None when it cannot say)."""
    try:  # the container list is the SDK's public call that asks the daemon for sizes
        found = client.api.containers(all=True, filters={"id": container_id}, size=True)
    except Exception:  # a diagnosis only: a daemon that does not answer is noticed elsewhere
        return None
    size = found[0].get("SizeRw") if found else None
    return None if size is None else size / (1 << 20)


class DiskWatchdog:
    """Stop a container whose writable layer grows past ``limit_mb``.

    Parameters
    ----------
    client : docker.DockerClient
    container_id : str
    limit_mb : int
        The bound (task.toml ``storage_mb``).
    on_exceed : callable
        Called once with the reason before the container is killed.
    interval_sec : float, default 2.0
        Seconds between two size readings.
    """

    def __init__(
        self,
        client: Any,
        container_id: str,
        limit_mb: int,
        on_exceed: Callable[[str], None],
        *,
        interval_sec: float = 2.0,
    ) -> None:
        self.client = client
        self.container_id = container_id
        self.limit_mb = limit_mb
        self.on_exceed = on_exceed
        self.interval_sec = interval_sec
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="depthlab-disk-watchdog")

    def start(self) -> DiskWatchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def check(self) -> str:
        """Read the size now; return the reason (and stop the container) when it is over the bound, else ''."""
        size = writable_layer_mb(self.client, self.container_id)
        if size is None or size <= self.limit_mb:
            return ""
        reason = (
            f"the agent wrote {size:.0f} MB to the container's disk, over the task's storage bound of "
            f"{self.limit_mb} MB; the trial was stopped"
        )
        self._stop.set()
        self.on_exceed(reason)
        with contextlib.suppress(Exception):
            self.client.api.kill(self.container_id)
        return reason

    def _watch(self) -> None:
        while not self._stop.wait(self.interval_sec):
            if self.check():
                return
