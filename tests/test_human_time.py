"""findings.depth_vs_human_time: D, N and pass rate against the authors' expert minutes, checked against scipy."""

from __future__ import annotations

import polars as pl
import pytest
from scipy import stats as scipy_stats

from depthlab.auditdata import audit_data, demo_data
from depthlab.findings import UNSOLVED_RANK, depth_vs_human_time


@pytest.fixture(scope="module")
def tb2():
    return audit_data("tb2")


def test_d_is_not_computable_on_the_bundled_tb2_facts(tb2):
    rows = depth_vs_human_time(tb2, n_boot=0)
    depth = rows.filter(key="spearman_depth_human_minutes").row(0, named=True)
    assert depth["value"] is None
    assert depth["detail"] == "no capped runs (D unknown)"
    assert set(rows["data"]) == {"real"}


@pytest.mark.parametrize(
    ("key", "column"), [("spearman_turns_human_minutes", "n_turns"), ("spearman_pass_human_minutes", "pass_rate")]
)
def test_turns_and_pass_rate_against_expert_minutes_agree_with_scipy(tb2, key, column):
    row = depth_vs_human_time(tb2, n_boot=0).filter(key=key).row(0, named=True)
    used = tb2.audit.filter(pl.col("dataset") == "tb2").drop_nulls([column, "expert_time_min"])
    expected = scipy_stats.spearmanr(used[column].to_numpy(), used["expert_time_min"].to_numpy())
    assert row["n"] == used.height == 88  # 89 TB2 tasks, one states no estimate
    assert row["value"] == pytest.approx(expected.statistic, abs=1e-12)
    assert row["p"] == pytest.approx(expected.pvalue, rel=1e-6)


def test_d_against_expert_minutes_on_the_demo_ranks_unsolved_tasks_above_every_cap(tmp_path):
    data = audit_data(demo_data(tmp_path, scale=0.1, seed=2))  # a simulated demo: D exists there
    row = depth_vs_human_time(data, n_boot=0).filter(key="spearman_depth_human_minutes", group="tb2").row(0, named=True)
    used = data.audit.filter(
        (pl.col("dataset") == "tb2")
        & pl.col("expert_time_min").is_not_null()
        & pl.col("depth_status").is_in(["solved", "unsolved"])
    ).with_columns(depth=pl.when(pl.col("depth_status") == "unsolved").then(UNSOLVED_RANK).otherwise(pl.col("depth")))
    expected = scipy_stats.spearmanr(used["depth"].to_numpy(), used["expert_time_min"].to_numpy())
    assert row["data"] == "simulated"
    assert row["n"] == used.height >= 6
    assert row["value"] == pytest.approx(expected.statistic, abs=1e-12)
