"""Validation of public parameters, in one place (scikit-learn-style messages).

Every message names the parameter and the function, says what was expected and what came:
``The 'caps' parameter of estimate_depth must be ..., got ...``. Functions validate at the public
boundary with these helpers and nowhere else; each helper returns the value, converted where the
check defines a canonical form (a tuple of caps, a Path).

This module imports nothing from depthlab, so every layer (io, datasets, measures, stats, plots,
reproduce, simulate) may use it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

__all__ = [
    "PASS_RULES",
    "check_caps",
    "check_choice",
    "check_frame",
    "check_models",
    "check_names",
    "check_nonnegative_int",
    "check_number",
    "check_path",
    "check_positive_int",
]

#: How the passes of several attempts at one cap make the cap pass.
PASS_RULES: tuple[str, ...] = ("any", "majority")


def _fail(name: str, function: str, expected: str, got: object, error: type[Exception] = ValueError) -> Exception:
    return error(f"The '{name}' parameter of {function} must be {expected}, got {got!r}")


def check_frame(df: object, name: str, function: str, columns: Iterable[str] = ()) -> pl.DataFrame:
    """Return ``df`` when it is a polars DataFrame holding ``columns``; raise otherwise.

    Examples
    --------
    >>> check_frame(pl.DataFrame({"a": [1]}), "df", "f", ["a", "b"])
    Traceback (most recent call last):
    ...
    ValueError: The 'df' parameter of f must have the columns ['b'], got columns ['a']
    """
    if not isinstance(df, pl.DataFrame):
        raise TypeError(f"The '{name}' parameter of {function} must be a polars DataFrame, got {type(df).__name__}")
    missing = [column for column in columns if column not in df.columns]
    if missing:
        raise ValueError(
            f"The '{name}' parameter of {function} must have the columns {missing}, got columns {df.columns}"
        )
    return df


def check_caps(caps: object, function: str) -> tuple[int, ...]:
    """Return ``caps`` as a tuple of strictly increasing positive ints; raise otherwise.

    >>> check_caps([1, 2, 5], "f")
    (1, 2, 5)
    """
    if isinstance(caps, str | bytes) or not isinstance(caps, Iterable):
        raise _fail("caps", function, "a sequence of positive ints", caps, TypeError)
    values = tuple(caps)
    if (
        not values
        or any(isinstance(cap, bool) or not isinstance(cap, int) or cap < 1 for cap in values)
        or any(a >= b for a, b in itertools.pairwise(values))
    ):
        raise _fail("caps", function, "a non-empty, strictly increasing sequence of positive ints", caps)
    return values


def check_models(models: object, function: str, *, required: bool = False) -> tuple[str, ...] | None:
    """Return ``models`` as a tuple of distinct non-empty strings (or None when allowed)."""
    if models is None and not required:
        return None
    if isinstance(models, str) or not isinstance(models, Sequence | set | frozenset):
        raise _fail("models", function, "a sequence of model names", models, TypeError)
    values = tuple(models)
    if (
        not values
        or any(not isinstance(model, str) or not model for model in values)
        or len(set(values)) != len(values)
    ):
        raise _fail("models", function, "a non-empty sequence of distinct model names", models)
    return values


def check_names(values: object, name: str, function: str) -> list[str]:
    """Return ``values`` as a list when it is a non-empty sequence of non-empty strings; raise otherwise.

    >>> check_names("tb2", "datasets", "f")
    Traceback (most recent call last):
    ...
    ValueError: The 'datasets' parameter of f must be a non-empty list of names, got 'tb2'
    """
    if isinstance(values, str) or not isinstance(values, Sequence) or not values:
        raise _fail(name, function, "a non-empty list of names", values)
    if not all(isinstance(v, str) and v for v in values):
        raise _fail(name, function, "a list of non-empty strings", values)
    return list(values)


def check_choice(value: object, name: str, function: str, choices: Sequence[str]) -> str:
    """Return ``value`` when it is one of ``choices``; raise otherwise.

    >>> check_choice("all", "pass_rule", "f", PASS_RULES)
    Traceback (most recent call last):
    ...
    ValueError: The 'pass_rule' parameter of f must be one of ['any', 'majority'], got 'all'
    """
    if not isinstance(value, str) or value not in choices:
        raise _fail(name, function, f"one of {list(choices)}", value)
    return value


def check_positive_int(value: object, name: str, function: str) -> int:
    """Return ``value`` when it is an int >= 1; raise otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _fail(name, function, "an int >= 1", value)
    return value


def check_nonnegative_int(value: object, name: str, function: str) -> int:
    """Return ``value`` when it is an int >= 0 (numpy ints too); raise otherwise."""
    if isinstance(value, bool) or not _is_int(value) or value < 0:  # type: ignore[operator]
        raise _fail(name, function, "an int >= 0", value)
    return int(value)  # type: ignore[call-overload]


def check_number(
    value: object,
    name: str,
    function: str,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    low_open: bool = False,
    high_open: bool = False,
    kind: str = "a number",
) -> float:
    """Return ``value`` as a float when it is a real number in the interval; raise otherwise.

    >>> check_number(1.5, "ci", "f", low=0, high=1, low_open=True, high_open=True, kind="a float")
    Traceback (most recent call last):
    ...
    ValueError: The 'ci' parameter of f must be a float in the open interval (0, 1), got 1.5
    """
    inside = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and not math.isnan(value)
        and (low < value if low_open else low <= value)
        and (value < high if high_open else value <= high)
    )
    if not inside:
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        which = "open " if low_open and high_open else ""
        raise _fail(name, function, f"{kind} in the {which}interval {left}{low:g}, {high:g}{right}", value)
    return float(value)  # type: ignore[arg-type]


def check_path(value: object, name: str, function: str, *, kind: str = "directory") -> Path:
    """Return ``value`` as a Path when it names an existing ``kind`` ("directory" or "file"); raise otherwise."""
    if not isinstance(value, str | Path):
        raise TypeError(f"The '{name}' parameter of {function} must be a str or Path, got {type(value).__name__}")
    path = Path(value).expanduser()
    if not (path.is_dir() if kind == "directory" else path.is_file()):
        raise _fail(name, function, f"an existing {kind}", str(path))
    return path


def _is_int(value: Any) -> bool:
    import numpy as np

    return isinstance(value, int | np.integer)


def check_positive_finite(value: object, name: str, function: str) -> float:
    """Return ``value`` as a float when it is a finite number > 0 (not a bool); raise otherwise.

    >>> check_positive_finite(0, "cpus", "ContainerLimits")
    Traceback (most recent call last):
    ...
    ValueError: The 'cpus' parameter of ContainerLimits must be a positive finite number, got 0
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise _fail(name, function, "a positive finite number", value)
    return float(value)


def check_int_at_least(value: object, name: str, function: str, least: int) -> int:
    """Return ``value`` when it is an int (not a bool) >= ``least``; raise otherwise.

    >>> check_int_at_least(50, "output_limit_bytes", "HarnessConfig", 100)
    Traceback (most recent call last):
    ...
    ValueError: The 'output_limit_bytes' parameter of HarnessConfig must be an int >= 100, got 50
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise _fail(name, function, f"an int >= {least}", value)
    return value


def check_pattern(value: object, name: str, function: str, pattern: str, expected: str) -> str:
    """Return ``value`` when it is a str matching the regular expression ``pattern`` whole; raise otherwise.

    ``expected`` says in words what matches (it goes into the message).

    >>> check_pattern("root:x y", "user", "ContainerLimits", r"[A-Za-z0-9_.:-]+", "'user' or 'user:group'")
    Traceback (most recent call last):
    ...
    ValueError: The 'user' parameter of ContainerLimits must be 'user' or 'user:group', got 'root:x y'
    """
    import re

    if not isinstance(value, str) or not re.fullmatch(pattern, value):
        raise _fail(name, function, expected, value)
    return value
