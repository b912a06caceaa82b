"""A terminal driven by keystrokes and waits in tmux, as terminus-2 drives its terminal.

Used when the task image has tmux (Harbor's images do; :func:`has_tmux`); images without it get
the persistent shell of :mod:`depthlab.runner.shell`. The agent's keystrokes go to one tmux pane
running ``bash --login`` (``sh`` where there is no bash): ordinary text is typed literally, a
keystroke that is a tmux key name on its own (``C-c``, ``C-d``, ``Escape``, ``Up``, ``Tab``...)
is pressed as that key. After each command the terminal waits the command's whole ``duration``
(as terminus-2 does: it cannot know when an interactive program is done), then, once per turn,
the observation is what the pane's history gained since the last one, or the visible screen when
that cannot be told (a full-screen program such as ``less`` or ``vi`` redrew it). So a Python
REPL, ``less`` or ``vi`` work as on a real terminal.

Keystrokes longer than tmux's command limit are written into the container by the Docker daemon
and pasted from a tmux buffer. The pane's history is capped at :data:`HISTORY_LINES` lines and a
capture at ``output_limit_bytes``; the observation is then cut by the agent, head and tail kept.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import shlex
import time
from typing import Any

from depthlab.runner.errors import ContainerExitedError

__all__ = ["HISTORY_LINES", "TmuxTerminal", "has_tmux"]

#: Lines of history the pane keeps (Harbor keeps ten million; the runner's memory is bounded).
HISTORY_LINES = 50_000
#: The pane's size in characters.
PANE_WIDTH, PANE_HEIGHT = 160, 40
# keystrokes sent with send-keys at most; longer ones are pasted from a buffer
_SEND_LIMIT = 4000
# a keystroke that is one tmux key name, pressed rather than typed
_KEY_NAME = re.compile(
    r"(C-|M-|S-)*([a-zA-Z0-9\[\]\\]|Enter|Escape|Tab|BTab|Space|BSpace|Up|Down|Left|Right|Home|End|"
    r"PageUp|PageDown|PgUp|PgDn|NPage|PPage|IC|DC|Insert|Delete|F[1-9]|F1[0-2])"
)


def has_tmux(box: Any, user: str | None) -> bool:
    """Whether ``tmux`` runs in the container as ``user``."""
    try:
        code, _ = box.exec(["sh", "-c", "command -v tmux >/dev/null 2>&1 && tmux -V"], timeout=20, user=user)
    except (TimeoutError, ContainerExitedError):
        return False
    return code == 0


class TmuxTerminal:
    """One tmux session in the container, typed into and read like a terminal (see the module docstring).

    It has the persistent shell's interface (:meth:`run`, :meth:`observe`, :meth:`close`,
    :attr:`dropped_bytes`), with :attr:`echoes` True: the pane shows the typed commands itself.

    Parameters
    ----------
    box : TaskContainer
    user : str, optional
        Who the session runs as (default: the image's user).
    capture_limit_bytes : int, default 1 MiB
        Most bytes of the pane read per observation (head and tail).
    """

    echoes = True

    def __init__(self, box: Any, *, user: str | None = None, capture_limit_bytes: int = 1 << 20) -> None:
        self.box = box
        self.user = user
        self.capture_limit_bytes = capture_limit_bytes
        self.dropped_bytes = 0
        self.session = f"depthlab-{secrets.token_hex(4)}"
        self._previous: list[str] | None = None
        self._start()

    # the session ---------------------------------------------------------------------
    def _tmux(self, *arguments: str, timeout: float = 30.0) -> tuple[int | None, bytes]:
        return self.box.exec(["tmux", *arguments], timeout=timeout, user=self.user)

    def _start(self) -> None:
        shell = "if command -v bash >/dev/null 2>&1; then exec bash --login; else exec sh -l; fi"
        script = (
            f"export TERM=xterm-256color; tmux new-session -d -s {self.session} -x {PANE_WIDTH} -y {PANE_HEIGHT} "
            f"{shlex.quote(shell)} && tmux set-option -t {self.session} history-limit {HISTORY_LINES}"
        )
        code, output = self.box.exec(["sh", "-c", script], timeout=30, user=self.user)
        if code != 0:
            raise ContainerExitedError(f"tmux did not start: {output[-300:].decode(errors='replace')}")
        self._previous = None

    # typing --------------------------------------------------------------------------
    def run(self, keystrokes: str, duration: float) -> str:
        """Type ``keystrokes`` (or press the key they name), then wait ``duration`` seconds; return ''.

        The output is read once per turn with :meth:`observe`.
        """
        started = time.monotonic()
        note = ""
        if keystrokes and not self._send(keystrokes):
            # the agent ended the session's shell: a fresh one, as a terminal reopened
            self.box.check_alive()
            self._start()
            note = "[the shell exited; a new terminal was started]\n"
            self._send(keystrokes)
        remaining = duration - (time.monotonic() - started)
        if remaining > 0:
            time.sleep(remaining)
        return note

    def _send(self, keystrokes: str) -> bool:
        """Type ``keystrokes`` in one tmux call; False when the session is gone."""
        key = keystrokes.strip()
        if len(key) > 1 and _KEY_NAME.fullmatch(key):
            return self._tmux("send-keys", "-t", self.session, key)[0] == 0
        if len(keystrokes.encode()) > _SEND_LIMIT:
            path = f"/tmp/.depthlab-paste-{secrets.token_hex(6)}"
            self.box.put_file(path, keystrokes.encode(), mode=0o644)
            buffer = f"depthlab-{secrets.token_hex(4)}"
            code, _ = self._tmux(
                "load-buffer", "-b", buffer, path, ";", "paste-buffer", "-d", "-b", buffer, "-t", self.session
            )
            self.box.exec(["rm", "-f", path], timeout=10, user="0")
            return code == 0
        # literal text, each newline pressed as Enter, chained with tmux's ";" into one call
        arguments: list[str] = ["has-session", "-t", self.session]
        for index, line in enumerate(keystrokes.split("\n")):
            if index:
                arguments += [";", "send-keys", "-t", self.session, "Enter"]
            if line:
                arguments += [";", "send-keys", "-t", self.session, "-l", line]
        return self._tmux(*arguments)[0] == 0

    # reading -------------------------------------------------------------------------
    def observe(self) -> str:
        """What the pane's history gained since the last observation, or the visible screen."""
        code, data = self.box.exec(
            ["tmux", "capture-pane", "-p", "-J", "-S", "-", "-t", self.session],
            timeout=30,
            user=self.user,
            output_limit_bytes=self.capture_limit_bytes,
        )
        if code != 0:
            return "[the terminal could not be read]\n"
        lines = data.decode("utf-8", errors="replace").rstrip("\n").split("\n")
        previous, self._previous = self._previous, lines
        if previous is not None and lines[: len(previous) - 1] == previous[:-1]:
            new = lines[max(len(previous) - 1, 0) :]
            if any(line.strip() for line in new):
                return "\n".join(new) + "\n"
        code, screen = self._tmux("capture-pane", "-p", "-t", self.session)
        return "Current terminal screen:\n" + screen.decode("utf-8", errors="replace").rstrip("\n") + "\n"

    def close(self) -> None:
        with contextlib.suppress(TimeoutError, ContainerExitedError):
            self._tmux("kill-session", "-t", self.session, timeout=10)
