"""Helpers of the browser test: loading a page through Chromium's one transient, and nothing else."""

from __future__ import annotations

import os
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
