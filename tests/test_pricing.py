"""Cost as a column (issue 45): the shipped price table, a user's table, trials priced and checked."""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import polars as pl
import pytest

from depthlab import measures
from depthlab.io import price_provenance, read_prices
from depthlab.schema import COST_CHECKS, COST_PER_TASK, PRICED_TRIALS, PRICES


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
    depth = pl.DataFrame({"dataset": ["d"] * 4, "task": ["a", "b", "c", "d"], "depth": [1, 1, None, 2]})
    out = measures.cost_per_depth(priced, depth)
    rows = {r["depth"]: r for r in out.iter_rows(named=True)}
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
