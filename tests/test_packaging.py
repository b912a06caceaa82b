"""The set-up files agree with each other and with the layout ARCHITECTURE.md describes; the CLI lists its verbs."""

from __future__ import annotations

import configparser
import importlib
import os
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
    for name in [
        "depthlab",
        "notebooks",
        "data",
        "figures",
        "tests",
        "environment.yml",
        "setup.cfg",
        "README.md",
        "ARCHITECTURE.md",
    ]:
        assert (ROOT / name).exists(), name


def _verb_modules() -> set[str]:
    # every module under depthlab/commands is a verb (a private helper module would start with _)
    return {path.stem for path in (ROOT / "depthlab" / "commands").glob("*.py") if not path.stem.startswith("_")}


def test_cli_lists_every_verb():
    from depthlab import cli

    assert len(cli.VERBS) == len(set(cli.VERBS)), "a verb listed twice"
    assert set(cli.VERBS) == _verb_modules(), "cli.VERBS and the modules under depthlab/commands differ"
    helps = {verb: importlib.import_module(f"depthlab.commands.{verb}").HELP for verb in _verb_modules()}
    for verb, text in helps.items():
        assert isinstance(text, str), verb
        assert text.strip(), f"{verb}.HELP is empty"
        assert "\n" not in text, f"{verb}.HELP must be one line"
    # wide enough that argparse wraps no help line
    env = {**os.environ, "COLUMNS": "1000"}
    out = subprocess.run(
        [sys.executable, "-m", "depthlab.cli", "--help"], capture_output=True, text=True, check=False, cwd=ROOT, env=env
    ).stdout
    # the sub-command list: each verb indented four spaces, its help after it (on the same line or the next)
    listed = re.findall(r"^ {4}([a-z][\w-]*)\s+(.+)$", out, re.MULTILINE)
    assert dict(listed) == helps
    assert [verb for verb, _ in listed] == list(cli.VERBS)


def test_cli_help_imports_only_the_verb_modules_and_the_foundation():
    # `depthlab --help` imports every verb module for its HELP: they must stay light at import
    from test_architecture import LAYERS

    code = (
        "import contextlib, io, sys\n"
        "from depthlab import cli\n"
        "before = set(sys.modules)\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    cli.main(['--help'])\n"
        "print('\\n'.join(sorted(set(sys.modules) - before)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.split()
    assert any(name.startswith("depthlab.commands.") for name in loaded), "--help read no verb module"
    heavy = [
        name
        for name in loaded
        if name.split(".")[0] not in sys.stdlib_module_names
        and not name.startswith("depthlab.commands")
        and name not in LAYERS[0]
    ]
    assert heavy == [], "a verb module imports these at module level: import them inside add_arguments or run"


def test_readme_names_the_command_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci
    assert "make test" in readme
    assert "make reproduce" in readme


# import name of a requirement, where it differs from the distribution name
_IMPORT_NAMES = {"pyyaml": "yaml", "tomli-w": "tomli_w"}
# requirements the package uses without an import statement, and how
_USED_WITHOUT_IMPORT = {
    "pyarrow": "polars' DataFrame.to_pandas (the figures hand pandas frames to seaborn)",
    "ipykernel": "run as `python -m ipykernel install` by depthlab.reproduce",
}


def test_every_declared_dependency_is_used_by_the_package():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    declared = [_requirement_name(line) for line in cfg["options"]["install_requires"].splitlines() if line.strip()]
    source = "\n".join(path.read_text() for path in (ROOT / "depthlab").rglob("*.py"))
    unused = []
    for name in declared:
        module = _IMPORT_NAMES.get(name, name)
        imported = re.search(rf"^\s*(import|from) {re.escape(module)}(\.|\s|$)", source, re.MULTILINE)
        if not imported and name not in _USED_WITHOUT_IMPORT:
            unused.append(name)
    assert unused == [], "declared in install_requires but never imported by depthlab (a test-only dependency?)"
    for name in _USED_WITHOUT_IMPORT:
        assert name in declared
    assert "ipykernel" in source


def test_collection_facts_sit_below_the_data_layer_and_the_figures():
    # the data layer and the measures read the collection facts without importing the figures
    code = (
        "import sys, depthlab.datasets, depthlab.measures, depthlab.simulate, depthlab.reproduce\n"
        "import depthlab.catalog as c\n"
        "assert 'depthlab.plots' not in sys.modules, 'the data layer imports the figures'\n"
        "assert 'matplotlib' not in sys.modules, 'the data layer imports matplotlib'\n"
        "from depthlab.measures import CURATION\n"
        "assert CURATION is c.CURATION\n"
        "assert depthlab.datasets.list_datasets()['curation'].to_list() == [c.CURATION[n] for n in "
        "depthlab.datasets.list_datasets()['name']]\n"
        "assert list(depthlab.datasets.list_datasets()['name']) == c.ordered(depthlab.datasets.ADAPTERS)\n"
        "assert set(depthlab.simulate.COLLECTIONS) == set(c.ORDER)\n"
        "assert not callable(depthlab.datasets)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_the_bundled_tb2_tables_are_package_data():
    # `dl.load_dataset("tb2")` must work from an installed package, with no ../shared beside it
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    patterns = [part.strip() for part in cfg["options.package_data"]["depthlab"].split(",")]
    shipped = {path.relative_to(ROOT / "depthlab").as_posix() for p in patterns for path in (ROOT / "depthlab").glob(p)}
    for name in ("tasks.parquet", "trials.parquet", "PROVENANCE.md"):
        assert f"datasets/data/tb2/{name}" in shipped, name


def test_harbors_side_of_the_whole_run_cap_is_package_data():
    # Harbor loads depthlab's terminus-2 wrapper by file path (import_path); a wheel must carry it,
    # though harbor_side/ is not a package (Harbor imports it, never depthlab)
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    patterns = [part.strip() for part in cfg["options.package_data"]["depthlab"].split(",")]
    shipped = {path.relative_to(ROOT / "depthlab").as_posix() for p in patterns for path in (ROOT / "depthlab").glob(p)}
    side = sorted(
        p.relative_to(ROOT / "depthlab").as_posix() for p in (ROOT / "depthlab/engines/harbor_side").glob("*.py")
    )
    assert side, "no harbor_side module found"
    assert set(side) <= shipped
