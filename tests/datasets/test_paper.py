"""depthlab.paper: the reported numbers are well-formed and compare() lines them up with measured ones."""

from __future__ import annotations

import math

import polars as pl
import pytest

from depthlab import paper

CORRELATIONS = [r for r in paper.REPORTED if "corr" in r.key]
SHARES = [r for r in paper.REPORTED if r.key.startswith(("second_model", "quadrant", "segment")) or "share" in r.key]


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
    assert paper.get("human_solved_depth_ge_5").value <= paper.get("human_solved_tasks").value
    assert paper.get("own_solved_by_main_depth_ge_40").value <= paper.get("own_solved_by_main").value
    assert paper.get("own_solved_by_main").value <= paper.get("own_tasks").value
    # issue 19: the set has 105 tasks; 90 is the number run by all six models, of which 29 pass by none
    assert paper.get("own_tasks").value == 105
    assert paper.get("own_passed_by_no_model").value < paper.get("own_tasks_run_by_all").value == 90
    assert "90" in paper.get("own_passed_by_no_model").sample
    assert all("90" not in paper.get(key).sample for key in ("own_median_work", "own_solved_by_main", "own_pass_at_1"))
    for key in ("sign_test_original_depth_1", "sign_test_original_depth_le_10", "sign_test_derived_depth_ge_20"):
        assert paper.get(key).value <= paper.get("sign_test_pairs").value
    assert paper.get("sign_test_original_depth_1").value <= paper.get("sign_test_original_depth_le_10").value
    assert paper.get("synthetic_solved_median_work").value < paper.get("synthetic_solved_p90_work").value
    assert paper.get("sign_test_deeper").value <= paper.get("sign_test_pairs").value
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
    assert all("(95% CI)" in text for text in ci["paper"])
    ranges = table.filter(pl.col("interval") == "range")
    assert ranges["value"].null_count() == ranges.height
    assert all(" to " in text for text in ranges["paper"])
    assert all("(range)" in text for text in ranges["paper"])
    assert all("[" not in text for text in ranges["paper"])


def test_every_number_names_one_findings_row():
    rows = [(r.statistic, r.group) for r in paper.REPORTED]
    assert len(rows) == len(set(rows))
    for r in paper.REPORTED:
        assert r.function
        assert paper.reported_for(r.statistic, r.group) is r


def _finding(key: str, group: str, value: float | None, low=None, high=None, interval=None, data="real"):
    from depthlab.findings import FINDING

    row = {
        "key": key,
        "group": group,
        "value": value,
        "ci_low": low,
        "ci_high": high,
        "interval": interval,
        "n": 40,
        "unit": "solved tasks",
        "collections": "tb2",
        "models": "a, b",
        "data": data,
    }
    return pl.DataFrame([row], schema=FINDING)


def test_compare_puts_this_data_beside_the_paper():
    findings = pl.concat(
        [
            _finding("pcorr_pass_depth_given_work", "tb2", -0.4123),
            _finding("pcorr_pass_depth_given_work", "depth", -0.2, -0.45, 0.05, "ci95", data="simulated"),
            _finding("pcorr_pass_depth_given_work", "seta", -0.3),  # not a number the paper reports
            _finding("sign_test_p", "paired environments", None),
            _finding("quadrant_other_mean_percentile", "not deep/large", None, 0.4, 0.7, "range"),
        ]
    )
    out = paper.compare(findings)
    assert out["key"].to_list() == [
        "tb2_pcorr_pass_depth_given_work",
        "own_pcorr_pass_depth_given_work",
        "sign_test_p",
        "quadrant_other_mean_percentile",
    ]
    first = out.row(0, named=True)
    assert first["paper_value"] == paper.get("tb2_pcorr_pass_depth_given_work").value
    assert first["this_value"] == pytest.approx(-0.4123)
    assert first["this_data"] == "-0.412"
    assert first["this_sample"].startswith("real: tb2; 40 solved tasks; models a, b; VARIANT: public pass rate")
    second = out.row(1, named=True)
    assert (second["this_low"], second["this_high"]) == (-0.45, 0.05)
    assert second["this_data"] == "-0.2 [-0.45, 0.05] (95% CI)"
    assert second["this_sample"].startswith("SIMULATED: ")
    assert second["paper"] == paper.get("own_pcorr_pass_depth_given_work").text()
    assert out.row(2, named=True)["this_data"] == "not computable here"
    assert out.row(3, named=True)["this_data"] == "0.4 to 0.7 (range)"


def test_compare_treats_nan_as_not_computable():
    out = paper.compare(_finding("mean_turns", "tmax", math.nan))
    assert out["this_value"].to_list() == [None]
    assert out["this_data"].to_list() == ["not computable here"]


def test_compare_rejects_what_is_not_a_findings_table():
    with pytest.raises(TypeError, match="'findings' parameter of compare must be a polars DataFrame"):
        paper.compare({"tmax_mean_turns": 1.0})
    with pytest.raises(ValueError, match="'findings' parameter of compare must have the columns"):
        paper.compare(pl.DataFrame({"key": ["x"]}))
    with pytest.raises(ValueError, match="'key' parameter of get"):
        paper.get("nope")


# ---------------------------------------------------------------------------------------------
# issue 30: every choice the paper does not state is a VARIANT note, and the docs list them


_POOLED_KEYS = ("tb2_tw_pcorr_pass_depth_given_work", "pooled_pcorr_pass_depth_given_work")
_PASS_RATE_KEYS = (
    *_POOLED_KEYS,
    "tb2_pcorr_pass_depth_given_work",
    "own_pcorr_pass_depth_given_work",
    "tb2_tw_pcorr_pass_turns_given_depth",
    "generated_label_corr_pass",
    "tb2_author_label_corr_pass",
    "quadrant_deep_large_mean_percentile",
    "quadrant_other_mean_percentile",
)


def test_every_choice_the_paper_does_not_state_is_a_variant_note():
    for key in (*_POOLED_KEYS, "tb2_tw_pcorr_pass_turns_given_depth"):
        assert "within-collection" in paper.get(key).differs, key
        assert "(rank - 0.5) / n" in paper.get(key).differs, key
    for key in ("quadrant_deep_large_mean_percentile", "quadrant_other_mean_percentile"):
        differs = paper.get(key).differs
        for choice in ("percentile_base='all'", "average rank / n", "TB2 and TW pooled", "work_ties='large'"):
            assert choice in differs, (key, choice)
    for key in _PASS_RATE_KEYS:
        assert "public pass rate" in paper.get(key).differs, key
        tb2 = "tb2" in (paper.get(key).collections or ())
        assert ("eight small models" in paper.get(key).differs) == tb2, key
    # our choices are not written into the paper's own sample or description
    for reported in paper.REPORTED:
        for word in ("pinned", "unsolved"):
            assert word not in reported.sample, reported.key
        for text in (reported.sample, reported.description):
            for word in ("interpolation", " here"):
                assert word not in text, reported.key
    assert paper.get("n_6_10_tasks").sample == "tasks of the six audited collections"
    assert "unsolved" in paper.get("n_6_10_tasks").differs
    assert "solved" not in paper.get("synthetic_solved_p90_work").sample
    assert "over the solved ones" in paper.get("synthetic_solved_p90_work").differs


def _variant_table() -> list[tuple[str, list[str]]]:
    import re
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "audit.md").read_text(encoding="utf-8")
    section = text.split("### Choices the paper does not state", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]  # the header left out
    cells = [row.strip("|").split(" | ") for row in rows]
    return [(choice.strip(), re.findall(r"`([^`]+)`", keys)) for choice, keys in cells]


def test_the_docs_list_every_variant_note_in_one_table():
    table = _variant_table()
    parts: dict[str, list[str]] = {}
    for choice, keys in table:
        assert keys, choice
        for key in keys:
            assert choice in paper.get(key).differs, (key, choice)
            parts.setdefault(key, []).append(choice)
    for reported in paper.REPORTED:
        listed = parts.get(reported.key, [])
        # the entry's note is exactly the choices the table lists for it, joined by "; "
        assert len(reported.differs) == (sum(map(len, listed)) + 2 * (len(listed) - 1) if listed else 0), reported.key


def test_the_share_of_d_1_in_tmax_and_seta_has_an_entry():
    for key, group in (("tmax_solved_share_depth_1", "tmax"), ("seta_solved_share_depth_1", "seta")):
        reported = paper.get(key)
        assert (reported.function, reported.statistic) == ("depth_shares", "solved_share_depth_1")
        assert reported.group == group
        assert reported.value == 0.9
        assert "solved" in reported.differs
