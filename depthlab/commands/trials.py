"""``depthlab trials PATH... -o FILE``: run logs to the trials table."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from depthlab._tables import output_table

if TYPE_CHECKING:  # pragma: no cover
    from tqdm import tqdm

    from depthlab.io.trials import Progress

HELP = "Load run logs into the trials table (-o FILE.csv|.parquet)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from depthlab.commands.depth import add_leaky_steps_argument

    parser.add_argument("paths", nargs="+", metavar="PATH", help="Harbor jobs/job/trial dirs, TB1 runs, or files")
    parser.add_argument(
        "-o", "--output", required=True, type=output_table, metavar="FILE", help="output table (.csv or .parquet)"
    )
    parser.add_argument("--dataset", default=None, help="tag every row with this dataset name")
    parser.add_argument("--status-rule", choices=["leaderboard", "all"], default="leaderboard")
    add_leaky_steps_argument(parser)
    parser.add_argument("--cap-rule", choices=["stated_cap", "turn_limit"], default="stated_cap")
    parser.add_argument("--strict", action="store_true", help="fail on the first rejected file")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the trials cache")
    parser.add_argument(
        "--follow-links",
        action="store_true",
        help="follow symbolic links to directories outside the paths given (by default each is a rejection)",
    )


def run(args: argparse.Namespace) -> int:
    from depthlab._tables import write_table
    from depthlab.io import LoadError, notes_text, read_trials

    with _ProgressBar("trials") as progress:
        try:
            load = read_trials(
                args.paths,
                dataset=args.dataset,
                status_rule=args.status_rule,
                strict=args.strict,
                cache=not args.no_cache,
                cap_rule=args.cap_rule,
                progress=progress,
                follow_links=args.follow_links,
                include_leaky_steps=args.include_leaky_steps,
            )
        except (LoadError, ValueError) as exc:
            print(f"depthlab trials: {exc}", file=sys.stderr)
            return 1
    for item in load.rejected:
        print(f"rejected {item}", file=sys.stderr)
    for field_notes in load.notes_by_field().values():
        print(f"field notes: {notes_text(field_notes)}", file=sys.stderr)
    print(load.summary(), file=sys.stderr)
    if load.trials.height == 0:
        print("depthlab trials: no trials found", file=sys.stderr)
        return 1
    write_table(load.trials, args.output)
    return 0


class _ProgressBar:
    """A tqdm bar on a terminal, nothing otherwise (logs and pipes stay clean)."""

    def __init__(self, unit: str) -> None:
        self._unit = unit
        self._bar: tqdm | None = None

    def __enter__(self) -> Progress | None:
        if not sys.stderr.isatty():
            return None
        from tqdm import tqdm

        bar = self._bar = tqdm(total=0, unit=self._unit, file=sys.stderr, leave=False)

        def update(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        return update

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()
