"""The private core of the findings: the table schema, the row-building engine and the correlations every topic uses."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, TypedDict, TypeVar, cast

import polars as pl

from depthlab import stats
from depthlab._text import count
from depthlab.auditdata import AuditData

# the paper's groups of collections are catalog facts (derived from its curation), re-exported by findings
from depthlab.catalog import HUMAN, OWN, name
from depthlab.schema import FINDING, MIN_TASKS


class FindingRow(TypedDict):
    """One row of :data:`FINDING` as :func:`make_row` builds it (the same columns, as Python values)."""

    key: str
    group: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    interval: str | None
    p: float | None
    n: int
    unit: str
    collections: str
    models: str
    data: str
    detail: str | None


class Sample(TypedDict):
    """The sample several rows of one finding share: ``**sample`` into :func:`make_row` (checked per key)."""

    collections: Sequence[str]
    models: Sequence[str]


class DescribedSample(Sample):
    """A :class:`Sample` with the ``detail`` its rows share."""

    detail: str


#: The rank of an unsolved task's D in the sign test: above every cap (two unsolved tasks tie).
UNSOLVED_RANK: Final[float] = 1e9

#: TMax's generation-time ``task_complexity`` labels, least complex first.
COMPLEXITY: Final[tuple[str, ...]] = ("short", "moderate", "complex", "intricate")


_Finding = TypeVar("_Finding", bound=Callable[..., pl.DataFrame])


def with_paper_rows(function: _Finding) -> _Finding:
    # every row the paper reports from this finding is in its table, "not computable" when this data has no
    # such sample (e.g. TB2 + TW on TB2 alone), so a comparison never silently leaves a paper number out; a
    # paper row without a value says why first (no capped runs, a collection this data lacks)
    @functools.wraps(function)
    def wrapper(data: AuditData, *args: Any, **kwargs: Any) -> pl.DataFrame:
        from depthlab import paper

        table = function(data, *args, **kwargs)
        present = set(zip(table["key"].to_list(), table["group"].to_list(), strict=True))
        missing = [
            make_row(
                data,
                r.statistic,
                r.group,
                None,
                n=0,
                unit="tasks",
                collections=[],
                models=[],
                detail=NO_SAMPLE,
            )
            for r in paper.REPORTED
            if r.function == function.__name__ and (r.statistic, r.group) not in present
        ]
        table = stack([table, make_frame(missing)]) if missing else table
        return _explained(data, table)

    # the finding's own signature is kept for its callers (a ParamSpec with Concatenate would make ``data``
    # positional-only, which the wrapper, taking ``data=`` too, is not): the wrapper passes every argument on
    return cast("_Finding", wrapper)


#: The detail of a paper row a finding does not compute at all on this data (no reason more precise known).
NO_SAMPLE: Final[str] = "this data has no such sample"


def _explained(data: AuditData, table: pl.DataFrame) -> pl.DataFrame:
    # a paper row without a value: its detail starts with why (the finding's own detail kept after it)
    from depthlab import paper

    details = []
    for key, group, value, low, detail in table.select("key", "group", "value", "ci_low", "detail").iter_rows():
        reported = paper.reported_for(key, group)
        if reported is None or value is not None or low is not None:
            details.append(detail)
            continue
        reasons = why_not_computable(data, reported.collections, needs_depth=reported.needs_depth)
        kept = [detail] if detail and detail != NO_SAMPLE and detail not in "; ".join(reasons) else []
        details.append("; ".join([*reasons, *kept]) or detail)
    return table.with_columns(detail=pl.Series(details, dtype=pl.String))


def why_not_computable(data: AuditData, collections: Sequence[str] | None, *, needs_depth: bool) -> list[str]:
    """The reasons a row over ``collections`` (None: any) cannot be computed on this data, in words.

    ``no capped runs (D unknown)`` when it needs D and none of its collections present has a run at a
    stated cap; ``this data has no TW-Verified`` naming the collections this data lacks.
    """
    reasons = []
    here = [d for d in (collections or data.datasets) if d in data.datasets]
    if needs_depth and not capped_models(data, here):
        reasons.append("no capped runs (D unknown)")
    if lacking := [d for d in (collections or ()) if d not in data.datasets]:
        reasons.append(f"this data has no {', '.join(map(name, lacking))}")
    return reasons


def computed(table: pl.DataFrame, what: str) -> bool:
    """True when some row of a findings table has a value; otherwise print one line saying ``what`` is skipped.

    Examples
    --------
    >>> from depthlab import findings
    >>> from depthlab.auditdata import audit_data
    >>> findings.computed(findings.sign_test_depth(audit_data("tb2")), "the sign test")  # doctest: +ELLIPSIS
    the sign test: not computable on this data (0 pairs; ... 0 tested: 0 deeper, 0 shallower); skipped.
    False
    """
    if table["value"].is_not_null().any() or table["ci_low"].is_not_null().any():
        return True
    reasons = sorted(set(table["detail"].drop_nulls().to_list()))
    why = f" ({'; '.join(reasons)})" if reasons else ""
    print(f"{what}: not computable on this data{why}; skipped.")
    return False


def stack(tables: pl.DataFrame | Iterable[pl.DataFrame]) -> pl.DataFrame:
    """Concatenate findings tables (an empty :data:`FINDING` frame when there are none)."""
    if isinstance(tables, pl.DataFrame):
        return tables.select(list(FINDING)).cast(FINDING)
    frames = [t.select(list(FINDING)).cast(FINDING) for t in tables]
    return pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=FINDING)


# ---------------------------------------------------------------------------------------------
# helpers


def make_row(
    data: AuditData,
    key: str,
    group: str,
    value: float | None,
    *,
    n: int,
    unit: str,
    collections: Sequence[str] = (),
    models: Sequence[str] | None = None,
    low: float | None = None,
    high: float | None = None,
    interval: str | None = None,
    p: float | None = None,
    detail: str | None = None,
) -> FindingRow:
    """One row of :data:`FINDING`; a number is stored as a finite float or null (NaN and infinity too).

    ``value``, ``low``, ``high`` and ``p`` are a count, a float (what a polars aggregation returns)
    or None; with no collection in the sample every number is null: nothing was counted, not zero.
    """
    if not collections:  # no collection in the sample: nothing to count, not zero
        value = low = high = p = None
        interval = None
    return {
        "key": key,
        "group": group,
        "value": _number(value),
        "ci_low": _number(low),
        "ci_high": _number(high),
        "interval": interval,
        "p": _number(p),
        "n": int(n),
        "unit": unit,
        "collections": ", ".join(collections),
        "models": ", ".join(models if models is not None else data.models),
        "data": data.kind,
        "detail": detail,
    }


def _number(value: float | None) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def make_frame(rows: Sequence[FindingRow]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=FINDING)


def share_row(
    data: AuditData,
    key: str,
    group: str,
    count: int,
    n: int,
    collections: Sequence[str],
    models: Sequence[str],
    *,
    detail: str | None = None,
    unit: str = "solved tasks",
) -> FindingRow:
    if n == 0:
        return make_row(data, key, group, None, n=0, unit=unit, collections=collections, models=models, detail=detail)
    lows, highs = stats.proportion_ci([count], [n], method="wilson")
    low, high = float(lows[0]), float(highs[0])
    return make_row(
        data,
        key,
        group,
        count / n,
        low=low,
        high=high,
        interval="ci95",
        n=n,
        unit=unit,
        collections=collections,
        models=models,
        detail=detail or f"{count} of {n} (Wilson interval)",
    )


def solved_tasks(data: AuditData, collections: Sequence[str]) -> pl.DataFrame:
    return data.audit.filter(pl.col("dataset").is_in(list(collections)) & (pl.col("depth_status") == "solved"))


def incomplete_note(data: AuditData, collections: Sequence[str]) -> str | None:
    """``"3 tasks with an incomplete D left out"`` for the tasks of ``collections`` whose D is incomplete, or None.

    A task some cap was not run on (or whose runs there are all invalid) has neither a pinned D nor
    "unsolved": a count of solved tasks leaves it out, and says so.
    """
    n = data.audit.filter(pl.col("dataset").is_in(list(collections)) & (pl.col("depth_status") == "incomplete")).height
    return f"{count(n, 'task')} with an incomplete D left out" if n else None


def public_runs(data: AuditData) -> pl.DataFrame:
    from depthlab.measures.public import public_trials

    return public_trials(data.trials)


def capped_models(data: AuditData, collections: Sequence[str]) -> list[str]:
    capped = data.trials.filter(pl.col("cap").is_not_null() & pl.col("dataset").is_in(list(collections)))
    return sorted(capped["model"].drop_nulls().unique().to_list())


def public_models(data: AuditData, collections: Sequence[str]) -> list[str]:
    public = public_runs(data).filter(pl.col("dataset").is_in(list(collections)))
    return sorted(public["model"].drop_nulls().unique().to_list())


def depth_models(data: AuditData) -> list[str]:
    """The models whose capped runs count for D (the ``models=`` of the loading), sorted."""
    found: set[str] = set()
    for by_model in data.depth["depth_by_model"].drop_nulls():
        found |= set(json.loads(by_model))
    return sorted(found)


def solved_by_model(data: AuditData, collections: Sequence[str] | None = None) -> dict[str, set[str]]:
    """Per model of D, the tasks (``dataset/task``) its own capped runs solve (a passing cap of its own)."""
    depth = data.depth if collections is None else data.depth.filter(pl.col("dataset").is_in(list(collections)))
    solved: dict[str, set[str]] = {}
    for dataset, task, by_model in depth.select("dataset", "task", "depth_by_model").iter_rows():
        for model, model_depth in json.loads(by_model or "{}").items():
            solved.setdefault(model, set())
            if model_depth is not None:
                solved[model].add(f"{dataset}/{task}")
    return solved


def main_model(data: AuditData) -> str | None:
    """The main model: of D's models, the one whose own capped runs solve the most tasks (None without any).

    The paper's main model (DeepSeek-V4.1-Flash) is the one it runs everywhere; here, unless the caller
    names one, it is the model of D solving the most tasks over every collection, ties broken by the
    number of its capped runs, then by name (never by name alone).
    """
    solved = solved_by_model(data)
    if not solved:
        return None
    capped = data.trials.filter(pl.col("cap").is_not_null())
    runs = dict(capped.group_by("model").len().iter_rows())
    return min(solved, key=lambda m: (-len(solved[m]), -runs.get(m, 0), m))


def corr_row(
    data: AuditData,
    key: str,
    group: str,
    result: stats.PartialCorr,
    collections: Sequence[str],
    models: Sequence[str],
    *,
    detail: str | None = None,
    unit: str = "tasks",
) -> FindingRow:
    has_ci = result.n_boot > 0 and math.isfinite(result.ci_low)
    return make_row(
        data,
        key,
        group,
        result.r,
        low=result.ci_low if has_ci else None,
        high=result.ci_high if has_ci else None,
        interval="ci95" if has_ci else None,
        p=result.p,
        n=result.n,
        unit=unit,
        collections=collections,
        models=models,
        detail=detail,
    )


#: Groups of several collections a correlation is pooled over (within-collection), with their members:
#: TB2 + TW, the paper's pooled sample (its own set with TB2 and TW), every collection present.
POOLED_GROUPS: Final[dict[str, str]] = {
    "tb2+tw": "TB2 + TW",
    "pooled": "DEPTH + TB2 + TW",
    "all": "every collection",
}


def correlation_rows(
    data: AuditData, x: str, y: str, covar: str, key: str, *, solved: bool, pairs: bool, n_boot: int, seed: int
) -> pl.DataFrame:
    """Rows ``key`` of pass rate (``y``) with ``x`` given ``covar``: per collection, then pooled.

    A collection's row is the rank partial correlation (:func:`depthlab.stats.partial_spearman`,
    BCa interval). A row over several collections is the within-collection statistic of
    :mod:`depthlab.findings._pooled` (percentile ranks per collection, pooled; stratified
    bootstrap), so a difference between collections is never read as a correlation: ``tb2+tw``
    and ``pooled`` (the paper's: the DEPTH-style set with TB2 and TW, every one of the three
    present) when ``pairs``; ``all`` (every collection present) when there are several.
    """
    from depthlab.findings._pooled import within_collection_partial

    base = data.audit.filter(pl.col("depth_status") == "solved") if solved else data.audit
    unit = "solved tasks" if solved else "tasks"
    groups = [(d, [d]) for d in data.datasets]
    human = [d for d in data.datasets if d in HUMAN]
    pooled: list[tuple[str, list[str]]] = []
    if pairs and len(human) == 2:
        pooled.append(("tb2+tw", human))
    if pairs and len(human) == 2 and OWN in data.datasets:
        pooled.append(("pooled", [*human, OWN]))
    if len(data.datasets) > 1:
        pooled.append(("all", list(data.datasets)))
    rows = []
    # a pooled row names the collections that gave it tasks, never those merely present: a collection
    # with fewer than two usable tasks has no percentile ranks, so it contributes nothing
    usable = base.drop_nulls([x, y, covar])
    for group, members in pooled:
        gave = [d for d in members if usable.filter(pl.col("dataset") == d).height >= 2]
        short = [d for d in members if d not in gave]
        if (group != "all" and short) or len(gave) < 2:
            needs = "every one of them" if group != "all" else "at least two collections"
            why = f"{', '.join(short)}: fewer than 2 {unit} with {x}, {y} and {covar}; the row needs {needs}"
            models = capped_models(data, gave) if solved else public_models(data, gave)
            rows.append(make_row(data, key, group, None, n=0, unit=unit, collections=gave, models=models, detail=why))
        else:
            groups.append((group, gave))
    for group, collections in groups:
        used = base.filter(pl.col("dataset").is_in(collections)).drop_nulls([x, y, covar])
        models = capped_models(data, collections) if solved else public_models(data, collections)
        unit = "solved tasks" if solved else "tasks"
        used, cluster = task_groups(used) if group not in POOLED_GROUPS else (used, None)
        n_units = used[cluster].n_unique() if cluster else used.height
        if n_units < MIN_TASKS or any(used[c].n_unique() < 2 for c in (x, y, covar)):
            rows.append(
                make_row(
                    data,
                    key,
                    group,
                    None,
                    n=n_units,
                    unit=unit,
                    collections=collections,
                    models=models,
                    detail=f"needs at least {MIN_TASKS} tasks and no constant column",
                )
            )
            continue
        if group in POOLED_GROUPS:
            # the comparison's sample text says it, beside a paper number whose pooling is not restated
            unit += ", within-collection"
            result = within_collection_partial(used, x, y, covar, n_boot=n_boot, seed=seed)
            detail = (
                f"covariate: {covar}; within-collection: percentile ranks per collection, pooled "
                f"({', '.join(collections)}); stratified bootstrap"
            )
        else:
            result = stats.partial_spearman(used, x, y, covar, n_boot=n_boot, seed=seed, cluster=cluster)
            detail = f"covariate: {covar}" + ("; bootstrap resamples task groups" if cluster else "")
        rows.append(corr_row(data, key, group, result, collections, models, detail=detail, unit=unit))
    return make_frame(rows)


def task_groups(frame: pl.DataFrame) -> tuple[pl.DataFrame, str | None]:
    """``frame`` ready for a bootstrap over task groups, and the cluster column (None when it has no groups).

    A collection whose tasks come in groups of near-duplicates (RST's rewrites of one seed,
    ``task_group``) is resampled group by group (``cluster="task_group"`` of
    :func:`depthlab.stats.partial_spearman`): rewrites of one task are one unit, never independent
    tasks. A task without a group is a group of its own.
    """
    if "task_group" not in frame.columns or frame["task_group"].null_count() == frame.height:
        return frame, None
    own = pl.col("dataset") + pl.lit("\x1f") + pl.col("task")
    return frame.with_columns(task_group=pl.coalesce("task_group", own)), "task_group"
