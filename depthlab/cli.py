"""The ``depthlab`` command.

Each verb lives in its own module under :mod:`depthlab.commands`, which defines
``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``. Verb modules
are imported only when that verb runs, so ``depthlab --help`` is instant.

A mistake on the command line (an unknown option, a bad value, an output file that cannot be
written as a table) is one line on stderr, ``depthlab <verb>: <what is wrong>``, and exit code
2, before any work starts; a mistake found in the data (a model not in the runs) is one line and
exit code 1.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

# verb -> one-line help; the module is depthlab.commands.<verb>
VERBS: dict[str, str] = {
    "trials": "Load run logs into the trials table (-o FILE.csv|.parquet).",
    "tasks": "Load task directories into the tasks table (-o FILE.csv|.parquet).",
    "depth": "Estimate each task's depth D from capped runs (-o FILE).",
    "plan": "List the (task, model, cap) runs still missing to pin D (-o FILE).",
    "run": "Run task(s) at a stated turn cap with an LLM agent in Docker.",
    "fill": "Run the missing cells of a plan, resumably, with bounded concurrency.",
    "simulate": "Write simulated Harbor run logs of known depth (demo and validation data).",
    "reproduce": "Re-execute every audit notebook with papermill and regenerate the figures.",
    "fetch": "Download a public data source (needs network).",
    "proxy": "Read the trajectory depth proxy from uncapped runs' trajectories (-o FILE).",
    "cache": "Show (info) or empty (clear) the trials cache.",
    "measure": "Measure every task's depth D: oracle preflight, then adaptive capped rounds (Harbor or local).",
}


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line naming the command (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _command(verb: str):  # noqa: ANN202 - a module
    return importlib.import_module(f"depthlab.commands.{verb}")


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        if not args or args[0] not in VERBS:
            # build only the top-level parser so help does not import every verb
            from depthlab import __version__

            parser = _Parser(prog="depthlab", description="Measure how deep terminal-agent tasks are.")
            parser.add_argument("--version", action="version", version=f"depthlab {__version__}")
            sub = parser.add_subparsers(dest="verb", metavar="VERB")
            for verb, help_text in VERBS.items():
                sub.add_parser(verb, help=help_text)
            parser.parse_args(args or ["--help"])
            return 2
        verb = args[0]
        module = _command(verb)
        verb_parser = _Parser(prog=f"depthlab {verb}", description=VERBS[verb])
        module.add_arguments(verb_parser)
        parsed = verb_parser.parse_args(args[1:])
    except SystemExit as exc:  # --help, --version and command-line mistakes end here, with their exit code
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return int(module.run(parsed) or 0)
    except KeyboardInterrupt:
        print("depthlab: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
