"""``check_tasks(engine="harbor")``: the planted tasks' checks on Harbor's own engine give the local engine's table.

One planted fault of each kind (:mod:`depthlab.simulate.checks`): a blind check (``blind``: mutants),
checks that pass before their step, with its key step removed and a next step that does not need it
(``passes-before``: before, key_removed, mutants, next_after_key), both static rules (``path-missing``,
``fix-given``) and an unmarked step (``unmarked``). The replays run once per engine (``repeat=1``;
the coin-flip task is left to the local tests, it needs ten oracle replays); the static-only tasks are
checked without replays. Every column but the seconds, the evidence and the trial folders must agree.
"""

from __future__ import annotations

import itertools
import json
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from depthlab import schema
from depthlab.checks import check_tasks
from depthlab.engines.harbor_replays import STOP_GRACE_PERIOD
from depthlab.simulate.checks import BAD, PLANTED

pytestmark = [pytest.mark.docker, pytest.mark.harbor]

REPLAYED = ("blind", "passes-before")
STATIC = ("path-missing", "fix-given", "unmarked")
STATIC_CHECKS = ("named_in_instruction", "fix_not_in_instruction", "lint")
#: The columns both engines must give alike (the seconds, evidence and trial folders are the run's own).
SAME = [name for name in schema.CHECKS if name not in ("seconds", "evidence", "trials")]


@pytest.fixture(scope="module")
def planted(planted_run: dict[str, Any]) -> dict[str, Path]:
    return planted_run["tasks"]


def _tables(planted: dict[str, Path], jobs: Path, **engine: Any) -> tuple[pl.DataFrame, Any]:
    replayed = check_tasks([planted[name] for name in REPLAYED], jobs_dir=jobs, repeat=1, **engine)
    static = check_tasks([planted[name] for name in STATIC], jobs_dir=jobs, checks=STATIC_CHECKS, **engine)
    return pl.concat([replayed.table, static.table]), replayed


@pytest.fixture(scope="module")
def both(
    planted_run: dict[str, Any], docker_client: Any, harbor_cmd: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    # local: on a copy of the planted run's replays (tests/checks/conftest.py), each found there and reused
    local_jobs = tmp_path_factory.mktemp("local") / "jobs"
    shutil.copytree(planted_run["jobs"], local_jobs)
    planted = planted_run["tasks"]
    local, local_report = _tables(planted, local_jobs, docker_client=docker_client)
    jobs = tmp_path_factory.mktemp("harbor")
    harbor, harbor_report = _tables(planted, jobs, engine="harbor", harbor=harbor_cmd)
    return {"local": local, "harbor": harbor, "jobs": jobs, "local_report": local_report, "report": harbor_report}


def test_both_engines_give_the_same_table(both: dict[str, Any]) -> None:
    local, harbor = both["local"], both["harbor"]
    schema.check(harbor, "checks")
    assert harbor.height == local.height > 0
    assert harbor.select(SAME).equals(local.select(SAME)), (harbor.select(SAME), local.select(SAME))
    local_report = both["local_report"]  # its replays reused from the planted run's, or run if not found there
    assert both["report"].replays_run == local_report.replays_run + local_report.replays_reused
    assert both["report"].replays_run == harbor["replays"].sum()


def test_harbor_reports_every_planted_fault_of_these_tasks_and_no_other(both: dict[str, Any]) -> None:
    table = both["harbor"].filter(pl.col("check") != "lint")
    found = {
        (row["task"], row["step"], row["check"]): row["outcome"]
        for row in table.filter(pl.col("outcome").is_in(["fault", "flaky"])).iter_rows(named=True)
    }
    names = {*REPLAYED, *STATIC}
    assert found == {key: value for key, value in PLANTED.items() if key[0] in names}
    assert table.filter(pl.col("outcome") == "error").height == 0
    blind = table.filter((pl.col("task") == "blind") & (pl.col("check") == "mutants")).row(0, named=True)
    assert (blind["caught"], blind["total"]) == (1, 2)
    assert "echo two > /app/two.txt" in blind["evidence"]


def test_every_harbor_replay_is_a_harbor_trial_of_the_replay_agent_offline(
    both: dict[str, Any], harbor_check: Any, harbor_viewer: Any
) -> None:
    job = both["jobs"] / "depthlab-check"
    trials = sorted(path.parent for path in job.glob("*/result.json"))
    assert len(trials) == both["report"].replays_run
    for trial in trials:
        config = json.loads((trial / "config.json").read_text())
        assert config["agent"]["import_path"] == "depthlab_replay:ReplayAgent"
        overlay = json.loads(Path(config["environment"]["extra_docker_compose"][0]).read_text())
        assert overlay["services"]["main"]["network_mode"] == "none"  # the planted tasks say no-network
        assert overlay["services"]["main"]["stop_grace_period"] == STOP_GRACE_PERIOD
        assert "min_reward" not in Path(config["task"]["path"], "task.toml").read_text()
    judged = harbor_check([job])
    assert {path: error for path, error in judged.items() if error} == {}
    # a batch's trials ran two at once (the default concurrency): some two of them overlap in time
    spans = sorted(
        (datetime.fromisoformat(result["started_at"]), datetime.fromisoformat(result["finished_at"]))
        for result in (json.loads((trial / "result.json").read_text()) for trial in trials)
    )
    assert any(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans)), spans
    # the overlay's stop grace period holds: Harbor's `docker compose down` of a trial whose verifier is done
    # does not wait Docker's default 10 s for its pid 1 (`sleep infinity`, deaf to SIGTERM) to stop
    stops = [
        datetime.fromisoformat(result["finished_at"]) - datetime.fromisoformat(result["verifier"]["finished_at"])
        for result in (json.loads((trial / "result.json").read_text()) for trial in trials)
        if result.get("verifier")
    ]
    assert stops
    assert min(stops).total_seconds() < 9, stops
    with harbor_viewer(both["jobs"]) as view:
        listed = {item["name"]: item for item in view.api("/api/jobs?page_size=100")["items"]}
        assert listed["depthlab-check"]["agents"] == ["depthlab-replay"]
        shown = view.api("/api/jobs/depthlab-check/trials?page_size=100")["items"]
        assert len(shown) == len(trials)


def test_a_rerun_on_harbor_replays_nothing_and_gives_the_same_table(
    planted: dict[str, Path], harbor_cmd: str, both: dict[str, Any]
) -> None:
    again, report = _tables(planted, both["jobs"], engine="harbor", harbor=harbor_cmd)
    assert report.replays_run == 0
    assert report.replays_reused == both["report"].replays_run
    assert again.drop("trials").equals(both["harbor"].drop("trials"))


def test_bad_input_is_the_same_line_on_both_engines_and_the_same_rows(
    bad_run: dict[str, Any], harbor_cmd: str, tmp_path: Path
) -> None:
    local = bad_run["report"]  # the bad inputs (and the unmarked task) on the local engine: tests/checks/conftest.py
    harbor = check_tasks(
        list(bad_run["bad"].values()), jobs_dir=tmp_path / "harbor", engine="harbor", harbor=harbor_cmd,
        checks=bad_run["checks"], repeat=bad_run["repeat"],
    )  # fmt: skip
    local_bad = local.table.filter(pl.col("task").is_in(list(BAD)))
    assert local_bad.height > 0
    assert harbor.table.select(SAME).equals(local_bad.select(SAME)), (harbor.table, local_bad)
    assert len(harbor.problems) == len(BAD)
    for name, words in BAD.items():
        line = next(problem for problem in harbor.problems if problem.startswith(f"{name}:"))
        assert words in line, line
    assert [line.split(":")[:2] for line in harbor.problems] == [line.split(":")[:2] for line in local.problems]


# ---------------------------------------------------------------- the profile and the disk bound, on both engines
_VERDICT = "if {condition}; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"


def _single_task(root: Path, name: str, image: str, test: str, solve: str, environment: str = "") -> Path:
    folder = root / name
    for relative, text in {
        "environment/Dockerfile": f"FROM {image}\nRUN mkdir -p /app\nWORKDIR /app\n",
        "task.toml": f'schema_version = "1.4"\n[task]\nname = "profiles/{name}"\n'
        f"[environment]\ncpus = 1\nmemory_mb = 512\n{environment}",
        "instruction.md": f"Do what {name} says.",
        "tests/test.sh": "#!/bin/bash\nmkdir -p /logs/verifier\n" + _VERDICT.format(condition=test),
        "solution/solve.sh": solve,
    }.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    return folder


def test_the_profile_and_the_disk_bound_give_the_same_outcome_on_both_engines(
    userland: str, docker_client: Any, harbor_cmd: str, tmp_path: Path
) -> None:
    """A solution that needs root's capabilities (a chown) passes under the faithful profile and cannot run
    under ``strict`` (no capability), and one that writes past its task's disk bound is stopped: on both
    engines alike."""
    from depthlab.runner.profiles import RunSettings

    owned = _single_task(
        tmp_path, "owned", userland, '[ "$(stat -c %u /app/owned.txt)" = 4321 ]',
        "#!/bin/bash\necho mine > /app/owned.txt\nchown 4321:4321 /app/owned.txt\n",
    )  # fmt: skip
    filler = _single_task(
        tmp_path, "fills-disk", userland, "[ -f /app/done.txt ]",
        "#!/bin/bash\ndd if=/dev/zero of=/app/big bs=1M count=120 status=none\nsleep 10\ntouch /app/done.txt\n",
        "storage_mb = 30\n",
    )  # fmt: skip
    # passes only in a container with a network interface besides loopback: the task's own network (Harbor's
    # default, task.toml says nothing) under the faithful profile, none under strict
    networked = _single_task(tmp_path, "networked", userland, "ls /sys/class/net | grep -qv '^lo$'", "#!/bin/bash\n")
    tables: dict[tuple[str, str], pl.DataFrame] = {}
    for engine, options in (("local", {"docker_client": docker_client}), ("harbor", {"harbor": harbor_cmd})):
        for profile, tasks in (("harbor", [owned, filler, networked]), ("strict", [owned, networked])):
            report = check_tasks(
                tasks, jobs_dir=tmp_path / f"jobs-{engine}-{profile}", engine=engine, checks=["oracle"], repeat=1,
                settings=RunSettings(profile=profile), **options,
            )  # fmt: skip
            tables[(engine, profile)] = report.table
    for profile in ("harbor", "strict"):
        local, harbor = tables[("local", profile)], tables[("harbor", profile)]
        assert harbor.select(SAME).equals(local.select(SAME)), (profile, harbor, local)
    outcome = {
        (profile, row["task"]): (row["outcome"], row["evidence"])
        for (engine, profile), table in tables.items()
        if engine == "harbor"
        for row in table.iter_rows(named=True)
    }
    assert outcome[("harbor", "networked")][0] == "ok"
    assert outcome[("strict", "networked")][0] == "fault"
    assert outcome[("harbor", "owned")][0] == "ok"
    assert outcome[("harbor", "owned")][1].endswith("; replays with the network the task allows")
    # the chown fails under strict: solve.sh exits 1 and is graded as Harbor grades it (the tests run and fail),
    # the exit code and the script's last error line in the evidence, in one line
    strict, evidence = outcome[("strict", "owned")]
    assert strict == "fault", evidence
    assert evidence.startswith("the full solution fails its checks in 1 replays: solve.sh exited with code 1: chown")
    assert "Operation not permitted" in evidence
    assert "\n" not in evidence
    assert evidence.endswith("; replays offline (the strict profile)")
    assert outcome[("harbor", "fills-disk")][0] == "error"
    assert "RewardFileNotFoundError: The verifier could not start" in outcome[("harbor", "fills-disk")][1]
    assert "over the bound of 30 MB" in outcome[("harbor", "fills-disk")][1]
    local_disk = tables[("local", "harbor")].filter(pl.col("task") == "fills-disk")["evidence"].item()
    assert "RewardFileNotFoundError: The verifier could not start" in local_disk
    # Harbor's strict containers had no capability: the overlay its trial config names says so
    (trial,) = (tmp_path / "jobs-harbor-strict" / "depthlab-check").glob("owned__*/config.json")
    overlay = json.loads(Path(json.loads(trial.read_text())["environment"]["extra_docker_compose"][0]).read_text())
    assert overlay["services"]["main"]["cap_drop"] == ["ALL"]
    assert overlay["services"]["main"]["network_mode"] == "none"
    (trial,) = (tmp_path / "jobs-harbor-harbor" / "depthlab-check").glob("networked__*/config.json")
    overlay = json.loads(Path(json.loads(trial.read_text())["environment"]["extra_docker_compose"][0]).read_text())
    assert "network_mode" not in overlay["services"]["main"]  # the task's own network, as Harbor gives it
