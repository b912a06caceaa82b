"""D's reliability from runs with two or more attempts per cell: split-half D and its agreement.

Each cell's valid attempts are split in two at random (half of them, rounded down, to one side;
cells with one attempt go whole to a random side), D is estimated on each half with the same rule,
and the two halves are compared over the tasks solved or unsolved in both: the share equal, the
share within one rung (an unsolved task is one rung above the top cap), and the rank (Spearman)
correlation of the rungs. Repeated ``repeats`` times with fresh splits; the table gives the mean
over repeats. Agreement is of two half-size measurements: D from all the attempts agrees with
itself more than this says.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from scipy import stats as _scipy_stats

from depthlab._checks import PASS_RULES, check_caps, check_choice, check_frame, check_positive_int
from depthlab._defaults import AUDIT_SEED
from depthlab.measures.depth import TASK_KEYS, estimate_depth
from depthlab.schema import CAPS

_CELL = ("dataset", "task", "model", "cap")


def split_half_depth(
    trials: pl.DataFrame,
    *,
    repeats: int = 20,
    caps: Sequence[int] = CAPS,
    pass_rule: str = "any",
    seed: int = AUDIT_SEED,
) -> pl.DataFrame:
    """Split-half agreement of D per collection (module docstring).

    Parameters
    ----------
    trials : pl.DataFrame
        The trials table (capped runs; columns dataset, task, model, cap, status).
    repeats : int, default 20
        Random splits.
    caps, pass_rule
        As in :func:`estimate_depth`.
    seed : int, default 0

    Returns
    -------
    pl.DataFrame
        Columns dataset, n_tasks (mean tasks compared per split), n_multi_cells (cells with two or
        more valid attempts), share_equal, share_within_one, rank_corr (mean over splits; null
        when a half is constant).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> rows = [("t1", 1, "pass"), ("t1", 1, "pass"), ("t2", 1, "fail"), ("t2", 1, "fail"),
    ...         ("t2", 2, "pass"), ("t2", 2, "pass")]
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": [r[0] for r in rows], "model": "m",
    ...     "cap": [r[1] for r in rows], "status": [r[2] for r in rows]}), "trials")
    >>> split_half_depth(trials, repeats=3, caps=[1, 2]).select("share_equal", "share_within_one").row(0)
    (1.0, 1.0)
    """
    function = "split_half_depth"
    check_frame(trials, "trials", function, (*_CELL, "status"))
    repeats = check_positive_int(repeats, "repeats", function)
    caps = check_caps(caps, function)
    pass_rule = check_choice(pass_rule, "pass_rule", function, PASS_RULES)
    valid = trials.filter(
        pl.col("cap").is_in(caps) & pl.col("status").is_in(("pass", "fail")) & pl.col("model").is_not_null()
    )
    valid = valid.select(*_CELL, "status").sort(_CELL)
    multi = valid.group_by(["dataset", "task", "model", "cap"]).len().filter(pl.col("len") >= 2)
    rng = np.random.default_rng(seed)
    per: dict[str | None, list[tuple[int, float, float, float | None]]] = {}
    for _ in range(repeats):
        depth_a, depth_b = _split_depths(valid, rng, caps, pass_rule)
        for dataset, agreement in _agreement(depth_a, depth_b, caps):
            per.setdefault(dataset, []).append(agreement)
    rows = [_summary_row(dataset, values, multi) for dataset, values in sorted(per.items(), key=lambda i: str(i[0]))]
    schema = {
        "dataset": pl.String(),
        "n_tasks": pl.Float64(),
        "n_multi_cells": pl.Int64(),
        "share_equal": pl.Float64(),
        "share_within_one": pl.Float64(),
        "rank_corr": pl.Float64(),
    }
    return pl.DataFrame(rows, schema=schema)


def _split_depths(
    valid: pl.DataFrame, rng: np.random.Generator, caps: Sequence[int], pass_rule: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """D of each half of one random split of every cell's attempts (one draw per attempt)."""
    halves = valid.with_columns(
        _u=pl.Series(rng.random(valid.height)),
    ).with_columns(_order=pl.col("_u").rank("ordinal").over(list(_CELL)), _n=pl.len().over(list(_CELL)))
    # half of each cell's attempts (rounded down) to side A; a lone attempt to a random side
    side_a = pl.when(pl.col("_n") == 1).then(pl.col("_u") < 0.5).otherwise(pl.col("_order") <= pl.col("_n") // 2)
    halves = halves.with_columns(_a=side_a)
    depth_a = estimate_depth(
        halves.filter(pl.col("_a")).drop("_u", "_order", "_n", "_a"), caps=caps, pass_rule=pass_rule
    )
    depth_b = estimate_depth(
        halves.filter(~pl.col("_a")).drop("_u", "_order", "_n", "_a"), caps=caps, pass_rule=pass_rule
    )
    return depth_a, depth_b


def _agreement(
    depth_a: pl.DataFrame, depth_b: pl.DataFrame, caps: Sequence[int]
) -> list[tuple[str | None, tuple[int, float, float, float | None]]]:
    """Per collection: tasks compared, share equal, share within one rung, rank correlation (or None)."""
    rung = {cap: i for i, cap in enumerate(caps)}
    both = depth_a.join(depth_b, on=list(TASK_KEYS), suffix="_b").filter(
        pl.col("status").is_in(("solved", "unsolved")) & pl.col("status_b").is_in(("solved", "unsolved"))
    )
    out = []
    for (dataset,), group in both.group_by("dataset"):
        a = np.array([rung.get(d, len(caps)) if d is not None else len(caps) for d in group["depth"].to_list()])
        b = np.array([rung.get(d, len(caps)) if d is not None else len(caps) for d in group["depth_b"].to_list()])
        corr = None
        if len(a) > 2 and a.std() > 0 and b.std() > 0:
            corr = float(_scipy_stats.spearmanr(a, b).statistic)
        out.append((dataset, (len(a), float((a == b).mean()), float((np.abs(a - b) <= 1).mean()), corr)))
    return out


def _summary_row(
    dataset: str | None, values: list[tuple[int, float, float, float | None]], multi: pl.DataFrame
) -> dict[str, object]:
    """One collection's split-half agreement, averaged over the splits."""
    corrs = [v[3] for v in values if v[3] is not None]
    return {
        "dataset": dataset,
        "n_tasks": float(np.mean([v[0] for v in values])),
        "n_multi_cells": multi.filter(pl.col("dataset").eq_missing(dataset)).height,
        "share_equal": float(np.mean([v[1] for v in values])),
        "share_within_one": float(np.mean([v[2] for v in values])),
        "rank_corr": float(np.mean(corrs)) if corrs else None,
    }


def depth_by_rule(
    trials: pl.DataFrame,
    *,
    rules: Sequence[str] = PASS_RULES,
    caps: Sequence[int] = CAPS,
    q: float = 0.5,
) -> pl.DataFrame:
    """Each task's D under each pass rule, side by side, and per collection how often the rules agree.

    Returns
    -------
    pl.DataFrame
        Per collection: n_tasks, and for each rule ``n_solved_<rule>``, ``median_<rule>`` (median D
        of the tasks it solves) and ``same_as_any_<rule>`` (share of tasks whose D, or status,
        equals the paper's rule's).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": "m",
    ...     "cap": [1, 2, 2, 2, 3], "status": ["fail", "pass", "fail", "fail", "pass"]}), "trials")
    >>> depth_by_rule(trials, caps=[1, 2, 3]).select("median_any", "median_isotonic").row(0)
    (2.0, 3.0)
    """
    function = "depth_by_rule"
    check_frame(trials, "trials", function, (*_CELL, "status"))
    rules = [check_choice(rule, "rules", function, PASS_RULES) for rule in rules]
    caps = check_caps(caps, function)
    trials = trials.filter(pl.col("cap").is_not_null())  # D reads the capped runs only
    tables = {
        rule: estimate_depth(trials, caps=caps, pass_rule=rule, q=q).select(
            *TASK_KEYS, pl.col("depth").alias(rule), pl.col("status").alias(f"status_{rule}")
        )
        for rule in rules
    }
    joined = tables[rules[0]]
    for rule in rules[1:]:
        joined = joined.join(tables[rule], on=list(TASK_KEYS), nulls_equal=True)
    reference = tables["any"] if "any" in tables else tables[rules[0]]
    joined = joined.join(
        reference.select(
            *TASK_KEYS, pl.col(reference.columns[2]).alias("_ref"), pl.col(reference.columns[3]).alias("_ref_status")
        ),
        on=list(TASK_KEYS),
        nulls_equal=True,
    )
    aggs: list[pl.Expr] = [pl.len().alias("n_tasks")]
    for rule in rules:
        same = pl.col(rule).eq_missing(pl.col("_ref")) & (pl.col(f"status_{rule}") == pl.col("_ref_status"))
        aggs += [
            (pl.col(f"status_{rule}") == "solved").sum().alias(f"n_solved_{rule}"),
            pl.col(rule).median().alias(f"median_{rule}"),
            same.mean().alias(f"same_as_any_{rule}"),
        ]
    return joined.group_by("dataset").agg(aggs).sort("dataset")
