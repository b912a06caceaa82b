"""``depthlab tasks PATH... -o FILE``: task directories to the tasks table.

``depthlab tasks merge TASK... -o DIR``: the merged version of each multi-step task (its steps as
one instruction, one verifier for all; :func:`depthlab.io.task_merge.merge_steps`) written into
``DIR``, for the merged-segments comparison. Each merge is then checked with the local oracle
(every step's reference solution in order, the merged verifier once at the end, in Docker): a
merged task its own reference solution does not pass (an earlier step's tests check a state a
later step changes, so graded once at the end they fail) is not kept, and the reason names the
first step whose tests fail. ``--no-check`` writes the merges unchecked (no Docker needed).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import warnings
from pathlib import Path

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
        "--no-check",
        action="store_true",
        help="with `merge`: keep each merged task without running its reference solution (no Docker needed)",
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
    written = []
    for task in tasks:
        try:
            written.append(merge_steps(task, args.output, dataset=args.dataset))
        except (TaskFormatError, OSError) as error:
            print(f"depthlab tasks merge: {error}", file=sys.stderr)
            failed += 1
    if written and not args.no_check:
        try:
            refused = _check_merges(written, Path(args.output))
        except RuntimeError as error:
            print(f"depthlab tasks merge: {error}", file=sys.stderr)
            return 1
        for merged, reason in refused.items():
            shutil.rmtree(merged, ignore_errors=True)
            print(f"depthlab tasks merge: {merged.name}: not kept: {reason}", file=sys.stderr)
        failed += len(refused)
        written = [merged for merged in written if merged not in refused]
    for merged in written:
        print(merged)
    return 1 if failed else 0


def _check_merges(merged: list[Path], out: Path) -> dict[Path, str]:
    """The merged tasks whose reference solution the local oracle does not pass, with the reason."""
    import tempfile

    from depthlab.io.harbor import read_trial_result
    from depthlab.runner.preflight import preflight

    try:
        from depthlab.runner.container import new_docker_client

        client = new_docker_client()
        client.ping()
    except Exception as error:  # any failure to reach the engine
        raise RuntimeError(
            f"checking a merge runs its reference solution in Docker, which does not answer ({error}); "
            "--no-check keeps the merges unchecked"
        ) from None
    refused = {}
    with tempfile.TemporaryDirectory(prefix=".depthlab-merge-check-", dir=out) as jobs:
        report = preflight(merged, jobs_dir=jobs, docker_client=client, use_cache=False)
        for path, row in zip(merged, report.rows, strict=True):
            if row.passed and row.checked:
                continue
            # the rewards the trial recorded (its reward.json, read by the runner as Harbor reads it)
            recorded = read_trial_result(Path(str(row.trial_dir)) / "result.json")
            rewards = {} if isinstance(recorded, str) else recorded.result.rewards() or {}
            segments = {key: value for key, value in rewards.items() if key.startswith("segment_")}
            # written as the verifier wrote them: a reward of 0 reads "0", not the float "0.0"
            shown = ", ".join(f"{key} {value:g}" for key, value in segments.items())
            failing = next((key for key, value in segments.items() if not _passes(value)), None)
            why = (
                f"the tests of step {failing.removeprefix('segment_')} fail once every step's solution has run "
                "(a later step changes what they check), so one verifier at the end cannot stand for the steps"
                if failing
                else row.reason
            )
            refused[path] = f"its reference solution does not pass ({shown or row.reason}): {why}"
    return refused


def _passes(value: object) -> bool:
    from depthlab.io.status import PASS_REWARD

    return isinstance(value, int | float) and value >= PASS_REWARD
