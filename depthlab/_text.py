"""Words for counts and messages, written once: ``1 trial``, ``2 trials``, never ``1 trials``; any text as one line;
a task.toml key as every message names it (``[environment].memory_mb``)."""

from __future__ import annotations

__all__ = ["count", "one_line", "toml_key"]


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, the noun in the plural unless ``n`` is one (``plural``, default ``noun + "s"``).

    Examples
    --------
    >>> count(1, "trial"), count(3, "trial"), count(0, "task"), count(1, "model run", "model runs")
    ('1 trial', '3 trials', '0 tasks', '1 model run')
    """
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def one_line(text: object, limit: int | None = 300) -> str:
    """``text`` (any object, as ``str``) on one line, runs of whitespace made one space, cut to ``limit`` characters.

    A cut line ends with an ellipsis; ``limit=None`` never cuts.

    Examples
    --------
    >>> one_line("Traceback:\\n  boom\\n")
    'Traceback: boom'
    >>> one_line("x" * 10, limit=5)
    'xxxx…'
    """
    line = " ".join(str(text).split())
    return line if limit is None or len(line) <= limit else line[: limit - 1] + "…"


def toml_key(path: str, *, table: bool = False) -> str:
    """A task.toml key, given as its dotted path, as every message names it: the key after its table's header.

    A key of a table is ``[table].key`` (task.toml's own ``[environment]`` header, then the key);
    a table itself (``table=True``) is ``[table]``; a top-level key is its name; a key of a step is
    named by the step's place in ``[[steps]]``, ``steps[0].min_reward``; the empty path is the file.

    Examples
    --------
    >>> toml_key("environment.memory_mb"), toml_key("verifier.environment.cpus"), toml_key("metadata", table=True)
    ('[environment].memory_mb', '[verifier.environment].cpus', '[metadata]')
    >>> toml_key("version"), toml_key("steps[1].agent.timeout_sec"), toml_key("")
    ('version', 'steps[1].agent.timeout_sec', 'task.toml')
    """
    if not path:
        return "task.toml"
    if path.startswith("steps["):
        return path
    head, _, key = path.rpartition(".")
    if not head:
        return f"[{key}]" if table else key
    return f"[{head}].{key}"
