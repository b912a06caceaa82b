"""The work each test module does, counted in a way the machine's load does not change: a pytest plugin that
``tests/conftest.py`` registers when ``DEPTHLAB_COST_PROBE`` names a file (JSON lines, one a module).

Counted per module (setup, call and teardown of its tests, its module fixtures included): the Harbor
processes this process started (``harbor run``, ``harbor jobs resume``, ``harbor view``: by their first
argument), the runs of ``tests/harbor/harbor_check.py``, the containers the local runner created and
the images it built (through the Docker SDK, in this process), the trials run under the run's
temporary folders (every ``result.json`` with a ``trial_name`` started in this session, once by its
``id`` however often a jobs folder was copied, whichever process wrote it; those Harbor ran are the
ones with Harbor's ``trial.log``), the Harbor commands the engines logged (``$ `` lines of
``depthlab-harbor.log``, a ``depthlab`` child process's included), and the CPU-seconds of this process and of the child
processes it waited for (user + sys; a container's own processes run under the Docker daemon and are
not among them), and, apart, the CPU-seconds of the Docker daemon's containers (their cgroup's total, every
container's on this machine, another process's included) and of the daemon itself (``dockerd``,
``containerd``), where the machine shows them.

Run without pytest-xdist (``-p no:xdist``) for a clean attribution: a module's fixtures shared through
``once_per_run`` are counted in the first module that needs them.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

LOG_NAME = "depthlab-harbor.log"
#: Where the Docker daemon's containers' CPU time is summed (nanoseconds): cgroup v1 with the cgroupfs driver.
DOCKER_CGROUP_USAGE = (Path("/sys/fs/cgroup/cpuacct/docker/cpuacct.usage"),)
#: The Docker daemon's own processes, by their /proc name.
DOCKER_DAEMONS = frozenset({"dockerd", "containerd"})


class CostProbe:
    """Counters, and the JSON line of each module written as the module ends."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.counts: Counter[str] = Counter()
        self.seen_results: set[Path] = set()
        self.seen_trials: set[Any] = set()
        self.log_lines: dict[Path, int] = {}
        self.module: str | None = None
        self.session_start = datetime.now(UTC)
        self.start: dict[str, float] = {}
        self.docker_start: dict[str, float] = {}
        self._patch()

    def _patch(self) -> None:
        counts = self.counts
        original_popen = subprocess.Popen.__init__

        def popen(popen_self: Any, args: Any, *rest: Any, **options: Any) -> None:
            argv = [str(part) for part in args] if isinstance(args, list | tuple) else str(args).split()
            if argv and Path(argv[0]).name == "harbor":
                counts[f"harbor {argv[1] if len(argv) > 1 else ''}".strip()] += 1
            elif any(part.endswith("harbor_check.py") for part in argv[:2]):
                counts["harbor_check.py"] += 1
            elif argv and Path(argv[0]).name == "docker":
                counts["docker CLI"] += 1
            original_popen(popen_self, args, *rest, **options)

        subprocess.Popen.__init__ = popen  # type: ignore[method-assign]

        import docker.api.client
        import docker.models.images

        create = docker.api.client.APIClient.create_container_from_config
        build = docker.models.images.ImageCollection.build

        def create_container(client: Any, *args: Any, **kwargs: Any) -> Any:
            counts["containers (local runner)"] += 1
            return create(client, *args, **kwargs)

        def build_image(images: Any, *args: Any, **kwargs: Any) -> Any:
            counts["image builds (local runner)"] += 1
            return build(images, *args, **kwargs)

        docker.api.client.APIClient.create_container_from_config = create_container  # type: ignore[method-assign]
        docker.models.images.ImageCollection.build = build_image  # type: ignore[method-assign]

    def _docker_cpu(self) -> dict[str, float]:
        """CPU-seconds so far of the Docker daemon's containers and of the daemon (absent where not readable)."""
        seconds: dict[str, float] = {}
        for usage in DOCKER_CGROUP_USAGE:
            try:
                seconds["containers"] = int(usage.read_text()) / 1e9
                break
            except (OSError, ValueError):
                continue
        ticks = os.sysconf("SC_CLK_TCK")
        daemon = 0.0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)
                if fields[0].split("(", 1)[1] in DOCKER_DAEMONS:
                    utime, stime = fields[1].split()[11:13]
                    daemon += (int(utime) + int(stime)) / ticks
            except (OSError, IndexError, ValueError):
                continue
        seconds["daemon"] = daemon
        return seconds

    def begin(self, module: str) -> None:
        self.module = module
        self.counts.clear()
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        self.start = {"self": own.ru_utime + own.ru_stime, "children": children.ru_utime + children.ru_stime,
                      "wall": time.monotonic()}  # fmt: skip
        self.docker_start = self._docker_cpu()

    def end(self, root: Path) -> None:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        docker_now = self._docker_cpu()
        docker = {f"cpu_docker_{name}": round(docker_now[name] - self.docker_start[name], 1)
                  for name in docker_now if name in self.docker_start}  # fmt: skip
        row: dict[str, Any] = {
            "module": self.module,
            "ended": datetime.now(UTC).isoformat(timespec="seconds"),
            "cpu_self": round(own.ru_utime + own.ru_stime - self.start["self"], 1),
            "cpu_children": round(children.ru_utime + children.ru_stime - self.start["children"], 1),
            "wall": round(time.monotonic() - self.start["wall"], 1),
            **docker,
            **self._files(root),
            **dict(self.counts),
        }
        with self.out.open("a") as out:
            out.write(json.dumps(row) + "\n")

    def _files(self, root: Path) -> dict[str, int]:
        trials = harbor_trials = harbor_logged = 0
        for result in root.rglob("result.json"):
            if result in self.seen_results:
                continue
            self.seen_results.add(result)
            try:
                record = json.loads(result.read_text())
                started = datetime.fromisoformat(str(record.get("started_at")))
            except (OSError, ValueError):
                continue
            # a trial run in this session, counted once (a copied jobs folder holds the same trial again)
            if "trial_name" in record and started.astimezone(UTC) >= self.session_start:
                new = record.get("id") not in self.seen_trials
                trials += new
                harbor_trials += new and (result.parent / "trial.log").is_file()
                self.seen_trials.add(record.get("id"))
        for log in root.rglob(LOG_NAME):
            lines = sum(1 for line in log.read_text(errors="replace").splitlines() if line.startswith("$ "))
            harbor_logged += lines - self.log_lines.get(log, 0)
            self.log_lines[log] = lines
        return {"trials": trials, "harbor trials": harbor_trials, "harbor commands logged": harbor_logged}


def _module(item: pytest.Item | None) -> str | None:
    return None if item is None else item.nodeid.split("::", 1)[0]


class CostPlugin:
    def __init__(self, probe: CostProbe) -> None:
        self.probe = probe

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Any:
        if self.probe.module != _module(item):
            self.probe.begin(str(_module(item)))
        yield
        if _module(nextitem) != _module(item):
            factory = item.config._tmp_path_factory  # type: ignore[attr-defined]
            base = factory.getbasetemp()
            self.probe.end(base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base)
            self.probe.module = None


def register(config: pytest.Config) -> None:
    """Register the probe when ``DEPTHLAB_COST_PROBE`` names the file to append to."""
    path = os.environ.get("DEPTHLAB_COST_PROBE")
    if path:
        config.pluginmanager.register(CostPlugin(CostProbe(Path(path).resolve())), "depthlab-cost-probe")
