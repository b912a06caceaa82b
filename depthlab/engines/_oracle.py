"""The local engine's oracle preflight, through :func:`depthlab.runner.preflight.preflight`.

The runner's preflight runs each task's ``solution/solve.sh`` once under the settings the models
get, caches the result per task checksum and settings, and reports the tasks that cannot pass.
Where that module is not there yet (a runner without it), the same check is made with
:func:`depthlab.runner.run_tasks` and the runner's :class:`~depthlab.runner.OracleAgent`, into
one job per task set, ``measure-oracle__<sum>``, reused while the tasks are unchanged.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl

from depthlab.engines.rounds import Echo


def local_oracle_failures(
    tasks: pl.DataFrame, jobs_dir: Path, docker_client: Any, echo: Echo, fill_options: dict[str, Any]
) -> pl.DataFrame:
    """The tasks whose reference solution fails on this machine: task, reason, output."""
    paths = [str(_task_dir(source)) for source in tasks["source"].to_list()]
    try:
        from depthlab.runner.preflight import preflight
    except ImportError:
        return _by_run_tasks(tasks, paths, jobs_dir, docker_client, echo, fill_options)
    options = {key: value for key, value in fill_options.items() if key in {"limits", "settings"}}
    report = preflight(paths, jobs_dir=jobs_dir, docker_client=docker_client, **options)
    echo(report.summary())
    rows = [{"task": row.task, "reason": row.reason, "output": row.verifier_tail} for row in report.failed]
    return pl.DataFrame(rows, schema={"task": pl.String, "reason": pl.String, "output": pl.String})


def _by_run_tasks(
    tasks: pl.DataFrame,
    paths: list[str],
    jobs_dir: Path,
    docker_client: Any,
    echo: Echo,
    fill_options: dict[str, Any],
) -> pl.DataFrame:
    from depthlab.engines.harbor import oracle_failures
    from depthlab.runner import OracleAgent, run_tasks

    pairs = sorted(zip(tasks["task"].to_list(), tasks["checksum"].fill_null("").to_list(), strict=True))
    name = "measure-oracle__" + hashlib.sha256(json.dumps(pairs).encode()).hexdigest()[:12]
    job = jobs_dir / name
    if not (job / "result.json").is_file() or len(list(job.glob("*/result.json"))) < len(paths):
        if job.exists():
            import shutil

            shutil.rmtree(job)  # an interrupted preflight: run it again whole (it is one trial per task)
        echo(f"oracle preflight: the reference solution of {len(paths)} task(s) ({name})")
        options = {key: value for key, value in fill_options.items() if key in {"limits", "agent_timeout_sec"}}
        run_tasks(paths, OracleAgent(), jobs_dir=jobs_dir, job_name=name, docker_client=docker_client, **options)
    return oracle_failures(job, [Path(path).name for path in paths])


def _task_dir(source: str) -> Path:
    path = Path(str(source))
    return path.parent if path.name in {"task.toml", "task.yaml"} else path
