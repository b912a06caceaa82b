"""Bounded output buffers: whatever a task prints, the runner holds a fixed number of bytes.

A command can print without end (``yes``) while the model thinks, and a verifier can print
gigabytes. The runner keeps the **head** and the **tail** of such a flood and counts the bytes
it dropped in between, so the observation says how much is missing:

* :class:`HeadTailBuffer` holds at most ``head_bytes + tail_bytes`` in memory (the persistent
  shell's output between two observations, a short command's output);
* :class:`CappedFile` streams to a file on disk: the head is written as it comes, only the
  tail is held in memory, and the file ends with the tail after a line giving the bytes dropped
  (the verifier's ``test-stdout.txt`` and the oracle's output).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from types import TracebackType

from depthlab._atomic import atomic_path
from depthlab._checks import check_nonnegative_int, check_positive_int

#: The line put between the head and the tail; ``{}`` is the number of bytes dropped.
DROPPED_NOTE = "\n[... {} bytes of output dropped ...]\n"


class HeadTailBuffer:
    """Keep the first ``head_bytes`` and the last ``tail_bytes`` written; count the rest.

    Parameters
    ----------
    head_bytes, tail_bytes : int
        How much of the start and of the end to keep (each >= 0).

    Examples
    --------
    >>> buffer = HeadTailBuffer(4, 4)
    >>> for _ in range(1000):
    ...     buffer.write(b"0123456789")
    >>> buffer.dropped, buffer.total
    (9992, 10000)
    >>> buffer.render()
    b'0123\\n[... 9992 bytes of output dropped ...]\\n6789'
    """

    def __init__(self, head_bytes: int, tail_bytes: int) -> None:
        check_nonnegative_int(head_bytes, "head_bytes", "HeadTailBuffer")
        check_nonnegative_int(tail_bytes, "tail_bytes", "HeadTailBuffer")
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self.clear()

    def clear(self) -> None:
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped = 0
        self.total = 0

    def __len__(self) -> int:
        return len(self._head) + len(self._tail)

    def write(self, data: bytes) -> None:
        """Add ``data``; the middle of what does not fit is counted, not kept."""
        self.total += len(data)
        room = self.head_bytes - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        if len(data) >= self.tail_bytes:
            self.dropped += len(self._tail) + len(data) - self.tail_bytes
            self._tail = bytearray(data[len(data) - self.tail_bytes :]) if self.tail_bytes else bytearray()
            return
        self._tail += data
        excess = len(self._tail) - self.tail_bytes
        if excess > 0:
            del self._tail[:excess]
            self.dropped += excess

    def render(self) -> bytes:
        """Head, the dropped-bytes line when something was dropped, and tail."""
        note = DROPPED_NOTE.format(self.dropped).encode() if self.dropped else b""
        return bytes(self._head) + note + bytes(self._tail)

    def take(self) -> tuple[bytes, int]:
        """Return (:meth:`render`, bytes dropped) and empty the buffer."""
        rendered, dropped = self.render(), self.dropped
        self.clear()
        return rendered, dropped


class CappedFile:
    """A binary sink that writes at most about ``limit_bytes`` to ``path`` (head, note, tail).

    The file is written under a temporary name and renamed on :meth:`close`, so a reader never
    sees half of it. Memory held: at most ``tail_bytes``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
    >>> with CappedFile(path, limit_bytes=8, tail_bytes=4) as sink:
    ...     for _ in range(100):
    ...         sink.write(b"abcdefgh")
    >>> path.read_bytes()
    b'abcd\\n[... 792 bytes of output dropped ...]\\nefgh'
    >>> sink.dropped
    792
    """

    def __init__(self, path: Path, *, limit_bytes: int, tail_bytes: int | None = None) -> None:
        check_positive_int(limit_bytes, "limit_bytes", "CappedFile")
        tail = limit_bytes // 4 if tail_bytes is None else min(tail_bytes, limit_bytes)
        self.path = path
        self._head_room = limit_bytes - tail
        self._tail = HeadTailBuffer(0, tail)
        # the one atomic write: the file appears under its name only when closed whole
        self._atomic = contextlib.ExitStack()
        self._tmp = self._atomic.enter_context(atomic_path(path))
        self._handle = self._tmp.open("wb")
        self.total = 0

    @property
    def dropped(self) -> int:
        return self._tail.dropped

    def write(self, data: bytes) -> None:
        self.total += len(data)
        if self._head_room > 0:
            head = data[: self._head_room]
            self._handle.write(head)
            self._head_room -= len(head)
            data = data[len(head) :]
        if data:
            self._tail.write(data)

    def close(self) -> None:
        """Write the tail (after the dropped-bytes line, if any) and move the file into place."""
        if self._handle.closed:
            return
        try:
            self._handle.write(self._tail.render())
            self._handle.close()
        except BaseException as error:
            self._handle.close()
            self._atomic.__exit__(type(error), error, error.__traceback__)  # removes the temporary file
            raise
        self._atomic.close()  # the rename into place

    def __enter__(self) -> CappedFile:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
