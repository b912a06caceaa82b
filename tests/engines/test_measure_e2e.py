"""``depthlab measure`` end to end, on both engines: chain tasks of known depth FROM the real Debian
userland, a scripted model on 127.0.0.1 that reads each output, real Docker, real Harbor 0.26.

* ``--engine harbor``: Harbor's orchestrator, its docker environment (Compose v2) and its real
  terminus-2 agent, depthlab's job configs; the first run is killed with SIGKILL (depthlab,
  Harbor and its docker compose children at once, as a lost machine) in the middle of round 1,
  the same command then finishes it: D = 3 and 5, no trial duplicated, no container left.
* ``--engine local``: depthlab's runner, the same tasks and policy, killed in round 1 and rerun the
  same way: the same depth table, no duplicated trial. One measurement per engine (``once_per_run``):
  every test of an engine reads its killed and resumed run.
* An endpoint that is down: every trial invalid, a clear stop, nothing counted.

Each measurement is two rounds (cap 2, then caps 3 and 5): 12 capped trials and 2 oracle trials.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import polars as pl
import pytest
from engines_helpers import CAPS, MEASURE, MODELS, engine_flags, measure_args, run_measure

import depthlab as dl
from depthlab.engines._harbor_guard import compose_project, harbor_temp_leftovers

pytestmark = [pytest.mark.docker, pytest.mark.harbor]

EXPECTED = {"measure-chain-r2": 3, "measure-chain-r4": 5}


def both_models_args(tasks: Path, jobs: Path, out: Path, url: str, *extra: str) -> list[str]:
    """The measurement of this file: both models, the ladder of :data:`CAPS`, two trials at a time."""
    return measure_args(tasks, jobs, out, url, "-n", "2", *extra, models=MODELS, caps=CAPS)


def kill_when(args: list[str], env: dict[str, str], ready, timeout: float = 600) -> subprocess.Popen[str]:
    """Start ``depthlab measure`` in its own process group; SIGKILL the whole group once ``ready()``."""
    process = subprocess.Popen(
        [*MEASURE, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    deadline = time.monotonic() + timeout
    while not ready():
        if process.poll() is not None:
            pytest.fail(f"measure ended before the kill (exit {process.returncode}): {process.stdout.read()[-3000:]}")
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail("the moment to kill never came")
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)
    return process


def depth_of(path: Path) -> dict[str, int | None]:
    table = pl.read_csv(path)
    assert table["status"].to_list() == ["solved"] * table.height, table
    return dict(table.select("task", "depth").iter_rows())


def capped_trials(jobs: Path) -> pl.DataFrame:
    trials = dl.load_trials([jobs], cache=False)
    return trials.filter(pl.col("cap").is_not_null())


def assert_no_duplicate(trials: pl.DataFrame) -> None:
    per_cell = trials.group_by("task", "model", "cap").len()
    assert per_cell["len"].max() == 1, per_cell.filter(pl.col("len") > 1)
    # every planned cell of the two rounds is there: cap 2, 3 and 5 of both tasks and models
    assert per_cell.height == 2 * 2 * 3
    assert (trials["status"] != "invalid").all()


def compose_projects() -> set[str]:
    done = subprocess.run(
        [
            "docker",
            "ps",
            "-a",
            "--filter",
            "label=com.docker.compose.project",
            "--format",
            '{{.Label "com.docker.compose.project"}}',
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return {line for line in done.stdout.split() if line.startswith("measure-chain-r")}


def project_images(project: str) -> list[str]:
    """The image Docker Compose built for ``project``'s service ``main`` (a Harbor trial's image)."""
    done = subprocess.run(
        ["docker", "images", "-q", "--filter", f"reference={project}-main"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


# ---------------------------------------------------------------- Harbor --------------------
def measured(record: dict) -> dict:
    """A measure's record (``once_per_run``, tests/conftest.py: once per test run, also under pytest-xdist)
    with its run as a ``CompletedProcess`` and its paths as paths."""
    result = dict(record)
    result["run"] = subprocess.CompletedProcess([], result.pop("returncode"), "", result.pop("stderr"))
    return {key: Path(value) if key in {"out", "jobs"} else value for key, value in result.items()}


@pytest.fixture(scope="module")
def harbor_measured(chain_tasks, server, harbor_cmd, measure_env, once_per_run):
    """Measure with Harbor, SIGKILL everything in the middle of round 1, then run the same command again."""
    return measured(
        once_per_run("harbor-measure", lambda work: _harbor_measure(work, chain_tasks, server, harbor_cmd, measure_env))
    )


def _harbor_measure(work: Path, chain_tasks: Path, server, harbor_cmd: str, measure_env: dict) -> dict:
    jobs, out = work / "jobs", work / "depth.csv"
    args = both_models_args(chain_tasks, jobs, out, server.url, "--engine", "harbor", "--harbor", harbor_cmd)
    round_one = jobs / "measure-r01__cap-002"
    before = compose_projects()

    def one_done_one_running() -> bool:
        """A trial finished and another one's containers are up (what a lost machine leaves behind)."""
        if not any(round_one.glob("*/result.json")):
            return False
        running = [
            path.name for path in round_one.glob("*__*") if path.is_dir() and not (path / "result.json").exists()
        ]
        up = compose_projects()
        # docker ps is slow under load: a trial may have finished while it ran, so look at its result again
        return any(
            compose_project(f"{name}__env") in up and not (round_one / name / "result.json").exists()
            for name in running
        )

    started = time.monotonic()
    kill_when(args, measure_env, one_done_one_running)
    # what the killed Harbor could not clean up: its own trials' projects only (another worker's module may be
    # running trials of the same tasks meanwhile)
    own = {compose_project(f"{path.name}__env") for path in round_one.glob("*__*") if path.is_dir()}
    left = (compose_projects() - before) & own
    left_images = sorted(image for project in left for image in project_images(project))
    interrupted = [path.name for path in round_one.iterdir() if path.is_dir() and not (path / "result.json").exists()]
    kept = sorted(path.parent.name for path in round_one.glob("*/result.json"))
    temp_left = [str(path) for path in harbor_temp_leftovers(jobs)]  # Harbor's Compose overrides in /tmp
    second = run_measure(args, measure_env)
    return {
        "returncode": second.returncode,
        "stderr": second.stderr,
        "out": str(out),
        "jobs": str(jobs),
        "left": sorted(left),
        "left_images": left_images,
        "interrupted": interrupted,
        "kept": kept,
        "temp_left": temp_left,
        "temp_after": [str(path) for path in harbor_temp_leftovers(jobs)],
        "seconds": time.monotonic() - started,
    }


def test_harbor_engine_gives_d_3_and_5_after_a_kill(harbor_measured):
    run = harbor_measured["run"]
    assert run.returncode == 0, run.stderr[-4000:]
    assert depth_of(harbor_measured["out"]) == EXPECTED
    assert "resuming the interrupted Harbor job measure-r01__cap-002" in run.stderr
    assert "tasks: 2 solved" in run.stderr


def test_harbor_resume_kept_the_done_trials_and_duplicated_none(harbor_measured):
    trials = capped_trials(harbor_measured["jobs"])
    assert_no_duplicate(trials)
    # Harbor's resume kept the trials finished before the kill, and redid the interrupted ones
    names = set(trials["trial"].to_list())
    assert set(harbor_measured["kept"]) <= names
    assert harbor_measured["interrupted"]
    assert not set(harbor_measured["interrupted"]) & names
    # the kill left the interrupted trials' containers running; the resume removed them
    assert harbor_measured["left"]
    assert not compose_projects() & set(harbor_measured["left"])
    # and their images (Harbor builds one per trial and removes it at the trial's end)
    assert harbor_measured["left_images"]
    assert not [image for project in harbor_measured["left"] for image in project_images(project)]


def test_harbors_temp_folders_of_killed_trials_are_removed_by_the_rerun(harbor_measured):
    """Issue 32, case 7: a group kill leaves Harbor's temporary Compose folders; the next run removes them."""
    assert harbor_measured["temp_left"]
    assert harbor_measured["temp_after"] == []
    assert not [path for path in harbor_measured["temp_left"] if Path(path).exists()]


def test_harbor_jobs_are_where_harbor_and_depthlab_read_them(harbor_measured, harbor_check, harbor_viewer):
    jobs = harbor_measured["jobs"]
    names = sorted(path.name for path in jobs.iterdir() if path.is_dir() and not path.name.startswith("."))
    assert names == [
        next(name for name in names if name.startswith("measure-oracle__")),
        "measure-r01__cap-002",
        "measure-r02__cap-003",
        "measure-r02__cap-005",
    ]
    errors = harbor_check([jobs / "measure-r02__cap-005"])
    assert {path: error for path, error in errors.items() if error} == {}
    config = json.loads((jobs / "measure-r02__cap-005" / "config.json").read_text())
    assert [agent["model_name"] for agent in config["agents"]] == MODELS.split(",")
    assert {agent["kwargs"]["max_turns"] for agent in config["agents"]} == {5}
    assert "sk-depthlab" not in json.dumps(config)  # the key stays in the environment
    with harbor_viewer(jobs) as view:  # Harbor's viewer lists the same jobs (not the configs folder)
        listed = view.api("/api/jobs?page_size=100")["items"]
    assert sorted(job["name"] for job in listed) == names
    round_two = next(job for job in listed if job["name"] == "measure-r02__cap-005")
    # terminus-2 runs as depthlab's guarded subclass, named by import_path (a registered name would win
    # over it in Harbor's factory), so the job's listing names no registered agent
    assert (round_two["agents"], round_two["models"]) == ([], ["m1", "m2"])
    assert {agent["import_path"] for agent in config["agents"]} == {"depthlab_guard:GuardedTerminus2"}
    # depthlab depth on the jobs folder reads the same table
    from depthlab import cli

    out = jobs.parent / "depth-again.csv"
    assert cli.main(["depth", str(jobs), "--models", MODELS, "--caps", CAPS, "-o", str(out)]) == 0
    assert depth_of(out) == EXPECTED


# ---------------------------------------------------------------- local ---------------------
@pytest.fixture(scope="module")
def local_measured(chain_tasks, server, docker_client, measure_env, once_per_run):
    """Measure with the local engine, SIGKILL it once a trial of round 1 is done, then run the same command
    again: the measurement the local tests and the comparison with Harbor read (one run, not a clean run
    and a killed one)."""

    def compute(work: Path) -> dict:
        jobs, out = work / "jobs", work / "depth.csv"
        args = both_models_args(chain_tasks, jobs, out, server.url, "--engine", "local")

        def one_trial_done() -> bool:
            return any(jobs.glob("fill__*__cap2/*/result.json"))

        started = time.monotonic()
        kill_when(args, measure_env, one_trial_done)
        kept = sorted(path.parent.name for path in jobs.glob("fill__*/*/result.json"))
        run = run_measure(args, measure_env)
        return {"returncode": run.returncode, "stderr": run.stderr, "out": str(out), "jobs": str(jobs),
                "kept": kept, "seconds": time.monotonic() - started}  # fmt: skip

    return measured(once_per_run("local-measure", compute))


def test_local_engine_gives_d_3_and_5_after_a_kill(local_measured):
    run = local_measured["run"]
    assert run.returncode == 0, run.stderr[-4000:]
    assert depth_of(local_measured["out"]) == EXPECTED


def test_local_resume_kept_the_done_trials_and_duplicated_none(local_measured):
    trials = capped_trials(local_measured["jobs"])
    assert_no_duplicate(trials)
    assert local_measured["kept"]  # the kill came after a trial was done
    assert set(local_measured["kept"]) <= set(trials["trial"].to_list())


def test_both_engines_give_the_same_depth_table(harbor_measured, local_measured):
    columns = ["task", "depth", "status", "caps_tried", "caps_missing", "depth_by_model"]
    harbor = pl.read_csv(harbor_measured["out"]).select(columns)
    local = pl.read_csv(local_measured["out"]).select(columns)
    assert harbor.equals(local), (harbor, local)


def test_both_engines_say_what_each_d_cost(harbor_measured, local_measured, tmp_path):
    # measure printed what the D cost on both engines (the scripted model has no public price: said, never $0);
    # the same jobs priced at a stated price give each D its runs' tokens in dollars, the same runs on both
    from depthlab import cli

    rates = {"openai/m1": (1e-6, 4e-6), "openai/m2": (2e-6, 8e-6)}
    prices = tmp_path / "prices.csv"
    rows = "".join(f"{model},{price_in},{price_out},\n" for model, (price_in, price_out) in rates.items())
    prices.write_text("model,input_usd_per_token,output_usd_per_token,cache_read_usd_per_token\n" + rows)
    runs = {}
    for name, done in (("harbor", harbor_measured), ("local", local_measured)):
        err = done["run"].stderr
        assert "the D of 2 tasks cost unknown priced from tokens" in err, err[-3000:]
        assert "openai/m1, openai/m2: no price for the model in the table" in err
        out = tmp_path / f"{name}.csv"
        args = ["depth", str(done["jobs"]), "--models", MODELS, "--caps", CAPS, "--prices", str(prices), "-o", str(out)]
        assert cli.main(args) == 0
        table = pl.read_csv(out)
        trials = capped_trials(done["jobs"])
        assert trials["n_input_tokens"].null_count() == 0  # both engines record the tokens the server reported
        by_hand = {}
        for task, model, n_in, n_out in trials.select("task", "model", "n_input_tokens", "n_output_tokens").iter_rows():
            by_hand[task] = by_hand.get(task, 0.0) + n_in * rates[model][0] + n_out * rates[model][1]
        got = dict(table.select("task", "depth_cost_priced_usd").iter_rows())
        assert got == pytest.approx(by_hand, rel=1e-9)
        assert min(got.values()) > 0
        runs[name] = dict(trials.group_by("task").len().iter_rows())
    assert runs["harbor"] == runs["local"]


# ---------------------------------------------------------------- endpoint down -------------
def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens once the probe is closed


@pytest.mark.parametrize("engine", ["local", "harbor"])
def test_an_endpoint_that_is_down_stops_the_rounds_and_counts_nothing(
    engine, chain_tasks, request, measure_env, tmp_path
):
    jobs, out = tmp_path / "jobs", tmp_path / "depth.csv"
    # one task, one model, one cap: one trial shows it (the oracle needs no model: skipped here)
    extra = ["--no-preflight", *engine_flags(engine, request)]
    run = run_measure(measure_args(chain_tasks / "measure-chain-r2", jobs, out, closed_port_url(), *extra), measure_env)
    assert run.returncode == 1, run.stderr[-3000:]
    assert "round 1 recorded no valid trial, nothing was counted" in run.stderr
    assert "round 2" not in run.stderr
    trials = capped_trials(jobs)
    assert trials.height == 1
    assert trials["status"].to_list() == ["invalid"]
    table = pl.read_csv(out)
    assert table.select("task", "status").rows() == [("measure-chain-r2", "incomplete")]
    assert "left unpinned (1): measure-chain-r2" in run.stderr
