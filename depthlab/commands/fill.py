"""``depthlab fill PLAN_OR_PATH... --tasks DIR --models A,B``: run a plan's missing cells, resumably."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from depthlab.commands.run import (
    add_agent_arguments,
    check_agent_arguments,
    execution_options,
    report_summary,
    reported_errors,
    sigterm_as_interrupt,
    terminus_factory,
)

HELP = "Run the missing cells of a plan, resumably, with bounded concurrency."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PLAN_OR_PATH",
        help="a plan (.csv/.parquet from `depthlab plan`) or run logs to compute the plan from",
    )
    parser.add_argument("--tasks", required=True, help="folder of Harbor task folders")
    parser.add_argument("--models", required=True, help="comma-separated model names")
    parser.add_argument("--caps", help="comma-separated ladder caps (default: depthlab.CAPS)")
    parser.add_argument("--attempts", type=int, default=1, help="attempts per cell when computing the plan")
    parser.add_argument("--jobs-dir", default="jobs", help="where the job folders go and are resumed from")
    parser.add_argument(
        "--no-preflight",
        action="store_true",
        help="skip the oracle preflight (each task's reference solution, once, before any model call; cached)",
    )
    add_agent_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from depthlab.runner import check_plan, fill, plan_from_logs, read_plan

    models = [model.strip() for model in args.models.split(",") if model.strip()]
    if not models:
        print("depthlab fill: --models must name at least one model", file=sys.stderr)
        return 2
    try:
        caps = None if not args.caps else [int(cap) for cap in args.caps.split(",")]
    except ValueError:
        print(f"depthlab fill: --caps must be comma-separated integers, got {args.caps!r}", file=sys.stderr)
        return 2
    if (problem := check_agent_arguments(args, "fill")) is not None:
        print(problem, file=sys.stderr)
        return 2
    plan_files = [Path(path) for path in args.paths if Path(path).suffix.lower() in {".csv", ".parquet"}]
    if plan_files and len(plan_files) != len(args.paths):
        print("depthlab fill: give either plan files or run-log paths, not both", file=sys.stderr)
        return 2
    with sigterm_as_interrupt(), reported_errors("fill") as failed:
        if plan_files:
            import polars as pl

            plan = check_plan(pl.concat([read_plan(path) for path in plan_files], how="diagonal_relaxed"))
            plan = plan.filter(pl.col("model").is_in(models))
        else:
            plan = plan_from_logs(
                args.paths, args.tasks, models=models, caps=caps, attempts=args.attempts, exclude=args.jobs_dir
            )
        summary = fill(
            plan,
            tasks_dir=args.tasks,
            jobs_dir=args.jobs_dir,
            agent_factory=terminus_factory(args),
            run_preflight=not args.no_preflight,
            **execution_options(args),
        )
    return 1 if failed else report_summary(summary)
