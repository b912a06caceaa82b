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
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeGuard, overload

import polars as pl

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "PASS_RULES",
    "check_bool",
    "check_caps",
    "check_choice",
    "check_frame",
    "check_int_at_least",
    "check_interval",
    "check_mapping",
    "check_model_name",
    "check_models",
    "check_names",
    "check_nonnegative_int",
    "check_number",
    "check_path",
    "check_pattern",
    "check_positive_finite",
    "check_positive_int",
    "check_rows",
    "check_string",
    "check_text",
    "check_type",
    "parameter_error",
    "parameter_problem",
]

#: How the passes of several attempts at one cap make the cap pass.
PASS_RULES: tuple[str, ...] = ("any", "majority", "isotonic")


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


@overload
def check_models(models: object, function: str, *, required: Literal[True]) -> tuple[str, ...]: ...
@overload
def check_models(models: object, function: str, *, required: bool = False) -> tuple[str, ...] | None: ...
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


def check_names(
    values: object, name: str, function: str, *, known: Sequence[str] | None = None, where: str = "this data"
) -> list[str]:
    """Return ``values`` as a list when it is a non-empty sequence of non-empty strings; raise otherwise.

    With ``known``, every name must be one of them; an unknown one (the empty name included) is an
    error listing the known names, so a mistyped ``--datasets ""`` says what could have been meant.

    >>> check_names("tb2", "datasets", "f")
    Traceback (most recent call last):
    ...
    ValueError: The 'datasets' parameter of f must be a non-empty list of names, got 'tb2'
    >>> check_names([""], "datasets", "f", known=["tb2", "tw"])
    Traceback (most recent call last):
    ...
    ValueError: The 'datasets' parameter of f names '', not in this data; known: tb2, tw
    """
    if isinstance(values, str) or not isinstance(values, Sequence) or not values:
        raise _fail(name, function, "a non-empty list of names", values)
    if known is not None and all(isinstance(v, str) for v in values):
        unknown = [v for v in values if v not in known]
        if unknown:
            raise ValueError(
                f"The '{name}' parameter of {function} names {', '.join(map(repr, unknown))}, not in {where}; "
                f"known: {', '.join(known) if known else 'none'}"
            )
    if not all(isinstance(v, str) and v for v in values):
        raise _fail(name, function, "a list of non-empty strings", values)
    return list(values)


def check_choice(value: object, name: str, function: str, choices: Sequence[str]) -> str:
    """Return ``value`` when it is one of ``choices``; raise otherwise.

    >>> check_choice("all", "pass_rule", "f", PASS_RULES)
    Traceback (most recent call last):
    ...
    ValueError: The 'pass_rule' parameter of f must be one of ['any', 'majority', 'isotonic'], got 'all'
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
    if isinstance(value, bool) or not _is_int(value) or value < 0:
        raise _fail(name, function, "an int >= 0", value)
    return int(value)


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
    if (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and not math.isnan(value)
        and (low < value if low_open else low <= value)
        and (value < high if high_open else value <= high)
    ):
        return float(value)
    left, right = "(" if low_open else "[", ")" if high_open else "]"
    which = "open " if low_open and high_open else ""
    raise _fail(name, function, f"{kind} in the {which}interval {left}{low:g}, {high:g}{right}", value)


def check_path(value: object, name: str, function: str, *, kind: str = "directory") -> Path:
    """Return ``value`` as a Path when it names an existing ``kind`` ("directory" or "file"); raise otherwise."""
    if not isinstance(value, str | Path):
        raise TypeError(f"The '{name}' parameter of {function} must be a str or Path, got {type(value).__name__}")
    path = Path(value).expanduser()
    if not (path.is_dir() if kind == "directory" else path.is_file()):
        raise _fail(name, function, f"an existing {kind}", str(path))
    return path


def _is_int(value: object) -> TypeGuard[int | np.integer]:
    import numpy as np

    return isinstance(value, int | np.integer)


def parameter_error(
    name: str, function: str, expected: str, got: object, error: type[Exception] = ValueError
) -> Exception:
    """The error for a check too particular for a helper of its own, in the shared wording (raise it).

    >>> raise parameter_error("data", "f", "an existing folder or None", "nope")
    Traceback (most recent call last):
    ...
    ValueError: The 'data' parameter of f must be an existing folder or None, got 'nope'
    """
    return _fail(name, function, expected, got, error)


def parameter_problem(name: str, function: str, problem: str, error: type[Exception] = ValueError) -> Exception:
    """The error for a parameter whose fault is not "must be X, got Y" (a column it names, a shape), worded
    like every other: ``The '<name>' parameter of <function> <problem>`` (raise it).

    >>> raise parameter_problem("order", "spearman", "names columns that are not used: ['z']")
    Traceback (most recent call last):
    ...
    ValueError: The 'order' parameter of spearman names columns that are not used: ['z']
    """
    return error(f"The '{name}' parameter of {function} {problem}")


def check_int_at_least(value: object, name: str, function: str, least: int) -> int:
    """Return ``value`` when it is an int (not a bool) >= ``least``; raise otherwise.

    >>> check_int_at_least(50, "n_boot", "reproduce", 100)
    Traceback (most recent call last):
    ...
    ValueError: The 'n_boot' parameter of reproduce must be an int >= 100, got 50
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise _fail(name, function, f"an int >= {least}", value)
    return value


def check_model_name(value: object, name: str, function: str) -> str:
    """Return ``value`` when it is a non-empty str (one model's name); raise otherwise.

    >>> check_model_name("", "first_model", "second_model_runs")
    Traceback (most recent call last):
    ...
    ValueError: The 'first_model' parameter of second_model_runs must be a model name, got ''
    """
    if not isinstance(value, str) or not value:
        raise _fail(name, function, "a model name", value)
    return value


def check_rows(df: pl.DataFrame, name: str, function: str, *, noun: str = "row") -> pl.DataFrame:
    """Return ``df`` when it has at least one row; raise otherwise (``noun`` names what a row is).

    >>> check_rows(pl.DataFrame({"a": []}), "audit", "f", noun="task")
    Traceback (most recent call last):
    ...
    ValueError: The 'audit' parameter of f must have at least one task, got an empty table
    """
    if df.is_empty():
        raise ValueError(f"The '{name}' parameter of {function} must have at least one {noun}, got an empty table")
    return df


@overload
def check_string(
    value: object,
    name: str,
    function: str,
    *,
    expected: str | None = ...,
    valid: Callable[[str], bool] | None = ...,
    optional: Literal[False] = ...,
) -> str: ...
@overload
def check_string(
    value: object,
    name: str,
    function: str,
    *,
    expected: str | None = ...,
    valid: Callable[[str], bool] | None = ...,
    optional: bool,
) -> str | None: ...
def check_string(
    value: object,
    name: str,
    function: str,
    *,
    expected: str | None = None,
    valid: Callable[[str], bool] | None = None,
    optional: bool = False,
) -> str | None:
    """Return ``value`` when it is a non-blank string that ``valid`` accepts (or None when ``optional``).

    The one string checker: a string of only whitespace counts as empty. ``expected`` words the
    message (default ``"a non-empty string"``, ``" or None"`` added when ``optional``).

    >>> check_string("a/b", "job_name", "f", expected="a plain name", valid=lambda s: "/" not in s)
    Traceback (most recent call last):
    ...
    ValueError: The 'job_name' parameter of f must be a plain name, got 'a/b'
    >>> check_string(None, "dataset", "f", optional=True) is None
    True
    >>> check_string("  ", "dataset", "f", optional=True)
    Traceback (most recent call last):
    ...
    ValueError: The 'dataset' parameter of f must be a non-empty string or None, got '  '
    """
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip() or (valid is not None and not valid(value)):
        wanted = expected or ("a non-empty string or None" if optional else "a non-empty string")
        raise _fail(name, function, wanted, value)
    return value


def check_type(value: object, name: str, function: str, types: type | tuple[type, ...], expected: str) -> Any:
    """Return ``value`` when it is an instance of ``types``; raise a TypeError naming its type otherwise.

    >>> check_type(1, "fig", "save", str, "a matplotlib Figure")
    Traceback (most recent call last):
    ...
    TypeError: The 'fig' parameter of save must be a matplotlib Figure, got int
    """
    if not isinstance(value, types):
        raise TypeError(f"The '{name}' parameter of {function} must be {expected}, got {type(value).__name__}")
    return value


def check_mapping(
    value: object, name: str, function: str, *, valid: Callable[[object], bool], expected: str
) -> dict[str, Any]:
    """Return ``value`` as a dict when it maps strings to values ``valid`` accepts; raise otherwise.

    ``expected`` names one value (``"colour"``); a wrong kind is a TypeError, wrong values a ValueError
    that lists them.

    >>> check_mapping({"a": -1}, "palette", "f", valid=lambda v: v > 0, expected="positive number")
    Traceback (most recent call last):
    ...
    ValueError: The 'palette' parameter of f must map names to positive numbers, got {'a': -1}
    """
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise _fail(name, function, f"a mapping name -> {expected}", value, TypeError)
    bad = {key: item for key, item in value.items() if not valid(item)}
    if bad:
        raise ValueError(f"The '{name}' parameter of {function} must map names to {expected}s, got {bad!r}")
    return dict(value)


def check_interval(value: object, name: str, function: str) -> tuple[float, float]:
    """Return ``value`` as ``(low, high)`` floats when it is a pair of numbers with low <= high; raise otherwise.

    >>> check_interval((10, 6), "turns", "f")
    Traceback (most recent call last):
    ...
    ValueError: The 'turns' parameter of f must be (low, high) with low <= high, got (10, 6)
    """
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 2:
        raise _fail(name, function, "(low, high) with low <= high", value)
    low, high = (check_number(item, name, function) for item in value)
    if not low <= high:
        raise _fail(name, function, "(low, high) with low <= high", value)
    return low, high


def check_bool(value: object, name: str, function: str) -> bool:
    """Return ``value`` when it is a bool (True or False, not 0 or 1); raise TypeError otherwise.

    >>> check_bool(False, "cache", "f")
    False
    >>> check_bool(1, "cache", "f")
    Traceback (most recent call last):
    ...
    TypeError: The 'cache' parameter of f must be a bool, got 1
    """
    if not isinstance(value, bool):
        raise _fail(name, function, "a bool", value, TypeError)
    return value


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


#: :func:`check_string` under its older name (one checker; new code calls ``check_string``).
check_text = check_string
