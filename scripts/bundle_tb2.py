"""Convert the published TB2 facts (tb2_tasks.csv, tb2_public_results.csv) into depthlab's bundled tables.

Run once by a maintainer when the published tables change::

    .venv/bin/python scripts/bundle_tb2.py /path/to/folder/with/the/csvs

It writes ``depthlab/datasets/data/tb2/{tasks,trials}.parquet`` in depthlab's own schema (the
tasks table and the trials table, status decided at load time), with the upstream source of
each row in ``source`` (repository@commit:path) instead of a local path. The provenance note is
``depthlab/datasets/data/tb2/PROVENANCE.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

from depthlab.datasets import tb2

OUT = Path(__file__).resolve().parents[1] / "depthlab" / "datasets" / "data" / "tb2"


def main(folder: str) -> int:
    root = Path(folder)
    tasks = tb2.tasks_from_csv(root / tb2.TASKS_CSV)
    raw = pl.read_csv(root / tb2.TASKS_CSV, infer_schema_length=0)
    upstream = raw.select(
        task=pl.col("task_id"),
        upstream=pl.concat_str(
            pl.col("source_repo"), pl.lit("@"), pl.col("source_commit"), pl.lit(":"), pl.col("source_path")
        ),
    )
    tasks = (
        tasks.join(upstream, on="task", how="left", maintain_order="left")
        .with_columns(source=pl.col("upstream"))
        .drop("upstream")
    )
    trials = tb2.public_trials_from_csv(root / tb2.PUBLIC_RESULTS_CSV, status_rule="all")
    # the CSV's source is already repository@commit:path of each trial's result.json
    OUT.mkdir(parents=True, exist_ok=True)
    tasks.write_parquet(OUT / "tasks.parquet", compression="zstd", statistics=False)
    trials.write_parquet(OUT / "trials.parquet", compression="zstd", statistics=False)
    print(f"{tasks.height} tasks, {trials.height} trials -> {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
