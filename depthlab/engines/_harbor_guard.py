"""What depthlab adds around Harbor's docker environment: bounds, hygiene, safe reads of its files.

Harbor 0.26's docker environment sets no pid limit and enforces no ``storage_mb``, bind-mounts
``/logs/agent`` and ``/logs/verifier`` onto the host's trial folder (so whatever a root agent
leaves there lands on the host), and keeps its Compose overrides in temporary folders that a
killed Harbor never removes. So depthlab

* hands every job a Compose overlay (Harbor's ``environment.extra_docker_compose``) with the
  runner's pid limit (:data:`PIDS_LIMIT`) on the ``main`` service;
* watches the writable layer of each running trial's container during a job and kills the
  trial's containers once it passes the disk bound (task.toml's ``storage_mb``, else the
  runner's default), writing the reason to ``depthlab-disk.txt`` in the trial folder: the docker
  storage driver here (overlay2 on ext4) cannot bound it;
* strips the setuid and setgid bits of every file an agent left in a finished trial's folder
  (a setuid root shell would otherwise sit in the jobs folder); links are left as they are, and
  depthlab's loaders never follow them (:mod:`depthlab.io._files`);
* removes, before a measurement runs anything, Harbor's temporary Compose folders that name a
  trial of this jobs folder (the lock on the jobs folder makes sure no live Harbor owns them);
* reads Harbor's JSON files as the loaders do (:func:`depthlab.io.harbor.read_json_object`):
  regular files only, never a FIFO or a link (a FIFO in place of a ``result.json`` would block a
  plain read forever).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from depthlab._defaults import DEFAULT_STORAGE_MB, PIDS_LIMIT  # the runner's, written once
from depthlab._guard_shell import GUARD_SCRIPT as GUARD_SCRIPT  # the guard's shell (both engines read it)
from depthlab._guard_shell import guard_sections
from depthlab._text import one_line as _one_line
from depthlab.io import harbor_writer
from depthlab.io.harbor import TrialResultFile, read_json_object, read_text_head, read_trial_result, record_exception

#: The Compose overlay depthlab writes into the jobs folder (hidden: ``harbor view`` lists folders).
BOUNDS_FILE = ".depthlab-compose-bounds.json"
#: In a trial folder: why depthlab's disk watch stopped the trial.
DISK_NOTE = "depthlab-disk.txt"
#: The files Harbor's docker environment writes into its temporary Compose folders.
_HARBOR_TEMP_FILES = re.compile(
    r"^(docker-compose-mounts\.json|docker-compose-environment\.json|.*docker-compose-resources\.json|"
    r"docker-compose-egress-control-services\.json)$"
)


def bounds_overlay(jobs_dir: Path, pids_limit: int = PIDS_LIMIT) -> Path:
    """Write (once) the Compose overlay with the pid limit of the ``main`` service; its path."""
    path = jobs_dir / BOUNDS_FILE
    text = json.dumps({"services": {"main": {"pids_limit": pids_limit}}}, indent=2) + "\n"
    if read_json_object(path) != json.loads(text):
        from depthlab import _atomic

        jobs_dir.mkdir(parents=True, exist_ok=True)
        _atomic.write_text(path, text)
    return path


def strip_setuid(folder: Path) -> list[str]:
    """Clear the setuid/setgid bits of every file under ``folder`` (links not followed); the paths changed."""
    changed = []
    for root, directories, files in os.walk(folder, followlinks=False):
        for name in (*files, *directories):
            path = os.path.join(root, name)
            try:
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode) or not info.st_mode & (stat.S_ISUID | stat.S_ISGID):
                    continue
                os.chmod(path, stat.S_IMODE(info.st_mode) & ~(stat.S_ISUID | stat.S_ISGID), follow_symlinks=False)
                changed.append(path)
            except (OSError, NotImplementedError):
                continue
    return changed


def harbor_temp_leftovers(jobs_dir: Path, temp_dir: str | None = None) -> list[Path]:
    """Harbor's temporary Compose folders (in ``temp_dir``, default the system's) that name a trial of ``jobs_dir``.

    A folder counts only when it holds nothing but Harbor's Compose override files and one of
    them names a path in ``jobs_dir`` (the mounts file) or a trial folder of it (the others are
    named after the trial's session).
    """
    root = Path(temp_dir or tempfile.gettempdir())
    trials = {path.name.lower() for path in jobs_dir.glob("*/*__*") if path.is_dir()}
    found = []
    try:
        candidates = [entry for entry in os.scandir(root) if entry.name.startswith("tmp")]
    except OSError:
        return []
    for entry in candidates:
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            names = os.listdir(entry.path)
        except OSError:
            continue
        if not names or not all(_HARBOR_TEMP_FILES.match(name) for name in names):
            continue
        for name in names:
            text = read_text_head(Path(entry.path) / name)
            session = name.split("-docker-compose-resources.json")[0].removesuffix("__env").lower()
            if str(jobs_dir) in text or session in trials:
                found.append(Path(entry.path))
                break
    return found


def remove_temp_leftovers(jobs_dir: Path, temp_dir: str | None = None) -> int:
    """Remove :func:`harbor_temp_leftovers`; how many were removed."""
    removed = 0
    for folder in harbor_temp_leftovers(jobs_dir, temp_dir):
        shutil.rmtree(folder, ignore_errors=True)
        removed += not folder.exists()
    return removed


class DiskWatch:
    """During a Harbor job: kill a running trial's containers once its writable layer passes its bound.

    ``bounds`` maps a task name to its bound in MB (task.toml's ``storage_mb``); others get
    :data:`DEFAULT_STORAGE_MB`. :meth:`check` is called from the job's polling loop and looks at
    most every ``interval`` seconds.
    """

    def __init__(self, job: Path, bounds: Mapping[str, int | None], interval: float = 5.0) -> None:
        self.job = job
        self.bounds = dict(bounds)
        self.interval = interval
        self._last = 0.0
        self.stopped: list[str] = []

    def check(self) -> None:
        now = time.monotonic()
        if now - self._last < self.interval:
            return
        self._last = now
        running = {
            _project(path.name): path
            for path in _trial_dirs(self.job)
            if not (path / "result.json").exists() and path.name not in self.stopped
        }
        if not running:
            return
        for project, size_mb in _layer_sizes(running):
            trial = running[project]
            bound = self.bounds.get(trial.name.rsplit("__", 1)[0]) or DEFAULT_STORAGE_MB
            if size_mb > bound:
                with contextlib.suppress(OSError):
                    (trial / DISK_NOTE).write_text(
                        f"the agent wrote {size_mb:.0f} MB to its container, over the bound of {bound} MB: "
                        "depthlab stopped the trial's containers\n",
                        encoding="utf-8",
                    )
                subprocess.run(["docker", "kill", *_containers(project)], capture_output=True, timeout=60, check=False)
                self.stopped.append(trial.name)


def live_projects() -> set[str]:
    """The Docker Compose projects with a container (running or not) or a network on this host."""
    found: set[str] = set()
    for command in (
        ["docker", "ps", "-a", "--filter", "label=com.docker.compose.project"],
        ["docker", "network", "ls", "--filter", "label=com.docker.compose.project"],
    ):
        try:
            done = subprocess.run(
                [*command, "--format", '{{.Label "com.docker.compose.project"}}'],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        found.update(line.strip() for line in done.stdout.splitlines() if line.strip())
    return found


def job_projects(job: Path, live: Iterable[str]) -> list[str]:
    """Which of the ``live`` Compose projects belong to a trial of ``job`` (its agent's, its separate verifier's).

    Harbor names a trial's projects after the trial (:func:`compose_project` of ``<trial>__env``,
    ``<trial>__<other>`` for another environment of it), so a project is the job's when its name
    begins with a trial's.
    """
    prefixes = [compose_project(f"{path.name}__") for path in _trial_dirs(job)]
    return sorted(project for project in live if any(project.startswith(prefix) for prefix in prefixes))


def remove_projects(projects: Iterable[str]) -> None:
    """``docker compose down`` each project as Harbor's own teardown does: containers, networks, its images."""
    for project in projects:
        subprocess.run(
            ["docker", "compose", "--project-name", project, "down", "--rmi", "local", "--volumes", "--remove-orphans"],
            capture_output=True,
            timeout=300,
            check=False,
        )


def _trial_dirs(job: Path) -> Iterable[Path]:
    try:
        return [path for path in job.iterdir() if path.is_dir() and "__" in path.name]
    except OSError:
        return []


def _project(trial: str) -> str:
    return compose_project(f"{trial}__env")


def compose_project(name: str) -> str:
    """The Docker Compose project name Harbor's docker environment gives a session ``name``.

    Examples
    --------
    >>> compose_project("chain-r2__AbC1234__env")
    'chain-r2__abc1234__env'
    """
    name = name.lower()
    if not re.match(r"^[a-z0-9]", name):
        name = "0" + name
    return re.sub(r"[^a-z0-9_-]", "-", name)


def _layer_sizes(projects: Mapping[str, Path]) -> list[tuple[str, float]]:
    """(project, MB in the writable layers of its containers) for the running ``projects``."""
    done = subprocess.run(
        ["docker", "ps", "--size", "--no-trunc", "--filter", "label=com.docker.compose.project", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    sizes: dict[str, float] = {}
    for line in done.stdout.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        labels = dict(part.split("=", 1) for part in str(row.get("Labels", "")).split(",") if "=" in part)
        project = labels.get("com.docker.compose.project")
        if project is not None and project in projects:
            sizes[project] = sizes.get(project, 0.0) + _megabytes(str(row.get("Size", "")))
    return list(sizes.items())


def _megabytes(size: str) -> float:
    """The writable layer's size from ``docker ps --size`` ('12.3MB (virtual 1.2GB)') in MB."""
    match = re.match(r"\s*([\d.]+)\s*([kMGT]?B)", size)
    if not match:
        return 0.0
    scale = {"B": 1e-6, "kB": 1e-3, "MB": 1.0, "GB": 1e3, "TB": 1e6}[match.group(2)]
    return float(match.group(1)) * scale


def _containers(project: str) -> list[str]:
    done = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label=com.docker.compose.project={project}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.stdout.split()


# ---------------------------------------------------------------- verdicts on finished trials
#: The exception a forged grade is recorded as (the runner's name for the same finding).
TAMPERED = "VerifierTamperedError"
#: The exception of a trial whose agent never got a complete model answer (not the model's fail).
OUTAGE = "ModelEndpointOutage"
#: Beside a trial's result.json once depthlab recorded a verdict in it: Harbor's own result, unchanged.
HARBOR_RESULT = "depthlab-harbor-result.json"
#: The folder of the agents Harbor imports (its venv has no depthlab), and depthlab's guarded terminus-2:
#: every run ends with the processes the agent left that reach for the verifier's files killed, and its
#: tamper evidence recorded
#: (``harbor_side/depthlab_guard.py``) in :data:`GUARD_FILE` of the agent's log folder.
HARBOR_SIDE = Path(__file__).resolve().parent / "harbor_side"
GUARDED_AGENT = "depthlab_guard:GuardedTerminus2"
#: The agent Harbor imports for jobs holding a multi-step task: the guarded terminus-2 with the stated
#: cap on the whole run (each step told and held to the turns left), guarded as :data:`GUARDED_AGENT`.
WHOLE_RUN_AGENT = "depthlab_whole_run:WholeRunTerminus2"
#: What the guard kills when an agent's run ends: the processes reaching for the verifier's files
#: (``suspects``, the default: a server the task asked for runs on into the tests, as under Harbor), or
#: every process the agent left (``all``, the strict profile).
GUARD_MODES = ("suspects", "all")
#: In the agent's log folder of a trial (of each step): the guard's record (``harbor_side`` names it too;
#: ``tests/engines/test_guard_script.py`` checks both agree, in Harbor's venv).
GUARD_FILE = "depthlab-guard.json"


def guard_script_sections() -> dict[str, str]:
    """The sections of the guard's shell (:data:`GUARD_SCRIPT`), read as the guard reads them: name -> text."""
    return dict(guard_sections())


#: Exceptions the leaderboard charges to the model: an outage behind one of them is not the model's.
_MODELS_EXCEPTIONS = frozenset({"AgentTimeoutError", "NonZeroAgentExitCodeError"})


def tamper_evidence(trial: Path, read: TrialResultFile) -> str | None:
    """Why ``trial``'s grade cannot be trusted, read from Harbor's files; None when nothing shows.

    A trial Harbor did not grade (no reward: its agent or Harbor stopped before the tests) has no
    grade to forge and keeps Harbor's own exception. Harbor removes the reward files before the
    tests and reads them right after, so a reward file
    changed after the verifier's ``finished_at`` has another writer (a process the agent left
    running), and a reward file or verifier folder that is a link was put there by the agent.
    """
    result = read.result
    if not result.graded(read.steps):  # nothing to forge: Harbor's own exception (a killed run's, say) stands
        return None
    verifier_dir = trial / "verifier"
    agent = result.config.agent if result.config is not None else None
    guarded = agent is not None and agent.import_path in (GUARDED_AGENT, WHOLE_RUN_AGENT)
    if guarded and (found := guard_evidence(trial)):
        return found
    if verifier_dir.is_symlink():
        return f"the verifier's folder is a link (to {os.readlink(verifier_dir)!r}), not the folder Harbor made"
    finished = _timestamp(result.verifier.finished_at if result.verifier is not None else None)
    for name in ("reward.txt", "reward.json"):
        path = verifier_dir / name
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            return f"verifier/{name} is a link (to {os.readlink(path)!r}), not a file the tests wrote"
        if not stat.S_ISREG(info.st_mode):
            return f"verifier/{name} is not a regular file"
        if finished is not None and info.st_mtime > finished:
            late = info.st_mtime - finished
            return f"verifier/{name} was written {late:.2f} s after the tests ended (another writer)"
    return None


def guard_evidence(trial: Path) -> str | None:
    """What depthlab's guarded agent recorded against ``trial`` (:data:`GUARD_FILE`); None when its runs were clean.

    Every run of the agent must have left a finished entry: no write into ``/logs/verifier`` after
    its run, no process left reaching for the verifier's or the tests' files (the guard killed it),
    ``/logs/verifier`` still a folder (or made afresh by the guard after the agent removed it, as the
    local runner makes it before every run of the tests), ``/tests`` unchanged.
    """
    files = sorted([trial / "agent" / GUARD_FILE, *trial.glob(f"steps/*/agent/{GUARD_FILE}")])
    runs: list[Any] = []
    for path in files:
        if path.exists() or path.is_symlink():
            evidence = read_json_object(path)
            if evidence is None or not isinstance(evidence.get("runs"), list):
                return f"agent/{GUARD_FILE} is not the guard's record (a link, a FIFO or no JSON object)"
            runs.extend(evidence["runs"])
    if not runs:
        return f"depthlab's guard recorded nothing (no agent/{GUARD_FILE}): the agent's leftovers were not checked"
    for run in runs:
        if not isinstance(run, dict) or not run.get("done"):
            error = run.get("error") if isinstance(run, dict) else None
            return f"depthlab's guard could not check the agent's leftovers ({error or 'no finished record'})"
        if run.get("verifier_writes"):
            shown = ", ".join(str(path) for path in run["verifier_writes"][:3])
            killed = "; ".join(str(line) for line in (run.get("killed") or [])[:3])
            return f"a process the agent left kept writing the verifier's folder after the agent's run ({shown})" + (
                f"; killed: {killed}" if killed else ""
            )
        if run.get("mode", "suspects") == "suspects" and run.get("killed"):
            killed = "; ".join(str(line) for line in run["killed"][:3])
            return f"a process the agent left reached for the verifier's or the tests' files (killed: {killed})"
        if run.get("verifier_folder") and not run.get("verifier_restored"):  # made afresh: graded as on the runner
            return f"/logs/verifier is {run['verifier_folder']} at the end of the agent's run, not Harbor's folder"
        if run.get("tests_before") != run.get("tests_after"):
            return "/tests changed during the agent's run (a file the agent left there would run with the tests)"
    return None


def outage_evidence(trial: Path, read: TrialResultFile) -> str | None:
    """Why ``trial``'s agent was stopped by the endpoint, not by the model; None when it was not.

    The rule of depthlab's runner (:mod:`depthlab.runner.agent`): a run that ended while a model
    request had no answer (the agent's timeout cut it, or the endpoint failed through its retries) is
    an outage, whatever the earlier answers were. depthlab's guarded agent records that request
    (``model_wait`` of each run in :data:`GUARD_FILE`); for another agent, a run that ended in an
    exception with no output token at all is the evidence left.
    """
    result = read.result
    if result.agent_name() == "oracle":
        return None
    for run in _guard_runs(trial):
        wait = run.get("model_wait") if isinstance(run, dict) else None
        if isinstance(wait, dict):
            waited = wait.get("waited_s")
            error = _one_line(str(wait.get("error") or "no answer"))
            stopped = result.first_exception_type(read.steps) or "the end of the run"
            return (
                f"the endpoint had not answered the agent's request for {float(waited or 0):.1f} s when "
                f"{stopped} stopped it ({error}); {run.get('model_answers', 0)} answer(s) before"
            )
    info = result.exception_info
    if info is None or result.n_output_tokens() not in (None, 0):
        return None
    reason = _endpoint_reason(trial) or f"{info.exception_type}: {info.message() or ''}".strip()
    return f"the agent got no model answer (0 tokens) before {info.exception_type}: {_one_line(reason)}"


def _guard_runs(trial: Path) -> list[Any]:
    """The runs depthlab's guard recorded in ``trial`` (every step's record), [] when none or unreadable."""
    runs: list[Any] = []
    for path in sorted([trial / "agent" / GUARD_FILE, *trial.glob(f"steps/*/agent/{GUARD_FILE}")]):
        evidence = read_json_object(path)
        if evidence is not None and isinstance(evidence.get("runs"), list):
            runs.extend(evidence["runs"])
    return runs


def judge_trials(job: Path, *, tampering: bool = True) -> list[tuple[str, str, str]]:
    """Record depthlab's verdict in each finished trial of ``job`` not judged yet: (trial, exception, reason).

    A trial with tamper evidence (``tampering``) or an outage gets its ``exception_info`` set in
    its result.json (so Harbor's viewer, ``depthlab depth`` and every reader see it invalid);
    Harbor's own result is kept beside it in :data:`HARBOR_RESULT`.
    """
    verdicts = []
    for trial in sorted(_trial_dirs(job)):
        path = trial / "result.json"
        if (trial / HARBOR_RESULT).exists():
            continue
        read = read_trial_result(path)
        if isinstance(read, str):  # absent, or not Harbor's shape: the loaders reject it with this reason
            continue
        if not read.result.finished_at:
            continue
        exception = read.result.exception_info.exception_type if read.result.exception_info is not None else None
        found = None
        if tampering and (reason := tamper_evidence(trial, read)):
            found = (TAMPERED, reason)
        elif (exception is None or exception in _MODELS_EXCEPTIONS) and (reason := outage_evidence(trial, read)):
            # Harbor's exception is the model's (a timeout) or none: the endpoint's outage is what stopped it
            found = (OUTAGE, reason)
        if found is None:
            continue
        message = f"{found[1]} (recorded by depthlab; Harbor's result: {HARBOR_RESULT})"
        verdict = harbor_writer.exception_info(found[0], message, "", harbor_writer.utc_now())
        record_exception(read, verdict, keep_original=trial / HARBOR_RESULT)
        verdicts.append((trial.name, found[0], found[1]))
    return verdicts


def _endpoint_reason(trial: Path) -> str:
    """The last line of Harbor's trial log that names a model-call error (LiteLLM's), '' when none."""
    text = read_text_head(trial / "trial.log", 4 << 20)
    lines = [line for line in text.splitlines() if "litellm" in line.lower() or "APIError" in line or "Timeout" in line]
    return lines[-1].strip() if lines else ""


def _timestamp(value: object) -> float | None:
    from datetime import datetime

    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.timestamp() if moment.tzinfo else None
