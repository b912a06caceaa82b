"""One task container's lifecycle: start it under its limits, run commands in it, copy files, remove it.

Security: a named profile (:data:`PROFILES`; :mod:`depthlab.runner.profiles`). Both profiles run
the container not privileged, with ``no-new-privileges``, a pid limit, the task's memory (no extra
swap) and CPU limits, the disk bound of :mod:`depthlab.runner.watchdog`, and no environment
variables passed in but the task's own ``[environment.env]`` (Harbor gives those to every process).
``harbor`` (the default) keeps Docker's default capabilities and the network task.toml allows, as
Harbor runs a task; ``strict`` drops every capability (``cap_add`` puts back only what the user
names) and has no network. Every container carries the runner's labels, so that
:mod:`depthlab.runner.leftovers` can remove what a dead runner left behind.

Containers stop themselves when their runner is gone. PID 1 is a keep-alive that reads its
stdin, which the runner holds open over an attach socket (Docker's ``StdinOnce``): when the
runner dies, even by ``kill -9``, the socket closes, PID 1 reads end-of-file and exits, and the
container stops within seconds. PID 1 also exits at a deadline (the trial's longest possible
duration, ``lifetime_sec``), in case the runner hangs. The next fill removes the stopped
container (:func:`remove_leftovers`).

Who the agent is
----------------
As in Harbor's own containers, the agent runs as the image's user (root in Harbor's task
images) on a writable root filesystem: tasks install packages and edit system files. Under
``harbor`` it is root with Docker's default capabilities (it can chown and bypass file modes, not
mount or leave the container's namespaces); under ``strict`` a root without capabilities, which
cannot chown or bypass file permissions either. Where a task allows it (its files
are writable by another user), ``ContainerLimits(user="1000:1000")`` (``--agent-user``) runs
the agent's shell and the oracle as that user instead. Giving capabilities back with
``cap_add`` (``DAC_OVERRIDE``, ``FOWNER``, ``CHOWN``, ``SETGID``) also gives the agent the means
to reach the verifier's folder (see :mod:`depthlab.runner.verifier`).

Bounded memory
--------------
Output is held in :class:`depthlab.runner.buffers.HeadTailBuffer`: the shell keeps at most
``buffer_bytes`` of what arrived between two observations (head and tail, the bytes dropped in
between counted and reported), :meth:`TaskContainer.exec` at most ``output_limit_bytes``, and
:meth:`TaskContainer.exec_to_file` streams to disk. Folders copied out of the container are
streamed file by file, each cut at ``file_limit_bytes``.

The agent's terminal is :mod:`depthlab.runner.shell`; what a dead runner leaves behind is
removed by :mod:`depthlab.runner.leftovers`.
"""

from __future__ import annotations

import contextlib
import io
import math
import select
import socket
import struct
import tarfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from depthlab._checks import check_choice, check_pattern, check_positive_finite, check_positive_int
from depthlab._defaults import PIDS_LIMIT
from depthlab.runner.buffers import CappedFile, HeadTailBuffer
from depthlab.runner.errors import ContainerExitedError, EnvironmentStartError
from depthlab.runner.image import RUNNER_LABEL
from depthlab.runner.leftovers import OWNER_LABEL, TRIAL_LABEL, force_remove, forget, owner, register
from depthlab.runner.shell import SHELL_BUFFER_BYTES, Shell
from depthlab.runner.watchdog import DiskWatchdog

#: Longest life of a container whose runner no longer holds it (see the module docstring).
DEFAULT_LIFETIME_SEC = 6 * 3600.0
#: Bytes of a command's output :meth:`TaskContainer.exec` keeps (head and tail halves).
EXEC_OUTPUT_LIMIT_BYTES = 1 << 20
#: Largest file copied out of a container whole; longer files are cut (head and tail kept).
FILE_LIMIT_BYTES = 16 << 20
#: Most files copied out of one container folder.
MAX_FILES = 10_000
#: Most bytes copied out of one container folder.
TOTAL_LIMIT_BYTES = 256 << 20

# whether this engine's storage driver took --storage-opt size= (learned once, then the watchdog is used)
_STORAGE_OPT_WORKS: dict[bool, bool] = {}

_USER = r"[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?"  # a user name or id, optionally with a group


def _keepalive(lifetime_sec: float) -> list[str]:
    """PID 1: idle until stdin ends (the runner is gone) or ``lifetime_sec`` passes.

    ``read`` is a shell builtin, so PID 1 has no child an agent's ``pkill`` could stop, except
    the deadline's ``sleep`` (stopping it only removes the deadline). PID 1 traps TERM, which is
    how the deadline ends it: PID 1 of a namespace ignores signals it has no handler for.
    """
    seconds = max(1, math.ceil(lifetime_sec))
    script = f'trap "exit 0" TERM INT HUP; (sleep {seconds} && kill -TERM 1) & while read -r _; do :; done; exit 0'
    return ["sh", "-c", script]


#: The security profiles: ``harbor`` (the default, as Harbor runs a task) and ``strict``.
PROFILES: tuple[str, ...] = ("harbor", "strict")
#: The profile used when none is named.
DEFAULT_PROFILE = "harbor"


@dataclass(frozen=True)
class ContainerLimits:
    """Resource and privilege limits of a task container, under a named security profile.

    ``harbor`` (the default) runs a task as Harbor does: Docker's default capabilities, the
    network task.toml allows. ``strict`` drops every capability and has no network. Both set
    ``no-new-privileges`` and the pid, memory and CPU limits. :func:`depthlab.runner.profiles.limits_for`
    builds the limits of one task from its task.toml and the user's options.

    Parameters
    ----------
    cpus : float
        CPU limit (``nano_cpus``), from task.toml ``[environment].cpus``.
    memory_mb : int
        Memory limit without extra swap, from ``[environment].memory_mb``.
    pids_limit : int, default :data:`depthlab._defaults.PIDS_LIMIT` (1024)
        Largest number of processes.
    network : bool, default True
        Whether the container gets a network (Docker's default bridge). Must be False under
        ``strict``.
    cap_add : tuple of str, default ()
        Capabilities added to the profile's set (under ``strict``, given back after dropping them
        all, e.g. ``("CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID")``).
    user : str or None, default None
        The user the agent's shell and the oracle run as (``"1000:1000"``, a name); None: the
        image's user, root in Harbor's images (see the module docstring).
    build_network : bool, default True
        Whether the image build gets a network.
    profile : {"harbor", "strict"}, default "harbor"
        The security profile (recorded in every trial's config.json).
    storage_mb : int or None, default None
        The most the agent may write to the container's writable layer, from task.toml
        ``[environment].storage_mb``; enforced by the storage driver where it can, else by a
        watchdog (:mod:`depthlab.runner.watchdog`). None: no bound.

    Examples
    --------
    >>> ContainerLimits(cpus=0, memory_mb=256)
    Traceback (most recent call last):
    ...
    ValueError: The 'cpus' parameter of ContainerLimits must be a positive finite number, got 0
    """

    cpus: float
    memory_mb: int
    pids_limit: int = PIDS_LIMIT
    network: bool = True
    cap_add: tuple[str, ...] = field(default_factory=tuple)
    user: str | None = None
    build_network: bool = True
    profile: str = DEFAULT_PROFILE
    storage_mb: int | None = None

    def __post_init__(self) -> None:
        check_positive_finite(self.cpus, "cpus", "ContainerLimits")
        for name in ("memory_mb", "pids_limit"):
            check_positive_int(getattr(self, name), name, "ContainerLimits")
        if self.user is not None:
            check_pattern(self.user, "user", "ContainerLimits", _USER, "'user' or 'user:group'")
        check_choice(self.profile, "profile", "ContainerLimits", PROFILES)
        if self.profile == "strict" and self.network:
            raise ValueError("ContainerLimits: the 'strict' profile has no network, but network=True was given")
        if self.storage_mb is not None:
            check_positive_int(self.storage_mb, "storage_mb", "ContainerLimits")

    @property
    def cap_drop(self) -> list[str]:
        """Capabilities dropped: every one under ``strict``, none of Docker's defaults under ``harbor``."""
        return ["ALL"] if self.profile == "strict" else []

    def as_record(self) -> dict[str, Any]:
        """The limits as recorded in a trial's config (``environment.kwargs``)."""
        return {
            "profile": self.profile,
            "cpus": self.cpus,
            "memory_mb": self.memory_mb,
            "pids_limit": self.pids_limit,
            "network_mode": "bridge" if self.network else "none",
            "cap_drop": self.cap_drop,
            "cap_add": list(self.cap_add),
            "security_opt": ["no-new-privileges"],
            "privileged": False,
            "user": self.user,
            "build_network": self.build_network,
            "storage_mb": self.storage_mb,
        }


class TaskContainer:
    """A started task container; use as a context manager so it is always removed.

    Examples
    --------
    >>> import docker  # doctest: +SKIP
    >>> with TaskContainer(docker.from_env(), "busybox-image", ContainerLimits(1, 256)) as box:  # doctest: +SKIP
    ...     box.exec(["echo", "hi"], timeout=10)
    (0, b'hi\\n')
    """

    def __init__(
        self,
        client: Any,
        image: str,
        limits: ContainerLimits,
        *,
        name_hint: str = "trial",
        lifetime_sec: float = DEFAULT_LIFETIME_SEC,
        environment: dict[str, str] | None = None,
    ) -> None:
        check_positive_finite(lifetime_sec, "lifetime_sec", "TaskContainer")
        self.client = client
        self.environment = dict(environment or {})  # the container's own: every exec in it has them
        self.image = image
        self.limits = limits
        self.name_hint = name_hint
        self.lifetime_sec = lifetime_sec
        self.container: Any = None
        self.image_user = "0"  # the image's user (uid or name, without group), read at start
        self._lifeline: _ExecStream | None = None
        self.storage_bound = ""  # how the disk is bounded: "storage-opt", "watchdog" or "" (no bound)
        self.stopped_because = ""  # set when the runner stopped the container (the disk bound)
        self._watchdog: DiskWatchdog | None = None

    # lifecycle -------------------------------------------------------------------------
    def start(self) -> TaskContainer:
        import docker.errors

        limits = self.limits
        api = self.client.api

        def create(storage_opt: dict[str, str] | None) -> dict[str, Any]:
            host_config = api.create_host_config(
                network_mode="bridge" if limits.network else "none",
                privileged=False,
                cap_drop=limits.cap_drop or None,
                cap_add=list(limits.cap_add) or None,
                security_opt=["no-new-privileges"],
                pids_limit=limits.pids_limit,
                mem_limit=f"{limits.memory_mb}m",
                memswap_limit=f"{limits.memory_mb}m",
                nano_cpus=int(limits.cpus * 1e9),
                storage_opt=storage_opt,
            )
            config = api.create_container_config(
                self.image,
                _keepalive(self.lifetime_sec),
                stdin_open=True,
                environment=self.environment,
                hostname="task",
                labels={RUNNER_LABEL: "1", OWNER_LABEL: owner(), TRIAL_LABEL: self.name_hint},
                host_config=host_config,
            )
            config["StdinOnce"] = True  # stdin closes when the runner's attach socket closes
            return api.create_container_from_config(config)

        try:
            created = None
            if limits.storage_mb is not None and _STORAGE_OPT_WORKS.get(True, True):
                try:  # the storage driver bounds the writable layer itself where it can
                    created = create({"size": f"{limits.storage_mb}M"})
                    self.storage_bound = "storage-opt"
                except docker.errors.APIError:  # e.g. overlay2 not on xfs with pquota: the watchdog instead
                    _STORAGE_OPT_WORKS[True] = False
            if created is None:
                created = create(None)
            self.container = self.client.containers.get(created["Id"])
            register(self.container)
            self._lifeline = _ExecStream(api.attach_socket(created["Id"], params={"stdin": 1, "stream": 1}), "")
            api.start(created["Id"])
            self.container.reload()
            if limits.storage_mb is not None and not self.storage_bound:
                self._watchdog = DiskWatchdog(self.client, created["Id"], limits.storage_mb, self._stopped).start()
                self.storage_bound = "watchdog"
        except docker.errors.DockerException as error:
            self.remove()
            raise EnvironmentStartError(f"Starting a container from {self.image!r} failed: {error}") from None
        user = (self.container.attrs.get("Config") or {}).get("User") or "0"
        self.image_user = user.split(":", 1)[0] or "0"
        return self

    def _stopped(self, reason: str) -> None:
        self.stopped_because = reason

    def check_disk(self) -> str:
        """The reason when the agent's writes passed the disk bound (the container is then stopped), else ''."""
        if self.stopped_because or self._watchdog is None:
            return self.stopped_because
        return self._watchdog.check()

    def remove(self) -> None:
        """Remove the container (killing it); safe to call twice."""
        if self._watchdog is not None:
            self._watchdog.stop()
        if self._lifeline is not None:
            self._lifeline.close()
            self._lifeline = None
        if self.container is None:
            return
        forget(self.container)
        force_remove(self.container)
        self.container = None

    @property
    def agent_user(self) -> str | None:
        """The user the agent's commands run as (None: the image's user)."""
        return self.limits.user

    def __enter__(self) -> TaskContainer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.remove()

    @property
    def id(self) -> str:
        return self._running().id

    def _running(self) -> Any:
        if self.container is None:
            raise ContainerExitedError("The container was removed")
        return self.container

    def check_alive(self) -> None:
        """Raise ContainerExitedError when the container is no longer running."""
        import docker.errors

        try:
            self._running().reload()
        except docker.errors.NotFound:
            raise ContainerExitedError("The task container disappeared") from None
        state = self.container.attrs.get("State", {})
        if not state.get("Running", False):
            raise ContainerExitedError(
                f"The task container exited (exit code {state.get('ExitCode')}, OOM killed: {state.get('OOMKilled')})"
            )

    def ended_from_inside(self, *, wait_sec: float = 0.0) -> str:
        """A sentence when the container stopped by its own processes' doing (the agent's), else ''.

        PID 1 exits with code 0 only on a signal sent from inside (its deadline is past every
        trial's end); an out-of-memory kill is the processes' own use. The runner's own removal,
        a daemon restart or a host kill give neither. ``wait_sec``: how long a container still
        shutting down is waited for.
        """
        if self.stopped_because:
            return self.stopped_because
        deadline = time.monotonic() + wait_sec
        while True:
            try:
                self._running().reload()
            except Exception:  # gone altogether: not something to put on the agent
                return ""
            if not self.container.attrs.get("State", {}).get("Running", False) or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        state = self.container.attrs.get("State", {})
        if state.get("Running", False):
            return ""
        if state.get("OOMKilled"):
            return f"the container ran out of its {self.limits.memory_mb} MB of memory and was stopped"
        if state.get("ExitCode") == 0:
            return "a process in the container ended its PID 1 (the container stopped from inside)"
        return ""

    def process_count(self) -> tuple[int | None, int | None]:
        """(processes now, the pid limit) of the container, from the daemon's statistics (None: unknown)."""
        try:
            stats = self.client.api.stats(self._running().id, stream=False, one_shot=True)
        except Exception:  # statistics are a diagnosis only
            return None, None
        pids = stats.get("pids_stats") or {}
        return pids.get("current"), pids.get("limit") or self.limits.pids_limit

    def at_pid_limit(self) -> str:
        """A sentence when the container's processes fill its pid limit (a fork bomb), else ''."""
        current, limit = self.process_count()
        if current is None or limit is None or current < limit * 0.9:
            return ""
        return (
            f"the container's processes filled its pid limit ({current} of {limit}): the agent left a fork bomb "
            "or runaway processes, and no new process could start"
        )

    # commands -------------------------------------------------------------------------
    def exec(
        self,
        command: list[str],
        *,
        timeout: float,
        user: str | None = None,
        output_limit_bytes: int = EXEC_OUTPUT_LIMIT_BYTES,
    ) -> tuple[int | None, bytes]:
        """Run ``command`` to completion; return (exit code, stdout+stderr).

        The output keeps its first and last ``output_limit_bytes / 2`` bytes, with a line giving
        the bytes dropped between. ``user`` defaults to the image's user. Raises TimeoutError
        after ``timeout`` seconds (the process is left to die with the container).
        """
        buffer = HeadTailBuffer(output_limit_bytes // 2, output_limit_bytes - output_limit_bytes // 2)
        exit_code = self._run_into(command, buffer.write, timeout=timeout, user=user)
        return exit_code, buffer.render()

    def exec_to_file(
        self,
        command: list[str],
        path: Path,
        *,
        timeout: float,
        user: str | None = None,
        limit_bytes: int = FILE_LIMIT_BYTES,
        environment: dict[str, str] | None = None,
    ) -> tuple[int | None, int]:
        """Run ``command``, streaming its output to ``path`` (cut to about ``limit_bytes``).

        Returns (exit code, bytes the command printed). The file is complete also when the
        command times out (TimeoutError) or the container dies. ``environment`` adds variables
        to the command's.
        """
        with CappedFile(path, limit_bytes=limit_bytes) as sink:
            exit_code = self._run_into(command, sink.write, timeout=timeout, user=user, environment=environment)
        return exit_code, sink.total

    def _run_into(
        self,
        command: list[str],
        write: Any,
        *,
        timeout: float,
        user: str | None,
        environment: dict[str, str] | None = None,
    ) -> int | None:
        stream = self._open_exec(command, stdin=False, user=user, environment=environment)
        deadline = time.monotonic() + timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{command!r} ran longer than {timeout:g} s")
                chunk = stream.read(min(remaining, 1.0))
                if chunk is None:
                    break
                write(chunk)
        finally:
            stream.close()
        return self.client.api.exec_inspect(stream.exec_id).get("ExitCode")

    def _open_exec(
        self, command: list[str], *, stdin: bool, user: str | None = None, environment: dict[str, str] | None = None
    ) -> _ExecStream:
        import docker.errors

        try:
            created = self.client.api.exec_create(
                self._running().id,
                command,
                stdin=stdin,
                stdout=True,
                stderr=True,
                tty=False,
                user=user or "",
                environment=environment or None,
            )
            sock = self.client.api.exec_start(created["Id"], socket=True)
        except docker.errors.APIError as error:
            self.check_alive()
            raise ContainerExitedError(f"Could not run {command[0]!r} in the container: {error}") from None
        return _ExecStream(sock, created["Id"])

    def put_directory(
        self, source: Path | Sequence[Path], destination: str, *, owner: tuple[int, int] | None = None
    ) -> None:
        """Copy the directory ``source`` into the container as ``destination``.

        ``source`` may be several directories, laid over each other in order (:func:`layered`: a
        later one's file replaces an earlier one's of the same path, as Harbor's ``docker cp`` of
        each in turn does). ``owner`` (uid, gid) sets the owner of every copied entry (default: as
        on the host); the Docker daemon extracts them, so the owner can be one no process in the
        container runs as.
        """

        def own(info: tarfile.TarInfo) -> tarfile.TarInfo:
            if owner is not None:
                info.uid, info.gid = owner
                info.uname = info.gname = ""
            return info

        root = destination.strip("/").rsplit("/", 1)[-1]
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            for relative, path in layered([source] if isinstance(source, Path) else source).items():
                name = f"{root}/{relative}" if relative else root
                archive.add(str(path), arcname=name, recursive=False, filter=own)
        parent = "/" + destination.strip("/").rsplit("/", 1)[0] if "/" in destination.strip("/") else "/"
        self.exec(["mkdir", "-p", parent], timeout=60)
        if not self._running().put_archive(parent, buffer.getvalue()):
            raise OSError(f"Copying {str(source)!r} into the container at {destination!r} failed")

    def put_file(self, path: str, data: bytes, *, mode: int = 0o644) -> None:
        """Write ``data`` to the container file ``path`` (its folder must exist)."""
        self.put_entry(path, data=data, mode=mode)

    def put_entry(self, path: str, *, data: bytes | None = None, mode: int, uid: int = 0, gid: int = 0) -> None:
        """Create the file (``data``) or folder (``data=None``) ``path`` with this owner and mode.

        The Docker daemon extracts the entry, so the owner can be one no process in the
        container (root without capabilities included) could have set.
        """
        parent, _, name = path.rstrip("/").rpartition("/")
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            info = tarfile.TarInfo(name)
            info.uid, info.gid, info.mode, info.mtime = uid, gid, mode, int(time.time())
            if data is None:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            else:
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        if not self._running().put_archive(parent or "/", buffer.getvalue()):
            raise OSError(f"Creating {path!r} in the container failed")

    def get_directory(
        self,
        source: str,
        destination: Path,
        *,
        file_limit_bytes: int = FILE_LIMIT_BYTES,
        max_files: int = MAX_FILES,
        total_limit_bytes: int = TOTAL_LIMIT_BYTES,
        only_gid: int | None = None,
    ) -> CopyReport | None:
        """Copy the container directory ``source`` into the host directory ``destination``.

        Returns None when ``source`` does not exist, else a :class:`CopyReport`. The archive is
        streamed: memory stays bounded whatever the folder holds. Only regular files and folders
        are extracted (no links or devices), so a task cannot write outside ``destination``;
        files longer than ``file_limit_bytes`` are cut (head and tail kept), files beyond
        ``max_files`` or ``total_limit_bytes`` are left out, and with ``only_gid`` files of
        another group are left out (the report lists them).
        """
        import docker.errors

        try:
            stream, _ = self._running().get_archive(source, chunk_size=1 << 16)
        except docker.errors.NotFound:
            return None
        destination.mkdir(parents=True, exist_ok=True)
        top = source.rstrip("/").rsplit("/", 1)[-1]
        report = CopyReport()
        reader = ChunkReader(stream)
        try:
            with tarfile.open(fileobj=reader, mode="r|") as archive:
                while (member := archive.next()) is not None:
                    forget_headers(archive)
                    if member.name.rstrip("/") == top:
                        report.owner = (member.uid, member.gid)
                        continue
                    if not member.name.startswith(top + "/") or not member.isfile():
                        continue
                    relative = Path(member.name[len(top) + 1 :])
                    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
                        continue
                    if only_gid is not None and member.gid != only_gid:
                        if len(report.ignored) < 100:
                            report.ignored.append(str(relative))
                        continue
                    if report.n_files >= max_files or report.n_bytes >= total_limit_bytes:
                        report.left_out += 1
                        continue
                    extracted = archive.extractfile(member)
                    if extracted is None:
                        continue
                    report.n_files += 1
                    with CappedFile(destination / relative, limit_bytes=file_limit_bytes) as sink:
                        while chunk := extracted.read(1 << 16):
                            sink.write(chunk)
                    report.n_bytes += sink.total - sink.dropped
                    if sink.dropped:
                        report.cut[str(relative)] = sink.dropped
        finally:
            reader.close()
        return report

    def open_shell(self, *, buffer_bytes: int = SHELL_BUFFER_BYTES) -> Shell:
        """Start the persistent shell the agent types into (as the agent's user)."""
        return Shell(self, user=self.agent_user, buffer_bytes=buffer_bytes)


@dataclass
class CopyReport:
    """What :meth:`TaskContainer.get_directory` copied.

    ``owner`` is the (uid, gid) of the copied folder itself; ``ignored`` the files left out for
    their group (the first 100); ``cut`` the bytes dropped per cut file; ``left_out`` the number
    of files beyond the limits.
    """

    def notes(self) -> str:
        """What was not copied as it was, one line each ('' when everything was)."""
        lines = [f"left out, not written by the verifier: {name}" for name in self.ignored]
        lines += [f"cut: {name} ({dropped} bytes dropped)" for name, dropped in self.cut.items()]
        if self.left_out:
            lines.append(f"left out: {self.left_out} file(s) beyond {MAX_FILES} files or {TOTAL_LIMIT_BYTES} bytes")
        return "".join(line + "\n" for line in lines)

    owner: tuple[int, int] | None = None
    n_files: int = 0
    n_bytes: int = 0
    ignored: list[str] = field(default_factory=list)
    cut: dict[str, int] = field(default_factory=dict)
    left_out: int = 0


class ChunkReader(io.RawIOBase):
    """A read-only file over an iterator of byte chunks (Docker's archive stream)."""

    def __init__(self, chunks: Any) -> None:
        self._chunks = iter(chunks)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(target), len(self._pending))
        target[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def close(self) -> None:
        closer = getattr(self._chunks, "close", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                closer()
        super().close()


class _ExecStream:
    """Read Docker's multiplexed exec stream (8-byte frame headers) as one byte stream."""

    def __init__(self, sock: Any, exec_id: str) -> None:
        self.exec_id = exec_id
        self._holder = sock  # keep the SocketIO wrapper alive: it owns the socket
        self.sock: socket.socket = getattr(sock, "_sock", sock)
        self._pending = bytearray()  # at most one partial frame (a pipe write, <= 64 KiB)
        self.closed = False

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read(self, timeout: float) -> bytes | None:
        """Return the payload bytes available within ``timeout`` (b'' if none); None at end of stream."""
        if self.closed:
            return None
        ready, _, _ = select.select([self.sock], [], [], max(timeout, 0.0))
        if not ready:
            return b""
        try:
            chunk = self.sock.recv(1 << 20)
        except OSError:
            chunk = b""
        if not chunk:
            self.closed = True
            return None
        pending = self._pending
        pending += chunk
        payload = bytearray()
        position = 0
        while len(pending) - position >= 8:
            size = struct.unpack_from(">I", pending, position + 4)[0]
            if len(pending) - position < 8 + size:
                break
            payload += pending[position + 8 : position + 8 + size]
            position += 8 + size
        del pending[:position]
        return bytes(payload)

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.close()


def new_docker_client() -> Any:
    """A Docker client from the environment (``DOCKER_HOST`` or the local socket): every runner entry point's."""
    import docker

    return docker.from_env()


def forget_headers(archive: tarfile.TarFile) -> None:
    """Drop the headers a streamed tar file keeps of every member read, so memory stays bounded.

    ``members`` is the attribute ``tarfile`` appends to (it has no public way to drop them).
    """
    members: list[tarfile.TarInfo] = vars(archive)["members"]
    members.clear()


def layered(folders: Sequence[Path]) -> dict[str, Path]:
    """The entries of ``folders`` laid over each other in order: relative path -> the host path copied there.

    The root is ``""`` (the first folder). A later folder's file, link or folder replaces an
    earlier one's at the same path, and its folders merge with theirs, as copying each in turn
    with ``docker cp <folder>/. <destination>`` does (Harbor's upload of a step's ``/tests``: the
    task's shared ``tests/``, then the step's). A file where another folder has a folder (or the
    reverse) is a :class:`ValueError` naming the path: ``docker cp`` refuses it too.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> shared, own = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
    >>> for folder, names in ((shared, ("helpers.sh", "test.sh")), (own, ("test.sh",))):
    ...     for name in names:
    ...         _ = (folder / name).write_text(name)
    >>> tree = layered([shared, own])
    >>> sorted(tree), tree["test.sh"] == own / "test.sh", tree["helpers.sh"] == shared / "helpers.sh"
    (['', 'helpers.sh', 'test.sh'], True, True)
    """
    tree: dict[str, Path] = {}
    for folder in folders:
        if not tree:
            tree[""] = folder
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder).as_posix()
            before = tree.get(relative)
            if before is not None and _is_folder(before) != _is_folder(path):
                raise ValueError(f"{relative!r} is a folder in one of {[str(f) for f in folders]} and not in another")
            tree[relative] = path
    return dict(sorted(tree.items()))


def _is_folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def script_command(script: str) -> list[str]:
    """The exec command that runs ``script`` with bash when the image has it, else with sh.

    Examples
    --------
    >>> script_command("/tests/test.sh")[:2]
    ['sh', '-c']
    """
    return ["sh", "-c", f"if command -v bash >/dev/null 2>&1; then exec bash {script}; else exec sh {script}; fi"]
