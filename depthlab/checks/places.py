"""Places as they are written, and whether an instruction names one: the instruction's side of
``named_in_instruction`` (:mod:`depthlab.checks.static` reads the tests' side).

A place is an absolute path written after a delimiter (:data:`PATH`); a bare top folder, or one under Harbor's or
the system's folders, needs no naming (:func:`needs_no_naming`). An instruction names a place verbatim, relative to
the working folder, through a folder holding it or a path under it, by another spelling of the same place
(:func:`in_instruction`); it may name it at another place instead (:func:`named_elsewhere`, round 17), or be a
placeholder that names no place at all (:func:`is_placeholder`, round 18).
"""

from __future__ import annotations

import re

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
#: Folders that alone (not the files under them) are a place, not a fact to state.
BARE_FOLDERS: frozenset[str] = frozenset(
    {"/", "/app", "/root", "/home", "/opt", "/srv", "/mnt", "/media", "/workspace"}
)

# an absolute path: a slash after a delimiter (not after a word, a variable's closing brace, another path)
# (nor after a '#': `#/definitions/` is a JSON pointer; nor after '<': `</script>` is a closing tag); one
# ending at a backslash is a regular expression's piece (`/home/u/ca-bundle\.crt`), read as no path
# (nor after a '*': `-path "*/test/*"` is a glob's piece; round 9)
PATH = re.compile(r"(?<![\w.$:/~}\])#<*-])((?>/[A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)*/?))(?!\\)")
# a `file://` URI's scheme and empty host, before its absolute path (round 13): the path is the place named
_FILE_URI = re.compile(r"\bfile://(?=/)", re.IGNORECASE)
# what a Node package manager's install writes in the folder it runs in (round 16): `D/node_modules` and under it
_INSTALLED = re.compile(r"(/[^\s]*?)/node_modules(?:/[^\s]*)?")
_NODE_INSTALL = re.compile(r"\b(?:(?:npm|pnpm)[ \t]+(?:install|i|ci|add)|yarn[ \t]+(?:install|add))\b")
#: Round 18: a placeholder instruction names no place and has at most this many words (LiveCodeBench Pro's `base`).
PLACEHOLDER_WORDS = 5
# round 17: a file name an instruction may give bare (`out.txt`): a name with a suffix that has a letter
# (a stem of two characters or more: `e.g.` is no file)
_FILE_NAME = re.compile(r"(?<![\w/.~-])(?=[\w+-]*[A-Za-z])[\w+-]{2,}\.[A-Za-z]\w{0,7}(?![\w-]|\.\w)")
# round 17: any sign of a place in an instruction: a path, a file name, a port
_ANY_PLACE = re.compile(r"(?:^|[\s`'\"(=:])~?/[\w.-]|\bport\b|:\d{2,5}\b", re.IGNORECASE)


def needs_no_naming(path: str) -> bool:
    """A bare top folder or under Harbor's or the system's folders: nothing an instruction need name."""
    return path in BARE_FOLDERS or any(path == root or path.startswith(root + "/") for root in SYSTEM_PATHS)


def in_instruction(fact: str, instruction: str, workdir: str | None = None) -> bool:
    """Whether ``instruction`` names ``fact`` (from :func:`named_facts`): verbatim (a port or user by its
    value); under ``workdir``, by its relative path; a file, by a named folder holding it; a folder, by a
    named path under it.

    Examples
    --------
    >>> in_instruction("/app/out.txt", "Write `/app/out.txt`."), in_instruction("port 8080", "serve on 8080")
    (True, True)
    >>> in_instruction("/app/hello.txt", "Create hello.txt.", "/app"), in_instruction("/app/hello.txt", "Create x.")
    (True, False)
    >>> in_instruction("/app/docs", "Write /app/docs/a.md."), in_instruction("/app/out/a.json", "Write to /app/out/.")
    (True, True)
    >>> in_instruction("/app/out/a.json", "Write /app/out/b.json.")
    False
    >>> in_instruction("/app/sub/a.csv", "Write `./sub/a.csv`.", "/app"), in_instruction("/app/v", "in /app/v/.")
    (True, True)
    >>> in_instruction("port 8080", "at http://localhost:8080/auth"), in_instruction("/root/.gnupg", "in ~/.gnupg/")
    (True, True)
    >>> in_instruction("/w/runs", "e.g. `uri=file:///w/runs`"), in_instruction("/w/runs", "e.g. `uri=http://h/w/runs`")
    (True, False)
    """
    if fact.startswith("port "):  # a whole number: "localhost:8080/auth" names port 8080
        return re.search(rf"(?<![\w.]){re.escape(fact[5:])}(?!\w)", instruction) is not None
    if fact.startswith("user "):
        return _names(fact[5:], instruction)
    installed = _INSTALLED.fullmatch(fact)
    if installed and _NODE_INSTALL.search(instruction):  # round 16: `npm install` in a folder it names
        folder = installed.group(1)
        if folder == (workdir or "").rstrip("/") or in_instruction(folder, instruction, workdir):
            return True
    # a `file://` URI names its path (round 13): `tracking_uri=file:///w/mlruns` names /w/mlruns
    instruction = _FILE_URI.sub(" ", instruction)
    candidates = [fact]
    if workdir and workdir.rstrip("/") and fact.startswith(workdir.rstrip("/") + "/"):
        relative = fact[len(workdir.rstrip("/")) + 1 :]
        candidates += [relative, f"./{relative}"]  # `./submission/audit.csv` names /app/submission/audit.csv
    if fact.startswith("/root/"):  # Harbor's agents run as root: `~/.gnupg` is /root/.gnupg
        candidates.append("~" + fact[len("/root") :])
    for value in candidates:
        if _names(value, instruction) or re.search(rf"(?<![\w/.-]){re.escape(value)}/[\w.-]", instruction):
            return True
        parts = value.split("/")
        for end in range(len(parts) - 1, 0, -1):
            folder = "/".join(parts[:end])
            if not folder.strip("/.") or needs_no_naming(folder):
                continue
            # a folder holding the file, named as a folder (a relative one with its slash)
            slash = "/" if not folder.startswith("/") else "/?"
            if re.search(rf"(?<![\w/.-]){re.escape(folder)}{slash}(?!/?\w|/?[.-]\w)", instruction):
                return True
    return False


def _names(value: str, instruction: str) -> bool:
    # not a part of a longer name: no word, slash or dash around it, no ".ext" or path after it (a full stop
    # is fine, and so is a folder's closing slash: `/app/videos/`)
    return re.search(rf"(?<![\w/.-]){re.escape(value)}(?![\w-]|/[\w.-]|\.\w)", instruction) is not None


def named_elsewhere(fact: str, instruction: str) -> str | None:
    """Where ``instruction`` puts the file ``fact`` names, when that is another place (round 17): a path of the
    instruction ending in the same name (``/output/a.csv`` for ``/workspace/output/a.csv``), or the bare name
    when it has a suffix (``out.txt`` for ``/app/results/out.txt``); None when it names the name nowhere (or
    names the place itself: :func:`in_instruction` is asked first).

    Examples
    --------
    >>> named_elsewhere("/workspace/output/a.csv", "Save the table to `/output/a.csv`.")
    '/output/a.csv'
    >>> named_elsewhere("/app/results/out.txt", "Write done to out.txt in the results folder.")
    'out.txt'
    >>> named_elsewhere("/app/scripts", "Fix the scripts."), named_elsewhere("/app/a.csv", "Write /app/b.csv.")
    (None, None)
    >>> named_elsewhere("port 8080", "Serve on port 9090.") is None
    True
    """
    name = fact.rstrip("/").rsplit("/", 1)[-1]
    if not fact.startswith("/") or not re.search(r"[A-Za-z]", name):
        return None
    # a path of the instruction ending in the name, not part of a longer name
    for match in PATH.finditer(instruction):
        found = match.group(1).rstrip("/.")
        if found.rsplit("/", 1)[-1] == name and found != fact:
            return found
    bare = _FILE_NAME.fullmatch(name) is not None
    if bare and re.search(rf"(?<![\w/.~-]){re.escape(name)}(?![\w-]|\.\w|/)", instruction):
        return name
    return None


def names_no_place(instruction: str) -> bool:
    """Whether ``instruction`` names no place at all (round 17): no path, no file name, no port; an instruction
    that cannot tell the agent where anything goes (LiveCodeBench Pro's migrated ``base``).

    Examples
    --------
    >>> names_no_place("base"), names_no_place("Write the answer to answer.txt."), names_no_place("Edit /app/x")
    (True, False, False)
    >>> names_no_place("Serve the API on port 8000."), names_no_place("Fix the failing build, e.g. the linker.")
    (False, True)
    """
    return _FILE_NAME.search(instruction) is None and _ANY_PLACE.search(instruction) is None


def is_placeholder(instruction: str) -> bool:
    """Whether ``instruction`` is a placeholder (round 18): it names no place (:func:`names_no_place`) and has at most
    :data:`PLACEHOLDER_WORDS` words. An instruction of prose without a path is not one: it may describe its places in
    words ("solve dot py inside the app folder"; round 17's held-out part).

    Examples
    --------
    >>> is_placeholder("base"), is_placeholder("Fix the scheduler so that every scenario runs without a deadline miss.")
    (True, False)
    """
    return names_no_place(instruction) and len(instruction.split()) <= PLACEHOLDER_WORDS
