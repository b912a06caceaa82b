"""Helpers of the tests that run the real Harbor: multi-step tasks FROM the Debian userland image,
and ``harbor run`` of a job config (the oracle, or terminus-2 against a scripted model on loopback).

A multi-step task here (Harbor's ``[[steps]]`` format, written by depthlab for these tests, shaped
after what ``harbor tasks init --steps N`` scaffolds): step ``i`` asks for ``/app/s<i>.txt`` holding
``ok-<i>``; its verifier writes reward 1 when the file holds exactly that, else 0; every step has
``min_reward = 1.0``, so a failed step stops the trial (Harbor's gate). Step ``i``'s reference
solution has ``i`` working lines, so the task's W is ``1 + 2 + ... + n``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from depthlab.io import harbor_models, harbor_records, harbor_writer
from depthlab.io.harbor_records import AgentConfigRecord

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engines"))
from engines_helpers import _text, reply  # the scripted server's reply format, written once

#: Harbor without its phone-home (as tests/conftest.py runs it).
OFFLINE = {"HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_COLOR": "1"}

_STEP_TEST = """#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /app/s{index}.txt 2>/dev/null)" = "ok-{index}" ]; then echo 1 > /logs/verifier/reward.txt
else echo 0 > /logs/verifier/reward.txt; fi
"""


def dockerfile(image: str) -> str:
    """An environment FROM the userland image (Harbor keeps PID 1 asleep; SIGKILL ends it at once)."""
    return f"FROM {image}\nRUN mkdir -p /app\nWORKDIR /app\nSTOPSIGNAL SIGKILL\n"


def write_multistep_task(
    root: Path,
    name: str,
    image: str,
    *,
    n_steps: int = 3,
    wrong: Sequence[int] = (),
    strategy: str | None = "mean",
    min_reward: float | None = 1.0,
) -> Path:
    """A ``[[steps]]`` task (schema 1.4) whose reference solution of each step in ``wrong`` writes the wrong text."""
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(dockerfile(image))
    (task / "instruction.md").write_text("Complete the steps, one at a time.\n")
    lines = ['schema_version = "1.4"']
    if strategy is not None:
        lines.append(f'multi_step_reward_strategy = "{strategy}"')
    lines += ["", "[task]", f'name = "depthlab-tests/{name}"', ""]
    for index in range(1, n_steps + 1):
        lines += ["[[steps]]", f'name = "step-{index}"']
        if min_reward is not None:
            lines.append(f"min_reward = {min_reward}")
        lines += ["[steps.agent]", "timeout_sec = 120.0", "[steps.verifier]", "timeout_sec = 60.0", ""]
        step = task / "steps" / f"step-{index}"
        (step / "tests").mkdir(parents=True)
        (step / "solution").mkdir()
        (step / "instruction.md").write_text(f"Write the text ok-{index} to /app/s{index}.txt (no newline).\n")
        (step / "tests" / "test.sh").write_text(_STEP_TEST.format(index=index))
        text = f"ko-{index}" if index in wrong else f"ok-{index}"
        # i working lines: step 1 the printf alone; step i >= 2 a cd, i - 2 no-ops (":") and the printf
        body = ([] if index == 1 else ["cd /app"] + [":"] * (index - 2)) + [f"printf '{text}' > /app/s{index}.txt"]
        (step / "solution" / "solve.sh").write_text("#!/bin/bash\n# the reference solution\n" + "\n".join(body) + "\n")
    lines += [
        "[metadata]",
        'difficulty = "easy"',
        "",
        "[verifier]",
        'environment_mode = "shared"',
        "timeout_sec = 60.0",
        "",
        "[agent]",
        "timeout_sec = 120.0",
        "",
        "[environment]",
        'network_mode = "public"',
        "cpus = 1",
        "memory_mb = 512",
    ]
    (task / "task.toml").write_text("\n".join(lines) + "\n")
    return task


def run_job(
    harbor: str,
    jobs_dir: Path,
    job_name: str,
    tasks_dir: Path,
    agent: AgentConfigRecord,
    *,
    task_names: Sequence[str] | None = None,
    extra_instructions: Sequence[str] = (),
    env: dict[str, str] | None = None,
    timeout: float = 900,
) -> Path:
    """``harbor run --config`` of one job (one agent, the tasks of ``tasks_dir``); the job folder."""
    config = harbor_writer.job_config(
        job_name,
        str(jobs_dir),
        [agent],
        datasets=[harbor_writer.dataset_config(str(tasks_dir), task_names)],
        n_concurrent_trials=2,
        extra_instructions=extra_instructions,
    )
    jobs_dir.mkdir(parents=True, exist_ok=True)
    path = jobs_dir / f"{job_name}.json"
    harbor_writer.write_json(path, config)
    done = subprocess.run(
        [harbor, "run", "--config", str(path), "--yes"],
        env={**os.environ, **OFFLINE, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    job = jobs_dir / job_name
    if not any(job.glob("*/result.json")):
        raise AssertionError(
            f"harbor run wrote no trial ({done.returncode}): {done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return job


def tasks_init(harbor_python: Path, tasks_dir: Path, name: str, *options: str) -> Path:
    """``harbor tasks init <name> -p <tasks_dir> [options]``: the task Harbor itself scaffolds; its folder."""
    done = subprocess.run(
        [str(harbor_python.parent / "harbor"), "tasks", "init", name, "-p", str(tasks_dir), *options],
        env={**os.environ, **OFFLINE},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return tasks_dir / name.rsplit("/", 1)[-1]


def write_single_task(root: Path, name: str, image: str) -> Path:
    """A single-step task (schema 1.4) asking for ``/app/s1.txt`` holding ``ok-1`` (W = 1)."""
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(dockerfile(image))
    (task / "instruction.md").write_text("Write the text ok-1 to /app/s1.txt (no newline).\n")
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text(_STEP_TEST.format(index=1))
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\nprintf 'ok-1' > /app/s1.txt\n")
    (task / "task.toml").write_text(
        f'schema_version = "1.4"\n\n[task]\nname = "depthlab-tests/{name}"\n\n'
        '[verifier]\nenvironment_mode = "shared"\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 120.0\n\n'
        '[environment]\nnetwork_mode = "public"\ncpus = 1\nmemory_mb = 512\n'
    )
    return task


_TARGET = re.compile(r"Write the text (ok-\d+) to (/app/s\d+\.txt)")


def writing_policy(messages: list[dict[str, Any]], model: str) -> str:
    """A scripted terminus-style model: the first turn writes what the (step's) instruction asks and
    marks the task complete; the second turn confirms (terminus-2 asks once more): two turns per step."""
    texts = [_text(message) for message in messages if message.get("role") != "assistant"]
    if texts and "Are you sure you want to mark the task as complete" in texts[-1]:
        return reply(complete=True)
    found = [match for text in texts for match in _TARGET.findall(text)]
    if not found:
        return reply("ls /app\n", complete=True)
    text, path = found[-1]
    return reply(f"printf '{text}' > {path}\n", complete=True)


def decode_harbor_files(root: Path, *, as_records: bool = False) -> dict[str, int]:
    """Decode every Harbor file under ``root`` with depthlab's model (strictly typed); the count of each kind.

    A trial's result.json must decode as :class:`~depthlab.io.harbor_models.TrialResult` in the one
    typed pass, a job's as :class:`~depthlab.io.harbor_models.JobResult`, config.json and lock.json as
    their structs (a job's too), task.toml as :class:`~depthlab.io.harbor_models.TaskConfig`.
    ``as_records`` (files the pinned Harbor wrote): trial and job configs and results also decode as the
    records depthlab writes (:mod:`depthlab.io.harbor_records`), the full shape, and encode back to the
    same object.
    """
    counts = {"trial_result": 0, "job_result": 0, "trial_config": 0, "job_config": 0, "lock": 0, "job_lock": 0}
    counts["task"] = 0

    def record(data: bytes, type_: type) -> None:
        if as_records:
            decoded = msgspec.json.decode(data, type=type_)
            written = msgspec.json.decode(harbor_writer.encode(decoded))
            original = json.loads(data)
            if type_ is harbor_records.JobResultRecord:
                original.pop("trial_results", None)  # (Harbor's running job lists its trials; depthlab's does not)
            assert written == original, (type_.__name__, root)

    for path in sorted(root.rglob("*")):
        job_level = any(path.parent.glob("*/result.json"))
        if path.name == "result.json":
            data = path.read_bytes()
            if (path.parent / "config.json").is_file() and job_level:
                msgspec.json.decode(data, type=harbor_models.JobResult)
                record(data, harbor_records.JobResultRecord)
                counts["job_result"] += 1
            elif "trial_name" in json.loads(data):
                result = msgspec.json.decode(data, type=harbor_models.TrialResult)
                if result.multi_step():
                    harbor_models.decode_steps(result.step_results)
                record(data, harbor_records.TrialResultRecord)
                counts["trial_result"] += 1
        elif path.name == "config.json" and (path.parent / "result.json").is_file():
            data = path.read_bytes()
            if job_level:
                msgspec.json.decode(data, type=harbor_models.JobConfig)
                record(data, harbor_records.JobConfigRecord)
                counts["job_config"] += 1
            elif "trial_name" in json.loads(data):
                msgspec.json.decode(data, type=harbor_models.TrialConfig)
                record(data, harbor_records.TrialConfigRecord)
                counts["trial_config"] += 1
        elif path.name == "lock.json":
            if job_level:
                msgspec.json.decode(path.read_bytes(), type=harbor_models.JobLock)
                counts["job_lock"] += 1
            else:
                msgspec.json.decode(path.read_bytes(), type=harbor_models.TrialLock)
                counts["lock"] += 1
        elif path.name == "task.toml":
            harbor_models.TaskConfig.from_toml_dict(tomllib.loads(path.read_text()), str(path))
            counts["task"] += 1
    return counts
