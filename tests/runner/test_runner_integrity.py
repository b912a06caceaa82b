"""What an agent can and cannot do to its grade, in each security profile, against a real Docker Engine.

Each "agent" here is a reference solution (the oracle runs it as the agent's phase): it leaves a
background process that attacks the verifier, or breaks the container, and the honest verifier
would give 0. No attack may turn into a counted pass; tampering is an invalid trial naming what
changed; a container the agent broke is the agent's fail with its true cause.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from runner_helpers import write_task

from depthlab.runner import OracleAgent, RunSettings, run_tasks

pytestmark = pytest.mark.docker

HONEST_ZERO = "sleep 1; echo 0 > /logs/verifier/reward.txt\n"

# background loops started by the agent's phase, still running while the tests run
ATTACKS = {
    # write a reward of 1 over and over into the verifier's folder
    "forge-reward": "(while :; do echo 1 > /logs/verifier/reward.txt 2>/dev/null; done) >/dev/null 2>&1 &\n",
    # rewrite a long reward file over and over: the copy's archive breaks on it, the late writes still show
    "forge-reward-racing-the-copy": "(while :; do head -c 4000000 /dev/zero > /logs/verifier/reward.txt 2>/dev/null; "
    "done) >/dev/null 2>&1 &\n",
    # swap the verifier's folder for a link to a folder holding a reward of 1
    "forge-links": "mkdir -p /tmp/forge; echo 1 > /tmp/forge/reward.txt; (while :; do if [ ! -L /logs/verifier ]; "
    "then rm -rf /logs/verifier 2>/dev/null; ln -s /tmp/forge /logs/verifier 2>/dev/null; fi; done) "
    ">/dev/null 2>&1 &\n",
    # rewrite the tests themselves, in the background, once they are copied in
    "forge-tests": "(while :; do if [ -f /tests/test.sh ] && ! grep -q forged /tests/test.sh; then "
    'echo "echo 1 > /logs/verifier/reward.txt # forged" > /tests/test.sh 2>/dev/null; fi; done) '
    ">/dev/null 2>&1 &\n",
}


@pytest.fixture(scope="module")
def attack_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("attacks") / "integrity"
    root.mkdir()
    for name, solve in ATTACKS.items():
        write_task(root, name, instruction="Do nothing.", test_sh=HONEST_ZERO, solve_sh=solve)
    write_task(root, "break-sh", instruction="x", test_sh=HONEST_ZERO, solve_sh="rm -f /bin/sh\n")
    write_task(root, "kill-pid-1", instruction="x", test_sh=HONEST_ZERO, solve_sh="kill 1; sleep 10\n")
    bomb = "b() { b | b & }; (b) >/dev/null 2>&1 &\nsleep 2\n"
    write_task(root, "fork-bomb", instruction="x", test_sh=HONEST_ZERO, solve_sh=bomb)
    # 150 MB written to /tmp under a 64 MB bound (the watchdog, where the storage driver cannot bound it)
    fill = "head -c 150000000 /dev/zero > /tmp/big; sleep 5\n"
    write_task(root, "fill-disk", instruction="x", test_sh=HONEST_ZERO, solve_sh=fill, toml="storage_mb = 64\n")
    write_task(
        root,
        "honest",
        instruction="Write hello to /app/hello.txt.",
        test_sh='if [ "$(cat /app/hello.txt)" = hello ]; then echo 1 > /logs/verifier/reward.txt; '
        "else echo 0 > /logs/verifier/reward.txt; fi\n",
        solve_sh="echo hello > /app/hello.txt\n",
    )
    return root


@pytest.fixture(scope="module", params=["harbor", "strict"])
def outcomes(request, attack_root, docker_client, tmp_path_factory):
    profile = request.param
    summary = run_tasks(
        sorted(attack_root.iterdir()),
        OracleAgent(),
        jobs_dir=tmp_path_factory.mktemp(f"jobs-{profile}"),
        docker_client=docker_client,
        concurrency=2,
        settings=RunSettings(profile=profile, pids_limit=256),
        progress=False,
    )
    return profile, {outcome.task: outcome for outcome in summary.outcomes}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_no_forgery_gives_a_counted_pass(outcomes, attack):
    profile, found = outcomes
    outcome = found[attack]
    assert outcome.status != "pass", (profile, outcome)
    if profile == "harbor":  # root can write everywhere: the checks catch the forger, the trial is invalid
        assert outcome.exception == "VerifierTamperedError", outcome
        assert outcome.status == "invalid"
    else:  # strict: the forger cannot reach the verifier's files at all, the honest 0 stands
        assert outcome.exception in (None, "VerifierTamperedError"), outcome


def test_tampering_names_what_changed(outcomes):
    profile, found = outcomes
    if profile != "harbor":
        pytest.skip("under strict the forgers cannot write: nothing to name")
    assert "/tests/test.sh was rewritten" in found["forge-tests"].message
    for attack in ("forge-reward", "forge-reward-racing-the-copy"):
        assert "reward.txt was written after the tests ended" in found[attack].message
    assert "/logs/verifier" in found["forge-links"].message


def test_an_honest_trial_passes_the_integrity_checks(outcomes):
    profile, found = outcomes
    assert (found["honest"].reward, found["honest"].exception) == (1.0, None), profile


def test_a_container_the_agent_broke_is_the_agents_fail_with_its_cause(outcomes):
    profile, found = outcomes
    broken = found["break-sh"]
    assert broken.status == "fail", (profile, broken)
    assert broken.exception == "RewardFileNotFoundError"
    assert "The verifier could not start" in broken.message
    assert "executable file not found" in broken.message


def test_the_disk_an_agent_can_fill_is_bounded(outcomes):
    profile, found = outcomes
    filled = found["fill-disk"]
    assert filled.status == "fail", (profile, filled)
    assert filled.exception == "RewardFileNotFoundError"
    assert "over the task's storage bound of 64 MB" in filled.message


def test_an_agent_that_stops_its_own_container_fails(outcomes):
    profile, found = outcomes
    stopped = found["kill-pid-1"]
    assert stopped.status == "fail", (profile, stopped)
    assert "ended its PID 1" in stopped.message


def test_a_fork_bomb_is_a_fail_that_names_the_pid_limit(outcomes):
    profile, found = outcomes
    bomb = found["fork-bomb"]
    assert bomb.status == "fail", (profile, bomb)
    assert bomb.exception == "RewardFileNotFoundError"
    assert "filled its pid limit" in bomb.message


def test_a_fork_bomb_gives_the_same_outcome_every_time(attack_root, docker_client, tmp_path):
    summary = run_tasks(
        [attack_root / "fork-bomb"],
        OracleAgent(),
        jobs_dir=tmp_path,
        attempts=3,
        docker_client=docker_client,
        concurrency=1,
        settings=RunSettings(pids_limit=256),
        progress=False,
    )
    found = {
        (outcome.status, outcome.exception, "filled its pid limit" in outcome.message) for outcome in summary.outcomes
    }
    assert found == {("fail", "RewardFileNotFoundError", True)}


@pytest.mark.parametrize("check", ["_tampering", "_late_writes", "get_directory"])
def test_a_check_that_raises_makes_the_trial_invalid_and_its_reward_ungraded(
    check, docker_client, tmp_path, monkeypatch
):
    """A check of the verifier's files that cannot run is never skipped: the honest pass is not counted."""
    from depthlab.runner import verifier
    from depthlab.runner.container import TaskContainer

    def broken(*args, **kwargs):
        raise OSError(f"{check} broke (injected)")

    if check == "get_directory":
        monkeypatch.setattr(TaskContainer, "get_directory", broken)
    else:
        monkeypatch.setattr(verifier, check, broken)
    root = tmp_path / "tasks"
    root.mkdir()
    task = write_task(
        root,
        f"check-raises-{check.strip('_').replace('_', '-')}",
        instruction="x",
        test_sh="echo 1 > /logs/verifier/reward.txt\n",
        solve_sh="true\n",
    )
    summary = run_tasks([task], OracleAgent(), jobs_dir=tmp_path / "jobs", docker_client=docker_client, progress=False)
    (outcome,) = summary.outcomes
    assert (outcome.status, outcome.exception, outcome.reward) == ("invalid", "VerifierCheckError", None)
    assert f"{check} broke (injected)" in outcome.message
    assert not (outcome.trial_dir / "verifier" / "reward.txt").exists()


def test_a_copy_broken_by_a_racing_writer_names_the_late_write(docker_client, tmp_path, monkeypatch):
    """A writer racing the copy truncates its archive (the copy fails); the trial is still tampered, named."""
    import tarfile

    from depthlab.runner.container import TaskContainer

    def truncated(*args, **kwargs):
        raise tarfile.ReadError("unexpected end of data")

    monkeypatch.setattr(TaskContainer, "get_directory", truncated)
    root = tmp_path / "tasks"
    root.mkdir()
    task = write_task(root, "forge-reward", instruction="x", test_sh=HONEST_ZERO, solve_sh=ATTACKS["forge-reward"])
    summary = run_tasks([task], OracleAgent(), jobs_dir=tmp_path / "jobs", docker_client=docker_client, progress=False)
    (outcome,) = summary.outcomes
    assert (outcome.status, outcome.exception, outcome.reward) == ("invalid", "VerifierTamperedError", None)
    assert "reward.txt was written after the tests ended" in outcome.message
    assert "the copy of /logs/verifier could not run (ReadError: unexpected end of data)" in outcome.message
