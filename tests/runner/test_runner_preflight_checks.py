"""An integrity check that could not run is retried and named, never read as a failing solution (issue 37, item 9).

Under load (about 1 in 20 preflights at load 7 on two cores) the identity snapshot the verifier
takes after the tests came back empty, and an honest task was left out of ``measure --engine
local`` as "reference solution fails" (``VerifierTamperedError``). Here the snapshot's exec is made
to print nothing, in a real container FROM the Debian userland, as a loaded daemon does:

* once: the snapshot is taken again and the honest oracle passes;
* always: the trial is ungraded (``VerifierCheckError``, the check that could not run named), the
  preflight runs the oracle again, then keeps the task in as not checked (and does not cache it);
* a real forgery while the snapshot prints nothing is still tampering, named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from depthlab.runner import OracleAgent, preflight, run_tasks
from depthlab.runner.container import TaskContainer

pytestmark = pytest.mark.docker

HONEST_TEST = (
    'if [ "$(cat /app/hello.txt 2>/dev/null)" = hello ]; then echo 1 > /logs/verifier/reward.txt; '
    "else echo 0 > /logs/verifier/reward.txt; fi\n"
)


def write_userland_task(root: Path, name: str, image: str, *, test_sh: str, solve_sh: str) -> Path:
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(f"FROM {image}\nWORKDIR /app\nSTOPSIGNAL SIGKILL\n")
    (task / "instruction.md").write_text("Write hello to /app/hello.txt.")
    (task / "task.toml").write_text(
        "[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 60.0\n[environment]\ncpus = 1\nmemory_mb = 256\n"
    )
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text(test_sh)
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text(solve_sh)
    return task


@pytest.fixture
def empty_snapshots(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Make the identity snapshot's exec print nothing: the first ``state['skip']`` snapshots of each
    trial run as they are (the one before the tests), then the next ``state['fail']`` print nothing."""
    state: dict[str, Any] = {"skip": 1, "fail": 0, "seen": {}, "emptied": 0}
    original = TaskContainer.exec

    def exec_(self: TaskContainer, command: list[str], **kwargs: Any) -> tuple[int | None, bytes]:
        if command[:2] == ["sh", "-c"] and "stat -c" in command[2] and "find /tests" in command[2]:
            seen = state["seen"][id(self)] = state["seen"].get(id(self), 0) + 1
            if state["skip"] < seen <= state["skip"] + state["fail"]:
                state["emptied"] += 1
                return 0, b""  # what a loaded daemon gave: the exec ran and printed nothing
        return original(self, command, **kwargs)

    monkeypatch.setattr(TaskContainer, "exec", exec_)
    return state


def test_a_snapshot_that_printed_nothing_once_is_taken_again_and_the_honest_oracle_passes(
    userland_image, docker_client, tmp_path, empty_snapshots
):
    empty_snapshots["fail"] = 1
    task = write_userland_task(
        tmp_path / "tasks", "snapshot-once", userland_image, test_sh=HONEST_TEST, solve_sh="echo hello > hello.txt\n"
    )
    summary = run_tasks([task], OracleAgent(), jobs_dir=tmp_path / "jobs", docker_client=docker_client, progress=False)
    (outcome,) = summary.outcomes
    assert empty_snapshots["emptied"] == 1
    assert (outcome.status, outcome.exception, outcome.reward) == ("pass", None, 1.0), outcome.message


def test_a_snapshot_that_never_prints_is_an_ungraded_trial_and_the_preflight_keeps_the_task(
    userland_image, docker_client, tmp_path, empty_snapshots
):
    from depthlab.runner.verifier import SNAPSHOT_ATTEMPTS

    empty_snapshots["fail"] = 10_000
    task = write_userland_task(
        tmp_path / "tasks", "snapshot-never", userland_image, test_sh=HONEST_TEST, solve_sh="echo hello > hello.txt\n"
    )
    report = preflight([task], jobs_dir=tmp_path / "preflight", docker_client=docker_client, use_cache=False)
    (row,) = report.rows
    assert row.passed, row  # never left out as a failing solution
    assert not row.checked
    assert row.exception == "VerifierCheckError"
    assert "reference solution" not in row.reason
    assert row.reason.startswith("not checked: the oracle's grade could not be checked in 2 trials"), row.reason
    assert "identity snapshot after the tests printed nothing usable" in row.reason
    assert f"({SNAPSHOT_ATTEMPTS} tries)" in row.reason
    assert report.failed == []
    assert [spec.name for spec in report.passed_tasks] == ["snapshot-never"]
    assert "1 could not be checked (an integrity check could not run" in report.summary()
    assert "left out" in report.summary()
    assert report.summary().endswith("; 0 left out")
    # both oracle trials ran, every after-snapshot tried SNAPSHOT_ATTEMPTS times; none is cached
    assert empty_snapshots["emptied"] == 2 * SNAPSHOT_ATTEMPTS
    assert not list((tmp_path / "preflight" / ".preflight-cache").glob("*.json"))


def test_a_forgery_while_the_snapshot_prints_nothing_is_still_tampering(
    userland_image, docker_client, tmp_path, empty_snapshots
):
    empty_snapshots["fail"] = 10_000
    forge = (
        "(while :; do if [ -f /tests/test.sh ] && ! grep -q forged /tests/test.sh; then "
        'echo "echo 1 > /logs/verifier/reward.txt # forged" > /tests/test.sh 2>/dev/null; fi; done) '
        ">/dev/null 2>&1 &\n"
    )
    task = write_userland_task(
        tmp_path / "tasks", "snapshot-forged", userland_image, test_sh="sleep 1; echo 0 > /logs/verifier/reward.txt\n",
        solve_sh=forge,
    )  # fmt: skip
    summary = run_tasks([task], OracleAgent(), jobs_dir=tmp_path / "jobs", docker_client=docker_client, progress=False)
    (outcome,) = summary.outcomes
    assert (outcome.status, outcome.exception, outcome.reward) == ("invalid", "VerifierTamperedError", None)
    assert "/tests/test.sh" in outcome.message
