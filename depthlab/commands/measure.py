"""``depthlab measure TASKS... --models A,B --engine {harbor,local}``: one command measures D."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from depthlab._defaults import DEFAULT_API_KEY_ENV
from depthlab._tables import output_table

HELP = "Measure every task's depth D: oracle preflight, then adaptive capped rounds (Harbor or local)."

_EPILOG = """\
Each round plans the cheapest next runs from every trial in --jobs-dir (depthlab plan --mode
adaptive), runs them, and plans again, until every task's D is pinned or the task is unsolved
(or --max-runs / --max-cost would be passed). Run the same command again after an interruption
(Ctrl-C, kill -9, a lost machine): it continues from the jobs folder, with no trial lost or run twice.

  --engine harbor   Harbor runs each round (harbor run --config, one job per cap); --harbor-env
                    picks its environment: docker (local), daytona, modal, e2b, runloop, gke, ...
  --engine local    depthlab's own runner (depthlab fill) runs each round in Docker here.

A task changed since its trials ran costs only the runs its change invalidates, decided per trial as
Harbor's `run --diff` decides: a changed solution or metadata reuses them, a changed verifier alone
regrades them (re-run for now on both engines, saying why), a changed environment or instruction re-runs
them. The summary counts trials reused, regraded and re-run; the depth table names each task's version
(task_checksum, task_version).

The API key is read from the environment (--api-key-env, default OPENAI_API_KEY), never written.
The jobs stay in --jobs-dir: `harbor view JOBS_DIR` and `depthlab depth JOBS_DIR` read them.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from depthlab.commands.depth import add_ladder_arguments, add_prices_argument
    from depthlab.commands.plan import add_attempts_arguments, add_error_argument

    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("tasks", nargs="+", metavar="TASKS", help="task folders, or folders of them")
    add_ladder_arguments(parser, models_required=True)
    parser.add_argument("--engine", choices=("harbor", "local"), default="harbor", help="default: harbor")
    parser.add_argument("--base-url", default=None, metavar="URL", help="the model endpoint (OpenAI-compatible)")
    parser.add_argument(
        "--api-key-env",
        default=DEFAULT_API_KEY_ENV,
        metavar="VAR",
        help=f"environment variable holding the API key (default {DEFAULT_API_KEY_ENV}; never written to disk)",
    )
    parser.add_argument("--jobs-dir", default="jobs", metavar="DIR", help="where the jobs go and resume from")
    parser.add_argument(
        "-o", "--output", required=True, type=output_table, metavar="FILE", help="the depth table (.csv or .parquet)"
    )
    parser.add_argument("-n", "--concurrency", type=int, default=2, help="trials at once (default 2)")
    add_attempts_arguments(parser)
    add_error_argument(parser)
    parser.add_argument("--max-runs", type=int, default=None, metavar="N", help="stop before passing N runs")
    parser.add_argument("--max-cost", type=float, default=None, metavar="USD", help="stop before passing this cost")
    parser.add_argument(
        "--harbor-env", default="docker", metavar="ENV", help="Harbor environment type (default docker)"
    )
    parser.add_argument("--harbor", default=None, metavar="CMD", help="how to call Harbor (default: harbor on PATH)")
    parser.add_argument(
        "--profile",
        choices=("harbor", "strict"),
        default="harbor",
        help="security profile (docs/runner.md): 'harbor' (default) runs a task as Harbor does; 'strict': on "
        "--engine local no capability and no network, on --engine harbor every process the agent left is killed "
        "before the tests",
    )
    parser.add_argument(
        "--price-in", type=float, metavar="USD", help="--engine local: USD per million prompt tokens (cost accounting)"
    )
    parser.add_argument(
        "--price-out", type=float, metavar="USD", help="--engine local: USD per million completion tokens"
    )
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=None,
        metavar="SEC",
        help="seconds one model request may take (default: --engine local the task's agent timeout, --engine "
        "harbor LiteLLM's); on both engines a run that ends while a request has no answer is an outage (invalid)",
    )
    add_prices_argument(
        parser, what="; given, the depth table gains what each D cost (a summary is printed either way)"
    )
    parser.add_argument("--no-preflight", action="store_true", help="skip the oracle preflight")
    parser.add_argument("--dataset", default=None, help="tag every task with this dataset name")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def command_line_mistake(args: argparse.Namespace) -> str | None:
    """The first mistake on the command line that would only show after the money is spent (None if none).

    Every one is found before any run: ``measure``'s own arguments by its own check
    (:func:`depthlab.engines.rounds.check_arguments`: models, caps, attempts, budgets), the local
    engine's prices and request timeout finite (a NaN price would be written into every trial's
    result and make it unreadable; a negative one makes ``--max-cost`` do nothing), the output
    file writable.
    """
    import math

    from depthlab._checks import check_positive_int
    from depthlab.engines.rounds import check_arguments

    try:
        check_arguments(
            args.models, args.caps, args.attempts, args.max_runs, args.max_cost, function=_CLI,
            max_attempts=args.max_attempts,
        )  # fmt: skip
        check_positive_int(args.concurrency, "concurrency", _CLI)
    except (TypeError, ValueError) as error:
        return re.sub(rf"^The '(\w+)' parameter of {_CLI}", lambda m: "--" + m.group(1).replace("_", "-"), str(error))
    for option in ("price_in", "price_out"):
        value = getattr(args, option, None)
        if value is not None and not (math.isfinite(value) and value >= 0):
            return f"--{option.replace('_', '-')} must be a finite amount in USD >= 0, got {value}"
    timeout = getattr(args, "request_timeout", None)
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        return f"--request-timeout must be a finite number of seconds > 0, got {timeout}"
    return unwritable(args.output)


_CLI = "depthlab measure"


def unwritable(path: Path) -> str | None:
    """Why the table could not be written to ``path`` (None when it could): checked before any run.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / "file").write_text("")
    0
    >>> unwritable(folder / "file" / "depth.csv")
    "-o: cannot write ... its folder ... is a file"
    """
    import os

    target = path.absolute()
    if target.exists() and not target.is_file():
        return f"-o: cannot write {str(path)!r}: it exists and is not a file"
    if target.exists() and not os.access(target, os.W_OK):
        return f"-o: cannot write {str(path)!r}: permission denied"
    folder = target.parent
    while not folder.exists():  # the table's folders are made when it is written
        folder = folder.parent
    if not folder.is_dir():
        return f"-o: cannot write {str(path)!r}: its folder {str(folder)!r} is a file"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"-o: cannot write {str(path)!r}: the folder {str(folder)!r} is not writable"
    return None


def long_instruction_notes(tasks: Any) -> list[str]:
    """One line per task whose instruction (or a step's) the agent is not sent whole, on either engine."""
    from depthlab.runner.agent import INSTRUCTION_EXCERPT_CHARS, INSTRUCTION_FILE, INSTRUCTION_LIMIT_BYTES
    from depthlab.runner.task import task_folder

    notes = []
    for name, source in tasks.select("task", "source").iter_rows():
        folder = task_folder(source)
        for path in sorted([folder / "instruction.md", *folder.glob("steps/*/instruction.md")]):
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if size > INSTRUCTION_LIMIT_BYTES:
                where = "" if path.parent == folder else f" (step {path.parent.name!r})"
                notes.append(
                    f"note: the instruction of {name}{where} is {size} bytes, over {INSTRUCTION_LIMIT_BYTES}: the "
                    f"agent is sent its first {INSTRUCTION_EXCERPT_CHARS} characters and told to read it all in "
                    f"{INSTRUCTION_FILE} (on both engines)"
                )
    return notes


def run(args: argparse.Namespace) -> int:
    from depthlab._tables import write_table
    from depthlab.commands.depth import cost_lines, read_prices_for
    from depthlab.commands.run import sigterm_as_interrupt
    from depthlab.engines import Engine, EngineError, HarborEngine, LocalEngine, measure
    from depthlab.io import read_tasks

    mistake = command_line_mistake(args)
    if mistake:
        print(f"depthlab measure: {mistake}", file=sys.stderr)
        return 2
    prices = read_prices_for(args, "measure")  # a bad price file is refused before any run
    if prices is None:
        return 2
    try:
        load = read_tasks(args.tasks, dataset=args.dataset)
    except (ValueError, OSError) as exc:
        print(f"depthlab measure: {exc}", file=sys.stderr)
        return 1
    for item in load.rejected:
        print(f"depthlab measure: task rejected: {item}", file=sys.stderr)
    tasks = load.tasks
    if tasks.height == 0:
        found = f"{len(load.rejected)} task folders rejected" if load.rejected else "no task folders found"
        print(f"depthlab measure: {found} under {', '.join(args.tasks)}", file=sys.stderr)
        return 1
    duplicated = tasks.group_by("task").len().filter(tasks.group_by("task").len()["len"] > 1)["task"].to_list()
    if duplicated:
        print(f"depthlab measure: task names must be unique across TASKS; repeated: {duplicated}", file=sys.stderr)
        return 1
    for note in long_instruction_notes(tasks):
        print(f"depthlab measure: {note}", file=sys.stderr)
    if args.engine == "harbor":
        engine: Engine = HarborEngine(
            args.jobs_dir,
            base_url=args.base_url,
            harbor=args.harbor,
            environment=args.harbor_env,
            concurrency=args.concurrency,
            api_key_env=args.api_key_env,
            guard="all" if args.profile == "strict" else "suspects",
            request_timeout=args.request_timeout,
        )
    else:
        if not args.base_url:
            print("depthlab measure: --engine local needs --base-url (the model endpoint)", file=sys.stderr)
            return 2
        from depthlab.runner.profiles import RunSettings

        engine = LocalEngine(
            args.jobs_dir,
            base_url=args.base_url,
            api_key_env=args.api_key_env,
            concurrency=args.concurrency,
            fill_options={"settings": RunSettings(profile=args.profile)},
            prices=(args.price_in, args.price_out),
            request_timeout=args.request_timeout,
        )
    try:
        with sigterm_as_interrupt():
            result = measure(
                engine,
                tasks,
                models=args.models,
                caps=args.caps,
                attempts=args.attempts,
                pass_rule=args.pass_rule,
                max_attempts=args.max_attempts,
                max_runs=args.max_runs,
                max_cost=args.max_cost,
                preflight=not args.no_preflight,
                progress=not args.no_progress,
                error=args.error,
            )
    except (EngineError, OSError, RuntimeError, ValueError) as exc:
        print(f"depthlab measure: {exc}", file=sys.stderr)
        return 1
    print(result.render(), file=sys.stderr)
    if args.error is not None:
        for row in result.depth.iter_rows(named=True):
            where = "beyond the ladder" if row["depth"] is None else f"D = {row['depth']}"
            sure = "" if row["p_depth"] is None else f" (probability {row['p_depth']:.3f})"
            print(f"  {row['task']}: {where}{sure}, {row['status']}", file=sys.stderr)
    costed, lines = cost_lines(result.trials, result.depth, *prices, caps=args.caps, models=args.models)
    for line in lines:
        print(line, file=sys.stderr)
    if result.depth.height:
        try:
            write_table(result.depth if args.prices is None else costed, args.output)
        except OSError as exc:  # the folder changed since the check: the trials stay in --jobs-dir
            where = f"the trials are in {args.jobs_dir}"
            print(f"depthlab measure: cannot write {args.output}: {exc}; {where}", file=sys.stderr)
            return 1
        print(f"wrote the depth table of {result.depth.height} task(s) to {args.output}", file=sys.stderr)
    if result.excluded.height and result.depth.height == 0:
        return 1  # every task failed its oracle
    return 0 if result.complete else 1
