"""Fixtures for the loader tests: real samples copied into tmp dirs, and a private cache dir."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from io_helpers import TMAX_JOB


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own cache dir, so tests never see each other's entries."""
    monkeypatch.setenv("DEPTHLAB_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def tmax_job(samples: Path, tmp_path: Path) -> Path:
    """A writable copy of the real TMax Harbor job (3 trials) to mutate."""
    target = tmp_path / "tmax-27b"
    shutil.copytree(samples / TMAX_JOB, target, ignore=shutil.ignore_patterns("lock.json"))
    return target
