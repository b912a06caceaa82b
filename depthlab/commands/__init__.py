"""One module per ``depthlab`` verb, listed in :data:`depthlab.cli.VERBS`.

Each defines ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``, and stays light
at import (``depthlab --help`` imports them all for their ``HELP``).
"""
