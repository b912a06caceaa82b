"""The ``depthlab`` command.

Each verb lives in its own module under :mod:`depthlab.commands`, which defines
``HELP`` (one line, shown in ``depthlab --help`` and as the verb's description),
``add_arguments(parser)`` and ``run(args) -> int``. Adding a verb is writing that module and
adding its name to :data:`VERBS`. ``depthlab --help`` imports every verb module to read its
``HELP``, so verb modules stay light at import: whatever a verb needs beyond the standard
library and depthlab's foundation is imported inside ``add_arguments`` or ``run``.

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
from types import ModuleType
from typing import NoReturn

#: The verbs, in the order ``depthlab --help`` lists them; each is the module depthlab.commands.<verb>.
VERBS: tuple[str, ...] = (
    "trials",
    "tasks",
    "depth",
    "plan",
    "measure",
    "check",
    "run",
    "fill",
    "simulate",
    "reproduce",
    "fetch",
    "proxy",
    "cache",
    "export",
)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line naming the command (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _command(verb: str) -> ModuleType:
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
            for verb in VERBS:
                sub.add_parser(verb, help=_command(verb).HELP)
            parser.parse_args(args or ["--help"])
            return 2
        verb = args[0]
        module = _command(verb)
        verb_parser = _Parser(prog=f"depthlab {verb}", description=module.HELP)
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
