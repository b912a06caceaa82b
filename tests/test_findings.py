"""depthlab.findings: each finding on a hand-made input whose answer is known, and every paper key walked.

The eight defects of issue 10 each have a case here: a model with incomplete evidence is not "lowered";
the sign test runs on D over paired environments with unsolved ranked above every cap; pass ~ N | D is on
TB2 + TW; segment reliability is per model on a fixed task set; synthetic vs human uses solved tasks and
leaves the DEPTH-style set out; ranges never print like CIs; quadrants default to TB2 + TW and name the
hardest cell from the data; every number says whether the data is simulated.

The seven items of issue 19 each have a case too (sections "issue 19" on): the pooled row is the paper's
sample, within-collection (a between-collection difference reads as no correlation, a planted within
effect is recovered); segment attempts are counted from the run's own stop and r^6 is set beside the
paper; the second model is measured against the main model over D's models; the DEPTH-style set's counts;
variants say so; the proxy's held-out verdict is stated; the missing findings; and no comparison row is
on other collections than the paper's without saying why.
"""

from __future__ import annotations

import inspect
import json
import math

import polars as pl
import pytest
from scipy.stats import binomtest

from depthlab import findings, paper, schema, stats
from depthlab.auditdata import AuditData, audit_data, demo_data
from depthlab.catalog import DIFFICULTY_ORDER
from depthlab.findings._pooled import within_collection_partial

CAPS = (1, 2, 3, 5, 10, 20, 40, 80)


def _data(tasks: list[dict], trials: list[dict], *, simulated: bool = False) -> AuditData:
    return AuditData.from_tables(
        schema.conform(pl.DataFrame(tasks), "tasks"),
        schema.conform(pl.DataFrame(trials), "trials"),
        source="a hand-made case",
        simulated=simulated,
    )


def _capped(dataset: str, task: str, model: str, depth: int | None, *, top: int = 80) -> list[dict]:
    """Runs of one model at every cap up to ``top``: fail below ``depth``, pass from it (None: never)."""
    return [
        {
            "dataset": dataset,
            "task": task,
            "model": model,
            "cap": cap,
            "status": "pass" if depth is not None and cap >= depth else "fail",
        }
        for cap in CAPS
        if cap <= top
    ]


def _public(dataset: str, task: str, model: str, passes: list[bool], *, turns: int = 5) -> list[dict]:
    return [
        {
            "dataset": dataset,
            "task": task,
            "model": model,
            "cap": None,
            "status": "pass" if ok else "fail",
            "n_turns": turns,
        }
        for ok in passes
    ]


def _row(table: pl.DataFrame, key: str, group: str) -> dict:
    rows = table.filter((pl.col("key") == key) & (pl.col("group") == group))
    assert rows.height == 1, (key, group, table)
    return rows.row(0, named=True)


# ---------------------------------------------------------------------------------------------
# defect 1: second-model effect


def test_a_model_never_run_at_d_is_undetermined_not_lowered():
    tasks = [{"dataset": "tb2", "task": t, "work": 3} for t in ("t", "u")]
    trials = [
        {"dataset": "tb2", "task": "t", "model": "a", "cap": 1, "status": "fail"},  # a never run at cap 2
        {"dataset": "tb2", "task": "t", "model": "b", "cap": 1, "status": "fail"},
        {"dataset": "tb2", "task": "t", "model": "b", "cap": 2, "status": "pass"},
        *_capped("tb2", "u", "a", 5),  # a fails at D = 2: lowered
        *_capped("tb2", "u", "b", 2),
    ]
    row = _row(findings.second_model(_data(tasks, trials), first_model="a"), "second_model_share_lowered", "existing")
    assert (row["value"], row["n"]) == (1.0, 1)  # one determined task, lowered; the undetermined one left out
    assert "1 undetermined of 2" in row["detail"]


# ---------------------------------------------------------------------------------------------
# defect 2: the sign test on D over paired environments


def _pair(original: int | None, derived: int | None, name: str, *, incomplete: bool = False) -> tuple[list, list]:
    tasks = [
        {"dataset": "tb2", "task": f"o-{name}", "work": 3},
        {"dataset": "depth", "task": f"d-{name}", "work": 9, "labels": json.dumps({"derived_from": f"tb2/o-{name}"})},
    ]
    trials = []
    for model in ("a", "b"):
        trials += _capped("tb2", f"o-{name}", model, original)
        trials += _capped("depth", f"d-{name}", model, derived, top=10 if incomplete else 80)
    return tasks, trials


def test_sign_test_ranks_unsolved_above_every_cap_and_reports_ties_and_n():
    cases = [
        (1, 5, "deeper"),
        (80, None, "unsolved-derived"),
        (2, 2, "tie"),
        (None, None, "both-unsolved"),
        (3, 1, "shallower"),
    ]
    tasks, trials = [], []
    for original, derived, name in cases:
        t, r = _pair(original, derived, name)
        tasks, trials = tasks + t, trials + r
    t, r = _pair(1, None, "incomplete", incomplete=True)  # derived never run above cap 10: D incomplete
    table = findings.sign_test_depth(_data(tasks + t, trials + r))
    value = {
        key: _row(table, key, "paired environments")["value"]
        for key in ("sign_test_pairs", "sign_test_ties", "sign_test_n", "sign_test_deeper", "sign_test_p")
    }
    assert value == {
        "sign_test_pairs": 5,
        "sign_test_ties": 2,
        "sign_test_n": 3,
        "sign_test_deeper": 2,
        "sign_test_p": pytest.approx(binomtest(2, 3).pvalue),
    }
    assert "1 with an incomplete D dropped; 2 ties dropped; 3 tested" in table["detail"][0]


def test_thirty_five_of_thirty_five_deeper_gives_the_papers_p():
    tasks, trials = [], []
    for i in range(35):
        t, r = _pair(1 + i % 3, None if i % 5 == 0 else 40, str(i))
        tasks, trials = tasks + t, trials + r
    table = findings.sign_test_depth(_data(tasks, trials))
    p = _row(table, "sign_test_p", "paired environments")
    assert p["value"] == pytest.approx(2 * 0.5**35)
    assert f"{p['value']:.2g}" == f"{paper.get('sign_test_p').value:.2g}"


# ---------------------------------------------------------------------------------------------
# defect 3: pass ~ N | D on TB2 + TW, and the paper's diamond on that row only


def _correlation_case() -> AuditData:
    tasks, trials = [], []
    for dataset in ("tb2", "tw", "depth"):
        for i in range(8):
            task = f"{dataset}-{i}"
            depth = CAPS[i % 5]
            tasks.append({"dataset": dataset, "task": task, "work": 3 + (i * 7) % 11})
            for model in ("a", "b"):
                trials += _capped(dataset, task, model, depth)
            passes = [j < 8 - (i * 3) % 7 for j in range(8)]
            trials += _public(dataset, task, "a", passes, turns=4 + (i * 5) % 9)
    return _data(tasks, trials)


def test_pass_turns_given_depth_is_computed_on_tb2_and_tw():
    data = _correlation_case()
    table = findings.pass_turns_given_depth(data, n_boot=200, seed=1)
    row = _row(table, "pcorr_pass_turns_given_depth", "tb2+tw")
    used = data.audit.filter(pl.col("dataset").is_in(["tb2", "tw"]) & (pl.col("depth_status") == "solved"))
    # two collections: the within-collection statistic (issue 19), never the raw pooled ranks
    expected = within_collection_partial(used, "n_turns", "pass_rate", "depth", n_boot=200, seed=1)
    assert (row["value"], row["ci_low"], row["ci_high"], row["n"]) == pytest.approx(
        (expected.r, expected.ci_low, expected.ci_high, 16)
    )
    assert row["collections"] == "tb2, tw"
    forest = findings.forest_table(table)
    with_paper = forest.filter(pl.col("paper").is_not_null())
    assert with_paper["label"].to_list() == ["TB2 + TW (within): pass ~ N | D"]
    assert with_paper["paper"].item() == paper.get("tb2_tw_pcorr_pass_turns_given_depth").value


# ---------------------------------------------------------------------------------------------
# defect 4: per-model segment reliability on a fixed task set


def _segment_run(task: str, model: str, passed: int, k: int = 3) -> dict:
    rewards = {f"segment_{i}": 1.0 for i in range(1, passed + 1)}
    if passed < k:
        rewards[f"segment_{passed + 1}"] = 0.0
    rewards["reward"] = float(passed == k)
    return {
        "dataset": "depth",
        "task": task,
        "model": model,
        "cap": None,
        "status": "pass" if passed == k else "fail",
        "rewards": json.dumps(rewards),
    }


def test_segment_reliability_is_per_model_on_a_fixed_task_set():
    tasks = [{"dataset": "depth", "task": t, "work": 9} for t in ("t1", "t2", "t3")]
    trials = [
        _segment_run("t1", "a", 3),
        _segment_run("t2", "a", 1),  # a: 4 of 5 attempted segments pass
        _segment_run("t1", "b", 0),
        _segment_run("t2", "b", 3),  # b: 3 of 4
        _segment_run("t3", "a", 3),  # b has no run on t3: t3 is not in the fixed task set
    ]
    table = findings.segment_reliability(_data(tasks, trials), n_boot=500, seed=0)
    a = {key: _row(table, key, "a") for key in findings.segments.SEGMENT_KEYS}
    assert a["segment_reliability"]["value"] == pytest.approx(4 / 5)
    assert a["segment_pass_all_observed"]["value"] == pytest.approx(1 / 2)
    assert a["segment_pass_all_compounded"]["value"] == pytest.approx((4 / 5) ** 6)  # the paper's k = 6
    assert a["segment_pass_all_compounded_task_k"]["value"] == pytest.approx((4 / 5) ** 3)  # the variant
    assert a["segment_reliability"]["n"] == 2  # tasks
    low, high = a["segment_reliability"]["ci_low"], a["segment_reliability"]["ci_high"]
    assert low <= 4 / 5 <= high
    assert a["segment_reliability"]["interval"] == "ci95"
    assert _row(table, "segment_reliability", "b")["value"] == pytest.approx(3 / 4)
    assert _row(table, "segment_reliability", "best model")["detail"].startswith("a:")
    assert _row(table, "segment_reliability", "worst model")["detail"].startswith("b:")


# ---------------------------------------------------------------------------------------------
# defect 5: synthetic vs human on solved tasks, the DEPTH-style set in neither group


def test_synthetic_vs_human_uses_solved_tasks_and_leaves_the_own_set_out():
    tasks = [
        {"dataset": "tmax", "task": "s1", "work": 10},
        {"dataset": "tmax", "task": "s2", "work": 20},
        {"dataset": "seta", "task": "s3", "work": 1000},  # unsolved: not in the median
        {"dataset": "depth", "task": "d1", "work": 500},  # the paper's own set: not synthetic here
        {"dataset": "tb2", "task": "h1", "work": 4},
        {"dataset": "tw", "task": "h2", "work": 6},
    ]
    depths = {"s1": 1, "s2": 5, "s3": None, "d1": 40, "h1": 10, "h2": 2}
    dataset = {t["task"]: t["dataset"] for t in tasks}
    trials = [row for task, d in depths.items() for m in ("a", "b") for row in _capped(dataset[task], task, m, d)]
    table = findings.synthetic_vs_human(_data(tasks, trials))
    assert _row(table, "solved_tasks", "synthetic")["value"] == 2
    assert _row(table, "solved_median_work", "synthetic")["value"] == 15
    assert _row(table, "solved_share_depth_ge_5", "synthetic")["value"] == 0.5
    assert _row(table, "solved_median_work", "human")["value"] == 5
    assert _row(table, "solved_depth_ge_5", "human")["value"] == 1
    assert _row(table, "solved_tasks", "synthetic")["collections"] == "tmax, seta"


# ---------------------------------------------------------------------------------------------
# defect 6: a range is never printed like a confidence interval


def test_ranges_and_confidence_intervals_print_differently():
    for reported in paper.REPORTED:
        text = reported.text()
        if reported.interval == "range":
            assert "[" not in text, reported.key
            assert "(range)" in text, reported.key
        elif reported.interval == "ci95":
            assert "[" in text, reported.key
            assert "(95% CI)" in text, reported.key
        else:
            assert "[" not in text, reported.key
            assert "range" not in text, reported.key


# ---------------------------------------------------------------------------------------------
# defect 7: quadrants on TB2 + TW by default, percentile base a parameter, hardest cell from the data


def test_quadrants_default_to_tb2_and_tw_and_name_the_hardest_cell_from_the_data():
    tasks, trials = [], []
    # (dataset, task, depth, work, public passes of 4); deep/small is the hardest cell here
    spec = [
        ("tb2", "a", 5, 100, 2),
        ("tb2", "b", 5, 1, 0),
        ("tb2", "c", 1, 100, 3),
        ("tb2", "d", 1, 1, 4),
        ("tw", "e", 5, 100, 2),
        ("tw", "f", 5, 1, 0),
        ("tw", "g", 1, 100, 3),
        ("tw", "h", 1, 1, 4),
        ("tb2", "x", None, 50, 1),  # unsolved: ranked with the "all" base, not in a cell
        ("tmax", "y", 5, 100, 4),
    ]  # not in TB2 + TW
    for dataset, task, depth, work, passes in spec:
        tasks.append({"dataset": dataset, "task": task, "work": work})
        trials += [r for m in ("m1", "m2") for r in _capped(dataset, task, m, depth)]
        trials += _public(dataset, task, "m1", [i < passes for i in range(4)])
    data = _data(tasks, trials)
    table = findings.quadrant_percentiles(data, n_boot=0)
    cells = table.filter(pl.col("key") == "quadrant_mean_percentile")
    assert cells["n"].sum() == 8
    assert cells["collections"].unique().to_list() == ["tb2, tw"]
    # within TB2 with the "all" base: pass rates b 0 < x .25 < a .5 < c .75 < d 1 -> percentiles 1/5 .. 5/5
    assert _row(table, "quadrant_mean_percentile", "deep/small")["value"] == pytest.approx((1 / 5 + 1 / 4) / 2)
    hardest = table.filter(pl.col("key") == "quadrant_hardest")
    assert hardest["group"].to_list() == ["deep/small"]
    solved_base = findings.quadrant_percentiles(data, percentile_base="solved", n_boot=0)
    assert _row(solved_base, "quadrant_mean_percentile", "deep/small")["value"] == pytest.approx(1 / 4)
    others = _row(table, "quadrant_other_mean_percentile", "not deep/large")
    assert others["interval"] == "range"
    assert others["value"] is None
    with pytest.raises(ValueError, match="'percentile_base' parameter of quadrant_percentiles"):
        findings.quadrant_percentiles(data, percentile_base="median")
    from depthlab import plots

    title = plots.quadrants(findings.quadrant_cells(data, n_boot=0)).axes[0].get_title()
    assert title.startswith("TB2 + TW-Verified: ")  # the figure names the collections split


# ---------------------------------------------------------------------------------------------
# defect 8: every number says whether the data is simulated


def test_every_finding_and_comparison_row_says_simulated_or_real():
    data = _correlation_case()
    simulated = AuditData(data.source, True, data.tasks, data.trials, data.depth, data.audit)
    for source, kind, mark in ((data, "real", "real:"), (simulated, "simulated", "SIMULATED:")):
        table = findings.pass_depth_given_work(source, n_boot=100)
        assert table["data"].unique().to_list() == [kind]
        assert all(text.startswith(mark) for text in paper.compare(table)["this_sample"])
    assert simulated.banner().startswith("SIMULATED data")


# ---------------------------------------------------------------------------------------------
# every paper key names a finding that computes the same statistic


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> AuditData:
    return audit_data(demo_data(tmp_path_factory.mktemp("demo"), scale=0.1, seed=2))


@pytest.mark.parametrize("reported", paper.REPORTED, ids=lambda r: r.key)
def test_every_paper_key_names_a_finding_that_computes_it(reported, demo):
    function = getattr(findings, reported.function)
    assert reported.function in findings.__all__
    assert f"``{reported.statistic}``" in function.__doc__, "the docstring names the row"
    table = function(demo, **({"n_boot": 100} if "n_boot" in inspect.signature(function).parameters else {}))
    assert table.columns == list(findings.FINDING)
    row = _row(table, reported.statistic, reported.group)
    assert row["data"] == "simulated"
    assert paper.reported_for(reported.statistic, reported.group) is reported
    compared = paper.compare(table).filter(pl.col("key") == reported.key)
    assert compared.height == 1
    assert compared["this_sample"].item().startswith("SIMULATED")


def test_demo_findings_recover_what_the_generative_model_builds_in(demo):
    # the simulated DEPTH-style tasks are derived deeper from their originals, and pass less when deeper
    table = findings.sign_test_depth(demo)
    tested = _row(table, "sign_test_n", "paired environments")["value"]
    assert _row(table, "sign_test_deeper", "paired environments")["value"] >= tested - 1
    assert _row(findings.pass_depth_given_work(demo, n_boot=100), "pcorr_pass_depth_given_work", "all")["value"] < 0


# ---------------------------------------------------------------------------------------------
# real TB2 facts bundled with the package


def test_bundled_tb2_gives_the_published_pass_rates_and_the_rating_correlation():
    import depthlab as dl

    bundle = dl.load_dataset("tb2", status_rule="all")
    data = AuditData.from_tables(bundle.tasks, bundle.trials, source="bundled TB2, status rule all", simulated=False)
    rates = findings.model_pass_rates(data)
    # the same rates from the default (leaderboard) load, re-judged under the rule "all"
    rejudged = findings.model_pass_rates(audit_data("tb2"), status_rule="all")
    assert rejudged["value"].to_list() == rates["value"].to_list()
    assert rejudged["key"].unique().to_list() == ["pass_rate_rule_all"]
    published = {"tmax-27b": 42.70, "Qwen3.6-27B": 39.55, "tmax-9b": 27.19, "tmax-4b": 18.88, "Qwen3.5-9B": 21.12}
    for model, rate in published.items():
        row = _row(rates, "pass_rate", model)
        assert round(100 * row["value"], 2) == rate, model
        assert row["n"] == 445
        assert row["data"] == "real"
    real = audit_data("tb2")
    assert real.kind == "real"
    assert not real.has_depth
    assert real.audit.height == 89
    label = _row(findings.label_pass_correlations(real, n_boot=200), "label_corr_pass", "tb2")
    assert label["n"] == 89
    assert label["value"] == pytest.approx(-0.48, abs=0.01)
    assert label["ci_low"] < label["value"] < label["ci_high"] < 0
    # what needs D says so: not computable, never a made-up number
    cells = findings.quadrant_percentiles(real, n_boot=0)
    assert cells["value"].to_list() == [None, None]  # the deep/large cell and the range of the others
    assert math.isclose(_row(findings.collection_counts(real), "tasks", "tb2")["value"], 89)


def test_on_real_data_without_d_every_paper_number_is_listed_and_none_is_made_up():
    real = audit_data("tb2")
    computable = set()
    for reported in paper.REPORTED:
        function = getattr(findings, reported.function)
        kwargs = {"n_boot": 100} if "n_boot" in inspect.signature(function).parameters else {}
        rows = paper.compare(function(real, **kwargs)).filter(pl.col("key") == reported.key)
        assert rows.height == 1, reported.key
        if rows["this_data"].item() != "not computable here":
            computable.add(reported.key)
        assert rows["this_sample"].item().startswith("real:"), reported.key
    # only what needs neither D nor another collection: the tasks audited here, the authors' ratings
    # (and the median N of the audited collections present, which says it has only TB2 of the paper's six)
    assert computable == {"audited_tasks", "tb2_author_label_corr_pass", "existing_median_turns"}


def test_findings_on_simulated_data_equal_what_the_generative_model_knows(tmp_path):
    from depthlab import simulate

    summary = simulate.write_runs(tmp_path, seed=4, scale=0.1)
    data = audit_data(tmp_path)
    assert data.kind == "simulated"  # `depthlab simulate` output without the demo marker is still simulated
    truth = summary.truth
    solved = truth.filter(pl.col("d_star").is_not_null())
    table = findings.synthetic_vs_human(data)
    for group, members in (("synthetic", findings.SYNTHETIC), ("human", findings.HUMAN)):
        part = solved.filter(pl.col("dataset").is_in(list(members)))
        assert _row(table, "solved_tasks", group)["value"] == part.height
        assert _row(table, "solved_depth_ge_5", group)["value"] == part.filter(pl.col("d_star") >= 5).height
        assert _row(table, "solved_median_work", group)["value"] == part["w_star"].median()
    # second-model effect: the first model's own smallest passing cap against D, every cap run (all determined)
    first = summary.model_truth.filter(pl.col("model") == simulate.MODELS[0]).select("dataset", "task", "model_depth")
    audited = solved.filter(pl.col("dataset").is_in(list(findings.AUDITED))).join(first, on=["dataset", "task"])
    lowered = audited.filter(pl.col("model_depth").is_null() | (pl.col("model_depth") > pl.col("d_star"))).height
    row = _row(findings.second_model(data), "second_model_share_lowered", "existing")
    assert (row["value"], row["n"]) == (pytest.approx(lowered / audited.height), audited.height)
    # the sign test: the derived tasks' true depths against their originals', unsolved above every cap
    rank = {
        f"{d}/{t}": findings.UNSOLVED_RANK if s is None else s
        for d, t, s in truth.select("dataset", "task", "d_star").iter_rows()
    }
    pairs = [
        (rank[f"depth/{t}"], rank[o])
        for t, o in truth.drop_nulls("derived_from").select("task", "derived_from").iter_rows()
    ]
    deeper = sum(a > b for a, b in pairs)
    ties = sum(a == b for a, b in pairs)
    table = findings.sign_test_depth(data)
    assert _row(table, "sign_test_pairs", "paired environments")["value"] == len(pairs)
    assert _row(table, "sign_test_deeper", "paired environments")["value"] == deeper
    assert _row(table, "sign_test_ties", "paired environments")["value"] == ties


# ---------------------------------------------------------------------------------------------
# the other findings, each on a hand-made case


def _solved_case(spec: list[tuple[str, str, int | None, int, float | None]]) -> AuditData:
    """(dataset, task, depth, work, median uncapped turns): two models, every cap run; one public run."""
    tasks, trials = [], []
    for dataset, task, depth, work, turns in spec:
        tasks.append({"dataset": dataset, "task": task, "work": work})
        trials += [r for m in ("a", "b") for r in _capped(dataset, task, m, depth)]
        if turns is not None:
            trials += _public(dataset, task, "a", [True], turns=int(turns))
    return _data(tasks, trials)


def test_depth_shares_and_counts_per_collection_and_pooled_synthetic():
    spec = [("rst", f"r{i}", d, 5, None) for i, d in enumerate([1, 1, 2, 3, 5, 10, None])]
    spec += [("tmax", "t1", 1, 5, None), ("depth", "d1", 40, 5, None)]
    table = findings.depth_shares(_solved_case(spec))
    assert _row(table, "solved_tasks", "rst")["value"] == 6  # the unsolved one is not counted
    assert _row(table, "solved_share_depth_le_3", "rst")["value"] == pytest.approx(4 / 6)
    assert _row(table, "solved_share_depth_1", "rst")["value"] == pytest.approx(2 / 6)
    assert _row(table, "solved_depth_ge_5", "rst")["value"] == 2
    share = _row(table, "solved_share_depth_le_3", "rst")
    low, high = stats.proportion_ci([4], [6])
    assert (share["ci_low"], share["ci_high"]) == pytest.approx((low[0], high[0]))
    assert _row(table, "solved_tasks", "synthetic")["value"] == 7  # RST and TMax, never the DEPTH-style set
    assert _row(table, "solved_depth_le_3", "synthetic")["value"] == 5


def test_turns_beside_depth_and_the_six_to_ten_window():
    spec = [
        ("tmax", "a", 1, 5, 8),
        ("tmax", "b", 1, 5, 6),
        ("tmax", "c", 2, 5, 10),
        ("tmax", "d", 1, 5, 11),
        ("facet", "e", 3, 5, 7),
        ("depth", "f", 1, 5, 7),
    ]
    data = _solved_case(spec)
    table = findings.turns_beside_depth(data)
    assert _row(table, "mean_turns", "tmax")["value"] == pytest.approx((8 + 6 + 10 + 11) / 4)
    assert _row(table, "solved_median_depth", "tmax")["value"] == 1
    window = findings.depth_given_turns(data)
    # a, b, c (tmax) and e (facet) take 6-10 turns; f is in the DEPTH-style set, not audited
    assert _row(window, "tasks_n_in_window", "audited")["value"] == 4
    assert _row(window, "tasks_n_in_window_depth_1", "audited")["value"] == 2


def test_own_set_summary_and_pass_at_1():
    tasks = [{"dataset": "depth", "task": t, "work": w} for t, w in (("x", 100), ("y", 300), ("z", 500))]
    trials = [*_capped("depth", "x", "a", 40), *_capped("depth", "x", "b", None)]
    trials += [*_capped("depth", "y", "a", 5), *_capped("depth", "y", "b", 10)]
    trials += [*_capped("depth", "z", "a", None), *_capped("depth", "z", "b", None)]
    trials += _public("depth", "x", "a", [True, False, False, False], turns=40)
    trials += _public("depth", "y", "a", [True, True], turns=20) + _public("depth", "y", "b", [False], turns=60)
    trials += _public("depth", "z", "b", [False, False], turns=80)
    table = findings.own_set_summary(_data(tasks, trials))
    assert _row(table, "own_median_work", "depth")["value"] == 300
    # per task, the median over its uncapped runs pooled over models: x 40, y (20, 20, 60) 20, z 80
    assert _row(table, "own_median_turns", "depth")["value"] == 40
    assert _row(table, "own_solved_by_main", "depth")["value"] == 2  # a solves x and y, b only y
    assert _row(table, "own_solved_by_main", "depth")["detail"].startswith("main model a (the model of D")
    assert _row(table, "own_solved_by_main_depth_ge_40", "depth")["value"] == 1
    assert _row(table, "own_tasks_run_by_all", "depth")["value"] == 1  # only y was run uncapped by a and b
    assert _row(table, "own_passed_by_no_model", "depth")["value"] == 0  # y passes; z was run by b alone
    rates = findings.pass_at_1(_data(tasks, trials))
    assert _row(rates, "pass_at_1", "a")["value"] == pytest.approx((1 / 4 + 1) / 2)  # within tasks, then over them
    assert _row(rates, "pass_at_1", "b")["value"] == 0
    spread = _row(rates, "pass_at_1", "models")
    assert (spread["ci_low"], spread["ci_high"], spread["interval"]) == (0, pytest.approx(0.625), "range")


def test_labels_against_pass_rate_and_depth_against_the_rating():
    ratings = ["easy", "easy", "medium", "medium", "medium", "hard", "hard", "hard"]
    depths = [1, 1, 1, 2, 3, 2, 5, 10]
    tasks, trials = [], []
    for i, (rating, depth) in enumerate(zip(ratings, depths, strict=True)):
        tasks.append(
            {
                "dataset": "tb2",
                "task": f"t{i}",
                "work": 3 + (5 * i) % 7,
                "difficulty": rating,
                "difficulty_source": "human",
            }
        )
        trials += [r for m in ("a", "b") for r in _capped("tb2", f"t{i}", m, depth)]
        trials += _public("tb2", f"t{i}", "a", [j < 8 - i for j in range(8)])
    data = _data(tasks, trials)
    row = _row(findings.label_pass_correlations(data, n_boot=200, seed=3), "label_corr_pass", "tb2")
    expected = stats.spearman(
        data.audit, "difficulty", "pass_rate", order={"difficulty": list(DIFFICULTY_ORDER)}, n_boot=200, seed=3
    )
    assert (row["value"], row["ci_low"], row["ci_high"]) == pytest.approx(
        (expected.r, expected.ci_low, expected.ci_high)
    )
    assert row["detail"] == "difficulty (human)"
    table = findings.depth_vs_author_rating(data, n_boot=0)
    assert (_row(table, "rated_hard_depth_ge_2", "tb2")["value"], _row(table, "rated_hard_depth_ge_2", "tb2")["n"]) == (
        3,
        3,
    )
    easy = _row(table, "rated_easy_medium_depth_ge_2", "tb2")
    assert (easy["value"], easy["n"]) == (2, 5)
    partial = stats.partial_spearman(
        data.audit, "depth", "difficulty", "work", order={"difficulty": list(DIFFICULTY_ORDER)}, n_boot=0
    )
    assert _row(table, "pcorr_depth_rating_given_work", "tb2")["value"] == pytest.approx(partial.r)


# ---------------------------------------------------------------------------------------------
# issue 19, item 1: pooled is the paper's sample (DEPTH-style set, TB2, TW), within-collection


def _between_only_case(seed: int = 0, n: int = 20) -> AuditData:
    """Within each of tb2, tw and depth, D, W and pass rate drawn independently; only the deep set passes less."""
    import numpy as np

    rng = np.random.default_rng(seed)
    tasks, trials = [], []
    for dataset, depths, rates in (
        ("tb2", (1, 2, 3), (6, 10)),
        ("tw", (1, 2, 3), (6, 10)),
        ("depth", (20, 40), (0, 4)),
    ):
        for i in range(n):
            task = f"{dataset}-{i}"
            tasks.append({"dataset": dataset, "task": task, "work": int(rng.integers(3, 60))})
            depth = int(rng.choice(depths))
            trials += [r for m in ("a", "b") for r in _capped(dataset, task, m, depth)]
            passes = int(rng.integers(*rates))
            trials += _public(dataset, task, "a", [j < passes for j in range(10)])
    return _data(tasks, trials)


def test_the_pooled_row_is_within_collection_so_a_difference_between_collections_is_no_correlation():
    data = _between_only_case()
    table = findings.pass_depth_given_work(data, n_boot=200, seed=0)
    pooled = _row(table, "pcorr_pass_depth_given_work", "pooled")
    assert pooled["collections"] == "tb2, tw, depth"  # the paper's pooled sample, not every collection present
    assert abs(pooled["value"]) < 0.25
    assert pooled["ci_low"] < 0 < pooled["ci_high"]
    # what the raw pooled ranks (depthlab before issue 19) read into the same tasks
    solved = data.audit.filter(pl.col("depth_status") == "solved")
    raw = stats.partial_spearman(solved, "depth", "pass_rate", "work", n_boot=0)
    assert raw.r < -0.6
    assert paper.reported_for("pcorr_pass_depth_given_work", "pooled").key == "pooled_pcorr_pass_depth_given_work"
    assert paper.reported_for("pcorr_pass_depth_given_work", "all") is None
    assert "within-collection" in pooled["detail"]


def test_the_pooled_row_needs_all_three_collections_of_the_papers_sample():
    data = _between_only_case().subset(["tb2", "depth"])
    row = _row(findings.pass_depth_given_work(data, n_boot=0), "pcorr_pass_depth_given_work", "pooled")
    assert row["value"] is None
    assert row["detail"] == "this data has no TW-Verified"  # says which (issue 30)


def _planted(rng, n: int, slope: float, offsets: list[tuple[float, float]]) -> pl.DataFrame:
    """Per collection: D and W normal, pass = slope * D + W / 3 + noise, each shifted by the collection's offsets."""
    frames = []
    for c, (d_offset, p_offset) in enumerate(offsets):
        d, w = rng.normal(size=n), rng.normal(size=n)
        p = slope * d + 0.3 * w + rng.normal(size=n)
        frames.append(pl.DataFrame({"dataset": f"c{c}", "d": d + d_offset, "p": p + p_offset, "w": w}))
    return pl.concat(frames)


def test_the_within_collection_statistic_recovers_a_planted_effect_and_finds_none_between_collections():
    import numpy as np

    rng = np.random.default_rng(7)
    # collections far apart: the deeper one passes MORE, while within each one pass falls with D
    offsets = [(0.0, 0.0), (3.0, 4.0), (6.0, 8.0)]
    planted = _planted(rng, 60, -1.0, offsets)
    within = within_collection_partial(planted, "d", "p", "w", n_boot=300, seed=1)
    assert within.r < -0.5
    assert within.ci_high < 0
    assert stats.partial_spearman(planted, "d", "p", "w", n_boot=0).r > 0  # raw pooled ranks read the opposite
    # no effect within, only between (the deep collection passes less): the interval covers 0 almost always
    covered, values = 0, []
    for _ in range(40):
        null = _planted(rng, 40, 0.0, [(0.0, 0.0), (3.0, -3.0), (6.0, -6.0)])
        result = within_collection_partial(null, "d", "p", "w", n_boot=200, seed=int(rng.integers(1 << 30)))
        covered += result.ci_low <= 0 <= result.ci_high
        values.append(result.r)
    assert covered >= 35
    assert abs(float(np.mean(values))) < 0.05
    # on one collection it is the rank partial correlation itself
    one = planted.filter(pl.col("dataset") == "c1")
    assert within_collection_partial(one, "d", "p", "w", n_boot=0).r == pytest.approx(
        stats.partial_spearman(one, "d", "p", "w", n_boot=0).r
    )


# ---------------------------------------------------------------------------------------------
# item 2: segment reliability counted from the run's own stop, r^6 beside the paper


def _zero_filled_run(task: str, model: str, passed: int, k: int = 6) -> dict:
    # depthlab's own verifier writes every segment key, 0 from the first failure on
    rewards = {f"segment_{i}": 1.0 if i <= passed else 0.0 for i in range(1, k + 1)}
    rewards["reward"] = float(passed == k)
    return {
        "dataset": "depth",
        "task": task,
        "model": model,
        "cap": None,
        "status": "pass" if passed == k else "fail",
        "rewards": json.dumps(rewards),
    }


def test_segment_reliability_counts_attempts_from_the_runs_own_stop_whatever_keys_follow():
    tasks = [{"dataset": "depth", "task": "t1", "work": 9}]
    trials = [_zero_filled_run("t1", "a", 6), _zero_filled_run("t1", "a", 6), _zero_filled_run("t1", "a", 4)]
    trials += [_zero_filled_run("t1", "b", 2)]
    table = findings.segment_reliability(_data(tasks, trials), n_boot=0)
    assert _row(table, "segment_reliability", "a")["value"] == pytest.approx(16 / 17)  # read 0.889 before
    assert _row(table, "segment_reliability", "b")["value"] == pytest.approx(2 / 3)  # read 0.333 before
    assert _row(table, "segment_pass_all_compounded", "a")["value"] == pytest.approx((16 / 17) ** 6)
    assert _row(table, "segment_pass_all_compounded", "worst model")["value"] == pytest.approx((2 / 3) ** 6)
    assert "r^6" in _row(table, "segment_pass_all_compounded", "a")["detail"]
    # a run that stopped without a key for its failing segment reads the same
    trials[2] = _segment_run("t1", "a", 4, k=6)
    table = findings.segment_reliability(_data(tasks, trials), n_boot=0)
    assert _row(table, "segment_reliability", "a")["value"] == pytest.approx(16 / 17)


# ---------------------------------------------------------------------------------------------
# item 3: the second model's effect against the main model, over the models D uses


def test_second_model_is_against_the_main_model_over_the_models_d_uses():
    tasks, trials = [], []
    for i in range(6):
        task = f"t{i}"
        tasks.append({"dataset": "tb2", "task": task, "work": 5})
        trials += _capped("tb2", task, "m-main", 2)  # alone it gives D = 2 everywhere
        trials += _capped("tb2", task, "m-second", (2, 2, 2, 3, 3, None)[i])
        trials += _capped("tb2", task, "a-third", None)  # first in name order, never passes, not in D
    models = ["m-main", "m-second"]
    data = AuditData.from_tables(
        schema.conform(pl.DataFrame(tasks), "tasks"),
        schema.conform(pl.DataFrame(trials), "trials"),
        models=models,
        simulated=False,
    )
    row = _row(findings.second_model(data), "second_model_share_lowered", "existing")
    assert row["value"] == 0  # the third model is neither first nor in D
    # what the old rule read: the first name in sorted order, every model with capped runs
    from depthlab.measures import second_model_effect

    old = second_model_effect(data.trials.filter(pl.col("cap").is_not_null()), first_model="a-third", by=None)
    assert old["share_lowered"].item() == 1.0
    assert row["models"] == "m-main, m-second"
    assert row["detail"].startswith("first model m-main (the main model")
    assert findings.main_model(data) == "m-main"  # it solves 6 tasks, m-second 5
    named = _row(findings.second_model(data, first_model="m-second"), "second_model_share_lowered", "existing")
    assert named["value"] == pytest.approx(3 / 6)  # m-second alone needs more than D = 2 on t3, t4, t5
    assert named["detail"].startswith("first model m-second (named by the caller)")


def test_the_main_model_is_the_one_solving_the_most_tasks_never_the_first_name():
    tasks, trials = [], []
    for i in range(4):
        task = f"t{i}"
        tasks.append({"dataset": "depth", "task": task, "work": 5})
        trials += _capped("depth", task, "z-strong", 3)
        trials += _capped("depth", task, "a-weak", 3 if i == 0 else None)
    assert findings.main_model(_data(tasks, trials)) == "z-strong"


# ---------------------------------------------------------------------------------------------
# item 4: the DEPTH-style set: the main model's solved tasks, "passed by none" among those run by all


def test_own_set_counts_the_main_models_pinned_tasks_and_no_pass_over_tasks_every_model_ran():
    tasks = [{"dataset": "depth", "task": t, "work": 50} for t in ("p", "q", "r", "s", "u")]
    trials = []
    trials += _capped("depth", "p", "main", 40) + _capped("depth", "p", "other", None)  # D 40
    trials += _capped("depth", "q", "main", 5) + _capped("depth", "q", "other", 10)  # D 5
    # r: main passes at 40, the other model never ran below 40: D incomplete (in neither count)
    trials += _capped("depth", "r", "main", 40) + [t for t in _capped("depth", "r", "other", None) if t["cap"] >= 40]
    trials += _capped("depth", "s", "main", None) + _capped("depth", "s", "other", 20)
    trials += _capped("depth", "u", "main", None) + _capped("depth", "u", "other", None)
    # uncapped: p passes; q and s fail for both (s's capped pass is not an uncapped pass); u run by main alone
    trials += _public("depth", "p", "main", [True]) + _public("depth", "p", "other", [False])
    trials += _public("depth", "q", "main", [False]) + _public("depth", "q", "other", [False])
    trials += _public("depth", "s", "main", [False]) + _public("depth", "s", "other", [False])
    trials += _public("depth", "r", "main", [False]) + _public("depth", "r", "other", [False])
    trials += _public("depth", "u", "main", [False])
    table = findings.own_set_summary(_data(tasks, trials))
    solved = _row(table, "own_solved_by_main", "depth")
    assert solved["value"] == 2  # p and q; r is solved by main but its D is incomplete
    assert "1 of them with an incomplete D" in solved["detail"]
    assert _row(table, "own_solved_by_main_depth_ge_40", "depth")["value"] == 1  # p, among the 2
    assert _row(table, "own_solved_by_main", "depth")["models"] == "main"
    assert _row(table, "own_tasks_run_by_all", "depth")["value"] == 4  # u was run by one model only
    none = _row(table, "own_passed_by_no_model", "depth")
    assert (none["value"], none["n"]) == (3, 4)  # q, r, s (s passes only under a cap); u is not run by all
    named = findings.own_set_summary(_data(tasks, trials), main_model="other")
    assert _row(named, "own_solved_by_main", "depth")["value"] == 2  # q (its own cap 10) and s (20)
    assert _row(named, "own_solved_by_main", "depth")["detail"].startswith("main model other (named by the caller)")


# ---------------------------------------------------------------------------------------------
# item 5: quantities of another provenance say so; the paper's quantity where it can be computed


def test_the_datasets_own_mean_turns_are_compared_as_a_variant():
    data = _solved_case([("tmax", "a", 1, 5, 8), ("facet", "b", 1, 5, 6)])
    compared = paper.compare(findings.turns_beside_depth(data))
    for key in ("tmax_mean_turns", "facet_mean_turns"):
        sample = compared.filter(pl.col("key") == key)["this_sample"].item()
        assert sample.startswith("real: ")
        assert "VARIANT: the paper quotes" in sample
    assert "VARIANT" not in compared.filter(pl.col("key") == "tmax_solved_median_depth")["this_sample"].item()


def test_the_six_to_ten_window_reads_the_lower_median_n_and_counts_unsolved_tasks():
    tasks, trials = [], []
    # (task, D or None for unsolved, the turn counts of its uncapped runs)
    spec = [("a", 1, [10, 11]), ("b", 1, [5, 6]), ("c", 2, [6, 6]), ("d", None, [8]), ("e", 1, [9, 12])]
    for task, depth, turns in spec:
        tasks.append({"dataset": "tmax", "task": task, "work": 5})
        trials += [r for m in ("a", "b") for r in _capped("tmax", task, m, depth)]
        trials += [r for n in turns for r in _public("tmax", task, "a", [False], turns=n)]
    window = findings.depth_given_turns(_data(tasks, trials))
    # a: lower median 10 (the interpolated 10.5 fell out); b: 5, out; c, d (unsolved: not D = 1), e (9) in
    assert _row(window, "tasks_n_in_window", "audited")["value"] == 4
    assert _row(window, "tasks_n_in_window_depth_1", "audited")["value"] == 2  # a and e


def test_rated_hard_counts_an_unsolved_task_as_d_at_least_two():
    tasks, trials = [], []
    for i, (rating, depth) in enumerate([("hard", None), ("hard", 1), ("hard", 3), ("easy", None), ("easy", 1)]):
        tasks.append({"dataset": "tb2", "task": f"t{i}", "work": 4, "difficulty": rating, "difficulty_source": "human"})
        trials += [r for m in ("a", "b") for r in _capped("tb2", f"t{i}", m, depth)]
    table = findings.depth_vs_author_rating(_data(tasks, trials), n_boot=0)
    hard = _row(table, "rated_hard_depth_ge_2", "tb2")
    assert (hard["value"], hard["n"]) == (2, 3)  # the unsolved one and D = 3 (1 of 2 before issue 19)
    easy = _row(table, "rated_easy_medium_depth_ge_2", "tb2")
    assert (easy["value"], easy["n"]) == (1, 2)


# ---------------------------------------------------------------------------------------------
# item 6: the proxy's verdict on real runs, said where a reader meets the proxy


def test_the_proxys_held_out_verdict_is_stated_in_its_docstring_docs_and_notebook():
    from pathlib import Path

    import depthlab.measures.proxy as proxy

    root = Path(__file__).resolve().parents[1]
    notebook = json.loads((root / "notebooks" / "07_depth_proxy.ipynb").read_text())
    texts = {
        "docstring": proxy.__doc__,
        "docs/proxy.md": (root / "docs" / "proxy.md").read_text(),
        "notebook 07": "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown"),
    }
    for where, text in texts.items():
        plain = text.replace("−", "-")
        for number in ("-0.07 (p 0.60)", "-0.13 (p 0.37)", "-0.28 (p 0.044)", "3,115", "did not replicate"):
            assert number in plain, (where, number)
        assert "not validated as a depth estimate" in plain, where
        assert "matches the paper's D figure" not in plain, where


# ---------------------------------------------------------------------------------------------
# item 7: the findings the paper reports that run logs allow, each with its paper number


def test_merged_segments_compare_each_task_with_its_merged_variant_on_the_ladder():
    tasks, trials = [], []
    # (original D, merged D): unchanged x3 (one of them unsolved twice), a drop by one cap, a drop by two caps
    pairs = [(20, 20), (40, 40), (None, None), (20, 10), (40, 10)]
    for i, (original, merged) in enumerate(pairs):
        tasks.append({"dataset": "depth", "task": f"o{i}", "work": 80})
        tasks.append(
            {"dataset": "depth", "task": f"m{i}", "work": 80, "labels": json.dumps({"merged_from": f"depth/o{i}"})}
        )
        trials += [r for m in ("a", "b") for r in _capped("depth", f"o{i}", m, original)]
        trials += [r for m in ("a", "b") for r in _capped("depth", f"m{i}", m, merged)]
    table = findings.merged_segments(_data(tasks, trials))
    group = "merged"
    assert _row(table, "merged_pairs", group)["value"] == 5
    assert _row(table, "merged_depth_unchanged", group)["value"] == 3
    share = _row(table, "merged_share_depth_unchanged", group)
    assert share["value"] == pytest.approx(3 / 5)
    assert share["interval"] == "ci95"
    assert _row(table, "merged_drops", group)["value"] == 2
    assert _row(table, "merged_drops_by_one_cap", group)["value"] == 1
    assert _row(table, "merged_rises", group)["value"] == 0
    assert paper.get("merged_share_depth_unchanged").value == 0.68
    assert paper.get("merged_pairs").value == 25


def test_the_sign_tests_sub_counts():
    tasks, trials = [], []
    for i, (original, derived) in enumerate([(1, 20), (1, 40), (5, None), (20, 80), (None, None)]):
        tasks.append({"dataset": "tb2", "task": f"o{i}", "work": 5})
        tasks.append(
            {"dataset": "depth", "task": f"d{i}", "work": 50, "labels": json.dumps({"derived_from": f"tb2/o{i}"})}
        )
        trials += [r for m in ("a", "b") for r in _capped("tb2", f"o{i}", m, original)]
        trials += [r for m in ("a", "b") for r in _capped("depth", f"d{i}", m, derived)]
    table = findings.sign_test_depth(_data(tasks, trials))
    group = "paired environments"
    assert _row(table, "sign_test_original_depth_le_10", group)["value"] == 3  # 1, 1, 5 (an unsolved is not <= 10)
    assert _row(table, "sign_test_original_depth_1", group)["value"] == 2
    assert _row(table, "sign_test_derived_depth_ge_20", group)["value"] == 5  # unsolved counts as >= 20
    assert _row(table, "sign_test_derived_depth_ge_20", group)["n"] == 5
    assert [paper.get(k).value for k in ("sign_test_original_depth_le_10", "sign_test_original_depth_1")] == [34, 26]


def test_the_90th_percentile_of_w_and_the_median_n_per_collection():
    spec = [("tmax", f"t{i}", 1, w, 4 + i) for i, w in enumerate(range(10, 110, 10))]  # W 10..100, N 4..13
    spec += [("seta", f"s{i}", 2, 5, 7) for i in range(3)] + [("depth", "x", 40, 300, 45)]
    data = _solved_case(spec)
    row = _row(findings.synthetic_vs_human(data), "solved_p90_work", "synthetic")
    work = [*range(10, 110, 10), 5, 5, 5]
    assert row["value"] == pytest.approx(float(pl.Series(work).quantile(0.9, "linear")))
    turns = findings.turns_beside_depth(data)
    assert _row(turns, "median_turns", "tmax")["value"] == pytest.approx(8.5)
    assert _row(turns, "median_turns", "seta")["value"] == 7
    existing = _row(turns, "median_turns", "existing")
    assert (existing["ci_low"], existing["ci_high"], existing["interval"]) == (7, 8.5, "range")
    assert existing["collections"] == "tmax, seta"  # the DEPTH-style set is not an existing collection
    assert paper.get("existing_median_turns").text() == "5 to 9 (range)"


def test_one_models_median_turns_beside_the_median_depth_of_the_tasks_it_ran():
    tasks, trials = [], []
    for i, depth in enumerate([1, 1, 1, 2, None]):
        tasks.append({"dataset": "tmax", "task": f"t{i}", "work": 5})
        trials += [r for m in ("gemini", "other") for r in _capped("tmax", f"t{i}", m, depth)]
        trials += [r for n in (7 + i, 9 + i) for r in _public("tmax", f"t{i}", "gemini", [True], turns=n)]
    trials += _public("tmax", "t0", "other", [True], turns=3)
    table = findings.model_turns_beside_depth(_data(tasks, trials))
    turns = _row(table, "model_median_turns", "tmax")
    # gemini on the 4 solved tasks: medians 8, 9, 10, 11 -> 9.5; their D 1, 1, 1, 2 -> 1
    assert (turns["value"], turns["n"], turns["models"]) == (9.5, 4, "gemini")
    assert _row(table, "model_median_depth", "tmax")["value"] == 1
    other = _row(findings.model_turns_beside_depth(_data(tasks, trials), model="other"), "model_median_turns", "tmax")
    assert (other["value"], other["n"]) == (3, 1)
    assert (paper.get("tmax_model_median_turns").value, paper.get("tmax_model_median_depth").value) == (8, 1)


# ---------------------------------------------------------------------------------------------
# a number beside the paper's is on the same collections, or its row says why


def test_no_comparison_row_is_on_other_collections_than_the_papers_unless_it_says_why(demo):
    seen = 0
    for reported in paper.REPORTED:
        function = getattr(findings, reported.function)
        kwargs = {"n_boot": 0} if "n_boot" in inspect.signature(function).parameters else {}
        row = paper.compare(function(demo, **kwargs)).filter(pl.col("key") == reported.key).row(0, named=True)
        assert "UNLIKE" not in row["this_sample"], row
        if reported.collections is None or row["this_data"] == "not computable here":
            continue
        seen += 1
        here = set(row["this_sample"].split(": ", 1)[1].split(";")[0].split(", "))
        # the demo holds every collection: a row over other collections must be a named variant
        assert here == set(reported.collections) or reported.differs, (reported.key, here, reported.collections)
    assert seen >= 40


def test_compare_says_when_a_sample_is_a_subset_or_unlike_the_papers():
    def finding(collections: str) -> pl.DataFrame:
        row = {
            "key": "pcorr_pass_depth_given_work",
            "group": "pooled",
            "value": -0.3,
            "n": 50,
            "unit": "tasks",
            "collections": collections,
            "models": "a",
            "data": "real",
        }
        return pl.DataFrame([row], schema=findings.FINDING)

    same = paper.compare(finding("tb2, tw, depth"))["this_sample"].item()
    assert same.startswith("real: tb2, tw, depth; 50 tasks; models a; VARIANT: ")  # within-collection is a choice
    assert "this data has only" not in same
    assert "UNLIKE" not in same
    subset = paper.compare(finding("tb2, depth"))["this_sample"].item()
    assert subset.endswith("; this data has only depth, tb2 of the paper's depth, tb2, tw")
    assert "UNLIKE the paper's sample" in paper.compare(finding("tb2, tw, depth, rst"))["this_sample"].item()


def _tw_unsolved_case() -> AuditData:
    # TB2 solved and varied; TW present with public runs but no task solved under any cap
    tasks, trials = [], []
    for dataset in ("tb2", "tw"):
        for i in range(8):
            task = f"{dataset}-{i}"
            tasks.append({"dataset": dataset, "task": task, "work": 3 + (i * 7) % 11})
            depth = CAPS[i % 5] if dataset == "tb2" else None
            for model in ("a", "b"):
                trials += _capped(dataset, task, model, depth)
            trials += _public(dataset, task, "a", [j < 8 - (i * 3) % 7 for j in range(8)], turns=4 + (i * 5) % 9)
    return _data(tasks, trials)


def test_a_pooled_row_names_only_the_collections_that_gave_it_tasks():
    data = _tw_unsolved_case()
    table = findings.pass_depth_given_work(data, n_boot=100, seed=1)
    pair = _row(table, "pcorr_pass_depth_given_work", "tb2+tw")
    # TB2 alone is not "TB2 + TW": no value, and the sample says why
    assert pair["value"] is None
    assert pair["collections"] == "tb2"
    assert "tw: fewer than 2 solved tasks" in pair["detail"]
    everything = _row(table, "pcorr_pass_depth_given_work", "all")
    assert everything["value"] is None
    assert "at least two collections" in everything["detail"]
    assert _row(table, "pcorr_pass_depth_given_work", "tb2")["value"] is not None
    compared = paper.compare(table)
    # the collections of a row are the first part of its sample ("real: tb2, tw; ..."): none with a value names tw
    named = compared.filter(pl.col("this_sample").str.split(";").list.first().str.contains(r"\btw\b"))
    assert named.filter(pl.col("this_value").is_not_null()).height == 0, named


def test_the_quadrants_name_only_the_collections_that_gave_them_tasks():
    data = _tw_unsolved_case()
    cells = findings.quadrant_cells(data, n_boot=0)
    assert cells["collections"].unique().to_list() == ["tb2"]
    table = findings.quadrant_percentiles(data, n_boot=0)
    assert set(table["collections"].to_list()) == {"tb2"}
    assert all("tw: no solved task" in detail for detail in table["detail"].drop_nulls().to_list()[:4])


def test_from_tables_says_what_the_caller_says_and_counts_a_trial_once():
    tasks = schema.conform(pl.DataFrame({"dataset": "tb2", "task": ["t"], "work": [3]}), "tasks")
    runs = [
        {"dataset": "tb2", "task": "t", "model": "m", "cap": cap, "status": status, "job": "j", "trial": f"r{cap}"}
        for cap, status in ((1, "fail"), (2, "pass"))
    ]
    trials = schema.conform(pl.DataFrame(runs), "trials")
    with pytest.raises(TypeError, match="simulated"):
        AuditData.from_tables(tasks, trials)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"'simulated' parameter of AuditData\.from_tables"):
        AuditData.from_tables(tasks, trials, simulated=None)  # type: ignore[arg-type]
    assert AuditData.from_tables(tasks, trials, simulated=True).kind == "simulated"
    # the same trial given twice counts once, and the notes say so
    twice = AuditData.from_tables(tasks, pl.concat([trials, trials.head(1)]), simulated=False)
    assert twice.trials.height == 2
    assert twice.notes == ["1 trial given twice (same dataset, job and trial) counted once"]
    # rows with no trial id are repeated runs of a hand-made case: all count
    bare = trials.with_columns(trial=pl.lit(None, pl.String))
    assert AuditData.from_tables(tasks, pl.concat([bare, bare]), simulated=False).trials.height == 4
    with pytest.raises(ValueError, match="tasks given twice: tb2/t"):
        AuditData.from_tables(pl.concat([tasks, tasks]), trials, simulated=False)


def test_depth_uncertainty_findings_on_the_demo(demo):
    # issue 29: censored shares beside the solved-only ones; split-half needs 2+ attempts (the demo has 1)
    shares = findings.censored_depth_shares(demo, n_boot=100, seed=1)
    for group in demo.datasets:
        rows = {r["key"]: r for r in shares.filter(pl.col("group") == group).iter_rows(named=True)}
        censored, solved = rows["censored_share_depth_le_3"], rows["solved_only_share_depth_le_3"]
        n_unsolved = demo.depth.filter((pl.col("dataset") == group) & (pl.col("status") == "unsolved")).height
        if solved["value"] is not None and censored["value"] is not None:
            # unsolved tasks are all deeper than 3: counting them can only lower the share
            assert censored["value"] <= solved["value"] + 1e-12
            assert censored["n"] == solved["n"] + n_unsolved
    reliability = findings.depth_reliability(demo, repeats=2, seed=1)
    assert reliability["value"].null_count() == reliability.height
    assert set(reliability["detail"]) == {"needs two or more attempts per cell"}
    robust = findings.pass_depth_given_work_robust(demo, n_perm=200, n_boot=100, seed=1)
    perm = robust.filter(pl.col("key") == "pcorr_pass_depth_given_work_perm").drop_nulls("value")
    assert perm.height > 0
    assert perm["p"].is_between(0, 1).all()


# ---------------------------------------------------------------------------------------------
# issue 30: a choice with a natural alternative is a parameter; rows that cannot be computed say why


def test_a_task_at_the_median_w_is_large_unless_the_tie_rule_says_small():
    tasks, trials = [], []
    # TB2 works 1, 3, 3, 5, 7 (median 3: two tasks tie at it), all shallow; TW alike
    for dataset in ("tb2", "tw"):
        for i, work in enumerate((1, 3, 3, 5, 7)):
            task = f"{dataset}-{i}"
            tasks.append({"dataset": dataset, "task": task, "work": work})
            trials += _capped(dataset, task, "m", 1)
            trials += _public(dataset, task, "m", [j <= i for j in range(5)])
    data = _data(tasks, trials)
    sizes = {
        ties: dict(
            findings.quadrant_cells(data, work_ties=ties, n_boot=0)
            .filter(pl.col("depth_class") == "shallow")
            .select("work_class", "n")
            .iter_rows()
        )
        for ties in ("large", "small")
    }
    assert sizes["large"] == {"large": 8, "small": 2}
    assert sizes["small"] == {"large": 4, "small": 6}
    table = findings.quadrant_percentiles(data, work_ties="small", n_boot=0)
    assert "a task at it is small" in _row(table, "quadrant_mean_percentile", "shallow/small")["detail"]
    with pytest.raises(ValueError, match="'work_ties' parameter of quadrant_percentiles"):
        findings.quadrant_percentiles(data, work_ties="median")
    # the statistic itself, on its own
    frame = pl.DataFrame({"dataset": "a", "depth": [1, 1, 1], "work": [1, 2, 3], "pass_rate": [0.2, 0.5, 0.9]})
    shallow = stats.quadrant_cells(frame, work_ties="small", n_boot=0).filter(pl.col("depth_class") == "shallow")
    assert shallow["n"].to_list() == [1, 2]  # W = 2 (the median) is small


def test_rows_that_cannot_be_computed_say_why_in_the_comparison():
    tb2 = audit_data("tb2")  # real TB2 facts: no capped runs, no TW
    seen = 0
    for function in sorted({r.function for r in paper.REPORTED}):
        finding = getattr(findings, function)
        kwargs = {"n_boot": 0} if "n_boot" in inspect.signature(finding).parameters else {}
        for row in paper.compare(finding(tb2, **kwargs)).iter_rows(named=True):
            assert "none; 0" not in row["this_sample"], row
            if row["this_data"] == "not computable here":
                seen += 1
                why = row["this_sample"].split("not computable: ", 1)[1]
                assert not why.startswith("; VARIANT"), row
                assert "no such sample" not in why, row  # a reason, not a shrug
    assert seen > 40
    compared = paper.compare(findings.pass_depth_given_work(tb2, n_boot=0))
    by_key = {r["key"]: r["this_sample"] for r in compared.iter_rows(named=True)}
    assert by_key["tb2_pcorr_pass_depth_given_work"].startswith("real: tb2; not computable: no capped runs (D unknown)")
    assert "this data has no TW-Verified" in by_key["tb2_tw_pcorr_pass_depth_given_work"]
    assert "this data has no TW-Verified, DEPTH" in by_key["pooled_pcorr_pass_depth_given_work"]
    # a number that needs no D is not said to lack capped runs
    own = paper.compare(findings.own_set_summary(tb2)).filter(pl.col("key") == "own_tasks")["this_sample"].item()
    assert own == "real: not computable: this data has no DEPTH"


def test_tasks_with_an_incomplete_d_leaving_the_solved_counts_are_noted():
    tasks, trials = [], []
    for i, depth in enumerate((1, 1, 2, None)):
        tasks.append({"dataset": "tmax", "task": f"t{i}", "work": 5})
        # t3 was run up to cap 5 only, failing everywhere: neither solved nor unsolved
        trials += _capped("tmax", f"t{i}", "m", depth, top=80 if depth else 5)
    data = _data(tasks, trials)
    assert data.audit.filter(pl.col("depth_status") == "incomplete").height == 1
    shares = findings.depth_shares(data)
    for key in ("solved_tasks", "solved_depth_1", "solved_share_depth_1"):
        assert "1 task with an incomplete D left out" in _row(shares, key, "tmax")["detail"], key
    assert _row(shares, "solved_share_depth_1", "tmax")["value"] == pytest.approx(2 / 3)
    split = findings.synthetic_vs_human(data)
    assert "1 task with an incomplete D left out" in _row(split, "solved_tasks", "synthetic")["detail"]
    complete = _data(tasks[:3], [t for t in trials if t["task"] != "t3"])
    assert _row(findings.depth_shares(complete), "solved_tasks", "tmax")["detail"] is None


def test_a_collection_with_two_labels_gives_two_distinct_label_rows():
    complexity = ["short", "short", "moderate", "moderate", "complex", "complex", "intricate", "intricate"]
    difficulty = ["easy", "medium", "easy", "hard", "medium", "hard", "hard", "medium"]
    tasks, trials = [], []
    for i in range(8):
        tasks.append(
            {
                "dataset": "tmax",
                "task": f"t{i}",
                "work": 4,
                "difficulty": difficulty[i],
                "difficulty_source": "generated",
                "labels": json.dumps({"task_complexity": complexity[i]}),
            }
        )
        trials += _public("tmax", f"t{i}", "a", [j < 8 - i for j in range(8)])
    table = findings.label_pass_correlations(_data(tasks, trials), n_boot=0)
    rows = table.filter(pl.col("key") == "label_corr_pass")
    assert rows.select("key", "group").is_duplicated().sum() == 0
    assert _row(table, "label_corr_pass", "tmax")["detail"] == "difficulty (generated)"
    assert _row(table, "label_corr_pass", "tmax: task_complexity")["detail"] == "task_complexity (generated)"
    generated = _row(table, "label_corr_pass", "generated")
    assert generated["ci_low"] <= generated["ci_high"]
    assert "2 generation-time labels" in generated["detail"]


def test_depth_against_the_rating_treats_an_unsolved_task_one_way():
    spec = [("easy", 1), ("easy", 2), ("medium", 1), ("medium", 3), ("hard", 2), ("hard", 5), ("hard", None)]
    spec += [("medium", None)]
    tasks, trials = [], []
    for i, (rating, depth) in enumerate(spec):
        tasks.append(
            {
                "dataset": "tb2",
                "task": f"t{i}",
                "work": 3 + (4 * i) % 7,
                "difficulty": rating,
                "difficulty_source": "human",
            }
        )
        trials += [r for m in ("a", "b") for r in _capped("tb2", f"t{i}", m, depth)]
    data = _data(tasks, trials)
    table = findings.depth_vs_author_rating(data, n_boot=0)
    corr = _row(table, "pcorr_depth_rating_given_work", "tb2")
    counted = _row(table, "rated_hard_depth_ge_2", "tb2")["n"] + _row(table, "rated_easy_medium_depth_ge_2", "tb2")["n"]
    assert corr["n"] == counted == 8  # the two unsolved tasks in both (the correlation had 6 before)
    # by hand: an unsolved task's D is above every cap (any number above 80 ranks the same)
    frame = data.audit.with_columns(depth=pl.col("depth").fill_null(1000))
    expected = stats.partial_spearman(
        frame, "depth", "difficulty", "work", order={"difficulty": list(DIFFICULTY_ORDER)}, n_boot=0
    )
    assert corr["value"] == pytest.approx(expected.r)
    assert "2 unsolved ranked above every cap" in corr["detail"]
    assert "unsolved" in inspect.getdoc(findings.depth_vs_author_rating).split("Rows")[0]


def test_segment_reliability_counts_a_valid_run_with_no_segment_key():
    tasks = [{"dataset": "depth", "task": "t1", "work": 9, "labels": json.dumps({"segments": 3})}]
    trials = [_segment_run("t1", "a", 2), _segment_run("t1", "a", 1)]  # 2 of 3 and 1 of 2 attempted: 3/5
    keyless = {"dataset": "depth", "task": "t1", "model": "a", "cap": None, "status": "fail"}
    trials += [{**keyless, "rewards": json.dumps({"reward": 0.0})}, {**keyless, "rewards": None}]
    table = findings.segment_reliability(_data(tasks, trials), n_boot=0)
    row = _row(table, "segment_reliability", "a")
    assert row["value"] == pytest.approx(3 / 7)  # read 0.600 "from 2 runs" before
    assert row["detail"].startswith("a: 4 runs (2 with no segment key) on 1 task")
    # a keyless run that passed passed every segment
    passed = [*trials[:2], {**keyless, "status": "pass", "rewards": json.dumps({"reward": 1.0})}]
    table = findings.segment_reliability(_data(tasks, passed), n_boot=0)
    assert _row(table, "segment_reliability", "a")["value"] == pytest.approx(6 / 8)


def test_second_model_drops_set_beside_those_noise_alone_gives():
    # issue 29: on runs where the second model's drops are noise alone (every model's horizon the task's),
    # the observed share and the fitted model's noise-alone share agree; the observed one is second_model_effect's
    import numpy as np

    from depthlab.measures import second_model_effect
    from depthlab.simulate.noisy import counts_to_trials
    from depthlab.simulate.noisy_fit import NoisyFit, draw_noise_alone

    truth = NoisyFit(models=("a", "b"), caps=CAPS, slopes=(2.5, 4.0), luck=0.04, beyond=0.1, depth_median=4.0,
                     depth_sigma=1.2, model_spread=0.0, log_likelihood=0.0, n_tasks=300, attempts=1,
                     converged=True)  # fmt: skip
    rng = np.random.default_rng(3)
    drawn = draw_noise_alone(truth, 300, rng)
    ones = np.ones(drawn.prob.shape, dtype=np.int64)
    trials = counts_to_trials(drawn, rng.binomial(ones, drawn.prob), ones).with_columns(dataset=pl.lit("tb2"))
    tasks = schema.conform(pl.DataFrame({"dataset": "tb2", "task": drawn.names}), "tasks")
    data = AuditData.from_tables(tasks, trials, simulated=True)
    rows = {r["key"]: r for r in findings.second_model_noise(data, replications=10, seed=2).iter_rows(named=True)}
    observed, noise = rows["second_model_drop_share"], rows["second_model_drop_share_noise"]
    effect = second_model_effect(trials, by=None)
    assert observed["value"] == pytest.approx(effect["n_lowered"].sum() / effect["n_determined"].sum())
    assert observed["n"] == effect["n_determined"].sum()
    assert noise["interval"] == "range"
    assert noise["ci_low"] <= noise["value"] <= noise["ci_high"]
    assert noise["value"] == pytest.approx(observed["value"], abs=0.06)
    assert "fitted slopes" in noise["detail"]


def test_second_model_noise_on_the_demo_is_below_its_observed_drops(demo):
    # the demo's models pass exactly from their own depth on: no luck, its drops are the models' own
    rows = findings.second_model_noise(demo, replications=2, seed=1)
    assert set(rows["key"]) == {"second_model_drop_share", "second_model_drop_share_noise"}
    wide = rows.pivot(on="key", index="group", values="value").drop_nulls()
    assert wide.height > 0
    assert wide["second_model_drop_share_noise"].mean() < wide["second_model_drop_share"].mean() / 2
    noise = rows.filter(pl.col("key") == "second_model_drop_share_noise").drop_nulls("value")
    assert (noise["interval"] == "range").all()
    assert "luck 0.0" in noise["detail"][0]


# ---------------------------------------------------------------------------------------------
# issue 38: the robust rows' unit is the task group; a p-value only from MIN_TASKS units up


def test_robust_rows_take_task_groups_as_the_unit_and_need_min_tasks():
    from depthlab.schema import MIN_TASKS

    tasks, trials = [], []
    depths = [1, 1, 2, 3, 5, 1, 10, 2]
    for g, depth in enumerate(depths):  # RST-like: 8 seeds, each rewritten twice (the rewrites alike)
        for copy in range(2):
            task = f"seed{g}-{copy}"
            tasks.append({"dataset": "rst", "task": task, "work": 5 + 3 * g + copy, "task_group": f"seed{g}"})
            trials += _capped("rst", task, "m", depth)
            trials += _public("rst", task, "m", [j < (6, 8, 3, 5, 2, 7, 1, 4)[g] for j in range(8)])
    for i in range(MIN_TASKS - 1):  # one task short of a p-value
        tasks.append({"dataset": "tmax", "task": f"t{i}", "work": 3 + i})
        trials += _capped("tmax", f"t{i}", "m", [1, 2, 3, 5, 10][i])
        trials += _public("tmax", f"t{i}", "m", [j < 5 - i for j in range(5)])
    trials = [{**trial, "passed": trial["status"] == "pass"} for trial in trials]  # as the loaders write it
    data = _data(tasks, trials)
    robust = findings.pass_depth_given_work_robust(data, n_perm=500, n_boot=200, seed=0)
    rows = {(r["key"], r["group"]): r for r in robust.iter_rows(named=True)}
    perm, hier = rows[("pcorr_pass_depth_given_work_perm", "rst")], rows[("pcorr_pass_depth_given_work_hier", "rst")]
    assert perm["n"] == 8
    assert perm["p"] is not None
    assert "task groups permuted whole" in perm["detail"]
    # the permutation row's estimate is the main row's: the partial Spearman of the groups' means
    main = findings.pass_depth_given_work(data, n_boot=0).filter(pl.col("group") == "rst").row(0, named=True)
    assert perm["value"] == pytest.approx(main["value"])
    assert hier["ci_low"] is not None
    assert "task groups, then tasks, then runs" in hier["detail"]
    grouped = data.audit.filter(pl.col("dataset") == "rst").group_by("task_group").agg(pl.col("pass_rate").mean())
    assert grouped.height == perm["n"]
    for key in ("pcorr_pass_depth_given_work_perm", "pcorr_pass_depth_given_work_hier"):
        short = rows[(key, "tmax")]
        assert short["value"] is None
        assert short["p"] is None
        assert f"needs at least {MIN_TASKS} tasks" in short["detail"]
