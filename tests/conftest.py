"""Shared fixtures: the real reference material in ../shared (read in place, never copied); hypothesis profiles."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests: derandomized in CI (the same examples on every run, so a pass or a failure is
# reproducible), randomized locally (new examples each run, to keep finding cases). CI=true is
# what .ci/run and the usual CI services set; HYPOTHESIS_PROFILE overrides either way.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") == "true" else "dev"))

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
