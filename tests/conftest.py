"""Shared fixtures: the real reference material in ../shared (read in place, never copied); hypothesis profiles;
Docker, the Debian userland image and Harbor's command, for every folder of tests that runs them.

Docker tests fail (not skip) when ``DEPTHLAB_REQUIRE_DOCKER=1`` (CI), and skip with the reason otherwise.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

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


@pytest.fixture(scope="session")
def depth_truth() -> ModuleType:
    """tests/bench/depth_truth.py: noisy runs of known true depth from a generator written apart from the library."""
    import importlib.util
    import sys

    path = ROOT / "tests" / "bench" / "depth_truth.py"
    spec = importlib.util.spec_from_file_location("depth_truth", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("depth_truth", module)  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- Docker -------------------
def _unavailable(message: str) -> NoReturn:
    """Skip with ``message``, or fail where ``DEPTHLAB_REQUIRE_DOCKER=1`` (CI) makes it an error."""
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
        _unavailable(f"the Docker Engine does not answer ({type(error).__name__}: {error}; bash scripts/docker-up.sh)")
    return client


@pytest.fixture(scope="session")
def userland(docker_client: Any) -> str:
    """The Debian userland image (scripts/userland-up.sh builds it once)."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "userland-up.sh")], capture_output=True, text=True, check=False
    )
    image = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
    if not image:
        _unavailable(f"the Debian userland image could not be made (scripts/userland-up.sh): {done.stderr[-500:]}")
    return image[0]


# ---------------------------------------------------------------- Harbor -------------------
HARBOR_CHECK = ROOT / "tests" / "harbor" / "harbor_check.py"
#: Harbor without its phone-home: no telemetry, LiteLLM's bundled model table instead of a download.
HARBOR_OFFLINE = {"HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


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
        reason = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        message = f"Harbor tests need the Harbor side venv (make harbor): {reason}"
        if os.environ.get("DEPTHLAB_REQUIRE_HARBOR") == "1":
            pytest.fail(message + "; DEPTHLAB_REQUIRE_HARBOR=1 makes this an error")
        pytest.skip(message)
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def harbor_env() -> dict[str, str]:
    """The environment to run Harbor's commands in (this one, offline: :data:`HARBOR_OFFLINE`)."""
    return {**os.environ, **HARBOR_OFFLINE}


@pytest.fixture(scope="session")
def harbor_cmd(harbor_python: Path) -> str:
    """The side venv's ``harbor``; Harbor's docker environment runs every trial with Docker Compose v2."""
    done = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        _unavailable("Harbor's docker environment needs `docker compose` v2 (bash scripts/compose-up.sh)")
    return str(harbor_python.parent / "harbor")


@pytest.fixture(scope="session")
def harbor_check(harbor_python: Path):
    """``check(items) -> {path: error or None}``, judged by Harbor's own models in one run.

    Each item is a job folder (every Harbor file in it, :func:`harbor_files`) or a ``(kind, path)``
    pair, kind one of job_config, job_result, trial_config, trial_result, trajectory.
    """

    def check(items: list[Path | tuple[str, Path]]) -> dict[str, str | None]:
        files = [pair for item in items for pair in (harbor_files(item) if isinstance(item, Path) else [item])]
        return {entry["path"]: entry["error"] for entry in run_harbor_check(harbor_python, files)}

    return check


def run_harbor_check(harbor_python: Path, files: list[tuple[str, Path]]) -> list[dict]:
    """Run tests/harbor/harbor_check.py in the Harbor side venv on ``(kind, path)`` pairs."""
    import json
    import subprocess

    done = subprocess.run(
        [str(harbor_python), str(HARBOR_CHECK)],
        input=json.dumps([[kind, str(path)] for kind, path in files]),
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        env={**os.environ, **HARBOR_OFFLINE},
    )
    return json.loads(done.stdout)["files"]


@pytest.fixture(scope="session")
def harbor_plan(harbor_python: Path):
    """``plan(job_config_path) -> [trial config, ...]``: the trials Harbor would run for a job config."""

    def plan(path: Path) -> list[dict]:
        (entry,) = run_harbor_check(harbor_python, [("job_plan", path)])
        if entry["error"]:
            raise AssertionError(f"Harbor rejects {path}: {entry['error']}")
        return entry["trial_configs"]

    return plan


def harbor_files(job_dir: Path) -> list[tuple[str, Path]]:
    """Every Harbor file of a job folder, with the kind of Harbor model that must load it."""
    files = [("job_config", job_dir / "config.json"), ("job_result", job_dir / "result.json")]
    for result in sorted(job_dir.glob("*/result.json")):
        files += [("trial_config", result.parent / "config.json"), ("trial_result", result)]
        trajectory = result.parent / "agent" / "trajectory.json"
        if trajectory.is_file():
            files.append(("trajectory", trajectory))
    return files


@pytest.fixture(scope="session")
def harbor_viewer(harbor_python: Path):
    """``with harbor_viewer(jobs_dir) as view``: Harbor's own viewer (``harbor view``) serving
    ``jobs_dir`` on a free 127.0.0.1 port (``view.url``; ``view.api(path)`` GETs its JSON API),
    stopped on exit."""
    import contextlib
    import socket
    import subprocess
    import time

    @contextlib.contextmanager
    def serve(jobs_dir: Path):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        harbor = harbor_python.parent / "harbor"
        command = [str(harbor), "view", str(jobs_dir), "--host", "127.0.0.1", "--port", str(port), "--jobs"]
        env = {**os.environ, **HARBOR_OFFLINE, "NO_COLOR": "1"}
        server = subprocess.Popen(
            [*command, "--no-build"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        view = HarborView(f"http://127.0.0.1:{port}")
        try:
            deadline = time.monotonic() + 90
            while True:
                try:
                    view.api("/api/jobs")
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        server.kill()
                        pytest.fail(f"harbor view did not serve {view.url}: {server.communicate()[0][-2000:]}")
                    time.sleep(0.5)
            yield view
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()

    return serve


class HarborView:
    """A running ``harbor view`` on loopback."""

    def __init__(self, url: str) -> None:
        self.url = url

    def api(self, path: str) -> dict:
        """GET ``path`` of the viewer's JSON API."""
        import json
        import urllib.request

        with urllib.request.urlopen(self.url + path, timeout=30) as response:
            return json.loads(response.read())


# ---------------------------------------------------------------- pytest-xdist ---------------
#: A rough cost of one test by its heaviest mark, to start the longest modules first (seconds; only the
#: order matters), from a profile on 2 loaded cores: a Harbor test runs `harbor run` jobs (60 to 1,000 s),
#: a Docker test builds and runs containers (20 to 150 s); an unmarked test, DEFAULT_COST (0.3 to 11 s
#: a test: modules of a hundred such tests take 400 to 700 s, so they must not be left for the end).
MARK_COST = {"harbor": 120.0, "docker": 30.0, "browser": 120.0, "slow": 120.0}
DEFAULT_COST = 3.0
#: The same by the fixtures a test uses (through others too), for the tests that carry no mark.
FIXTURE_COST = {"harbor_cmd": 120.0, "docker_client": 30.0, "userland": 30.0, "userland_image": 30.0,
                "harbor_python": 30.0}  # fmt: skip


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist's workers, the longest modules first.

    ``make test`` runs ``-n 2 --dist loadscope --no-loadscope-reorder``: each module goes whole to one
    worker, so a module-scoped fixture (a Harbor job, a measured run, a set of replays every test of the
    module reads) is computed once; ``--dist load`` split a module over both workers, which computed it
    on each. The modules are handed out in the order of this list: here the most costly first
    (:data:`MARK_COST` and :data:`FIXTURE_COST`, summed over the module's tests), so the run does not
    end on one long Harbor module while the other worker idles. Within a module the order is the file's.

    Outside pytest-xdist nothing changes: a developer's ``pytest tests/x.py`` runs in file order.
    """
    if not hasattr(config, "workerinput"):
        return
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    ordered = sorted(modules.values(), key=lambda tests: -sum(map(_cost, tests)))
    items[:] = [item for tests in ordered for item in tests]


def _cost(item: pytest.Item) -> float:
    marks = {mark.name for mark in item.iter_markers()}
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("engine") == "harbor":  # the both-engines tests' Harbor half
        marks.add("harbor")
    costs = [MARK_COST[name] for name in marks if name in MARK_COST]
    costs += [FIXTURE_COST[name] for name in getattr(item, "fixturenames", ()) if name in FIXTURE_COST]
    return max(costs, default=DEFAULT_COST)
