"""The verifier: copy ``tests/`` in fresh, run ``tests/test.sh``, check nothing else touched it, read the reward.

Harbor's rules: ``/logs/verifier/reward.txt`` (one number) wins; else ``reward.json`` (a flat
object of numbers, kept whole: one key per segment or per test); else ``RewardFileNotFoundError``.
An empty reward.txt is ``RewardFileEmptyError``, an unparsable one ``VerifierOutputParseError``.

A reward the agent cannot forge
-------------------------------
The agent runs as root in the same container, and its background processes still run while
the tests do (a task may ask it to leave a server running). So, before the tests run:

1. ``/tests`` and ``/logs/verifier`` are deleted (whatever the agent put there is gone);
2. the Docker daemon creates ``/logs/verifier`` owned by :data:`VERIFIER_UID` and group
   :data:`VERIFIER_GID`, mode 0770, and copies ``tests/`` in fresh (under ``strict`` owned by
   :data:`VERIFIER_UID` too, so the agent, a root without capabilities, can neither write nor
   delete there); a step's ``/tests`` is the task's shared ``tests/`` with the step's own over
   it, the step's file winning on a name clash (Harbor's order, :attr:`TaskSpec.tests_folders`);
3. ``tests/test.sh`` runs as the image's user with the primary group :data:`VERIFIER_GID`; its
   output streams to ``test-stdout.txt``, cut at :data:`OUTPUT_LIMIT_BYTES`.

Afterwards, in both profiles, :mod:`depthlab.runner.integrity` checks that ``/tests`` (its
content, read through the daemon, and the inode and change time of every entry) and the
verifier's folder (its inode, its owner, not a link) are what the runner made, and that no
reward file changes after the tests ended: any difference makes the trial *invalid*
(``VerifierTamperedError``) with what changed. A check that could not run (its snapshot printed
nothing :data:`SNAPSHOT_ATTEMPTS` times over) makes the trial invalid as ungraded
(``VerifierCheckError``), never tampered: nothing was seen to change. Under ``strict`` only files of group
:data:`VERIFIER_GID` (which no process of the agent can create) are copied out; under
``harbor`` root can write anywhere, so the checks above are what stands between a forger and
its pass. Files over :data:`FILE_LIMIT_BYTES` are cut (``copy-notes.txt`` lists what was left
out or cut). The agent can still change programs the tests call, as in Harbor: the tests grade
the container the agent leaves.

A broken container is the agent's fail
--------------------------------------
A verifier that cannot start because the agent broke the container (``/bin/sh`` removed, the
pid limit filled by a fork bomb) is recorded as ``RewardFileNotFoundError`` (a valid trial with
no reward, so a fail) whose message gives the true cause, never as an infrastructure failure.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import secrets
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from depthlab.io.task_rules import HOST_TEMPLATE
from depthlab.runner.container import CopyReport, TaskContainer, layered, script_command
from depthlab.runner.errors import (
    AddTestsDirError,
    ContainerExitedError,
    RewardFileEmptyError,
    RewardFileNotFoundError,
    VerifierCheckError,
    VerifierOutputParseError,
    VerifierTamperedError,
    VerifierTimeoutError,
)
from depthlab.runner.integrity import (
    Snapshot,
    archive_digest,
    compare_digests,
    compare_snapshots,
    host_digest,
    parse_snapshot,
    snapshot_command,
)
from depthlab.runner.output import write_text
from depthlab.runner.task import TaskSpec

_T = TypeVar("_T")

#: Owner of the verifier's folder: a user no process in the container runs as.
VERIFIER_UID = 48_271
#: Group of the verifier's folder and the verifier's primary group.
VERIFIER_GID = 48_271
#: Bytes of the tests' output kept in ``test-stdout.txt`` (head and tail, the rest counted).
OUTPUT_LIMIT_BYTES = 8 << 20
#: Largest file copied out of ``/logs/verifier`` whole (longer ones are cut).
FILE_LIMIT_BYTES = 16 << 20
#: Largest reward file read.
REWARD_FILE_LIMIT_BYTES = 1 << 20
#: Tries of the identity snapshot before its check is reported as one that could not run.
SNAPSHOT_ATTEMPTS = 3

# a plain decimal number: no "1_0" (Python reads 10), no "nan" or "inf"
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")

# an agent's process may still be writing there: a few rounds (the folder's group check covers what is left)
_RESET = (
    'for round in 1 2 3 4 5; do for d in /tests /logs/verifier; do [ -e "$d" ] || [ -L "$d" ] || continue; '
    'chmod -R u+rwx "$d" 2>/dev/null; rm -rf "$d" 2>/dev/null; done; '
    "[ -e /tests ] || [ -e /logs/verifier ] || break; done; "
    # /logs itself must be a folder, not a link to one the agent keeps writing to
    "if [ -L /logs ] || { [ -e /logs ] && [ ! -d /logs ]; }; then rm -f /logs; fi; mkdir -p /logs"
)


def verify(box: TaskContainer, task: TaskSpec, verifier_dir: Path, *, timeout_sec: float) -> dict[str, float]:
    """Run the task's tests in ``box``; copy ``/logs/verifier`` to ``verifier_dir``; return the rewards.

    Raises
    ------
    VerifierTimeoutError, AddTestsDirError, RewardFileNotFoundError, RewardFileEmptyError,
    VerifierOutputParseError, VerifierTamperedError

    Examples
    --------
    >>> verify(box, task, Path("trial/verifier"), timeout_sec=600)  # doctest: +SKIP
    {'reward': 1.0}
    """
    tests = task.tests_folders  # a step's: the task's shared tests/ with the step's over it, as Harbor's
    try:
        script = layered(tests).get("test.sh")
    except ValueError as error:  # a file over a folder: Harbor's docker cp refuses it too
        raise AddTestsDirError(f"The task {task.name!r}: its tests cannot be laid in /tests: {error}") from None
    if script is None or not script.is_file():
        raise AddTestsDirError(f"The task {task.name!r} has no tests/test.sh")
    strict = box.limits.profile == "strict"
    nonce = secrets.token_hex(8)
    _prepare(box, tests, strict)
    before = _snapshot(box, nonce)
    stdout = verifier_dir / "test-stdout.txt"
    staged = verifier_dir.with_name(verifier_dir.name + ".test-stdout.txt")  # the verifier may write its own
    user = f"{box.image_user}:{VERIFIER_GID}"
    # the task's own variables as Harbor gives them; bytecode caches then go to a private folder
    # (after the task's, so no task.toml can turn it off): a legitimate run adds nothing to /tests
    environment = {
        **verifier_environment(task),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPYCACHEPREFIX": f"/tmp/.depthlab-pycache-{nonce}",
    }
    checks = _Checks()
    report: CopyReport | None = None
    problems: list[str] = []
    try:
        box.exec_to_file(
            script_command("/tests/test.sh"),
            staged,
            timeout=timeout_sec,
            user=user,
            limit_bytes=OUTPUT_LIMIT_BYTES,
            environment=environment,
        )
    except TimeoutError:
        raise VerifierTimeoutError(f"Verifier execution timed out after {timeout_sec:g} seconds") from None
    except ContainerExitedError as error:
        _agent_broke(box, f"the tests could not start ({error})")
        raise
    finally:
        # each check on its own: one that raises is recorded (and stops the grading below), never
        # skipped with the others; while the tests' own error propagates, it is not replaced by a
        # check's (a dead container must not hide the verifier's own error)
        problems += checks.run("the check of /tests and its folder", [], _tampering, box, tests, before, nonce)
        report = checks.run(
            "the copy of /logs/verifier",
            None,
            box.get_directory,
            "/logs/verifier",
            verifier_dir,
            file_limit_bytes=FILE_LIMIT_BYTES,
            only_gid=VERIFIER_GID if strict else None,
        )
        # after a copy that failed too: a writer racing the copy truncates its archive, and the
        # late write is then the cause to name, not the copy's failure
        problems += checks.run("the check for writes after the tests", [], _late_writes, box)
        if report is not None:
            problems += _foreign_writers(report)
        if staged.exists():
            verifier_dir.mkdir(parents=True, exist_ok=True)
            staged.replace(stdout)
    if report is not None and report.notes():
        write_text(verifier_dir / "copy-notes.txt", report.notes())
    if before.problem:  # e.g. an image without stat: the content checks through the daemon still ran
        write_text(
            verifier_dir / "integrity-notes.txt",
            f"the inode and change-time check could not run before the tests ({before.problem}); "
            "the content of /tests and the verifier's folder were still checked through the Docker daemon\n",
        )
    if report is not None and report.owner != (VERIFIER_UID, VERIFIER_GID):
        problems.insert(
            0,
            f"/logs/verifier was replaced while the tests ran (its owner is {report.owner}, not the verifier's "
            f"{(VERIFIER_UID, VERIFIER_GID)})",
        )
    if problems or checks.failed:
        for name in ("reward.txt", "reward.json"):  # not known to be the verifier's alone: never read as a grade
            with contextlib.suppress(OSError):
                (verifier_dir / name).rename(verifier_dir / f"{name}.untrusted")
    if problems:
        raise VerifierTamperedError(
            "The verifier's files were changed by another process while the tests ran (the trial is invalid): "
            + "; ".join(problems[:10] + checks.failed)
        )
    if checks.failed:
        raise VerifierCheckError(
            "A check of the verifier's files could not run, so the reward is not graded (the trial is invalid): "
            + "; ".join(checks.failed)
        )
    try:
        return read_rewards(verifier_dir)
    except RewardFileNotFoundError:
        if cause := box.at_pid_limit():  # the tests ran but could not start their programs
            raise RewardFileNotFoundError(f"The verifier wrote no reward: {cause}") from None
        raise


def verifier_environment(task: TaskSpec, host: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables ``task``'s tests run with: ``[verifier.env]`` (a step's over the task's), resolved as Harbor does.

    A value that is wholly ``${VAR}`` takes ``VAR`` from ``host`` (default: this process's
    environment), ``${VAR:-default}`` falls back to ``default``; any other value is taken as it is.
    A ``${VAR}`` unset with no default is Harbor's ``ValueError``, raised before the tests run (the
    trial is invalid: the machine, not the model, lacked it). A key an LLM-graded verifier needs
    reaches the tests' process only, never a file.

    Examples
    --------
    >>> task = TaskSpec(Path("t"), "t", "", 60.0, 60.0, 60.0, 1.0, 512, None, None,
    ...                 verifier_env={"A": "${X:-1}", "B": "${Y}", "C": "c ${Y}"})
    >>> verifier_environment(task, host={"Y": "y"})
    {'A': '1', 'B': 'y', 'C': 'c ${Y}'}
    """
    return resolve_env(task.verifier_env, f"The task {task.name!r}: [verifier.env]", host)


def resolve_env(values: Mapping[str, str], where: str, host: Mapping[str, str] | None = None) -> dict[str, str]:
    """A task.toml ``env`` table with its ``${VAR}`` and ``${VAR:-default}`` values taken from ``host``, as Harbor
    takes them (:func:`verifier_environment`); ``where`` begins the error of a variable that is unset.

    Examples
    --------
    >>> resolve_env({"A": "${X:-1}", "B": "${Y}"}, "[environment.env]", host={"Y": "y"})
    {'A': '1', 'B': 'y'}
    """
    host = os.environ if host is None else host
    resolved = {}
    for key, value in values.items():
        template = HOST_TEMPLATE.fullmatch(value)
        if template is None:
            resolved[key] = value
        elif template["name"] in host:
            resolved[key] = host[template["name"]]
        elif template["default"] is not None:
            resolved[key] = template["default"]
        else:
            raise ValueError(
                f"{where} {key} needs the variable {template['name']!r}, which is not set in the environment "
                "depthlab runs in"
            )
    return resolved


#: The task.toml tables whose ``${VAR}`` templates Harbor resolves from the host (its ``resolve_env_vars``):
#: the tests', the container's and the reference solution's variables; each step's tests' too.
HOST_ENV_TABLES: tuple[str, ...] = ("verifier.env", "environment.env", "solution.env")


def host_env_digest(task_dir: str | os.PathLike[str], host: Mapping[str, str] | None = None) -> str:
    """A digest of the values ``task_dir``'s task.toml takes from ``host`` through ``${VAR}`` templates.

    The same task runs differently when a value it takes from the host changes (an LLM judge's model
    in ``[verifier.env]``, a flag in ``[environment.env]``), yet its checksum (its files) is the same;
    a cache of its runs (the oracle preflight's) must key on this digest too. Only a digest of every
    value together is returned, so a key (``${OPENAI_API_KEY}``) never reaches the disk; an unset
    variable with no default counts as unset. "" when task.toml has no template (or cannot be read:
    its run then fails on its own), so such a task's key is its checksum alone.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> task = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (task / "task.toml").write_text('[verifier.env]\\nJUDGE = "${JUDGE_MODEL:-gpt}"\\nMODE = "fast"\\n')
    >>> host_env_digest(task, {}) == host_env_digest(task, {"JUDGE_MODEL": "gpt"})
    True
    >>> host_env_digest(task, {}) == host_env_digest(task, {"JUDGE_MODEL": "other"})
    False
    """
    from depthlab.io.harbor_models import TaskConfig
    from depthlab.io.harbor_task import TaskFormatError, read_config

    host = os.environ if host is None else host
    path = str(Path(task_dir) / "task.toml")
    try:
        model = TaskConfig.from_toml_dict(read_config(path), path)
    except TaskFormatError:
        return ""
    envs = (model.verifier.env, model.environment.env, model.solution.env)
    tables = [(where, env or {}) for where, env in zip(HOST_ENV_TABLES, envs, strict=True)]
    for index, step in enumerate(model.steps or ()):
        tables.append((f"steps[{index}].verifier.env", step.verifier.env or {}))
    taken = []
    for where, table in tables:
        for key, value in sorted(table.items()):
            template = HOST_TEMPLATE.fullmatch(value) if isinstance(value, str) else None
            if template is None:
                continue  # a literal value is in the task's checksum already
            got = host.get(template["name"], template["default"])
            taken.append([where, key, got])
    if not taken:
        return ""
    return hashlib.sha256(json.dumps(taken).encode()).hexdigest()[:16]


class _Checks:
    """Runs the integrity checks one by one; a check that raises is recorded in :attr:`failed`."""

    def __init__(self) -> None:
        self.failed: list[str] = []

    def run(self, what: str, failed: _T, check: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """``check(*args, **kwargs)``, or ``failed`` when it raised (recorded, with ``what``)."""
        try:
            return check(*args, **kwargs)
        except Exception as error:  # any failure of a check: the trial cannot be graded without it
            self.failed.append(f"{what} could not run ({type(error).__name__}: {error})")
            return failed


def _prepare(box: TaskContainer, tests: tuple[Path, ...], strict: bool) -> None:
    """Empty /tests and /logs/verifier, then let the daemon make the verifier's folder and copy ``tests`` in
    (several folders laid over each other in order)."""
    if cause := box.at_pid_limit():
        raise RewardFileNotFoundError(f"The verifier could not start: {cause}")
    failure = ""
    for _ in range(3):  # a process of the agent may be fighting over /logs: try again, then say so
        try:
            code, output = box.exec(["sh", "-c", _RESET], timeout=60, user="0")
        except TimeoutError:
            _agent_broke(box, "the container did not run the verifier's preparation within 60 s")
            raise
        except ContainerExitedError as error:
            _agent_broke(box, f"the verifier's preparation could not start ({error})")
            raise
        if code != 0:
            text = output[-300:].decode(errors="replace")
            _agent_broke(box, f"the verifier's preparation failed (exit code {code}): {text}")
        try:
            box.put_entry("/logs/verifier", mode=0o770, uid=VERIFIER_UID, gid=VERIFIER_GID)
            box.put_directory(tests, "/tests", owner=(VERIFIER_UID, VERIFIER_GID) if strict else None)
            return
        except OSError as error:
            failure = str(error)
    box.check_alive()
    raise VerifierTamperedError(
        f"The verifier's folders could not be made three times over (another process keeps changing /logs or "
        f"/tests; the trial is invalid): {failure}"
    )


def _agent_broke(box: TaskContainer, what: str) -> None:
    """Raise the agent's fail for a container it left unable to run the verifier (after checking it lives).

    A container that died, or a daemon that does not answer, stays an infrastructure failure.
    """
    box.check_alive()  # raises ContainerExitedError when the container itself is gone
    cause = box.at_pid_limit() or "the agent left the container unable to run it"
    raise RewardFileNotFoundError(f"The verifier could not start: {cause}; {what}")


def _snapshot(box: TaskContainer, nonce: str, attempts: int = SNAPSHOT_ATTEMPTS) -> Snapshot:
    """The identity snapshot, taken again (``attempts`` in all) while it prints nothing usable.

    On a loaded machine the exec can come back with no output (about 1 in 20 preflights at load 7
    on two cores): that is a check that did not run, not a change, and trying again shows which.
    """
    snapshot = Snapshot(problem="not taken")
    for attempt in range(attempts):
        if attempt:
            time.sleep(0.5 * attempt)
        try:
            code, output = box.exec(snapshot_command(nonce), timeout=60, user="0")
        except (TimeoutError, ContainerExitedError) as error:
            snapshot = Snapshot(problem=str(error))
            continue
        snapshot = parse_snapshot(output.decode(errors="replace"), nonce)
        if code != 0 and not snapshot.problem:
            snapshot = Snapshot(problem=f"stat exited with code {code}")
        if not snapshot.problem:
            return snapshot
    return Snapshot(problem=f"{snapshot.problem} ({attempts} tries)")


class SnapshotUnavailableError(RuntimeError):
    """The identity snapshot after the tests could not be taken: the check did not run (it found nothing)."""


def _tampering(box: TaskContainer, tests: tuple[Path, ...], before: Snapshot, nonce: str) -> list[str]:
    """What differs in /tests and the verifier's folder from what the runner made ([] when nothing).

    Raises :class:`SnapshotUnavailableError` when the snapshot after the tests could not be taken
    (and the content check found no change, which would be named instead): the trial is then
    ungraded because a check could not run (``VerifierCheckError``), never read as tampered.
    """
    import docker.errors

    after = _snapshot(box, nonce)
    problems = [] if after.problem else compare_snapshots(before, after)
    try:
        stream, _ = box.container.get_archive("/tests", chunk_size=1 << 16)
        problems += compare_digests(host_digest(tests), archive_digest(stream))
    except docker.errors.NotFound:
        problems.append("/tests was removed")
    if after.problem and not before.problem and not problems:
        raise SnapshotUnavailableError(f"the identity snapshot after the tests printed nothing usable: {after.problem}")
    return problems


def _foreign_writers(report: CopyReport) -> list[str]:
    """A reward file the verifier's group did not write (left out of the copy): another writer."""
    return [
        f"/logs/verifier/{name} was written by another process"
        for name in report.ignored
        if name in ("reward.txt", "reward.json")
    ]


def _late_writes(box: TaskContainer, wait_sec: float = 0.5) -> list[str]:
    """A reward file that changes after the tests ended has another writer than the verifier."""
    import docker.errors

    first = {}
    for name in ("reward.txt", "reward.json"):
        with contextlib.suppress(docker.errors.NotFound):
            first[name] = box.container.get_archive(f"/logs/verifier/{name}")[1]
    if not first:
        return []
    time.sleep(wait_sec)
    problems = []
    for name, stat in first.items():
        try:
            again = box.container.get_archive(f"/logs/verifier/{name}")[1]
        except docker.errors.NotFound:
            problems.append(f"/logs/verifier/{name} was removed after the tests ended")
            continue
        if (again.get("mtime"), again.get("size")) != (stat.get("mtime"), stat.get("size")):
            problems.append(f"/logs/verifier/{name} was written after the tests ended")
    return problems


def read_rewards(verifier_dir: Path) -> dict[str, float]:
    """Harbor's reward rule on a verifier folder (see the module docstring).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "reward.txt").write_text("1\\n")
    >>> read_rewards(folder)
    {'reward': 1.0}
    """
    text_file, json_file = verifier_dir / "reward.txt", verifier_dir / "reward.json"
    if text_file.is_file():
        text = _read_small(text_file).strip()
        if not text:
            raise RewardFileEmptyError("reward.txt is empty")
        if not _NUMBER.fullmatch(text) or not math.isfinite(float(text)):
            raise VerifierOutputParseError(f"reward.txt does not hold a finite number: {text[:100]!r}")
        return {"reward": float(text)}
    if json_file.is_file():
        try:
            value = json.loads(_read_small(json_file))
        except (json.JSONDecodeError, RecursionError) as error:
            raise VerifierOutputParseError(f"reward.json is not JSON: {error}") from None
        if not isinstance(value, dict) or not all(
            isinstance(item, int | float) and not isinstance(item, bool) and math.isfinite(item)
            for item in value.values()
        ):
            raise VerifierOutputParseError("reward.json must be a flat object of finite numbers")
        return {str(key): float(item) for key, item in value.items()}
    raise RewardFileNotFoundError("The verifier wrote neither reward.txt nor reward.json in /logs/verifier")


def _read_small(path: Path) -> str:
    with path.open("rb") as handle:
        data = handle.read(REWARD_FILE_LIMIT_BYTES + 1)
    if len(data) > REWARD_FILE_LIMIT_BYTES:
        raise VerifierOutputParseError(f"{path.name} is larger than {REWARD_FILE_LIMIT_BYTES} bytes")
    return data.decode("utf-8", errors="replace")
