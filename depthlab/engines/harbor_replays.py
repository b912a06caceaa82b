"""The Harbor engine's replays: Harbor trials of depthlab's replay agent, a batch of them per Harbor process.

:meth:`depthlab.engines.HarborEngine.replays` gives them (:class:`HarborReplays`, the
:class:`depthlab.engines.replays.Replays` of this engine). The agent is
``depthlab_replay:ReplayAgent`` in ``depthlab/engines/harbor_side`` (Harbor imports it in its own
venv; depthlab never does). Each replay runs on a copy of the task made for the checks
(:func:`replay_task`): its steps 1..``upto`` only, none gated by ``min_reward`` (a replay goes on
past a failing step, as on the local engine). The copies are kept under
``<jobs_dir>/depthlab-check-tasks``, one per (task checksum, steps), so a rerun reuses them.

A replay runs under the profile the local engine's would (:func:`profile_overlay`, a Compose overlay
of the ``main`` service): with the network the task allows, as Harbor runs it, or none (the task
says so, the ``strict`` profile, ``network=False``: the paper's offline rule; Harbor 0.26's docker
environment enforces ``network_mode = "no-network"`` only with its egress-control sidecar, an image
it pulls and a kernel feature, so the copy states ``"public"`` and the overlay gives
``network_mode: none``);
every capability dropped under ``strict`` (those given back added); ``no-new-privileges`` and the
runner's pid limit. Its container's writable layer is watched while it runs
(:class:`depthlab.engines._harbor_guard.DiskWatch`, the bound the local runner uses: task.toml's
``storage_mb``, else the default) and killed past it; the trial is then recorded as the local
runner records it (:func:`disk_verdict`).

The replays handed over in one call run in one Harbor process (:data:`BATCH_RUNNER`, Harbor's own
``Trial`` as ``harbor trials start`` runs one, ``concurrency`` at a time as Harbor's own job runs
``n_concurrent_trials``), so Harbor starts once per batch, not once per replay, and the replays
overlap their waits; each replay is its own trial in its own containers, so its verdict does not
depend on which ran beside it. ``batch=False`` runs one ``harbor trials start`` after another.
Every trial goes into the one ``depthlab-check`` job the local engine writes too (``trials_dir``),
named from the task, the replay's key and the job folder (the name is its Compose project's, so two
checks of one task on one Docker host never share one), and writes its own ``result.json`` when it
ends; its ``config.json`` holds the key and the original task's checksum in ``agent.kwargs``, which
is how :class:`depthlab.checks.replay.Replayer` finds the replays a killed check finished (a batch
killed half-way keeps the trials it finished; the Harbor process dies with depthlab). Harbor's
output is appended to ``depthlab-harbor.log`` in the job folder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from depthlab._atomic import write_text
from depthlab._checks import check_positive_int
from depthlab._defaults import DEFAULT_STORAGE_MB
from depthlab.engines._harbor_guard import (
    DISK_NOTE,
    HARBOR_RESULT,
    HARBOR_SIDE,
    DiskWatch,
    compose_project,
    live_projects,
    remove_projects,
)
from depthlab.engines.replays import OnTrial, ReplayRequest
from depthlab.engines.rounds import EngineError
from depthlab.io import harbor_writer
from depthlab.io.harbor import read_trial_result, record_exception
from depthlab.io.harbor_task import read_config, write_config
from depthlab.runner.container import ContainerLimits
from depthlab.runner.output import JobDir
from depthlab.runner.profiles import RunSettings, limits_for
from depthlab.runner.task import TaskSpec

if TYPE_CHECKING:  # the engine hands its checked command over (engines.harbor imports this module)
    from depthlab.engines.harbor import HarborCommand

#: The agent Harbor imports for a replay (``depthlab/engines/harbor_side/depthlab_replay.py``).
REPLAY_AGENT = "depthlab_replay:ReplayAgent"
#: Under the jobs folder: the task copies the replays run on.
TASKS_DIR = "depthlab-check-tasks"
#: How long ``docker compose down`` waits after SIGTERM before it kills a replay's ``main`` container.
#: Harbor's ``main`` runs ``sh -c "sleep infinity"`` as pid 1, which ignores SIGTERM, and in a replay it
#: still ran at the end: Docker's default of 10 s was 10 s of idle time per replay, after its verifier
#: was done and its files collected, so the wait changes nothing a replay records. (The measure engine's
#: trials and a plain ``harbor run -a oracle`` stopped within a second without it.)
STOP_GRACE_PERIOD = "1s"
#: Under the task copies: the Compose overlays of the replays' containers, one per profile and bounds
#: (``<prefix><digest>.json``): no network, the profile's capabilities, the pid limit.
OVERLAY_PREFIX = "replay-compose-"
#: In Harbor's side folder: the script running a batch of trials in one Harbor process.
BATCH_RUNNER = "depthlab_trials.py"
#: How often the disk watch looks at the running replay's container (seconds).
DISK_INTERVAL_SEC = 2.0
#: In the job folder: Harbor's output for every replay (a file: a folder without result.json is a lost trial).
LOG_FILE = "depthlab-harbor.log"


class HarborReplays:
    """The Harbor engine's replays (module docstring), made by :meth:`depthlab.engines.HarborEngine.replays`.

    Parameters
    ----------
    jobs_dir : Path
        The jobs folder; the task copies go to its :data:`TASKS_DIR`.
    harbor : HarborCommand
        The checked Harbor command.
    env : mapping
        The Harbor child's environment (``PYTHONPATH`` naming the side folder).
    settings : RunSettings, optional
        The runner's (the profile, the capabilities given back, the pid limit, the disk bound, the
        network: the task's own unless ``network=False``), applied as on the local engine.
    batch : bool, default True
        Every request of one call in one Harbor process (:data:`BATCH_RUNNER`); False: one
        ``harbor trials start`` each, one after another (the baseline of ``tests/bench/bench_checks_engines.py``).
    concurrency : int, default 2
        Trials at once in a batch (``batch``).
    preexec : callable, optional
        Run in the Harbor child before exec (the engine's: die with depthlab).

    Raises
    ------
    EngineError
        When the Python of Harbor's venv cannot be found (``batch``).
    """

    def __init__(
        self,
        jobs_dir: Path,
        harbor: HarborCommand,
        env: Mapping[str, str],
        settings: RunSettings | None = None,
        *,
        batch: bool = True,
        concurrency: int = 2,
        preexec: Callable[[], None] | None = None,
    ) -> None:
        check_positive_int(concurrency, "concurrency", "HarborReplays")
        self.concurrency = concurrency
        self.harbor = harbor
        self.python = harbor_python(harbor) if batch else None
        self.settings = settings or RunSettings()
        self.env = dict(env)
        self.copies = Path(jobs_dir).absolute() / TASKS_DIR
        self.preexec = preexec

    def __call__(self, requests: Sequence[ReplayRequest], job: JobDir, on_trial: OnTrial | None = None) -> list[Path]:
        trials = [_prepare_trial(request, job, self.copies, self.settings) for request in requests]
        job.n_planned += len(trials)
        bounds = {trial.dir.name.rsplit("__", 1)[0]: trial.storage_mb for trial in trials}
        ended = _Ended(trials, on_trial)
        if self.python is not None:
            configs = [str(trial.config) for trial in trials]
            runner = [*self.python, str(HARBOR_SIDE / BATCH_RUNNER), "--concurrency", str(self.concurrency)]
            self._run([*runner, *configs], job, bounds, ended)
        else:
            for trial in trials:
                self._run([*self.harbor.argv, "trials", "start", "--config", str(trial.config)], job, bounds, ended)
        job.update_result()
        for trial in trials:
            if not (trial.dir / "result.json").is_file():
                tail = (job.path / LOG_FILE).read_text(encoding="utf-8", errors="replace").strip().splitlines()[-15:]
                raise EngineError(
                    f"Harbor wrote no result for the replay {trial.request.key!r} of {trial.request.task.name}; "
                    f"its output is in {job.path / LOG_FILE}:\n" + "\n".join(tail)
                )
            disk_verdict(trial.dir)
        ended.check()
        return [trial.dir for trial in trials]

    def close(self) -> None:
        """Nothing kept: Harbor's trials remove their containers and images (``delete``)."""

    def _run(self, argv: list[str], job: JobDir, bounds: Mapping[str, int | None], ended: _Ended) -> int:
        """Run one Harbor process for ``job``'s replays, its output appended to the log, the disk watched; its exit.

        The process is killed with depthlab (``kill -9`` included, through ``preexec``): a batch must
        not run on beside a resumed check; what its running trial left is removed when that replay
        runs again."""
        with (job.path / LOG_FILE).open("a", encoding="utf-8") as log:
            log.write(f"$ {' '.join(argv)}\n")
            log.flush()
            process = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                preexec_fn=self.preexec,
            )
            watch = DiskWatch(job.path, bounds, interval=DISK_INTERVAL_SEC)
            try:
                while process.poll() is None:
                    watch.check()
                    ended.check()
                    time.sleep(0.2)
            except BaseException:  # interrupted: the batch stops with the check
                process.kill()
                process.wait()
                raise
        return process.returncode


@dataclasses.dataclass(frozen=True)
class _Trial:
    """One replay made ready for Harbor: its request, trial folder, config file and disk bound (MB)."""

    request: ReplayRequest
    dir: Path
    config: Path
    storage_mb: int


def _prepare_trial(request: ReplayRequest, job: JobDir, copies: Path, settings: RunSettings) -> _Trial:
    """Write the replay's trial config (its leftovers of a killed run removed first)."""
    task = request.task
    copy = replay_task(task, request.upto, copies)
    # the name is the replay's in this job (a killed replay run again finds what it left), and differs between
    # jobs folders: it names the trial's Compose project, which a check of the same task elsewhere on this
    # Docker host must not take for its own leftover
    identity = f"{job.path.absolute()}\0{task.checksum}\0{request.key}"
    name = f"{task.path.name[:40]}__{hashlib.sha256(identity.encode()).hexdigest()[:10]}"
    trial_dir = job.path.absolute() / name
    if trial_dir.exists():  # a trial Harbor left without a result (the Replayer removes those at start)
        shutil.rmtree(trial_dir)
    _remove_leftover_project(name)
    limits = limits_for(task, settings)
    kwargs = {"replay": request.key, "task_checksum": task.checksum, "steps": _plan_steps(task, request)}
    config = harbor_writer.trial_config(
        harbor_writer.task_config(copy, None),
        name,
        job.path.absolute(),
        harbor_writer.agent_config(None, None, kwargs, import_path=REPLAY_AGENT),
        job_id=job.id,
        environment=harbor_writer.environment_config(
            "docker", extra_docker_compose=[str(profile_overlay(copies, limits))]
        ),
    )
    config_path = copies / "configs" / f"{name}.json"
    config_path.parent.mkdir(parents=True, exist_ok=True)
    harbor_writer.write_json(config_path, config)
    return _Trial(request, trial_dir, config_path, limits.storage_mb or DEFAULT_STORAGE_MB)


class _Ended:
    """Calls ``on_trial`` once for each trial of a batch as its ``result.json`` appears (the progress)."""

    def __init__(self, trials: Sequence[_Trial], on_trial: OnTrial | None) -> None:
        self.waiting = list(trials) if on_trial is not None else []
        self.on_trial = on_trial

    def check(self) -> None:
        for trial in [trial for trial in self.waiting if (trial.dir / "result.json").is_file()]:
            self.waiting.remove(trial)
            if self.on_trial is not None:
                self.on_trial(trial.request, trial.dir)


def disk_verdict(trial_dir: Path) -> bool:
    """Record a trial the disk watch stopped as the local runner records it; whether it was one.

    The local runner stops a container past its disk bound and records ``RewardFileNotFoundError``
    ("The verifier could not start: ..."), a fail with its cause; Harbor records whatever the killed
    container made of its run. So the trial's result gets the local runner's exception, as
    :func:`depthlab.engines._harbor_guard.judge_trials` records its verdicts (Harbor's own result kept
    beside it in :data:`depthlab.engines._harbor_guard.HARBOR_RESULT`); a multi-step trial's steps keep
    Harbor's own exceptions (the rows' outcomes are the same: a stopped step neither passes nor hangs).
    """
    note = trial_dir / DISK_NOTE
    if not note.is_file() or (trial_dir / HARBOR_RESULT).exists():
        return False
    read = read_trial_result(trial_dir / "result.json")
    if isinstance(read, str):  # no result to record it in: the replay is reported as lost
        return False
    cause = note.read_text(encoding="utf-8").strip()
    info = harbor_writer.exception_info(
        "RewardFileNotFoundError", f"The verifier could not start: {cause}", "", harbor_writer.utc_now()
    )
    record_exception(read, info, drop_rewards=True, keep_original=trial_dir / HARBOR_RESULT)
    return True


def harbor_python(harbor: HarborCommand) -> tuple[str, ...]:
    """How to call the Python of Harbor's venv: the ``python`` beside its ``harbor`` script, else its interpreter.

    Examples
    --------
    >>> from depthlab.engines.harbor import HarborCommand
    >>> harbor_python(HarborCommand(("uv", "run", "harbor"), "0.26.0"))
    ('uv', 'run', 'python')
    """
    *runner, script = harbor.argv
    if runner:  # a launcher (``uv run harbor``): the same launcher's python
        return (*runner, "python")
    beside = Path(script).with_name("python")
    if beside.is_file():
        return (str(beside),)
    try:
        with open(script, "rb") as handle:
            first = handle.readline(4096).decode(errors="replace")
    except OSError:
        first = ""
    if first.startswith("#!") and "python" in first:
        return tuple(first[2:].split())
    raise EngineError(f"the Python of Harbor's venv was not found beside {script} nor in its first line")


def _remove_leftover_project(trial_name: str) -> None:
    """Remove the Compose project (containers, networks, image) a killed replay of this name left.

    ``kill -9`` gives Harbor no chance to run ``docker compose down``; the trial's name is the
    replay's (deterministic), so the replay run again finds what its killed run left."""
    project = compose_project(f"{trial_name}__env")
    if project in live_projects():  # a container or a network of it is left
        remove_projects([project])


def profile_overlay(copies: Path, limits: ContainerLimits) -> Path:
    """Write (once) the Compose overlay of a replay's ``main`` service under ``limits``; its path.

    No network unless ``limits`` give one; the profile's capabilities (every one dropped under
    ``strict``, the ones given back added), ``no-new-privileges`` and the pid limit, as the local
    runner's container has them; a stop grace period of :data:`STOP_GRACE_PERIOD`.

    Examples
    --------
    >>> import tempfile
    >>> from depthlab.runner.container import ContainerLimits
    >>> path = profile_overlay(Path(tempfile.mkdtemp()), ContainerLimits(1.0, 512, profile="strict", network=False))
    >>> json.loads(path.read_text())["services"]["main"]["cap_drop"]
    ['ALL']
    """
    main: dict[str, Any] = {
        **({} if limits.network else {"network_mode": "none"}),
        "security_opt": ["no-new-privileges:true"],
        "pids_limit": limits.pids_limit,
        "stop_grace_period": STOP_GRACE_PERIOD,
    }
    if limits.cap_drop:
        main["cap_drop"] = list(limits.cap_drop)
    if limits.cap_add:
        main["cap_add"] = list(limits.cap_add)
    text = json.dumps({"services": {"main": main}}, indent=2) + "\n"
    path = copies / f"{OVERLAY_PREFIX}{hashlib.sha256(text.encode()).hexdigest()[:12]}.json"
    if not path.is_file():
        copies.mkdir(parents=True, exist_ok=True)
        write_text(path, text)
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

    Its network is stated ``public``: the replay's Compose overlay takes it away when the replay has
    none (module docstring).

    Examples
    --------
    >>> import tempfile
    >>> from depthlab.runner.task import load_task
    >>> from depthlab.simulate.checks import write_planted_tasks
    >>> tasks = write_planted_tasks(tempfile.mkdtemp(), "debian:12")
    >>> copy = replay_task(load_task(tasks["clean"]), 1, Path(tempfile.mkdtemp()))
    >>> config = read_config(copy / "task.toml")
    >>> [step for step in config["steps"]], config["environment"]["network_mode"]
    ([{'name': 'make'}], 'public')
    """
    folder = root / f"{task.path.name}__{task.checksum[:12]}__{upto or 'all'}"
    if (folder / "task.toml").is_file():
        return folder.absolute()
    config = read_config(task.path / "task.toml", decode_errors="strict")
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
    write_config(partial / "task.toml", config)
    partial.rename(folder)  # whole or absent: a killed copy is made again
    return folder.absolute()
