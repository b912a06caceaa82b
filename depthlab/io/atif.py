"""Turn counts from agent trajectories: ATIF v1.0-v1.7 and plain chat-message lists.

A *turn* is one agent inference followed by its actions:

* ATIF (``schema_version`` ``"ATIF-v1.0"`` ... ``"ATIF-v1.7"``): steps with
  ``source == "agent"`` that are not ``is_copied_context``, each counting
  ``llm_call_count`` when the exporter set it (else 1). A ``continued_trajectory_ref``
  chain (Terminus-2 ``linear_history``: ``trajectory.cont-N.json``) is followed and its
  new steps added; the prefix it copies is marked ``is_copied_context`` and so is not
  counted twice. Context-summarization subagent files
  (``trajectory.summarization-N-*.json``) and embedded ``subagent_trajectories`` are the
  summarizer's calls, not turns of the agent, so they are not counted; the main file
  keeps every agent turn before and after the summarization.
* A JSON list of chat messages (custom agents such as TMax's): messages with
  ``role == "assistant"``.
"""

from __future__ import annotations

import os
from typing import Final

import msgspec

from depthlab.io._errors import _Reject
from depthlab.io._files import Dep, decode_json, read_bytes, read_bytes_if_exists

#: ATIF versions this loader understands.
ATIF_VERSIONS: Final[tuple[str, ...]] = tuple(f"ATIF-v1.{minor}" for minor in range(8))

_MAX_CONTINUATIONS = 10_000


class _Step(msgspec.Struct):
    source: str
    is_copied_context: bool | None = None
    llm_call_count: int | None = None


class _Trajectory(msgspec.Struct):
    schema_version: str
    steps: list[_Step]
    continued_trajectory_ref: str | None = None


class _Message(msgspec.Struct):
    role: str | None = None


_FILE_TYPE = _Trajectory | list[_Message]


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
    except _Reject as exc:
        raise ValueError(f"{exc.path}: {exc.reason}") from None


def trajectory_turns(agent_dir: str, deps: list[Dep]) -> int | None:
    """Turns recorded in ``agent_dir/trajectory.json``, or None when there is no trajectory."""
    path = os.path.join(agent_dir, "trajectory.json")
    data = read_bytes_if_exists(path, deps)
    return None if data is None else _count_bytes(data, path, deps)


def _count_file(path: str, deps: list[Dep]) -> int:
    return _count_bytes(read_bytes(path, deps), path, deps)


def _count_bytes(data: bytes, path: str, deps: list[Dep]) -> int:
    parsed = decode_json(data, path, _FILE_TYPE)
    if isinstance(parsed, list):
        return sum(1 for message in parsed if message.role == "assistant")
    turns = 0
    seen = {os.path.abspath(path)}
    current, current_path = parsed, path
    while True:
        _check_version(current.schema_version, current_path)
        turns += sum(
            (step.llm_call_count if step.llm_call_count is not None else 1)
            for step in current.steps
            if step.source == "agent" and not step.is_copied_context
        )
        ref = current.continued_trajectory_ref
        if not ref:
            return turns
        next_path = os.path.join(os.path.dirname(current_path), ref)
        key = os.path.abspath(next_path)
        if key in seen or len(seen) > _MAX_CONTINUATIONS:
            raise _Reject(current_path, f"continued_trajectory_ref loops back to {ref!r}")
        seen.add(key)
        current = decode_json(read_bytes(next_path, deps), next_path, _Trajectory)
        current_path = next_path


def _check_version(version: str, path: str) -> None:
    if version not in ATIF_VERSIONS:
        raise _Reject(path, f"unknown trajectory schema_version {version!r} (known: ATIF-v1.0 to ATIF-v1.7)")
