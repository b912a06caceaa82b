"""Every audit notebook runs through papermill, on simulated demo data and on real TB2 data without capped runs.

Each run's figures must be valid PNG/PDF files, and the numbers each notebook writes must equal the same
numbers computed here directly with the library API on the same data (loaded independently, through the
dataset registry and the measures, not through the notebooks' loading helper).

Two tests, one per data source, so that ``pytest -n 2`` runs them side by side instead of running one
source's papermill session on both workers.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import numpy as np
import polars as pl
import pytest
from PIL import Image
from scipy import stats as scipy_stats

import depthlab as dl
from depthlab import reproduce, stats
from depthlab.datasets import Audit

N_BOOT = 200
SEED = 5
LABELS = ["easy", "medium", "hard"]

pytestmark = pytest.mark.slow


def _load(data_dir: Path, names: list[str]) -> tuple[Audit, pl.DataFrame]:
    bundle = Audit.concat([dl.load_dataset(name, data_dir) for name in names])
    return bundle, dl.audit_table(bundle.tasks, bundle.trials)


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
    assert {p.stem for p in run.figures} == listed
    return listed


def _outputs(run: reproduce.Reproduction, notebook: str) -> str:
    nb = nbformat.read(run.out / "notebooks" / f"{notebook}.ipynb", as_version=4)
    return "".join(
        "".join(output.get("text", "")) for cell in nb.cells if cell.cell_type == "code" for output in cell.outputs
    )


def _triple(result: stats.PartialCorr) -> list[float]:
    return [result.r, result.ci_low, result.ci_high]


def _values(run: reproduce.Reproduction, notebook: str) -> dict:
    return run.results[notebook]["values"]


def _segment_reliability(trials: pl.DataFrame) -> list[float]:
    # independent of the notebook: long format, one row per (run, segment), then polars aggregations
    runs = trials.filter(pl.col("cap").is_null() & pl.col("status").is_in(["pass", "fail"])).with_row_index("run")
    long = []
    for run, dataset, task, rewards in runs.select("run", "dataset", "task", "rewards").iter_rows():
        for key, value in json.loads(rewards or "{}").items():
            if key.startswith("segment_"):
                long.append((run, f"{dataset}/{task}", int(key.removeprefix("segment_")), value >= 1))
    frame = pl.DataFrame(long, schema=["run", "task", "segment", "passed"], orient="row")
    # a run reached segment k when every earlier segment passed: it has a key for k (runs stop at a failure)
    return (
        frame.group_by("segment").agg(pl.col("passed").mean().alias("reliability")).sort("segment")["reliability"]
    ).to_list()


def test_notebooks_on_the_simulated_demo(tmp_path):
    cwd = Path.cwd()
    run = reproduce.reproduce(
        out=tmp_path / "out", scale=0.15, seed=SEED, n_boot=N_BOOT, progress=False, docs_dir=tmp_path / "docs"
    )
    assert Path.cwd() == cwd  # running notebooks in threads must not move this process
    assert [p.stem for p in run.notebooks] == list(reproduce.NOTEBOOKS)
    figures = _check_figures(run)
    for name in reproduce.README_FIGURES:
        with Image.open(tmp_path / "docs" / f"{name}.png") as image:
            assert image.width <= 1100, name
    assert {"turns_vs_depth", "forest_partial_correlations", "quadrants", "segment_reliability"} <= figures

    present = {p.name for p in (run.data_dir / "tasks").iterdir()}
    # the rows in the notebooks' order (bootstrap resamples index rows, so the order matters for the CIs)
    names = [name for name in dl.plots.ORDER if name in present]
    assert len(names) == len(present) == 7
    bundle, audit = _load(run.data_dir, names)
    solved = audit.filter(pl.col("depth_status") == "solved")
    capped = bundle.capped

    # 01 collections
    values = _values(run, "01_collections")
    synthetic = solved.filter(pl.col("dataset").is_in(["tmax", "facet", "seta", "rst"]))
    assert values["audited_tasks"] == audit.height
    assert values["synthetic_solved_tasks"] == synthetic.height
    assert values["synthetic_solved_depth_le_3"] == synthetic.filter(pl.col("depth") <= 3).height
    valid_uncapped = bundle.public.filter(pl.col("status").is_in(["pass", "fail"]))
    tmax_turns = valid_uncapped.filter(pl.col("dataset") == "tmax")["n_turns"].cast(pl.Float64).mean()
    assert values["tmax_mean_turns"] == pytest.approx(tmax_turns, rel=1e-12)
    facet_turns = valid_uncapped.filter(pl.col("dataset") == "facet")["n_turns"].cast(pl.Float64).mean()
    assert values["facet_mean_turns"] == pytest.approx(facet_turns, rel=1e-12)
    tmax_facet = solved.filter(pl.col("dataset").is_in(["tmax", "facet"]))["depth"]
    assert values["tmax_facet_solved_median_depth"] == pytest.approx(tmax_facet.median())

    # 02 turns versus depth
    values = _values(run, "02_turns_vs_depth")
    window = solved.filter(pl.col("n_turns").is_between(6, 10))
    assert values["n_6_10_tasks"] == window.height
    assert values["n_6_10_depth_1"] == window.filter(pl.col("depth") == 1).height
    depth = dl.estimate_depth(capped)
    first = sorted(capped["model"].unique())[0]
    existing = dl.measures.second_model_effect(depth.filter(pl.col("dataset") != "depth"), first_model=first, by=None)
    assert values["second_model_lowered_depth_existing"] == pytest.approx(existing["share_lowered"].item())
    own = dl.measures.second_model_effect(depth.filter(pl.col("dataset") == "depth"), first_model=first, by=None)
    assert values["second_model_lowered_depth_own"] == pytest.approx(own["share_lowered"].item())

    # 03 depth predicts difficulty: same resamples for the same seed, so the intervals are equal too
    values = _values(run, "03_depth_predicts_difficulty")
    tb2 = solved.filter(pl.col("dataset") == "tb2").drop_nulls(["depth", "pass_rate", "work"])
    expected = stats.partial_spearman(tb2, "depth", "pass_rate", "work", n_boot=N_BOOT, seed=SEED)
    assert values["tb2_pcorr_pass_depth_given_work"] == pytest.approx(_triple(expected), rel=1e-9)
    both = solved.filter(pl.col("dataset").is_in(["tb2", "tw"])).drop_nulls(["depth", "pass_rate", "work"])
    expected = stats.partial_spearman(both, "depth", "pass_rate", "work", n_boot=N_BOOT, seed=SEED)
    assert values["tb2_tw_pcorr_pass_depth_given_work"] == pytest.approx(_triple(expected), rel=1e-9)
    own = solved.filter(pl.col("dataset") == "depth").drop_nulls(["depth", "pass_rate", "work"])
    expected = stats.partial_spearman(own, "depth", "pass_rate", "work", n_boot=N_BOOT, seed=SEED)
    assert values["own_pcorr_pass_depth_given_work"] == pytest.approx(_triple(expected), rel=1e-9)
    own = solved.filter(pl.col("dataset") == "depth").drop_nulls(["n_turns", "pass_rate", "depth"])
    expected = stats.partial_spearman(own, "n_turns", "pass_rate", "depth", n_boot=N_BOOT, seed=SEED)
    assert values["pcorr_pass_turns_given_depth"] == pytest.approx(_triple(expected), rel=1e-9)

    # 04 labels
    values = _values(run, "04_labels")
    labelled = audit.filter((pl.col("dataset") == "tb2") & pl.col("difficulty").is_in(LABELS)).drop_nulls("pass_rate")
    expected = stats.spearman(labelled, "difficulty", "pass_rate", order={"difficulty": LABELS}, n_boot=0)
    assert values["tb2_author_label_corr_pass"] == pytest.approx(expected.r, rel=1e-12)
    rated = solved.filter((pl.col("dataset") == "tb2") & pl.col("difficulty").is_in(LABELS)).drop_nulls("work")
    expected = stats.partial_spearman(rated, "depth", "difficulty", "work", n_boot=N_BOOT, seed=SEED, order=LABELS)
    assert values["tb2_pcorr_depth_author_difficulty"] == pytest.approx(_triple(expected), rel=1e-9)

    generated = []
    for dataset in names:
        part = audit.filter((pl.col("dataset") == dataset) & pl.col("difficulty").is_in(LABELS)).drop_nulls("pass_rate")
        if part.height < 6 or part["difficulty"].n_unique() < 2 or part["pass_rate"].n_unique() < 2:
            continue
        if part["difficulty_source"].drop_nulls().unique().to_list() == ["generated"]:
            generated.append(
                scipy_stats.spearmanr(part["difficulty"].replace_strict(LABELS, [0, 1, 2]), part["pass_rate"]).statistic
            )
    assert len(generated) >= 2  # SETA and FACET carry generation-time labels
    expected_generated = [float(np.mean(generated)), min(generated), max(generated)]
    assert values["generated_label_corr_pass"] == pytest.approx(expected_generated, rel=1e-12)

    axis = ["short", "moderate", "complex", "intricate"]
    complexity = {
        (dataset, task): json.loads(labels or "{}").get("task_complexity")
        for dataset, task, labels in bundle.tasks.select("dataset", "task", "labels").iter_rows()
    }
    tmax = (
        audit.with_columns(
            task_complexity=pl.Series([complexity[key] for key in zip(audit["dataset"], audit["task"], strict=True)])
        )
        .filter(pl.col("task_complexity").is_in(axis))
        .drop_nulls("pass_rate")
    )
    expected = stats.spearman(tmax, "task_complexity", "pass_rate", order={"task_complexity": axis}, n_boot=0)
    assert values["tmax_task_complexity_corr_pass"] == pytest.approx(expected.r, rel=1e-12)
    for dataset in ("tb2", "facet", "seta"):
        part = solved.filter((pl.col("dataset") == dataset) & pl.col("difficulty").is_in(LABELS))
        if part.height < 6 or part["difficulty"].n_unique() < 2 or part["depth"].n_unique() < 2:
            assert f"{dataset}_label_corr_depth" not in values  # skipped, not guessed
            continue
        expected = stats.spearman(part, "difficulty", "depth", order={"difficulty": LABELS}, n_boot=0)
        assert values[f"{dataset}_label_corr_depth"] == pytest.approx(expected.r, rel=1e-12)
    assert "tb2_label_corr_depth" in values

    # 05 quadrants
    values = _values(run, "05_quadrants")
    audited = audit.filter(pl.col("dataset") != "depth")  # the paper's own DEPTH set is not in the split
    cells = stats.quadrants(audited, depth_split=2, work_split="median", n_boot=N_BOOT, seed=SEED)
    hardest = cells.filter((pl.col("depth_class") == "deep") & (pl.col("work_class") == "large")).row(0, named=True)
    assert values["quadrant_hardest_mean_percentile"] == pytest.approx(
        [hardest["mean_percentile"], hardest["ci_low"], hardest["ci_high"]], rel=1e-9
    )
    for row in cells.iter_rows(named=True):
        assert values[f"{row['depth_class']}_{row['work_class']}_n"] == row["n"]
    other = [row["mean_percentile"] for row in cells.iter_rows(named=True) if row != hardest]
    other = [value for value in other if value is not None]
    assert values["quadrant_other_mean_percentile"] == pytest.approx(
        [float(np.mean(other)), min(other), max(other)], rel=1e-12
    )

    # 06 segments and paired environments
    values = _values(run, "06_segments")
    reliability = _segment_reliability(bundle.public)
    notebook_reliability = [values[f"segment_{k}_reliability"] for k in range(1, len(reliability) + 1)]
    assert notebook_reliability == pytest.approx(reliability, rel=1e-12)
    assert values["segment_reliability"] == pytest.approx(
        [float(np.mean(reliability)), min(reliability), max(reliability)], rel=1e-12
    )
    rates = dict(zip(zip(audit["dataset"], audit["task"], strict=True), audit["pass_rate"], strict=True))
    pairs = []
    for dataset, task, labels in bundle.tasks.select("dataset", "task", "labels").iter_rows():
        origin = json.loads(labels or "{}").get("derived_from")
        if origin:
            original = rates.get(tuple(origin.split("/", 1)))
            if original is not None and rates[(dataset, task)] is not None:
                pairs.append((original, rates[(dataset, task)]))
    test = stats.sign_test([a for a, _ in pairs], [b for _, b in pairs])
    assert values["sign_test_pairs"] == len(pairs)
    assert values["sign_test_p"] == pytest.approx(test.p, rel=1e-12)
    assert (values["sign_test_n_pos"], values["sign_test_n_neg"]) == (test.n_pos, test.n_neg)

    # every notebook's closing table lists only what the paper reports, as index.md does
    index = run.index.read_text()
    for notebook, result in run.results.items():
        for row in result["comparison"]:
            assert row["key"] in {r.key for r in dl.paper.REPORTED}, notebook
            assert f"| {row['key']} |" in index


def test_every_number_the_paper_reports_is_compared_by_these_tests():
    # a guard on this file: each key of dl.paper.REPORTED appears quoted in an assertion above
    source = Path(__file__).read_text()
    assert [r.key for r in dl.paper.REPORTED if f'values["{r.key}"]' not in source] == []


def test_notebooks_on_real_tb2_data_without_capped_runs(tmp_path, shared_data):
    run = reproduce.reproduce(shared_data, tmp_path / "out", seed=SEED, n_boot=N_BOOT, progress=False)
    figures = _check_figures(run)
    # what needs no D runs on the real data; what needs D is skipped with one line each
    assert {"collection_summary", "turns_by_model", "work_vs_pass_rate", "label_pass_rates"} <= figures
    assert not figures & {"turns_vs_depth", "quadrants", "label_depths", "paired_depths"}
    for notebook in ("01_collections", "02_turns_vs_depth", "03_depth_predicts_difficulty", "05_quadrants"):
        assert "No task has a pinned depth D (no capped runs in this data)" in _outputs(run, notebook), notebook
    for key, notebook in (
        ("tb2_pcorr_pass_depth_given_work", "03_depth_predicts_difficulty"),
        ("quadrant_hardest_mean_percentile", "05_quadrants"),
        ("tb2_pcorr_depth_author_difficulty", "04_labels"),
        ("sign_test_p", "06_segments"),
    ):
        assert _values(run, notebook)[key] is None, key

    _, audit = _load(shared_data, ["tb2"])
    assert _values(run, "01_collections")["audited_tasks"] == audit.height == 89
    labelled = audit.filter(pl.col("difficulty").is_in(LABELS)).drop_nulls("pass_rate")
    expected = stats.spearman(labelled, "difficulty", "pass_rate", order={"difficulty": LABELS}, n_boot=0)
    assert _values(run, "04_labels")["tb2_author_label_corr_pass"] == pytest.approx(expected.r, rel=1e-12)
    used = audit.drop_nulls(["n_turns", "pass_rate", "work"])
    expected = stats.partial_spearman(used, "n_turns", "pass_rate", "work", n_boot=N_BOOT, seed=SEED)
    assert _values(run, "03_depth_predicts_difficulty")["r[TB2: pass ~ N | W]"] == pytest.approx(expected.r)
    assert _values(run, "02_turns_vs_depth")["median_turns_pooled"] == pytest.approx(audit["n_turns"].median())
