"""Why a replay's step failed, in one line, read from the replay's own output.

A replay leaves, per step, the solution script's output (``agent/replay.txt``), its non-zero exit
code (``agent/exit-code.txt``, as Harbor's oracle writes it), the verifier's output
(``verifier/test-stdout.txt``) and the step's exception; both engines write the same files.
:func:`step_cause` reads them and says the first of: the network the script or the tests needed
(``Could not resolve host``, a name that does not resolve), the script's non-zero exit with the
last line it wrote (``solve.sh exited with code 2: sed: can't read /solution/x.sh``), the
exception (a timeout, a failed image build: its ANSI codes stripped, its error line kept), the
verifier's own error line (a missing file, a failed test). Each is one line, at most
:data:`LINE_LIMIT` characters.
"""

from __future__ import annotations

import re
from pathlib import Path

#: The longest cause a row's evidence carries (characters).
LINE_LIMIT = 240
#: How much of an output file is read (its end: the error is last).
TAIL_BYTES = 64 * 1024

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[@-Z\\-_]")
#: A name that did not resolve, in the words of curl, git, apt, pip/urllib3, Python's socket.
_UNRESOLVED = (
    re.compile(r"Could not resolve host:?\s*'?([\w.\-]+)", re.I),
    re.compile(r"Temporary failure resolving '([\w.\-]+)'"),
    re.compile(r"Failed to resolve '([\w.\-]+)'"),
    re.compile(
        r"(?:getaddrinfo|gaierror|Name or service not known|Temporary failure in name resolution)"
        r".*?host='?([\w.\-]+)"
    ),
    re.compile(r"host='([\w.\-]+)'.*(?:NameResolution|Temporary failure in name resolution|Name or service)"),
    re.compile(r"(?:Temporary failure in name resolution|Name or service not known|Network is unreachable)"),
)
#: Lines that say what went wrong (the last one of these is the cause when nothing above matched).
_ERROR_LINE = re.compile(
    r"No such file or directory|can't read|cannot (?:open|stat|access|find)|not found|Permission denied|"
    r"Operation not permitted|\berror\b|FAILED|Traceback|exception|denied|refused|timed out",
    re.I,
)


def strip_ansi(text: str) -> str:
    """``text`` without terminal escape codes (colours, cursor moves) and carriage-return overprints.

    Examples
    --------
    >>> strip_ansi("\\x1b[31mERROR\\x1b[0m: failed to solve")
    'ERROR: failed to solve'
    """
    text = _ANSI.sub("", text)
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))


def cause_line(text: str) -> str:
    """``text`` (a message, an output) as one line: its ANSI codes stripped; a single line as it is, else
    its first line and its last error line (a failed build's ``ERROR: ...``), cut to :data:`LINE_LIMIT`.

    Examples
    --------
    >>> cause_line("Building the image failed:\\n#5 RUN apt-get x\\n\\x1b[1mERROR: process exited 100\\x1b[0m\\n")
    'Building the image failed: ... ERROR: process exited 100'
    """
    lines = [line.strip() for line in strip_ansi(text).splitlines() if line.strip()]
    if not lines:
        return ""
    shown = lines[0]
    errors = [line for line in lines[1:] if _ERROR_LINE.search(line)]
    if errors and errors[-1] not in shown:
        shown = f"{shown} ... {errors[-1]}"
    return _cut(shown)


def network_need(text: str) -> str | None:
    """The name ``text`` failed to resolve (``could not resolve host X``), or the network failure it shows; None.

    Examples
    --------
    >>> network_need("curl: (6) Could not resolve host: astral.sh")
    'could not resolve host astral.sh'
    >>> network_need("W: Failed to fetch http://deb.debian.org/x  Temporary failure resolving 'deb.debian.org'")
    'could not resolve host deb.debian.org'
    >>> network_need("all good") is None
    True
    """
    for pattern in _UNRESOLVED:
        found = pattern.search(text)
        if found:
            host = found.group(1) if found.groups() else None
            return f"could not resolve host {host}" if host else _cut(found.group(0).lower())
    return None


def last_error(text: str) -> str | None:
    """The last line of ``text`` that says what went wrong, else its last line; None when empty.

    Examples
    --------
    >>> last_error("a\\nsed: can't read /solution/x.sh: No such file or directory\\ndone\\n")
    "sed: can't read /solution/x.sh: No such file or directory"
    """
    lines = [line.strip() for line in strip_ansi(text).splitlines() if line.strip()]
    if not lines:
        return None
    errors = [line for line in lines if _ERROR_LINE.search(line)]
    return _cut(errors[-1] if errors else lines[-1])


def read_exit_code(agent_dir: Path) -> int | None:
    """The solution script's non-zero exit code recorded in ``agent_dir`` (``exit-code.txt``), else None."""
    try:
        return int((agent_dir / "exit-code.txt").read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def step_cause(step_dir: Path, exception: str | None = None, message: str | None = None) -> str | None:
    """Why the step in ``step_dir`` (a trial folder, or a multi-step trial's ``steps/<name>``) failed; None
    when its files say nothing (module docstring for the order).

    Examples
    --------
    >>> import tempfile
    >>> step = Path(tempfile.mkdtemp())
    >>> (step / "verifier").mkdir()
    >>> _ = (step / "verifier" / "test-stdout.txt").write_text("curl: (6) Could not resolve host: astral.sh\\n")
    >>> step_cause(step)
    'the tests need the network (could not resolve host astral.sh)'
    >>> (step / "agent").mkdir()
    >>> _ = (step / "agent" / "exit-code.txt").write_text("2")
    >>> _ = (step / "agent" / "replay.txt").write_text("sed: can't read /solution/x.sh: No such file or directory\\n")
    >>> step_cause(step)
    "solve.sh exited with code 2: sed: can't read /solution/x.sh: No such file or directory"
    """
    agent = _tail(step_dir / "agent" / "replay.txt") or _tail(step_dir / "agent" / "oracle.txt")
    verifier = (
        _tail(step_dir / "verifier" / "test-stdout.txt") + "\n" + _tail(step_dir / "verifier" / "test-stderr.txt")
    )
    if need := network_need(agent):
        return f"the solution needs the network ({need})"
    code = read_exit_code(step_dir / "agent")
    if code is not None:
        said = last_error(agent)
        return _cut(f"solve.sh exited with code {code}" + (f": {said}" if said else ""))
    if need := network_need(verifier):
        return f"the tests need the network ({need})"
    if exception is not None:
        return _cut(f"{exception}: {cause_line(message or '')}")
    said = last_error(verifier)
    return f"the tests say: {said}" if said else None


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(size - TAIL_BYTES, 0))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _cut(text: str) -> str:
    return text if len(text) <= LINE_LIMIT else text[: LINE_LIMIT - 3] + "..."
