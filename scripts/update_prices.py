"""Rewrite depthlab's price table from the model prices LiteLLM publishes (its package's backup JSON).

Keeps, for every chat, responses or completion model with an input and an output price per token,
those two prices and the cache-read price (empty when LiteLLM states none), in depthlab's own CSV
(``depthlab/io/data/prices.csv``, columns of ``depthlab.schema.PRICES``), and writes the
provenance (LiteLLM's version, the file, the date) to ``prices.md`` beside it.

Run with the python of a venv that has LiteLLM (Harbor's side venv has it):
``$(bash scripts/harbor-venv.sh) scripts/update_prices.py`` from the repository root. It imports
only LiteLLM's metadata and the standard library, so it runs in that venv.
"""

from __future__ import annotations

import csv
import datetime as dt
import importlib.metadata
import io
import json
import os
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "depthlab" / "io" / "data"
MODES = {"chat", "responses", "completion"}


def _atomic_write(path: Path, text: str) -> None:
    # this script runs in LiteLLM's venv, without depthlab: the same rename as depthlab._atomic
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, encoding="utf-8", newline="") as handle:
        handle.write(text)
    os.replace(handle.name, path)


def main() -> None:
    version = importlib.metadata.version("litellm")
    source = next(
        Path(str(f.locate()))
        for f in importlib.metadata.files("litellm") or []
        if f.name == "model_prices_and_context_window_backup.json"
    )
    entries = json.loads(source.read_text(encoding="utf-8"))
    rows = []
    for model, entry in sorted(entries.items()):
        if model == "sample_spec" or not isinstance(entry, dict) or entry.get("mode") not in MODES:
            continue
        prices = [
            entry.get(k) for k in ("input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost")
        ]
        if not all(isinstance(p, int | float) for p in prices[:2]):
            continue
        rows.append([model, *("" if p is None else repr(float(p)) for p in prices)])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["model", "input_usd_per_token", "output_usd_per_token", "cache_read_usd_per_token"])
    writer.writerows(rows)
    _atomic_write(OUT / "prices.csv", buffer.getvalue())
    today = dt.datetime.now(dt.UTC).date().isoformat()
    note = f"""# prices.csv: where the prices come from

- Source: the model prices LiteLLM publishes, read from its PyPI package `litellm` {version}, file
  `litellm/{source.name}` (LiteLLM's offline copy of `model_prices_and_context_window.json`).
- Extracted: {today}, by `scripts/update_prices.py`.
- Kept: {len(rows)} models of mode chat, responses or completion with both an input and an output
  price per token; per model the input, output and cache-read price per token in US dollars (an
  empty cache-read price: LiteLLM states none, depthlab then prices cached tokens as input). Every
  other field (tiers above a context size, batch, flex and priority prices, images, audio) is left out.
- These are public list prices at that date; what a provider billed may differ (discounts, tiers,
  self-hosted models, prices changed since).
"""
    _atomic_write(OUT / "prices.md", note)
    print(f"{len(rows)} models from litellm {version} -> {OUT / 'prices.csv'}")


if __name__ == "__main__":
    main()
