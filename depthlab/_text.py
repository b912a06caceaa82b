"""Words for counts, written once: ``1 trial``, ``2 trials``, never ``1 trials``."""

from __future__ import annotations

__all__ = ["count"]


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, the noun in the plural unless ``n`` is one (``plural``, default ``noun + "s"``).

    Examples
    --------
    >>> count(1, "trial"), count(3, "trial"), count(0, "task"), count(1, "model run", "model runs")
    ('1 trial', '3 trials', '0 tasks', '1 model run')
    """
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"
