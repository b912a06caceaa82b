"""The guard's shell, read once for both engines: ``engines/harbor_side/depthlab_guard.sh``, by its sections.

The shell is package data beside Harbor's guarded terminus-2 (``harbor_side/depthlab_guard.py``
reads it there: Harbor's venv has no depthlab). depthlab reads the same file here, without
importing :mod:`depthlab.engines`, so that the local runner stops what an earlier step's agent
left (:mod:`depthlab.runner.multistep`) by the very rule the Harbor guard applies, and the Harbor
engine's checks (:mod:`depthlab.engines._harbor_guard`) read what Harbor's side reads. Each section
starts with a line ``#@ <name>``.
"""

from __future__ import annotations

from functools import cache

__all__ = ["GUARD_SCRIPT", "guard_sections", "split_sections"]

#: The guard's shell, package data in ``depthlab/engines/harbor_side/``.
GUARD_SCRIPT = "depthlab_guard.sh"


def split_sections(text: str) -> dict[str, str]:
    """The ``#@ name`` sections of a shell text: name -> its text (as the Harbor side splits them).

    Examples
    --------
    >>> split_sections("# intro\\n#@ a\\necho a\\n#@ b\\necho b\\n")
    {'a': 'echo a\\n', 'b': 'echo b\\n'}
    """
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("#@ "):
            current = found.setdefault(line[3:].strip(), [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines).strip() + "\n" for name, lines in found.items()}


@cache
def guard_sections() -> dict[str, str]:
    """The sections of the package's guard shell (:data:`GUARD_SCRIPT`): name -> text.

    Examples
    --------
    >>> sorted(guard_sections())
    ['chain', 'kill', 'processes', 'restore', 'suspect', 'tests', 'watch']
    """
    from importlib.resources import files

    resource = files("depthlab").joinpath("engines", "harbor_side", GUARD_SCRIPT)
    return split_sections(resource.read_text(encoding="utf-8"))
