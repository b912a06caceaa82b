"""One task container: start it locked down, run commands in it, keep one persistent shell.

Security defaults: no network (``network_mode="none"``) unless the user allows it, not
privileged, every capability dropped (``cap_add`` puts back only what the user names),
``no-new-privileges``, a pid limit, the task's memory (no extra swap) and CPU limits, and no
environment variables passed in. Every container carries the label ``depthlab.runner`` and an
owner label ``<host>:<pid>``; :func:`remove_leftovers` removes those whose owner process is gone
(after a ``kill -9``), and :func:`remove_live_containers` removes this process's own (on Ctrl-C
or SIGTERM).

The persistent shell
--------------------
The image may lack tmux (FROM-scratch test images certainly do), so the agent's terminal is a
long-lived ``sh`` attached over the Docker exec socket (stdin open, no TTY). After each command
the harness sends ``printf`` of a random sentinel; the command is finished when that sentinel
comes back, and the output is what arrived before it. The harness waits for the sentinel at
most the command's ``duration``; a command still running then keeps running (its later output
shows up in the next observation), exactly like a terminal the agent left alone. Keystrokes
without a final newline are held and typed before the next keystrokes, as a terminal would.
``C-c`` sends SIGINT to the shell's descendants (the foreground command); ``C-d`` or a shell
that exits starts a fresh shell. Programs that read the terminal's stdin (an interactive
editor, ``cat`` without arguments) would consume the sentinel: the agent must not rely on
them; the output then reports that the command is still running.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import secrets
import select
import socket
import struct
import tarfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from depthlab.runner.errors import ContainerExitedError, EnvironmentStartError
from depthlab.runner.image import RUNNER_LABEL

OWNER_LABEL = "depthlab.owner"
TRIAL_LABEL = "depthlab.trial"

_LIVE: dict[str, Any] = {}  # container id -> docker Container, for removal on interrupt
_LIVE_LOCK = threading.Lock()

# keeps PID 1 alive and idle; the agent's shell and the verifier are separate execs
_KEEPALIVE = ["sh", "-c", "while :; do sleep 86400; done"]


@dataclass(frozen=True)
class ContainerLimits:
    """Resource and privilege limits of a task container.

    Parameters
    ----------
    cpus : float
        CPU limit (``nano_cpus``), from task.toml ``[environment].cpus``.
    memory_mb : int
        Memory limit without extra swap, from ``[environment].memory_mb``.
    pids_limit : int, default 1024
        Largest number of processes.
    network : bool, default False
        Whether the container gets a network (Docker's default bridge); off by default.
    cap_add : tuple of str, default ()
        Capabilities to put back after dropping them all (e.g. ``("CHOWN", "DAC_OVERRIDE",
        "FOWNER", "SETUID", "SETGID")`` for tasks whose agent installs packages with apt).
    """

    cpus: float
    memory_mb: int
    pids_limit: int = 1024
    network: bool = False
    cap_add: tuple[str, ...] = field(default_factory=tuple)

    def as_record(self) -> dict[str, Any]:
        """The limits as recorded in a trial's config (``environment.kwargs``)."""
        return {
            "cpus": self.cpus,
            "memory_mb": self.memory_mb,
            "pids_limit": self.pids_limit,
            "network_mode": "bridge" if self.network else "none",
            "cap_drop": ["ALL"],
            "cap_add": list(self.cap_add),
            "security_opt": ["no-new-privileges"],
            "privileged": False,
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

    def __init__(self, client: Any, image: str, limits: ContainerLimits, *, name_hint: str = "trial") -> None:
        self.client = client
        self.image = image
        self.limits = limits
        self.name_hint = name_hint
        self.container: Any = None

    # lifecycle -------------------------------------------------------------------------
    def start(self) -> TaskContainer:
        import docker.errors

        limits = self.limits
        try:
            self.container = self.client.containers.run(
                self.image,
                _KEEPALIVE,
                detach=True,
                network_mode="bridge" if limits.network else "none",
                privileged=False,
                cap_drop=["ALL"],
                cap_add=list(limits.cap_add) or None,
                security_opt=["no-new-privileges"],
                pids_limit=limits.pids_limit,
                mem_limit=f"{limits.memory_mb}m",
                memswap_limit=f"{limits.memory_mb}m",
                nano_cpus=int(limits.cpus * 1e9),
                environment={},
                hostname="task",
                labels={RUNNER_LABEL: "1", OWNER_LABEL: _owner(), TRIAL_LABEL: self.name_hint},
            )
        except docker.errors.DockerException as error:
            raise EnvironmentStartError(f"Starting a container from {self.image!r} failed: {error}") from None
        with _LIVE_LOCK:
            _LIVE[self.container.id] = self.container
        return self

    def remove(self) -> None:
        """Remove the container (killing it); safe to call twice."""
        if self.container is None:
            return
        with _LIVE_LOCK:
            _LIVE.pop(self.container.id, None)
        _force_remove(self.container)
        self.container = None

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

    # commands -------------------------------------------------------------------------
    def exec(self, command: list[str], *, timeout: float) -> tuple[int | None, bytes]:
        """Run ``command`` to completion; return (exit code, stdout+stderr).

        Raises TimeoutError after ``timeout`` seconds (the process is left to die with the container).
        """
        stream = self._open_exec(command, stdin=False)
        deadline = time.monotonic() + timeout
        output = bytearray()
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{command!r} ran longer than {timeout:g} s")
                chunk = stream.read(min(remaining, 1.0))
                if chunk is None:
                    break
                output += chunk
        finally:
            stream.close()
        exit_code = self.client.api.exec_inspect(stream.exec_id).get("ExitCode")
        return exit_code, bytes(output)

    def _open_exec(self, command: list[str], *, stdin: bool) -> _ExecStream:
        import docker.errors

        try:
            created = self.client.api.exec_create(
                self._running().id, command, stdin=stdin, stdout=True, stderr=True, tty=False
            )
            sock = self.client.api.exec_start(created["Id"], socket=True)
        except docker.errors.APIError as error:
            self.check_alive()
            raise ContainerExitedError(f"Could not run {command[0]!r} in the container: {error}") from None
        return _ExecStream(sock, created["Id"])

    def put_directory(self, source: Path, destination: str) -> None:
        """Copy the directory ``source`` into the container as ``destination``."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            archive.add(str(source), arcname=destination.strip("/").rsplit("/", 1)[-1])
        parent = "/" + destination.strip("/").rsplit("/", 1)[0] if "/" in destination.strip("/") else "/"
        self.exec(["mkdir", "-p", parent], timeout=60)
        if not self._running().put_archive(parent, buffer.getvalue()):
            raise OSError(f"Copying {str(source)!r} into the container at {destination!r} failed")

    def get_directory(self, source: str, destination: Path) -> bool:
        """Copy the container directory ``source`` into the host directory ``destination``.

        Returns False when ``source`` does not exist. Only regular files and folders are
        extracted (no links or devices), so a task cannot write outside ``destination``.
        """
        import docker.errors

        try:
            stream, _ = self._running().get_archive(source)
        except docker.errors.NotFound:
            return False
        data = b"".join(stream)
        destination.mkdir(parents=True, exist_ok=True)
        prefix = source.rstrip("/").rsplit("/", 1)[-1] + "/"
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            for member in archive.getmembers():
                if not member.name.startswith(prefix) or not member.isfile():
                    continue
                relative = Path(member.name[len(prefix) :])
                if relative.is_absolute() or ".." in relative.parts:
                    continue
                extracted = archive.extractfile(member)
                if extracted is None:
                    continue
                target = destination / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(extracted.read())
        return True

    def open_shell(self) -> Shell:
        """Start the persistent shell the agent types into."""
        return Shell(self)


class _ExecStream:
    """Read Docker's multiplexed exec stream (8-byte frame headers) as one byte stream."""

    def __init__(self, sock: Any, exec_id: str) -> None:
        self.exec_id = exec_id
        self._holder = sock  # keep the SocketIO wrapper alive: it owns the socket
        self.sock: socket.socket = getattr(sock, "_sock", sock)
        self._pending = b""
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
            chunk = self.sock.recv(1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            self.closed = True
            return None
        self._pending += chunk
        payload = bytearray()
        while len(self._pending) >= 8:
            size = struct.unpack(">I", self._pending[4:8])[0]
            if len(self._pending) < 8 + size:
                break
            payload += self._pending[8 : 8 + size]
            self._pending = self._pending[8 + size :]
        return bytes(payload)

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.close()


class Shell:
    """A long-lived ``sh`` in the container, fed over the exec socket (see the module docstring)."""

    def __init__(self, box: TaskContainer) -> None:
        self.box = box
        self._nonce = secrets.token_hex(6)
        self._sequence = 0
        self._typed_ahead = ""  # keystrokes without a newline, typed before the next ones
        self._start()

    def _start(self) -> None:
        # one pipe for stdout and stderr keeps their order, as a terminal shows it
        self._stream = self.box._open_exec(["sh", "-c", "exec sh 2>&1"], stdin=True)
        self._buffer = bytearray()
        self._cursor = 0
        self._seen: set[int] = set()
        self._outstanding: set[int] = set()
        self._eof = False
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read_loop, daemon=True, name="depthlab-shell-reader")
        self._reader.start()
        # learn the shell's pid (for C-c) with the same sentinel protocol
        output = self._send_and_wait("echo $$\n", 30.0)
        self.pid = int(output.split()[-1]) if output.split() and output.split()[-1].isdigit() else None

    def _read_loop(self) -> None:
        stream = self._stream
        while True:
            chunk = stream.read(1.0)
            with self._cond:
                if chunk is None:
                    self._eof = True
                    self._cond.notify_all()
                    return
                if chunk:
                    self._buffer += chunk
                    self._cond.notify_all()

    def _marker(self, sequence: int) -> bytes:
        return f"__depthlab_{self._nonce}_{sequence}__".encode()

    def run(self, keystrokes: str, duration: float) -> str:
        """Type ``keystrokes``; wait until the command finishes or ``duration`` seconds pass; return the output.

        ``"C-c"`` interrupts the running command; ``"C-d"`` restarts the shell; an empty string just waits.
        """
        if keystrokes.strip() == "C-c":
            self._typed_ahead = ""
            return self._interrupt(duration)
        if keystrokes.strip() == "C-d":
            self.restart()
            return "[the shell was restarted]\n"
        if not keystrokes.endswith("\n"):
            self._typed_ahead += keystrokes
            return self._collect(time.monotonic() + duration)
        text = self._typed_ahead + keystrokes
        self._typed_ahead = ""
        return self._send_and_wait(text, duration)

    def _send_and_wait(self, text: str, duration: float) -> str:
        self._sequence += 1
        sequence = self._sequence
        marker = self._marker(sequence).decode()
        # the marker is split in the command text so that only the printf output contains it whole
        line = f"printf '\\n%s%s\\n' '{marker[:10]}' '{marker[10:]}'\n"
        with self._cond:
            self._outstanding.add(sequence)
        try:
            self._stream.write((text + line).encode())
        except OSError:
            return self._after_exit()
        return self._collect(time.monotonic() + duration)

    def _collect(self, deadline: float) -> str:
        """Wait until every sent marker came back or ``deadline``; return and consume the new output."""
        with self._cond:
            while True:
                self._scan_markers()
                if not self._outstanding or self._eof:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            output = self._consume()
            still_running = bool(self._outstanding) and not self._eof
            eof = self._eof
        if eof:
            return output + self._after_exit()
        if still_running:
            output += "\n[the command is still running]\n"
        return output

    def _scan_markers(self) -> None:
        for sequence in sorted(self._outstanding):
            if self._marker(sequence) in self._buffer:
                self._outstanding.discard(sequence)
                self._seen.add(sequence)

    def _consume(self) -> str:
        """The output since the last observation, without markers (only up to complete markers)."""
        data = bytes(self._buffer)
        end = len(data)
        # keep back a possibly half-received marker line
        tail = data.rfind(b"\n__depthlab_")
        if tail != -1 and data.find(b"__\n", tail + 12) == -1:
            end = tail
        text = data[:end]
        for sequence in list(self._seen):
            marker = b"\n" + self._marker(sequence) + b"\n"
            if marker in text:
                text = text.replace(marker, b"")
                self._seen.discard(sequence)
        del self._buffer[:end]
        return text.decode("utf-8", errors="replace")

    def _interrupt(self, duration: float) -> str:
        """SIGINT to every descendant of the shell, as a terminal's Ctrl-C reaches the foreground job.

        The descendants are found from /proc here (the image may have no pkill/pgrep).
        """
        if self.pid is not None:
            with contextlib.suppress(TimeoutError, ContainerExitedError):
                _, stats = self.box.exec(["sh", "-c", "cat /proc/[0-9]*/stat 2>/dev/null"], timeout=10)
                targets = _descendants(stats.decode(errors="replace"), self.pid)
                if targets:
                    self.box.exec(["kill", "-INT", *map(str, targets)], timeout=10)
        return "^C\n" + self._collect(time.monotonic() + duration)

    def _after_exit(self) -> str:
        self.box.check_alive()  # raises when the whole container died
        self.restart()
        return "[the shell exited; a new shell was started]\n"

    def restart(self) -> None:
        self.close()
        self._start()

    def close(self) -> None:
        self._stream.close()


def _descendants(proc_stats: str, root: int) -> list[int]:
    """Pids descending from ``root``, from the text of /proc/*/stat files.

    Examples
    --------
    >>> _descendants("7 (sh) S 1 7\\n9 (sleep 1) S 7 7\\n12 (cat) R 9 7\\n13 (x) S 1 1", 7)
    [9, 12]
    """
    parent: dict[int, int] = {}
    for line in proc_stats.splitlines():
        head, _, rest = line.rpartition(")")  # the command name may hold spaces and parentheses
        fields = rest.split()
        pid_text = head.split(" (", 1)[0].strip()
        if len(fields) >= 2 and pid_text.isdigit() and fields[1].isdigit():
            parent[int(pid_text)] = int(fields[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, ppid in parent.items() if ppid in frontier and pid not in found}
        found |= frontier
    return sorted(found)


def remove_leftovers(client: Any) -> int:
    """Remove runner containers whose owner process on this host no longer runs.

    Returns the number removed. Containers of live runner processes (another ``depthlab fill``)
    are left alone.

    Examples
    --------
    >>> import docker  # doctest: +SKIP
    >>> remove_leftovers(docker.from_env())  # doctest: +SKIP
    0
    """
    import docker.errors

    removed = 0
    host = socket.gethostname()
    # the low-level list: the high-level one inspects each container and fails on one removed meanwhile
    for summary in client.api.containers(all=True, filters={"label": RUNNER_LABEL}):
        owner = (summary.get("Labels") or {}).get(OWNER_LABEL, "")
        owner_host, _, owner_pid = owner.rpartition(":")
        if owner_host == host and owner_pid.isdigit() and _pid_alive(int(owner_pid)):
            continue
        with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
            client.api.remove_container(summary["Id"], force=True)
            removed += 1
    return removed


def remove_live_containers() -> int:
    """Remove every container this process started and has not removed yet (interrupt path)."""
    with _LIVE_LOCK:
        containers = list(_LIVE.values())
        _LIVE.clear()
    for container in containers:
        _force_remove(container)
    return len(containers)


def live_container_ids() -> list[str]:
    """Ids of the containers this process has running."""
    with _LIVE_LOCK:
        return list(_LIVE)


def _force_remove(container: Any) -> None:
    import docker.errors

    with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
        container.remove(force=True)


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (killed, not yet reaped by its parent) is not alive for our purpose
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return False
    return True


atexit.register(remove_live_containers)


def script_command(script: str) -> list[str]:
    """The exec command that runs ``script`` with bash when the image has it, else with sh.

    Examples
    --------
    >>> script_command("/tests/test.sh")[:2]
    ['sh', '-c']
    """
    return ["sh", "-c", f"if command -v bash >/dev/null 2>&1; then exec bash {script}; else exec sh {script}; fi"]
