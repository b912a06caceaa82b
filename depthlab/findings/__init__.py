"""The paper's findings, one function each, computed on an :class:`~depthlab.auditdata.AuditData`.

Every function returns a tidy table with the columns of :data:`FINDING`: one row per statistic
and group, with its value, its interval where one exists (``interval`` says whether ``ci_low`` /
``ci_high`` are a 95% confidence interval or a range of values), ``n`` and its ``unit``, and the
sample it was computed on (collections, models, and whether the data is simulated or real). Each
docstring states the paper's definition and sample; :data:`depthlab.paper.REPORTED` names, for
each number the paper reports, the function and row that compute the same quantity here.

Groups of collections follow the paper: the six audited collections are :data:`AUDITED`; the
synthetic ones are :data:`SYNTHETIC` (TMax, FACET, SETA, RST; never the paper's own DEPTH-style
set ``depth``); the human-curated ones are :data:`HUMAN` (TB2, TW).

One module per audit question, each named after its notebook's topic; every public name is
importable from here:

* :mod:`~depthlab.findings.collection` (01): tasks, solved tasks, shares of D, synthetic versus
  human, per-model pass rates;
* :mod:`~depthlab.findings.turns` (02): N beside D, the 6-10 window, the second model;
* :mod:`~depthlab.findings.difficulty` (03): pass rate against D, N and W, the forest table;
* :mod:`~depthlab.findings.labels` (04): difficulty labels and author ratings;
* :mod:`~depthlab.findings.quadrants` (05): the depth/work quadrants;
* :mod:`~depthlab.findings.segments` (06): the DEPTH-style set, segment reliability, the sign test;
* :mod:`~depthlab.findings.proxy` (07): the trajectory depth proxy;
* :mod:`~depthlab.findings.uncertainty` (08): how sure D is: censored shares, split-half D, the
  second-model drops noise alone gives, pass ~ D | W with a permutation p-value and a hierarchical bootstrap;
* :mod:`~depthlab.findings.checks` (09): do verifiers see the key steps? (the checks table of
  ``depthlab check`` beside the paper's counts);
* :mod:`~depthlab.findings.human_time`: D, N and pass rate against the authors' expert time estimate
  (the human minutes METR's horizons are read in);
* :mod:`~depthlab.findings.results`: a notebook's results JSON and its comparison with the paper.

The row-building engine and the table schema are in the private ``_core``; the docstring
fragments the functions share in ``_docs``; the within-collection statistic of every row pooled
over several collections in ``_pooled`` (its definition in that module's docstring).

Examples
--------
>>> from depthlab import findings
>>> from depthlab.auditdata import audit_data
>>> data = audit_data("tb2")
>>> rates = findings.model_pass_rates(data, status_rule="all")  # every trial counted, as the release did
>>> row = rates.filter(group="tmax-27b").row(0, named=True)
>>> round(100 * row["value"], 2), row["n"], row["data"]
(42.7, 445, 'real')
"""

from __future__ import annotations

from depthlab.catalog import AUDITED, HUMAN, OWN, SYNTHETIC
from depthlab.findings._core import (
    POOLED_GROUPS,
    UNSOLVED_RANK,
    computed,
    main_model,
    stack,
)
from depthlab.findings.checks import verifiers_see_key_steps
from depthlab.findings.collection import collection_counts, depth_shares, model_pass_rates, synthetic_vs_human
from depthlab.findings.difficulty import (
    forest_table,
    pass_depth_given_work,
    pass_turns_given_depth,
    pass_turns_given_work,
)
from depthlab.findings.human_time import HUMAN_TIME_ROWS, depth_vs_human_time
from depthlab.findings.labels import depth_vs_author_rating, label_pass_correlations
from depthlab.findings.proxy import PROXY_FINDINGS, proxy_findings, proxy_forest_table
from depthlab.findings.quadrants import quadrant_cells, quadrant_percentiles
from depthlab.findings.results import record_results
from depthlab.findings.segments import (
    PAPER_SEGMENTS,
    environment_pairs,
    merged_segments,
    own_set_summary,
    pass_at_1,
    segment_reliability,
    sign_test_depth,
)
from depthlab.findings.turns import depth_given_turns, model_turns_beside_depth, second_model, turns_beside_depth
from depthlab.findings.uncertainty import (
    censored_depth_shares,
    depth_reliability,
    pass_depth_given_work_robust,
    second_model_noise,
)
from depthlab.schema import FINDING

__all__ = [
    "AUDITED",
    "FINDING",
    "HUMAN",
    "HUMAN_TIME_ROWS",
    "OWN",
    "PAPER_SEGMENTS",
    "POOLED_GROUPS",
    "PROXY_FINDINGS",
    "SYNTHETIC",
    "UNSOLVED_RANK",
    "censored_depth_shares",
    "collection_counts",
    "computed",
    "depth_given_turns",
    "depth_reliability",
    "depth_shares",
    "depth_vs_author_rating",
    "depth_vs_human_time",
    "environment_pairs",
    "forest_table",
    "label_pass_correlations",
    "main_model",
    "merged_segments",
    "model_pass_rates",
    "model_turns_beside_depth",
    "own_set_summary",
    "pass_at_1",
    "pass_depth_given_work",
    "pass_depth_given_work_robust",
    "pass_turns_given_depth",
    "pass_turns_given_work",
    "proxy_findings",
    "proxy_forest_table",
    "quadrant_cells",
    "quadrant_percentiles",
    "record_results",
    "second_model",
    "second_model_noise",
    "segment_reliability",
    "sign_test_depth",
    "stack",
    "synthetic_vs_human",
    "turns_beside_depth",
    "verifiers_see_key_steps",
]
