"""Harbor's trial lock (``<trial>/lock.json``): the task digest and the extra instructions a trial was given.

Harbor 0.26 writes a ``TrialLock`` (``schema_version`` 2, ``harbor.models.job.lock``) beside each
trial's ``result.json``: ``task.digest`` (``"sha256:<64 hex>"``, the content hash of the task it ran)
and, when the trial was given extra instructions, ``extra_instructions``: one ``{path, digest}``
per instruction (``path`` null for an inline text; the digest is sha256 of its UTF-8 text, of the
file's bytes for a file). The texts themselves are not in the lock, so a stated cap is recognised
by its digest: the digest of depthlab's sentence stating cap ``k``
(:func:`depthlab.io.harbor_writer.stated_cap_instructions`) for ``k`` up to :data:`MAX_STATED_CAP`.

A lock that cannot be read costs only what it would have told (a note on ``task_digest``), never the trial.
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from typing import Final

from depthlab.io._errors import Reject
from depthlab.io._files import Dep, decode_json, read_bytes_if_exists
from depthlab.io._rows import note
from depthlab.io.harbor_models import InstructionLock, TrialLock
from depthlab.io.harbor_writer import stated_cap_instructions

__all__ = ["MAX_STATED_CAP", "InstructionLock", "TrialLock", "lock_stated_cap", "read_lock"]

#: The largest cap recognised from a lock's instruction digests.
MAX_STATED_CAP: Final[int] = 1000


def read_lock(trial_dir: str, deps: list[Dep], notes: list[str]) -> TrialLock | None:
    """The trial's lock.json, None when it has none (or, with a note, when it cannot be read)."""
    path = os.path.join(trial_dir, "lock.json")
    try:
        data = read_bytes_if_exists(path, deps)
        return None if data is None else decode_json(data, path, TrialLock)
    except Reject as exc:
        note(notes, "task_digest", f"lock.json: {exc.reason}")
        return None


def lock_stated_cap(lock: TrialLock | None) -> int | None:
    """The cap the lock's extra instructions state (the smallest, if several do), else None.

    Examples
    --------
    >>> from depthlab.io.harbor_writer import stated_cap_instructions
    >>> text = stated_cap_instructions(5)[0]
    >>> digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    >>> lock_stated_cap(TrialLock(extra_instructions=[InstructionLock(digest=digest)]))
    5
    """
    if lock is None or not lock.extra_instructions:
        return None
    caps = _cap_digests()
    stated = [caps[item.digest] for item in lock.extra_instructions if item.digest in caps]
    return min(stated) if stated else None


@cache
def _cap_digests() -> dict[str, int]:
    return {
        "sha256:" + hashlib.sha256(stated_cap_instructions(cap)[0].encode("utf-8")).hexdigest(): cap
        for cap in range(1, MAX_STATED_CAP + 1)
    }
