"""One trial's files as an export carries them: Harbor's JSON whole, the verifier's output, the trajectory's form.

:func:`read_trial_files` reads what :mod:`depthlab.export` hands to a peer beside the turns
:func:`depthlab.io.read_steps` reads: the trial's ``config.json`` and ``result.json`` as they are on
disk (Docent keeps them whole under ``metadata["harbor"]``), the verifier's output (Scout's
``score_explanation``), which form the trajectory has (ATIF, a chat-message list, terminus episode
directories, or the steps of a multi-step trial), and the parts a transcript of text messages cannot
carry: images, and subagents (ATIF's ``subagent_trajectory_ref`` references and embedded
``subagent_trajectories``). A file that cannot be read is a note, never an exception: the export
still writes the trial, and says what it could not carry.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Final

from depthlab.io._errors import Reject
from depthlab.io._files import decode_json, read_bytes_if_exists
from depthlab.io.harbor import read_trial_result

#: The trajectory forms :func:`read_trial_files` tells apart (``None``: no trajectory recorded).
TRAJECTORY_FORMS: Final[tuple[str, ...]] = ("atif", "chat-list", "episodes", "multi-step")

#: The verifier's output files, in the order they are joined (Harbor's ``verifier/`` folder).
VERIFIER_OUTPUTS: Final[tuple[str, ...]] = ("test-stdout.txt", "test-stderr.txt")

#: Content-part types that are not text (an image in ATIF; ``image_url`` in OpenAI-style chat lists).
_IMAGE_PARTS: Final[frozenset[str]] = frozenset({"image", "image_url", "input_image"})


@dataclass(frozen=True)
class TrialFiles:
    """What :func:`read_trial_files` found in one trial directory.

    Attributes
    ----------
    config, result : dict or None
        ``config.json`` and ``result.json`` decoded whole (None when absent or unreadable).
    verifier_output : str or None
        The verifier's stdout then stderr (a multi-step trial: each step's, headed by its name).
    trajectory_form : str or None
        One of :data:`TRAJECTORY_FORMS`, or None when the trial recorded no trajectory.
    trajectory_path : str or None
        The trajectory file (or folder) relative to the trial directory.
    images, subagent_refs, embedded_subagents : int
        Image parts, ``subagent_trajectory_ref`` entries and embedded subagent trajectories found.
    notes : list of str
        Files that could not be read, each with its reason.
    """

    config: dict[str, Any] | None
    result: dict[str, Any] | None
    verifier_output: str | None
    trajectory_form: str | None
    trajectory_path: str | None
    images: int = 0
    subagent_refs: int = 0
    embedded_subagents: int = 0
    notes: list[str] = field(default_factory=list)

    def not_carried(self) -> list[str]:
        """The parts a transcript of text messages cannot carry, as short phrases (empty: nothing lost).

        Examples
        --------
        >>> TrialFiles(None, None, None, "atif", "agent/trajectory.json", images=2).not_carried()
        ['2 image part(s) shown as [image]']
        """
        lost = []
        if self.images:
            lost.append(f"{self.images} image part(s) shown as [image]")
        if self.subagent_refs:
            lost.append(f"{self.subagent_refs} subagent trajectory reference(s) not followed")
        if self.embedded_subagents:
            lost.append(f"{self.embedded_subagents} embedded subagent trajectory(ies) left out")
        return lost + self.notes


def read_trial_files(trial_dir: str | os.PathLike[str]) -> TrialFiles:
    """Read one trial's Harbor JSON whole, its verifier output and its trajectory's form and uncarried parts.

    Parameters
    ----------
    trial_dir : str or path-like
        A Harbor trial directory (or a TB1 trial directory: no config or result JSON, episode dirs).

    Returns
    -------
    TrialFiles
        What was found; unreadable files are listed in ``notes``, never raised.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> trial = pathlib.Path(tempfile.mkdtemp())
    >>> (trial / "agent").mkdir()
    >>> (trial / "verifier").mkdir()
    >>> _ = (trial / "verifier" / "test-stdout.txt").write_text("1 passed")
    >>> chat = [{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url"}]},
    ...         {"role": "assistant", "content": "ls"}]
    >>> _ = (trial / "agent" / "trajectory.json").write_text(json.dumps(chat))
    >>> files = read_trial_files(trial)
    >>> files.trajectory_form, files.images, files.verifier_output
    ('chat-list', 1, '1 passed')
    """
    folder = os.fspath(trial_dir)
    notes: list[str] = []
    config = _json_object(os.path.join(folder, "config.json"), notes)
    result = _json_object(os.path.join(folder, "result.json"), notes)
    counts = _Counts()
    form, relative = _trajectory(folder, counts, notes)
    output = _verifier_output(folder)
    if output is None:
        outputs = [(name, _verifier_output(os.path.join(folder, "steps", name))) for name in _step_names(folder)]
        joined = [f"== step {name}\n{text}" for name, text in outputs if text is not None]
        output = "\n".join(joined) if joined else None
    return TrialFiles(
        config=config,
        result=result,
        verifier_output=output,
        trajectory_form=form,
        trajectory_path=relative,
        images=counts.images,
        subagent_refs=counts.refs,
        embedded_subagents=counts.embedded,
        notes=notes,
    )


@dataclass
class _Counts:
    images: int = 0
    refs: int = 0
    embedded: int = 0


def _json_object(path: str, notes: list[str]) -> dict[str, Any] | None:
    try:
        data = read_bytes_if_exists(path, [])
        if data is None:
            return None
        value = decode_json(data, path, dict[str, Any])
    except Reject as exc:
        notes.append(f"{os.path.basename(exc.path)} not read: {exc.reason}")
        return None
    return value if isinstance(value, dict) else None


def _trajectory(folder: str, counts: _Counts, notes: list[str]) -> tuple[str | None, str | None]:
    path = os.path.join(folder, "agent", "trajectory.json")
    try:
        data = read_bytes_if_exists(path, [])
        if data is not None:
            parsed = decode_json(data, path)
            _count_parts(parsed, counts)
            if isinstance(parsed, list):
                return "chat-list", "agent/trajectory.json"
            return "atif", "agent/trajectory.json"
    except Reject as exc:
        notes.append(f"trajectory not read: {exc.reason}")
        return None, None
    for logs in ("agent", "agent-logs"):
        try:
            names = [name for name in os.listdir(os.path.join(folder, logs)) if name.startswith("episode-")]
        except OSError:
            continue
        if names:
            return "episodes", logs
    if os.path.isdir(os.path.join(folder, "steps")):
        for name in sorted(os.listdir(os.path.join(folder, "steps"))):
            step = os.path.join(folder, "steps", name)
            step_counts = _Counts()
            _trajectory(step, step_counts, notes)
            counts.images += step_counts.images
            counts.refs += step_counts.refs
            counts.embedded += step_counts.embedded
        return "multi-step", "steps"
    return None, None


def _count_parts(value: Any, counts: _Counts) -> None:
    """Walk decoded JSON, counting image parts, subagent references and embedded subagent trajectories."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("type") in _IMAGE_PARTS:
                counts.images += 1
            refs = item.get("subagent_trajectory_ref")
            if isinstance(refs, list):
                counts.refs += len(refs)
            elif isinstance(refs, dict):
                counts.refs += 1
            embedded = item.get("subagent_trajectories")
            if isinstance(embedded, list):
                counts.embedded += len(embedded)
                stack.extend(value for key, value in item.items() if key != "subagent_trajectories")
                continue
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _verifier_output(folder: str) -> str | None:
    texts = []
    for name in VERIFIER_OUTPUTS:
        try:
            data = read_bytes_if_exists(os.path.join(folder, "verifier", name), [])
        except Reject:
            continue
        if data:
            texts.append(data.decode("utf-8", errors="replace"))
    return "\n".join(texts) if texts else None


def _step_names(folder: str) -> list[str]:
    """The step folders of a multi-step trial, in the order its result.json records them (through io's model)."""
    try:
        present = sorted(os.listdir(os.path.join(folder, "steps")))
    except OSError:
        return []
    read = read_trial_result(os.path.join(folder, "result.json"))
    named = [] if isinstance(read, str) else [step.step_name for step in read.steps]
    order = [name for name in named if isinstance(name, str) and name in present]
    return order or present
