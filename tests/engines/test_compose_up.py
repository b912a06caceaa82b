"""scripts/compose-up.sh: Docker Compose v2 for Harbor's docker environment, from Debian 13's package,
fetched through a private apt source folder that leaves the system's apt state untouched."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "compose-up.sh"


def _apt_state() -> dict[str, str]:
    """A fingerprint of the system's apt sources and package lists."""
    state = {}
    for folder in (Path("/etc/apt"), Path("/var/lib/apt/lists")):
        for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
            if path.is_file() and "partial" not in path.parts:
                stat = path.stat()
                state[str(path)] = f"{stat.st_size}:{stat.st_mtime_ns}"
    return state


@pytest.mark.skipif(shutil.which("apt-get") is None, reason="needs apt-get (Debian)")
def test_the_fetch_gives_a_compose_v2_plugin_and_leaves_apt_untouched(tmp_path):
    before = _apt_state()
    done = subprocess.run(
        ["bash", str(SCRIPT), "--fetch-to", str(tmp_path)], capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0 and "apt-get update" in done.stderr:
        pytest.skip(f"Debian's package registry is not reachable: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr[-2000:]
    version = subprocess.run(
        [str(tmp_path / "docker-compose"), "version"], capture_output=True, text=True, timeout=60, check=True
    )
    assert re.search(r"Docker Compose version v?2\.\d+", version.stdout), version.stdout
    assert _apt_state() == before


@pytest.mark.docker
def test_compose_up_is_idempotent_and_leaves_docker_compose_v2():
    if shutil.which("docker") is None:
        pytest.skip("no docker CLI")
    for _ in range(2):
        done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
    version = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=60, check=False)
    if version.returncode != 0:
        pytest.skip(f"compose-up could not install the plugin here: {done.stderr[-300:]}")
    assert re.search(r"Docker Compose version v?2\.\d+", version.stdout), version.stdout
