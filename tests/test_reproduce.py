"""depthlab.reproduce and `depthlab reproduce`: demo cache, loading, results files, failures named by cell."""

from __future__ import annotations

import json
import shutil

import nbformat
import polars as pl
import pytest
from nbformat.v4 import new_code_cell, new_notebook

import depthlab as dl
from depthlab import reproduce, schema
from depthlab.cli import main
from depthlab.datasets import Audit


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return reproduce.demo_data(tmp_path_factory.mktemp("demo"), scale=0.02, seed=3)


def test_demo_data_is_built_once_and_reused(demo):
    marker = demo / ".complete"
    assert marker.is_file()
    assert {p.name for p in demo.iterdir()} >= {"tasks", "jobs"}
    before = marker.stat().st_mtime_ns, sorted(p.name for p in (demo / "jobs").iterdir())
    again = reproduce.demo_data(demo.parent, scale=0.02, seed=3)
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
    folder = reproduce.demo_data(tmp_path, scale=0.01, seed=1)
    assert folder == half
    assert not (half / "jobs" / "stale").exists()
    assert (half / ".complete").is_file()


def test_audit_data_equals_the_library_calls(demo):
    data = reproduce.audit_data(demo)
    # independent wiring: every collection through the registry, then the measures
    names = sorted(p.name for p in (demo / "tasks").iterdir())
    bundle = Audit.concat([dl.load_dataset(name, demo) for name in names])
    expected = dl.audit_table(bundle.tasks, bundle.trials)
    assert sorted(data.datasets) == names
    key = ["dataset", "task"]
    assert data.audit.sort(key).equals(expected.sort(key))
    assert data.depth.sort(key).equals(dl.estimate_depth(bundle.capped).sort(key))
    assert data.trials.height == bundle.capped.height + bundle.public.height
    schema.check(data.audit, "audit")
    assert data.has_depth
    assert str(demo) in data.summary()


def test_audit_data_cache_round_trips(demo, tmp_path):
    fresh = reproduce.audit_data(demo, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*/.complete"))) == 1
    cached = reproduce.audit_data(demo, cache_dir=tmp_path)
    for kind in ("tasks", "trials", "depth", "audit"):
        assert getattr(cached, kind).equals(getattr(fresh, kind)), kind
    assert cached.notes == fresh.notes
    subset = reproduce.audit_data(demo, datasets=["tb2"], cache_dir=tmp_path)
    assert subset.audit["dataset"].unique().to_list() == ["tb2"]
    assert len(list(tmp_path.glob("*/.complete"))) == 2


def test_a_run_added_inside_a_job_invalidates_the_cached_tables(demo, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(demo, data)
    key = reproduce._cache_key(data, ["tb2"], None, (1, 2))
    job = next((data / "jobs" / "tb2").iterdir())
    (job / "new-trial__x").mkdir()  # what a resumed or filled run adds, three levels down
    assert reproduce._cache_key(data, ["tb2"], None, (1, 2)) != key


def test_audit_data_on_real_tb2_data_has_no_depth(shared_data):
    data = reproduce.audit_data(shared_data)
    assert data.datasets == ["tb2"]
    assert not data.has_depth
    assert data.audit.height == pl.read_csv(shared_data / "tb2_tasks.csv").height
    assert data.audit["pass_rate"].drop_nulls().len() > 80
    assert any("no capped runs" in note for note in data.notes)


def test_audit_data_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match="'data_dir' parameter of audit_data must be an existing folder"):
        reproduce.audit_data(tmp_path / "missing")
    with pytest.raises(ValueError, match="'data_dir' parameter of audit_data must hold at least one collection"):
        reproduce.audit_data(tmp_path)
    with pytest.raises(ValueError, match="'datasets' parameter of audit_data"):
        reproduce.audit_data(tmp_path, datasets="tb2")


def test_record_results_writes_values_and_the_paper_comparison(tmp_path):
    values = {
        "audited_tasks": 120,
        "tb2_pcorr_pass_depth_given_work": (-0.4, -0.6, -0.1),
        "sign_test_p": None,
        "my_own_number": float("nan"),
    }
    comparison = reproduce.record_results("01_demo", values, results_dir=tmp_path, figures=[tmp_path / "a.png", "b"])
    assert comparison["key"].to_list() == ["audited_tasks", "tb2_pcorr_pass_depth_given_work", "sign_test_p"]
    assert comparison.filter(pl.col("key") == "audited_tasks")["paper"].item() == "734"
    assert comparison.filter(pl.col("key") == "sign_test_p")["this_data"].item() == "not computable here"
    written = json.loads((tmp_path / "01_demo.json").read_text())
    assert written["values"]["my_own_number"] is None  # NaN is not JSON
    assert written["values"]["tb2_pcorr_pass_depth_given_work"] == [-0.4, -0.6, -0.1]
    assert written["figures"] == ["a", "b"]
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
    assert reproduce._select(only, "reproduce") == expected


def test_reproduce_rejects_bad_parameters(tmp_path):
    with pytest.raises(ValueError, match="'only' parameter of reproduce must name notebooks"):
        reproduce.reproduce(out=tmp_path, only=["99"])
    with pytest.raises(ValueError, match="'scale' parameter of reproduce"):
        reproduce.reproduce(out=tmp_path, scale=-1)
    with pytest.raises(ValueError, match="'n_boot' parameter of reproduce"):
        reproduce.reproduce(out=tmp_path, n_boot=5)
    assert main(["reproduce", "--out", str(tmp_path), "--only", "nope"]) == 2


def _failing_notebook(folder, name: str) -> None:
    nb = new_notebook()
    nb.metadata = {"kernelspec": {"name": "depthlab", "display_name": "depthlab", "language": "python"}}
    nb.cells = [
        new_code_cell("data_dir = None\nfigures_dir = None", metadata={"tags": ["parameters"]}),
        new_code_cell("x = 1"),
        new_code_cell("raise RuntimeError('broken on purpose')"),
    ]
    nbformat.write(nb, folder / f"{name}.ipynb")


def test_a_failing_notebook_is_named_with_its_cell(demo, tmp_path, capsys):
    source = tmp_path / "notebooks"
    source.mkdir()
    _failing_notebook(source, "04_labels")
    with pytest.raises(reproduce.NotebookFailed) as failure:
        reproduce.reproduce(demo, tmp_path / "out", only=["04"], source_dir=source, progress=False)
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


def test_notebooks_are_generated_and_committed_without_outputs():
    import subprocess
    import sys

    folder = reproduce.notebooks_dir()
    done = subprocess.run([sys.executable, str(folder / "generate.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for name in reproduce.NOTEBOOKS:
        nb = nbformat.read(folder / f"{name}.ipynb", as_version=4)
        assert "parameters" in nb.cells[0].metadata.get("tags", []), name  # the first cell, as papermill expects
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), name
        assert "record_results" in code[-1].source, name


def test_demo_scale_is_the_default_of_every_demo_entry_point():
    import inspect

    defaults = {
        name: inspect.signature(getattr(reproduce, name)).parameters["scale"].default
        for name in ("demo_data", "audit_data", "reproduce")
    }
    assert defaults == dict.fromkeys(defaults, reproduce.DEMO_SCALE)
    assert 0 < reproduce.DEMO_SCALE <= 1  # a demo at most the paper's size
