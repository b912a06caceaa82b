"""The browser test's page loader retries Chromium's ``net::ERR_NETWORK_CHANGED`` only (issue 37, item 10).

Docker tests beside the browser test add and remove bridges, and Chromium aborts a request in
flight with ``net::ERR_NETWORK_CHANGED``. :func:`load_page` loads the page again then, a bounded
number of times; every other error, and an abort that keeps coming, stays a failure. The
retry is shown on a driver that raises what chromedriver raises (a network change cannot be
made on demand); a real refusal through real Chromium shows the loader hides nothing else.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest
from browser_helpers import CHROMEDRIVER, CHROMIUM, LOAD_ATTEMPTS, NETWORK_CHANGED, load_page


class _Aborting:
    """A driver whose first ``aborts`` loads fail as chromedriver reports a load aborted by a network change."""

    def __init__(self, aborts: int, message: str = f"unknown error: {NETWORK_CHANGED}") -> None:
        self.aborts, self.message, self.loads = aborts, message, 0

    def get(self, url: str) -> None:
        from selenium.common.exceptions import WebDriverException

        self.loads += 1
        if self.loads <= self.aborts:
            raise WebDriverException(self.message)


def test_a_load_aborted_by_a_network_change_is_loaded_again() -> None:
    pytest.importorskip("selenium")
    driver = _Aborting(aborts=LOAD_ATTEMPTS - 1)
    load_page(driver, "http://127.0.0.1:1/")
    assert driver.loads == LOAD_ATTEMPTS


def test_an_abort_that_keeps_coming_is_a_failure() -> None:
    pytest.importorskip("selenium")
    from selenium.common.exceptions import WebDriverException

    driver = _Aborting(aborts=LOAD_ATTEMPTS)
    with pytest.raises(WebDriverException, match="ERR_NETWORK_CHANGED"):
        load_page(driver, "http://127.0.0.1:1/")
    assert driver.loads == LOAD_ATTEMPTS


def test_any_other_error_is_raised_at_once() -> None:
    pytest.importorskip("selenium")
    from selenium.common.exceptions import WebDriverException

    driver = _Aborting(aborts=1, message="unknown error: net::ERR_CONNECTION_REFUSED")
    with pytest.raises(WebDriverException, match="ERR_CONNECTION_REFUSED"):
        load_page(driver, "http://127.0.0.1:1/")
    assert driver.loads == 1


@pytest.mark.browser
def test_a_refused_page_in_real_chromium_stays_a_failure(browser_tools: None, tmp_path: Any) -> None:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens once the probe is closed
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        with pytest.raises(WebDriverException, match="ERR_CONNECTION_REFUSED"):
            load_page(driver, f"http://127.0.0.1:{port}/")
    finally:
        driver.quit()


def test_only_a_dropped_kernel_connection_opens_the_notebook_again() -> None:
    """The server's failed kernel websocket (seen under load) or Chromium's network change: a reopen; else not."""
    from browser_helpers import connection_dropped

    race = (
        "[E 2026-12-02 04:17:05.749 ServerApp] Uncaught exception GET "
        "/api/kernels/21754086-2a2c-4b4f-ae71-a53078d44908/channels?session_id=2617 (127.0.0.1)"
    )
    assert connection_dropped([], race)
    assert connection_dropped([f"http://127.0.0.1:8888/api/kernels 0 ({NETWORK_CHANGED})"], "")
    assert not connection_dropped(["Error displaying widget: model not found"], "[I ServerApp] Kernel started")
