"""A real JupyterLab on loopback and a headless Debian Chromium driven by selenium, for the explorer's browser test.

Everything runs in one workspace folder of the test's own (notebook, simulated data, Jupyter
config/runtime/settings, Chromium profile), the server on a free loopback port with
``port_retries=0`` (a taken port is an error, never a silent move onto another run's server) and
a random token. Chromium and chromedriver are Debian's (``apt-get install chromium
chromium-driver``; ``make browser`` installs them): nothing is downloaded.

The test skips, saying what is missing, when chromium, chromedriver, jupyterlab or selenium is
absent, and fails instead when ``DEPTHLAB_REQUIRE_BROWSER=1`` (CI).
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from browser_helpers import CHROMEDRIVER, CHROMIUM, KERNEL_START_SECONDS


def _missing() -> list[str]:
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    missing += [module for module in ("selenium", "jupyterlab") if importlib.util.find_spec(module) is None]
    return missing


@pytest.fixture(scope="session")
def browser_tools() -> None:
    missing = _missing()
    if missing:
        message = f"the browser test needs {', '.join(missing)} (make browser installs them)"
        if os.environ.get("DEPTHLAB_REQUIRE_BROWSER") == "1":
            pytest.fail(message + "; DEPTHLAB_REQUIRE_BROWSER=1 makes this an error")
        pytest.skip(message)


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab: where it serves and the workspace it serves."""

    url: str
    token: str
    workspace: Path
    log: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(url: str, process: subprocess.Popen[bytes], log: Path, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"jupyter lab did not answer {url} within {seconds} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def lab(browser_tools: None, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Lab]:
    """A JupyterLab serving the workspace that ``request.module.workspace_setup(workspace)`` fills."""
    workspace = tmp_path_factory.mktemp("browser-workspace")
    request.module.workspace_setup(workspace)
    jupyter = workspace / ".jupyter"
    settings = jupyter / "lab" / "user-settings" / "@jupyterlab"
    for extension, name, values in (
        # no news fetch (no internet here, and its notice would cover the page)
        ("apputils-extension", "notification", {"fetchNews": "false"}),
        # the notebook's own kernel (depthlab) starts without a "Select Kernel" dialog
        ("notebook-extension", "tracker", {"autoStartDefaultKernel": True}),
    ):
        (settings / extension).mkdir(parents=True, exist_ok=True)
        (settings / extension / f"{name}.jupyterlab-settings").write_text(json.dumps(values))
    # the debugger is not under test, and it logs a console error whenever a slow kernel's first
    # connection is replaced (its state request cancelled), which the test would read as the page's
    labconfig = jupyter / "config" / "labconfig"
    labconfig.mkdir(parents=True, exist_ok=True)
    disabled = {"disabledExtensions": {"@jupyterlab/debugger-extension": True}}
    (labconfig / "page_config.json").write_text(json.dumps(disabled))
    token = secrets.token_hex(16)
    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(jupyter / "config"),
        "JUPYTER_RUNTIME_DIR": str(jupyter / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(jupyter / "lab" / "user-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(jupyter / "lab" / "workspaces"),
        "MPLBACKEND": "Agg",
    }
    log = workspace / "jupyter.log"
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={workspace}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        "--ServerApp.terminals_enabled=False",
        # the notebook's kernel, also when the page asks before the kernel list has loaded
        "--MappingKernelManager.default_kernel_name=depthlab",
        # a loaded machine (CI runs Docker tests beside this one) can take over a minute to start the kernel;
        # the server's default of 60 s then fails the page's kernel connection and a second kernel is started
        f"--MappingKernelManager.kernel_info_timeout={KERNEL_START_SECONDS}",
        *(["--allow-root"] if os.geteuid() == 0 else []),  # CI runs as root
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=workspace, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(f"{url}/api/status?token={token}", process, log)
        yield Lab(url, token, workspace, log)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def browser(lab: Lab) -> Iterator[Any]:
    """Headless Chromium (Debian's) through Debian's chromedriver, with the console log kept."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1500,1000",
        f"--user-data-dir={lab.workspace / '.chromium'}",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=CHROMEDRIVER, log_output=str(lab.workspace / "chromedriver.log"))
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(lab.workspace / ".chromium", ignore_errors=True)
