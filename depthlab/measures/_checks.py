"""Validation of the measures' public parameters (scikit-learn-style messages)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import polars as pl

PASS_RULES: tuple[str, ...] = ("any", "majority")


def check_frame(df: object, name: str, function: str, columns: Iterable[str]) -> pl.DataFrame:
    """Return ``df`` when it is a polars DataFrame holding ``columns``; raise otherwise."""
    if not isinstance(df, pl.DataFrame):
        raise TypeError(f"The '{name}' parameter of {function} must be a polars DataFrame, got {type(df).__name__}")
    missing = [column for column in columns if column not in df.columns]
    if missing:
        raise ValueError(f"The '{name}' parameter of {function} must have the columns {missing}, got {df.columns}")
    return df


def check_caps(caps: object, function: str) -> tuple[int, ...]:
    """Return ``caps`` as a tuple of strictly increasing positive ints; raise otherwise."""
    if isinstance(caps, str | bytes) or not isinstance(caps, Iterable):
        raise TypeError(f"The 'caps' parameter of {function} must be a sequence of positive ints, got {caps!r}")
    values = tuple(caps)
    if (
        not values
        or any(isinstance(cap, bool) or not isinstance(cap, int) or cap < 1 for cap in values)
        or any(a >= b for a, b in itertools.pairwise(values))
    ):
        raise ValueError(
            f"The 'caps' parameter of {function} must be a non-empty, strictly increasing sequence of positive ints, "
            f"got {caps!r}"
        )
    return values


def check_models(models: object, function: str, *, required: bool = False) -> tuple[str, ...] | None:
    """Return ``models`` as a tuple of distinct non-empty strings (or None when allowed)."""
    if models is None and not required:
        return None
    if isinstance(models, str) or not isinstance(models, Sequence | set | frozenset):
        raise TypeError(f"The 'models' parameter of {function} must be a sequence of model names, got {models!r}")
    values = tuple(models)
    if (
        not values
        or any(not isinstance(model, str) or not model for model in values)
        or len(set(values)) != len(values)
    ):
        raise ValueError(
            f"The 'models' parameter of {function} must be a non-empty sequence of distinct model names, got {models!r}"
        )
    return values


def check_choice(value: object, name: str, function: str, choices: Sequence[str]) -> str:
    """Return ``value`` when it is one of ``choices``; raise otherwise."""
    if value not in choices:
        raise ValueError(f"The '{name}' parameter of {function} must be one of {list(choices)}, got {value!r}")
    return str(value)


def check_positive_int(value: object, name: str, function: str) -> int:
    """Return ``value`` when it is an int >= 1; raise otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"The '{name}' parameter of {function} must be an int >= 1, got {value!r}")
    return value
