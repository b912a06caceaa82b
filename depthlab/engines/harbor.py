"""Harbor as an external engine: each round's job configs run with ``harbor run --config``.

Harbor is the engine users scale out on: the same job config runs on Harbor's local ``docker``
environment or on a cloud sandbox (``daytona``, ``modal``, ``e2b``, ``runloop``, ``gke``, ...) by
changing ``environment.type`` (``--harbor-env``). depthlab never imports Harbor (it needs Python
>= 3.12 and lives in its own venv); it calls the ``harbor`` command, checked by
:func:`find_harbor` against :data:`SUPPORTED_HARBOR`.

The jobs
--------
Round ``N`` writes one Harbor ``JobConfig`` per (cap, attempts, task set) and runs each as the
job ``<jobs_dir>/measure-rNN__cap-KKK[...]``; the config handed to ``harbor run --config`` and
Harbor's output stay in the job folder (``depthlab-config.json``, ``depthlab-harbor.log``).
The models that need the same tasks at the same cap share one job (one agent entry each), so a
round is as few ``harbor run`` calls as its caps.
Every agent is Harbor's terminus-2 with ``kwargs.max_turns`` = the cap (the limit it
enforces) and ``api_base`` = the endpoint; the job's ``extra_instructions`` state the cap
(:func:`depthlab.io.harbor_writer.stated_cap_instructions`), which is how depthlab's loaders read
a trial as run at stated cap K. The API key never enters a config: Harbor's LiteLLM reads it
from the environment (``OPENAI_API_KEY`` for ``openai/...`` models; ``api_key_env`` copies
another variable there for the child process only).

The oracle preflight is a Harbor job too, ``measure-oracle__<sum>``: Harbor's own ``oracle``
agent runs each task's ``solution/solve.sh`` in the same environment type the rounds use, so a
task that cannot pass its reference solution there is left out before any model is paid for.
The sum covers the task folders' checksums and the environment, so the result is reused until
a task or the environment changes.

Resume
------
Harbor resumes a job itself (``harbor jobs resume -p JOB``): it keeps every trial that has a
``result.json``, deletes the trial folders without one, drops the trials cancelled by a Ctrl-C
and runs the rest of the job's trials. Before a round, :meth:`HarborEngine.resume` does that for
every ``measure-*`` job whose ``result.json`` has no ``finished_at`` (an interrupted run) or
that holds cancelled trials (a Ctrl-C or SIGTERM, after which Harbor finishes the job), after
removing the containers Harbor's docker environment left behind (``kill -9`` or a lost machine
gives Harbor no chance to run ``docker compose down``: their Compose project is the trial's
name). A job folder without ``config.json`` never started and is removed. Then the round loop
plans again from every complete trial, so a cell is neither run twice nor lost. The ``harbor``
child gets SIGTERM when depthlab dies (``PR_SET_PDEATHSIG``), so an orphaned Harbor never
keeps running beside a resumed one.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import polars as pl

from depthlab import schema
from depthlab._checks import check_choice, check_positive_finite, check_positive_int
from depthlab._defaults import DEFAULT_API_KEY_ENV
from depthlab.engines._harbor_guard import (
    GUARD_MODES,
    GUARDED_AGENT,
    HARBOR_SIDE,
    WHOLE_RUN_AGENT,
    DiskWatch,
    bounds_overlay,
    job_projects,
    judge_trials,
    live_projects,
    remove_projects,
    remove_temp_leftovers,
    strip_setuid,
)
from depthlab.engines._versions import Regrade, copy_job_config, keep_stated_cap
from depthlab.engines.rounds import Echo, EngineError, check_api_key
from depthlab.io import harbor_writer
from depthlab.io.harbor import (
    TrialResultFile,
    read_job_config,
    read_job_result,
    read_model,
    read_text_head,
    read_trial_result,
)
from depthlab.io.harbor_models import JobConfig, JobResult, StepResult
from depthlab.io.harbor_records import AgentConfigRecord, DatasetConfigRecord, JobConfigRecord
from depthlab.io.harbor_task import storage_bounds

if TYPE_CHECKING:
    from depthlab.engines.harbor_replays import HarborReplays
    from depthlab.runner.profiles import RunSettings

#: The Harbor versions depthlab's configs are checked against: [lowest, first unsupported).
SUPPORTED_HARBOR: tuple[str, str] = ("0.26.0", "0.27.0")

#: How to install Harbor when it is missing (one line).
INSTALL_HINT = (
    "install Harbor in its own venv (it needs Python >= 3.12): python3.12 -m venv ~/.venvs/harbor && "
    "~/.venvs/harbor/bin/pip install 'harbor>=0.26,<0.27', then put ~/.venvs/harbor/bin on PATH or pass "
    "--harbor ~/.venvs/harbor/bin/harbor"
)

#: Prefix of the job folders a measurement makes (``harbor view JOBS_DIR`` lists them).
JOB_PREFIX = "measure-"
#: In each job folder, beside Harbor's own files: the config depthlab handed to ``harbor run``,
#: and Harbor's output (files, not folders: Harbor's resume deletes a folder without result.json)
CONFIG_FILE = "depthlab-config.json"
LOG_FILE = "depthlab-harbor.log"
#: How a job starts. ``--yes``: Harbor 0.26's ``harbor run`` asks before a task's ``${VAR}`` templates are
#: read from the host (``cli/jobs.py``, ``_confirm_host_env_access``), a prompt that no one answers here
#: (stdin is closed: the job used to abort, exit 1); the local runner reads them without asking. Nothing
#: else it confirms (a diff, an upload's sharing) is asked for by depthlab's jobs.
RUN = ("run", "--yes", "--config")
#: In an oracle job: the tasks' checksums and the environment it ran them in (for reuse)
ORACLE_FILE = "depthlab-oracle.json"
_ROUND_JOB = re.compile(r"^measure-r(\d+)__")


class OracleJob(msgspec.Struct):
    """:data:`ORACLE_FILE`: the environment an oracle job ran its tasks in, and each task's checksum then."""

    environment: Any = None
    kwargs: Any = None
    tasks: dict[str, Any] = msgspec.field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> OracleJob | None:
        """The file through this struct (None when absent, not an object or not its shape: the job is not reused)."""
        found = read_model(path, cls)
        return found if isinstance(found, OracleJob) else None

    def setting(self) -> dict[str, Any]:
        return {"environment": self.environment, "kwargs": self.kwargs}


@dataclass(frozen=True)
class HarborCommand:
    """How to call Harbor (``argv``) and the version it reported."""

    argv: tuple[str, ...]
    version: str


def find_harbor(command: str | None = None, *, env: Mapping[str, str] | None = None) -> HarborCommand:
    """Find Harbor (``command``, else ``harbor`` on PATH) and check its version.

    Parameters
    ----------
    command : str, optional
        How to call Harbor, split like a shell would (``"uv run harbor"``, a path to the
        ``harbor`` script of its venv); default ``harbor`` on PATH.
    env : mapping, optional
        The environment to call it in.

    Raises
    ------
    EngineError
        When Harbor is missing (the message says how to install it) or its version is outside
        :data:`SUPPORTED_HARBOR`.

    Examples
    --------
    >>> find_harbor("/nonexistent/harbor")
    Traceback (most recent call last):
    ...
    depthlab.engines.rounds.EngineError: Harbor not found ('/nonexistent/harbor'): install Harbor in its own venv ...
    """
    argv = tuple(shlex.split(command)) if command else ("harbor",)
    if not argv:
        raise EngineError(f"--harbor must name a command, got {command!r}")
    located = shutil.which(argv[0], path=(env or os.environ).get("PATH"))
    if located is None:
        raise EngineError(f"Harbor not found ({command or 'harbor on PATH'!r}): {INSTALL_HINT}")
    argv = (located, *argv[1:])
    try:
        # a direct script: asked once per version of the file (a reinstall rewrites it), not at every engine
        # made (each ask starts Harbor: a second or more of imports); a wrapper (`uv run harbor`) every time
        stamp = Path(located).stat().st_mtime_ns if len(argv) == 1 else time.monotonic_ns()
        returncode, stdout, stderr = _ask_version(argv, stamp, dict(env or os.environ))
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EngineError(f"Harbor at {located} does not run ({error}): {INSTALL_HINT}") from None
    match = re.search(r"\b(\d+\.\d+\.\d+)\b", stdout + stderr)
    if returncode != 0 or match is None:
        tail = (stderr or stdout).strip().splitlines()[-1:] or ["no output"]
        raise EngineError(f"Harbor at {located} did not report its version ({tail[0]}): {INSTALL_HINT}")
    version = match.group(1)
    low, high = SUPPORTED_HARBOR
    if not _version(low) <= _version(version) < _version(high):
        raise EngineError(
            f"Harbor {version} at {located} is outside the supported range >= {low}, < {high}: {INSTALL_HINT}"
        )
    return HarborCommand(argv, version)


#: The environment variables that can change which Harbor a command starts (the rest cannot change its version).
_VERSION_KEYS = ("PATH", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "VIRTUAL_ENV")
#: ``harbor --version``'s exit code and output by (command, its file's stamp, the values of :data:`_VERSION_KEYS`).
_VERSIONS: dict[tuple[tuple[str, ...], int, tuple[str, ...]], tuple[int, str, str]] = {}


def _ask_version(argv: tuple[str, ...], stamp: int, env: dict[str, str]) -> tuple[int, str, str]:
    """``harbor --version``'s exit code and output, asked once per command, stamp and :data:`_VERSION_KEYS`."""
    key = (argv, stamp, tuple(env.get(name, "") for name in _VERSION_KEYS))
    if key not in _VERSIONS:
        done = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=120, env=env, check=False)
        _VERSIONS[key] = (done.returncode, done.stdout, done.stderr)
    return _VERSIONS[key]


class HarborEngine:
    """Run the rounds with Harbor (module docstring).

    Parameters
    ----------
    jobs_dir : path
        Where the job folders go (and are resumed from); ``harbor view JOBS_DIR`` shows them.
    base_url : str
        The model endpoint (OpenAI-compatible), given to terminus-2 as ``api_base``.
    harbor : str or HarborCommand, optional
        How to call Harbor (default ``harbor`` on PATH), see :func:`find_harbor`.
    environment : str, default "docker"
        Harbor's ``environment.type`` (``docker``, ``daytona``, ``modal``, ``e2b``, ...).
    environment_kwargs : mapping, optional
        Harbor's ``environment.kwargs``.
    concurrency : int, default 2
        ``n_concurrent_trials`` of each job.
    agent : str, default "terminus-2"
        Harbor's agent name.
    api_key_env : str, optional
        An environment variable whose value Harbor gets as ``OPENAI_API_KEY`` (the child's
        environment only, never a file); :meth:`check` refuses it unset. None leaves Harbor the
        environment's keys as they are.
    env : mapping, optional
        Extra environment variables for Harbor (e.g. ``HARBOR_TELEMETRY=0``).
    guard : {"suspects", "all"}, default "suspects"
        What depthlab's guarded terminus-2 kills when the agent's run ends, before the tests: the
        processes the agent left that reach for the verifier's or the tests' files (each one tamper
        evidence), or every process the agent left (``depthlab measure --profile strict``; a task
        whose tests need a server the agent started then cannot pass). From the second step of a
        multi-step task on, both also stop every process an earlier step's agent left before the
        step's tests arrive.
    request_timeout : float, optional
        Seconds a model request may wait for its answer (terminus-2's ``llm_kwargs.timeout``, handed
        to LiteLLM); default LiteLLM's. Either way a run that ends while a request has no answer is
        an outage (an invalid trial), as on the local engine.

    Examples
    --------
    >>> engine = HarborEngine("jobs", base_url="http://127.0.0.1:8000/v1")  # doctest: +SKIP
    """

    name = "harbor"

    def __init__(
        self,
        jobs_dir: str | os.PathLike[str],
        *,
        base_url: str | None,
        harbor: str | HarborCommand | None = None,
        environment: str = "docker",
        environment_kwargs: Mapping[str, Any] | None = None,
        concurrency: int = 2,
        agent: str = "terminus-2",
        api_key_env: str | None = None,
        env: Mapping[str, str] | None = None,
        guard: str = "suspects",
        request_timeout: float | None = None,
    ) -> None:
        check_positive_int(concurrency, "concurrency", "HarborEngine")
        if request_timeout is not None:
            check_positive_finite(request_timeout, "request_timeout", "HarborEngine")
        self.request_timeout = request_timeout
        self.guard = check_choice(guard, "guard", "HarborEngine", GUARD_MODES)
        self.jobs_dir = Path(jobs_dir).absolute()
        self.base_url = base_url
        self.environment = environment
        self.environment_kwargs = dict(environment_kwargs or {})
        self.concurrency = concurrency
        self.agent = agent
        self.env = {**os.environ, **dict(env or {})}
        # Harbor imports depthlab's agents (guarded terminus-2, the whole-run cap) from here (its venv has no depthlab)
        self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HARBOR_SIDE), self.env.get("PYTHONPATH")]))
        self.api_key_env = api_key_env
        if api_key_env and api_key_env != DEFAULT_API_KEY_ENV and api_key_env in os.environ:
            self.env[DEFAULT_API_KEY_ENV] = os.environ[api_key_env]  # the variable Harbor's LiteLLM reads
        self._harbor_spec = harbor
        self.progress = True  # the round loop sets it
        self.note = ""  # the round loop's note for the progress bar (tasks pinned so far)
        self._harbor: HarborCommand | None = harbor if isinstance(harbor, HarborCommand) else None
        self.storage_bounds: dict[str, int | None] = {}  # task -> its disk bound (MB), set by each round

    # ------------------------------------------------------------------ checks
    @property
    def harbor(self) -> HarborCommand:
        """The checked Harbor command (found on first use)."""
        if self._harbor is None:
            spec = self._harbor_spec if isinstance(self._harbor_spec, str) else None
            self._harbor = find_harbor(spec, env=self.env)
        return self._harbor

    def replays(self, settings: RunSettings | None = None, *, batch: bool = True) -> HarborReplays:
        """The replays of reference solutions for the checks, as Harbor trials of depthlab's replay agent
        (:class:`depthlab.engines.harbor_replays.HarborReplays`; ``batch``: one Harbor process per call,
        :attr:`concurrency` trials at once).

        Raises
        ------
        EngineError
            Harbor missing or not supported (the message says how to install it).
        """
        from depthlab.engines.harbor_replays import HarborReplays

        return HarborReplays(
            self.jobs_dir,
            self.harbor,
            self.env,
            settings,
            batch=batch,
            concurrency=self.concurrency,
            preexec=functools.partial(die_with_parent, signal.SIGKILL),
        )

    def check(self) -> None:
        """The API key set; Harbor present and supported; for the docker environment, ``docker compose`` v2."""
        check_api_key(self.api_key_env)
        _ = self.harbor
        if self.environment == "docker":
            try:
                done = subprocess.run(
                    ["docker", "compose", "version"], capture_output=True, text=True, timeout=60, check=False
                )
                ok = done.returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
            if not ok:
                raise EngineError(
                    "Harbor's docker environment needs Docker Compose v2 (`docker compose version` fails): install "
                    "the docker-compose-plugin (on Debian 12: bash scripts/compose-up.sh, which takes the v2 plugin "
                    "from Debian 13's docker-compose package)"
                )

    # ------------------------------------------------------------------ rounds
    def next_round(self) -> int:
        numbers = [int(match.group(1)) for path in self._jobs() if (match := _ROUND_JOB.match(path.name))]
        return max(numbers, default=0) + 1

    def round_configs(self, plan: pl.DataFrame, tasks: pl.DataFrame, number: int) -> dict[str, JobConfigRecord]:
        """The Harbor job configs of round ``number`` of ``plan``: job name -> JobConfig.

        One job per (cap, attempts, task set), with one terminus-2 entry per model that needs
        exactly those tasks at that cap.
        """
        folders = _task_folders(tasks)
        multi_step = set(tasks.filter(pl.col("n_steps") > 0)["task"].to_list()) if "n_steps" in tasks.columns else set()
        configs: dict[str, JobConfigRecord] = {}
        for (cap, attempts), cells in plan.group_by(["cap", "attempts"], maintain_order=True):
            by_models: dict[tuple[str, ...], list[str]] = {}
            for (model,), rows in cells.group_by(["model"], maintain_order=True):
                key = tuple(sorted(set(rows["task"].to_list())))
                by_models.setdefault(key, []).append(str(model))
            for index, (task_names, models) in enumerate(sorted(by_models.items())):
                name = f"{JOB_PREFIX}r{number:02d}__cap-{int(cap):03d}"
                name += f"__attempts-{int(attempts)}" if int(attempts) != 1 else ""
                name += f"__part-{index + 1}" if len(by_models) > 1 else ""
                whole_run = any(task in multi_step for task in task_names)
                agents = [self._agent_entry(model, int(cap), whole_run) for model in sorted(models)]
                configs[name] = self._job(
                    name,
                    agents,
                    _datasets(task_names, folders),
                    n_attempts=int(attempts),
                    extra_instructions=harbor_writer.stated_cap_instructions(int(cap)),
                )
        return configs

    def run_round(self, plan: pl.DataFrame, number: int, tasks: pl.DataFrame, echo: Echo) -> None:
        self.storage_bounds = storage_bounds(tasks)
        configs = self.round_configs(plan, tasks, number)
        total = int(plan["attempts"].sum())
        with _bar(total, f"round {number}", self.progress) as bar:
            if self.note:
                bar.set_postfix_str(self.note)
            for name, config in configs.items():
                path = self.jobs_dir / name / CONFIG_FILE
                harbor_writer.write_json(path, config)
                n_trials = config.n_attempts * len(config.agents) * _n_tasks(config.datasets)
                self._harbor_job([*RUN, str(path)], self.jobs_dir / name, n_trials, bar)

    def load_trials(self) -> pl.DataFrame:
        from depthlab.runner.output import load_job_trials

        return load_job_trials(self.jobs_dir)

    def regrade(self, regrades: Sequence[Regrade], echo: Echo) -> int:
        """Grade recorded trials again with their task's verifier now (``harbor trial regrade``); how many were.

        Each goes to ``regrade__<job>`` (:attr:`depthlab.engines._versions.Regrade.job_dir`), with the source
        job's ``config.json`` copied in, and the source's ``extra_instructions`` (the cap stated to the agent,
        which Harbor's regrade drops: :func:`depthlab.engines._versions.keep_stated_cap`) put back in the
        regrade's config. A regrade that fails is echoed with its log, and its cell planned again.
        """
        done = 0
        with _bar(len(regrades), "regrade", self.progress) as bar:
            for item in regrades:
                out = item.job_dir
                copy_job_config(Path(item.trial_dir).parent, out)
                arguments = ["trial", "regrade", item.trial_dir, "-p", item.task_dir, "-o", str(out)]
                before = set(out.glob("*/result.json"))
                try:
                    self._harbor_job(arguments, out, 1, bar)
                except EngineError as error:
                    echo(f"  regrade of {item.trial_dir} failed: {error}")
                    continue
                for result in set(out.glob("*/result.json")) - before:
                    keep_stated_cap(Path(item.trial_dir), result.parent)
                    done += 1
        return done

    # ------------------------------------------------------------------ resume
    def resume(self, echo: Echo) -> None:
        """Resume every interrupted ``measure-*`` job with ``harbor jobs resume`` (after :meth:`check`)."""
        echo(f"engine: Harbor {self.harbor.version} ({' '.join(self.harbor.argv)}), environment {self.environment}")
        if self.environment == "docker" and self.jobs_dir.is_dir():
            removed = remove_temp_leftovers(self.jobs_dir, self.env.get("TMPDIR"))
            if removed:
                echo(f"removed {removed} temporary folder(s) killed Harbor trials of this jobs folder left")
        trials = self.load_trials()  # read once, by the loaders (a FIFO or a link in place of a result is refused)
        live = live_projects() if self.environment == "docker" else set()
        for job in self._jobs():
            # every container, network and image a killed Harbor left of this job's trials, a trial with a
            # result.json included (Harbor may write it and be killed before its teardown)
            leftovers = job_projects(job, live)
            if leftovers:
                remove_projects(leftovers)
                echo(f"removed what a killed run left of {len(leftovers)} trial(s) of {job.name}: containers, networks")
            config = read_job_config(job / "config.json")
            if config is None:
                shutil.rmtree(job)  # it never started: no trial ran
                continue
            if isinstance(config, str):  # not Harbor's shape: Harbor's resume says why; the bar counts one trial
                config = JobConfig()
            kept = trials.filter(pl.col("job") == job.name)
            # Harbor records a trial cancelled by Ctrl-C as CancelledError; `harbor jobs resume` reruns it
            cancelled = int((kept["exception"] == "CancelledError").sum())
            if _finished(job) and not cancelled:
                _report_verdicts(job)  # a measurement killed between Harbor's end and the verdicts
                continue
            incomplete = [path for path in job.iterdir() if path.is_dir() and not _regular(path / "result.json")]
            for path in incomplete:
                if (path / "result.json").exists() or (path / "result.json").is_symlink():
                    shutil.rmtree(path)  # a FIFO or a link in place of its result: Harbor's resume would read it
            done = kept.height - cancelled
            redo = len(incomplete) + cancelled
            echo(f"resuming the interrupted Harbor job {job.name}: {done} trial(s) kept, {redo} to redo")
            n_trials = config.n_trials()
            with _bar(n_trials, f"resume {job.name}", self.progress) as bar:
                self._harbor_job(["jobs", "resume", "--job-path", str(job)], job, n_trials, bar)

    # ------------------------------------------------------------------ preflight
    def preflight(self, tasks: pl.DataFrame, echo: Echo) -> pl.DataFrame:
        """Harbor's oracle agent on every task, once, in the rounds' environment; the failures.

        A task whose oracle passed or failed (no exception) in an earlier ``measure-oracle__*``
        job of this jobs folder, with the same checksum and environment, is not run again; nor when
        the values its ``${VAR}`` templates take from this environment changed since (their digest,
        :func:`depthlab.runner.verifier.host_env_digest`, is part of its key; the values never are).
        """
        from depthlab.runner.task import task_folder
        from depthlab.runner.verifier import host_env_digest

        folders = _task_folders(tasks)
        checksums = {}  # task -> its key: its checksum, and the digest of what it takes from the host
        for task, checksum, source in tasks.select("task", pl.col("checksum").fill_null(""), "source").iter_rows():
            digest = host_env_digest(task_folder(source), self.env)  # the environment Harbor runs in
            checksums[task] = checksum + (f"+env:{digest}" if digest else "")
        setting = {"environment": self.environment, "kwargs": self.environment_kwargs}
        found = self._oracle_results(setting)
        results = {
            task: found[task, key]
            for task, key in checksums.items()
            if (task, key) in found and found[task, key].result.exception_info is None
        }
        missing = sorted(task for task in checksums if task not in results)
        if not missing:
            echo("oracle preflight: every task's reference solution was checked before in this environment")
        else:
            pairs = [[task, checksums[task]] for task in missing]
            digest = hashlib.sha256(json.dumps([pairs, setting], sort_keys=True).encode()).hexdigest()[:12]
            name = f"{JOB_PREFIX}oracle__{digest}"
            job = self.jobs_dir / name
            if not _finished(job):
                config = self._job(name, [harbor_writer.agent_config("oracle", None)], _datasets(missing, folders))
                path = job / CONFIG_FILE
                harbor_writer.write_json(path, config)
                harbor_writer.write_json(job / ORACLE_FILE, OracleJob(**setting, tasks=dict(pairs)))
                again = f"; {len(results)} checked before" if results else ""
                echo(f"oracle preflight: Harbor's oracle agent on {len(missing)} task(s) ({name}){again}")
                with _bar(len(missing), "oracle", self.progress) as bar:
                    self._harbor_job([*RUN, str(path)], job, len(missing), bar)
            fresh = _job_results(job)
            results.update({task: fresh[task] for task in missing if task in fresh})
        paths = {str(task): task_folder(source) for task, source in tasks.select("task", "source").iter_rows()}
        return oracle_failures(results, sorted(checksums), paths)

    def _oracle_results(self, setting: Mapping[str, Any]) -> dict[tuple[str, str], TrialResultFile]:
        """(task, its key then) -> its oracle result, from the finished oracle jobs run under ``setting``
        (a task run under two keys, two host values, keeps both)."""
        found: dict[tuple[str, str], TrialResultFile] = {}
        jobs = [job for job in self._jobs() if job.name.startswith(f"{JOB_PREFIX}oracle__") and _finished(job)]
        for job in sorted(jobs, key=lambda path: (path / "result.json").stat().st_mtime):  # the newest wins
            meta = OracleJob.read(job / ORACLE_FILE)
            if meta is None or meta.setting() != dict(setting):
                continue
            for task, result in _job_results(job).items():
                if task in meta.tasks:
                    found[task, meta.tasks[task]] = result
        return found

    # ------------------------------------------------------------------ internals
    def _agent_entry(self, model: str, cap: int, whole_run: bool) -> AgentConfigRecord:
        """The job's agent entry: terminus-2 as depthlab's guarded agent (:data:`GUARDED_AGENT`), for a job
        holding a multi-step task the guarded terminus-2 with the cap on the whole run (:data:`WHOLE_RUN_AGENT`;
        Harbor imports both from :data:`HARBOR_SIDE`); another agent as named."""
        kwargs = self._agent_kwargs(cap)
        if self.agent != "terminus-2":
            return harbor_writer.agent_config(self.agent, model, kwargs)
        kwargs["guard"] = self.guard
        kwargs.update(long_instruction_kwargs())
        if not whole_run:
            return harbor_writer.agent_config(None, model, kwargs, import_path=GUARDED_AGENT)
        kwargs["cap_template"] = harbor_writer.CAP_TEMPLATE
        return harbor_writer.agent_config(None, model, kwargs, import_path=WHOLE_RUN_AGENT)

    def _agent_kwargs(self, cap: int) -> dict[str, Any]:
        kwargs: dict[str, Any] = {harbor_writer.TURN_LIMIT_KEY: cap}
        if self.base_url:
            kwargs["api_base"] = self.base_url
        if self.request_timeout is not None:  # terminus-2 hands llm_kwargs to LiteLLM's every request
            kwargs["llm_kwargs"] = {"timeout": self.request_timeout}
        return kwargs

    def _job(
        self,
        name: str,
        agents: Sequence[AgentConfigRecord],
        datasets: Sequence[DatasetConfigRecord],
        *,
        n_attempts: int = 1,
        extra_instructions: Sequence[str] = (),
    ) -> JobConfigRecord:
        # Harbor's docker environment sets no pid limit itself: a Compose overlay does
        overlays = [str(bounds_overlay(self.jobs_dir))] if self.environment == "docker" else []
        environment = harbor_writer.environment_config(
            self.environment, self.environment_kwargs, extra_docker_compose=overlays
        )
        return harbor_writer.job_config(
            name,
            str(self.jobs_dir),
            agents,
            datasets=datasets,
            n_attempts=n_attempts,
            n_concurrent_trials=self.concurrency,
            environment=environment,
            extra_instructions=extra_instructions,
        )

    def _jobs(self) -> list[Path]:
        if not self.jobs_dir.is_dir():
            return []
        return sorted(path for path in self.jobs_dir.iterdir() if path.is_dir() and path.name.startswith(JOB_PREFIX))

    def _harbor_job(self, arguments: list[str], job: Path, n_trials: int, bar: Any) -> None:
        """Run one Harbor command for ``job``, advancing ``bar`` as its trials finish."""
        job.mkdir(parents=True, exist_ok=True)
        log_path = job / LOG_FILE
        start = bar.n
        with log_path.open("a", encoding="utf-8") as log:
            log.write(f"$ {shlex.join([*self.harbor.argv, *arguments])}\n")
            log.flush()
            process = subprocess.Popen(
                [*self.harbor.argv, *arguments],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                preexec_fn=die_with_parent,
            )
            watch = DiskWatch(job, self.storage_bounds) if self.environment == "docker" else None
            try:
                while process.poll() is None:
                    _advance(bar, start + min(_n_results(job), n_trials))
                    if watch is not None:
                        watch.check()
                    time.sleep(0.5)
            except KeyboardInterrupt:
                # Harbor cancels its trials on SIGINT/SIGTERM and records them as cancelled;
                # the next measure resumes the job
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(120)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
                raise
        _advance(bar, start + min(_n_results(job), n_trials))
        strip_setuid(job)  # what a root agent left in /logs/agent or /logs/verifier is on this host
        _report_verdicts(job)
        if process.returncode in _INTERRUPTED:  # Harbor stopped by Ctrl-C or SIGTERM (the terminal's, say)
            raise KeyboardInterrupt
        if process.returncode != 0:
            tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-15:]
            command = " ".join([part for part in arguments if part != "--yes"][:2])  # "run --config", "jobs resume"
            raise EngineError(
                f"harbor {command} failed (exit {process.returncode}) for the job {job.name}; "
                f"its output is in {log_path}:\n" + "\n".join(tail)
            )


def long_instruction_kwargs() -> dict[str, Any]:
    """The guarded agent's kwargs that make it send a long instruction as depthlab's runner does."""
    from depthlab.runner import agent

    return {
        "instruction_limit_bytes": agent.INSTRUCTION_LIMIT_BYTES,
        "instruction_file": agent.INSTRUCTION_FILE,
        "instruction_excerpt_chars": agent.INSTRUCTION_EXCERPT_CHARS,
        "long_instruction": agent.LONG_INSTRUCTION,
        "stated_cap_prefix": harbor_writer.CAP_TEMPLATE.split("{cap}")[0],
    }


def _job_results(job: Path) -> dict[str, TrialResultFile]:
    """Task name -> its trial's result.json in ``job``, decoded with io's model (one that cannot be is no result).

    The file is read whole: a multi-step oracle's ``step_results`` name its first failing step, which
    the trials table does not hold.
    """
    results: dict[str, TrialResultFile] = {}
    for path in sorted(job.glob("*/result.json")):
        read = read_trial_result(path)
        if isinstance(read, str):
            continue
        # a task.toml [task].name "org/name" is the task "name" in depthlab's tables (as load_tasks reads it)
        name = str(read.result.task_name or path.parent.name.rsplit("__", 1)[0]).rsplit("/", 1)[-1]
        results[name] = read
    return results


def oracle_failures(
    results: Mapping[str, TrialResultFile],
    task_names: Sequence[str],
    task_dirs: Mapping[str, str | os.PathLike[str]] | None = None,
) -> pl.DataFrame:
    """The tasks whose oracle result did not pass: task, reason, the verifier's last output.

    With ``task_dirs`` (task -> its folder), a passing multi-step oracle that stopped at a gate is a
    failure naming the step no run reaches (:func:`depthlab.runner.preflight.unreached_step`, the
    local engine's rule).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from depthlab.io.harbor import read_trial_result
    >>> def oracle(reward):
    ...     path = pathlib.Path(tempfile.mkdtemp()) / "result.json"
    ...     _ = path.write_text(json.dumps({"verifier_result": {"rewards": {"reward": reward}}}))
    ...     return read_trial_result(path)
    >>> results = {"a": oracle(1.0), "b": oracle(0.0)}
    >>> oracle_failures(results, ["a", "b", "c"]).select("task", "reason").rows()
    [('b', 'the reference solution got reward 0.0'), ('c', 'the oracle trial left no result')]
    """
    from depthlab.runner.preflight import unreached_step

    rows = []
    for task in task_names:
        read = results.get(task)
        if read is None:
            rows.append({"task": task, "reason": "the oracle trial left no result", "output": ""})
            continue
        where, prefix = Path(read.path).parent, ""
        info, rewards = read.result.exception_info, read.result.rewards()
        failed = _first_failed_step(read.steps)
        if failed is not None:  # a multi-step trial: the first step that did not pass is named
            index, step = failed
            where, prefix = where / "steps" / str(step.step_name), f"step {index} ({step.step_name!r}) "
            info = info or step.exception_info
            rewards = step.verifier_result.rewards if step.verifier_result is not None else None
            prefix += "is the first that fails: "
        reward = (rewards or {}).get("reward")
        if info is not None:
            message = " ".join(str(info.message() or "").split())[:300]
            reason = f"{prefix}{info.exception_type}: {message}"
        elif reward is None or float(reward) < 1.0:
            reason = f"{prefix}the reference solution got reward {reward}"
        elif task_dirs and task in task_dirs and (unreached := unreached_step(read, task_dirs[task])):
            reason = unreached
        else:
            continue
        rows.append({"task": task, "reason": reason, "output": _verifier_output(where)})
    return schema.preflight_failures(rows)


def _first_failed_step(steps: Sequence[StepResult]) -> tuple[int, StepResult] | None:
    """A multi-step oracle trial's first step with an exception or a reward below 1, as (1-based index, step)."""
    for index, step in enumerate(steps, start=1):
        reward = ((step.verifier_result.rewards if step.verifier_result is not None else None) or {}).get("reward")
        if step.exception_info is not None or reward is None or float(reward) < 1.0:
            return index, step
    return None


def _verifier_output(trial: Path) -> str:
    for relative in ("verifier/test-stdout.txt", "verifier/test-stderr.txt", "exception.txt"):
        text = read_text_head(trial / relative).strip()  # what the agent could write: never a link or FIFO read
        if text:
            return "\n".join(text.splitlines()[-5:])
    return ""


def _task_folders(tasks: pl.DataFrame) -> dict[str, Path]:
    """Task name -> the folder holding its task folder (Harbor's ``datasets[].path``)."""
    from depthlab.runner.task import task_folder

    return {
        str(task): task_folder(source).absolute().parent for task, source in tasks.select("task", "source").iter_rows()
    }


def _datasets(task_names: Sequence[str], folders: Mapping[str, Path]) -> list[DatasetConfigRecord]:
    return harbor_writer.dataset_configs((folders[task], task) for task in task_names)


def _report_verdicts(job: Path) -> None:
    """Record and print depthlab's verdicts (forged grade, outage) on ``job``'s finished trials."""
    for trial, exception, reason in judge_trials(job):
        print(f"  {job.name}/{trial}: invalid, {exception}: {reason}", file=sys.stderr)


def _regular(path: Path) -> bool:
    """A regular file, not through a link (a FIFO or a link in place of a result.json is not one)."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _n_tasks(datasets: Sequence[DatasetConfigRecord]) -> int:
    """The tasks a job's datasets name (as :meth:`depthlab.io.harbor_models.JobConfig.n_tasks` counts them)."""
    return sum(len(entry.task_names or []) for entry in datasets) or 1


def _n_results(job: Path) -> int:
    return sum(1 for _ in job.glob("*/result.json")) if job.is_dir() else 0


#: Harbor's exit status after SIGINT or SIGTERM (its handler's 130, or the signal itself)
_INTERRUPTED = frozenset({130, 143, -signal.SIGINT, -signal.SIGTERM})


def _finished(job: Path) -> bool:
    """Whether Harbor finished ``job`` (its job-level result.json records ``finished_at``)."""
    result = read_job_result(job / "result.json")
    return isinstance(result, JobResult) and bool(result.finished_at)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def die_with_parent(signum: int = signal.SIGTERM) -> None:
    """In the child before exec: get ``signum`` when depthlab dies (Linux), so Harbor never outlives it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signum)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: nothing to set
        pass


class _NoBar:
    n = 0

    def set_postfix_str(self, text: str) -> None:
        pass

    def update(self, count: int) -> None:
        self.n += count


def _advance(bar: Any, value: int) -> None:
    if value > bar.n:
        bar.update(value - bar.n)


@contextlib.contextmanager
def _bar(total: int, description: str, shown: bool) -> Iterator[Any]:
    """A tqdm bar (or a silent counter) for ``total`` trials."""
    if not shown:
        yield _NoBar()
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=description, unit="trial")
    try:
        yield bar
    finally:
        bar.close()
