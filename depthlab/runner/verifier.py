"""The verifier: copy ``tests/`` in, run ``tests/test.sh``, read the reward it wrote.

Harbor's rules: ``/logs/verifier/reward.txt`` (one number) wins; else ``reward.json`` (a flat
object of numbers, kept whole: one key per segment or per test); else ``RewardFileNotFoundError``.
An empty reward.txt is ``RewardFileEmptyError``, an unparsable one ``VerifierOutputParseError``.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from depthlab.runner.container import TaskContainer, script_command
from depthlab.runner.errors import (
    AddTestsDirError,
    RewardFileEmptyError,
    RewardFileNotFoundError,
    VerifierOutputParseError,
    VerifierTimeoutError,
)
from depthlab.runner.output import write_text
from depthlab.runner.task import TaskSpec


def verify(box: TaskContainer, task: TaskSpec, verifier_dir: Path, *, timeout_sec: float) -> dict[str, float]:
    """Run the task's tests in ``box``; copy ``/logs/verifier`` to ``verifier_dir``; return the rewards.

    Raises
    ------
    VerifierTimeoutError, AddTestsDirError, RewardFileNotFoundError, RewardFileEmptyError, VerifierOutputParseError

    Examples
    --------
    >>> verify(box, task, Path("trial/verifier"), timeout_sec=600)  # doctest: +SKIP
    {'reward': 1.0}
    """
    tests = task.path / "tests"
    if not (tests / "test.sh").is_file():
        raise AddTestsDirError(f"The task {task.name!r} has no tests/test.sh")
    try:
        box.exec(["mkdir", "-p", "/logs/verifier"], timeout=60)
        box.put_directory(tests, "/tests")
    except (OSError, TimeoutError) as error:
        raise AddTestsDirError(f"Copying tests/ into the container failed: {error}") from None
    try:
        _, output = box.exec(script_command("/tests/test.sh"), timeout=timeout_sec)
    except TimeoutError:
        raise VerifierTimeoutError(f"Verifier execution timed out after {timeout_sec:g} seconds") from None
    finally:
        with contextlib.suppress(Exception):  # a dead container must not hide the verifier's own error
            box.get_directory("/logs/verifier", verifier_dir)
    write_text(verifier_dir / "test-stdout.txt", output.decode("utf-8", errors="replace"))
    return read_rewards(verifier_dir)


def read_rewards(verifier_dir: Path) -> dict[str, float]:
    """Harbor's reward rule on a verifier folder (see the module docstring).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "reward.txt").write_text("1\\n")
    >>> read_rewards(folder)
    {'reward': 1.0}
    """
    text_file, json_file = verifier_dir / "reward.txt", verifier_dir / "reward.json"
    if text_file.is_file():
        text = text_file.read_text(encoding="utf-8", errors="replace").strip()
        if not text:
            raise RewardFileEmptyError("reward.txt is empty")
        try:
            return {"reward": float(text)}
        except ValueError:
            raise VerifierOutputParseError(f"reward.txt does not hold a number: {text[:100]!r}") from None
    if json_file.is_file():
        try:
            value = json.loads(json_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise VerifierOutputParseError(f"reward.json is not JSON: {error}") from None
        if not isinstance(value, dict) or not all(
            isinstance(item, int | float) and not isinstance(item, bool) for item in value.values()
        ):
            raise VerifierOutputParseError("reward.json must be a flat object of numbers")
        return {str(key): float(item) for key, item in value.items()}
    raise RewardFileNotFoundError("The verifier wrote neither reward.txt nor reward.json in /logs/verifier")
