"""depthlab.auditdata, depthlab.reproduce and `depthlab reproduce`: demo cache, loading, index, CLI mistakes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import polars as pl
import pytest
from nbformat.v4 import new_code_cell, new_notebook

import depthlab as dl
from depthlab import auditdata, findings, reproduce, schema
from depthlab.cli import main
from depthlab.datasets import Audit


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return auditdata.demo_data(tmp_path_factory.mktemp("demo"), scale=0.02, seed=3)


def test_demo_data_is_built_once_and_reused(demo):
    marker = demo / ".complete"
    assert marker.is_file()
    assert {p.name for p in demo.iterdir()} >= {"tasks", "jobs"}
    before = marker.stat().st_mtime_ns, sorted(p.name for p in (demo / "jobs").iterdir())
    again = auditdata.demo_data(demo.parent, scale=0.02, seed=3)
    assert again == demo
    assert (marker.stat().st_mtime_ns, sorted(p.name for p in (demo / "jobs").iterdir())) == before


def test_an_interrupted_demo_build_is_rebuilt(tmp_path):
    from depthlab import simulate

    # demo data built by an older generative model is complete, but must not be reused
    older = tmp_path / f"scale0.01-seed1-model{simulate.MODEL_VERSION - 1}"
    older.mkdir()
    (older / ".complete").write_text("")
    half = tmp_path / f"scale0.01-seed1-model{simulate.MODEL_VERSION}"
    (half / "jobs").mkdir(parents=True)
    (half / "jobs" / "stale").write_text("left over by an interrupted build")
    folder = auditdata.demo_data(tmp_path, scale=0.01, seed=1)
    assert folder == half
    assert not (half / "jobs" / "stale").exists()
    assert (half / ".complete").is_file()


def test_audit_data_equals_the_library_calls(demo):
    data = auditdata.audit_data(demo)
    # independent wiring: every collection through the registry, then the measures
    names = sorted(p.name for p in (demo / "tasks").iterdir())
    bundle = Audit.concat([dl.load_dataset(name, demo) for name in names])
    expected = dl.audit_table(bundle.tasks, bundle.trials, proxy=dl.depth_proxy(bundle.public, cache=False))
    assert sorted(data.datasets) == names
    key = ["dataset", "task"]
    assert data.audit.sort(key).equals(expected.sort(key))
    assert data.depth.sort(key).equals(dl.estimate_depth(bundle.capped).sort(key))
    assert data.trials.height == bundle.capped.height + bundle.public.height
    schema.check(data.audit, "audit")
    assert data.has_depth
    assert str(demo) in data.summary()
    assert data.kind == "simulated"
    assert data.summary().startswith("SIMULATED data")


def test_audit_data_cache_round_trips(demo, tmp_path):
    fresh = auditdata.audit_data(demo, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*/.complete"))) == 1
    cached = auditdata.audit_data(demo, cache_dir=tmp_path)
    for kind in ("tasks", "trials", "depth", "audit"):
        assert getattr(cached, kind).equals(getattr(fresh, kind)), kind
    assert cached.notes == fresh.notes
    subset = auditdata.audit_data(demo, datasets=["tb2"], cache_dir=tmp_path)
    assert subset.audit["dataset"].unique().to_list() == ["tb2"]
    assert len(list(tmp_path.glob("*/.complete"))) == 2


def test_a_run_added_inside_a_job_invalidates_the_cached_tables(demo, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(demo, data)
    key = auditdata._cache_key(data, ["tb2"], None, (1, 2))
    job = next((data / "jobs" / "tb2").iterdir())
    (job / "new-trial__x").mkdir()  # what a resumed or filled run adds, three levels down
    assert auditdata._cache_key(data, ["tb2"], None, (1, 2)) != key


def test_audit_data_on_real_tb2_data_has_no_depth(shared_data):
    data = auditdata.audit_data(shared_data)
    assert data.kind == "real"
    assert data.datasets == ["tb2"]
    assert not data.has_depth
    assert data.audit.height == pl.read_csv(shared_data / "tb2_tasks.csv").height
    assert data.audit["pass_rate"].drop_nulls().len() > 80
    assert any("no capped runs" in note for note in data.notes)


def test_audit_data_rejects_bad_input(tmp_path, demo):
    with pytest.raises(ValueError, match="'data' parameter of audit_data must be an existing folder"):
        auditdata.audit_data(tmp_path / "missing")
    with pytest.raises(
        ValueError, match="'data' parameter of audit_data must be a folder holding at least one collection"
    ):
        auditdata.audit_data(tmp_path)
    with pytest.raises(ValueError, match="'datasets' parameter of audit_data"):
        auditdata.audit_data(demo, datasets="tb2")
    with pytest.raises(
        ValueError, match=r"'datasets' parameter of audit_data names 'nope', not in this data; known: tb2"
    ):
        auditdata.audit_data(demo, datasets=["nope"])
    with pytest.raises(
        ValueError, match=r"'models' parameter of audit_data names 'nope'.*known: sim/model-a, sim/model-b"
    ):
        auditdata.audit_data(demo, models=["nope"])


def test_the_bundled_tb2_facts_load_with_no_folder():
    data = auditdata.audit_data("tb2")
    assert (data.kind, data.audit.height, data.trials.height, data.has_depth) == ("real", 89, 3560, False)
    assert "bundled" in data.banner()
    with pytest.raises(ValueError, match="known: tb2"):
        auditdata.audit_data("tb2", datasets=["tw"])


def test_record_results_writes_findings_the_data_kind_and_the_paper_comparison(tmp_path):
    data = auditdata.audit_data("tb2")
    tables = [findings.collection_counts(data), findings.label_pass_correlations(data, n_boot=100)]
    comparison = findings.record_results(
        "01_demo", tables, results_dir=tmp_path, data=data, figures=[tmp_path / "a.png", "b"]
    )
    assert comparison["key"].to_list() == ["audited_tasks", "tb2_author_label_corr_pass", "generated_label_corr_pass"]
    assert comparison["this_data"].to_list()[2] == "not computable here"  # TB2 has no generation-time labels
    # the sample says what was audited here: TB2 alone, beside the paper's six collections
    assert comparison["this_sample"].to_list()[0].startswith("real: tb2; 89 tasks")
    written = json.loads((tmp_path / "01_demo.json").read_text())
    assert written["data"]["kind"] == "real"
    assert written["figures"] == ["a", "b"]
    assert len(written["findings"]) == sum(t.height for t in tables)
    assert [row["key"] for row in written["comparison"]] == comparison["key"].to_list()


@pytest.mark.parametrize(
    ("only", "expected"),
    [
        (None, list(reproduce.NOTEBOOKS)),
        (["03"], ["03_depth_predicts_difficulty"]),
        (["quadrants", "01"], ["01_collections", "05_quadrants"]),
        ("06_segments", ["06_segments"]),
    ],
)
def test_only_selects_notebooks_by_number_or_name(only, expected):
    assert reproduce._select(only, reproduce.NOTEBOOKS, "reproduce") == expected


def test_the_notebook_list_is_the_folder(tmp_path):
    for name in ("07_proxy", "01_a", "notes"):
        (tmp_path / f"{name}.ipynb").write_text("{}")
    assert reproduce.notebook_names(tmp_path) == ("01_a", "07_proxy")
    assert reproduce.notebook_names() == reproduce.NOTEBOOKS


def test_reproduce_rejects_bad_parameters(tmp_path):
    with pytest.raises(ValueError, match="'only' parameter of reproduce names '99', not one notebook; known: 00_"):
        reproduce.reproduce(out=tmp_path, only=["99"])
    with pytest.raises(ValueError, match="'scale' parameter of reproduce"):
        reproduce.reproduce(out=tmp_path, scale=-1)
    with pytest.raises(ValueError, match="'n_boot' parameter of reproduce"):
        reproduce.reproduce(out=tmp_path, n_boot=5)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["--only", "nope"], "'only' parameter of reproduce names 'nope', not one notebook; known: 00_explore, "),
        (["--only", ""], "'only' parameter of reproduce names '', not one notebook; known: 00_explore, "),
        (
            ["--data", "tb2", "--models", "nope"],
            "'models' parameter of audit_data names 'nope', not in this data; known: Qwen3.5-2B,",
        ),
        (
            ["--data", "tb2", "--datasets", "nope"],
            "'datasets' parameter of audit_data names 'nope', not in this data; known: tb2",
        ),
        (
            ["--data", "tb2", "--datasets", ""],
            "'datasets' parameter of audit_data names '', not in this data; known: tb2",
        ),
    ],
)
def test_cli_mistakes_are_one_line_listing_the_known_names(arguments, says, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["reproduce", "--out", str(out), "--quiet", *arguments]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert says in err
    assert not out.exists()  # nothing written before the mistake was caught


def _failing_notebook(folder, name: str) -> None:
    nb = new_notebook()
    nb.metadata = {"kernelspec": {"name": "depthlab", "display_name": "depthlab", "language": "python"}}
    nb.cells = [
        new_code_cell("data = None\nfigures_dir = None", metadata={"tags": ["parameters"]}),
        new_code_cell("x = 1"),
        new_code_cell("raise RuntimeError('broken on purpose')"),
    ]
    nbformat.write(nb, folder / f"{name}.ipynb")


def test_a_failing_notebook_is_named_with_its_cell(demo, tmp_path, capsys):
    source = tmp_path / "notebooks"
    source.mkdir()
    _failing_notebook(source, "04_labels")
    with pytest.raises(reproduce.NotebookFailed) as failure:
        reproduce.reproduce(demo, tmp_path / "out", only=["04"], source_dir=source, progress=False, n_boot=100)
    assert failure.value.notebook == "04_labels"
    assert failure.value.cell == 2  # counted in the notebook as written, without papermill's injected cell
    assert "RuntimeError: broken on purpose" in failure.value.error
    assert failure.value.output.is_file()  # the partial output keeps the traceback


def test_the_kernel_is_registered():
    from jupyter_client.kernelspec import KernelSpecManager

    assert reproduce.ensure_kernel() == "depthlab"
    assert "depthlab" in KernelSpecManager().find_kernel_specs()


def test_a_kernel_of_another_python_is_an_error(tmp_path, monkeypatch):
    spec = tmp_path / "kernels" / "depthlab-elsewhere"
    spec.mkdir(parents=True)
    argv = ["/opt/other-env/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "x", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"depthlab-elsewhere.* starts /opt/other-env/bin/python, not this Python"):
        reproduce.ensure_kernel("depthlab-elsewhere")


def test_notebooks_are_committed_without_outputs_thin_and_linted():
    import subprocess
    import sys

    folder = reproduce.notebooks_dir()
    for name in reproduce.NOTEBOOKS:
        nb = nbformat.read(folder / f"{name}.ipynb", as_version=4)
        nbformat.validate(nb)
        assert "parameters" in nb.cells[0].metadata.get("tags", []), name  # the first cell, as papermill expects
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), name
        assert "record_results" in code[-1].source, name
        # thin: the cells call findings and plots; no analysis of their own (no functions, loops, filters)
        for cell in code[2:]:
            for construct in ("def ", "for ", "pl.col", ".filter(", ".group_by("):
                assert construct not in cell.source, (name, construct)
    ruff = Path(sys.executable).with_name("ruff")
    done = subprocess.run([str(ruff), "check", "--no-cache", str(folder)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    assert not (folder / "generate.py").exists()


def test_demo_scale_is_the_default_of_every_demo_entry_point():
    import inspect

    functions = {"demo_data": auditdata.demo_data, "audit_data": auditdata.audit_data, "reproduce": reproduce.reproduce}
    defaults = {name: inspect.signature(f).parameters["scale"].default for name, f in functions.items()}
    assert defaults == dict.fromkeys(functions, auditdata.DEMO_SCALE)
    assert 0 < auditdata.DEMO_SCALE <= 1  # a demo at most the paper's size


def test_the_demo_is_built_once_in_the_user_cache_and_shared(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPTHLAB_CACHE_DIR", str(tmp_path / "cache"))
    first = auditdata.audit_data(None, scale=0.02, seed=3, cache_dir=tmp_path / "out-a")
    marker = first.data_dir / ".complete"
    stamp = marker.stat().st_mtime_ns
    second = auditdata.audit_data(None, scale=0.02, seed=3, cache_dir=tmp_path / "out-b")
    assert first.data_dir == second.data_dir
    assert first.data_dir.parent == tmp_path / "cache" / "demo"
    assert marker.stat().st_mtime_ns == stamp  # reused, not rebuilt
    assert json.loads(marker.read_text())["simulated"] is True
    assert second.kind == "simulated"


def test_the_golden_comparison_sees_a_changed_missing_or_reordered_number():
    from golden import HERE, differences

    golden = json.loads((HERE / "results_demo.json").read_text())
    assert differences(golden, golden) == []
    changed = json.loads(json.dumps(golden))
    row = next(r for r in changed["03_depth_predicts_difficulty"] if r[2] is not None)
    row[2] *= 1 + 1e-6
    assert len(differences(changed, golden)) == 1
    fewer = {**golden, "05_quadrants": golden["05_quadrants"][1:]}
    assert differences(fewer, golden)
    swapped = {**golden, "00_explore": golden["00_explore"][::-1]}
    assert differences(swapped, golden)
    nulled = json.loads(json.dumps(golden))
    next(r for r in nulled["06_segments"] if r[3] is not None)[3] = None
    assert differences(nulled, golden)


def test_an_output_folder_named_tb2_does_not_hide_the_bundled_tb2_facts(tmp_path, monkeypatch):
    # `depthlab reproduce --data tb2 --out tb2` makes ./tb2 (figures, results); the notebooks, run in
    # the same folder, must still read the bundled facts, not that folder
    monkeypatch.chdir(tmp_path)
    source = tmp_path / "notebooks"
    source.mkdir()
    nb = new_notebook()
    nb.metadata = {"kernelspec": {"name": "depthlab", "display_name": "depthlab", "language": "python"}}
    nb.cells = [
        new_code_cell("data = None\nfigures_dir = None", metadata={"tags": ["parameters"]}),
        new_code_cell(
            "from depthlab.auditdata import audit_data\nloaded = audit_data(data)\n"
            "if (loaded.kind, loaded.audit.height) != ('real', 89):\n    raise RuntimeError(loaded.summary())"
        ),
    ]
    nbformat.write(nb, source / "01_collections.ipynb")
    reproduce.reproduce("tb2", "tb2", only=["01"], source_dir=source, progress=False, n_boot=100)
    assert (tmp_path / "tb2" / "notebooks" / "01_collections.ipynb").is_file()
    assert auditdata.audit_data("tb2").audit.height == 89
    # a folder named tb2 that holds a collection is still read as a folder; ./tb2 always is
    (tmp_path / "tb2" / "tasks" / "tb2").mkdir(parents=True)
    assert not auditdata.is_bundled("tb2")
    assert not auditdata.is_bundled("./tb2")
