"""``depthlab reproduce``: re-execute every audit notebook with papermill and regenerate the figures."""

from __future__ import annotations

import argparse
import sys

HELP = "Re-execute every audit notebook with papermill and regenerate the figures."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # imported here, not at the top: `depthlab --help` imports every verb module for its HELP
    from depthlab.auditdata import BUNDLED_DATA, DEMO_SCALE
    from depthlab.reproduce import DEFAULT_N_BOOT, NOTEBOOKS

    parser.add_argument(
        "--data",
        metavar="DIR",
        help=f"a data folder, or {' or '.join(BUNDLED_DATA)} for the real facts bundled with depthlab "
        "(default: the simulated demo data, built once in the user cache and reused)",
    )
    parser.add_argument("--out", metavar="DIR", default="out/reproduce", help="output folder (default: %(default)s)")
    parser.add_argument(
        "--only", metavar="NAMES", help=f"comma-separated notebooks to run, e.g. 01,03 (of {', '.join(NOTEBOOKS)})"
    )
    parser.add_argument(
        "--scale", type=float, default=DEMO_SCALE, help="demo data size, 1.0 = paper size (%(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the demo data and the bootstraps (%(default)s)")
    parser.add_argument("--n-boot", type=int, default=DEFAULT_N_BOOT, help="bootstrap resamples (%(default)s)")
    parser.add_argument("--datasets", metavar="NAMES", help="comma-separated collections (default: all found)")
    parser.add_argument("--models", metavar="NAMES", help="comma-separated models counted for D (default: all)")
    parser.add_argument("--docs", metavar="DIR", help="also copy the README figures there as small PNGs")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks run at once (%(default)s)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from depthlab._text import count
    from depthlab.reproduce import NotebookFailed, reproduce

    try:
        result = reproduce(
            args.data,
            args.out,
            only=_split(args.only),
            scale=args.scale,
            seed=args.seed,
            n_boot=args.n_boot,
            datasets=_split(args.datasets),
            models=_split(args.models),
            docs_dir=args.docs,
            jobs=args.jobs,
            progress=not args.quiet,
        )
    except NotebookFailed as failure:
        where = f" (partial output: {failure.output})" if failure.output else ""
        print(f"depthlab reproduce: {failure}{where}", file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError) as error:
        print(f"depthlab reproduce: {error}", file=sys.stderr)
        return 2
    print(result.data)
    print(
        f"ran {count(len(result.notebooks), 'notebook')} ({count(len(result.figures), 'figure')}); the index lists "
        f"{count(len(result.results), 'notebook')}: {result.index}"
    )
    return 0


def _split(value: str | None) -> list[str] | None:
    # an empty name stays in the list: the library rejects it with the known names
    if value is None:
        return None
    return [part.strip() for part in value.split(",")]
