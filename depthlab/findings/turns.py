"""Notebook 02, turn counts N against depth D: mean N beside median D, the 6-10 window, the second model."""

from __future__ import annotations

import polars as pl

from depthlab.auditdata import AuditData
from depthlab.catalog import AUDITED, OWN
from depthlab.findings._core import (
    DescribedSample,
    capped_models,
    depth_models,
    main_model,
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
    """Mean and median uncapped turns N per collection beside its median D.

    Paper: TMax and FACET report 16.3 and 11.86 mean turns, while their solved tasks have a
    median D of 1–2; median N is 5 to 9 for the existing collections (45 for its own set). The
    16.3 and 11.86 are the datasets' own reported figures (their authors' runs); what can be
    computed here is a variant, and its comparison row says so: the mean ``n_turns`` over the
    valid uncapped runs loaded (every model's). The median N of a collection is the median over
    its tasks of each task's median uncapped turn count (``audit.n_turns``); D the median over
    solved tasks.

    Rows per collection: ``mean_turns`` (n = runs), ``median_turns`` (n = tasks with uncapped runs)
    and ``solved_median_depth`` (n = solved tasks); ``median_turns`` group ``existing`` (the range
    over the six audited collections present).

    Parameters
    ----------
    {data}

    {returns}
    """
    public = public_runs(data)
    rows = []
    medians = []
    for dataset in data.datasets:
        turns = public.filter(pl.col("dataset") == dataset)["n_turns"].drop_nulls().cast(pl.Float64)
        models = public_models(data, [dataset])
        rows.append(
            make_row(
                data,
                "mean_turns",
                dataset,
                turns.mean() if turns.len() else None,
                n=turns.len(),
                unit="valid uncapped runs",
                collections=[dataset],
                models=models,
                detail="mean over the loaded valid uncapped runs, models pooled",
            )
        )
        per_task = data.audit.filter(pl.col("dataset") == dataset)["n_turns"].drop_nulls()
        median = float(per_task.median()) if per_task.len() else None
        if median is not None and dataset in AUDITED:
            medians.append((dataset, median, per_task.len()))
        rows.append(
            make_row(
                data,
                "median_turns",
                dataset,
                median,
                n=per_task.len(),
                unit="tasks with uncapped runs",
                collections=[dataset],
                models=models,
                detail="median over tasks of each task's median uncapped N",
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
    if medians:
        existing = [d for d, _, _ in medians]
        values = [m for _, m, _ in medians]
        rows.append(
            make_row(
                data,
                "median_turns",
                "existing",
                None,
                low=min(values),
                high=max(values),
                interval="range",
                n=sum(n for _, _, n in medians),
                unit="tasks with uncapped runs",
                collections=existing,
                models=public_models(data, existing),
                detail=f"range over the {len(values)} audited collections' median N",
            )
        )
    return make_frame(rows)


@with_paper_rows
@docstring
def model_turns_beside_depth(data: AuditData, *, model: str | None = None, collection: str = "tmax") -> pl.DataFrame:
    """One model's median uncapped turns N on the solved tasks of a collection, beside their median D.

    Paper: on the 88 solved TMax tasks with released Gemini runs, Gemini takes a median of 8 turns
    while the median D is 1. Here, over the solved tasks of ``collection`` on which ``model`` has a
    valid uncapped run: each task's N is the median of that model's turn counts on it, and the row
    is the median over tasks; D is the task's D. ``model`` defaults to the model with valid
    uncapped runs on the most of those tasks (ties broken by its number of runs, then by name).

    Rows (group ``collection``): ``model_median_turns`` and ``model_median_depth`` (n = tasks).

    Parameters
    ----------
    {data}
    model : str, optional
        The model whose runs are read; default the rule above.
    collection : str
        The collection (default TMax, as the paper).

    {returns}
    """
    solved = solved_tasks(data, [collection]).select("dataset", "task", "depth")
    public = public_runs(data).filter(pl.col("dataset") == collection).drop_nulls("n_turns")
    runs = public.join(solved, on=["dataset", "task"], how="inner")
    if model is None and runs.height:
        coverage = runs.group_by("model").agg(tasks=pl.col("task").n_unique(), runs=pl.len())
        model = coverage.sort(["tasks", "runs", "model"], descending=[True, True, False])["model"][0]
    mine = runs.filter(pl.col("model") == model) if model is not None else runs.clear()
    per_task = mine.group_by("task").agg(
        turns=pl.col("n_turns").cast(pl.Float64).median(), depth=pl.col("depth").first()
    )
    detail = f"model {model}: its median turns per solved task, then the median over tasks"
    common: DescribedSample = {
        "collections": [collection] if collection in data.datasets else [],
        "models": [model] if model else [],
        "detail": detail if model else "no valid uncapped run on a solved task",
    }
    unit = "solved tasks with the model's runs"
    return make_frame(
        [
            make_row(
                data,
                "model_median_turns",
                collection,
                per_task["turns"].median() if per_task.height else None,
                n=per_task.height,
                unit=unit,
                **common,
            ),
            make_row(
                data,
                "model_median_depth",
                collection,
                per_task["depth"].median() if per_task.height else None,
                n=per_task.height,
                unit=unit,
                **common,
            ),
        ]
    )


@with_paper_rows
@docstring
def depth_given_turns(data: AuditData, *, turns: tuple[float, float] = (6, 10)) -> pl.DataFrame:
    """Of the audited tasks a model finishes in 6–10 turns, how many need only one.

    Paper: 96 of the 170 tasks with N in 6–10 have D = 1 (the six audited collections). N is the
    task's **lower median** uncapped turn count over the valid runs loaded (every model's): a
    count some run took, so a task whose runs took 10 and 11 turns has N = 10, never the 10.5 an
    interpolated median gives, which would fall out of the window. The window holds the tasks with
    D pinned and those no model solves (D above every cap, so not 1); a task whose D is incomplete
    is left out (counted in ``detail``).

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
    lower_median = (
        public_runs(data)
        .filter(pl.col("dataset").is_in(collections))
        .drop_nulls("n_turns")
        .group_by("dataset", "task")
        .agg(n_lower=pl.col("n_turns").sort().get((pl.len() - 1) // 2))
    )
    tasks = data.audit.filter(pl.col("dataset").is_in(collections)).join(
        lower_median, on=["dataset", "task"], how="inner"
    )
    in_window = tasks.filter(pl.col("n_lower").is_between(low, high))
    window = in_window.filter(pl.col("depth_status").is_in(["solved", "unsolved"]))
    ones = window.filter((pl.col("depth_status") == "solved") & (pl.col("depth") == 1)).height
    models = capped_models(data, collections)
    detail = (
        f"tasks with lower-median uncapped N in [{low:g}, {high:g}], D pinned or unsolved; "
        f"{in_window.height - window.height} with an incomplete D left out"
    )
    return make_frame(
        [
            make_row(
                data,
                "tasks_n_in_window",
                "audited",
                window.height if models else None,
                n=window.height,
                unit="tasks",
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
                unit="tasks",
                collections=collections,
                models=models,
                detail=detail,
            ),
            share_row(
                data, "share_n_in_window_depth_1", "audited", ones, window.height, collections, models, unit="tasks"
            ),
        ]
    )


@with_paper_rows
@docstring
def second_model(data: AuditData, *, first_model: str | None = None) -> pl.DataFrame:
    """How often a second model lowered D: existing collections and the paper's own set.

    Paper: taking D as the minimum over its main model (DeepSeek-V4.1-Flash) and a second one
    (GLM-5.3-Flash) lowered D for 25% of the existing tasks and 7% of the authors' solved tasks.
    Here (:func:`depthlab.measures.second_model_effect`), over the models D uses (the ``models=``
    the data was loaded with) and the tasks solved with two or more of them, D is lowered when
    ``first_model``'s own runs show it needs more than D; a task where its evidence is incomplete
    is undetermined and left out of the share (counted in ``detail``). ``first_model`` is named by
    the caller, else the main model: of D's models, the one whose own capped runs solve the most
    tasks (never the first name in sorted order).

    Rows (group ``existing``: the audited collections; ``own``: the DEPTH-style set):
    ``second_model_share_lowered`` (95% Wilson interval, n = determined tasks).

    Parameters
    ----------
    {data}
    first_model : str, optional
        The model taken alone; default the main model (above).

    {returns}
    """
    from depthlab.measures import second_model_effect

    capped = data.trials.filter(pl.col("cap").is_not_null())
    models = depth_models(data)
    first = first_model or main_model(data)
    rule = "named by the caller" if first_model else "the main model: solves the most tasks"
    rows = []
    for group, members in (("existing", AUDITED), ("own", (OWN,))):
        collections = [d for d in data.datasets if d in members]
        part = capped.filter(pl.col("dataset").is_in(collections))
        effect = (
            second_model_effect(part, first_model=first, by=None, models=models)
            if first is not None and len(models) >= 2
            else pl.DataFrame()
        )
        if effect.height:
            row = effect.row(0, named=True)
            detail = (
                f"first model {first} ({rule}): lowered {row['n_lowered']} of {row['n_determined']} determined "
                f"tasks; {row['n_undetermined']} undetermined of {row['n_tasks']} solved with two or more models"
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
                    detail="needs capped runs of two or more of D's models",
                )
            )
    return make_frame(rows)
