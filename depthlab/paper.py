"""The numbers the paper reports, each tied to the finding that computes the same quantity here.

Every number comes from the paper's summary as quoted in the project's issues; each has a key, a
description, the sample it refers to, a 95% confidence interval (``interval="ci95"``) or a range
of values (``interval="range"``) where the paper gives one, and the :mod:`depthlab.findings`
function, statistic and group that compute the same quantity on the same kind of sample.
A confidence interval prints in brackets, ``-0.29 [-0.53, -0.02] (95% CI)``; a range prints as a
span, ``0.53 to 0.59 (range)``, so the two are never mistaken for one another.

Examples
--------
>>> from depthlab import paper
>>> paper.get("sign_test_p").value
5.8e-11
>>> paper.get("quadrant_other_mean_percentile").text()
'0.53 to 0.59 (range)'
>>> paper.get("own_pcorr_pass_depth_given_work").text()
'-0.29 [-0.53, -0.02] (95% CI)'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from depthlab._checks import check_choice, check_frame
from depthlab.catalog import AUDITED, HUMAN, OWN, SYNTHETIC
from depthlab.schema import FINDING, PAPER_COMPARISON, PAPER_REPORTED

__all__ = ["REPORTED", "Reported", "compare", "get", "reported_for", "table"]


@dataclass(frozen=True)
class Reported:
    """One number the paper reports.

    Attributes
    ----------
    key : str
        Stable identifier.
    description : str
        What the number is, in one sentence.
    sample : str
        The tasks / runs it refers to.
    value : float or None
        The point value; None when the paper gives only a range.
    low, high : float or None
        The interval's ends, when the paper gives one.
    interval : str or None
        ``"ci95"`` (a 95% confidence interval around ``value``) or ``"range"`` (a span of values).
    function : str
        The :mod:`depthlab.findings` function computing the same quantity.
    statistic, group : str
        The row of that function's table (``key`` and ``group`` columns) holding it.
    collections : tuple of str or None
        The collections of the paper's sample (None when the paper does not name them): a row of
        this data over other collections says why in its sample text.
    differs : str
        Empty when this data's row is the paper's quantity on the same kind of sample; otherwise
        the choices the paper does not state that it rests on, or why it can only be a variant
        (printed after this data's sample, ``VARIANT: ...``).
    needs_depth : bool
        Whether the number needs D (capped runs): a row of data with no capped runs says so.
    """

    key: str
    description: str
    sample: str
    value: float | None
    low: float | None = None
    high: float | None = None
    interval: str | None = None
    function: str = ""
    statistic: str = ""
    group: str = ""
    collections: tuple[str, ...] | None = None
    differs: str = ""
    needs_depth: bool = True

    def text(self) -> str:
        """The number as printed beside this data's: ``-0.29 [-0.53, -0.02] (95% CI)``, ``1 to 2 (range)``."""
        return _format(self.value, self.low, self.high, self.interval)


def _r(
    key: str,
    description: str,
    sample: str,
    value: float | None,
    function: str,
    statistic: str,
    group: str,
    *,
    low: float | None = None,
    high: float | None = None,
    interval: str | None = None,
    collections: tuple[str, ...] | None = None,
    differs: str = "",
    needs_depth: bool = True,
) -> Reported:
    return Reported(
        key,
        description,
        sample,
        value,
        low,
        high,
        interval,
        function,
        statistic,
        group,
        collections,
        differs,
        needs_depth,
    )


_SIX = AUDITED
_SYN_SET = SYNTHETIC
_HUM_SET = HUMAN
_SYN = "solved tasks of TMax, FACET, SETA, RST"
_HUM = "solved tasks of TB2 and TW"
_OWN = "the paper's own DEPTH-style set (105 tasks)"
_OWN_SET = (OWN,)

# The choices the paper does not state, each in words once: an entry computed under one says so in
# its ``differs`` (printed VARIANT: ... beside this data's number; docs/audit.md lists them all)
_PASS_RATE = (
    "public pass rate: the paper does not define it; here the share of passing runs over every valid "
    "uncapped trial of the task, the models pooled (a model with more runs weighs more)"
)
_TB2_RUNS = (
    "the paper's TB2 pass rates are public leaderboard figures; on the bundled TB2 facts this data's "
    "are the eight small models the TMax authors released"
)
_WITHIN_NOTE = (
    "the paper does not say how it pools collections; here within-collection: D, W and the pass rate "
    "become percentile ranks, (rank - 0.5) / n, within each collection, then are pooled, so a "
    "difference between collections counts for nothing; stratified bootstrap"
)
_QUADRANT_NOTE = (
    "the paper states neither the percentile base, nor the percentile rule, nor the median, nor ties: "
    "here a task's pass-rate percentile is among all its collection's tasks with a pass rate "
    "(percentile_base='all'), as average rank / n (the within-collection correlations use "
    "(rank - 0.5) / n); the median W is of the solved tasks, TB2 and TW pooled; a task at the median "
    "W is large (work_ties='large')"
)
_UNSOLVED_AT_LEAST_2 = (
    "the paper does not say how a task no model solves counts; here every rated TB2 task with D "
    "pinned or unsolved, an unsolved task counting as D >= 2 (its D is above every cap)"
)
_N_WINDOW_NOTE = (
    "the paper does not say how a task's N is read or whether unsolved tasks count; here N is the "
    "lower median of the task's uncapped runs (a count some run took), and a task with D pinned or "
    "unsolved counts (an unsolved task is not D = 1); a task with an incomplete D is left out"
)
_UNSOLVED_ABOVE = (
    "the paper does not say how a task no model solves counts; here its D is above every cap (two "
    "unsolved tasks tie), so an unsolved derived task counts as D >= 20"
)
_SHARE_OF_SOLVED = (
    "the paper says tasks; here the share among solved tasks (a task no model solves has no D), "
    "and its just-under-nine-in-ten is entered as 0.9"
)


def _notes(*parts: str) -> str:
    return "; ".join(parts)


REPORTED: tuple[Reported, ...] = (
    _r(
        "audited_tasks",
        "Tasks audited.",
        "TMax, FACET, SETA, RST, TB2, TW",
        734,
        "collection_counts",
        "audited_tasks",
        "audited",
        collections=_SIX,
        needs_depth=False,
    ),
    _r(
        "synthetic_solved_tasks",
        "Synthetic tasks whose depth D was pinned (solved).",
        _SYN,
        296,
        "depth_shares",
        "solved_tasks",
        "synthetic",
        collections=_SYN_SET,
    ),
    _r(
        "synthetic_solved_depth_le_3",
        "Solved synthetic tasks with D <= 3 (of the 296).",
        _SYN,
        278,
        "depth_shares",
        "solved_depth_le_3",
        "synthetic",
        collections=_SYN_SET,
    ),
    _r(
        "tmax_solved_share_depth_1",
        "Share of TMax tasks with D = 1 (the paper: just under nine in ten, for TMax and SETA alike).",
        "TMax tasks",
        0.9,
        "depth_shares",
        "solved_share_depth_1",
        "tmax",
        collections=("tmax",),
        differs=_SHARE_OF_SOLVED,
    ),
    _r(
        "seta_solved_share_depth_1",
        "Share of SETA tasks with D = 1 (the paper: just under nine in ten, for TMax and SETA alike).",
        "SETA tasks",
        0.9,
        "depth_shares",
        "solved_share_depth_1",
        "seta",
        collections=("seta",),
        differs=_SHARE_OF_SOLVED,
    ),
    _r(
        "rst_solved_share_depth_le_3",
        "Share of solved RST tasks with D <= 3.",
        "solved RST tasks",
        0.79,
        "depth_shares",
        "solved_share_depth_le_3",
        "rst",
        collections=("rst",),
    ),
    _r(
        "synthetic_solved_median_work",
        "Median W of solved synthetic tasks.",
        _SYN,
        68,
        "synthetic_vs_human",
        "solved_median_work",
        "synthetic",
        collections=_SYN_SET,
    ),
    _r(
        "synthetic_solved_p90_work",
        "90th percentile of W over synthetic tasks.",
        "tasks of TMax, FACET, SETA, RST",
        226,
        "synthetic_vs_human",
        "solved_p90_work",
        "synthetic",
        collections=_SYN_SET,
        differs="the paper does not say whether its 90th percentile is over solved or all synthetic tasks, "
        "nor its quantile rule; here over the solved ones (as the median W beside it), linear interpolation",
    ),
    _r(
        "synthetic_solved_share_depth_ge_5",
        "Share of solved synthetic tasks with D >= 5.",
        _SYN,
        0.06,
        "synthetic_vs_human",
        "solved_share_depth_ge_5",
        "synthetic",
        collections=_SYN_SET,
    ),
    _r(
        "human_solved_tasks",
        "Human-curated tasks whose D was pinned (solved).",
        _HUM,
        105,
        "synthetic_vs_human",
        "solved_tasks",
        "human",
        collections=_HUM_SET,
    ),
    _r(
        "human_solved_median_work",
        "Median W of solved human-curated tasks.",
        _HUM,
        17,
        "synthetic_vs_human",
        "solved_median_work",
        "human",
        collections=_HUM_SET,
    ),
    _r(
        "human_solved_depth_ge_5",
        "Solved human-curated tasks with D >= 5 (of the 105).",
        _HUM,
        11,
        "synthetic_vs_human",
        "solved_depth_ge_5",
        "human",
        collections=_HUM_SET,
    ),
    _r(
        "human_solved_share_depth_ge_5",
        "Share of solved human-curated tasks with D >= 5.",
        _HUM,
        0.10,
        "synthetic_vs_human",
        "solved_share_depth_ge_5",
        "human",
        collections=_HUM_SET,
    ),
    _r(
        "tmax_mean_turns",
        "Mean turns N without a cap, as the TMax authors report it.",
        "TMax, the dataset's own reported figure",
        16.3,
        "turns_beside_depth",
        "mean_turns",
        "tmax",
        collections=("tmax",),
        differs="the paper quotes the TMax authors' own figure; here the mean over the loaded uncapped runs, "
        "models pooled",
        needs_depth=False,
    ),
    _r(
        "facet_mean_turns",
        "Mean turns N without a cap, as the FACET authors report it.",
        "FACET, the dataset's own reported figure",
        11.86,
        "turns_beside_depth",
        "mean_turns",
        "facet",
        collections=("facet",),
        differs="the paper quotes the FACET authors' own figure; here the mean over the loaded uncapped runs, "
        "models pooled",
        needs_depth=False,
    ),
    _r(
        "tmax_solved_median_depth",
        "Median D of solved TMax tasks (the paper gives 1-2 for TMax and FACET).",
        "solved TMax tasks",
        None,
        "turns_beside_depth",
        "solved_median_depth",
        "tmax",
        low=1,
        high=2,
        interval="range",
        collections=("tmax",),
    ),
    _r(
        "facet_solved_median_depth",
        "Median D of solved FACET tasks (the paper gives 1-2 for TMax and FACET).",
        "solved FACET tasks",
        None,
        "turns_beside_depth",
        "solved_median_depth",
        "facet",
        low=1,
        high=2,
        interval="range",
        collections=("facet",),
    ),
    _r(
        "existing_median_turns",
        "Median uncapped turns N per existing collection (span over the six).",
        "tasks of TMax, FACET, SETA, RST, TB2, TW (each collection's median)",
        None,
        "turns_beside_depth",
        "median_turns",
        "existing",
        low=5,
        high=9,
        interval="range",
        collections=_SIX,
        needs_depth=False,
    ),
    _r(
        "tmax_model_median_turns",
        "One model's median uncapped turns on solved TMax tasks (the paper: Gemini).",
        "the 88 solved TMax tasks with that model's runs",
        8,
        "model_turns_beside_depth",
        "model_median_turns",
        "tmax",
        collections=("tmax",),
    ),
    _r(
        "tmax_model_median_depth",
        "Median D of the same solved TMax tasks.",
        "the 88 solved TMax tasks with that model's runs",
        1,
        "model_turns_beside_depth",
        "model_median_depth",
        "tmax",
        collections=("tmax",),
    ),
    _r(
        "n_6_10_tasks",
        "Tasks whose uncapped turn count N is 6-10.",
        "tasks of the six audited collections",
        170,
        "depth_given_turns",
        "tasks_n_in_window",
        "audited",
        collections=_SIX,
        differs=_N_WINDOW_NOTE,
    ),
    _r(
        "n_6_10_depth_1",
        "Of the tasks with N in 6-10, those with D = 1.",
        "tasks of the six audited collections with N in 6-10",
        96,
        "depth_given_turns",
        "tasks_n_in_window_depth_1",
        "audited",
        collections=_SIX,
        differs=_N_WINDOW_NOTE,
    ),
    _r(
        "second_model_lowered_depth_existing",
        "Share of tasks whose D a second model lowered, against the main model.",
        "solved tasks of the existing (audited) collections",
        0.25,
        "second_model",
        "second_model_share_lowered",
        "existing",
        collections=_SIX,
    ),
    _r(
        "second_model_lowered_depth_own",
        "Share of tasks whose D a second model lowered, against the main model.",
        "the authors' solved DEPTH-style tasks",
        0.07,
        "second_model",
        "second_model_share_lowered",
        "own",
        collections=_OWN_SET,
    ),
    _r(
        "tb2_pcorr_pass_depth_given_work",
        "Rank partial correlation of public pass rate with D given W.",
        "solved TB2 tasks",
        -0.49,
        "pass_depth_given_work",
        "pcorr_pass_depth_given_work",
        "tb2",
        collections=("tb2",),
        differs=_notes(_PASS_RATE, _TB2_RUNS),
    ),
    _r(
        "tb2_tw_pcorr_pass_depth_given_work",
        "Rank partial correlation of public pass rate with D given W, TB2 and TW pooled.",
        "solved TB2 + TW tasks (105)",
        -0.31,
        "pass_depth_given_work",
        "pcorr_pass_depth_given_work",
        "tb2+tw",
        collections=_HUM_SET,
        differs=_notes(_WITHIN_NOTE, _PASS_RATE, _TB2_RUNS),
    ),
    _r(
        "own_pcorr_pass_depth_given_work",
        "Rank partial correlation of pass rate with D given W.",
        "the authors' own solved tasks (52)",
        -0.29,
        "pass_depth_given_work",
        "pcorr_pass_depth_given_work",
        "depth",
        low=-0.53,
        high=-0.02,
        interval="ci95",
        collections=_OWN_SET,
        differs=_PASS_RATE,
    ),
    _r(
        "pooled_pcorr_pass_depth_given_work",
        "Rank partial correlation of pass rate with D given W, pooled.",
        "the authors' solved tasks with the solved TB2 and TW tasks",
        -0.31,
        "pass_depth_given_work",
        "pcorr_pass_depth_given_work",
        "pooled",
        collections=("tb2", "tw", "depth"),
        differs=_notes(_WITHIN_NOTE, _PASS_RATE, _TB2_RUNS),
    ),
    _r(
        "tb2_tw_pcorr_pass_turns_given_depth",
        "Rank partial correlation of pass rate with N given D, TB2 and TW pooled.",
        "solved TB2 + TW tasks",
        0.06,
        "pass_turns_given_depth",
        "pcorr_pass_turns_given_depth",
        "tb2+tw",
        low=-0.18,
        high=0.26,
        interval="ci95",
        collections=_HUM_SET,
        differs=_notes(_WITHIN_NOTE, _PASS_RATE, _TB2_RUNS),
    ),
    _r(
        "generated_label_corr_pass",
        "Correlation of generation-time difficulty labels with pass rate (span).",
        "collections with generation-time labels",
        None,
        "label_pass_correlations",
        "label_corr_pass",
        "generated",
        low=-0.11,
        high=-0.07,
        interval="range",
        differs=_PASS_RATE,
        needs_depth=False,
    ),
    _r(
        "tb2_author_label_corr_pass",
        "Correlation of TB2 authors' difficulty ratings with pass rate.",
        "TB2 tasks with a rating and a pass rate",
        -0.46,
        "label_pass_correlations",
        "label_corr_pass",
        "tb2",
        collections=("tb2",),
        differs=_notes(_PASS_RATE, _TB2_RUNS),
        needs_depth=False,
    ),
    _r(
        "tb2_pcorr_depth_author_difficulty",
        "Rank correlation of D with the TB2 authors' rating.",
        "TB2 tasks with a rating",
        0.55,
        "depth_vs_author_rating",
        "pcorr_depth_rating_given_work",
        "tb2",
        collections=("tb2",),
        differs="the paper does not restate its covariate, nor how a task no model solves counts; here the "
        "partial correlation given W over rated TB2 tasks with D pinned or unsolved, an unsolved task "
        "ranked above every cap",
    ),
    _r(
        "tb2_rated_hard_depth_ge_2",
        "TB2 tasks rated hard with D >= 2 (of 11 sampled).",
        "sampled TB2 tasks rated hard",
        9,
        "depth_vs_author_rating",
        "rated_hard_depth_ge_2",
        "tb2",
        collections=("tb2",),
        differs=_UNSOLVED_AT_LEAST_2,
    ),
    _r(
        "tb2_rated_easy_medium_depth_ge_2",
        "TB2 tasks rated easy or medium with D >= 2 (of 28 sampled).",
        "sampled TB2 tasks rated easy or medium",
        8,
        "depth_vs_author_rating",
        "rated_easy_medium_depth_ge_2",
        "tb2",
        collections=("tb2",),
        differs=_UNSOLVED_AT_LEAST_2,
    ),
    _r(
        "quadrant_deep_large_mean_percentile",
        "Mean within-collection pass-rate percentile of tasks deep and large (lower = harder).",
        "solved TB2 + TW tasks, split at D = 2 and median W",
        0.29,
        "quadrant_percentiles",
        "quadrant_mean_percentile",
        "deep/large",
        collections=_HUM_SET,
        differs=_notes(_QUADRANT_NOTE, _PASS_RATE, _TB2_RUNS),
    ),
    _r(
        "quadrant_other_mean_percentile",
        "Mean within-collection pass-rate percentile of the other three cells.",
        "solved TB2 + TW tasks, split at D = 2 and median W",
        None,
        "quadrant_percentiles",
        "quadrant_other_mean_percentile",
        "not deep/large",
        low=0.53,
        high=0.59,
        interval="range",
        collections=_HUM_SET,
        differs=_notes(_QUADRANT_NOTE, _PASS_RATE, _TB2_RUNS),
    ),
    _r(
        "own_tasks",
        "Tasks of the DEPTH-style set.",
        _OWN,
        105,
        "own_set_summary",
        "own_tasks",
        "depth",
        collections=_OWN_SET,
        needs_depth=False,
    ),
    _r(
        "own_median_work",
        "Median W of the DEPTH-style set.",
        _OWN,
        315,
        "own_set_summary",
        "own_median_work",
        "depth",
        collections=_OWN_SET,
        needs_depth=False,
    ),
    _r(
        "own_median_turns",
        "Median uncapped turns N of the DEPTH-style set.",
        _OWN,
        45,
        "own_set_summary",
        "own_median_turns",
        "depth",
        collections=_OWN_SET,
        needs_depth=False,
    ),
    _r(
        "own_solved_by_main",
        "DEPTH-style tasks the main model (DeepSeek-V4.1-Flash) solves.",
        _OWN,
        54,
        "own_set_summary",
        "own_solved_by_main",
        "depth",
        collections=_OWN_SET,
    ),
    _r(
        "own_solved_by_main_depth_ge_40",
        "Of those, tasks with D >= 40.",
        _OWN,
        44,
        "own_set_summary",
        "own_solved_by_main_depth_ge_40",
        "depth",
        collections=_OWN_SET,
    ),
    _r(
        "own_tasks_run_by_all",
        "DEPTH-style tasks run (uncapped) by every one of the six models.",
        _OWN,
        90,
        "own_set_summary",
        "own_tasks_run_by_all",
        "depth",
        collections=_OWN_SET,
        needs_depth=False,
    ),
    _r(
        "own_passed_by_no_model",
        "Of the tasks run by all six models, those no model passes uncapped.",
        "the 90 DEPTH-style tasks run by all six models",
        29,
        "own_set_summary",
        "own_passed_by_no_model",
        "depth",
        collections=_OWN_SET,
        needs_depth=False,
    ),
    _r(
        "own_pass_at_1",
        "Per-model pass@1, averaged within tasks then over tasks (span over models).",
        _OWN + ", six models, two uncapped runs each",
        None,
        "pass_at_1",
        "pass_at_1",
        "models",
        low=0.17,
        high=0.47,
        interval="range",
        collections=_OWN_SET,
        needs_depth=False,
    ),
    _r(
        "segment_reliability_best",
        "Segment reliability r of the best model.",
        "multi-segment DEPTH-style tasks",
        0.88,
        "segment_reliability",
        "segment_reliability",
        "best model",
        collections=_OWN_SET,
        needs_depth=False,
    ),
    _r(
        "segment_reliability_worst",
        "Segment reliability r of the worst model.",
        "multi-segment DEPTH-style tasks",
        0.74,
        "segment_reliability",
        "segment_reliability",
        "worst model",
        collections=_OWN_SET,
        needs_depth=False,
    ),
    _r(
        "segment_pass_all_best",
        "Runs passing all six segments, r^6 compounded, best model.",
        "multi-segment DEPTH-style tasks",
        0.47,
        "segment_reliability",
        "segment_pass_all_compounded",
        "best model",
        collections=_OWN_SET,
        needs_depth=False,
    ),
    _r(
        "segment_pass_all_worst",
        "Runs passing all six segments, r^6 compounded, worst model.",
        "multi-segment DEPTH-style tasks",
        0.16,
        "segment_reliability",
        "segment_pass_all_compounded",
        "worst model",
        collections=_OWN_SET,
        needs_depth=False,
    ),
    _r(
        "merged_pairs",
        "Tasks whose segments were merged into one instruction, measured alike (pairs).",
        "25 randomly sampled DEPTH-style tasks and their merged variants",
        25,
        "merged_segments",
        "merged_pairs",
        "merged",
    ),
    _r(
        "merged_share_depth_unchanged",
        "Share of merged pairs whose D is unchanged (most drops are by one cap).",
        "25 randomly sampled DEPTH-style tasks and their merged variants",
        0.68,
        "merged_segments",
        "merged_share_depth_unchanged",
        "merged",
    ),
    _r(
        "sign_test_pairs",
        "Environments hosting an original and a derived task (pairs).",
        "paired environments",
        35,
        "sign_test_depth",
        "sign_test_pairs",
        "paired environments",
    ),
    _r(
        "sign_test_deeper",
        "Pairs whose derived task is deeper (of 35).",
        "paired environments",
        35,
        "sign_test_depth",
        "sign_test_deeper",
        "paired environments",
    ),
    _r(
        "sign_test_p",
        "Exact two-sided sign test on D, derived versus original.",
        "paired environments (35 pairs)",
        5.8e-11,
        "sign_test_depth",
        "sign_test_p",
        "paired environments",
        differs=_UNSOLVED_ABOVE,
    ),
    _r(
        "sign_test_original_depth_le_10",
        "Pairs whose original task has D <= 10 (of 35).",
        "paired environments",
        34,
        "sign_test_depth",
        "sign_test_original_depth_le_10",
        "paired environments",
    ),
    _r(
        "sign_test_original_depth_1",
        "Pairs whose original task has D = 1 (of 35).",
        "paired environments",
        26,
        "sign_test_depth",
        "sign_test_original_depth_1",
        "paired environments",
    ),
    _r(
        "sign_test_derived_depth_ge_20",
        "Pairs whose derived task has D >= 20 (of 35).",
        "paired environments",
        35,
        "sign_test_depth",
        "sign_test_derived_depth_ge_20",
        "paired environments",
        differs=_UNSOLVED_ABOVE,
    ),
)

_BY_KEY: dict[str, Reported] = {r.key: r for r in REPORTED}
_BY_ROW: dict[tuple[str, str], Reported] = {(r.statistic, r.group): r for r in REPORTED}


def get(key: str) -> Reported:
    """Return the reported number with this key.

    Examples
    --------
    >>> from depthlab import paper
    >>> paper.get("audited_tasks").value
    734
    """
    return _BY_KEY[check_choice(key, "key", "get", sorted(_BY_KEY))]


def reported_for(statistic: str, group: str) -> Reported | None:
    """The reported number a findings row (``key``, ``group``) is compared with, or None.

    Examples
    --------
    >>> from depthlab import paper
    >>> paper.reported_for("pcorr_pass_depth_given_work", "tb2").key
    'tb2_pcorr_pass_depth_given_work'
    >>> paper.reported_for("pcorr_pass_depth_given_work", "seta") is None
    True
    """
    return _BY_ROW.get((statistic, group))


def table() -> pl.DataFrame:
    """All reported numbers: key, description, sample, paper (as printed), value, low, high, interval, function.

    Examples
    --------
    >>> from depthlab import paper
    >>> paper.table().height == len(paper.REPORTED)
    True
    """
    return pl.DataFrame(
        [
            {
                "key": r.key,
                "description": r.description,
                "sample": r.sample,
                "paper": r.text(),
                "value": _float(r.value),
                "low": _float(r.low),
                "high": _float(r.high),
                "interval": r.interval,
                "function": r.function,
            }
            for r in REPORTED
        ],
        schema=PAPER_REPORTED,
    )


def compare(findings: pl.DataFrame) -> pl.DataFrame:
    """Put this data's findings beside the paper's numbers: one row per finding the paper also reports.

    Parameters
    ----------
    findings : pl.DataFrame
        A table of :mod:`depthlab.findings` (columns of :data:`depthlab.findings.FINDING`).

    Returns
    -------
    pl.DataFrame
        ``key, description, paper, paper_sample, this_data, this_sample, function`` (as printed),
        ``paper_value``, ``this_value``, ``this_low``, ``this_high``, ``data`` (simulated or real).
        A finding this data cannot compute prints as "not computable here", and its ``this_sample``
        says why (``real: not computable: no capped runs (D unknown)``: the finding's ``detail``).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import paper
    >>> from depthlab.findings import FINDING
    >>> row = {"key": "solved_share_depth_le_3", "group": "rst", "value": 0.81, "ci_low": 0.7,
    ...        "ci_high": 0.9, "interval": "ci95", "n": 40, "unit": "solved tasks", "collections": "rst",
    ...        "models": "a, b", "data": "simulated"}
    >>> out = paper.compare(pl.DataFrame([row], schema=FINDING))
    >>> out.select("key", "paper", "this_data").row(0)
    ('rst_solved_share_depth_le_3', '0.79', '0.81 [0.7, 0.9] (95% CI)')
    >>> out["this_sample"].item()
    'SIMULATED: rst; 40 solved tasks; models a, b'
    """
    check_frame(findings, "findings", "compare", _FINDING_COLUMNS)
    rows = []
    # a finding two functions both report (e.g. solved synthetic tasks) is listed once
    for row in findings.unique(["key", "group"], keep="first", maintain_order=True).iter_rows(named=True):
        reported = _BY_ROW.get((row["key"], row["group"]))
        if reported is None:
            continue
        value, low, high = (_finite(row[c]) for c in ("value", "ci_low", "ci_high"))
        computable = value is not None or (row["interval"] == "range" and low is not None)
        this = _format(value, low, high, row["interval"], digits=".3g") if computable else "not computable here"
        kind = "SIMULATED" if row["data"] == "simulated" else "real"
        if computable:
            sample = f"{kind}: {row['collections'] or 'none'}; {row['n']} {row['unit']}"
            if row["models"]:
                sample += f"; models {row['models']}"
        else:
            # a number this data cannot give says why (the finding's detail), never "none; 0 tasks"
            named = f"{row['collections']}; " if row["collections"] else ""
            sample = f"{kind}: {named}not computable: {row.get('detail') or 'this data has no such sample'}"
        if reported.differs:
            sample += f"; VARIANT: {reported.differs}"
        if computable:
            sample += _sample_note(reported, row["collections"])
        rows.append(
            {
                "key": reported.key,
                "description": reported.description,
                "paper": reported.text(),
                "paper_sample": reported.sample,
                "this_data": this,
                "this_sample": sample,
                "function": f"findings.{reported.function}",
                "paper_value": _float(reported.value),
                "this_value": value,
                "this_low": low,
                "this_high": high,
                "data": row["data"],
            }
        )
    return pl.DataFrame(rows, schema=PAPER_COMPARISON)


# the columns of a findings table compare reads (p is not printed beside the paper's numbers; detail says why a
# row is not computable, and a table saved without it still compares)
_FINDING_COLUMNS = tuple(c for c in FINDING if c not in ("p", "detail"))


def _sample_note(reported: Reported, collections: str | None) -> str:
    # a row over other collections than the paper's says why: this data lacks some of them, or it is unlike
    if reported.collections is None:
        return ""
    here = {c for c in (collections or "").split(", ") if c}
    paper = set(reported.collections)
    if here == paper:
        return ""
    if here < paper:
        return f"; this data has only {', '.join(sorted(here))} of the paper's {', '.join(sorted(paper))}"
    return f"; UNLIKE the paper's sample ({', '.join(sorted(paper))})"


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def _format(
    value: float | None, low: float | None, high: float | None, interval: str | None, *, digits: str = "g"
) -> str:
    # a range of values prints as a span, a confidence interval in brackets: never the same look
    if interval == "range":
        span = f"{_number(low, digits)} to {_number(high, digits)} (range)"
        return span if value is None else f"{_number(value, digits)}, {span}"
    text = _number(value, digits)
    if low is not None and high is not None:
        text += f" [{_number(low, digits)}, {_number(high, digits)}] (95% CI)"
    return text


def _number(value: float | None, digits: str) -> str:
    # the paper's numbers print as written ("g"); this data's are rounded to 3 significant digits
    if value is None:
        return "n/a"
    if float(value).is_integer() and abs(value) >= 1:
        return str(int(value))
    return format(value, digits)


# ---------------------------------------------------------------------------------------------
# The verifier rules' counts (issue 39): numerator and denominator, not a single number, so this data's
# counts sit beside them with the same Wilson interval (depthlab.findings.verifiers_see_key_steps).

#: The paper's counts of its verifier rules on its own segmented tasks, by the check of ``depthlab check``
#: that tests the same rule: (segments meeting the rule, segments tested). Provenance: the paper's summary
#: (the "verifiers see the key steps" result): replaying solutions with parts removed, a segment's checks
#: fail before the segment is done in 601 of 602 segments, fail when its key step is removed in 598 of 604,
#: and with the key step removed the next segment fails too in 421 of 500. The paper's sample is its own
#: generated tasks' segments (3 to 6 per task); it does not say how it counted a segment without a next one
#: (the 500 are fewer than the 604, consistent with last segments left out, as ``next_after_key`` does).
KEY_STEP_COUNTS: dict[str, tuple[int, int]] = {
    "before": (601, 602),
    "key_removed": (598, 604),
    "next_after_key": (421, 500),
}

#: The sample of :data:`KEY_STEP_COUNTS`.
KEY_STEP_SAMPLE = "the paper's own segmented tasks (segments replayed in fresh offline containers)"
