"""The Harbor engine's replays: each replay one ``harbor trials start`` of depthlab's replay agent.

The agent is ``depthlab_replay:ReplayAgent`` in ``depthlab/engines/harbor_side`` (Harbor imports it
in its own venv; depthlab never does). Each replay runs on a copy of the task made for the checks
(:func:`replay_task`): its steps 1..``upto`` only, none gated by ``min_reward`` (a replay goes on
past a failing step, as on the local engine). A replay is offline whatever the task allows: Harbor
0.26's docker environment enforces ``network_mode = "no-network"`` only with its egress-control
sidecar (an image it pulls, and a kernel feature), so the copy states ``"public"`` and every trial
gets a Compose overlay giving the ``main`` service ``network_mode: none`` (:data:`OFFLINE_FILE`):
no network at all, as the local engine's containers. The copies are kept under
``<jobs_dir>/depthlab-check-tasks``, one per (task checksum, steps), so a rerun reuses them.

Every trial goes into the one ``depthlab-check`` job the local engine writes too (``--trials-dir``),
named from the task and the replay's key; its ``config.json`` holds the key and the original
task's checksum in ``agent.kwargs``, which is how :class:`depthlab.checks.replay.Replayer` finds
the replays a killed check finished. Harbor's output for each trial is appended to
``depthlab-harbor.log`` in the job folder.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import shutil
import subprocess
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from depthlab._atomic import write_text
from depthlab.checks.replay import EngineReplays, ReplayRequest
from depthlab.engines._harbor_guard import compose_project, live_projects, remove_projects
from depthlab.engines.harbor import HARBOR_SIDE, HarborCommand, find_harbor
from depthlab.engines.rounds import EngineError
from depthlab.runner.output import JobDir
from depthlab.runner.task import TaskSpec

#: The agent Harbor imports for a replay (``depthlab/engines/harbor_side/depthlab_replay.py``).
REPLAY_AGENT = "depthlab_replay:ReplayAgent"
#: Under the jobs folder: the task copies the replays run on.
TASKS_DIR = "depthlab-check-tasks"
#: Under the task copies: the Compose overlay that takes the network away from every replay's container.
OFFLINE_FILE = "offline-compose.json"
#: In the job folder: Harbor's output for every replay (a file: a folder without result.json is a lost trial).
LOG_FILE = "depthlab-harbor.log"


def harbor_replays(
    jobs_dir: Path, harbor: str | HarborCommand | None = None, *, env: Mapping[str, str] | None = None
) -> EngineReplays:
    """The Harbor engine's replays (module docstring); ``harbor`` as for :func:`depthlab.engines.harbor.find_harbor`.

    Raises
    ------
    EngineError
        When Harbor is missing or its version is not supported (the message says how to install it).
    """
    command = harbor if isinstance(harbor, HarborCommand) else find_harbor(harbor)
    child_env = {**os.environ, **dict(env or {})}
    child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HARBOR_SIDE), child_env.get("PYTHONPATH")]))
    copies = Path(jobs_dir).absolute() / TASKS_DIR

    def run(requests: Sequence[ReplayRequest], job: JobDir) -> list[Path]:
        trial_dirs = []
        for request in requests:
            job.n_planned += 1
            trial_dirs.append(_run_trial(request, job, command, child_env, copies))
            job.update_result()
        return trial_dirs

    return run


def _run_trial(
    request: ReplayRequest, job: JobDir, harbor: HarborCommand, env: Mapping[str, str], copies: Path
) -> Path:
    task = request.task
    copy = replay_task(task, request.upto, copies)
    digest = hashlib.sha256(f"{task.checksum}\0{request.key}".encode()).hexdigest()[:10]
    name = f"{task.path.name[:40]}__{digest}"
    trial_dir = job.path.absolute() / name
    if trial_dir.exists():  # a trial Harbor left without a result (the Replayer removes those at start)
        shutil.rmtree(trial_dir)
    _remove_leftover_project(name)
    config = {
        "task": {"path": str(copy)},
        "trial_name": name,
        "trials_dir": str(job.path.absolute()),
        "agent": {
            "import_path": REPLAY_AGENT,
            "kwargs": {
                "replay": request.key,
                "task_checksum": task.checksum,
                "strict_exit": request.strict_exit,
                "steps": _plan_steps(task, request),
            },
        },
        "environment": {"type": "docker", "delete": True, "extra_docker_compose": [str(_offline_overlay(copies))]},
    }
    config_path = copies / "configs" / f"{name}.json"
    config_path.parent.mkdir(parents=True, exist_ok=True)
    write_text(config_path, json.dumps(config, indent=2) + "\n")
    argv = [*harbor.argv, "trials", "start", "--config", str(config_path)]
    with (job.path / LOG_FILE).open("a", encoding="utf-8") as log:
        log.write(f"$ {' '.join(argv)}\n")
        log.flush()
        done = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=dict(env))
    if not (trial_dir / "result.json").is_file():
        tail = (job.path / LOG_FILE).read_text(encoding="utf-8", errors="replace").strip().splitlines()[-15:]
        raise EngineError(
            f"harbor trials start wrote no result for the replay {request.key!r} of {task.name} "
            f"(exit {done.returncode}); its output is in {job.path / LOG_FILE}:\n" + "\n".join(tail)
        )
    return trial_dir


def _remove_leftover_project(trial_name: str) -> None:
    """Remove the Compose project (containers, networks, image) a killed replay of this name left.

    ``kill -9`` gives Harbor no chance to run ``docker compose down``; the trial's name is the
    replay's (deterministic), so the replay run again finds what its killed run left."""
    project = compose_project(f"{trial_name}__env")
    if project in live_projects():  # a container or a network of it is left
        remove_projects([project])


def _offline_overlay(copies: Path) -> Path:
    """Write (once) the Compose overlay giving the ``main`` service no network; its path."""
    path = copies / OFFLINE_FILE
    if not path.is_file():
        copies.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps({"services": {"main": {"network_mode": "none"}}}, indent=2) + "\n")
    return path


def _plan_steps(task: TaskSpec, request: ReplayRequest) -> list[dict[str, str | None]]:
    """The agent's ``steps`` kwarg: each replayed step's solution folder and script (None: not done)."""
    folders = (
        [Path(step.path) / "solution" for step in task.steps[: request.upto]]
        if task.multi_step
        else [task.solution_path]
    )
    return [
        {"solution": str(folder.resolve()), "script": request.plan.get(str(folder.resolve()))} for folder in folders
    ]


def replay_task(task: TaskSpec, upto: int | None, root: Path) -> Path:
    """A copy of ``task`` under ``root`` for the replays: steps 1..``upto``, no ``min_reward`` gate.

    Its network is stated ``public``: the replay's Compose overlay takes it away (module docstring).

    Examples
    --------
    >>> import tempfile
    >>> from depthlab.runner.task import load_task
    >>> from depthlab.simulate.checks import write_planted_tasks
    >>> tasks = write_planted_tasks(tempfile.mkdtemp(), "debian:12")
    >>> copy = replay_task(load_task(tasks["clean"]), 1, Path(tempfile.mkdtemp()))
    >>> config = tomllib.loads((copy / "task.toml").read_text())
    >>> [step for step in config["steps"]], config["environment"]["network_mode"]
    ([{'name': 'make'}], 'public')
    """
    folder = root / f"{task.path.name}__{task.checksum[:12]}__{upto or 'all'}"
    if (folder / "task.toml").is_file():
        return folder.absolute()
    config = tomllib.loads((task.path / "task.toml").read_text(encoding="utf-8"))
    steps = config.get("steps")
    if isinstance(steps, list) and steps:
        kept = steps if upto is None else steps[:upto]
        config["steps"] = [{key: value for key, value in step.items() if key != "min_reward"} for step in kept]
    environment = config.setdefault("environment", {})
    environment.pop("allow_internet", None)
    environment["network_mode"] = "public"  # the overlay makes it none
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(task.path, partial, symlinks=True)
    write_text(partial / "task.toml", toml_text(config))
    partial.rename(folder)  # whole or absent: a killed copy is made again
    return folder.absolute()


def toml_text(table: Mapping[str, Any]) -> str:
    """``table`` (as :mod:`tomllib` reads it) written back as TOML text; ``tomllib.loads`` gives it back.

    Examples
    --------
    >>> text = toml_text({"a": 1, "t": {"s": "x\\"y"}, "steps": [{"name": "one"}, {"name": "two"}]})
    >>> tomllib.loads(text) == {"a": 1, "t": {"s": 'x"y'}, "steps": [{"name": "one"}, {"name": "two"}]}
    True
    """
    return "\n".join(_table_lines(table, ())).lstrip("\n") + "\n"


def _table_lines(table: Mapping[str, Any], prefix: tuple[str, ...]) -> list[str]:
    lines: list[str] = []
    subtables: list[tuple[str, Any]] = []
    for key, value in table.items():
        if isinstance(value, Mapping) or (_is_table_array(value)):
            subtables.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in subtables:
        path = (*prefix, key)
        dotted = ".".join(_key(part) for part in path)
        if isinstance(value, Mapping):
            lines += ["", f"[{dotted}]", *_table_lines(value, path)]
        else:
            for item in value:
                lines += ["", f"[[{dotted}]]", *_table_lines(item, path)]
    return lines


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, Mapping) for item in value)


def _key(key: str) -> str:
    bare = key.replace("-", "").replace("_", "")
    return key if bare.isascii() and bare.isalnum() else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"a TOML value cannot be a {type(value).__name__}")
