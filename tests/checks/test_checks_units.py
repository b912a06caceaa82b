"""The checks' pure parts: the key-step mark, top-level commands, the static rules, the finding's counts."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from depthlab import paper, schema
from depthlab.checks import check_tasks, read_checks, static, summarize_checks
from depthlab.checks.script import (
    MarkError,
    before_step,
    inert_reason,
    key_lines,
    key_span,
    top_level_commands,
    without_key,
    without_lines,
)
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
    # round 17: a place the instruction names nowhere is a note; named at another place, a fault
    assert (found.outcome, found.total, found.missing, found.wrong) == ("note", 3, ("/app/b.txt",), ())
    assert found.evidence.startswith(
        "not named anywhere in the instruction (a note; often the verifier's own): /app/b.txt;"
    )
    elsewhere = named_in_instruction("Write `/app/a.txt`, then `/out/b.txt`; serve on port 9000.", [tmp_path])
    assert (elsewhere.outcome, elsewhere.missing, elsewhere.wrong) == ("fault", ("/app/b.txt",), ("/app/b.txt",))
    assert elsewhere.evidence == "not in the instruction: /app/b.txt; named elsewhere: /app/b.txt as /out/b.txt"
    nowhere = named_in_instruction("Do the task.", [tmp_path])  # an instruction that names no place at all
    assert (nowhere.outcome, nowhere.wrong) == ("fault", ("/app/a.txt", "/app/b.txt", "port 9000"))
    assert "; the instruction is a placeholder: it names no place at all" in nowhere.evidence
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


# ---------------------------------------------------------------- named_in_instruction, rule by rule -------
def _tests(folder: Path, files: dict[str, str]) -> list[Path]:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return [folder]


def test_comments_docstrings_and_fixtures_ask_nothing(tmp_path: Path) -> None:
    folders = _tests(
        tmp_path,
        {
            "test_outputs.py": '"""Checks /app/docstring.txt."""\n\n\ndef test_a():\n'
            '    """Reads /app/also_docstring."""\n    # see /app/comment.txt\n    assert open("/app/real.txt")\n',
            "test.sh": "#!/bin/bash\n# runs /app/commented.sh\npytest /tests/test_outputs.py  # or /app/trailing\n",
            "expected.json": '{"devpath": "/devices/pci0000:00/x", "PATH": "/usr/local/bin:/app/bin"}',
        },
    )
    found = named_in_instruction("Write it.", folders)
    assert found.missing == ("/app/real.txt",)


def test_shell_parameter_expansions_are_resolved(tmp_path: Path) -> None:
    folders = _tests(
        tmp_path,
        {
            "test.sh": '#!/bin/bash\nTEST_DIR="${TEST_DIR:-/tests}"\npytest ${TEST_DIR:-/tests}/test_outputs.py\n'
            'python "$TEST_DIR/check.py" "${OUT}/result.txt"\nOUT_FILE=/app/out.txt\ncat $OUT_FILE\n'
        },
    )
    # /tests/... is Harbor's; ${OUT}/result.txt is relative to an unknown folder; $OUT_FILE is /app/out.txt
    assert named_in_instruction("Do it.", folders).missing == ("/app/out.txt",)


def test_the_verifiers_own_tooling_is_left_out(tmp_path: Path) -> None:
    task = tmp_path / "task"
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Makefile").write_text("all:\n")
    folders = _tests(
        task / "tests",
        {
            "test.sh": "#!/bin/bash\nuv venv /opt/venv\nexport PATH=/opt/tools/bin:$PATH\n"
            "/opt/verifier-venv/bin/python -m pytest /tests\nmkdir -p /opt/verifier-scripts\n"
            "git clone https://x.invalid/r /srv/checker\nmake -f /app/Makefile check\n/app/run.sh\n",
            "test_x.py": 'import subprocess\nsubprocess.run(["/opt/venv/bin/python", "/srv/checker/c.py"])\n'
            'if path.startswith("/opt/"):\n    pass\n',
        },
    )
    found = named_in_instruction("Do it.", folders, environment=static.environment_files(task))
    # the one program the tests run that the environment does not ship (the agent's to write) stays asked
    assert found.missing == ("/app/run.sh",)
    named = named_in_instruction("Write /app/run.sh.", folders, environment=static.environment_files(task))
    # the venv, the PATH value, the verifier-named, made, cloned and shipped paths: 8, each once
    assert (named.outcome, named.evidence) == (
        "ok",
        "all 1 named in the instruction (8 of the verifier's own left out)",
    )


def test_ports_count_only_where_the_tests_connect(tmp_path: Path) -> None:
    folders = _tests(
        tmp_path,
        {
            "test_net.py": "import socket, requests\nport = 4000 + (digest % 500)\nPORT = 8081\n"
            'requests.get("http://localhost:8080/health")\nsocket.create_connection(("127.0.0.1", 9000))\n'
            'requests.get("https://api.example:8443/x")\nserve(port=7000)\ntimeout = 3000\n',
            "test.sh": "#!/bin/bash\nnc -z db 5432\ncurl --port 6000 x\n",
        },
    )
    found = named_in_instruction("Serve.", folders)
    assert set(found.missing) == {f"port {n}" for n in (8080, 9000, 8443, 7000, 6000, 5432, 8081)}


def test_a_path_is_named_relative_to_the_working_folder_and_through_its_folder(tmp_path: Path) -> None:
    folders = _tests(
        tmp_path,
        {
            "test_x.py": 'for p in ("/app/hello.txt", "/app/docs", "/app/output/r.json", "/app/data/in.csv"):\n'
            "  open(p)\n"
        },
    )
    instruction = "Create hello.txt, write docs/index.md, and put results in `/app/output/`. Read data/other.csv."
    found = named_in_instruction(instruction, folders, workdir="/app")
    assert found.missing == ("/app/data/in.csv",)  # a sibling file does not name another file of its folder
    assert named_in_instruction(instruction, folders).missing == ("/app/hello.txt", "/app/docs", "/app/data/in.csv")


def test_hidden_verifier_inputs_are_reported_apart(tmp_path: Path) -> None:
    folders = _tests(tmp_path, {"test_x.py": 'open("/app/out.txt")\nopen("/opt/golden/expected_out.txt")\n'})
    noted = named_in_instruction("Write /app/out.txt.", folders)
    assert (noted.outcome, noted.missing, noted.hidden) == ("note", (), ("/opt/golden/expected_out.txt",))
    assert "hidden verifier inputs" in noted.evidence
    both = named_in_instruction("Write something.", folders)
    assert (both.outcome, both.missing, both.hidden) == ("fault", ("/app/out.txt",), ("/opt/golden/expected_out.txt",))


def test_the_working_folder_comes_from_task_toml_else_the_dockerfile(tmp_path: Path) -> None:
    (tmp_path / "environment").mkdir()
    (tmp_path / "environment" / "Dockerfile").write_text("FROM x\nWORKDIR /srv\nWORKDIR /work\n")
    assert static.task_workdir(tmp_path) == "/work"
    (tmp_path / "task.toml").write_text('[environment]\nworkdir = "/code"\n')
    assert static.task_workdir(tmp_path) == "/code"


def test_static_checks_run_on_a_task_the_runner_cannot_load(tmp_path: Path) -> None:
    task = tmp_path / "two-containers"
    _tests(task / "tests", {"test_x.py": 'open("/app/items.json")\n'})
    (task / "environment").mkdir()
    (task / "environment" / "Dockerfile").write_text("FROM debian:12\nWORKDIR /app\n")
    (task / "environment" / "docker-compose.yaml").write_text("services:\n  api:\n    image: x\n")
    (task / "instruction.md").write_text("Write the items to items.json.")
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\necho '[]' > /app/items.json\n")
    (task / "task.toml").write_text('schema_version = "1.1"\n[task]\nname = "x/two-containers"\n')
    report = check_tasks([task], jobs_dir=tmp_path / "jobs", checks=["named_in_instruction", "before"])
    outcome = {row["check"]: (row["outcome"], row["evidence"]) for row in report.table.iter_rows(named=True)}
    assert outcome["named_in_instruction"] == ("ok", "all 1 named in the instruction")
    assert outcome["before"][0] == "error"
    assert "cannot be replayed here" in outcome["before"][1]


# ---------------------------------------------------------------- lint -------------------------------------
def test_lint_gives_harbors_message_and_style_rules_are_notes() -> None:
    style = static.lint_result([{"rule": "shared-verifier", "message": "Verifier shares the agent sandbox."}])
    assert (style.outcome, style.evidence) == (
        "note",
        "harbor lint, notes only: shared-verifier: Verifier shares the agent sandbox.",
    )
    bad = static.lint_result([{"rule": "agent-image-test-leak", "message": "Tests are in the image."}])
    assert (bad.outcome, bad.missing) == ("fault", ("agent-image-test-leak",))
    assert "Tests are in the image." in bad.evidence
    assert static.lint_result("harbor lint stopped (exit 2): no env").outcome == "error"
    assert static.lint_result([]).outcome == "ok"


# ---------------------------------------------------------------- inert mutants ----------------------------
def test_inert_commands_are_told_apart() -> None:
    script = (
        "#!/bin/bash\nset -euo pipefail\nset -- a b\nmkdir -p /app\nmkdir -p /app/new\necho 'starting' >&2\n"
        "printf '%s\\n' done\necho x > /app/x\necho x | tee /app/y\ncat > /app/run.sh <<'EOF'\necho hi\nEOF\n"
        "chmod +x /app/run.sh\nchmod +x /app/run.sh\nchmod +x /app/shipped.sh\ntrue\nmkdir -p /app/new/sub\n"
    )
    commands = top_level_commands(script)
    before = before_step(["FROM x\nWORKDIR /app\nRUN chmod +x /app/shipped.sh"], "/app")
    reasons = [(c.text.splitlines()[0], inert_reason(c, commands[:n], before)) for n, c in enumerate(commands)]
    assert reasons == [
        ("set -euo pipefail", "a shell option"),
        ("set -- a b", None),  # sets the positional parameters
        ("mkdir -p /app", "the folders exist"),
        ("mkdir -p /app/new", None),
        ("echo 'starting' >&2", "output only"),
        ("printf '%s\\n' done", "output only"),
        ("echo x > /app/x", None),
        ("echo x | tee /app/y", None),
        ("cat > /app/run.sh <<'EOF'", None),
        ("chmod +x /app/run.sh", None),  # the file was just written: not executable yet
        ("chmod +x /app/run.sh", "already executable"),  # the line before made it so
        ("chmod +x /app/shipped.sh", "already executable"),  # the image made it so
        ("true", "does nothing"),
        ("mkdir -p /app/new/sub", None),
    ]


# ---------------------------------------------------------------- the real recipes ------------------------
def test_the_cookbook_recipes_name_what_their_tests_ask(samples: Path, tmp_path: Path) -> None:
    # the ten recipes of harbor-framework/harbor-cookbook as their authors ship them (five need several
    # containers: the runner cannot replay them, the static checks read them all); read task by task in
    # docs/checks.md: every path their tests ask about is named, verbatim or relative to /app
    root = samples / "harbor-framework_harbor-cookbook" / "harbor_cookbook" / "recipes"
    if not root.is_dir():
        pytest.skip(f"the cookbook's recipes are not at {root}")
    tasks = sorted(path for path in root.iterdir() if (path / "task.toml").is_file())
    assert len(tasks) == 10
    report = check_tasks(tasks, jobs_dir=tmp_path / "jobs", checks=["named_in_instruction", "fix_not_in_instruction"])
    named = report.table.filter(pl.col("check") == "named_in_instruction")
    assert named.height == 12  # multi-step has three steps
    assert named["outcome"].unique().to_list() == ["ok"], named.select("task", "step", "evidence")
    assert named["total"].sum() == 15
    document = named.filter(pl.col("step") == "document")["evidence"].item()
    assert document == "all 3 named in the instruction"  # /app/greet.sh as `greet.sh`, /app/config.txt as `config.txt`
    # no recipe marks a key step
    assert report.table.filter(pl.col("check") == "fix_not_in_instruction")["outcome"].unique().to_list() == [
        "not_marked"
    ]
    assert report.problems == []
