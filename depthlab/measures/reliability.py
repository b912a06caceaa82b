"""D's reliability from runs with two or more attempts per cell: split-half D and its agreement.

Each cell's valid attempts are split in two at random (half of them, rounded down, to one side;
cells with one attempt go whole to a random side), D is estimated on each half with the same rule,
and the two halves are compared over the tasks solved or unsolved in both: the share equal, the
share within one rung (an unsolved task is one rung above the top cap), and the rank (Spearman)
correlation of the rungs. Repeated ``repeats`` times with fresh splits; the table gives the mean
over repeats. Where tasks come in groups of near-duplicates (``groups``: RST's rewrites of one
seed), the group is the unit, as in every other row of the audit: each group's tasks are averaged
(their shares, their rungs) and the groups compared, so rewrites of one task are not counted as
independent agreements.

Agreement is of two half-size measurements, and it is *not* a floor for D from all the attempts:
under the paper's rule (``"any"``) more attempts give more lucky passes below the true depth, so a
retest of D from all K attempts can agree with itself *less* than the halves do. With 3% luck
below the true depth and K = 4 attempts per cell (a step model of known depth, two models, 300
tasks, three seeds; tests/test_measures.py), the rank correlation of two independent full-K
measurements is 0.55 (0.42-0.66) against 0.74 (0.70-0.79) for split-half (the issue measured 0.42
against 0.52 on :mod:`depthlab.simulate.noisy`); under ``"majority"`` the full-K retest agrees
more (0.97). Read split-half as the agreement of D measured with K/2 attempts, not as a bound on
D from all of them.
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
    groups: pl.DataFrame | None = None,
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
    groups : pl.DataFrame, optional
        Columns dataset, task, task_group: tasks of one group are one unit (their agreements and
        rungs averaged); a task without a group (or not listed) is a group of its own.

    Returns
    -------
    pl.DataFrame
        Columns dataset, n_tasks (mean tasks compared per split), n_units (mean units compared:
        the task groups, or the tasks without ``groups``), n_multi_cells (cells with two or more
        valid attempts), share_equal, share_within_one (means over units), rank_corr (over units;
        the mean over splits, null when a half is constant).

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
    if groups is not None:
        groups = check_frame(groups, "groups", function, ("dataset", "task", "task_group"))
        groups = groups.select("dataset", "task", "task_group").unique(["dataset", "task"], keep="first")
    valid = trials.filter(
        pl.col("cap").is_in(caps) & pl.col("status").is_in(("pass", "fail")) & pl.col("model").is_not_null()
    )
    valid = valid.select(*_CELL, "status").sort(_CELL)
    multi = valid.group_by(["dataset", "task", "model", "cap"]).len().filter(pl.col("len") >= 2)
    rng = np.random.default_rng(seed)
    per: dict[str | None, list[_Agreement]] = {}
    for _ in range(repeats):
        depth_a, depth_b = _split_depths(valid, rng, caps, pass_rule)
        for dataset, agreement in _agreement(depth_a, depth_b, caps, groups):
            per.setdefault(dataset, []).append(agreement)
    rows = [_summary_row(dataset, values, multi) for dataset, values in sorted(per.items(), key=lambda i: str(i[0]))]
    schema = {
        "dataset": pl.String(),
        "n_tasks": pl.Float64(),
        "n_units": pl.Float64(),
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
        halves.filter(pl.col("_a")).drop("_u", "_order", "_n", "_a"), caps=caps, pass_rule=pass_rule, level=None
    )
    depth_b = estimate_depth(
        halves.filter(~pl.col("_a")).drop("_u", "_order", "_n", "_a"), caps=caps, pass_rule=pass_rule, level=None
    )
    return depth_a, depth_b


#: One split's agreement: tasks, units, share equal, share within one rung, rank correlation.
_Agreement = tuple[int, int, float, float, float | None]


def _rung(column: str, caps: Sequence[int]) -> pl.Expr:
    """The rung of a D column on the ladder; an unsolved task (null D) one rung above the top cap."""
    top = len(caps)
    return pl.col(column).replace_strict(list(caps), list(range(top)), default=top).fill_null(top).cast(pl.Float64)


def _agreement(
    depth_a: pl.DataFrame, depth_b: pl.DataFrame, caps: Sequence[int], groups: pl.DataFrame | None
) -> list[tuple[str | None, _Agreement]]:
    """Per collection: tasks and units compared, share equal, within one rung, rank correlation (or None)."""
    both = depth_a.join(depth_b, on=list(TASK_KEYS), suffix="_b").filter(
        pl.col("status").is_in(("solved", "unsolved")) & pl.col("status_b").is_in(("solved", "unsolved"))
    )
    both = both.with_columns(a=_rung("depth", caps), b=_rung("depth_b", caps))
    both = both.with_columns(equal=(pl.col("a") == pl.col("b")).cast(pl.Float64))
    both = both.with_columns(within=((pl.col("a") - pl.col("b")).abs() <= 1).cast(pl.Float64))
    if groups is not None:
        both = both.join(groups, on=["dataset", "task"], how="left")
        own = pl.col("dataset").fill_null("") + pl.lit("\x1f") + pl.col("task")
        both = both.with_columns(unit=pl.coalesce(pl.col("task_group"), own))
    else:
        both = both.with_columns(unit=pl.col("task"))
    out = []
    for (dataset,), group in both.group_by("dataset"):
        units = group.group_by("unit").agg(pl.col("a", "b", "equal", "within").mean())
        a, b = units["a"].to_numpy(), units["b"].to_numpy()
        corr = None
        if len(a) > 2 and a.std() > 0 and b.std() > 0:
            corr = float(_scipy_stats.spearmanr(a, b).statistic)
        share_equal, within_one = float(units["equal"].mean()), float(units["within"].mean())
        out.append((dataset, (group.height, units.height, share_equal, within_one, corr)))
    return out


def _summary_row(dataset: str | None, values: list[_Agreement], multi: pl.DataFrame) -> dict[str, object]:
    """One collection's split-half agreement, averaged over the splits."""
    corrs = [v[4] for v in values if v[4] is not None]
    return {
        "dataset": dataset,
        "n_tasks": float(np.mean([v[0] for v in values])),
        "n_units": float(np.mean([v[1] for v in values])),
        "n_multi_cells": multi.filter(pl.col("dataset").eq_missing(dataset)).height,
        "share_equal": float(np.mean([v[2] for v in values])),
        "share_within_one": float(np.mean([v[3] for v in values])),
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
        rule: estimate_depth(trials, caps=caps, pass_rule=rule, q=q, level=None).select(
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
