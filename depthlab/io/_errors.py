"""What the loaders report when a file cannot be used."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rejected:
    """A trial (or run file) that could not be loaded.

    Parameters
    ----------
    path : str
        The file (or directory) at fault.
    reason : str
        Why it was rejected, e.g. ``"not valid JSON: truncated input"``.

    Examples
    --------
    >>> str(Rejected("runs/job/t1/result.json", "empty file"))
    'runs/job/t1/result.json: empty file'
    """

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


class LoadError(ValueError):
    """Raised by ``strict=True`` loads on the first rejected file, as ``"<path>: <reason>"``."""


class RejectedFilesWarning(UserWarning):
    """Some trials or task directories were rejected; the message gives the count and the first paths."""


class DuplicateTrialsWarning(UserWarning):
    """Some trials were reached twice and loaded once; the message gives the count and the first paths left out."""


class Reject(Exception):
    """Raised inside a reader with the path at fault and the reason; its caller turns it into a :class:`Rejected`.

    Examples
    --------
    >>> try:
    ...     raise Reject("t1/result.json", "empty file")
    ... except Reject as exc:
    ...     print(Rejected(exc.path, exc.reason))
    t1/result.json: empty file
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def warning_text(rejected: list[Rejected], what: str, shown: int = 3) -> str:
    """The one line a warning about rejected files gives: the count, then the first ``shown`` paths and reasons.

    Examples
    --------
    >>> warning_text([Rejected("a", "empty file")], "trials")
    '1 trials rejected: a: empty file'
    """
    first = "; ".join(str(item) for item in rejected[:shown])
    more = f" (and {len(rejected) - shown} more)" if len(rejected) > shown else ""
    return f"{len(rejected)} {what} rejected: {first}{more}"
