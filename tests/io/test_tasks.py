"""Task directories: Harbor task.toml (1.0 and 1.1), TB1 task.yaml, work counts, checksums."""

from __future__ import annotations

import json
import re
import shutil
import tomllib

import pytest
import yaml

from depthlab import schema
from depthlab.io import RejectedFilesWarning, load_tasks
from depthlab.io.tasks import count_work, dirhash_sha256

PMARS = "yujianll_skill-usage/terminal-bench-2/build-pmars"
TB21 = "zxss702_terminal-bench-2.1/tasks/adaptive-rejection-sampler"
TB1_TASK = "Uriel-Segev_Benchmarking-Agentic-AI/tasks/hello-world"


def test_harbor_1_0_metadata(samples):
    tasks = load_tasks(samples / PMARS)
    schema.check(tasks, "tasks")
    row = tasks.row(0, named=True)
    metadata = tomllib.loads((samples / PMARS / "task.toml").read_text())["metadata"]
    assert row["task"] == "build-pmars"
    assert (row["difficulty"], row["category"], row["tags"]) == (
        metadata["difficulty"],
        metadata["category"],
        metadata["tags"],
    )
    assert (row["expert_time_min"], row["junior_time_min"]) == (
        metadata["expert_time_estimate_min"],
        metadata["junior_time_estimate_min"],
    )
    assert row["instruction_words"] == len((samples / PMARS / "instruction.md").read_text().split())
    assert (row["has_solution"], row["work"], row["difficulty_source"]) == (False, None, None)
    assert "solve.sh" in row["work_note"]


def test_harbor_1_1_task_table_name_drops_the_org(samples):
    row = load_tasks(samples / TB21).row(0, named=True)
    name = tomllib.loads((samples / TB21 / "task.toml").read_text())["task"]["name"]
    assert row["task"] == name.split("/")[-1]


def test_tb1_task_yaml(samples):
    row = load_tasks(samples / TB1_TASK).row(0, named=True)
    config = yaml.safe_load((samples / TB1_TASK / "task.yaml").read_text())
    assert (row["task"], row["difficulty"], row["tags"]) == ("hello-world", config["difficulty"], config["tags"])
    assert row["instruction_words"] == len(config["instruction"].split())


def test_work_counts_non_blank_non_comment_lines(tmp_path, samples):
    task = tmp_path / "demo" / "pmars"
    shutil.copytree(samples / PMARS, task)
    lines = ["#!/bin/bash", "# install", "", "   ", "apt-get install -y gcc  # compiler", "  # indented comment"]
    lines += ["cd /app", "make", "cat <<'EOF' > x", "# inside heredoc", "EOF"]
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text("\n".join(lines) + "\n")
    row = load_tasks(tmp_path / "demo", difficulty_source="human").row(0, named=True)
    independent = len([line for line in lines if re.match(r"^\s*[^#\s]", line)])
    assert (row["work"], row["solution_lines_total"], row["has_solution"]) == (independent, len(lines), True)
    assert (row["dataset"], row["difficulty_source"]) == ("demo", "human")
    assert count_work("") == (0, 0)


def test_difficulty_source_none_when_stated_and_missing(tmp_path):
    task = tmp_path / "tw" / "t1"
    task.mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n[metadata]\ncategory = "x"\nlanguage = "bash"\n')
    assert load_tasks(task)["difficulty_source"][0] is None
    row = load_tasks(task, difficulty_source="generated").row(0, named=True)
    assert row["difficulty_source"] == "none"
    assert json.loads(row["labels"]) == {"language": "bash"}
    with pytest.raises(ValueError, match="'difficulty_source' parameter of load_tasks"):
        load_tasks(task, difficulty_source="llm")


def test_bad_task_dirs_are_skipped_with_a_warning(tmp_path, samples):
    shutil.copytree(samples / PMARS, tmp_path / "set" / "good")
    (tmp_path / "set" / "broken").mkdir()
    (tmp_path / "set" / "broken" / "task.toml").write_text("version = [unterminated")
    (tmp_path / "set" / "future").mkdir()
    (tmp_path / "set" / "future" / "task.toml").write_text('schema_version = "9.0"\n')
    with pytest.warns(RejectedFilesWarning, match="2 task directories rejected"):
        tasks = load_tasks(tmp_path / "set")
    assert tasks["task"].to_list() == ["good"]


def test_checksum_is_content_addressed(tmp_path, samples):
    first, second = tmp_path / "a" / "build-pmars", tmp_path / "b" / "build-pmars"
    shutil.copytree(samples / PMARS, first)
    shutil.copytree(samples / PMARS, second)
    (second / "empty-dir").mkdir()  # empty directories do not count (Dirhash Standard)
    assert dirhash_sha256(first) == dirhash_sha256(second)
    (second / "instruction.md").write_text("changed")
    assert dirhash_sha256(first) != dirhash_sha256(second)
    assert load_tasks(first)["checksum"][0] == dirhash_sha256(first)


def test_checksum_equals_the_dirhash_package(tmp_path):
    """Reference digest computed with the PyPI ``dirhash`` 0.5.0 package (what Harbor uses) on this tree."""
    task = tmp_path / "t"
    for folder in ("solution", "tests", "environment/sub", "empty"):
        (task / folder).mkdir(parents=True)
    (task / "solution" / "solve.sh").write_text("echo hi\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\npytest\n")
    (task / "environment" / "Dockerfile").write_text("FROM x\n")
    (task / "environment" / "sub" / "f.bin").write_bytes(b"data")
    (task / "instruction.md").write_text("Do it.\n")
    assert dirhash_sha256(task) == "79543c9f166c804461670640ba3a55b6350566440c4e11b2d3aa523112db6c34"


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("task.yaml", "instruction: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
        ("task.toml", 'version = "1.0"\na = ' + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
        ("task.toml", 'version = "1.0"\n[metadata]\nexpert_time_estimate_min = inf\n', "must be a finite number"),
    ],
)
def test_a_task_file_that_would_crash_the_parser_rejects_only_its_task(samples, tmp_path, name, text, reason):
    shutil.copytree(samples / PMARS, tmp_path / "tasks" / "build-pmars")
    bad = tmp_path / "tasks" / "bad"
    bad.mkdir()
    (bad / name).write_text(text)
    with pytest.warns(RejectedFilesWarning, match=reason):
        tasks = load_tasks(tmp_path / "tasks")
    assert tasks["task"].to_list() == ["build-pmars"]
