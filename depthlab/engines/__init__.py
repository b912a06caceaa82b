"""Engines that measure D: adaptive rounds of capped runs until every task's depth is known.

:func:`measure` is the loop (:mod:`depthlab.engines.rounds`): the oracle preflight, then rounds
of :func:`depthlab.measures.plan_missing` (``mode="adaptive"``), each run by an engine, until
every task is solved (D pinned) or unsolved, or the budget is spent. Two engines:

* :class:`HarborEngine` (:mod:`depthlab.engines.harbor`) writes each round as Harbor job configs
  and runs them with ``harbor run`` (Harbor's local docker environment or any cloud sandbox it
  supports); ``harbor jobs resume`` continues an interrupted job.
* :class:`LocalEngine` (:mod:`depthlab.engines.local`) runs each round with depthlab's own
  runner (:func:`depthlab.runner.fill`) on this machine.

``depthlab measure`` is the command. Both engines leave Harbor-format jobs that
``harbor view`` and :func:`depthlab.load_trials` read.

>>> from depthlab.engines import SUPPORTED_HARBOR
>>> SUPPORTED_HARBOR
('0.26.0', '0.27.0')
"""

from __future__ import annotations

from depthlab.engines.harbor import SUPPORTED_HARBOR, HarborCommand, HarborEngine, find_harbor
from depthlab.engines.local import LocalEngine
from depthlab.engines.rounds import Engine, EngineError, MeasureResult, RoundReport, depth_table, measure

__all__ = [
    "SUPPORTED_HARBOR",
    "Engine",
    "EngineError",
    "HarborCommand",
    "HarborEngine",
    "LocalEngine",
    "MeasureResult",
    "RoundReport",
    "depth_table",
    "find_harbor",
    "measure",
]
