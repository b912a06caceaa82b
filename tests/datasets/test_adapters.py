"""Each collection adapter on small fixtures written in that collection's real layout.

Layouts and label fields follow ../shared/reference/datasets.md and formats.md section 6; the
fixtures are written here, nothing is copied. Trials come from the real simulator
(depthlab.simulate), which writes Harbor job dirs with stated caps and uncapped public runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import msgspec
import polars as pl
import pytest

import depthlab as dl
from depthlab import schema
from depthlab.datasets import ADAPTERS, Audit, load_datasets
from depthlab.datasets.seta import apply_test_weights
from depthlab.datasets.tmax import NO_SOLUTION_NOTE


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _harbor_task(root: Path, name: str, metadata: str, *, solution: str | None, instruction: str = "Do it.") -> Path:
    task = root / name
    _write(task / "task.toml", f'version = "1.0"\n\n[metadata]\n{metadata}\n\n[agent]\ntimeout_sec = 600.0\n')
    _write(task / "instruction.md", instruction)
    _write(task / "environment" / "Dockerfile", "FROM ubuntu:24.04\n")
    _write(task / "tests" / "test.sh", "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    if solution is not None:
        _write(task / "solution" / "solve.sh", solution)
    return task


def _labels(row: dict) -> dict:
    return json.loads(row["labels"]) if row["labels"] else {}


# --- the registry --------------------------------------------------------------------------------


def test_datasets_states_label_semantics_for_every_collection():
    table = dl.list_datasets()
    assert sorted(table["name"]) == sorted(ADAPTERS)
    by_name = {row["name"]: row for row in table.iter_rows(named=True)}
    assert by_name["tb2"]["difficulty_source"] == "human"
    # RST's difficulty is inherited from the synthesis seed: a generation-time label
    assert {by_name[n]["difficulty_source"] for n in ("seta", "facet", "rst")} == {"generated"}
    assert {by_name[n]["difficulty_source"] for n in ("tmax", "tw")} == {"none"}
    assert by_name["tb2"]["curation"] == "human"
    assert {by_name[n]["curation"] for n in ("tmax", "facet", "seta", "rst")} == {"synthetic"}
    assert "author" in by_name["tb2"]["human_labels"]
    assert "medium" in by_name["facet"]["generated_labels"]
    for row in by_name.values():
        assert all(isinstance(value, str) and value.strip() for value in row.values()), row["name"]


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_each_adapter_docstring_says_what_is_human_generated_and_missing(name):
    doc = ADAPTERS[name].__doc__
    for section in ("Human ratings", "Generated labels", "Missing", "Layout under ``root``"):
        assert section in doc, (name, section)


def test_the_registry_holds_the_adapter_modules_not_import_strings():
    for name, adapter in ADAPTERS.items():
        assert isinstance(adapter, ModuleType), name
        assert adapter.__name__ == f"depthlab.datasets.{name}"
        assert adapter.INFO.name == name
        assert callable(adapter.load), name


def test_datasets_is_callable_however_the_package_was_imported():
    import depthlab.datasets.tb2  # noqa: F401 - binds depthlab.datasets to the package

    assert dl.list_datasets().height == len(ADAPTERS)


# --- trials from Harbor job dirs (the simulator's real Harbor output) ----------------------------


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim")
    summary = dl.simulate.write_runs(out, seed=3, scale=0.02)
    return out, summary


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_capped_and_public_trials_are_split_by_stated_cap(simulated, name):
    out, _ = simulated
    audit = dl.load_dataset(name, out)
    for table in ("capped", "public"):
        schema.check(getattr(audit, table), "trials")
    schema.check(audit.tasks, "tasks")
    assert audit.capped.height > 0
    assert audit.public.height > 0
    assert audit.capped["cap"].null_count() == 0
    assert audit.public["cap"].null_count() == audit.public.height
    assert set(audit.capped["cap"]) <= set(dl.CAPS)
    every = pl.concat([audit.tasks.select("dataset"), audit.trials.select("dataset")])
    assert set(every["dataset"]) == {name}
    assert set(audit.trials["task"]) <= set(audit.tasks["task"])
    assert not any("no capped runs" in note for note in audit.notes)


def test_shared_jobs_dir_keeps_only_this_collections_trials(simulated, tmp_path):
    out, _ = simulated
    # one jobs dir holding every collection's jobs, as a user might arrange it
    (tmp_path / "jobs").mkdir()
    for job_root in (out / "jobs").iterdir():
        for job in job_root.iterdir():
            (tmp_path / "jobs" / f"{job_root.name}-{job.name}").symlink_to(job)
    (tmp_path / "tasks").symlink_to(out / "tasks")
    pooled = dl.load_dataset("facet", tmp_path)
    alone = dl.load_dataset("facet", out)
    assert pooled.trials.height == alone.trials.height
    assert set(pooled.trials["trial"]) == set(alone.trials["trial"])


def test_a_collection_missing_from_a_shared_tree_reads_nothing_of_the_others(simulated, tmp_path):
    out, _ = simulated
    for folder in ("tasks", "jobs"):
        (tmp_path / folder).mkdir()
        for collection in ("facet", "seta"):
            (tmp_path / folder / collection).symlink_to(out / folder / collection)
    audit = dl.load_dataset("tw", tmp_path)
    assert audit.tasks.is_empty()
    assert audit.trials.is_empty()
    foreign = next(note for note in audit.notes if "foreign datasets" in note)
    assert "facet (" in foreign
    assert "seta (" in foreign
    assert any("no task dir of tw's layout" in note for note in audit.notes)


# --- TB2 and a user's own tree -------------------------------------------------------------------


def test_tb2_task_dirs_give_w_and_human_difficulty(tmp_path):
    metadata = 'difficulty = "hard"\ncategory = "security"\ntags = ["x"]\nexpert_time_estimate_min = 30.0'
    _harbor_task(tmp_path / "tasks", "t1", metadata, solution="#!/bin/bash\n# set up\n\ncd /app\nmake\nmake test\n")
    _harbor_task(tmp_path / "tasks", "t2", 'category = "games"', solution=None)
    audit = dl.load_dataset("tb2", tmp_path)
    rows = {row["task"]: row for row in audit.tasks.iter_rows(named=True)}
    assert rows["t1"]["work"] == 3
    assert rows["t1"]["difficulty_source"] == "human"
    assert rows["t1"]["expert_time_min"] == 30.0
    assert rows["t2"]["difficulty_source"] == "none"  # no label: never guessed
    assert rows["t2"]["work"] is None
    assert "no capped runs: D cannot be estimated" in audit.notes
    assert "1 of 2 tasks have no reference solution: W is null (see work_note)" in audit.notes


def test_own_harbor_tree_loads_under_any_name_without_guessing_labels(tmp_path):
    _harbor_task(tmp_path / "tasks", "mine-1", 'difficulty = "easy"', solution="echo hi\n")
    audit = dl.load_dataset("my-bench", tmp_path)
    row = audit.tasks.row(0, named=True)
    assert row["dataset"] == "my-bench"
    assert row["difficulty"] == "easy"
    assert row["difficulty_source"] is None
    assert any("not a registered collection" in note for note in audit.notes)


# --- FACET ---------------------------------------------------------------------------------------


def test_facet_counts_the_default_medium(tmp_path):
    difficulties = ["medium", "medium", "hard", "medium", "easy"]
    for i, difficulty in enumerate(difficulties):
        metadata = f'difficulty = "{difficulty}"\ncategory = "terminal_task_synthesis"\ntags = ["skill-a", "skill-b"]'
        _harbor_task(tmp_path / "tasks" / "facet", f"facet-{i}", metadata, solution="cd /task_file\nls\n")
    audit = dl.load_dataset("facet", tmp_path)
    assert audit.tasks["difficulty_source"].unique().to_list() == ["generated"]
    n_medium = difficulties.count("medium")
    assert f"{n_medium} of {len(difficulties)} tasks carry difficulty 'medium'" in " ".join(audit.notes)
    assert (audit.tasks["work"] == 2).all()


# --- SETA ----------------------------------------------------------------------------------------


def _tb1_task(root: Path, name: str, *, difficulty: str, weights: dict[str, float] | None) -> Path:
    task = root / name
    _write(
        task / "task.yaml",
        f"instruction: |-\n  Fix the service.\nauthor_name: synth\ndifficulty: {difficulty}\n"
        "category: system-administration\ntags:\n  - systemd\nparser_name: pytest\n",
    )
    _write(task / "solution.sh", "#!/bin/bash\nsystemctl restart app\n# done\n")
    _write(task / "run-tests.sh", "pytest tests/test_outputs.py\n")
    _write(task / "tests" / "test_outputs.py", "def test_a():\n    pass\n")
    if weights is not None:
        _write(task / "weights.json", json.dumps(weights))
    return task


def test_seta_v1_task_dirs_keep_generated_difficulty_and_test_weights(tmp_path):
    weights = {"test_service_up": 0.75, "test_config": 0.25}
    _tb1_task(tmp_path / "tasks", "seta-1", difficulty="hard", weights=weights)
    _tb1_task(tmp_path / "tasks", "seta-2", difficulty="medium", weights=None)
    _write(tmp_path / "per_task_summary.csv", "task,task_difficulty\nseta-1,very difficult\n")
    audit = dl.load_dataset("seta", tmp_path)
    rows = {row["task"]: row for row in audit.tasks.iter_rows(named=True)}
    assert rows["seta-1"]["difficulty"] == "hard"
    assert {r["difficulty_source"] for r in rows.values()} == {"generated"}
    assert rows["seta-1"]["work"] == 1
    assert _labels(rows["seta-1"])["test_weights"] == weights
    assert _labels(rows["seta-1"])["task_difficulty_empirical"] == "very difficult"
    assert "test_weights" not in _labels(rows["seta-2"])
    assert rows["seta-1"]["expert_time_min"] is None


def test_seta_tb1_runs_are_scored_with_the_test_weights(tmp_path):
    weights = {"test_service_up": 0.75, "test_config": 0.25}
    _tb1_task(tmp_path / "tasks", "seta-1", difficulty="hard", weights=weights)
    run = tmp_path / "jobs" / "2026-01-01__00-00-00"
    outcomes = [
        {"test_service_up": "passed", "test_config": "failed"},
        {"test_service_up": "passed", "test_config": "passed"},
    ]
    for attempt, parser_results in enumerate(outcomes, start=1):
        trial = f"seta-1.{attempt}-of-2.2026-01-01__00-00-00"
        result = {
            "id": f"id-{attempt}",
            "trial_name": trial,
            "task_id": "seta-1",
            "instruction": "Fix the service.",
            "is_resolved": all(v == "passed" for v in parser_results.values()),
            "failure_mode": "unset",
            "parser_results": parser_results,
            "total_input_tokens": 0,
            "total_output_tokens": 0,
            "trial_started_at": f"2026-01-01T00:0{attempt}:00+00:00",
            "trial_ended_at": f"2026-01-01T00:0{attempt}:30+00:00",
        }
        _write(run / "seta-1" / trial / "results.json", json.dumps(result))
    audit = dl.load_dataset("seta", tmp_path)
    public = audit.public.sort("attempt")
    assert public["reward"].to_list() == [0.75, 1.0]
    assert public["status"].to_list() == ["fail", "pass"]


def test_seta_partial_credit_passes_only_at_full_reward():
    weights = {"w": {"test_a": 3.0, "test_b": 1.0}}
    outcomes = [
        {"test_a": "passed", "test_b": "failed"},
        {"test_a": "passed", "test_b": "passed"},
        {"test_a": True},
        {"unrelated": 1},
    ]
    trials = schema.conform(
        pl.DataFrame(
            {
                "task": ["w", "w", "w", "w", "other"],
                "reward": [0.0, 1.0, 0.0, 0.5, 1.0],
                "status": ["fail", "pass", "invalid", "fail", "pass"],
                "rewards": [json.dumps(o) for o in outcomes] + ['{"reward": 1.0}'],
            }
        ),
        "trials",
    )
    scored = apply_test_weights(trials, weights)
    assert scored["reward"].to_list() == [0.75, 1.0, 0.75, 0.5, 1.0]
    assert scored["status"].to_list() == ["fail", "pass", "invalid", "fail", "pass"]
    assert scored["passed"].to_list()[:2] == [False, True]


# --- TMax ----------------------------------------------------------------------------------------


def _tmax_native_task(root: Path, name: str, *, complexity: str) -> Path:
    task = root / name
    _write(
        task / "task.json",
        json.dumps(
            {
                "name": name,
                "description": "Parse the logs in /home/user/logs and write a summary.",
                "truth": "summary.txt has 3 lines",
                "domain": "data-processing",
                "skill_type": "log-analysis",
                "primitive_skills": ["grep", "awk"],
                "task_complexity": complexity,
                "command_complexity": "bash-only",
            }
        ),
    )
    _write(task / "test_final_state.py", "def test_summary():\n    pass\n")
    _write(task / "container.def", "Bootstrap: docker\nFrom: ubuntu:22.04\n%post\n    apt-get update\n")
    return task


def _assistant_turns(n: int) -> list[dict]:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    for i in range(n):
        messages += [{"role": "assistant", "content": f"step {i}"}, {"role": "tool", "content": "ok"}]
    return messages


def test_tmax_native_tasks_and_solve_runs(tmp_path):
    first = _tmax_native_task(tmp_path / "tasks", "task_000001_aaaaaaaa", complexity="intricate")
    _tmax_native_task(tmp_path / "tasks", "task_000002_bbbbbbbb", complexity="short")
    runs = [(True, 3), (False, 16), (True, 5), (False, 16)]
    summary = {
        "num_runs": len(runs),
        "num_success": sum(s for s, _ in runs),
        "pass_at_k": {"1": 0.5, "2": 0.833, "4": 1.0},
        "results": [{"success": s, "reward": int(s), "output": "", "messages": _assistant_turns(n)} for s, n in runs],
    }
    _write(first / "solutions" / "gemini_gemini-3-flash-preview_summary.json", json.dumps(summary))
    counts_only = {"num_runs": 8, "num_success": 2, "pass_at_k": {"1": 0.25}}
    _write(first / "solutions" / "openai_gpt-x_summary.json", json.dumps(counts_only))

    audit = dl.load_dataset("tmax", tmp_path)
    tasks = {row["task"]: row for row in audit.tasks.iter_rows(named=True)}
    assert set(tasks) == {"task_000001_aaaaaaaa", "task_000002_bbbbbbbb"}
    row = tasks["task_000001_aaaaaaaa"]
    assert row["work"] is None
    assert row["work_note"] == NO_SOLUTION_NOTE
    assert row["difficulty"] is None
    assert row["difficulty_source"] == "none"
    assert row["category"] == "data-processing"
    assert row["tags"] == ["grep", "awk"]
    assert _labels(row)["task_complexity"] == "intricate"
    assert _labels(row)["pass_at_k"]["gemini_gemini-3-flash-preview"]["1"] == 0.5
    assert "truth" not in _labels(row)

    public = audit.public
    assert audit.capped.is_empty()
    gemini = public.filter(model="gemini_gemini-3-flash-preview").sort("attempt")
    assert gemini["n_turns"].to_list() == [n for _, n in runs]
    assert gemini["passed"].to_list() == [s for s, _ in runs]
    rates = dl.pass_rates(public, by="model")
    other = rates.filter(model="openai_gpt-x").row(0, named=True)
    assert other["pass_rate"] == counts_only["num_success"] / counts_only["num_runs"]
    assert other["n_valid"] == counts_only["num_runs"]
    assert "no capped runs: D cannot be estimated" in audit.notes


def test_tmax_harbor_conversion_has_axes_but_no_work(tmp_path):
    task = tmp_path / "tasks" / "task_000003_cccccccc"
    _write(
        task / "task.toml",
        'schema_version = "1.1"\n\n[task]\nname = "tmax/task_000003_cccccccc"\ndescription = "d"\n\n'
        '[metadata]\nsource = "v2"\nbase_image = "intricate"\ndomain = "networking"\nskill_type = "x"\n'
        'primitive_skills = ["curl"]\ntask_complexity = "complex"\ncommand_complexity = "bash+code"\n\n'
        "[agent]\ntimeout_sec = 600.0\n",
    )
    _write(task / "instruction.md", "Check the endpoints.")
    _write(task / "tests" / "test.sh", "#!/bin/bash\n")
    row = dl.load_dataset("tmax", tmp_path).tasks.row(0, named=True)
    assert row["task"] == "task_000003_cccccccc"
    assert row["work"] is None
    assert row["work_note"] == NO_SOLUTION_NOTE
    assert row["difficulty_source"] == "none"
    assert row["category"] == "networking"
    assert _labels(row)["command_complexity"] == "bash+code"


# --- RST -----------------------------------------------------------------------------------------


def test_rst_parquet_index(tmp_path):
    rows = [
        {
            "instruction": "Build the index and query it.",
            "task_toml": '[task]\nname = "rts/alpha"\n\n[metadata]\ndifficulty = "hard"\ntags = ["sqlite"]\n',
            "solution": "#!/bin/bash\n\nsqlite3 db < schema.sql\n# query\nsqlite3 db 'select 1'\n",
            "dockerfile": "FROM ubuntu\n",
            "member_prefix": "tasks/alpha/",
            "shard": "tasks-000.tar",
        },
        {
            "instruction": "Rotate the logs.",
            "task_toml": '[metadata]\ncategory = "sysadmin"\n',
            "solution": None,
            "dockerfile": "FROM ubuntu\n",
            "member_prefix": "tasks/beta/",
            "shard": "tasks-001.tar",
        },
        {
            "instruction": "x",
            "task_toml": "[metadata\nbroken",
            "solution": "ls\n",
            "dockerfile": "",
            "member_prefix": "tasks/gamma/",
            "shard": "tasks-001.tar",
        },
    ]
    index = tmp_path / "metadata" / "tasks.parquet"
    index.parent.mkdir()
    pl.DataFrame(rows, schema_overrides={"solution": pl.String}).write_parquet(index)
    audit = dl.load_dataset("rst", tmp_path)
    tasks = {row["task"]: row for row in audit.tasks.iter_rows(named=True)}
    assert set(tasks) == {"alpha", "beta"}
    assert tasks["alpha"]["work"] == 2
    assert tasks["alpha"]["solution_lines_total"] == 5
    assert tasks["alpha"]["difficulty_source"] == "generated"
    assert tasks["alpha"]["tags"] == ["sqlite"]
    assert tasks["beta"]["work"] is None
    assert tasks["beta"]["difficulty_source"] == "none"
    assert tasks["beta"]["category"] == "sysadmin"
    assert _labels(tasks["beta"])["shard"] == "tasks-001.tar"
    assert tasks["alpha"]["instruction_words"] == 6
    assert any("1 index rows skipped" in note and "row 2" in note for note in audit.notes)


# --- TW ------------------------------------------------------------------------------------------


def test_tw_has_no_difficulty_and_keeps_llm_estimates_out_of_human_columns(tmp_path):
    metadata = (
        'category = "networking"\ntags = ["ssh"]\ndifficulty_explanation = "needs key setup"\n'
        "expert_time_estimate_hours = 0.5\nexpert_time_estimate_min = 30.0"
    )
    _harbor_task(tmp_path / "tasks" / "tw", "tw_0001", metadata, solution="ssh-keygen -f k -N ''\n")
    row = dl.load_dataset("tw", tmp_path).tasks.row(0, named=True)
    assert row["difficulty"] is None
    assert row["difficulty_source"] == "none"
    assert row["expert_time_min"] is None
    assert _labels(row)["expert_time_estimate_hours"] == 0.5
    assert _labels(row)["expert_time_estimate_min"] == 30.0
    assert _labels(row)["difficulty_explanation"] == "needs key setup"


# --- pooling and bad input -----------------------------------------------------------------------


def test_pooling_keeps_each_rows_dataset(simulated):
    out, _ = simulated
    pooled = load_datasets({"tb2": out, "seta": out})
    parts = [dl.load_dataset("tb2", out), dl.load_dataset("seta", out)]
    assert pooled.name == "tb2+seta"
    assert pooled.tasks.height == sum(p.tasks.height for p in parts)
    assert pooled.capped.height == sum(p.capped.height for p in parts)
    assert set(pooled.public["dataset"]) == {"tb2", "seta"}
    assert Audit.concat(parts, name="both").notes[0].startswith("tb2: ")


def test_bad_input_is_named(tmp_path):
    with pytest.raises(ValueError, match="'root' parameter of load_dataset must be an existing directory"):
        dl.load_dataset("tb2", tmp_path / "nowhere")
    with pytest.raises(ValueError, match="'status_rule' parameter of load_dataset"):
        dl.load_dataset("tb2", tmp_path, status_rule="lenient")
    with pytest.raises(ValueError, match="'name' parameter of load_dataset"):
        dl.load_dataset("a+b", tmp_path)
    with pytest.raises(ValueError, match="'roots' parameter of load_datasets"):
        load_datasets({})
    _write(tmp_path / "metadata" / "tasks.parquet", "not parquet")
    with pytest.raises(Exception, match=r"tasks.parquet|parquet"):
        dl.load_dataset("rst", tmp_path)
    bad = _tmax_native_task(tmp_path / "tm" / "tasks", "task_9", complexity="short")
    _write(bad / "solutions" / "m_summary.json", "{not json")
    with pytest.raises(ValueError, match=r"m_summary\.json: not valid JSON"):
        dl.load_dataset("tmax", tmp_path / "tm")


def test_empty_root_gives_empty_tables_and_says_so(tmp_path):
    audit = dl.load_dataset("facet", tmp_path)
    assert audit.tasks.is_empty()
    assert audit.trials.is_empty()
    assert "no task files: W and labels are missing" in audit.notes
    assert msgspec.json.decode(msgspec.json.encode(audit.notes)) == audit.notes


def test_registry_curation_agrees_with_the_audit_tables_default():
    # the audit table's default curation (measures.CURATION) must say what the registry says
    from depthlab.measures import CURATION

    listed = dict(dl.list_datasets().select("name", "curation").iter_rows())
    assert listed == {name: CURATION[name] for name in listed}
