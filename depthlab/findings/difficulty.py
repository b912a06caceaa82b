"""Notebook 03, depth predicts difficulty: rank partial correlations of the pass rate with D, N and W."""

from __future__ import annotations

import polars as pl

from depthlab._defaults import AUDIT_N_BOOT, AUDIT_SEED
from depthlab.auditdata import AuditData
from depthlab.findings._core import (
    POOLED_GROUPS,
    correlation_rows,
    with_paper_rows,
)
from depthlab.findings._docs import docstring

# ---------------------------------------------------------------------------------------------
# depth predicts difficulty


@with_paper_rows
@docstring
def pass_depth_given_work(data: AuditData, *, n_boot: int = AUDIT_N_BOOT, seed: int = AUDIT_SEED) -> pl.DataFrame:
    """Rank partial correlation of the public pass rate with D given W.

    Paper: −0.49 on TB2, −0.31 on the 105 solved TB2 and TW tasks, −0.29 [−0.53, −0.02] on the
    authors' own tasks (52), and −0.31 when pooled: its own tasks with the solved TB2 and TW
    tasks. Solved tasks with a public pass rate and W. One collection: the rank partial
    correlation, BCa bootstrap CI over tasks. Several collections (``tb2+tw``; ``pooled``, the
    paper's: DEPTH-style set, TB2 and TW, computed only when all three are present; ``all``, every
    collection present): the **within-collection** statistic of
    :func:`depthlab.findings._pooled.within_collection_partial`: within each collection D, W and
    the pass rate become percentile ranks, ``(rank − 0.5) / n``, so each has mean 0.5 in every
    collection; pooled, the partial correlation of those percentiles is a sum of within-collection
    covariances, and a difference between collections (pass rates from other model sets, a deep
    collection with low rates) is never read as a correlation. Its CI is a stratified bootstrap.

    Rows ``pcorr_pass_depth_given_work`` per collection, ``tb2+tw``, ``pooled`` and ``all``.

    Parameters
    ----------
    {data}
    {n_boot_seed}

    {returns}
    """
    return correlation_rows(
        data,
        "depth",
        "pass_rate",
        "work",
        "pcorr_pass_depth_given_work",
        solved=True,
        pairs=True,
        n_boot=n_boot,
        seed=seed,
    )


@with_paper_rows
@docstring
def pass_turns_given_depth(data: AuditData, *, n_boot: int = AUDIT_N_BOOT, seed: int = AUDIT_SEED) -> pl.DataFrame:
    """Rank partial correlation of the public pass rate with N given D: once D is known, does N add anything?

    Paper: +0.06 [−0.18, +0.26] on TB2 + TW. Solved tasks with a public pass rate and N.

    Rows ``pcorr_pass_turns_given_depth`` per collection, and over several collections (``tb2+tw``,
    ``pooled``, ``all``) within-collection, as :func:`pass_depth_given_work`.

    Parameters
    ----------
    {data}
    {n_boot_seed}

    {returns}
    """
    return correlation_rows(
        data,
        "n_turns",
        "pass_rate",
        "depth",
        "pcorr_pass_turns_given_depth",
        solved=True,
        pairs=True,
        n_boot=n_boot,
        seed=seed,
    )


@docstring
def pass_turns_given_work(data: AuditData, *, n_boot: int = AUDIT_N_BOOT, seed: int = AUDIT_SEED) -> pl.DataFrame:
    """Rank partial correlation of the public pass rate with N given W (needs no capped runs).

    Not a number the paper reports; it runs on public leaderboard data alone. Every task with a
    public pass rate, N and W.

    Rows ``pcorr_pass_turns_given_work`` per collection and ``all`` (within-collection, as
    :func:`pass_depth_given_work`).

    Parameters
    ----------
    {data}
    {n_boot_seed}

    {returns}
    """
    return correlation_rows(
        data,
        "n_turns",
        "pass_rate",
        "work",
        "pcorr_pass_turns_given_work",
        solved=False,
        pairs=False,
        n_boot=n_boot,
        seed=seed,
    )


def forest_table(findings: pl.DataFrame) -> pl.DataFrame:
    """The correlation rows of findings tables as :func:`depthlab.plots.forest` draws them.

    The paper's value (``paper``) is set on the row computing the same statistic on the same group
    (:func:`depthlab.paper.reported_for`), and only there.
    """
    from depthlab import paper
    from depthlab.catalog import name

    labels = {
        "pcorr_pass_depth_given_work": "pass ~ D | W",
        "pcorr_pass_turns_given_depth": "pass ~ N | D",
        "pcorr_pass_turns_given_work": "pass ~ N | W",
    }
    rows = []
    for row in findings.filter(pl.col("key").is_in(list(labels)) & pl.col("value").is_not_null()).iter_rows(named=True):
        group = row["group"]
        shown = f"{POOLED_GROUPS[group]} (within)" if group in POOLED_GROUPS else name(group)
        reported = paper.reported_for(row["key"], group)
        rows.append(
            {
                "label": f"{shown}: {labels[row['key']]}",
                "dataset": None if group in POOLED_GROUPS else group,
                "r": row["value"],
                "ci_low": row["ci_low"],
                "ci_high": row["ci_high"],
                "n": row["n"],
                "p": row["p"],
                "paper": None if reported is None else reported.value,
                "data": row["data"],
            }
        )
    columns = {
        "label": pl.String,
        "dataset": pl.String,
        "r": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "n": pl.Int64,
        "p": pl.Float64,
        "paper": pl.Float64,
        "data": pl.String,  # simulated or real: the figure says so inside the image
    }
    return pl.DataFrame(rows, schema=columns)
