"""A trajectory depth proxy: the longest chain of turns that each used what an earlier output revealed.

D needs runs at up to eight turn caps for two or more models; every collection already has
uncapped runs with trajectories. A turn is *necessarily* sequential when its command uses
something only an earlier output revealed (a file name ``ls`` printed, a port a log showed, a
commit hash, a PID). The longest chain of such reads is read from the transcript alone.

The rule (version :data:`RULE_VERSION`; fixed before any result was looked at)
------------------------------------------------------------------------------
1. A trajectory is read in order: the text given before the first turn (system prompt and
   instruction), then for each turn its command text (every call of the turn together), then
   its output (the observation or tool messages), as :func:`depthlab.io.read_steps`
   reads ATIF v1.0-v1.8 (continuations followed, copied context and summarization subagents left
   out), chat-message lists and terminus episode directories. Outputs are read whole, not cut.
2. Identifiers (:func:`identifiers`): the text is split into tokens, maximal runs of letters,
   digits and ``_ . -`` (so ``/``, ``:``, ``=``, quotes and spaces separate them; a path gives one
   token per component), with leading and trailing ``.`` and ``-`` trimmed. A token is an
   identifier when

   * it has at least 3 characters, and
   * its *shape* marks it: it holds a digit, or one of ``_ . -`` inside; and
   * it is not a plain number that people type without reading it: a number of digits and dots
     needs 3 digits or more, and a whole number is not a round one (``d000...``) nor a power of
     two (``1024``, ``4096``: block sizes, ``ls -l`` directory sizes); and
   * it is not a permission string (``rwxr-xr-x``) nor in the stoplist :data:`STOPLIST` (shell
     and packaging words such as ``apt-get``, ``python3``, ``x86_64``, ``utf-8``, ``127.0.0.1``).

   Plain dictionary words never qualify (no digit, no inner ``_ . -``), so an output that says
   "error ... install" does not make a later ``apt-get install`` depend on it.
3. Each identifier's *origin* is its first appearance in that order: the given text, a command
   (typed by the agent), or the output of turn ``s``. Turn ``t`` depends on turn ``s`` when
   ``t``'s commands hold an identifier whose origin is ``s``'s output.
   Identifiers first given in the instruction or first typed by the agent never create a
   dependency, even when outputs echo them later (terminals echo the command line).
4. ``level(t) = 1 + max(level(s) for s that t depends on)``, 1 when there is none; a trial's
   proxy is its largest level (0 for a trial with no turn).
5. A task's proxy is the lower median over its passing trials with a readable trajectory (an
   integer), with the smallest also reported. The median, not the minimum: the minimum shrinks
   as more trials pass, which would tie the proxy to pass rate mechanically. A task with no such
   trial has none, as an unsolved task has no D. Only valid uncapped trials count (a stated cap
   asks the agent to batch, which is what D measures, not this).

Variant (reported beside the primary, never instead): ``messages=True`` also reads each turn's
message (the agent's analysis and plan) before its commands, as typed text and as a use, so an
identifier the agent reasons about from an output counts even when its command does not repeat it.

What the proxy cannot see: a decision taken from an output without copying an identifier from
it (reading an error message and choosing another approach), identifiers the rule does not
count (short numbers, plain words, stoplisted names), and information that reached the agent
through a summary written in between. It can also see a dependency that was not needed: a
common identifier that happened to be printed before the agent typed it. It is a property of
one run, not of the task, so it is read over passing runs only.

Status: experimental, not validated as a depth estimate on real runs
--------------------------------------------------------------------
The proxy is an experimental reading of a transcript, useful to explain one run through
:func:`turn_dependencies`; on real runs it does not carry D's signal. On the one real job this
project holds (445 TB2 trials of TMax-27B, 47 tasks with a proxy), pass ~ proxy | W is +0.01 under
the primary rule and -0.49 with the messages variant. Held out, on the TB2 runs of the other seven
models of the TMax release (3,115 trials this project does not hold; 53 tasks with a proxy; the pass
rate over those models, N and the proxy over the same passing runs, W and the ratings from the
bundled TB2 tables), pass ~ proxy | W is -0.07 (p 0.60) under the primary rule and -0.13 (p 0.37)
with the messages variant, against pass ~ N | W -0.28 (p 0.044); rating ~ proxy | W is -0.04.
Taking the smallest per-model median (as D takes the minimum over models) gives -0.14 (primary)
and -0.31 (messages, p 0.03), still no stronger than N; counting dependent turns, or their share,
does no better. So the messages variant's -0.49 on TMax-27B did not replicate, and neither rule
stands in for D. The rule stays as fixed (version 2): it is not tuned further on the one job held.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Sequence
from functools import partial
from typing import Final

import numpy as np
import polars as pl

from depthlab._checks import check_bool, check_choice, check_frame, check_positive_int
from depthlab._defaults import AUDIT_SEED, N_BOOT
from depthlab.catalog import DIFFICULTY_ORDER
from depthlab.io import LoadError, Rejected, RejectedFilesWarning, trajectories, warning_text
from depthlab.schema import CAPS, MIN_TASKS, PROXY_COVERAGE
from depthlab.schema import PROXY_CORRELATIONS as CORRELATIONS_SCHEMA
from depthlab.schema import PROXY_DEPENDENCIES as DEPENDENCIES_SCHEMA
from depthlab.schema import PROXY_TASKS as PROXY_TASKS_SCHEMA
from depthlab.schema import PROXY_TRIALS as PROXY_TRIALS_SCHEMA

#: Version of the identifier and dependency rule; cached results of another version are not reused.
RULE_VERSION: Final[int] = 2

#: Shell, packaging and platform words that have the shape of an identifier but carry no
#: information about the task's environment.
STOPLIST: Final[frozenset[str]] = frozenset(
    """
    apt-get apt-cache apt-key apt-mark dpkg-query dpkg-reconfigure update-alternatives add-apt-repository
    python2 python3 pip2 pip3 python3-pip python3-dev python3-venv python3.8 python3.9 python3.10 python3.11
    python3.12 python3.13 py3 ipv4 ipv6 utf-8 utf8 utf-16 iso-8859-1 ascii-only x86_64 x86-64 amd64 arm64
    aarch64 i386 i686 x86_64-linux-gnu aarch64-linux-gnu lib64 lib32 sha1 sha256 sha512 sha1sum sha256sum md5
    md5sum base64 int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64 bfloat16 complex128
    127.0.0.1 0.0.0.0 ::1 e.g i.e etc. build-essential ca-certificates software-properties-common site-packages
    dist-packages node_modules __init__ __init__.py __main__ __main__.py __name__ __file__ __pycache__ exit_code
    no-cache-dir no-install-recommends break-system-packages read-only non-interactive non-zero built-in set-up
    follow-up up-to-date long-running command-line run-time real-time DEBIAN_FRONTEND LD_LIBRARY_PATH PYTHONPATH
    PATH_MAX CUDA_VISIBLE_DEVICES xargs-0 2to3 h264 mp3 mp4 w3m k8s x11 gpt-4 gpt-4o gpt-5 1st 2nd 3rd 4th nth
    24h 12h 64bit 32bit 64-bit 32-bit
    """.split()  # noqa: SIM905 - a word list reads better as text
)

# Maximal runs of [A-Za-z0-9_.-] that hold a digit or one of _ . - (the others cannot be
# identifiers). The lookbehind starts matches only at a run's first character and the possessive
# quantifiers never give back, so the scan stays linear on long runs of letters (DNA, base64).
_TOKEN = re.compile(r"(?<![A-Za-z0-9_.\-])[A-Za-z]*+[0-9_.\-][A-Za-z0-9_.\-]*+")
_MARKED = re.compile(r"[0-9]|[A-Za-z0-9][_.\-]+[A-Za-z0-9_]")
_NUMBER = re.compile(r"[0-9.]+")
_ROUND = re.compile(r"[1-9]0+")
_PERMISSIONS = re.compile(r"[dlrwxstST\-]+")
_POWERS_OF_TWO: Final[frozenset[str]] = frozenset(str(2**k) for k in range(7, 65))
# raw token -> the identifier it gives ("" for none); tokens repeat a lot across turns and trials
_VERDICTS: dict[str, str] = {}
_MAX_VERDICTS = 500_000
_MAX_CACHED_CHARS = 80  # a base64 blob or a DNA sequence is seen once; keeping it would only cost memory

PER: Final[tuple[str, ...]] = ("task", "trial")

_TRIAL_COLUMNS = ("dataset", "task", "model", "trial", "cap", "status", "source")


# identifiers ------------------------------------------------------------------------------------


def identifiers(text: str | None) -> list[str]:
    """The identifiers of ``text`` under the proxy's rule, in order of appearance, each once.

    Parameters
    ----------
    text : str or None
        Any text: a command, an output, an instruction.

    Returns
    -------
    list of str

    Examples
    --------
    >>> identifiers("cat /srv/data/part_07.csv | head -5")
    ['part_07.csv']
    >>> identifiers("error: could not install the package; see apt-get.log and pid 31337")
    ['apt-get.log', '31337']
    >>> identifiers("drwxr-xr-x 2 root root 4096 Nov 30 09:21 python3")
    []
    """
    if not text:
        return []
    found: dict[str, None] = {}
    verdicts = _VERDICTS
    for raw in dict.fromkeys(_TOKEN.findall(text)):
        token = verdicts.get(raw)
        if token is None:
            token = raw.strip(".-")
            token = token if _is_identifier(token) else ""
            if len(raw) <= _MAX_CACHED_CHARS and len(verdicts) < _MAX_VERDICTS:
                verdicts[raw] = token
        if token:
            found[token] = None
    return list(found)


def _is_identifier(token: str) -> bool:
    if len(token) < 3 or token in STOPLIST or not _MARKED.search(token):
        return False
    if _NUMBER.fullmatch(token):
        if sum(char.isdigit() for char in token) < 3:
            return False
        if token.isdigit() and (_ROUND.fullmatch(token) or token in _POWERS_OF_TWO):
            return False
    return not _PERMISSIONS.fullmatch(token)


# the chain --------------------------------------------------------------------------------------

_Turn = trajectories.Turn  # message, commands, observation


def _chain(given: str | None, turns: Sequence[_Turn], messages: bool = False) -> list[tuple[int, dict[int, list[str]]]]:
    """(level, {earlier turn: identifiers}) of each turn (1-based turn numbers); ``messages``: the variant."""
    origin: dict[str, int] = dict.fromkeys(identifiers(given), 0)  # 0: given or typed by the agent
    out: list[tuple[int, dict[int, list[str]]]] = []
    for number, (message, commands, observation) in enumerate(turns, start=1):
        depends: dict[int, list[str]] = {}
        for text in (message, commands) if messages else (commands,):
            for token in identifiers(text):
                source = origin.setdefault(token, 0)
                if source > 0 and token not in depends.get(source, ()):
                    depends.setdefault(source, []).append(token)
        level = 1 + max((out[source - 1][0] for source in depends), default=0)
        out.append((level, dict(sorted(depends.items()))))
        for token in identifiers(observation):
            origin.setdefault(token, number)
    return out


def turn_dependencies(steps: pl.DataFrame, *, instruction: str | None = None, messages: bool = False) -> pl.DataFrame:
    """Per turn of one trial: its level, the turns it depends on and the identifiers that made each dependency.

    Parameters
    ----------
    steps : pl.DataFrame
        The turns of one trial as :func:`depthlab.io.read_steps` returns them (columns ``turn``,
        ``message``, ``commands``, ``observation``). Read with ``prompt=True`` (and a large
        ``max_chars``, since the rule reads outputs whole), its turn-0 row is the text given
        before the first turn.
    instruction : str, optional
        The text given before the first turn, when ``steps`` has no turn-0 row.
    messages : bool, default False
        The *messages variant*: also read each turn's ``message`` (the agent's own text, e.g.
        its analysis and plan) before its commands, as typed by the agent and as a use. The
        primary rule reads commands only.

    Returns
    -------
    pl.DataFrame
        One row per turn (turn 0 left out), columns :data:`DEPENDENCIES_SCHEMA`: ``turn``,
        ``level``, ``depends_on`` (earlier turns, ascending), ``identifiers`` (for each of
        those turns, the identifiers its output revealed that this turn used) and ``on_chain``
        (the turns of one longest chain, traced back from the last turn of the largest level
        through, at each step, the earliest dependency of the largest level) and ``uses`` (the
        dependencies as one line of text). The trial's proxy is ``level.max()``.

    Raises
    ------
    TypeError, ValueError
        When ``steps`` is not such a table, or it has a turn-0 row and ``instruction`` is given.

    Notes
    -----
    The rule is the module's (:mod:`depthlab.measures.proxy`): identifiers by shape and
    stoplist, origin at first appearance, dependencies only on outputs.

    Examples
    --------
    >>> import polars as pl
    >>> steps = pl.DataFrame({"turn": [1, 2, 3],
    ...     "message": [None, None, None],
    ...     "commands": ["ls /data", "cat /data/k_81.txt", "cat /data/notes.md"],
    ...     "observation": ["k_81.txt notes.md", "next: q_55.txt", "see q_55.txt"]})
    >>> deps = turn_dependencies(steps, instruction="Read notes.md in /data.")
    >>> deps.select("turn", "level", "depends_on", "identifiers").rows()
    [(1, 1, [], []), (2, 2, [1], [['k_81.txt']]), (3, 1, [], [])]
    """
    function = "turn_dependencies"
    check_frame(steps, "steps", function, ("turn", "commands", "observation"))
    if instruction is not None and not isinstance(instruction, str):
        raise TypeError(f"The 'instruction' parameter of {function} must be a str or None, got {instruction!r}")
    ordered = steps.sort("turn")
    numbers = ordered["turn"].to_list()
    given = instruction
    if numbers and numbers[0] == 0:
        if instruction is not None:
            raise ValueError(f"The 'steps' of {function} has a turn-0 row (the prompt), so 'instruction' must be None")
        given = ordered["observation"][0]
        ordered, numbers = ordered.slice(1), numbers[1:]
    if numbers != list(range(1, len(numbers) + 1)):
        raise ValueError(f"The 'steps' parameter of {function} must number its turns 1, 2, 3, ..., got {numbers[:10]}")
    texts = ordered["message"].to_list() if "message" in ordered.columns else [None] * len(numbers)
    turns = list(zip(texts, ordered["commands"].to_list(), ordered["observation"].to_list(), strict=True))
    chain = _chain(given, turns, messages)
    on_chain = _longest_chain(chain)
    return pl.DataFrame(
        {
            "turn": numbers,
            "level": [level for level, _ in chain],
            "depends_on": [list(depends) for _, depends in chain],
            "identifiers": [list(depends.values()) for _, depends in chain],
            "on_chain": [number in on_chain for number in numbers],
            "uses": [
                "; ".join(f"t{source}: {', '.join(names)}" for source, names in depends.items()) or None
                for _, depends in chain
            ],
        },
        schema=DEPENDENCIES_SCHEMA,
    )


def _longest_chain(chain: list[tuple[int, dict[int, list[str]]]]) -> set[int]:
    if not chain:
        return set()
    top = max(level for level, _ in chain)
    turn = max(number for number, (level, _) in enumerate(chain, start=1) if level == top)
    marked = set()
    while True:
        marked.add(turn)
        depends = chain[turn - 1][1]
        if not depends:
            return marked
        deepest = max(chain[source - 1][0] for source in depends)
        turn = min(source for source in depends if chain[source - 1][0] == deepest)


def trial_proxy(trial_dir: str | os.PathLike[str], *, messages: bool = False) -> int:
    """The proxy depth of one trial directory (its largest turn level; 0 when it has no turn).

    ``messages=True`` gives the messages variant (see :func:`turn_dependencies`). The
    trajectory is read by :func:`depthlab.io.trajectories.read_one`; this module only applies
    the rule to its turns.

    Raises
    ------
    LoadError
        When the trial has no readable trajectory (the message names the path and the reason).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> agent = pathlib.Path(tempfile.mkdtemp()) / "agent"
    >>> agent.mkdir()
    >>> messages = [{"role": "user", "content": "find the key"},
    ...     {"role": "assistant", "tool_calls": [{"function": {"name": "bash",
    ...         "arguments": json.dumps({"command": "ls"})}}]},
    ...     {"role": "tool", "content": "key_4412.txt"},
    ...     {"role": "assistant", "tool_calls": [{"function": {"name": "bash",
    ...         "arguments": json.dumps({"command": "cat key_4412.txt"})}}]},
    ...     {"role": "tool", "content": "done"}]
    >>> _ = (agent / "trajectory.json").write_text(json.dumps(messages))
    >>> trial_proxy(agent.parent)
    2
    """
    return trajectories.read_one(trial_dir, partial(trial_depth, messages=messages))


def trial_depth(given: str | None, turns: Sequence[_Turn], messages: bool = False) -> int:
    """A trial's proxy from its turns: the largest level of :func:`turn_dependencies`'s chain (0 with no turn).

    Parameters
    ----------
    given : str or None
        The text given before the first turn.
    turns : sequence of (message, commands, observation)
        The turns in order.
    messages : bool, default False
        The messages variant.

    Returns
    -------
    int

    Examples
    --------
    >>> trial_depth("see notes", [(None, "ls", "k_81.txt"), (None, "cat k_81.txt", "done")])
    2
    """
    return max((level for level, _ in _chain(given, turns, messages)), default=0)


# many trials ------------------------------------------------------------------------------------


#: The trial directory of a trials-table ``source`` (:func:`depthlab.io.trajectories.trial_dir`).
trial_dir = trajectories.trial_dir


def depth_proxy(
    trials: pl.DataFrame,
    *,
    per: str = "task",
    strict: bool = False,
    cache: bool = True,
    messages: bool = False,
    max_trajectory_bytes: int = trajectories.TRAJECTORY_BUDGET_BYTES,
) -> pl.DataFrame:
    """The trajectory depth proxy per task or per trial, from the uncapped runs of a trials table.

    Parameters
    ----------
    trials : pl.DataFrame
        The trials table (columns dataset, task, model, trial, cap, status, source). Only valid
        uncapped trials (``cap`` null, ``status`` pass or fail) are read; ``source`` finds each
        trial's directory and so its trajectory.
    per : {"task", "trial"}, default "task"
        One row per task, or one row per trial read.
    strict : bool, default False
        Raise :class:`depthlab.io.LoadError` when a trajectory cannot be read, instead of
        warning (:class:`depthlab.io.RejectedFilesWarning`, naming each path and reason) and
        leaving that trial's proxy null.
    cache : bool, default True
        Reuse per-trial results stored under :func:`depthlab.io.cache.cache_dir` while the
        files they were read from are unchanged (size and modification time).
    messages : bool, default False
        The messages variant of the rule (see :func:`turn_dependencies`); the primary rule
        reads commands only. Report it beside the primary, never instead of it.
    max_trajectory_bytes : int, default depthlab.io.trajectories.TRAJECTORY_BUDGET_BYTES (32 MiB)
        The per-trial budget: a trial whose trajectory files are larger together is not read;
        its proxy is null and the warning (or ``strict``'s error) gives the size and the budget.
        The rule keeps every distinct identifier of a trial, so memory grows with the file
        (about 11 times it, and 0.5 s a megabyte, for a file of nothing but distinct identifiers); the
        budget bounds both.

    Returns
    -------
    pl.DataFrame
        ``per="trial"``: :data:`PROXY_TRIALS_SCHEMA` (dataset, task, model, trial, passed,
        n_turns, proxy_depth), in the order of ``trials``. ``per="task"``:
        :data:`PROXY_TASKS_SCHEMA`, one row per (dataset, task) with a valid uncapped trial,
        sorted: ``proxy_depth`` the lower median over passing trials with a readable
        trajectory, ``proxy_depth_min`` their smallest, ``n_passing`` their number,
        ``proxy_rung`` the smallest cap of :data:`depthlab.CAPS` at or above ``proxy_depth``.
        Tasks with no such trial have null proxies and ``n_passing`` 0.

    Notes
    -----
    The identifier and dependency rule is the module's (:mod:`depthlab.measures.proxy`).
    This function reads no file itself: :func:`depthlab.io.trajectories.read_many` reads the
    trajectories (with msgspec, in worker processes, fork, one per core, when there are 64 or
    more; with its per-trial cache) and applies this module's pure rule, :func:`trial_depth`.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> import polars as pl
    >>> from depthlab import schema
    >>> trial = pathlib.Path(tempfile.mkdtemp()) / "t__1"
    >>> (trial / "agent").mkdir(parents=True)
    >>> def turn(command):
    ...     return {"role": "assistant", "tool_calls": [{"function": {"name": "bash",
    ...         "arguments": json.dumps({"command": command})}}]}
    >>> messages = [{"role": "user", "content": "print the secret"}, turn("cat hint"),
    ...     {"role": "tool", "content": "it is in vault_93"}, turn("cat vault_93")]
    >>> _ = (trial / "agent" / "trajectory.json").write_text(json.dumps(messages))
    >>> trials = schema.conform(pl.DataFrame({"dataset": "d", "task": "t", "model": "m",
    ...     "trial": "t__1", "status": "pass", "source": str(trial / "result.json")}), "trials")
    >>> depth_proxy(trials, cache=False).row(0)
    ('d', 't', 2, 2, 1, 2)
    """
    function = "depth_proxy"
    check_frame(trials, "trials", function, _TRIAL_COLUMNS)
    check_choice(per, "per", function, PER)
    for name, value in (("strict", strict), ("cache", cache), ("messages", messages)):
        check_bool(value, name, function)
    check_positive_int(max_trajectory_bytes, "max_trajectory_bytes", function)
    valid = trials.filter(pl.col("cap").is_null() & pl.col("status").is_in(("pass", "fail")))
    sources = valid["source"].to_list()
    folders = [trial_dir(source) if source else "" for source in sources]
    results = trajectories.read_many(
        (folder for folder in folders if folder),
        partial(trial_depth, messages=messages),
        tag=f"rule{RULE_VERSION}{'-messages' if messages else ''}",
        cache=cache,
        max_bytes=max_trajectory_bytes,
    )
    rows = [results[folder] if folder else trajectories.NO_SOURCE for folder in folders]
    rejected = [Rejected(*row.rejected) for row in rows if row.rejected is not None]
    if rejected:
        if strict:
            raise LoadError(str(rejected[0]))
        warnings.warn(warning_text(rejected, "trajectories"), RejectedFilesWarning, stacklevel=2)
    per_trial = valid.select("dataset", "task", "model", "trial", passed=pl.col("status") == "pass").with_columns(
        n_turns=pl.Series([row.n_turns for row in rows], dtype=pl.Int32),
        proxy_depth=pl.Series([row.value for row in rows], dtype=pl.Int32),
    )
    if per == "trial":
        return per_trial.select(list(PROXY_TRIALS_SCHEMA)).cast(PROXY_TRIALS_SCHEMA)
    return task_proxy(per_trial)


def task_proxy(per_trial: pl.DataFrame, *, caps: Sequence[int] = CAPS) -> pl.DataFrame:
    """Per task: lower median and minimum of the proxy over passing trials, their number, the ladder rung.

    Parameters
    ----------
    per_trial : pl.DataFrame
        Rows of ``depth_proxy(per="trial")`` (columns dataset, task, passed, proxy_depth).
    caps : sequence of int, default depthlab.CAPS
        The ladder ``proxy_rung`` is read on.

    Returns
    -------
    pl.DataFrame
        :data:`PROXY_TASKS_SCHEMA`, sorted by dataset and task.

    Examples
    --------
    >>> import polars as pl
    >>> rows = pl.DataFrame({"dataset": "d", "task": "t", "passed": [True, True, True, False],
    ...                      "proxy_depth": [4, 2, 7, 1]})
    >>> task_proxy(rows).row(0)
    ('d', 't', 4, 2, 3, 5)
    """
    check_frame(per_trial, "per_trial", "task_proxy", ("dataset", "task", "passed", "proxy_depth"))
    readable = pl.col("passed") & pl.col("proxy_depth").is_not_null()
    out = (
        per_trial.group_by("dataset", "task")
        .agg(
            proxy_depth=pl.col("proxy_depth").filter(readable).quantile(0.5, interpolation="lower"),
            proxy_depth_min=pl.col("proxy_depth").filter(readable).min(),
            n_passing=readable.sum(),
        )
        .sort("dataset", "task")
    )
    return out.with_columns(proxy_rung=_rung(caps)).cast(PROXY_TASKS_SCHEMA)


def _rung(caps: Sequence[int]) -> pl.Expr:
    """The smallest cap of ``caps`` at or above ``proxy_depth`` (null above the top cap or without a proxy)."""
    expression = pl.lit(None, dtype=pl.Int32)
    for cap in sorted(caps, reverse=True):
        expression = pl.when(pl.col("proxy_depth") <= cap).then(pl.lit(cap, dtype=pl.Int32)).otherwise(expression)
    return expression


def rung_agreement(
    proxy_tasks: pl.DataFrame, depth: pl.DataFrame, *, column: str = "depth", caps: Sequence[int] = CAPS
) -> pl.DataFrame:
    """How the proxy's ladder rung agrees with D, by rung of D.

    Parameters
    ----------
    proxy_tasks : pl.DataFrame
        One row per task with dataset, task and ``proxy_depth``: ``depth_proxy(per="task")`` or
        the audit table.
    depth : pl.DataFrame
        One row per task with dataset, task and ``column``: a ladder depth, e.g. the ``depth``
        of :func:`depthlab.estimate_depth` or of the audit table, or the simulator's ``d_star``.
    column : str, default "depth"
        The column of ``depth`` to compare with.
    caps : sequence of int, default depthlab.CAPS
        The ladder the proxy is read on: its rung is the smallest cap at or above it.

    Returns
    -------
    pl.DataFrame
        One row per value of ``column`` (null last) among the tasks of both tables: ``n_tasks``,
        ``n_same`` (proxy rung = D), ``n_above``, ``n_below``, ``n_no_proxy`` (no passing
        trial to read), and ``share_same`` = n_same / (tasks with a proxy rung; null when none).

    Examples
    --------
    >>> import polars as pl
    >>> proxy_tasks = pl.DataFrame({"dataset": "d", "task": ["a", "b", "c"], "proxy_depth": [1, 3, None]})
    >>> depth = pl.DataFrame({"dataset": "d", "task": ["a", "b", "c"], "depth": [1, 2, 2]})
    >>> rung_agreement(proxy_tasks, depth).rows()
    [(1, 1, 1, 0, 0, 0, 1.0), (2, 2, 0, 1, 0, 1, 0.0)]
    """
    function = "rung_agreement"
    check_frame(proxy_tasks, "proxy_tasks", function, ("dataset", "task", "proxy_depth"))
    check_frame(depth, "depth", function, ("dataset", "task", column))
    joined = depth.select("dataset", "task", pl.col(column).alias("_d")).join(
        proxy_tasks.select("dataset", "task", "proxy_depth").with_columns(_rung=_rung(caps)),
        on=["dataset", "task"],
        how="inner",
    )
    rung, read = pl.col("_rung"), pl.col("n_tasks") - pl.col("n_no_proxy")
    return (
        joined.group_by("_d")
        .agg(
            n_tasks=pl.len().cast(pl.Int32),
            n_same=(rung == pl.col("_d")).sum().cast(pl.Int32),
            n_above=(rung > pl.col("_d")).sum().cast(pl.Int32),
            n_below=(rung < pl.col("_d")).sum().cast(pl.Int32),
            n_no_proxy=pl.col("proxy_depth").is_null().sum().cast(pl.Int32),
        )
        .with_columns(share_same=pl.when(read > 0).then(pl.col("n_same") / read))
        .sort("_d", nulls_last=True)
        .rename({"_d": column})
    )


def proxy_summary(audit: pl.DataFrame, *, caps: Sequence[int] = CAPS) -> pl.DataFrame:
    """The proxy beside D and N, per collection.

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table with the proxy (``audit_table(..., proxy=depth_proxy(trials))``).
    caps : sequence of int, default depthlab.CAPS
        The ladder for ``share_same_rung``.

    Returns
    -------
    pl.DataFrame
        One row per dataset (in order of appearance): ``n_tasks``, ``n_proxy`` (tasks with a
        proxy), ``n_depth`` (tasks with a pinned D), ``n_both``; medians ``median_proxy``,
        ``median_depth``, ``median_turns`` (N) over the tasks that have each; Spearman
        ``rho_proxy_depth`` and ``rho_proxy_turns`` over the tasks with both (null below 3
        tasks or with a constant column); and ``share_same_rung`` (proxy on D's rung, tasks with both).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": "d", "task": ["a", "b", "c", "e"],
    ...     "depth": [1, 2, 5, None], "proxy_depth": [1, 2, 4, 3], "n_turns": [4.0, 9.0, 12.0, 7.0]}), "audit")
    >>> proxy_summary(audit).select("n_proxy", "n_both", "median_proxy", "rho_proxy_depth", "share_same_rung").row(0)
    (4, 3, 2.5, 1.0, 1.0)
    """
    check_frame(audit, "audit", "proxy_summary", ("dataset", "task", "depth", "proxy_depth", "n_turns"))
    rows = []
    for group in audit.partition_by("dataset", maintain_order=True):
        both = group.drop_nulls(["proxy_depth", "depth"])
        with_turns = group.drop_nulls(["proxy_depth", "n_turns"])
        rows.append(
            {
                "dataset": group["dataset"][0],
                "n_tasks": group.height,
                "n_proxy": group["proxy_depth"].count(),
                "n_depth": group["depth"].count(),
                "n_both": both.height,
                "median_proxy": group["proxy_depth"].median(),
                "median_depth": group["depth"].median(),
                "median_turns": group["n_turns"].median(),
                "rho_proxy_depth": _spearman(both, "proxy_depth", "depth"),
                "rho_proxy_turns": _spearman(with_turns, "proxy_depth", "n_turns"),
                "share_same_rung": both.select((_rung(caps) == pl.col("depth")).mean()).item() if both.height else None,
            }
        )
    return pl.DataFrame(rows, schema=PROXY_COVERAGE)


def _spearman(frame: pl.DataFrame, x: str, y: str) -> float | None:
    if frame.height < 3 or frame[x].n_unique() < 2 or frame[y].n_unique() < 2:
        return None
    return frame.select(pl.corr(x, y, method="spearman")).item()


#: The questions :func:`proxy_correlations` answers: (label, x, y, covariate), y being the outcome.
PROXY_QUESTIONS: Final[tuple[tuple[str, str, str, str], ...]] = (
    ("pass ~ proxy | W", "proxy_depth", "pass_rate", "work"),
    ("pass ~ N | W", "n_turns", "pass_rate", "work"),
    ("pass ~ N | proxy", "n_turns", "pass_rate", "proxy_depth"),
    ("rating ~ proxy | W", "proxy_depth", "difficulty", "work"),
)


def proxy_correlations(
    audit: pl.DataFrame,
    *,
    by_dataset: bool = True,
    n_boot: int = N_BOOT,
    ci: float = 0.95,
    seed: int | None = AUDIT_SEED,
) -> pl.DataFrame:
    """Rank partial correlations of difficulty with the proxy, the way D is tested, per collection.

    On the tasks with a proxy, W and a public pass rate: pass rate with the proxy given W, with N
    given W, with N given the proxy, and (on human ratings only) the author's difficulty rating
    (easy < medium < hard) with the proxy given W; each by :func:`depthlab.stats.partial_spearman`
    with a bootstrap CI (tasks resampled, ranks recomputed in every resample).

    Parameters
    ----------
    audit : pl.DataFrame
        The audit table with the proxy (``audit_table(..., proxy=depth_proxy(trials))``).
    by_dataset : bool, default True
        One set per dataset; False pools every task.
    n_boot, ci, seed
        Passed to :func:`depthlab.stats.partial_spearman` (one generator serves every row).

    Returns
    -------
    pl.DataFrame
        :data:`CORRELATIONS_SCHEMA`, one row per (dataset, question): ``dataset`` (null when
        pooled), ``question``, the columns of :meth:`depthlab.stats.PartialCorr.to_row`, and
        ``note``: why a row has no estimate (fewer than 6 tasks, a constant column, no human
        rating), else null. No paper figure is set beside these rows: the paper reports D's
        correlations, not the proxy's, and the proxy is not validated as an estimate of D.

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> audit = schema.conform(pl.DataFrame({"dataset": "d", "task": [str(i) for i in range(8)],
    ...     "work": [3, 9, 4, 20, 8, 40, 12, 5], "n_turns": [5.0, 9, 6, 30, 12, 50, 14, 4],
    ...     "proxy_depth": [1, 2, 1, 5, 3, 8, 3, 2], "pass_rate": [0.9, 0.7, 0.8, 0.2, 0.4, 0.1, 0.5, 0.6],
    ...     "difficulty": ["easy", "medium", "easy", "hard", "medium", "hard", "medium", "easy"],
    ...     "difficulty_source": "human"}), "audit")
    >>> table = proxy_correlations(audit, n_boot=200)
    >>> table.select("question", "n").rows()[:2]
    [('pass ~ proxy | W', 8), ('pass ~ N | W', 8)]
    """
    from depthlab import stats  # scipy is loaded only by those who test

    function = "proxy_correlations"
    check_frame(audit, "audit", function, ("dataset", "task", "work", "n_turns", "proxy_depth", "pass_rate"))
    rng = np.random.default_rng(seed)
    groups = audit.partition_by("dataset", maintain_order=True) if by_dataset else [audit]
    rows: list[dict] = []
    for group in groups:
        dataset = group["dataset"][0] if by_dataset and group.height else None
        sample = group.drop_nulls(["proxy_depth", "work", "pass_rate"])
        for question, x, y, covar in PROXY_QUESTIONS:
            used = sample
            if y == "difficulty":
                human = pl.col("difficulty_source") == "human" if "difficulty_source" in used.columns else pl.lit(True)
                used = used.filter(human & pl.col("difficulty").is_in(DIFFICULTY_ORDER))
            used = used.drop_nulls([x, y, covar])
            note = None
            if sample.height == 0:
                note = "no task with a proxy (no passing run with a trajectory on disk)"
            elif used.height == 0 and y == "difficulty":
                note = "no human difficulty rating"
            elif used.height < MIN_TASKS:
                note = f"{used.height} tasks (fewer than {MIN_TASKS})"
            elif any(used[column].n_unique() < 2 for column in (x, y, covar)):
                note = "a constant column"
            row: dict = {
                "dataset": dataset,
                "question": question,
                "label": f"{dataset}: {question}" if dataset else question,
            }
            if note is None:
                order = {"difficulty": list(DIFFICULTY_ORDER)} if y == "difficulty" else None
                try:
                    result = stats.partial_spearman(used, x, y, covar, n_boot=n_boot, ci=ci, seed=rng, order=order)
                except ValueError as exc:  # e.g. collinear once ranked: this row is undefined, the others stand
                    note = str(exc)
                else:
                    row.update(result.to_row())
            if note is not None:
                row.update({"x": x, "y": y, "covar": covar, "n": used.height})
            row["note"] = note
            rows.append(row)
    return pl.DataFrame(rows, schema=CORRELATIONS_SCHEMA)
