"""The package's set-up files agree with each other and with the layout DESIGN.md fixes."""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
from pathlib import Path

import depthlab as dl

ROOT = Path(__file__).resolve().parents[1]

# conda-forge names differ from PyPI names for a few packages
_CONDA_TO_PYPI = {"docker-py": "docker"}


def _requirement_name(spec: str) -> str:
    return re.split(r"[<>=!~ ;\[]", spec.strip(), maxsplit=1)[0].lower()


def test_environment_yml_and_setup_cfg_declare_the_same_dependencies():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    setup = {
        _requirement_name(line): line.strip()
        for line in cfg["options"]["install_requires"].splitlines()
        if line.strip()
    }
    conda: dict[str, str] = {}
    text = (ROOT / "environment.yml").read_text()
    for line in text[text.index("dependencies:") :].splitlines():
        match = re.match(r"^\s{2}- ([A-Za-z0-9_.-]+)(.*)$", line)
        if match and match.group(1) not in {"python", "pip"}:
            name = _CONDA_TO_PYPI.get(match.group(1), match.group(1)).lower()
            conda[name] = name + match.group(2).strip()
    assert set(conda) == set(setup)
    for name, spec in setup.items():
        assert spec.replace(" ", "") == conda[name].replace(" ", ""), name


def test_public_api_names_resolve():
    missing = [name for name in dl.__all__ if not hasattr(dl, name)]
    assert missing == []
    assert set(dl.__all__) == {"CAPS", "__version__", *dl._EXPORTS, *dl._SUBMODULES}
    assert dl.CAPS == (1, 2, 3, 5, 10, 20, 40, 80)


def test_design_card_top_level_layout_exists():
    for name in ["depthlab", "notebooks", "data", "figures", "tests", "environment.yml", "setup.cfg", "README.md"]:
        assert (ROOT / name).exists(), name


def test_cli_lists_every_verb():
    out = subprocess.run(
        [sys.executable, "-m", "depthlab.cli", "--help"], capture_output=True, text=True, check=False, cwd=ROOT
    )
    for verb in ["trials", "tasks", "depth", "plan", "run", "fill", "simulate", "reproduce", "fetch"]:
        assert verb in out.stdout


def test_readme_names_the_command_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci
    assert "make test" in readme
    assert "make reproduce" in readme


def test_the_bundled_tb2_tables_are_package_data():
    # `dl.load_dataset("tb2")` must work from an installed package, with no ../shared beside it
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    patterns = [part.strip() for part in cfg["options.package_data"]["depthlab"].split(",")]
    shipped = {path.relative_to(ROOT / "depthlab").as_posix() for p in patterns for path in (ROOT / "depthlab").glob(p)}
    for name in ("tasks.parquet", "trials.parquet", "PROVENANCE.md"):
        assert f"datasets/data/tb2/{name}" in shipped, name
