"""Where the local runner once did not do what Harbor 0.26 does, run on both engines (issue 36).

The same tiny tasks FROM the Debian userland go through each engine's oracle preflight (the local
runner's, and Harbor's own ``oracle`` agent under ``harbor run``), and the trials they leave are read
by depthlab's loaders; every verdict must be the same on both:

1. tests that write no reward: Harbor records ``RewardFileNotFoundError`` with ``verifier_result`` null
   and ``reward_valid`` false; both engines' trials read as a counted fail (depthlab's stated variant,
   :mod:`depthlab.io.status`); an agent that deletes ``/logs/verifier`` has its work graded on both
   (Harbor alone would end it in ``DownloadVerifierDirError``: the guard makes the folder afresh).
   The reference solution runs with ``[solution.env]`` on both; one that exits non-zero is graded by its
   tests on both, its exit code in ``agent/exit-code.txt`` (Harbor's oracle).
2. ``[environment.healthcheck]`` and ``[steps.healthcheck]``: one that passes (after a start period
   whose failure does not count) lets the task pass; one that never passes is ``HealthcheckError`` and
   one whose command hangs past its timeout Harbor's ``RuntimeError``, both invalid, the step's
   stopping the trial before its agent;
3. the preflight's cache keys on the values ``${VAR}`` templates take from the host: a changed value
   runs the task again, an unchanged one is reused, and the value itself is never written by depthlab.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from engines_helpers import SOLVE_SH, reply, scripted_server, write_chain_task
from test_measure_e2e import run_measure

import depthlab as dl
from depthlab.engines import HarborEngine, LocalEngine

pytestmark = [pytest.mark.docker, pytest.mark.harbor]

ENGINES = ("local", "harbor")
#: The variable the host-substitution task's tests take from the host, and the value they need.
HOST_VAR = "DEPTHLAB_FIDELITY_JUDGE"
GOOD = "judge-ok-4c1f9a"

WRITE_ANSWER = "#!/bin/bash\necho ok > /app/answer.txt\n"
GRADE_ANSWER = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    '[ "$(cat /app/answer.txt 2>/dev/null)" = ok ] && echo 1 > /logs/verifier/reward.txt '
    "|| echo 0 > /logs/verifier/reward.txt\n"
)
# a first try that fails (and leaves the mark the tests look for), then passes: only a start period
# that does not count the failure lets it pass with retries = 1
LATE_READY = "test -f /tmp/hc-{mark} || {{ touch /tmp/hc-{mark}; exit 1; }}"
STARTS_LATE = (
    'command = "{command}"\ninterval_sec = 0.2\nretries = 1\ntimeout_sec = 10\n'
    "start_period_sec = 30\nstart_interval_sec = 0.3\n"
)
NEVER = 'command = "echo not yet; exit 3"\ninterval_sec = 0.2\nretries = 2\ntimeout_sec = 10\n'
HANGS = 'command = "sleep 60"\ninterval_sec = 0.2\nretries = 2\ntimeout_sec = 1\n'


def _task(
    root: Path, name: str, image: str, toml: str, *, tests: str = GRADE_ANSWER, solve: str = WRITE_ANSWER
) -> Path:
    task = root / name
    for folder in ("environment", "tests", "solution"):
        (task / folder).mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(f"FROM {image}\nWORKDIR /app\nSTOPSIGNAL SIGKILL\n")
    (task / "instruction.md").write_text("Write ok to /app/answer.txt.")
    (task / "tests" / "test.sh").write_text(tests)
    (task / "solution" / "solve.sh").write_text(solve)
    (task / "task.toml").write_text(
        f'schema_version = "1.4"\n[task]\nname = "depthlab/{name}"\n'
        "[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 30.0\n"
        f'[environment]\ncpus = 1\nmemory_mb = 512\nnetwork_mode = "public"\n{toml}'
    )
    return task


def _two_steps(root: Path, name: str, image: str, second: str) -> Path:
    """Two steps writing step-a/step-b; step 1's healthcheck starts late (its tests need its mark), step 2's is
    ``second``."""
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(f"FROM {image}\nWORKDIR /app\nSTOPSIGNAL SIGKILL\n")
    first = STARTS_LATE.format(command=LATE_READY.format(mark="first"))
    (task / "task.toml").write_text(
        f'schema_version = "1.4"\n[task]\nname = "depthlab/{name}"\n'
        f'[[steps]]\nname = "first"\nmin_reward = 1.0\n[steps.healthcheck]\n{first}'
        f'[[steps]]\nname = "second"\n[steps.healthcheck]\n{second}'
        "[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 30.0\n"
        '[environment]\ncpus = 1\nmemory_mb = 512\nnetwork_mode = "public"\n'
    )
    for step in ("first", "second"):
        folder = task / "steps" / step
        (folder / "tests").mkdir(parents=True)
        (folder / "solution").mkdir()
        (folder / "instruction.md").write_text(f"Write {step} to /app/{step}.txt.")
        (folder / "solution" / "solve.sh").write_text(f"#!/bin/bash\necho {step} > /app/{step}.txt\n")
        need = "[ -f /tmp/hc-first ] && " if step == "first" else ""
        (folder / "tests" / "test.sh").write_text(
            f'#!/bin/bash\nmkdir -p /logs/verifier\n{need}[ "$(cat /app/{step}.txt)" = {step} ] '
            "&& echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
        )
    return task


@pytest.fixture(scope="module")
def fidelity_tasks(userland, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fidelity") / "tasks"
    _task(root, "fid-noreward", userland, "", tests="#!/bin/bash\necho the tests ran and wrote nothing\n")
    nan = "#!/bin/bash\nmkdir -p /logs/verifier\necho nan > /logs/verifier/reward.txt\n"
    _task(root, "fid-nan-reward", userland, "", tests=nan)
    late = STARTS_LATE.format(command=LATE_READY.format(mark="env"))
    _task(
        root,
        "fid-hc-late",
        userland,
        f"[environment.healthcheck]\n{late}",
        tests=GRADE_ANSWER.replace('[ "$(cat', '[ -f /tmp/hc-env ] && [ "$(cat', 1),
    )
    _task(root, "fid-hc-never", userland, f"[environment.healthcheck]\n{NEVER}")
    _task(root, "fid-hc-hangs", userland, f"[environment.healthcheck]\n{HANGS}")
    solve_env = '[solution.env]\nANSWER = "${DEPTHLAB_FIDELITY_ANSWER:-ok}"\n'
    _task(root, "fid-solution-env", userland, solve_env, solve='#!/bin/bash\necho "$ANSWER" > /app/answer.txt\n')
    # the answer is written, then the script's last command fails: Harbor's oracle records the exit code and grades
    fails_last = WRITE_ANSWER + "sed -n p /solution/missing.sh\n"
    _task(root, "fid-solve-exits-2", userland, "", solve=fails_last)
    _two_steps(root, "fid-steps-hc", userland, STARTS_LATE.format(command=LATE_READY.format(mark="second")))
    _two_steps(root, "fid-steps-hc-never", userland, NEVER)
    return root


def _engine(engine: str, jobs: Path, request) -> LocalEngine | HarborEngine:
    if engine == "local":
        made: LocalEngine | HarborEngine = LocalEngine(jobs)
    else:
        made = HarborEngine(jobs, base_url=None, harbor=request.getfixturevalue("harbor_cmd"))
    made.progress = False
    return made


def _oracle_trials(jobs: Path) -> pl.DataFrame:
    folders = [*jobs.glob(".preflight/preflight__oracle__*"), *jobs.glob("measure-oracle__*")]
    return dl.load_trials(folders, cache=False).sort("task")


@pytest.fixture(scope="module")
def preflights(fidelity_tasks, harbor_env, tmp_path_factory, request) -> dict[str, dict]:
    """Each engine's oracle preflight on every task: its failures, its trials, its jobs folder."""
    tasks = dl.load_tasks([fidelity_tasks])
    found = {}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in harbor_env.items():
            patch.setenv(key, value)
        for engine in ENGINES:
            jobs = tmp_path_factory.mktemp(f"fidelity-{engine}") / "jobs"
            lines: list[str] = []
            failures = _engine(engine, jobs, request).preflight(tasks, lines.append)
            found[engine] = {"failures": failures, "trials": _oracle_trials(jobs), "jobs": jobs, "lines": lines}
    return found


def test_both_engines_leave_out_the_same_tasks_for_the_same_reasons(preflights):
    reasons = {}
    for engine, found in preflights.items():
        reasons[engine] = dict(found["failures"].select("task", "reason").iter_rows())
        left_out = ["fid-hc-hangs", "fid-hc-never", "fid-nan-reward", "fid-noreward", "fid-steps-hc-never"]
        assert sorted(reasons[engine]) == left_out, (engine, reasons[engine])
    for engine, got in reasons.items():
        assert got["fid-noreward"].startswith("RewardFileNotFoundError: "), (engine, got)
        assert got["fid-nan-reward"].startswith("VerifierOutputParseError: "), (engine, got)
        never = "HealthcheckError: Healthcheck failed after 2 consecutive retries: echo not yet; exit 3"
        assert got["fid-hc-never"] == never, (engine, got)
        assert got["fid-hc-hangs"] == "RuntimeError: Command timed out after 1 seconds", (engine, got)
        assert got["fid-steps-hc-never"].endswith(never), (engine, got)
        assert "step 2 ('second')" in got["fid-steps-hc-never"], (engine, got)


def test_both_engines_trials_read_the_same(preflights):
    """The passing healthchecks let their task pass (their tests need the mark the first, failed, try
    left), the others are invalid; tests with no reward are a counted fail on both engines; the oracle
    gets ``[solution.env]`` (its answer comes from there)."""
    expected = [
        ("fid-hc-hangs", "invalid", "RuntimeError"),
        ("fid-hc-late", "pass", None),
        ("fid-hc-never", "invalid", "HealthcheckError"),
        ("fid-nan-reward", "invalid", "VerifierOutputParseError"),
        ("fid-noreward", "fail", "RewardFileNotFoundError"),
        ("fid-solution-env", "pass", None),
        ("fid-solve-exits-2", "pass", None),
        ("fid-steps-hc", "pass", None),
        ("fid-steps-hc-never", "invalid", "HealthcheckError"),
    ]
    for engine, found in preflights.items():
        assert found["trials"].select("task", "status", "exception").rows() == expected, engine


def test_a_reference_solution_exiting_non_zero_is_graded_on_both_engines(preflights):
    """Harbor 0.26's oracle writes the exit code to ``agent/exit-code.txt``, raises nothing and runs the tests
    (``harbor/agents/oracle.py``); the local oracle does the same."""
    for engine, found in preflights.items():
        (trial,) = [path.parent for path in found["jobs"].rglob("fid-solve-exits-2__*/result.json")]
        assert (trial / "agent" / "exit-code.txt").read_text().strip() == "2", engine
        result = json.loads((trial / "result.json").read_text())
        assert result["exception_info"] is None, engine
        assert result["verifier_result"]["rewards"] == {"reward": 1.0}, engine


def test_a_failed_step_healthcheck_stops_the_trial_before_its_agent(preflights):
    for engine, found in preflights.items():
        (result,) = [json.loads(path.read_text()) for path in found["jobs"].rglob("fid-steps-hc-never__*/result.json")]
        first, second = result["step_results"]
        assert first["verifier_result"]["rewards"] == {"reward": 1.0}, engine
        assert second["exception_info"]["exception_type"] == "HealthcheckError", engine
        assert second["verifier_result"] is None, engine
        assert second.get("agent_execution") is None, engine  # no agent ran in the step


def test_harbor_records_no_reward_as_not_valid_and_depthlab_counts_it(preflights):
    """What Harbor 0.26 itself writes for tests that wrote no reward (the premise of the variant)."""
    (path,) = preflights["harbor"]["jobs"].glob("measure-oracle__*/fid-noreward__*/result.json")
    result = json.loads(path.read_text())
    assert result["verifier_result"] is None
    assert result["reward_valid"] is False
    assert result["exception_info"]["exception_type"] == "RewardFileNotFoundError"
    assert result["exception_info"]["policy"]["has_valid_reward"] is False


def test_a_nan_reward_is_refused_on_both_engines_and_never_written(preflights):
    """A reward file holding ``nan``: Harbor 0.26's verifier refuses it (``VerifierOutputParseError``, no verifier
    result), and so does the local runner's (issue 43); no result.json of either holds a reward that is not a
    number (a NaN a record did hold would be written null, as Harbor's pydantic writes it: the conformance test)."""
    for engine, found in preflights.items():
        (path,) = found["jobs"].rglob("fid-nan-reward__*/result.json")
        result = json.loads(path.read_text())
        assert result["exception_info"]["exception_type"] == "VerifierOutputParseError", engine
        assert result["verifier_result"] is None, engine
        assert result["reward_valid"] is False, engine


def test_job_stats_count_as_harbor_counts_on_both_engines(preflights):
    """Every job's result.json, Harbor's own and the local runner's: errored trials are those with any recorded
    exception (a step's too), and an eval's n_trials those whose reward Harbor counts (reward_valid, rewards
    recorded) (issue 43: the local runner counted its own way)."""
    for engine, found in preflights.items():
        jobs = [path.parent for path in found["jobs"].rglob("result.json") if (path.parent / "config.json").is_file()]
        jobs = [job for job in jobs if any(job.glob("*/result.json"))]
        assert jobs, engine
        for job in jobs:
            stats = json.loads((job / "result.json").read_text())["stats"]
            trials = [json.loads(path.read_text()) for path in job.glob("*/result.json")]
            errored = [
                t
                for t in trials
                if t["exception_info"] or any(s["exception_info"] for s in t.get("step_results") or [])
            ]
            counted = [
                t for t in trials if t["reward_valid"] and (t["verifier_result"] or {}).get("rewards") is not None
            ]
            assert stats["n_errored_trials"] == len(errored), (engine, job.name)
            assert sum(entry["n_trials"] for entry in stats["evals"].values()) == len(counted), (engine, job.name)


# ---------------------------------------------------------------- 3. the cache and the host's values
@pytest.mark.parametrize("engine", ENGINES)
def test_the_preflight_cache_keys_on_the_values_taken_from_the_host(
    engine, userland, harbor_env, request, tmp_path, monkeypatch
):
    root = tmp_path / "tasks"
    tests = (
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        f'[ "$JUDGE" = {GOOD} ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n'
    )
    _task(root, "fid-host-env", userland, f'[verifier.env]\nJUDGE = "${{{HOST_VAR}}}"\n', tests=tests)
    tasks = dl.load_tasks([root])
    for key, value in harbor_env.items():
        monkeypatch.setenv(key, value)
    jobs = tmp_path / "jobs"

    def preflight(value: str) -> tuple[list[tuple[str, str]], int]:
        monkeypatch.setenv(HOST_VAR, value)
        failures = _engine(engine, jobs, request).preflight(tasks, [].append)
        return failures.select("task", "reason").rows(), _oracle_trials(jobs).height

    assert preflight(GOOD) == ([], 1)
    assert preflight(GOOD) == ([], 1)  # the same value: reused, no new trial
    changed, n_trials = preflight("judge-other")
    assert n_trials == 2  # run again: the task's run is not the same
    assert [task for task, _ in changed] == ["fid-host-env"]
    assert changed[0][1].startswith("the reference solution got reward 0"), changed  # its tests saw the new value
    assert preflight(GOOD) == ([], 2)  # the first run's record still holds for the first value
    written = [
        path
        for path in jobs.rglob("*")
        if path.is_file() and (".preflight-cache" in path.parts or path.name == "depthlab-oracle.json")
    ]
    assert written
    for path in written:  # depthlab's records hold a digest, never the value
        text = path.read_text()
        assert GOOD not in text, path
        assert "judge-other" not in text, path


# ---------------------------------------------------------------- 1. an agent that deletes /logs/verifier
def _deleting_solver(messages, model):
    """Delete the verifier's folder, solve the chain in one command, say done (and confirm)."""
    if any(message.get("role") == "assistant" for message in messages):
        return reply(complete=True)
    solve = SOLVE_SH.split("\n", 1)[1].replace("\n", "; ").rstrip("; ")
    return reply(f"rm -rf /logs/verifier; {solve}\n", complete=True)


def test_an_agent_that_deletes_the_verifiers_folder_is_graded_on_both_engines(userland, measure_env, request, tmp_path):
    """Tests that write /logs/verifier/reward.txt without making the folder: Harbor alone would end the
    trial in DownloadVerifierDirError (an invalid, retried trial: the agent would decide its own cell);
    the local runner makes the folder afresh before the tests, and so now does the Harbor guard."""
    task = write_chain_task(tmp_path / "tasks", 2, userland)
    tests = task / "tests" / "test.sh"
    tests.write_text(tests.read_text().replace("mkdir -p /logs/verifier\n", ""))
    tables = {}
    for engine in ENGINES:
        extra = ["--engine", engine, "--no-preflight"]
        if engine == "harbor":
            extra += ["--harbor", request.getfixturevalue("harbor_cmd")]
        jobs, out = tmp_path / engine / "jobs", tmp_path / engine / "depth.csv"
        with scripted_server(_deleting_solver) as server:
            args = [str(task), "--models", "openai/m1", "--caps", "2,3", "--base-url", server.url]
            run = run_measure([*args, "--jobs-dir", str(jobs), "-o", str(out), "--no-progress", *extra], measure_env)
        assert run.returncode == 0, (engine, run.stderr[-3000:])
        trials = dl.load_trials([jobs], cache=False).filter(pl.col("cap").is_not_null())
        assert trials.select("status", "exception").unique().rows() == [("pass", None)], (engine, trials)
        tables[engine] = pl.read_csv(out).select("task", "depth", "status").rows()
        if engine == "harbor":
            (guard,) = list(jobs.glob("measure-r01__*/*/agent/depthlab-guard.json"))
            (entry,) = json.loads(guard.read_text())["runs"]
            assert entry["verifier_restored"] == "absent"
    assert tables["local"] == tables["harbor"] == [("measure-chain-r2", 2, "solved")]


def test_the_digest_tells_an_unset_variable_from_an_empty_one(tmp_path):
    """An unset variable with no default counts as unset in the digest (the run itself then fails as Harbor's)."""
    from depthlab.runner.verifier import host_env_digest

    task = tmp_path / "t"
    task.mkdir()
    (task / "task.toml").write_text(f'[environment.env]\nA = "${{{HOST_VAR}}}"\n[solution.env]\nB = "literal"\n')
    unset = host_env_digest(task, {})
    assert unset
    assert unset != host_env_digest(task, {HOST_VAR: ""})
    assert host_env_digest(task, {HOST_VAR: GOOD}) != unset
    (task / "task.toml").write_text('[environment.env]\nA = "literal"\n')
    assert host_env_digest(task, {HOST_VAR: GOOD}) == ""  # no template: the checksum alone keys the task
