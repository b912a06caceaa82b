"""Write the audit notebooks (``notebooks/*.ipynb``) from the cell sources below, without outputs.

The notebooks are the product; this script is how they are kept consistent (one parameters cell,
one loading cell, one closing "paper reports / this data gives" cell). Edit here, then run::

    .venv/bin/python notebooks/generate.py          # rewrite the notebooks
    .venv/bin/python notebooks/generate.py --check  # exit 1 if a committed notebook differs

Every notebook answers one question, saves each figure with ``plots.save`` and writes its numbers
with ``record_results``; analyses that need depth D print one line and are skipped when the data
has no capped runs.
"""

# ruff: noqa: E501 - the strings below are notebook cells; their lines are the notebooks' own

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

PARAMETERS = """\
# Parameters: papermill injects its own values in a cell below this one.
data_dir = None  # None: the simulated demo data (built once under data/demo); or a data folder, e.g. "../../shared/data"
datasets = None  # None: every collection found in data_dir; or a list such as ["tb2", "tw"]
models = None  # None: every model's capped runs count for D
n_boot = 2000  # bootstrap resamples per confidence interval
seed = 0  # seed of the demo data and of every bootstrap
scale = 0.5  # size of the demo data (1.0 is about the paper's 734 tasks)
figures_dir = "../figures"  # PNG + PDF of every figure
results_dir = None  # this notebook's numbers as JSON; None: <figures_dir>/results
cache_dir = None  # a folder to keep the loaded tables in (depthlab reproduce loads once for all notebooks)"""

SETUP = """\
%matplotlib inline
from pathlib import Path

import polars as pl

import depthlab as dl
from depthlab import paper, plots, stats
from depthlab.reproduce import audit_data, record_results

pl.Config.set_tbl_rows(40)
pl.Config.set_tbl_cols(20)
results_dir = results_dir or str(Path(figures_dir) / "results")
data = audit_data(data_dir, datasets=datasets, models=models, scale=scale, seed=seed, cache_dir=cache_dir)
audit, trials = data.audit, data.trials
solved = audit.filter(pl.col("depth_status") == "solved")
saved = []  # figures this notebook wrote
values = {}  # this notebook's numbers, written to results_dir at the end
print(data.summary())"""


def closing(name: str) -> list:
    return [
        new_markdown_cell("## Paper reports / this data gives"),
        new_code_cell(
            f'comparison = record_results("{name}", values, results_dir=results_dir, figures=saved)\n'
            'comparison.select("key", "sample", "paper", "this_data")'
        ),
    ]


def notebook(name: str, title: str, question: str, cells: list) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata = {
        "kernelspec": {"name": "depthlab", "display_name": "depthlab (Python 3)", "language": "python"},
        "language_info": {"name": "python"},
    }
    # papermill's convention, kept strictly: the first cell is the one tagged "parameters"
    nb.cells = [
        new_code_cell(PARAMETERS, metadata={"tags": ["parameters"]}),
        new_markdown_cell(f"# {title}\n\n{question}"),
        new_code_cell(SETUP),
        *cells,
        *closing(name),
    ]
    return nb


def md(text: str) -> nbformat.NotebookNode:
    return new_markdown_cell(text)


def code(text: str) -> nbformat.NotebookNode:
    return new_code_cell(text)


NO_DEPTH = 'print("No task has a pinned depth D (no capped runs in this data): {what} skipped.")'


def explore() -> nbformat.NotebookNode:
    return notebook(
        "00_explore",
        "00 · Explore the audit interactively",
        "Pick a collection and models, slide the stated turn cap, filter by run status; select a task to see "
        "its evidence grid (model x cap: pass, fail, invalid, not run; D marked) and its runs, and a run to see "
        "its turns. Exploration only: no result of the audit depends on this widget (the other notebooks compute "
        "every number without it).",
        [
            code("from depthlab import evidence, widgets\n\nexplorer = widgets.explore(audit, trials)\nexplorer"),
            md(
                "**Reading a saved copy?** The explorer above is live only in a running notebook: open this "
                "notebook in Jupyter and run it. Its static stand-in, the evidence grids of a few telling tasks:"
            ),
            code(
                "examples = evidence.example_tasks(audit, n=4)\n"
                "if data.has_depth:\n"
                "    fig = evidence.evidence_grids(trials, examples)\n"
                '    saved += plots.save(fig, "evidence_grids", figures_dir)\n'
                "    display(fig)\n"
                "else:\n"
                "    " + NO_DEPTH.format(what="the evidence grids") + "\n"
                "examples"
            ),
            md("The same tables, for reading without the widget:"),
            code(
                'audit.group_by("dataset").agg(tasks=pl.len(), solved=(pl.col("depth_status") == "solved").sum(),\n'
                '    trials=pl.col("n_public_trials").sum()).sort("dataset")'
            ),
            code(
                'values["tasks"] = audit.height\n'
                'values["trials"] = trials.height\n'
                'values["capped_trials"] = trials.filter(pl.col("cap").is_not_null()).height'
            ),
        ],
    )


def collections() -> nbformat.NotebookNode:
    return notebook(
        "01_collections",
        "01 · The collections: tasks, solved tasks, W, N and D",
        "How many tasks does each collection have, how many have a pinned depth D, and how deep are they? "
        "What share of solved tasks has D = 1, D ≤ 3, D ≥ 5; how do synthetic and human-curated collections "
        "differ?",
        [
            md(
                "Per collection: tasks, depth status, median work W, uncapped turns N (mean over valid uncapped "
                "trials, and median over tasks), and the shares of D among solved tasks."
            ),
            code(
                "from depthlab.measures.public import public_trials\n\n"
                "public = public_trials(trials)  # valid uncapped runs\n"
                'mean_turns = public.group_by("dataset").agg(mean_turns=pl.col("n_turns").cast(pl.Float64).mean())\n'
                "\n"
                "def depth_shares(frame: pl.DataFrame, by: str) -> pl.DataFrame:\n"
                "    return frame.group_by(by).agg(\n"
                "        tasks=pl.len(),\n"
                '        solved=(pl.col("depth_status") == "solved").sum(),\n'
                '        unsolved=(pl.col("depth_status") == "unsolved").sum(),\n'
                '        incomplete=(pl.col("depth_status") == "incomplete").sum(),\n'
                '        median_work=pl.col("work").median(),\n'
                '        median_turns=pl.col("n_turns").median(),\n'
                '        median_depth=pl.col("depth").filter(pl.col("depth_status") == "solved").median(),\n'
                '        share_d1=(pl.col("depth") == 1).filter(pl.col("depth_status") == "solved").mean(),\n'
                '        share_d_le_3=(pl.col("depth") <= 3).filter(pl.col("depth_status") == "solved").mean(),\n'
                '        share_d_ge_5=(pl.col("depth") >= 5).filter(pl.col("depth_status") == "solved").mean(),\n'
                "    ).sort(by)\n"
                "\n"
                'by_collection = depth_shares(audit, "dataset").join(mean_turns, on="dataset", how="left")\n'
                'by_collection = by_collection.sort(pl.col("dataset").cast(pl.Enum(data.datasets)))\n'
                "by_collection.with_columns(pl.selectors.float().round(3))"
            ),
            md("Synthetic versus human-curated collections:"),
            code(
                'by_curation = depth_shares(audit.with_columns(pl.col("curation").fill_null("unknown")), "curation")\n'
                "by_curation.with_columns(pl.selectors.float().round(3))"
            ),
            code(
                'fig = plots.collection_summary(audit)\nsaved += plots.save(fig, "collection_summary", figures_dir)\nfig'
            ),
            code(
                'values["audited_tasks"] = audit.height\n'
                "for row in by_collection.iter_rows(named=True):\n"
                '    values[f"{row[\'dataset\']}_tasks"] = row["tasks"]\n'
                '    values[f"{row[\'dataset\']}_solved"] = row["solved"]\n'
                '    values[f"{row[\'dataset\']}_mean_turns"] = row["mean_turns"]\n'
                "if data.has_depth:\n"
                "    # the paper's synthetic sample is the four synthetic collections, not its own DEPTH set\n"
                '    synthetic = solved.filter((pl.col("curation") == "synthetic") & (pl.col("dataset") != "depth"))\n'
                '    values["synthetic_solved_tasks"] = synthetic.height\n'
                '    values["synthetic_solved_depth_le_3"] = synthetic.filter(pl.col("depth") <= 3).height\n'
                '    tmax_facet = solved.filter(pl.col("dataset").is_in(["tmax", "facet"]))["depth"]\n'
                '    values["tmax_facet_solved_median_depth"] = tmax_facet.median() if tmax_facet.len() else None\n'
                '    values["solved_share_depth_1"] = (solved["depth"] == 1).mean()\n'
                '    values["solved_share_depth_le_3"] = (solved["depth"] <= 3).mean()\n'
                '    values["solved_share_depth_ge_5"] = (solved["depth"] >= 5).mean()\n'
                "else:\n"
                "    " + NO_DEPTH.format(what="the shares of D") + "\n"
                'for key in ("tmax_mean_turns", "facet_mean_turns"):\n'
                "    values.setdefault(key, None)"
            ),
        ],
    )


def turns_vs_depth() -> nbformat.NotebookNode:
    return notebook(
        "02_turns_vs_depth",
        "02 · Turn counts N versus depth D",
        "Models take many more turns than a task needs: how do the uncapped turn counts N compare with the depth "
        "D found under stated caps? Of the tasks a model finishes in 6–10 turns, how many need only one? How "
        "often does a second model lower D?",
        [
            md(
                "Uncapped turn counts per model (no capped runs needed): median turns per task over the valid "
                "uncapped runs of each model."
            ),
            code(
                "turns = dl.turn_counts(trials)\n"
                'limits = trials.filter(pl.col("cap").is_null())["turn_limit"].drop_nulls()\n'
                "fig = plots.turns_by_model(turns, turn_limit=int(limits.max()) if limits.len() else None)\n"
                'saved += plots.save(fig, "turns_by_model", figures_dir)\n'
                'values["median_turns_pooled"] = audit["n_turns"].median()\n'
                "fig"
            ),
            md("N beside D per collection, on the cap ladder."),
            code(
                "if data.has_depth:\n"
                "    fig = plots.turns_vs_depth(audit)\n"
                '    saved += plots.save(fig, "turns_vs_depth", figures_dir)\n'
                "    display(fig)\n"
                "    fig = plots.turns_minus_depth(audit)\n"
                '    saved += plots.save(fig, "turns_minus_depth", figures_dir)\n'
                "    display(fig)\n"
                '    gap = solved.drop_nulls("n_turns").select(pl.col("n_turns") - pl.col("depth"))\n'
                '    values["median_turns_minus_depth"] = gap.to_series().median()\n'
                "else:\n"
                "    " + NO_DEPTH.format(what="N beside D") + ""
            ),
            md("The tasks with N in 6–10, by depth."),
            code(
                "if data.has_depth:\n"
                '    mid = solved.filter(pl.col("n_turns").is_between(6, 10))\n'
                '    values["n_6_10_tasks"] = mid.height\n'
                '    values["n_6_10_depth_1"] = mid.filter(pl.col("depth") == 1).height\n'
                "    print(f\"{mid.height} solved tasks take 6-10 turns uncapped; {values['n_6_10_depth_1']} of them have D = 1\")\n"
                "    fig = plots.depth_given_turns(audit)\n"
                '    saved += plots.save(fig, "depth_given_turns", figures_dir)\n'
                "    display(fig)\n"
                "else:\n"
                "    " + NO_DEPTH.format(what="the depth of tasks with N in 6-10") + ""
            ),
            md(
                "How often adding a second model lowered D: the first model is the first model name in sorted "
                "order; D is lowered when that model alone has no passing cap or a larger one (solved tasks with "
                "two or more models). Existing collections are all but the DEPTH set; own is the DEPTH set."
            ),
            code(
                'capped_models = sorted(trials.filter(pl.col("cap").is_not_null())["model"].drop_nulls().unique())\n'
                "if data.has_depth and len(capped_models) >= 2:\n"
                "    first = capped_models[0]\n"
                '    existing = data.depth.filter(pl.col("dataset") != "depth")\n'
                '    own = data.depth.filter(pl.col("dataset") == "depth")\n'
                '    for key, frame in (("second_model_lowered_depth_existing", existing),\n'
                '                       ("second_model_lowered_depth_own", own)):\n'
                "        effect = dl.measures.second_model_effect(frame, first_model=first, by=None)\n"
                '        values[key] = effect["share_lowered"].item() if effect.height else None\n'
                "    display(dl.measures.second_model_effect(data.depth, first_model=first))\n"
                "else:\n"
                '    print("Fewer than two models with capped runs, or no pinned D: the second-model effect is skipped.")\n'
                '    values["second_model_lowered_depth_existing"] = None\n'
                '    values["second_model_lowered_depth_own"] = None'
            ),
        ],
    )


CORRELATE = """\
rows = []  # one forest-plot row per correlation


def correlate(frame, x, y, covar, label, dataset=None, paper_key=None):
    \"\"\"Rank partial correlation with a bootstrap CI, or one line saying why it is skipped.\"\"\"
    used = frame.drop_nulls([x, y, covar])
    if used.height < 6 or any(used[c].n_unique() < 2 for c in (x, y, covar)):
        print(f"{label}: {used.height} tasks, too few or a constant column; skipped")
        return None
    result = stats.partial_spearman(used, x, y, covar, n_boot=n_boot, seed=seed)
    paper_value = paper.get(paper_key).value if paper_key else None
    rows.append({"label": label, "dataset": dataset, "r": result.r, "ci_low": result.ci_low,
                 "ci_high": result.ci_high, "n": result.n, "p": result.p, "paper": paper_value})
    if paper_key:
        values[paper_key] = (result.r, result.ci_low, result.ci_high)
    print(result)
    return result"""


def depth_predicts() -> nbformat.NotebookNode:
    return notebook(
        "03_depth_predicts_difficulty",
        "03 · Does depth predict difficulty beyond work?",
        "Rank partial correlations of the public pass rate with D controlling for W, and with N controlling for "
        "D, per collection and pooled, with bootstrap confidence intervals (tasks resampled, ranks recomputed in "
        "every resample). Without capped runs, the correlations that need no D still run: pass rate with N "
        "controlling for W.",
        [
            code(CORRELATE),
            md("Pass rate with D, controlling for W (solved tasks with a public pass rate)."),
            code(
                "if data.has_depth:\n"
                "    for dataset in data.datasets:\n"
                '        key = {"tb2": "tb2_pcorr_pass_depth_given_work", "depth": "own_pcorr_pass_depth_given_work"}.get(dataset)\n'
                '        correlate(solved.filter(pl.col("dataset") == dataset), "depth", "pass_rate", "work",\n'
                '                  f"{plots.name(dataset)}: pass ~ D | W", dataset, key)\n'
                '    correlate(solved.filter(pl.col("dataset").is_in(["tb2", "tw"])), "depth", "pass_rate", "work",\n'
                '              "TB2 + TW: pass ~ D | W", None, "tb2_tw_pcorr_pass_depth_given_work")\n'
                "    if len(data.datasets) > 1:\n"
                '        correlate(solved, "depth", "pass_rate", "work", "all: pass ~ D | W")\n'
                "else:\n"
                "    " + NO_DEPTH.format(what="pass rate with D given W") + ""
            ),
            md(
                "Pass rate with N, controlling for D: once D is known, does the turn count add anything? "
                "(on the DEPTH tasks when present, as in the paper, else pooled)"
            ),
            code(
                "if data.has_depth:\n"
                '    own = solved.filter(pl.col("dataset") == "depth")\n'
                '    sample, label, dataset = (own, "DEPTH", "depth") if own.height else (solved, "all", None)\n'
                '    correlate(sample, "n_turns", "pass_rate", "depth", f"{label}: pass ~ N | D", dataset,\n'
                '              "pcorr_pass_turns_given_depth")\n'
                "else:\n"
                "    " + NO_DEPTH.format(what="pass rate with N given D") + ""
            ),
            md("Needs no capped runs: pass rate with N controlling for W, per collection and pooled."),
            code(
                "for dataset in data.datasets:\n"
                '    correlate(audit.filter(pl.col("dataset") == dataset), "n_turns", "pass_rate", "work",\n'
                '              f"{plots.name(dataset)}: pass ~ N | W", dataset)\n'
                "if len(data.datasets) > 1:\n"
                '    correlate(audit, "n_turns", "pass_rate", "work", "all: pass ~ N | W")'
            ),
            code(
                'forest = pl.DataFrame(rows, schema={"label": pl.String, "dataset": pl.String, "r": pl.Float64,\n'
                '    "ci_low": pl.Float64, "ci_high": pl.Float64, "n": pl.Int64, "p": pl.Float64, "paper": pl.Float64})\n'
                'values.update({f"r[{row[\'label\']}]": row["r"] for row in rows})\n'
                "fig = plots.forest(forest)\n"
                'saved += plots.save(fig, "forest_partial_correlations", figures_dir)\n'
                "display(forest)\n"
                "fig"
            ),
            code(
                "fig = plots.work_vs_pass_rate(audit)\n"
                'saved += plots.save(fig, "work_vs_pass_rate", figures_dir)\n'
                'for key in ("tb2_tw_pcorr_pass_depth_given_work", "tb2_pcorr_pass_depth_given_work",\n'
                '            "own_pcorr_pass_depth_given_work", "pcorr_pass_turns_given_depth"):\n'
                "    values.setdefault(key, None)\n"
                "fig"
            ),
        ],
    )


def labels() -> nbformat.NotebookNode:
    return notebook(
        "04_labels",
        "04 · Difficulty labels against pass rates and against D",
        "Do the difficulty labels that come with the collections track how hard the tasks are? Generation-time "
        "labels (written by an LLM when the task was made: SETA, FACET) are kept apart from author ratings "
        "(TB2's human ratings); `difficulty_source` says which is which, never guessed.",
        [
            md(
                "Spearman and Kendall tau-b of the label (easy < medium < hard) with the public pass rate, per "
                "collection that has labels, with bootstrap CIs."
            ),
            code(
                'ORDER = ["easy", "medium", "hard"]\n'
                "rows = []\n"
                "for dataset in data.datasets:\n"
                '    part = audit.filter((pl.col("dataset") == dataset) & pl.col("difficulty").is_in(ORDER))\n'
                '    part = part.drop_nulls("pass_rate")\n'
                '    if part.height < 6 or part["difficulty"].n_unique() < 2 or part["pass_rate"].n_unique() < 2:\n'
                "        continue\n"
                '    corr = stats.label_correlations(part, "difficulty", "pass_rate", order=ORDER, n_boot=n_boot, seed=seed)\n'
                '    source = part["difficulty_source"].drop_nulls().unique().to_list()\n'
                '    rows.append(corr.with_columns(dataset=pl.lit(dataset), source=pl.lit(",".join(source) or "unknown")))\n'
                "labels = pl.concat(rows) if rows else pl.DataFrame()\n"
                "if labels.height:\n"
                '    display(labels.select("dataset", "source", "statistic", "r", "ci_low", "ci_high", "p", "n"))\n'
                '    spearman = labels.filter(pl.col("statistic") == "spearman")\n'
                "    for row in spearman.iter_rows(named=True):\n"
                '        values[f"{row[\'dataset\']}_label_corr_pass"] = row["r"]\n'
                '    human = spearman.filter((pl.col("dataset") == "tb2") & (pl.col("source") == "human"))\n'
                '    values["tb2_author_label_corr_pass"] = human["r"].item() if human.height else None\n'
                '    generated = spearman.filter(pl.col("source") == "generated")["r"]\n'
                '    values["generated_label_corr_pass"] = (\n'
                "        (generated.mean(), generated.min(), generated.max()) if generated.len() else None\n"
                "    )\n"
                "else:\n"
                '    print("No collection has at least 6 labelled tasks with a public pass rate: label correlations skipped.")\n'
                '    values["tb2_author_label_corr_pass"] = values["generated_label_corr_pass"] = None'
            ),
            code('fig = plots.label_pass_rates(audit)\nsaved += plots.save(fig, "label_pass_rates", figures_dir)\nfig'),
            md(
                "TMax has no difficulty label but generation-time axes; its `task_complexity` (short < moderate < "
                "complex < intricate) is read from the task labels and set against the pass rate the same way."
            ),
            code(
                'AXIS = ["short", "moderate", "complex", "intricate"]\n'
                "axes = data.tasks.select(\n"
                '    "dataset", "task", task_complexity=pl.col("labels").str.json_path_match("$.task_complexity")\n'
                ').join(audit.select("dataset", "task", "pass_rate"), on=["dataset", "task"])\n'
                'axes = axes.filter(pl.col("task_complexity").is_in(AXIS)).drop_nulls("pass_rate")\n'
                'if axes.height >= 6 and axes["task_complexity"].n_unique() >= 2:\n'
                '    result = stats.spearman(axes, "task_complexity", "pass_rate", order=AXIS, n_boot=n_boot, seed=seed)\n'
                "    print(result)\n"
                '    values["tmax_task_complexity_corr_pass"] = result.r\n'
                "else:\n"
                '    print("No task carries a task_complexity label (TMax): skipped.")'
            ),
            md(
                "Labels against D: Spearman of each collection's label with D over solved tasks, and the rank "
                "partial correlation of D with the TB2 author rating, controlling for W."
            ),
            code(
                "for dataset in data.datasets:\n"
                '    part = solved.filter((pl.col("dataset") == dataset) & pl.col("difficulty").is_in(ORDER))\n'
                '    if part.height < 6 or part["difficulty"].n_unique() < 2 or part["depth"].n_unique() < 2:\n'
                "        continue\n"
                '    result = stats.spearman(part, "difficulty", "depth", order=ORDER, n_boot=n_boot, seed=seed)\n'
                '    print(f"{plots.name(dataset)}: {result}")\n'
                '    values[f"{dataset}_label_corr_depth"] = result.r'
            ),
            code(
                'tb2 = solved.filter((pl.col("dataset") == "tb2") & pl.col("difficulty").is_in(ORDER)).drop_nulls("work")\n'
                'if data.has_depth and tb2.height >= 6 and tb2["difficulty"].n_unique() >= 2:\n'
                '    result = stats.partial_spearman(tb2, "depth", "difficulty", "work", n_boot=n_boot, seed=seed,\n'
                "                                    order=ORDER)\n"
                "    print(result)\n"
                '    values["tb2_pcorr_depth_author_difficulty"] = (result.r, result.ci_low, result.ci_high)\n'
                "else:\n"
                '    print("Fewer than 6 solved TB2 tasks with an author rating (no capped TB2 runs?): D against the rating skipped.")\n'
                '    values["tb2_pcorr_depth_author_difficulty"] = None\n'
                "if data.has_depth:\n"
                "    fig = plots.label_depths(audit)\n"
                '    saved += plots.save(fig, "label_depths", figures_dir)\n'
                "    display(fig)"
            ),
        ],
    )


def quadrants() -> nbformat.NotebookNode:
    return notebook(
        "05_quadrants",
        "05 · The depth/work quadrants",
        "Split the tasks at D ≥ 2 (deep) and the median W (large work). Within each collection, rank the tasks "
        "by public pass rate (percentile, lower = harder), then average per quadrant, with bootstrap CIs. If "
        "depth matters beyond work, the deep-and-large quadrant is hardest and the deep-and-small one harder "
        "than the shallow-and-small one. As in the paper, the split covers the audited collections: the paper's "
        "own multi-segment DEPTH set (`depth`), built to be deep, is left out.",
        [
            code(
                "if data.has_depth:\n"
                '    audited = audit.filter(pl.col("dataset") != "depth")\n'
                '    cells = stats.quadrants(audited, depth_split=2, work_split="median", n_boot=n_boot, seed=seed)\n'
                "    display(cells)\n"
                "    fig = plots.quadrants(cells)\n"
                '    saved += plots.save(fig, "quadrants", figures_dir)\n'
                "    display(fig)\n"
                '    hardest = cells.filter((pl.col("depth_class") == "deep") & (pl.col("work_class") == "large"))\n'
                '    others = cells.filter(~((pl.col("depth_class") == "deep") & (pl.col("work_class") == "large")))\n'
                '    values["quadrant_hardest_mean_percentile"] = (\n'
                '        hardest["mean_percentile"].item(), hardest["ci_low"].item(), hardest["ci_high"].item())\n'
                '    other = others["mean_percentile"].drop_nulls()\n'
                '    values["quadrant_other_mean_percentile"] = (other.mean(), other.min(), other.max()) if other.len() else None\n'
                "    for row in cells.iter_rows(named=True):\n"
                "        values[f\"{row['depth_class']}_{row['work_class']}_mean_percentile\"] = row[\"mean_percentile\"]\n"
                "        values[f\"{row['depth_class']}_{row['work_class']}_n\"] = row[\"n\"]\n"
                "else:\n"
                "    " + NO_DEPTH.format(what="the depth/work quadrants") + "\n"
                '    values["quadrant_hardest_mean_percentile"] = values["quadrant_other_mean_percentile"] = None'
            ),
            md(
                "For comparison without D: the within-collection pass-rate percentile against work alone "
                "(tasks above versus at or below the median W)."
            ),
            code(
                'ranked = audit.with_columns(stats.within_percentile(audit, "pass_rate")).drop_nulls(["work", "pass_rate"])\n'
                "if ranked.height:\n"
                '    split = ranked["work"].median()\n'
                '    by_work = ranked.group_by(large=pl.col("work") >= split).agg(\n'
                '        n=pl.len(), mean_percentile=pl.col("pass_rate_percentile").mean()).sort("large")\n'
                "    display(by_work)\n"
                "    for row in by_work.iter_rows(named=True):\n"
                "        values[f\"work_{'large' if row['large'] else 'small'}_mean_percentile\"] = row[\"mean_percentile\"]"
            ),
        ],
    )


SEGMENT_TABLE = """\
import json


def segment_table(trials: pl.DataFrame) -> pl.DataFrame:
    \"\"\"Per segment position k, over runs of tasks with at least k segments: reliability and compounding.

    A task's number of segments is the most segment keys any of its runs has (a run stops at its
    first failed segment, so a run that passes them all has every key).
    \"\"\"
    runs = trials.filter(pl.col("cap").is_null() & pl.col("status").is_in(["pass", "fail"]))
    runs = runs.filter(pl.col("rewards").str.contains('"segment_'))
    outcomes = {}  # (dataset, task) -> per run, the pass/fail of each segment it attempted, in order
    for dataset, task, rewards in runs.select("dataset", "task", "rewards").iter_rows():
        keys = json.loads(rewards)
        attempted = [keys[f"segment_{k}"] >= 1 for k in range(1, len(keys) + 1) if f"segment_{k}" in keys]
        outcomes.setdefault((dataset, task), []).append(attempted)
    n_segments = {key: max(len(run) for run in task_runs) for key, task_runs in outcomes.items()}
    rows, compounded = [], 1.0
    for k in range(1, max(n_segments.values(), default=0) + 1):
        eligible = [run for key, task_runs in outcomes.items() if n_segments[key] >= k for run in task_runs]
        reached = [run for run in eligible if len(run) >= k and all(run[: k - 1])]
        passed = sum(run[k - 1] for run in reached)
        if not reached:
            break
        compounded *= passed / len(reached)
        rows.append({"segment": k, "tasks": sum(n >= k for n in n_segments.values()), "runs": len(eligible),
                     "reached": len(reached), "passed": passed, "reliability": passed / len(reached),
                     "observed": passed / len(eligible), "compounded": compounded})
    columns = {"segment": pl.Int64, "tasks": pl.Int64, "runs": pl.Int64, "reached": pl.Int64, "passed": pl.Int64,
               "reliability": pl.Float64, "observed": pl.Float64, "compounded": pl.Float64}
    return pl.DataFrame(rows, schema=columns)"""

PAIRS = """\
def environment_pairs(tasks: pl.DataFrame, audit: pl.DataFrame) -> pl.DataFrame:
    \"\"\"Derived tasks (task.toml ``derived_from = "<dataset>/<task>"``) beside their original: D and pass rate.\"\"\"
    links = (
        tasks.select("dataset", "task", derived_from=pl.col("labels").str.json_path_match("$.derived_from"))
        .drop_nulls("derived_from")
        .with_columns(
            o_dataset=pl.col("derived_from").str.split("/").list.first(),
            o_task=pl.col("derived_from").str.split("/").list.slice(1).list.join("/"),
        )
    )
    facts = audit.select("dataset", "task", "depth", "pass_rate")
    originals = facts.rename(
        {"dataset": "o_dataset", "task": "o_task", "depth": "original", "pass_rate": "original_pass_rate"}
    )
    return (
        links.join(facts, on=["dataset", "task"], how="left")
        .join(originals, on=["o_dataset", "o_task"], how="left")
        .select("dataset", "task", "o_dataset", "o_task", "original", "original_pass_rate",
                derived="depth", derived_pass_rate="pass_rate")
    )"""


def segments() -> nbformat.NotebookNode:
    return notebook(
        "06_segments",
        "06 · Multi-segment tasks and paired environments",
        "A multi-segment task chains several sub-tasks in one environment; its `reward.json` has one key per "
        "segment and a run stops at its first failed segment. How reliable is each segment, and how does that "
        "compound? And where one environment hosts both an original task and a derived deeper one, is the "
        "derived task harder (sign test over environments)?",
        [
            md(
                "Per-segment reliability, over valid uncapped runs of multi-segment tasks: of the runs that "
                "reached segment k (passed every earlier one), the share that passed it; the observed share of all "
                "runs passing every segment up to k, against the product of the reliabilities (independent "
                "segments would make the two equal)."
            ),
            code(SEGMENT_TABLE),
            code(
                "segments = segment_table(trials)\n"
                "if segments.height:\n"
                "    display(segments)\n"
                "    fig = plots.segment_reliability(segments)\n"
                '    saved += plots.save(fig, "segment_reliability", figures_dir)\n'
                "    display(fig)\n"
                '    reliability = segments["reliability"]\n'
                '    values["segment_reliability"] = (reliability.mean(), reliability.min(), reliability.max())\n'
                "    for row in segments.iter_rows(named=True):\n"
                '        values[f"segment_{row[\'segment\']}_reliability"] = row["reliability"]\n'
                "else:\n"
                '    print("No multi-segment runs (reward.json with segment keys) in this data: skipped.")\n'
                '    values["segment_reliability"] = None'
            ),
            md(
                "Paired environments: each derived task beside the original it was built from (same environment). "
                "Sign test over the pairs, zeros dropped: positive when the derived task has the lower public pass "
                "rate (it is harder). The figure shows the two depths."
            ),
            code(PAIRS),
            code(
                "pairs = environment_pairs(data.tasks, audit)\n"
                'rates = pairs.drop_nulls(["original_pass_rate", "derived_pass_rate"])\n'
                "if rates.height:\n"
                '    test = stats.sign_test(rates["original_pass_rate"], rates["derived_pass_rate"])\n'
                "    print(test)\n"
                '    values["sign_test_pairs"] = rates.height\n'
                '    values["sign_test_p"] = test.p\n'
                '    values["sign_test_n_pos"], values["sign_test_n_neg"] = test.n_pos, test.n_neg\n'
                "else:\n"
                '    print("No environment hosts both an original and a derived task with public runs: sign test skipped.")\n'
                '    values["sign_test_pairs"] = values["sign_test_p"] = None\n'
                'if data.has_depth and pairs.drop_nulls(["original", "derived"]).height:\n'
                "    fig = plots.paired_depths(pairs)\n"
                '    saved += plots.save(fig, "paired_depths", figures_dir)\n'
                "    display(fig)\n"
                "else:\n"
                "    " + NO_DEPTH.format(what="the paired depths") + ""
            ),
        ],
    )


BUILDERS = {
    "00_explore": explore,
    "01_collections": collections,
    "02_turns_vs_depth": turns_vs_depth,
    "03_depth_predicts_difficulty": depth_predicts,
    "04_labels": labels,
    "05_quadrants": quadrants,
    "06_segments": segments,
}


def render(name: str) -> str:
    nb = BUILDERS[name]()
    # stable cell ids, so regenerating an unchanged notebook gives the same bytes
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{name[:2]}-{i:02d}"
    nbformat.validate(nb)
    return nbformat.writes(nb) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a notebook differs from this script")
    args = parser.parse_args(argv)
    stale = []
    for name in BUILDERS:
        path = HERE / f"{name}.ipynb"
        text = render(name)
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.write_text(text)
    if stale:
        print(f"notebooks differ from notebooks/generate.py: {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
