"""task.toml through one door: the one TOML writer (``io.harbor_task.config_text``) gives back what it was given,
the merge and the replay copy keep a task.toml's dates and quoting, and no module outside ``io`` parses TOML."""

from __future__ import annotations

import ast
import datetime as dt
import tomllib
from pathlib import Path

import pytest

from depthlab.io.harbor_models import StepConfig, TaskConfig
from depthlab.io.harbor_task import TaskFormatError, config_text, parse_config, read_config, read_task, write_config
from depthlab.io.task_merge import merge_steps

ROOT = Path(__file__).resolve().parents[2]

#: What the three writers this one replaced disagreed on: dates (written as text by one, as dates by another),
#: quoting (a JSON string is not always a TOML string: "\u0007", "\x7f"), keys needing quotes, inline tables.
HOSTILE: dict = {
    "schema_version": "1.4",
    "task": {"name": 'org/a "quoted" name', "keywords": ["tab\there", "bell\u0007", "del\x7f", "é ü 中"]},
    "metadata": {
        "created": dt.date(2025, 1, 2),
        "at": dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        "local": dt.datetime(2025, 1, 2, 3, 4, 5),
        "clock": dt.time(12, 30),
        "a.dotted key": 1,
        "nested": {"inline": {"x": [1, 2.5, True]}},
        "big": 2**62,
        "ratio": 0.1,
    },
    "verifier": {"env": {"TOKEN": "${TOKEN:-none}"}, "timeout_sec": 30.0},
    "steps": [{"name": "one", "min_reward": {"reward": 0.5, "style": 1}}, {"name": "two"}],
}


def _typed(value):
    """``value`` with every leaf's type beside it, so 1 and 1.0 differ."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


def test_the_writer_gives_back_every_value_with_its_type():
    text = config_text(HOSTILE)
    assert _typed(tomllib.loads(text)) == _typed(HOSTILE)
    assert _typed(parse_config(text, "t")) == _typed(HOSTILE)


def test_the_typed_model_is_written_without_the_sections_it_only_defaults():
    model = TaskConfig(schema_version="1.4", steps=[StepConfig(name="a", min_reward=1.0)])
    assert tomllib.loads(config_text(model)) == {"schema_version": "1.4", "steps": [{"name": "a", "min_reward": 1.0}]}


def test_a_written_task_toml_reads_back_through_the_model(tmp_path):
    write_config(tmp_path / "task.toml", HOSTILE, header="a header\nof two lines")
    text = (tmp_path / "task.toml").read_text()
    assert text.startswith("# a header\n# of two lines\n")
    assert _typed(read_config(tmp_path / "task.toml")) == _typed(HOSTILE)


def test_not_toml_is_a_task_format_error_with_the_place():
    with pytest.raises(TaskFormatError, match=r"^row 7: not valid TOML: ") as caught:
        parse_config('name = "open', "row 7")
    assert isinstance(caught.value.__cause__, tomllib.TOMLDecodeError)


def test_the_merge_keeps_dates_and_quoting(tmp_path):
    task = tmp_path / "multi"
    for name in ("one", "two"):
        (task / "steps" / name / "solution").mkdir(parents=True)
        (task / "steps" / name / "tests").mkdir()
        (task / "steps" / name / "instruction.md").write_text(f"Do {name}.\n")
        (task / "steps" / name / "solution" / "solve.sh").write_text("#!/bin/bash\necho hi\n")
        (task / "steps" / name / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (task / "environment").mkdir()
    (task / "environment" / "Dockerfile").write_text("FROM debian:12\n")
    config = {key: value for key, value in HOSTILE.items() if key != "steps"}
    config["steps"] = [{"name": "one", "min_reward": 1.0}, {"name": "two"}]
    write_config(task / "task.toml", config)
    merged = read_config(merge_steps(task, tmp_path / "out", dataset="set") / "task.toml")
    assert _typed(merged["metadata"]) == _typed({**HOSTILE["metadata"], "merged_from": 'set/a "quoted" name'})
    assert merged["task"]["name"] == HOSTILE["task"]["name"] + "-merged"
    assert merged["task"]["keywords"] == HOSTILE["task"]["keywords"]
    assert "steps" not in merged
    assert read_task(tmp_path / "out" / "multi-merged").name == 'a "quoted" name-merged'


def test_no_module_outside_io_parses_toml_or_writes_it_by_hand():
    offenders = []
    for path in sorted((ROOT / "depthlab").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("depthlab/io/") or "harbor_side" in relative:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(name.split(".")[0] in {"tomllib", "tomli", "tomli_w", "tomlkit", "toml"} for name in names):
                offenders.append(f"{relative}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and any(alias.name == "section" for alias in node.names):
                offenders.append(f"{relative}:{node.lineno} (a parsed task.toml's tables read by hand)")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "[[steps]]\nname" in node.value:
                offenders.append(f"{relative}:{node.lineno} (task.toml text by hand)")
    assert offenders == []


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[verifier.env]\nA = 1\n", "[verifier].env must be a table of text values, got {'A': 1}"),
        ('[[steps]]\nname = "a"\n[steps.verifier.env]\nB = true\n', "steps[0].verifier.env must be a table of text"),
    ],
)
def test_a_table_value_of_the_wrong_type_names_the_table(tmp_path, toml, message):
    (tmp_path / "task.toml").write_text(toml)
    with pytest.raises(TaskFormatError) as caught:
        read_task(tmp_path)
    assert caught.value.reason.startswith(message)
