"""Task directories: Harbor task.toml (1.0 and 1.1), TB1 task.yaml, work counts, checksums."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
import warnings

import pytest
import yaml

from depthlab import schema
from depthlab.io import RejectedFilesWarning, load_tasks
from depthlab.io.harbor_task import NewerTaskFormatWarning
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
    (tmp_path / "set" / "mistyped").mkdir()
    (tmp_path / "set" / "mistyped" / "task.toml").write_text('metadata = "easy"\n')
    (tmp_path / "set" / "future").mkdir()  # read as Harbor reads any version, with a note (issue 46)
    (tmp_path / "set" / "future" / "task.toml").write_text('schema_version = "9.0"\n')
    with (
        pytest.warns(RejectedFilesWarning, match="2 task directories rejected"),
        pytest.warns(NewerTaskFormatWarning, match="'9.0' is newer than known"),
    ):
        tasks = load_tasks(tmp_path / "set")
    assert sorted(tasks["task"].to_list()) == ["future", "good"]


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


# ---------------------------------------------------------------- Terminal-Bench 1 task dirs, what is read and refused


def _load_tb1(folder) -> tuple[list[dict], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tasks = load_tasks(folder)
    return list(tasks.iter_rows(named=True)), [str(w.message) for w in caught]


def _tb1_task(root, name: str, yaml_text: str, **files: str):
    folder = root / "tb1" / name
    folder.mkdir(parents=True)
    (folder / "task.yaml").write_text(yaml_text)
    for file_name, text in files.items():
        (folder / file_name.replace("_", ".", 1)).write_text(text)
    return folder


def test_instruction_from_the_first_description(tmp_path):
    _tb1_task(tmp_path, "t", "descriptions:\n  - key: base\n    description: fix the four broken links\n  - key: x\n")
    (row,), warned = _load_tb1(tmp_path / "tb1")
    assert row["instruction_words"] == 5
    assert not warned


def test_solution_yaml_commands_are_the_work(tmp_path):
    steps = "- command: apt-get install -y gcc\n- command: |\n    # build it\n    make\n- note: not a command\n"
    _tb1_task(tmp_path, "t", "instruction: go\n", solution_yaml=steps)
    (row,), _ = _load_tb1(tmp_path / "tb1")
    # the commands joined line by line: apt-get, '# build it' (a comment), make, and '' for the step
    # without a command
    assert (row["work"], row["has_solution"], row["work_note"]) == (2, True, None)
    assert row["solution_lines_total"] == 4


def test_without_any_solution_the_note_says_what_is_missing(tmp_path):
    _tb1_task(tmp_path, "t", "instruction: go\n")
    (row,), _ = _load_tb1(tmp_path / "tb1")
    assert (row["work"], row["has_solution"], row["work_note"]) == (None, False, "no solution.sh or solution.yaml")


@pytest.mark.parametrize(
    ("yaml_text", "files", "file", "reason"),
    [
        ("- a\n- b\n", {}, "task.yaml", "expected a mapping at the top level, got list"),
        (
            "instruction: go\n",
            {"solution_yaml": "command: make\n"},
            "solution.yaml",
            "expected a list of {command: ...} steps",
        ),
    ],
)
def test_bad_files_reject_their_task_with_path_and_reason(tmp_path, yaml_text, files, file, reason):
    folder = _tb1_task(tmp_path, "bad", yaml_text, **files)
    rows, warned = _load_tb1(tmp_path / "tb1")
    assert rows == []
    assert warned == [f"1 task directories rejected: {folder / file}: {reason}"]


def test_dirhash_of_an_empty_directory_is_an_error_naming_it(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        ValueError, match=f"^{re.escape(str(tmp_path / 'empty'))}: nothing to hash \\(empty directory\\)$"
    ):
        dirhash_sha256(tmp_path / "empty")


def _harbor_task(root, name: str, toml_text: str):
    folder = root / "set" / name
    folder.mkdir(parents=True)
    (folder / "task.toml").write_text(toml_text)
    return folder


def test_the_task_table_name_wins_over_the_directory_name(tmp_path):
    _harbor_task(tmp_path, "dir-name", 'schema_version = "1.1"\n[task]\nname = "org/real-name"\n')
    rows, warned = _load_tb1(tmp_path / "set")
    assert [row["task"] for row in rows] == ["real-name"]
    assert not warned


@pytest.mark.parametrize(
    ("toml_text", "reason"),
    [
        ('[metadata]\nexpert_time_estimate_min = "soon"\n', "expert_time_estimate_min must be a number, got 'soon'"),
        ("[metadata]\nexpert_time_estimate_min = inf\n", "expert_time_min must be a finite number, got inf"),
        ('[metadata]\ntags = "web"\n', "tags must be a list, got 'web'"),
        ('metadata = "x"\n', "[metadata] must be a table, got str"),
    ],
)
def test_bad_metadata_rejects_the_task_naming_file_and_field(tmp_path, toml_text, reason):
    folder = _harbor_task(tmp_path, "bad", toml_text)
    rows, warned = _load_tb1(tmp_path / "set")
    assert rows == []
    assert warned == [f"1 task directories rejected: {folder / 'task.toml'}: {reason}"]
