"""Read the trajectory depth proxy of the real TB2 job with trajectories into a bundled per-trial table.

Run once by a maintainer when the job or the proxy's rule changes::

    .venv/bin/python scripts/bundle_tb2_proxy.py /path/to/tb2-jobs/tmax-27b

It writes ``depthlab/datasets/data/tb2/proxy_trials.parquet``: one row per trial of the job (the
columns of ``depth_proxy(per="trial")`` and the rule's version), numbers depthlab computed from the
published trajectories; no trajectory text is kept. Its provenance is in
``depthlab/datasets/data/tb2/PROVENANCE.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

import depthlab as dl
from depthlab.measures.proxy import RULE_VERSION

OUT = Path(__file__).resolve().parents[1] / "depthlab" / "datasets" / "data" / "tb2" / "proxy_trials.parquet"


def main(job: str) -> int:
    trials = dl.load_trials(job, dataset="tb2", cache=False, strict=True)
    per_trial = dl.depth_proxy(trials, per="trial", cache=False, strict=True)
    per_trial.with_columns(rule_version=pl.lit(RULE_VERSION, dtype=pl.Int32)).write_parquet(OUT)
    print(f"wrote {per_trial.height} trials to {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
