"""``lint`` on the cookbook's Compose recipes, judged by Harbor's own ``harbor lint``: a Compose too old for
Harbor's lint (no ``config --no-env-resolution``) is the machine's finding, a note, never the task's fault.

The recipes are read from ``../shared`` (skipped with a reason when absent); nothing is copied.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from depthlab.checks import static

pytestmark = pytest.mark.harbor

COMPOSE_RECIPES = ("mcp-tools", "multi-container", "simulated-user")


def _compose_accepts_no_env_resolution() -> bool:
    done = subprocess.run(["docker", "compose", "config", "--help"], capture_output=True, text=True, check=False)
    return done.returncode == 0 and "--no-env-resolution" in done.stdout


def test_a_compose_too_old_for_harbors_lint_is_a_note_not_a_fault(
    samples: Path, harbor_cmd: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = samples / "harbor-framework_harbor-cookbook" / "harbor_cookbook" / "recipes"
    tasks = [root / name for name in COMPOSE_RECIPES]
    if not all((task / "task.toml").is_file() for task in tasks):
        pytest.skip(f"the cookbook's Compose recipes are not all at {root}")
    monkeypatch.setenv("DEPTHLAB_HARBOR", harbor_cmd)
    found = static.harbor_lint(tasks)
    assert not isinstance(found, str), found
    reason = static.compose_version_reason()
    assert (reason is None) == _compose_accepts_no_env_resolution()  # the reason is this machine's own
    for task in tasks:
        findings = found[task.resolve()]
        rules = {finding["rule"] for finding in findings}
        result = static.lint_result(findings)
        assert result.outcome != "error", result.evidence
        if reason is not None:
            # Harbor itself says the Compose file could not load: the old Compose, not the task
            assert "invalid-task-config" in rules, (task.name, findings)
            assert result.outcome == "note", (task.name, result.evidence)
            assert "has no `config --no-env-resolution`" in result.evidence
        else:
            assert static.COMPOSE_LOAD_MESSAGE not in result.evidence, (task.name, result.evidence)


def test_a_task_fault_stays_a_fault_beside_the_machines_note() -> None:
    findings = [
        {"rule": "invalid-task-config", "message": static.COMPOSE_LOAD_MESSAGE + "; run docker compose config."},
        {"rule": "agent-image-test-leak", "message": "Tests are in the image."},
    ]
    result = static.lint_result(findings)
    assert result.outcome == "fault"
    expected = (
        ("agent-image-test-leak",)
        if static.compose_version_reason()
        else ("invalid-task-config", "agent-image-test-leak")
    )
    assert result.missing == expected
