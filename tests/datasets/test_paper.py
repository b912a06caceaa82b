"""depthlab.paper: the reported numbers are well-formed and compare() lines them up with measured ones."""

from __future__ import annotations

import math

import polars as pl
import pytest

from depthlab import paper

CORRELATIONS = [r for r in paper.REPORTED if "corr" in r.key]
SHARES = [r for r in paper.REPORTED if r.key.startswith(("second_model", "quadrant", "segment"))]


def test_every_number_has_a_unique_key_a_description_and_a_sample():
    keys = [r.key for r in paper.REPORTED]
    assert len(keys) == len(set(keys))
    for r in paper.REPORTED:
        assert r.description.strip()
        assert r.sample.strip()
        assert r.value is not None or r.interval == "range", r.key


def test_intervals_are_consistent():
    for r in paper.REPORTED:
        if r.interval is None:
            assert r.low is None
            assert r.high is None
            continue
        assert r.low < r.high, r.key
        if r.interval == "ci95":
            assert r.low <= r.value <= r.high, r.key


@pytest.mark.parametrize("reported", CORRELATIONS, ids=lambda r: r.key)
def test_correlations_lie_in_minus_one_one(reported):
    for value in (reported.value, reported.low, reported.high):
        assert value is None or -1 <= value <= 1


@pytest.mark.parametrize("reported", SHARES, ids=lambda r: r.key)
def test_shares_and_percentiles_lie_in_zero_one(reported):
    for value in (reported.value, reported.low, reported.high):
        assert value is None or 0 <= value <= 1


def test_counts_are_consistent_with_each_other():
    assert paper.get("synthetic_solved_depth_le_3").value <= paper.get("synthetic_solved_tasks").value
    assert paper.get("synthetic_solved_tasks").value <= paper.get("audited_tasks").value
    assert paper.get("n_6_10_depth_1").value <= paper.get("n_6_10_tasks").value
    # the reported p is, to its two digits, the exact two-sided sign test with all pairs in one direction
    from scipy.stats import binomtest

    n = int(paper.get("sign_test_pairs").value)
    assert f"{binomtest(n, n).pvalue:.2g}" == f"{paper.get('sign_test_p').value:.2g}"


def test_table_has_one_row_per_number():
    table = paper.table()
    assert table.height == len(paper.REPORTED)
    assert table["key"].to_list() == [r.key for r in paper.REPORTED]
    ci = table.filter(pl.col("interval") == "ci95")
    assert all("[" in text for text in ci["paper"])
    ranges = table.filter(pl.col("interval") == "range")
    assert ranges["value"].null_count() == ranges.height
    assert all("–" in text for text in ranges["paper"])


def test_compare_puts_this_data_beside_the_paper():
    measured = {"tb2_pcorr_pass_depth_given_work": -0.4123, "own_pcorr_pass_depth_given_work": (-0.2, -0.45, 0.05)}
    measured["sign_test_p"] = None
    out = paper.compare(measured)
    assert out["key"].to_list() == list(measured)
    first = out.row(0, named=True)
    assert first["paper_value"] == paper.get("tb2_pcorr_pass_depth_given_work").value
    assert first["this_value"] == pytest.approx(-0.4123)
    assert first["this_data"] == "-0.412"
    second = out.row(1, named=True)
    assert (second["this_low"], second["this_high"]) == (-0.45, 0.05)
    assert second["paper"] == paper.get("own_pcorr_pass_depth_given_work").text()
    assert out.row(2, named=True)["this_data"] == "not computable here"


def test_compare_treats_nan_as_not_computable():
    out = paper.compare({"tmax_mean_turns": math.nan})
    assert out["this_value"].to_list() == [None]


def test_compare_rejects_unknown_keys_and_bad_values():
    with pytest.raises(ValueError, match="unknown keys"):
        paper.compare({"no_such_number": 1.0})
    with pytest.raises(ValueError, match="must be a number"):
        paper.compare({"tmax_mean_turns": "16"})
    with pytest.raises(TypeError, match="'measured' parameter of compare"):
        paper.compare([("tmax_mean_turns", 1.0)])
    with pytest.raises(ValueError, match="'key' parameter of get"):
        paper.get("nope")
