"""Shared fixtures: the real reference material in ../shared (read in place, never copied); hypothesis profiles;
Docker, the Debian userland image and Harbor's command, for every folder of tests that runs them.

Docker tests fail (not skip) when ``DEPTHLAB_REQUIRE_DOCKER=1`` (CI), and skip with the reason otherwise.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
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


@pytest.fixture(scope="session")
def once_per_run(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, Callable[[Path], Any]], Any]:
    """``once_per_run(name, compute)``: ``compute(work_dir)`` once per test run, its JSON value to every caller.

    A session fixture is computed once per pytest-xdist worker (``make test`` runs three), so a costly run
    several modules read (a Harbor measure, the planted tasks' checks) would be computed on each worker
    that runs one of them. Here the first caller computes it under a file lock in the folder the workers
    share (``getbasetemp().parent``) and writes its value as JSON; the others wait for the lock and read
    it. ``compute`` writes what is bigger (tables, job folders) under ``work_dir`` and returns their paths.
    """
    import fcntl
    import json

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    root = tmp_path_factory.getbasetemp().parent if worker else tmp_path_factory.getbasetemp()

    def once(name: str, compute: Callable[[Path], Any]) -> Any:
        record = root / f"{name}.json"
        with (root / f"{name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not record.is_file():
                work = root / name
                work.mkdir(exist_ok=True)
                record.write_text(json.dumps(compute(work)))
        return json.loads(record.read_text())

    return once


def pytest_configure(config: pytest.Config) -> None:
    """With ``DEPTHLAB_COST_PROBE=<file>``, the work of each module counted into it (tests/cost_probe.py)."""
    if os.environ.get("DEPTHLAB_COST_PROBE"):
        import importlib.util

        spec = importlib.util.spec_from_file_location("cost_probe", ROOT / "tests" / "cost_probe.py")
        if spec is None or spec.loader is None:
            raise ImportError("cannot load tests/cost_probe.py")
        probe = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(probe)
        probe.register(config)


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


@pytest.fixture(scope="session")
def harbor_entries(harbor_python: Path):
    """``entries(items) -> [entry, ...]``: :func:`run_harbor_check`'s whole entries (a kind may return more
    than its error, ``job_stats`` Harbor's own stats), for a test module that cannot import this conftest by name."""

    def entries(files: list[tuple[str, Path]]) -> list[dict]:
        return run_harbor_check(harbor_python, files)

    return entries


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


# ---------------------------------------------------------------- marks and the order of modules ----
#: The fixtures that make a test a Docker or a Harbor test (used directly or through another fixture):
#: such a test must carry the mark, so ``-m "not harbor"`` leaves it out (checked at collection).
NEEDS_MARK = {"docker_client": "docker", "userland": "docker", "userland_image": "docker",
              "harbor_python": "harbor", "harbor_cmd": "harbor"}  # fmt: skip
#: The measured worker-seconds of each test module (setup, call and teardown of its tests, its module
#: fixtures included), written by the last full run; see :func:`pytest_terminal_summary` to refresh it.
MODULE_SECONDS = ROOT / "tests" / "module_seconds.txt"
#: A module missing from that table (a new one) is guessed from its tests' marks, seconds a test: a Harbor
#: test runs `harbor run` jobs, a Docker test builds and runs containers, an unmarked test is quick.
MARK_COST = {"harbor": 60.0, "docker": 20.0, "browser": 60.0, "slow": 30.0}
DEFAULT_COST = 0.3


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse a Docker or Harbor test without its mark; under pytest-xdist, the longest modules first.

    ``make test`` runs ``-n 3 --dist loadscope --no-loadscope-reorder``: each module goes whole to one
    worker, so a module-scoped fixture (a Harbor job, a measured run, a set of replays every test of the
    module reads) is computed once; ``--dist load`` split a module over the workers, which computed it
    on each. The modules are handed out in the order of this list: here the most costly first (their
    measured seconds, :data:`MODULE_SECONDS`), so the run does not end on one long Harbor module while
    the other workers idle. Within a module the order is the file's.

    Outside pytest-xdist the order is the files': a developer's ``pytest tests/x.py`` runs in file order.
    """
    unmarked = [
        f"{item.nodeid} (uses {name}, no {mark!r} mark)"
        for item in items
        for name, mark in NEEDS_MARK.items()
        if name in getattr(item, "fixturenames", ()) and item.get_closest_marker(mark) is None
    ]
    if unmarked:
        raise pytest.UsageError("a Docker or Harbor test without its mark:\n  " + "\n  ".join(unmarked))
    if not hasattr(config, "workerinput"):
        return
    measured = module_seconds(MODULE_SECONDS)
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(_module(item.nodeid), []).append(item)

    def cost(module: str) -> float:
        return measured[module] if module in measured else sum(map(_guess, modules[module]))

    items[:] = [item for module in sorted(modules, key=lambda name: -cost(name)) for item in modules[module]]


def module_seconds(path: Path) -> dict[str, float]:
    """The table of :data:`MODULE_SECONDS`: ``seconds  module`` a line, ``#`` comments."""
    rows = (line.split() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#"))
    return {module: float(seconds) for seconds, module in rows}


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _guess(item: pytest.Item) -> float:
    marks = {mark.name for mark in item.iter_markers()}
    return max((MARK_COST[name] for name in marks if name in MARK_COST), default=DEFAULT_COST)


# ---------------------------------------------------------------- measured seconds per module --------
_SPENT: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Sum each test's setup, call and teardown seconds by module (on the controller: every worker's)."""
    _SPENT[_module(report.nodeid)] = _SPENT.get(_module(report.nodeid), 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """With ``--durations`` (``make test`` sets it), the seconds each module took, and the same table
    written to ``out/module_seconds.txt``.

    To refresh :data:`MODULE_SECONDS` after a full ``make test``: ``cp out/module_seconds.txt
    tests/module_seconds.txt`` (a partial run, one file or a ``-k``, gives a partial table: keep the
    full one and change only the lines of the modules you ran in full).
    """
    if config.getoption("durations", None) is None or hasattr(config, "workerinput") or not _SPENT:
        return
    lines = [f"{seconds:9.1f}  {module}" for module, seconds in sorted(_SPENT.items(), key=lambda row: -row[1])]
    total = sum(_SPENT.values())
    terminalreporter.write_sep("=", f"seconds per module ({total:.0f} worker-seconds in all)")
    for line in lines:
        terminalreporter.write_line(line)
    out = ROOT / "out"
    out.mkdir(exist_ok=True)
    header = [
        "# Worker-seconds per test module: setup, call and teardown of its tests, module fixtures included.",
        "# Written by tests/conftest.py (pytest_terminal_summary) after a run with --durations; the order of",
        f"# modules under pytest-xdist (pytest_collection_modifyitems) reads it. {total:.0f} s in all.",
    ]
    (out / "module_seconds.txt").write_text("\n".join([*header, *lines]) + "\n")
