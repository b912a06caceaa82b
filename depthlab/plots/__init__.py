"""Figures of the audit, in the seaborn manner: tidy tables in, matplotlib figures out.

Two levels, as in seaborn, and one naming rule between them:

* a **figure-level** function ``X(...) -> Figure`` lays out panels, legends and titles and
  returns a :class:`~matplotlib.figure.Figure`;
* it draws its panels with the **axes-level** function ``X_plot(..., ax=None) -> Axes``, which
  draws one panel into the :class:`~matplotlib.axes.Axes` given as ``ax=`` (a new figure when
  omitted) and returns that Axes, so a figure of your own can combine them. A figure with panels
  of several kinds draws the others with general axes-level functions (:func:`strip_plot`,
  :func:`compounding_plot`, :func:`label_plot`).

``tests/test_plots.py`` checks the rule for every figure-level function. One module per audit
question (the notebooks' topics), every name importable from here:

* :mod:`depthlab.plots.summary` (``01_collections``): :func:`collection_summary`, and the general
  :func:`strip_plot`;
* :mod:`depthlab.plots.turns` (``02_turns_vs_depth``): :func:`turns_vs_depth`,
  :func:`turns_minus_depth`, :func:`depth_given_turns`, :func:`turns_by_model`;
* :mod:`depthlab.plots.difficulty` (``03_depth_predicts_difficulty``, ``07_depth_proxy``):
  :func:`forest`, :func:`work_vs_pass_rate`;
* :mod:`depthlab.plots.labels` (``04_labels``): :func:`label_pass_rates`, :func:`label_depths`, and
  the general :func:`label_plot`;
* :mod:`depthlab.plots.split` (``05_quadrants``): :func:`quadrants`;
* :mod:`depthlab.plots.segments` (``06_segments``): :func:`segment_reliability` (and
  :func:`compounding_plot`, its right panel), :func:`segment_reliability_by_model`,
  :func:`paired_depths`;
* :mod:`depthlab.plots.uncertainty` (``08_depth_uncertainty``): :func:`depth_distribution`;
* :mod:`depthlab.plots.cost` (``10_depth_cost``): :func:`depth_cost` (simulated data only);
* ``_core`` (private): the style, :func:`save`, ``order``/``palette`` resolution and the preamble
  every figure function shares; ``_docstrings`` (private): the parameter blocks written once.

Functions that draw collections take ``order`` (which collections, in which order; default: the
ones present, in :data:`depthlab.catalog.ORDER`) and ``palette`` (a mapping collection ->
colour; default :func:`depthlab.catalog.color`, the same colour in every figure). Grey
always means *pooled over collections* and black a *median*; neither ever stands for a
collection. Every figure shares one style (:data:`RC`) and is built on
:class:`matplotlib.figure.Figure` directly, without pyplot's global state, so it renders
headless and never accumulates. A figure-level function takes an
:class:`~depthlab.auditdata.AuditData` where it takes a table (a :class:`DataSource`), and a figure
of simulated data carries :data:`SIMULATED_STAMP` across its panels (a table with a ``data``
column saying ``"simulated"``, as the findings' tables have, is stamped too). Each is a
:class:`ShownFigure`, which Jupyter shows as an image when it is a cell's last expression (no
``%matplotlib`` magic needed). :func:`save` writes PNG and PDF.

Plots take tables and return figures; they never read files. The statistics they draw (Wilson
intervals, Holm-adjusted p-values) come from :mod:`depthlab.stats`.

Deprecated aliases
------------------
Four axes-level functions were renamed to follow the rule; their old names remain importable
from here as aliases of the new ones (the same function objects, listed in
:data:`DEPRECATED_ALIASES`) and will be removed in a later release:

* ``depth_shares_plot``: now :func:`collection_summary_plot`;
* ``turns_depth_plot``: now :func:`turns_vs_depth_plot`;
* ``turns_ecdf_plot``: now :func:`turns_by_model_plot`;
* ``work_pass_plot``: now :func:`work_vs_pass_rate_plot`.

Examples
--------
>>> import polars as pl
>>> from depthlab import plots, schema
>>> audit = schema.conform(pl.DataFrame({"dataset": ["tb2", "tb2"], "task": ["a", "b"],
...     "depth": [1, 3], "depth_status": ["solved", "solved"], "n_turns": [4.0, 9.0],
...     "work": [10, 50], "pass_rate": [0.8, 0.2]}), "audit")
>>> fig = plots.turns_vs_depth(audit)
>>> len(fig.axes)
1
>>> ax = plots.turns_minus_depth_plot(audit, order=["tb2"])
>>> ax.get_xlabel()
'N − D (turns taken minus depth)'
"""

from __future__ import annotations

from typing import Final

from depthlab.catalog import NAMES, ORDER, PALETTE, color, name
from depthlab.plots._core import RC, SIMULATED_STAMP, DataSource, Palette, ShownFigure, save
from depthlab.plots.checks import check_outcomes, check_outcomes_plot, key_step_rules, key_step_rules_plot
from depthlab.plots.cost import depth_cost, depth_cost_plot
from depthlab.plots.difficulty import forest, forest_plot, work_vs_pass_rate, work_vs_pass_rate_plot
from depthlab.plots.labels import label_depths, label_depths_plot, label_pass_rates, label_pass_rates_plot, label_plot
from depthlab.plots.segments import (
    compounding_plot,
    paired_depths,
    paired_depths_plot,
    segment_reliability,
    segment_reliability_by_model,
    segment_reliability_by_model_plot,
    segment_reliability_plot,
)
from depthlab.plots.split import quadrants, quadrants_plot
from depthlab.plots.summary import collection_summary, collection_summary_plot, strip_plot
from depthlab.plots.turns import (
    NEGATIVE_GAP_NOTE,
    depth_given_turns,
    depth_given_turns_plot,
    turns_by_model,
    turns_by_model_plot,
    turns_minus_depth,
    turns_minus_depth_plot,
    turns_vs_depth,
    turns_vs_depth_plot,
)
from depthlab.plots.uncertainty import depth_distribution, depth_distribution_plot

__all__ = [
    "NAMES",
    "NEGATIVE_GAP_NOTE",
    "ORDER",
    "PALETTE",
    "RC",
    "SIMULATED_STAMP",
    "DataSource",
    "Palette",
    "ShownFigure",
    "check_outcomes",
    "check_outcomes_plot",
    "collection_summary",
    "collection_summary_plot",
    "color",
    "compounding_plot",
    "depth_cost",
    "depth_cost_plot",
    "depth_distribution",
    "depth_distribution_plot",
    "depth_given_turns",
    "depth_given_turns_plot",
    "forest",
    "forest_plot",
    "key_step_rules",
    "key_step_rules_plot",
    "label_depths",
    "label_depths_plot",
    "label_pass_rates",
    "label_pass_rates_plot",
    "label_plot",
    "name",
    "paired_depths",
    "paired_depths_plot",
    "quadrants",
    "quadrants_plot",
    "save",
    "segment_reliability",
    "segment_reliability_by_model",
    "segment_reliability_by_model_plot",
    "segment_reliability_plot",
    "strip_plot",
    "turns_by_model",
    "turns_by_model_plot",
    "turns_minus_depth",
    "turns_minus_depth_plot",
    "turns_vs_depth",
    "turns_vs_depth_plot",
    "work_vs_pass_rate",
    "work_vs_pass_rate_plot",
]

# the deprecated aliases (see the module docstring); kept out of __all__ so the API reference lists each function once
depth_shares_plot = collection_summary_plot
turns_depth_plot = turns_vs_depth_plot
turns_ecdf_plot = turns_by_model_plot
work_pass_plot = work_vs_pass_rate_plot

#: Old name -> new name of every renamed function (the aliases above).
DEPRECATED_ALIASES: Final[dict[str, str]] = {
    "depth_shares_plot": "collection_summary_plot",
    "turns_depth_plot": "turns_vs_depth_plot",
    "turns_ecdf_plot": "turns_by_model_plot",
    "work_pass_plot": "work_vs_pass_rate_plot",
}
