"""The merged version of a multi-step task: its steps delivered as one instruction, one verifier for all.

The paper's merged-segments experiment measures D of a segmented task twice: delivered segment by
segment (its ``[[steps]]``) and whole. :func:`merge_steps` writes the whole version as a plain
Harbor task beside the original, keeping what each step's tests and solution see under Harbor
0.26 (``harbor.verifier.Verifier``, ``harbor.agents.oracle``, ``harbor.trial.multi_step``):

* ``instruction.md``: the steps' instructions in order, joined by blank lines;
* ``tests/``: for step k, ``tests/depthlab-merged/step-<k>/`` holds what Harbor puts in ``/tests``
  for that step: the task's shared ``tests/`` with the step's own ``tests/`` over it. In every
  text file there, ``/tests`` (as a path: ``/tests/helpers.sh``, ``cd /tests``, ``"/tests"``) is
  pointed at that folder, so helpers, fixtures and data files are found where the step's tests
  look. ``tests/test.sh`` runs the steps' tests in order, each with the step's
  ``[steps.verifier.env]`` (over the task's ``[verifier.env]``, as Harbor merges them), stops after
  a step whose reward misses its ``min_reward`` (as Harbor stops the trial), and writes
  ``reward.json``: ``segment_<k>`` = step k's reward (the steps that ran), ``reward`` = the task's
  ``multi_step_reward_strategy`` over them (``mean``, Harbor's default, or ``final``: the last
  step that ran), the reward Harbor gives the original trial. A step whose tests write no reward
  counts 0 and stops the run;
* ``solution/``: step k's solution folder (the task's ``solution/`` when the step has none, as
  Harbor's oracle falls back) in ``solution/depthlab-merged/step-<k>/``, ``/solution`` pointed
  there likewise, and ``solve.sh`` holding the steps' scripts in order, each written out whole
  between the comments ``# ==== step <k>: <name> (<its path>) ====`` and ``# ==== end of step <k>
  ====``, so its key-step marks (``# key-step begin`` / ``# key-step end``, issue 39) are where a
  reader of the merged ``solve.sh`` looks, and the merged task's W is its steps' W plus the wrapper's
  lines (2, and 2 per step). Each runs in a subshell from the working folder, as a fresh bash would
  run it (``set +e``: the wrapper's ``set -e`` is not its; its own ``set``, ``exit``, variables and
  ``cd`` end with it), and a step that fails stops the solution, as before. A script bash would not
  run as written there (another ``#!`` line, ``#!/bin/bash`` with options, not UTF-8) or that finds
  its files through its own path (``$0``, ``BASH_SOURCE``) is called by its ``#!`` line instead, the
  step's comment saying so and where its marks are. Inline rather than a checker that follows
  called scripts: the marks, W and the top-level commands a mutation check removes are then those
  of the file the merged task's oracle runs, read the one way for every task;
* ``environment/``: the task's, with each step's ``workdir/`` copied into the image's working folder
  (and its ``setup.sh`` run) at build time, in step order: what the steps stage as they start is
  there from the start;
* ``task.toml``: the task's without ``[[steps]]``, ``[agent]`` and ``[verifier]`` timeouts the sum
  of the steps', the steps' ``artifacts`` added to the task's, ``[task].name`` suffixed ``-merged``,
  and ``[metadata].merged_from = "<dataset>/<task>"``, which :func:`depthlab.findings.merged_segments`
  pairs it by.

What one task cannot hold is refused with the reason (:class:`TaskFormatError`), never merged into a
different task: steps whose verifier needs an environment of its own, two steps putting different
files at one path of the working folder (the second would replace the first for both), a gate on
several reward keys, a step's verifier run as another user, a step's verifier variable that reads
the host's environment (``${VAR}``, resolved by Harbor when the step runs), a step with no
instruction, tests or solution. Paths built at run time (``d=/te; cd ${d}sts``) are not rewritten,
and a step's script bash parses whole in its subshell (a ``shopt -s extglob`` then extglob syntax)
may read otherwise: the merge is checked by running both oracles (the test suite runs Harbor's and the local one on
the cookbook's multi-step recipe and on hostile cases).
"""

from __future__ import annotations

import filecmp
import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

from depthlab._atomic import write_text
from depthlab.io.harbor_task import HarborTask, TaskFormatError, TaskStep, read_task, write_config

#: The name suffix of a merged task (folder and ``[task].name``).
MERGED_SUFFIX = "-merged"
#: The folder of the merged task's ``tests/`` and ``solution/`` that holds each step's files.
MERGED_FOLDER = "depthlab-merged"
_STAGED = "depthlab-step-workdirs"  # inside environment/: the steps' workdirs, copied in at build time
_HEADER = "The merged version of a multi-step task (depthlab tasks merge)."
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TEXT_LIMIT = 8 << 20  # files larger than this are data, never rewritten


def _rooted(root: str) -> re.Pattern[str]:
    """``root`` (``/tests``) where it starts a path: not inside another path or word, ended by a path's end."""
    end = r"""(?=$|[/\s"'`;:,)\]|&<>}])"""  # a path's end: a separator, a blank, a quote, shell punctuation
    return re.compile(r"(?<![\w.$/-])" + re.escape(root) + end, re.MULTILINE)


_TESTS, _SOLUTION = _rooted("/tests"), _rooted("/solution")

_TEST_SH = r"""#!/bin/bash
# The merged task's verifier (written by depthlab tasks merge): every step's tests in order, each in
# the folder holding what Harbor puts in /tests for that step, stopping at a step's missed gate.
mkdir -p /logs/verifier
workdir=$PWD
json=""
sum=0
ran=0
last=0
run_step() {{  # $1 = k, $2 = the step's min_reward ('' for none); then the step's verifier env as NAME=VALUE
  k=$1
  gate=$2
  shift 2
  rm -f /logs/verifier/reward.txt /logs/verifier/reward.json
  script="/tests/{folder}/step-$k/test.sh"
  # run by its #! line (as Harbor does after chmod +x, which would change /tests here), else by bash
  first=$(head -n 1 "$script")
  case "$first" in '#!'*) read -r -a run <<< "${{first#??}}"; run+=("$script") ;; *) run=(bash "$script") ;; esac
  (cd "$workdir" && env "$@" "${{run[@]}}") > "/logs/verifier/step-$k-stdout.txt" 2>&1
  echo "== step $k: /logs/verifier/step-$k-stdout.txt"
  tail -n 20 "/logs/verifier/step-$k-stdout.txt"
  if [ -f /logs/verifier/reward.txt ]; then
    r=$(tr -d '[:space:]' < /logs/verifier/reward.txt)
  else
    r=$(sed -n 's/.*"reward"[^0-9.-]*\(-\{{0,1\}}[0-9.eE+-]*\).*/\1/p' /logs/verifier/reward.json 2>/dev/null |
      head -n 1)
  fi
  missing=0
  [ -n "$r" ] || {{ r=0; missing=1; }}
  json="$json\"segment_$k\": $r, "
  sum=$(awk -v s="$sum" -v r="$r" 'BEGIN {{ print s + r }}')
  ran=$((ran + 1))
  last=$r
  [ "$missing" = 0 ] || return 1
  [ -z "$gate" ] || awk -v r="$r" -v m="$gate" 'BEGIN {{ exit !(r + 0 >= m + 0) }}'
}}
{calls}
rm -f /logs/verifier/reward.txt
if [ "{strategy}" = final ]; then reward=$last; else reward=$(awk -v s="$sum" -v n="$ran" 'BEGIN {{ print s / n }}'); fi
printf '{{%s"reward": %s}}\n' "$json" "$reward" > /logs/verifier/reward.json
"""

_SOLVE_HEAD = """#!/bin/bash
# The merged task's reference solution (depthlab tasks merge): every step's, in order, from the working folder.
# Each step's solve.sh is written out below between its step's comments (its key-step marks kept), run in a
# subshell as a fresh bash would run it; one that is not bash, or reads its own path, is called instead.
set -e
depthlab_workdir=$PWD
"""
# a step's script called by its #! line (Harbor's oracle runs it after chmod +x), else by bash
_RUN_FUNCTION = """depthlab_run() {
  local first
  first=$(head -n 1 "$1")
  case "$first" in '#!'*) read -r -a run <<< "${first#??}"; run+=("$1") ;; *) run=(bash "$1") ;; esac
  (cd "$depthlab_workdir" && "${run[@]}")
}
"""
# a script bash runs as written here: #!/bin/bash, #!/usr/bin/env bash (no options) or no #! line
_BASH_SHEBANG = re.compile(r"#!\s*(/usr)?/bin/bash\s*|#!\s*/usr/bin/env\s+bash\s*")
# a script that finds its own files through its path: inlined, $0 would be the merged solve.sh
_OWN_PATH = re.compile(r"\$\{?0\b|\bBASH_SOURCE\b")


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
        When the task cannot be held by one task (module docstring), with the reason.

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
    task = read_task(task_dir, decode_errors="strict")
    problem = _unmergeable(task)
    if problem:
        raise TaskFormatError(task.config_path, f"cannot merge its steps: {problem}")
    source = Path(task.path)
    target = Path(out_dir) / f"{source.name}{MERGED_SUFFIX}"
    if target.resolve() == source.resolve() or source.resolve() in target.resolve().parents:
        raise TaskFormatError(task.config_path, "cannot merge its steps into the task's own folder")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name in ("steps", "task.toml", "instruction.md", "solution", "tests"):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, target / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, target / entry.name, follow_symlinks=False)
    instructions = [(step.instruction or "").strip() for step in task.steps]
    write_text(target / "instruction.md", "\n\n".join(instructions) + "\n")
    calls = []
    for step in task.steps:
        tests = target / "tests" / MERGED_FOLDER / f"step-{step.index}"
        shared = source / "tests"
        if shared.is_dir():
            shutil.copytree(shared, tests, symlinks=True)
        if (Path(step.path) / "tests").is_dir():
            shutil.copytree(Path(step.path) / "tests", tests, symlinks=True, dirs_exist_ok=True)
        _point(tests, _TESTS, f"/tests/{MERGED_FOLDER}/step-{step.index}")
        solution = target / "solution" / MERGED_FOLDER / f"step-{step.index}"
        shutil.copytree(_solution_dir(task, step), solution, symlinks=True)
        _point(solution, _SOLUTION, f"/solution/{MERGED_FOLDER}/step-{step.index}")
        gate = "" if step.min_reward is None else f"{step.min_reward:g}"
        env = " ".join(shlex.quote(f"{name}={value}") for name, value in _step_env(task, step).items())
        calls.append(f"run_step {step.index} {shlex.quote(gate)} {env}".rstrip())
    strategy = task.reward_strategy or "mean"
    write_text(
        target / "tests" / "test.sh",
        _TEST_SH.format(folder=MERGED_FOLDER, strategy=strategy, calls=_chain(calls)),
    )
    write_text(target / "solution" / "solve.sh", _solve_sh(task, target / "solution" / MERGED_FOLDER))
    _stage_workdirs(task, target)
    write_config(target / "task.toml", _merged_config(task, dataset or source.parent.name), header=_HEADER)
    return target


def _solve_sh(task: HarborTask, folders: Path) -> str:
    """The merged ``solve.sh``: each step's script written out in order (module docstring), from its pointed copy."""
    parts = [_SOLVE_HEAD, ""]
    for step in task.steps:
        copy = f"/solution/{MERGED_FOLDER}/step-{step.index}/solve.sh"
        origin = f"{_solution_dir(task, step).relative_to(task.path).as_posix()}/solve.sh"
        body = _bash_body((folders / f"step-{step.index}" / "solve.sh").read_bytes())
        if body is None:
            head = f"{origin}, called: not bash, or it reads its own path; its key-step marks are in {copy}"
            run, parts[1] = f"depthlab_run {copy}\n", _RUN_FUNCTION
        else:
            head, run = origin, f'(set +e; cd "$depthlab_workdir" || exit 1\n{body})\n'
        parts.append(
            f"\n# ==== step {step.index}: {step.name} ({head}) ====\n{run}# ==== end of step {step.index} ====\n"
        )
    return "".join(parts)


def _bash_body(script: bytes) -> str | None:
    """The lines of a step's ``solve.sh`` after its ``#!`` line, when bash runs them as written here, else None.

    Examples
    --------
    >>> _bash_body(b"#!/bin/bash\\nset -e\\necho a")
    'set -e\\necho a\\n'
    >>> _bash_body(b"#!/usr/bin/env python3\\nprint(1)\\n") is None, _bash_body(b'cp "$(dirname $0)/f" .\\n') is None
    (True, True)
    """
    try:
        text = script.decode("utf-8")
    except UnicodeDecodeError:
        return None
    first, _, body = text.partition("\n") if text.startswith("#!") else ("", "", text)
    if (first and not _BASH_SHEBANG.fullmatch(first)) or _OWN_PATH.search(body):
        return None
    return body if body.endswith("\n") or not body else body + "\n"


def _chain(calls: list[str]) -> str:
    """The steps' calls, each run only when the step before it met its gate (Harbor stops the trial there)."""
    return " &&\n".join(calls) + " ||\n  true"


def _unmergeable(task: HarborTask) -> str | None:
    if not task.steps:
        return "it has no [[steps]]"
    if task.verifier_mode == "separate":
        return "its verifier runs in an environment of its own: one merged verifier cannot stand for its steps'"
    for step in task.steps:
        where = f"step {step.name!r}"
        config = _step_config(task, step)
        if step.instruction is None:
            return f"{where} has no instruction.md"
        solution = _solution_dir(task, step)
        if not (solution / "solve.sh").is_file():
            return f"{where} has no solution/solve.sh (nor has the task)"
        if not (Path(step.tests_dir) / "test.sh").is_file() and not (Path(task.path) / "tests" / "test.sh").is_file():
            return f"{where} has no tests/test.sh (nor has the task)"
        if step.verifier_mode == "separate" or (Path(step.path) / "tests" / "Dockerfile").is_file():
            return f"{where} has a verifier environment of its own (tests/Dockerfile): one verifier cannot run all"
        if step.min_rewards:
            return f"{where} gates on several keys (min_reward table)"
        verifier = config.get("verifier")
        if isinstance(verifier, dict) and verifier.get("user") is not None:
            return f"{where} runs its tests as the user {verifier['user']!r}: one verifier runs as one user"
        for name, value in _step_env(task, step).items():
            if not _ENV_NAME.fullmatch(name):
                return f"{where}'s verifier env has a name a shell cannot set: {name!r}"
            if "${" in str(value):
                return (
                    f"{where}'s verifier env {name} reads the host's environment ({value!r}), which Harbor "
                    "resolves when the step runs"
                )
    if any(step.workdir for step in task.steps) and not (Path(task.path) / "environment" / "Dockerfile").is_file():
        return "its steps have workdirs and the task has no environment/Dockerfile to stage them in"
    return _workdir_clash(task)


def _workdir_clash(task: HarborTask) -> str | None:
    """Two steps that put different files at one path of the working folder (one would replace the other)."""
    owners: dict[str, TaskStep] = {}
    for step in task.steps:
        if step.workdir is None:
            continue
        root = Path(step.workdir)
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root).as_posix()
            if path.is_dir() or relative == "setup.sh":  # each setup.sh runs as its step's files arrive
                continue
            first = owners.get(relative)
            if first is not None and not filecmp.cmp(Path(first.workdir or "") / relative, path, shallow=False):
                return (
                    f"steps {first.name!r} and {step.name!r} both put {relative!r} in the working folder, with "
                    "different contents: the merged task's agent would see only the second"
                )
            owners.setdefault(relative, step)
    return None


def _step_config(task: HarborTask, step: TaskStep) -> dict[str, Any]:
    declared = task.config.get("steps") or []
    item = declared[step.index - 1] if step.index - 1 < len(declared) else {}
    return item if isinstance(item, dict) else {}


def _step_env(task: HarborTask, step: TaskStep) -> dict[str, Any]:
    """The step's ``[steps.verifier.env]`` (the task's ``[verifier.env]`` is in the merged task.toml, under it)."""
    verifier = _step_config(task, step).get("verifier")
    env = verifier.get("env") if isinstance(verifier, dict) else None
    return dict(env) if isinstance(env, dict) else {}


def _solution_dir(task: HarborTask, step: TaskStep) -> Path:
    """The step's solution folder, else the task's (Harbor's oracle falls back to it)."""
    own = Path(step.path) / "solution"
    return own if own.is_dir() else Path(task.path) / "solution"


def _point(folder: Path, root: re.Pattern[str], there: str) -> None:
    """Point ``root`` paths in every text file under ``folder`` at ``there`` (binary files are left as they are)."""
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.is_file() or path.stat().st_size > _TEXT_LIMIT:
            continue
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
        pointed = root.sub(there, text)
        if pointed != text:
            mode = path.stat().st_mode
            write_text(path, pointed)
            path.chmod(mode)


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


def _merged_config(task: HarborTask, dataset: str) -> dict[str, Any]:
    config = {key: value for key, value in task.config.items() if key not in ("steps", "multi_step_reward_strategy")}
    agent_seconds = sum(step.agent_timeout_sec or task.agent_timeout_sec or 600.0 for step in task.steps)
    verifier_seconds = sum(step.verifier_timeout_sec or task.verifier_timeout_sec or 600.0 for step in task.steps)
    config["agent"] = {**config.get("agent", {}), "timeout_sec": float(agent_seconds)}
    config["verifier"] = {**config.get("verifier", {}), "timeout_sec": float(verifier_seconds)}
    artifacts = list(config.get("artifacts") or [])
    for step in task.steps:
        for item in _step_config(task, step).get("artifacts") or []:
            if item not in artifacts:
                artifacts.append(item)
    if artifacts:
        config["artifacts"] = artifacts
    if "task" in config and config["task"].get("name"):
        config["task"] = {**config["task"], "name": f"{config['task']['name']}{MERGED_SUFFIX}"}
    config["metadata"] = {**config.get("metadata", {}), "merged_from": f"{dataset}/{task.name}"}
    return config
