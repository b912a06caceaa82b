"""``depthlab check TASKS...``: do the tasks' verifiers see their key steps? Checks by replay, no model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from depthlab._tables import output_table

HELP = "Check tasks' verifiers by replaying their reference solutions: oracle, before, key step, mutants, static."

_EPILOG = """\
Every check replays reference solutions, whole or edited, in fresh containers (no model is called)
and reads each step's verdict; see docs/checks.md for what each check means, how to mark a key step
(# key-step begin / # key-step end in solve.sh) and what a check costs in replays. A replay has the
network its task allows, as Harbor runs it (--offline: none, the paper's rule); each oracle row says
which. One line per replay goes to stderr as it ends. The replays are Harbor trials in --jobs-dir
(`harbor view`, `depthlab trials` read them); run the same command again after an interruption: no
replay is done twice, none is lost. The task images built for the check are removed at the end
(--keep-images keeps them).

Exit status: 0 when no row is fault, flaky or error; 1 when one is (no Docker: every replayed row
is error), or when no task folder was found; 2 when the command cannot run (a bad option, Harbor
missing or not supported for --engine harbor).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from depthlab.schema import CHECK_NAMES

    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("tasks", nargs="+", metavar="TASKS", help="task folders, or folders of them")
    parser.add_argument(
        "--engine", choices=("local", "harbor"), default="local", help="where the replays run (default local)"
    )
    parser.add_argument(
        "--harbor", default=None, metavar="CMD", help="how to call Harbor for --engine harbor (default: harbor on PATH)"
    )
    parser.add_argument("--jobs-dir", default="jobs", metavar="DIR", help="where the replays go and resume from")
    parser.add_argument("-o", "--output", type=output_table, metavar="FILE", help="the checks table (.csv or .parquet)")
    parser.add_argument("--repeat", type=int, default=2, metavar="K", help="oracle replays per task (default 2)")
    parser.add_argument(
        "-n",
        "--concurrency",
        type=int,
        default=2,
        help="replays at once (default 2): Harbor's trials of a batch, the local engine's tasks",
    )
    parser.add_argument(
        "--mutants", type=int, default=None, metavar="M", help="a seeded sample of M mutants per step (default: all)"
    )
    parser.add_argument("--seed", type=int, default=0, help="the mutants' sample seed (default 0)")
    parser.add_argument(
        "--checks",
        default=",".join(CHECK_NAMES),
        metavar="LIST",
        help=f"comma-separated checks to run (default all: {','.join(CHECK_NAMES)})",
    )
    parser.add_argument(
        "--profile",
        choices=("harbor", "strict"),
        default="harbor",
        help="security profile of the replays, on either engine (docs/checks.md): 'harbor' (default) Docker's "
        "default capabilities and the task's network, 'strict' no capability and no network",
    )
    parser.add_argument(
        "--offline",
        action="store_true",
        help="replay with no network whatever the task allows (the paper's rule; default: the task's own network)",
    )
    parser.add_argument(
        "--keep-images", action="store_true", help="keep the task images built for the check (default: removed)"
    )


def task_folders(paths: list[str]) -> list[Path]:
    """Each path that is a task folder (has task.toml, or TB1's task.yaml), else its child folders that are, in
    order. A TB1 task is kept so that its rows say why it is not checked (it needs Harbor's migration first)."""

    from depthlab.io.tasks import TASK_FILES

    def is_task(folder: Path) -> bool:
        return any((folder / name).is_file() for name in TASK_FILES)

    found: list[Path] = []
    for text in paths:
        path = Path(text)
        if is_task(path) or not path.is_dir():
            found.append(path)
            continue
        found += sorted(child for child in path.iterdir() if is_task(child))
    return found


def run(args: argparse.Namespace) -> int:
    from depthlab._tables import write_table
    from depthlab.checks import check_tasks
    from depthlab.engines.rounds import EngineError
    from depthlab.runner.profiles import RunSettings

    if args.repeat < 1 or args.concurrency < 1 or (args.mutants is not None and args.mutants < 1):
        print("depthlab check: --repeat, --concurrency and --mutants must be at least 1", file=sys.stderr)
        return 2
    folders = task_folders(args.tasks)
    if not folders:
        print(f"depthlab check: no task folders under {', '.join(args.tasks)}", file=sys.stderr)
        return 1
    try:
        report = check_tasks(
            folders,
            jobs_dir=args.jobs_dir,
            engine=args.engine,
            checks=[name.strip() for name in args.checks.split(",") if name.strip()],
            repeat=args.repeat,
            mutants=args.mutants,
            mutant_seed=args.seed,
            settings=RunSettings(profile=args.profile),
            harbor=args.harbor,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
            offline=args.offline,
            keep_images=args.keep_images,
            concurrency=args.concurrency,
        )
    except (ValueError, EngineError) as error:
        print(f"depthlab check: {error}", file=sys.stderr)
        return 2
    for line in report.problems:
        print(f"depthlab check: {line}", file=sys.stderr)
    print(report.summary(), file=sys.stderr)
    print(
        f"depthlab check: {report.replays_run} replays run, {report.replays_reused} found done in {args.jobs_dir}",
        file=sys.stderr,
    )
    if args.output is not None:
        write_table(report.table, args.output)
    else:
        print(report.table.write_csv(), end="")
    faults = report.table.filter(report.table["outcome"].is_in(["fault", "flaky", "error"])).height
    return 1 if faults else 0
