"""A reference solution's text as the checks edit it: its key-step mark and its top-level commands.

The key step of a step's ``solve.sh`` is the lines between the comment lines ``# key-step begin``
and ``# key-step end`` (this exact text, leading blanks allowed). Several pairs in one script mark one
key step in parts (a task merged by ``depthlab tasks merge`` carries each original step's pair in its one
``solve.sh``): the key step is their union. A mark that opens and never closes, closes without opening,
or opens again before it closes is a :class:`MarkError` (the task's rows say so).

A *top-level command* is one command of the script as bash reads it at the top level: a simple
command on its line, with its ``\\`` continuations, its here-documents and whatever compound
command (``if``/``fi``, ``for``/``done``, ``case``/``esac``, ``{``/``}``, ``(``/``)``) it opens.
Comment and blank lines are no command; the shebang and the mark lines are comments. Removing a
command removes exactly its lines, so the mutant is the script minus those lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The comment lines that open and close a step's key step, exactly as written in ``solve.sh``.
KEY_BEGIN = "# key-step begin"
KEY_END = "# key-step end"

_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_OPENERS = {"if": "fi", "for": "done", "while": "done", "until": "done", "case": "esac", "select": "done"}
_CLOSERS = {"fi", "done", "esac"}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[{}()]|;;|[;&|]")


class MarkError(ValueError):
    """A key-step mark that cannot be read (opens and never closes, closes unopened, opens twice)."""


@dataclass(frozen=True)
class Command:
    """One top-level command: its 1-based first and last line and its text.

    Examples
    --------
    >>> top_level_commands("echo a\\nif true; then\\n  echo b\\nfi\\n")[1]
    Command(first=2, last=4, text='if true; then\\n  echo b\\nfi')
    """

    first: int
    last: int
    text: str


def is_comment(line: str) -> bool:
    """Whether ``line`` is blank or a comment (what W does not count, :func:`depthlab.io.tasks.count_work`)."""
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def key_spans(text: str) -> tuple[tuple[int, int], ...]:
    """The 1-based lines of each begin and end mark of ``text``'s key step, in order; empty when it has none.

    Raises
    ------
    MarkError
        When a mark opens and never closes, closes without opening, or opens again before it closes.

    Examples
    --------
    >>> key_spans("a\\n# key-step begin\\nb\\n# key-step end\\nc\\n")
    ((2, 4),)
    >>> key_spans("# key-step begin\\nb\\n# key-step end\\n# key-step begin\\nc\\n# key-step end\\n")
    ((1, 3), (4, 6))
    >>> key_spans("a\\n")
    ()
    >>> key_spans("# key-step begin\\nb\\n")
    Traceback (most recent call last):
    ...
    depthlab.checks.script.MarkError: the key-step mark opened on line 1 never closes ('# key-step end')
    """
    begin: int | None = None
    spans: list[tuple[int, int]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped == KEY_BEGIN:
            if begin is not None:
                raise MarkError(f"a key-step mark opens on line {number} inside the one opened on line {begin}")
            begin = number
        elif stripped == KEY_END:
            if begin is None:
                raise MarkError(f"the key-step mark closes on line {number} without opening ('{KEY_BEGIN}')")
            spans.append((begin, number))
            begin = None
    if begin is not None:
        raise MarkError(f"the key-step mark opened on line {begin} never closes ('{KEY_END}')")
    return tuple(spans)


def key_span(text: str) -> tuple[tuple[int, int], ...] | None:
    """:func:`key_spans`, or None when ``text`` has no mark (the step reports "not marked").

    Examples
    --------
    >>> key_span("a\\n# key-step begin\\nb\\n# key-step end\\nc\\n"), key_span("a\\n")
    (((2, 4),), None)
    """
    return key_spans(text) or None


def key_lines(text: str) -> list[str]:
    """The command lines of ``text``'s key step: comments, blanks and here-document bodies (the content of a
    file written, not a command) left out; empty without a mark.

    Examples
    --------
    >>> key_lines("a\\n# key-step begin\\n# why\\ncat > f <<'EOF'\\nbody\\nEOF\\ncp x y\\n# key-step end\\n")
    ["cat > f <<'EOF'", 'cp x y']
    """
    every = text.splitlines()
    lines: list[str] = []
    ending: list[str] = []
    for line in (line for first, last in key_spans(text) for line in every[first : last - 1]):
        if ending:
            if line.strip() == ending[0]:
                ending.pop(0)
            continue
        if is_comment(line):
            continue
        lines.append(line.strip())
        if "<<" in _code(line):
            ending += [match.group(2) for match in _HEREDOC.finditer(line)]
    return lines


def without_key(text: str) -> str:
    """``text`` with its key step's lines (between each pair of marks) removed; the marks stay as comments.

    Examples
    --------
    >>> without_key("a\\n# key-step begin\\nb\\n# key-step end\\nc\\n")
    'a\\n# key-step begin\\n# key-step end\\nc\\n'
    """
    spans = key_spans(text)
    if not spans:
        raise MarkError("the step's solution has no key-step mark")
    inside = {number for first, last in spans for number in range(first + 1, last)}
    return "".join(line for number, line in enumerate(text.splitlines(keepends=True), start=1) if number not in inside)


def without_lines(text: str, first: int, last: int) -> str:
    """``text`` with its 1-based lines ``first``..``last`` removed.

    Examples
    --------
    >>> without_lines("a\\nb\\nc\\n", 2, 2)
    'a\\nc\\n'
    """
    lines = text.splitlines(keepends=True)
    return "".join(lines[: first - 1] + lines[last:])


def top_level_commands(text: str) -> list[Command]:
    """The top-level commands of a bash script, in order (module docstring).

    Examples
    --------
    >>> [c.text for c in top_level_commands("#!/bin/bash\\nset -e\\ncat > f <<'EOF'\\nx\\nEOF\\necho a \\\\\\n  b\\n")]
    ['set -e', "cat > f <<'EOF'\\nx\\nEOF", 'echo a \\\\\\n  b']
    """
    lines = text.splitlines()
    commands: list[Command] = []
    index = 0
    while index < len(lines):
        if is_comment(lines[index]):
            index += 1
            continue
        first = index
        depth = 0
        cases = [0]
        heredocs: list[str] = []
        while index < len(lines):
            line = lines[index]
            index += 1
            if heredocs:  # inside a here-document: only its terminator matters
                if line.strip() == heredocs[0] or line == heredocs[0]:
                    heredocs.pop(0)
                if heredocs:
                    continue
                if depth <= 0 and not _continues(lines[index - 2] if index >= 2 else ""):
                    break
                continue
            code = _code(line)
            heredocs += [match.group(2) for match in _HEREDOC.finditer(line) if "<<" in code]
            depth += _depth_change(code, cases)
            if heredocs or depth > 0 or code.rstrip().endswith(("\\", "&&", "||", "|")):
                continue
            break
        commands.append(Command(first + 1, index, "\n".join(lines[first:index])))
    return commands


def _continues(line: str) -> bool:
    return _code(line).rstrip().endswith(("\\", "&&", "||", "|"))


def _code(line: str) -> str:
    """The line without its quoted strings and its trailing comment (what bash reads as words)."""
    out: list[str] = []
    quote = ""
    for position, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
            continue
        if char in "'\"":
            quote = char
            out.append(" ")
            continue
        if char == "#" and (position == 0 or line[position - 1] in " \t;"):
            break
        out.append(char)
    return "".join(out)


def _depth_change(code: str, cases: list[int]) -> int:
    """How many compound commands ``code`` opens minus how many it closes.

    ``cases`` holds the count of open ``case`` commands across lines: inside one, a pattern's ``)``
    closes nothing.
    """
    change = 0
    at_command = True  # a reserved word counts only where a command starts
    for match in _WORD.finditer(code):
        word = match.group(0)
        if word in {";", "&", "|", ";;"}:
            at_command = True
            continue
        if word in {"(", ")"}:
            if not cases[0]:
                change += 1 if word == "(" else -1
            at_command = True
            continue
        if word in {"{", "}"}:
            change += (1 if word == "{" else -1) if at_command else 0
            at_command = True
            continue
        if at_command and word in _OPENERS:
            change += 1
            cases[0] += word == "case"
        elif at_command and word in _CLOSERS:
            change -= 1
            cases[0] -= word == "esac"
        at_command = word in {"then", "do", "else", "elif", "in", "!", "time"}
    return change


_SHELL_OPTION = re.compile(r"^(?:set\s+[-+][a-zA-Z]+(?:\s+(?:[-+][a-zA-Z]+|[a-z]+))*|shopt\s+-[su](?:\s+\w+)+)$")
_OUTPUT_ONLY = re.compile(r"^(?:echo|printf)\b")
_TO_STREAM = re.compile(r"\d?>&\d")
_CHMOD_X = re.compile(r"^chmod\s+(?:-\w+\s+)*(?:\+x|a\+x|u\+x|[0-7]?[75][0-7][0-7])\s+(.+)$")
_MKDIR_P = re.compile(r"^mkdir\s+(?:-\w*p\w*\s+)(?:-\S+\s+)*(.+)$")
_MADE_EXECUTABLE = re.compile(
    r"(?m)(?:^\s*|\bRUN\s+|&&\s*|;\s*)chmod\s+(?:-\w+\s+)*(?:\+x|a\+x|u\+x|[0-7]?[75][0-7][0-7])\s+([^;&|\n]+)"
)
_MADE_FOLDER = re.compile(r"(?m)(?:\bmkdir\s+(?:-\S+\s+)*|^\s*WORKDIR\s+)([^;&|\n]+)")


@dataclass(frozen=True)
class Before:
    """What exists before a step's solution runs, as far as the task's files say: the folders (the
    working folder and its parents, the image's ``WORKDIR``\\ s and ``mkdir``\\ s, the earlier steps')
    and the executable files (made so by the image, an earlier step or the step's ``setup.sh``)."""

    folders: frozenset[str] = frozenset()
    executables: frozenset[str] = frozenset()


def before_step(texts: list[str], workdir: str | None = None) -> Before:
    """:class:`Before` from the texts that run before a step (the Dockerfile, the earlier steps' solutions,
    the step's ``setup.sh``) and the working folder.

    Examples
    --------
    >>> sorted(before_step(["WORKDIR /app\\nRUN mkdir -p /app/out", "chmod +x /app/run.sh"]).folders)
    ['/', '/app', '/app/out']
    """
    folders = {"/"}
    executables: set[str] = set()
    for text in texts:
        for match in _MADE_FOLDER.finditer(text):
            folders |= {_word(word) for word in match.group(1).split() if _word(word).startswith("/")}
        for match in _MADE_EXECUTABLE.finditer(text):
            executables |= {_word(word) for word in match.group(1).split() if not word.startswith(("-", "2>", ">"))}
    if workdir:
        folders.add(workdir.rstrip("/") or "/")
    for folder in list(folders):
        parts = folder.rstrip("/").split("/")
        folders |= {"/".join(parts[:end]) or "/" for end in range(1, len(parts))}
    return Before(frozenset(folders), frozenset(executables))


def inert_reason(command: Command, earlier: list[Command], before: Before = Before()) -> str | None:
    """Why removing ``command`` cannot change what the step leaves behind, or None: a shell option, output
    only (an ``echo``/``printf`` to the terminal), a no-op, a ``chmod +x`` of a file already executable, a
    ``mkdir -p`` of folders that exist. ``earlier`` are the script's commands before it.

    Examples
    --------
    >>> [inert_reason(c, []) for c in top_level_commands("set -euo pipefail\\necho done\\necho x > f\\n")]
    ['a shell option', 'output only', None]
    >>> commands = top_level_commands("chmod +x /app/a.sh\\nmkdir -p /app /tmp\\nmkdir -p /app/new\\n")
    >>> [inert_reason(c, [], Before(frozenset({"/app"}), frozenset({"/app/a.sh"}))) for c in commands]
    ['already executable', 'the folders exist', None]
    """
    if "\n" in command.text:
        return None
    code = " ".join(_code(command.text).split())
    if any(mark in code for mark in (";", "&&", "||", "$(", "`")):
        return None
    if _SHELL_OPTION.match(code):
        return "a shell option"
    if code in {"true", ":"}:
        return "does nothing"
    if _OUTPUT_ONLY.match(code) and not any(mark in _TO_STREAM.sub("", code) for mark in (">", "|", "<")):
        return "output only"
    made_before = before_step([c.text for c in earlier])
    chmod = _CHMOD_X.match(code)
    if chmod and all(
        _word(word) in before.executables | made_before.executables
        for word in chmod.group(1).split()
        if not word.startswith(("2>", ">"))
    ):
        return "already executable"
    mkdir = _MKDIR_P.match(command.text.strip())
    if mkdir:
        targets = [_word(word) for word in mkdir.group(1).split() if not word.startswith(("2>", ">"))]
        exists = before.folders | made_before.folders | {"/tmp", "/logs", "/root", "/var", "/usr"}
        if targets and all(target.rstrip("/") in exists for target in targets):
            return "the folders exist"
    return None


def _word(word: str) -> str:
    return word.strip("'\"").rstrip("/") or "/"
