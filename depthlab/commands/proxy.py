"""``depthlab proxy PATH... -o FILE``: uncapped run logs to the trajectory depth proxy, per task or per trial."""

from __future__ import annotations

import argparse
import sys
import warnings

HELP = "Read the trajectory depth proxy from uncapped runs' trajectories (-o FILE)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from depthlab.commands.depth import add_leaky_steps_argument

    parser.description = (
        "Read the trajectory depth proxy: per trial, the longest chain of turns whose commands used an "
        "identifier only an earlier output revealed; per task, the lower median over passing uncapped trials. "
        "The rule is documented in depthlab.measures.proxy."
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="Harbor jobs/job/trial dirs, TB1 runs")
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="output table (.csv or .parquet)")
    parser.add_argument("--per", choices=["task", "trial"], default="task", help="one row per task (default) or trial")
    parser.add_argument("--messages", action="store_true", help="the variant that also reads the agent's messages")
    parser.add_argument("--dataset", default=None, help="tag every trial with this dataset name")
    parser.add_argument("--status-rule", choices=["leaderboard", "all"], default="leaderboard")
    add_leaky_steps_argument(parser)


def run(args: argparse.Namespace) -> int:
    from depthlab._tables import write_table
    from depthlab.commands.depth import load_trials_for
    from depthlab.io import RejectedFilesWarning
    from depthlab.measures import depth_proxy

    trials = load_trials_for(args, "proxy")
    if trials is None:
        return 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RejectedFilesWarning)
        table = depth_proxy(trials, per=args.per, messages=args.messages)
    for warning in caught:
        print(f"depthlab proxy: {warning.message}", file=sys.stderr)
    read = table["proxy_depth"].count()
    print(f"proxy read for {read} of {table.height} {args.per}s", file=sys.stderr)
    write_table(table, args.output)
    return 0
