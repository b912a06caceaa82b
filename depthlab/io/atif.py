"""Turns of agent trajectories: ATIF v1.0-v1.8, plain chat-message lists, terminus episode dirs.

:func:`count_turns` counts the turns of a trajectory file (the trials table's ``n_turns``);
:func:`read_steps` reads the turns of one trial as a table (what the agent said, typed and saw).

A *turn* is one agent inference followed by its actions:

* ATIF (``schema_version`` ``"ATIF-v1.0"`` ... ``"ATIF-v1.8"``): steps with
  ``source == "agent"`` that are not ``is_copied_context``, each counting
  ``llm_call_count`` when the exporter set it (else 1). A ``continued_trajectory_ref``
  chain (Terminus-2 ``linear_history``: ``trajectory.cont-N.json``) is followed and its
  new steps added; the prefix it copies is marked ``is_copied_context`` and so is not
  counted twice. Context-summarization subagent files
  (``trajectory.summarization-N-*.json``) are the summarizer's calls, not turns of the
  agent, so they are not counted; the main file keeps every agent turn before and after the
  summarization. Embedded ``subagent_trajectories`` (ATIF-v1.7+: delegated subagents, each
  a whole trajectory, nested to any depth) are not turns of the main agent either: their
  agent turns are counted apart (:func:`trajectory_counts`, the trials table's
  ``n_subagent_turns``).
* A JSON list of chat messages (custom agents such as TMax's): messages with
  ``role == "assistant"``.
* Terminus ``episode-N`` directories (Harbor ``agent/`` without a trajectory, TB1
  ``agent-logs/``): one turn per directory.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Final

import msgspec
import polars as pl

from depthlab._checks import check_bool, check_positive_int
from depthlab.io._errors import LoadError, Reject
from depthlab.io._files import ABSENT, Dep, changed_ns, decode_json, read_bytes, read_bytes_if_exists
from depthlab.io.harbor_models import LenientTrialResult, decode_steps
from depthlab.schema import TRAJECTORY_STEPS

#: ATIF versions this loader understands.
ATIF_VERSIONS: Final[tuple[str, ...]] = tuple(f"ATIF-v1.{minor}" for minor in range(9))

_MAX_CONTINUATIONS = 10_000


class _Step(msgspec.Struct):
    source: str
    is_copied_context: bool | None = None
    llm_call_count: int | None = None


class _Trajectory(msgspec.Struct):
    schema_version: str
    steps: list[_Step]
    continued_trajectory_ref: str | None = None
    subagent_trajectories: list[_Trajectory] | None = None  # ATIF-v1.7+


class _Message(msgspec.Struct):
    role: str | None = None


_FILE_TYPE = _Trajectory | list[_Message]

#: Columns and dtypes of the table :func:`read_steps` returns (declared in :data:`depthlab.schema.TRAJECTORY_STEPS`).
STEPS_SCHEMA: Final[dict[str, pl.DataType]] = TRAJECTORY_STEPS

#: Default length (characters) an observation is cut to by :func:`read_steps`.
OBSERVATION_CHARS: Final[int] = 2000
_CUT_MARK = " [...]"

# Keys of a terminus response (Terminus-2 JSON: analysis/plan; Terminus-1: state_analysis/explanation).
_RESPONSE_TEXT_KEYS: Final[dict[str, str]] = {
    "analysis": "Analysis",
    "plan": "Plan",
    "state_analysis": "State analysis",
    "explanation": "Explanation",
}
_SHELL_ARGUMENTS: Final[tuple[str, ...]] = ("keystrokes", "command", "cmd")
_XML_TAG = r"<{0}\b[^>]*>(.*?)</{0}>"


class _ToolCall(msgspec.Struct):
    function_name: str = ""
    arguments: Any = None


class _ObservationResult(msgspec.Struct):
    content: Any = None


class _Observation(msgspec.Struct):
    results: list[_ObservationResult] = []


class _Metrics(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class _FullStep(msgspec.Struct):
    source: str
    timestamp: str | None = None
    message: Any = None
    tool_calls: list[_ToolCall] | None = None
    observation: _Observation | None = None
    metrics: _Metrics | None = None
    is_copied_context: bool | None = None
    llm_call_count: int | None = None


class _FullTrajectory(msgspec.Struct):
    schema_version: str
    steps: list[_FullStep]
    continued_trajectory_ref: str | None = None


class _ChatMessage(msgspec.Struct):
    role: str | None = None
    content: Any = None
    tool_calls: Any = None


_FULL_FILE_TYPE = _FullTrajectory | list[_ChatMessage]


def count_turns(path: str | os.PathLike[str]) -> int:
    """Count the agent turns of one trajectory file (continuations included).

    Parameters
    ----------
    path : str or path-like
        An ATIF ``trajectory.json`` or a chat-message-list JSON file.

    Returns
    -------
    int
        The number of agent turns.

    Raises
    ------
    ValueError
        When the file is not a trajectory (the message names the path and the reason).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> steps = [{"step_id": 1, "source": "user", "message": "hi"},
    ...          {"step_id": 2, "source": "agent", "message": "ls"}]
    >>> _ = (folder / "trajectory.json").write_text(json.dumps({"schema_version": "ATIF-v1.6", "steps": steps}))
    >>> count_turns(folder / "trajectory.json")
    1
    """
    try:
        return _count_file(os.fspath(path), [])
    except Reject as exc:
        raise ValueError(f"{exc.path}: {exc.reason}") from None


def read_steps(
    trial_dir: str | os.PathLike[str], *, max_chars: int = OBSERVATION_CHARS, prompt: bool = False
) -> pl.DataFrame:
    """Read the turns of one trial: what the agent said, the commands it sent and what it saw.

    The trial's turns are taken from the first of these that exists:

    1. ``agent/trajectory.json`` (Harbor): ATIF v1.0-v1.8, continuations
       (``trajectory.cont-N.json``) followed, copied context and summarization subagents
       left out, exactly as :func:`count_turns` counts; or a chat-message list (one turn per
       assistant message, its observation the tool/user messages up to the next one).
    2. ``agent/episode-N/`` (Harbor terminus-2 without a trajectory), then
       ``agent-logs/episode-N/`` (TB1 Terminus): one turn per directory, in order of N; the
       message and commands come from ``response.txt`` / ``response.json``, the observation is
       the next episode's ``prompt.txt`` (the terminal output sent back).
    3. A multi-step Harbor trial: each step's ``steps/<name>/agent/`` read as above, in the order of
       the trial's ``step_results``, its turns numbered on from the step before (the trial's N is
       their sum); the prompt row is the first step's.

    So the row count equals the trials table's ``n_turns`` whenever that was counted from the
    same files. An ATIF step with ``llm_call_count = k`` gives ``k`` rows, its content on the
    first and nulls on the others (the exporter did not keep the calls apart).

    Parameters
    ----------
    trial_dir : str or path-like
        A Harbor trial directory (``result.json`` and ``agent/``) or a TB1 trial directory
        (``agent-logs/``).
    max_chars : int, default OBSERVATION_CHARS (2000)
        Observations longer than this are cut to their first ``max_chars`` characters, and
        ``" [...]"`` is appended.
    prompt : bool, default False
        Also return a first row, ``turn`` 0, whose ``observation`` is what the agent was given
        before its first turn: the system prompt and the instruction (ATIF system and user
        steps before the first agent step; chat messages before the first assistant message;
        an episode directory's first ``prompt.txt``), never cut. Its other columns are null.

    Returns
    -------
    pl.DataFrame
        One row per agent turn, columns :data:`STEPS_SCHEMA`: ``turn`` (1-based), ``timestamp``
        (UTC, null when not recorded; naive times taken as UTC), ``message`` (the agent's text,
        e.g. ``Analysis: ... Plan: ...``), ``commands`` (one command per line: keystrokes with
        their trailing newline dropped, other tool calls as ``name(arguments)``; null when the
        turn sent none), ``observation``, ``n_input_tokens`` and ``n_output_tokens`` (null
        when not recorded; episode dirs and chat lists record none).

    Raises
    ------
    LoadError
        When the directory has no trajectory and no episode directories, or a file is
        unreadable or mis-shaped (the message names the path and the reason).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> agent = pathlib.Path(tempfile.mkdtemp()) / "agent"
    >>> agent.mkdir()
    >>> steps = [{"step_id": 1, "source": "user", "message": "make hello.txt"},
    ...          {"step_id": 2, "source": "agent", "message": "Plan: write it",
    ...           "tool_calls": [{"tool_call_id": "c1", "function_name": "bash_command",
    ...                           "arguments": {"keystrokes": "echo hi > hello.txt\\n"}}],
    ...           "observation": {"results": [{"content": "$ echo hi > hello.txt"}]}}]
    >>> _ = (agent / "trajectory.json").write_text(json.dumps({"schema_version": "ATIF-v1.6", "steps": steps}))
    >>> read_steps(agent.parent).select("turn", "message", "commands").row(0)
    (1, 'Plan: write it', 'echo hi > hello.txt')
    """
    check_positive_int(max_chars, "max_chars", "read_steps")
    check_bool(prompt, "prompt", "read_steps")
    folder = os.fspath(trial_dir)
    try:
        given, rows = trial_turns(folder, max_chars, [])
    except Reject as exc:
        raise LoadError(f"{exc.path}: {exc.reason}") from None
    for turn, row in enumerate(rows, start=1):
        row["turn"] = turn
    if prompt:
        rows.insert(0, {"turn": 0, "observation": given})
    return pl.DataFrame(rows, schema=STEPS_SCHEMA) if rows else pl.DataFrame(schema=STEPS_SCHEMA)


def trajectory_turns(agent_dir: str, deps: list[Dep]) -> int | None:
    """Turns recorded in ``agent_dir/trajectory.json``, or None when there is no trajectory."""
    counts = trajectory_counts(agent_dir, deps)
    return None if counts is None else counts[0]


def trajectory_counts(agent_dir: str, deps: list[Dep]) -> tuple[int, int | None] | None:
    """(main agent's turns, embedded subagents' turns or None when it has none) of ``agent_dir/trajectory.json``.

    None when there is no trajectory; a trajectory that cannot be read raises :class:`Reject`.
    """
    path = os.path.join(agent_dir, "trajectory.json")
    data = read_bytes_if_exists(path, deps)
    return None if data is None else _count_bytes(data, path, deps)


def agent_dir_counts(agent_dir: str, deps: list[Dep]) -> tuple[int | None, int | None]:
    """(turns, subagent turns) of an agent folder: its trajectory, else its ``episode-*`` folders.

    An absent folder (a results-only trial) is one probe, remembered in ``deps`` so a trajectory or
    episode dirs appearing later are seen; a trajectory that cannot be read raises :class:`Reject`
    (the caller turns it into a note: it costs N, never the trial).
    """
    if not os.path.lexists(agent_dir):
        deps.append((agent_dir, ABSENT, 0))
        return None, None
    counts = trajectory_counts(agent_dir, deps)
    if counts is not None:
        return counts
    try:
        with os.scandir(agent_dir) as entries:
            episodes = sum(1 for entry in entries if entry.name.startswith("episode-") and entry.is_dir())
        info = os.stat(agent_dir)
        deps.append((agent_dir, info.st_size, changed_ns(info)))
    except OSError:
        return None, None
    return episodes or None, None


def _count_file(path: str, deps: list[Dep]) -> int:
    return _count_bytes(read_bytes(path, deps), path, deps)[0]


def _count_bytes(data: bytes | bytearray, path: str, deps: list[Dep]) -> tuple[int, int | None]:
    parsed = decode_json(data, path, _FILE_TYPE)
    if isinstance(parsed, list):
        return sum(1 for message in parsed if message.role == "assistant"), None
    main = 0
    subagents: int | None = None
    for segment in _segments(parsed, path, deps, _Trajectory):
        main += sum(_step_turns(step) for step in segment.steps)
        if segment.subagent_trajectories:
            subagents = (subagents or 0) + sum(_subagent_turns(sub, path) for sub in segment.subagent_trajectories)
    return main, subagents


def _subagent_turns(trajectory: _Trajectory, path: str, depth: int = 0) -> int:
    """Every agent turn of an embedded subagent and of the subagents it embeds in turn."""
    if depth > 100:
        raise Reject(path, "subagent_trajectories nested more than 100 deep")
    _check_version(trajectory.schema_version, path)
    turns = sum(_step_turns(step) for step in trajectory.steps)
    return turns + sum(_subagent_turns(sub, path, depth + 1) for sub in trajectory.subagent_trajectories or [])


def _step_turns(step: _Step | _FullStep) -> int:
    """How many turns an ATIF step stands for (0 for system, user and copied steps)."""
    if step.source != "agent" or step.is_copied_context:
        return 0
    return step.llm_call_count if step.llm_call_count is not None else 1


def _segments(first: Any, path: str, deps: list[Dep], type_: type) -> Iterator[Any]:
    """The trajectory and its ``continued_trajectory_ref`` continuations, in order (loops refused)."""
    seen = {os.path.abspath(path)}
    current, current_path = first, path
    while True:
        _check_version(current.schema_version, current_path)
        yield current
        ref = current.continued_trajectory_ref
        if not ref:
            return
        next_path = os.path.join(os.path.dirname(current_path), ref)
        key = os.path.abspath(next_path)
        if key in seen or len(seen) > _MAX_CONTINUATIONS:
            raise Reject(current_path, f"continued_trajectory_ref loops back to {ref!r}")
        seen.add(key)
        current = decode_json(read_bytes(next_path, deps), next_path, type_)
        current_path = next_path


def _check_version(version: str, path: str) -> None:
    if version not in ATIF_VERSIONS:
        raise Reject(
            path, f"unknown trajectory schema_version {version!r} (known: {ATIF_VERSIONS[0]} to {ATIF_VERSIONS[-1]})"
        )


# reading turns ----------------------------------------------------------------------------------


def trial_turns(folder: str, max_chars: int, deps: list[Dep]) -> tuple[str | None, list[dict[str, Any]]]:
    """The text given before the first turn (None when not recorded), and one row per turn (no ``turn`` key).

    Plain Python values only (no polars), so that forked worker processes may call it; every
    file read is recorded in ``deps``.
    """
    if not os.path.isdir(folder):
        raise Reject(folder, "not a directory")
    trajectory = os.path.join(folder, "agent", "trajectory.json")
    data = read_bytes_if_exists(trajectory, deps)
    if data is not None:
        return _trajectory_steps(data, trajectory, max_chars, deps)
    for logs in ("agent", "agent-logs"):
        episodes = _episode_dirs(os.path.join(folder, logs))
        if episodes:
            first = read_bytes_if_exists(os.path.join(episodes[0], "prompt.txt"), deps)
            given = None if first is None else first.decode("utf-8", errors="replace")
            return given, _episode_steps(episodes, max_chars, deps)
    steps = _step_folders(folder, deps)
    if steps:  # a multi-step trial: each step's agent/ in step order, as the trials table sums its N
        given_first: str | None = None
        rows: list[dict[str, Any]] = []
        for index, step in enumerate(steps):
            given, step_rows = trial_turns(step, max_chars, deps)
            given_first = given if index == 0 else given_first
            rows.extend(step_rows)
        return given_first, rows
    raise Reject(
        folder,
        "no agent/trajectory.json, no agent/episode-* or agent-logs/episode-* directories and no steps/*/agent/",
    )


def _step_folders(folder: str, deps: list[Dep]) -> list[str]:
    """A multi-step trial's ``steps/<name>`` folders, in the order of its result.json's ``step_results``
    (else by name); [] for a trial without steps."""
    root = os.path.join(folder, "steps")
    try:
        with os.scandir(root) as entries:
            present = sorted(entry.name for entry in entries if entry.is_dir(follow_symlinks=False))
    except OSError:
        return []
    order = present
    try:
        data = read_bytes_if_exists(os.path.join(folder, "result.json"), deps)
        if data is not None:
            result = msgspec.json.decode(data, type=LenientTrialResult)
            named = [step.step_name for step in decode_steps(result.step_results) if step.step_name]
            order = [name for name in named if name in present] or present
    except (msgspec.ValidationError, msgspec.DecodeError, Reject, RecursionError):
        pass  # a result that cannot be read leaves the folders' own order
    return [os.path.join(root, name) for name in order if os.path.isdir(os.path.join(root, name, "agent"))]


def _trajectory_steps(
    data: bytes | bytearray, path: str, max_chars: int, deps: list[Dep]
) -> tuple[str | None, list[dict[str, Any]]]:
    parsed = decode_json(data, path, _FULL_FILE_TYPE)
    if isinstance(parsed, list):
        return _chat_prompt(parsed), _chat_steps(parsed, max_chars)
    rows: list[dict[str, Any]] = []
    given: list[str] = []
    for segment in _segments(parsed, path, deps, _FullTrajectory):
        for step in segment.steps:
            turns = _step_turns(step)
            if turns == 0:
                if not rows and step.source != "agent" and not step.is_copied_context:
                    given.append(_content_text(step.message))
                continue
            metrics = step.metrics or _Metrics()
            results = step.observation.results if step.observation else []
            observation = "\n".join(_content_text(result.content) for result in results) if results else None
            message = _content_text(step.message)
            commands: str | None
            if step.tool_calls:
                commands = "\n".join(_command_text(call.function_name, call.arguments) for call in step.tool_calls)
            else:
                # terminus-2 with raw_content=True keeps the raw response and no tool calls
                parsed, commands = _parse_response(message)
                message = parsed or message
            rows.append(
                {
                    "timestamp": _timestamp(step.timestamp),
                    "message": message,
                    "commands": commands,
                    "observation": _cut(observation, max_chars),
                    "n_input_tokens": metrics.prompt_tokens,
                    "n_output_tokens": metrics.completion_tokens,
                }
            )
            rows.extend({} for _ in range(turns - 1))
    return "\n".join(given) if given else None, rows


def _chat_prompt(messages: list[_ChatMessage]) -> str | None:
    """The system and user messages before the first assistant message."""
    given = []
    for message in messages:
        if message.role == "assistant":
            break
        given.append(_content_text(message.content))
    return "\n".join(given) if given else None


def _chat_steps(messages: list[_ChatMessage], max_chars: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    seen: list[str] = []
    for message in messages:
        if message.role == "assistant":
            if rows:
                rows[-1]["observation"] = _cut("\n".join(seen), max_chars) if seen else None
            seen = []
            commands = [_command_text(name, arguments) for name, arguments in _chat_tool_calls(message.tool_calls)]
            rows.append({"message": _content_text(message.content), "commands": "\n".join(commands) or None})
        elif rows and message.role != "system":
            seen.append(_content_text(message.content))
    if rows:
        rows[-1]["observation"] = _cut("\n".join(seen), max_chars) if seen else None
    return rows


def _chat_tool_calls(tool_calls: Any) -> list[tuple[str, Any]]:
    """(name, arguments) of OpenAI-style tool calls; some agents saved the list as its Python repr."""
    if isinstance(tool_calls, str):
        try:
            tool_calls = ast.literal_eval(tool_calls)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return [("", tool_calls)]
    if not isinstance(tool_calls, list):
        return []
    calls = []
    for call in tool_calls:
        function = call.get("function", call) if isinstance(call, dict) else {}
        if isinstance(function, dict):
            calls.append((str(function.get("name") or ""), function.get("arguments")))
    return calls


def _episode_dirs(logs: str) -> list[str]:
    """``episode-*`` directories in order of their number (the ones counted as n_turns)."""
    try:
        with os.scandir(logs) as entries:
            names = [entry.name for entry in entries if entry.name.startswith("episode-") and entry.is_dir()]
    except OSError:
        return []
    suffix = len("episode-")
    names.sort(key=lambda name: (0, int(name[suffix:]), name) if name[suffix:].isdigit() else (1, 0, name))
    return [os.path.join(logs, name) for name in names]


def _episode_steps(episodes: list[str], max_chars: int, deps: list[Dep]) -> list[dict[str, Any]]:
    rows = []
    for index, episode in enumerate(episodes):
        response = None
        for name in ("response.txt", "response.json"):
            data = read_bytes_if_exists(os.path.join(episode, name), deps)
            if data is not None:
                response = data.decode("utf-8", errors="replace")
                break
        message, commands = _parse_response(response) if response is not None else (None, None)
        observation = None
        if index + 1 < len(episodes):
            prompt = read_bytes_if_exists(os.path.join(episodes[index + 1], "prompt.txt"), deps)
            observation = None if prompt is None else prompt.decode("utf-8", errors="replace")
        rows.append({"message": message, "commands": commands, "observation": _cut(observation, max_chars)})
    return rows


def _parse_response(text: str) -> tuple[str | None, str | None]:
    """Message and commands of a terminus response: JSON (as the agent parses it: first ``{`` to
    last ``}``), else XML tags. Without an analysis or plan terminus rejects the response and runs
    none of its commands, so the raw text and no commands are returned (a parse-error turn)."""
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        try:
            response = msgspec.json.decode(text[start : end + 1])
        except msgspec.DecodeError:
            response = None
        if isinstance(response, dict):
            parts = [
                f"{label}: {response[key]}"
                for key, label in _RESPONSE_TEXT_KEYS.items()
                if isinstance(response.get(key), str)
            ]
            listed = response.get("commands")
            commands = [
                _command_text("", command if isinstance(command, dict) else {"keystrokes": command})
                for command in (listed if isinstance(listed, list) else [])
                if isinstance(command, dict | str)
            ]
            if parts:
                return "\n".join(parts), "\n".join(commands) or None
    tagged = {key: re.search(_XML_TAG.format(key), text, re.DOTALL) for key in ("analysis", "plan")}
    keystrokes = re.findall(_XML_TAG.format("keystrokes"), text, re.DOTALL)
    parts = [f"{_RESPONSE_TEXT_KEYS[key]}: {match.group(1).strip()}" for key, match in tagged.items() if match]
    if parts:
        return "\n".join(parts), "\n".join(k.removesuffix("\n") for k in keystrokes) or None
    return text, None


def _command_text(name: str, arguments: Any) -> str:
    """Keystrokes or a shell command as typed (trailing newline dropped); other calls as ``name(arguments)``."""
    if isinstance(arguments, str):
        try:
            arguments = msgspec.json.decode(arguments)
        except msgspec.DecodeError:
            return arguments.removesuffix("\n")
    if isinstance(arguments, dict):
        for key in _SHELL_ARGUMENTS:
            if isinstance(arguments.get(key), str):
                return arguments[key].removesuffix("\n")
    shown = "" if arguments in (None, {}) else msgspec.json.encode(arguments).decode()
    return f"{name}({shown})"


def _content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a multimodal list (images as ``[image]``)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                parts.append(part["text"] if isinstance(part.get("text"), str) else f"[{part.get('type', 'part')}]")
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return str(content)


def _timestamp(value: str | None) -> datetime | None:
    """An ISO time as UTC (naive taken as UTC); null when absent or not a time (it only labels a row)."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _cut(text: str | None, max_chars: int) -> str | None:
    if text is None or len(text) <= max_chars:
        return text
    return text[:max_chars] + _CUT_MARK
