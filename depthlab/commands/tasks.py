"""``depthlab tasks PATH... -o FILE``: task directories to the tasks table."""

from __future__ import annotations

import argparse
import sys
import warnings

from depthlab._tables import output_table

HELP = "Load task directories into the tasks table (-o FILE.csv|.parquet)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="task dirs (task.toml / task.yaml) or folders of them")
    parser.add_argument(
        "-o", "--output", required=True, type=output_table, metavar="FILE", help="output table (.csv or .parquet)"
    )
    parser.add_argument("--dataset", default=None, help="tag every row with this dataset name")
    parser.add_argument(
        "--difficulty-source",
        choices=["human", "generated", "none"],
        default=None,
        help="where the difficulty labels come from (left null when not stated)",
    )


def run(args: argparse.Namespace) -> int:
    from depthlab._tables import write_table
    from depthlab.io import RejectedFilesWarning, load_tasks

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RejectedFilesWarning)
        try:
            tasks = load_tasks(args.paths, dataset=args.dataset, difficulty_source=args.difficulty_source)
        except ValueError as exc:
            print(f"depthlab tasks: {exc}", file=sys.stderr)
            return 1
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    with_solution = int(tasks["has_solution"].sum()) if tasks.height else 0
    print(f"loaded {tasks.height} tasks ({with_solution} with a reference solution)", file=sys.stderr)
    if tasks.height == 0:
        rejected = sum(1 for warning in caught if issubclass(warning.category, RejectedFilesWarning))
        found = "every task directory was rejected" if rejected else "no task directories found"
        print(f"depthlab tasks: {found}", file=sys.stderr)
        return 1
    write_table(tasks, args.output)
    return 0
