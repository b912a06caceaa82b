"""Price tables: list prices per token, the one shipped with depthlab or a user's file.

The shipped table (``depthlab/io/data/prices.csv``) holds the public model prices LiteLLM publishes,
three numbers per model (input, output and cache-read US dollars per token), in depthlab's own
format; ``prices.md`` beside it says which LiteLLM release and date they come from
(:func:`price_provenance`), and ``scripts/update_prices.py`` rewrites both from a newer LiteLLM.
A user's table is a CSV with the same columns (``schema.PRICES``).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path

import polars as pl

from depthlab._checks import check_path
from depthlab.schema import PRICES

_SHIPPED = ("io", "data", "prices.csv")
_PROVENANCE = ("io", "data", "prices.md")


def read_prices(path: str | Path | None = None) -> pl.DataFrame:
    """Read a price table: the one shipped with depthlab (``None``) or a user's CSV.

    Parameters
    ----------
    path : str, Path or None
        A CSV with the columns of ``schema.PRICES`` (``model``, ``input_usd_per_token``,
        ``output_usd_per_token``, ``cache_read_usd_per_token``; the last may be empty). None: the
        table shipped with depthlab, LiteLLM's published prices (:func:`price_provenance`).

    Returns
    -------
    polars.DataFrame
        One row per model, columns of ``schema.PRICES``.

    Raises
    ------
    ValueError
        The file lacks a column, a price is not a non-negative number, or a model is listed twice;
        the message names the file and the row.

    Examples
    --------
    >>> prices = read_prices()
    >>> prices.filter(pl.col("model") == "gpt-4o").row(0)
    ('gpt-4o', 2.5e-06, 1e-05, 1.25e-06)
    """
    function = "read_prices"
    if path is None:
        source = files("depthlab").joinpath(*_SHIPPED)
        where = "depthlab's price table"
        text = source.read_text(encoding="utf-8")
    else:
        file = check_path(path, "path", function, kind="file")
        where = str(file)
        text = file.read_text(encoding="utf-8")
    try:
        raw = pl.read_csv(text.encode(), infer_schema=False)
    except pl.exceptions.PolarsError as error:
        raise ValueError(f"{where}: not a CSV price table ({error})") from error
    missing = [c for c in PRICES if c not in raw.columns]
    if missing:
        raise ValueError(f"{where}: no column {', '.join(missing)} (a price table has {', '.join(PRICES)})")
    rows = []
    for number, row in enumerate(raw.select(list(PRICES)).iter_rows(named=True), start=2):
        model = (row["model"] or "").strip()
        if not model:
            raise ValueError(f"{where}, line {number}: no model name")
        prices = [_price(row[c], c, where, number, optional=c == "cache_read_usd_per_token") for c in list(PRICES)[1:]]
        rows.append((model, *prices))
    table = pl.DataFrame(rows, schema=PRICES, orient="row")
    twice = table.filter(pl.col("model").is_duplicated())["model"].unique().sort().to_list()
    if twice:
        raise ValueError(f"{where}: models listed more than once: {', '.join(twice[:5])}")
    return table


def price_provenance() -> str:
    """Where the shipped prices come from: LiteLLM's release, its file and the date they were read.

    >>> "LiteLLM" in price_provenance()
    True
    """
    return files("depthlab").joinpath(*_PROVENANCE).read_text(encoding="utf-8")


def price_source(path: str | Path | None = None) -> str:
    """Where a price table comes from, with its date, in a few words (for a summary line).

    Parameters
    ----------
    path : str, Path or None
        A user's price file (as given to :func:`read_prices`); None: the shipped table, named by
        the LiteLLM release and the date its prices were read (from :func:`price_provenance`).

    Examples
    --------
    >>> price_source()
    "LiteLLM ...'s published prices (read ...)"
    """
    if path is None:
        note = price_provenance()
        release = re.search(r"`litellm` (\S+?),", note)
        read = re.search(r"Extracted: (\d{4}-\d{2}-\d{2})", note)
        version = release.group(1) if release else "(release unknown)"
        return f"LiteLLM {version}'s published prices (read {read.group(1) if read else 'on an unknown date'})"
    file = Path(path)
    try:
        modified = datetime.fromtimestamp(file.stat().st_mtime, tz=UTC).date().isoformat()
    except OSError as error:
        raise ValueError(f"{file}: cannot read the price table ({error.strerror or error})") from error
    return f"the prices in {file} (modified {modified})"


def _price(value: str | None, column: str, where: str, line: int, *, optional: bool) -> float | None:
    """One price cell as a non-negative float (None when empty and the column allows it)."""
    text = (value or "").strip()
    if not text and optional:
        return None
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{where}, line {line}: {column} must be a non-negative number of dollars, got {text!r}")
    return number
