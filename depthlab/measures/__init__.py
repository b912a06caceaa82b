"""Measures on the trials and tasks tables: depth D, turn counts N, pass rates, the audit table, planning.

This package knows tables, not files: every function takes polars frames and returns one.
"""

from __future__ import annotations

from depthlab.measures.audit import CURATION, audit_table
from depthlab.measures.depth import depth_summary, estimate_depth, second_model_effect, second_model_runs
from depthlab.measures.planning import PLAN_MODES, plan_missing, sweep_runs
from depthlab.measures.public import pass_rates, turn_counts

__all__ = [
    "CURATION",
    "PLAN_MODES",
    "audit_table",
    "depth_summary",
    "estimate_depth",
    "pass_rates",
    "plan_missing",
    "second_model_effect",
    "second_model_runs",
    "sweep_runs",
    "turn_counts",
]
