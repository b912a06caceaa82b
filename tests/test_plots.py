"""depthlab.plots: every figure builds from tidy tables, draws what the tables say, and saves as PNG + PDF."""

from __future__ import annotations

import base64
import itertools
import os

import matplotlib as mpl
import numpy as np
import polars as pl
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from PIL import Image

from depthlab import catalog, plots, schema, stats
from depthlab.schema import CAPS

DATASETS = ("tb2", "tw", "tmax", "facet", "depth")


@pytest.fixture(scope="module")
def audit() -> pl.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for dataset in DATASETS:
        for i in range(24):
            depth = int(rng.choice(CAPS[:6]))
            status = "solved" if i % 6 else "unsolved"
            work = int(rng.integers(2, 300))
            rows.append(
                {
                    "dataset": dataset,
                    "task": f"{dataset}-{i}",
                    "depth": depth if status == "solved" else None,
                    "depth_status": status,
                    "work": work,
                    "n_turns": float(depth + rng.integers(0, 12)),
                    "pass_rate": float(rng.uniform(0, 1)),
                    "difficulty": ["easy", "medium", "hard"][i % 3] if dataset in ("tb2", "facet") else None,
                    "difficulty_source": "human" if dataset == "tb2" else "generated",
                }
            )
    return schema.conform(pl.DataFrame(rows), "audit")


@pytest.fixture(scope="module")
def figures(audit: pl.DataFrame) -> dict[str, Figure]:
    forest_rows = pl.DataFrame(
        {
            "label": ["TB2: pass ~ D | W", "all: pass ~ D | W"],
            "dataset": ["tb2", None],
            "r": [-0.4, -0.2],
            "ci_low": [-0.7, -0.4],
            "ci_high": [-0.1, 0.0],
            "n": [20, 100],
            "paper": [-0.49, None],
        }
    )
    cells = stats.quadrant_cells(audit, n_boot=200, seed=0)
    segments = pl.DataFrame(
        {
            "segment": [1, 2, 3],
            "reliability": [0.9, 0.8, 0.7],
            "reached": [50, 45, 36],
            "observed": [0.9, 0.72, 0.5],
            "compounded": [0.9, 0.72, 0.5],
        }
    )
    turns = pl.DataFrame({"model": ["a"] * 10 + ["b"] * 10, "n_turns": np.arange(1.0, 21.0)})
    pairs = pl.DataFrame({"original": [1, 2, 3], "derived": [3, 2, 10]})
    return {
        "collection_summary": plots.collection_summary(audit),
        "turns_vs_depth": plots.turns_vs_depth(audit),
        "turns_minus_depth": plots.turns_minus_depth(audit),
        "depth_given_turns": plots.depth_given_turns(audit),
        "forest": plots.forest(forest_rows),
        "work_vs_pass_rate": plots.work_vs_pass_rate(audit),
        "turns_by_model": plots.turns_by_model(turns, turn_limit=20),
        "label_pass_rates": plots.label_pass_rates(audit),
        "label_depths": plots.label_depths(audit),
        "quadrants": plots.quadrants(cells),
        "segment_reliability": plots.segment_reliability(segments),
        "paired_depths": plots.paired_depths(pairs),
    }


def test_figures_save_as_valid_png_and_pdf(figures, tmp_path):
    # four kinds of figure here (panels, heatmap, forest, scatter); tests/test_notebooks.py checks every saved file
    for name in ("turns_vs_depth", "quadrants", "forest", "work_vs_pass_rate"):
        fig = figures[name]
        png, pdf = plots.save(fig, name, tmp_path)
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        with Image.open(png) as image:
            image.verify()
        with Image.open(png) as image:
            assert image.width > 300, name
            assert image.height > 200, name
        assert pdf.read_bytes()[:5] == b"%PDF-", name
        assert pdf.read_bytes().rstrip().endswith(b"%%EOF"), name


def test_turns_vs_depth_bars_are_the_counts_of_the_table(audit):
    fig = plots.turns_vs_depth(audit)
    ax = fig.axes[0]  # the first panel is the first collection in ORDER: tb2
    assert ax.get_title().startswith("TB2")
    tb2 = audit.filter(pl.col("dataset") == "tb2")
    depth = tb2.filter(pl.col("depth_status") == "solved")["depth"].to_numpy()
    turns = tb2["n_turns"].to_numpy()
    # independent reference: np.histogram over the rung edges (0,1], (1,2], (2,3], (3,5], ... and > 80
    edges = np.array([0, *CAPS, np.inf]) + 1e-9
    expected_turns = np.histogram(turns, bins=edges)[0]
    expected_depth = [int((depth == cap).sum()) for cap in CAPS] + [0]
    bars = ax.patches
    n_groups = len(CAPS) + 1
    assert [int(b.get_height()) for b in bars[:n_groups]] == list(expected_turns)
    assert [int(b.get_height()) for b in bars[n_groups:]] == expected_depth


def test_collection_colours_are_the_same_in_every_figure(audit):
    fig = plots.turns_vs_depth(audit)
    tb2_depth_bars = fig.axes[0].patches[len(CAPS) + 1 :]
    assert {to_hex(b.get_facecolor()) for b in tb2_depth_bars} == {plots.PALETTE["tb2"].lower()}
    scatter = plots.work_vs_pass_rate(audit)
    colours = {
        to_hex(c.get_facecolor()[0][:3]) for ax in scatter.axes for c in ax.collections if isinstance(c, PathCollection)
    }
    assert colours == {plots.PALETTE[d].lower() for d in DATASETS}
    # an unknown collection's colour is a fixed function of its name: the same in a fresh interpreter
    # with another string-hash seed (Python's hash() would differ), and never a known collection's
    import subprocess
    import sys

    from matplotlib.colors import is_color_like

    names = ["my-own-tasks", "another-set", "x"]
    script = "import sys; from depthlab import plots; print(*[plots.color(n) for n in sys.argv[1:]])"
    fresh = [
        subprocess.run(
            [sys.executable, "-c", script, *names],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout.split()
        for seed in ("1", "2")
    ]
    here = [plots.color(name) for name in names]
    assert fresh == [here, here]
    assert all(is_color_like(colour) and colour not in plots.PALETTE.values() for colour in here)
    assert len(set(here)) == 3  # the name picks the colour: these three names get three


def test_grey_means_pooled_and_black_means_median_never_a_collection():
    reserved = {catalog.POOLED_COLOUR.lower(), catalog.MEDIAN_COLOUR.lower()}
    for key in [*catalog.ORDER, *(f"user-{i}" for i in range(40))]:
        assert catalog.color(key).lower() not in reserved, key
    assert len(set(catalog.PALETTE.values())) == len(catalog.PALETTE)


def test_turns_vs_depth_legend_does_not_borrow_a_collection_colour(audit):
    fig = plots.turns_vs_depth(audit)
    (legend,) = fig.legends
    swatches = {to_hex(patch.get_facecolor()) for patch in legend.get_patches()}
    assert not swatches & {colour.lower() for colour in catalog.PALETTE.values()}
    # each panel's D bars take its own collection's colour
    for ax, dataset in zip(fig.axes, [d for d in catalog.ORDER if d in DATASETS], strict=False):
        depth_bars = ax.patches[len(CAPS) + 1 :]
        assert {to_hex(b.get_facecolor()) for b in depth_bars} == {catalog.color(dataset).lower()}


def test_palette_and_order_override_the_collection_facts(audit):
    fig = plots.turns_vs_depth(audit, order=["facet", "tb2"], palette={"facet": "#123456"})
    assert [ax.get_title().split(":")[0] for ax in fig.axes] == ["FACET", "TB2"]
    assert {to_hex(b.get_facecolor()) for b in fig.axes[0].patches[len(CAPS) + 1 :]} == {"#123456"}
    assert {to_hex(b.get_facecolor()) for b in fig.axes[1].patches[len(CAPS) + 1 :]} == {plots.PALETTE["tb2"].lower()}
    with pytest.raises(ValueError, match="'palette' parameter of turns_vs_depth must map names to matplotlib colours"):
        plots.turns_vs_depth(audit, palette={"tb2": "not-a-colour"})
    with pytest.raises(ValueError, match="'order' parameter of work_vs_pass_rate must be a non-empty list of names"):
        plots.work_vs_pass_rate(audit, order="tb2")


def test_axes_level_functions_draw_into_the_given_axes(audit):
    segments = pl.DataFrame(
        {
            "segment": [1, 2],
            "reliability": [0.9, 0.5],
            "reached": [10, 9],
            "observed": [0.9, 0.5],
            "compounded": [0.9, 0.45],
        }
    )
    draws = {
        "collection_summary_plot": lambda ax: plots.collection_summary_plot(audit, ax=ax),
        "strip_plot": lambda ax: plots.strip_plot(audit, "work", ax=ax),
        "turns_vs_depth_plot": lambda ax: plots.turns_vs_depth_plot(audit, "tb2", ax=ax),
        "turns_minus_depth_plot": lambda ax: plots.turns_minus_depth_plot(audit, ax=ax),
        "depth_given_turns_plot": lambda ax: plots.depth_given_turns_plot(audit, ax=ax),
        "work_vs_pass_rate_plot": lambda ax: plots.work_vs_pass_rate_plot(audit, ax=ax),
        "label_plot": lambda ax: plots.label_plot(audit, "tb2", ax=ax),
        "label_pass_rates_plot": lambda ax: plots.label_pass_rates_plot(audit, "tb2", ax=ax),
        "label_depths_plot": lambda ax: plots.label_depths_plot(audit, "tb2", ax=ax),
        "segment_reliability_plot": lambda ax: plots.segment_reliability_plot(segments, ax=ax),
        "compounding_plot": lambda ax: plots.compounding_plot(segments, ax=ax),
        "paired_depths_plot": lambda ax: plots.paired_depths_plot(
            pl.DataFrame({"original": [1], "derived": [2]}), ax=ax
        ),
    }
    fig = Figure()
    axes = fig.subplots(3, 4).ravel()[: len(draws)]
    for ax, (name, draw) in zip(axes, draws.items(), strict=True):
        assert draw(ax) is ax, name
        assert ax.has_data(), name
    with pytest.raises(TypeError, match="'ax' parameter of strip_plot must be a matplotlib Axes"):
        plots.strip_plot(audit, "work", ax=fig)


def test_depth_given_turns_legend_lists_the_top_stack_first(audit):
    ax = plots.depth_given_turns(audit).axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    window = audit.filter(
        (pl.col("depth_status") == "solved") & pl.col("n_turns").is_between(6, 10) & pl.col("depth").is_not_null()
    )
    drawn = [plots.name(d) for d in catalog.ordered(window["dataset"].to_list())]  # bottom stack first
    assert legend == drawn[::-1]


def test_work_vs_pass_rate_jitters_within_bounds_one_panel_per_collection(audit):
    fig = plots.work_vs_pass_rate(audit, jitter=0.02)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split(" ")[0] for ax in visible] == [plots.name(d) for d in catalog.ordered(DATASETS)]
    tb2 = audit.filter((pl.col("dataset") == "tb2") & pl.col("work").is_not_null()).sort("work")
    points = next(c for c in visible[0].collections if isinstance(c, PathCollection)).get_offsets()
    order = np.argsort(points[:, 0], kind="stable")
    shift = points[order, 1] - tb2["pass_rate"].to_numpy()
    assert np.all(np.abs(shift) <= 0.02 + 1e-12)
    assert np.std(shift) > 0.005  # the points really moved


def test_forest_prints_raw_and_holm_adjusted_p_beside_each_row():
    table = pl.DataFrame(
        {"label": ["a", "b", "c"], "r": [-0.5, 0.1, 0.3], "ci_low": [-0.8, -0.2, 0.0], "ci_high": [-0.1, 0.4, 0.6],
         "n": [10, 20, 30], "p": [0.01, 0.04, 0.03]}
    )  # fmt: skip
    texts = [t.get_text() for t in plots.forest(table).axes[0].texts]
    # Holm by hand: sorted 0.01, 0.03, 0.04 -> 3*0.01, max(0.03, 2*0.03), max(0.06, 1*0.04)
    assert texts == ["n = 10   p = 0.01   p_holm = 0.03", "n = 20   p = 0.04   p_holm = 0.06",
                     "n = 30   p = 0.03   p_holm = 0.06"]  # fmt: skip
    raw_only = [t.get_text() for t in plots.forest(table, adjust=None).axes[0].texts]
    assert raw_only[0] == "n = 10   p = 0.01"


def test_segment_reliability_names_its_collection_and_draws_wilson_intervals():
    table = pl.DataFrame(
        {"segment": [1, 2], "reliability": [0.8, 0.5], "reached": [50, 40], "passed": [40, 20],
         "observed": [0.8, 0.4], "compounded": [0.8, 0.4]}
    )  # fmt: skip
    fig = plots.segment_reliability(table, collection="depth")
    assert "DEPTH" in fig.get_suptitle()
    assert "pooled" in plots.segment_reliability(table).get_suptitle()
    assert "TB2" in plots.segment_reliability(table.with_columns(dataset=pl.lit("tb2"))).get_suptitle()
    (bars,) = [c for c in fig.axes[0].collections if isinstance(c, LineCollection)]
    tops = sorted(seg[:, 1].max() for seg in bars.get_segments())
    # Wilson score upper bound, closed form
    z = 1.959963984540054
    expected = []
    for k, n in ((40, 50), (20, 40)):
        phat = k / n
        centre = (phat + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        expected.append(centre + half)
    assert tops == pytest.approx(sorted(expected), abs=1e-9)


def test_paired_depths_has_a_size_legend():
    pairs = pl.DataFrame({"dataset": "depth", "original": [1, 1, 1, 2], "derived": [3, 3, 3, 5]})
    fig = plots.paired_depths(pairs)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["same depth", "1 pair", "3 pairs"]
    assert "DEPTH" in ax.get_title()


def test_turns_minus_depth_explains_negative_gaps(audit):
    shallow = audit.with_columns(n_turns=pl.when(pl.col("task") == "tb2-1").then(0.5).otherwise(pl.col("n_turns")))
    fig = plots.turns_minus_depth(shallow)
    assert plots.NEGATIVE_GAP_NOTE in [t.get_text() for t in fig.texts]
    below = shallow.filter(
        (pl.col("dataset") == "tb2") & (pl.col("depth_status") == "solved") & (pl.col("n_turns") < pl.col("depth"))
    ).height
    assert below >= 1
    assert any(t.get_text().endswith(f"N<D: {below}") and t.get_text().startswith("n=") for t in fig.axes[0].texts)


def test_depth_given_turns_counts_only_tasks_in_the_turn_window(audit):
    fig = plots.depth_given_turns(audit, turns=(6, 10))
    window = audit.filter(
        (pl.col("depth_status") == "solved") & pl.col("n_turns").is_between(6, 10) & pl.col("depth").is_not_null()
    )
    total = sum(int(b.get_height()) for b in fig.axes[0].patches)
    assert total == window.height
    share = float((window["depth"] == 1).mean())
    assert f"{share:.0%}" in fig.axes[0].get_title()


def test_quadrant_cells_show_the_stats_values(audit):
    cells = stats.quadrant_cells(audit, n_boot=200, seed=1)
    fig = plots.quadrants(cells)
    texts = {t.get_text() for t in fig.axes[0].texts}
    for row in cells.iter_rows(named=True):
        if row["mean_percentile"] is not None:
            assert any(t.startswith(f"{row['mean_percentile']:.2f}") and f"n = {row['n']}" in t for t in texts)


def test_forest_rows_follow_the_table():
    table = pl.DataFrame(
        {
            "label": ["a", "b", "c"],
            "r": [-0.5, 0.1, 0.3],
            "ci_low": [-0.8, -0.2, 0.0],
            "ci_high": [-0.1, 0.4, 0.6],
            "n": [10, 20, 30],
        }
    )
    ax = plots.forest(table).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    points = [line.get_xdata()[0] for line in ax.lines if line.get_marker() == "o" and len(line.get_xdata()) == 1]
    assert points == pytest.approx([-0.5, 0.1, 0.3])


def test_figures_without_depth_still_build_and_say_so(audit):
    no_depth = audit.with_columns(depth=pl.lit(None, pl.Int32), depth_status=pl.lit("incomplete"))
    fig = plots.turns_minus_depth(no_depth)
    assert any("no solved tasks" in t.get_text() for t in fig.axes[0].texts)
    summary = plots.collection_summary(no_depth)
    assert any("no capped runs: D unknown" in t.get_text() for t in summary.axes[0].texts)
    labels = [t.get_text() for legend in summary.legends for t in legend.get_texts()]
    assert labels == ["median"]  # no legend of depth bins when there is no depth


def _overlaps(boxes: list) -> list[tuple[int, int]]:
    return [(i, j) for (i, a), (j, b) in itertools.combinations(enumerate(boxes), 2) if a.overlaps(b)]


def test_titles_labels_and_tick_labels_do_not_overlap(figures):
    for name, fig in figures.items():
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        renderer = canvas.get_renderer()
        for ax in fig.axes:
            if not ax.get_visible():
                continue
            xticks = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text() and t.get_visible()]
            assert not _overlaps(xticks), f"{name}: x tick labels overlap"
            yticks = [t.get_window_extent(renderer) for t in ax.get_yticklabels() if t.get_text() and t.get_visible()]
            assert not _overlaps(yticks), f"{name}: y tick labels overlap"
        # the titles and axis labels of different panels never collide
        labels = [
            text.get_window_extent(renderer)
            for ax in fig.axes
            if ax.get_visible()
            for text in (ax.title, ax.xaxis.label, ax.yaxis.label)
            if text.get_text()
        ]
        assert not _overlaps(labels), f"{name}: titles or axis labels overlap"


def test_save_and_figures_reject_bad_input(audit, tmp_path):
    with pytest.raises(ValueError, match="'name' parameter of save"):
        plots.save(plots.turns_minus_depth(audit), "bad name/../x", tmp_path)
    with pytest.raises(TypeError, match="'fig' parameter of save"):
        plots.save("not a figure", "x", tmp_path)
    with pytest.raises(ValueError, match=r"'audit' parameter of turns_vs_depth must have the columns \['n_turns'\]"):
        plots.turns_vs_depth(audit.drop("n_turns"))
    with pytest.raises(TypeError, match="'audit' parameter of collection_summary must be a polars DataFrame"):
        plots.collection_summary(audit.to_pandas())
    with pytest.raises(ValueError, match="'turns' parameter of depth_given_turns"):
        plots.depth_given_turns(audit, turns=(10, 6))


def test_figures_do_not_touch_pyplot_state(audit):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    plots.turns_vs_depth(audit)
    plots.collection_summary(audit)
    assert plt.get_fignums() == before
    assert mpl.rcParams["axes.spines.top"] == mpl.rcParamsDefault["axes.spines.top"]


def test_forest_legend_names_grey_only_when_a_row_is_pooled():
    row = {"label": ["tb2: pass ~ D | W"], "r": [-0.3], "ci_low": [-0.5], "ci_high": [-0.1], "n": [50]}
    one_collection = pl.DataFrame({**row, "dataset": ["tb2"]})
    pooled = pl.DataFrame({**row, "dataset": [None]}, schema_overrides={"dataset": pl.Utf8})

    def legend(table: pl.DataFrame) -> list[str]:
        return [t.get_text() for t in plots.forest(table).legends[0].get_texts()]

    assert "grey: pooled over collections" not in legend(one_collection)
    assert "grey: pooled over collections" in legend(pooled)


def _figure_level_functions() -> dict[str, object]:
    import typing

    public = {name: getattr(plots, name) for name in plots.__all__}
    return {
        name: value
        for name, value in public.items()
        if callable(value) and not isinstance(value, type) and typing.get_type_hints(value).get("return") is Figure
    }


def test_every_figure_level_function_draws_with_its_axes_level_partner():
    """The naming rule: figure-level ``X(...) -> Figure`` draws with axes-level ``X_plot(..., ax=None) -> Axes``."""
    import ast
    import inspect
    import textwrap
    import typing

    from matplotlib.axes import Axes

    figure_level = _figure_level_functions()
    assert len(figure_level) >= 12, sorted(figure_level)  # the rule is checked on every figure, not on none
    for name, function in figure_level.items():
        assert not name.endswith("_plot"), f"{name} returns a Figure, so its name must not end in _plot"
        partner = f"{name}_plot"
        assert partner in plots.__all__, f"{name} has no axes-level partner {partner} in depthlab.plots"
        drawer = getattr(plots, partner)
        assert typing.get_type_hints(drawer)["return"] is Axes, f"{partner} must return an Axes"
        ax = inspect.signature(drawer).parameters.get("ax")
        assert ax is not None, f"{partner} takes no ax="
        assert ax.kind is inspect.Parameter.KEYWORD_ONLY, f"{partner}'s ax must be keyword-only"
        assert ax.default is None, f"{partner}'s ax= must default to None"
        # "draws with": the figure function's own body names its partner (a call, or a panel it hands on)
        body = ast.parse(textwrap.dedent(inspect.getsource(function)))
        named = {node.id for node in ast.walk(body) if isinstance(node, ast.Name)}
        assert partner in named, f"{name} does not draw with {partner}"
    for name in plots.__all__:
        value = getattr(plots, name)
        if name.endswith("_plot"):
            assert typing.get_type_hints(value)["return"] is Axes, f"{name} ends in _plot but returns no Axes"
            assert "ax" in inspect.signature(value).parameters, f"{name} ends in _plot but takes no ax="


def test_the_naming_rule_test_fails_on_a_figure_without_its_partner(monkeypatch):
    """The rule's test catches a figure-level function whose partner is missing or misnamed."""
    monkeypatch.setattr(plots, "__all__", [n for n in plots.__all__ if n != "turns_by_model_plot"])
    with pytest.raises(AssertionError, match="turns_by_model has no axes-level partner turns_by_model_plot"):
        test_every_figure_level_function_draws_with_its_axes_level_partner()


def test_renamed_functions_stay_importable_under_their_old_names():
    from depthlab.plots import depth_shares_plot, turns_depth_plot, turns_ecdf_plot, work_pass_plot

    old = {
        "depth_shares_plot": depth_shares_plot,
        "turns_depth_plot": turns_depth_plot,
        "turns_ecdf_plot": turns_ecdf_plot,
        "work_pass_plot": work_pass_plot,
    }
    for name, function in old.items():
        new = plots.DEPRECATED_ALIASES[name]
        assert function is getattr(plots, new), name
        assert name not in plots.__all__
        assert new in plots.__all__
        assert f"``{name}``" in plots.__doc__, f"the module docstring does not list the alias {name}"


def test_label_order_is_the_catalog_s():
    audit = schema.conform(
        pl.DataFrame(
            {
                "dataset": "tb2",
                "task": list("abcd"),
                "difficulty": ["zz-custom", "hard", "easy", "medium"],
                "difficulty_source": "human",
                "pass_rate": [0.1, 0.2, 0.9, 0.5],
            }
        ),
        "audit",
    )
    ticks = [t.get_text() for t in plots.label_pass_rates_plot(audit, "tb2").get_xticklabels()]
    assert ticks == [*catalog.DIFFICULTY_ORDER, "zz-custom"]


def test_docstring_fragments_are_filled_and_a_missing_one_fails():
    from depthlab.plots._docstrings import FRAGMENTS, fill

    assert "{order}" not in plots.collection_summary.__doc__
    assert FRAGMENTS["order"].splitlines()[0] in plots.collection_summary.__doc__

    def broken() -> None:
        """Draw.

        {no_such_fragment}
        """

    with pytest.raises(KeyError, match="no_such_fragment"):
        fill(broken)


def test_a_figure_shows_as_an_image_in_a_fresh_notebook(tmp_path, monkeypatch):
    # a notebook made fresh, with no %matplotlib magic: a figure as a cell's last expression must
    # give an image output, not the text "<Figure size ... with N Axes>" alone
    nbclient = pytest.importorskip("nbclient")
    import nbformat

    from depthlab.reproduce import ensure_kernel

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")])))
    source = (
        "import polars as pl\n"
        "import depthlab as dl\n"
        "audit = dl.schema.conform(pl.DataFrame({'dataset': ['tb2'] * 2, 'task': ['a', 'b'], 'depth': [1, 3],\n"
        "    'depth_status': ['solved'] * 2, 'n_turns': [4.0, 9.0]}), 'audit')\n"
        "dl.plots.turns_vs_depth(audit)"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nbclient.NotebookClient(
        nb, kernel_name=ensure_kernel(), timeout=120, resources={"metadata": {"path": tmp_path}}
    ).execute()
    outputs = nb.cells[0].outputs
    images = [o for o in outputs if o.output_type == "execute_result" and "image/png" in o.get("data", {})]
    assert images, f"no image output, got {[o.get('data', o).keys() for o in outputs]}"
    assert base64.b64decode(images[0]["data"]["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("simulated", [True, False])
def test_a_figure_of_simulated_data_says_so_inside_the_image(audit, simulated):
    from depthlab.auditdata import AuditData

    data = AuditData("test", simulated, schema.empty("tasks"), schema.empty("trials"), schema.empty("depth"), audit)
    kind = "simulated" if simulated else "real"
    forest_rows = pl.DataFrame(
        {"label": ["a"], "r": [-0.3], "ci_low": [-0.5], "ci_high": [-0.1], "n": [40], "data": [kind]}
    )
    made = {
        "collection_summary": plots.collection_summary(data),
        "turns_vs_depth": plots.turns_vs_depth(data),
        "turns_minus_depth": plots.turns_minus_depth(data),
        "depth_given_turns": plots.depth_given_turns(data),
        "work_vs_pass_rate": plots.work_vs_pass_rate(data),
        "label_pass_rates": plots.label_pass_rates(data),
        "label_depths": plots.label_depths(data),
        "turns_by_model": plots.turns_by_model(data),
        "forest": plots.forest(forest_rows),
    }
    for name, fig in made.items():
        texts = [text.get_text() for text in fig.texts]
        assert (plots.SIMULATED_STAMP in texts) is simulated, (name, texts)
        # the stamp is a text of the figure itself, so it is in every PNG and PDF drawn from it
        assert fig._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_figures_take_the_audit_data_and_its_tables_alike(audit):
    from depthlab.auditdata import AuditData

    data = AuditData("test", False, schema.empty("tasks"), schema.empty("trials"), schema.empty("depth"), audit)
    for function in (plots.turns_vs_depth, plots.collection_summary, plots.work_vs_pass_rate):
        by_data, by_table = function(data), function(audit)
        assert [ax.get_title() for ax in by_data.axes] == [ax.get_title() for ax in by_table.axes]
    with pytest.raises(TypeError, match=r"audit.*turns_vs_depth.*DataFrame or an AuditData"):
        plots.turns_vs_depth({"audit": audit})


def test_jittered_pass_rates_stay_within_0_and_100_percent():
    # tasks at 0% and 100%: a jitter of 0.1 would put half of them outside the possible range
    rates = [0.0, 1.0] * 20
    audit = schema.conform(
        pl.DataFrame(
            {"dataset": "tb2", "task": [f"t{i}" for i in range(40)], "work": range(1, 41), "pass_rate": rates}
        ),
        "audit",
    )
    ax = plots.work_vs_pass_rate_plot(audit, jitter=0.1)
    y = np.concatenate([c.get_offsets()[:, 1] for c in ax.collections if isinstance(c, PathCollection)])
    assert y.size == 40
    assert y.min() >= 0.0
    assert y.max() <= 1.0
    assert len(set(np.round(y, 6))) > 2  # still jittered inside the range


def test_an_axis_says_log_scale_only_where_it_is_one():
    no_turns = schema.conform(
        pl.DataFrame({"dataset": "tb2", "task": ["a", "b"], "work": [3, 30], "depth_status": "unsolved"}), "audit"
    )
    fig = plots.collection_summary(no_turns)
    turns_ax = fig.axes[2]
    assert turns_ax.get_xscale() == "linear"
    assert "log scale" not in turns_ax.get_xlabel()
    assert fig.axes[1].get_xscale() == "log"
    assert "log scale" in fig.axes[1].get_xlabel()
    empty = plots.turns_by_model(
        pl.DataFrame({"model": ["m"], "n_turns": [None]}, schema={"model": pl.String, "n_turns": pl.Float64})
    )
    assert "log scale" not in empty.axes[0].get_xlabel()


def test_turns_vs_depth_says_what_each_bar_counts():
    audit = schema.conform(
        pl.DataFrame(
            {
                "dataset": "tb2",
                "task": ["a", "b", "c"],
                "depth": [2, None, None],
                "depth_status": ["solved", "unsolved", "incomplete"],
                "n_turns": [4.0, 9.0, None],
            }
        ),
        "audit",
    )
    fig = plots.turns_vs_depth(audit)
    assert fig.axes[0].get_title() == "TB2: N of 2 tasks, D of 1 solved"
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("solved tasks only" in text for text in legend)
    assert any("uncapped runs" in text for text in legend)
    one = audit.filter(pl.col("task") == "a")
    assert plots.turns_vs_depth(one).axes[0].get_title() == "TB2: N of 1 task, D of 1 solved"


def test_depth_distribution_draws_every_task_beside_the_solved_ones_and_stamps_simulated_data():
    # issue 29: the censored distribution (unsolved counted) reaches its plateau lower than the solved-only one
    from depthlab.auditdata import AuditData
    from depthlab.measures import censored_distribution

    depth = schema.conform(
        pl.DataFrame(
            {
                "dataset": ["tb2"] * 4 + ["tw"] * 2,
                "task": list("abcdef"),
                "status": ["solved", "solved", "solved", "unsolved", "solved", "solved"],
                "depth": [1, 2, 10, None, 3, 3],
                "depth_low": [0, 1, 5, 80, 2, 2],
                "depth_high": [1, 2, 10, None, 3, 3],
            }
        ),
        "depth",
    )
    for simulated in (True, False):
        data = AuditData("test", simulated, schema.empty("tasks"), schema.empty("trials"), depth, schema.empty("audit"))
        fig = plots.depth_distribution(data)
        assert (plots.SIMULATED_STAMP in [t.get_text() for t in fig.texts]) is simulated
    fig = plots.depth_distribution(depth)
    tb2 = fig.axes[0]
    assert tb2.get_title() == "TB2: 4 tasks, 1 unsolved"
    assert [t.get_text() for t in tb2.get_xticklabels()] == ["1", "2", "10", "> 10"]
    censored, solved = tb2.get_lines()[:2]
    # before the top cap every task counts: 3 of 4 solved by 10; among solved tasks all 3 are
    assert censored.get_ydata()[-2] == pytest.approx(0.75)
    assert censored.get_ydata()[-1] == pytest.approx(1.0)
    assert solved.get_ydata()[-1] == pytest.approx(1.0)
    assert solved.get_ydata()[2] == pytest.approx(2 / 3)
    assert "n = 4" in tb2.get_legend().get_texts()[0].get_text()
    with pytest.raises(ValueError, match="'table' parameter of depth_distribution_plot"):
        plots.depth_distribution_plot(censored_distribution(depth))
    assert fig._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"


def test_key_step_rules_legend_lists_each_source_once():
    from depthlab import findings
    from depthlab.simulate.checks import planted_table

    rules = findings.verifiers_see_key_steps(planted_table(), sample="planted")
    ax = plots.key_step_rules_plot(rules)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["paper", "data"]


def test_check_outcomes_colours_a_lint_note_apart_from_a_fault():
    from depthlab.plots.checks import OUTCOME_COLOURS

    rows = [
        {"task": "t", "step": "t", "check": "before", "outcome": "ok"},
        {"task": "t", "step": None, "check": "lint", "outcome": "note"},
        {"task": "u", "step": "u", "check": "before", "outcome": "ok"},
        {"task": "u", "step": None, "check": "lint", "outcome": "fault"},
    ]
    ax = plots.check_outcomes_plot(schema.conform(pl.DataFrame(rows), "checks"))
    (image,) = ax.get_images()
    colours = [[to_hex(image.cmap(image.norm(value))) for value in row] for row in image.get_array().filled(np.nan)]
    assert colours[0][1] == OUTCOME_COLOURS[schema.CHECK_OUTCOMES.index("note")]
    assert colours[1][1] == OUTCOME_COLOURS[schema.CHECK_OUTCOMES.index("fault")]
    assert len(OUTCOME_COLOURS) == len(set(OUTCOME_COLOURS)) == len(schema.CHECK_OUTCOMES)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == list(schema.CHECK_OUTCOMES)


def test_depth_cost_draws_a_panel_per_pass_probability_stamped_simulated():
    table = pl.DataFrame(
        {
            "pass_prob": [0.8, 0.8, 0.8, 0.5, 0.5],
            "luck": 0.02,
            "design": ["sweep-1", "planner", "planner at sweep-1 runs", "sweep-5", "planner"],
            "error": [None, 0.05, 0.05, None, 0.05],
            "runs": [8.0, 12.0, 8.0, 40.0, 30.0],
            "misplaced": [0.3, 0.01, 0.15, 0.4, 0.08],
        }
    )
    fig = plots.depth_cost(table)
    assert [ax.get_title() for ax in fig.axes] == [
        "pass probability 0.8 at the depth, luck 0.02",
        "pass probability 0.5 at the depth, luck 0.02",
    ]
    assert any(text.get_text() == plots.SIMULATED_STAMP for text in fig.texts)
    first = fig.axes[0]
    assert sorted(first.get_legend_handles_labels()[1]) == sorted(
        ["sweep-1", "planner, error 0.05", "planner held to a sweep's runs"]
    )
    with pytest.raises(ValueError, match="one pass probability's rows"):
        plots.depth_cost_plot(table)
