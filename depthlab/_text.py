"""Words for counts and messages, written once: ``1 trial``, ``2 trials``, never ``1 trials``; any text as one line."""

from __future__ import annotations

__all__ = ["count", "one_line"]


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, the noun in the plural unless ``n`` is one (``plural``, default ``noun + "s"``).

    Examples
    --------
    >>> count(1, "trial"), count(3, "trial"), count(0, "task"), count(1, "model run", "model runs")
    ('1 trial', '3 trials', '0 tasks', '1 model run')
    """
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def one_line(text: object, limit: int | None = 300) -> str:
    """``text`` (any object, as ``str``) on one line, runs of whitespace made one space, cut to ``limit`` characters.

    A cut line ends with an ellipsis; ``limit=None`` never cuts.

    Examples
    --------
    >>> one_line("Traceback:\\n  boom\\n")
    'Traceback: boom'
    >>> one_line("x" * 10, limit=5)
    'xxxx…'
    """
    line = " ".join(str(text).split())
    return line if limit is None or len(line) <= limit else line[: limit - 1] + "…"
