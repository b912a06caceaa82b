"""Terminal-Bench 2.0 (TB2): 89 human-written, expert-validated tasks.

Labels
------
Human ratings
    ``task.toml`` ``[metadata]`` ``difficulty`` (easy/medium/hard), ``category``, ``tags``,
    ``expert_time_estimate_min`` and ``junior_time_estimate_min`` are written by the task authors:
    ``difficulty_source`` is ``"human"``.
Generated labels
    None.
Missing
    The public runs (the TB2 leaderboard, the hamishivi/tmax ``evaluation_assets/`` Harbor jobs) are
    uncapped: there are no runs at stated turn caps, so D cannot be estimated from public data alone.
    The tmax runs enforced ``max_steps=64`` (a harness limit, not a stated cap: ``turn_limit``).

Layout under ``root`` (any combination)
---------------------------------------
``<root>/tasks/[tb2/]<task>/task.toml`` or ``<root>/<task>/task.toml``
    Harbor task dirs (``depthlab fetch tb2-tasks --dest <root>/tasks``).
``<root>/jobs/[tb2/]...``
    Harbor job dirs (``depthlab fetch tmax-jobs --dest <root>/jobs``); a trial with a stated cap goes to
    ``capped``, the rest to ``public``.
``<root>/tb2_tasks.csv``, ``<root>/tb2_public_results.csv``
    The tabulated TB2 tasks and public trials (the same tables ship bundled: ``load_dataset("tb2")``),
    read by :func:`tasks_from_csv` and
    :func:`public_trials_from_csv` when there are no task dirs / job dirs.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from depthlab import schema
from depthlab._checks import check_choice, check_path
from depthlab.datasets._base import Audit, DatasetInfo, json_object, make_audit
from depthlab.datasets._harbor_tree import load_root
from depthlab.io import STATUS_RULES, trial_status

INFO = DatasetInfo(
    name="tb2",
    description="Terminal-Bench 2.0: 89 human-written, expert-validated terminal tasks (Harbor format).",
    difficulty_source="human",
    human_labels=(
        "metadata.difficulty (author rating easy/medium/hard), category, tags, "
        "expert_time_estimate_min, junior_time_estimate_min"
    ),
    generated_labels="none",
    empirical_labels="public leaderboard / tmax evaluation_assets pass rates and turn counts",
    missing="no capped runs in public data (D needs depthlab run/fill); public tmax runs enforced max_steps=64",
    layout=(
        "<root>/tasks/<task>/ (task dirs), <root>/jobs/ (Harbor jobs), or <root>/tb2_tasks.csv + tb2_public_results.csv"
    ),
)

TASKS_CSV = "tb2_tasks.csv"
PUBLIC_RESULTS_CSV = "tb2_public_results.csv"


def load(root: str | Path, *, name: str = "tb2", status_rule: str = "leaderboard") -> Audit:
    """Load TB2 under ``root`` (layouts in the module docstring); see :func:`depthlab.load_dataset`."""
    root = Path(root)
    tree = load_root(root, name, difficulty_source="human", status_rule=status_rule, layout=INFO.layout)
    tasks, trials, rejected, tasks_dir, jobs_dir = tree.tasks, tree.trials, tree.rejected, tree.tasks_dir, tree.jobs_dir
    notes = [*tree.notes, "difficulty, category, tags and time estimates are the task authors' own (human) ratings"]
    if tasks_dir is None and (root / TASKS_CSV).is_file():
        tasks = tasks_from_csv(root / TASKS_CSV, dataset=name)
        notes.append(f"tasks read from {TASKS_CSV} (W = solve.sh lines counted by the CSV's builder)")
    if jobs_dir is None and (root / PUBLIC_RESULTS_CSV).is_file():
        trials = public_trials_from_csv(root / PUBLIC_RESULTS_CSV, status_rule=status_rule, dataset=name)
        notes.append(f"public trials read from {PUBLIC_RESULTS_CSV} (tmax evaluation_assets, max_steps=64)")
    return make_audit(name, tasks, trials, rejected=rejected, notes=notes)


#: Folder of the bundled TB2 tables (see its PROVENANCE.md).
BUNDLED_DIR = Path(__file__).resolve().parent / "data" / "tb2"


def load_bundled(*, name: str = "tb2", status_rule: str = "leaderboard") -> Audit:
    """The TB2 facts that ship with depthlab: 89 tasks and 3,560 public trials (``dl.load_dataset("tb2")``).

    The tables were converted from the published task metadata and the TMax authors' released TB2.0
    Harbor jobs (``data/tb2/PROVENANCE.md`` beside this module). A trial's ``status`` is decided here
    from its reward and exception under ``status_rule``, with the same rule as every loader
    (:func:`depthlab.io.trial_status`); under ``"all"`` the per-model pass rates are the published ones
    (tmax-27b 42.70, Qwen3.6-27B 39.55, tmax-9b 27.19, ...).

    Examples
    --------
    >>> from depthlab.datasets import tb2
    >>> bundle = tb2.load_bundled()
    >>> bundle.tasks.height, bundle.public.height, bundle.capped.height
    (89, 3560, 0)
    """
    check_choice(status_rule, "status_rule", "load_bundled", STATUS_RULES)
    tasks = pl.read_parquet(BUNDLED_DIR / "tasks.parquet")
    trials = pl.read_parquet(BUNDLED_DIR / "trials.parquet")
    status = pl.Series(
        [trial_status(r, e, status_rule) for r, e in zip(trials["reward"], trials["exception"], strict=True)],
        dtype=pl.String,
    )
    trials = trials.with_columns(status=status).with_columns(
        passed=pl.when(pl.col("status") != "invalid").then(pl.col("status") == "pass")
    )
    notes = [
        "the published TB2.0 facts bundled with depthlab (task metadata; the TMax release's public trials, "
        "max_steps=64)",
        "difficulty, category, tags and time estimates are the task authors' own (human) ratings",
    ]
    return make_audit(name, tasks, trials, notes=notes)


def tasks_from_csv(path: str | Path, *, dataset: str = "tb2") -> pl.DataFrame:
    """Read ``tb2_tasks.csv`` (one row per TB2 task, tabulated from the task dirs) into the tasks table.

    The CSV (``tb2_tasks.csv``; its provenance is in the bundled ``PROVENANCE.md``) holds each task's
    author metadata from ``task.toml`` and ``solution_lines``: the non-blank, non-``#`` lines of
    ``solution/solve.sh``, which is W. ``difficulty_source`` is ``"human"`` (author ratings).
    ``checksum`` is the Harbor dirhash of the files W was counted on; the TB2.0 reference checksum
    and whether they match go to ``labels``.

    Examples
    --------
    >>> from depthlab.datasets import tb2
    >>> tasks = tb2.tasks_from_csv("tb2_tasks.csv")  # doctest: +SKIP
    >>> tasks.filter(task="build-pmars")["difficulty"].item()  # doctest: +SKIP
    'medium'
    """
    path = check_path(path, "path", "tasks_from_csv", kind="file")
    raw = pl.read_csv(path, infer_schema_length=0)  # everything as text: parse what each column means below
    missing = {"task_id", "difficulty", "solution_lines", "solution_total_lines"} - set(raw.columns)
    if missing:
        raise ValueError(f"{path}: not a tb2_tasks.csv: columns {sorted(missing)} are missing")
    labels = [
        json_object(
            {
                "author_name": row.get("author_name"),
                "n_test_functions": _int(row.get("n_test_functions")),
                "agent_timeout_sec": _float(row.get("agent_timeout_sec")),
                "tb2_0_ref_checksum": row.get("tb2_0_ref_checksum"),
                "checksum_status": row.get("checksum_status"),
            }
        )
        for row in raw.iter_rows(named=True)
    ]
    has_solution = pl.col("solution_lines").is_not_null()
    tasks = raw.select(
        dataset=pl.lit(dataset),
        task=pl.col("task_id"),
        work=pl.col("solution_lines").cast(pl.Int32),
        solution_lines_total=pl.col("solution_total_lines").cast(pl.Int32),
        has_solution=has_solution,
        work_note=pl.when(has_solution).then(None).otherwise(pl.lit("no solution/solve.sh in the snapshot")),
        difficulty=pl.col("difficulty"),
        difficulty_source=pl.when(pl.col("difficulty").is_not_null()).then(pl.lit("human")).otherwise(pl.lit("none")),
        category=pl.col("category"),
        tags=pl.col("tags").fill_null("").str.split(";").list.eval(pl.element().filter(pl.element() != "")),
        expert_time_min=pl.col("expert_time_estimate_min").cast(pl.Float64),
        junior_time_min=pl.col("junior_time_estimate_min").cast(pl.Float64),
        labels=pl.Series(labels, dtype=pl.String),
        instruction_words=pl.col("instruction_words").cast(pl.Int32),
        checksum=pl.col("snapshot_dirhash"),
        source=pl.concat_str(
            pl.lit(f"{path}:"),
            pl.col("source_repo"),
            pl.lit("@"),
            pl.col("source_commit"),
            pl.lit(":"),
            pl.col("source_path"),
        ),
    )
    return schema.conform(tasks, "tasks")


def public_trials_from_csv(path: str | Path, *, status_rule: str = "leaderboard", dataset: str = "tb2") -> pl.DataFrame:
    """Read ``tb2_public_results.csv`` (one row per real public TB2 trial) into the trials table.

    The CSV (``tb2_public_results.csv``; its provenance is in the bundled ``PROVENANCE.md``) tabulates the
    Harbor job dirs released with the TMax paper (hamishivi/tmax ``evaluation_assets/``): 8 models ×
    89 tasks × 5 trials of ``Vanillux2Agent`` on TB2.0 with ``max_steps=64``. Every row is uncapped
    (``cap`` null, ``turn_limit`` = ``max_steps``); ``n_turns`` is the trajectory's assistant messages;
    ``hit_limit`` is ``n_turns >= max_steps``.

    ``status`` follows ``status_rule`` exactly as :func:`depthlab.load_trials` does: ``"leaderboard"``
    keeps trials with no exception or a whitelisted one (agent/verifier timeouts, missing reward file,
    permission error, non-zero agent exit), counts a missing reward as 0 and marks any other exception
    (``DaytonaError``, ``CancelledError``) ``invalid``; ``"all"`` counts every trial, missing reward = 0.
    The CSV has no start times, so ``attempt`` is the trial's order within (task, model) in the file.
    ``model`` is the release's model label (its directory name, e.g. ``tmax-27b``, as in the paper and
    ``tb2_public_task_passrates.csv``); loading the Harbor job dirs themselves gives the served model
    name the logs record (the CSV's ``served_model_name``, e.g. ``openai/swerl-qwen35-27b-tmax-step160``).

    Examples
    --------
    >>> from depthlab.datasets import tb2
    >>> trials = tb2.public_trials_from_csv("tb2_public_results.csv")  # doctest: +SKIP
    >>> trials.height  # doctest: +SKIP
    3560
    """
    path = check_path(path, "path", "public_trials_from_csv", kind="file")
    check_choice(status_rule, "status_rule", "public_trials_from_csv", STATUS_RULES)
    raw = pl.read_csv(path, infer_schema_length=0)
    missing = {"submission", "model", "task_id", "trial", "reward", "exception_type", "n_turns"} - set(raw.columns)
    if missing:
        raise ValueError(f"{path}: not a tb2_public_results.csv: columns {sorted(missing)} are missing")
    reward = pl.col("reward").cast(pl.Float64)
    # the loaders' own rule, row by row, so a CSV trial and a Harbor trial can never be judged differently
    status = pl.Series(
        [
            trial_status(r, e, status_rule)
            for r, e in zip(raw["reward"].cast(pl.Float64), raw["exception_type"], strict=True)
        ],
        dtype=pl.String,
    )
    n_turns = pl.col("n_turns").cast(pl.Int32)
    turn_limit = pl.col("max_steps").cast(pl.Int32)
    trials = raw.with_row_index("_row").select(
        dataset=pl.lit(dataset),
        task=pl.col("task_id"),
        agent=pl.col("submission").str.split("__").list.first(),
        model=pl.col("model"),
        cap=pl.lit(None, pl.Int32),
        turn_limit=turn_limit,
        job=pl.col("harbor_job_name"),
        trial=pl.col("trial"),
        attempt=(pl.col("_row").rank("ordinal").over("task_id", "model")).cast(pl.Int32),
        reward=reward,
        rewards=pl.concat_str(pl.lit('{"reward": '), reward.cast(pl.String), pl.lit("}")),
        passed=pl.when(status != "invalid").then(status == "pass"),
        status=status,
        exception=pl.col("exception_type"),
        n_turns=n_turns,
        hit_limit=n_turns >= turn_limit,
        n_input_tokens=pl.col("n_input_tokens").cast(pl.Int64),
        n_output_tokens=pl.col("n_output_tokens").cast(pl.Int64),
        agent_seconds=pl.col("agent_exec_sec").cast(pl.Float64),
        task_checksum=pl.col("task_checksum"),
        source=pl.col("source"),
    )
    return schema.conform(trials, "trials")


def _int(text: str | None) -> int | None:
    return int(float(text)) if text not in (None, "") else None


def _float(text: str | None) -> float | None:
    return float(text) if text not in (None, "") else None
