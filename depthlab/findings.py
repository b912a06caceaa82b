"""The paper's findings, one function each, computed on an :class:`~depthlab.auditdata.AuditData`.

Every function returns a tidy table with the columns of :data:`FINDING`: one row per statistic
and group, with its value, its interval where one exists (``interval`` says whether ``ci_low`` /
``ci_high`` are a 95% confidence interval or a range of values), ``n`` and its ``unit``, and the
sample it was computed on (collections, models, and whether the data is simulated or real). Each
docstring states the paper's definition and sample; :data:`depthlab.paper.REPORTED` names, for
each number the paper reports, the function and row that compute the same quantity here.

Groups of collections follow the paper: the six audited collections are :data:`AUDITED`; the
synthetic ones are :data:`SYNTHETIC` (TMax, FACET, SETA, RST; never the paper's own DEPTH-style
set ``depth``); the human-curated ones are :data:`HUMAN` (TB2, TW).

Examples
--------
>>> from depthlab import findings
>>> from depthlab.auditdata import audit_data
>>> data = audit_data("tb2")
>>> rates = findings.model_pass_rates(data, status_rule="all")  # every trial counted, as the release did
>>> row = rates.filter(group="tmax-27b").row(0, named=True)
>>> round(100 * row["value"], 2), row["n"], row["data"]
(42.7, 445, 'real')
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, Literal

import numpy as np
import polars as pl

from depthlab import stats
from depthlab.auditdata import AuditData

__all__ = [
    "AUDITED",
    "FINDING",
    "HUMAN",
    "OWN",
    "SYNTHETIC",
    "UNSOLVED_RANK",
    "collection_counts",
    "computed",
    "depth_given_turns",
    "depth_shares",
    "depth_vs_author_rating",
    "environment_pairs",
    "forest_table",
    "label_pass_correlations",
    "model_pass_rates",
    "own_set_summary",
    "pass_at_1",
    "pass_depth_given_work",
    "pass_turns_given_depth",
    "pass_turns_given_work",
    "quadrant_cells",
    "quadrant_percentiles",
    "second_model",
    "segment_reliability",
    "sign_test_depth",
    "stack",
    "synthetic_vs_human",
    "turns_beside_depth",
]

#: The six collections the paper audits.
AUDITED: Final[tuple[str, ...]] = ("tmax", "facet", "seta", "rst", "tb2", "tw")
#: The paper's synthetic collections (LLM-generated); its own DEPTH-style set is not among them.
SYNTHETIC: Final[tuple[str, ...]] = ("tmax", "facet", "seta", "rst")
#: The paper's human-curated collections.
HUMAN: Final[tuple[str, ...]] = ("tb2", "tw")
#: The paper's own multi-segment DEPTH-style set.
OWN: Final[str] = "depth"

#: Columns of every findings table (declared once).
FINDING: Final[dict[str, pl.DataType]] = {
    "key": pl.String(),  # the statistic, e.g. "pcorr_pass_depth_given_work"
    "group": pl.String(),  # the collection, group of collections, model or cell it is computed on
    "value": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "interval": pl.String(),  # "ci95" (confidence interval), "range" (span of values) or null
    "p": pl.Float64(),
    "n": pl.Int64(),
    "unit": pl.String(),  # what n counts: tasks, runs, pairs
    "collections": pl.String(),  # the collections of the sample, comma-separated
    "models": pl.String(),  # the models whose runs count, comma-separated
    "data": pl.String(),  # "simulated" or "real"
    "detail": pl.String(),  # one line: the definition's choices, counts behind a share
}

#: The rank of an unsolved task's D in the sign test: above every cap (two unsolved tasks tie).
UNSOLVED_RANK: Final[float] = 1e9

LABELS: Final[tuple[str, ...]] = ("easy", "medium", "hard")
COMPLEXITY: Final[tuple[str, ...]] = ("short", "moderate", "complex", "intricate")
_MIN_TASKS: Final[int] = 6


def _paper_rows(function: Callable[..., pl.DataFrame]) -> Callable[..., pl.DataFrame]:
    # every row the paper reports from this finding is in its table, "not computable" when this data has no
    # such sample (e.g. TB2 + TW on TB2 alone), so a comparison never silently leaves a paper number out
    @functools.wraps(function)
    def with_paper_rows(data: AuditData, *args: Any, **kwargs: Any) -> pl.DataFrame:
        from depthlab import paper

        table = function(data, *args, **kwargs)
        present = set(zip(table["key"].to_list(), table["group"].to_list(), strict=True))
        missing = [
            _row(
                data,
                r.statistic,
                r.group,
                None,
                n=0,
                unit="tasks",
                collections=[],
                models=[],
                detail="this data has no such sample",
            )
            for r in paper.REPORTED
            if r.function == function.__name__ and (r.statistic, r.group) not in present
        ]
        return stack([table, _frame(missing)]) if missing else table

    return with_paper_rows


def computed(table: pl.DataFrame, what: str) -> bool:
    """True when some row of a findings table has a value; otherwise print one line saying ``what`` is skipped.

    Examples
    --------
    >>> from depthlab.auditdata import audit_data
    >>> computed(sign_test_depth(audit_data("tb2")), "the sign test")  # doctest: +ELLIPSIS
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
        return tables.select(list(FINDING)).cast(FINDING)  # type: ignore[arg-type]
    frames = [t.select(list(FINDING)).cast(FINDING) for t in tables]  # type: ignore[arg-type]
    return pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=FINDING)


# ---------------------------------------------------------------------------------------------
# the collections


@_paper_rows
def collection_counts(data: AuditData) -> pl.DataFrame:
    """Tasks per collection, and the tasks of the audited collections (solved tasks: :func:`depth_shares`).

    Paper: 734 tasks audited over TMax, FACET, SETA, RST, TB2 and TW (``audited_tasks``, group
    ``audited``).

    Rows: ``tasks`` per collection; ``audited_tasks`` (group ``audited``).

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    rows = []
    for dataset in data.datasets:
        part = data.audit.filter(pl.col("dataset") == dataset)
        rows.append(_row(data, "tasks", dataset, part.height, n=part.height, unit="tasks", collections=[dataset]))
    audited = [d for d in data.datasets if d in AUDITED]
    n = data.audit.filter(pl.col("dataset").is_in(audited)).height
    rows.append(_row(data, "audited_tasks", "audited", n, n=n, unit="tasks", collections=audited))
    return _frame(rows)


@_paper_rows
def depth_shares(data: AuditData) -> pl.DataFrame:
    """Shares of solved tasks with D = 1, D ≤ 3 and D ≥ 5, per collection and for the synthetic ones pooled.

    Paper: among solved tasks, most synthetic tasks are shallow: 278 of the 296 solved synthetic
    tasks (TMax, FACET, SETA, RST) have D ≤ 3; RST has 79% at D ≤ 3. Shares carry a 95% Wilson
    interval.

    Rows per group (each collection, and ``synthetic``): ``solved_tasks``, ``solved_depth_1``,
    ``solved_depth_le_3``, ``solved_depth_ge_5`` (counts) and ``solved_share_depth_1``,
    ``solved_share_depth_le_3``, ``solved_share_depth_ge_5``.

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    rows = []
    groups = [(d, [d]) for d in data.datasets]
    synthetic = [d for d in data.datasets if d in SYNTHETIC]
    if synthetic:
        groups.append(("synthetic", synthetic))
    for group, collections in groups:
        solved = _solved(data, collections)
        models = _capped_models(data, collections)
        rows.append(
            _row(
                data,
                "solved_tasks",
                group,
                solved.height if models else None,  # no capped runs: nothing is solved or unsolved
                n=solved.height,
                unit="solved tasks",
                collections=collections,
                models=models,
            )
        )
        for name, condition in (
            ("depth_1", pl.col("depth") == 1),
            ("depth_le_3", pl.col("depth") <= 3),
            ("depth_ge_5", pl.col("depth") >= 5),
        ):
            count = solved.filter(condition).height
            rows.append(
                _row(
                    data,
                    f"solved_{name}",
                    group,
                    count if models else None,
                    n=solved.height,
                    unit="solved tasks",
                    collections=collections,
                    models=models,
                )
            )
            rows.append(_share(data, f"solved_share_{name}", group, count, solved.height, collections, models))
    return _frame(rows)


@_paper_rows
def synthetic_vs_human(data: AuditData) -> pl.DataFrame:
    """Synthetic versus human-curated collections, on solved tasks.

    Paper: synthetic = TMax, FACET, SETA, RST (median W 68, D ≥ 5 for 6% of solved tasks);
    human = TB2, TW (median W 17, D ≥ 5 for 10%: 11 of 105 solved tasks). The paper's own
    DEPTH-style set is in neither group. Medians and shares are over solved tasks only.

    Rows per group (``synthetic``, ``human``): ``solved_tasks``, ``solved_median_work``,
    ``solved_depth_ge_5`` (count) and ``solved_share_depth_ge_5`` (95% Wilson interval).

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    rows = []
    for group, members in (("synthetic", SYNTHETIC), ("human", HUMAN)):
        collections = [d for d in data.datasets if d in members]
        solved = _solved(data, collections)
        models = _capped_models(data, collections)
        work = solved["work"].drop_nulls()
        deep = solved.filter(pl.col("depth") >= 5).height
        common = {"collections": collections, "models": models}
        rows += [
            _row(
                data,
                "solved_tasks",
                group,
                solved.height if models else None,
                n=solved.height,
                unit="solved tasks",
                **common,
            ),
            _row(
                data,
                "solved_median_work",
                group,
                work.median() if work.len() else None,
                n=work.len(),
                unit="solved tasks with W",
                **common,
            ),
            _row(
                data,
                "solved_depth_ge_5",
                group,
                deep if models else None,
                n=solved.height,
                unit="solved tasks",
                **common,
            ),
            _share(data, "solved_share_depth_ge_5", group, deep, solved.height, collections, models),
        ]
    return _frame(rows)


# ---------------------------------------------------------------------------------------------
# turns N against depth D


@_paper_rows
def turns_beside_depth(data: AuditData) -> pl.DataFrame:
    """Mean uncapped turns N per collection beside its median D.

    Paper: a model takes 16.3 turns on average on TMax tasks and 11.86 on FACET tasks without a
    cap, while their solved tasks have a median D of 1–2. N is the mean ``n_turns`` over the valid
    uncapped runs (every model's); D the median over solved tasks.

    Rows per collection: ``mean_turns`` (n = runs) and ``solved_median_depth`` (n = solved tasks).

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    public = _public(data)
    rows = []
    for dataset in data.datasets:
        turns = public.filter(pl.col("dataset") == dataset)["n_turns"].drop_nulls().cast(pl.Float64)
        rows.append(
            _row(
                data,
                "mean_turns",
                dataset,
                turns.mean() if turns.len() else None,
                n=turns.len(),
                unit="valid uncapped runs",
                collections=[dataset],
                models=_public_models(data, [dataset]),
            )
        )
        depth = _solved(data, [dataset])["depth"]
        rows.append(
            _row(
                data,
                "solved_median_depth",
                dataset,
                depth.median() if depth.len() else None,
                n=depth.len(),
                unit="solved tasks",
                collections=[dataset],
                models=_capped_models(data, [dataset]),
            )
        )
    return _frame(rows)


@_paper_rows
def depth_given_turns(data: AuditData, *, turns: tuple[float, float] = (6, 10)) -> pl.DataFrame:
    """Of the audited tasks a model finishes in 6–10 turns, how many need only one.

    Paper: 96 of the 170 tasks with N in 6–10 have D = 1 (the six audited collections). N is the
    task's median uncapped turn count (``audit.n_turns``); tasks with a pinned D only.

    Rows (group ``audited``): ``tasks_n_in_window`` and ``tasks_n_in_window_depth_1`` (n = the
    tasks in the window), and ``share_n_in_window_depth_1``.

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).
    turns : (low, high)
        The window of uncapped turns N (inclusive).

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    low, high = turns
    collections = [d for d in data.datasets if d in AUDITED]
    window = _solved(data, collections).filter(pl.col("n_turns").is_between(low, high))
    ones = window.filter(pl.col("depth") == 1).height
    models = _capped_models(data, collections)
    detail = f"solved tasks with median uncapped N in [{low:g}, {high:g}]"
    return _frame(
        [
            _row(
                data,
                "tasks_n_in_window",
                "audited",
                window.height if models else None,
                n=window.height,
                unit="solved tasks",
                collections=collections,
                models=models,
                detail=detail,
            ),
            _row(
                data,
                "tasks_n_in_window_depth_1",
                "audited",
                ones if models else None,
                n=window.height,
                unit="solved tasks",
                collections=collections,
                models=models,
                detail=detail,
            ),
            _share(data, "share_n_in_window_depth_1", "audited", ones, window.height, collections, models),
        ]
    )


@_paper_rows
def second_model(data: AuditData, *, first_model: str | None = None) -> pl.DataFrame:
    """How often a second model lowered D: existing collections and the paper's own set.

    Paper: adding a second model lowered D for 25% of the existing tasks and 7% of the authors'
    solved tasks. Here (:func:`depthlab.measures.second_model_effect`), over tasks solved with two
    or more models, D is lowered when ``first_model``'s own runs show it needs more than D; a task
    where its evidence is incomplete is undetermined and left out of the share (counted in
    ``detail``). ``first_model`` defaults to the first model name in sorted order.

    Rows (group ``existing``: the audited collections; ``own``: the DEPTH-style set):
    ``second_model_share_lowered`` (95% Wilson interval, n = determined tasks).

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).
    first_model : str, optional
        The model taken alone; default the first model name in sorted order.

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    from depthlab.measures import second_model_effect

    capped = data.trials.filter(pl.col("cap").is_not_null())
    models = sorted(capped["model"].drop_nulls().unique().to_list())
    first = first_model or (models[0] if models else None)
    rows = []
    for group, members in (("existing", AUDITED), ("own", (OWN,))):
        collections = [d for d in data.datasets if d in members]
        part = capped.filter(pl.col("dataset").is_in(collections))
        effect = (
            second_model_effect(part, first_model=first, by=None)
            if first is not None and len(models) >= 2
            else pl.DataFrame()
        )
        if effect.height:
            row = effect.row(0, named=True)
            detail = (
                f"first model {first}: lowered {row['n_lowered']} of {row['n_determined']} determined tasks; "
                f"{row['n_undetermined']} undetermined of {row['n_tasks']} solved with two or more models"
            )
            rows.append(
                _share(
                    data,
                    "second_model_share_lowered",
                    group,
                    row["n_lowered"],
                    row["n_determined"],
                    collections,
                    models,
                    detail=detail,
                )
            )
        else:
            rows.append(
                _row(
                    data,
                    "second_model_share_lowered",
                    group,
                    None,
                    n=0,
                    unit="solved tasks",
                    collections=collections,
                    models=models,
                    detail="needs capped runs of two or more models",
                )
            )
    return _frame(rows)


# ---------------------------------------------------------------------------------------------
# depth predicts difficulty


@_paper_rows
def pass_depth_given_work(data: AuditData, *, n_boot: int = 2000, seed: int = 0) -> pl.DataFrame:
    """Rank partial correlation of the public pass rate with D given W.

    Paper: −0.49 on TB2, −0.31 on TB2 + TW, −0.29 [−0.53, −0.02] on the authors' own tasks (52),
    −0.31 pooled. Solved tasks with a public pass rate and W; BCa bootstrap CI over tasks.

    Rows ``pcorr_pass_depth_given_work`` per collection, ``tb2+tw`` and ``all`` (every collection
    pooled).

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).
    n_boot, seed : int
        Bootstrap resamples for the CIs (0: none) and their seed.

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    return _correlations(
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


@_paper_rows
def pass_turns_given_depth(data: AuditData, *, n_boot: int = 2000, seed: int = 0) -> pl.DataFrame:
    """Rank partial correlation of the public pass rate with N given D: once D is known, does N add anything?

    Paper: +0.06 [−0.18, +0.26] on TB2 + TW. Solved tasks with a public pass rate and N.

    Rows ``pcorr_pass_turns_given_depth`` per collection, ``tb2+tw`` and ``all``.

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).
    n_boot, seed : int
        Bootstrap resamples for the CIs (0: none) and their seed.

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    return _correlations(
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


def pass_turns_given_work(data: AuditData, *, n_boot: int = 2000, seed: int = 0) -> pl.DataFrame:
    """Rank partial correlation of the public pass rate with N given W (needs no capped runs).

    Not a number the paper reports; it runs on public leaderboard data alone. Every task with a
    public pass rate, N and W.

    Rows ``pcorr_pass_turns_given_work`` per collection and ``all``.

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).
    n_boot, seed : int
        Bootstrap resamples for the CIs (0: none) and their seed.

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    return _correlations(
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
        shown = {"tb2+tw": "TB2 + TW", "all": "all pooled"}.get(group) or name(group)
        reported = paper.reported_for(row["key"], group)
        rows.append(
            {
                "label": f"{shown}: {labels[row['key']]}",
                "dataset": group if "+" not in group and group != "all" else None,
                "r": row["value"],
                "ci_low": row["ci_low"],
                "ci_high": row["ci_high"],
                "n": row["n"],
                "p": row["p"],
                "paper": None if reported is None else reported.value,
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
    }
    return pl.DataFrame(rows, schema=columns)


# ---------------------------------------------------------------------------------------------
# labels


@_paper_rows
def label_pass_correlations(data: AuditData, *, n_boot: int = 2000, seed: int = 0) -> pl.DataFrame:
    """Spearman correlation of each collection's difficulty label with its public pass rate.

    Paper: generation-time labels (written by an LLM when the task was made) correlate −0.07 to
    −0.11 with the pass rate; TB2 authors' ratings −0.46. Every task with a label and a public
    pass rate; easy < medium < hard, and for TMax its generation-time ``task_complexity``
    (short < moderate < complex < intricate). BCa bootstrap CI over tasks.

    Rows ``label_corr_pass`` per labelled collection (``detail``: which label and whether human or
    generated) and ``generated`` (the range over the generated labels).

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).
    n_boot, seed : int
        Bootstrap resamples for the CIs (0: none) and their seed.

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    rows = []
    generated = []
    for dataset in data.datasets:
        part = data.audit.filter(pl.col("dataset") == dataset).drop_nulls("pass_rate")
        labelled = part.filter(pl.col("difficulty").is_in(LABELS))
        candidates = [(labelled, "difficulty", LABELS, _source(labelled))]
        if dataset == "tmax":
            axes = _complexity(data, dataset).join(part, on=["dataset", "task"])
            candidates.append(
                (axes.filter(pl.col("task_complexity").is_in(COMPLEXITY)), "task_complexity", COMPLEXITY, "generated")
            )
        for frame, label, order, source in candidates:
            if frame.height < _MIN_TASKS or frame[label].n_unique() < 2 or frame["pass_rate"].n_unique() < 2:
                continue
            result = stats.spearman(frame, label, "pass_rate", order={label: list(order)}, n_boot=n_boot, seed=seed)
            row = _corr_row(
                data,
                "label_corr_pass",
                dataset,
                result,
                [dataset],
                _public_models(data, [dataset]),
                detail=f"{label} ({source})",
                unit="tasks",
            )
            rows.append(row)
            if source == "generated":
                generated.append((dataset, result.r, result.n))
    if generated:
        values = [r for _, r, _ in generated]
        collections = sorted({d for d, _, _ in generated})
        rows.append(
            _row(
                data,
                "label_corr_pass",
                "generated",
                None,
                low=min(values),
                high=max(values),
                interval="range",
                n=sum(n for _, _, n in generated),
                unit="tasks",
                collections=collections,
                models=_public_models(data, collections),
                detail=f"range over {len(values)} generation-time labels",
            )
        )
    return _frame(rows)


@_paper_rows
def depth_vs_author_rating(data: AuditData, *, n_boot: int = 2000, seed: int = 0) -> pl.DataFrame:
    """D against the TB2 authors' difficulty rating.

    Paper: D correlates +0.55 with the authors' rating; of the TB2 tasks rated hard, 9 of 11 have
    D ≥ 2, against 8 of 28 rated easy or medium. Here the correlation is the rank partial
    correlation of D with the rating (easy < medium < hard) **controlling for W** (the paper's
    summary does not restate its covariate), over solved TB2 tasks; the counts are over solved
    TB2 tasks with a rating.

    Rows (group ``tb2``): ``pcorr_depth_rating_given_work``, ``rated_hard_depth_ge_2`` (n = solved
    tasks rated hard) and ``rated_easy_medium_depth_ge_2`` (n = solved tasks rated easy or medium).

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).
    n_boot, seed : int
        Bootstrap resamples for the CIs (0: none) and their seed.

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    collections = ["tb2"]
    models = _capped_models(data, collections)
    rated = _solved(data, collections).filter(pl.col("difficulty").is_in(LABELS))
    rows = []
    usable = rated.drop_nulls("work")
    if usable.height >= _MIN_TASKS and usable["difficulty"].n_unique() >= 2 and usable["depth"].n_unique() >= 2:
        result = stats.partial_spearman(
            usable, "depth", "difficulty", "work", order={"difficulty": list(LABELS)}, n_boot=n_boot, seed=seed
        )
        rows.append(
            _corr_row(
                data,
                "pcorr_depth_rating_given_work",
                "tb2",
                result,
                collections,
                models,
                detail="covariate: W",
                unit="solved tasks",
            )
        )
    else:
        rows.append(
            _row(
                data,
                "pcorr_depth_rating_given_work",
                "tb2",
                None,
                n=usable.height,
                unit="solved tasks",
                collections=collections,
                models=models,
                detail=f"needs at least {_MIN_TASKS} solved TB2 tasks with a rating",
            )
        )
    for key, ratings in (("rated_hard_depth_ge_2", ["hard"]), ("rated_easy_medium_depth_ge_2", ["easy", "medium"])):
        part = rated.filter(pl.col("difficulty").is_in(ratings))
        deep = part.filter(pl.col("depth") >= 2).height
        rows.append(
            _row(
                data,
                key,
                "tb2",
                deep if part.height else None,
                n=part.height,
                unit="solved tasks",
                collections=collections,
                models=models,
                detail=f"{deep} of {part.height}",
            )
        )
    return _frame(rows)


# ---------------------------------------------------------------------------------------------
# quadrants


def quadrant_cells(
    data: AuditData,
    *,
    collections: Sequence[str] = HUMAN,
    percentile_base: Literal["all", "solved"] = "all",
    depth_split: float = 2,
    n_boot: int = 2000,
    seed: int = 0,
) -> pl.DataFrame:
    """The four cells of :func:`quadrant_percentiles` as :func:`depthlab.stats.quadrants` gives them (for plotting).

    A ``collections`` column names the collections split. Empty (no rows) when no task of
    ``collections`` has a pinned D.
    """
    if percentile_base not in ("all", "solved"):
        raise ValueError(
            "The 'percentile_base' parameter of quadrant_percentiles must be 'all' or 'solved', "
            f"got {percentile_base!r}"
        )
    chosen = [d for d in data.datasets if d in collections]
    part = data.audit.filter(pl.col("dataset").is_in(chosen))
    if percentile_base == "solved":
        part = part.filter(pl.col("depth_status") == "solved")
    part = part.with_columns(depth=pl.when(pl.col("depth_status") == "solved").then(pl.col("depth")))
    if part.filter(pl.col("depth").is_not_null()).height == 0:
        return pl.DataFrame()
    cells = stats.quadrants(part, depth_split=depth_split, work_split="median", n_boot=n_boot, seed=seed)
    return cells.with_columns(collections=pl.lit(", ".join(chosen)))


@_paper_rows
def quadrant_percentiles(
    data: AuditData,
    *,
    collections: Sequence[str] = HUMAN,
    percentile_base: Literal["all", "solved"] = "all",
    depth_split: float = 2,
    n_boot: int = 2000,
    seed: int = 0,
) -> pl.DataFrame:
    """The depth/work quadrants: mean within-collection pass-rate percentile per cell.

    Paper: TB2 and TW, split at D = 2 and the median W: tasks large in both have a mean
    percentile of 0.29 against 0.53–0.59 for the other three cells (lower = harder). A task's
    percentile ranks its public pass rate within its collection, among ``percentile_base``:
    ``"all"`` its collection's tasks with a pass rate (the default), or ``"solved"`` its solved
    ones only; the cells hold the solved tasks (D known). BCa bootstrap CI over the cell's tasks.

    Rows: ``quadrant_mean_percentile`` per cell (group ``deep/large``, ``deep/small``,
    ``shallow/large``, ``shallow/small``); ``quadrant_other_mean_percentile`` (group
    ``not deep/large``: the range over the other three cells); ``quadrant_hardest`` (group: the
    cell with the lowest mean percentile in this data, named from the data).

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).
    collections : sequence of str
        Collections split (default TB2 and TW, as the paper).
    percentile_base : {"all", "solved"}
        The tasks each pass-rate percentile is taken among (default: all tasks of the collection).
    depth_split : float
        A task is deep when D >= depth_split.
    n_boot, seed : int
        Bootstrap resamples for the CIs (0: none) and their seed.

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    chosen = [d for d in data.datasets if d in collections]
    models = _capped_models(data, chosen)
    detail = f"percentile among {percentile_base} tasks of each collection; split at D = {depth_split:g}"
    cells = quadrant_cells(
        data,
        collections=collections,
        percentile_base=percentile_base,
        depth_split=depth_split,
        n_boot=n_boot,
        seed=seed,
    )
    if cells.height == 0:
        return _frame(
            [
                _row(
                    data,
                    "quadrant_mean_percentile",
                    "deep/large",
                    None,
                    n=0,
                    unit="solved tasks",
                    collections=chosen,
                    models=models,
                    detail="no solved task",
                )
            ]
        )
    rows = []
    detail += f" and the median W ({cells['work_split'][0]:g})"
    for cell in cells.iter_rows(named=True):
        group = f"{cell['depth_class']}/{cell['work_class']}"
        rows.append(
            _row(
                data,
                "quadrant_mean_percentile",
                group,
                cell["mean_percentile"],
                low=cell["ci_low"],
                high=cell["ci_high"],
                interval="ci95" if cell["ci_low"] is not None else None,
                n=cell["n"],
                unit="solved tasks",
                collections=chosen,
                models=models,
                detail=detail,
            )
        )
    others = cells.filter(~((pl.col("depth_class") == "deep") & (pl.col("work_class") == "large")))
    values = others["mean_percentile"].drop_nulls()
    rows.append(
        _row(
            data,
            "quadrant_other_mean_percentile",
            "not deep/large",
            None,
            low=values.min() if values.len() else None,
            high=values.max() if values.len() else None,
            interval="range",
            n=int(others["n"].sum()),
            unit="solved tasks",
            collections=chosen,
            models=models,
            detail="range over the three cells other than deep/large",
        )
    )
    filled = cells.drop_nulls("mean_percentile")
    if filled.height:
        hardest = filled.sort("mean_percentile").row(0, named=True)
        name = f"{hardest['depth_class']}/{hardest['work_class']}"
        rows.append(
            _row(
                data,
                "quadrant_hardest",
                name,
                hardest["mean_percentile"],
                n=hardest["n"],
                unit="solved tasks",
                collections=chosen,
                models=models,
                detail=f"the cell with the lowest mean percentile here is {name}",
            )
        )
    return _frame(rows)


# ---------------------------------------------------------------------------------------------
# the DEPTH-style set


@_paper_rows
def own_set_summary(data: AuditData) -> pl.DataFrame:
    """The paper's own DEPTH-style set: size, W, N, what the best model solves, what no model passes.

    Paper: median W 315, median N 45; the best model solves 54 tasks, 44 of them with D ≥ 40; no
    model passes 29 of the 90 tasks. Here W and N are medians over the set's tasks (N is each
    task's median uncapped turn count); the best model is the one with a passing cap on the most
    tasks, and "D ≥ 40" uses the task's D; a task no model passes has no passing run, capped or
    uncapped, by any model.

    Rows (group ``depth``): ``own_tasks``, ``own_median_work``, ``own_median_turns``,
    ``own_solved_by_best``, ``own_solved_by_best_depth_ge_40``, ``own_passed_by_no_model``.

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    collections = [OWN] if OWN in data.datasets else []
    audit = data.audit.filter(pl.col("dataset") == OWN)
    models = sorted(data.trials.filter(pl.col("dataset") == OWN)["model"].drop_nulls().unique().to_list())
    common = {"collections": collections, "models": models}
    rows = [_row(data, "own_tasks", OWN, audit.height, n=audit.height, unit="tasks", **common)]
    work, turns = audit["work"].drop_nulls(), audit["n_turns"].drop_nulls()
    rows.append(
        _row(
            data,
            "own_median_work",
            OWN,
            work.median() if work.len() else None,
            n=work.len(),
            unit="tasks with W",
            **common,
        )
    )
    rows.append(
        _row(
            data,
            "own_median_turns",
            OWN,
            turns.median() if turns.len() else None,
            n=turns.len(),
            unit="tasks with uncapped runs",
            **common,
        )
    )
    depth = data.depth.filter(pl.col("dataset") == OWN)
    solved_by: dict[str, set[str]] = {}
    for task, by_model in depth.select("task", "depth_by_model").iter_rows():
        for model, model_depth in json.loads(by_model or "{}").items():
            if model_depth is not None:
                solved_by.setdefault(model, set()).add(task)
    if solved_by:
        best = max(sorted(solved_by), key=lambda m: len(solved_by[m]))
        tasks = solved_by[best]
        deep = audit.filter(pl.col("task").is_in(list(tasks)) & (pl.col("depth") >= 40)).height
        rows.append(
            _row(
                data,
                "own_solved_by_best",
                OWN,
                len(tasks),
                n=audit.height,
                unit="tasks",
                detail=f"best model: {best}",
                **common,
            )
        )
        rows.append(
            _row(
                data,
                "own_solved_by_best_depth_ge_40",
                OWN,
                deep,
                n=len(tasks),
                unit="tasks",
                detail=f"of the tasks {best} solves",
                **common,
            )
        )
    else:
        rows.append(
            _row(data, "own_solved_by_best", OWN, None, n=audit.height, unit="tasks", detail="no capped runs", **common)
        )
        rows.append(_row(data, "own_solved_by_best_depth_ge_40", OWN, None, n=0, unit="tasks", **common))
    passed = data.trials.filter((pl.col("dataset") == OWN) & (pl.col("status") == "pass"))["task"].unique()
    never = audit.filter(~pl.col("task").is_in(passed.to_list())).height
    rows.append(
        _row(
            data,
            "own_passed_by_no_model",
            OWN,
            never if audit.height else None,
            n=audit.height,
            unit="tasks",
            detail="no passing run, capped or uncapped, by any model",
            **common,
        )
    )
    return _frame(rows)


@_paper_rows
def pass_at_1(data: AuditData, *, collections: Sequence[str] = (OWN,)) -> pl.DataFrame:
    """Per-model pass@1: the pass rate averaged within each task, then over tasks.

    Paper: on its DEPTH-style set, from 17% to 47% across models. Valid uncapped runs; a task
    counts for a model when the model has a valid run on it.

    Rows ``pass_at_1`` per model, and ``models`` (the range over models).

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).
    collections : sequence of str
        The collections (default the DEPTH-style set).

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    chosen = [d for d in data.datasets if d in collections]
    public = _public(data).filter(pl.col("dataset").is_in(chosen))
    per_task = public.group_by("dataset", "task", "model").agg(rate=(pl.col("status") == "pass").mean())
    per_model = per_task.group_by("model").agg(value=pl.col("rate").mean(), n=pl.len()).sort("model")
    rows = [
        _row(data, "pass_at_1", model, value, n=n, unit="tasks", collections=chosen, models=[model])
        for model, value, n in per_model.iter_rows()
    ]
    if per_model.height:
        rows.append(
            _row(
                data,
                "pass_at_1",
                "models",
                None,
                low=per_model["value"].min(),
                high=per_model["value"].max(),
                interval="range",
                n=per_model["n"].max(),
                unit="tasks",
                collections=chosen,
                models=per_model["model"].to_list(),
                detail=f"range over {per_model.height} models",
            )
        )
    return _frame(rows)


@_paper_rows
def segment_reliability(
    data: AuditData, *, collections: Sequence[str] = (OWN,), n_boot: int = 2000, seed: int = 0
) -> pl.DataFrame:
    """Per-model segment reliability r of multi-segment tasks, and how it compounds.

    Paper: reliability r is 0.88 for the best model and 0.74 for the worst; over six segments it
    compounds to 47% against 16% of runs passing all. Here, per model, on a fixed task set (the
    multi-segment tasks every model has a valid uncapped run on): r = segments passed / segments
    attempted (a run stops at its first failed segment, so it attempts the passed ones and the
    failed one); the observed share of runs passing every segment; and the compounded share
    rᵏ (averaged over runs, k = the task's number of segments). 95% percentile CIs from a
    bootstrap over tasks.

    Rows per model, and for ``best model`` / ``worst model`` (by r): ``segment_reliability``,
    ``segment_pass_all_observed``, ``segment_pass_all_compounded``.

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).
    collections : sequence of str
        The collections (default the DEPTH-style set).
    n_boot, seed : int
        Bootstrap resamples for the CIs (0: none) and their seed.

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    chosen = [d for d in data.datasets if d in collections]
    runs = _segment_runs(data, chosen)
    if runs.height == 0:
        return _frame(
            [
                _row(
                    data,
                    "segment_reliability",
                    "best model",
                    None,
                    n=0,
                    unit="tasks",
                    collections=chosen,
                    detail="no multi-segment runs (reward keys segment_k)",
                )
            ]
        )
    models = sorted(runs["model"].unique().to_list())
    # the fixed task set: tasks every model has a valid run on
    tasks = runs.group_by("task").agg(pl.col("model").n_unique().alias("m")).filter(pl.col("m") == len(models))
    task_ids = sorted(tasks["task"].to_list())
    runs = runs.filter(pl.col("task").is_in(task_ids))
    k_by_task = runs.group_by("task").agg(pl.col("segments").max()).sort("task")["segments"].to_numpy()
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(task_ids), size=(n_boot, len(task_ids))) if n_boot else None
    counts = None if draws is None else np.stack([np.bincount(d, minlength=len(task_ids)) for d in draws])
    results = {}
    for model in models:
        per_task = (
            runs.filter(pl.col("model") == model)
            .group_by("task")
            .agg(
                passed=pl.col("passed").sum(),
                attempted=pl.col("attempted").sum(),
                runs=pl.len(),
                all_passed=pl.col("all_passed").sum(),
            )
            .sort("task")
        )
        vectors = {c: per_task[c].to_numpy().astype(float) for c in ("passed", "attempted", "runs", "all_passed")}
        point = _segment_stats(np.ones((1, len(task_ids))), vectors, k_by_task)
        boot = None if counts is None else _segment_stats(counts, vectors, k_by_task)
        results[model] = (point, boot, int(vectors["runs"].sum()))
    rows = []
    ranked = sorted(models, key=lambda m: results[m][0][0][0])
    labelled = [(m, m) for m in models] + [("best model", ranked[-1]), ("worst model", ranked[0])]
    k_text = f"k = {int(k_by_task.min())}" + ("" if k_by_task.min() == k_by_task.max() else f"–{int(k_by_task.max())}")
    for group, model in labelled:
        point, boot, n_runs = results[model]
        for j, key in enumerate(("segment_reliability", "segment_pass_all_observed", "segment_pass_all_compounded")):
            low = high = None
            if boot is not None:
                finite = boot[j][np.isfinite(boot[j])]
                if finite.size:
                    low, high = (float(v) for v in np.quantile(finite, [0.025, 0.975]))
            rows.append(
                _row(
                    data,
                    key,
                    group,
                    float(point[j][0]),
                    low=low,
                    high=high,
                    interval="ci95" if low is not None else None,
                    n=len(task_ids),
                    unit="tasks",
                    collections=chosen,
                    models=[model],
                    detail=f"{model}: {n_runs} runs on {len(task_ids)} tasks ({k_text} segments)",
                )
            )
    return _frame(rows)


@_paper_rows
def sign_test_depth(data: AuditData) -> pl.DataFrame:
    """Sign test on D over paired environments: is the derived task deeper than its original?

    Paper: over environments hosting an original task and a task derived from it (the derived
    one chains more segments in the same environment), 35 of 35 pairs have the derived task
    deeper: p = 5.8 × 10⁻¹¹ (exact two-sided sign test). D is compared with a task no model solves
    (``unsolved``: D above the top cap) ranked above every cap; a pair with an incomplete D is
    dropped; ties are dropped from the test.

    Rows (group ``paired environments``): ``sign_test_pairs`` (pairs with both D known or
    unsolved), ``sign_test_ties``, ``sign_test_n`` (pairs tested), ``sign_test_deeper`` (derived
    deeper), ``sign_test_p``.

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    pairs = environment_pairs(data)
    group = "paired environments"
    collections = sorted(set(pairs["dataset"].to_list()) | set(pairs["o_dataset"].to_list()))
    models = _capped_models(data, collections)
    known = pairs.drop_nulls(["original_rank", "derived_rank"])
    dropped = pairs.height - known.height
    test = stats.sign_test(known["derived_rank"].to_numpy(), known["original_rank"].to_numpy())
    tested = test.n_pos + test.n_neg
    detail = (
        f"{pairs.height} pairs; {dropped} with an incomplete D dropped; {test.n_zero} ties dropped; "
        f"{tested} tested: {test.n_pos} deeper, {test.n_neg} shallower"
    )
    common = {"collections": collections, "models": models, "detail": detail}
    return _frame(
        [
            _row(data, "sign_test_pairs", group, known.height, n=pairs.height, unit="pairs", **common),
            _row(data, "sign_test_ties", group, test.n_zero, n=known.height, unit="pairs", **common),
            _row(data, "sign_test_n", group, tested, n=tested, unit="pairs", **common),
            _row(data, "sign_test_deeper", group, test.n_pos, n=tested, unit="pairs", **common),
            _row(
                data,
                "sign_test_p",
                group,
                None if tested == 0 else test.p,
                p=None if tested == 0 else test.p,
                n=tested,
                unit="pairs",
                **common,
            ),
        ]
    )


def environment_pairs(data: AuditData) -> pl.DataFrame:
    """Derived tasks (task.toml ``derived_from = "<dataset>/<task>"``) beside their original.

    Columns dataset, task, o_dataset, o_task, original, derived (D, null unless solved),
    original_status, derived_status, original_rank, derived_rank (D, with an unsolved task ranked
    above every cap: :data:`UNSOLVED_RANK`; null when D is incomplete).
    """
    links = (
        data.tasks.select("dataset", "task", derived_from=pl.col("labels").str.json_path_match("$.derived_from"))
        .drop_nulls("derived_from")
        .with_columns(
            o_dataset=pl.col("derived_from").str.split("/").list.first(),
            o_task=pl.col("derived_from").str.split("/").list.slice(1).list.join("/"),
        )
    )
    rank = (
        pl.when(pl.col("depth_status") == "solved")
        .then(pl.col("depth").cast(pl.Float64))
        .when(pl.col("depth_status") == "unsolved")
        .then(pl.lit(UNSOLVED_RANK))
    )
    facts = data.audit.select("dataset", "task", "depth", "depth_status", rank=rank)
    originals = facts.rename(
        {
            "dataset": "o_dataset",
            "task": "o_task",
            "depth": "original",
            "depth_status": "original_status",
            "rank": "original_rank",
        }
    )
    return (
        links.join(facts, on=["dataset", "task"], how="left")
        .join(originals, on=["o_dataset", "o_task"], how="left")
        .select(
            "dataset",
            "task",
            "o_dataset",
            "o_task",
            "original",
            pl.col("depth").alias("derived"),
            "original_status",
            pl.col("depth_status").alias("derived_status"),
            "original_rank",
            pl.col("rank").alias("derived_rank"),
        )
    )


# ---------------------------------------------------------------------------------------------
# public pass rates


def model_pass_rates(data: AuditData, *, status_rule: str | None = None) -> pl.DataFrame:
    """Each model's public pass rate: passing trials over valid uncapped trials.

    Not one of the paper's numbers: the check that the data is the published one. With
    ``status_rule="all"`` every uncapped trial counts (a missing reward is a failure), as in the TMax
    authors' release; on the bundled TB2 facts this gives their published rates (tmax-27b 42.70%,
    Qwen3.6-27B 39.55%, tmax-9b 27.19%). With ``"leaderboard"`` trials that died of an
    infrastructure error are left out; None keeps the status the trials were loaded with.

    Rows ``pass_rate`` (status as loaded) or ``pass_rate_rule_<rule>`` per model (``collections``:
    where its trials are; n = trials counted).

    Parameters
    ----------
    data : AuditData
        The tables of one data source (:func:`depthlab.auditdata.audit_data`).
    status_rule : {"all", "leaderboard"} or None
        Re-judge each trial's status from its reward and exception under this rule; None keeps the loaded one.

    Returns
    -------
    pl.DataFrame
        :data:`FINDING` rows, as listed above; a value this data cannot give is null, never zero.
    """
    from depthlab.io import STATUS_RULES, trial_status

    uncapped = data.trials.filter(pl.col("cap").is_null())
    key = "pass_rate"
    if status_rule is not None:
        if status_rule not in STATUS_RULES:
            raise ValueError(
                f"The 'status_rule' parameter of model_pass_rates must be one of {STATUS_RULES} or None, "
                f"got {status_rule!r}"
            )
        status = [
            trial_status(r, e, status_rule) for r, e in zip(uncapped["reward"], uncapped["exception"], strict=True)
        ]
        uncapped = uncapped.with_columns(status=pl.Series(status, dtype=pl.String))
        key = f"pass_rate_rule_{status_rule}"
    valid = uncapped.filter(pl.col("status").is_in(["pass", "fail"]))
    per_model = (
        valid.group_by("model")
        .agg(value=(pl.col("status") == "pass").mean(), n=pl.len(), collections=pl.col("dataset").unique().sort())
        .sort("model")
    )
    detail = "status as loaded" if status_rule is None else f"status rule {status_rule!r}"
    return _frame(
        [
            _row(
                data,
                key,
                model,
                value,
                n=n,
                unit="uncapped runs",
                collections=collections,
                models=[model],
                detail=detail,
            )
            for model, value, n, collections in per_model.iter_rows()
        ]
    )


# ---------------------------------------------------------------------------------------------
# helpers


def _row(
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
) -> dict[str, Any]:
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


def _number(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=FINDING)


def _share(
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
) -> dict[str, Any]:
    if n == 0:
        return _row(data, key, group, None, n=0, unit=unit, collections=collections, models=models, detail=detail)
    lows, highs = stats.proportion_ci([count], [n], method="wilson")
    low, high = float(lows[0]), float(highs[0])
    return _row(
        data,
        key,
        group,
        count / n,
        low=low,
        high=high,
        interval="ci95",
        n=n,
        unit="tasks",
        collections=collections,
        models=models,
        detail=detail or f"{count} of {n} (Wilson interval)",
    )


def _solved(data: AuditData, collections: Sequence[str]) -> pl.DataFrame:
    return data.audit.filter(pl.col("dataset").is_in(list(collections)) & (pl.col("depth_status") == "solved"))


def _public(data: AuditData) -> pl.DataFrame:
    from depthlab.measures.public import public_trials

    return public_trials(data.trials)


def _capped_models(data: AuditData, collections: Sequence[str]) -> list[str]:
    capped = data.trials.filter(pl.col("cap").is_not_null() & pl.col("dataset").is_in(list(collections)))
    return sorted(capped["model"].drop_nulls().unique().to_list())


def _public_models(data: AuditData, collections: Sequence[str]) -> list[str]:
    public = _public(data).filter(pl.col("dataset").is_in(list(collections)))
    return sorted(public["model"].drop_nulls().unique().to_list())


def _source(frame: pl.DataFrame) -> str:
    sources = sorted(frame["difficulty_source"].drop_nulls().unique().to_list())
    return ", ".join(sources) or "unknown"


def _complexity(data: AuditData, dataset: str) -> pl.DataFrame:
    return data.tasks.filter(pl.col("dataset") == dataset).select(
        "dataset", "task", task_complexity=pl.col("labels").str.json_path_match("$.task_complexity")
    )


def _corr_row(
    data: AuditData,
    key: str,
    group: str,
    result: stats.PartialCorr,
    collections: Sequence[str],
    models: Sequence[str],
    *,
    detail: str | None = None,
    unit: str = "tasks",
) -> dict[str, Any]:
    has_ci = result.n_boot > 0 and math.isfinite(result.ci_low)
    return _row(
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


def _correlations(
    data: AuditData, x: str, y: str, covar: str, key: str, *, solved: bool, pairs: bool, n_boot: int, seed: int
) -> pl.DataFrame:
    base = data.audit.filter(pl.col("depth_status") == "solved") if solved else data.audit
    groups = [(d, [d]) for d in data.datasets]
    human = [d for d in data.datasets if d in HUMAN]
    if pairs and len(human) == 2:
        groups.append(("tb2+tw", human))
    if len(data.datasets) > 1:
        groups.append(("all", list(data.datasets)))
    rows = []
    for group, collections in groups:
        used = base.filter(pl.col("dataset").is_in(collections)).drop_nulls([x, y, covar])
        models = _capped_models(data, collections) if solved else _public_models(data, collections)
        unit = "solved tasks" if solved else "tasks"
        if used.height < _MIN_TASKS or any(used[c].n_unique() < 2 for c in (x, y, covar)):
            rows.append(
                _row(
                    data,
                    key,
                    group,
                    None,
                    n=used.height,
                    unit=unit,
                    collections=collections,
                    models=models,
                    detail=f"needs at least {_MIN_TASKS} tasks and no constant column",
                )
            )
            continue
        result = stats.partial_spearman(used, x, y, covar, n_boot=n_boot, seed=seed)
        rows.append(_corr_row(data, key, group, result, collections, models, detail=f"covariate: {covar}", unit=unit))
    return _frame(rows)


def _segment_runs(data: AuditData, collections: Sequence[str]) -> pl.DataFrame:
    runs = _public(data).filter(
        pl.col("dataset").is_in(list(collections)) & pl.col("rewards").str.contains('"segment_')
    )
    rows = []
    n_segments: dict[str, int] = {}
    for dataset, task, model, rewards in runs.select("dataset", "task", "model", "rewards").iter_rows():
        keys = json.loads(rewards)
        outcome = [keys[f"segment_{k}"] >= 1 for k in range(1, len(keys) + 1) if f"segment_{k}" in keys]
        name = f"{dataset}/{task}"
        rows.append((name, model, sum(outcome), len(outcome), outcome))
        n_segments[name] = max(n_segments.get(name, 0), len(outcome))
    # a task's number of segments: the most keys any run has (a run passing all has every key), or the
    # task.toml's `segments` label when given
    declared = _declared_segments(data, collections)
    table = [
        (name, model, passed, attempted, declared.get(name, n_segments[name]))
        for name, model, passed, attempted, _ in rows
    ]
    frame = pl.DataFrame(table, schema=["task", "model", "passed", "attempted", "segments"], orient="row")
    return frame.with_columns(all_passed=pl.col("passed") == pl.col("segments"))


def _declared_segments(data: AuditData, collections: Sequence[str]) -> dict[str, int]:
    tasks = data.tasks.filter(pl.col("dataset").is_in(list(collections)))
    out = {}
    for dataset, task, labels in tasks.select("dataset", "task", "labels").iter_rows():
        value = json.loads(labels or "{}").get("segments")
        if isinstance(value, list) and value:
            out[f"{dataset}/{task}"] = len(value)
        elif isinstance(value, int | float) and not isinstance(value, bool) and value >= 1:
            out[f"{dataset}/{task}"] = int(value)
    return out


def _segment_stats(weights: np.ndarray, v: dict[str, np.ndarray], k: np.ndarray) -> tuple[np.ndarray, ...]:
    # weights: (B, tasks) how often each task is drawn; all three statistics as weighted sums over tasks
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (weights @ v["passed"]) / (weights @ v["attempted"])
        runs = weights @ v["runs"]
        observed = (weights @ v["all_passed"]) / runs
        compounded = ((weights * v["runs"]) * r[:, None] ** k[None, :]).sum(axis=1) / runs
    return r, observed, compounded
