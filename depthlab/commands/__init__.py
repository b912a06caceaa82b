"""One module per ``depthlab`` verb: ``HELP``-free, each defines ``add_arguments`` and ``run``."""
