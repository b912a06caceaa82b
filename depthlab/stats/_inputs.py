"""Checking and converting what the public functions of depthlab.stats are given."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import polars as pl

from depthlab._checks import check_choice, check_nonnegative_int, check_number, parameter_error, parameter_problem

Method = Literal["bca", "percentile"]
Seed = int | np.random.Generator | None
Order = Sequence[Any] | Mapping[str, Sequence[Any]] | None

_METHODS: tuple[str, ...] = ("bca", "percentile")


def _check_common(
    function: str, *, columns: list[str], names: Sequence[str], n_boot: Any, ci: Any, method: Any
) -> None:
    check_choice(method, "method", function, _METHODS)
    check_number(ci, "ci", function, low=0, high=1, low_open=True, high_open=True, kind="a float")
    check_nonnegative_int(n_boot, "n_boot", function)
    for i, column in enumerate(columns):
        if not isinstance(column, str):
            raise parameter_error(names[i], function, "a column name", column)
        if column in columns[:i]:
            raise parameter_problem(
                names[i],
                function,
                f"names column {column!r}, which is already used as '{names[columns.index(column)]}': "
                "each column may appear once",
            )


def _as_column_list(columns: str | Sequence[str] | None, name: str, function: str) -> list[str]:
    if columns is None:
        return []
    if isinstance(columns, str):
        return [columns]
    if isinstance(columns, Sequence):
        return list(columns)
    raise parameter_error(name, function, "a column name, a list of them or None", columns)


def _as_polars(df: Any, function: str) -> pl.DataFrame:
    if isinstance(df, pl.DataFrame):
        return df
    if _is_pandas(df):
        return _pandas_as_polars(df)
    raise parameter_problem("df", function, f"must be a polars or pandas DataFrame, got {type(df).__name__}")


def _is_pandas(df: Any) -> bool:
    return type(df).__module__.startswith("pandas") and hasattr(df, "columns") and hasattr(df, "dtypes")


def _pandas_as_polars(df: Any) -> pl.DataFrame:
    """pandas -> polars, ordered Categoricals as their string values (their order is read by _pandas_orders)."""
    ordered = list(_pandas_orders(df))
    if ordered:
        df = df.astype(dict.fromkeys(ordered, "string"))
    return pl.from_pandas(df)


def _pandas_orders(df: Any) -> dict[str, list[str]]:
    """Categories, lowest first, of the ordered Categorical columns of a pandas frame."""
    import pandas as pd

    return {
        c: [str(v) for v in df[c].cat.categories]
        for c in df.columns
        if isinstance(df[c].dtype, pd.CategoricalDtype) and df[c].dtype.ordered
    }


def _require_columns(frame: pl.DataFrame, columns: Sequence[str], names: Sequence[str], function: str) -> None:
    for column, name in zip(columns, names, strict=True):
        if column not in frame.columns:
            raise parameter_problem(
                name, function, f"names column {column!r}, which is not in the frame (columns: {frame.columns})"
            )


def _is_numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric() or dtype == pl.Boolean


def _require_numeric(frame: pl.DataFrame, column: str, name: str, function: str) -> None:
    dtype = frame.schema[column]
    if not _is_numeric(dtype):
        raise parameter_problem(name, function, f"names column {column!r} of dtype {dtype}, which is not numeric")


def _numeric_frame(
    df: Any, columns: list[str], names: Sequence[str], order: Order, function: str, cluster: str | None
) -> tuple[pl.DataFrame, int]:
    """The used columns as Float64 (ordinal labels as their category positions), rows with nulls dropped."""
    orders: dict[str, list[Any]] = _pandas_orders(df) if _is_pandas(df) else {}
    frame = _as_polars(df, function)
    keys = [cluster] if cluster is not None else []
    _require_columns(frame, [*columns, *keys], (*names, *["cluster"] * len(keys)), function)
    if cluster is not None and cluster in columns:
        raise parameter_problem("cluster", function, f"names column {cluster!r}, which is also correlated")
    orders.update(_resolve_order(frame, columns, names, order, function))
    converted = []
    for column, name in zip(columns, names, strict=True):
        dtype = frame.schema[column]
        if column in orders:
            converted.append(_ordinal_positions(frame, column, name, orders[column], function))
        elif isinstance(dtype, pl.Enum):
            converted.append(pl.col(column).to_physical().cast(pl.Float64))
        elif _is_numeric(dtype):
            converted.append(pl.col(column).cast(pl.Float64).fill_nan(None))
        else:
            raise parameter_problem(
                name,
                function,
                f"names column {column!r} of dtype {dtype}, which is not numeric; give an ordinal label its "
                "categories with order=[lowest, ..., highest]",
            )
    selected = frame.select(*[pl.col(k) for k in keys], *converted)
    kept = selected.drop_nulls()
    return kept, selected.height - kept.height


def _resolve_order(
    frame: pl.DataFrame, columns: list[str], names: Sequence[str], order: Order, function: str
) -> dict[str, list[Any]]:
    if order is None:
        return {}
    if isinstance(order, Mapping):
        unknown = [c for c in order if c not in columns]
        if unknown:
            raise parameter_problem("order", function, f"names columns that are not used: {unknown}")
        return {c: list(v) for c, v in order.items()}
    if isinstance(order, str) or not isinstance(order, Sequence):
        raise parameter_error("order", function, "a list of categories or a mapping", order)
    labels = [c for c in columns if not _is_numeric(frame.schema[c])]
    if len(labels) != 1:
        raise parameter_problem(
            "order",
            function,
            f"is a list, which applies to the one non-numeric column, but {len(labels)} are non-numeric "
            f"({labels}); pass a mapping {{column: categories}}",
        )
    return {labels[0]: list(order)}


def _ordinal_positions(frame: pl.DataFrame, column: str, name: str, order: list[Any], function: str) -> pl.Expr:
    if len(set(order)) != len(order):
        raise parameter_problem("order", function, f"repeats a category of column {column!r}: {order!r}")
    as_text = pl.col(column).cast(pl.String)
    present = frame.select(as_text.drop_nulls().unique()).to_series().to_list()
    unknown = sorted(set(present) - {str(v) for v in order})
    if unknown:
        raise parameter_problem(
            name, function, f"names column {column!r}, whose values {unknown} are not in its order {order!r}"
        )
    positions = {str(v): float(i) for i, v in enumerate(order)}
    return as_text.replace_strict(positions, default=None, return_dtype=pl.Float64).alias(column)


def _roles(k: int) -> tuple[str, ...]:
    """Parameter names of the columns x, y, covar..."""
    return ("x", "y", *["covar"] * k)


def _check_rows(values: np.ndarray, columns: list[str], names: Sequence[str], k: int, function: str) -> None:
    n = len(values)
    if n < k + 3:
        raise parameter_problem(
            "df", function, f"must have at least k + 3 = {k + 3} rows without nulls for {k} covariate(s), got {n}"
        )
    for c in range(values.shape[1]):
        if np.all(values[:, c] == values[0, c]):
            raise parameter_problem(
                names[c],
                function,
                f"names a constant column ({columns[c]!r}, every value {values[0, c]!r}): "
                "its rank correlation is undefined",
            )


def _as_float_vector(values: Any, name: str) -> np.ndarray:
    if isinstance(values, pl.Series):
        values = values.cast(pl.Float64).fill_null(math.nan).to_numpy()
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise parameter_problem(name, "sign_test", f"must be numbers, got {values!r:.80}") from None
    if array.ndim != 1:
        raise parameter_problem(name, "sign_test", f"must be one-dimensional, got shape {array.shape}")
    return array
