"""``depthlab export scout|docent|metr RUNS... -o OUT``: run logs to Inspect Scout, Docent or METR's format."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

HELP = "Export run logs to Inspect Scout, Docent or METR's runs.jsonl (-o OUT)."

#: The peers, as the command lists them (depthlab.export.PEERS, kept light here: --help imports no io).
_PEERS = ("scout", "docent", "metr")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from depthlab.commands.depth import add_leaky_steps_argument

    parser.description = (
        "Export trials with depthlab's facts: scout writes an Inspect Scout transcript database (a folder "
        "inspect_scout.transcripts_from opens), docent writes Docent AgentRuns (JSONL, the shape of Docent's "
        "Harbor converter, for every trajectory form depthlab reads), metr writes METR's runs.jsonl with each "
        "task's expert minutes as human_minutes. D is estimated from the capped runs given, when there are any. "
        "A report (one line per trial not carried whole) is written beside the output."
    )
    parser.add_argument("peer", choices=_PEERS, help="the format to write")
    parser.add_argument("paths", nargs="+", metavar="RUNS", help="Harbor jobs/job/trial dirs, TB1 runs")
    parser.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="scout: a database folder; docent, metr: a .jsonl file"
    )
    parser.add_argument(
        "--tasks",
        default=None,
        metavar="DIR|tb2",
        help="task directories (W, expert minutes), or tb2 for the bundled Terminal-Bench 2.0 facts",
    )
    parser.add_argument("--checks", default=None, metavar="FILE", help="a checks table (depthlab check -o FILE)")
    parser.add_argument("--dataset", default=None, help="tag every trial with this dataset name")
    parser.add_argument("--status-rule", choices=["leaderboard", "all"], default="leaderboard")
    add_leaky_steps_argument(parser)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    if args.peer != "scout" and not args.output.endswith(".jsonl"):
        print(f"depthlab export: -o/--output: {args.peer} writes a .jsonl file, got {args.output}", file=sys.stderr)
        return 2
    if args.peer == "scout" and Path(args.output).is_file():
        print(f"depthlab export: -o/--output: scout writes a database folder, {args.output} is a file", file=sys.stderr)
        return 2

    from depthlab.commands.depth import load_trials_for
    from depthlab.export import export_runs
    from depthlab.io import LoadError
    from depthlab.measures import estimate_depth

    trials = load_trials_for(args, "export")
    if trials is None:
        return 1
    try:
        tasks = _tasks(args.tasks, args.dataset)
        checks = _checks(args.checks)
    except (LoadError, OSError, ValueError) as exc:
        print(f"depthlab export: {exc}", file=sys.stderr)
        return 1
    capped = trials.filter(trials["cap"].is_not_null())
    depth = estimate_depth(trials) if capped.height else None
    try:
        report = export_runs(args.peer, trials, args.output, depth=depth, tasks=tasks, checks=checks)
    except (TypeError, ValueError) as exc:
        print(f"depthlab export: {exc}", file=sys.stderr)
        return 1
    lines = report.lines()
    for line in lines[1:]:
        print(line, file=sys.stderr)
    print(lines[0], file=sys.stderr)
    return 0


def _tasks(where: str | None, dataset: str | None) -> pl.DataFrame | None:
    """The tasks table: None, the bundled TB2 facts, or task directories read by io."""
    if where is None:
        return None
    from depthlab.datasets import BUNDLED, load_dataset
    from depthlab.io import load_tasks

    if where in BUNDLED:
        return load_dataset(where).tasks
    return load_tasks(where, dataset=dataset)


def _checks(path: str | None) -> pl.DataFrame | None:
    """A checks table written by ``depthlab check -o`` (.csv or .parquet), or None."""
    if path is None:
        return None
    import polars as pl

    return pl.read_parquet(path) if path.endswith(".parquet") else pl.read_csv(path)
