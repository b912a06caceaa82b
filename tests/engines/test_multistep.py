"""Multi-step tasks on the local runner, as Harbor 0.26 runs them: a 2-step chain task FROM the real Debian
userland, real Docker, depthlab's oracle and a scripted model on 127.0.0.1 (multistep_helpers.py).

* the oracle runs every step's solution in order; a wrong first step stops the trial at its gate
  (the second step skipped), the trial reward is Harbor's ``mean`` over the steps that ran;
* the cap is the whole run's turns: each step's prompt states the turns left, a step's turns
  include terminus-2's confirmation reply, and the run passes at 5 turns, not at 4;
* a separate verifier runs in its own container built from tests/Dockerfile, seeing the agent's
  work only through the artifacts;
* what the runner cannot run as Harbor does is refused in one line naming ``--engine harbor``.
"""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl
import pytest
from engines_helpers import run_measure, scripted_server
from multistep_helpers import chains_policy, waiting_forger_policy, write_separate_verifier_task, write_two_step_task

import depthlab as dl
from depthlab.io.harbor_writer import cap_sentence
from depthlab.runner import ChatClient, HarnessConfig, JobDir, OracleAgent, TerminusAgent, load_task
from depthlab.runner.errors import UnsupportedTaskError
from depthlab.runner.multistep import run_task_trial

pytestmark = [pytest.mark.docker]


@pytest.fixture(scope="module")
def tasks(userland: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("multistep") / "tasks"
    write_two_step_task(root, userland)
    write_two_step_task(root, userland, name="ms-chain-wrong", wrong_first=True)
    write_separate_verifier_task(root, userland)
    return root


#: the tasks of :func:`tasks` that the oracles run (the local one and Harbor's), each once
ORACLE_TASKS = ("ms-chain", "ms-chain-wrong", "sep-verifier")


@pytest.fixture(scope="module")
def local_oracle(tasks, docker_client, tmp_path_factory) -> dict:
    """depthlab's oracle on every task of :func:`tasks`, once, in one job ``oracle``: each task's outcome, and
    the folder the loaders read (``jobs``)."""
    jobs = tmp_path_factory.mktemp("multistep-local")
    job = JobDir(jobs, "oracle", {})
    outcomes = {
        name: run_task_trial(load_task(tasks / name), OracleAgent(), job, docker_client=docker_client)
        for name in ORACLE_TASKS
    }
    return {"jobs": jobs, **outcomes}


def _result(outcome) -> dict:
    return json.loads((outcome.trial_dir / "result.json").read_text())


def test_the_oracle_runs_every_step_in_order_and_loads_as_harbors_format(local_oracle):
    right, wrong = local_oracle["ms-chain"], local_oracle["ms-chain-wrong"]
    result = _result(right)
    assert result["agent_result"] is None
    assert [step["step_name"] for step in result["step_results"]] == ["first", "second"]
    assert [step["verifier_result"]["rewards"] for step in result["step_results"]] == [{"reward": 1.0}] * 2
    assert right.rewards == {"reward": 1.0}
    assert right.failed_step is None
    assert (right.trial_dir / "steps" / "second" / "verifier" / "reward.txt").is_file()
    # the gate stops the trial after the first step: the second is not run, the mean is over step one
    wrong_result = _result(wrong)
    assert [step["step_name"] for step in wrong_result["step_results"]] == ["first"]
    assert wrong.rewards == {"reward": 0.0}
    assert wrong.failed_step == "1 first"
    steps = dl.load_steps(local_oracle["jobs"] / "oracle").sort(["task", "step_index"])
    by_task = {task: rows for task, rows in steps.group_by("task")}
    assert by_task[("ms-chain",)]["reward"].to_list() == [1.0, 1.0]
    assert by_task[("ms-chain-wrong",)]["status"].to_list() == ["fail", "skipped"]
    trials = dl.load_trials(local_oracle["jobs"] / "oracle").sort("task")
    assert trials.select("task", "status").rows() == [
        ("ms-chain", "pass"), ("ms-chain-wrong", "fail"), ("sep-verifier", "pass")
    ]  # fmt: skip


def test_the_cap_counts_turns_over_the_whole_run(tasks, docker_client, tmp_path):
    task = load_task(tasks / "ms-chain")
    with scripted_server(chains_policy) as server:
        outcomes = {}
        for cap in (4, 5):
            agent = TerminusAgent(ChatClient(server.url, "openai/m1", api_key_env=None), HarnessConfig(cap=cap))
            outcomes[cap] = run_task_trial(task, agent, JobDir(tmp_path, f"cap-{cap}", {}), docker_client=docker_client)
    # step one: read, copy (complete), confirm = 3 turns; step two needs 2 more
    assert outcomes[5].rewards == {"reward": 1.0}
    assert outcomes[5].n_turns == 5
    assert outcomes[4].rewards == {"reward": 0.5}
    assert outcomes[4].n_turns == 4
    assert outcomes[4].status == "fail"
    turns = [step["agent_result"]["metadata"]["n_episodes"] for step in _result(outcomes[5])["step_results"]]
    assert turns == [3, 2]
    # each step's prompt states the turns the run has left
    for step, left in (("first", 5), ("second", 2)):
        trajectory = json.loads((outcomes[5].trial_dir / "steps" / step / "agent" / "trajectory.json").read_text())
        assert cap_sentence(left).strip() in trajectory["steps"][0]["message"]
    trials = dl.load_trials([tmp_path / "cap-4", tmp_path / "cap-5"]).sort("cap")
    assert trials["n_turns"].to_list() == [4, 5]
    assert trials["cap"].to_list() == [4, 5]


def test_a_separate_verifier_sees_only_the_artifacts(local_oracle):
    outcome = local_oracle["sep-verifier"]
    assert outcome.exception is None, outcome.message
    assert outcome.rewards == {"reward": 1.0}


@pytest.mark.parametrize(
    ("toml", "what"),
    [
        ('[environment]\nnetwork_mode = "allowlist"\n', "allowlist"),
        ('[environment]\nmcp_servers = [{name = "s", transport = "stdio", command = "s"}]\n', "mcp_servers"),
        ('[verifier]\nuser = "tester"\n', "user"),
    ],
)
def test_what_the_runner_cannot_run_as_harbor_does_is_refused_naming_the_harbor_engine(tmp_path, toml, what):
    (tmp_path / "environment").mkdir()
    (tmp_path / "environment" / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "instruction.md").write_text("Do it.")
    (tmp_path / "steps" / "a").mkdir(parents=True)
    (tmp_path / "steps" / "a" / "instruction.md").write_text("Do a.")
    (tmp_path / "task.toml").write_text('schema_version = "1.4"\n' + toml)
    with pytest.raises(UnsupportedTaskError) as error:
        load_task(tmp_path)
    message = str(error.value)
    assert "\n" not in message
    assert "--engine harbor" in message
    assert what in message


def test_a_healthcheck_is_read_with_harbors_defaults_not_refused(tmp_path):
    """Harbor runs ``[environment.healthcheck]`` and ``[steps.healthcheck]`` (tests/engines/test_harbor_fidelity.py
    runs them on both engines); the runner reads them, with Harbor's defaults, and refuses a malformed one."""
    (tmp_path / "environment").mkdir()
    (tmp_path / "environment" / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "steps" / "a").mkdir(parents=True)
    (tmp_path / "steps" / "a" / "instruction.md").write_text("Do a.")
    toml = (
        'schema_version = "1.4"\n[environment.healthcheck]\ncommand = "test -f /ready"\nretries = 5\n'
        '[[steps]]\nname = "a"\n[steps.healthcheck]\ncommand = "true"\nstart_period_sec = 2.5\n'
    )
    (tmp_path / "task.toml").write_text(toml)
    task = load_task(tmp_path)
    check = task.healthcheck
    assert (check.command, check.retries, check.interval_sec) == ("test -f /ready", 5, 5.0)
    step = task.step_healthchecks["a"]
    assert (step.command, step.start_period_sec, step.retries, step.timeout_sec) == ("true", 2.5, 3, 30.0)
    (tmp_path / "task.toml").write_text(toml.replace("retries = 5", "retries = -1"))
    with pytest.raises(ValueError, match=r"\[environment.healthcheck\].retries must be a non-negative finite number"):
        load_task(tmp_path)


def test_the_merged_task_runs_every_steps_solution_and_tests_as_one(tasks, docker_client, tmp_path):
    from depthlab.io.task_merge import merge_steps

    merged = load_task(merge_steps(tasks / "ms-chain", tmp_path / "merged", dataset="mine"))
    assert not merged.multi_step
    assert merged.name == "depthlab/ms-chain-merged"
    oracle = run_task_trial(merged, OracleAgent(), JobDir(tmp_path, "oracle", {}), docker_client=docker_client)
    assert oracle.rewards == {"reward": 1.0, "segment_1": 1.0, "segment_2": 1.0}, oracle.message
    with scripted_server(chains_policy) as server:
        outcomes = {}
        for cap in (3, 4):
            agent = TerminusAgent(ChatClient(server.url, "openai/m1", api_key_env=None), HarnessConfig(cap=cap))
            outcomes[cap] = run_task_trial(
                merged, agent, JobDir(tmp_path, f"cap-{cap}", {}), docker_client=docker_client
            )
    # one conversation: read a, copy a, read b, copy b = 4 turns, no confirmation between
    assert outcomes[4].rewards["reward"] == 1.0
    assert outcomes[4].n_turns == 4
    # step 1 passed its gate, step 2 failed: Harbor's mean over the steps that ran, as the original trial gets
    assert outcomes[3].rewards == {"reward": 0.5, "segment_1": 1.0, "segment_2": 0.0}
    tasks_table = dl.load_tasks(tmp_path / "merged")
    assert tasks_table["labels"].str.json_path_match("$.merged_from").to_list() == ["mine/ms-chain"]


def test_the_local_preflight_runs_every_steps_solution_and_names_the_first_failing_step(tasks, docker_client, tmp_path):
    from depthlab.runner import preflight

    report = preflight(
        [tasks / "ms-chain", tasks / "ms-chain-wrong"], jobs_dir=tmp_path, docker_client=docker_client, use_cache=False
    )
    rows = {row.task.rsplit("/", 1)[-1]: row for row in report.rows}
    assert rows["ms-chain"].passed
    assert rows["ms-chain"].checked
    assert not rows["ms-chain-wrong"].passed
    assert rows["ms-chain-wrong"].reason.startswith("step 1 ('first') is the first that fails"), rows["ms-chain-wrong"]


@pytest.mark.harbor
def test_measure_gives_the_known_d_on_both_engines_counting_turns_over_the_whole_run(
    userland, measure_env, harbor_cmd, tmp_path
):
    from depthlab.io.task_merge import merge_steps

    tasks = tmp_path / "tasks"
    write_two_step_task(tasks, userland, name="ms-d5")
    merge_steps(tasks / "ms-d5", tasks, dataset="tasks")
    engines = ("local", "harbor")
    with scripted_server(chains_policy) as server:

        def measure(engine: str) -> subprocess.CompletedProcess[str]:
            args = [str(tasks), "--models", "openai/m1", "--caps", "3,4,5", "--base-url", server.url]
            args += ["--jobs-dir", str(tmp_path / f"jobs-{engine}"), "-o", str(tmp_path / f"{engine}.csv")]
            args += ["--no-progress", "-n", "2", "--engine", engine]
            args += ["--harbor", harbor_cmd] if engine == "harbor" else []
            return run_measure(args, measure_env, timeout=1500)

        # the two engines side by side (each mostly waits on its containers), as two users would run them
        with ThreadPoolExecutor(len(engines)) as pool:
            runs = dict(zip(engines, pool.map(measure, engines), strict=True))
    tables = {}
    for engine, done in runs.items():
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "reference solution fails" not in done.stdout + done.stderr  # both pass their oracle (every step's)
        tables[engine] = pl.read_csv(tmp_path / f"{engine}.csv").select("task", "depth").sort("task")
    # the steps: 3 turns (read, copy, confirmation) + 2; merged: 4 turns in one conversation
    assert dict(tables["local"].iter_rows()) == {"ms-d5": 5, "ms-d5-merged": 4}
    assert tables["harbor"].equals(tables["local"])
    harbor = dl.load_trials(tmp_path / "jobs-harbor").filter(pl.col("task") == "ms-d5")
    local = dl.load_trials(tmp_path / "jobs-local").filter(pl.col("task") == "ms-d5")
    for trials in (harbor, local):
        by_cap = dict(trials.filter(pl.col("cap").is_not_null()).select("cap", "n_turns").iter_rows())
        assert by_cap[5] == 5
        assert by_cap[4] == 4


@pytest.mark.harbor
def test_harbors_oracle_gives_the_local_runners_step_rewards_and_passes_a_separate_verifier(
    tasks, local_oracle, harbor_cmd, harbor_env, tmp_path
):
    # one Harbor job over the tasks folder (the three tasks), two trials at a time as Harbor runs them
    done = subprocess.run(
        [harbor_cmd, "run", "-p", str(tasks), "-a", "oracle", "-o", str(tmp_path / "harbor"), "-n", "2"],
        env=harbor_env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert len(list((tmp_path / "harbor").glob("*/*/result.json"))) == len(ORACLE_TASKS)
    local = local_oracle["jobs"]
    columns = ["task", "step_index", "step", "status", "reward"]
    harbor_steps = dl.load_steps(tmp_path / "harbor").select(columns).sort(columns[:2])
    local_steps = dl.load_steps(local).select(columns).sort(columns[:2])
    assert harbor_steps.equals(local_steps)
    assert harbor_steps["status"].to_list() == ["pass", "pass", "fail", "skipped"]
    trials = {
        where: dict(dl.load_trials(folder).select("task", "reward").iter_rows())
        for where, folder in (("harbor", tmp_path / "harbor"), ("local", local))
    }
    assert trials["harbor"] == trials["local"] == {"ms-chain": 1.0, "ms-chain-wrong": 0.0, "sep-verifier": 1.0}
    # each step's saved artifacts: /logs/artifacts is kept in the container from step to step on both engines,
    # so step two's hold what step one's solution published there
    (harbor_trial,) = (tmp_path / "harbor").glob("*/ms-chain__*")
    saved = {
        where: sorted(
            str(path.relative_to(trial / "steps"))
            for path in (trial / "steps").glob("*/artifacts/**/*")
            if path.is_file() and path.name != "manifest.json"
        )
        for where, trial in (("harbor", harbor_trial), ("local", local_oracle["ms-chain"].trial_dir))
    }
    assert (
        saved["harbor"]
        == saved["local"]
        == [
            "first/artifacts/logs/artifacts/first-step.txt",
            "second/artifacts/logs/artifacts/first-step.txt",
        ]
    )


# ---------------------------------------------------------------- issue 37, case 1: a forger across the steps
@pytest.mark.harbor
def test_a_waiter_left_by_an_earlier_step_forges_no_pass_on_either_engine(userland, measure_env, harbor_cmd, tmp_path):
    tasks = tmp_path / "tasks"
    write_two_step_task(tasks, userland, name="ms-forged")
    verdicts = {}
    for engine in ("local", "harbor"):
        out, jobs = tmp_path / f"{engine}.csv", tmp_path / f"jobs-{engine}"
        with scripted_server(waiting_forger_policy) as server:
            # cap 3: step two gets no turn (step one's 3 spent); cap 5: it answers once and confirms
            args = [str(tasks), "--models", "openai/m1", "--caps", "3,5", "--base-url", server.url, "--no-preflight"]
            args += ["--jobs-dir", str(jobs), "-o", str(out), "--no-progress", "--engine", engine]
            args += ["--harbor", harbor_cmd] if engine == "harbor" else []
            done = run_measure(args, measure_env, timeout=1500)
        table = pl.read_csv(out)
        assert table["depth"].is_null().all(), (engine, table, done.stderr[-3000:])  # no D from a forged pass
        trials = dl.load_trials([jobs], cache=False).filter(pl.col("cap").is_not_null())
        assert trials.height >= 1, done.stderr[-3000:]
        # the same verdict on both engines: step two's guard stopped the waiter before step two's tests, which
        # graded the step as its agent left it (a plain fail, not an invalid trial caught writing)
        assert set(trials["status"]) == {"fail"}, (engine, trials.select("cap", "status", "exception_message"))
        verdicts[engine] = set(trials.select("cap", "status").iter_rows())
        results = [json.loads(path.read_text()) for path in jobs.glob("*/*/result.json")]  # fill__* or measure-r*
        results = [result for result in results if result.get("step_results")]
        assert results
        assert {result["step_results"][1]["verifier_result"]["rewards"]["reward"] for result in results} == {0.0}
        if engine == "local":  # the runner records the stop in the step's agent metadata, under the guard's name
            records = [result["step_results"][1]["agent_result"]["metadata"] for result in results]
        else:
            guards = jobs.glob("*/*/steps/second/agent/depthlab-guard.json")
            records = [json.loads(path.read_text())["runs"][-1] for path in guards]
            assert all(record["done"] and not record["killed"] for record in records), records
        assert len(records) == len(results), records
        for record in records:
            assert any("/tmp/.w" in line for line in record["stopped_earlier_steps"]), (engine, record)
            assert "stopped_earlier_steps_error" not in record, record
    assert verdicts["local"] == verdicts["harbor"] == {(3, "fail"), (5, "fail")}
