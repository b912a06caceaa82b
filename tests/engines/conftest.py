"""Fixtures of the engines' tests: the Debian userland image, chain tasks of known depth built FROM it,
Harbor (the side venv) with Docker Compose v2, and the scripted Chat Completions server on 127.0.0.1.

Docker tests fail (not skip) when ``DEPTHLAB_REQUIRE_DOCKER=1`` (CI), and skip with the reason otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from engines_helpers import READS, ScriptedServer, scripted_server, write_chain_task

ROOT = Path(__file__).resolve().parents[2]


def _unavailable(message: str) -> None:
    if os.environ.get("DEPTHLAB_REQUIRE_DOCKER") == "1":
        pytest.fail(message + "; DEPTHLAB_REQUIRE_DOCKER=1 makes this an error")
    pytest.skip(message)


@pytest.fixture(scope="session")
def userland() -> str:
    """The Debian userland image (scripts/userland-up.sh builds it once)."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "userland-up.sh")], capture_output=True, text=True, check=False
    )
    image = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
    if not image:
        _unavailable(
            f"the engines' tests need the Debian userland image (scripts/userland-up.sh): {done.stderr[-500:]}"
        )
    return image[0]


@pytest.fixture(scope="session")
def compose() -> None:
    """Docker Compose v2, which Harbor's docker environment runs every trial with."""
    done = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        _unavailable("Harbor's docker environment needs `docker compose` v2 (bash scripts/compose-up.sh)")


@pytest.fixture(scope="session")
def harbor_cmd(harbor_python: Path, compose: None) -> str:
    """The ``harbor`` command of the side venv."""
    return str(harbor_python.parent / "harbor")


@pytest.fixture(scope="session")
def chain_tasks(userland: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of chain tasks with K = 2 and K = 4 reads (D = 3 and 5), random names made at build time."""
    root = tmp_path_factory.mktemp("engines") / "chains"
    root.mkdir()
    for reads in READS:
        write_chain_task(root, reads, userland)
    return root


@pytest.fixture(scope="session")
def server() -> Iterator[ScriptedServer]:
    with scripted_server() as state:
        yield state


@pytest.fixture(scope="session")
def measure_env(harbor_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a ``depthlab measure`` run: a fake key, Harbor offline, a private trials cache."""
    return {
        **harbor_env,
        "OPENAI_API_KEY": "sk-depthlab-engines-test",
        "DEPTHLAB_CACHE_DIR": str(tmp_path_factory.mktemp("cache")),
        "NO_COLOR": "1",
    }
