"""The static checks: what a step's tests name is in its instruction, its fix is not; ``harbor lint``.

``named_in_instruction``
    Every absolute path, port and user name a step's tests name appears verbatim in the step's
    instruction (the paper's rule: an agent cannot be graded on a file it was never told of).
    Excepted: Harbor's own folders (``/logs``, ``/tests``, ``/solution``, ``/app`` as a bare working
    folder) and system paths (:data:`SYSTEM_PATHS`), which no instruction need name.
``fix_not_in_instruction``
    No command line of the step's key step appears verbatim in its instruction (an instruction that
    spells out the fix makes the key step free).
``lint``
    ``harbor lint --json``'s findings, merged as they come (not re-implemented), where Harbor is
    installed; ``not_applicable`` otherwise.

The tests of a step are every text file of its ``tests/`` folder and of the task's shared
``tests/`` (Harbor merges both into ``/tests``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: Path prefixes no instruction need name: Harbor's own folders and the system's.
SYSTEM_PATHS: tuple[str, ...] = (
    "/logs",
    "/tests",
    "/solution",
    "/dev",
    "/proc",
    "/sys",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/etc",
    "/tmp",
    "/run",
    "/var",
    "/opt/conda",
)
#: Folders that alone (not the files under them) are the working folder, not a fact to state.
_BARE_FOLDERS = frozenset({"/", "/app", "/root", "/home"})

# an absolute path: a slash after a delimiter, then path characters (no shell or URL context)
_PATH = re.compile(r"(?<![\w.$:/~-])(/[A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)*/?)")
_PORT = re.compile(r"(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\]):(\d{2,5})\b|\b(?:--port|PORT|port)[ =:]+(\d{2,5})\b")
_USER = re.compile(
    r"\b(?:id -u|id|su|sudo -u|runuser -u|getent passwd|chown|useradd|adduser)\s+(?:-\w*\s+)*"
    r"([a-z_][a-z0-9_-]{1,31})\b"
)
_MAX_TEST_BYTES = 512 * 1024


@dataclass(frozen=True)
class StaticResult:
    """A static check's outcome (``ok``, ``fault``, ``not_marked``, ``not_applicable``, ``error``), what it
    checked (``total``) and found wanting (``missing``), and the evidence (one line)."""

    outcome: str
    total: int
    missing: tuple[str, ...]
    evidence: str


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


def named_facts(text: str) -> list[str]:
    """The absolute paths, ports (``port 8080``) and users (``user alice``) ``text`` names, in order, once each.

    Examples
    --------
    >>> named_facts("cat /app/out.txt > /logs/verifier/reward.txt; curl localhost:8080; id -u alice")
    ['/app/out.txt', 'port 8080', 'user alice']
    """
    found: list[str] = []
    for match in _PATH.finditer(text):
        path = match.group(1).rstrip("/.") or "/"
        if path in _BARE_FOLDERS or any(path == root or path.startswith(root + "/") for root in SYSTEM_PATHS):
            continue
        found.append(path)
    found += [f"port {a or b}" for a, b in _PORT.findall(text)]
    found += [f"user {name}" for name in _USER.findall(text) if name not in {"root", "nobody"}]
    return list(dict.fromkeys(found))


def in_instruction(fact: str, instruction: str) -> bool:
    """Whether ``fact`` (from :func:`named_facts`) appears verbatim in ``instruction`` (a port or user by its value).

    Examples
    --------
    >>> in_instruction("/app/out.txt", "Write `/app/out.txt`."), in_instruction("port 8080", "serve on 8080")
    (True, True)
    """
    value = fact.split(" ", 1)[1] if fact.startswith(("port ", "user ")) else fact
    # not a part of a longer name: no word, slash or dash around it, no ".ext" after it (a full stop is fine)
    return re.search(rf"(?<![\w/-]){re.escape(value)}(?![\w/-]|\.\w)", instruction) is not None


def named_in_instruction(instruction: str, folders: list[Path]) -> StaticResult:
    """The ``named_in_instruction`` check of one step (module docstring)."""
    facts: list[str] = []
    for path in step_test_files(folders):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        facts += named_facts(text)
    facts = list(dict.fromkeys(facts))
    missing = tuple(fact for fact in facts if not in_instruction(fact, instruction))
    if missing:
        return StaticResult("fault", len(facts), missing, "not in the instruction: " + ", ".join(missing))
    return StaticResult("ok", len(facts), (), f"all {len(facts)} named in the instruction")


def fix_not_in_instruction(instruction: str, key: list[str]) -> StaticResult:
    """The ``fix_not_in_instruction`` check of one step, given its key step's command lines."""
    given = tuple(line for line in key if line in instruction)
    if given:
        return StaticResult("fault", len(key), given, "the instruction spells out: " + " | ".join(given))
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


def harbor_lint(task_dirs: list[Path], *, timeout_sec: float = 120.0) -> dict[Path, list[dict]] | str:
    """``harbor lint --json``'s findings by task folder, or why it could not run (one line)."""
    harbor = harbor_executable()
    if harbor is None:
        return "Harbor is not installed (no `harbor` on PATH)"
    try:
        done = subprocess.run(
            [harbor, "lint", "--json", *map(str, task_dirs)],
            capture_output=True,
            text=True,
            timeout=timeout_sec,
            check=False,
        )
        findings = json.loads(done.stdout or "[]")
    except (OSError, subprocess.TimeoutExpired, ValueError) as error:
        return f"harbor lint could not run: {type(error).__name__}: {error}"
    if not isinstance(findings, list):
        return f"harbor lint --json printed no list (exit {done.returncode}): {done.stderr.strip()[-200:]}"
    by_task: dict[Path, list[dict]] = {Path(task).resolve(): [] for task in task_dirs}
    for finding in findings:
        if not isinstance(finding, dict):
            continue
        where = Path(str(finding.get("path") or "")).resolve()
        owner = next((task for task in by_task if where == task or task in where.parents), None)
        if owner is not None:
            by_task[owner].append(finding)
    return by_task


def lint_result(findings: list[dict]) -> StaticResult:
    """The ``lint`` row of one task from its ``harbor lint`` findings (each rule once in the evidence)."""
    rules = tuple(dict.fromkeys(str(finding.get("rule")) for finding in findings))
    if rules:
        return StaticResult("fault", len(findings), rules, "harbor lint: " + ", ".join(rules))
    return StaticResult("ok", 0, (), "harbor lint: no findings")
