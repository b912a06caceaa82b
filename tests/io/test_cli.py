"""``depthlab trials`` and ``depthlab tasks``: exact schema columns out, exit codes, summary line."""

from __future__ import annotations

import polars as pl
from io_helpers import TMAX_JOB

from depthlab import schema
from depthlab.cli import main


def test_trials_csv_and_parquet_have_exactly_the_schema(samples, tmp_path, capsys):
    assert main(["trials", str(samples / TMAX_JOB), "-o", str(tmp_path / "t.parquet")]) == 0
    table = pl.read_parquet(tmp_path / "t.parquet")
    schema.check(table, "trials")
    assert table.height == 3
    assert (
        "loaded 3 trials (pass 2, fail 1, invalid 0); rejected 0; duplicates collapsed 0; seen 3"
        in capsys.readouterr().err
    )
    assert main(["trials", str(samples / TMAX_JOB), "-o", str(tmp_path / "t.csv"), "--no-cache"]) == 0
    assert pl.read_csv(tmp_path / "t.csv").columns == list(schema.TRIALS)


def test_trials_exit_codes(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["trials", str(tmp_path / "empty"), "-o", str(tmp_path / "x.csv")]) == 1
    bad = tmp_path / "job" / "t__1"
    bad.mkdir(parents=True)
    (bad / "result.json").write_text("{")
    assert main(["trials", str(tmp_path / "job"), "-o", str(tmp_path / "x.csv"), "--strict"]) == 1
    assert str(bad / "result.json") in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


def test_tasks_writes_the_schema(samples, tmp_path):
    assert main(["tasks", str(samples), "-o", str(tmp_path / "tasks.parquet")]) == 0
    table = pl.read_parquet(tmp_path / "tasks.parquet")
    schema.check(table, "tasks")
    # one row per task folder of the samples (their number grows as samples are added to shared/)
    folders = {path.parent for name in ("task.toml", "task.yaml") for path in samples.rglob(name)}
    assert table.height == len(folders) >= 4
    assert main(["tasks", str(samples), "-o", str(tmp_path / "tasks.csv")]) == 0
    assert pl.read_csv(tmp_path / "tasks.csv").columns == list(schema.TASKS)


def test_trials_prints_field_notes_and_follows_links_only_when_asked(samples, tmp_path, capsys):
    import shutil

    from io_helpers import TMAX_JOB, write_trial

    job = tmp_path / "job"
    shutil.copytree(samples / TMAX_JOB, job)
    result = job / "prove-plus-comm__4K4LrFz" / "result.json"
    result.write_text(result.read_text().replace('"started_at": "', '"started_at": "x', 1))
    write_trial(tmp_path / "elsewhere" / "deep" / "far__1")  # not run logs at its first level
    (job / "far").symlink_to(tmp_path / "elsewhere")
    assert main(["trials", str(job), "-o", str(tmp_path / "t.csv"), "--no-cache"]) == 0
    err = capsys.readouterr().err
    assert "field notes: started_at of 1 trials: " in err
    assert f"rejected {job / 'far'}: symbolic link to" in err
    assert main(["trials", str(job), "-o", str(tmp_path / "t.csv"), "--no-cache", "--follow-links"]) == 0
    assert "loaded 4 trials" in capsys.readouterr().err
