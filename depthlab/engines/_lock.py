"""One measurement per jobs folder: a lock taken before anything runs, naming its holder.

Two ``depthlab measure`` runs on one ``--jobs-dir`` would plan the same cells twice, and the
second one's resume would tear down the first one's live trials (Harbor's ``jobs resume`` and
the leftover cleanup see them as interrupted). The lock is depthlab's one lock file
(:func:`depthlab._lockfile.held`) on ``<jobs_dir>/.depthlab-measure.lock``: released by the kernel
when its holder dies, however it dies, and holding the holder's record, which the refusal quotes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from depthlab._lockfile import LockHeld, LockUnavailable, held

#: The lock file in the jobs folder (a file: ``harbor view`` lists folders as jobs).
LOCK_FILE = ".depthlab-measure.lock"


class JobsFolderInUse(RuntimeError):
    """Another measurement holds the jobs folder (the message names it)."""


@contextlib.contextmanager
def jobs_folder_lock(jobs_dir: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the jobs folder's measurement lock for the body; :class:`JobsFolderInUse` naming the holder when taken.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with jobs_folder_lock(folder):
    ...     with jobs_folder_lock(folder):
    ...         pass
    Traceback (most recent call last):
    ...
    depthlab.engines._lock.JobsFolderInUse: another depthlab measure is using the jobs folder ...
    """
    folder = Path(jobs_dir).absolute()
    lock = contextlib.ExitStack()  # the lock taken here, the body run outside the refusals below
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = lock.enter_context(held(folder / LOCK_FILE))
    except OSError as error:
        raise JobsFolderInUse(f"cannot use the jobs folder {str(folder)!r}: {error.strerror or error}") from None
    except LockUnavailable as error:
        raise JobsFolderInUse(f"cannot use the jobs folder {str(folder)!r}: {error}") from None
    except LockHeld as holder:
        raise JobsFolderInUse(
            f"another depthlab measure is using the jobs folder {str(folder)!r} ({holder}); wait for it to end, "
            "or give this one another --jobs-dir"
        ) from None
    with lock:
        yield path
