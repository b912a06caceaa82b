"""A griffe extension for the API reference: docstrings completed at import time are read from the object.

griffe reads docstrings from the source, without importing it. Some docstrings in depthlab are
completed when their module is imported: shared fragments substituted into a placeholder line
(``{data}``, seaborn's approach) by a decorator. Read from the source, those pages would show the
placeholder; this extension imports the object whose source docstring holds a ``{name}`` placeholder
(or has none at all) and takes the docstring Python sees. A placeholder still there at run time is a
warning, so ``mkdocs build --strict`` fails on it. Only those objects' modules are imported, so the
build stays a few seconds.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import griffe

# A placeholder: a name in braces, {data} or {params.data} (a set literal such as {"all"} is not one).
_PLACEHOLDER = re.compile(r"\{[A-Za-z_][\w.]*\}")


class RuntimeDocstrings(griffe.Extension):
    """Replace a function's or class's source docstring by its run-time one where they differ."""

    def on_function(self, *, func: griffe.Function, **kwargs: Any) -> None:
        _refresh(func)

    def on_class(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        _refresh(cls)

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        _unshadow(pkg)


def _unshadow(module: griffe.Module) -> None:
    # ``from pkg.name import name`` in a package's __init__: at run time ``pkg.name`` is the
    # function, but griffe gives the submodule precedence, so the exported function would be missing
    # from the package's page. Point the exported name at the function, as Python does.
    for sub in list(module.modules.values()):
        if sub.is_alias:
            continue
        _unshadow(sub)
        name = sub.name
        if name in (module.exports or ()) and name in sub.members and not sub.members[name].is_module:
            module.set_member(name, griffe.Alias(name, sub.members[name], parent=module))


def _refresh(obj: griffe.Object) -> None:
    if obj.name.startswith("_"):
        return
    source = obj.docstring.value if obj.docstring is not None else None
    if source is not None and not _PLACEHOLDER.search(source):
        return
    runtime = _runtime_docstring(obj)
    if runtime is None:
        return
    _warn_if_unfilled(obj, runtime)
    if obj.docstring is None:
        # parsed like the rest of its module (the handler's docstring_style)
        like = obj.module.docstring
        obj.docstring = griffe.Docstring(
            runtime,
            parent=obj,
            parser=like.parser if like is not None else "numpy",
            parser_options=like.parser_options if like is not None else None,
        )
    elif runtime != source:
        obj.docstring.value = runtime


def _runtime_docstring(obj: griffe.Object) -> str | None:
    module = obj.module.path
    try:
        value: Any = importlib.import_module(module)
    except Exception as error:  # any import failure is a warning (and so a strict-build failure), not a crash
        griffe.logger.warning(f"{obj.path}: cannot import {module} to read its docstring: {error}")
        return None
    for part in obj.path[len(module) + 1 :].split("."):
        value = getattr(value, part, None)
        if value is None:
            return None
    return inspect.getdoc(value)


def _warn_if_unfilled(obj: griffe.Object, text: str) -> None:
    # a placeholder alone on its line is a fragment the decorator did not fill
    for line in text.splitlines():
        if re.fullmatch(r"\s*\{[A-Za-z_][\w.]*\}\s*", line):
            griffe.logger.warning(f"{obj.path}: docstring placeholder {line.strip()} left unfilled")
