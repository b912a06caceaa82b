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


# ---------------------------------------------------------------- Harbor -------------------
HARBOR_CHECK = ROOT / "tests" / "harbor" / "harbor_check.py"


@pytest.fixture(scope="session")
def harbor_python() -> Path:
    """The Python of the Harbor side venv (scripts/harbor-venv.sh builds it once, cached).

    Harbor needs Python >= 3.12: without one the Harbor tests skip with the reason, or fail when
    ``DEPTHLAB_REQUIRE_HARBOR=1`` (CI).
    """
    import subprocess

    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "harbor-venv.sh")], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        message = f"Harbor tests need the Harbor side venv: {done.stderr.strip().splitlines()[-1:]}"
        if os.environ.get("DEPTHLAB_REQUIRE_HARBOR") == "1":
            pytest.fail(message + "; DEPTHLAB_REQUIRE_HARBOR=1 makes this an error")
        pytest.skip(message)
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def harbor_check(harbor_python: Path):
    """``check(items) -> {path: error or None}``, judged by Harbor's own models in one run.

    Each item is a job folder (every Harbor file in it, :func:`harbor_files`) or a ``(kind, path)``
    pair, kind one of job_config, job_result, trial_config, trial_result, trajectory.
    """
    import json
    import subprocess

    def check(items: list[Path | tuple[str, Path]]) -> dict[str, str | None]:
        files = [pair for item in items for pair in (harbor_files(item) if isinstance(item, Path) else [item])]
        done = subprocess.run(
            [str(harbor_python), str(HARBOR_CHECK)],
            input=json.dumps([[kind, str(path)] for kind, path in files]),
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
        report = json.loads(done.stdout)
        return {entry["path"]: entry["error"] for entry in report["files"]}

    return check


def harbor_files(job_dir: Path) -> list[tuple[str, Path]]:
    """Every Harbor file of a job folder, with the kind of Harbor model that must load it."""
    files = [("job_config", job_dir / "config.json"), ("job_result", job_dir / "result.json")]
    for result in sorted(job_dir.glob("*/result.json")):
        files += [("trial_config", result.parent / "config.json"), ("trial_result", result)]
        trajectory = result.parent / "agent" / "trajectory.json"
        if trajectory.is_file():
            files.append(("trajectory", trajectory))
    return files
