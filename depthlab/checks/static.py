"""The static checks: what a step's tests ask of the agent's environment is in its instruction, its fix
is not; ``harbor lint``.

``named_in_instruction``
    Every absolute path, port and user name a step's tests *ask the agent's environment about* is
    named in the step's instruction (the paper's rule: an agent cannot be graded on a file it was never
    told of). What the tests ask about is read from their code only (Python without its comments,
    docstrings and assertion messages, shell scripts without their comments, shell parameter
    expansions resolved to their defaults); the files beside them (JSON, text, expected outputs) are
    fixtures the tests read, not questions. Not asked: Harbor's own folders and the system's
    (:data:`~depthlab.checks.places.SYSTEM_PATHS`), bare top folders (:data:`~depthlab.checks.places.BARE_FOLDERS`),
    pieces of names (a substring test, a JSON pointer, a regular expression's piece), the verifier's own tooling (a
    path with ``verifier``, ``grader`` or ``grading`` in a name; what the tests make themselves: a folder they
    create, a virtual environment, a clone, a download, a ``PATH`` value, a copy's target, a compiled
    ``-o``, a file ``pytest`` runs; a program the tests run that the task's ``environment/`` ships; a
    file their shell sources, a folder it enters, a file it redirects a command's output into but for
    ``echo``/``printf``/``cat``; a sed script; a glob's piece; what the shell writes out, the words
    ``echo``/``printf`` print and a here-document's body (a test patch, a config), unless the body goes
    to an interpreter or a file of code; a Python copy's, move's or link's target; a file copied out of
    ``/tests``; a name assigned a path and never read; a name's head before a format field; round 11: an
    expected answer compared with ``==``/``!=``, directly or through a name read only so; a JavaScript
    regular expression literal, a path whose first piece has no letter or digit (``/.+``) or that is all
    numbers (``/24``); what Python tests compile or copy to through a name, or hand to the agent's program as
    an argument; a fallback read only when the place before it is absent, grouped with it; round 12: a
    JavaScript or TypeScript file of the tests that nothing the verifier runs names or starts, code shipped for
    the agent to read or fix (:func:`unrun_scripts`); ``id`` or ``su`` whose next word is on the next line, a
    GraphQL query's field list; round 13: a sentence the tests build (an error event's message), an answer list
    the agent's value is looked up in (``got in accepted``), what a compiler the tests run writes beside its source
    (``coqc`` on ``p.v`` writes ``p.vo``), a URL sent as a request's data, the port of a server the environment
    ships and the tests start themselves; round 14: a file a Python test writes itself, a string used as a subscript
    key; round 16: a pattern's piece with no letter or digit after a real name (``/w/.+``), an ``-o`` target on the
    next line of an argument list, the port the tests give a shipped app in their own start of it:
    :func:`started_ports`; round 17: what the tests' own ``cargo build`` writes; round 18: a path every test file
    that names it only asserts absent or removes, :func:`idle_paths` and :func:`shell_idle_paths`, what ``kotlinc``
    or ``javac -d`` or ``go build -o`` writes, a name a test shell builds at run time, a path named to be absent,
    ``/nonexistent``, the test runner's caches), and ports outside a connection (only ``localhost:N``, a URL's port
    but a public address's, a ``port=N`` argument, ``--port N``, ``nc host N`` or a constant named with ``PORT`` as
    a whole word count; never arithmetic; in a Python test, only where it connects somewhere: :func:`connects`,
    round 14).
    Named: verbatim (a folder with its closing slash too); under the working folder, by its path relative to it
    (``hello.txt`` or ``./hello.txt`` for ``/app/hello.txt``); under ``/root``, with ``~``; a file, by a named folder
    holding it; a folder, by a named file under it; a port, as a whole number; a path, by its ``file://`` URI;
    ``D/node_modules`` and under it, by the instruction requiring ``npm install`` (or ``npm ci``, ``pnpm``'s,
    ``yarn``'s) and naming ``D`` or ``D`` being the working folder (round 16). *Hidden verifier inputs* (a path
    whose name says it is the verifier's answer: ``golden``, ``expected``, ``hidden``, ``oracle``, ``truth``,
    ``answer key``, ``fixture``, ``test set``, ``held out``) the agent is never meant to see, and *places the tests
    accept any one of* (:func:`alternatives`) none of which the instruction names: reported apart
    (outcome ``note`` when they are all there is), never missing. Round 17, the verdict: a place the tests ask
    about that the instruction does not name is a ``fault`` when the instruction names it at another place
    (:func:`~depthlab.checks.places.named_elsewhere`: ``/output/a.csv`` for ``/workspace/output/a.csv``) or names
    no place at all (round 18: is a placeholder, :func:`~depthlab.checks.places.is_placeholder`), the cause in the
    evidence; one it names nowhere is a ``note`` (on real tasks mostly the verifier's own machinery,
    docs/checks.md), listed apart. How an instruction names a place: :mod:`depthlab.checks.places`.
``fix_not_in_instruction``
    No command line of the step's key step appears verbatim in its instruction (an instruction that
    spells out the fix makes the key step free).
``lint``
    ``harbor lint --json``'s findings, merged as they come (not re-implemented), each rule id with
    Harbor's message, where Harbor is installed (``not_applicable`` otherwise). A rule about practice
    rather than validity (:data:`LINT_NOTES`: ``shared-verifier``, ``root-agent``, unpinned images or
    dependencies, a verifier that installs or downloads at run time, an unused ``.harborignore``) is a
    ``note``; any other rule (an invalid task, a privileged or leaking container) a ``fault``, but
    for Harbor's "Docker Compose could not load" where this machine's Compose cannot lint as Harbor
    does (:func:`compose_version_reason`): the machine's finding, a ``note`` that says so.

The tests of a step are every text file of its ``tests/`` folder and of the task's shared
``tests/`` (Harbor merges both into ``/tests``).
"""

from __future__ import annotations

import ast
import functools
import io
import json
import os
import re
import shutil
import subprocess
import tokenize
from dataclasses import dataclass
from pathlib import Path

from depthlab.checks.places import PATH, in_instruction, is_placeholder, named_elsewhere, needs_no_naming
from depthlab.checks.python_places import (
    INTERPRETER,
    alternatives,
    compiled_sources,
    connects,
    idle_paths,
    made_or_handed_paths,
    started_ports,
    started_programs,
    unasked_parts,
)

# How a ``named_in_instruction`` row's evidence leads each kind of item it lists (the corpus script reads them back).
#: The places that make the row a ``fault``.
FAULT_LEAD = "not in the instruction: "
#: Round 17: the places the tests ask about that the instruction names nowhere, a note.
UNPLACED_LEAD = "not named anywhere in the instruction (a note; often the verifier's own): "
#: The hidden verifier inputs, set apart.
HIDDEN_LEAD = "hidden verifier inputs, never named: "
#: How a ``fix_not_in_instruction`` fault leads the key step's lines the instruction gives.
SPELLED_LEAD = "the instruction spells out: "
#: ``harbor lint`` rules about practice, not validity: a ``note``, never a ``fault``.
LINT_NOTES: frozenset[str] = frozenset(
    {
        "shared-verifier",
        "root-agent",
        "unpinned-image",
        "unpinned-python-dependency",
        "unused-harborignore",
        "verifier-runtime-install",
        "verifier-network-download",
    }
)

# a quoted path tested as a substring: followed by ` in` / ` not in`, or the argument of a string method
_FRAGMENT_TEST = re.compile(r"['\"][ \t]+(?:not[ \t]+)?in\b")
_FRAGMENT_LEAD = re.compile(
    r"\.(?:startswith|endswith|split|rsplit|partition|rpartition|find|rfind|index|count|replace|removeprefix"
    r"|removesuffix|strip|lstrip|rstrip)\([ \t]*[rbf]?['\"]\Z"
)
# a format field right after a path's last piece: the name is built when the tests run (round 10)
_BUILT_NAME = re.compile(r"\{|%[-0-9.]*[sdif(]")
# ports where the tests connect: a loopback address, a URL, a keyword argument, --port, nc, a PORT constant
_PORTS = (
    # (round 18: not the first piece of an address after a comma, `NO_PROXY=localhost,127.0.0.1`)
    re.compile(r"(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\])(?::|['\"]?\s*,\s*)(\d{2,5})\b(?!\.\d)"),
    re.compile(r"\b[a-z][a-z0-9+.-]*://[\w.-]+:(\d{2,5})\b"),
    re.compile(r"\bport\s*=\s*(\d{2,5})\s*[,)]"),
    re.compile(r"--port[ =](\d{2,5})\b"),
    re.compile(r"\bnc\s+(?:-\w+\s+)*[\w.-]+\s+(\d{2,5})\b"),
    # PORT as a whole word of the name (SERVER_PORT, port), never inside one (MAX_REPORT_ERR_MS = 500)
    re.compile(r"(?im)^[ \t]*(?:export[ \t]+)?(?:[a-z0-9]+_)*port(?:_[a-z0-9]+)*[ \t]*[:=][ \t]*(\d{2,5})[ \t]*$"),
)
# `id` and `su` only where a command starts, or quoted before an option (`"id -u"`): not "id should be
# positive" in a message, nor `"su pn lk"` in an expected answer (round 9); a command's words on its own line:
# `id` closing a line before `name` on the next is a GraphQL query's field list, no account (round 12)
_USER = re.compile(
    r"(?:(?:^|[;&|(`!]|\$\(|\b(?:if|then|do|else|while|until)\b)[ \t]*(?:id|su)|['\"](?:id|su)(?= -)"
    r"|\b(?:sudo -u|runuser -u|getent passwd|chown|useradd|adduser))"
    r"[ \t]+(?:-\w*[ \t]+)*([a-z_][a-z0-9_-]{1,31})\b",
    re.MULTILINE,
)
#: A name that says a path is the verifier's own tooling.
_VERIFIER_NAME = re.compile(r"verifier|grader|grading", re.IGNORECASE)
#: A name that says a path is an input only the verifier is meant to see.
_HIDDEN_NAME = re.compile(r"golden|expected|hidden|oracle|truth|answer.?key|fixture|test.?set|held.?out", re.IGNORECASE)
# what the tests make themselves: a virtual environment, a clone, a download, an install prefix, PATH
_TOOLBOX = (
    re.compile(r"\b(?:venv|virtualenv)\s+(?:-\S+\s+)*['\"]?(/[\w.+/-]+)"),
    re.compile(r"\bgit\s+clone\s+(?:-\S+\s+)*\S+\s+['\"]?(/[\w.+/-]+)"),
    re.compile(r"\b(?:curl|wget)\b[^\n;|&]*?\s-[oO]\s*['\"]?(/[\w.+/-]+)"),
    re.compile(r"--(?:target|prefix|root)[= ]['\"]?(/[\w.+/-]+)"),
    # what the tests compile: `gcc ... -o /x`, or `"-o", "/x"` in an argument list (round 16: also one argument a
    # line, `"-o",` then the path on the next)
    re.compile(
        r"(?:['\"]-o['\"][ \t]*,\s*['\"]|\b(?:gcc|g\+\+|cc|clang|clang\+\+|mpicc|mpicxx|gfortran|rustc)\b"
        r"[^\n;|&]*?[ \t]-o[ \t]*['\"]?)(/[\w.+/-]+)"
    ),
    # round 18: a JVM compiler's `-d` (kotlinc's jar, javac's class folder) and `go build -o`
    re.compile(r"\b(?:kotlinc|javac|scalac)\b[^\n;|&]*?[ \t]-d[ \t]+['\"]?(/[\w.+/-]+)"),
    re.compile(r"\bgo[ \t]+build\b[^\n;|&]*?[ \t]-o[ \t]*['\"]?(/[\w.+/-]+)"),
)
_MKDIR = re.compile(r"\bmkdir\s+(?:-\S+\s+)*((?:['\"]?/[\w.+/-]+['\"]?\s*)+)")
_PATH_VALUE = re.compile(r"\bPATH=['\"]?([^\s'\";]+)")
# a program the tests run: a command word, or what an interpreter, source or make -f is given
_RUN = re.compile(
    r"(?m)(?:^|[;&|(]|\b(?:bash|sh|source|python3?|exec|make\s+-[fC])(?:\s|['\"]\s*,\s*)|^\.\s)\s*['\"]?(/[\w.+/-]+)"
)
# what pytest is told to run: a test file, the verifier's own wherever it lies
_PYTEST = re.compile(r"\bpytest[ \t]+(?:-\S+[ \t]+)*['\"]?(/[\w.+/-]+)")
# where the tests copy, move or link a file to: the verifier's own copy (`cp /tests/t.py /app/t.py`)
_COPY_TARGET = re.compile(
    r"\b(?:cp|mv|ln|install|rsync)[ \t]+(?:-\S+[ \t]+)*(?:['\"]?[^\s;|&'\"]+['\"]?[ \t]+)+['\"]?(/[\w.+/-]+)"
)
# where Python tests copy, move or link a file to (round 10): the tests' own copy, as `cp`'s target
_PY_COPY_TARGET = re.compile(
    r"\b(?:shutil\.(?:copy|copy2|copyfile|copytree|move)|os\.(?:rename|replace|symlink|link))\([^,()]+(?:\([^()]*\))?,"
    r"[ \t]*(?:Path\()?[rbf]?['\"](/[\w.+/-]+)"
)
# a file copied out of the tests' own folder (`cp /tests/correct_output.csv .`): the verifier's own wherever it
# lands, so by its name (round 10)
_FROM_TESTS = re.compile(r"\b(?:cp|mv|install|rsync)[ \t]+(?:-\S+[ \t]+)*['\"]?(?:/tests|VAR)/(?:[\w.+-]+/)*([\w.+-]+)")
# what the tests' shell sets itself up with or works in (round 9): a file it sources (`source
# /opt/miniconda3/bin/activate`, `. /root/.cargo/env`), a folder it enters (`cd /testbed`)
_SHELL_OWN = re.compile(r"(?m)(?:^|[;&|(]|\b(?:then|do|else))[ \t]*(?:source|\.|cd)[ \t]+['\"]?(/[\w.+/-]+)")
# a file a command's output is redirected into (`(make test) > /app/unit_test.log`): the tests' own log; but
# not what `echo`, `printf` or `cat` write (`echo World > /app/config.txt`: an input the agent's program reads)
_REDIRECT = re.compile(r"(?<![<>&\d])>>?[ \t]*['\"]?(/[\w.+/-]+)")
_WRITES_DATA = re.compile(r"[ \t]*(?:echo|printf|cat)\b")
# a sed script (`sed -i '/en_US.UTF-8/s/^# //g' ...`): an address and a substitution, no path (round 9)
_SED_SCRIPT = re.compile(r"(\bsed[ \t]+(?:-[a-zA-Z]+[ \t]+)*(?:-e[ \t]+)?)(['\"])(.*?)\2")
# a URL's host that is a public address: a remote service the tests call (an external judge), not one the
# agent's environment serves (round 9)
_REMOTE_HOST = re.compile(
    r"://(?!127\.|0\.0\.0\.0|10\.|192\.168\.|172\.(?:1[6-9]|2\d|3[01])\.)(?:\d{1,3}\.){3}\d{1,3}:"
)
# what the shell writes out (round 10): the words `echo` and `printf` print (a message, or data such as the
# SWE-bench adapter's test patch, `echo 'diff --git ...' > /tmp/test_patch.diff`) and a here-document's
# body: data, not a question; the file it goes to is still read (`echo World > /app/config.txt` is asked)
_WRITTEN = re.compile(
    r"(\b(?:echo|printf)(?:[ \t]+-[a-zA-Z]+)*[ \t]+)((?:(?:'[^']*'|\"(?:\\.|[^\"\\])*\"|\\.|[^\s;&|<>()'\"`])+[ \t]*)+)"
)
_HEREDOC = re.compile(
    r"(?m)(?P<head>^(?P<command>[^\n]*?)<<-?[ \t]*(?P<quote>['\"]?)(?P<word>\w+)(?P=quote)[^\n]*\n)"
    r"(?P<body>.*?)(?P<tail>^[ \t]*(?P=word)[ \t]*$)",
    re.DOTALL,
)
_WRITE_TARGET = re.compile(r"(?:>>?|\btee(?:[ \t]+-a)?)[ \t]*['\"]?([\w./-]+)")
_EXPANSION = re.compile(r"\$\{(\w+)(:?[-=])([^}]*)\}")
_VARIABLE = re.compile(r"\$\{(\w+)[^}]*\}|\$(\w+)")
_ASSIGNED = re.compile(r"(?m)^[ \t]*(?:export[ \t]+|local[ \t]+|readonly[ \t]+)?(\w+)=['\"]?(/[\w.+/-]*)['\"]?[ \t]*$")
_SHELL_SUFFIXES = frozenset({".sh", ".bash", ".bats", ".zsh"})
_OTHER_CODE_SUFFIXES = frozenset({".js", ".mjs", ".ts", ".go", ".rs", ".c", ".cc", ".cpp", ".java", ".rb", ".pl", ".r"})
_JS_SUFFIXES = frozenset({".js", ".mjs", ".cjs", ".ts"})
# a JavaScript regular expression literal: a slash where a value starts (after `(`, `,`, `=`, `:`, `[`, `!`, `&`,
# `|`, `?`, `{`, `;`, `return`, or a line's start), its pattern on one line, its closing slash and flags (round 11)
_JS_REGEX = re.compile(
    r"((?:^|[(,=:\[!&|?{};]|\breturn\b)[ \t]*)(/(?![/*])(?:\\.|\[(?:\\.|[^\]\\\n])*\]|[^/\\\n\[])+/[dgimsuy]*)(?!\w)",
    re.MULTILINE,
)
# a JavaScript runner the tests start (round 12): a program's word, not a module's (`'k6/http'`) nor a path's piece
_JS_RUNNER = re.compile(
    r"(?<![\w./@-])(?:node|nodejs|npm|npx|yarn|pnpm|jest|mocha|vitest|k6|deno|bun|tsc|ts-node|tsx|jasmine|ava"
    r"|playwright|cypress)(?![\w./@-])"
)
_EXPOSE = re.compile(r"(?im)^[ \t]*EXPOSE[ \t]+([^\n]+)")
# round 18: what a test shell only removes or asserts absent (`rm -f /app/out.txt`, `[ ! -e /app/later ]`)
_SHELL_REMOVE = re.compile(r"\brm[ \t]+(?:-\S+[ \t]+)*((?:['\"]?/[\w.+/-]+['\"]?[ \t]*)+)")
_SHELL_ABSENT = re.compile(r"(?:\[\[?|\btest)[ \t]+![ \t]+-[a-zA-Z][ \t]+['\"]?(/[\w.+/-]+)")
# round 18: a name that says the place is meant to be absent (a path handed over so that it fails)
_ABSENT_NAME = re.compile(r"(?i)(?:^|/)(?:non-?existent|does-?not-?exist|no-?such[\w-]*|nope|bogus)(?:[./]|$)")
# round 18: the test runner's own caches
_RUNNER_CACHE = re.compile(r"/(?:\.pytest_cache|__pycache__|\.mypy_cache|\.ruff_cache|\.hypothesis)(?:/|$)")
# round 18: a shell variable inside a name (`/app/output.$name.txt`, read as `VAR`): a name built at run time
_SHELL_BUILT = re.compile(r"(?<![A-Za-z])VAR(?![A-Za-z])")
# round 17: cargo's own output, in a tests folder whose shell builds with cargo itself
_CARGO_BUILD = re.compile(r"\bcargo[ \t]+(?:\+\S+[ \t]+)?(?:build|install)\b")
_CARGO_OUTPUT = re.compile(r"/target(?:/|$)")
_MAX_TEST_BYTES = 512 * 1024


@dataclass(frozen=True)
class StaticResult:
    """A static check's outcome (``ok``, ``fault``, ``note``, ``not_marked``, ``not_applicable``, ``error``), what
    it checked (``total``), found wanting (``missing``; of them, ``wrong`` make a fault) and set apart (``hidden``),
    and the evidence (one line)."""

    outcome: str
    total: int
    missing: tuple[str, ...]
    evidence: str
    hidden: tuple[str, ...] = ()
    #: of ``missing``, what makes the row a ``fault`` (for ``named_in_instruction``, round 17: a place the instruction
    #: names elsewhere, or any where it names no place at all)
    wrong: tuple[str, ...] = ()


@dataclass(frozen=True)
class AskedFacts:
    """What a step's tests ask of the agent's environment (``asked``), the hidden verifier inputs they read
    (``hidden``), how many of the paths they name are the verifier's own (``own``) and the groups of paths
    they accept any one of (``alternatives``)."""

    asked: tuple[str, ...]
    hidden: tuple[str, ...]
    own: int
    alternatives: tuple[tuple[str, ...], ...] = ()


def step_test_files(folders: list[Path]) -> list[Path]:
    """The text files of ``folders`` (a step's tests and the task's shared tests), in order, once each."""
    files: list[Path] = []
    seen: set[Path] = set()
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.resolve() not in seen and path.stat().st_size <= _MAX_TEST_BYTES:
                seen.add(path.resolve())
                files.append(path)
    return files


def code_of_test(name: str, text: str) -> str | None:
    """The code of a test file as the check reads it: Python without comments and docstrings, a shell script
    without comments and with its parameter expansions resolved; None for a fixture (not code).

    Examples
    --------
    >>> code_of_test("test.sh", 'pytest ${TEST_DIR:-/tests}/test_outputs.py  # run /app/x')
    'pytest /tests/test_outputs.py  '
    >>> code_of_test("test_x.py", '\"\"\"Reads /app/doc.\"\"\"\\nopen("/app/a")  # /app/b\\n')
    '\\nopen("/app/a")  \\n'
    >>> code_of_test("expected.json", '{"path": "/sys/class/x"}') is None
    True
    """
    suffix = Path(name).suffix.lower()
    first = text.split("\n", 1)[0]
    if suffix == ".py" or (first.startswith("#!") and "python" in first):
        return _python_code(text)
    if suffix in _SHELL_SUFFIXES or first.startswith("#!"):
        return _shell_code(text)
    if suffix in _OTHER_CODE_SUFFIXES:
        if suffix in _JS_SUFFIXES:  # `str.replace(/./i, ...)`, `/plus|minus/g`: a pattern, no path (round 11)
            text = _JS_REGEX.sub(lambda match: match.group(1) + _blank(match.group(2)), text)
        return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(("//", "#", "*", "/*")))
    return None


def _python_code(text: str) -> str:
    lines = text.split("\n")
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return _shell_code(text)  # not Python 3: its '#' comments at least
    for node in ast.walk(tree):  # a string standing alone (a docstring) is prose, not a question
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for number in range(node.lineno - 1, node.end_lineno or node.lineno):
                lines[number] = ""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                row, column = token.start
                lines[row - 1] = lines[row - 1][:column]
    except (tokenize.TokenError, SyntaxError):
        pass
    encoded = [bytearray(line.encode("utf-8")) for line in lines]
    for message in unasked_parts(tree):
        last, stop = message.end_lineno, message.end_col_offset
        if last is None or stop is None:
            continue
        for number in range(message.lineno - 1, last):
            line = encoded[number]
            start = message.col_offset if number == message.lineno - 1 else 0
            end = min(stop if number == last - 1 else len(line), len(line))
            line[start:end] = b" " * max(0, end - start)
    return "\n".join(line.decode("utf-8", errors="replace") for line in encoded)


def environment_ports(task_dir: Path) -> frozenset[str]:
    """The ports the task's ``environment/`` sets itself (round 13): each ``port N`` its code files name (as
    :func:`named_facts` reads a test: ``app.run(port=5000)``, ``localhost:5000``) and its Dockerfiles ``EXPOSE``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> task = pathlib.Path(tempfile.mkdtemp())
    >>> (task / "environment" / "api").mkdir(parents=True)
    >>> _ = (task / "environment" / "api" / "app.py").write_text("app.run(host='0.0.0.0', port=5000)\\n")
    >>> _ = (task / "environment" / "Dockerfile").write_text("FROM debian\\nEXPOSE 8443/tcp\\n")
    >>> sorted(environment_ports(task))
    ['port 5000', 'port 8443']
    """
    folder = task_dir / "environment"
    if not folder.is_dir():
        return frozenset()
    ports: set[str] = set()
    for path in folder.rglob("*"):
        if not path.is_file() or path.stat().st_size > _MAX_TEST_BYTES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if path.name == "Dockerfile" or path.name.startswith("Dockerfile."):
            ports |= {f"port {number}" for line in _EXPOSE.findall(text) for number in re.findall(r"\b\d{2,5}\b", line)}
            continue
        code = code_of_test(path.name, text)
        if code is not None:
            ports |= {fact for fact in named_facts(code) if fact.startswith("port ")}
    return frozenset(ports)


def _shell_code(text: str) -> str:
    text = _HEREDOC.sub(_here_document, text)
    text = _WRITTEN.sub(lambda match: match.group(1) + _blank(match.group(2)), text)
    code = "\n".join(_without_comment(line) for line in text.split("\n"))
    code = _SED_SCRIPT.sub(lambda match: match.group(1) + " " * (len(match.group(3)) + 2), code)
    code = _EXPANSION.sub(lambda match: match.group(3), code)  # ${NAME:-default}: the default
    values = {name: value for name, value in _ASSIGNED.findall(code)}
    # $NAME: its value when the script sets it to a path, else a word (what follows it is relative)
    return _VARIABLE.sub(lambda match: values.get(match.group(1) or match.group(2), "VAR"), code)


def _blank(text: str) -> str:
    """``text`` with every character but its line breaks a space (what is left keeps its place)."""
    return re.sub(r"[^\n]", " ", text)


def _here_document(match: re.Match[str]) -> str:
    """A here-document as the check reads it (round 10): data the shell writes (a test patch, a config, a
    fixture) is blanked; a body given to an interpreter, or written to a file of code, is read as that code."""
    command, body = match.group("command"), match.group("body")
    target = _WRITE_TARGET.search(command)
    if target and Path(target.group(1)).suffix.lower() in {".py", *_SHELL_SUFFIXES}:
        code = code_of_test(Path(target.group(1)).name, body)
    elif INTERPRETER.match(command):
        code = code_of_test("stdin.py" if "python" in command.split()[0] else "stdin.sh", body)
    else:
        code = None
    return match.group("head") + (code if code is not None else _blank(body)) + match.group("tail")


def _without_comment(line: str) -> str:
    quote = ""
    for position, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (position == 0 or line[position - 1] in " \t;"):
            return line[:position]
    return line


def named_facts(text: str) -> list[str]:
    """The absolute paths, ports (``port 8080``) and users (``user alice``) ``text`` names, in order, once each.

    Examples
    --------
    >>> named_facts("cat /app/out.txt > /logs/verifier/reward.txt; curl localhost:8080; id -u alice")
    ['/app/out.txt', 'port 8080', 'user alice']
    >>> named_facts('port = 4000 + (digest % 500)\\nif p.startswith("/opt/") or "/mmbert-" in name: pass')
    []
    >>> named_facts('MAX_REPORT_ERR_MS = 500\\nSERVER_PORT = 9000\\nassert x, f"id should be > 0"\\nout=$(id bob)')
    ['port 9000', 'user bob']
    """
    found: list[str] = []
    for match in PATH.finditer(text):
        path = match.group(1).rstrip("/.") or "/"
        if _FRAGMENT_TEST.match(text, match.end()) or _FRAGMENT_LEAD.search(
            text, max(0, match.start() - 40), match.start()
        ):
            continue  # `"/src/" in str(p)`, `p.startswith("/x/")`: a piece of a name, no place
        if _BUILT_NAME.match(text, match.end()) and not match.group(1).endswith("/"):
            continue  # f"/app/out/plan_b{n}.json": the head of a name built at run time (round 10), no place
        if not _names_a_place(path):
            continue  # `/.+`, `/./i`, `/24`: a regular expression's piece or a netmask, no place (round 11)
        if _SHELL_BUILT.search(path):
            continue  # `/app/output.$name.txt`: a name a test shell builds at run time (round 18), no place
        if not needs_no_naming(path) and not path.endswith(("-", "_")):  # "/mmbert-": a name's fragment, no path
            found.append(path)
    found += [
        f"port {match.group(1)}"
        for pattern in _PORTS
        for match in pattern.finditer(text)
        if not _REMOTE_HOST.search(text, max(0, match.start() - 1), match.start(1))
    ]
    found += [f"user {name}" for name in _USER.findall(text) if name not in {"root", "nobody"}]
    return list(dict.fromkeys(found))


def _names_a_place(path: str) -> bool:
    """Whether an absolute path's pieces can name a place: each piece has a letter or a digit (not `/.+` nor
    `/./i`, pieces of regular expressions; round 16: nor `/w/.+`, the piece after a real name) and not every piece
    is a number (not `/24`, a netmask).

    Examples
    --------
    >>> [_names_a_place(p) for p in ("/app/out.txt", "/.+", "/./i", "/24", "/data/2024", "/.config/x", "/w/.+")]
    [True, False, False, False, True, True, False]
    """
    first, *rest = path.strip("/").split("/")
    if not re.search(r"[A-Za-z0-9]", first):
        return False
    if any(piece not in {".", ".."} and not re.search(r"[A-Za-z0-9]", piece) for piece in rest):
        return False  # round 16: a piece after a real name too (`/snapshots/.+` of `^oldest=(/snapshots/.+)$`)
    return not all(piece.isdigit() for piece in (first, *rest))


def _writes_data(text: str, at: int) -> bool:
    """Whether the shell command whose output is redirected at ``at`` writes data (echo, printf, cat)."""
    line = text[text.rfind("\n", 0, at) + 1 : at]
    return _WRITES_DATA.match(re.split(r"[;&|(]|\b(?:then|do|else)\b", line)[-1]) is not None


def unrun_scripts(files: list[Path]) -> set[Path]:
    """The JavaScript or TypeScript files among a step's test files that nothing runs (round 12): no test file
    the verifier runs names them (by their file name, or their stem as a module: ``from './config'``; a script so
    named runs too, and so does what it names) and none of the tests' other code starts a JavaScript runner
    (``node``, ``npm``, ``jest``, ``k6``...). Such a file is code the tests folder ships for the agent to read or
    fix (terminal-bench-env's broken k6 scripts, their REST routes in an endpoint table), not the verifier's
    own: what it names asks nothing.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> tests = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (tests / "test.sh").write_text("pytest /tests/test_outputs.py\\n")
    >>> _ = (tests / "config.js").write_text("export const ROUTES = { login: '/api/auth/login' };\\n")
    >>> [path.name for path in unrun_scripts(sorted(tests.iterdir()))]
    ['config.js']
    >>> _ = (tests / "test.sh").write_text("cd /app && npx jest\\n")
    >>> unrun_scripts(sorted(tests.iterdir()))
    set()
    """
    scripts = [path for path in files if path.suffix.lower() in _JS_SUFFIXES]
    if not scripts:
        return set()
    texts: dict[Path, str] = {}
    for path in files:
        try:
            texts[path] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            texts[path] = ""
    for path, text in texts.items():
        code = None if path in scripts else code_of_test(path.name, text)
        if code is not None and _JS_RUNNER.search(code):
            return set()  # a runner the tests start may run any of them (`npx jest`, `node --test`)
    named_by = {
        script: [
            re.compile(rf"(?<![\w-]){re.escape(script.name)}(?![\w-])"),
            re.compile(rf"['\"`](?:[^'\"`\s]*/)?{re.escape(script.stem)}(?:\.[cm]?[jt]sx?)?['\"`]"),
        ]
        for script in scripts
    }
    run = [path for path in files if path not in named_by]  # every other test file counts as the verifier's
    unrun = set(scripts)
    while True:  # a script named by what runs runs too (`import ... from './config.js'`)
        reached = {
            script
            for script in unrun
            if any(pattern.search(texts[path]) for path in run for pattern in named_by[script])
        }
        if not reached:
            return unrun
        unrun -= reached
        run += sorted(reached)


def shell_idle_paths(code: str) -> set[str]:
    """The paths a test shell script only removes or asserts absent (round 18): every time ``code`` (shell code, as
    :func:`code_of_test` gives it) writes them is in an ``rm`` or a ``[ ! -e ... ]`` test: its housekeeping (a stale
    output cleared before a build) or an absence guard, nothing the agent makes.

    Examples
    --------
    >>> sorted(shell_idle_paths("rm -f /app/output.txt /app/sim.jar\\n[ ! -e /app/later.json ] || exit 1\\n"))
    ['/app/later.json', '/app/output.txt', '/app/sim.jar']
    >>> shell_idle_paths("rm -f /app/out.txt\\n./run.sh\\ncat /app/out.txt\\n")
    set()
    """
    idle: list[str] = []
    for match in _SHELL_REMOVE.finditer(code):
        idle += [piece.strip("'\"").rstrip("/") for piece in match.group(1).split()]
    idle += [match.group(1).rstrip("/") for match in _SHELL_ABSENT.finditer(code)]
    written = [match.group(1).rstrip("/.") for match in PATH.finditer(code)]
    return {path for path in set(idle) if path and written.count(path) <= idle.count(path)}


def asked_facts(
    files: list[Path],
    environment: frozenset[str] = frozenset(),
    *,
    ports: frozenset[str] = frozenset(),
) -> AskedFacts:
    """What the test files ask of the agent's environment, the hidden inputs they read, the verifier's own.

    ``environment`` holds the names of the files the task's ``environment/`` ships: a program the
    tests run that the environment ships is the verifier's tooling (module docstring). Round 13: ``ports``, the
    ports the environment sets itself (:func:`environment_ports`): one the tests connect to after starting a
    program the environment ships is that program's, the verifier's own start of it.
    """
    facts: list[str] = []
    own: set[str] = set()
    toolboxes: set[str] = set()
    copied: set[str] = set()
    groups: list[tuple[str, ...]] = []
    sources: set[str] = set()
    starts_shipped = False
    started: set[str] = set()
    cargo_builds = False
    naming: dict[str, int] = {}  # how many test files name each fact, and of them how many only idly (round 18)
    idling: dict[str, int] = {}
    unrun = unrun_scripts(files)
    texts: dict[Path, str] = {}
    for path in files:
        if path in unrun:
            continue  # code shipped for the agent to read or fix, which nothing runs (round 12)
        try:
            texts[path] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    # the Python tests connect somewhere, in any of their files (a helper module's client counts): else the ports
    # they write are values, no service asked of the environment (round 14)
    linked = any(connects(raw) for path, raw in texts.items() if path.suffix.lower() == ".py")
    for path, raw in texts.items():
        text = code_of_test(path.name, raw)
        if text is None:
            continue
        if path.suffix.lower() == ".py":
            groups += alternatives(raw)
            own |= made_or_handed_paths(raw)
            starts_shipped |= any(Path(program).name in environment for program in started_programs(raw))
            started |= started_ports(raw, environment)
        named = named_facts(text)
        if path.suffix.lower() == ".py" and not linked:
            named = [fact for fact in named if not fact.startswith("port ")]
        facts += named
        idle = idle_paths(raw) if path.suffix.lower() == ".py" else shell_idle_paths(text)
        for fact in named:
            naming[fact] = naming.get(fact, 0) + 1
            idling[fact] = idling.get(fact, 0) + (fact in idle)
        sources |= compiled_sources(text)
        if path.suffix.lower() == ".py":
            sources |= compiled_sources(raw)  # through a name: the AST of the file as written
        if path.suffix.lower() != ".py":  # a Python test's starts are read from its argument lists (above)
            starts_shipped |= any(Path(program).name in environment for program in _RUN.findall(text))
            cargo_builds |= _CARGO_BUILD.search(text) is not None
        toolboxes |= {match.group(1).rstrip("/") for pattern in _TOOLBOX for match in pattern.finditer(text)}
        toolboxes |= {p.rstrip("/") for value in _PATH_VALUE.findall(text) for p in value.split(":") if p}
        own |= {p.strip("'\"").rstrip("/") for match in _MKDIR.finditer(text) for p in match.group(1).split()}
        own |= {p for p in _RUN.findall(text) if Path(p).name in environment}
        own |= {
            match.group(1).rstrip("/")
            for pattern in (_COPY_TARGET, _PY_COPY_TARGET, _PYTEST)
            for match in pattern.finditer(text)
        }
        copied |= set(_FROM_TESTS.findall(text))
        own |= {match.group(1).rstrip("/") for match in _SHELL_OWN.finditer(text)}
        own |= {
            match.group(1).rstrip("/") for match in _REDIRECT.finditer(text) if not _writes_data(text, match.start())
        }
    asked: list[str] = []
    hidden: list[str] = []
    mine = 0
    grouped = {path for group in groups for path in group}
    for fact in dict.fromkeys(facts):
        if fact in grouped:
            continue  # one of a group: asked as the group
        if fact.startswith("port ") and ((starts_shipped and fact in ports) or fact in started):
            mine += 1  # the port of a server the environment ships and the tests start themselves (rounds 13, 16)
        elif fact.startswith(("port ", "user ")):
            asked.append(fact)
        elif (
            _VERIFIER_NAME.search(fact)
            or fact in own
            or Path(fact).name in copied
            or any(fact == box or fact.startswith(box + "/") for box in toolboxes)
            or any(_built_beside(fact, source) for source in sources)
            or (cargo_builds and _CARGO_OUTPUT.search(fact) is not None)  # round 17: the tests' own cargo build
            or idling.get(fact, 0) == naming.get(fact, -1)  # round 18: only asserted absent or removed, in every file
            or _ABSENT_NAME.search(fact) is not None  # round 18: a place meant to be absent
            or _RUNNER_CACHE.search(fact) is not None  # round 18: pytest's own cache
        ):
            mine += 1
        elif _HIDDEN_NAME.search(fact):
            hidden.append(fact)
        else:
            asked.append(fact)
    return AskedFacts(tuple(asked), tuple(hidden), mine, tuple(dict.fromkeys(groups)))


def _built_beside(fact: str, source: str) -> bool:
    """Whether ``fact`` is what a compiler writes beside ``source``: the same folder and stem, another suffix."""
    made, given = Path(fact), Path(source)
    return made.parent == given.parent and made.stem == given.stem and made.suffix not in {"", given.suffix}


def task_workdir(task_dir: Path) -> str | None:
    """The agent's working folder: task.toml's ``[environment] workdir``, else the Dockerfile's last
    ``WORKDIR``; None when neither says.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> task = pathlib.Path(tempfile.mkdtemp())
    >>> (task / "environment").mkdir()
    >>> _ = (task / "environment" / "Dockerfile").write_text("FROM debian\\nWORKDIR /srv/app\\n")
    >>> task_workdir(task)
    '/srv/app'
    """
    try:
        stated = re.search(r'(?m)^\s*workdir\s*=\s*"([^"]+)"', (task_dir / "task.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        stated = None
    if stated:
        return stated.group(1)
    try:
        dockerfile = (task_dir / "environment" / "Dockerfile").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = re.findall(r"(?im)^\s*WORKDIR\s+(\S+)", dockerfile)
    return found[-1].strip("'\"") if found and found[-1].startswith(("/", "'/", '"/')) else None


def environment_files(task_dir: Path) -> frozenset[str]:
    """The names of the files the task's ``environment/`` ships (its Dockerfile and Compose files left out)."""
    folder = task_dir / "environment"
    if not folder.is_dir():
        return frozenset()
    return frozenset(
        path.name
        for path in folder.rglob("*")
        if path.is_file() and path.name != "Dockerfile" and not path.name.startswith(("docker-compose", "compose."))
    )


def named_in_instruction(
    instruction: str,
    folders: list[Path],
    *,
    workdir: str | None = None,
    environment: frozenset[str] = frozenset(),
    ports: frozenset[str] = frozenset(),
) -> StaticResult:
    """The ``named_in_instruction`` check of one step (module docstring; ``environment`` and ``ports`` as
    :func:`asked_facts` takes them)."""
    found = asked_facts(step_test_files(folders), environment, ports=ports)
    missing = tuple(fact for fact in found.asked if not in_instruction(fact, instruction, workdir))
    hidden = tuple(fact for fact in found.hidden if not in_instruction(fact, instruction, workdir))
    unnamed = [
        " | ".join(group)
        for group in found.alternatives
        if not any(in_instruction(path, instruction, workdir) for path in group)
    ]
    # round 17: a fault where the instruction names the file at another place, or names no place at all; a
    # place it names nowhere is a note (on real tasks mostly the verifier's own machinery: docs/checks.md)
    placeholder = is_placeholder(instruction)  # round 18: a placeholder, not any instruction without a path
    elsewhere = {fact: place for fact in missing if (place := named_elsewhere(fact, instruction)) is not None}
    wrong = tuple(fact for fact in missing if placeholder or fact in elsewhere)
    unplaced = tuple(fact for fact in missing if fact not in wrong)
    total = len(found.asked)
    said = [f"{UNPLACED_LEAD}{', '.join(unplaced)}"] if unplaced else []
    said += [f"{HIDDEN_LEAD}{', '.join(hidden)}"] if hidden else []
    said += [f"places the tests accept any one of, none named: {'; '.join(unnamed)}"] if unnamed else []
    apart = "; ".join(said)
    hidden += tuple(unnamed)
    if wrong:
        if placeholder:
            why = "the instruction is a placeholder: it names no place at all"
        else:
            why = "named elsewhere: " + ", ".join(f"{fact} as {elsewhere[fact]}" for fact in wrong)
        evidence = f"{FAULT_LEAD}{', '.join(wrong)}; {why}" + (f"; {apart}" if apart else "")
        return StaticResult("fault", total, missing, evidence, hidden, wrong)
    own = f" ({found.own} of the verifier's own left out)" if found.own else ""
    if hidden or unplaced:
        named = total - len(unplaced)
        evidence = f"{apart}; the other {named} named in the instruction{own}"
        return StaticResult("note", total, missing, evidence, hidden)
    return StaticResult("ok", total, (), f"all {total} named in the instruction{own}")


def fix_not_in_instruction(instruction: str, key: list[str]) -> StaticResult:
    """The ``fix_not_in_instruction`` check of one step, given its key step's command lines."""
    given = tuple(line for line in key if line in instruction)
    if given:
        return StaticResult("fault", len(key), given, SPELLED_LEAD + " | ".join(given), wrong=given)
    return StaticResult("ok", len(key), (), f"none of the key step's {len(key)} lines is in the instruction")


def harbor_executable() -> str | None:
    """The ``harbor`` command: ``DEPTHLAB_HARBOR`` when set, else on PATH, else Harbor's side venv's; None."""
    named = os.environ.get("DEPTHLAB_HARBOR")
    if named:
        return named if Path(named).is_file() else None
    found = shutil.which("harbor")
    if found:
        return found
    for candidate in sorted(Path.home().glob(".cache/depthlab/harbor-*/bin/harbor")):
        return str(candidate)
    return None


def harbor_lint(task_dirs: list[Path], *, timeout_sec: float = 120.0) -> dict[Path, list[dict] | str] | str:
    """``harbor lint --json``'s findings by task folder, or why it could not run (one line); a task Harbor
    cannot lint (it stops the whole run) is linted alone and its entry says why."""
    harbor = harbor_executable()
    if harbor is None:
        return "Harbor is not installed (no `harbor` on PATH)"
    tasks = [Path(task).resolve() for task in task_dirs]
    found = _lint(harbor, tasks, timeout_sec)
    if isinstance(found, str) and len(tasks) > 1:  # one task stopped the run: each alone, so it is the only loss
        alone = {task: _lint(harbor, [task], timeout_sec) for task in tasks}
        by_task: dict[Path, list[dict] | str] = {}
        for task, result in alone.items():
            by_task[task] = result if isinstance(result, str) else result.get(task, [])
        return by_task
    return found if isinstance(found, str) else dict(found)


def _lint(harbor: str, tasks: list[Path], timeout_sec: float) -> dict[Path, list[dict]] | str:
    try:
        done = subprocess.run(
            [harbor, "lint", "--json", *map(str, tasks)],
            capture_output=True,
            text=True,
            timeout=timeout_sec,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"harbor lint could not run: {type(error).__name__}: {error}"
    try:
        findings = json.loads(done.stdout)
    except ValueError:
        findings = None
    if not isinstance(findings, list):
        said = " ".join((done.stderr.strip() or done.stdout.strip()).split())[-300:]
        return f"harbor lint stopped (exit {done.returncode}): {said}"
    by_task: dict[Path, list[dict]] = {task: [] for task in tasks}
    for finding in findings:
        if not isinstance(finding, dict):
            continue
        where = Path(str(finding.get("path") or "")).resolve()
        owner = next((task for task in by_task if where == task or task in where.parents), None)
        if owner is not None:
            by_task[owner].append(finding)
    return by_task


#: Harbor 0.26's words when ``docker compose config`` fails on a task's Compose file (harbor/lint/compose.py).
COMPOSE_LOAD_MESSAGE = "Docker Compose could not load this configuration"


@functools.lru_cache(maxsize=1)
def compose_version_reason() -> str | None:
    """Why this machine's Docker Compose cannot lint as Harbor 0.26 does, or None when it can.

    Harbor 0.26 lints a task's Compose file with ``docker compose config --no-env-resolution``; a Compose
    without that option (2.26.1, Debian 13's) fails on every Compose file, and Harbor reads the failure as
    ``invalid-task-config``: a finding about the machine, not the task.
    """
    try:
        done = subprocess.run(
            ["docker", "compose", "config", "--help"], capture_output=True, text=True, timeout=30, check=False
        )
        version = subprocess.run(
            ["docker", "compose", "version", "--short"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None  # no Compose at all: Harbor says so itself
    if done.returncode or "--no-env-resolution" in done.stdout:
        return None
    return (
        f"this machine's Docker Compose {version.stdout.strip() or '(version unknown)'} has no "
        "`config --no-env-resolution`, which Harbor's Compose lint needs"
    )


def lint_result(findings: list[dict] | str) -> StaticResult:
    """The ``lint`` row of one task from its ``harbor lint`` findings: each rule once, with Harbor's message;
    a ``note`` when every rule is about practice (:data:`LINT_NOTES`), else a ``fault``; an ``error`` when
    Harbor could not lint the task (``findings`` is why).

    Examples
    --------
    >>> lint_result([{"rule": "shared-verifier", "message": "Verifier shares the agent sandbox."}]).outcome
    'note'
    >>> found = lint_result([{"rule": "invalid-task-config", "message": "Bad."}, {"rule": "root-agent"}])
    >>> found.outcome, found.missing, found.evidence
    ('fault', ('invalid-task-config',), 'harbor lint: invalid-task-config: Bad.; root-agent (a note)')
    """
    if isinstance(findings, str):
        return StaticResult("error", 0, (), findings)
    messages: dict[str, str] = {}
    for finding in findings:
        messages.setdefault(str(finding.get("rule")), str(finding.get("message") or "").strip().replace("\n", " "))
    machine = {
        rule
        for rule, message in messages.items()
        if message.startswith(COMPOSE_LOAD_MESSAGE) and compose_version_reason() is not None
    }
    for rule in machine:  # the machine's finding, not the task's: a note that says so
        messages[rule] += f" ({compose_version_reason()}; a note, not the task's fault)"
    faults = tuple(rule for rule in messages if rule not in LINT_NOTES and rule not in machine)
    said = "; ".join(
        (f"{rule}: {message}" if message else rule) + (" (a note)" if faults and rule in LINT_NOTES else "")
        for rule, message in messages.items()
    )
    if faults:
        return StaticResult("fault", len(findings), faults, "harbor lint: " + said, wrong=faults)
    if messages:
        return StaticResult("note", len(findings), (), "harbor lint, notes only: " + said)
    return StaticResult("ok", 0, (), "harbor lint: no findings")
