"""Simulated Harbor run logs of tasks with known depth D* and work W* (demo and validation data).

This is a demo and a validation tool. Its numbers are made up by a documented generative model;
they are **never a claim about the real collections**, only collections *named* after them so
that the audit notebooks and the loaders can be exercised end to end.

One module per concern, every public name importable from here:

* :mod:`depthlab.simulate.model`: the generative model (tasks, models, trials, trajectories; its
  documentation says what is drawn and why), :data:`MODELS`, :data:`COLLECTIONS`,
  :data:`MODEL_VERSION` and :data:`PUBLIC_TURN_LIMIT`;
* :mod:`depthlab.simulate.writing`: :func:`write_runs`, the writing of a simulation's task dirs and
  Harbor job dirs, every document built by the one Harbor writer :mod:`depthlab.io.harbor_writer`;
* :mod:`depthlab.simulate.steps`: the multi-step layout of segmented tasks and their runs
  (``write_runs(segments_as="steps")``: Harbor ``[[steps]]`` tasks and ``step_results`` trials);
* :mod:`depthlab.simulate.truth`: :class:`SimulationSummary` and its truth tables (true D*, W* and
  each model's effective depth);
* :mod:`depthlab.simulate.replay`: the planner replay, :func:`run_cells`, :func:`write_cells`,
  :func:`replay_plan` and :class:`PlanReplay`: "run" planned cells from the true model.

Names with a leading underscore are shared among these modules only. Deterministic for a seed:
the same seed and parameters write the same bytes.

>>> import tempfile
>>> from depthlab import simulate
>>> summary = simulate.write_runs(tempfile.mkdtemp(), seed=1, scale=0.01, public_attempts=0)
>>> summary.n_tasks, summary.models == simulate.MODELS
(7, True)
"""

from __future__ import annotations

from depthlab.simulate.model import COLLECTIONS, MODEL_VERSION, MODELS, PUBLIC_TURN_LIMIT
from depthlab.simulate.replay import PlanReplay, replay_plan, run_cells, write_cells
from depthlab.simulate.truth import SimulationSummary
from depthlab.simulate.writing import write_runs

__all__ = [
    "COLLECTIONS",
    "MODELS",
    "MODEL_VERSION",
    "PUBLIC_TURN_LIMIT",
    "PlanReplay",
    "SimulationSummary",
    "replay_plan",
    "run_cells",
    "write_cells",
    "write_runs",
]
