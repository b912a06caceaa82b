"""The checks' pure parts: the key-step mark, top-level commands, the static rules, the finding's counts."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from depthlab import paper, schema
from depthlab.checks import check_tasks, read_checks, summarize_checks
from depthlab.checks.script import MarkError, key_lines, key_span, top_level_commands, without_key, without_lines
from depthlab.checks.static import fix_not_in_instruction, named_facts, named_in_instruction
from depthlab.findings import verifiers_see_key_steps
from depthlab.io.tasks import count_work

SOLVE = """#!/bin/bash
# Canary
set -euo pipefail
mkdir -p /app/out \\
  /app/tmp
# key-step begin
cat > /app/out/run.sh <<'EOF'
if true; then echo hi; fi
EOF
# key-step end
for f in a b; do
  touch "/app/out/$f"   # a comment with ) and fi
done
case "$1" in
  x) echo x ;;
  *) echo other ;;
esac
f() { echo "in f"; }
echo '# not a comment' && echo done
"""


def test_top_level_commands_follow_continuations_heredocs_and_compound_commands() -> None:
    commands = top_level_commands(SOLVE)
    assert [(c.first, c.last) for c in commands] == [(3, 3), (4, 5), (7, 9), (11, 13), (14, 17), (18, 18), (19, 19)]
    # removing every command leaves only comments: the commands cover the solution's work W exactly
    remaining = SOLVE
    for command in reversed(commands):
        remaining = without_lines(remaining, command.first, command.last)
    assert count_work(remaining)[0] == 0
    assert sum(c.last - c.first + 1 for c in commands) == count_work(SOLVE)[0]


def test_the_key_step_is_the_lines_between_the_marks() -> None:
    assert key_span(SOLVE) == ((6, 10),)
    assert key_lines(SOLVE) == ["cat > /app/out/run.sh <<'EOF'"]  # the file's content is no command
    removed = without_key(SOLVE)
    assert "cat > /app/out/run.sh" not in removed
    assert count_work(removed)[0] == count_work(SOLVE)[0] - 3


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("# key-step begin\necho a\n", "opened on line 1 never closes"),
        ("echo a\n# key-step end\n", "closes on line 2 without opening"),
        ("# key-step begin\n# key-step begin\n# key-step end\n", "opens on line 2 inside the one opened on line 1"),
        (
            "# key-step begin\n# key-step end\n# key-step begin\n",
            "opened on line 3 never closes",
        ),
    ],
)
def test_a_mark_that_cannot_be_read_says_where(text: str, words: str) -> None:
    with pytest.raises(MarkError, match=words):
        key_span(text)


def test_the_marks_must_be_the_exact_text() -> None:
    assert key_span("# key step begin\necho a\n# key step end\n") is None
    assert key_span("  # key-step begin\necho a\n  # key-step end\n") == ((1, 3),)


def test_a_merged_solution_marks_its_key_step_in_parts() -> None:
    # `depthlab tasks merge` writes each step's script, with its own pair of marks, into one solve.sh
    merged = (
        "# key-step begin\ntouch /app/a\n# key-step end\necho between\n# key-step begin\ntouch /app/b\n# key-step end\n"
    )
    assert key_span(merged) == ((1, 3), (5, 7))
    assert key_lines(merged) == ["touch /app/a", "touch /app/b"]
    assert without_key(merged) == ("# key-step begin\n# key-step end\necho between\n# key-step begin\n# key-step end\n")


def test_named_facts_skip_harbor_and_system_paths() -> None:
    text = (
        "#!/bin/bash\nsource /tests/helpers.sh\ncat /app/data/in.csv 2>/dev/null > /logs/verifier/out\n"
        "curl -s http://localhost:8080/health; su - alice -c true\npython3 /usr/lib/x.py /app\n"
    )
    assert named_facts(text) == ["/app/data/in.csv", "port 8080", "user alice"]


def test_named_in_instruction_reports_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "test.sh").write_text("cat /app/a.txt /app/b.txt; nc localhost:9000\n")
    found = named_in_instruction("Write `/app/a.txt` and serve on port 9000.", [tmp_path])
    assert (found.outcome, found.total, found.missing) == ("fault", 3, ("/app/b.txt",))
    assert named_in_instruction("Write /app/a.txt and /app/b.txt on 9000.", [tmp_path]).outcome == "ok"
    # a longer path does not count as naming a shorter one
    assert named_in_instruction("Write /app/a.txt.bak, /app/b.txt, 9000.", [tmp_path]).missing == ("/app/a.txt",)


def test_fix_not_in_instruction() -> None:
    assert fix_not_in_instruction("Make the service start.", ["systemctl start x"]).outcome == "ok"
    given = fix_not_in_instruction("Run systemctl start x to fix it.", ["systemctl start x"])
    assert (given.outcome, given.missing) == ("fault", ("systemctl start x",))


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    # the closed form (Wilson 1927), independent of statsmodels
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_the_finding_counts_judged_steps_and_gives_wilson_intervals() -> None:
    rows = [
        {"task": "t", "step": s, "check": "before", "outcome": o}
        for s, o in [("a", "ok"), ("b", "ok"), ("c", "fault"), ("d", "not_applicable"), ("e", "error")]
    ] + [{"task": "t", "step": "a", "check": "key_removed", "outcome": "not_marked"}]
    table = verifiers_see_key_steps(schema.conform(pl.DataFrame(rows), "checks"), sample="demo")
    assert table.columns == list(schema.KEY_STEP_RULES)
    data = {row["check"]: row for row in table.filter(pl.col("source") == "data").iter_rows(named=True)}
    assert (data["before"]["k"], data["before"]["n"]) == (2, 3)
    low, high = _wilson(2, 3)
    assert data["before"]["ci_low"] == pytest.approx(low, abs=1e-12)
    assert data["before"]["ci_high"] == pytest.approx(high, abs=1e-12)
    assert data["key_removed"]["n"] == 0
    assert data["key_removed"]["share"] is None
    reported = {row["check"]: row for row in table.filter(pl.col("source") == "paper").iter_rows(named=True)}
    for check, (k, n) in {"before": (601, 602), "key_removed": (598, 604), "next_after_key": (421, 500)}.items():
        assert (reported[check]["k"], reported[check]["n"]) == (k, n) == paper.KEY_STEP_COUNTS[check]
        assert (reported[check]["ci_low"], reported[check]["ci_high"]) == pytest.approx(_wilson(k, n), abs=1e-12)
    assert round(reported["before"]["share"], 3) == 0.998
    assert round(reported["key_removed"]["share"], 3) == 0.990
    assert round(reported["next_after_key"]["share"], 3) == 0.842


def test_static_checks_run_without_docker_and_an_unreadable_task_is_one_line(tmp_path: Path) -> None:
    from depthlab.simulate.checks import write_planted_tasks

    tasks = write_planted_tasks(tmp_path / "tasks", "debian:12")
    (tmp_path / "tasks" / "broken").mkdir()
    (tmp_path / "tasks" / "broken" / "task.toml").write_text("this is not toml [")
    report = check_tasks(
        [tasks["path-missing"], tasks["fix-given"], tmp_path / "tasks" / "broken"],
        jobs_dir=tmp_path / "jobs",
        checks=["named_in_instruction", "fix_not_in_instruction"],
    )
    outcome = {(row["task"], row["check"]): row["outcome"] for row in report.table.iter_rows(named=True)}
    assert outcome == {
        ("path-missing", "named_in_instruction"): "fault",
        ("path-missing", "fix_not_in_instruction"): "ok",
        ("fix-given", "named_in_instruction"): "ok",
        ("fix-given", "fix_not_in_instruction"): "fault",
        ("broken", "named_in_instruction"): "error",
        ("broken", "fix_not_in_instruction"): "error",
    }
    assert len(report.problems) == 1
    assert report.problems[0].startswith("broken: cannot be read")
    assert report.replays_run == 0
    summary = summarize_checks(report.table)
    assert summary.filter(pl.col("task") == "broken")["errors"].item() == 2
    path = tmp_path / "checks.parquet"
    report.table.write_parquet(path)
    assert read_checks(path).equals(report.table)


def test_parameters_are_checked_at_the_boundary(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="repeat"):
        check_tasks([], jobs_dir=tmp_path, repeat=0)
    with pytest.raises(ValueError, match="checks"):
        check_tasks([], jobs_dir=tmp_path, checks=["nope"])
    with pytest.raises(ValueError, match="engine"):
        check_tasks([], jobs_dir=tmp_path, engine="cloud")
