"""Write and read depthlab tables as CSV or Parquet, chosen by the file suffix."""

from __future__ import annotations

from pathlib import Path

import polars as pl


def write_table(df: pl.DataFrame, path: str | Path) -> Path:
    """Write ``df`` to ``path``: ``.parquet`` keeps dtypes; ``.csv`` writes list columns as JSON arrays.

    The file is written to a temporary name and renamed, so a reader never sees half a table.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in {".csv", ".parquet"}:
        raise ValueError(f"The output file must end in .csv or .parquet, got {str(path)!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    if suffix == ".parquet":
        df.write_parquet(tmp)
    else:
        nested = [name for name, dtype in df.schema.items() if isinstance(dtype, pl.List | pl.Struct | pl.Array)]
        flat = df.with_columns(pl.col(name).map_elements(_json_list, return_dtype=pl.String) for name in nested)
        flat.write_csv(tmp)
    tmp.replace(path)
    return path


def _json_list(value: object) -> str:
    import json

    return json.dumps(value.to_list() if isinstance(value, pl.Series) else value)
