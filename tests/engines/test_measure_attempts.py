"""``depthlab measure --attempts auto`` on both engines (issue 37, item 3): the same extra attempts.

The chain task with 2 reads (D = 3) from the Debian userland, one scripted model on 127.0.0.1 that
reads each output, caps 2 and 3, ``--max-attempts 2``. Round 1 runs cap 2 once (a fail); under
``any`` a second attempt there could still give D = 2, so round 2 asks for one more attempt in the
cell that holds one trial, and cap 3. The local engine used to count the trial the cell holds a
second time (the fill's own resume count), run nothing, and stop with exit 1.
"""

from __future__ import annotations

import polars as pl
import pytest
from engines_helpers import engine_flags, measure_args, run_measure
from test_measure_e2e import capped_trials

pytestmark = [pytest.mark.docker, pytest.mark.harbor]


@pytest.mark.parametrize("engine", ["local", "harbor"])
def test_attempts_auto_runs_the_second_attempt_on_both_engines(
    engine, chain_tasks, server, request, measure_env, tmp_path
):
    jobs, out = tmp_path / "jobs", tmp_path / "depth.csv"
    extra = ["--attempts", "auto", "--max-attempts", "2", "--no-preflight", "-n", "2", *engine_flags(engine, request)]
    run = run_measure(measure_args(chain_tasks / "measure-chain-r2", jobs, out, server.url, *extra), measure_env)
    assert run.returncode == 0, run.stderr[-4000:]
    assert "recorded no valid trial" not in run.stderr
    table = pl.read_csv(out)
    assert table.select("task", "depth", "status").rows() == [("measure-chain-r2", 3, "solved")]
    trials = capped_trials(jobs)
    per_cap = dict(trials.group_by("cap").len().iter_rows())
    assert per_cap == {2: 2, 3: 1}, trials.select("trial", "cap", "status")
    assert (trials["status"] != "invalid").all()
    assert trials.filter(pl.col("cap") == 2)["status"].to_list() == ["fail", "fail"]
    # two rounds: cap 2, then its second attempt beside cap 3
    assert "round 2:" in run.stderr, run.stderr[-3000:]
    assert "round 3:" not in run.stderr, run.stderr[-3000:]
