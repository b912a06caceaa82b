"""The ``depthlab`` command.

Each verb lives in its own module under :mod:`depthlab.commands`, which defines
``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``. Verb modules
are imported only when that verb runs, so ``depthlab --help`` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

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
    "cache": "Show (info) or empty (clear) the trials cache.",
}


def _command(verb: str):  # noqa: ANN202 - a module
    return importlib.import_module(f"depthlab.commands.{verb}")


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in {"-h", "--help"} or args[0] not in VERBS:
        # build only the top-level parser so help does not import every verb
        parser = argparse.ArgumentParser(prog="depthlab", description="Measure how deep terminal-agent tasks are.")
        sub = parser.add_subparsers(dest="verb", metavar="VERB")
        for verb, help_text in VERBS.items():
            sub.add_parser(verb, help=help_text)
        parser.parse_args(args or ["--help"])
        return 2
    verb = args[0]
    module = _command(verb)
    verb_parser = argparse.ArgumentParser(prog=f"depthlab {verb}", description=VERBS[verb])
    module.add_arguments(verb_parser)
    parsed = verb_parser.parse_args(args[1:])
    try:
        return int(module.run(parsed) or 0)
    except KeyboardInterrupt:
        print("depthlab: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
