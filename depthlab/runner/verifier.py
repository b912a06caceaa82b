"""The verifier: copy ``tests/`` in, run ``tests/test.sh``, read the reward it wrote.

Harbor's rules: ``/logs/verifier/reward.txt`` (one number) wins; else ``reward.json`` (a flat
object of numbers, kept whole: one key per segment or per test); else ``RewardFileNotFoundError``.
An empty reward.txt is ``RewardFileEmptyError``, an unparsable one ``VerifierOutputParseError``.

A reward the agent cannot forge
-------------------------------
The agent runs as root in the same container, and its background processes still run while
the tests do (a task may ask it to leave a server running). So, before the tests run:

1. ``/tests`` and ``/logs/verifier`` are deleted (whatever the agent put there is gone; a file
   an agent's process writes back meanwhile is left out by the group check below);
2. the Docker daemon creates ``/logs/verifier`` owned by :data:`VERIFIER_UID` and group
   :data:`VERIFIER_GID`, mode 0770: the agent, a root without capabilities, can neither enter,
   write, chmod nor chown it;
3. ``tests/test.sh`` runs as the image's user with the primary group :data:`VERIFIER_GID`, which
   the group bits let write there; its output streams to ``test-stdout.txt``, cut at
   :data:`OUTPUT_LIMIT_BYTES`.

Afterwards only what the verifier wrote is read: the copied folder must still be the one the
daemon made (owner :data:`VERIFIER_UID`), and only files of group :data:`VERIFIER_GID` (which the
agent's processes cannot create) are copied out; files over :data:`FILE_LIMIT_BYTES` are cut
(``copy-notes.txt`` in the trial's verifier folder lists what was left out or cut). A
folder replaced meanwhile gives ``RewardFileNotFoundError`` (a valid trial with no reward, as
when a task's tests write none). The agent can still change programs the tests call, as in
Harbor: the tests grade the container the agent leaves. Capabilities given back with
``cap_add`` (DAC_OVERRIDE, FOWNER, CHOWN, SETGID) void this guarantee.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
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

#: Owner of the verifier's folder: a user no process in the container runs as.
VERIFIER_UID = 48_271
#: Group of the verifier's folder and the verifier's primary group.
VERIFIER_GID = 48_271
#: Bytes of the tests' output kept in ``test-stdout.txt`` (head and tail, the rest counted).
OUTPUT_LIMIT_BYTES = 8 << 20
#: Largest file copied out of ``/logs/verifier`` whole (longer ones are cut).
FILE_LIMIT_BYTES = 16 << 20
#: Largest reward file read.
REWARD_FILE_LIMIT_BYTES = 1 << 20

# a plain decimal number: no "1_0" (Python reads 10), no "nan" or "inf"
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")

# an agent's process may still be writing there: a few rounds (the folder's group check covers what is left)
_RESET = (
    'for round in 1 2 3 4 5; do for d in /tests /logs/verifier; do [ -e "$d" ] || [ -L "$d" ] || continue; '
    'chmod -R u+rwx "$d" 2>/dev/null; rm -rf "$d" 2>/dev/null; done; '
    "[ -e /tests ] || [ -e /logs/verifier ] || break; done; mkdir -p /logs"
)


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
        code, output = box.exec(["sh", "-c", _RESET], timeout=60, user="0")
        if code != 0:
            raise OSError(f"/logs could not be made: {output[-300:].decode(errors='replace')}")
        box.put_entry("/logs/verifier", mode=0o770, uid=VERIFIER_UID, gid=VERIFIER_GID)
        box.put_directory(tests, "/tests")
    except (OSError, TimeoutError) as error:
        raise AddTestsDirError(f"Preparing the tests in the container failed: {error}") from None
    stdout = verifier_dir / "test-stdout.txt"
    staged = verifier_dir.with_name(verifier_dir.name + ".test-stdout.txt")  # the verifier may write its own
    user = f"{box.image_user}:{VERIFIER_GID}"
    try:
        box.exec_to_file(
            script_command("/tests/test.sh"), staged, timeout=timeout_sec, user=user, limit_bytes=OUTPUT_LIMIT_BYTES
        )
    except TimeoutError:
        raise VerifierTimeoutError(f"Verifier execution timed out after {timeout_sec:g} seconds") from None
    finally:
        report = None
        with contextlib.suppress(Exception):  # a dead container must not hide the verifier's own error
            report = box.get_directory(
                "/logs/verifier", verifier_dir, file_limit_bytes=FILE_LIMIT_BYTES, only_gid=VERIFIER_GID
            )
        if staged.exists():
            verifier_dir.mkdir(parents=True, exist_ok=True)
            staged.replace(stdout)
    if report is not None and report.owner != (VERIFIER_UID, VERIFIER_GID):
        for name in ("reward.txt", "reward.json"):  # copied from a folder the agent made: not the verifier's
            (verifier_dir / name).unlink(missing_ok=True)
        raise RewardFileNotFoundError(
            "/logs/verifier was replaced while the tests ran (its owner is "
            f"{report.owner}, not the verifier's {(VERIFIER_UID, VERIFIER_GID)}); no reward is read from it"
        )
    if report is not None and report.notes():
        write_text(verifier_dir / "copy-notes.txt", report.notes())
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
        text = _read_small(text_file).strip()
        if not text:
            raise RewardFileEmptyError("reward.txt is empty")
        if not _NUMBER.fullmatch(text) or not math.isfinite(float(text)):
            raise VerifierOutputParseError(f"reward.txt does not hold a finite number: {text[:100]!r}")
        return {"reward": float(text)}
    if json_file.is_file():
        try:
            value = json.loads(_read_small(json_file))
        except (json.JSONDecodeError, RecursionError) as error:
            raise VerifierOutputParseError(f"reward.json is not JSON: {error}") from None
        if not isinstance(value, dict) or not all(
            isinstance(item, int | float) and not isinstance(item, bool) and math.isfinite(item)
            for item in value.values()
        ):
            raise VerifierOutputParseError("reward.json must be a flat object of finite numbers")
        return {str(key): float(item) for key, item in value.items()}
    raise RewardFileNotFoundError("The verifier wrote neither reward.txt nor reward.json in /logs/verifier")


def _read_small(path: Path) -> str:
    with path.open("rb") as handle:
        data = handle.read(REWARD_FILE_LIMIT_BYTES + 1)
    if len(data) > REWARD_FILE_LIMIT_BYTES:
        raise VerifierOutputParseError(f"{path.name} is larger than {REWARD_FILE_LIMIT_BYTES} bytes")
    return data.decode("utf-8", errors="replace")
