"""Tasks no engine runs (issue 37, item 7), each written as a hostile author would, with one line naming its cause.

Every task is otherwise whole (an environment FROM the Debian userland, a solution, tests), so
only the named defect makes it unrunnable. ``CAUSES`` maps each task to a part of the line both
engines must print.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

TEST_SH = "#!/bin/bash\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n"

#: task -> what its refusal names
CAUSES = {
    "refuse-empty-steps": "steps = [] declares no step, so it is a single-step task, and it has no instruction.md",
    "refuse-step-without-tests": "has no tests: neither steps/b/tests/test.sh nor tests/test.sh",
    "refuse-step-without-instruction": "step 2 ('b'): it has no steps/b/instruction.md",
    "refuse-cafe-nfc-nfd": "once Unicode-normalised (NFC) and case-folded",
    "refuse-latin1-instruction": "instruction.md is not UTF-8 text (byte 0xc9 at offset 0)",
}


def _common(task: Path, image: str, toml: str) -> None:
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(f"FROM {image}\nWORKDIR /app\n")
    (task / "task.toml").write_text('schema_version = "1.4"\n' + toml, encoding="utf-8")


def _step(task: Path, name: str, *, tests: bool = True, instruction: bool = True) -> None:
    folder = task / "steps" / name
    (folder / "solution").mkdir(parents=True)
    (folder / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    if instruction:
        (folder / "instruction.md").write_text(f"Do {name}.", encoding="utf-8")
    if tests:
        (folder / "tests").mkdir()
        (folder / "tests" / "test.sh").write_text(TEST_SH)


def write_refused_tasks(root: Path, image: str) -> Path:
    """The tasks of :data:`CAUSES` under ``root``."""
    task = root / "refuse-empty-steps"  # the steps' folders written, none declared
    _common(task, image, "steps = []\n[agent]\ntimeout_sec = 60.0\n")
    _step(task, "a")

    two = '[[steps]]\nname = "a"\n[[steps]]\nname = "b"\n'
    task = root / "refuse-step-without-tests"
    _common(task, image, two)
    _step(task, "a")
    _step(task, "b", tests=False)

    task = root / "refuse-step-without-instruction"
    _common(task, image, two)
    _step(task, "a")
    _step(task, "b", instruction=False)

    task = root / "refuse-cafe-nfc-nfd"
    names = [unicodedata.normalize(form, "café") for form in ("NFC", "NFD")]
    _common(task, image, "".join(f'[[steps]]\nname = "{name}"\n' for name in names))
    for name in names:
        _step(task, name)

    task = root / "refuse-latin1-instruction"
    _common(task, image, "[agent]\ntimeout_sec = 60.0\n")
    (task / "instruction.md").write_bytes("Écrivez le fichier café.".encode("latin-1"))
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text(TEST_SH)
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    return root
