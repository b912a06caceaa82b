"""Helpers of the browser test: loading a page through the transients of a shared machine, and nothing else."""

from __future__ import annotations

import os
import re
import time
from typing import Any

CHROMIUM = os.environ.get("DEPTHLAB_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("DEPTHLAB_CHROMEDRIVER", "/usr/bin/chromedriver")
#: Chromium's error when the host's network interfaces change under a request (Docker tests beside this
#: one add and remove bridges); the request is aborted, nothing on the page or the server is wrong
NETWORK_CHANGED = "net::ERR_NETWORK_CHANGED"
#: Loads of one page tried when each is aborted by :data:`NETWORK_CHANGED` (a Docker test changes the
#: bridges a few times a minute, so three aborts in a row mean something else is wrong)
LOAD_ATTEMPTS = 3
#: Seconds the kernel may take to start and a notebook's Run All to finish while its kernel is busy: the
#: test waits on progress, not on a fixed time, so only a kernel that stays busy this long fails it
KERNEL_START_SECONDS = 600
#: Seconds a freshly opened notebook's kernel may take to show idle before the page is opened again: a
#: kernel starts in seconds even on a loaded machine, but a page whose kernel connection never came up
#: waits for ever (seen once: 600 s of 'no idle indicator', then the second opening ran at once)
KERNEL_IDLE_SECONDS = 120


def load_page(driver: Any, url: str, attempts: int = LOAD_ATTEMPTS) -> None:
    """``driver.get(url)``, again (at most ``attempts`` loads) when Chromium aborted it with :data:`NETWORK_CHANGED`.

    Any other error is raised at once, and the last abort is raised as it came: a page that cannot
    load stays a failure; only the one transient the host's network changes cause is retried.
    """
    from selenium.common.exceptions import WebDriverException

    for attempt in range(1, attempts + 1):
        try:
            driver.get(url)
            return
        except WebDriverException as error:
            if NETWORK_CHANGED not in str(error.msg or error) or attempt == attempts:
                raise
            time.sleep(1.0)  # the interfaces settle within a second


#: What jupyter_server logs when it fails the kernel's websocket (a race while the kernel starts,
#: seen under load: the page reconnects, but the comm messages sent meanwhile, a widget's model among
#: them, are lost and the widget shows "model not found").
# the server failed the kernel's websocket, or shut down the kernel the page had just opened under it (a kernel
# started and shut down within a second, its streams then closed: seen once in a full run; the test never shuts a
# kernel down while it opens the notebook)
KERNEL_SOCKET_FAILED = re.compile(
    r"Uncaught exception GET /api/kernels/[0-9a-f-]+/channels|Kernel shutdown: [0-9a-f-]+|Got events for closed stream"
)


def connection_dropped(console: list[str], server_log: str) -> bool:
    """Whether the page's kernel connection dropped: Chromium aborted a request with
    :data:`NETWORK_CHANGED`, or the server failed the kernel's websocket. Only then is a failed
    opening of the notebook tried again; any other failure is the test's.

    Examples
    --------
    >>> connection_dropped(["http://127.0.0.1:1/api/kernels - net::ERR_NETWORK_CHANGED"], "")
    True
    >>> connection_dropped(["Uncaught TypeError: x is undefined"], "[I ServerApp] Kernel started")
    False
    >>> connection_dropped([], "[I ServerApp] Kernel shutdown: ca0d2307-f65d")
    True
    """
    return any(NETWORK_CHANGED in line for line in console) or bool(KERNEL_SOCKET_FAILED.search(server_log))
