"""The front page and the docs site: README's size, links that resolve, the site built in strict mode.

The site (mkdocs.yml) is built once, by one test, into a temporary folder; strict mode turns every
warning (a page missing from the nav, a link to no page, an API reference that does not resolve, a
docstring griffe cannot parse) into a failure. The API pages are then checked to list every public
name of the module they document, so a package split into modules keeps its flat exports on its page.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from depthlab.cli import VERBS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: The README is a front page; the guide lives in docs/ (seaborn's is 3.5 kB, pingouin's 18 kB).
README_MAX_BYTES = 15_000

#: (API page docs/api/<page>.md, a module it documents)
API_PAGES: tuple[tuple[str, str], ...] = (
    ("depthlab", "depthlab"),
    *(
        (name, f"depthlab.{name}")
        for name in (
            "io",
            "datasets",
            "measures",
            "stats",
            "auditdata",
            "findings",
            "plots",
            "simulate",
            "runner",
            "engines",
            "export",
            "paper",
            "catalog",
            "schema",
        )
    ),
    ("notebooks", "depthlab.reproduce"),
    ("notebooks", "depthlab.evidence"),
    ("notebooks", "depthlab.widgets"),
)

_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _markdown_files() -> list[Path]:
    names = ("README.md", "ARCHITECTURE.md", "CONTRIBUTING.md", "CHANGELOG.md")
    own = [ROOT / name for name in names if (ROOT / name).exists()]
    pages = [p for p in sorted(DOCS.rglob("*.md")) if "_ext" not in p.relative_to(DOCS).parts]
    return own + pages


def _links(text: str) -> list[str]:
    # links inside code are examples, not links
    prose = _CODE.sub("", _FENCE.sub("", text))
    return _LINK.findall(prose)


def test_readme_is_a_front_page():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size:,} bytes; the front page keeps under {README_MAX_BYTES:,}"


def test_markdown_link_finder_sees_links_and_skips_code():
    text = 'See [a](docs/a.md#x), ![img](img/b.png "title"), `[c](no.md)`\n```\n[d](no2.md)\n```\n'
    assert _links(text) == ["docs/a.md#x", "img/b.png"]


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve_inside_the_repository(path: Path):
    broken = []
    for target in _links(path.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL (http:, mailto:) or an anchor on the same page
        file = (path.parent / target.split("#", 1)[0]).resolve()
        # a docs page is served by the site, which holds only docs/
        home = DOCS if path.is_relative_to(DOCS) else ROOT
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif not file.is_relative_to(home):
            broken.append(f"{target}: outside {home.relative_to(ROOT.parent)}")
    assert broken == [], f"{path.relative_to(ROOT)}: {broken}"


def test_docs_point_at_nothing_outside_the_repository():
    # the real test material is named by DEPTHLAB_SHARED, never by where it sits on one machine
    for path in _markdown_files():
        text = path.read_text(encoding="utf-8")
        for pattern in ("/work/", "../shared", "/home/", "/root/"):
            assert pattern not in text, f"{path.relative_to(ROOT)} mentions {pattern!r}"


def test_package_points_at_nothing_outside_the_repository():
    # docstrings and messages name DEPTHLAB_SHARED or a path inside the repository, never this machine's folders
    for path in sorted((ROOT / "depthlab").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for pattern in ("/work/", "../shared"):
            assert pattern not in text, f"{path.relative_to(ROOT)} mentions {pattern!r}"


class _ParseError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]  # raise instead of exiting
        raise _ParseError(message)


def _shell_commands(path: Path) -> list[str]:
    commands = []
    for block in re.findall(r"^```(?:bash|sh|shell)\n(.*?)^```", path.read_text(encoding="utf-8"), re.M | re.S):
        block = re.sub(r"\\\n\s*", " ", block)  # a command continued over lines with a trailing backslash
        for line in block.splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith("depthlab "):
                commands.append(line)
    return commands


def test_shell_commands_in_the_docs_parse_as_their_verb_says():
    # every `depthlab VERB ...` line of a shell block, parsed by the verb's own argument parser
    seen = 0
    for path in _markdown_files():
        for command in _shell_commands(path):
            verb, *argv = shlex.split(command)[1:]
            assert verb in VERBS, f"{path.relative_to(ROOT)}: `{command}`: no verb {verb!r}"
            module = importlib.import_module(f"depthlab.commands.{verb}")
            parser = _Parser(prog=f"depthlab {verb}", allow_abbrev=False)  # the docs spell options out
            module.add_arguments(parser)
            try:
                parser.parse_args(argv)
            except _ParseError as error:
                pytest.fail(f"{path.relative_to(ROOT)}: `{command}`: {error}")
            seen += 1
    assert seen >= 10  # README's quick start alone has seven


def test_every_guide_page_is_in_the_nav():
    config = (ROOT / "mkdocs.yml").read_text()
    nav = set(re.findall(r":\s*(\S+\.md)\s*$", config, re.MULTILINE))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "_ext" not in p.relative_to(DOCS).parts}
    assert pages - nav == set()
    assert nav - pages == set()


def _require_docs_extra() -> None:
    # a missing docs extra is a broken set-up, not a reason to skip: make test installs it
    try:
        import griffe_sphinx  # noqa: F401
        import mkdocs  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError as error:
        pytest.fail(f"{error}: the docs build needs the docs extra (pip install -e '.[docs]'; make test installs it)")


def _build_site(out: Path) -> None:
    # one test builds the site and checks it all, so that under xdist one worker builds it once
    _require_docs_extra()
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    warnings = [line for line in build.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert build.returncode == 0, "mkdocs build --strict failed:\n" + "\n".join(warnings or [build.stderr[-3000:]])


def test_docs_build_in_strict_mode_and_list_every_public_name(tmp_path: Path):
    site = tmp_path / "site"
    _build_site(site)
    assert (site / "index.html").is_file()
    for page in ("library", "loading", "collections", "audit", "proxy", "planning", "runner", "measure", "testing"):
        assert (site / page / "index.html").is_file(), page
    # the README's figures are in the site
    for figure in ("turns_vs_depth", "forest_partial_correlations", "quadrants"):
        assert (site / "img" / f"{figure}.png").is_file(), figure
    problems = [problem for page, module in API_PAGES for problem in _api_page_problems(site, page, module)]
    assert problems == []


def _public_names(module_name: str) -> list[str]:
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:  # no __all__: what the module itself defines
        names = [
            name
            for name, value in vars(module).items()
            if not name.startswith("_")
            and (inspect.isfunction(value) or inspect.isclass(value))
            and getattr(value, "__module__", "").startswith(module_name)
        ]
    # a subpackage listed in depthlab.__all__ has its own page
    return [n for n in names if not n.startswith("__") and not inspect.ismodule(getattr(module, n))]


def _api_page_problems(site: Path, page: str, module: str) -> list[str]:
    html = (site / "api" / page / "index.html").read_text(encoding="utf-8")
    anchors = set(re.findall(r'id="([\w.]+)"', html))
    names = _public_names(module)
    problems = [] if names else [f"{module} exports nothing the test can check"]
    missing = [name for name in names if f"{module}.{name}" not in anchors]
    if missing:
        problems.append(f"docs/api/{page}.md does not render {module}'s {missing}")
    # a docstring filled in at import time shows its fragments, not the placeholder; Sphinx roles
    # are code (and links), not the role's markup
    if re.search(r"<p>\{\w+\}</p>", html):
        problems.append(f"docs/api/{page}.md shows a docstring placeholder")
    if re.search(r":(?:func|class|data|mod|meth|attr|exc|obj):<code>", html):
        problems.append(f"docs/api/{page}.md shows a Sphinx role's markup")
    return problems


_TOY = {
    "toy/__init__.py": '''
"""A package whose docstrings are completed at import time, with an export shadowed by its submodule."""

from toy._fragments import docstring
from toy.shadow import shadow

__all__ = ["filled", "shadow"]


@docstring
def filled(data: int) -> int:
    """Return ``data``, unlike :func:`~toy.shadow` and :class:`matplotlib.figure.Figure`.

    Parameters
    ----------
    {data}

    Returns
    -------
    int
        The same.
    """
    return data
''',
    "toy/_fragments.py": """
import re


def docstring(function):
    text = r"\\1data : int\\n\\1    The toy fragment text."
    function.__doc__ = re.sub(r"(?m)^( *)\\{data\\}$", text, function.__doc__)
    return function
""",
    "toy/shadow.py": '''
def shadow() -> None:
    """The function the submodule of the same name holds, beside :func:`~toy.filled`."""
''',
}


def _toy_site(tmp_path: Path, *, extension: bool) -> subprocess.CompletedProcess[str]:
    for name, text in _TOY.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text.lstrip())
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# toy\n\n::: toy\n")
    ext = (
        f"\n            extensions: ['{DOCS / '_ext' / 'runtime_docstrings.py'}:RuntimeDocstrings']"
        if extension
        else ""
    )
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: toy\nplugins:\n  - autorefs\n"
        "  - mkdocstrings:\n      handlers:\n        python:\n          paths: [.]\n"
        f"          options:\n            docstring_style: numpy\n            show_submodules: false\n"
        f"            show_source: false{ext}\n"
    )
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(tmp_path)}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=300)


def test_runtime_docstrings_extension_fills_fragments_and_unshadows_exports(tmp_path: Path):
    _require_docs_extra()
    build = _toy_site(tmp_path, extension=True)
    assert build.returncode == 0, build.stderr[-3000:]
    html = (tmp_path / "site" / "index.html").read_text()
    assert "The toy fragment text." in html
    assert "{data}" not in html
    assert 'id="toy.shadow"' in html
    assert "The function the submodule of the same name holds, beside" in html
    # a Sphinx role is a link where the reference has the name, plain code where it has not
    link = r'<a class="autorefs autorefs-internal"[^>]*href="#toy\.shadow"[^>]*><code>shadow</code></a>'
    assert re.search(link, html)
    assert "<code>matplotlib.figure.Figure</code>" in html
    assert ":func:" not in html


def test_without_the_extension_the_toy_site_fails_strict(tmp_path: Path):
    # the extension's reason to exist: griffe reads the source, placeholder and all
    _require_docs_extra()
    build = _toy_site(tmp_path, extension=False)
    assert build.returncode != 0
    assert "{data}" in build.stderr


def test_readme_python_runs_on_simulated_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # the quick start's Python, run as written on small simulated run logs where it expects them
    import matplotlib
    import polars as pl

    import depthlab as dl

    matplotlib.use("Agg")
    monkeypatch.setenv("DEPTHLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    dl.simulate.write_runs(tmp_path / "out" / "sim", scale=0.05, seed=0)
    blocks = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), re.M | re.S)
    assert len(blocks) >= 2
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    audit, depth = namespace["audit"], namespace["depth"]
    assert isinstance(audit, pl.DataFrame)
    assert isinstance(depth, pl.DataFrame)
    assert audit.height > 0
    assert depth.filter(pl.col("status") == "solved").height > 0


@pytest.mark.slow
def test_the_docs_figures_are_current():
    # docs/img holds the figures README and the audit guide show, with the record of every text each
    # shows (make docs-figures writes both); drawn again now from the same data, they must read the same
    import json

    from depthlab.auditdata import audit_data
    from depthlab.reproduce import DOCS_MANIFEST, README_FIGURES, figure_texts, readme_figures

    manifest = json.loads((ROOT / "docs" / "img" / DOCS_MANIFEST).read_text())
    drawn_from = manifest["drawn_from"]
    assert drawn_from["data"] is None, "the docs' figures are of the simulated demo"
    data = audit_data(None, scale=drawn_from["scale"], seed=drawn_from["seed"])
    now = readme_figures(data, n_boot=drawn_from["n_boot"], seed=drawn_from["seed"])
    assert sorted(manifest["figures"]) == sorted(README_FIGURES)
    for name, fig in now.items():
        assert (ROOT / "docs" / "img" / f"{name}.png").is_file(), name
        assert figure_texts(fig) == manifest["figures"][name], f"docs/img/{name}.png is stale: run `make docs-figures`"


@pytest.mark.parametrize("path", ["README.md", "docs/library.md"])
def test_the_verb_lists_name_every_verb(path: str):
    # "`depthlab VERB --help` describes each verb: ..." lists them all, in the order of cli.VERBS
    text = " ".join((ROOT / path).read_text().split())
    listed = re.search(r"`depthlab VERB --help` describes each verb[^`]*(.*?)[;.)]", text)
    assert listed, f"{path} has no verb list"
    assert re.findall(r"`([a-z]+)`", listed[1]) == list(VERBS)


def test_the_docs_index_says_what_the_proxy_is():
    # the proxy is not validated as an estimate of D on real runs: no page may call it validated
    for path in (ROOT / "docs" / "index.md", ROOT / "README.md"):
        row = next(line for line in path.read_text().splitlines() if "proxy.md" in line and line.startswith("|"))
        assert "not validated" in row, f"{path.name}: {row}"


def test_readme_correlates_through_the_findings_not_across_collections():
    # pass ~ D | W over several collections is the within-collection finding; a raw partial_spearman over
    # every collection reads differences between collections as a correlation (CHANGELOG, issue 19)
    text = (ROOT / "README.md").read_text()
    assert "dl.stats.partial_spearman(audit" not in text
    assert "findings.pass_depth_given_work(data)" in text
