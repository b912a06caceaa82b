"""The Agent Skills a task offers (``[environment].skills_dir``), told to the agent as Harbor's terminus-2 tells them.

Harbor 0.26 gives the agent the task's ``skills_dir``, a folder in the container; terminus-2 then
looks there, when the agent's run starts, for ``<skills_dir>/<skill>/SKILL.md`` files, reads each
one's YAML front matter (``name`` and ``description``; a file without both is left out) and appends
to the instruction an ``<available_skills>`` block naming each skill, its description and its
file's path, which the model reads with the shell to use the skill. Nothing is copied: the
folder is the image's (or the task's setup's). :func:`skills_section` builds that block the same
way in the runner's container, so a task with skills gives the model the same first message on
both engines.
"""

from __future__ import annotations

import re
import shlex
from typing import Any
from xml.etree.ElementTree import Element, SubElement, indent, tostring

import yaml

from depthlab.runner.container import TaskContainer

__all__ = ["skill_entry", "skills_section"]

# a SKILL.md's front matter: the YAML between a first line "---" and the next "---"
_FRONT_MATTER = re.compile(r"\A---\n(?P<yaml>.*?)\n---", re.DOTALL)
# the finding and reading are bounded like any command of the agent's setup
_EXEC_TIMEOUT_SEC = 10.0


def skill_entry(text: str) -> tuple[Any, Any] | None:
    """A SKILL.md's (name, description) from its front matter, or None when it has not both.

    Examples
    --------
    >>> skill_entry("---\\nname: csv\\ndescription: Read CSV files.\\n---\\nBody.")
    ('csv', 'Read CSV files.')
    >>> skill_entry("no front matter") is None, skill_entry("---\\nname: x\\n---\\n") is None
    (True, True)
    """
    match = _FRONT_MATTER.match(text)
    if match is None:
        return None
    try:
        fields = yaml.safe_load(match["yaml"])
    except yaml.YAMLError:
        return None
    if not isinstance(fields, dict) or "name" not in fields or "description" not in fields:
        return None
    return fields["name"], fields["description"]


def skills_section(box: TaskContainer, skills_dir: str | None) -> str:
    """The ``<available_skills>`` block appended to the instruction ("" when the task has no skills there)."""
    if not skills_dir:
        return ""
    folder = shlex.quote(skills_dir)
    command = f"[ -d {folder} ] && find {folder} -mindepth 2 -maxdepth 2 -name SKILL.md -type f 2>/dev/null | sort"
    code, found = box.exec(["sh", "-c", command], timeout=_EXEC_TIMEOUT_SEC, user=box.agent_user)
    if code != 0 or not found.strip():
        return ""
    entries = []
    for path in found.decode("utf-8", errors="replace").strip().splitlines():
        code, text = box.exec(["cat", path], timeout=_EXEC_TIMEOUT_SEC, user=box.agent_user)
        entry = skill_entry(text.decode("utf-8", errors="replace")) if code == 0 else None
        if entry is not None:
            entries.append((*entry, path))
    if not entries:
        return ""
    root = Element("available_skills")
    for name, description, location in entries:
        skill = SubElement(root, "skill")
        for tag, value in (("name", name), ("description", description), ("location", location)):
            SubElement(skill, tag).text = str(value)
    indent(root, space="  ")
    return "\n" + tostring(root, encoding="unicode")
