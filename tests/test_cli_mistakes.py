"""The ``depthlab`` command catches mistakes: one clear line on stderr and a non-zero exit, before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

import depthlab
from depthlab import cli
from depthlab.simulate import MODELS


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "sim"
    assert cli.main(["simulate", str(out), "--scale", "0.01", "--seed", "3", "--public-attempts", "0"]) == 0
    return out


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("loaded ")]
    assert len(lines) == 1, err
    return lines[0]


def test_version_prints_the_package_version(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"depthlab {depthlab.__version__}"


@pytest.mark.parametrize("verb", ["trials", "tasks", "depth", "plan"])
def test_output_suffix_is_checked_before_any_work(verb, tmp_path, capsys):
    # the input does not even exist: the suffix must be refused first, without loading anything
    extra = ["--tasks", str(tmp_path / "no-tasks"), "--models", "m"] if verb == "plan" else []
    code = cli.main([verb, str(tmp_path / "no-such-runs"), *extra, "-o", str(tmp_path / "out.xlsx")])
    assert code == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"depthlab {verb}: argument -o/--output: the output file must end in .csv or .parquet")
    assert "out.xlsx" in line
    assert not list(tmp_path.iterdir())  # nothing written


def test_depth_with_an_unknown_model_lists_the_known_ones(runs, tmp_path, capsys):
    code = cli.main(["depth", str(runs / "jobs"), "--models", "nope", "-o", str(tmp_path / "d.csv")])
    assert code == 1
    line = _one_line(capsys.readouterr().err)
    assert (
        line
        == f"depthlab depth: unknown model(s) nope; the models with capped runs in these logs are: {', '.join(MODELS)}"
    )
    assert not (tmp_path / "d.csv").exists()


def test_plan_with_models_not_in_the_runs_is_refused_unless_declared_new(runs, tmp_path, capsys):
    args = [
        "plan",
        str(runs / "jobs"),
        "--tasks",
        str(runs / "tasks"),
        "--models",
        "a,b",
        "-o",
        str(tmp_path / "p.csv"),
    ]
    assert cli.main(args) == 1
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(
        "depthlab plan: unknown model(s) a, b; the models in these logs are: sim/model-a, sim/model-b"
    )
    assert "--new-models" in line
    assert not (tmp_path / "p.csv").exists()
    # a genuinely new model beside a known one, declared as such, plans its runs from scratch
    assert cli.main([*args[:5], f"{MODELS[0]},new/model", "--new-models", "-o", str(tmp_path / "p.csv")]) == 0
    assert (tmp_path / "p.csv").exists()


def test_unknown_verb_and_bad_option_are_one_line(capsys):
    assert cli.main(["depht"]) == 2
    assert _one_line(capsys.readouterr().err).startswith("depthlab: argument VERB: invalid choice: 'depht'")
    assert cli.main(["depth", "x", "-o", "x.csv", "--caps", "1,two"]) == 2
    assert _one_line(capsys.readouterr().err).startswith("depthlab depth: argument --caps: expected comma-separated")


# ---------------------------------------------------------------- measure (issue 32, case 6) ---
def _a_task(root: Path) -> Path:
    task = root / "tasks" / "t1"
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n[agent]\ntimeout_sec = 60.0\n')
    (task / "instruction.md").write_text("do it")
    (task / "tests" / "test.sh").write_text("exit 0\n")
    return task


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--price-in", "nan"], "--price-in must be a finite amount in USD >= 0, got nan"),
        (["--price-out", "inf"], "--price-out must be a finite amount in USD >= 0, got inf"),
        (["--price-in", "-5"], "--price-in must be a finite amount in USD >= 0, got -5.0"),
        (["--max-cost", "nan"], "--max-cost must be a cost in USD in the interval [0, inf], got nan"),
        (["--attempts", "0"], "--attempts must be an int >= 1, got 0"),
        (["--concurrency", "0"], "--concurrency must be an int >= 1, got 0"),
        (["--caps", "5,1,1"], "--caps must be a non-empty, strictly increasing sequence of positive ints"),
        (["--caps", "0"], "--caps must be a non-empty, strictly increasing sequence of positive ints"),
        (["--models", "a,a"], "--models must be a non-empty sequence of distinct model names"),
        (["-o", "{file}/depth.csv"], "is a file"),
    ],
)
def test_measure_mistakes_exit_2_before_anything_runs(extra, expected, tmp_path, capsys):
    """Each mistake was found after the money was spent (or exited 1); now exit 2, one line, nothing made."""
    task = _a_task(tmp_path)
    (tmp_path / "a-file").write_text("")
    extra = [part.replace("{file}", str(tmp_path / "a-file")) for part in extra]
    jobs = tmp_path / "jobs"
    # Harbor is missing: anything past the command line's checks would fail with exit 1 instead
    args = ["measure", str(task), "--models", "openai/m1", "--jobs-dir", str(jobs), "-o", str(tmp_path / "d.csv")]
    code = cli.main([*args, "--harbor", str(tmp_path / "no-harbor"), "--no-progress", *extra])
    assert code == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("depthlab measure: ")
    assert expected in line, line
    assert not jobs.exists()
