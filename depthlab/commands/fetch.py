"""``depthlab fetch NAME [--dest DIR]``: download a public data source (resumable, checksummed)."""

from __future__ import annotations

import argparse
import sys

HELP = "Download a public data source (needs network)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from depthlab.datasets.fetch import SOURCES

    listing = "; ".join(f"{s.name}: {s.description}" for s in SOURCES.values())
    parser.add_argument("name", metavar="NAME", choices=sorted(SOURCES), help=f"the source ({listing})")
    parser.add_argument(
        "--dest",
        metavar="DIR",
        help="target directory (default: data/public/tb2/tasks for tb2-tasks, data/public/tb2/jobs for "
        "tmax-jobs, else data/public/NAME)",
    )
    parser.add_argument(
        "--url",
        metavar="URL",
        help="override the git URL or the Hugging Face endpoint (also: the source's environment variable, "
        "DEPTHLAB_TB2_TASKS_URL, DEPTHLAB_TMAX_JOBS_URL, DEPTHLAB_HF_ENDPOINT)",
    )
    parser.add_argument("--revision", metavar="REV", help="override the pinned git commit or Hugging Face revision")
    parser.add_argument(
        "--include",
        metavar="GLOB",
        action="append",
        default=[],
        help="Hugging Face sources: only repository paths matching this glob (repeatable)",
    )
    parser.add_argument(
        "--results-only",
        action="store_true",
        help="tb2-leaderboard: only each trial's and job's result.json and config.json (about 6 KB a trial, "
        "no trajectories); resumable and checksummed like every fetch",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress output")


def run(args: argparse.Namespace) -> int:
    from depthlab.datasets.fetch import FetchError, fetch

    try:
        dest = fetch(
            args.name,
            args.dest,
            url=args.url,
            revision=args.revision,
            include=args.include,
            progress=False if args.quiet else None,
            results_only=args.results_only,
        )
    except (FetchError, ValueError) as error:
        print(f"depthlab fetch: {error}", file=sys.stderr)
        return 1
    print(f"depthlab fetch: {args.name} is in {dest}", file=sys.stderr)
    return 0
