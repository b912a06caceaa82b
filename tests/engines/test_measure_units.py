"""The round loop and the Harbor engine's pieces, without Docker: a simulated engine whose tasks have
known depths drives :func:`depthlab.engines.measure`; the Harbor configs of a round, the Harbor
check, and (with Harbor's side venv) ``harbor run --dry-run`` on a cloud environment's configs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import polars as pl
import pytest

from depthlab import cli, schema
from depthlab.engines import EngineError, HarborEngine, find_harbor, measure
from depthlab.engines._harbor_guard import compose_project
from depthlab.engines.harbor import INSTALL_HINT
from depthlab.io import load_tasks
from depthlab.io.harbor_writer import as_object, stated_cap_instructions
from depthlab.runner import HarnessConfig

MODELS = ("p/a", "p/b")


class SimulatedEngine:
    """Trials from known depths: a run at cap c passes iff c >= the task's depth for that model."""

    name = "simulated"

    def __init__(self, depths: dict[str, dict[str, int | None]], *, invalid_from_round: int | None = None,
                 cost: float | None = 0.01, oracle_fails: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.depths = depths
        self.invalid_from_round = invalid_from_round
        self.cost = cost
        self.oracle_fails = oracle_fails
        self.rows: list[dict] = []
        self.rounds: list[pl.DataFrame] = []
        self.progress = True
        self.note = ""
        self.jobs_dir = None  # the trials live in memory: no folder to lock

    def check(self) -> None:
        pass

    def resume(self, echo) -> None:
        pass

    def preflight(self, tasks, echo) -> pl.DataFrame:
        rows = [{"task": task, "reason": "the reference solution got reward 0", "output": "FAILED"}
                for task in self.oracle_fails]  # fmt: skip
        return schema.preflight_failures(rows)

    def next_round(self) -> int:
        return len(self.rounds) + 1

    def run_round(self, plan, number, tasks, echo) -> None:
        self.rounds.append(plan)
        for row in plan.iter_rows(named=True):
            for _ in range(row["attempts"]):
                invalid = self.invalid_from_round is not None and number >= self.invalid_from_round
                depth = self.depths[row["task"]][row["model"]]
                passed = depth is not None and row["cap"] >= depth
                self.rows.append(
                    {
                        "dataset": "d",
                        "task": row["task"],
                        "model": row["model"],
                        "cap": row["cap"],
                        "status": "invalid" if invalid else ("pass" if passed else "fail"),
                        "exception": "LLMEndpointError" if invalid else None,
                        "n_input_tokens": 100,
                        "n_output_tokens": 10,
                        "cost_usd": self.cost,
                        "source": f"sim/{len(self.rows)}/result.json",
                    }
                )

    def load_trials(self) -> pl.DataFrame:
        if not self.rows:
            return schema.empty("trials")
        return schema.conform(pl.DataFrame(self.rows), "trials")


def tasks_table(names) -> pl.DataFrame:
    return schema.conform(
        pl.DataFrame({"dataset": "d", "task": list(names), "source": [f"/t/{n}" for n in names]}), "tasks"
    )


DEPTHS = {"t3": {"p/a": 3, "p/b": 5}, "t5": {"p/a": 5, "p/b": None}, "never": {"p/a": None, "p/b": None}}


def test_the_rounds_pin_every_depth_in_fewer_runs_than_the_sweep():
    engine = SimulatedEngine(DEPTHS)
    lines: list[str] = []
    result = measure(engine, tasks_table(DEPTHS), models=MODELS, caps=(1, 2, 3, 5, 10), echo=lines.append)
    depth = dict(result.depth.select("task", "depth").iter_rows())
    assert depth == {"never": None, "t3": 3, "t5": 5}
    assert dict(result.depth.select("task", "status").iter_rows())["never"] == "unsolved"
    assert result.complete
    assert result.runs == len(engine.rows) < result.sweep_runs == 3 * 2 * 5
    assert len(result.rounds) == len(engine.rounds) <= 5
    assert result.rounds[-1].status == {"solved": 2, "unsolved": 1}
    assert any(line.startswith("round 1: ") and "tasks:" in line for line in lines)
    assert "tasks: 2 solved, 1 unsolved" in result.render()


def test_max_runs_stops_before_the_round_that_would_pass_it_and_names_what_is_left():
    engine = SimulatedEngine(DEPTHS)
    result = measure(engine, tasks_table(DEPTHS), models=MODELS, caps=(1, 2, 3, 5, 10), max_runs=10, echo=print)
    assert len(engine.rows) <= 10
    assert not result.complete
    assert "would pass --max-runs 10" in result.stopped
    text = result.render()
    assert "left unpinned" in text
    unpinned = result.depth.filter(pl.col("status") == "incomplete")["task"].to_list()
    assert unpinned
    assert all(task in text for task in unpinned)


def test_max_cost_stops_on_the_estimated_cost_of_the_next_round():
    engine = SimulatedEngine(DEPTHS, cost=1.0)
    result = measure(engine, tasks_table(DEPTHS), models=MODELS, caps=(1, 2, 3, 5, 10), max_cost=8.5, echo=print)
    assert sum(row["cost_usd"] for row in engine.rows) <= 8.5
    assert "past --max-cost 8.5" in result.stopped
    # without a cost in the trials, the budget cannot refuse a round
    free = measure(SimulatedEngine(DEPTHS, cost=None), tasks_table(DEPTHS), models=MODELS, caps=(1, 2), max_cost=0.0,
                   echo=print)  # fmt: skip
    assert free.complete


def test_a_round_of_invalid_trials_stops_with_the_reason_and_counts_nothing():
    engine = SimulatedEngine(DEPTHS, invalid_from_round=1)
    result = measure(engine, tasks_table(DEPTHS), models=MODELS, caps=(1, 2, 3), echo=print)
    assert len(engine.rounds) == 1
    assert "round 1 recorded no valid trial, nothing was counted: LLMEndpointError" in result.stopped
    assert result.valid == 0
    assert set(result.depth["status"]) == {"incomplete"}
    assert result.depth["caps_tried"].to_list() == [[], [], []]


def test_the_oracle_preflight_leaves_failing_tasks_out_and_all_failing_stops():
    engine = SimulatedEngine(DEPTHS, oracle_fails=("never",))
    lines: list[str] = []
    result = measure(engine, tasks_table(DEPTHS), models=MODELS, caps=(1, 2, 3, 5), echo=lines.append)
    assert "never" not in set(pl.concat(engine.rounds)["task"])
    assert result.excluded["task"].to_list() == ["never"]
    assert any("1 task(s) left out" in line and "never: the reference solution got reward 0" in line for line in lines)
    everyone = SimulatedEngine(DEPTHS, oracle_fails=tuple(DEPTHS))
    result = measure(everyone, tasks_table(DEPTHS), models=MODELS, caps=(1, 2), echo=print)
    assert result.stopped == "every task was left out"
    assert not everyone.rounds


class LuckyEngine(SimulatedEngine):
    """As :class:`SimulatedEngine`, but a cell in ``luck`` gives its listed outcomes attempt by attempt
    (then the depth's), so one lucky pass can sit below a task's true depth."""

    def __init__(self, depths, luck: dict[tuple[str, str, int], list[str]]) -> None:
        super().__init__(depths)
        self.luck = {cell: list(outcomes) for cell, outcomes in luck.items()}

    def run_round(self, plan, number, tasks, echo) -> None:
        start = len(self.rows)
        super().run_round(plan, number, tasks, echo)
        for row in self.rows[start:]:
            outcomes = self.luck.get((row["task"], row["model"], row["cap"]))
            if outcomes:
                row["status"] = outcomes.pop(0)


# "lucky": p/a's true depth is 3, but its first attempt at cap 2 passes by luck; p/b never passes
LUCKY = {"lucky": {"p/a": 3, "p/b": None}, "t5": {"p/a": 5, "p/b": 5}}


def test_attempts_auto_runs_more_attempts_only_where_they_can_still_change_d():
    caps = (1, 2, 3, 5, 10)
    luck = {("lucky", "p/a", 2): ["pass"]}
    once = measure(LuckyEngine(LUCKY, luck), tasks_table(LUCKY), models=MODELS, caps=caps,
                   pass_rule="isotonic", echo=print)  # fmt: skip
    assert dict(once.depth.select("task", "depth").iter_rows()) == {"lucky": 2, "t5": 5}  # luck sets D
    engine = LuckyEngine(LUCKY, luck)
    auto = measure(engine, tasks_table(LUCKY), models=MODELS, caps=caps, pass_rule="isotonic",
                   attempts="auto", max_attempts=3, echo=print)  # fmt: skip
    assert auto.complete
    # the lone pass at cap 2 is pooled away by the failures auto ran beside it
    assert dict(auto.depth.select("task", "depth").iter_rows()) == {"lucky": 3, "t5": 5}
    trials = engine.load_trials()
    per_cell = trials.group_by("task", "model", "cap").len()
    assert per_cell["len"].max() <= 3
    lucky_cell = per_cell.filter((pl.col("task") == "lucky") & (pl.col("model") == "p/a") & (pl.col("cap") == 2))
    assert lucky_cell["len"].item() == 3
    assert auto.sweep_runs == 2 * 2 * len(caps) * 3
    assert auto.runs == len(engine.rows) < auto.sweep_runs
    # a cell far above D is never run; t5's failures at caps 1 and 2 of both models are settled sooner than
    # by three attempts each under a fixed K = 3
    fixed = measure(LuckyEngine(LUCKY, luck), tasks_table(LUCKY), models=MODELS, caps=caps,
                    pass_rule="isotonic", attempts=3, echo=print)  # fmt: skip
    assert dict(fixed.depth.select("task", "depth").iter_rows()) == {"lucky": 3, "t5": 5}
    assert auto.runs < fixed.runs


def test_attempts_auto_is_checked_and_reaches_measure_from_the_command_line(tmp_path, capsys):
    with pytest.raises(ValueError, match="'attempts' parameter of measure must be a positive integer or 'auto'"):
        measure(SimulatedEngine(DEPTHS), tasks_table(DEPTHS), models=MODELS, caps=(1, 2), attempts="some")
    with pytest.raises(ValueError, match="'max_attempts' parameter of measure"):
        measure(SimulatedEngine(DEPTHS), tasks_table(DEPTHS), models=MODELS, caps=(1, 2), attempts="auto",
                max_attempts=0)  # fmt: skip
    out = str(tmp_path / "d.csv")
    base = ["measure", str(tmp_path), "--models", "a", "-o", out]
    assert cli.main([*base, "--attempts", "auto", "--max-attempts", "0"]) == 2
    assert "--max-attempts must be an int >= 1, got 0" in capsys.readouterr().err
    assert cli.main([*base, "--attempts", "many"]) == 2
    assert "expected a positive integer or 'auto'" in capsys.readouterr().err
    # auto passes the checks and stops only at the missing task folders
    assert cli.main([*base, "--attempts", "auto", "--max-attempts", "2"]) == 1
    assert "no task folders found" in capsys.readouterr().err


# ---------------------------------------------------------------- the Harbor engine ---------
def write_tasks(root: Path, names) -> pl.DataFrame:
    from depthlab.io import load_tasks

    for name in names:
        (root / name / "environment").mkdir(parents=True)
        (root / name / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
        (root / name / "instruction.md").write_text("Do it.")
        (root / name / "task.toml").write_text('version = "1.0"\n[verifier]\ntimeout_sec = 60.0\n')
        (root / name / "tests").mkdir()
        (root / name / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    return load_tasks([root])


def round_plan(cells) -> pl.DataFrame:
    frame = pl.DataFrame(cells, schema=["task", "model", "cap", "attempts"], orient="row")
    return frame.with_columns(dataset=pl.lit("tasks")).select("dataset", "task", "model", "cap", "attempts")


def test_a_round_is_one_job_per_cap_shared_by_the_models_that_need_the_same_tasks(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", ["a", "b"])
    engine = HarborEngine(tmp_path / "jobs", base_url="http://127.0.0.1:9/v1", environment="daytona")
    plan = round_plan([("a", "p/a", 3, 1), ("b", "p/a", 3, 1), ("a", "p/b", 3, 1), ("b", "p/b", 3, 1),
                       ("b", "p/a", 10, 1), ("a", "p/b", 10, 1)])  # fmt: skip
    configs = {name: as_object(config) for name, config in engine.round_configs(plan, tasks, 4).items()}
    assert sorted(configs) == ["measure-r04__cap-003", "measure-r04__cap-010__part-1", "measure-r04__cap-010__part-2"]
    shared = configs["measure-r04__cap-003"]
    assert [agent["model_name"] for agent in shared["agents"]] == ["p/a", "p/b"]
    kwargs = shared["agents"][0]["kwargs"]
    assert {key: kwargs[key] for key in ("max_turns", "api_base", "guard")} == {
        "max_turns": 3, "api_base": "http://127.0.0.1:9/v1", "guard": "suspects"}  # fmt: skip
    assert "llm_kwargs" not in kwargs  # no --request-timeout: LiteLLM's own
    # a long instruction is sent as the local runner sends it: its limit, file and prompt
    assert kwargs["instruction_limit_bytes"] == HarnessConfig(cap=3).instruction_limit_bytes
    assert kwargs["long_instruction"].format(size=1, path="/f", excerpt="x").startswith("The instruction is 1 bytes")
    timed = HarborEngine(tmp_path / "jobs", base_url="http://127.0.0.1:9/v1", request_timeout=30.0)
    assert timed.round_configs(plan, tasks, 4)["measure-r04__cap-003"].agents[0].kwargs["llm_kwargs"] == {
        "timeout": 30.0
    }
    with pytest.raises(ValueError, match="request_timeout"):
        HarborEngine(tmp_path / "jobs", base_url=None, request_timeout=float("nan"))
    assert [(entry["path"], entry["task_names"]) for entry in shared["datasets"]] == [
        (str((tmp_path / "tasks").absolute()), ["a", "b"])
    ]
    assert shared["extra_instructions"] == stated_cap_instructions(3)
    assert shared["environment"]["type"] == "daytona"
    assert shared["jobs_dir"] == str((tmp_path / "jobs").absolute())
    parts = [configs[f"measure-r04__cap-010__part-{i}"] for i in (1, 2)]
    assert sorted((p["agents"][0]["model_name"], p["datasets"][0]["task_names"]) for p in parts) == [
        ("p/a", ["b"]),
        ("p/b", ["a"]),
    ]


def test_next_round_and_resume_read_the_jobs_folder(tmp_path):
    jobs = tmp_path / "jobs"
    for name in ("measure-r01__cap-002", "measure-r03__cap-005", "other-job"):
        (jobs / name).mkdir(parents=True)
    assert HarborEngine(jobs, base_url=None).next_round() == 4


def test_harbor_missing_or_outside_the_supported_range_is_one_clear_line(tmp_path):
    with pytest.raises(EngineError) as missing:
        find_harbor(str(tmp_path / "no-such-harbor"))
    assert INSTALL_HINT in str(missing.value)
    assert "Python >= 3.12" in str(missing.value)
    for version, accepted in (("0.25.9", False), ("0.27.0", False), ("0.26.4", True)):
        fake = tmp_path / f"harbor-{version}"
        fake.write_text(f"#!/bin/sh\necho {version}\n")
        fake.chmod(0o755)
        if accepted:
            assert find_harbor(str(fake)).version == version
        else:
            with pytest.raises(EngineError, match=rf"Harbor {version} at .* outside the supported range"):
                find_harbor(str(fake))


def test_harbors_version_is_asked_once_per_version_of_its_script(tmp_path):
    """Each engine made asks Harbor's version; Harbor's start costs a second or more of imports, so a script
    is asked once, and again when it is rewritten (a reinstall) and reports another version."""
    import os

    asked = tmp_path / "asked.txt"
    fake = tmp_path / "harbor"
    fake.write_text(f"#!/bin/sh\necho x >> {asked}\necho 0.26.1\n")
    fake.chmod(0o755)
    assert [find_harbor(str(fake)).version for _ in range(3)] == ["0.26.1"] * 3
    assert find_harbor(str(fake), env={**os.environ, "DEPTHLAB_UNRELATED": "1"}).version == "0.26.1"
    assert asked.read_text().count("x") == 1  # a variable that cannot change which Harbor starts: not asked again
    find_harbor(str(fake), env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert asked.read_text().count("x") == 2  # one that can: asked again
    fake.write_text(f"#!/bin/sh\necho x >> {asked}\necho 0.26.7\n")
    os.utime(fake, ns=(fake.stat().st_atime_ns, fake.stat().st_mtime_ns + 10**9))  # rewritten a second later
    assert find_harbor(str(fake)).version == "0.26.7"
    assert asked.read_text().count("x") == 3


def test_compose_project_is_harbors_name_for_a_trial():
    assert compose_project("Chain-R2__AbCdEfG__env") == "chain-r2__abcdefg__env"
    assert compose_project("_x.y") == "0_x-y"


def test_the_command_is_listed_and_checks_its_options(tmp_path, capsys):
    assert cli.main(["--help"]) == 0
    assert "measure" in capsys.readouterr().out
    out = str(tmp_path / "d.csv")
    assert cli.main(["measure", str(tmp_path), "--models", "a", "-o", out, "-n", "0"]) == 2
    assert "--concurrency must be an int >= 1, got 0" in capsys.readouterr().err
    assert cli.main(["measure", str(tmp_path), "--models", "a", "-o", str(tmp_path / "d.xlsx")]) == 2
    assert cli.main(["measure", str(tmp_path), "--models", "a", "-o", out]) == 1
    assert "no task folders found" in capsys.readouterr().err


def test_a_missing_harbor_stops_the_command_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-depthlab-units")
    tasks = tmp_path / "tasks"
    write_tasks(tasks, ["a"])
    args = ["measure", str(tasks), "--models", "a", "-o", str(tmp_path / "d.csv"), "--harbor", str(tmp_path / "nope")]
    assert cli.main([*args, "--jobs-dir", str(tmp_path / "jobs")]) == 1
    err = capsys.readouterr().err
    assert "Harbor not found" in err
    assert "pip install 'harbor>=0.26,<0.27'" in err
    assert not (tmp_path / "jobs").exists()


@pytest.mark.parametrize("engine", ["harbor", "local"])
def test_an_unset_key_stops_every_engine_before_the_preflight_and_names_the_variable(
    engine, tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("DEPTHLAB_UNITS_KEY", raising=False)
    tasks = tmp_path / "tasks"
    write_tasks(tasks, ["a"])
    jobs = tmp_path / "jobs"
    args = ["measure", str(tasks), "--models", "p/a", "-o", str(tmp_path / "d.csv"), "--engine", engine]
    args += ["--api-key-env", "DEPTHLAB_UNITS_KEY", "--jobs-dir", str(jobs), "--base-url", "http://127.0.0.1:9/v1"]
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    assert "the API key variable DEPTHLAB_UNITS_KEY is not set" in err
    assert not jobs.exists()  # no preflight, no round


def test_the_harbor_engine_refuses_an_unset_key_variable_instead_of_the_environments_key(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-someone-elses")
    monkeypatch.delenv("DEPTHLAB_UNITS_KEY", raising=False)
    engine = HarborEngine(tmp_path, base_url="http://127.0.0.1:9/v1", api_key_env="DEPTHLAB_UNITS_KEY")
    with pytest.raises(EngineError, match="DEPTHLAB_UNITS_KEY is not set"):
        engine.check()
    monkeypatch.setenv("DEPTHLAB_UNITS_KEY", "sk-mine")
    assert HarborEngine(tmp_path, base_url=None, api_key_env="DEPTHLAB_UNITS_KEY").env["OPENAI_API_KEY"] == "sk-mine"


@pytest.mark.harbor
@pytest.mark.parametrize("environment", ["daytona", "modal"])
def test_harbor_dry_run_accepts_a_cloud_rounds_configs(environment, tmp_path, harbor_python, harbor_env):
    """``harbor run --config FILE --dry-run`` validates the config, the agent kwargs and the tasks."""
    tasks = write_tasks(tmp_path / "tasks", ["a", "b"])
    engine = HarborEngine(tmp_path / "jobs", base_url="http://127.0.0.1:9/v1", environment=environment)
    plan = round_plan([("a", "p/a", 3, 1), ("b", "p/a", 3, 1), ("a", "openai/b", 3, 2)])
    configs = {name: as_object(config) for name, config in engine.round_configs(plan, tasks, 1).items()}
    harbor = str(harbor_python.parent / "harbor")
    # the environment's preflight only checks that its credentials are set; the dry run contacts no one
    env = {**harbor_env, "DAYTONA_API_KEY": "dry-run", "MODAL_TOKEN_ID": "dry-run", "MODAL_TOKEN_SECRET": "dry-run"}
    env["PYTHONPATH"] = engine.env["PYTHONPATH"]  # where Harbor imports depthlab's guarded agent from
    for name, config in list(configs.items())[: 2 if environment == "daytona" else 1]:  # each takes seconds
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(config))
        done = subprocess.run(
            [harbor, "run", "--config", str(path), "--dry-run", "--skip-credential-checks"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=300,
            check=False,
        )
        n_trials = config["n_attempts"] * len(config["agents"]) * len(config["datasets"][0]["task_names"])
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert f"Dry run OK — {n_trials} trial(s)" in " ".join(done.stdout.split()), done.stdout[-2000:]


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux's /proc")
def test_harbor_does_not_outlive_a_killed_depthlab(tmp_path):
    """The ``harbor`` child gets SIGTERM when its parent dies by SIGKILL, so no orphan keeps running a job."""
    import os
    import signal
    import sys
    import time

    script = (
        "import subprocess, sys, time\n"
        "from depthlab.engines.harbor import die_with_parent\n"
        "command = [sys.executable, '-c', 'import time; time.sleep(120)']\n"
        "child = subprocess.Popen(command, preexec_fn=die_with_parent)\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert _alive(child)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(10)
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _oracle_job(jobs: Path, name: str, rewards: dict[str, float], checksums: dict[str, str], environment: str) -> None:
    """A finished Harbor oracle job on disk: one trial per task with its reward (Harbor's result fields)."""
    job = jobs / name
    for index, (task, reward) in enumerate(rewards.items()):
        trial = job / f"{task}__T{index:06d}"
        trial.mkdir(parents=True)
        result = {"task_name": task, "exception_info": None, "verifier_result": {"rewards": {"reward": reward}}}
        (trial / "result.json").write_text(json.dumps(result))
    (job / "config.json").write_text("{}")
    (job / "result.json").write_text(json.dumps({"finished_at": "2026-12-01T00:00:00"}))
    meta = {"environment": environment, "kwargs": {}, "tasks": checksums}
    (job / "depthlab-oracle.json").write_text(json.dumps(meta))


def test_the_harbor_preflight_reruns_only_new_or_changed_tasks(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", ["a", "b", "c"])
    sums = dict(tasks.select("task", "checksum").iter_rows())
    jobs = tmp_path / "jobs"
    _oracle_job(jobs, "measure-oracle__old", {"a": 1.0, "b": 0.0, "c": 1.0}, sums, "docker")
    lines: list[str] = []
    fake = tmp_path / "harbor"  # any harbor call fails: a reuse must not need one
    fake.write_text('#!/bin/sh\n[ "$1" = --version ] && echo 0.26.0 && exit 0\nexit 1\n')
    fake.chmod(0o755)
    engine = HarborEngine(jobs, base_url=None, harbor=str(fake))
    engine.progress = False
    failures = engine.preflight(tasks, lines.append)
    assert failures.select("task", "reason").rows() == [("b", "the reference solution got reward 0.0")]
    assert "checked before" in lines[-1]
    # c changed since: only c runs again (the fake harbor fails, after the config names c alone)
    (tmp_path / "tasks" / "c" / "instruction.md").write_text("Do it differently.")
    changed = load_tasks([tmp_path / "tasks"])
    with pytest.raises(EngineError, match="harbor run --config failed"):
        engine.preflight(changed, lines.append)
    (config,) = jobs.glob("measure-oracle__*/depthlab-config.json")
    assert json.loads(config.read_text())["datasets"][0]["task_names"] == ["c"]
    assert "on 1 task(s)" in lines[-1]
    # another environment reuses nothing
    with pytest.raises(EngineError):
        HarborEngine(jobs, base_url=None, harbor=str(fake), environment="modal").preflight(tasks, lines.append)
    assert "on 3 task(s)" in lines[-1]


def test_resume_hands_interrupted_jobs_to_harbors_own_resume(tmp_path):
    """A job Harbor did not finish, or finished with cancelled trials (Ctrl-C), goes to
    ``harbor jobs resume``; a finished job does not; a job folder that never started is removed."""
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "harbor"
    fake.write_text(f'#!/bin/sh\n[ "$1" = --version ] && echo 0.26.0 && exit 0\necho "$@" >> {calls}\n')
    fake.chmod(0o755)
    jobs = tmp_path / "jobs"

    def job(name: str, finished: bool, exceptions: list[str | None]) -> Path:
        folder = jobs / name
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps({"n_attempts": 1, "agents": [{}], "datasets": []}))
        (folder / "result.json").write_text(json.dumps({"finished_at": "2026-12-01T00:00:00" if finished else None}))
        for index, exception in enumerate(exceptions):
            (folder / f"t__{index}").mkdir()
            info = {"exception_type": exception, "exception_message": ""} if exception else None
            result = {  # the fields Harbor 0.26 writes that the trials table reads
                "task_name": "t", "trial_name": f"t__{index}", "exception_info": info,
                "agent_info": {"name": "terminus-2", "version": "2", "model_info": {"name": "m", "provider": "openai"}},
                "config": {"trials_dir": str(folder), "agent": {"name": "terminus-2", "kwargs": {"max_turns": 2}}},
                "verifier_result": {"rewards": {"reward": 0.0}},
            }  # fmt: skip
            (folder / f"t__{index}" / "result.json").write_text(json.dumps(result))
        return folder

    done = job("measure-r01__cap-001", True, [None, None])
    cancelled = job("measure-r02__cap-002", True, [None, "CancelledError"])
    killed = job("measure-r02__cap-005", False, [None])
    (jobs / "measure-r03__cap-010").mkdir()  # made, then killed before Harbor wrote config.json
    lines: list[str] = []
    engine = HarborEngine(jobs, base_url=None, harbor=str(fake), environment="modal")
    engine.progress = False
    engine.resume(lines.append)
    resumed = calls.read_text().splitlines()
    assert resumed == [f"jobs resume --job-path {cancelled}", f"jobs resume --job-path {killed}"]
    assert done.name not in calls.read_text()
    assert not (jobs / "measure-r03__cap-010").exists()
    assert f"resuming the interrupted Harbor job {cancelled.name}: 1 trial(s) kept, 1 to redo" in lines


def test_trials_of_an_earlier_version_of_a_task_are_set_aside_and_their_cells_planned_again():
    """Issue 32, case 4: a task changed since its trials ran (D 3 -> 5) keeps no old evidence."""
    depths = {"t": {"p/a": 5, "p/b": 5}}
    engine = SimulatedEngine(depths)
    old = {"dataset": "d", "task": "t", "status": "pass", "n_input_tokens": 1, "n_output_tokens": 1,
           "cost_usd": 0.01, "task_checksum": "old"}  # fmt: skip
    engine.rows = [
        {**old, "model": model, "cap": cap, "status": "pass" if cap >= 3 else "fail", "source": f"old/{model}{cap}"}
        for model in MODELS
        for cap in (2, 3)
    ]
    tasks = tasks_table(["t"]).with_columns(checksum=pl.lit("new"))
    lines: list[str] = []
    result = measure(engine, tasks, models=MODELS, caps=(2, 3, 5), echo=lines.append)
    assert any("set aside: 4 trial(s) of 1 task(s) that changed since they ran" in line for line in lines)
    assert result.set_aside == 4
    assert engine.rounds, "the cells the old trials filled were planned again"
    assert result.depth.select("task", "depth", "status").rows() == [("t", 5, "solved")]
    assert "set aside: 4 trial(s)" in result.render()


def _harbor_trial(job: Path, name: str, **fields) -> Path:
    """A finished trial folder whose result.json is Harbor's shape (the writer's), with ``fields`` set."""
    from depthlab.io import harbor_writer

    trial = job / name
    (trial / "verifier").mkdir(parents=True)
    config = harbor_writer.trial_config(
        harbor_writer.task_config("tasks/t", None), name, job, harbor_writer.agent_config("terminus-2", "p/m"),
        job_id="j",
    )  # fmt: skip
    result = harbor_writer.trial_result(
        config, result_id="r", task_name="t", task_path="tasks/t", trial_dir=trial, source=None, task_checksum="c",
        agent=harbor_writer.agent_info("terminus-2", "1", "p/m"), agent_result=harbor_writer.agent_result(5, 0, 7),
        rewards={"reward": 1.0}, exception=None, started_at="2026-01-01T00:00:00Z",
        finished_at="2026-01-01T00:01:00Z",
        phases={"verifier": harbor_writer.phase("2026-01-01T00:00:30Z", "2026-01-01T00:00:40Z")},
    )  # fmt: skip
    (trial / "result.json").write_text(json.dumps({**harbor_writer.as_object(result), **fields}, indent=2))
    return trial


def test_the_verdicts_read_harbor_results_through_the_model(tmp_path):
    """A reward file written after the verifier ended is a forged grade; a trial stopped with no output token is an
    outage; a clean one and one the model cannot decode are left as they are (the loaders reject the latter)."""
    from depthlab.engines._harbor_guard import HARBOR_RESULT, OUTAGE, TAMPERED, judge_trials

    forged = _harbor_trial(tmp_path, "forged__1")
    (forged / "verifier" / "reward.txt").write_text("1\n")  # now: long after 00:00:40
    clean = _harbor_trial(tmp_path, "clean__1")
    timeout = {"exception_type": "AgentTimeoutError", "exception_message": "cut", "exception_traceback": "",
               "occurred_at": "2026-01-01T00:00:20"}  # fmt: skip
    _harbor_trial(
        tmp_path, "silent__1", exception_info=timeout, verifier_result=None,
        agent_result={"n_input_tokens": 5, "n_output_tokens": 0},
    )  # fmt: skip
    bad = _harbor_trial(tmp_path, "bad__1", verifier_result={"rewards": {"reward": "high"}})
    before = {trial.name: (trial / "result.json").read_text() for trial in (clean, bad)}
    original = json.loads((forged / "result.json").read_text())
    verdicts = {trial: (kind, reason) for trial, kind, reason in judge_trials(tmp_path)}
    assert set(verdicts) == {"forged__1", "silent__1"}
    assert verdicts["forged__1"][0] == TAMPERED
    assert "verifier/reward.txt was written" in verdicts["forged__1"][1]
    assert verdicts["silent__1"] == (OUTAGE, "the agent got no model answer (0 tokens) before AgentTimeoutError: "
                                             "AgentTimeoutError: cut")  # fmt: skip
    rewritten = json.loads((forged / "result.json").read_text())
    assert rewritten["exception_info"]["exception_type"] == TAMPERED
    assert {key: value for key, value in rewritten.items() if key != "exception_info"} == {
        key: value for key, value in original.items() if key != "exception_info"
    }
    assert json.loads((forged / HARBOR_RESULT).read_text()) == original
    assert {trial.name: (trial / "result.json").read_text() for trial in (clean, bad)} == before
    assert judge_trials(tmp_path) == []  # judged once
