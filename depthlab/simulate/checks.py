"""Tasks with planted verifier faults of known truth, for :func:`depthlab.checks.check_tasks`.

:func:`write_planted_tasks` writes Harbor tasks (multi-step ``[[steps]]`` and single-step) whose
steps mark their key step (``# key-step begin`` / ``# key-step end``) and whose verifiers are sound
except where a fault is planted. Each fault is built so that exactly the checks listed in
:data:`PLANTED` see it (a planted fault can imply several: a check that passes before its step
also passes with the key step, or any one command, removed):

``clean``
    Two steps, every check met (the control).
``blind``
    One step whose tests check one of its two files: removing the other command goes unnoticed.
``passes-before``
    Two steps; step ``extend``'s tests check only that a file step ``make`` wrote exists (so they also
    pass when ``make``'s key step is removed: ``extend``'s own solution makes the file).
``key-unneeded``
    Two steps; step ``use`` needs nothing step ``make``'s key step made.
``path-missing``
    One step whose tests read a path its instruction never names.
``fix-given``
    One step whose instruction spells out its key step's command.
``flaky``
    One step whose verifier passes on a coin flip (``/dev/urandom``): with ``repeat`` oracle replays
    it is missed with probability ``2 ** (1 - repeat)``.
``unmarked``
    One step with no key-step mark: ``key_removed`` is ``not_marked``, never a pass or a fail.

:func:`write_bad_tasks` writes the bad inputs (an oracle that exits non-zero, a step without
``solve.sh``, a mark that never closes, a solution that hangs), each with the one-line reason its
rows must give. The images are ``FROM`` the image given (the Debian userland in the tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import polars as pl

from depthlab import schema
from depthlab.io.harbor_task import config_text

#: (task, step, check) -> the outcome planted; every other row of these tasks is ``ok``,
#: ``not_marked`` or ``not_applicable``.
PLANTED: Final[dict[tuple[str, str, str], str]] = {
    ("blind", "blind", "mutants"): "fault",
    ("passes-before", "extend", "before"): "fault",
    ("passes-before", "extend", "key_removed"): "fault",
    ("passes-before", "extend", "mutants"): "fault",
    ("passes-before", "make", "next_after_key"): "fault",
    ("key-unneeded", "make", "next_after_key"): "fault",
    ("path-missing", "path-missing", "named_in_instruction"): "fault",
    ("fix-given", "fix-given", "fix_not_in_instruction"): "fault",
    ("flaky", "flaky", "oracle"): "flaky",
}

#: The bad inputs: task -> the words its rows' evidence must hold.
BAD: Final[dict[str, str]] = {
    "oracle-fails": "exited with code 3",
    "no-solution": "has no solution/solve.sh",
    "open-mark": "never closes",
    "hangs": "hangs",
}


def _reward_test(condition: str) -> str:
    return (
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        f"if {condition}; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
    )


def _key(*lines: str) -> str:
    return "# key-step begin\n" + "".join(line + "\n" for line in lines) + "# key-step end\n"


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _task(
    root: Path,
    name: str,
    image: str,
    steps: Sequence[tuple[str, str, str, str | None]],
    *,
    agent_timeout: float = 60.0,
) -> Path:
    """A task of ``steps`` (name, instruction, test.sh, solve.sh or None); one step: a single-step task."""
    folder = root / name
    files = {"environment/Dockerfile": f"FROM {image}\nRUN mkdir -p /app\nWORKDIR /app\n"}
    config: dict[str, Any] = {"schema_version": "1.4", "task": {"name": f"planted/{name}"}}
    if len(steps) > 1:
        config["steps"] = [{"name": step, "min_reward": 1.0} for step, *_ in steps]
    config["agent"] = {"timeout_sec": agent_timeout}
    config["verifier"] = {"timeout_sec": 30.0}
    config["environment"] = {"cpus": 1, "memory_mb": 512, "network_mode": "no-network"}
    files["task.toml"] = config_text(config)
    if len(steps) == 1:
        _, instruction, test, solve = steps[0]
        files |= {"instruction.md": instruction, "tests/test.sh": test}
        if solve is not None:
            files["solution/solve.sh"] = solve
    else:
        for step, instruction, test, solve in steps:
            files |= {f"steps/{step}/instruction.md": instruction, f"steps/{step}/tests/test.sh": test}
            if solve is not None:
                files[f"steps/{step}/solution/solve.sh"] = solve
    _write(folder, files)
    return folder


_MAKE = (
    "make",
    "Write the word alpha to /app/out/a.txt.",
    _reward_test('[ "$(cat /app/out/a.txt 2>/dev/null)" = alpha ]'),
    "#!/bin/bash\nmkdir -p /app/out\n" + _key("echo alpha > /app/out/a.txt"),
)
_USE = (
    "use",
    "Write the text of /app/out/a.txt in capitals to /app/out/b.txt.",
    _reward_test('[ "$(cat /app/out/b.txt 2>/dev/null)" = ALPHA ]'),
    "#!/bin/bash\n" + _key("tr a-z A-Z < /app/out/a.txt > /app/out/b.txt"),
)


def write_planted_tasks(root: str | Path, image: str) -> dict[str, Path]:
    """Write the planted tasks (module docstring) under ``root``; return task name -> folder.

    Examples
    --------
    >>> import tempfile
    >>> sorted(write_planted_tasks(tempfile.mkdtemp(), "debian:12"))[:3]
    ['blind', 'clean', 'fix-given']
    """
    root = Path(root)
    tasks = {
        "clean": [_MAKE, _USE],
        "blind": [
            (
                "blind",
                "Write one to /app/one.txt and two to /app/two.txt.",
                _reward_test('[ "$(cat /app/one.txt 2>/dev/null)" = one ]'),
                "#!/bin/bash\n" + _key("echo one > /app/one.txt") + "echo two > /app/two.txt\n",
            )
        ],
        "passes-before": [
            _MAKE,
            (
                "extend",
                "Append a line beta to /app/out/a.txt.",
                _reward_test("[ -f /app/out/a.txt ]"),
                "#!/bin/bash\n" + _key("echo beta >> /app/out/a.txt"),
            ),
        ],
        "key-unneeded": [
            _MAKE,
            (
                "use",
                "Write the word gamma to /app/out/c.txt.",
                _reward_test('[ "$(cat /app/out/c.txt 2>/dev/null)" = gamma ]'),
                "#!/bin/bash\n" + _key("echo gamma > /app/out/c.txt"),
            ),
        ],
        "path-missing": [
            (
                "path-missing",
                "Write the word done to the file out.txt in the results folder under /app.",
                _reward_test('[ "$(cat /app/results/out.txt 2>/dev/null)" = done ]'),
                "#!/bin/bash\nmkdir -p /app/results\n" + _key("echo done > /app/results/out.txt"),
            )
        ],
        "fix-given": [
            (
                "fix-given",
                "Create /app/f.txt holding fixed, for instance with: echo fixed > /app/f.txt",
                _reward_test('[ "$(cat /app/f.txt 2>/dev/null)" = fixed ]'),
                "#!/bin/bash\n" + _key("echo fixed > /app/f.txt"),
            )
        ],
        "flaky": [
            (
                "flaky",
                "Write the word luck to /app/l.txt.",
                _reward_test('[ "$(cat /app/l.txt)" = luck ] && [ $(( $(od -An -N1 -tu1 /dev/urandom) % 2 )) = 0 ]'),
                "#!/bin/bash\n" + _key("echo luck > /app/l.txt"),
            )
        ],
        "unmarked": [
            (
                "unmarked",
                "Write the word plain to /app/p.txt.",
                _reward_test('[ "$(cat /app/p.txt 2>/dev/null)" = plain ]'),
                "#!/bin/bash\necho plain > /app/p.txt\n",
            )
        ],
    }
    return {name: _task(root, name, image, steps) for name, steps in tasks.items()}


def write_bad_tasks(root: str | Path, image: str) -> dict[str, Path]:
    """Write the bad inputs (:data:`BAD`) under ``root``; return task name -> folder."""
    root = Path(root)
    test = _reward_test('[ "$(cat /app/x.txt 2>/dev/null)" = x ]')
    folders = {
        "oracle-fails": _task(
            root, "oracle-fails", image, [("oracle-fails", "Write x to /app/x.txt.", test, "#!/bin/bash\nexit 3\n")]
        ),
        "no-solution": _task(root, "no-solution", image, [_MAKE, ("second", "Write x to /app/x.txt.", test, None)]),
        "open-mark": _task(
            root,
            "open-mark",
            image,
            [("open-mark", "Write x to /app/x.txt.", test, "#!/bin/bash\n# key-step begin\necho x > /app/x.txt\n")],
        ),
        "hangs": _task(
            root,
            "hangs",
            image,
            [("hangs", "Write x to /app/x.txt.", test, "#!/bin/bash\necho x > /app/x.txt\nsleep 600\n")],
            agent_timeout=3.0,
        ),
    }
    return folders


#: The checks table of the planted tasks (:func:`write_planted_tasks`), bundled with depthlab so that
#: notebook 09 has a table to draw without Docker: made by ``check_tasks`` on the local engine (the
#: ``flaky`` task with ``repeat=10``, the others with the default 2), its ``trials`` column emptied
#: (the replays' folders were temporary).
PLANTED_TABLE: Final[Path] = Path(__file__).parent / "data" / "planted_checks.csv"


def planted_table() -> pl.DataFrame:
    """The bundled checks table of the planted tasks (:data:`PLANTED_TABLE`), simulated tasks replayed for real.

    Examples
    --------
    >>> planted_table().filter(pl.col("outcome") == "flaky")["task"].to_list()
    ['flaky']
    """
    return schema.conform(pl.read_csv(PLANTED_TABLE, schema_overrides=schema.CHECKS), "checks")
