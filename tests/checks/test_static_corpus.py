"""The static checks as measured on real tasks (docs/checks.md, "Measured on real tasks"): each rule the
corpus called for, on the shape it was found in, and ``scripts/check_corpus.py`` on a real git repository.

The corpus itself is never copied here: the cookbook's recipes are read from ``../shared`` (skipped with a
reason when absent); every other text below is written for the test, in the shape of the item that made
the rule (the item is named in the comment).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest

from depthlab.checks import check_tasks
from depthlab.checks.places import in_instruction
from depthlab.checks.static import (
    alternatives,
    code_of_test,
    environment_files,
    environment_ports,
    named_facts,
    named_in_instruction,
)
from depthlab.stats import proportion_ci

ROOT = Path(__file__).resolve().parents[2]


def _corpus_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_corpus", ROOT / "scripts" / "check_corpus.py")
    if spec is None or spec.loader is None:
        raise RuntimeError("scripts/check_corpus.py cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_corpus"] = module
    spec.loader.exec_module(module)
    return module


def _step(tmp_path: Path, tests: dict[str, str]) -> list[Path]:
    folder = tmp_path / "tests"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in tests.items():
        (folder / name).write_text(text)
    return [folder]


# ---------------------------------------------------------------- how an instruction names a place ----------
@pytest.mark.parametrize(
    ("fact", "instruction", "workdir"),
    [
        ("/app/submission/audit.csv", "Write `./submission/audit.csv` with header:", "/app"),  # mmtb, 30 such
        ("/app/videos", "The originals live in `/app/videos/`; copy from there.", None),  # a folder's slash
        ("/workspace/configs", "files in `/workspace/configs/` need fixing", None),
        ("port 8080", "The service is accessible at `http://localhost:8080/auth`", None),  # port then a path
        ("/root/.gnupg", "the keyring in `~/.gnupg/`", None),  # Harbor's agents are root
        ("/app/assets/clips/a.mp4", "a folder of clips (`./assets/clips/`)", "/app"),
    ],
)
def test_a_place_named_as_the_corpus_names_it_is_named(fact: str, instruction: str, workdir: str | None) -> None:
    assert in_instruction(fact, instruction, workdir)


@pytest.mark.parametrize(
    ("fact", "instruction", "workdir"),
    [
        ("/workspace/solution/decision.txt", "Save your result to `/solution/decision.txt`", "/workspace"),
        ("/app/assets/external.wav", "- `./external.wav`: the external recording", "/app"),  # another place
        ("port 80", "serve on port 8080", None),
        ("/app/x/a.json", "see `./x/b.json`", "/app"),
        ("/app/sub", "write to `./subdir/`", "/app"),
    ],
)
def test_another_place_does_not_name_it(fact: str, instruction: str, workdir: str | None) -> None:
    # the first: the defect terminal-bench-env has most often (its tests read /workspace/solution/...)
    assert not in_instruction(fact, instruction, workdir)


# ---------------------------------------------------------------- what the tests ask -------------------------
@pytest.mark.parametrize(
    ("code", "found"),
    [
        ("MAX_REPORT_ERR_MS = 500\nSERVER_PORT = 9000\n", ["port 9000"]),  # PORT a whole word of the name
        ('assert r["id"] > 0, f"Record {i}: id should be positive"\nid -u carol\n', ["user carol"]),
        ('assert "/src/" in str(path)\nif p.startswith("/app/x/"): pass\n', []),  # substring tests
        ("ref = r'#/definitions/'\npat = r'^ca=/home/u/certs/ca-bundle\\.crt$'\n", []),  # pointer, regex
        ("ratio = len(x)/sr_ref\n", []),  # division
        ("assert '</script>' not in html\nparts = p.split('/objects/')\n", []),  # a closing tag, a split
        ('open("/app/out.json")\n', ["/app/out.json"]),
    ],
)
def test_named_facts_reads_only_places(code: str, found: list[str]) -> None:
    assert named_facts(code) == found


def test_what_the_tests_copy_compile_or_run_with_pytest_is_the_verifiers_own(tmp_path: Path) -> None:
    # moodi-mercor/terminal-bench-qc: 13 fixtures copy their tests into /app and run them there
    folders = _step(
        tmp_path,
        {
            "test.sh": "cp /tests/test_outputs.py /app/test_outputs.py 2>/dev/null || true\n"
            "python3 -m pytest /app/check_more.py -q\n",
            "test_outputs.py": "import subprocess\n"
            'subprocess.run(["mpicc", "-o", "/app/sol/transpose", "/app/sol/t.c"])\n'
            'def test_msg():\n    assert True, "no file at /app/elsewhere.txt"\n',
        },
    )
    found = named_in_instruction("Write the C program to `/app/sol/t.c`.", folders)
    assert found.outcome == "ok", found.evidence
    assert found.evidence == "all 1 named in the instruction (3 of the verifier's own left out)"
    missing = named_in_instruction("Write a C program.", folders)
    assert missing.missing == ("/app/sol/t.c",)


def test_places_the_tests_accept_any_one_of_are_reported_apart(tmp_path: Path) -> None:
    # terminal-bench-env's feast and ansible tasks: several places, any one found passes
    text = (
        "def test_config():\n"
        '    paths = [Path("/workspace/feature_repo/feature_store.yaml"), Path("/workspace/feature_store.yaml"),\n'
        '             Path("./feature_store.yaml")]\n'
        "    assert any(p.exists() for p in paths)\n"
        "def test_each():\n"
        '    for p in ["/workspace/out/a.csv", "/workspace/out/b.csv"]:\n'
        "        assert Path(p).exists()\n"
    )
    assert alternatives(text) == [("/workspace/feature_repo/feature_store.yaml", "/workspace/feature_store.yaml")]
    folders = _step(tmp_path, {"test_outputs.py": text})
    found = named_in_instruction("Write `/workspace/out/a.csv` and `/workspace/out/b.csv`.", folders)
    assert found.outcome == "note", found.evidence
    assert (
        "places the tests accept any one of, none named: /workspace/feature_repo/feature_store.yaml" in found.evidence
    )
    named = named_in_instruction(
        "Write /workspace/out/a.csv, /workspace/out/b.csv, /workspace/feature_store.yaml", folders
    )
    assert named.outcome == "ok", named.evidence
    each = named_in_instruction("Write /workspace/out/a.csv and the config.", folders)
    assert each.missing == ("/workspace/out/b.csv",)  # a list checked path by path is no group


def test_a_held_out_test_set_is_a_hidden_input(tmp_path: Path) -> None:
    # multimedia-terminal-bench's mock-call-automation: test clips moved in from /opt/.test_set at grading
    code = 'SRC = Path("/opt/.test_set")\nANSWER = Path("/opt/answer_truth.txt")\nassert SRC.exists(), ANSWER\n'
    code += "print(ANSWER.stat())\n"
    folders = _step(tmp_path, {"verifier.py": code})
    found = named_in_instruction("Count the calls.", folders)
    assert (found.outcome, found.hidden) == ("note", ("/opt/.test_set", "/opt/answer_truth.txt"))
    # round 11: a name read only in an assertion's message is never read (the message asks nothing)
    (folders[0] / "verifier.py").write_text(code.replace("print(ANSWER.stat())\n", ""))
    assert named_in_instruction("Count the calls.", folders).hidden == ("/opt/.test_set",)


# ---------------------------------------------------------------- round 9 (after the replication) ----------
def test_what_the_tests_shell_sources_enters_or_writes_is_the_verifiers_own(tmp_path: Path) -> None:
    # rese1f/terminal-bench-datasets: SWE-bench's test.sh enters /testbed and sources conda (59 of 59);
    # DevEval's writes its suite's log and the Python test reads it back; a data-science task sources cargo
    folders = _step(
        tmp_path,
        {
            "test.sh": "#!/bin/bash\ncd /testbed\nsource /opt/miniconda3/bin/activate\n. /root/.cargo/env\n"
            "if (make test) > /app/unit_test.log 2>&1; then echo ok >> /app/unit_test.log; fi\n"
            "cat /app/answer.txt\necho World > /app/config.txt\n",  # an input the tests write: still asked
            "test_outputs.py": 'def test_log():\n    assert "PASSED" in open("/app/unit_test.log").read()\n',
        },
    )
    found = named_in_instruction("Fix the bug.", folders)
    assert found.missing == ("/app/answer.txt", "/app/config.txt"), found.evidence  # what the tests read counts
    named = named_in_instruction("Write /app/answer.txt; your script reads /app/config.txt.", folders)
    assert named.evidence == "all 2 named in the instruction (4 of the verifier's own left out)"


@pytest.mark.parametrize(
    ("name", "code", "found"),
    [
        # a sed address in test.sh's locale setup (13 SWE-bench tasks); the file sed edits still counts
        ("test.sh", "sed -i '/en_US.UTF-8/s/^# //g' /app/locale.gen\n", ["/app/locale.gen"]),
        # an external judge's port (56 LiveCodeBench Pro tasks); a local or service URL's port still counts
        ("t.py", 'BASE = env("BASE_URL", "http://38.80.122.117:8081")\n', []),
        ("t.py", 'u = "http://localhost:8000/x"\nv = "http://web:5000/y"\nget(u, v)\n', ["port 8000", "port 5000"]),
        # a glob's piece (Aider polyglot's test.sh), and `su` inside an expected answer (a Go test table)
        ("test.sh", 'find /tests -name "*main*.cpp" -not -path "*/test/*"\n', []),
        ("t.go", 'expected: "su pn lk",\n', []),
        ("test.sh", "su alice -c true\n", ["user alice"]),
    ],
)
def test_round_9_pieces_are_no_places(name: str, code: str, found: list[str]) -> None:
    text = code_of_test(name, code)
    assert text is not None
    assert named_facts(text) == found


# ---------------------------------------------------------------- round 10 (after round 9's held-out part) --
def test_what_the_tests_shell_writes_out_is_data_not_a_question(tmp_path: Path) -> None:
    # rese1f/terminal-bench-datasets: SWE-bench's test.sh echoes its test patch (Django URL paths, a localhost
    # link) into a file and applies it; a here-document written to a Python file is still read as Python
    folders = _step(
        tmp_path,
        {
            "test.sh": "#!/bin/bash\n"
            "echo 'diff --git a/tests/t.py b/tests/t.py\n"
            '+    r = self.client.get("/prefix/admin/login")\n'
            '+    it\'"\'"\'s at "http://localhost:7777/"\n'  # a quote in the patch, written as the shell's '"'"'
            "' > /tmp/test_patch.diff\n"
            "git apply /tmp/test_patch.diff\n"
            "cat > /etc/app.yaml <<'EOF'\nroot: /srv/data/store\nEOF\n"
            "cat > parser.py <<EOF\nopen('/app/result.json')  # /app/comment.txt\nEOF\n"
            "python3 - <<'PY'\nopen('/app/out.txt')\nPY\n"
            'echo "checking /app/message.txt"\n'
            "echo World > /app/config.txt\n",
        },
    )
    found = named_in_instruction("Fix the bug.", folders)
    assert found.missing == ("/app/result.json", "/app/out.txt", "/app/config.txt"), found.evidence


def test_what_python_tests_copy_and_what_they_never_use_are_their_own(tmp_path: Path) -> None:
    # Terminal-Bench's matlab-python-conversion copies an input itself; query-optimize defines a constant it
    # never reads; llm-inference-batching-scheduler builds plan_b{n}.json; sam-cell-seg's test.sh copies its
    # expected output out of /tests into the working folder
    folders = _step(
        tmp_path,
        {
            "test.sh": "cd /app\ncp /tests/correct_output.csv .\npytest /tests/test_outputs.py\n",
            "test_outputs.py": "import shutil\n"
            'SUMMARY = "/app/bench_summary.json"\n'
            'RESULT = Path("/app/result.csv")\n'
            "def test_x():\n"
            '    shutil.copy2("/app/cell.tif", "/app/cell2.tif")\n'
            '    plans = [f"/app/out/plan_b{n}.json" for n in (1, 2)]\n'
            '    logs = ["/app/run%d.log" % n for n in (1, 2)]\n'
            '    assert RESULT.read_text() == open("/app/correct_output.csv").read()\n',
        },
    )
    found = named_in_instruction("Segment /app/cell.tif.", folders)
    assert found.missing == ("/app/result.csv",), found.evidence
    named = named_in_instruction("Segment /app/cell.tif into /app/result.csv.", folders)
    assert named.evidence == "all 2 named in the instruction (2 of the verifier's own left out)"


# ---------------------------------------------------------------- round 11 (after round 10's held-out part) -
@pytest.mark.parametrize(
    ("name", "code", "found"),
    [
        # Aider polyglot's JavaScript reference solutions in the tests folder: regular expression literals
        ("proof.ci.js", "const up = (s) => s.replace(/./u, (c) => c.toUpperCase());\n", []),
        ("proof.ci.js", "const ops = new RegExp(/times|over/g);\nconst n = q.match(/-?\\d+/g);\n", []),
        ("proof.ci.js", 'const p = "/app/result.txt";\nconst r = total / count;\n', ["/app/result.txt"]),
        # terminal-bench-env: a Python pattern's piece (`in /.+$`) and a netmask (`|/24)`)
        ("t.py", "ok = re.compile(r'^FOUND: .+ at /.+$')\nm = re.search(r'(mask 255\\.0\\.0\\.0|/8)', s)\n", []),
        ("t.py", 'open("/data/2024/run.log")\n', ["/data/2024/run.log"]),  # a number inside a path is no netmask
    ],
)
def test_round_11_pieces_of_patterns_are_no_places(name: str, code: str, found: list[str]) -> None:
    text = code_of_test(name, code)
    assert text is not None
    assert named_facts(text) == found


def test_an_expected_answer_compared_as_a_string_asks_nothing(tmp_path: Path) -> None:
    # terminal-bench-env: an answer the agent's JSON value is compared with (a persistence path, a job's working
    # folder), directly or through a name; a REST route in an answer; the report file itself is still asked
    folders = _step(
        tmp_path,
        {
            "test_outputs.py": "import json\n"
            "def test_answer():\n"
            '    data = json.load(open("/srv/report/findings.json"))\n'
            '    wanted = "/home/kim/.local/share/boot.sh"\n'
            '    assert data["dropper"] == wanted, f"expected {wanted}"\n'
            '    assert data["route"] != "/v2/account/phone"\n'
            '    allowed = {"/usr/local/sbin/sync_tool", "/srv/tools/dump"}\n'
            '    assert set(data["binaries"]) == allowed\n'
            '    assert "/srv/keys/id.pub" in data["keys"]\n'
            "def test_place():\n"
            '    log = "/srv/report/run.log"\n'
            "    assert open(log).read() == ''\n",
        },
    )
    found = named_in_instruction("Investigate the host.", folders)
    assert found.missing == ("/srv/report/findings.json", "/srv/report/run.log"), found.evidence


def test_what_python_tests_make_or_hand_over_through_a_name_is_their_own(tmp_path: Path) -> None:
    # terminal-bench-env: a binary the tests compile with `"-o", str(binary)`; output files the tests choose and
    # give the agent's script as arguments; the script itself and the sources it compiles are still asked
    folders = _step(
        tmp_path,
        {
            "test_outputs.py": "import subprocess, sys\n"
            "from pathlib import Path\n"
            "def test_build():\n"
            '    binary = Path("/srv/build/lockbench")\n'
            '    subprocess.run(["cc", "-o", str(binary), "/srv/src/lockbench.c"], check=True)\n'
            "    subprocess.run([str(binary)], check=True)\n"
            "def test_restore():\n"
            '    tool = Path("/srv/restore.py")\n'
            '    target = Path("/srv/restored_v3.txt")\n'
            '    subprocess.run([sys.executable, str(tool), "3", str(target)], check=True)\n'
            "    assert target.read_text()\n"
            "def test_each_listed():\n"
            '    for p in ["/srv/a.cfg", "/srv/b.cfg", "/srv/c.cfg"]:\n'  # a list, not an argument list
            "        assert Path(p).exists()\n",
        },
    )
    found = named_in_instruction("Fix the code.", folders)
    assert found.missing == ("/srv/src/lockbench.c", "/srv/restore.py", "/srv/a.cfg", "/srv/b.cfg", "/srv/c.cfg")
    named = named_in_instruction("Fix /srv/src/lockbench.c; write /srv/restore.py; /srv/a.cfg, b.cfg, c.cfg", folders)
    assert named.missing == ("/srv/b.cfg", "/srv/c.cfg"), named.evidence


def test_a_fallback_read_only_when_the_named_place_is_absent_is_no_question(tmp_path: Path) -> None:
    # terminal-bench-env's SAT-portfolio task: the inputs in one folder, another read only when it is absent
    text = (
        "def test_all_solved():\n"
        '    inputs = Path("/srv/instances")\n'
        "    if not inputs.exists():\n"
        '        inputs = Path("/srv/share/instances")\n'
        '    assert list(inputs.glob("*.cnf"))\n'
    )
    assert alternatives(text) == [("/srv/instances", "/srv/share/instances")]
    folders = _step(tmp_path, {"test_outputs.py": text})
    assert named_in_instruction("Solve each file in /srv/instances/.", folders).outcome == "ok"
    assert named_in_instruction("Solve them.", folders).outcome == "note"


def test_code_the_tests_folder_ships_for_the_agent_and_nothing_runs_asks_nothing(tmp_path: Path) -> None:
    # terminal-bench-env's k6 task (round 11's held-out part): the broken k6 scripts the agent is to fix sit in the
    # tests folder, which runs only pytest; their endpoint table's REST routes were read as places (round 12)
    shipped = {
        "test.sh": "#!/bin/bash\npytest /tests/test_outputs.py -rA\n",
        "test_outputs.py": "from pathlib import Path\n"
        "def test_script():\n"
        '    assert "thresholds" in Path("/srv/load/plan.js").read_text()\n',
        "config.js": "export const ENDPOINTS = {\n  login: '/v1/session/open',\n  basket: '/v1/basket',\n};\n",
        "shop_flow.js": "import { ENDPOINTS } from './config.js';\nconst out = open('/srv/load/seed.csv');\n",
    }
    folders = _step(tmp_path / "unrun", shipped)
    assert named_in_instruction("Write your k6 script to /srv/load/plan.js.", folders).outcome == "ok"
    # the same scripts run by the tests (a runner started, or a script named) are the verifier's code: still read
    run = shipped | {"test.sh": "#!/bin/bash\nk6 run /tests/shop_flow.js && pytest /tests/test_outputs.py\n"}
    found = named_in_instruction("Write your k6 script to /srv/load/plan.js.", _step(tmp_path / "run", run))
    assert found.missing == ("/v1/session/open", "/v1/basket", "/srv/load/seed.csv"), found.evidence
    named = shipped | {"test_outputs.py": shipped["test_outputs.py"] + 'SCRIPT = "/tests/shop_flow.js"\n'}
    found = named_in_instruction("Write your k6 script to /srv/load/plan.js.", _step(tmp_path / "named", named))
    assert found.missing == ("/v1/session/open", "/v1/basket", "/srv/load/seed.csv"), found.evidence


@pytest.mark.parametrize(
    ("name", "code", "found"),
    [
        # the k6 task's GraphQL queries: `id` closing a line, a field's name on the next (`user name`, round 11)
        ("flow.js", "const q = `\n  query {\n    orders {\n      id\n      total\n    }\n  }\n`;\n", []),
        ("test_api.py", 'Q = """\n{\n  customer {\n    id\n    email\n  }\n}\n"""\n', []),
        ("test.sh", "id -u carol\nsu dave -c true\n", ["user carol", "user dave"]),  # a command's own line
    ],
)
def test_round_12_a_graphql_field_list_is_no_account(name: str, code: str, found: list[str]) -> None:
    text = code_of_test(name, code)
    assert text is not None
    assert named_facts(text) == found


# ---------------------------------------------------------------- round 13 (after round 12's held-out part) -
def test_a_sentence_the_tests_build_as_input_is_no_place(tmp_path: Path) -> None:
    # terminal-bench-env's error-grouping task: sample error events handed to the agent's hook, their messages
    # holding made-up paths and routes (round 12's held-out part, five items); a command line still counts
    folders = _step(
        tmp_path,
        {
            "test_outputs.py": "import subprocess\n"
            "def test_grouping():\n"
            '    first = {"error": {"kind": "IOError", "text": "Access refused opening /srv/one/a.log"}}\n'
            '    second = {"error": {"kind": "Timeout", "text": "Gateway timed out on /v3/carts"}}\n'
            '    assert hook(first) == hook({"error": {"text": "Access refused: /x/b.log"}})\n'
            '    subprocess.run("cat /srv/report/out.txt", shell=True)\n'
            '    Path("/srv/hook.cfg").write_text("Send alerts to /srv/alerts daily\\nstore: /srv/spool here")\n',
        },
    )
    found = named_in_instruction("Write the hook to /srv/hook.py.", folders)
    # a file's text of several lines is not one sentence: what it names further on is still read (the file the
    # tests write it to is theirs since round 14)
    assert found.missing == ("/srv/report/out.txt", "/srv/alerts", "/srv/spool"), found.evidence


def test_an_answer_list_the_agents_value_is_looked_up_in_asks_nothing(tmp_path: Path) -> None:
    # terminal-bench-env's cargo linker task: the config path the agent reports must be one of several accepted
    # places (`reported in accepted`, the list grown afterwards); a list walked place by place is still asked
    folders = _step(
        tmp_path,
        {
            "test_outputs.py": "import json, os\n"
            "def test_place():\n"
            '    reported = Path(json.load(open("/srv/answer.json"))["config"])\n'
            '    accepted = [Path("/srv/proj/.tool/conf"), Path("/srv/.tool/conf")]\n'
            '    accepted.extend([Path(os.environ["HOME"]) / ".tool" / "conf"])\n'
            "    assert reported in accepted\n"
            '    assert reported.name not in ("/srv/old.conf", "/srv/older.conf")\n'
            "def test_each():\n"
            '    for place in [Path("/srv/a.out"), Path("/srv/b.out")]:\n'
            "        assert place.exists()\n",
        },
    )
    found = named_in_instruction("Report it in /srv/answer.json.", folders)
    assert found.missing == ("/srv/a.out", "/srv/b.out"), found.evidence


def test_what_a_compiler_the_tests_run_writes_beside_its_source_is_theirs(tmp_path: Path) -> None:
    # terminal-bench-env's Coq task: the tests run `coqc` on the agent's proof and look for the object file it
    # writes beside it (round 12's held-out part); another file of the folder is still asked
    folders = _step(
        tmp_path,
        {
            "test.sh": "#!/bin/bash\njavac /srv/src/Main.java && test -f /srv/src/Main.class\n",
            "test_outputs.py": "import subprocess\n"
            "def test_build():\n"
            '    proof = Path("/srv/lemma.v")\n'
            '    subprocess.run(["coqc", str(proof)], cwd="/srv")\n'
            '    assert Path("/srv/lemma.vo").exists()\n'
            '    assert Path("/srv/lemma_notes.txt").exists()\n',
        },
    )
    found = named_in_instruction("Fix /srv/lemma.v and /srv/src/Main.java.", folders)
    assert found.missing == ("/srv/lemma_notes.txt",), found.evidence


def test_a_url_sent_as_a_requests_data_is_no_connection(tmp_path: Path) -> None:
    # terminal-bench-env's PKCE task: a redirect URI's port sent as a form value and a query parameter; the port
    # the tests connect to is still asked (round 12's held-out part)
    folders = _step(
        tmp_path,
        {
            "test_outputs.py": "import requests\n"
            'FORM = {"grant": "code", "return_to": "http://localhost:9123/done"}\n'
            "def test_flow():\n"
            '    requests.get("http://localhost:7001/start", params={"next": "http://127.0.0.1:9124/back"})\n'
            '    requests.post("http://localhost:7001/swap", data=FORM)\n',
        },
    )
    assert named_in_instruction("Fix the service.", folders).missing == ("port 7001",)
    assert named_in_instruction("Fix the service on port 7001.", folders).outcome == "ok"


def test_a_file_uri_names_its_path() -> None:
    # terminal-bench-env's MLflow task: the instruction's example names the store as `file:///...` (round 12's
    # held-out part); another scheme's path is another place
    assert in_instruction("/srv/runs", "e.g. `store_uri=file:///srv/runs`")
    assert in_instruction("/srv/runs/meta.yaml", "store under FILE:///srv/runs/")
    assert not in_instruction("/srv/runs", "e.g. `store_uri=s3://bucket/srv/runs`")


def test_the_port_of_a_shipped_server_the_tests_start_is_theirs(tmp_path: Path) -> None:
    # terminal-bench-env's Flask tasks: the tests start the server the image ships (its port set in its own code)
    # and connect to it (round 12's held-out part, three debatable items); a port the environment does not set,
    # or a server the tests do not start, is still asked
    task = tmp_path / "task"
    (task / "environment" / "svc").mkdir(parents=True)
    (task / "environment" / "svc" / "serve.py").write_text("app.run(host='0.0.0.0', port=6100)\n")
    test = (
        "import subprocess, requests\n"
        'SERVER = Path("/srv/svc/serve.py")\n'
        "def test_up():\n"
        '    proc = subprocess.Popen(["python3", str(SERVER)])\n'
        '    assert requests.get("http://localhost:6100/health").ok\n'
        '    assert requests.get("http://localhost:6200/metrics").ok\n'
    )
    folders = _step(task, {"test_outputs.py": test})
    ports, shipped = environment_ports(task), environment_files(task)
    assert ports == frozenset({"port 6100"})
    found = named_in_instruction("Fix /srv/svc/serve.py.", folders, environment=shipped, ports=ports)
    assert found.missing == ("port 6200",), found.evidence
    unstarted = test.replace('    proc = subprocess.Popen(["python3", str(SERVER)])\n', "")
    (folders[0] / "test_outputs.py").write_text(unstarted)
    found = named_in_instruction("Fix /srv/svc/serve.py.", folders, environment=shipped, ports=ports)
    assert found.missing == ("port 6100", "port 6200"), found.evidence


def test_a_port_in_a_python_test_that_connects_nowhere_asks_nothing(tmp_path: Path) -> None:
    # terminal-bench-env's circuit-breaker task: URLs the tests hand the agent's function so that its calls fail
    # (round 13's held-out part, four ports); a test that connects (an HTTP client, `curl` in a command, a client in
    # a module of the tests) still asks its ports, and so does the shell
    handed = (
        "from breaker import call_through\n"
        "def test_opens():\n"
        "    for _ in range(4):\n"
        '        call_through("http://localhost:7311/down")\n'
        '    assert call_through("http://127.0.0.1:7312/also-down") is None\n'
    )
    folders = _step(tmp_path, {"test_outputs.py": handed})
    found = named_in_instruction("Write the breaker in /srv/breaker.py.", folders)
    assert found.outcome == "ok", found.evidence
    (folders[0] / "test_outputs.py").write_text(handed.replace("from breaker", "import httpx\nfrom breaker"))
    assert named_in_instruction("Fix it.", folders).missing == ("port 7311", "port 7312")
    (folders[0] / "test_outputs.py").write_text(
        handed + 'def test_up():\n    subprocess.run("sleep 2; curl -sf http://localhost:7313/health", shell=True)\n'
    )
    assert named_in_instruction("Fix it.", folders).missing == ("port 7311", "port 7312", "port 7313")
    (folders[0] / "test_outputs.py").write_text(handed)
    (folders[0] / "test.sh").write_text("#!/bin/bash\ncurl -s localhost:7314/ready\n")
    assert named_in_instruction("Fix it.", folders).missing == ("port 7314",)
    (folders[0] / "helpers.py").write_text("import socket\n")  # the tests' client in a module of theirs
    assert named_in_instruction("Fix it.", folders).missing == ("port 7314", "port 7311", "port 7312")


def test_what_a_python_test_writes_itself_is_its_own(tmp_path: Path) -> None:
    # terminal-bench-env's Spark task: the tests write the agent's threshold into a config file with
    # `Path.write_text`, then run a script (round 13's held-out part); `open(..., "w")` and a mode through `mode=`
    # likewise; a file only read is still asked
    folders = _step(
        tmp_path,
        {
            "test_outputs.py": "import subprocess\n"
            "def test_run():\n"
            '    value = Path("/srv/answer.txt").read_text()\n'
            '    settings = Path("/srv/job.conf")\n'
            "    settings.write_text(value)\n"
            '    with open("/srv/extra.ini", "a") as handle:\n'
            '        handle.write("x")\n'
            '    Path("/srv/seed.bin").open(mode="wb").close()\n'
            '    subprocess.run(["python3", "/srv/job.py"])\n'
            '    assert open("/srv/job.log").read()\n',
        },
    )
    found = named_in_instruction("Write the threshold to /srv/answer.txt.", folders)
    assert found.missing == ("/srv/job.py", "/srv/job.log"), found.evidence


def test_a_string_used_as_a_subscript_key_is_no_place(tmp_path: Path) -> None:
    # terminal-bench-env's ZooKeeper task: node paths as keys of the final state the agent reports, read through a
    # subscript (round 13's held-out part, two items); the same string read as a place elsewhere is still asked
    folders = _step(
        tmp_path,
        {
            "test_outputs.py": "import json\n"
            "def test_state():\n"
            '    state = json.loads(Path("/srv/state.json").read_text())\n'
            '    assert state["/cfg/store/user"] == "ops"\n'
            '    assert state["/cfg/store/secret"]\n'
            '    assert Path("/srv/cache")["/srv/cache/keys"] is not None\n'
            '    assert Path("/srv/cache/keys").exists()\n',
        },
    )
    found = named_in_instruction("Report the state in /srv/state.json.", folders)
    assert found.missing == ("/srv/cache", "/srv/cache/keys"), found.evidence


# ---------------------------------------------------------------- round 16 (after the confirmation) ---------
def test_a_patterns_piece_after_a_real_name_is_no_place(tmp_path: Path) -> None:
    # terminal-bench-env's snapshot task: the agent's reported value matched against a pattern whose group holds a
    # real folder and then `.+` (the confirmation's part); the folder alone, read as a place, is still asked
    text = code_of_test("t.py", "m = re.fullmatch(r'^newest=(/backups/.+)$', line)\nopen('/backups/index.txt')\n")
    assert text is not None
    assert named_facts(text) == ["/backups/index.txt"]
    assert named_facts("re.search(r'/var2/.+/log', s)\n") == []


def test_the_port_the_tests_start_a_shipped_app_on_is_theirs(tmp_path: Path) -> None:
    # terminal-bench-env: the tests import the Flask app the image ships and run it in a thread on a port of their
    # own (the confirmation's part), or start a shipped FastAPI app as a module on their command line (round 14's
    # held-out part); a port of an app the environment does not ship, and another port, are still asked
    task = tmp_path / "task"
    (task / "environment" / "shop").mkdir(parents=True)
    (task / "environment" / "shop" / "views.py").write_text("app = Flask(__name__)\n")
    (task / "environment" / "api.py").write_text("api = FastAPI()\n")
    threaded = (
        "import requests\n"
        "from threading import Thread\n"
        "from shop.views import app as shop_app\n"
        "def serve():\n"
        "    shop_app.run(host='127.0.0.1', port=6611, debug=False)\n"
        "def test_gzip():\n"
        "    Thread(target=serve, daemon=True).start()\n"
        '    assert requests.get("http://127.0.0.1:6611/items").ok\n'
        '    assert requests.get("http://127.0.0.1:6612/other").ok\n'
    )
    folders = _step(task, {"test_outputs.py": threaded})
    shipped = environment_files(task)
    found = named_in_instruction("Fix the compression of /srv/shop.", folders, environment=shipped)
    assert found.missing == ("port 6612",), found.evidence
    # the Flask task's file has a syntax error in a later test (an unterminated string): read up to it
    broken = threaded + "def test_header():\n    assert r.headers.get('Content-Encoding', ')\n"
    (folders[0] / "test_outputs.py").write_text(broken)
    found = named_in_instruction("Fix the compression of /srv/shop.", folders, environment=shipped)
    assert found.missing == ("port 6612",), found.evidence
    module = (
        "import subprocess, requests\n"
        "def test_isolation():\n"
        '    proc = subprocess.Popen(["python", "-m", "uvicorn", "api:api", "--host", "0.0.0.0", "--port", "8701"])\n'
        '    assert requests.get("http://localhost:8701/a").ok\n'
    )
    (folders[0] / "test_outputs.py").write_text(module)
    assert named_in_instruction("Fix /srv/api.py.", folders, environment=shipped).outcome == "ok"
    found = named_in_instruction("Fix /srv/api.py.", folders, environment=frozenset({"other.py"}))
    assert found.missing == ("port 8701",), found.evidence


def test_a_compilers_target_on_the_next_line_is_the_tests_own(tmp_path: Path) -> None:
    # terminal-bench-env's prefetch task: gcc's argument list written one argument a line, `"-o",` then the literal
    # path (the confirmation's part, two items); the source the tests compile is still asked
    folders = _step(
        tmp_path,
        {
            "test_outputs.py": "import subprocess\n"
            "def test_build():\n"
            "    cmd = [\n"
            '        "gcc",\n'
            '        "-O2",\n'
            '        "/srv/fast/kernel.c",\n'
            '        "-o",\n'
            '        "/srv/fast/kernel_bin",\n'
            "    ]\n"
            "    subprocess.run(cmd, check=True)\n"
            '    subprocess.run(["/srv/fast/kernel_bin"], check=True)\n',
        },
    )
    found = named_in_instruction("Optimise the kernel.", folders)
    assert found.missing == ("/srv/fast/kernel.c",), found.evidence


def test_what_npm_install_writes_in_a_named_folder_is_named(tmp_path: Path) -> None:
    # terminal-bench-env's native-module task: the instruction requires `npm install` to complete in a folder it
    # names (a bare top folder, which names nothing under it by itself) and a module to be installed; the tests
    # look for that folder's `node_modules` and the module in it (the confirmation's part, two items). Without the
    # install named, or in another folder, they are still asked
    test = (
        "def test_installed():\n"
        '    assert Path("/app/node_modules").is_dir()\n'
        '    assert Path("/app/node_modules/imgkit").is_dir()\n'
    )
    folders = _step(tmp_path, {"test_outputs.py": test})
    said = "Make `npm install` complete in `/app` so that the imgkit module is installed."
    assert named_in_instruction(said, folders).outcome == "ok"
    assert named_in_instruction("Make `npm install` complete.", folders, workdir="/app").outcome == "ok"
    found = named_in_instruction("Make the imgkit module work in `/app`.", folders)
    assert found.missing == ("/app/node_modules", "/app/node_modules/imgkit"), found.evidence
    found = named_in_instruction("Make `npm install` complete in `/srv`.", folders, workdir="/srv")
    assert found.missing == ("/app/node_modules", "/app/node_modules/imgkit"), found.evidence


def test_a_vault_client_is_a_connection(tmp_path: Path) -> None:
    # round 14's held-out part: the tests run the `vault` client against the server (a port the instruction names,
    # so no row changed); its port counts as a connection's
    test = 'def test_kv():\n    subprocess.run(["vault", "kv", "get", "-address=http://127.0.0.1:8655", "kv/a"])\n'
    folders = _step(tmp_path, {"test_outputs.py": test})
    assert named_in_instruction("Store the secret.", folders).missing == ("port 8655",)


def test_what_the_tests_cargo_build_writes_is_their_own(tmp_path: Path) -> None:
    # round 16's held-out part (tb21, two tasks): test.sh builds the agent's crate itself and copies cargo's release
    # binary to the place the instruction names; `target/` is the verifier's own build. Without the build in the
    # tests, the same path is asked (and, its name given elsewhere, a fault: round 17)
    build = (
        "cd /app && cargo build --release\n"
        "cp /app/target/release/skew-cal /app/bin/skew-cal\n"
        "/app/bin/skew-cal --check\n"
    )
    folders = _step(tmp_path, {"test.sh": build})
    said = "Build the indexer so that `/app/bin/skew-cal` runs."
    assert named_in_instruction(said, folders).outcome == "ok"
    plain = _step(tmp_path / "plain", {"test.sh": "/app/target/release/skew-cal --check\n"})
    found = named_in_instruction(said, plain)
    assert (found.outcome, found.wrong) == ("fault", ("/app/target/release/skew-cal",)), found.evidence


def test_the_verdict_is_a_fault_only_where_the_instruction_gets_a_place_wrong(tmp_path: Path) -> None:
    # round 17: named elsewhere (terminal-bench-env's generator: `/output/x` said, `/workspace/output/x` read), or no
    # place named at all (LiveCodeBench Pro's migrated `base`), is a fault with its cause; a place named nowhere is a
    # note, listed apart (on held-out corpora mostly the verifier's own: a Makefile run if present, a folder cleaned)
    test = (
        "def test_out():\n"
        '    assert Path("/workspace/output/a.csv").exists()\n'
        '    assert Path("/app/Makefile").exists()\n'
    )
    folders = _step(tmp_path, {"test_outputs.py": test})
    wrong = named_in_instruction("Save the table to `/output/a.csv`.", folders)
    assert (wrong.outcome, wrong.missing, wrong.wrong) == (
        "fault",
        ("/workspace/output/a.csv", "/app/Makefile"),
        ("/workspace/output/a.csv",),
    )
    assert wrong.evidence == (
        "not in the instruction: /workspace/output/a.csv; named elsewhere: /workspace/output/a.csv as /output/a.csv; "
        "not named anywhere in the instruction (a note; often the verifier's own): /app/Makefile"
    )
    script = _corpus_script()
    row = {"outcome": wrong.outcome, "evidence": wrong.evidence}
    assert (script.flagged_items(row), script.unplaced_items(row)) == (["/workspace/output/a.csv"], ["/app/Makefile"])
    note = named_in_instruction("Save the table to `/workspace/output/a.csv`.", folders)
    assert (note.outcome, note.missing, note.wrong) == ("note", ("/app/Makefile",), ())
    assert note.evidence.endswith("; the other 1 named in the instruction")
    assert script.flagged_items({"outcome": "note", "evidence": note.evidence}) == []
    base = named_in_instruction("base", folders)
    assert base.wrong == ("/workspace/output/a.csv", "/app/Makefile"), base.evidence
    # a bare file name without a suffix, a word, says no place: `Makefile` in prose names nothing
    assert named_in_instruction("Keep the Makefile; write /output/b.csv.", folders).wrong == ()


def test_what_the_tests_only_assert_absent_or_remove_asks_nothing(tmp_path: Path) -> None:
    # round 17's held-out part: a multi-step corpus's absence guards (each step's tests assert that later steps'
    # files do not exist yet: 129 items) and the tests clearing the way (`rm -f` of a stale output before their own
    # build, a shipped reference binary unlinked before the agent's runs). A path also read elsewhere stays asked
    test = (
        'LATER = Path("/app/3_report.json")\n'
        "def test_step_one():\n"
        '    assert not Path("/app/2_index.sqlite").exists()\n'
        "    assert not LATER.exists()\n"
        '    os.unlink("/app/reference/mkfs")\n'
        '    assert Path("/app/out.json").exists()\n'
    )
    shell = "rm -f /app/output.txt\n[ ! -e /app/later.bin ] || exit 1\nrm -rf /app/cache\ncat /app/cache/x\n"
    folders = _step(tmp_path, {"test_outputs.py": test, "test.sh": shell})
    found = named_in_instruction("Write `/app/out.json`.", folders)
    assert found.missing == ("/app/cache/x",), found.evidence
    both = _step(tmp_path / "both", {"test_outputs.py": test, "test.sh": "cat /app/3_report.json\n"})
    assert named_in_instruction("Write `/app/out.json`.", both).missing == ("/app/3_report.json",)


def test_what_a_test_shell_builds_runs_and_names_at_run_time_is_its_own(tmp_path: Path) -> None:
    # round 17's held-out part (seven tasks of one corpus): test.sh compiles the agent's Kotlin sources into a jar,
    # runs it on each scenario with an output path built from the scenario's name, under a placeholder-free prose
    # instruction; also a path meant to be absent, pytest's cache, and `127.0.0.1` after a comma (no port)
    shell = (
        "rm -f /app/output.txt\n"
        "kotlinc /app/src/*.kt -include-runtime -d /app/sim.jar\n"
        "for s in /app/scenarios/*.txt; do name=$(basename $s .txt)\n"
        '    java -jar /app/sim.jar "$s" "/app/output.$name.txt"; done\n'
        "rm -rf /app/.pytest_cache\n"
        "export NO_PROXY=localhost,127.0.0.1\n"
        "validate --file /nonexistent/file.mp4 && exit 1\n"
    )
    folders = _step(tmp_path, {"test.sh": shell})
    said = "Fix the scheduler in the Kotlin sources so that no scenario misses its deadline."
    found = named_in_instruction(said, folders)
    # the agent's sources it compiles and the shipped inputs it feeds are still asked
    assert found.missing == ("/app/src", "/app/scenarios"), found.evidence
    assert found.outcome == "note"  # a prose instruction without a path is no placeholder (round 18)
    assert named_in_instruction("base", folders).outcome == "fault"  # a placeholder is


# ---------------------------------------------------------------- round 10's held-out part ------------------
def test_round_10_held_out_figures_follow_from_the_labels() -> None:
    # docs/checks.md's round 10 table, recomputed from the hand labels (scripts/corpus_labels.csv): every item
    # the frozen rules flagged on the two parts, one label each, and the Wilson interval of the pooled precision
    labels = pl.read_csv(ROOT / "scripts" / "corpus_labels.csv", infer_schema=False).fill_null("")
    assert labels.select("corpus", "task", "step", "check", "item").is_duplicated().sum() == 0
    assert set(labels["label"]) == {"true", "debatable", "false"}
    assert labels.filter(pl.col("why") == "").height == 0  # each label says why
    held = labels.filter(pl.col("corpus").is_in(["tbdatasets3", "tbenv8"]))
    counts = {
        (corpus, label): n for corpus, label, n in held.group_by("corpus", "label").len().rows()
    }  # fmt: skip
    assert counts == {
        ("tbdatasets3", "true"): 80,
        ("tbdatasets3", "false"): 3,
        ("tbenv8", "true"): 39,
        ("tbenv8", "debatable"): 2,
        ("tbenv8", "false"): 9,
    }
    true = held.filter(pl.col("label") == "true").height
    low, high = proportion_ci([true], [held.height])
    assert (true, held.height, round(true / held.height, 2)) == (119, 133, 0.89)
    assert (round(float(low[0]), 2), round(float(high[0]), 2)) == (0.83, 0.94)
    assert true / held.height < 0.9  # the goal is not met on this part: docs/checks.md says "not replicated"


def _held_out_figures(*corpora: str) -> tuple[dict[tuple[str, str], int], list[tuple[int, int, float, float, float]]]:
    """A held-out part's hand labels counted by (corpus, label), and its two figures (pooled, then without the
    LiveCodeBench Pro tasks): true, flagged, precision and its Wilson interval, each rounded as the docs give it."""
    labels = pl.read_csv(ROOT / "scripts" / "corpus_labels.csv", infer_schema=False).fill_null("")
    held = labels.filter(pl.col("corpus").is_in(corpora))
    counts = {(corpus, label): n for corpus, label, n in held.group_by("corpus", "label").len().rows()}
    without = held.filter(~pl.col("task").str.starts_with("livecodebenchpro/"))
    figures = []
    for part in (held, without):
        true = part.filter(pl.col("label") == "true").height
        low, high = proportion_ci([true], [part.height])
        figures.append(
            (true, part.height, round(true / part.height, 2), round(float(low[0]), 2), round(float(high[0]), 2))
        )
    return counts, figures


def test_round_11_held_out_figures_follow_from_the_labels() -> None:
    # docs/checks.md's round 11 table: the figure stated first (pooled over both parts, pre-registered at
    # 5024e4b), then without the LiveCodeBench Pro tasks, each with its Wilson interval, from the hand labels
    counts, figures = _held_out_figures("tbdatasets4", "tbenv9")
    assert counts == {
        ("tbdatasets4", "true"): 84,
        ("tbenv9", "true"): 30,
        ("tbenv9", "debatable"): 1,
        ("tbenv9", "false"): 7,
    }
    assert figures == [(114, 122, 0.93, 0.88, 0.97), (30, 38, 0.79, 0.64, 0.89)]
    assert figures[0][3] < 0.9 <= figures[0][2]  # above 0.9 as a point, not beyond its interval
    assert figures[1][2] < 0.9  # without the one adapter: not replicated


def test_round_12_held_out_figures_follow_from_the_labels() -> None:
    # docs/checks.md's round 12 table: the two figures pre-registered at c8bd125 (pooled over both parts, and
    # without the LiveCodeBench Pro tasks), each with its Wilson interval, recomputed from the hand labels
    counts, figures = _held_out_figures("tbdatasets5", "tbenv10")
    assert counts == {
        ("tbdatasets5", "true"): 74,
        ("tbenv10", "true"): 35,
        ("tbenv10", "debatable"): 5,
        ("tbenv10", "false"): 10,
    }
    assert figures == [(109, 124, 0.88, 0.81, 0.93), (35, 50, 0.7, 0.56, 0.81)]
    assert all(figure[2] < 0.9 for figure in figures)  # neither reaches 0.9: docs/checks.md says "not replicated"


def test_round_13_held_out_figures_follow_from_the_labels() -> None:
    # docs/checks.md's round 13 table: the two figures pre-registered at 2b6b426 (rules frozen at 89a110d), pooled
    # over both parts and without the LiveCodeBench Pro tasks, each with its Wilson interval, from the hand labels
    counts, figures = _held_out_figures("tbdatasets6", "tbenv11")
    assert counts == {
        ("tbdatasets6", "true"): 76,
        ("tbenv11", "true"): 46,
        ("tbenv11", "debatable"): 2,
        ("tbenv11", "false"): 7,
    }
    assert figures == [(122, 131, 0.93, 0.87, 0.96), (46, 55, 0.84, 0.72, 0.91)]
    assert figures[0][3] < 0.9 <= figures[0][2]  # pooled: at least 0.9 as a point, not beyond its interval
    assert figures[1][2] < 0.9  # without the one adapter it falls short: docs/checks.md says "not replicated"


def test_round_14_held_out_figures_follow_from_the_labels() -> None:
    # docs/checks.md's round 14 table: the two figures pre-registered at 3315542 (rules frozen at 41aefe6), pooled
    # over both parts and without the LiveCodeBench Pro tasks, each with its Wilson interval, from the hand labels
    counts, figures = _held_out_figures("tbdatasets7", "tbenv12")
    assert counts == {
        ("tbdatasets7", "true"): 89,
        ("tbenv12", "true"): 49,
        ("tbenv12", "debatable"): 2,
        ("tbenv12", "false"): 1,
    }
    assert figures == [(138, 141, 0.98, 0.94, 0.99), (49, 52, 0.94, 0.84, 0.98)]
    assert all(figure[2] >= 0.9 for figure in figures)  # both at least 0.9 as points: replicated by the rule
    assert figures[0][3] >= 0.9 > figures[1][3]  # the pooled interval's lower end reaches 0.9, the second's not


def test_round_14_confirmation_figures_follow_from_the_labels() -> None:
    # docs/checks.md's confirmation of round 14's rules (still frozen at 41aefe6) on the last unread tasks of both
    # corpora, pre-registered at 1b17ac0: the same two figures, then the third stated beside them (without the
    # LiveCodeBench Pro tasks, over both held-out draws of round 14's rules), each with its Wilson interval
    counts, figures = _held_out_figures("tbdatasets8", "tbenv13")
    assert counts == {
        ("tbdatasets8", "true"): 91,
        ("tbenv13", "true"): 38,
        ("tbenv13", "debatable"): 6,
        ("tbenv13", "false"): 6,
    }
    assert figures == [(129, 141, 0.91, 0.86, 0.95), (38, 50, 0.76, 0.63, 0.86)]
    assert figures[0][2] >= 0.9 > figures[1][2]  # the second falls short: docs/checks.md says "not replicated"
    assert figures[1][4] < 0.9  # without the one adapter even the interval's upper end is under 0.9
    _, both = _held_out_figures("tbdatasets7", "tbenv12", "tbdatasets8", "tbenv13")
    assert both[1] == (87, 102, 0.85, 0.77, 0.91)


def test_round_16_held_out_figure_on_a_new_corpus_follows_from_the_labels() -> None:
    # docs/checks.md's round 16 held-out part (pre-registered at dbe6130, rules frozen at 133e83b): 27 tasks of
    # Saud008/terminal-bench-2.1 rebuilt from the code index; one figure (no LiveCodeBench Pro task), and the same
    # without the four items the rebuilt copy caused (a script the image ships that the index holds no copy of)
    counts, figures = _held_out_figures("tb21")
    assert counts == {("tb21", "false"): 13}
    assert figures[0] == (0, 13, 0.0, 0.0, 0.23)
    labels = pl.read_csv(ROOT / "scripts" / "corpus_labels.csv", infer_schema=False)
    by_copy = labels.filter((pl.col("corpus") == "tb21") & pl.col("why").str.contains("holds no copy"))
    assert by_copy.height == 4
    low, high = proportion_ci([0], [13 - by_copy.height])
    assert (round(float(low[0]), 2), round(float(high[0]), 2)) == (0.0, 0.3)


def test_round_17_held_out_figures_follow_from_the_labels() -> None:
    # docs/checks.md's round 17 held-out part (rules frozen and figures pre-registered at 9027424): 189 tasks of three
    # corpora no round had read; the items round 17's rules listed (scripts/corpus_round17_items.csv, the corpus
    # script's output) joined to the hand labels, each figure in the pre-registered order
    items = pl.read_csv(ROOT / "scripts" / "corpus_round17_items.csv", infer_schema=False)
    labels = pl.read_csv(ROOT / "scripts" / "corpus_labels.csv", infer_schema=False).fill_null("")
    joined = items.join(labels, on=["corpus", "task", "step", "check", "item"], how="left")
    assert joined.height == items.height == 264
    assert joined["label"].null_count() == 0

    def figure(part: pl.DataFrame) -> tuple[int, int, float, float, float]:
        true = part.filter(pl.col("label") == "true").height
        low, high = proportion_ci([true], [part.height])
        return true, part.height, round(true / part.height, 3), round(float(low[0]), 3), round(float(high[0]), 3)

    faults = joined.filter(pl.col("outcome") == "fault")
    assert figure(faults) == (0, 24, 0.0, 0.0, 0.138)  # 1. the figure: not replicated
    by_part = {corpus: figure(faults.filter(pl.col("corpus") == corpus))[:2] for corpus in ("p29", "jc", "gy")}
    assert by_part == {"p29": (0, 16), "jc": (0, 4), "gy": (0, 4)}  # 2.
    assert figure(joined.filter(pl.col("outcome") == "unplaced")) == (1, 240, 0.004, 0.001, 0.023)  # 3.
    assert figure(joined) == (1, 264, 0.004, 0.001, 0.021)  # 4. (round 16's rules list the same 264 items)
    counts = dict(faults.group_by("label").len().rows())
    assert counts == {"debatable": 5, "false": 19}


def test_round_18_held_out_figures_follow_from_the_labels() -> None:
    # docs/checks.md's round 18 held-out part (rules frozen and figures pre-registered at d20a877): 66 tasks of four
    # corpora no round had read; every item false or debatable, so each pre-registered figure is 0
    items = pl.read_csv(ROOT / "scripts" / "corpus_round18_items.csv", infer_schema=False)
    labels = pl.read_csv(ROOT / "scripts" / "corpus_labels.csv", infer_schema=False).fill_null("")
    joined = items.join(labels, on=["corpus", "task", "step", "check", "item"], how="left")
    assert joined.height == items.height == 43
    assert joined["label"].null_count() == 0
    counts = {(kind, label): n for kind, label, n in joined.group_by("outcome", "label").len().rows()}
    assert counts == {("fault", "false"): 13, ("unplaced", "false"): 24, ("unplaced", "debatable"): 6}
    low, high = proportion_ci([0], [13])
    assert (round(float(low[0]), 2), round(float(high[0]), 2)) == (0.0, 0.23)  # 1. the figure: not replicated


# ---------------------------------------------------------------- the cookbook, as shipped -------------------
def test_the_cookbook_recipes_raise_no_flag(samples: Path, tmp_path: Path) -> None:
    root = samples / "harbor-framework_harbor-cookbook" / "harbor_cookbook" / "recipes"
    if not root.is_dir():
        pytest.skip(f"the cookbook's recipes are not at {root}")
    tasks = sorted(path for path in root.iterdir() if (path / "task.toml").is_file())
    report = check_tasks(tasks, jobs_dir=tmp_path / "jobs", checks=["named_in_instruction"])
    assert report.table["outcome"].unique().to_list() == ["ok"], report.table.select("task", "evidence")
    assert report.table.height == 12
    assert report.table["total"].sum() == 15


# ---------------------------------------------------------------- scripts/check_corpus.py --------------------
def test_check_corpus_reads_a_git_corpus_and_joins_the_labels(tmp_path: Path) -> None:
    script = _corpus_script()
    repo = tmp_path / "repo"
    for name, instruction in (("good", "Write `./out.txt`."), ("bad", "Write `/solution/out.txt`.")):
        task = repo / "tasks" / name
        (task / "tests").mkdir(parents=True)
        (task / "environment").mkdir()
        (task / "task.toml").write_text('version = "1.0"\n[environment]\nworkdir = "/workspace"\n')
        (task / "instruction.md").write_text(instruction + "\n")
        (task / "environment" / "Dockerfile").write_text("FROM debian:12\nWORKDIR /workspace\n")
        (task / "tests" / "test_outputs.py").write_text(
            'def test_out():\n    assert Path("/workspace/out.txt").exists()\n'
        )
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "tasks"], check=True)
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "corpus,task,step,check,item,label,why\nc,bad,bad,named_in_instruction,/workspace/out.txt,true,x\n"
    )
    output = tmp_path / "items.csv"
    assert script.main([f"c={repo}@HEAD:tasks", "--labels", str(labels), "-o", str(output)]) == 0
    items = pl.read_csv(output, infer_schema=False)
    assert items.select("task", "outcome", "item").rows() == [("bad", "fault", "/workspace/out.txt")]
    joined = script.precision_table(items, labels)
    assert joined.select("flagged", "true", "precision").rows() == [(1, 1, 1.0)]
    assert script.part_of("c", "bad", frozenset({"c"})) == "tune"
    # a held-out draw leaves out what an earlier draw of the same place read, whatever the sizes
    first = script.Corpus.parse(f"c={repo}@HEAD:tasks#1")
    rest = script.unread(script.Corpus.parse(f"d={repo}@HEAD:tasks#2"), [first])
    assert len(first.task_names()) == 1
    assert rest.task_names() == sorted({"bad", "good"} - set(first.task_names()))
    elsewhere = script.unread(script.Corpus.parse(f"d={repo}@HEAD:other#2"), [first])
    assert elsewhere.read == frozenset()
    # a draw itself made unread (round 11): what it read, not what its spec would read alone; the script's
    # options keep their order, so `--unread-after-unread` leaves out the draws given before it first
    second = script.unread(script.Corpus.parse(f"e={repo}@HEAD:tasks#1"), [first])
    assert second.task_names() == rest.task_names() != first.task_names()
    third = script.unread(script.Corpus.parse(f"f={repo}@HEAD:tasks#2"), [first, second])
    assert third.task_names() == []
    output.unlink()
    options = ["--unread-after", f"c={repo}@HEAD:tasks#1", "--unread-after-unread", f"e={repo}@HEAD:tasks#1"]
    assert script.main([f"g={repo}@HEAD:tasks#2", *options, "-o", str(output)]) == 0
    assert pl.read_csv(output, infer_schema=False).height == 0  # both tasks read before: nothing left


def test_check_corpus_lists_only_the_missing_names_of_a_fault() -> None:
    # round 13's held-out part: a fault whose evidence also lists places accepted any one of (set apart, a note's
    # part) was read as three items, the group's text among them; the items are the missing names only
    script = _corpus_script()
    row = {
        "outcome": "fault",
        "evidence": "not in the instruction: /srv/a, /srv/b; hidden verifier inputs, never named: /srv/expected.json; "
        "places the tests accept any one of, none named: /srv/c | /srv/d",
    }
    assert script.flagged_items(row) == ["/srv/a", "/srv/b"]
    row["evidence"] = "not in the instruction: /srv/a; places the tests accept any one of, none named: /srv/c | /srv/d"
    assert script.flagged_items(row) == ["/srv/a"]
    assert script.hidden_items(row) == []


def test_check_corpus_refuses_a_bad_corpus_with_its_reason(tmp_path: Path) -> None:
    script = _corpus_script()
    with pytest.raises(SystemExit, match="expected NAME=FOLDER"):
        script.Corpus.parse("no-equals-sign")
    with pytest.raises(SystemExit, match="is not a folder"):
        script.Corpus.parse(f"x={tmp_path / 'absent'}")
    with pytest.raises(SystemExit, match="not N or N"):
        script.Corpus.parse(f"x={tmp_path}@HEAD:tasks#ten")
    labels = tmp_path / "labels.csv"
    labels.write_text("corpus,task,step,check,item,label,why\nc,t,t,named_in_instruction,/x,maybe,?\n")
    items = pl.DataFrame({"corpus": ["c"], "task": ["t"], "part": ["tune"], "step": ["t"],
                          "check": ["named_in_instruction"], "outcome": ["fault"], "item": ["/x"]})  # fmt: skip
    with pytest.raises(SystemExit, match="labels must be one of"):
        script.precision_table(items, labels)


@pytest.mark.harbor
def test_check_corpus_migrates_tb1_tasks_with_harbors_own_migrate(
    tmp_path: Path, harbor_cmd: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the replication's corpora are TB1 (task.yaml) in group folders (datasets/<adapter>/<task>); Harbor
    # 0.26 refuses some of them (a difficulty outside its list), which must be listed, not dropped
    monkeypatch.setenv("DEPTHLAB_HARBOR", harbor_cmd)
    script = _corpus_script()
    repo = tmp_path / "repo"
    for group, name, difficulty in (("adapter", "named", "easy"), ("adapter", "unnamed", "easy"), ("x", "odd", "??")):
        task = repo / "datasets" / group / name
        (task / "tests").mkdir(parents=True)
        said = "Write your answer to /app/answer.txt." if name == "named" else "Answer the question."
        (task / "task.yaml").write_text(f"instruction: {said}\ndifficulty: {difficulty}\n")
        (task / "Dockerfile").write_text("FROM debian:12\nWORKDIR /app\n")
        (task / "docker-compose.yaml").write_text(
            "services:\n  client:\n    build:\n      context: .\n    image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}\n"
        )
        (task / "run-tests.sh").write_text("#!/bin/bash\npytest $TEST_DIR/test_outputs.py\n")
        (task / "solution.sh").write_text("#!/bin/bash\necho 42 > /app/answer.txt\n")
        (task / "tests" / "test_outputs.py").write_text(
            'from pathlib import Path\n\n\ndef test_answer():\n    assert Path("/app/answer.txt").read_text()\n'
        )
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "tasks"], check=True)
    corpus = script.Corpus.parse(f"tb1={repo}@HEAD:datasets/*")
    assert corpus.task_names() == ["adapter/named", "adapter/unnamed", "x/odd"]
    output = tmp_path / "items.csv"
    assert script.main([f"tb1={repo}@HEAD:datasets/*", "-o", str(output)]) == 0
    items = pl.read_csv(output, infer_schema=False)
    assert items.filter(pl.col("check") == "named_in_instruction").select("task", "outcome", "item").rows() == [
        ("adapter/unnamed", "fault", "/app/answer.txt")
    ]
    refused = items.filter(pl.col("check") == "migrate")
    assert refused["task"].to_list() == ["x/odd"]
    assert "difficulty" in refused["item"][0]
