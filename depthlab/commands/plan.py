"""``depthlab plan PATH... --tasks DIR --models A,B -o FILE``: the runs still missing to pin D."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from depthlab._tables import output_table

if TYPE_CHECKING:
    import polars as pl

    from depthlab.io.harbor_records import JobConfigRecord

HELP = "List the (task, model, cap) runs still missing to pin D (-o FILE)."

_EPILOG = """\
The plan has one row per cell: dataset, task, model, cap, attempts (further valid attempts to run).
Run it with `depthlab fill` (Docker, one machine), or hand it to Harbor:

  --harbor-configs DIR writes one Harbor JobConfig JSON per model and cap (and attempt count),
  named <model>__cap-<K>.json, listing the task names per task folder under "datasets", the
  agent terminus-2 with kwargs max_turns = K (the limit it enforces), and "extra_instructions"
  holding the sentence that states the cap, which Harbor appends to every task instruction.
  Run each with
      harbor run --config DIR/<model>__cap-<K>.json
  then load the jobs back with `depthlab depth` / `depthlab plan`: the loaders read a trial whose
  config carries that sentence for its max_turns as run at stated cap K.

With --mode adaptive the plan is one round of a bottom-up search: run it, then plan again with the new
jobs among the PATHs, until the plan is empty. It needs far fewer runs than the sweep.

With --error E (or --mode bayes) the plan is one round of the Bayesian planner: per unfinished task, the
runs with the most information about D per expected turn, until D's posterior puts 1 - E on one rung
(docs/depth_uncertainty.md); plan again after each round. --forecast prints, before anything is spent,
the runs and turns it is expected to need (simulated from the priors fitted to the runs among the PATHs;
with --pass-prob P --luck L, from that stated noise, so a measurement can be priced before any run).
With --attempts auto every planned cell gets one attempt, and a cell already run gets another only
while its outcome can still change D under --pass-rule (majority or isotonic; under any, every
failure below D stays open) within --max-attempts per cell. Plan again after each round.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from depthlab.commands.depth import (
        add_ladder_arguments,
        add_leaky_steps_argument,
        add_prices_argument,
        add_q_argument,
    )

    parser.description = "List the (dataset, task, model, cap) runs still needed to pin every task's depth D."
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("paths", nargs="*", metavar="PATH", help="run logs already made (none: plan from scratch)")
    parser.add_argument("--tasks", required=True, nargs="+", metavar="DIR", help="task dirs or folders of them")
    parser.add_argument(
        "-o", "--output", required=True, type=output_table, metavar="FILE", help="output plan (.csv or .parquet)"
    )
    add_ladder_arguments(parser, models_required=True)
    add_q_argument(parser)
    parser.add_argument(
        "--new-models",
        action="store_true",
        help="allow --models with no runs among the PATHs (plan their runs from scratch)",
    )
    add_attempts_arguments(parser)
    parser.add_argument("--mode", choices=["sweep", "adaptive", "bayes"], default="sweep", help="default: sweep")
    add_error_argument(parser)
    parser.add_argument(
        "--forecast",
        action="store_true",
        help="with --error: print the runs and turns the Bayesian planner is expected to need to finish, and "
        "what they would cost at the tokens per turn of the runs made",
    )
    add_prices_argument(parser, what="; what --forecast prices its turns by (without --forecast it is refused)")
    parser.add_argument(
        "--pass-prob",
        type=float,
        default=None,
        metavar="P",
        help="with --forecast: forecast from a stated pass probability at the depth (with --luck), not fitted priors",
    )
    parser.add_argument(
        "--luck", type=float, default=0.02, metavar="L", help="with --pass-prob: the stated luck rate (default 0.02)"
    )
    parser.add_argument("--harbor-configs", default=None, metavar="DIR", help="also write Harbor job configs here")
    parser.add_argument("--agent", default="terminus-2", help="agent name in the Harbor configs")
    parser.add_argument("--dataset", default=None, help="tag every trial and task with this dataset name")
    parser.add_argument("--status-rule", choices=["leaderboard", "all"], default="leaderboard")
    add_leaky_steps_argument(parser)


def add_attempts_arguments(parser: argparse.ArgumentParser) -> None:
    """--attempts K|auto and --max-attempts (``plan`` and ``measure``)."""
    parser.add_argument(
        "--attempts",
        type=_attempts,
        default=1,
        metavar="K|auto",
        help="valid attempts per cell (default 1); auto: more only where they can still change D",
    )
    parser.add_argument(
        "--max-attempts", type=int, default=3, metavar="K", help="with --attempts auto: the most per cell (default 3)"
    )


def add_error_argument(parser: argparse.ArgumentParser) -> None:
    """--error E (``plan`` and ``measure``): D to a stated error with the Bayesian planner."""
    parser.add_argument(
        "--error",
        type=float,
        default=None,
        metavar="E",
        help="D to this error (e.g. 0.05): the Bayesian planner and estimator (depth at q 0.2, p_depth per task)",
    )


def forecast_lines(
    trials: pl.DataFrame, tasks: pl.DataFrame, *, models: list[str], caps: tuple[int, ...], error: float,
    max_attempts: int, prices: tuple[pl.DataFrame, str] | None = None, pass_prob: float | None = None,
    luck: float = 0.02,
) -> list[str]:  # fmt: skip
    """Per dataset: the runs, turns and rounds the Bayesian planner is expected to need, and with ``prices``
    (a price table and where it comes from) what they would cost.

    ``pass_prob`` (with ``luck``): forecast from that stated noise
    (:func:`depthlab.measures.bayes.stated_log_prior`) instead of priors fitted to ``trials``.
    """
    from depthlab.measures.bayes import BAYES_Q, forecast, posteriors, stated_log_prior
    from depthlab.measures.depth import evidence_grid

    cells = evidence_grid(trials, caps=caps, models=models, pass_rule="any", tasks=tasks)
    rates = None if prices is None else _turn_prices(trials, prices[0], models)
    stated = None if pass_prob is None else stated_log_prior(len(caps), pass_prob=pass_prob, luck=luck)
    lines = []
    for post in posteriors(cells, trials, caps=caps, q=BAYES_Q, log_prior=stated):
        made = int(post.n_valid.sum())
        guess = forecast(post, caps=caps, error=error, max_attempts=max_attempts)
        if stated is not None:
            source = f"stated pass probability {pass_prob:g} at the depth, luck {luck:g}"
        elif made:
            source = f"priors fitted to the {made} runs made"
        else:
            source = "no runs yet: spread priors over rungs and curves"
        lines.append(
            f"forecast ({post.keys['dataset'][0]}): about {guess.runs:.0f} more runs, at most {guess.turns:.0f} "
            f"turns, in about {guess.rounds:.0f} rounds for {guess.n_tasks} tasks to error {error:g} "
            f"(simulated; {source})"
        )
        if prices is not None:
            lines.append(_forecast_cost(post.keys["dataset"][0], guess.turns, rates, prices[1]))
    return lines


def _turn_prices(trials: pl.DataFrame, prices: pl.DataFrame, models: list[str]) -> dict[str | None, dict]:
    """Per dataset, what a turn of the runs made cost (:func:`depthlab.measures.cost_per_turn`), by dataset."""
    from depthlab.measures import cost_per_turn, price_trials

    rates = cost_per_turn(price_trials(trials, prices), models=models)
    return {row["dataset"]: row for row in rates.iter_rows(named=True)}


def _forecast_cost(dataset: str | None, turns: float, rates: dict[str | None, dict] | None, source: str) -> str:
    """The forecast's turns priced: turns -> tokens -> dollars at the tokens per turn of the runs made."""
    rate = (rates or {}).get(dataset)
    if rate is None or rate["usd_per_turn"] is None:
        made = 0 if rate is None else rate["n_runs"]
        why = (
            "no runs made yet to read the tokens per turn from"
            if not made
            else f"none of the {made} runs made has tokens, turns and a price at {source}"
        )
        return f"forecast cost ({dataset}): cannot price: {why}"
    return (
        f"forecast cost ({dataset}): at most about ${turns * rate['usd_per_turn']:,.2f}: {turns:.0f} turns at "
        f"${rate['usd_per_turn']:.4f} a turn (the tokens per turn of {rate['n_runs_priced']} of the "
        f"{rate['n_runs']} runs made, at {source})"
    )


def _attempts(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    from depthlab import schema
    from depthlab._tables import write_table
    from depthlab.commands.depth import load_trials_for, read_prices_for, unknown_models
    from depthlab.io import read_tasks
    from depthlab.measures import plan_missing, sweep_runs

    try:
        load = read_tasks(args.tasks, dataset=args.dataset)
    except ValueError as exc:
        print(f"depthlab plan: {exc}", file=sys.stderr)
        return 1
    for item in load.rejected:
        print(f"depthlab plan: task rejected: {item}", file=sys.stderr)
    tasks = load.tasks
    if tasks.height == 0:
        found = f"{len(load.rejected)} task directories rejected" if load.rejected else "no task directories found"
        print(f"depthlab plan: {found} under {args.tasks}", file=sys.stderr)
        return 1
    trials = load_trials_for(args, "plan") if args.paths else schema.empty("trials")
    if trials is None:
        return 1
    mistake = unknown_models(args.models, trials, "in these logs") if args.paths and not args.new_models else None
    if mistake:
        print(f"depthlab plan: {mistake} (a model with no runs yet: add --new-models)", file=sys.stderr)
        return 1
    bayes = args.error is not None or args.mode == "bayes"
    mode = "bayes" if bayes else args.mode
    if args.forecast and not bayes:
        print("depthlab plan: --forecast needs --error (the Bayesian planner)", file=sys.stderr)
        return 2
    if args.prices is not None and not args.forecast:
        print("depthlab plan: --prices prices the forecast: it needs --forecast", file=sys.stderr)
        return 2
    prices = read_prices_for(args, "plan") if args.forecast else None
    if args.forecast and prices is None:
        return 1
    if args.pass_prob is not None and not args.forecast:
        print("depthlab plan: --pass-prob needs --forecast (it prices a measurement)", file=sys.stderr)
        return 2
    try:
        plan = plan_missing(
            trials,
            tasks,
            models=args.models,
            caps=args.caps,
            attempts=args.attempts,
            mode=mode,
            pass_rule=args.pass_rule,
            q=None if bayes else args.q,
            max_attempts=args.max_attempts,
            **({"error": args.error} if args.error is not None else {}),
        )
    except (TypeError, ValueError) as exc:
        print(f"depthlab plan: {exc}", file=sys.stderr)
        return 1
    if args.forecast:
        error = 0.05 if args.error is None else args.error
        try:
            lines = forecast_lines(
                trials, tasks, models=args.models, caps=args.caps, error=error, max_attempts=args.max_attempts,
                prices=prices, pass_prob=args.pass_prob, luck=args.luck,
            )  # fmt: skip
        except ValueError as exc:
            print(f"depthlab plan: {exc}", file=sys.stderr)
            return 1
        for line in lines:
            print(line, file=sys.stderr)
    per_cell = args.max_attempts if args.attempts == "auto" else args.attempts
    sweep = sweep_runs(tasks.height, n_models=len(args.models), caps=args.caps, attempts=per_cell)
    runs = int(plan["attempts"].sum()) if plan.height else 0
    n_tasks = plan.select("dataset", "task").unique().height
    print(f"{mode} plan: {runs} runs over {n_tasks} tasks (exhaustive sweep: {sweep} runs)", file=sys.stderr)
    write_table(plan, args.output)
    if args.harbor_configs:
        written = write_harbor_configs(plan, tasks, args.harbor_configs, agent=args.agent)
        print(f"wrote {len(written)} Harbor job configs to {args.harbor_configs}", file=sys.stderr)
    return 0


def harbor_job_configs(
    plan: pl.DataFrame, tasks: pl.DataFrame, *, agent: str = "terminus-2"
) -> dict[str, JobConfigRecord]:
    """One Harbor JobConfig per (model, cap, attempts) of ``plan``: file name -> config (its record).

    Built with :func:`depthlab.io.harbor_writer.job_config`, so Harbor's own ``JobConfig`` model
    accepts it.

    Each lists, per task folder, the task names to run (``datasets[].path`` + ``task_names``,
    from the tasks table's ``source`` paths), with ``agents[0].kwargs.max_turns`` = the cap (the
    only cap key Harbor's terminus-2 accepts: it rejects unknown kwargs), the sentence stating the
    cap appended to every instruction (``extra_instructions``; the loaders read a trial whose
    config has both as run at that stated cap) and ``n_attempts`` = the cell's further attempts.
    """
    # imported here, not at the top: `depthlab --help` imports every verb module for its HELP
    import polars as pl

    from depthlab.io import harbor_writer

    located = plan.join(
        tasks.select("dataset", "task", "source"), on=["dataset", "task"], how="left", nulls_equal=True
    ).with_columns(folder=pl.col("source").map_elements(_parent, return_dtype=pl.String))
    several = located.select("model", "cap", "attempts").unique().group_by("model", "cap").len()
    configs: dict[str, JobConfigRecord] = {}
    for (model, cap, attempts), cells in located.group_by(["model", "cap", "attempts"], maintain_order=True):
        slug = model.replace("/", "-")
        suffix = (
            ""
            if several.filter((pl.col("model") == model) & (pl.col("cap") == cap))["len"][0] == 1
            else (f"__attempts-{attempts}")
        )
        name = f"{slug}__cap-{cap:02d}{suffix}"
        configs[f"{name}.json"] = harbor_writer.job_config(
            f"depthlab-plan__{name}",
            "jobs",
            [harbor_writer.agent_config(agent, model, {harbor_writer.TURN_LIMIT_KEY: int(cap)})],
            datasets=harbor_writer.dataset_configs(cells.select("folder", "task").iter_rows()),
            n_attempts=int(attempts),
            extra_instructions=harbor_writer.stated_cap_instructions(int(cap)),
        )
    return dict(sorted(configs.items()))


def write_harbor_configs(
    plan: pl.DataFrame, tasks: pl.DataFrame, out_dir: str | Path, *, agent: str = "terminus-2"
) -> list[Path]:
    """Write :func:`harbor_job_configs` as JSON files in ``out_dir``; return their paths."""
    from depthlab.io import harbor_writer

    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, config in harbor_job_configs(plan, tasks, agent=agent).items():
        harbor_writer.write_json(folder / name, config)
        paths.append(folder / name)
    return paths


def _parent(source: str | None) -> str | None:
    """The folder holding the task folder ``source`` names (Harbor's ``datasets[].path``)."""
    from depthlab.runner.task import task_folder

    return os.path.dirname(os.fspath(task_folder(source.rstrip("/")))) if source else None
