"""Fixtures of the engines' tests: chain tasks of known depth built FROM the Debian userland image, and the
scripted Chat Completions server on 127.0.0.1 (Docker, the userland image and Harbor's command are
tests/conftest.py's).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from engines_helpers import READS, ScriptedServer, scripted_server, write_chain_task


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
