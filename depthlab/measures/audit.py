"""The audit table: one row per task joining work, labels, depth, turn counts and public pass rate."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import polars as pl

from depthlab import schema
from depthlab._checks import check_frame, parameter_problem
from depthlab.catalog import CURATION, RUN_NAMES
from depthlab.measures.depth import TASK_KEYS, estimate_depth
from depthlab.measures.public import public_measures
from depthlab.schema import CAPS

_TASK_COLUMNS = ("dataset", "task", "work", "difficulty", "difficulty_source", "category", "expert_time_min")


def audit_table(
    tasks: pl.DataFrame,
    trials: pl.DataFrame,
    *,
    caps: Sequence[int] = CAPS,
    models: Sequence[str] | None = None,
    pass_rule: str = "any",
    curation: Mapping[str, str] | None = None,
    proxy: pl.DataFrame | None = None,
    depth: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per task of ``tasks``: W and labels, D and its status, N, public pass rate, curation, proxy.

    * work and labels come from ``tasks``;
    * ``depth`` and ``depth_status`` from ``depth``, the depth table, when given; otherwise from
      :func:`estimate_depth` on the capped trials (with ``caps``, ``models`` and ``pass_rule``);
      a task with no row in it is ``incomplete``;
    * ``n_turns`` is the median turn count and ``hit_limit_share`` the share of runs that hit
      the harness limit, over the valid uncapped trials pooled over models;
    * ``pass_rate`` is the mean pass over those trials and ``n_public_trials`` their number
      (0 when there are none; the rate is then null): the measures of
      :func:`depthlab.measures.public.public_measures` (``turn_counts(by="task")`` and
      ``pass_rates(by="task")``; ``n_public_trials`` is their ``n_valid``, under the audit's
      published column name);
    * ``curation`` maps the dataset name through ``curation`` (default :data:`depthlab.catalog.CURATION`);
    * ``proxy_depth`` and ``proxy_n_passing`` come from ``proxy`` (null when it is not given);
    * ``task_group`` comes from ``tasks`` (null for a tasks table without it).

    Trials join tasks on (dataset, task). A run whose logs name its collection another way (a
    Harbor job of Terminal-Bench 2 says ``terminal-bench``) joins a registered collection's tasks
    when that name is one of the collection's (:data:`depthlab.catalog.RUN_NAMES`) and its task is
    one of them. When fewer than half of the tasks join any trial, a ``UserWarning`` names the
    datasets on each side.

    Parameters
    ----------
    tasks : pl.DataFrame
        The tasks table. Its rows fix the audit's rows (a left join).
    trials : pl.DataFrame
        The trials table, capped and uncapped runs together.
    caps, models, pass_rule
        Passed to :func:`estimate_depth` (only when ``depth`` is not given).
    curation : mapping of str to {"human", "synthetic"}, optional
        Dataset name -> curation. Default :data:`depthlab.catalog.CURATION`.
    proxy : pl.DataFrame, optional
        The trajectory depth proxy per task, ``depthlab.depth_proxy(trials)`` (columns dataset,
        task, proxy_depth, n_passing). It reads the trajectories the trials table points to, so
        it is computed by the caller, once.
    depth : pl.DataFrame, optional
        The depth table of these trials, ``depthlab.estimate_depth(trials)`` (columns dataset,
        task, depth, status), when the caller has it already: D is then not computed again.

    Returns
    -------
    pl.DataFrame
        The audit table (:data:`depthlab.schema.AUDIT`), in the order of ``tasks``.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> from depthlab.measures import audit_table, estimate_depth
    >>> tasks = schema.conform(pl.DataFrame({"dataset": "tb2", "task": ["t"], "work": [5]}), "tasks")
    >>> trials = schema.conform(pl.DataFrame({"dataset": "tb2", "task": "t", "model": "m",
    ...     "cap": [1, 2, None], "status": ["fail", "pass", "pass"], "n_turns": [1, 2, 6]}), "trials")
    >>> audit_table(tasks, trials).select("curation", "work", "depth", "n_turns", "pass_rate").row(0)
    ('human', 5, 2, 6.0, 1.0)

    With the depth table computed once, for the caller's own use too:

    >>> depth = estimate_depth(trials)
    >>> audit_table(tasks, trials, depth=depth)["depth"].to_list()
    [2]
    """
    function = "audit_table"
    check_frame(tasks, "tasks", function, _TASK_COLUMNS)
    check_frame(trials, "trials", function, ("dataset", "task", "model", "cap", "status", "n_turns", "hit_limit"))
    if proxy is not None:
        check_frame(proxy, "proxy", function, (*TASK_KEYS, "proxy_depth", "n_passing"))
    trials = joinable_trials(tasks, trials)
    if depth is not None:
        check_frame(depth, "depth", function, (*TASK_KEYS, "depth", "status"))
    mapping = CURATION if curation is None else curation
    if not isinstance(mapping, Mapping) or any(value not in ("human", "synthetic") for value in mapping.values()):
        raise parameter_problem(
            "curation", function, f"must map dataset names to 'human' or 'synthetic', got {curation!r}"
        )
    if depth is None:
        depth = estimate_depth(
            trials.filter(pl.col("cap").is_not_null()), caps=caps, models=models, pass_rule=pass_rule
        )
    public = public_measures(trials).rename({"n_valid": "n_public_trials"})
    out = (
        tasks.select(*_TASK_COLUMNS, _task_group(tasks))
        .join(
            depth.select(*TASK_KEYS, "depth", depth_status="status"),
            on=list(TASK_KEYS),
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )
        .join(public, on=list(TASK_KEYS), how="left", nulls_equal=True, maintain_order="left")
        .join(schema.version_columns(tasks), on=list(TASK_KEYS), how="left", nulls_equal=True, maintain_order="left")
    )
    if proxy is not None:
        out = out.join(
            proxy.select(*TASK_KEYS, "proxy_depth", proxy_n_passing="n_passing"),
            on=list(TASK_KEYS),
            how="left",
            nulls_equal=True,
            maintain_order="left",
        ).with_columns(proxy_n_passing=pl.col("proxy_n_passing").fill_null(0))
    out = out.with_columns(
        curation=pl.col("dataset").replace_strict(dict(mapping), default=None, return_dtype=pl.String),
        depth_status=pl.col("depth_status").fill_null("incomplete"),
        n_public_trials=pl.col("n_public_trials").fill_null(0),
    )
    return schema.conform(out, "audit")


def _task_group(tasks: pl.DataFrame) -> pl.Expr:
    return pl.col("task_group") if "task_group" in tasks.columns else pl.lit(None, pl.String).alias("task_group")


def joinable_trials(tasks: pl.DataFrame, trials: pl.DataFrame) -> pl.DataFrame:
    """``trials`` with runs of a registered collection under another name tagged as the collection, checked to join.

    A trial whose dataset is one of a collection's run names (:data:`depthlab.catalog.RUN_NAMES`,
    e.g. ``terminal-bench`` for ``tb2``), whose collection is in ``tasks`` but not among the trials'
    datasets, and whose task is one of that collection's tasks, is tagged with the collection. When
    fewer than half of the tasks then join any trial, a ``UserWarning`` names the datasets of both.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> tasks = schema.conform(pl.DataFrame({"dataset": "tb2", "task": ["fix-git"]}), "tasks")
    >>> trials = schema.conform(pl.DataFrame({"dataset": "terminal-bench", "task": ["fix-git"]}), "trials")
    >>> joinable_trials(tasks, trials)["dataset"].to_list()
    ['tb2']
    """
    if tasks.is_empty() or trials.is_empty():
        return trials
    task_sets = {d: set(group["task"]) for (d,), group in tasks.group_by("dataset")}
    present = set(trials["dataset"].drop_nulls())
    aliases = {
        alias: collection
        for collection in task_sets
        if collection in RUN_NAMES and collection not in present
        for alias in RUN_NAMES[collection]
    }
    if aliases:
        renamed = [
            collection
            if (collection := aliases.get((dataset or "").lower())) is not None and task in task_sets[collection]
            else dataset
            for dataset, task in zip(trials["dataset"], trials["task"], strict=True)
        ]
        trials = trials.with_columns(dataset=pl.Series(renamed, dtype=pl.String))
    runs = trials.select("dataset", "task").unique()
    joined = tasks.join(runs, on=["dataset", "task"], how="semi", nulls_equal=True).height
    if joined * 2 < tasks.height:
        warnings.warn(
            f"audit_table: only {joined} of {tasks.height} tasks join any trial on (dataset, task); the tasks' "
            f"datasets are {_names(tasks)}, the trials' {_names(trials)}",
            UserWarning,
            stacklevel=3,
        )
    return trials


def _names(frame: pl.DataFrame) -> list[str | None]:
    names = set(frame["dataset"])
    return [*sorted(n for n in names if n is not None), *([None] if None in names else [])]
