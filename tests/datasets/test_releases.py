"""The six collections as their authors release them: fixtures shaped as each release, written here.

Each fixture's note names the file (and lines) of the public generator or release tool its shape
follows; nothing is copied. Harbor trials are written with depthlab's own Harbor writer
(``depthlab.io.harbor_writer``, checked against Harbor itself in tests/io).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import polars as pl
import pytest

import depthlab as dl
from depthlab import schema
from depthlab._tables import write_table
from depthlab.io import harbor_writer as hw
from depthlab.measures import audit_table


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _task(folder: Path, toml: str, *, solution: str = "echo done\n") -> Path:
    _write(folder / "task.toml", toml)
    _write(folder / "instruction.md", "Do the thing.\n")
    _write(folder / "environment" / "Dockerfile", "FROM debian:bookworm-slim\n")
    _write(folder / "tests" / "test.sh", "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    _write(folder / "solution" / "solve.sh", solution)
    return folder


def _harbor_trial(
    job: Path,
    *,
    task_name: str,
    task_path: str,
    source: str | None,
    reward: float,
    trial: str,
    ctrf: dict | None = None,
) -> Path:
    """One Harbor trial dir as Harbor 0.26 writes it (through depthlab's Harbor writer)."""
    trial_dir = job / trial
    agent = hw.agent_config("terminus-2", "openai/gpt-x")
    config = hw.trial_config(hw.task_config(task_path, source), trial, job, agent, job_id="job-1")
    phases = {name: hw.phase("2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z") for name in hw.PHASES}
    result = hw.trial_result(
        config,
        result_id=f"id-{trial}",
        task_name=task_name,
        task_path=task_path,
        trial_dir=trial_dir,
        source=source,
        task_checksum="0" * 64,
        agent=hw.agent_info("terminus-2", "1.0", "openai/gpt-x"),
        agent_result=hw.agent_result(n_input_tokens=1, n_output_tokens=1),
        rewards={"reward": reward},
        exception=None,
        started_at="2026-01-01T00:00:00Z",
        finished_at="2026-01-01T00:01:00Z",
        phases=phases,
    )
    hw.write_json(trial_dir / "config.json", config)
    hw.write_json(trial_dir / "result.json", result)
    if ctrf is not None:
        hw.write_json(trial_dir / "verifier" / "ctrf.json", ctrf)
    return trial_dir


def _tb2_job(jobs: Path, tasks: tuple[str, ...] = ("fix-git", "regex-log")) -> Path:
    """A Harbor job of Terminal-Bench 2 as TMax's repository releases it (evaluation_assets/daytona/
    <model>/terminal-bench-2-0/, hamishivi/tmax@25fd3f6): every trial's ``source`` is ``terminal-bench``."""
    job = jobs / "terminal-bench-2-0"
    for i, task in enumerate(tasks):
        _harbor_trial(job, task_name=task, task_path=task, source="terminal-bench", reward=1.0, trial=f"{task}__t{i}")
    return job


def _facet_toml(task_id: str, difficulty: str = "medium") -> str:
    """FACET's skeleton task.toml: StoKou/FACET-Terminal@1c711c9 facet/facet_terminal/stages/skeleton/stage.py
    lines 25-60 (``task_toml``): one ``[task] name`` for every task, the id in ``[metadata] task_name``."""
    return (
        'version = "1.0"\n\n[task]\nname = "facet-terminal/task"\nauthors = []\nkeywords = []\n\n'
        f'[metadata]\nauthor_name = "FACET-Terminal"\ndifficulty = "{difficulty}"\n'
        'category = "terminal_task_synthesis"\ntags = ["skill-a"]\n'
        f'task_name = "{task_id}"\nworkdir = "/task_file"\n\n[verifier]\ntimeout_sec = 120.0\n'
    )


def _tw_toml(rec_id: str) -> str:
    """TerminalWorld's task.toml: EuniAI/TerminalWorld@a2c38ca task_synthesis/generate_task_metadata.py,
    ``build_task_toml`` (version 1.0, no ``[task]``, drafter/annotator/refiner name and e-mail in ``[metadata]``)."""
    return (
        'version = "1.0"\n\n[metadata]\n'
        f'task_source = "https://asciinema.org/a/{rec_id}"\n'
        'task_drafter_name = "Ada Example"\ntask_drafter_email = "ada@example.invalid"\n'
        'task_annotator_name = ""\ntask_annotator_email = ""\n'
        'task_refiner_name = "Bo Example"\ntask_refiner_email = "bo@example.invalid"\n'
        'difficulty_explanation = "Many steps."\nsolution_explanation = "Run it."\n'
        'verification_explanation = "Checks a file."\ncategory = "devops"\ntags = ["bash"]\n'
        "expert_time_estimate_hours = 0.5\n\n[agent]\ntimeout_sec = 900.0\n"
    )


def _seta_toml(difficulty: str = "hard") -> str:
    """SETA's Harbor task.toml: camel-ai/seta-release@5fd3b70
    datasynth/evol_pipeline/agents/datapoint_agent_guide/example/hello-world/task.toml lines 1-8."""
    return (
        f'version = "1.0"\n\n[metadata]\nauthor_name = "Someone"\nauthor_email = "someone@example.invalid"\n'
        f'difficulty = "{difficulty}"\ncategory = "programming"\ntags = ["x"]\n\n[verifier]\ntimeout_sec = 120.0\n'
    )


# --- foreign runs --------------------------------------------------------------------------------


def _tmax_native(root: Path, name: str = "task_000001_abcdef12") -> Path:
    task = root / "tasks" / name
    _write(task / "task.json", json.dumps({"description": "Do it.", "truth": "x", "domain": "devops"}))
    return task


@pytest.mark.parametrize("collection", ["tmax", "facet", "seta"])
def test_tb2_runs_under_jobs_are_foreign_to_other_collections(tmp_path, collection):
    if collection == "tmax":
        _tmax_native(tmp_path)
    elif collection == "facet":
        _task(tmp_path / "tasks" / "fx_0001", _facet_toml("fx_0001"))
    else:
        _task(tmp_path / "SETA_Synth" / "stackoverflow__12", _seta_toml())
    _tb2_job(tmp_path / "jobs")
    audit = dl.load_dataset(collection, tmp_path)
    assert audit.trials.is_empty()  # TMax's TB2 runs are never TMax's public trials
    foreign = next(note for note in audit.notes if "foreign datasets" in note)
    assert "terminal-bench (2)" in foreign


def test_tb2_adopts_the_same_runs_whose_logs_name_terminal_bench(tmp_path):
    for task in ("fix-git", "regex-log"):
        _task(tmp_path / "tasks" / task, 'version = "1.0"\n[metadata]\ndifficulty = "easy"\n')
    _tb2_job(tmp_path / "jobs", ("fix-git", "regex-log", "not-a-tb2-task"))
    audit = dl.load_dataset("tb2", tmp_path)
    assert sorted(audit.public["task"]) == ["fix-git", "regex-log"]
    assert set(audit.public["dataset"]) == {"tb2"}
    assert any("not its tasks" in note and "not-a-tb2-task" in note for note in audit.notes)


# --- every task its own id -----------------------------------------------------------------------


def test_facet_tasks_sharing_one_task_name_keep_their_folder_ids_and_runs(tmp_path):
    ids = ["fx_0001", "fx_0002", "fx_0003"]
    for task_id in ids:
        _task(tmp_path / "tasks" / task_id, _facet_toml(task_id))
    job = tmp_path / "jobs" / "facet" / "job-1"
    # Harbor names every trial of these tasks after [task].name (harbor/models/task/task.py: config.task.name)
    for i, task_id in enumerate(ids[:2]):
        _harbor_trial(
            job,
            task_name="facet-terminal/task",
            task_path=str(tmp_path / "tasks" / task_id),
            source=None,
            reward=float(i),
            trial=f"task__{i}",
        )
    audit = dl.load_dataset("facet", tmp_path)
    assert sorted(audit.tasks["task"]) == ids
    assert dict(zip(audit.public["task"], audit.public["reward"], strict=True)) == {"fx_0001": 0.0, "fx_0002": 1.0}
    assert not any("author_name" in (labels or "") for labels in audit.tasks["labels"])


def test_task_dirs_sharing_an_id_are_rejected_naming_each_other(tmp_path):
    toml = 'schema_version = "1.1"\n[task]\nname = "org/same"\n[metadata]\ndifficulty = "easy"\n'
    _task(tmp_path / "tasks" / "a", toml)
    _task(tmp_path / "tasks" / "b", toml)
    _task(tmp_path / "tasks" / "c", 'version = "1.0"\n[metadata]\n')
    audit = dl.load_dataset("tb2", tmp_path)
    assert audit.tasks["task"].to_list() == ["c"]
    reasons = {Path(r.path).name: r.reason for r in audit.rejected}
    assert set(reasons) == {"a", "b"}
    assert "'same'" in reasons["a"]
    assert str(tmp_path / "tasks" / "b") in reasons["a"]
    assert str(tmp_path / "tasks" / "a") in reasons["b"]


# --- release layouts -----------------------------------------------------------------------------


def test_seta_release_folders_are_found_at_their_depth(tmp_path):
    # SETA_Synth/<source>__<id>/: datasynth/seed2synth_pipeline/merge_synth_data.py line 39;
    # SETA_Evolve/<source>__<id>__<variant>/: datasynth/evol_pipeline/io_utils.py line 102 (seta-release@5fd3b70)
    release = tmp_path / "Anonymous_Submission_Release"
    _task(release / "SETA_Synth" / "stackoverflow__12", _seta_toml("hard"))
    _task(release / "SETA_Synth" / "nl2bash__7", _seta_toml("easy"))
    _task(release / "SETA_Evolve" / "stackoverflow__12__d1", _seta_toml("medium"))
    assert dl.load_tasks(tmp_path).height == 3
    audit = dl.load_dataset("seta", tmp_path)
    assert sorted(audit.tasks["task"]) == ["nl2bash__7", "stackoverflow__12", "stackoverflow__12__d1"]
    assert not any("no task dir" in note for note in audit.notes)


def test_tw_release_artifacts_are_found_and_its_ids_kept(tmp_path):
    _task(tmp_path / "TerminalWorld" / "artifacts" / "tw_166586", _tw_toml("166586"))
    _task(tmp_path / "TerminalWorld" / "artifacts" / "tw_20001", _tw_toml("20001"))
    audit = dl.load_dataset("tw", tmp_path)
    assert sorted(audit.tasks["task"]) == ["tw_166586", "tw_20001"]


def test_a_root_without_the_layout_says_what_it_found(tmp_path):
    _write(tmp_path / "README.md", "nothing here\n")
    (tmp_path / "data").mkdir()
    audit = dl.load_dataset("seta", tmp_path)
    note = next(note for note in audit.notes if "no task dir of seta's layout" in note)
    for found in ("SETA_Synth/", "README.md", "data/"):
        assert found in note


# --- personal data -------------------------------------------------------------------------------


def test_names_and_emails_of_drafters_never_reach_tables_or_exports(tmp_path):
    _task(tmp_path / "artifacts" / "tw_1", _tw_toml("1"))
    _task(tmp_path / "SETA_Synth" / "so__1", _seta_toml())
    for name in ("tw", "seta"):
        audit = dl.load_dataset(name, tmp_path)
        assert audit.tasks.height == 1
        labels = json.loads(audit.tasks["labels"].item() or "{}")
        assert not [key for key in labels if "name" in key or "email" in key], labels
        text = write_table(audit.tasks, tmp_path / f"{name}.csv").read_text()  # the export of `depthlab` verbs
        for personal in ("Ada Example", "ada@example.invalid", "Bo Example", "someone@example.invalid", "Someone"):
            assert personal not in text
    assert "task_source" in dl.load_dataset("tw", tmp_path).tasks["labels"].item()  # other labels stay


# --- RST ------------------------------------------------------------------------------------------


def _rst_index(root: Path, rows: list[tuple[str, str, str | None]]) -> None:
    """metadata/tasks.parquet as the HF card of Zhongzhi1228/Recursive-Task-Synthesis describes it (task_id,
    task_group_id, instruction, task_toml, solution, dockerfile, member_prefix, shard); written here."""
    path = root / "metadata" / "tasks.parquet"
    path.parent.mkdir(parents=True)
    pl.DataFrame(
        {
            "task_id": [r[0] for r in rows],
            "task_group_id": [r[1] for r in rows],
            "instruction": ["Do it."] * len(rows),
            "task_toml": ['version = "1.0"\n[task]\nname = "rts/task"\n[metadata]\ndifficulty = "hard"\n'] * len(rows),
            "solution": [r[2] for r in rows],
            "dockerfile": ["FROM debian\n"] * len(rows),
            "member_prefix": [f"tasks/{r[0]}/" for r in rows],
            "shard": [0] * len(rows),
        }
    ).write_parquet(path)


def test_rst_keeps_task_ids_and_groups_and_skips_shared_ids(tmp_path):
    _rst_index(
        tmp_path,
        [("rts-1", "g1", "ls\n"), ("rts-2", "g1", "ls\npwd\n"), ("rts-3", "g2", None), ("rts-3", "g3", "x\n")],
    )
    audit = dl.load_dataset("rst", tmp_path)
    assert dict(zip(audit.tasks["task"], audit.tasks["task_group"], strict=True)) == {"rts-1": "g1", "rts-2": "g1"}
    assert set(audit.tasks["difficulty_source"]) == {"generated"}  # inherited from the seed
    assert any("index rows skipped" in note and "'rts-3'" in note for note in audit.notes)
    assert any("2 tasks in 1 task groups" in note for note in audit.notes)


def test_a_collection_with_task_groups_is_bootstrapped_by_group():
    from depthlab.findings._core import task_groups

    audit = schema.conform(
        pl.DataFrame(
            {
                "dataset": "rst",
                "task": [f"t{i}" for i in range(12)],
                "task_group": [f"g{i // 3}" if i < 9 else None for i in range(12)],
                "pass_rate": [0.9, 0.8, 0.85, 0.2, 0.3, 0.25, 0.6, 0.5, 0.55, 0.1, 0.7, 0.4],
                "depth": [1, 3, 2, 8, 9, 5, 3, 4, 2, 20, 2, 5],
                "work": [30, 4, 3, 3, 20, 25, 8, 40, 10, 4, 5, 12],
            }
        ),
        "audit",
    )
    grouped, cluster = task_groups(audit)
    assert cluster == "task_group"
    assert grouped["task_group"].n_unique() == 6  # 3 groups of 3 rewrites, 3 tasks on their own
    by_group = dl.stats.partial_spearman(grouped, "pass_rate", "depth", "work", n_boot=200, seed=0, cluster=cluster)
    by_task = dl.stats.partial_spearman(audit, "pass_rate", "depth", "work", n_boot=200, seed=0)
    assert (by_group.n, by_task.n) == (6, 12)
    assert task_groups(audit.with_columns(task_group=pl.lit(None, pl.String)))[1] is None


# --- TMax solve summaries ------------------------------------------------------------------------


def _summary(results: list[dict]) -> str:
    """A solve summary as rl_data/generator/vanillux_solver.py (hamishivi/tmax@06b9621, end of
    run_n_solutions_vanillux) returns it and rl_data/generate_solutions.py (process_task) writes it."""
    n_success = sum(bool(r.get("success")) for r in results)
    return json.dumps({"num_runs": len(results), "num_success": n_success, "pass_at_k": {"1": 0.5}, "results": results})


def test_tmax_summary_names_give_harness_turn_limit_and_infra_runs_are_invalid(tmp_path):
    task = _tmax_native(tmp_path)
    talk = [{"role": "assistant", "content": "ls"}] * 64
    _write(
        task / "solutions" / "gemini_gemini-3-flash-preview_vanillux_summary.json",
        _summary(
            [
                {"success": True, "reward": 1, "messages": talk[:5]},
                {"success": False, "reward": 0, "messages": talk},
                {"success": False, "reward": 0, "messages": [], "infra_error": True},
            ]
        ),
    )
    _write(
        task / "solutions" / "gemini_gemini-3-flash-preview_bash_thinking_summary.json",
        _summary([{"success": False, "reward": 0, "messages": talk[:16]}]),
    )
    _write(
        task / "solutions" / "gemini_gemini-3-flash-preview_summary.json", _summary([{"success": True, "reward": 1}])
    )
    public = dl.load_dataset("tmax", tmp_path).public.sort("agent", "model", "attempt")
    rows = public.select("agent", "model", "turn_limit", "status", "hit_limit").rows()
    assert rows == [
        ("tmax-solve", "gemini_gemini-3-flash-preview", None, "pass", None),
        ("tmax-solve:bash", "gemini_gemini-3-flash-preview (thinking)", 16, "fail", True),
        ("tmax-solve:vanillux", "gemini_gemini-3-flash-preview", 64, "pass", False),
        ("tmax-solve:vanillux", "gemini_gemini-3-flash-preview", 64, "fail", True),
        ("tmax-solve:vanillux", "gemini_gemini-3-flash-preview", 64, "invalid", None),
    ]
    assert public.filter(pl.col("status") == "invalid")["passed"].item() is None


# --- SETA weights --------------------------------------------------------------------------------


def test_seta_bad_weights_reject_one_task_and_weights_apply_only_with_per_test_results(tmp_path):
    synth = tmp_path / "SETA_Synth"
    _task(synth / "so__1", _seta_toml())
    _write(synth / "so__1" / "weights.json", json.dumps({"test_a": 0.75, "test_b": 0.25}))
    _task(synth / "so__2", _seta_toml())
    _write(synth / "so__2" / "weights.json", "{not json")
    job = tmp_path / "jobs" / "seta" / "job-1"
    # pytest-json-ctrf's report at /logs/verifier/ctrf.json: datasynth/evol_pipeline/evol_orchestrator.py lines 449-470
    ctrf = {"results": {"tests": [{"name": "test_a", "status": "passed"}, {"name": "test_b", "status": "failed"}]}}
    _harbor_trial(job, task_name="so__1", task_path="so__1", source="seta", reward=0.0, trial="so__1__a", ctrf=ctrf)
    _harbor_trial(job, task_name="so__1", task_path="so__1", source="seta", reward=1.0, trial="so__1__b")
    audit = dl.load_dataset("seta", tmp_path)
    assert audit.tasks["task"].to_list() == ["so__1"]
    assert [Path(r.path).name for r in audit.rejected] == ["weights.json"]
    assert "so__2" in audit.rejected[0].path
    assert "not valid JSON" in audit.rejected[0].reason
    rewards = dict(zip(audit.public["trial"], audit.public["reward"], strict=True))
    assert rewards == {"so__1__a": 0.75, "so__1__b": 1.0}  # no ctrf.json: test.sh's binary reward stands
    assert any("1 trials with per-test results re-scored" in note for note in audit.notes)


# --- TB2 runs joined with the bundled TB2 tasks --------------------------------------------------


def test_harbor_tb2_runs_join_the_bundled_tb2_tasks(tmp_path):
    tasks = dl.load_dataset("tb2").tasks
    _tb2_job(tmp_path, tuple(tasks["task"].head(3)))
    trials = dl.load_trials(tmp_path)
    assert set(trials["dataset"]) == {"terminal-bench"}
    with pytest.warns(UserWarning, match=r"only 3 of 89 tasks join.*\['tb2'\].*\['tb2'\]"):
        out = audit_table(tasks, trials)
    assert out["pass_rate"].drop_nulls().len() == 3


def test_audit_table_warns_naming_both_sides_when_few_tasks_join(tmp_path):
    tasks = schema.conform(pl.DataFrame({"dataset": "mine", "task": ["a", "b", "c"]}), "tasks")
    trials = schema.conform(
        pl.DataFrame({"dataset": "theirs", "task": ["a"], "model": "m", "status": "pass", "n_turns": [3]}), "trials"
    )
    with pytest.warns(UserWarning, match=r"only 0 of 3 tasks.*\['mine'\].*\['theirs'\]"):
        audit_table(tasks, trials)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        audit_table(
            tasks,
            trials.with_columns(dataset=pl.lit("mine")).vstack(
                trials.with_columns(dataset=pl.lit("mine"), task=pl.lit("b"))
            ),
        )


def test_a_real_tb2_harbor_job_joins_every_bundled_task(shared_data):
    job = shared_data / "tb2-jobs" / "tmax-27b"
    if not job.is_dir():
        pytest.skip(f"no real TB2 Harbor job at {job}")
    trials = dl.load_trials(job)
    out = audit_table(dl.load_dataset("tb2").tasks, trials)
    assert out["pass_rate"].drop_nulls().len() == 89
