"""Notebook 07, the trajectory depth proxy: its correlations with difficulty, tested the way D is.

The proxy itself (the rule, reading trajectories, its per-task value) is a measure,
:mod:`depthlab.measures.proxy`; this module turns it into findings rows. None of these rows is a
number the paper reports: the paper's figures are for D, and none is set beside a proxy row.

The proxy is experimental and not validated as a depth estimate on real runs: held out, on the TB2
runs of seven models of the TMax release, pass ~ proxy | W is -0.07 (primary rule) and -0.13
(messages variant) against -0.28 for N (the verdict in :mod:`depthlab.measures.proxy`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Final

import polars as pl

from depthlab._defaults import AUDIT_N_BOOT, AUDIT_SEED
from depthlab.auditdata import AuditData
from depthlab.findings._core import correlation_rows, make_frame, make_row, stack
from depthlab.findings._docs import docstring

__all__ = ["PROXY_FINDINGS", "proxy_findings", "proxy_forest_table"]

#: Keys of :func:`proxy_findings` and how the forest plot labels them.
PROXY_FINDINGS: Final[dict[str, str]] = {
    "pcorr_pass_proxy_given_work": "pass ~ proxy | W",
    "pcorr_pass_turns_given_work_proxy_tasks": "pass ~ N | W",
    "pcorr_pass_turns_given_proxy": "pass ~ N | proxy",
    "pcorr_rating_proxy_given_work": "rating ~ proxy | W",
}


@docstring
def proxy_findings(data: AuditData, *, n_boot: int = AUDIT_N_BOOT, seed: int = AUDIT_SEED) -> pl.DataFrame:
    """The proxy's findings: pass rate and rating against the proxy given W, and N against pass rate.

    Per collection (and pooled when there are several), on the tasks with a proxy, W and a public
    pass rate: pass rate with the proxy given W, with N given W (on the same tasks), with N given
    the proxy, and the human difficulty rating with the proxy given W (keys
    :data:`PROXY_FINDINGS`); and ``tasks_with_proxy`` and ``share_proxy_on_depth_rung`` per
    collection. None of these is a number the paper reports: its figures are for D.

    Parameters
    ----------
    {data}
    {n_boot_seed}

    {returns}

    Examples
    --------
    >>> from depthlab.auditdata import audit_data
    >>> table = proxy_findings(audit_data("tb2"), n_boot=0)
    >>> table.filter(key="tasks_with_proxy")["value"].item()  # the tasks TMax-27B passed at least once
    47.0
    """
    from depthlab.measures.proxy import proxy_correlations, proxy_summary

    audit = data.audit.filter(pl.col("proxy_depth").is_not_null())
    sample = dataclasses.replace(data, audit=audit)
    questions = (
        ("proxy_depth", "work", "pcorr_pass_proxy_given_work"),
        ("n_turns", "work", "pcorr_pass_turns_given_work_proxy_tasks"),
        ("n_turns", "proxy_depth", "pcorr_pass_turns_given_proxy"),
    )
    tables = [
        correlation_rows(sample, x, "pass_rate", covar, key, solved=False, pairs=False, n_boot=n_boot, seed=seed)
        for x, covar, key in questions
    ]
    ratings = proxy_correlations(data.audit, n_boot=n_boot, seed=seed)
    rows = []
    for row in ratings.filter(pl.col("question") == "rating ~ proxy | W").iter_rows(named=True):
        has_ci = row["ci_low"] is not None and math.isfinite(row["ci_low"])
        rows.append(
            make_row(
                data,
                "pcorr_rating_proxy_given_work",
                row["dataset"],
                row["r"],
                low=row["ci_low"] if has_ci else None,
                high=row["ci_high"] if has_ci else None,
                interval="ci95" if has_ci else None,
                p=row["p"],
                n=row["n"] or 0,
                unit="tasks",
                collections=[row["dataset"]],
                detail=row["note"] or "covariate: work; human ratings easy < medium < hard",
            )
        )
    for row in proxy_summary(data.audit).iter_rows(named=True):
        rows.append(
            make_row(
                data,
                "tasks_with_proxy",
                row["dataset"],
                row["n_proxy"],
                n=row["n_tasks"],
                unit="tasks",
                collections=[row["dataset"]],
                detail="a passing uncapped run with a readable trajectory",
            )
        )
        rows.append(
            make_row(
                data,
                "share_proxy_on_depth_rung",
                row["dataset"],
                row["share_same_rung"],
                n=row["n_both"],
                unit="tasks with a proxy and D",
                collections=[row["dataset"]],
            )
        )
    return stack([*tables, make_frame(rows)])


def proxy_forest_table(findings: pl.DataFrame) -> pl.DataFrame:
    """The correlation rows of :func:`proxy_findings` as :func:`depthlab.plots.forest` draws them.

    No paper values: the paper reports D, not the proxy.

    Parameters
    ----------
    findings : pl.DataFrame
        Findings tables stacked (:func:`depthlab.findings.stack`); rows other than :data:`PROXY_FINDINGS` are ignored.

    Returns
    -------
    pl.DataFrame
        label, dataset (null when pooled), r, ci_low, ci_high, n, p.
    """
    rows = findings.filter(pl.col("key").is_in(list(PROXY_FINDINGS)) & pl.col("value").is_not_null())
    return rows.select(
        label=pl.col("group") + pl.lit(": ") + pl.col("key").replace_strict(PROXY_FINDINGS),
        dataset=pl.when(pl.col("group") != "all").then(pl.col("group")),
        r=pl.col("value"),
        ci_low="ci_low",
        ci_high="ci_high",
        n="n",
        p="p",
    )
