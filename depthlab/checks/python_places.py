"""The places a test's Python (or shell) code handles itself, which the tests therefore do not ask the agent
about: what it makes, writes or hands over (:func:`made_or_handed_paths`), the programs it starts
(:func:`started_programs`), the sources it compiles (:func:`compiled_sources`), and the places it accepts any one
of (:func:`alternatives`); the places it only asserts absent or removes (:func:`idle_paths`, round 18); whether
it connects anywhere (:func:`connects`: else its ports are values); and the
parts of a Python test that ask nothing (:func:`unasked_parts`: a sentence it builds, an answer it compares or
looks up, a URL it sends as a request's data, a subscript's key).

The reading of ``named_in_instruction`` (:mod:`depthlab.checks.static`), apart from its rules so that each
module keeps one concern: these functions read a test file's text (its AST where it is Python) and return
paths; the check decides what the paths mean.
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
from pathlib import Path

# a sentence (round 13): a string that starts with a capitalised word and has at least one more word before a path
# (`"Permission denied reading /srv/a.txt"`, `"Timeout at /api/users"`): a message or sample text the tests build
# (an error event handed to the agent's function), no place; a command line starts with its program's lower case word
_SENTENCE = re.compile(r"[A-Z][a-z]+[,:;]?(?:[ \t]+[A-Za-z]+[,:;]?)+[ \t]+/")
#: A method that grows a collection: a name only grown and looked up in holds answers (round 13).
_GROWING = frozenset({"append", "extend", "add", "insert", "update"})
#: The keyword arguments of an HTTP call that carry what is sent, not where (round 13).
_REQUEST_DATA = frozenset({"data", "params", "json", "headers", "files", "cookies"})
_SUBPROCESS_CALLS = frozenset({"run", "call", "check_call", "check_output", "Popen"})
#: The modules through which a Python test connects to a port (round 14): HTTP, sockets, databases, brokers, browsers.
_NETWORK_MODULES = frozenset({
    "requests", "httpx", "urllib", "urllib3", "http", "socket", "ssl", "aiohttp", "websocket", "websockets",
    "socketio", "grpc", "xmlrpc", "smtplib", "ftplib", "telnetlib", "poplib", "imaplib", "paramiko", "pycurl",
    "psycopg2", "psycopg", "asyncpg", "pymysql", "MySQLdb", "mysql", "pymssql", "pyodbc", "oracledb", "sqlalchemy",
    "redis", "aioredis", "pymemcache", "memcache", "pymongo", "motor", "elasticsearch", "opensearchpy", "cassandra",
    "neo4j", "clickhouse_driver", "influxdb", "influxdb_client", "pika", "aio_pika", "kafka", "aiokafka",
    "confluent_kafka", "nats", "paho", "zmq", "kazoo", "ldap3", "dns", "boto3", "botocore", "minio", "hvac",
    "consul", "etcd3", "docker", "kubernetes", "selenium", "playwright", "pyppeteer", "tornado", "twisted",
})  # fmt: skip
# a command that starts a client program (round 14): in a string (`"sleep 1; curl -s localhost:80"`) or as an
# argument list's first element (`["nc", "-z", ...]`)
_CLIENT_PROGRAM = re.compile(
    r"(?:^|[;&|(`]|\$\()[ \t]*(?:(?:sudo|exec|timeout[ \t]+\S+)[ \t]+)*(?:[\w./-]*/)?"
    r"(?:curl|wget|nc|ncat|netcat|telnet|socat|websocat|nmap"
    r"|grpcurl|redis-cli|psql|pg_isready|mysql|mysqladmin|mongosh|mongo|openssl|ssh|sftp|ftp|ldapsearch|dig|nslookup"
    r"|wrk|kcat|kafkacat|zkCli\.sh|nghttp|h2load|rabbitmqctl|etcdctl|kubectl|vault)(?=[ \t]|$)",
    re.MULTILINE,
)
#: A command line that starts an interpreter (what follows is code it runs, not a place).
INTERPRETER = re.compile(r"[ \t]*(?:(?:sudo|exec|env)[ \t]+)*(?:\S*/)?(?:python3?|bash|sh|zsh)\b")
# a compiler that writes its output beside the source it is given, by default (round 13): `coqc /w/p.v` writes
# /w/p.vo, `javac /w/A.java` /w/A.class; what the tests compile so is their own, as an `-o` target is
_COMPILERS_BESIDE = frozenset({"coqc", "javac", "tsc", "ocamlc", "ocamlopt", "ghc", "nasm", "cython", "pdflatex",
                               "xelatex", "lualatex", "latex"})  # fmt: skip
_COMPILE_BESIDE = re.compile(
    r"(?:^|[;&|(`]|\b(?:then|do|else)\b|\$\()[ \t]*(?:\S*/)?(?:"
    + "|".join(sorted(_COMPILERS_BESIDE))
    + r")\b([^\n;|&]*)",
    re.MULTILINE,
)


def made_or_handed_paths(text: str) -> set[str]:
    """The absolute paths a Python test makes or hands over through a name (round 11): what it compiles with
    ``"-o", str(binary)`` or copies to with ``shutil.copy(src, target)`` where the name holds a literal path, and
    what it hands to the agent's program as an argument (``[sys.executable, str(script), "5", str(out)]``: the
    program is told the place, so the instruction need not name it; the program itself is still asked); round 14:
    what it writes itself, as a literal or through a name (:func:`_written_files`).

    Examples
    --------
    >>> sorted(made_or_handed_paths('out = Path("/w/bin")\\nsubprocess.run(["gcc", "-o", str(out), "/w/a.c"])'))
    ['/w/bin']
    >>> sorted(made_or_handed_paths('s = "/w/tool.py"\\nsubprocess.run([sys.executable, s, "5", "/w/out.txt"])'))
    ['/w/out.txt']
    >>> sorted(made_or_handed_paths('c = Path("/w/job.conf")\\nc.write_text("9")\\nopen("/w/x.log", "a").close()'))
    ['/w/job.conf', '/w/x.log']
    """
    parsed = _parsed(text)
    if parsed is None:
        return set()
    tree, values = parsed

    def paths_of(node: ast.expr) -> set[str]:
        return _paths_of(node, values)

    own: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)):
            for before, after in itertools.pairwise(node.elts):
                if isinstance(before, ast.Constant) and before.value == "-o" and not literal_path(after):
                    own |= paths_of(after)  # a literal -o target is _TOOLBOX's
        if not (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) and node.args):
            continue
        function = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        owner = node.func.value if isinstance(node.func, ast.Attribute) else None
        if function in _SUBPROCESS_CALLS and isinstance(node.args[0], (ast.List, ast.Tuple)):
            elements = node.args[0].elts
            program = 1 if elements and _is_interpreter(elements[0]) else 0
            if len(elements) > program + 1 and paths_of(elements[program]):
                for argument in elements[program + 1 :]:
                    own |= paths_of(argument)
        elif isinstance(owner, ast.Name) and owner.id == "shutil" and len(node.args) == 2:
            own |= paths_of(node.args[1]) if isinstance(node.args[1], ast.Name) else set()  # a literal's: above
    return own | _written_files(tree, values)


def _written_files(tree: ast.AST, values: dict[str, list[str]]) -> set[str]:
    """The files a Python test writes itself (round 14), as a literal or through a name: ``p.write_text(...)`` or
    ``write_bytes`` on a path, ``open(p, "w")`` (a mode that writes, appends or creates), ``p.open("w")``."""
    written: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))):
            continue
        if isinstance(node.func, ast.Name):  # open(p, "w"), open(p, mode="a")
            if node.func.id == "open" and node.args and _writes(node, 1):
                written |= _paths_of(node.args[0], values)
            continue
        target = node.func.value
        if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "Path":
            target = target.args[0] if len(target.args) == 1 else target  # Path(name).write_text(...)
        if node.func.attr in {"write_text", "write_bytes"} or (node.func.attr == "open" and _writes(node, 0)):
            written |= _paths_of(target, values)
    return written


def _writes(call: ast.Call, at: int) -> bool:
    """Whether an ``open`` call's mode (its argument ``at``, or ``mode=``) writes: ``w``, ``a`` or ``x``."""
    modes = [call.args[at]] if len(call.args) > at else [k.value for k in call.keywords if k.arg == "mode"]
    return any(isinstance(m, ast.Constant) and isinstance(m.value, str) and re.search("[wax]", m.value) for m in modes)


# each reading below parses the same test file (the check asks them one after another): parsed once, read-only
@functools.lru_cache(maxsize=8)
def _parsed(text: str) -> tuple[ast.Module, dict[str, list[str]]] | None:
    """A Python test's syntax tree and the paths its names are assigned (:func:`_assigned_paths`); None when the
    text is not Python 3 (the opening of each reading below). Round 16: a file with a syntax error further down
    (an unterminated string in a later test) is read up to the top-level statement the error is in.

    Examples
    --------
    >>> tree, _ = _parsed('import x\\ndef t():\\n    x.run(port=5)\\n@mark\\ndef u():\\n    s = "open\\n')
    >>> [type(node).__name__ for node in tree.body]
    ['Import', 'FunctionDef']
    """
    lines = text.splitlines(keepends=True)
    for _ in range(5):
        try:
            tree = ast.parse(text)
        except ValueError:
            return None
        except SyntaxError as error:
            end = min(error.lineno or 1, len(lines)) - 1
            while end > 0 and not re.match(r"[^\s#]", lines[end]):
                end -= 1  # back to the start of the top-level statement the error is in
            if end <= 0:
                return None
            lines = lines[:end]
            text = "".join(lines)
            continue
        return tree, _assigned_paths(tree)
    return None


def _paths_of(node: ast.expr, values: dict[str, list[str]]) -> set[str]:
    """The absolute paths an argument holds: a literal (``"/w/a"``, ``Path("/w/a")``), or a name's values
    (:func:`_assigned_paths`), ``str(name)`` too."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" and node.args:
        node = node.args[0]
    if isinstance(node, ast.Name):
        return set(values.get(node.id, []))
    path = written_path(node)
    return {path} if path is not None else set()


def started_programs(text: str) -> set[str]:
    """The programs a Python test starts by path (round 13): the first element of a ``subprocess`` argument list,
    or the one an interpreter is given (``Popen(["python", str(server)])``), as a literal or through a name.

    Examples
    --------
    >>> sorted(started_programs('srv = Path("/w/api/app.py")\\nsubprocess.Popen(["python3", str(srv)])'))
    ['/w/api/app.py']
    """
    parsed = _parsed(text)
    if parsed is None:
        return set()
    tree, values = parsed
    started: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) and node.args):
            continue
        function = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        if function in _SUBPROCESS_CALLS and isinstance(node.args[0], (ast.List, ast.Tuple)) and node.args[0].elts:
            elements = node.args[0].elts
            program = 1 if _is_interpreter(elements[0]) else 0
            if len(elements) > program:
                started |= _paths_of(elements[program], values)
    return started


def compiled_sources(text: str) -> set[str]:
    """The source files the tests hand a compiler that writes its output beside them (round 13:
    :data:`_COMPILERS_BESIDE`, ``coqc /w/proof.v`` writes ``/w/proof.vo``), in a shell line or a Python argument
    list, as a literal or (Python) through a name.

    Examples
    --------
    >>> sorted(compiled_sources('coqc /w/a.v && javac -d . /w/B.java'))
    ['/w/B.java', '/w/a.v']
    >>> sorted(compiled_sources('f = Path("/w/p.v")\\nsubprocess.run(["coqc", str(f)], cwd="/w")'))
    ['/w/p.v']
    """
    found = {
        path
        for match in _COMPILE_BESIDE.finditer(text)
        for path in re.findall(r"(?<![\w.])/[\w.+/-]*\.\w+", match.group(1))
    }
    parsed = _parsed(text)
    if parsed is None:
        return found
    tree, values = parsed
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            first = literal_path(node.elts[0])
            if first is not None and Path(first).name in _COMPILERS_BESIDE:
                found |= {path for element in node.elts[1:] for path in _paths_of(element, values)}
    return found


def connects(text: str) -> bool:
    """Whether a Python test connects anywhere (round 14): it imports a network client (:data:`_NETWORK_MODULES`:
    ``requests``, ``httpx``, ``urllib``, ``http.client``, ``socket``, ``aiohttp``, ``websockets``, a database's or
    a broker's client...), calls ``open_connection``/``create_connection``, or runs a client program (a string or
    argument list starting with ``curl``, ``wget``, ``nc``...). A test that does none connects to no port: the
    ports it writes are values (a URL handed to the agent's function so that its call fails), not services the
    environment is asked to serve. Text that is not Python 3 is taken to connect. The check asks it of each Python
    file of a step's tests: one that connects (a helper module, a ``conftest.py``) makes all their ports count.

    Examples
    --------
    >>> connects('import requests\\nrequests.get("http://localhost:8080/up")')
    True
    >>> connects('subprocess.run(["curl", "-s", "localhost:8080"])'), connects('os.system("nc -z db 5432")')
    (True, True)
    >>> connects('from client import fetch\\nfetch("http://localhost:9999/down")')
    False
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] in _NETWORK_MODULES for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in _NETWORK_MODULES:
            return True
        if isinstance(node, ast.Attribute) and node.attr in {"open_connection", "create_connection"}:
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _CLIENT_PROGRAM.search(node.value):
            return True
    return False


def started_ports(text: str, environment: frozenset[str]) -> set[str]:
    """The ports a Python test starts a program the environment ships on itself (round 16), given in its own start:
    a ``port=N`` argument of a ``run`` call on (or handed) a name imported from a module the environment ships
    (``from app.server import app``, then ``app.run(port=5555)`` in a thread), or the port of a command line that
    serves a shipped app (``["python", "-m", "uvicorn", "main:app", "--port", "8000"]`` where ``main.py`` is
    shipped: ``--port N``, ``--port=N``, ``-p N``, ``--bind host:N``). ``environment`` holds the names of the
    files the task's ``environment/`` ships. Round 13 read only a shipped program started by its path, the port set
    by the environment's own files.

    Examples
    --------
    >>> sorted(started_ports('from srv.web import api\\nThread(target=lambda: api.run(port=5001)).start()', {"web.py"}))
    ['port 5001']
    >>> sorted(started_ports('subprocess.Popen(["uvicorn", "shop:app", "--port", "8100"])', frozenset({"shop.py"})))
    ['port 8100']
    >>> sorted(started_ports('subprocess.Popen(["uvicorn", "shop:app", "--port", "8100"])', frozenset({"x.py"})))
    []
    """
    parsed = _parsed(text)
    if parsed is None:
        return set()
    tree = parsed[0]
    shipped = _shipped_names(tree, environment)
    ports: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr == "run":
            if any(_root_name(operand) in shipped for operand in (node.func.value, *node.args)):
                ports |= {
                    f"port {keyword.value.value}"
                    for keyword in node.keywords
                    if keyword.arg == "port"
                    and isinstance(keyword.value, ast.Constant)
                    and isinstance(keyword.value.value, int)
                }
            continue
        function = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        if function not in _SUBPROCESS_CALLS or not node.args:
            continue
        words = _command_words(node.args[0])
        if any(_ships(word, environment) for word in words):
            ports |= {f"port {number}" for number in _command_ports(words)}
    return ports


def _shipped_names(tree: ast.AST, environment: frozenset[str]) -> set[str]:
    """The names a Python test binds by importing a module the environment ships (``from app.server import app``
    binds ``app`` where ``server.py`` is shipped; ``import main`` binds ``main``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if f"{node.module.split('.')[-1]}.py" in environment:
                names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {
                alias.asname or alias.name.split(".")[0]
                for alias in node.names
                if f"{alias.name.split('.')[-1]}.py" in environment
            }
    return names


def _root_name(node: ast.expr) -> str | None:
    """The name an attribute or call chain starts from (``create_app().run`` and ``main.app`` from their first)."""
    while isinstance(node, (ast.Attribute, ast.Call)):
        node = node.value if isinstance(node, ast.Attribute) else node.func
    return node.id if isinstance(node, ast.Name) else None


def _command_words(node: ast.expr) -> list[str]:
    """The literal words of a command: an argument list's string elements, or a command string's words."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.split()
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _ships(word: str, environment: frozenset[str]) -> bool:
    """Whether a command's word is an app the environment ships, served: an ASGI or WSGI reference (``main:app``,
    ``shop.api:create_app()``) whose module's file the environment ships. A shipped program started by its path
    may be a client of the agent's server, so its ports stay asked (round 13 reads it only with the ports its
    environment sets itself)."""
    module = re.fullmatch(r"([A-Za-z_][\w.]*):[A-Za-z_]\w*(?:\(\))?", word)
    return module is not None and f"{module.group(1).split('.')[-1]}.py" in environment


def _command_ports(words: list[str]) -> list[str]:
    """The ports a command line gives its server: ``--port N``, ``--port=N``, ``-p N``, ``--bind host:N``."""
    found: list[str] = []
    for before, after in itertools.pairwise(["", *words]):
        if before in {"--port", "-p", "--bind", "-b"} or after.startswith(("--port=", "--bind=")):
            number = re.search(r"(?:^|[:=])(\d{2,5})$", after)
            found += [number.group(1)] if number else []
    return found


def _is_interpreter(node: ast.expr) -> bool:
    """Whether an argument list's first element runs the next one: ``sys.executable``, ``python3``, ``bash``..."""
    if isinstance(node, ast.Attribute) and node.attr == "executable":
        return True
    return (
        isinstance(node, ast.Constant) and isinstance(node.value, str) and INTERPRETER.fullmatch(node.value) is not None
    )


def alternatives(text: str) -> list[tuple[str, ...]]:
    """The groups of absolute paths a Python test file accepts any one of: a list, tuple or set literal of two
    or more paths that are one file in several places (one name), or that a function searches for one of
    (its body has ``any(``, ``next(`` or ``break``). A list the tests check path by path is no group.

    Examples
    --------
    >>> alternatives('def t():\\n    assert any(Path(p).exists() for p in ["/app/a.bin", Path("/srv/b")])')
    [('/app/a.bin', '/srv/b')]
    >>> alternatives('for p in ["/app/x/run.cfg", "/app/run.cfg"]: pass\\nfor q in ["/app/a", "/app/b"]: pass')
    [('/app/x/run.cfg', '/app/run.cfg')]
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    scopes: list[ast.AST] = [
        tree,
        *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
    ]
    searched = {
        id(node)
        for scope in scopes
        if scope is not tree and re.search(r"\bany\(|\bnext\(|\bbreak\b", ast.get_source_segment(text, scope) or "")
        for node in ast.walk(scope)
    }
    groups: list[tuple[str, ...]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and len(node.elts) >= 2:
            paths = [literal_path(element) for element in node.elts]
            group = tuple(path.rstrip("/") for path in paths if path and path.startswith("/"))
            if None in paths or len(group) < 2:  # relative places may stand beside them (`./feature_store.yaml`)
                continue
            if id(node) in searched or len({Path(path).name for path in group}) == 1:
                groups.append(group)
    return groups + _fallbacks(tree)


def _assigned_paths(tree: ast.AST) -> dict[str, list[str]]:
    """The absolute paths each plain name is assigned (``out = Path("/w/bin")``), in the order written."""
    values: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            path = written_path(node.value)
            if path is not None:
                values.setdefault(node.targets[0].id, []).append(path)
    return values


def _fallbacks(tree: ast.AST) -> list[tuple[str, ...]]:
    """A place and the fallback the tests read when it is absent (round 11): ``d = Path("/w/problems")`` then
    ``if not d.exists(): d = Path("/w/data/problems")``: a group, met by naming either."""
    values = _assigned_paths(tree)
    groups: list[tuple[str, ...]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)):
            continue
        tested = node.test.operand
        if not (isinstance(tested, ast.Call) and isinstance(tested.func, (ast.Attribute, ast.Name))):
            continue
        function = tested.func.attr if isinstance(tested.func, ast.Attribute) else tested.func.id
        if function not in {"exists", "is_dir", "is_file", "isdir", "isfile"}:
            continue
        subject = tested.args[0] if tested.args else getattr(tested.func, "value", None)
        if not isinstance(subject, ast.Name):
            continue
        for statement in node.body:
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and statement.targets[0].id == subject.id
            ):
                group = tuple(dict.fromkeys(path.rstrip("/") for path in values.get(subject.id, [])))
                if len(group) >= 2:
                    groups.append(group)
    return groups


def written_path(node: ast.expr) -> str | None:
    """An absolute path written as a string or ``Path("...")`` (not any call's argument: ``exists("/x")``)."""
    if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in {"Path", "str"}):
        return None
    found = literal_path(node)
    return found if found is not None and found.startswith("/") else None


def literal_path(node: ast.expr) -> str | None:
    """A path written as a string or ``Path("...")``; None for anything else."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def unasked_parts(tree: ast.AST) -> list[ast.expr]:
    """The parts of a Python test that ask nothing: an assertion's message (it says what failed), the value
    of a name assigned and never read (round 10: a constant the tests define and never use), and an expected
    answer (round 11): a string compared with ``==``/``!=`` (``assert endpoint == "/api/user/email"``), or the
    value of a name read only so (``expected = "/data/job_7"; assert got == expected``); round 13: an answer list
    the agent's value is looked up in (``assert got in accepted``, ``accepted`` only ever grown besides), a
    sentence (:data:`_SENTENCE`: a message or sample text the tests build, ``"Permission denied reading
    /srv/a.txt"``) and a URL sent as a request's data (``data={"redirect_uri": "http://localhost:8080/cb"}``);
    round 14: a string used as a subscript key (``state["/config/db/user"]``, a key of what the agent reports)."""
    messages = [node.msg for node in ast.walk(tree) if isinstance(node, ast.Assert) and node.msg]
    in_message = {id(node) for message in messages for node in ast.walk(message)}
    compared = _compared_operands(tree)
    # a name read only as what a value is looked up in (`got in accepted`), or grown (`accepted.append(...)`),
    # holds answers, as a name read only in `==` does (round 13)
    looked_up = {
        id(node.comparators[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], (ast.In, ast.NotIn))
        and isinstance(node.comparators[0], ast.Name)
    }
    grown = {
        id(node.func.value): node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _GROWING
        and isinstance(node.func.value, ast.Name)
    }
    read: set[str] = set()
    read_otherwise: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store) and id(node) not in in_message:
            read.add(node.id)
            if id(node) not in compared and id(node) not in looked_up and id(node) not in grown:
                read_otherwise.add(node.id)
    read |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    read_otherwise |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    parts: list[ast.expr] = [*messages]
    parts += [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.expr) and id(node) in compared and written_path(node) is not None
    ]
    answers: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [target.id for target in targets if isinstance(target, ast.Name)]
            if not names or len(names) != len(targets):
                continue
            if not set(names) & read and literal_path(node.value):
                parts.append(node.value)
            elif not set(names) & read_otherwise and _literal_answer(node.value):
                parts.append(node.value)  # read only as an expected answer
                answers |= set(names)
    for call in grown.values():  # what an answer list is grown with: answers too
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        if isinstance(receiver, ast.Name) and receiver.id in answers:
            parts += [argument for argument in call.args if _literal_answer(argument)]
    # a string used as a subscript key (`state["/config/db/user"]`) is a key of what the tests read (round 14)
    keys = [node.slice for node in ast.walk(tree) if isinstance(node, ast.Subscript)]
    parts += [key for key in keys if isinstance(key, ast.Constant) and isinstance(key.value, str)]
    in_f_string = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    parts += [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in in_f_string
        and "\n" not in node.value  # one line: a file's text the tests write may hold a place further on
        and _SENTENCE.match(node.value)
    ]
    return parts + _sent_urls(tree)


def _sent_urls(tree: ast.AST) -> list[ast.expr]:
    """The URLs a Python test sends as a request's data (round 13): a string with ``://`` inside the dict given as
    ``data=``, ``params=``, ``json=``, ``headers=``, ``files=`` or ``cookies=`` (or a name assigned such a dict),
    a value sent (an OAuth ``redirect_uri``), not where the tests connect.

    Examples
    --------
    >>> code = 'form = {"cb": "http://localhost:8080/cb"}\\nrequests.post("http://localhost:5000/t", data=form)'
    >>> [node.value for node in _sent_urls(ast.parse(code)) if isinstance(node, ast.Constant)]
    ['http://localhost:8080/cb']
    """
    dicts: dict[str, list[ast.Dict]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    dicts.setdefault(target.id, []).append(node.value)
    sent: list[ast.expr] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg not in _REQUEST_DATA:
                continue
            value = keyword.value
            bodies: list[ast.expr] = [*dicts.get(value.id, [])] if isinstance(value, ast.Name) else [value]
            sent += [
                part
                for body in bodies
                if isinstance(body, ast.Dict)
                for part in ast.walk(body)
                if isinstance(part, ast.Constant) and isinstance(part.value, str) and "://" in part.value
            ]
    return sent


def _compared_operands(tree: ast.AST) -> set[int]:
    """The ids of the nodes compared as values: the operands of a comparison made of ``==`` and ``!=`` only,
    the left of ``in`` (a member of what the agent reported) and, round 13, each member of a list, tuple or set
    written on the right of ``in`` (the answers the agent's value is looked up in: ``got in ["/a", "/b"]``). A
    string is compared as text there."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        if all(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
            found |= {id(operand) for operand in (node.left, *node.comparators)}
        elif len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            found.add(id(node.left))
            if isinstance(node.comparators[0], (ast.List, ast.Tuple, ast.Set)):
                found |= {id(element) for element in node.comparators[0].elts}
    return found


def _literal_answer(node: ast.expr) -> bool:
    """Whether ``node`` is a path written as a string, or a list, tuple or set of strings (or ``Path("...")``,
    round 13) with a path among them."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        values = [literal_path(element) for element in node.elts]
        return (
            len(values) > 0
            and all(value is not None for value in values)
            and any(str(value).startswith("/") for value in values)
        )
    return written_path(node) is not None


#: A call that asks whether a place exists (``p.exists()``, ``os.path.isfile(p)``).
_EXISTENCE = frozenset({"exists", "is_file", "is_dir", "is_symlink", "isfile", "isdir", "islink", "lexists"})
#: A call that removes a place (``os.remove(p)``, ``p.unlink()``, ``shutil.rmtree(p)``).
_REMOVAL = frozenset({"remove", "unlink", "rmtree", "rmdir"})


def idle_paths(text: str) -> set[str]:
    """The paths a Python test only asserts absent or removes (round 18): every place it writes them is inside ``not
    <exists>`` (``assert not Path("/app/later.json").exists()``, an *absence guard*: an agent never told of the file
    passes) or a removal (``os.remove``, ``.unlink()``, ``shutil.rmtree``: the tests clearing the way), directly or
    through a name assigned the path and read only so. Such a path asks nothing of what the agent makes.

    Examples
    --------
    >>> text = 'LATER = Path("/app/3_report.json")\\ndef test_a():\\n    assert not LATER.exists()\\n'
    >>> sorted(idle_paths(text + '    assert not Path("/app/b.bin").exists()\\n    os.remove("/app/ref")\\n'))
    ['/app/3_report.json', '/app/b.bin', '/app/ref']
    >>> idle_paths('def test_a():\\n    os.remove("/app/out.txt")\\n    assert Path("/app/out.txt").exists()\\n')
    set()
    >>> idle_paths('def test_a():\\n    assert Path("/app/out.txt").exists()\\n')
    set()
    """
    parsed = _parsed(text)
    if parsed is None:
        return set()
    tree, _ = parsed
    idle: set[int] = set()  # the nodes read only to ask for absence or to remove
    for node in ast.walk(tree):
        subject = None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and isinstance(node.operand, ast.Call):
            subject = _called_on(node.operand, _EXISTENCE)
        elif isinstance(node, ast.Call):
            subject = _called_on(node, _REMOVAL)
        if subject is not None:
            idle |= {id(part) for part in ast.walk(subject)}
    loads: dict[str, list[ast.Name]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loads.setdefault(node.id, []).append(node)
    # a name assigned a path and read only idly: its assignment is idle too
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            read = loads.get(node.targets[0].id, [])
            if read and all(id(name) in idle for name in read):
                idle |= {id(part) for part in ast.walk(node.value)}
    written: dict[str, list[bool]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("/"):
            written.setdefault(node.value.rstrip("/"), []).append(id(node) in idle)
    return {path for path, uses in written.items() if path and all(uses)}


def _called_on(call: ast.Call, functions: frozenset[str]) -> ast.expr | None:
    """What ``call`` asks about when it is one of ``functions``: a method's receiver (``p.exists()``), or a
    function's first argument (``os.path.exists(p)``, ``os.remove(p)``)."""
    if not isinstance(call.func, ast.Attribute) or call.func.attr not in functions:
        return None
    receiver = call.func.value
    # a module's function (os.remove, os.path.exists, shutil.rmtree) takes the place as its first argument
    if ast.unparse(receiver) in {"os", "shutil", "os.path"}:
        return call.args[0] if call.args else None
    return receiver
