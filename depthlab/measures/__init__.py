"""Measures on the trials and tasks tables: depth D, turn counts N, pass rates, the audit table, planning.

This package knows tables, not files: every function takes polars frames and returns one.
"""

from __future__ import annotations

from depthlab.measures.audit import CURATION, audit_table
from depthlab.measures.censored import censored_depth, censored_distribution
from depthlab.measures.depth import (
    depth_intervals,
    depth_posterior,
    depth_summary,
    estimate_depth,
    second_model_effect,
    second_model_runs,
)
from depthlab.measures.planning import PLAN_MODES, plan_missing, sweep_runs
from depthlab.measures.pricing import (
    COST_ROUNDING_USD,
    COST_TOLERANCE,
    cost_per_depth,
    cost_per_task,
    cost_per_turn,
    price_depth,
    price_trials,
)
from depthlab.measures.proxy import depth_proxy, proxy_correlations, rung_agreement, turn_dependencies
from depthlab.measures.public import pass_rates, turn_counts
from depthlab.measures.reliability import depth_by_rule, split_half_depth

__all__ = [
    "COST_ROUNDING_USD",
    "COST_TOLERANCE",
    "CURATION",
    "PLAN_MODES",
    "audit_table",
    "censored_depth",
    "censored_distribution",
    "cost_per_depth",
    "cost_per_task",
    "cost_per_turn",
    "depth_by_rule",
    "depth_intervals",
    "depth_posterior",
    "depth_proxy",
    "depth_summary",
    "estimate_depth",
    "pass_rates",
    "plan_missing",
    "price_depth",
    "price_trials",
    "proxy_correlations",
    "rung_agreement",
    "second_model_effect",
    "second_model_runs",
    "split_half_depth",
    "sweep_runs",
    "turn_counts",
    "turn_dependencies",
]
