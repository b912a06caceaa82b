"""``check_tasks`` on the real multi-step recipe of harbor-framework/harbor-cookbook, made runnable offline
from the Debian userland, with key-step marks added around each step's main command.

What is changed in the copy, and why: the image is the userland (``FROM ubuntu:24.04`` + apt-get needs a
network and another base), the per-step healthcheck is dropped (the local runner refuses healthchecks), and
the ``[steps.verifier.env]`` values of step ``implement`` are exported at the top of its ``test.sh`` (the
local runner does not pass a step's verifier environment), and the shared ``tests/helpers.sh`` is copied
into each step's ``tests/`` (Harbor merges the task's tests into every step's ``/tests``; the local runner
copies the step's own only). Every outcome asserted below was worked out from
the recipe's files before the run. The same copy is checked on both engines, at one oracle replay, which must
give the same table (every column but the seconds, the evidence and the trial folders).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from depthlab import schema
from depthlab.checks import KEY_BEGIN, KEY_END, CheckReport, check_tasks

pytestmark = pytest.mark.docker


def _runnable_copy(recipe: Path, target: Path, image: str) -> Path:
    shutil.copytree(recipe, target)
    (target / "environment" / "Dockerfile").write_text(f"FROM {image}\nRUN mkdir -p /app\nWORKDIR /app\n")
    toml = (target / "task.toml").read_text()
    toml = re.sub(r"\[steps\.healthcheck\]\n(?:[a-z_]+ = .*\n)+", "", toml)
    (target / "task.toml").write_text(toml)
    test = target / "steps" / "implement" / "tests" / "test.sh"
    lines = test.read_text().splitlines(keepends=True)
    exports = "export EXPECTED_NAME=Harbor EXPECTED_GREETING='Hello, Harbor!'\n"
    test.write_text(lines[0] + exports + "".join(lines[1:]))
    for step in ("scaffold", "implement", "document"):
        shutil.copy(target / "tests" / "helpers.sh", target / "steps" / step / "tests" / "helpers.sh")
        solve = target / "steps" / step / "solution" / "solve.sh"
        text = solve.read_text()
        # the key step: the command writing the step's file (its here-document included)
        text = re.sub(r"(cat > /app/\S+ <<'EOF'\n.*?\nEOF\n)", rf"{KEY_BEGIN}\n\1{KEY_END}\n", text, flags=re.S)
        solve.write_text(text)
    return target


@pytest.fixture(scope="module")
def recipe(samples: Path, userland: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = samples / "harbor-framework_harbor-cookbook" / "harbor_cookbook" / "recipes" / "multi-step"
    if not source.is_dir():
        pytest.skip(f"the cookbook's multi-step recipe is not at {source}")
    return _runnable_copy(source, tmp_path_factory.mktemp("cookbook") / "multi-step", userland)


CHECKS = [name for name in schema.CHECK_NAMES if name != "lint"]  # every check but Harbor's lint
#: The columns both engines must give alike (the seconds, evidence and trial folders are the run's own).
SAME = [name for name in schema.CHECKS if name not in ("seconds", "evidence", "trials")]


@pytest.fixture(scope="module")
def checked(
    recipe: Path, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], CheckReport]:
    """The recipe's check on an engine, run once per engine for the module."""
    reports: dict[str, CheckReport] = {}

    def check(engine: str) -> CheckReport:
        if engine not in reports:
            options: dict[str, Any] = (
                {"harbor": request.getfixturevalue("harbor_cmd")}
                if engine == "harbor"
                else {"docker_client": request.getfixturevalue("docker_client")}
            )
            jobs = tmp_path_factory.mktemp(f"jobs-{engine}")
            reports[engine] = check_tasks(recipe, jobs_dir=jobs, engine=engine, checks=CHECKS, repeat=1, **options)
        return reports[engine]

    return check


@pytest.mark.parametrize("engine", ["local", pytest.param("harbor", marks=pytest.mark.harbor)])
def test_the_cookbook_multi_step_recipe_checked(engine: str, checked: Callable[[str], CheckReport]) -> None:
    report = checked(engine)
    outcome = {(row["step"], row["check"]): row["outcome"] for row in report.table.iter_rows(named=True)}
    steps = ("scaffold", "implement", "document")
    for step in steps:
        assert outcome[(step, "oracle")] == "ok", report.table
        assert outcome[(step, "before")] == "ok"
        assert outcome[(step, "key_removed")] == "ok"
        assert outcome[(step, "fix_not_in_instruction")] == "ok"
    # implement rewrites greet.sh whole: it does not need scaffold's; document needs implement's
    assert outcome[("scaffold", "next_after_key")] == "fault"
    assert outcome[("implement", "next_after_key")] == "ok"
    assert outcome[("document", "next_after_key")] == "not_applicable"
    # document's instruction says `greet.sh` and `config.txt`, its tests /app/greet.sh and /app/config.txt:
    # named, relative to the working folder /app
    assert outcome[("scaffold", "named_in_instruction")] == outcome[("implement", "named_in_instruction")] == "ok"
    assert outcome[("document", "named_in_instruction")] == "ok"
    # the inert lines are told apart, not replayed: `set -euo pipefail` and the closing echo everywhere;
    # implement's chmod (greet.sh is executable already: scaffold's solution and implement's setup.sh made it so)
    mutants = report.table.filter(pl.col("check") == "mutants").sort("step_index")
    assert list(zip(mutants["caught"], mutants["total"], strict=True)) == [(2, 2), (1, 1), (1, 1)]
    assert mutants["outcome"].to_list() == ["ok"] * 3
    implement = mutants.filter(pl.col("step") == "implement")["evidence"].item()
    assert "chmod +x /app/greet.sh (already executable)" in implement
    assert "set -euo pipefail (a shell option)" in implement
    assert "caught 1 of 1, 4 in all" in implement
    assert report.problems == []
    # the cost: 1 oracle replay, 3 before, 3 key-step replays, 4 mutants (7 inert commands not replayed)
    assert report.replays_run == 1 + 3 + 3 + 4
    if engine == "harbor":  # the same table as the local engine's, every column but the run's own
        local = checked("local").table
        assert report.table.select(SAME).equals(local.select(SAME)), (report.table, local)
