"""The local engine's oracle preflight: :func:`depthlab.runner.preflight.preflight`, once, before round 1.

The runner's preflight runs each task's ``solution/solve.sh`` once under the settings the models
get (:class:`depthlab.runner.profiles.RunSettings`), caches the result per task checksum and
settings, and reports the tasks that cannot pass. It writes into ``<jobs_dir>/.preflight``, the
folder and cache ``depthlab fill`` uses, so the rounds' fills (called with
``run_preflight=False``) and a later ``depthlab fill`` on the same jobs reuse it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from depthlab.engines.rounds import Echo


def local_oracle_failures(
    tasks: pl.DataFrame, jobs_dir: Path, docker_client: Any, echo: Echo, fill_options: dict[str, Any]
) -> pl.DataFrame:
    """The tasks whose reference solution fails on this machine: task, reason, output."""
    from depthlab.runner.preflight import preflight
    from depthlab.runner.scheduler import PREFLIGHT_FOLDER

    paths = [str(_task_dir(source)) for source in tasks["source"].to_list()]
    options = {key: value for key, value in fill_options.items() if key in {"limits", "settings", "concurrency"}}
    report = preflight(paths, jobs_dir=jobs_dir / PREFLIGHT_FOLDER, docker_client=docker_client, **options)
    echo(report.summary())
    rows = [{"task": row.task, "reason": row.reason, "output": row.verifier_tail} for row in report.failed]
    return pl.DataFrame(rows, schema={"task": pl.String, "reason": pl.String, "output": pl.String})


def _task_dir(source: str) -> Path:
    path = Path(str(source))
    return path.parent if path.name in {"task.toml", "task.yaml"} else path
