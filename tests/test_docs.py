"""The front page and the docs site: README's size, links that resolve, the site built in strict mode.

The site (mkdocs.yml) is built once per session into a temporary folder; strict mode turns every
warning (a page missing from the nav, a link to no page, an API reference that does not resolve, a
docstring griffe cannot parse) into a failure. The API pages are then checked to list every public
name of the module they document, so a package split into modules keeps its flat exports on its page.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: The README is a front page; the guide lives in docs/ (seaborn's is 3.5 kB, pingouin's 18 kB).
README_MAX_BYTES = 15_000

#: API page (docs/api/<page>.md) -> the module it documents.
API_PAGES = {
    "depthlab": "depthlab",
    **{
        name: f"depthlab.{name}"
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
            "paper",
            "catalog",
            "schema",
        )
    },
}

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


def test_every_guide_page_is_in_the_nav():
    config = (ROOT / "mkdocs.yml").read_text()
    nav = set(re.findall(r":\s*(\S+\.md)\s*$", config, re.MULTILINE))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "_ext" not in p.relative_to(DOCS).parts}
    assert pages - nav == set()
    assert nav - pages == set()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The docs site built in strict mode into a temporary folder."""
    try:
        import mkdocs  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError as error:
        pytest.fail(f"{error}: the docs build needs the docs extra (pip install -e '.[docs]'; make test installs it)")
    out = tmp_path_factory.mktemp("site")
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
    return out


def test_docs_build_in_strict_mode(site: Path):
    assert (site / "index.html").is_file()
    for page in ("library", "loading", "collections", "audit", "proxy", "planning", "runner", "measure", "testing"):
        assert (site / page / "index.html").is_file(), page
    # the README's figures are in the site
    for figure in ("turns_vs_depth", "forest_partial_correlations", "quadrants"):
        assert (site / "img" / f"{figure}.png").is_file(), figure


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


@pytest.mark.parametrize("page", sorted(API_PAGES))
def test_api_page_lists_every_public_name(site: Path, page: str):
    module = API_PAGES[page]
    html = (site / "api" / page / "index.html").read_text(encoding="utf-8")
    anchors = set(re.findall(r'id="([\w.]+)"', html))
    names = _public_names(module)
    assert names, f"{module} exports nothing the test can check"
    missing = [name for name in names if f"{module}.{name}" not in anchors]
    assert missing == [], f"docs/api/{page}.md does not render {module}'s {missing}"
    # a docstring filled in at import time shows its fragments, not the placeholder
    assert not re.search(r"<p>\{\w+\}</p>", html)
