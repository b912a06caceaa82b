"""Shared fixtures: the real reference material in ../shared (read in place, never copied)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DEPTHLAB_SHARED", ROOT.parent / "shared")).resolve()


@pytest.fixture(scope="session")
def shared() -> Path:
    """The ../shared folder beside the checkout (real samples and data)."""
    if not SHARED.is_dir():
        pytest.skip(f"../shared not found at {SHARED}; set DEPTHLAB_SHARED")
    return SHARED


@pytest.fixture(scope="session")
def samples(shared: Path) -> Path:
    return shared / "samples"


@pytest.fixture(scope="session")
def shared_data(shared: Path) -> Path:
    return shared / "data"
