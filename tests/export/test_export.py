"""depthlab's exports read back by the peers' own packages: Inspect Scout's loader, Docent's AgentRun model.

Two samples, each exported once per peer (module-scoped): the real TMax job on Terminal-Bench 2.0 tasks
(``../shared/data/tb2-jobs/tmax-27b``: chat-list trajectories, which Docent's own Harbor converter
refuses) with the bundled TB2 tasks table, and a small simulated Harbor job (ATIF trajectories, capped
runs, invalid trials) with its tasks, its depth table and a checks table. Each peer reads its export in
its own side venv, one subprocess per peer (tests/export/read_scout.py, read_docent.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from depthlab import cli, schema
from depthlab.datasets import load_dataset
from depthlab.export import export_docent, export_metr, export_runs, export_scout
from depthlab.io import load_tasks, read_trials
from depthlab.measures import estimate_depth
from depthlab.simulate import write_runs

pytestmark = pytest.mark.peers

HERE = Path(__file__).resolve().parent
#: Transcripts whose messages Scout reads whole, per database (each costs Scout a query).
SCOUT_FULL = 6


def _key(row: dict[str, Any]) -> str:
    return f"{row['dataset']}/{row['job']}/{row['trial']}"


@pytest.fixture(scope="module")
def tmax(request: pytest.FixtureRequest) -> pl.DataFrame | None:
    """The real TMax job's trials, or None without ../shared (its tests skip; the simulated job's still run)."""
    try:
        shared_data = request.getfixturevalue("shared_data")
    except pytest.skip.Exception:
        return None
    job = shared_data / "tb2-jobs" / "tmax-27b"
    return read_trials(job, dataset="tb2").trials if job.is_dir() else None


def _real(tmax: pl.DataFrame | None) -> pl.DataFrame:
    if tmax is None:
        pytest.skip("the real TMax job (../shared/data/tb2-jobs/tmax-27b) is not here")
    return tmax


def _samples(tmax: pl.DataFrame | None, sim: dict[str, Any]) -> list[tuple[str, pl.DataFrame]]:
    return [("sim", sim["trials"])] + ([] if tmax is None else [("tmax", tmax)])


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    runs = write_runs(tmp_path_factory.mktemp("sim"), scale=0.01, seed=3, public_attempts=0)
    trials = read_trials(runs.jobs_dir).trials
    tasks = load_tasks(runs.tasks_dir)
    first = tasks["task"][0]
    checks = schema.conform(
        pl.DataFrame(
            {"task": [first, first], "check": ["oracle", "mutants"], "step": [None, None], "outcome": ["ok", "fault"]}
        ),
        "checks",
    )
    return {"runs": runs, "trials": trials, "tasks": tasks, "depth": estimate_depth(trials), "checks": checks}


@pytest.fixture(scope="module")
def steps(tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    """Multi-step trials: the simulated segmented tasks run as Harbor [[steps]] tasks."""
    runs = write_runs(tmp_path_factory.mktemp("steps"), scale=0.01, seed=3, public_attempts=0, segments_as="steps")
    trials = read_trials(runs.jobs_dir).trials
    return trials.filter(pl.col("n_steps").is_not_null())


@pytest.fixture(scope="module")
def planted(sim: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    """One simulated ATIF trial with an image part and a subagent reference planted in its trajectory."""
    source = Path(sim["trials"].filter(pl.col("n_turns") >= 2)["source"][0]).parent
    trial = tmp_path_factory.mktemp("planted") / source.name
    shutil.copytree(source, trial)
    path = trial / "agent" / "trajectory.json"
    atif = json.loads(path.read_text())
    first = atif["steps"][0]
    first["message"] = [
        {"type": "text", "text": str(first["message"])},
        {"type": "image", "source": {"media_type": "image/png", "path": "s.png"}},
    ]
    agent = next(step for step in atif["steps"] if step["source"] == "agent" and step.get("observation"))
    agent["observation"]["results"][0]["subagent_trajectory_ref"] = [{"session_id": "sub-1"}]
    path.write_text(json.dumps(atif))
    return read_trials(trial).trials


@pytest.fixture(scope="module")
def exports(
    tmax: pl.DataFrame | None,
    sim: dict[str, Any],
    steps: pl.DataFrame,
    planted: pl.DataFrame,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("exports")
    tb2 = load_dataset("tb2").tasks
    tables = {"depth": sim["depth"], "tasks": sim["tasks"]}
    real = {}
    if tmax is not None:
        real = {
            "tmax_scout": export_scout(tmax, out / "tmax-scout", tasks=tb2),
            "tmax_docent": export_docent(tmax, out / "tmax-docent.jsonl", tasks=tb2),
            "tmax_metr": export_metr(tmax, out / "tmax-runs.jsonl", tasks=tb2),
        }
    return {
        **real,
        "sim_scout": export_scout(sim["trials"], out / "sim-scout", checks=sim["checks"], **tables),
        "sim_docent": export_docent(sim["trials"], out / "sim-docent.jsonl", checks=sim["checks"], **tables),
        "sim_metr": export_metr(sim["trials"], out / "sim-runs.jsonl", **tables),
        "planted_docent": export_docent(planted, out / "planted-docent.jsonl"),
        "steps_docent": export_docent(steps, out / "steps-docent.jsonl"),
        "planted_scout": export_scout(planted, out / "planted-scout"),
        "out": out,
    }


def _run(python: Path, script: str, *args: str) -> list[dict[str, Any]]:
    done = subprocess.run([str(python), str(HERE / script), *args], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture(scope="module")
def scout_read(scout_python: Path, exports: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every transcript of the TMax and simulated databases as Scout's own loader reads it, by transcript id
    (the planted trial, a copy of a simulated one under the same id, under ``"planted"``)."""
    names = ("planted_scout", "sim_scout", "tmax_scout")
    locations = [str(exports[name].out) for name in names if name in exports]
    rows = _run(scout_python, "read_scout.py", str(SCOUT_FULL), *locations)
    read = {row["transcript_id"]: row for row in rows if row["location"] != locations[0]}
    (read["planted"],) = (row for row in rows if row["location"] == locations[0])
    assert len(read) == len(rows)
    return read


@pytest.fixture(scope="module")
def docent_read(docent_python: Path, exports: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Every AgentRun of the three files through Docent's own model, by file."""
    names = ("tmax_docent", "sim_docent", "planted_docent", "steps_docent")
    files = [str(exports[name].out) for name in names if name in exports]
    rows = _run(docent_python, "read_docent.py", "read", *files)
    return {file: [row for row in rows if row["file"] == file] for file in files}


# ------------------------------------------------------------------ counts ----------------------------
def test_every_trial_is_a_run_or_a_report_line(exports, tmax, sim, planted):
    for name, trials in [*_samples(tmax, sim), ("planted", planted)]:
        for peer in ("scout", "docent", "metr"):
            report = exports.get(f"{name}_{peer}")
            if report is None:
                continue
            assert report.n_trials == trials.height
            assert report.n_trials == report.n_runs + len(report.left_out)
    if tmax is not None:
        assert exports["tmax_scout"].n_runs == exports["tmax_docent"].n_runs == tmax.height == 445
    # METR leaves out exactly the invalid trials (no score to fit), one line each
    invalid = sim["trials"].filter(pl.col("status") == "invalid")
    assert invalid.height > 0
    assert len(exports["sim_metr"].left_out) == invalid.height
    assert all("invalid trial" in line for line in exports["sim_metr"].left_out)


def test_what_cannot_be_carried_is_one_line_per_trial(exports, planted):
    for report in (exports["planted_docent"], exports["planted_scout"]):
        assert report.n_runs == 1
        (line,) = report.not_carried
        assert line.startswith(f"{planted['job'][0]}/{planted['trial'][0]}: ")
        assert "1 image part(s) shown as [image]" in line
        assert "1 subagent trajectory reference(s) not followed" in line
    assert "not carried " in (exports["planted_docent"].out.parent / "planted-docent.jsonl.report.txt").read_text()


def test_the_real_chat_lists_are_carried_whole(exports, tmax):
    _real(tmax)
    assert exports["tmax_scout"].not_carried == exports["tmax_docent"].not_carried == ()  # text only: nothing lost


def test_scout_reads_the_planted_trial_with_what_was_not_carried(scout_read, planted):
    read = scout_read["planted"]
    assert read["transcript_id"] == _key(planted.row(0, named=True))
    assert "1 image part(s) shown as [image]" in read["metadata"]["not_carried"]
    assert "[image]" in json.dumps(read["roles"]) or read["message_count"] > 0


# ------------------------------------------------------------------ Scout -----------------------------
def test_scout_opens_every_transcript_with_score_success_and_metadata(scout_read, tmax, sim):
    for _, trials in _samples(tmax, sim):
        for row in trials.iter_rows(named=True):
            read = scout_read[_key(row)]
            assert read["task_id"] == row["task"]
            assert read["model"] == row["model"]
            if row["rewards"]:
                assert read["score"] == json.loads(row["rewards"])
            expected = None if row["status"] == "invalid" else row["passed"]
            assert read["success"] is expected
            metadata = read["metadata"]
            assert metadata["dataset"] == row["dataset"]
            assert metadata["status"] == row["status"]
            assert metadata.get("n_turns") == row["n_turns"]
            assert metadata.get("cap") == row["cap"]
    # the verifier's output is the score's explanation
    explained = 0
    for _, trials in _samples(tmax, sim):
        for row in trials.iter_rows(named=True):
            verifier = Path(row["source"]).parent / "verifier"
            outputs = [
                path.read_bytes().decode("utf-8", errors="replace") if path.is_file() else ""
                for path in (verifier / "test-stdout.txt", verifier / "test-stderr.txt")
            ]
            expected = "\n".join(text for text in outputs if text) or None
            assert scout_read[_key(row)]["score_explanation"] == expected
            explained += expected is not None
    assert explained > 0 or tmax is None  # the simulated verifiers print nothing; TMax's do


def test_scout_limit_is_turns_exactly_when_the_stated_cap_ended_the_run(scout_read, sim):
    trials = sim["trials"]
    capped_out = trials.filter(pl.col("cap").is_not_null() & pl.col("hit_limit"))
    assert capped_out.height > 0
    for row in trials.iter_rows(named=True):
        ended = row["cap"] is not None and bool(row["hit_limit"])
        assert scout_read[_key(row)]["limit"] == ("turns" if ended else None)


def test_scout_metadata_carries_d_w_and_checks(scout_read, sim):
    depth = {row["task"]: row for row in sim["depth"].iter_rows(named=True)}
    work = dict(sim["tasks"].select("task", "work").iter_rows())
    checked = sim["checks"]["task"][0]
    for row in sim["trials"].iter_rows(named=True):
        metadata = scout_read[_key(row)]["metadata"]
        assert metadata.get("depth") == depth[row["task"]]["depth"]
        assert metadata.get("depth_status") == depth[row["task"]]["status"]
        assert metadata.get("depth_low") == depth[row["task"]]["depth_low"]
        assert metadata.get("work") == work[row["task"]]
        if row["task"] == checked:
            verdicts = metadata["checks"]
            verdicts = json.loads(verdicts) if isinstance(verdicts, str) else verdicts
            assert [(v["check"], v["outcome"]) for v in verdicts] == [("oracle", "ok"), ("mutants", "fault")]
        else:
            assert "checks" not in metadata


def test_scout_messages_hold_one_assistant_message_per_turn(scout_read, exports, tmax, sim):
    whole = [row for row in scout_read.values() if row["roles"] is not None]
    assert len(whole) >= SCOUT_FULL * len(_samples(tmax, sim))
    n_turns = {_key(row): row["n_turns"] for _, trials in _samples(tmax, sim) for row in trials.iter_rows(named=True)}
    for read in whole:
        if read["location"] == str(exports["planted_scout"].out):
            continue
        assert len(read["roles"]) == read["message_count"]
        assert read["roles"].count("assistant") == (n_turns[read["transcript_id"]] or 0)
        assert read["tool_calls"] <= read["roles"].count("assistant")


# ------------------------------------------------------------------ Docent ----------------------------
def test_docent_validates_every_run_with_depthlab_metadata(docent_read, exports, tmax, sim):
    for name, trials in _samples(tmax, sim):
        runs = docent_read[str(exports[f"{name}_docent"].out)]
        assert len(runs) == trials.height
        for run, row in zip(runs, trials.iter_rows(named=True), strict=True):
            meta = run["metadata"]["depthlab"]
            assert (meta["job"], meta["trial"], meta["status"], meta["reward"]) == (
                row["job"],
                row["trial"],
                row["status"],
                row["reward"],
            )
            assert run["roles"].count("assistant") == (row["n_turns"] or 0)
            result = json.loads(Path(row["source"]).read_text())
            assert run["metadata"]["harbor"]["result_json"] == result
            assert run["metadata"]["harbor"]["trial_path"] == Path(row["source"]).parent.name
    # an invalid simulated trial recorded no trajectory: a run without messages, and a report line
    forms = [run["metadata"]["source_format"] for run in docent_read[str(exports["sim_docent"].out)]]
    assert set(forms) == {"atif", None}
    assert forms.count(None) == len(exports["sim_docent"].not_carried)
    if tmax is None:
        return
    assert {run["metadata"]["source_format"] for run in docent_read[str(exports["tmax_docent"].out)]} == {"chat-list"}
    expert = dict(load_dataset("tb2").tasks.select("task", "expert_time_min").iter_rows())
    tmax_runs = docent_read[str(exports["tmax_docent"].out)]
    assert all(
        run["metadata"]["depthlab"]["expert_time_min"] == expert[run["metadata"]["depthlab"]["task"]]
        for run in tmax_runs
    )


def test_docent_carries_multi_step_trials_step_by_step(docent_read, exports, steps):
    runs = docent_read[str(exports["steps_docent"].out)]
    assert steps.height > 0
    assert len(runs) == steps.height
    for run, row in zip(runs, steps.iter_rows(named=True), strict=True):
        assert run["metadata"]["source_format"] == "multi-step"
        assert run["metadata"]["depthlab"]["trial"] == row["trial"]
        # N of a multi-step trial is summed over its steps: so are the assistant messages
        assert run["roles"].count("assistant") == row["n_turns"]
    assert exports["steps_docent"].not_carried == ()


def test_docent_refuses_the_real_chat_lists_that_depthlab_carries(docent_python, shared_data):
    job = shared_data / "tb2-jobs" / "tmax-27b"
    if not job.is_dir():
        pytest.skip(f"the real TMax job is not at {job}")
    converted = _run(docent_python, "read_docent.py", "convert", str(job))
    # Docent finds only trials with a verifier/ folder, and converts none of them
    found = [trial for trial in (job / "terminal-bench-2-0").iterdir() if (trial / "verifier").is_dir()]
    assert 0 < len(converted) == len(found) <= 445
    assert all("no ATIF JSON files found directly under agent/" in row["error"] for row in converted)


def test_docent_converts_atif_trials_to_the_same_messages(docent_python, docent_read, exports, sim):
    converted = {
        row["trial"]: row for row in _run(docent_python, "read_docent.py", "convert", str(sim["runs"].jobs_dir))
    }
    ours = docent_read[str(exports["sim_docent"].out)]
    assert len(ours) == sim["trials"].height
    # Docent finds only trials with a verifier/ folder (an invalid trial may have none): depthlab exports all
    unseen = [run for run in ours if run["metadata"]["harbor"]["trial_path"] not in converted]
    assert len(converted) + len(unseen) == len(ours)
    assert all(run["metadata"]["depthlab"]["status"] == "invalid" for run in unseen)
    for run in ours:
        theirs = converted.get(run["metadata"]["harbor"]["trial_path"])
        if theirs is None:
            continue
        assert "error" not in theirs
        assert run["roles"] == theirs["roles"]
        # a turn's tool calls are carried as one call, its commands one per line (depthlab's turn)
        assert (run["tool_calls"] > 0) == (theirs["tool_calls"] > 0)
        assert run["tool_calls"] <= theirs["tool_calls"]


# ------------------------------------------------------------------ METR ------------------------------
def test_metr_runs_carry_expert_minutes_and_weights(exports, tmax):
    tmax = _real(tmax)
    runs = pl.read_ndjson(exports["tmax_metr"].out)
    assert runs.columns[:7] == [
        "task_id",
        "task_family",
        "alias",
        "score_binarized",
        "score_cont",
        "human_minutes",
        "invsqrt_task_weight",
    ]
    assert runs.height == tmax.height
    expert = dict(load_dataset("tb2").tasks.select("task", "expert_time_min").iter_rows())
    for run in runs.iter_rows(named=True):
        assert run["human_minutes"] == expert[run["task_family"]]
    missing = runs.filter(pl.col("human_minutes").is_null())["task_family"].unique().to_list()
    assert missing == [task for task, minutes in expert.items() if minutes is None and task in missing]
    assert len(exports["tmax_metr"].not_carried) == runs.filter(pl.col("human_minutes").is_null()).height
    assert runs["score_binarized"].sum() == tmax["passed"].sum()
    # each task weighs the same in an alias's fit: its runs' weights add up to 1 (a family of one task)
    totals = runs.group_by("alias", "task_id").agg(pl.col("invsqrt_task_weight").sum())
    assert totals["invsqrt_task_weight"].to_list() == pytest.approx([1.0] * totals.height)


def test_metr_aliases_tell_capped_agents_apart(exports, sim):
    runs = pl.read_ndjson(exports["sim_metr"].out)
    valid = sim["trials"].filter(pl.col("status") != "invalid")
    assert runs.height == valid.height
    assert runs.filter(pl.col("cap") == 5)["alias"].str.ends_with(" / cap 5").all()
    assert runs["alias"].n_unique() == valid.select("agent", "model", "cap").unique().height


# ------------------------------------------------------------------ the command ----------------------
def test_the_command_writes_the_same_export(sim, tmp_path, capsys):
    out = tmp_path / "runs.jsonl"
    assert (
        cli.main(["export", "metr", str(sim["runs"].jobs_dir), "--tasks", str(sim["runs"].tasks_dir), "-o", str(out)])
        == 0
    )
    err = capsys.readouterr().err
    assert f"metr: {sim['trials'].height} trials in, " in err
    direct = export_runs("metr", sim["trials"], tmp_path / "direct.jsonl", depth=sim["depth"], tasks=sim["tasks"])
    assert pl.read_ndjson(out).sort("run_id").equals(pl.read_ndjson(direct.out).sort("run_id"))


def test_the_command_refuses_a_wrong_output_before_any_work(tmp_path, capsys):
    assert cli.main(["export", "docent", str(tmp_path / "no-runs"), "-o", str(tmp_path / "x.csv")]) == 2
    assert capsys.readouterr().err.startswith("depthlab export: -o/--output: docent writes a .jsonl file")
    assert not list(tmp_path.iterdir())
