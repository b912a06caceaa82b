"""The oracle preflight: each task's reference solution, once, under the settings the models will get.

A task whose own ``solution/solve.sh`` does not pass under the chosen settings (its verifier
installs a tool from the internet and the network is off, the image does not build, the
verifier is broken) would read as *failed* for every model: D would come out "unsolved" and
nothing would say why. The preflight finds those tasks before any model is paid for.

How to call it
--------------
::

    from depthlab.runner.preflight import preflight
    from depthlab.runner.profiles import RunSettings

    report = preflight(["tasks/a", "tasks/b"], jobs_dir="out/preflight", settings=RunSettings())
    print(report.render())          # the table of tasks left out, and one summary line
    runnable = report.passed_tasks  # the TaskSpecs to run models on
    if report.all_failed: ...       # every task failed: exit non-zero

``tasks`` are task folders or :class:`~depthlab.runner.TaskSpec`; ``settings`` the
:class:`~depthlab.runner.profiles.RunSettings` the real trials will use (default: the
``harbor`` profile); ``limits`` (optional, ``task -> ContainerLimits``) replaces
``settings.limits`` exactly as in :func:`depthlab.runner.fill`. The oracle's trials are written
as one Harbor job, ``<jobs_dir>/preflight__oracle__<profile>``. Results are cached per task
checksum and settings (:meth:`RunSettings.key`) in ``cache_dir`` (default
``<jobs_dir>/.preflight-cache``): a task already checked under the same settings is not run
again. The settings include a digest of the values the task's ``${VAR}`` templates take from
this process's environment (:func:`depthlab.runner.verifier.host_env_digest`, as Harbor resolves
them): a changed value runs the task again; the values themselves are never written. Only valid
outcomes are cached (a pass, or a fail of the reference solution); an infrastructure failure (no
Docker, a failed pull) is tried again next time. An oracle trial whose grade could not be
checked (``VerifierCheckError``: an integrity check of the verifier's files could not run, as
under heavy load) is run again, :data:`CHECK_ATTEMPTS` in all; when it still cannot be checked
the task stays in, reported as not checked, never as a failing solution.

This signature is stable: ``depthlab fill`` and ``depthlab measure`` call it.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from depthlab import _atomic
from depthlab._checks import check_positive_int
from depthlab.io.harbor import TrialResultFile, read_model, read_trial_result
from depthlab.io.harbor_records import JobConfigRecord, TrialConfigRecord
from depthlab.io.status import VALID_EXCEPTIONS
from depthlab.runner.container import ContainerLimits, new_docker_client
from depthlab.runner.errors import UnsupportedTaskError
from depthlab.runner.leftovers import remove_live_containers
from depthlab.runner.multistep import run_task_trial
from depthlab.runner.oracle import OracleAgent
from depthlab.runner.output import JobDir, remove_incomplete_trials
from depthlab.runner.profiles import RunSettings
from depthlab.runner.task import TaskSpec, load_task
from depthlab.runner.verifier import host_env_digest

__all__ = ["PREFLIGHT_VERSION", "PreflightReport", "PreflightRow", "preflight", "unreached_step"]

#: Bumped when what the preflight checks changes, so that older cache entries are not reused.
PREFLIGHT_VERSION = 2

# what the verifier's output says when it lacked something these settings took away
_NEEDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        (
            "Temporary failure resolving",
            "Could not resolve",
            "Network is unreachable",
            "Failed to fetch",
            "Name or service not known",
            "Connection refused",
            "Could not connect",
            "getaddrinfo",
        ),
        "the network (it downloads at verification time; the 'strict' profile and --no-network turn it off)",
    ),
    (
        ("/var/lib/apt/lists/partial", "Permission denied", "Operation not permitted", "are you root?"),
        "root's capabilities (it installs packages; the 'strict' profile drops every capability)",
    ),
    (("command not found", "not found"), "a program the image lacks (it may install it at verification time)"),
)


# programs in tests/test.sh that install or download at verification time (TB2's install curl and uv)
_INSTALLERS = ("apt-get", "apt", "curl", "wget", "pip", "pip3", "uv", "uvx", "npm", "apk")


@dataclass(frozen=True)
class PreflightRow:
    """The preflight of one task.

    Attributes
    ----------
    task : str
        The task's name.
    path : str
        The task folder.
    passed : bool
        Whether the task stays in: its reference solution got full reward under the settings, or
        it has none to check (``checked`` False).
    reason : str
        Why it is left out, in words ('' when it passed; a note when it was not checked).
    verifier_tail : str
        The last lines of the verifier's output (or of the oracle's, when no verifier ran).
    reward : float or None
    exception : str or None
        The trial's recorded exception type.
    cached : bool
        Whether this row came from the cache (no container was started for it now).
    trial_dir : str or None
        The oracle's trial folder (None for a task that could not even load).
    checked : bool
        False for a task without ``solution/solve.sh``: nothing to check, the task stays in.
    """

    task: str
    path: str
    passed: bool
    reason: str
    verifier_tail: str
    reward: float | None = None
    exception: str | None = None
    cached: bool = False
    trial_dir: str | None = None
    checked: bool = True


@dataclass
class PreflightReport:
    """What the preflight found: one row per task, in the order given."""

    rows: list[PreflightRow] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    tasks: dict[str, TaskSpec] = field(default_factory=dict)  # path -> TaskSpec, for the tasks that loaded

    @property
    def failed(self) -> list[PreflightRow]:
        """The rows of the tasks left out."""
        return [row for row in self.rows if not row.passed]

    @property
    def passed_tasks(self) -> list[TaskSpec]:
        """The tasks whose reference solution passed (to run models on)."""
        return [self.tasks[row.path] for row in self.rows if row.passed and row.path in self.tasks]

    @property
    def all_failed(self) -> bool:
        """Whether there were tasks and none of them passed (the caller exits non-zero)."""
        return bool(self.rows) and not any(row.passed for row in self.rows)

    def summary(self) -> str:
        """One line: how many tasks pass their reference solution, under which profile."""
        n_cached = sum(row.cached for row in self.rows)
        n_ungraded = sum(not row.checked and row.exception == UNGRADED for row in self.rows)
        n_unchecked = sum(not row.checked for row in self.rows) - n_ungraded
        profile = self.settings.get("profile", "?")
        left_out = len(self.failed)
        line = (
            f"oracle preflight ({profile} profile): {len(self.rows) - left_out - n_unchecked - n_ungraded} of "
            f"{len(self.rows)} task(s) pass their reference solution"
        )
        line += f", {n_unchecked} have none (not checked)" if n_unchecked else ""
        if n_ungraded:
            line += f", {n_ungraded} could not be checked (an integrity check could not run; kept, checked again)"
        line += f"; {left_out} left out"
        return line + (f" ({n_cached} from the cache)" if n_cached else "")

    def render(self, *, width: int = 100) -> str:
        """The table of tasks left out (task, reason, last lines of the verifier's output) and the summary."""
        lines: list[str] = []
        for row in self.failed:
            lines.append(f"- {row.task}: {row.reason}")
            tail = row.verifier_tail.rstrip("\n")
            lines += [f"    | {line[:width]}" for line in tail.splitlines()] if tail else ["    | (no output)"]
        lines.append(self.summary())
        return "\n".join(lines)

    @classmethod
    def from_outcomes(
        cls, outcomes: Sequence[Any], *, settings: RunSettings | None = None, tail_lines: int = 12
    ) -> PreflightReport:
        """A report on oracle trials already run (``depthlab run --agent oracle``): why each one failed.

        ``outcomes`` are :class:`~depthlab.runner.TrialOutcome` of the oracle agent.
        """
        rows = []
        for outcome in outcomes:
            path, limits = _recorded(Path(outcome.trial_dir))
            rows.append(_row(outcome.task, path or str(outcome.trial_dir), outcome, tail_lines, limits))
        return cls(rows=rows, settings=(settings or RunSettings()).as_record())

    def to_frame(self) -> Any:
        """The rows as a polars DataFrame."""
        import polars as pl

        return pl.DataFrame([asdict(row) for row in self.rows], infer_schema_length=None)


def preflight(
    tasks: Sequence[TaskSpec | str | os.PathLike[str]],
    *,
    jobs_dir: str | os.PathLike[str],
    settings: RunSettings | None = None,
    limits: Callable[[TaskSpec], ContainerLimits] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    docker_client: Any = None,
    concurrency: int = 2,
    use_cache: bool = True,
    tail_lines: int = 12,
) -> PreflightReport:
    """Run each task's reference solution once under ``settings``; report which tasks cannot pass.

    Parameters
    ----------
    tasks : sequence of TaskSpec or path
        The tasks (folders, or loaded). A folder that does not load is a failed row.
    jobs_dir : path
        Where the oracle's job folder goes (``preflight__oracle__<profile>``).
    settings : RunSettings, optional
        The settings the real trials will use (default: the ``harbor`` profile).
    limits : callable, optional
        ``task -> ContainerLimits`` replacing ``settings.limits`` (as ``fill`` takes it).
    cache_dir : path, optional
        Where results are cached (default ``<jobs_dir>/.preflight-cache``).
    docker_client : docker.DockerClient, optional
        Defaults to ``docker.from_env()``.
    concurrency : int, default 2
        Oracle trials at once.
    use_cache : bool, default True
        Read cached results (they are written either way).
    tail_lines : int, default 12
        Lines of the verifier's output kept per failed task.

    Returns
    -------
    PreflightReport

    Examples
    --------
    >>> report = preflight(["tasks/hello"], jobs_dir="out/preflight")  # doctest: +SKIP
    >>> print(report.summary())  # doctest: +SKIP
    oracle preflight (harbor profile): 1 of 1 task(s) pass their reference solution; 0 left out
    """
    check_positive_int(concurrency, "concurrency", "preflight")
    check_positive_int(tail_lines, "tail_lines", "preflight")
    settings = settings or RunSettings()
    limits_of = limits or settings.limits
    report = PreflightReport(settings=settings.as_record())
    slots: list[PreflightRow | None] = []
    pending: list[tuple[int, TaskSpec, Path]] = []
    jobs_root = Path(jobs_dir)
    cache = Path(cache_dir) if cache_dir is not None else jobs_root / ".preflight-cache"
    for item in tasks:
        try:
            task = item if isinstance(item, TaskSpec) else load_task(item)
        except (UnsupportedTaskError, FileNotFoundError, ValueError) as error:
            path = str(item.path if isinstance(item, TaskSpec) else item)
            slots.append(PreflightRow(Path(path).name, path, False, f"the task does not load: {error}", ""))
            continue
        report.tasks[str(task.path)] = task
        if missing := task.missing_solution:
            note = f"not checked: the task has no {missing}"
            slots.append(PreflightRow(task.name, str(task.path), True, note, "", checked=False))
            continue
        entry = cache / f"{task.checksum[:32]}-{_key(task, settings, limits_of)}.json"
        cached = _read_cache(entry) if use_cache else None
        if cached is not None:
            slots.append(PreflightRow(**{**cached, "task": task.name, "path": str(task.path), "cached": True}))
            continue
        slots.append(None)
        pending.append((len(slots) - 1, task, entry))
    if pending:
        client = docker_client if docker_client is not None else new_docker_client()
        jobs_root.mkdir(parents=True, exist_ok=True)
        job_name = f"preflight__oracle__{settings.profile}"
        if (jobs_root / job_name).is_dir():
            remove_incomplete_trials(jobs_root / job_name)
        agent = OracleAgent()
        job = JobDir(jobs_root, job_name, _job_config(agent))
        job.n_planned = len(pending) + len(job.trial_results())
        cancel = threading.Event()

        def check(task: TaskSpec) -> PreflightRow:
            for _ in range(CHECK_ATTEMPTS):
                outcome = run_task_trial(
                    task, agent, job, docker_client=client, limits=limits_of(task), settings=settings, cancel=cancel
                )
                if outcome.exception != UNGRADED:
                    break
                job.n_planned += 1  # the oracle's trial again: its grade could not be checked
            return _row(task.name, str(task.path), outcome, tail_lines, limits_of(task))

        pool = concurrent.futures.ThreadPoolExecutor(max_workers=min(concurrency, len(pending)))
        try:
            futures = {pool.submit(check, task): (index, task, entry) for index, task, entry in pending}
            for future in concurrent.futures.as_completed(futures):
                index, task, entry = futures[future]
                try:
                    row = future.result()
                except Exception as error:  # a trial that could not even be recorded (a full disk)
                    row = PreflightRow(task.name, str(task.path), False, f"the oracle trial failed: {error}", "")
                slots[index] = row
                if row.exception in (None, *_CACHED_EXCEPTIONS):
                    _write_cache(entry, row)
        except KeyboardInterrupt:
            cancel.set()
            remove_live_containers()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=True)
            job.update_result(finished=True)
    report.rows = [row for row in slots if row is not None]
    return report


#: The exception of a trial whose grade could not be checked (an integrity check of the verifier's
#: files could not run): it says nothing of the reference solution.
UNGRADED = "VerifierCheckError"
#: Oracle trials run for one task while each ends :data:`UNGRADED`; after that the task is kept
#: unchecked (reported so, and not cached), never left out as a failing solution.
CHECK_ATTEMPTS = 2

# valid outcomes of the oracle (the loaders count them, io.status's rule): the same settings give them again
_CACHED_EXCEPTIONS = tuple(sorted(VALID_EXCEPTIONS))


def _row(name: str, path: str, outcome: Any, tail_lines: int, limits: ContainerLimits | None = None) -> PreflightRow:
    trial_dir = Path(outcome.trial_dir)
    step = getattr(outcome, "failed_step", None)
    # a multi-step trial: the files of its first failed step
    where = trial_dir / "steps" / step.split(" ", 1)[1] if step else trial_dir
    tail = _tail(where / "verifier" / "test-stdout.txt", tail_lines)
    if not tail:
        tail = _tail(where / "agent" / "oracle.txt", tail_lines)
    reward = outcome.reward
    if outcome.exception == UNGRADED:
        first = (outcome.message or "").strip().splitlines()[:1]
        return PreflightRow(
            task=name,
            path=path,
            passed=True,
            reason=(
                f"not checked: the oracle's grade could not be checked in {CHECK_ATTEMPTS} trials (an integrity "
                f"check of the verifier's files could not run: {first[0][:300] if first else 'no message'}); "
                "the task stays in and is checked again next time"
            ),
            verifier_tail=tail,
            exception=outcome.exception,
            trial_dir=str(trial_dir),
            checked=False,
        )
    passed = outcome.status == "pass"
    reason = ""
    if passed and (unreached := unreached_step(_read_result(trial_dir), path)):
        return PreflightRow(
            task=name, path=path, passed=False, reason=unreached, verifier_tail=tail, reward=reward,
            exception=outcome.exception, trial_dir=str(trial_dir),
        )  # fmt: skip
    if not passed and step:
        index, step_name = step.split(" ", 1)
        reason = f"step {index} ({step_name!r}) is the first that fails: "
    if not passed:
        if outcome.exception == "NonZeroAgentExitCodeError":
            reason += f"the reference solution failed ({outcome.message})"
        elif outcome.exception:
            reason += f"{outcome.exception}: {(outcome.message or '').strip().splitlines()[0][:300]}"
        else:
            shown = "no reward" if reward is None else f"reward {reward:g}"
            reason += f"the reference solution got {shown}, not 1: the verifier does not pass it"
        script = _read(Path(path) / "tests" / "test.sh") if limits is not None else ""
        if need := _need(tail, script, limits):
            reason += f"; the verifier needs {need}"
    return PreflightRow(
        task=name,
        path=path,
        passed=passed,
        reason=reason,
        verifier_tail=tail,
        reward=reward,
        exception=outcome.exception,
        trial_dir=str(trial_dir),
    )


def unreached_step(result: TrialResultFile | None, task_dir: str | os.PathLike[str]) -> str | None:
    """Why an oracle trial shows a step of the task that no run reaches (one line), or None.

    The reference solution is the best run a task has: when its trial stops at a step's
    ``min_reward`` gate (a gate above the reward the step's tests gave it, such as ``min_reward =
    2.0`` where a pass is 1), the steps after it never run in any trial, and D would be measured
    on the steps before. Both engines' preflights apply this rule to the oracle's ``result.json``
    (Harbor's format, which both write) and the task's declared steps.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> task = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (task / "task.toml").write_text('[[steps]]\\nname = "a"\\nmin_reward = 2.0\\n[[steps]]\\nname = "b"\\n')
    >>> from depthlab.io.harbor import read_trial_result
    >>> step = {"step_name": "a", "verifier_result": {"rewards": {"reward": 1.0}}}
    >>> _ = (task / "result.json").write_text(json.dumps({"step_results": [step]}))
    >>> print(unreached_step(read_trial_result(task / "result.json"), task))
    step 2 ('b') is never reached: the reference solution got reward 1 in step 1 ('a'), below its min_reward 2
    """
    from depthlab.io.harbor_task import TaskFormatError, step_gates

    if result is None or result.result.exception_info is not None:
        return None  # a trial that stopped on an exception is named by that exception
    ran = result.steps
    path = Path(task_dir) / "task.toml"
    try:
        gates, _ = step_gates(path)
    except TaskFormatError:
        return None
    if not ran or len(ran) >= len(gates):
        return None
    last = ran[-1]
    if last.exception_info is not None:
        return None  # the step's own exception stopped the run: named as the step that fails
    index = len(ran)
    name, min_reward, min_rewards = gates[index - 1]
    rewards = (last.verifier_result.rewards if last.verifier_result is not None else None) or {}
    thresholds = {"reward": min_reward} if min_reward is not None else dict(min_rewards or {})
    missed = [
        (key, threshold, rewards.get(key))
        for key, threshold in thresholds.items()
        if not isinstance(rewards.get(key), int | float) or rewards[key] < threshold
    ]
    why = ", ".join(
        f"{'no ' + key if got is None else ('reward' if key == 'reward' else key) + f' {got:g}'}"
        + f" in step {index} ({name!r}), below its min_reward {threshold:g}"
        for key, threshold, got in missed
    )
    shown = f"the reference solution got {why}" if why else f"the trial stopped after step {index} ({name!r})"
    return f"step {index + 1} ({gates[index][0]!r}) is never reached: {shown}"


def _read_result(trial_dir: Path) -> TrialResultFile | None:
    read = read_trial_result(trial_dir / "result.json")
    return None if isinstance(read, str) else read


def _need(tail: str, script: str = "", limits: ContainerLimits | None = None) -> str:
    """What the verifier lacked, from its output and, when the settings took it away, from tests/test.sh.

    Examples
    --------
    >>> _need("Err:1 http://deb.debian.org bookworm InRelease\\n  Temporary failure resolving 'deb.debian.org'")
    "the network (it downloads at verification time; the 'strict' profile and --no-network turn it off)"
    >>> _need("1 passed")
    ''
    """
    needs = [need for patterns, need in _NEEDS if any(pattern in tail for pattern in patterns)]
    if limits is not None and script:
        installs = [
            tool for tool in _INSTALLERS if re.search(rf"(^|[\s;&|(]){re.escape(tool)}(?=[\s;&|)]|$)", script, re.M)
        ]
        if installs and not limits.network and _NEEDS[0][1] not in needs:
            needs.insert(0, _NEEDS[0][1] + f"; tests/test.sh runs {', '.join(installs)}")
        if "apt-get" in installs and limits.profile == "strict" and _NEEDS[1][1] not in needs:
            needs.append(_NEEDS[1][1])
    return " and ".join(dict.fromkeys(needs))


def _recorded(trial_dir: Path) -> tuple[str | None, ContainerLimits | None]:
    """The task folder and the container limits a trial's config.json records (None where it cannot say)."""
    config = read_model(trial_dir / "config.json", TrialConfigRecord)
    if not isinstance(config, TrialConfigRecord) or config.task.path is None:
        return None, None
    # environment.kwargs holds depthlab's own record of the limits (ContainerLimits.as_record), not Harbor's keys
    kwargs = config.environment.kwargs
    try:
        limits = ContainerLimits(
            cpus=kwargs["cpus"],
            memory_mb=kwargs["memory_mb"],
            network=kwargs["network_mode"] != "none",
            profile=kwargs.get("profile", "harbor"),
        )
    except (ValueError, KeyError, TypeError):
        return None, None
    return config.task.path, limits


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return ""


def _tail(path: Path, lines: int) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(handle.tell() - 64 * 1024, 0))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _key(task: TaskSpec, settings: RunSettings, limits_of: Callable[[TaskSpec], ContainerLimits]) -> str:
    import hashlib

    record: dict[str, Any] = {
        "version": PREFLIGHT_VERSION,
        "limits": limits_of(task).as_record(),
        "force_build": settings.force_build,
    }
    if host := host_env_digest(task.path):  # the values its ${VAR} templates take now (a digest, never a value)
        record["host_env"] = host
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:16]


def _read_cache(entry: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    fields = set(PreflightRow.__dataclass_fields__)
    return value if isinstance(value, dict) and set(value) == fields else None


def _write_cache(entry: Path, row: PreflightRow) -> None:
    with contextlib.suppress(OSError):  # a cache that cannot be written only costs a rerun
        _atomic.write_text(entry, json.dumps(asdict(row), indent=1))


def _job_config(agent: OracleAgent) -> JobConfigRecord:
    from depthlab.io import harbor_writer

    return harbor_writer.job_config("", "", [harbor_writer.agent_config(agent.name, None, agent.config_kwargs())])
