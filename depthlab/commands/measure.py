"""``depthlab measure TASKS... --models A,B --engine {harbor,local}``: one command measures D."""

from __future__ import annotations

import argparse
import sys

from depthlab._tables import output_table

HELP = "Measure every task's depth D: oracle preflight, then adaptive capped rounds (Harbor or local)."

_EPILOG = """\
Each round plans the cheapest next runs from every trial in --jobs-dir (depthlab plan --mode
adaptive), runs them, and plans again, until every task's D is pinned or the task is unsolved
(or --max-runs / --max-cost would be passed). Run the same command again after an interruption
(Ctrl-C, kill -9, a lost machine): it continues from the jobs folder, with no trial lost or run twice.

  --engine harbor   Harbor runs each round (harbor run --config, one job per cap); --harbor-env
                    picks its environment: docker (local), daytona, modal, e2b, runloop, gke, ...
  --engine local    depthlab's own runner (depthlab fill) runs each round in Docker here.

The API key is read from the environment (--api-key-env, default OPENAI_API_KEY), never written.
The jobs stay in --jobs-dir: `harbor view JOBS_DIR` and `depthlab depth JOBS_DIR` read them.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from depthlab.commands.depth import add_ladder_arguments
    from depthlab.commands.plan import add_attempts_arguments

    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("tasks", nargs="+", metavar="TASKS", help="task folders, or folders of them")
    add_ladder_arguments(parser, models_required=True)
    parser.add_argument("--engine", choices=("harbor", "local"), default="harbor", help="default: harbor")
    parser.add_argument("--base-url", default=None, metavar="URL", help="the model endpoint (OpenAI-compatible)")
    parser.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="VAR",
        help="environment variable holding the API key (default OPENAI_API_KEY; never written to disk)",
    )
    parser.add_argument("--jobs-dir", default="jobs", metavar="DIR", help="where the jobs go and resume from")
    parser.add_argument(
        "-o", "--output", required=True, type=output_table, metavar="FILE", help="the depth table (.csv or .parquet)"
    )
    parser.add_argument("-n", "--concurrency", type=int, default=2, help="trials at once (default 2)")
    add_attempts_arguments(parser)
    parser.add_argument("--max-runs", type=int, default=None, metavar="N", help="stop before passing N runs")
    parser.add_argument("--max-cost", type=float, default=None, metavar="USD", help="stop before passing this cost")
    parser.add_argument(
        "--harbor-env", default="docker", metavar="ENV", help="Harbor environment type (default docker)"
    )
    parser.add_argument("--harbor", default=None, metavar="CMD", help="how to call Harbor (default: harbor on PATH)")
    parser.add_argument(
        "--profile",
        choices=("harbor", "strict"),
        default="harbor",
        help="--engine local's security profile (docs/runner.md): 'harbor' (default) runs a task as Harbor does, "
        "'strict' drops every capability and has no network",
    )
    parser.add_argument(
        "--price-in", type=float, metavar="USD", help="--engine local: USD per million prompt tokens (cost accounting)"
    )
    parser.add_argument(
        "--price-out", type=float, metavar="USD", help="--engine local: USD per million completion tokens"
    )
    parser.add_argument("--no-preflight", action="store_true", help="skip the oracle preflight")
    parser.add_argument("--dataset", default=None, help="tag every task with this dataset name")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from depthlab._tables import write_table
    from depthlab.commands.run import sigterm_as_interrupt
    from depthlab.engines import Engine, EngineError, HarborEngine, LocalEngine, measure
    from depthlab.io import read_tasks

    for option, least in (("concurrency", 1), ("attempts", 1), ("max_attempts", 1), ("max_runs", 1)):
        value = getattr(args, option)
        if isinstance(value, int) and value < least:  # --attempts may be "auto"
            print(
                f"depthlab measure: --{option.replace('_', '-')} must be at least {least}, got {value}", file=sys.stderr
            )
            return 2
    if args.max_cost is not None and not args.max_cost >= 0:
        print(f"depthlab measure: --max-cost must be a cost >= 0, got {args.max_cost}", file=sys.stderr)
        return 2
    try:
        load = read_tasks(args.tasks, dataset=args.dataset)
    except (ValueError, OSError) as exc:
        print(f"depthlab measure: {exc}", file=sys.stderr)
        return 1
    for item in load.rejected:
        print(f"depthlab measure: task rejected: {item}", file=sys.stderr)
    tasks = load.tasks
    if tasks.height == 0:
        found = f"{len(load.rejected)} task folders rejected" if load.rejected else "no task folders found"
        print(f"depthlab measure: {found} under {', '.join(args.tasks)}", file=sys.stderr)
        return 1
    duplicated = tasks.group_by("task").len().filter(tasks.group_by("task").len()["len"] > 1)["task"].to_list()
    if duplicated:
        print(f"depthlab measure: task names must be unique across TASKS; repeated: {duplicated}", file=sys.stderr)
        return 1
    if args.engine == "harbor" and args.profile != "harbor":
        print("depthlab measure: --profile is --engine local's (Harbor's environment decides)", file=sys.stderr)
        return 2
    if args.engine == "harbor":
        engine: Engine = HarborEngine(
            args.jobs_dir,
            base_url=args.base_url,
            harbor=args.harbor,
            environment=args.harbor_env,
            concurrency=args.concurrency,
            api_key_env=args.api_key_env,
        )
    else:
        if not args.base_url:
            print("depthlab measure: --engine local needs --base-url (the model endpoint)", file=sys.stderr)
            return 2
        from depthlab.runner.profiles import RunSettings

        engine = LocalEngine(
            args.jobs_dir,
            base_url=args.base_url,
            api_key_env=args.api_key_env,
            concurrency=args.concurrency,
            fill_options={"settings": RunSettings(profile=args.profile)},
            prices=(args.price_in, args.price_out),
        )
    try:
        with sigterm_as_interrupt():
            result = measure(
                engine,
                tasks,
                models=args.models,
                caps=args.caps,
                attempts=args.attempts,
                pass_rule=args.pass_rule,
                max_attempts=args.max_attempts,
                max_runs=args.max_runs,
                max_cost=args.max_cost,
                preflight=not args.no_preflight,
                progress=not args.no_progress,
            )
    except (EngineError, OSError, RuntimeError, ValueError) as exc:
        print(f"depthlab measure: {exc}", file=sys.stderr)
        return 1
    print(result.render(), file=sys.stderr)
    if result.depth.height:
        write_table(result.depth, args.output)
        print(f"wrote the depth table of {result.depth.height} task(s) to {args.output}", file=sys.stderr)
    if result.excluded.height and result.depth.height == 0:
        return 1  # every task failed its oracle
    return 0 if result.complete else 1
