"""The export peers' side venvs: Inspect Scout and Docent, each in its own cached venv, as Harbor's is.

A peer's tests skip with the reason when its venv cannot be built here, or fail when
``DEPTHLAB_REQUIRE_EXPORT_PEERS=1`` (CI, ``.ci/run``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _peer_python(script: str, peer: str) -> Path:
    done = subprocess.run(["bash", str(ROOT / "scripts" / script)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        message = f"{peer}'s export tests need its side venv (make peers): {reason}"
        if os.environ.get("DEPTHLAB_REQUIRE_EXPORT_PEERS") == "1":
            pytest.fail(message + "; DEPTHLAB_REQUIRE_EXPORT_PEERS=1 makes this an error")
        pytest.skip(message)
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def scout_python() -> Path:
    """The Python of Inspect Scout's side venv (scripts/scout-venv.sh builds it once, cached)."""
    return _peer_python("scout-venv.sh", "Inspect Scout")


@pytest.fixture(scope="session")
def docent_python() -> Path:
    """The Python of Docent's side venv (scripts/docent-venv.sh builds it once, cached)."""
    return _peer_python("docent-venv.sh", "Docent")
