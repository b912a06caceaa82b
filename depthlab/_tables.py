"""Write and read depthlab tables as CSV or Parquet, chosen by the file suffix."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Final

import polars as pl

from depthlab._atomic import atomic_path

#: The file suffixes a table can be written as.
TABLE_SUFFIXES: Final[tuple[str, ...]] = (".csv", ".parquet")


def output_table(text: str) -> Path:
    """An argparse ``type`` for ``-o FILE``: the suffix is checked when the command line is read, before any work.

    >>> output_table("out/depth.csv").name
    'depth.csv'
    >>> output_table("x.xlsx")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: the output file must end in .csv or .parquet, got 'x.xlsx'
    """
    path = Path(text)
    if path.suffix.lower() not in TABLE_SUFFIXES:
        raise argparse.ArgumentTypeError(f"the output file must end in .csv or .parquet, got {text!r}")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"the output file must be a file, got the folder {text!r}")
    return path


def write_table(df: pl.DataFrame, path: str | Path) -> Path:
    """Write ``df`` to ``path``: ``.parquet`` keeps dtypes; ``.csv`` writes list columns as JSON arrays.

    The file is written to a temporary name and renamed, so a reader never sees half a table.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise ValueError(f"The output file must end in .csv or .parquet, got {str(path)!r}")
    with atomic_path(path) as tmp:  # a reader never sees half a table
        if suffix == ".parquet":
            df.write_parquet(tmp)
        else:
            nested = [name for name, dtype in df.schema.items() if isinstance(dtype, pl.List | pl.Struct | pl.Array)]
            flat = df.with_columns(pl.col(name).map_elements(_json_list, return_dtype=pl.String) for name in nested)
            flat.write_csv(tmp)
    return path


def _json_list(value: object) -> str:
    import json

    return json.dumps(value.to_list() if isinstance(value, pl.Series) else value)
