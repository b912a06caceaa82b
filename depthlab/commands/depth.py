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
    add_leaky_steps_argument(parser)
    add_prices_argument(parser)


def add_leaky_steps_argument(parser: argparse.ArgumentParser) -> None:
    """--include-leaky-steps (every verb that loads run logs: ``depth``, ``plan``, ``export``, ``proxy``, ``trials``).

    ``measure`` has none: its jobs are its engine's, Harbor's supported release (after the fix) or the
    local runner's, so none of its trials is flagged.
    """
    parser.add_argument(
        "--include-leaky-steps",
        action="store_true",
        help="keep the status of multi-step trials run by a Harbor older than 0.24, which did not empty /tests and "
        "/logs/verifier between steps (a step's agent could read the previous step's tests and reward); by default "
        "they are invalid, left out of D, with a version_note saying why",
    )


def add_prices_argument(
    parser: argparse.ArgumentParser, *, what: str = "; given, the table gains what each D cost"
) -> None:
    """--prices FILE|litellm (``depth``, ``measure``, ``plan``): the price table runs are priced by."""
    parser.add_argument(
        "--prices",
        default=None,
        metavar="FILE",
        help="a price table CSV (model, input_usd_per_token, output_usd_per_token, cache_read_usd_per_token), or "
        f"'litellm' for LiteLLM's published prices shipped with depthlab (the default){what}",
    )


def read_prices_for(args: argparse.Namespace, verb: str) -> tuple[pl.DataFrame, str] | None:
    """The price table ``--prices`` names and where it comes from; None (after a message) when it is refused."""
    from depthlab.io import price_source, read_prices

    path = None if args.prices in (None, SHIPPED_PRICES) else args.prices
    try:
        return read_prices(path), price_source(path)
    except (TypeError, ValueError) as exc:
        print(f"depthlab {verb}: --prices: {exc}", file=sys.stderr)
        return None


#: The --prices value naming the table shipped with depthlab.
SHIPPED_PRICES = "litellm"


def cost_lines(
    trials: pl.DataFrame, depth: pl.DataFrame, prices: pl.DataFrame, source: str, *, caps: Sequence[int],
    models: Sequence[str] | None,
) -> tuple[pl.DataFrame, list[str]]:  # fmt: skip
    """``depth`` with what each D cost (:func:`depthlab.measures.price_depth`) and the summary lines saying it."""
    import polars as pl

    from depthlab._text import count
    from depthlab.measures import COST_ROUNDING_USD, COST_TOLERANCE, cost_per_depth, price_depth, price_trials

    priced = price_trials(trials, prices)
    costed = price_depth(priced, depth, caps=caps, models=models)
    per_depth = cost_per_depth(priced, depth)
    lines = []
    for (dataset,), tasks in costed.group_by("dataset", maintain_order=True):
        runs = priced.filter(pl.col("dataset").eq_missing(dataset))
        known = tasks["depth_cost_priced_usd"].is_not_null().sum()
        partly = f" ({known} of them priced: a lower bound)" if 0 < known < tasks.height else ""
        lines.append(
            f"cost ({dataset}): the D of {count(tasks.height, 'task')} cost {_usd(tasks['depth_cost_priced_usd'])} "
            f"priced from tokens{partly}, {_usd(tasks['depth_cost_usd'])} recorded; all {count(runs.height, 'run')}: "
            f"{_usd(runs['cost_priced_usd'])} priced ({runs['cost_priced_usd'].is_not_null().sum()} priced), "
            f"{_usd(runs['cost_usd'])} recorded; at {source}"
        )
        counted = dict(runs["cost_check"].value_counts().rows())
        if counted.get("disagree"):
            lines.append(
                f"  {count(counted['disagree'], 'run')} with a recorded cost unlike the priced one (more than "
                f"{COST_TOLERANCE:.0%} + ${COST_ROUNDING_USD:.6f} apart): the recorded cost_usd or the price is wrong"
            )
        unpriced = runs.filter(pl.col("cost_check") == "no price")["model"].unique().sort().to_list()
        if unpriced:
            lines.append(
                f"  not priced: {count(counted['no price'], 'run')} of {', '.join(map(str, unpriced))}: no price "
                "for the model in the table (--prices FILE states one)"
            )
        if counted.get("no tokens"):
            lines.append(f"  not priced: {count(counted['no tokens'], 'run')} that recorded no tokens")
        rungs = per_depth.filter(pl.col("dataset").eq_missing(dataset))
        shown = [
            f"{_rung(row['depth'], row['status'])} {_usd(row['cost_priced_usd_per_task'])} "
            f"({count(row['n_tasks'], 'task')})"
            for row in rungs.iter_rows(named=True)
        ]
        lines.append("  a task's runs at each D: " + ", ".join(shown))
    return costed, lines


def _usd(value: pl.Series | float | None) -> str:
    """Dollars for a summary line; a series is summed over its known values, and none known is 'unknown'."""
    import polars as pl

    if isinstance(value, pl.Series):
        value = None if value.is_null().all() else float(value.sum())
    return "unknown" if value is None else f"${value:,.4f}"


def _rung(depth: int | None, status: str) -> str:
    """A row of the cost per D: 'D=5', 'beyond the ladder', 'incomplete (D=5 so far)'."""
    if status == "unsolved":
        return "beyond the ladder"
    if status == "incomplete":
        return "incomplete" + ("" if depth is None else f" (D={depth} so far)")
    return f"D={depth}"


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

    prices = read_prices_for(args, "depth")
    if prices is None:
        return 1
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
    costed, lines = cost_lines(trials, depth, *prices, caps=args.caps, models=args.models)
    for line in lines:
        print(line, file=sys.stderr)
    write_table(depth if args.prices is None else costed, args.output)
    return 0


def load_trials_for(args: argparse.Namespace, verb: str) -> pl.DataFrame | None:
    """Load ``args.paths`` as trials, printing rejects and a summary; None (after a message) on failure."""
    from depthlab.io import LoadError, read_trials

    try:
        load = read_trials(
            args.paths,
            dataset=args.dataset,
            status_rule=args.status_rule,
            include_leaky_steps=args.include_leaky_steps,
        )
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
