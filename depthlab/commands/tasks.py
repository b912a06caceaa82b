"""``depthlab tasks PATH... -o FILE``: task directories to the tasks table.

``depthlab tasks merge TASK... -o DIR``: the merged version of each multi-step task (its steps as
one instruction, one verifier for all; :func:`depthlab.io.task_merge.merge_steps`) written into
``DIR``, for the merged-segments comparison.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from depthlab._tables import output_table

HELP = "Load task directories into the tasks table (-o FILE.csv|.parquet); `tasks merge` merges multi-step tasks."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="task dirs (task.toml / task.yaml) or folders of them; `merge TASK...`: multi-step tasks to merge",
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="output table (.csv or .parquet); with `merge`, the folder the merged tasks go to",
    )
    parser.add_argument(
        "--dataset",
        default=None,
        help="tag every row with this dataset name (with `merge`: the dataset merged_from names; default the "
        "task folder's parent)",
    )
    parser.add_argument(
        "--difficulty-source",
        choices=["human", "generated", "none"],
        default=None,
        help="where the difficulty labels come from (left null when not stated)",
    )


def run(args: argparse.Namespace) -> int:
    from depthlab._tables import write_table
    from depthlab.io import RejectedFilesWarning, load_tasks

    if args.paths[0] == "merge":  # (a task folder named merge is given as ./merge)
        return _merge(args)
    try:
        args.output = output_table(args.output)
    except argparse.ArgumentTypeError as error:
        print(f"depthlab tasks: argument -o/--output: {error}", file=sys.stderr)
        return 2

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


def _merge(args: argparse.Namespace) -> int:
    from depthlab.io.harbor_task import TaskFormatError
    from depthlab.io.task_merge import merge_steps

    tasks = args.paths[1:]
    if not tasks:
        print("depthlab tasks merge: name at least one multi-step task folder", file=sys.stderr)
        return 2
    failed = 0
    for task in tasks:
        try:
            merged = merge_steps(task, args.output, dataset=args.dataset)
        except (TaskFormatError, OSError) as error:
            print(f"depthlab tasks merge: {error}", file=sys.stderr)
            failed += 1
            continue
        print(merged)
    return 1 if failed else 0
