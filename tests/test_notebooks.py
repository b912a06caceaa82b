"""Every audit notebook runs through papermill, on the simulated demo and on the real TB2 facts bundled with depthlab.

Each run's figures must be valid PNG/PDF files, every executed notebook and the index must say whether the data
is simulated or real, and the findings each notebook writes must equal the same findings computed here directly
on the same data, loaded independently (through the dataset registry and the measures, not through the
notebooks' loading helper). The real-data run needs nothing outside the repository.

Two tests, one per data source, so that ``pytest -n 2`` runs them side by side.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import polars as pl
import pytest
from golden import check as check_golden
from PIL import Image

import depthlab as dl
from depthlab import findings, reproduce, stats
from depthlab.auditdata import AuditData
from depthlab.datasets import Audit
from depthlab.datasets.tb2 import BUNDLED_DIR
from depthlab.measures.proxy import task_proxy

N_BOOT = 200
SEED = 5

pytestmark = pytest.mark.slow


def _check_figures(run: reproduce.Reproduction) -> set[str]:
    listed = {name for result in run.results.values() for name in result["figures"]}
    assert listed, "no notebook saved a figure"
    for name in listed:
        png, pdf = run.out / "figures" / f"{name}.png", run.out / "figures" / f"{name}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        with Image.open(png) as image:
            image.verify()
        assert pdf.read_bytes()[:5] == b"%PDF-", name
        assert f"figures/{name}.png" in run.index.read_text(), name
    return listed


def _outputs(run: reproduce.Reproduction, notebook: str) -> str:
    nb = nbformat.read(run.out / "notebooks" / f"{notebook}.ipynb", as_version=4)
    return "".join(
        "".join(output.get("text", "")) for cell in nb.cells if cell.cell_type == "code" for output in cell.outputs
    )


def _findings(run: reproduce.Reproduction) -> pl.DataFrame:
    rows = [row for result in run.results.values() for row in result["findings"]]
    return pl.DataFrame(rows, schema=findings.FINDING).unique(["key", "group"], keep="first", maintain_order=True)


def _expected(data: AuditData) -> pl.DataFrame:
    boot = {"n_boot": N_BOOT, "seed": SEED}
    return findings.stack(
        [
            findings.collection_counts(data),
            findings.depth_shares(data),
            findings.synthetic_vs_human(data),
            findings.model_pass_rates(data, status_rule="all"),
            findings.turns_beside_depth(data),
            findings.model_turns_beside_depth(data),
            findings.depth_given_turns(data),
            findings.second_model(data),
            findings.pass_depth_given_work(data, **boot),
            findings.pass_turns_given_depth(data, **boot),
            findings.pass_turns_given_work(data, **boot),
            findings.label_pass_correlations(data, **boot),
            findings.depth_vs_author_rating(data, **boot),
            findings.quadrant_percentiles(data, **boot),
            findings.own_set_summary(data),
            findings.pass_at_1(data),
            findings.segment_reliability(data, **boot),
            findings.sign_test_depth(data),
            findings.merged_segments(data),
        ]
    ).unique(["key", "group"], keep="first", maintain_order=True)


def _assert_same_findings(run: reproduce.Reproduction, data: AuditData) -> None:
    got = _findings(run)
    expected = _expected(data)
    joined = expected.join(got, on=["key", "group"], how="left", suffix="_nb")
    assert joined["n_nb"].null_count() == 0, joined.filter(pl.col("n_nb").is_null()).select("key", "group")
    for column in ("value", "ci_low", "ci_high"):
        a, b = joined[column].to_list(), joined[f"{column}_nb"].to_list()
        for key, x, y in zip(joined["key"], a, b, strict=True):
            assert (x is None) == (y is None), (key, column)
            if x is not None:
                assert y == pytest.approx(x, rel=1e-9, abs=1e-12), (key, column)
    assert joined["n"].to_list() == joined["n_nb"].to_list()
    assert set(joined["data_nb"]) == {data.kind}


def _assert_samples_alike(run: reproduce.Reproduction) -> None:
    # a row whose collections differ from the paper's sample says why (a subset of them, or a named variant)
    for result in run.results.values():
        for row in result["comparison"]:
            assert "UNLIKE" not in row["this_sample"], row
            reported = dl.paper.get(row["key"])
            if reported.collections is None or row["this_data"] == "not computable here":
                continue
            here = set(row["this_sample"].split(": ", 1)[1].split(";")[0].split(", "))
            if here != set(reported.collections):
                assert "this data has only" in row["this_sample"] or reported.differs, row


def test_notebooks_on_the_simulated_demo(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPTHLAB_CACHE_DIR", str(tmp_path / "cache"))
    cwd = Path.cwd()
    run = reproduce.reproduce(
        out=tmp_path / "out", scale=0.15, seed=SEED, n_boot=N_BOOT, progress=False, docs_dir=tmp_path / "docs"
    )
    assert Path.cwd() == cwd  # running notebooks in threads must not move this process
    assert [p.stem for p in run.notebooks] == list(reproduce.NOTEBOOKS)
    # the numbers of results/*.json are those of the committed golden (tests/golden: changed only deliberately)
    assert check_golden(run.results, "demo") == []
    figures = _check_figures(run)
    for name in reproduce.README_FIGURES:
        with Image.open(tmp_path / "docs" / f"{name}.png") as image:
            assert image.width <= 1100, name
    assert {"turns_vs_depth", "forest_partial_correlations", "quadrants", "segment_reliability"} <= figures
    # the demo is built once in the user cache, not in the output folder
    demo = tmp_path / "cache" / "demo"
    assert [p.name for p in demo.iterdir() if not p.name.startswith(".")] == [
        f"scale0.15-seed{SEED}-model{dl.simulate.MODEL_VERSION}"
    ]
    assert not (run.out / "demo-data").exists()

    # simulated, said at the top of the index, of every executed notebook and of every result
    assert run.index.read_text().splitlines()[2].startswith("**SIMULATED data")
    for notebook in reproduce.NOTEBOOKS:
        assert _outputs(run, notebook).startswith("SIMULATED data"), notebook
        assert run.results[notebook]["data"]["kind"] == "simulated"
        assert all(row["this_sample"].startswith("SIMULATED") for row in run.results[notebook]["comparison"])

    # the same findings, computed directly on independently loaded tables (same collection order)
    data_dir = next(demo.iterdir())
    present = {p.name for p in (data_dir / "tasks").iterdir()}
    names = [name for name in dl.plots.ORDER if name in present]
    bundle = Audit.concat([dl.load_dataset(name, data_dir) for name in names])
    data = AuditData.from_tables(bundle.tasks, bundle.trials, source="independent", simulated=True)
    _assert_same_findings(run, data)

    # every comparison row pairs the paper's number with the row computing the same statistic and group
    index = run.index.read_text()
    for result in run.results.values():
        for row in result["comparison"]:
            reported = dl.paper.get(row["key"])
            assert row["function"] == f"findings.{reported.function}"
            assert f"| {row['key']} |" in index
    # ... and no reported number is left without a row on the demo (every collection is simulated there)
    compared = {row["key"] for result in run.results.values() for row in result["comparison"]}
    assert {r.key for r in dl.paper.REPORTED} - compared == set()
    _assert_samples_alike(run)

    # --only reruns one notebook (here on other data) and keeps the rest of the index; no stale figure
    again = reproduce.reproduce("tb2", run.out, only=["05"], n_boot=N_BOOT, progress=False)
    assert [p.stem for p in again.notebooks] == ["05_quadrants"]
    assert set(again.results) == set(reproduce.NOTEBOOKS)
    text = again.index.read_text()
    assert [line[3:].split()[0] for line in text.splitlines() if line.startswith("## ")] == list(reproduce.NOTEBOOKS)
    section = text.split("## 05_quadrants")[1].split("## 06")[0]
    assert "Data of this notebook" not in section  # it ran on this call's data (TB2) ...
    assert "figures/quadrants.png" not in section  # ... where D is unknown: the earlier figure is not listed
    assert "Some notebooks below ran earlier on other data" in text
    assert again.figures == []


def test_notebooks_on_the_bundled_real_tb2_facts(tmp_path):
    run = reproduce.reproduce("tb2", tmp_path / "out", seed=SEED, n_boot=N_BOOT, progress=False)
    assert check_golden(run.results, "tb2") == []
    figures = _check_figures(run)
    # what needs no D runs on the real data; what needs D is skipped with one line each
    assert {"collection_summary", "turns_by_model", "work_vs_pass_rate", "label_pass_rates"} <= figures
    assert not figures & {"turns_vs_depth", "quadrants", "label_depths", "paired_depths"}
    for notebook in ("01_collections", "02_turns_vs_depth", "03_depth_predicts_difficulty", "05_quadrants"):
        assert "No task has a pinned depth D (no capped runs in this data)" in _outputs(run, notebook), notebook
    assert run.index.read_text().splitlines()[2].startswith("**REAL data")
    for notebook in reproduce.NOTEBOOKS:
        assert _outputs(run, notebook).startswith("REAL data"), notebook

    got = _findings(run)

    def value(key: str, group: str) -> float | None:
        return got.filter((pl.col("key") == key) & (pl.col("group") == group))["value"].item()

    # the TMax authors' published per-model pass rates (every trial counted)
    for model, rate in {"tmax-27b": 42.70, "Qwen3.6-27B": 39.55, "tmax-9b": 27.19}.items():
        assert round(100 * value("pass_rate_rule_all", model), 2) == rate, model
    # authors' rating against pass rate on all 89 tasks (measured independently at -0.48; paper -0.46)
    rating = got.filter((pl.col("key") == "label_corr_pass") & (pl.col("group") == "tb2")).row(0, named=True)
    assert rating["n"] == 89
    assert rating["value"] == pytest.approx(-0.48, abs=0.01)
    for key, group in (("pcorr_pass_depth_given_work", "tb2"), ("quadrant_mean_percentile", "deep/large")):
        assert value(key, group) is None, key  # not computable without D: never a made-up number
    comparison = {row["key"]: row for result in run.results.values() for row in result["comparison"]}
    _assert_samples_alike(run)
    assert comparison["tb2_pcorr_pass_depth_given_work"]["this_data"] == "not computable here"
    assert comparison["tb2_author_label_corr_pass"]["this_sample"].startswith("real: tb2; 89 tasks")

    bundle = dl.load_dataset("tb2")
    _assert_same_findings(
        run, AuditData.from_tables(bundle.tasks, bundle.trials, source="independent", simulated=False)
    )
    assert json.loads((run.out / "runs.json").read_text()).keys() == set(reproduce.NOTEBOOKS)

    # 07 the trajectory depth proxy, from the bundled per-trial proxy of the real TMax-27B job
    assert "forest_proxy" in figures
    assert value("tasks_with_proxy", "tb2") == 47  # the tasks TMax-27B passed at least once
    per_trial = pl.read_parquet(BUNDLED_DIR / "proxy_trials.parquet")
    audit = dl.audit_table(bundle.tasks, bundle.trials, proxy=task_proxy(per_trial))
    used = audit.drop_nulls(["proxy_depth", "pass_rate", "work"])
    expected = stats.partial_spearman(used, "proxy_depth", "pass_rate", "work", n_boot=0)
    assert value("pcorr_pass_proxy_given_work", "tb2") == pytest.approx(expected.r, rel=1e-12)


def test_notebook_09_checks_draws_the_planted_checks_table(tmp_path):
    # without a checks table of the user's, notebook 09 draws the bundled table of the planted tasks: every
    # planted fault found and no other, the paper's three counts beside this data's
    run = reproduce.reproduce("tb2", tmp_path / "out", only=["09"], n_boot=N_BOOT, progress=False)
    assert [p.stem for p in run.notebooks] == ["09_checks"]
    assert {"check_outcomes", "key_step_rules"} <= set(run.results["09_checks"]["figures"])
    for name in ("check_outcomes", "key_step_rules"):
        assert (run.out / "figures" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = _outputs(run, "09_checks")
    assert text.startswith("REAL data")  # the audit data's line; the checks table's says SIMULATED next
    assert "The checks table: SIMULATED: the planted tasks" in text
    from depthlab.simulate.checks import PLANTED

    assert f"planted {len(PLANTED)}, found {len(PLANTED)}, the same: True" in text
