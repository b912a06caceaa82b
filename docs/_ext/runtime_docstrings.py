"""A griffe extension for the API reference: docstrings read as Python and Sphinx readers see them.

griffe reads the package's source without importing it, and mkdocstrings renders docstrings as
Markdown. Three things in depthlab's docstrings need help on the way:

* **Fragments filled in at import time.** Shared docstring fragments are substituted into a
  placeholder line (``{data}``, seaborn's approach) by a decorator, so the source shows the
  placeholder. For an object whose source docstring holds a ``{name}`` placeholder (or that has no
  docstring in the source), the object is imported and the docstring Python sees is used. A
  placeholder still there at run time is a warning, so ``mkdocs build --strict`` fails on it.
  Only those objects' modules are imported, so the build stays a few seconds.
* **An export shadowed by its submodule.** ``from pkg.name import name`` in a package's
  ``__init__`` makes ``pkg.name`` the function at run time, but griffe gives the submodule
  precedence; the exported name is pointed at the function, as Python does, so the package's page
  lists it.
* **Sphinx roles.** ``:func:`~depthlab.io.load_trials``` and the like mean nothing to Markdown;
  each becomes the name in code, linked to its entry in the API reference where the reference has
  one (an optional cross-reference: a private module or another library's class stays plain code).
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import griffe

# A placeholder: a name in braces, {data} or {params.data} (a set literal such as {"all"} is not one).
_PLACEHOLDER = re.compile(r"\{[A-Za-z_][\w.]*\}")

# A Sphinx role as depthlab's docstrings write them: :func:`name`, :class:`~depthlab.io.TrialLoad`.
_ROLE = re.compile(r":(?:py:)?(?:func|class|data|mod|meth|attr|exc|obj):`(~?)([\w.]+)(?:\(\))?`")


class RuntimeDocstrings(griffe.Extension):
    """Docstrings as Python sees them, exports as Python resolves them, Sphinx roles as links."""

    # griffe fires on_package once the package is loaded, then on_module, on_class, on_function
    # and on_attribute for every object in it: roles are linked after a docstring is refreshed

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        _unshadow(pkg)

    def on_module(self, *, mod: griffe.Module, **kwargs: Any) -> None:
        _link_roles(mod)

    def on_class(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        _refresh(cls)
        _link_roles(cls)

    def on_function(self, *, func: griffe.Function, **kwargs: Any) -> None:
        _refresh(func)
        _link_roles(func)

    def on_attribute(self, *, attr: griffe.Attribute, **kwargs: Any) -> None:
        _link_roles(attr)


# ------------------------------------------------------------------ fragments filled at import time


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


# ------------------------------------------------------------------ exports shadowed by submodules


def _unshadow(module: griffe.Module) -> None:
    for sub in list(module.modules.values()):
        if sub.is_alias:
            continue
        _unshadow(sub)
        name = sub.name
        if name in (module.exports or ()) and name in sub.members and not sub.members[name].is_module:
            # the submodule leaves the tree, so griffe's load events will not reach its objects
            _finish(sub)
            module.set_member(name, griffe.Alias(name, sub.members[name], parent=module))


def _finish(obj: griffe.Object) -> None:
    # what the load events do to each object, for a subtree they will not reach
    if obj.is_function or obj.is_class:
        _refresh(obj)
    _link_roles(obj)
    for member in obj.members.values():
        if not member.is_alias:
            _finish(member)


# ------------------------------------------------------------------ Sphinx roles


def _link_roles(obj: griffe.Object) -> None:
    if obj.docstring is not None and ":" in obj.docstring.value:
        obj.docstring.value = _ROLE.sub(lambda match: _autoref(obj, match), obj.docstring.value)


def _autoref(obj: griffe.Object, match: re.Match[str]) -> str:
    short, name = match.group(1) == "~", match.group(2)
    title = name.rsplit(".", 1)[-1] if short else name
    identifier = name if "." in name else _resolve(obj, name)
    return f'<autoref identifier="{identifier}" optional><code>{title}</code></autoref>'


def _resolve(obj: griffe.Object, name: str) -> str:
    # a bare name is a neighbour of the documented object: a member of its class, its module, or a
    # package above it; linked by its defining path, which the reference registers for every entry
    scope: griffe.Object | None = obj if obj.is_module or obj.is_class else obj.parent
    while scope is not None:
        member = scope.members.get(name)
        if member is not None:
            try:
                return member.canonical_path
            except griffe.AliasResolutionError:
                return member.path
        scope = scope.parent
    return name
