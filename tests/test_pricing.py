"""Cost as a column (issue 45): the shipped price table, a user's table, trials priced and checked."""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import polars as pl
import pytest

from depthlab import cli, measures, schema
from depthlab.io import price_provenance, price_source, read_prices
from depthlab.schema import COST_CHECKS, COST_PER_DEPTH, COST_PER_TASK, COST_PER_TURN, DEPTH_COST, PRICED_TRIALS, PRICES


def _user_prices(tmp_path, rows: str, name: str = "prices.csv"):
    path = tmp_path / name
    path.write_text("model,input_usd_per_token,output_usd_per_token,cache_read_usd_per_token\n" + rows)
    return path


def test_the_shipped_table_says_where_it_comes_from_and_holds_what_it_says():
    prices = read_prices()
    note = price_provenance()
    version = re.search(r"`litellm` (\d+\.\d+\.\d+)", note)
    kept = re.search(r"Kept: (\d+) models", note)
    assert version
    assert kept
    assert re.search(r"Extracted: \d{4}-\d{2}-\d{2}", note)
    assert prices.height == int(kept.group(1)) > 1000
    assert prices["model"].is_unique().all()
    assert prices.schema == pl.Schema(PRICES)
    assert (prices.select(pl.exclude("model")).min().row(0)) >= (0.0, 0.0, 0.0)


@pytest.mark.harbor
def test_the_shipped_table_equals_litellm_s_own_prices(harbor_python):
    # every row against the JSON of the LiteLLM release the note names, read in Harbor's side venv
    # (LiteLLM is installed there), and LiteLLM's own cost function on three models
    script = """
import importlib.metadata as m, json, litellm
from litellm import cost_per_token
path = next(f.locate() for f in m.files("litellm") if f.name == "model_prices_and_context_window_backup.json")
models = ("gpt-4o", "claude-sonnet-4-5", "gpt-5")
costs = [list(cost_per_token(model=k, prompt_tokens=1000, completion_tokens=200)) for k in models]
print(json.dumps({"version": m.version("litellm"), "table": json.load(open(path)), "costs": costs}))
"""
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([str(harbor_python), "-c", script], capture_output=True, text=True, check=True, env=env)
    litellm = json.loads(done.stdout.strip().splitlines()[-1])
    note = price_provenance()
    if f"`litellm` {litellm['version']}" not in note:
        pytest.skip(f"the side venv has LiteLLM {litellm['version']}; the table was read from another release")
    prices = read_prices()
    for model, input_price, output_price, cache_price in prices.iter_rows():
        entry = litellm["table"][model]
        assert (input_price, output_price) == (entry["input_cost_per_token"], entry["output_cost_per_token"]), model
        assert cache_price == entry.get("cache_read_input_token_cost"), model
    trials = pl.DataFrame(
        {
            "model": ["gpt-4o", "claude-sonnet-4-5", "gpt-5"],
            "n_input_tokens": [1000] * 3,
            "n_cache_tokens": [0] * 3,
            "n_output_tokens": [200] * 3,
            "cost_usd": [sum(pair) for pair in litellm["costs"]],
        }
    )
    priced = measures.price_trials(trials)
    assert priced["cost_priced_usd"].to_list() == pytest.approx(trials["cost_usd"].to_list(), rel=1e-12)
    assert set(priced["cost_check"]) == {"agree"}


def test_price_trials_prices_tokens_with_cached_input_at_the_cache_price(tmp_path):
    prices = read_prices(_user_prices(tmp_path, "m,2e-06,8e-06,2e-07\nvendor/m,1e-06,1e-06,\nplain,1e-06,3e-06,\n"))
    trials = pl.DataFrame(
        {
            "model": ["m", "vendor/m", "other/m", "plain", "m", "ghost", "m"],
            "n_input_tokens": [10_000, 10_000, 10_000, 10_000, None, 5, 100],
            "n_cache_tokens": [4_000, 4_000, None, 4_000, 0, 0, 0],
            "n_output_tokens": [500, 500, 500, 500, 10, 5, 10],
            "cost_usd": [0.0168, 0.0105, None, 0.5, 1.0, 0.1, 0.0],
        }
    )
    priced = measures.price_trials(trials, prices)
    assert priced.columns == [*trials.columns, *PRICED_TRIALS]
    expected = [
        6_000 * 2e-6 + 4_000 * 2e-7 + 500 * 8e-6,  # uncached input, cached at the cache-read price, output
        10_000 * 1e-6 + 500 * 1e-6,  # the exact name wins over the bare one; no cache price: cached as input
        10_000 * 2e-6 + 500 * 8e-6,  # other/m: no row of that name, priced as m (no cache tokens recorded)
        10_000 * 1e-6 + 500 * 3e-6,
        None,
        None,
        100 * 2e-6 + 10 * 8e-6,
    ]
    got = priced["cost_priced_usd"].to_list()
    assert [g is None for g in got] == [e is None for e in expected]
    assert [g for g in got if g is not None] == pytest.approx([e for e in expected if e is not None], rel=1e-12)
    assert priced["price_model"].to_list() == ["m", "vendor/m", "m", "plain", "m", None, "m"]
    checks = ["agree", "agree", "no recorded cost", "disagree", "no tokens", "no price", "disagree"]
    assert priced["cost_check"].to_list() == checks
    assert set(checks) == set(COST_CHECKS)
    # the tolerance: 5% apart agrees, 6% does not
    near = pl.concat([trials.head(1)] * 2).with_columns(pl.Series("cost_usd", [0.0168 * 1.05, 0.0168 * 1.06]))
    assert measures.price_trials(near, prices)["cost_check"].to_list() == ["agree", "disagree"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            "m,abc,1e-06,\n",
            r"prices.csv, line 2: input_usd_per_token must be a non-negative number of dollars, got 'abc'",
        ),
        ("m,1e-06,-1e-06,\n", r"line 2: output_usd_per_token must be a non-negative"),
        ("m,1e-06,1e-06,\nm,2e-06,1e-06,\n", r"prices.csv: models listed more than once: m"),
        (",1e-06,1e-06,\n", r"line 2: no model name"),
        ("m,1e-06,,\n", r"line 2: output_usd_per_token must be a non-negative number of dollars, got ''"),
    ],
)
def test_a_bad_price_file_is_refused_with_its_path_line_and_reason(tmp_path, rows, message):
    path = _user_prices(tmp_path, rows)
    with pytest.raises(ValueError, match=message) as caught:
        read_prices(path)
    assert str(path) in str(caught.value)


def test_a_price_file_without_a_column_names_it(tmp_path):
    path = tmp_path / "short.csv"
    path.write_text("model,input_usd_per_token\nm,1e-06\n")
    with pytest.raises(ValueError, match=r"short.csv: no column output_usd_per_token, cache_read_usd_per_token"):
        read_prices(path)
    with pytest.raises(ValueError, match=r"The 'path' parameter of read_prices must be an existing file"):
        read_prices(tmp_path / "missing.csv")


def test_the_real_tmax_job_costs_what_its_tokens_say_at_a_stated_price(shared_data, tmp_path):
    # The TMax job ran a self-hosted model: it records tokens and cost_usd 0.0, and LiteLLM has no price
    # for it. depthlab says so ("no price"), and priced at a user's stated price it flags every recorded
    # 0.0 as disagreeing, with the cost computed from the recorded tokens.
    from depthlab.io import load_trials

    job = shared_data / "tb2-jobs" / "tmax-27b"
    if not job.is_dir():
        pytest.skip(f"the TMax job is not at {job}")
    trials = load_trials(job)
    assert trials.height > 100
    assert trials["model"].n_unique() == 1
    model = trials["model"][0]
    shipped = measures.price_trials(trials)
    assert set(shipped["cost_check"]) == {"no price"}
    assert shipped["cost_priced_usd"].null_count() == trials.height
    stated = read_prices(_user_prices(tmp_path, f"{model},3e-07,1.2e-06,\n"))
    priced = measures.price_trials(trials, stated)
    tokens = trials.select("n_input_tokens", "n_cache_tokens", "n_output_tokens").to_numpy().astype(float)
    has_tokens = ~np.isnan(tokens[:, 0]) & ~np.isnan(tokens[:, 2])
    expected = np.where(has_tokens, tokens[:, 0] * 3e-7 + tokens[:, 2] * 1.2e-6, np.nan)  # no cache tokens recorded
    assert np.isnan(tokens[:, 1]).all()
    got = priced["cost_priced_usd"].to_numpy().astype(float)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    recorded_zero = (trials["cost_usd"] == 0.0).fill_null(False).to_numpy()
    flagged = (priced["cost_check"] == "disagree").to_numpy()
    assert (flagged == (recorded_zero & has_tokens & (expected > 1e-6))).all()
    per_task = measures.cost_per_task(priced)
    assert per_task.schema == pl.Schema(COST_PER_TASK)
    assert per_task.height == trials.select("dataset", "task").n_unique()
    assert per_task["n_trials"].sum() == trials.height
    assert per_task["cost_priced_usd"].sum() == pytest.approx(np.nansum(expected), rel=1e-9)
    assert per_task["cost_usd"].sum() == pytest.approx(trials["cost_usd"].sum())


def test_cost_per_depth_counts_every_task_and_keeps_unknown_apart_from_zero():
    priced = pl.DataFrame(
        {
            "dataset": ["d"] * 5,
            "task": ["a", "a", "b", "c", "e"],
            "cost_priced_usd": [0.5, 0.25, None, 2.0, 1.0],
            "cost_usd": [0.5, None, None, None, 1.0],
            "cost_check": ["agree", "no recorded cost", "no price", "no recorded cost", "agree"],
        }
    )
    depth = pl.DataFrame(
        {
            "dataset": ["d"] * 5,
            "task": ["a", "b", "c", "d", "f"],
            "depth": [1, 1, None, 2, 2],
            "status": ["solved", "solved", "unsolved", "solved", "incomplete"],
        }
    )
    out = measures.cost_per_depth(priced, depth)
    assert out.schema == pl.Schema(COST_PER_DEPTH)
    # one row per D and status: an incomplete task's D-so-far is kept apart from a solved D
    assert out.select("depth", "status").rows() == [(1, "solved"), (2, "incomplete"), (2, "solved"), (None, "unsolved")]
    rows = {r["depth"]: r for r in out.filter(pl.col("status") != "incomplete").iter_rows(named=True)}
    assert list(rows) == [1, 2, None]  # task e has no D in the depth table: not counted
    assert (rows[1]["n_tasks"], rows[1]["n_tasks_priced"], rows[1]["cost_priced_usd"]) == (2, 1, 0.75)
    assert rows[1]["cost_priced_usd_per_task"] == pytest.approx(0.75)
    assert rows[1]["cost_usd"] == 0.5
    assert (rows[2]["n_tasks"], rows[2]["n_tasks_priced"], rows[2]["cost_priced_usd"]) == (1, 0, None)
    assert rows[None]["cost_priced_usd"] == 2.0


def test_the_price_table_and_its_note_are_package_data():
    # read_prices() must work from an installed wheel: setup.cfg's package data carries both files
    import configparser
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    cfg = configparser.ConfigParser()
    cfg.read(root / "setup.cfg")
    patterns = [part.strip() for part in cfg["options.package_data"]["depthlab"].split(",")]
    shipped = {p.relative_to(root / "depthlab").as_posix() for pat in patterns for p in (root / "depthlab").glob(pat)}
    assert {"io/data/prices.csv", "io/data/prices.md"} <= shipped


# --- every D states what it cost: price_depth, cost_per_turn, the commands -------------------------------------

SIM_MODELS = ("sim/model-a", "sim/model-b")
TOKENS = ("n_input_tokens", "n_cache_tokens", "n_output_tokens")
# model-a with a cache-read price, model-b without one (its cached tokens priced as input)
SIM_PRICES = {"sim/model-a": (2.5e-6, 1e-5, 2.5e-7), "sim/model-b": (3e-6, 1.5e-5, None)}


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """Harbor job folders of the simulator (capped and uncapped runs with tokens and a recorded cost), and a
    user's price table for its two models."""
    out = tmp_path_factory.mktemp("cost") / "sim"
    assert cli.main(["simulate", str(out), "--scale", "0.02", "--seed", "4"]) == 0
    rows = "".join(f"{m},{i},{o},{'' if c is None else c}\n" for m, (i, o, c) in SIM_PRICES.items())
    (out / "prices.csv").write_text("model,input_usd_per_token,output_usd_per_token,cache_read_usd_per_token\n" + rows)
    return out


def _by_hand(trials: pl.DataFrame) -> np.ndarray:
    """Each trial's tokens at SIM_PRICES, row by row (nan: no tokens), written apart from price_trials."""
    out = []
    for model, n_in, n_cache, n_out in trials.select("model", *TOKENS).iter_rows():
        if n_in is None or n_out is None:
            out.append(np.nan)
            continue
        input_price, output_price, cache_price = SIM_PRICES[model]
        cached = n_cache or 0
        out.append((n_in - cached) * input_price + cached * (input_price if cache_price is None else cache_price)
                   + n_out * output_price)  # fmt: skip
    return np.array(out)


def test_price_depth_sums_the_runs_d_rests_on_apart_from_every_run():
    priced = pl.DataFrame(
        {
            "dataset": ["d"] * 6 + ["e"],
            "task": ["a"] * 5 + ["b", "a"],
            "model": ["m", "m", "m", "x", "m", "m", "m"],
            "cap": [1, 2, 3, None, 7, 1, 1],  # 7 is off the ladder, None uncapped, x not counted
            "cost_priced_usd": [0.5, None, 0.25, 2.0, 4.0, None, 8.0],
            "cost_usd": [0.5, 0.0, None, 1.0, None, None, None],
            "cost_check": ["agree", "no tokens", "no recorded cost", "disagree", "no recorded cost", "no price",
                           "no recorded cost"],
        }
    )  # fmt: skip
    depth = schema.conform(
        pl.DataFrame({"dataset": ["d", "d", "d"], "task": ["b", "a", "c"], "depth": [None, 3, None],
                      "status": ["incomplete", "solved", "incomplete"]}),
        "depth",
    )  # fmt: skip
    costed = measures.price_depth(priced, depth, caps=(1, 2, 3, 5), models=["m"])
    assert costed.columns == [*schema.DEPTH, *DEPTH_COST]
    assert costed.select(pl.col(c) for c in DEPTH_COST).schema == pl.Schema(DEPTH_COST)
    assert costed["task"].to_list() == ["b", "a", "c"]  # the depth table's rows and order
    rows = {r["task"]: r for r in costed.iter_rows(named=True)}
    a = rows["a"]
    assert (a["n_runs"], a["n_runs_priced"], a["n_cost_disagree"]) == (5, 4, 1)
    assert (a["cost_priced_usd"], a["cost_usd"]) == (6.75, 1.5)  # every run of a in dataset d
    assert (a["depth_cost_priced_usd"], a["depth_cost_usd"]) == (0.75, 0.5)  # caps 1-3 of m only; a 0.0 counts
    b = rows["b"]  # a run, but not priced: unknown, not zero
    assert (b["n_runs"], b["n_runs_priced"], b["cost_priced_usd"], b["depth_cost_priced_usd"]) == (1, 0, None, None)
    c = rows["c"]  # no run at all
    assert (c["n_runs"], c["cost_priced_usd"], c["cost_usd"], c["depth_cost_usd"]) == (0, None, None, None)
    # priced again, the cost columns are replaced, not doubled
    assert measures.price_depth(priced, costed, caps=(1, 2, 3, 5), models=["m"]).equals(costed)
    # no models named: every model with a ladder run counts, as estimate_depth counts them
    every = measures.price_depth(priced, depth, caps=(1, 2, 3, 5))
    assert every.filter(pl.col("task") == "a")["depth_cost_priced_usd"].to_list() == [0.75]


def test_price_depth_on_simulated_jobs_matches_the_tokens_priced_by_hand(simulated):
    from depthlab.io import load_trials

    trials = load_trials(simulated / "jobs")
    prices = read_prices(simulated / "prices.csv")
    priced = measures.price_trials(trials, prices)
    expected = _by_hand(trials)
    assert np.isnan(expected).sum() > 0  # the simulator's invalid runs record no tokens
    np.testing.assert_allclose(priced["cost_priced_usd"].to_numpy().astype(float), expected, rtol=1e-12)
    depth = measures.estimate_depth(trials, models=SIM_MODELS)
    costed = measures.price_depth(priced, depth, models=SIM_MODELS)
    assert costed.height == depth.height
    capped = trials.with_columns(pl.Series("by_hand", expected)).filter(pl.col("cap").is_in(list(schema.CAPS)))
    totals = capped.group_by("dataset", "task").agg(
        pl.col("by_hand").fill_nan(None).sum(), pl.col("cost_usd").sum(), pl.len().alias("n")
    )
    joined = costed.join(totals, on=["dataset", "task"])
    assert joined.height == costed.height
    np.testing.assert_allclose(joined["depth_cost_priced_usd"], joined["by_hand"], rtol=1e-12)
    np.testing.assert_allclose(joined["depth_cost_usd"], joined["cost_usd_right"], rtol=1e-12)
    # every run counts in n_runs, uncapped public runs too, so the whole collection is there
    assert costed["n_runs"].sum() == trials.height > capped.height
    # the simulator records input tokens without the cache and no fixed part: priced and recorded disagree on
    # model-b (cached tokens at the input price) and agree on neither model everywhere
    checks = set(priced["cost_check"])
    assert {"agree", "disagree", "no tokens"} <= checks


def test_cost_per_turn_is_priced_cost_over_turns_of_the_priced_runs(shared_data, tmp_path):
    priced = pl.DataFrame(
        {
            "dataset": ["d", "d", "d", "d", "e"],
            "model": ["m", "m", "m", "x", "m"],
            "n_turns": [4, 6, 0, 10, None],
            "cost_priced_usd": [0.4, 0.2, 0.5, 9.0, 1.0],
        }
    )
    out = measures.cost_per_turn(priced, models=["m"])
    assert out.schema == pl.Schema(COST_PER_TURN)
    assert out.rows() == [("d", 3, 2, 10, pytest.approx(0.6), pytest.approx(0.06)), ("e", 1, 0, 0, None, None)]
    # the real TMax job at a stated price: its turns and tokens, summed apart from the library
    from depthlab.io import load_trials

    job = shared_data / "tb2-jobs" / "tmax-27b"
    if not job.is_dir():
        pytest.skip(f"the TMax job is not at {job}")
    trials = load_trials(job)
    stated = read_prices(_user_prices(tmp_path, f"{trials['model'][0]},3e-07,1.2e-06,\n"))
    rate = measures.cost_per_turn(measures.price_trials(trials, stated)).row(0, named=True)
    usable = trials.filter(pl.col("n_turns") > 0, pl.col("n_input_tokens").is_not_null())
    dollars = (usable["n_input_tokens"].to_numpy() * 3e-7 + usable["n_output_tokens"].to_numpy() * 1.2e-6).sum()
    assert rate["n_runs_priced"] == usable.height > 100
    assert rate["usd_per_turn"] == pytest.approx(dollars / usable["n_turns"].sum(), rel=1e-12)


def test_price_source_names_the_release_and_date_or_the_file(tmp_path):
    import os

    shipped = price_source()
    note = price_provenance()
    version = re.search(r"`litellm` (\d+\.\d+\.\d+)", note).group(1)
    date = re.search(r"Extracted: (\d{4}-\d{2}-\d{2})", note).group(1)
    assert shipped == f"LiteLLM {version}'s published prices (read {date})"
    path = _user_prices(tmp_path, "m,1e-06,1e-06,\n")
    os.utime(path, (0, 86400 * 365))  # 1971-01-01 UTC
    assert price_source(path) == f"the prices in {path} (modified 1971-01-01)"
    with pytest.raises(ValueError, match=r"missing.csv: cannot read the price table"):
        price_source(tmp_path / "missing.csv")


def test_depth_prints_what_each_d_cost_and_writes_it_with_prices(simulated, tmp_path, capsys):
    plain = tmp_path / "depth.parquet"
    assert cli.main(["depth", str(simulated / "jobs"), "-o", str(plain)]) == 0
    err = capsys.readouterr().err
    schema.check(pl.read_parquet(plain), "depth")  # without --prices the table is the depth table
    # the shipped table has no price for the simulated models: said per dataset, never a $0
    assert "cost (tb2): the D of 2 tasks cost unknown priced from tokens, $" in err
    assert "no price for the model in the table (--prices FILE states one)" in err
    costed = tmp_path / "costed.csv"
    assert (
        cli.main(["depth", str(simulated / "jobs"), "-o", str(costed), "--prices", str(simulated / "prices.csv")]) == 0
    )
    err = capsys.readouterr().err
    table = pl.read_csv(costed)
    assert table.columns == [*schema.DEPTH, *DEPTH_COST]
    from depthlab.io import load_trials

    trials = load_trials(simulated / "jobs")
    expected = _by_hand(trials)
    assert table["cost_priced_usd"].sum() == pytest.approx(np.nansum(expected), rel=1e-9)
    priced = measures.price_trials(trials, read_prices(simulated / "prices.csv"))
    per_dataset = priced.group_by("dataset").agg((pl.col("cost_check") == "disagree").sum().alias("n"))
    for dataset, n in per_dataset.iter_rows():
        tasks = table.filter(pl.col("dataset") == dataset)
        total = tasks["depth_cost_priced_usd"].sum()
        assert f"cost ({dataset}): the D of {tasks.height} task" in err
        assert f"cost ${total:,.4f} priced from tokens" in err
        assert f"  {n} runs with a recorded cost unlike the priced one (more than 5% + $0.000001 apart)" in err
    assert f"at {price_source(simulated / 'prices.csv')}" in err
    assert "a task's runs at each D: D=" in err
    assert "beyond the ladder $" in err  # the simulation has an unsolved task; its runs cost too


def test_a_bad_price_file_is_refused_before_depth_measure_or_plan_do_anything(simulated, tmp_path, capsys):
    bad = _user_prices(tmp_path, "sim/model-a,cheap,1e-06,\n", name="bad.csv")
    out = tmp_path / "d.csv"
    assert cli.main(["depth", str(simulated / "jobs"), "-o", str(out), "--prices", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"depthlab depth: --prices: {bad}, line 2: input_usd_per_token must be a non-negative" in err
    assert not out.exists()
    assert "loaded" not in err  # refused before the trials were read
    # measure: exit 2 before any run (Harbor is missing: anything past the checks would exit 1)
    task = tmp_path / "tasks" / "t1"
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n[agent]\ntimeout_sec = 60.0\n')
    (task / "instruction.md").write_text("do it")
    (task / "tests" / "test.sh").write_text("exit 0\n")
    jobs = tmp_path / "jobs"
    args = ["measure", str(task), "--models", "openai/m1", "--jobs-dir", str(jobs), "-o", str(out)]
    assert cli.main([*args, "--harbor", str(tmp_path / "no-harbor"), "--no-progress", "--prices", str(bad)]) == 2
    assert f"depthlab measure: --prices: {bad}, line 2" in capsys.readouterr().err
    assert not jobs.exists()
    assert not out.exists()
    plan = ["plan", "--tasks", str(simulated / "tasks"), "--models", ",".join(SIM_MODELS), "-o", str(out)]
    assert cli.main([*plan, "--error", "0.05", "--forecast", "--prices", str(bad)]) == 1
    assert f"depthlab plan: --prices: {bad}, line 2" in capsys.readouterr().err
    assert cli.main([*plan, "--prices", str(simulated / "prices.csv")]) == 2  # no forecast to price
    assert "--prices prices the forecast: it needs --forecast" in capsys.readouterr().err
    assert not out.exists()


def test_plan_forecast_prices_its_turns_at_the_runs_made_or_says_it_cannot(simulated, tmp_path, capsys):
    prices = simulated / "prices.csv"
    plan = ["plan", "--tasks", str(simulated / "tasks"), "--models", ",".join(SIM_MODELS), "--error", "0.05"]
    made = [plan[0], str(simulated / "jobs"), *plan[1:], "-o", str(tmp_path / "p.csv"), "--forecast"]
    assert cli.main([*made, "--prices", str(prices)]) == 0
    err = capsys.readouterr().err
    from depthlab.io import load_trials

    trials = load_trials(simulated / "jobs").filter(pl.col("model").is_in(SIM_MODELS))
    expected = _by_hand(trials)
    usable = ~np.isnan(expected) & (trials["n_turns"].fill_null(0).to_numpy() > 0)
    turns = re.findall(r"forecast \((\w+)\): about \d+ more runs, at most (\d+) turns", err)
    costs = dict(re.findall(r"forecast cost \((\w+)\): at most about \$([\d,.]+): ", err))
    assert turns
    assert {d for d, _ in turns} == set(costs)
    for dataset, n_turns in turns:
        mine = (trials["dataset"] == dataset).to_numpy() & usable
        rate = expected[mine].sum() / trials["n_turns"].to_numpy()[mine].sum()
        assert f"{n_turns} turns at ${rate:.4f} a turn (the tokens per turn of {mine.sum()} of the" in err
        # the line rounds the forecast's turns; the dollars are its turns at the rate, to the cent
        assert float(costs[dataset].replace(",", "")) == pytest.approx(int(n_turns) * rate, abs=0.005 + rate)
    # at the shipped prices the simulated models have none: said plainly, no dollar figure
    assert cli.main(made) == 0
    err = capsys.readouterr().err
    assert "forecast cost (tb2): cannot price: none of the" in err
    assert "forecast cost (tb2): at most" not in err
    # no runs yet: nothing to read the tokens per turn from
    assert cli.main([*plan, "--forecast", "--prices", str(prices), "-o", str(tmp_path / "p.csv")]) == 0
    assert "forecast cost (tb2): cannot price: no runs made yet to read the tokens per turn from" in (
        capsys.readouterr().err
    )


def test_measure_keeps_the_runs_it_counts_so_each_d_states_its_cost():
    # the round loop on a simulated engine (tests/engines/test_measure_units.py's shape, no Docker): the result
    # carries the trials it counted, and price_depth on them gives each D its cost
    from depthlab.engines import measure

    depths = {"t3": 3, "never": None}

    class Engine:
        name = "simulated"
        jobs_dir = None
        progress = False
        note = ""

        def __init__(self) -> None:
            self.rows: list[dict] = []

        def check(self) -> None:
            pass

        def resume(self, echo) -> None:
            pass

        def preflight(self, tasks, echo):
            return schema.preflight_failures([])

        def next_round(self) -> int:
            return 1

        def run_round(self, plan, number, tasks, echo) -> None:
            for row in plan.iter_rows(named=True):
                depth = depths[row["task"]]
                passed = depth is not None and row["cap"] >= depth
                self.rows.append({"dataset": "d", "task": row["task"], "model": row["model"], "cap": row["cap"],
                                  "status": "pass" if passed else "fail", "n_input_tokens": 1000 * row["cap"],
                                  "n_output_tokens": 100 * row["cap"], "cost_usd": 0.0,
                                  "source": f"sim/{len(self.rows)}/result.json"})  # fmt: skip

        def load_trials(self):
            return schema.conform(pl.DataFrame(self.rows), "trials") if self.rows else schema.empty("trials")

    engine = Engine()
    tasks = schema.conform(pl.DataFrame({"dataset": "d", "task": list(depths), "source": ["/t/a", "/t/b"]}), "tasks")
    caps = (1, 2, 3, 5)
    result = measure(engine, tasks, models=["p/m"], caps=caps, echo=lambda line: None)
    assert result.trials.height == result.runs == len(engine.rows) > 0
    assert sorted(result.trials["source"].to_list()) == sorted(row["source"] for row in engine.rows)
    prices = pl.DataFrame({"model": ["p/m"], "input_usd_per_token": [1e-6], "output_usd_per_token": [1e-5],
                           "cache_read_usd_per_token": [None]}, schema=PRICES)  # fmt: skip
    costed = measures.price_depth(measures.price_trials(result.trials, prices), result.depth, caps=caps, models=["p/m"])
    for row in costed.iter_rows(named=True):
        ran = [r["cap"] for r in engine.rows if r["task"] == row["task"]]
        assert row["depth_cost_priced_usd"] == pytest.approx(sum(cap * (1000e-6 + 100e-5) for cap in ran))
        assert row["depth_cost_usd"] == 0.0  # recorded as nothing: known, and flagged
        assert row["n_cost_disagree"] == len(ran)
    assert dict(costed.select("task", "status").iter_rows()) == {"t3": "solved", "never": "unsolved"}


def test_the_cost_summary_says_a_partly_priced_sum_is_a_lower_bound_and_names_what_is_not_priced():
    from depthlab.commands.depth import cost_lines

    trials = schema.conform(
        pl.DataFrame(
            {
                "dataset": "d",
                "task": ["a", "a", "b", "c"],
                "model": ["m", "m", "ghost", "m"],
                "cap": [1, 2, 1, 1],
                "status": ["fail", "pass", "pass", "pass"],
                "n_input_tokens": [1000, 1000, 1000, None],
                "n_output_tokens": [100, 100, 100, None],
                "cost_usd": [0.002, 0.5, None, None],
            }
        ),
        "trials",
    )
    depth = measures.estimate_depth(trials, caps=(1, 2), level=None)
    prices = pl.DataFrame(
        {
            "model": ["m"],
            "input_usd_per_token": [1e-6],
            "output_usd_per_token": [1e-5],
            "cache_read_usd_per_token": [None],
        },
        schema=PRICES,
    )
    costed, lines = cost_lines(trials, depth, prices, "my prices", caps=(1, 2), models=None)
    assert costed["depth_cost_priced_usd"].to_list() == [pytest.approx(0.004), None, None]
    assert lines[0] == (
        "cost (d): the D of 3 tasks cost $0.0040 priced from tokens (1 of them priced: a lower bound), $0.5020 "
        "recorded; all 4 runs: $0.0040 priced (2 priced), $0.5020 recorded; at my prices"
    )
    assert lines[1].startswith("  1 run with a recorded cost unlike the priced one (more than 5% + $0.000001 apart)")
    assert lines[2] == "  not priced: 1 run of ghost: no price for the model in the table (--prices FILE states one)"
    assert lines[3] == "  not priced: 1 run that recorded no tokens"
    # a: m passed at 2, ghost never ran it (so it is incomplete); b and c pass at 1: D = 1, not priced
    assert lines[4] == "  a task's runs at each D: D=1 unknown (2 tasks), incomplete $0.0040 (1 task)"
