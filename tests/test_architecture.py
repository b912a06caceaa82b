"""The layer map (ARCHITECTURE.md), enforced: no import circle, no upward import, no module over 1,000 lines.

Every ``import`` and ``from ... import`` of the package is read with :mod:`ast`, at module level and
inside functions alike (a function-level import runs as surely as a top-level one, only later), plus
``importlib.import_module`` calls whose target is a literal (or an f-string with a literal
``depthlab.x.`` prefix, counted as an import of ``depthlab.x``). Imports under ``if TYPE_CHECKING:``
never run: they are exempt from the circle check (annotations may name each other), but they still
count for the layer rule, so a lower layer does not even name a higher layer's types.

The layer table below is the one place the layers are written in code; ``ARCHITECTURE.md`` must list
every layer's packages on that layer's row (a test checks it). The checker is tested on small
synthetic packages so that a pass on the real package means something.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "depthlab"
MAX_LINES = 1000

#: The layers from the bottom up: a module may import its own layer or a lower one, never a higher one.
#: A module belongs to the longest entry that is its name or a package above it; an entry ``x.__init__``
#: is the package ``x``'s own ``__init__`` only (so a new module is not silently put in the top layer).
LAYERS: dict[int, tuple[str, ...]] = {
    0: (
        "depthlab.schema",
        "depthlab._defaults",
        "depthlab._checks",
        "depthlab._atomic",
        "depthlab.catalog",
        "depthlab.paper",
        "depthlab._tables",
        "depthlab._version",
        "depthlab._docstrings",
        "depthlab._text",
        "depthlab._lockfile",
        "depthlab._guard_shell",
    ),
    1: ("depthlab.io",),
    2: ("depthlab.datasets", "depthlab.measures", "depthlab.stats"),
    3: (
        "depthlab.plots",
        "depthlab.evidence",
        "depthlab.simulate",
        "depthlab.runner",
        "depthlab.engines",
        "depthlab.checks",
        "depthlab.export",
    ),
    4: ("depthlab.auditdata",),
    5: ("depthlab.findings",),
    6: ("depthlab.reproduce", "depthlab.widgets", "depthlab.commands", "depthlab.cli", "depthlab.__init__"),
}


# ------------------------------------------------------------------ the checker ---------------
@dataclass(frozen=True)
class Import:
    """One import: which module imports what, on which line, and whether only under TYPE_CHECKING."""

    source: str
    target: str
    line: int
    type_only: bool


def modules_of(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` (a folder under ``root``) by dotted name; a package is its ``__init__``."""
    found: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _literal_module(call: ast.Call) -> str | None:
    """The module an ``importlib.import_module(...)`` call names, when its text says (or its prefix)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name != "import_module" or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values:
        head = arg.values[0]
        if isinstance(head, ast.Constant) and isinstance(head.value, str) and head.value.endswith("."):
            return head.value.rstrip(".")
    return None


def imports_of(name: str, path: Path, known: set[str], package: str) -> list[Import]:
    """The imports of one module that land inside ``package``, each resolved to a module in ``known``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    here = name if is_package else name.rpartition(".")[0]
    found: list[Import] = []

    def resolve(dotted: str) -> str | None:
        # the longest known module that is ``dotted`` or a package above it
        parts = dotted.split(".")
        while parts:
            candidate = ".".join(parts)
            if candidate in known:
                return candidate
            parts.pop()
        return None

    def add(dotted: str, node: ast.AST, type_only: bool) -> None:
        if dotted == package or dotted.startswith(package + "."):
            target = resolve(dotted)
            if target is not None and target != name:
                found.append(Import(name, target, getattr(node, "lineno", 0), type_only))

    def visit(node: ast.AST, type_only: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, type_only)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node, type_only)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                # ``from depthlab import io`` imports the module depthlab.io; ``from depthlab.io import x``
                # imports depthlab.io (or its submodule x, when x is one)
                submodule = f"{module}.{alias.name}"
                add(submodule if submodule in known else module, node, type_only)
        elif isinstance(node, ast.Call):
            literal = _literal_module(node)
            if literal is not None:
                add(literal, node, type_only)
        for child in ast.iter_child_nodes(node):
            visit(child, type_only)

    visit(tree, False)
    return found


def layer_of(module: str, layers: dict[int, tuple[str, ...]]) -> int | None:
    """The layer of ``module``: that of the longest table entry naming it or a package above it."""
    best: tuple[int, int] | None = None  # (length of the entry, layer)
    for layer, entries in layers.items():
        for entry in entries:
            if entry.endswith(".__init__"):
                matches = module == entry.removesuffix(".__init__")
            else:
                matches = module == entry or module.startswith(entry + ".")
            if matches and (best is None or len(entry) > best[0]):
                best = (len(entry), layer)
    return None if best is None else best[1]


def _circles(edges: dict[str, set[str]]) -> list[str]:
    """Each import circle: a strongly connected component of more than one module (Tarjan), written as
    the shortest closed path from its first module, ``a -> b -> a``, and, when the component is larger
    than that path, every import inside it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    def strongconnect(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                strongconnect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            strongconnect(node)

    paths = []
    for component in sorted(components):
        members = set(component)
        # a shortest path from the component's first module back to itself, inside the component
        start = component[0]
        previous: dict[str, str] = {}
        frontier = [start]
        back: str | None = None
        while frontier and back is None:
            following = []
            for node in frontier:
                for nxt in sorted(edges.get(node, ())):
                    if nxt == start:
                        back = node
                        break
                    if nxt in members and nxt not in previous:
                        previous[nxt] = node
                        following.append(nxt)
                if back is not None:
                    break
            frontier = following
        path = [start]
        node = back
        while node is not None and node != start:
            path.append(node)
            node = previous.get(node)
        cycle = [start, *reversed(path[1:]), start]
        line = " -> ".join(cycle)
        if len(members) > len(cycle) - 1:  # name every import inside a larger circle: each is a joint to cut
            inside = [f"{a} -> {b}" for a in component for b in sorted(edges.get(a, ())) if b in members]
            line += f" (a circle of {len(members)} modules, through the imports {'; '.join(inside)})"
        paths.append(line)
    return paths


@dataclass
class Report:
    """What the checker found, each list of human-readable lines (empty when the rule holds)."""

    circles: list[str]
    upward: list[str]
    long_modules: list[str]
    unmapped: list[str]


def check(root: Path, package: str, layers: dict[int, tuple[str, ...]], max_lines: int = MAX_LINES) -> Report:
    """Check the package under ``root`` against ``layers``."""
    modules = modules_of(root, package)
    known = set(modules)
    imports = [imp for name, path in modules.items() for imp in imports_of(name, path, known, package)]
    runtime: dict[str, set[str]] = {}
    for imp in imports:
        if not imp.type_only:
            runtime.setdefault(imp.source, set()).add(imp.target)
    circles = _circles(runtime)

    unmapped = sorted(name for name in modules if layer_of(name, layers) is None)
    upward = []
    for imp in imports:
        low, high = layer_of(imp.source, layers), layer_of(imp.target, layers)
        if low is not None and high is not None and high > low:
            kind = " (under TYPE_CHECKING)" if imp.type_only else ""
            upward.append(
                f"{imp.source} (layer {low}) imports {imp.target} (layer {high}) at "
                f"{modules[imp.source].relative_to(root)}:{imp.line}{kind}"
            )
    long_modules = []
    for path in modules.values():
        lines = len(path.read_text().splitlines())
        if lines > max_lines:
            long_modules.append(f"{path.relative_to(root)}: {lines} lines (at most {max_lines})")
    return Report(circles, sorted(set(upward)), sorted(long_modules), unmapped)


# ------------------------------------------------------------------ the package ---------------
@pytest.fixture(scope="module")
def report() -> Report:
    return check(ROOT, PACKAGE, LAYERS)


def test_every_module_has_a_layer(report):
    assert report.unmapped == [], "add each new module's package to LAYERS here and to ARCHITECTURE.md"


def test_no_import_circle(report):
    assert report.circles == [], "import circles (function-level imports included):\n" + "\n".join(report.circles)


def test_no_import_runs_up_the_layers(report):
    assert report.upward == [], "imports that run up the layers:\n" + "\n".join(report.upward)


def test_no_module_over_1000_lines(report):
    assert report.long_modules == [], "split these by concern:\n" + "\n".join(report.long_modules)


def test_architecture_md_lists_every_layers_packages():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    for layer, entries in LAYERS.items():
        # the layer map is a table whose rows start "| <layer> |"
        rows = [line for line in text.splitlines() if re.match(rf"^\|\s*{layer}\s*\|", line)]
        assert len(rows) == 1, f"ARCHITECTURE.md needs exactly one layer-map row for layer {layer}"
        named = set(re.findall(r"`(depthlab\.[\w.]+)`", rows[0]))
        assert named == set(entries), f"layer {layer}: ARCHITECTURE.md lists {sorted(named)}, LAYERS {entries}"
    stray = {int(m) for m in re.findall(r"^\|\s*(\d+)\s*\|", text, re.MULTILINE)} - set(LAYERS)
    assert not stray, f"ARCHITECTURE.md has layer rows {sorted(stray)} that LAYERS does not"


# ------------------------------------------------------------------ the checker itself ---------
TOY_LAYERS: dict[int, tuple[str, ...]] = {0: ("toy.base",), 1: ("toy.mid",), 2: ("toy.top", "toy.__init__")}


def _toy(tmp_path: Path, files: dict[str, str]) -> Path:
    """A synthetic package ``toy`` under ``tmp_path``: a clean base/mid/top stack, then ``files`` on top."""
    clean = {
        "toy/__init__.py": "from toy import top\n",
        "toy/base.py": "X = 1\n",
        "toy/mid/__init__.py": "from toy.mid.rows import Y\n",
        "toy/mid/rows.py": "from toy.base import X\n\nY = X + 1\n",
        "toy/mid/other.py": "from . import rows\nfrom .rows import Y\n",
        "toy/top.py": "import importlib\n\nfrom toy import base, mid\n\n"
        "def f():\n    from toy.mid import rows\n    return importlib.import_module('toy.mid.other')\n",
    }
    for rel, text in {**clean, **files}.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def test_checker_passes_a_clean_package(tmp_path):
    root = _toy(tmp_path, {})
    found = check(root, "toy", TOY_LAYERS, max_lines=20)
    assert found == Report([], [], [], [])
    # and it did read the imports it judged, relative, function-level and import_module ones included
    known = set(modules_of(root, "toy"))
    top = {i.target for i in imports_of("toy.top", root / "toy/top.py", known, "toy")}
    assert top == {"toy.base", "toy.mid", "toy.mid.rows", "toy.mid.other"}
    other = {i.target for i in imports_of("toy.mid.other", root / "toy/mid/other.py", known, "toy")}
    assert other == {"toy.mid.rows"}


def test_checker_finds_a_function_level_circle(tmp_path):
    root = _toy(
        tmp_path,
        {
            "toy/base.py": "X = 1\n\ndef g():\n    from toy.mid import rows\n    return rows\n",
            "toy/mid/rows.py": "from toy.base import X\n\nY = X + 1\n",
        },
    )
    found = check(root, "toy", {0: ("toy.base", "toy.mid", "toy.top", "toy.__init__")}, max_lines=20)  # one layer
    assert found.circles == ["toy.base -> toy.mid.rows -> toy.base"]
    assert found.upward == [] == found.long_modules


def test_checker_finds_an_upward_import_and_names_it(tmp_path):
    root = _toy(tmp_path, {"toy/base.py": "def g():\n    import toy.top\n    return toy.top\n"})
    found = check(root, "toy", TOY_LAYERS, max_lines=20)
    assert found.upward == ["toy.base (layer 0) imports toy.top (layer 2) at toy/base.py:2"]
    # toy.top imports toy.base, and toy.mid, whose modules import toy.base: one circle of five modules
    assert found.circles == [
        "toy.base -> toy.top -> toy.base (a circle of 5 modules, through the imports toy.base -> toy.top; "
        "toy.mid -> toy.mid.rows; toy.mid.other -> toy.mid.rows; toy.mid.rows -> toy.base; toy.top -> toy.base; "
        "toy.top -> toy.mid; toy.top -> toy.mid.other; toy.top -> toy.mid.rows)"
    ]


def test_type_checking_imports_are_exempt_from_circles_not_from_layers(tmp_path):
    body = "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from toy.top import f\nX = 1\n"
    found = check(_toy(tmp_path, {"toy/base.py": body}), "toy", TOY_LAYERS, max_lines=20)
    assert found.circles == []
    assert found.upward == ["toy.base (layer 0) imports toy.top (layer 2) at toy/base.py:4 (under TYPE_CHECKING)"]


def test_checker_finds_a_long_module_and_an_unmapped_one(tmp_path):
    root = _toy(tmp_path, {"toy/mid/rows.py": "Y = 1\n" * 21})
    root.joinpath("toy/extra.py").write_text("Z = 3\n")  # in no layer: toy.__init__ covers toy alone
    found = check(root, "toy", TOY_LAYERS, max_lines=20)
    assert found.long_modules == ["toy/mid/rows.py: 21 lines (at most 20)"]
    assert found.unmapped == ["toy.extra"]
