"""Fixtures of the checks' tests: a real Docker Engine and the Debian userland image the planted tasks build FROM.

Docker tests fail (not skip) when ``DEPTHLAB_REQUIRE_DOCKER=1`` (CI), and skip with the reason otherwise.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _unavailable(message: str) -> None:
    if os.environ.get("DEPTHLAB_REQUIRE_DOCKER") == "1":
        pytest.fail(message + "; DEPTHLAB_REQUIRE_DOCKER=1 makes this an error")
    pytest.skip(message)


@pytest.fixture(scope="session")
def docker_client() -> Any:
    """A Docker client whose engine answers, else skip (fail in CI) with the reason."""
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception as error:  # any failure to reach the engine
        _unavailable(f"the checks replay in Docker, whose engine does not answer ({type(error).__name__}: {error})")
    return client


@pytest.fixture(scope="session")
def userland(docker_client: Any) -> str:
    """The Debian userland image (scripts/userland-up.sh builds it once)."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "userland-up.sh")], capture_output=True, text=True, check=False
    )
    image = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
    if not image:
        _unavailable(f"the checks' tests need the Debian userland image (scripts/userland-up.sh): {done.stderr[-500:]}")
    return image[0]


@pytest.fixture(scope="session")
def harbor_cmd(harbor_python: Path) -> str:
    """The side venv's ``harbor``; Harbor's docker environment runs every trial with Docker Compose v2."""
    done = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        _unavailable("Harbor's docker environment needs `docker compose` v2 (bash scripts/compose-up.sh)")
    return str(harbor_python.parent / "harbor")
