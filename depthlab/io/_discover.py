"""Find trials under any mix of paths: Harbor jobs roots, job dirs, trial dirs, TB2
leaderboard trees (submission/job/trial), TB1 run dirs and TB1 leaderboard trees.

Rules (by the files present, never by parsing, so the walk stays cheap):

* a directory with ``result.json`` and a sub-directory that also has one is a Harbor
  **job**: its sub-directories are **trials** (one without ``result.json`` is walked like
  any other directory); the job's own ``result.json`` is read only for an old embedded
  ``trial_results`` list;
* any other directory with ``result.json`` is a Harbor **trial**; the walk does not go
  inside a trial (its ``agent/`` may hold thousands of episode directories);
* ``results.json`` in a directory named like ``<task>.<N>-of-<M>[.<run>]`` is a TB1
  **trial file**; any other ``results.json`` or ``*_results.json`` is a TB1 **run file**
  (it is classified again when parsed, so an oddly named trial is still read once);
* hidden directories (``.git``, ...) are skipped; a symbolic link to a directory is followed
  when it stays inside the paths given, or when its directory is itself run logs (a trial, a job,
  a TB1 run, or a folder holding some at its first level: a link farm of jobs kept elsewhere);
  any other link (to ``/``, to a home folder) is a rejection naming the link and its target, and
  is not walked (``follow_links=True`` follows every link); each
  directory is visited once (so a link loop ends), and a directory that cannot be listed is
  reported as rejected;
* each path argument is walked on its own, so overlapping paths (a job and one of its trials,
  a folder and its parent) reach some trials twice: the loader keeps one and counts the rest
  as duplicates.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from depthlab.io._errors import Rejected
from depthlab.io._files import Dep, changed_ns
from depthlab.io.tb1 import RUN_FILE_SUFFIXES, is_trial_dir_name


@dataclass
class Found:
    """What a walk found; every unit carries the dataset name of the root path it came from."""

    harbor_trials: list[tuple[str, str]] = field(default_factory=list)  # (trial dir candidate, fallback dataset)
    harbor_jobs: list[tuple[str, frozenset[str], str]] = field(default_factory=list)  # (result.json, names, ...)
    tb1_trials: list[tuple[str, str]] = field(default_factory=list)  # (results.json, fallback dataset)
    tb1_runs: list[tuple[str, str]] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    deps: list[Dep] = field(default_factory=list)
    visited: set[tuple[int, int]] = field(default_factory=set)
    inside: tuple[str, ...] | None = None  # real paths links may lead into (None: follow every link)


def discover_stream(roots: list[str], found: Found, follow_links: bool = False) -> Iterator[Found]:
    """Walk ``roots`` (existing files or directories) and classify what they hold into ``found``.

    It yields ``found`` whenever trials were added, so they are parsed as the walk goes on.

    At each yield the caller may take the trials added since the last one (``found.harbor_trials``
    may be emptied; ``found.tb1_trials`` must stay whole, TB1 run files are read knowing them);
    everything else (jobs, run files, rejections, folders remembered) is complete when the stream ends.
    """
    if not follow_links:
        found.inside = tuple(os.path.realpath(root) for root in roots if os.path.isdir(root))
    walked: set[tuple[int, int]] = set()
    for root in roots:
        fallback = _dataset_name(root)
        if os.path.isdir(root):
            found.visited = set()  # links are followed once per path argument
            yield from _walk(root, fallback, found)
            walked |= found.visited
        else:
            _add_file(root, fallback, found)
            yield found
    found.visited = walked


def discover_more(
    folders: list[tuple[str, str]], visited: set[tuple[int, int]], inside: tuple[str, ...] | None
) -> Found:
    """Walk directories that were sent to be parsed as trials but hold no result.json.

    ``visited`` is the first walk's, so links back into it are not followed twice.
    """
    found = Found(visited=visited, inside=inside)
    for folder, fallback in folders:
        info = _stat(folder)
        if info is not None:  # a linked sub-directory was marked visited when its job was listed
            visited.discard((info.st_dev, info.st_ino))
        for _ in _walk(folder, fallback, found):
            pass
    return found


def _dataset_name(root: str) -> str:
    name = os.path.basename(os.path.normpath(os.path.abspath(root)))
    if os.path.isfile(root):
        name = os.path.basename(os.path.dirname(os.path.abspath(root)))
    return name or "unknown"


def _add_file(path: str, fallback: str, found: Found) -> None:
    name = os.path.basename(path)
    folder = os.path.dirname(path) or "."
    if name == "result.json":
        found.harbor_trials.append((folder, fallback))
    elif name == "results.json" and is_trial_dir_name(os.path.basename(folder)):
        found.tb1_trials.append((path, fallback))
    elif name == "results.json" or name.endswith(RUN_FILE_SUFFIXES):
        found.tb1_runs.append((path, fallback))
    else:
        found.rejected.append(Rejected(path, "not a run-log file (expected result.json or results.json)"))


def _walk(root: str, fallback: str, found: Found) -> Iterator[Found]:
    """Walk one folder into ``found``; yields it after each folder that added trials."""
    visited = found.visited
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            info = os.stat(folder)
        except OSError as exc:
            found.rejected.append(Rejected(folder, f"cannot open directory: {exc.strerror or exc}"))
            continue
        if (info.st_dev, info.st_ino) in visited:
            continue  # a second link to a directory already walked, or a link loop
        visited.add((info.st_dev, info.st_ino))
        try:
            files, subdirs = _list(folder)
        except OSError as exc:
            found.rejected.append(Rejected(folder, f"cannot list directory: {exc.strerror or exc}"))
            continue
        if found.inside is not None and any(is_link for _, is_link in subdirs):
            subdirs = [(sub, is_link) for sub, is_link in subdirs if not is_link or _stays_inside(sub, found)]
        found.deps.append((folder, info.st_size, changed_ns(info)))
        if "result.json" in files:
            # lexists: a trial whose result.json is a dangling link is still a trial, to reject
            if not any(os.path.lexists(os.path.join(sub, "result.json")) for sub, _ in subdirs):
                found.harbor_trials.append((folder, fallback))
                yield found
                continue
            # a job: every sub-directory is sent to be parsed as a trial; the few without a
            # result.json come back to be walked (this saves a stat per trial here)
            start = len(os.path.join(folder, ""))  # each sub-directory's name, cut from its path (scandir's join)
            found.harbor_jobs.append(
                (os.path.join(folder, "result.json"), frozenset(sub[start:] for sub, _ in subdirs), fallback)
            )
            for sub, is_link in subdirs:
                if is_link:
                    sub_info = _stat(sub)
                    if sub_info is None or (sub_info.st_dev, sub_info.st_ino) in visited:
                        continue
                    visited.add((sub_info.st_dev, sub_info.st_ino))
                found.harbor_trials.append((sub, fallback))
            yield found
            continue
        if "results.json" in files and is_trial_dir_name(os.path.basename(folder)):
            found.tb1_trials.append((os.path.join(folder, "results.json"), fallback))
            yield found
            continue
        for name in sorted(files):
            if name == "results.json" or name.endswith(RUN_FILE_SUFFIXES):
                found.tb1_runs.append((os.path.join(folder, name), fallback))
        stack.extend(sub for sub, _ in reversed(subdirs))


_RUN_LOG_NAMES = frozenset({"result.json", "results.json"})


def _list(folder: str) -> tuple[set[str], list[tuple[str, bool]]]:
    """File names, and (path, is_symlink) of sub-directories (sorted; hidden ones left out)."""
    files: set[str] = set()
    subdirs: list[tuple[str, bool]] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                if entry.name in _RUN_LOG_NAMES:
                    files.add(entry.name)  # even a directory by that name: reading it gives the reason
                elif entry.is_dir():
                    if not entry.name.startswith("."):
                        subdirs.append((entry.path, entry.is_symlink()))
                else:
                    files.add(entry.name)  # FIFOs and devices too: reading them is refused later, never hung
            except OSError:
                continue  # a broken link or a vanished entry is simply not there
    subdirs.sort()
    return files, subdirs


def _stays_inside(link: str, found: Found) -> bool:
    """True when ``link`` may be followed: its directory is inside a path given, or is itself run logs.

    Else it is a rejection naming the link and its target.
    """
    target = os.path.realpath(link)
    for root in found.inside or ():
        if target == root or target.startswith(root.rstrip(os.sep) + os.sep):
            return True
    if _holds_run_logs(target):  # a link farm of jobs, trials or runs kept elsewhere
        return True
    found.rejected.append(
        Rejected(
            link,
            f"symbolic link to {target} leaves the paths given and holds no run logs: not followed "
            "(follow_links=True follows it)",
        )
    )
    return False


def _holds_run_logs(folder: str) -> bool:
    """True when ``folder`` is a trial, job or TB1 run, or holds some at its first level (a folder of jobs)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    if any(name in _RUN_LOG_NAMES or name.endswith(RUN_FILE_SUFFIXES) for name in names):
        return True
    return any(
        not name.startswith(".") and any(os.path.isfile(os.path.join(folder, name, log)) for log in _RUN_LOG_NAMES)
        for name in names
    )


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None
