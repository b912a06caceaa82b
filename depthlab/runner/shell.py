"""The persistent shell: a long-lived ``sh`` in a task container, fed over the exec socket.

The image may lack tmux (FROM-scratch test images certainly do), so the agent's terminal can be a
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

Output is held in :class:`depthlab.runner.buffers.HeadTailBuffer`: the shell keeps at most
``buffer_bytes`` of what arrived between two observations (head and tail, the bytes dropped in
between counted and reported).
"""

from __future__ import annotations

import contextlib
import re
import secrets
import threading
import time
from typing import Any, Protocol

from depthlab.runner.buffers import HeadTailBuffer
from depthlab.runner.errors import ContainerExitedError

#: Bytes of what arrived between two shell observations kept (head and tail halves).
SHELL_BUFFER_BYTES = 256 * 1024


class ShellHost(Protocol):
    """What the shell needs from its container (:class:`depthlab.runner.TaskContainer` has it)."""

    def _open_exec(self, command: list[str], *, stdin: bool, user: str | None = None) -> Any: ...

    def exec(self, command: list[str], *, timeout: float, user: str | None = None) -> tuple[int | None, bytes]: ...

    def check_alive(self) -> None: ...


class Shell:
    """A long-lived ``sh`` in the container, fed over the exec socket (see the module docstring).

    Parameters
    ----------
    box : TaskContainer
        The container the shell runs in.
    user : str, optional
        Who the shell runs as (default: the image's user).
    buffer_bytes : int, default SHELL_BUFFER_BYTES
        Output kept between two observations (head and tail halves); the rest is counted in
        :attr:`dropped_bytes` and reported in the observation.
    """

    def __init__(self, box: ShellHost, *, user: str | None = None, buffer_bytes: int = SHELL_BUFFER_BYTES) -> None:
        self.box = box
        self.user = user
        self.buffer_bytes = buffer_bytes
        self.dropped_bytes = 0  # over the shell's whole life
        self._nonce = secrets.token_hex(6)
        self._marker_prefix = b"\n__depthlab_" + self._nonce.encode() + b"_"
        self._sequence = 0
        self._typed_ahead = ""  # keystrokes without a newline, typed before the next ones
        self._start()

    def _start(self) -> None:
        # one pipe for stdout and stderr keeps their order, as a terminal shows it
        self._stream = self.box._open_exec(["sh", "-c", "exec sh 2>&1"], stdin=True, user=self.user)
        half = self.buffer_bytes // 2
        self._buffer = HeadTailBuffer(half, self.buffer_bytes - half)
        self._carry = b""  # received bytes that may be the start of a marker
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
                    self._buffer.write(self._carry)
                    self._carry = b""
                    self._eof = True
                    self._cond.notify_all()
                    return
                if chunk:
                    self._absorb(chunk)
                    self._cond.notify_all()

    def _absorb(self, chunk: bytes) -> None:
        """Move ``chunk`` into the bounded buffer, taking the markers out as they pass.

        Markers are found in the stream itself, so a flood that overflows the buffer cannot
        hide them; only the bytes that may begin a marker are held back (a few dozen).
        """
        data = self._carry + chunk
        prefix = self._marker_prefix
        while (start := data.find(prefix)) != -1:
            end = data.find(b"__\n", start + len(prefix))
            digits = data[start + len(prefix) : end] if end != -1 else data[start + len(prefix) :]
            if end == -1:
                if re.fullmatch(rb"\d{0,20}_{0,2}", digits):  # a marker still arriving
                    self._buffer.write(data[:start])
                    self._carry = data[start:]
                    return
                self._buffer.write(data[: start + 1])
                data = data[start + 1 :]
                continue
            if not digits.isdigit():
                self._buffer.write(data[: start + 1])
                data = data[start + 1 :]
                continue
            self._buffer.write(data[:start])
            self._outstanding.discard(int(digits))
            data = data[end + 3 :]
        keep = next((size for size in range(min(len(prefix) - 1, len(data)), 0, -1) if data.endswith(prefix[:size])), 0)
        self._buffer.write(data[: len(data) - keep])
        self._carry = data[len(data) - keep :]

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
            while self._outstanding and not self._eof:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            data, dropped = self._buffer.take()
            self.dropped_bytes += dropped
            still_running = bool(self._outstanding) and not self._eof
            eof = self._eof
        output = data.decode("utf-8", errors="replace")
        if eof:
            return output + self._after_exit()
        if still_running:
            output += "\n[the command is still running]\n"
        return output

    def _interrupt(self, duration: float) -> str:
        """SIGINT to every descendant of the shell, as a terminal's Ctrl-C reaches the foreground job.

        The descendants are found from /proc here (the image may have no pkill/pgrep).
        """
        if self.pid is not None:
            with contextlib.suppress(TimeoutError, ContainerExitedError):
                _, stats = self.box.exec(["sh", "-c", "cat /proc/[0-9]*/stat 2>/dev/null"], timeout=10)
                targets = _descendants(stats.decode(errors="replace"), self.pid)
                if targets:  # as the shell's user: a root without CAP_KILL cannot signal another user
                    self.box.exec(["kill", "-INT", *map(str, targets)], timeout=10, user=self.user)
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
