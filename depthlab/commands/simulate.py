"""``depthlab simulate OUT``: write simulated Harbor run logs of known depth."""

from __future__ import annotations

import argparse
import sys

HELP = "Write simulated Harbor run logs of known depth (demo and validation data)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Write simulated task dirs (OUT/tasks/<dataset>/<task>) and Harbor job dirs (OUT/jobs/<dataset>/<job>) "
        "for seven collections named after the audited ones, two models over the cap ladder plus uncapped "
        "public runs, and the true depths (OUT/truth.csv, OUT/model_truth.csv). A demo and validation tool: "
        "the numbers are made up by a documented generative model (see depthlab.simulate)."
    )
    parser.epilog = "Then: depthlab depth OUT/jobs -o depth.csv"
    parser.add_argument("out", metavar="OUT", help="output folder (its tasks/ and jobs/ are replaced)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--scale", type=float, default=1.0, help="task counts relative to 734 tasks (default 1.0)")
    parser.add_argument("--flip-rate", type=float, default=0.0, help="chance a capped outcome is flipped")
    parser.add_argument("--invalid-rate", type=float, default=0.03, help="chance of an extra infra-error trial")
    parser.add_argument("--public-attempts", type=int, default=3, help="uncapped runs per task and model")


def run(args: argparse.Namespace) -> int:
    from depthlab._tables import write_table
    from depthlab.simulate import write_runs

    try:
        summary = write_runs(
            args.out,
            seed=args.seed,
            scale=args.scale,
            flip_rate=args.flip_rate,
            invalid_rate=args.invalid_rate,
            public_attempts=args.public_attempts,
        )
    except (TypeError, ValueError) as exc:
        print(f"depthlab simulate: {exc}", file=sys.stderr)
        return 1
    write_table(summary.truth, summary.out_dir / "truth.csv")
    write_table(summary.model_truth, summary.out_dir / "model_truth.csv")
    print(
        f"wrote {summary.n_tasks} tasks, {summary.n_trials} trials ({summary.n_invalid} invalid), "
        f"{summary.n_files} files in {summary.seconds:.1f} s to {summary.out_dir}",
        file=sys.stderr,
    )
    return 0
