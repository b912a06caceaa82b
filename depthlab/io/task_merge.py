"""The merged version of a multi-step task: its steps delivered as one instruction, one verifier for all.

The paper's merged-segments experiment measures D of a segmented task twice: delivered segment by
segment (its ``[[steps]]``) and whole. :func:`merge_steps` writes the whole version as a plain
Harbor task beside the original:

* ``instruction.md``: the steps' instructions in order, joined by blank lines;
* ``solution/solve.sh``: every step's reference solution in order (each step's ``solution/`` is
  copied to ``solution/steps/<name>/`` and its ``solve.sh`` run from there);
* ``tests/``: each step's tests copied to ``tests/steps/<name>/`` (the ``/tests/`` paths of its
  ``test.sh`` pointed at that folder), and a ``test.sh`` that runs them in order and writes
  ``reward.json``: ``segment_<k>`` = step k's reward, ``reward`` = 1 when every step reached its
  ``min_reward`` (1 where none is given), else 0;
* ``environment/``: the task's, with each step's ``workdir/`` copied into the image's working folder
  (and its ``setup.sh`` run) at build time, in step order: what the steps stage as they start is
  there from the start;
* ``task.toml``: the task's without ``[[steps]]``, ``[agent]`` and ``[verifier]`` timeouts the sum
  of the steps', ``[task].name`` suffixed ``-merged``, and ``[metadata].merged_from =
  "<dataset>/<task>"``, which :func:`depthlab.findings.merged_segments` pairs it by.

A task whose steps' tests need a verifier image of their own (a step's ``tests/Dockerfile``) has no
single verifier to merge them into, and is refused with that reason (:class:`TaskFormatError`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from depthlab._atomic import write_text
from depthlab.io.harbor_task import HarborTask, TaskFormatError, read_task

#: The name suffix of a merged task (folder and ``[task].name``).
MERGED_SUFFIX = "-merged"
_STAGED = "depthlab-step-workdirs"  # inside environment/: the steps' workdirs, copied in at build time

_TEST_SH = """#!/bin/bash
# The merged task's verifier (written by depthlab tasks merge): every step's tests in order.
mkdir -p /logs/verifier
all=1
json=""
run_step() {{  # $1 = k, $2 = step folder under /tests/steps, $3 = the step's min_reward
  rm -f /logs/verifier/reward.txt /logs/verifier/reward.json
  bash "/tests/steps/$2/test.sh" > "/logs/verifier/step-$1-stdout.txt" 2>&1
  r=$(cat /logs/verifier/reward.txt 2>/dev/null ||
      sed -n 's/.*"reward"[^0-9.-]*\\(-\\{{0,1\\}}[0-9.eE+-]*\\).*/\\1/p' /logs/verifier/reward.json 2>/dev/null)
  r=${{r:-0}}
  json="$json\\"segment_$1\\": $r, "
  awk -v r="$r" -v m="$3" 'BEGIN {{ exit !(r + 0 >= m + 0) }}' || all=0
}}
{calls}
rm -f /logs/verifier/reward.txt
printf '{{%s"reward": %s}}\\n' "$json" "$all" > /logs/verifier/reward.json
"""


def merge_steps(
    task_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str], *, dataset: str | None = None
) -> Path:
    """Write the merged version of the multi-step task ``task_dir`` into ``out_dir``; return its folder.

    Parameters
    ----------
    task_dir : str or path-like
        A Harbor task folder with ``[[steps]]``.
    out_dir : str or path-like
        Where the merged task's folder (``<name>-merged``) is written (replaced when present).
    dataset : str, optional
        The dataset named in ``merged_from`` (default: the task folder's parent folder name).

    Returns
    -------
    Path
        The merged task's folder.

    Raises
    ------
    TaskFormatError
        When the task has no steps, a step lacks its instruction, tests or solution, or the
        steps' tests need images of their own.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> task = root / "tasks" / "two"
    >>> for name in ("a", "b"):
    ...     for part in ("solution", "tests"):
    ...         (task / "steps" / name / part).mkdir(parents=True)
    ...     _ = (task / "steps" / name / "instruction.md").write_text(f"Do {name}.")
    ...     _ = (task / "steps" / name / "solution" / "solve.sh").write_text("true\\n")
    ...     _ = (task / "steps" / name / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\\n")
    >>> toml = 'schema_version = "1.4"\\n[[steps]]\\nname = "a"\\n[[steps]]\\nname = "b"\\n'
    >>> _ = (task / "task.toml").write_text(toml)
    >>> merged = merge_steps(task, root / "merged")
    >>> merged.name, (merged / "instruction.md").read_text()
    ('two-merged', 'Do a.\\n\\nDo b.\\n')
    >>> read_task(merged).metadata["merged_from"]
    'tasks/two'
    """
    task = read_task(task_dir)
    problem = _unmergeable(task)
    if problem:
        raise TaskFormatError(task.config_path, f"cannot merge its steps: {problem}")
    source = Path(task.path)
    target = Path(out_dir) / f"{source.name}{MERGED_SUFFIX}"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name in ("steps", "task.toml", "instruction.md", "solution", "tests"):
            continue
        (shutil.copytree if entry.is_dir() else shutil.copy2)(entry, target / entry.name)
    instructions = [(step.instruction or "").strip() for step in task.steps]
    write_text(target / "instruction.md", "\n\n".join(instructions) + "\n")
    solve = [
        "#!/bin/bash",
        "# The merged task's reference solution (depthlab tasks merge): every step's, in order.",
        "set -e",
    ]
    calls = []
    for step in task.steps:
        shutil.copytree(Path(step.path) / "solution", target / "solution" / "steps" / step.name)
        solve.append(f'(bash "/solution/steps/{step.name}/solve.sh")')
        tests = target / "tests" / "steps" / step.name
        shutil.copytree(step.tests_dir, tests)
        script = (tests / "test.sh").read_text(encoding="utf-8")
        write_text(tests / "test.sh", re.sub(r"/tests/(?!steps/)", f"/tests/steps/{step.name}/", script))
        gate = step.min_reward if step.min_reward is not None else 1.0
        calls.append(f"run_step {step.index} {_quote(step.name)} {gate:g}")
    write_text(target / "solution" / "solve.sh", "\n".join(solve) + "\n")
    write_text(target / "tests" / "test.sh", _TEST_SH.format(calls="\n".join(calls)))
    _stage_workdirs(task, target)
    write_text(target / "task.toml", _merged_config(task, dataset or source.parent.name))
    return target


def _unmergeable(task: HarborTask) -> str | None:
    if not task.steps:
        return "it has no [[steps]]"
    for step in task.steps:
        if step.instruction is None:
            return f"step {step.name!r} has no instruction.md"
        if not (Path(step.path) / "solution" / "solve.sh").is_file():
            return f"step {step.name!r} has no solution/solve.sh"
        if not (Path(step.tests_dir) / "test.sh").is_file():
            return f"step {step.name!r} has no tests/test.sh"
        if (Path(step.tests_dir) / "Dockerfile").is_file() and Path(step.tests_dir) != Path(task.path) / "tests":
            return f"step {step.name!r} has a verifier image of its own (tests/Dockerfile): one verifier cannot run all"
        if step.min_rewards:
            return f"step {step.name!r} gates on several keys (min_reward table)"
    if any(step.workdir for step in task.steps) and not (Path(task.path) / "environment" / "Dockerfile").is_file():
        return "its steps have workdirs and the task has no environment/Dockerfile to stage them in"
    return None


def _stage_workdirs(task: HarborTask, target: Path) -> None:
    lines = []
    for step in task.steps:
        if step.workdir is None:
            continue
        shutil.copytree(step.workdir, target / "environment" / _STAGED / step.name)
        lines.append(f"COPY {_STAGED}/{step.name}/ ./")
        if (Path(step.workdir) / "setup.sh").is_file():
            lines.append("RUN bash ./setup.sh")
    if lines:
        dockerfile = target / "environment" / "Dockerfile"
        text = dockerfile.read_text(encoding="utf-8").rstrip("\n")
        write_text(dockerfile, text + "\n# the steps' workdirs (depthlab tasks merge)\n" + "\n".join(lines) + "\n")


def _merged_config(task: HarborTask, dataset: str) -> str:
    config = {key: value for key, value in task.config.items() if key not in ("steps", "multi_step_reward_strategy")}
    agent_seconds = sum(step.agent_timeout_sec or task.agent_timeout_sec or 600.0 for step in task.steps)
    verifier_seconds = sum(step.verifier_timeout_sec or task.verifier_timeout_sec or 600.0 for step in task.steps)
    config["agent"] = {**config.get("agent", {}), "timeout_sec": float(agent_seconds)}
    config["verifier"] = {**config.get("verifier", {}), "timeout_sec": float(verifier_seconds)}
    if "task" in config and config["task"].get("name"):
        config["task"] = {**config["task"], "name": f"{config['task']['name']}{MERGED_SUFFIX}"}
    config["metadata"] = {**config.get("metadata", {}), "merged_from": f"{dataset}/{task.name}"}
    return "# The merged version of a multi-step task (depthlab tasks merge).\n" + _toml(config)


def _toml(table: dict[str, Any], prefix: str = "") -> str:
    """A TOML document of ``table`` (scalars, arrays of scalars, tables and arrays of tables)."""
    lines: list[str] = []
    nested: list[tuple[str, Any]] = []
    for key, value in table.items():
        if isinstance(value, dict) or (isinstance(value, list) and value and all(isinstance(i, dict) for i in value)):
            nested.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    text = "\n".join(lines) + ("\n" if lines else "")
    for key, value in nested:
        name = f"{prefix}{_key(key)}"
        if isinstance(value, dict):
            text += f"\n[{name}]\n" + _toml(value, f"{name}.")
        else:
            for item in value:
                text += f"\n[[{name}]]\n" + _toml(item, f"{name}.")
    return text


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value))  # a TOML date or time: written as text


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
