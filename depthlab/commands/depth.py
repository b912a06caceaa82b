"""``depthlab depth PATH... -o FILE``: capped run logs to the depth table."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from depthlab._tables import output_table

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

HELP = "Estimate each task's depth D from capped runs (-o FILE)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Estimate each task's depth D: the smallest stated turn cap on the ladder under which the task "
        "passes, minimum over models. Trials whose config records agent.kwargs.stated_cap are capped runs; "
        "invalid trials (infrastructure errors) leave their cap missing, never failed."
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="Harbor jobs/job/trial dirs, TB1 runs, or files")
    parser.add_argument(
        "-o", "--output", required=True, type=output_table, metavar="FILE", help="output table (.csv or .parquet)"
    )
    add_ladder_arguments(parser)
    add_q_argument(parser)
    parser.add_argument("--dataset", default=None, help="tag every trial with this dataset name")
    parser.add_argument("--status-rule", choices=["leaderboard", "all"], default="leaderboard")


def add_ladder_arguments(parser: argparse.ArgumentParser, *, models_required: bool = False) -> None:
    """The options ``depth`` and ``plan`` share: --caps, --models, --pass-rule."""
    from depthlab.schema import CAPS

    parser.add_argument(
        "--caps",
        type=_int_list,
        default=CAPS,
        metavar="K,K,...",
        help=f"the cap ladder, increasing (default {','.join(map(str, CAPS))})",
    )
    parser.add_argument(
        "--models",
        type=_name_list,
        required=models_required,
        default=None,
        metavar="A,B",
        help="the models that count (Harbor model_name strings)"
        + ("" if models_required else "; default: every model with capped runs in the dataset"),
    )
    parser.add_argument(
        "--pass-rule",
        choices=["any", "majority", "isotonic"],
        default="any",
        help="a cap passes if any valid attempt passes (default), at least half do, or the isotonic fit"
        " of P(pass | cap) reaches --q (depth and plan)",
    )


def add_q_argument(parser: argparse.ArgumentParser) -> None:
    """--q, the isotonic rule's threshold (``depth`` and ``plan``)."""
    parser.add_argument(
        "--q", type=float, default=0.5, metavar="Q", help="isotonic rule: the fitted P(pass) a cap needs (default 0.5)"
    )


def run(args: argparse.Namespace) -> int:
    from depthlab._tables import write_table
    from depthlab.measures import depth_summary, estimate_depth

    trials = load_trials_for(args, "depth")
    if trials is None:
        return 1
    mistake = unknown_models(args.models, trials.filter(trials["cap"].is_not_null()), "with capped runs in these logs")
    if mistake:
        print(f"depthlab depth: {mistake}", file=sys.stderr)
        return 1
    try:
        depth = estimate_depth(trials, caps=args.caps, models=args.models, pass_rule=args.pass_rule, q=args.q)
    except (TypeError, ValueError) as exc:
        print(f"depthlab depth: {exc}", file=sys.stderr)
        return 1
    for row in depth_summary(depth).iter_rows(named=True):
        print(
            f"{row['dataset']}: {row['n_tasks']} tasks, {row['n_solved']} solved, {row['n_unsolved']} unsolved, "
            f"{row['n_incomplete']} incomplete, {row['n_non_monotone']} non-monotone",
            file=sys.stderr,
        )
    write_table(depth, args.output)
    return 0


def load_trials_for(args: argparse.Namespace, verb: str) -> pl.DataFrame | None:
    """Load ``args.paths`` as trials, printing rejects and a summary; None (after a message) on failure."""
    from depthlab.io import LoadError, read_trials

    try:
        load = read_trials(args.paths, dataset=args.dataset, status_rule=args.status_rule)
    except (LoadError, ValueError) as exc:
        print(f"depthlab {verb}: {exc}", file=sys.stderr)
        return None
    for item in load.rejected:
        print(f"rejected {item}", file=sys.stderr)
    print(load.summary(), file=sys.stderr)
    if load.trials.height == 0 and args.paths:
        print(f"depthlab {verb}: no trials found", file=sys.stderr)
        return None
    return load.trials


def unknown_models(models: Sequence[str] | None, trials: pl.DataFrame, where: str) -> str | None:
    """One line naming the ``models`` absent from ``trials`` and listing the known ones; None when all are known."""
    if not models:
        return None
    known = sorted(trials["model"].drop_nulls().unique().to_list())
    missing = [model for model in models if model not in known]
    if not missing:
        return None
    listed = ", ".join(known) if known else "none"
    return f"unknown model(s) {', '.join(missing)}; the models {where} are: {listed}"


def _int_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _name_list(text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated model names, got {text!r}")
    return names
