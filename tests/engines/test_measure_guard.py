"""``depthlab measure`` attacked as a careless user, a flaky endpoint and a hostile agent would (issue 32).

Each numbered case of the issue is reproduced here with the real parts: Docker, Harbor 0.26 from its
side venv, chain tasks FROM the Debian userland, scripted models on 127.0.0.1.

3. two measurements on one jobs folder: the second is refused before any preflight, naming the first;
4. a changed task: its old trials are set aside and its cells planned again;
5. a hostile agent under Harbor: a pid limit, a disk bound, no setuid file left on the host, links
   never followed by the loaders;
6. task.toml values Harbor would misread: left out even under ``--no-preflight``;
7. a FIFO in place of a trial's result.json does not hang the resume.

Cases 1 and 2 (forged passes, outages) are the hostile and stalling models at the end of the file;
case 7's Harbor temp folders are checked on the killed measurement of test_measure_e2e.py.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import threading
import uuid
from pathlib import Path

import polars as pl
import pytest
from engines_helpers import (
    engine_flags,
    forging_policy,
    hanging_after_one_answer,
    measure_args,
    reply,
    run_measure,
    write_chain_task,
)

import depthlab as dl
from depthlab.engines import HarborEngine
from depthlab.engines._harbor_guard import DiskWatch, compose_project
from depthlab.engines._lock import jobs_folder_lock

pytestmark = [pytest.mark.docker]


# ---------------------------------------------------------------- 3. one measurement per jobs folder
@pytest.mark.parametrize("engine", ["local", pytest.param("harbor", marks=pytest.mark.harbor)])
def test_a_second_measure_on_a_busy_jobs_folder_is_refused_before_its_preflight(
    engine, chain_tasks, server, measure_env, request, tmp_path
):
    extra = engine_flags(engine, request)
    jobs, out = tmp_path / "jobs", tmp_path / "depth.csv"
    with jobs_folder_lock(jobs):  # the first measurement, holding the folder
        run = run_measure(measure_args(chain_tasks / "measure-chain-r2", jobs, out, server.url, *extra), measure_env)
    assert run.returncode == 1, run.stderr[-3000:]
    assert f"another depthlab measure is using the jobs folder {str(jobs)!r} (pid {os.getpid()} on" in run.stderr
    # nothing ran: no oracle job, no preflight folder, no trial
    assert sorted(path.name for path in jobs.iterdir()) == [".depthlab-measure.lock"]
    assert not out.exists()


# ---------------------------------------------------------------- 4. a task changed between runs
def test_a_changed_task_has_its_old_trials_set_aside_and_its_depth_measured_again(
    userland, server, measure_env, tmp_path
):
    """Measured at D = 3 (2 reads), the task's image is changed to 4 reads (D = 5): the rerun sets the
    old trial aside, plans its cells again, and the table says 5 (local engine, real Docker)."""
    task = write_chain_task(tmp_path / "tasks", 2, userland)
    jobs, out = tmp_path / "jobs", tmp_path / "depth.csv"
    args = measure_args(task, jobs, out, server.url, "--engine", "local", "--no-preflight", caps="3,5")
    first = run_measure(args, measure_env)
    assert first.returncode == 0, first.stderr[-3000:]
    assert pl.read_csv(out).select("depth", "status").rows() == [(3, "solved")]
    before = dl.load_trials([jobs], cache=False)
    dockerfile = task / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace("make_chain.sh 2\n", "make_chain.sh 4\n"))
    second = run_measure(args, measure_env)
    assert second.returncode == 0, second.stderr[-3000:]
    n_old = before.height
    assert f"set aside: {n_old} trial(s) of 1 task(s) that changed since they ran" in second.stderr
    assert f"set aside: {n_old} trial(s) of an earlier version of their task (not counted)" in second.stderr
    assert pl.read_csv(out).select("depth", "status").rows() == [(5, "solved")]
    after = dl.load_trials([jobs], cache=False)
    old = after.filter(pl.col("source").is_in(before["source"].to_list()))
    new = after.filter(~pl.col("source").is_in(before["source"].to_list()))
    assert old.height == n_old >= 1  # kept on disk, not counted
    assert new["task_checksum"].n_unique() == 1
    assert new["task_checksum"][0] != old["task_checksum"][0]
    assert (3, "fail") in zip(new["cap"], new["status"], strict=True)  # the old evidence said pass at 3
    assert (5, "pass") in zip(new["cap"], new["status"], strict=True)


# ---------------------------------------------------------------- 6. task.toml Harbor would misread
@pytest.mark.harbor
@pytest.mark.parametrize(
    ("line", "harbor", "reason"),
    [
        (
            "[agent]\ntimeout_sec = -5.0\n",
            "accepted",
            "[agent].timeout_sec must be a finite number of seconds > 0, got -5.0",
        ),
        (  # the tasks loader itself refuses it now (issue 26's task reader): never a task to measure
            "[agent]\ntimeout_sec = nan\n",
            "accepted",
            "[agent].timeout_sec must be a finite number, got nan",
        ),
        (
            '[environment]\nmemory = "lots"\n',
            "refused",
            "[environment].memory must be a size like '2G' or '512M', got 'lots'",
        ),
    ],
)
def test_task_values_harbor_would_misread_are_left_out_even_without_preflight(
    line, harbor, reason, harbor_cmd, server, measure_env, tmp_path, harbor_check_task
):
    task = tmp_path / "tasks" / "bad"
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n' + line)
    (task / "instruction.md").write_text("x")
    (task / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    # Harbor itself takes the value as a time (a fail with no model call), or aborts on it every time
    assert harbor_check_task(task).startswith(harbor)
    jobs, out = tmp_path / "jobs", tmp_path / "depth.csv"
    args = measure_args(task, jobs, out, server.url, "--engine", "harbor", "--harbor", harbor_cmd, "--no-preflight")
    before = server.count()
    run = run_measure(args, measure_env)
    assert run.returncode == 1, run.stderr[-3000:]
    refused_at_load = "task rejected" in run.stderr
    assert refused_at_load or "1 task(s) left out, the task's configuration would be misread" in run.stderr
    assert reason in run.stderr
    assert server.count() == before  # no model call
    assert not jobs.exists() or not [path for path in jobs.iterdir() if path.name.startswith("measure-")]


@pytest.fixture(scope="session")
def harbor_check_task(harbor_python, harbor_env):
    """``check(task_dir) -> str``: what Harbor 0.26's TaskConfig makes of task.toml ('accepted: ...' or its error)."""

    def check(task: Path) -> str:
        code = (
            "import sys, math; from harbor.models.task.config import TaskConfig\n"
            "try:\n"
            "    c = TaskConfig.model_validate_toml(open(sys.argv[1]).read())\n"
            "    print('accepted: agent timeout', c.agent.timeout_sec, 'memory_mb', c.environment.memory_mb)\n"
            "except Exception as e:\n"
            "    print('refused:', type(e).__name__)\n"
        )
        done = subprocess.run([str(harbor_python), "-c", code, str(task / "task.toml")], capture_output=True,
                              text=True, env=harbor_env, check=True)  # fmt: skip
        return done.stdout.strip()

    return check


# ---------------------------------------------------------------- 7. FIFO result.json
@pytest.mark.harbor
def test_a_fifo_in_place_of_a_result_does_not_hang_the_resume(harbor_cmd, measure_env, tmp_path):
    jobs = tmp_path / "jobs"
    job = jobs / "measure-r01__cap-002"
    (job / "measure-chain-r2__AbCdEf1").mkdir(parents=True)
    os.mkfifo(job / "measure-chain-r2__AbCdEf1" / "result.json")
    (job / "config.json").write_text(json.dumps({"job_name": job.name}))
    (job / "result.json").write_text(json.dumps({"id": "x", "finished_at": "2026-01-01T00:00:00Z"}))
    engine = HarborEngine(jobs, base_url="http://127.0.0.1:9/v1", harbor=harbor_cmd, env=measure_env)
    lines: list[str] = []
    worker = threading.Thread(target=engine.resume, args=(lines.append,), daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "resume hangs on a FIFO result.json"
    assert engine.load_trials().height == 0  # the loader refuses it (a FIFO is not a result)


# ---------------------------------------------------------------- 5. the disk bound under Harbor
def test_the_disk_watch_stops_a_harbor_trial_that_writes_past_its_bound(userland, tmp_path):
    """A container labelled as a Harbor trial's Compose project writes 300 MB against a bound of 100 MB."""
    trial = tmp_path / "job" / f"task-x__{uuid.uuid4().hex[:7]}"
    trial.mkdir(parents=True)
    project = compose_project(f"{trial.name}__env")
    name = f"depthlab-guard-{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["docker", "run", "-d", "--name", name, "--label", f"com.docker.compose.project={project}", userland,
         "sh", "-c", "dd if=/dev/zero of=/big bs=1M count=300 status=none; sleep 600"],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        watch = DiskWatch(trial.parent, {"task-x": 100}, interval=0)
        for _ in range(60):
            watch.check()
            if watch.stopped:
                break
            subprocess.run(["sleep", "1"], check=True)
        assert watch.stopped == [trial.name]
        state = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", name], capture_output=True,
                               text=True, check=True).stdout.strip()  # fmt: skip
        assert state == "false"
        assert "over the bound of 100 MB" in (trial / "depthlab-disk.txt").read_text()
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)


# ---------------------------------------------------------------- 5 (and 1): a hostile agent under Harbor
HOSTILE = (
    "cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max 2>/dev/null > /logs/agent/pids-max.txt; "
    "cp /bin/bash /logs/agent/rootbash; "
    "chmod 4755 /logs/agent/rootbash; ln -s /etc/hostname /logs/agent/host-link.json; "
    "nohup sh -c 'while true; do echo 1 > /logs/verifier/reward.txt; sleep 0.02; done' >/dev/null 2>&1 &\n"
)


def hostile_policy(messages, model):
    """Leave a setuid shell, a link to a host file and a background reward writer; never solve the task."""
    texts = [str(message.get("content")) for message in messages if message.get("role") != "assistant"]
    if len(texts) <= 1:
        return reply(HOSTILE)
    return reply(complete=True)


@pytest.fixture(scope="module")
def hostile_harbor(forged):
    """The hostile agent's measurement under Harbor: the forged pass's Harbor run (its agent is hostile)."""
    return forged["harbor"]


@pytest.mark.harbor
def test_harbor_trials_run_under_a_pid_limit(hostile_harbor):
    (found,) = hostile_harbor["jobs"].glob("measure-r01__*/*/agent/pids-max.txt")
    assert found.read_text().strip() == "1024"


@pytest.mark.harbor
def test_no_setuid_file_is_left_and_no_link_is_followed(hostile_harbor):
    jobs = hostile_harbor["jobs"]
    (shell,) = jobs.glob("measure-r01__*/*/agent/rootbash")
    assert not shell.stat().st_mode & (stat.S_ISUID | stat.S_ISGID)  # the agent made it 4755
    (link,) = jobs.glob("measure-r01__*/*/agent/host-link.json")
    assert link.is_symlink()
    from depthlab.io._files import Reject, read_bytes

    with pytest.raises(Reject, match=r"a symbolic link .* not followed"):
        read_bytes(str(link), [])


# ---------------------------------------------------------------- 2. an endpoint that stalls or hangs
def stalling_policy(messages, model):
    """Accept the request and never answer within the agent's time (an outage, not the model's fail)."""
    import time

    time.sleep(90)
    return reply(complete=True)


#: the models of the outage measurement: one endpoint per model, both down in their own way
STALLING, HANGING = "openai/m1", "openai/m2"


def outage_policy(messages, model):
    """``m1``'s endpoint stalls from its first request; ``m2``'s answers once, then hangs."""
    policy = hanging_after_one_answer if model.endswith(HANGING.rsplit("/", 1)[1]) else stalling_policy
    return policy(messages, model)


@pytest.fixture(scope="module", params=["local", pytest.param("harbor", marks=pytest.mark.harbor)])
def outage(request, userland, measure_env, tmp_path_factory):
    """Measure the 2-read chain task with both models against :func:`outage_policy`, two trials at a time:
    one measurement per engine that the stalling and the hanging endpoint's tests read."""
    from engines_helpers import scripted_server

    engine = request.param
    work = tmp_path_factory.mktemp(f"outage-{engine}")
    task = write_chain_task(work / "tasks", 2, userland)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("[agent]\ntimeout_sec = 120.0", "[agent]\ntimeout_sec = 20.0"))
    extra = ["--no-preflight", "-n", "2", *engine_flags(engine, request)]
    jobs, out = work / "jobs", work / "depth.csv"
    with scripted_server(outage_policy) as server:
        args = measure_args(task, jobs, out, server.url, *extra, models=f"{STALLING},{HANGING}")
        run = run_measure(args, measure_env, timeout=600)
    trials = dl.load_trials([jobs], cache=False).filter(pl.col("cap").is_not_null())
    return {"engine": engine, "run": run, "out": out, "trials": trials}


def trial_of(outage: dict, model: str) -> pl.DataFrame:
    """The outage measurement's round 1 stopped with nothing counted; the one trial of ``model``."""
    run = outage["run"]
    assert run.returncode == 1, run.stderr[-3000:]
    assert "round 1 recorded no valid trial, nothing was counted" in run.stderr
    assert "round 2" not in run.stderr
    table = pl.read_csv(outage["out"])
    assert table.select("task", "status").rows() == [("measure-chain-r2", "incomplete")]  # not "unsolved"
    assert outage["trials"].height == 2, outage["trials"]
    trials = outage["trials"].filter(pl.col("model").str.ends_with(model.rsplit("/", 1)[1]))
    assert trials["status"].to_list() == ["invalid"]
    return trials


def test_a_stalling_endpoint_is_an_outage_that_stops_the_round_not_a_fail(outage):
    trial_of(outage, STALLING)


def test_an_endpoint_that_hangs_after_its_first_answer_is_an_outage_on_both_engines(outage):
    trials = trial_of(outage, HANGING)
    if outage["engine"] == "harbor":
        assert trials["n_output_tokens"].to_list()[0] > 0  # one answer came: "0 tokens" alone missed this outage
        (message,) = trials["exception_message"].to_list()
        assert "the endpoint had not answered the agent's request for" in message, message
        assert "1 answer(s) before" in message, message


# ---------------------------------------------------------------- 1. a forged pass, on both engines
@pytest.fixture(scope="module")
def forged(chain_tasks, measure_env, tmp_path_factory, request):
    from engines_helpers import scripted_server

    runs = {}
    for engine in ("local", "harbor"):
        work = tmp_path_factory.mktemp(f"forged-{engine}")
        extra = ["--no-preflight", *engine_flags(engine, request)]
        # under Harbor the forger is the hostile agent (its reward writer and more): one run for cases 1 and 5
        with scripted_server(hostile_policy if engine == "harbor" else forging_policy) as server:
            run = run_measure(measure_args(chain_tasks / "measure-chain-r2", work / "jobs", work / "depth.csv",
                                           server.url, *extra), measure_env)  # fmt: skip
        runs[engine] = {"run": run, "jobs": work / "jobs", "out": work / "depth.csv"}
    return runs


@pytest.mark.harbor
def test_a_background_reward_writer_is_no_pass_on_either_engine(forged):
    tables = {}
    for engine, found in forged.items():
        assert found["run"].returncode == 1, found["run"].stderr[-3000:]  # stopped: no valid trial
        assert "round 1 recorded no valid trial, nothing was counted: VerifierTamperedError" in found["run"].stderr
        tables[engine] = pl.read_csv(found["out"]).select("task", "depth", "status")
        trials = dl.load_trials([found["jobs"]], cache=False).filter(pl.col("cap").is_not_null())
        assert trials.height >= 1
        assert set(trials["status"]) == {"invalid"}, trials.select("status", "exception")
        assert set(trials["exception"]) == {"VerifierTamperedError"}
    assert tables["local"].rows() == tables["harbor"].rows() == [("measure-chain-r2", None, "incomplete")]


@pytest.mark.harbor
def test_under_harbor_the_guard_killed_the_writer_and_says_why(forged):
    jobs = forged["harbor"]["jobs"]
    trials = dl.load_trials([jobs], cache=False).filter(pl.col("cap").is_not_null())
    for message in trials["exception_message"].to_list():
        assert "a process the agent left kept writing the verifier's folder after the agent's run" in message
        assert "reward.txt" in message
    for path in jobs.glob("measure-r01__*/*/agent/depthlab-guard.json"):
        (run,) = json.loads(path.read_text())["runs"]
        assert any("/logs/verifier/reward.txt" in line for line in run["killed"]), run
        assert run["tests_before"] == run["tests_after"]
    # Harbor's own grade is kept beside the verdict: the writer's reward, not the tests'
    for path in jobs.glob("measure-r01__*/*/depthlab-harbor-result.json"):
        assert json.loads(path.read_text())["exception_info"] is None


# ---------------------------------------------------------------- issue 37, case 4: a kill -9 and a rerun on Harbor
@pytest.mark.harbor
def test_resume_removes_every_container_of_the_job_and_keeps_harbors_own_exception(userland, harbor_cmd, tmp_path):
    """A trial Harbor wrote a result.json for, then was killed before its teardown: its containers and network
    are removed by the rerun, and its exception (Harbor's, no grade) is not read as a forged grade."""
    from depthlab.engines._harbor_guard import GUARDED_AGENT, HARBOR_RESULT

    job = tmp_path / "jobs" / "measure-r01__cap-002"
    trial = job / "measure-chain-r2__Kil9Ab1"
    (trial / "agent").mkdir(parents=True)
    moment = "2026-12-02T03:00:00.000000"
    (job / "config.json").write_text(json.dumps({"job_name": job.name, "n_attempts": 1, "agents": [{}]}))
    (job / "result.json").write_text(json.dumps({"started_at": moment, "finished_at": moment, "n_total_trials": 1}))
    harbors = {
        "task_name": "measure-chain-r2", "trial_name": trial.name,
        "config": {"agent": {"import_path": GUARDED_AGENT, "model_name": "openai/m1", "kwargs": {"max_turns": 2}}},
        "agent_info": {"name": "terminus-2", "version": "2.0.0"}, "agent_result": {"n_output_tokens": 12},
        "verifier_result": None, "started_at": moment, "finished_at": moment,
        "exception_info": {"exception_type": "RuntimeError", "exception_message": "Event loop is closed",
                           "exception_traceback": "", "occurred_at": moment},
    }  # fmt: skip
    (trial / "result.json").write_text(json.dumps(harbors))
    project = compose_project(f"{trial.name}__env")
    compose = tmp_path / "compose.json"
    compose.write_text(json.dumps({"services": {"main": {"image": userland, "command": ["sleep", "600"]}}}))
    up = subprocess.run(["docker", "compose", "-p", project, "-f", str(compose), "up", "-d"], capture_output=True,
                        text=True, timeout=300, check=False)  # fmt: skip
    assert up.returncode == 0, up.stderr

    def left() -> tuple[list[str], list[str]]:
        label = f"label=com.docker.compose.project={project}"
        containers = subprocess.run(["docker", "ps", "-aq", "--filter", label], capture_output=True, text=True)
        networks = subprocess.run(["docker", "network", "ls", "-q", "--filter", label], capture_output=True, text=True)
        return containers.stdout.split(), networks.stdout.split()

    try:
        assert all(left())
        lines: list[str] = []
        HarborEngine(tmp_path / "jobs", base_url="http://127.0.0.1:9/v1", harbor=harbor_cmd).resume(lines.append)
        assert left() == ([], [])
        assert any("removed what a killed run left of 1 trial(s) of measure-r01__cap-002" in line for line in lines)
        result = json.loads((trial / "result.json").read_text())
        assert result["exception_info"]["exception_type"] == "RuntimeError"  # Harbor's own, not "tampered"
        assert not (trial / HARBOR_RESULT).exists()
        (row,) = dl.load_trials([tmp_path / "jobs"], cache=False).select("exception", "status").rows()
        assert row[0] == "RuntimeError"
    finally:
        subprocess.run(["docker", "compose", "-p", project, "-f", str(compose), "down"], capture_output=True)


# ---------------------------------------------------------------- issue 37, case 8: a long instruction
@pytest.mark.parametrize("engine", ["local", pytest.param("harbor", marks=pytest.mark.harbor)])
def test_a_long_instruction_is_sent_as_a_file_and_said_so_on_both_engines(
    engine, userland, measure_env, request, tmp_path
):
    from engines_helpers import reading_policy, scripted_server

    task = write_chain_task(tmp_path / "tasks", 2, userland)
    instruction = task / "instruction.md"
    instruction.write_text(instruction.read_text() + "\n\n" + "A line of background the task does not need.\n" * 3000)
    size = instruction.stat().st_size
    extra = ["--no-preflight", *engine_flags(engine, request)]
    firsts: list[str] = []

    def policy(messages, model):
        if len(messages) <= 2:  # the opening request (a system message, if any, and the first prompt)
            firsts.append("\n".join(str(message.get("content")) for message in messages))
        return reading_policy(messages, model)

    jobs, out = tmp_path / "jobs", tmp_path / "depth.csv"
    with scripted_server(policy) as server:
        run = run_measure(measure_args(task, jobs, out, server.url, *extra, caps="3"), measure_env, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"note: the instruction of measure-chain-r2 is {size} bytes, over 65536" in run.stderr
    assert "/logs/agent/instruction.md (on both engines)" in run.stderr
    assert pl.read_csv(out)["depth"].to_list() == [3]  # the agent read the beginning and did the task
    first = max((text for text in firsts if text), key=len)
    assert len(first) < 12_000, len(first)  # not the 138 KB instruction
    assert "too long to repeat in every message. It is in the file /logs/agent/instruction.md" in first
    assert "You have at most 3 turns" in first  # the stated cap stays in the prompt
    if engine == "harbor":  # /logs/agent is the trial's agent folder: the file the agent read, and the guard's note
        (trial,) = [path.parent for path in jobs.rglob("result.json") if (path.parent / "agent").is_dir()]
        assert (trial / "agent" / "instruction.md").read_text().startswith("The file /data/start begins a chain")
        (run_record,) = json.loads((trial / "agent" / "depthlab-guard.json").read_text())["runs"]
        assert run_record["instruction_bytes"] == len(instruction.read_text().strip().encode())
        assert run_record["prompt_chars"] < 3000
