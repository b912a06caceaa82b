"""The numbers the paper reports, so notebooks can show "paper reports" beside "this data gives".

Every number comes from the paper's summary as quoted in issue 5 (item 5); each has a key, a
description, the sample it refers to, and a 95% interval or a range where the paper gives one.
Where the summary leaves something open (which quadrant, which sample), the description says so
rather than guessing.

Examples
--------
>>> from depthlab import paper
>>> paper.get("sign_test_p").value
5.8e-11
>>> paper.compare({"tb2_pcorr_pass_depth_given_work": -0.41})[["key", "paper", "this_data"]].row(0)
('tb2_pcorr_pass_depth_given_work', '-0.49', '-0.41')
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

__all__ = ["REPORTED", "Reported", "compare", "get", "table"]


@dataclass(frozen=True)
class Reported:
    """One number the paper reports.

    Attributes
    ----------
    key : str
        Stable identifier used by notebooks and :func:`compare`.
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
    """

    key: str
    description: str
    sample: str
    value: float | None
    low: float | None = None
    high: float | None = None
    interval: str | None = None

    def text(self) -> str:
        """The number as the paper would print it, e.g. ``-0.29 [-0.53, -0.02]`` or ``1–2``."""
        return _format(self.value, self.low, self.high, self.interval)


REPORTED: tuple[Reported, ...] = (
    Reported("audited_tasks", "Tasks audited across all collections.", "TMax, FACET, SETA, RST, TB2, TW", 734),
    Reported(
        "synthetic_solved_tasks",
        "Synthetic tasks whose depth D was pinned (solved).",
        "synthetic collections (TMax, FACET, SETA, RST)",
        296,
    ),
    Reported(
        "synthetic_solved_depth_le_3",
        "Solved synthetic tasks with D <= 3 (of the 296 solved).",
        "synthetic collections, solved tasks",
        278,
    ),
    Reported("tmax_mean_turns", "Mean turns N a model takes without a cap on TMax tasks.", "TMax", 16.3),
    Reported("facet_mean_turns", "Mean turns N a model takes without a cap on FACET tasks.", "FACET", 11.86),
    Reported(
        "tmax_facet_solved_median_depth",
        "Median D of solved tasks, TMax and FACET (the summary gives 1-2).",
        "TMax and FACET, solved tasks",
        None,
        1,
        2,
        "range",
    ),
    Reported("n_6_10_tasks", "Tasks whose uncapped turn count N is 6-10.", "audited tasks with N and D", 170),
    Reported("n_6_10_depth_1", "Of the tasks with N in 6-10, those with D = 1.", "audited tasks with N in 6-10", 96),
    Reported(
        "tb2_tw_pcorr_pass_depth_given_work",
        "Rank partial correlation of public pass rate with D given W.",
        "TB2 + TW (105 tasks)",
        -0.31,
    ),
    Reported(
        "tb2_pcorr_pass_depth_given_work", "Rank partial correlation of public pass rate with D given W.", "TB2", -0.49
    ),
    Reported(
        "own_pcorr_pass_depth_given_work",
        "Rank partial correlation of pass rate with D given W.",
        "the paper's own DEPTH tasks (52)",
        -0.29,
        -0.53,
        -0.02,
        "ci95",
    ),
    Reported(
        "pcorr_pass_turns_given_depth",
        "Rank partial correlation of pass rate with N given D.",
        "listed beside the own-task figure (sample not restated in the summary)",
        0.06,
        -0.18,
        0.26,
        "ci95",
    ),
    Reported(
        "generated_label_corr_pass",
        "Correlation of generated difficulty labels with pass rate (span).",
        "synthetic collections' generated labels",
        None,
        -0.11,
        -0.07,
        "range",
    ),
    Reported(
        "tb2_author_label_corr_pass", "Correlation of TB2 author difficulty ratings with pass rate.", "TB2", -0.46
    ),
    Reported(
        "tb2_pcorr_depth_author_difficulty",
        "Rank partial correlation of D with TB2 author difficulty ratings.",
        "TB2",
        0.55,
    ),
    Reported(
        "quadrant_hardest_mean_percentile",
        "Mean within-dataset pass-rate percentile of the hardest depth/work quadrant (lower = harder).",
        "audited tasks, split at D >= 2 and median W",
        0.29,
    ),
    Reported(
        "quadrant_other_mean_percentile",
        "Mean within-dataset pass-rate percentile of the other quadrants.",
        "audited tasks, split at D >= 2 and median W",
        None,
        0.53,
        0.59,
        "range",
    ),
    Reported(
        "second_model_lowered_depth_existing",
        "Share of tasks whose D the second model lowered.",
        "existing collections",
        0.25,
    ),
    Reported(
        "second_model_lowered_depth_own",
        "Share of tasks whose D the second model lowered.",
        "the paper's own DEPTH tasks",
        0.07,
    ),
    Reported(
        "sign_test_pairs",
        "Environments hosting an original and a derived deeper task (pairs).",
        "paired environments",
        35,
    ),
    Reported(
        "sign_test_p",
        "Sign test p-value, derived deeper task versus its original (35 of 35 pairs one way gives it).",
        "paired environments (35 pairs)",
        5.8e-11,
    ),
    Reported(
        "segment_reliability",
        "Per-segment reliability of multi-segment tasks, from first to last (span).",
        "the paper's own multi-segment DEPTH tasks",
        None,
        0.74,
        0.88,
        "range",
    ),
)

_BY_KEY: dict[str, Reported] = {r.key: r for r in REPORTED}


def get(key: str) -> Reported:
    """Return the reported number with this key.

    Examples
    --------
    >>> from depthlab import paper
    >>> paper.get("audited_tasks").value
    734
    """
    try:
        return _BY_KEY[key]
    except KeyError:
        raise ValueError(f"The 'key' parameter of get must be one of {sorted(_BY_KEY)}, got {key!r}") from None


def table() -> pl.DataFrame:
    """All reported numbers: key, description, sample, paper (as printed), value, low, high, interval.

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
            }
            for r in REPORTED
        ],
        schema=_TABLE_SCHEMA,
    )


def compare(measured: Mapping[str, float | Sequence[float | None] | None]) -> pl.DataFrame:
    """Put this data's numbers beside the paper's, one row per measured key (in the order given).

    Parameters
    ----------
    measured : mapping
        key -> this data's value: a number, a ``(value, ci_low, ci_high)`` triple, or None when it
        cannot be computed on this data (e.g. no capped runs).

    Returns
    -------
    pl.DataFrame
        ``key, description, sample, paper, this_data`` (both as printed), ``paper_value``,
        ``this_value``, ``this_low``, ``this_high``.

    Examples
    --------
    >>> from depthlab import paper
    >>> measured = {"own_pcorr_pass_depth_given_work": (-0.3, -0.5, -0.1), "sign_test_p": None}
    >>> paper.compare(measured)["this_data"].to_list()
    ['-0.3 [-0.5, -0.1]', 'not computable here']
    """
    if not isinstance(measured, Mapping):
        raise TypeError(
            f"The 'measured' parameter of compare must be a mapping key -> value, got {type(measured).__name__}"
        )
    unknown = [key for key in measured if key not in _BY_KEY]
    if unknown:
        raise ValueError(
            f"The 'measured' parameter of compare has unknown keys {unknown}; known keys: {sorted(_BY_KEY)}"
        )
    rows = []
    for key, given in measured.items():
        reported = _BY_KEY[key]
        value, low, high = _triple(key, given)
        this = "not computable here" if value is None else _format(value, low, high, None, digits=".3g")
        rows.append(
            {
                "key": key,
                "description": reported.description,
                "sample": reported.sample,
                "paper": reported.text(),
                "this_data": this,
                "paper_value": _float(reported.value),
                "this_value": value,
                "this_low": low,
                "this_high": high,
            }
        )
    return pl.DataFrame(rows, schema=_COMPARE_SCHEMA)


_TABLE_SCHEMA = {
    "key": pl.String,
    "description": pl.String,
    "sample": pl.String,
    "paper": pl.String,
    "value": pl.Float64,
    "low": pl.Float64,
    "high": pl.Float64,
    "interval": pl.String,
}
_COMPARE_SCHEMA = {
    "key": pl.String,
    "description": pl.String,
    "sample": pl.String,
    "paper": pl.String,
    "this_data": pl.String,
    "paper_value": pl.Float64,
    "this_value": pl.Float64,
    "this_low": pl.Float64,
    "this_high": pl.Float64,
}


def _triple(key: str, given: object) -> tuple[float | None, float | None, float | None]:
    if given is None:
        return None, None, None
    if isinstance(given, int | float) and not isinstance(given, bool):
        return _finite(float(given)), None, None
    if isinstance(given, Sequence) and not isinstance(given, str) and len(given) == 3:
        value, low, high = (None if v is None else _finite(float(v)) for v in given)
        return value, low, high
    raise ValueError(
        f"The value of {key!r} in compare's 'measured' must be a number, a (value, low, high) "
        f"triple or None, got {given!r}"
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def _format(
    value: float | None, low: float | None, high: float | None, interval: str | None, *, digits: str = "g"
) -> str:
    if interval == "range" and value is None:
        return f"{_number(low, digits)}–{_number(high, digits)}"
    text = _number(value, digits)
    if low is not None and high is not None:
        text += f" [{_number(low, digits)}, {_number(high, digits)}]"
    return text


def _number(value: float | None, digits: str) -> str:
    # the paper's numbers print as written ("g"); this data's are rounded to 3 significant digits
    if value is None:
        return "n/a"
    if float(value).is_integer() and abs(value) >= 1:
        return str(int(value))
    return format(value, digits)
