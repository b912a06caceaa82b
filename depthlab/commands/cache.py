"""``depthlab cache info|clear``: where the trials cache is, how large, and emptying it."""

from __future__ import annotations

import argparse
import sys

HELP = "Show (info) or empty (clear) the trials cache."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action", choices=["info", "clear"], help="info: location, entries, size, limits; clear: remove every entry"
    )


def run(args: argparse.Namespace) -> int:
    from depthlab.io import cache

    try:
        if args.action == "info":
            print(cache.info())
        else:
            removed = cache.clear()
            print(f"removed {removed} entries from {cache.cache_dir()}")
    except ValueError as exc:  # a bad DEPTHLAB_CACHE_MAX_MB
        print(f"depthlab cache: {exc}", file=sys.stderr)
        return 1
    return 0
