"""The TB2 adapter on the real files: ../shared/samples task dirs and the ../shared/data CSVs."""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict

import polars as pl
import pytest

import depthlab as dl
from depthlab import schema
from depthlab.datasets import tb2
from depthlab.measures import pass_rates, turn_counts

# what the leaderboard counts besides trials without an exception (Terminal-Bench leaderboard view)
# The leaderboard's kept exceptions within Harbor's error policy: VerifierTimeoutError and
# RewardFileNotFoundError leave no valid reward (Harbor's reward_valid is false), so they are invalid.
LEADERBOARD_KEPT = {
    "AgentTimeoutError",
    "PermissionError",
    "NonZeroAgentExitCodeError",
}


@pytest.fixture(scope="module")
def raw_results(shared_data):
    with (shared_data / "tb2_public_results.csv").open(newline="") as stream:
        return list(csv.DictReader(stream))


@pytest.fixture(scope="module")
def csv_passrates(shared_data):
    return pl.read_csv(shared_data / "tb2_public_task_passrates.csv")


@pytest.fixture(scope="module")
def csv_tasks(shared_data):
    return tb2.tasks_from_csv(shared_data / "tb2_tasks.csv")


def test_public_trials_reproduce_the_published_per_task_pass_rates(shared_data, csv_passrates):
    # the published file counts every trial and a blank pass as a fail: Harbor's "all" rule
    trials = tb2.public_trials_from_csv(shared_data / "tb2_public_results.csv", status_rule="all")
    schema.check(trials, "trials")
    assert trials["cap"].null_count() == trials.height  # public runs state no cap
    ours = pass_rates(trials, by="model").join(
        csv_passrates, left_on=["task", "model"], right_on=["task_id", "model"], how="full", coalesce=True
    )
    assert ours.height == csv_passrates.height
    assert ours["pass_rate"].null_count() == 0
    assert (ours["n_valid"] == ours["n_trials"]).all()
    assert ours.select((pl.col("pass_rate") - pl.col("pass_rate_right")).abs().max()).item() < 1e-12

    pooled = pass_rates(trials, by="task").join(
        csv_passrates.group_by("task_id").agg(pl.col("n_passed").sum(), pl.col("n_trials").sum()),
        left_on="task",
        right_on="task_id",
    )
    assert pooled.height == csv_passrates["task_id"].n_unique()
    assert ((pooled["pass_rate"] - pooled["n_passed"] / pooled["n_trials"]).abs() < 1e-12).all()


def test_public_trials_reproduce_the_published_turn_figures(shared_data, csv_passrates, raw_results):
    trials = tb2.public_trials_from_csv(shared_data / "tb2_public_results.csv", status_rule="all")
    per_cell = trials.group_by("task", "model").agg(
        mean_turns=pl.col("n_turns").cast(pl.Float64).mean(), max_turns=pl.col("n_turns").max()
    )
    joined = per_cell.join(csv_passrates, left_on=["task", "model"], right_on=["task_id", "model"])
    assert joined.height == csv_passrates.height
    assert (joined["mean_turns"] - joined["mean_turns_right"]).abs().max() < 1e-9
    assert (joined["max_turns"] == joined["max_turns_right"]).all()

    # median N per (task, model) against the standard library on the raw rows
    turns = defaultdict(list)
    for row in raw_results:
        if row["n_turns"]:
            turns[(row["task_id"], row["model"])].append(int(row["n_turns"]))
    medians = turn_counts(trials)
    assert medians.height == len({(r["task_id"], r["model"]) for r in raw_results})
    for task, model, n_turns in medians.select("task", "model", "n_turns").iter_rows():
        expected = statistics.median(turns[(task, model)]) if turns[(task, model)] else None
        assert n_turns == expected, (task, model)
    limited = trials.filter(pl.col("hit_limit"))
    assert (limited["n_turns"] >= limited["turn_limit"]).all()
    assert limited.height == sum(1 for r in raw_results if r["n_turns"] and r["n_turns"] == r["max_steps"])


def test_leaderboard_rule_leaves_infrastructure_failures_out(shared_data, raw_results):
    trials = tb2.public_trials_from_csv(shared_data / "tb2_public_results.csv")
    dropped = [r for r in raw_results if r["exception_type"] and r["exception_type"] not in LEADERBOARD_KEPT]
    assert dropped  # DaytonaError / CancelledError trials exist in the real data
    invalid = trials.filter(status="invalid")
    assert set(invalid["trial"]) == {r["trial"] for r in dropped}
    assert invalid["passed"].null_count() == invalid.height  # invalid is never merged into fail
    kept = [r for r in raw_results if r not in dropped]
    rates = pass_rates(trials, by="model")
    n_passed, n_valid = defaultdict(int), defaultdict(int)
    for r in kept:
        n_valid[(r["task_id"], r["model"])] += 1
        n_passed[(r["task_id"], r["model"])] += r["passed"] == "1"
    for task, model, rate, valid in rates.select("task", "model", "pass_rate", "n_valid").iter_rows():
        assert valid == n_valid[(task, model)]
        assert rate == pytest.approx(n_passed[(task, model)] / valid)


def test_tasks_csv_gives_w_and_author_ratings(shared_data, csv_tasks):
    schema.check(csv_tasks, "tasks")
    with (shared_data / "tb2_tasks.csv").open(newline="") as stream:
        raw = {row["task_id"]: row for row in csv.DictReader(stream)}
    assert csv_tasks.height == len(raw)
    for row in csv_tasks.iter_rows(named=True):
        source = raw[row["task"]]
        assert row["work"] == int(source["solution_lines"])
        assert row["difficulty"] == source["difficulty"]
        assert row["difficulty_source"] == "human"
        assert row["tags"] == (source["tags"].split(";") if source["tags"] else [])
        expected_time = float(source["expert_time_estimate_min"]) if source["expert_time_estimate_min"] else None
        assert row["expert_time_min"] == expected_time


@pytest.mark.parametrize(
    ("tasks_dir", "task"),
    [
        ("yujianll_skill-usage/terminal-bench-2", "build-pmars"),  # TB2.0, task.toml version 1.0
        ("zxss702_terminal-bench-2.1/tasks", "adaptive-rejection-sampler"),  # TB2.1, schema 1.1 with [task]
    ],
)
def test_real_task_dirs_agree_with_the_tasks_csv(samples, csv_tasks, tasks_dir, task):
    audit = dl.load_dataset("tb2", samples / tasks_dir)
    row = audit.tasks.filter(task=task).row(0, named=True)
    expected = csv_tasks.filter(task=task).row(0, named=True)
    columns = ["difficulty", "category", "tags", "expert_time_min", "junior_time_min"]
    if (samples / tasks_dir / task / "instruction.md").is_file():  # the TB2.1 sample has task.toml only
        columns.append("instruction_words")
    for column in columns:
        assert row[column] == expected[column], column
    assert row["difficulty_source"] == "human"
    assert row["dataset"] == "tb2"
    # the samples carry task.toml and instruction.md only: W is missing and says why
    assert row["work"] is None
    assert "solve.sh" in row["work_note"]
    assert any("no reference solution" in note for note in audit.notes)


def test_harbor_job_dirs_and_the_csv_agree_on_the_same_trials(samples, shared_data, raw_results, tmp_path):
    # the real tmax job dir in the samples holds three of the CSV's trials: read it as TB2's jobs
    (tmp_path / "jobs").symlink_to(samples / "hamishivi_tmax")
    harbor = dl.load_dataset("tb2", tmp_path).public
    assert harbor.height > 0
    csv_rows = tb2.public_trials_from_csv(shared_data / "tb2_public_results.csv").filter(
        pl.col("trial").is_in(harbor["trial"].implode())
    )
    assert csv_rows.height == harbor.height
    columns = ["task", "reward", "passed", "status", "exception", "n_turns", "turn_limit", "hit_limit", "cap"]
    joined = harbor.select("trial", *columns).join(csv_rows.select("trial", *columns), on="trial", suffix="_csv")
    for column in columns:
        assert joined[column].equals(joined[f"{column}_csv"], check_names=False), column
    served = {r["trial"]: r["served_model_name"] for r in raw_results}
    assert all(served[trial] == model for trial, model in harbor.select("trial", "model").iter_rows())


def test_load_dataset_on_the_shared_data_folder(shared_data, csv_tasks):
    audit = dl.load_dataset("tb2", shared_data)
    assert audit.tasks.equals(csv_tasks)
    assert audit.public.height == 3560
    assert audit.capped.is_empty()
    assert "no capped runs: D cannot be estimated" in audit.notes
    assert set(audit.public["dataset"]) == {"tb2"}
    assert set(audit.public["task"]) <= set(audit.tasks["task"])


def test_csv_readers_name_the_bad_path(tmp_path):
    with pytest.raises(ValueError, match="'path' parameter of public_trials_from_csv"):
        tb2.public_trials_from_csv(tmp_path / "missing.csv")
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match=r"other.csv: not a tb2_tasks.csv"):
        tb2.tasks_from_csv(other)
    with pytest.raises(ValueError, match="'status_rule' parameter"):
        tb2.public_trials_from_csv(other, status_rule="strictest")


@pytest.mark.parametrize("status_rule", ["leaderboard", "all"])
def test_the_bundled_tables_equal_the_published_csvs(shared_data, csv_tasks, status_rule):
    # the package's own Parquet tables carry the same facts as the CSVs they were converted from
    bundled = dl.load_dataset("tb2", status_rule=status_rule)
    expected = tb2.public_trials_from_csv(shared_data / "tb2_public_results.csv", status_rule=status_rule)
    assert bundled.public.drop("source").equals(expected.drop("source"))
    assert bundled.public["source"].str.starts_with("github:hamishivi/tmax@").all()
    assert bundled.tasks.drop("source").equals(csv_tasks.drop("source"))
    assert not bundled.tasks["source"].str.contains("shared").any()  # no local path ships
    assert bundled.capped.is_empty()


def test_load_dataset_without_a_root_is_only_for_bundled_collections():
    with pytest.raises(ValueError, match=r"'root' parameter of load_dataset is required for 'tw'.*\['tb2'\]"):
        dl.load_dataset("tw")
