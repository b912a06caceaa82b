"""The verifier's integrity: ``/tests`` and the verifier's folder checked unchanged after the tests ran.

The agent's background processes still run while the tests do (a task may ask it to leave a
server running), and under the ``harbor`` profile the agent is a root with Docker's default
capabilities. So the runner checks, after the tests ran, that nothing but the verifier touched
what decides the grade:

* **the content of /tests**, read through the Docker daemon (not through a program in the
  container, which the agent may have replaced) and compared, file by file, with the task's
  ``tests/`` on the host: no file changed, added, removed or turned into a link;
* **the identity of /tests and of every file in it** (inode and change time, which no process
  can set back), taken by ``stat`` in the container right after the copy and again after the
  tests: a file rewritten and restored, or a folder swapped, shows;
* **the verifier's folder**: ``/logs`` and ``/logs/verifier`` are the folders the runner made
  (same inode, not links), and ``/logs/verifier`` is still owned by the verifier's user (read
  through the daemon);
* **no writer after the tests**: the reward files are read twice, a moment apart, through the
  daemon: a reward file that changes after the tests ended has another writer.

Any difference is :class:`~depthlab.runner.errors.VerifierTamperedError`, an *invalid* trial
whose message names what changed. Python's bytecode caches of the tests go to a private folder
(``PYTHONPYCACHEPREFIX``); the only entries a test run may add to ``/tests`` are pytest's cache
(``.pytest_cache``, kept in pytest's root folder) and ``__pycache__`` folders, which are not read
as tests.
"""

from __future__ import annotations

import hashlib
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from depthlab.runner.container import ChunkReader, forget_headers, layered

#: What the stat snapshot prints per path: inode, change time (ns), size, type, owner, name.
_STAT_FORMAT = "%i|%z|%s|%F|%u|%g|%n"


@dataclass(frozen=True)
class Snapshot:
    """The identity of the verifier's paths at one moment (``stat`` in the container)."""

    entries: dict[str, tuple[str, ...]] = field(default_factory=dict)  # path -> (inode, ctime, size, type, uid, gid)
    problem: str = ""  # why no snapshot could be taken ('' when it was)


def snapshot_command(nonce: str) -> list[str]:
    """The exec command that prints the identity of /logs, /logs/verifier, /tests and everything in /tests.

    ``nonce`` brackets the output, so a truncated or foreign output is not taken for a snapshot.
    """
    script = (
        f"echo {nonce}; stat -c '{_STAT_FORMAT}' /logs /logs/verifier /tests; "
        f"find /tests -mindepth 1 -exec stat -c '{_STAT_FORMAT}' {{}} +; echo {nonce}"
    )
    return ["sh", "-c", script]


def parse_snapshot(output: str, nonce: str) -> Snapshot:
    """A :class:`Snapshot` from the output of :func:`snapshot_command`.

    Examples
    --------
    >>> text = "n1\\n12|2026-01-01 00:00:00.5 +0000|4096|directory|0|0|/tests\\nn1\\n"
    >>> parse_snapshot(text, "n1").entries["/tests"][0]
    '12'
    >>> parse_snapshot("garbage", "n1").problem
    'the snapshot printed no bracketed output'
    """
    lines = output.splitlines()
    if nonce not in lines or lines.count(nonce) < 2:
        return Snapshot(problem="the snapshot printed no bracketed output")
    start = lines.index(nonce)
    end = len(lines) - 1 - lines[::-1].index(nonce)
    entries: dict[str, tuple[str, ...]] = {}
    for line in lines[start + 1 : end]:
        parts = line.split("|", 6)
        if len(parts) == 7:
            entries[parts[6]] = tuple(parts[:6])
    return Snapshot(entries=entries)


def compare_snapshots(before: Snapshot, after: Snapshot) -> list[str]:
    """What changed between two snapshots, one line per path ([] when nothing did).

    Examples
    --------
    >>> a = Snapshot({"/tests/test.sh": ("5", "t1", "10", "regular file", "0", "0")})
    >>> b = Snapshot({"/tests/test.sh": ("5", "t2", "10", "regular file", "0", "0")})
    >>> compare_snapshots(a, b)
    ['/tests/test.sh was changed (its change time moved)']
    """
    if before.problem or after.problem:
        return [] if before.problem else [f"the identity check could not run after the tests: {after.problem}"]
    problems = []
    for path, (inode, ctime, _size, kind, uid, gid) in before.entries.items():
        now = after.entries.get(path)
        if now is None:
            problems.append(f"{path} was removed")
        elif now[3] != kind:
            problems.append(f"{path} was replaced by a {now[3]}")
        elif now[0] != inode:
            problems.append(f"{path} was replaced (its inode changed)")
        elif path.startswith("/tests") and kind != "directory" and now[1] != ctime:
            # (a folder's change time moves when an entry is added: the entries are checked themselves)
            problems.append(f"{path} was changed (its change time moved)")
        elif path == "/logs/verifier" and (now[4], now[5]) != (uid, gid):
            problems.append(f"{path} changed owner")
    problems += [
        f"{path} was added" for path in after.entries if path not in before.entries and not _verifiers_own(path)
    ]
    return problems


def _verifiers_own(path: str) -> bool:
    """Whether ``path`` in /tests is what a test run itself writes there: pytest's cache, bytecode caches.

    pytest keeps its cache in its root folder, /tests for TB2's ``pytest /tests/test_outputs.py``;
    neither folder is read as tests.

    Examples
    --------
    >>> _verifiers_own("/tests/.pytest_cache/v/cache/nodeids"), _verifiers_own("/tests/conftest.py")
    (True, False)
    """
    parts = path.split("/")
    return ".pytest_cache" in parts or "__pycache__" in parts


def host_digest(folder: Path | Sequence[Path]) -> dict[str, str]:
    """``relative path -> 'file:<sha256>'`` (or ``'dir'``) of a host folder (the task's tests/).

    Several folders are laid over each other as the verifier copies them
    (:func:`depthlab.runner.container.layered`: a step's tests over the task's shared ones).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (root / "test.sh").write_text("true\\n")
    >>> host_digest(root)["test.sh"][:5]
    'file:'
    """
    digest: dict[str, str] = {}
    for relative, path in layered([folder] if isinstance(folder, Path) else folder).items():
        if not relative:
            continue
        if path.is_symlink():
            digest[relative] = f"link:{path.readlink()}"
        elif path.is_dir():
            digest[relative] = "dir"
        elif path.is_file():
            digest[relative] = "file:" + _sha256_file(path)
    return digest


def archive_digest(stream: Any) -> dict[str, str]:
    """The same digest of a folder read from a Docker archive stream (``get_archive``'s chunks)."""
    digest: dict[str, str] = {}
    reader = ChunkReader(stream)
    try:
        with tarfile.open(fileobj=reader, mode="r|") as archive:
            while (member := archive.next()) is not None:
                forget_headers(archive)
                name = member.name.rstrip("/")
                _, _, relative = name.partition("/")
                if not relative:
                    continue
                if member.issym() or member.islnk():
                    digest[relative] = f"link:{member.linkname}"
                elif member.isdir():
                    digest[relative] = "dir"
                elif member.isfile():
                    handle = archive.extractfile(member)
                    sha = hashlib.sha256()
                    while handle is not None and (chunk := handle.read(1 << 16)):
                        sha.update(chunk)
                    digest[relative] = "file:" + sha.hexdigest()
                else:
                    digest[relative] = f"special:{member.type!r}"
    finally:
        reader.close()
    return digest


def compare_digests(host: dict[str, str], container: dict[str, str]) -> list[str]:
    """How /tests in the container differs from the task's tests/ ([] when it does not).

    Examples
    --------
    >>> compare_digests({"test.sh": "file:aa"}, {"test.sh": "file:bb", "conftest.py": "file:cc"})
    ['/tests/test.sh was rewritten', '/tests/conftest.py was added']
    """
    problems = []
    for name, kind in host.items():
        now = container.get(name)
        if now is None:
            problems.append(f"/tests/{name} was removed")
        elif now != kind:
            problems.append(
                f"/tests/{name} was rewritten" if now.startswith("file:") else f"/tests/{name} became {now}"
            )
    problems += [
        f"/tests/{name} was added" for name in container if name not in host and not _verifiers_own(f"/tests/{name}")
    ]
    return problems


def _sha256_file(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 16):
            sha.update(chunk)
    return sha.hexdigest()
