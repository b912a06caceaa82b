"""Notebook 02, turn counts N against depth D: mean N beside median D, the 6-10 window, the second model."""

from __future__ import annotations

import polars as pl

from depthlab.auditdata import AuditData
from depthlab.findings._core import (
    AUDITED,
    OWN,
    capped_models,
    make_frame,
    make_row,
    public_models,
    public_runs,
    share_row,
    solved_tasks,
    with_paper_rows,
)
from depthlab.findings._docs import docstring

# ---------------------------------------------------------------------------------------------
# turns N against depth D


@with_paper_rows
@docstring
def turns_beside_depth(data: AuditData) -> pl.DataFrame:
    """Mean uncapped turns N per collection beside its median D.

    Paper: a model takes 16.3 turns on average on TMax tasks and 11.86 on FACET tasks without a
    cap, while their solved tasks have a median D of 1–2. N is the mean ``n_turns`` over the valid
    uncapped runs (every model's); D the median over solved tasks.

    Rows per collection: ``mean_turns`` (n = runs) and ``solved_median_depth`` (n = solved tasks).

    Parameters
    ----------
    {data}

    {returns}
    """
    public = public_runs(data)
    rows = []
    for dataset in data.datasets:
        turns = public.filter(pl.col("dataset") == dataset)["n_turns"].drop_nulls().cast(pl.Float64)
        rows.append(
            make_row(
                data,
                "mean_turns",
                dataset,
                turns.mean() if turns.len() else None,
                n=turns.len(),
                unit="valid uncapped runs",
                collections=[dataset],
                models=public_models(data, [dataset]),
            )
        )
        depth = solved_tasks(data, [dataset])["depth"]
        rows.append(
            make_row(
                data,
                "solved_median_depth",
                dataset,
                depth.median() if depth.len() else None,
                n=depth.len(),
                unit="solved tasks",
                collections=[dataset],
                models=capped_models(data, [dataset]),
            )
        )
    return make_frame(rows)


@with_paper_rows
@docstring
def depth_given_turns(data: AuditData, *, turns: tuple[float, float] = (6, 10)) -> pl.DataFrame:
    """Of the audited tasks a model finishes in 6–10 turns, how many need only one.

    Paper: 96 of the 170 tasks with N in 6–10 have D = 1 (the six audited collections). N is the
    task's median uncapped turn count (``audit.n_turns``); tasks with a pinned D only.

    Rows (group ``audited``): ``tasks_n_in_window`` and ``tasks_n_in_window_depth_1`` (n = the
    tasks in the window), and ``share_n_in_window_depth_1``.

    Parameters
    ----------
    {data}
    turns : (low, high)
        The window of uncapped turns N (inclusive).

    {returns}
    """
    low, high = turns
    collections = [d for d in data.datasets if d in AUDITED]
    window = solved_tasks(data, collections).filter(pl.col("n_turns").is_between(low, high))
    ones = window.filter(pl.col("depth") == 1).height
    models = capped_models(data, collections)
    detail = f"solved tasks with median uncapped N in [{low:g}, {high:g}]"
    return make_frame(
        [
            make_row(
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
            make_row(
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
            share_row(data, "share_n_in_window_depth_1", "audited", ones, window.height, collections, models),
        ]
    )


@with_paper_rows
@docstring
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
    {data}
    first_model : str, optional
        The model taken alone; default the first model name in sorted order.

    {returns}
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
                share_row(
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
                make_row(
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
    return make_frame(rows)
