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


@dataclass(frozen=True, slots=True)
class FieldNote:
    """A field of a loaded trial set to null (or taken from another source), and why; the trial itself is kept.

    Parameters
    ----------
    path : str
        The trial's file.
    field : str
        The column (or part of the result) the note is about, e.g. ``"n_input_tokens"``.
    reason : str
        What was wrong, e.g. ``"out of range for its column (0 to 9223372036854775807)"``.

    Examples
    --------
    >>> str(FieldNote("t1/result.json", "started_at", "not a date: '99999-01-01'"))
    "t1/result.json: started_at: not a date: '99999-01-01'"
    """

    path: str
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.reason}"


class FieldNotesWarning(UserWarning):
    """Some trials were kept with a field set to null (or read from another source); one warning per field."""


def notes_text(notes: list[FieldNote], shown: int = 3) -> str:
    """The one line a warning about field notes of one field gives: the count, then the first ``shown`` notes.

    Examples
    --------
    >>> notes_text([FieldNote("a/result.json", "cost_usd", "must be between 0 and 1e+06 US dollars, got -3.0")])
    'cost_usd of 1 trials: a/result.json: must be between 0 and 1e+06 US dollars, got -3.0'
    """
    first = "; ".join(f"{item.path}: {item.reason}" for item in notes[:shown])
    more = f" (and {len(notes) - shown} more)" if len(notes) > shown else ""
    return f"{notes[0].field} of {len(notes)} trials: {first}{more}"


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
