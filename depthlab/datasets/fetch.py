"""Download the public data sources of the audit (needs network; tests point it at local sources).

Sources (``sources()`` lists them):

``tb2-tasks``
    The 89 Terminal-Bench 2.0 task dirs: git ``laude-institute/terminal-bench-2`` at the commit the
    Harbor registry pins for ``terminal-bench@2.0``. Load with ``load_dataset("tb2", DEST)``.
``tmax-jobs``
    Harbor job dirs of public TB2 runs: ``evaluation_assets/`` of git ``hamishivi/tmax`` (8 models × 89
    tasks × 5 trials), sparse-checked-out at a pinned commit. Load with ``load_trials(DEST)``.
``tb2-leaderboard``, ``tmax-tasks``, ``facet-tasks``, ``seta-tasks``, ``rst-tasks``, ``tw-tasks``
    The Hugging Face datasets named in the collections' reference (listed through ``huggingface_hub``,
    which must be installed: ``pip install 'depthlab[fetch]'``). The leaderboard is about 22 GB: use
    ``results_only`` (``--results-only``: each trial's ``result.json`` and ``config.json``, about 6 KB
    a trial) or ``include`` patterns to take part of it.

Behaviour
---------
Resumable
    git sources fetch into an existing partial checkout; Hugging Face files are downloaded to
    ``<file>.part`` with HTTP range requests, so a rerun continues where the last one stopped, and
    files already complete (size and checksum) are skipped. The Hugging Face revision is resolved to
    a commit once and recorded in ``DEST/.depthlab-fetch.json``, so a resumed download cannot mix revisions.
Checksummed
    git verifies every object and the checkout is checked against the pinned commit; every Hugging Face
    file is checked against the hub's checksum (SHA-256 for LFS files, the git blob SHA-1 otherwise).
Overridable URLs
    ``url=`` (``--url``), or the environment: ``DEPTHLAB_TB2_TASKS_URL``, ``DEPTHLAB_TMAX_JOBS_URL`` for the
    git sources, ``DEPTHLAB_HF_ENDPOINT`` (else ``HF_ENDPOINT``) for the Hugging Face ones.
Offline
    :class:`FetchError` with one line naming the URL that could not be reached.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import os
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import quote

import msgspec
import polars as pl

from depthlab import _atomic
from depthlab._checks import check_bool, check_choice, check_string
from depthlab._text import one_line

if TYPE_CHECKING:  # pragma: no cover
    from huggingface_hub import HfApi

__all__ = ["RESULTS_ONLY", "SOURCES", "FetchError", "Source", "fetch", "sources"]

MANIFEST = ".depthlab-fetch.json"
#: Where downloads go by default (ignored by git).
DATA_DIR = Path("data") / "public"
_CHUNK = 1 << 20
#: The repository paths ``results_only`` takes: each trial's and each job's result and config.
RESULTS_ONLY: tuple[str, ...] = ("result.json", "*/result.json", "config.json", "*/config.json")
#: Sources of Harbor run logs, where ``results_only`` applies.
RUN_LOG_SOURCES: tuple[str, ...] = ("tb2-leaderboard",)
# Small files are bound by the round trip, not the bandwidth: this many downloads run at once.
_PARALLEL_DOWNLOADS = 8
_T = TypeVar("_T")


class FetchError(RuntimeError):
    """A source could not be fetched; the message is one line naming the URL and the reason."""


@dataclass(frozen=True)
class Source:
    """One public data source.

    Attributes
    ----------
    name : str
        What ``depthlab fetch NAME`` takes.
    kind : str
        ``"git"`` or ``"hf"`` (a Hugging Face dataset repository).
    location : str
        git URL, or the Hugging Face ``owner/name``.
    revision : str
        Pinned git commit, or the Hugging Face revision (resolved to a commit when fetched).
    paths : tuple of str
        Sub-paths to check out (git sparse checkout); empty for everything.
    env : str
        Environment variable that overrides the URL (git) or endpoint (hf).
    description : str
        One line.
    dest : str
        Default target under :data:`DATA_DIR`, laid out for :func:`depthlab.load_dataset` (TB2 task
        dirs in ``tb2/tasks``, the public TB2 runs in ``tb2/jobs``).
    """

    name: str
    kind: str
    location: str
    revision: str
    paths: tuple[str, ...]
    env: str
    description: str
    dest: str = ""


_HF_ENV = "DEPTHLAB_HF_ENDPOINT"

SOURCES: dict[str, Source] = {
    s.name: s
    for s in (
        Source(
            "tb2-tasks",
            "git",
            "https://github.com/laude-institute/terminal-bench-2.git",
            "69671fbaac6d67a7ef0dfec016cc38a64ef7a77c",
            (),
            "DEPTHLAB_TB2_TASKS_URL",
            "Terminal-Bench 2.0 task dirs at the commit pinned by terminal-bench@2.0",
            "tb2/tasks",
        ),
        Source(
            "tmax-jobs",
            "git",
            "https://github.com/hamishivi/tmax.git",
            "1cce58a2627c39e41ab2d3033ddbb082787da23a",
            ("evaluation_assets",),
            "DEPTHLAB_TMAX_JOBS_URL",
            "Harbor job dirs of public TB2 runs (8 models x 89 tasks x 5) from hamishivi/tmax",
            "tb2/jobs",
        ),
        Source(
            "tb2-leaderboard",
            "hf",
            "harborframework/terminal-bench-2-leaderboard",
            "main",
            (),
            _HF_ENV,
            "TB2 leaderboard submissions: Harbor job dirs of every public entry (about 22 GB; use --include)",
        ),
        Source("tmax-tasks", "hf", "allenai/TMax-15K", "main", (), _HF_ENV, "TMax-15K synthetic tasks"),
        Source(
            "facet-tasks",
            "hf",
            "FACET-Terminal/FACET-Terminal-Tasks-6k",
            "main",
            (),
            _HF_ENV,
            "FACET-Terminal-Tasks-6k synthetic tasks (Harbor)",
        ),
        Source("seta-tasks", "hf", "camel-ai/seta-env", "main", (), _HF_ENV, "SETA seta-env tasks (TB1-style)"),
        Source(
            "rst-tasks",
            "hf",
            "Zhongzhi1228/Recursive-Task-Synthesis",
            "main",
            (),
            _HF_ENV,
            "Recursive Task Synthesis (read as RST): metadata/tasks.parquet and task packages",
        ),
        Source(
            "tw-tasks",
            "hf",
            "terminalworld/TerminalWorld",
            "main",
            (),
            _HF_ENV,
            "TerminalWorld tasks (configs full, verified, sample)",
        ),
    )
}


def sources() -> pl.DataFrame:
    """The fetchable sources: name, kind, location, revision, env (URL override), description, dest (default).

    Examples
    --------
    >>> from depthlab.datasets.fetch import sources
    >>> "tb2-tasks" in sources()["name"].to_list()
    True
    """
    return pl.DataFrame(
        [
            {
                **{k: getattr(s, k) for k in ("name", "kind", "location", "revision", "env", "description")},
                "dest": str(DATA_DIR / (s.dest or s.name)),
            }
            for s in SOURCES.values()
        ]
    )


def fetch(
    name: str,
    dest: str | Path | None = None,
    *,
    url: str | None = None,
    revision: str | None = None,
    include: Sequence[str] = (),
    progress: bool | None = None,
    results_only: bool = False,
) -> Path:
    """Download source ``name`` into ``dest`` (resumable, checksummed) and return ``dest``.

    Parameters
    ----------
    name : str
        One of ``sources()["name"]``.
    dest : str or Path, optional
        Target directory; default ``data/public/<source dest>`` under the current directory
        (``data/public/tb2/tasks`` and ``data/public/tb2/jobs`` for the TB2 tasks and runs, so that
        ``load_dataset("tb2", "data/public/tb2")`` reads both).
    url : str, optional
        Override the git URL or the Hugging Face endpoint (default: the source's environment variable,
        then the public URL).
    revision : str, optional
        Override the pinned git commit (a full 40-hex id) or the Hugging Face revision.
    include : sequence of str
        Hugging Face sources only: glob patterns of the repository paths to take (default all).
    progress : bool, optional
        Show tqdm / git progress; default when stderr is a terminal.
    results_only : bool, default False
        Sources of run logs (``tb2-leaderboard``) only: take the result and config files of every
        submission (:data:`RESULTS_ONLY`, Hugging Face ``allow_patterns`` style) and no
        trajectories, so the trials table loads from a small part of the repository (about
        60 MB per 10,000 trials instead of several GB). Combines with ``include``: a path is
        taken when it matches both.

    Raises
    ------
    FetchError
        One line naming the URL when it cannot be reached, or a checksum mismatch.

    Examples
    --------
    >>> from depthlab.datasets.fetch import fetch
    >>> fetch("tb2-tasks")  # doctest: +SKIP
    PosixPath('data/public/tb2/tasks')
    """
    check_choice(name, "name", "fetch", sorted(SOURCES))
    source = SOURCES[name]
    if revision is not None:
        check_string(revision, "revision", "fetch")
        if source.kind == "git" and not _is_commit(revision):
            raise ValueError(
                f"The 'revision' parameter of fetch must be a full 40-hex commit id for git, got {revision!r}"
            )
        source = dataclasses.replace(source, revision=revision)
    if isinstance(include, str) or not all(isinstance(p, str) for p in include):
        raise ValueError(f"The 'include' parameter of fetch must be a sequence of glob strings, got {include!r}")
    if include and source.kind != "hf":
        raise ValueError(f"The 'include' parameter of fetch applies to Hugging Face sources only, not {name!r}")
    check_bool(results_only, "results_only", "fetch")
    if results_only and name not in RUN_LOG_SOURCES:
        raise ValueError(
            f"The 'results_only' parameter of fetch applies to run-log sources {list(RUN_LOG_SOURCES)}, not {name!r}"
        )
    dest = Path(dest) if dest is not None else DATA_DIR / (source.dest or name)
    if dest.exists() and not dest.is_dir():
        raise ValueError(f"The 'dest' parameter of fetch must be a directory, got the file {str(dest)!r}")
    show = sys.stderr.isatty() if progress is None else bool(progress)
    if source.kind == "git":
        return _fetch_git(source, dest, url or os.environ.get(source.env) or source.location, show)
    endpoint = url or os.environ.get(source.env) or os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    patterns = (tuple(include), RESULTS_ONLY) if results_only else (tuple(include),)
    return _fetch_hf(source, dest, endpoint.rstrip("/"), patterns, show)


# --- git -----------------------------------------------------------------------------------------


def _fetch_git(source: Source, dest: Path, url: str, show: bool) -> Path:
    if shutil.which("git") is None:
        raise FetchError(f"cannot fetch {url}: git is not installed")
    commit = source.revision
    dest.mkdir(parents=True, exist_ok=True)
    if not (dest / ".git").is_dir():
        _git(dest, url, "init", "-q")
    if _head(dest) == commit and not _git_output(dest, "status", "--porcelain", "--untracked-files=no"):
        return dest  # already complete
    remotes = _git_output(dest, "remote").split()
    _git(dest, url, "remote", "set-url" if "origin" in remotes else "add", "origin", url)
    if source.paths:
        _git(dest, url, "sparse-checkout", "set", "--no-cone", *source.paths)
    # a partial clone (blobs fetched at checkout) keeps a sparse checkout small; servers that
    # do not support filters ignore it
    fetch_args = ["fetch", "--depth", "1", "--filter=blob:none", "origin", commit]
    _git(dest, url, *fetch_args, *(["--progress"] if show else ["-q"]), capture=not show)
    _git(dest, url, "-c", "advice.detachedHead=false", "checkout", "-q", "--force", commit)
    head = _head(dest)
    if head != commit:
        raise FetchError(f"fetched {url} but the checkout is at {head}, not the pinned commit {commit}")
    return dest


def _is_commit(text: str) -> bool:
    return len(text) == 40 and all(c in "0123456789abcdef" for c in text)


def _git(dest: Path, url: str, *args: str, capture: bool = True) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run(
        ["git", "-C", str(dest), *args], capture_output=capture, text=True, env=env, stdin=subprocess.DEVNULL
    )
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr or "").splitlines() if line.strip()]
        reason = lines[-1] if lines else f"git {args[0]} exited with {done.returncode}"
        raise FetchError(f"cannot fetch {url}: {reason.removeprefix('fatal: ')}")
    return done.stdout or ""


def _git_output(dest: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(dest), *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return done.stdout.strip() if done.returncode == 0 else ""


def _head(dest: Path) -> str:
    return _git_output(dest, "rev-parse", "--verify", "-q", "HEAD^{commit}")


# --- Hugging Face --------------------------------------------------------------------------------


class _Entry(msgspec.Struct):
    path: str
    size: int
    algorithm: str  # "sha256" (LFS) or "git-sha1" (git blob id)
    digest: str


class _Manifest(msgspec.Struct):
    source: str
    endpoint: str
    repo: str
    revision: str
    commit: str
    include: list[str]
    files: list[_Entry] = []
    results_only: bool = False
    complete: bool = False


def _fetch_hf(source: Source, dest: Path, endpoint: str, patterns: tuple[tuple[str, ...], ...], show: bool) -> Path:
    """``patterns``: groups of globs; a path is taken when it matches one glob of every non-empty group."""
    include, results_only = patterns[0], len(patterns) > 1
    dest.mkdir(parents=True, exist_ok=True)
    manifest = _read_manifest(dest / MANIFEST, source, endpoint, include, results_only)
    if manifest is None:
        commit = _hf_commit(source, endpoint)
        manifest = _Manifest(
            source.name, endpoint, source.location, source.revision, commit, list(include), results_only=results_only
        )
    if not manifest.files:
        manifest.files = _hf_files(source, endpoint, manifest.commit, patterns)
        _write_manifest(dest / MANIFEST, manifest)
    todo = [entry for entry in manifest.files if not _complete(dest / entry.path, entry)]
    from tqdm.auto import tqdm

    total = sum(entry.size for entry in todo)
    with tqdm(total=total, unit="B", unit_scale=True, desc=source.name, disable=not show or not todo) as bar:
        lock = threading.Lock()

        def advance(count: int) -> None:
            with lock:
                bar.update(count)

        def one(entry: _Entry) -> None:
            file_url = f"{endpoint}/datasets/{source.location}/resolve/{manifest.commit}/{quote(entry.path)}"
            _download(file_url, dest / entry.path, entry, advance)

        if len(todo) > 1:
            with ThreadPoolExecutor(max_workers=_PARALLEL_DOWNLOADS) as pool:
                for _ in pool.map(one, todo):  # the first failure is raised here, the others still finish
                    pass
        else:
            for entry in todo:
                one(entry)
    manifest.complete = True
    _write_manifest(dest / MANIFEST, manifest)
    return dest


def _hf_api(endpoint: str) -> HfApi:
    try:
        from huggingface_hub import HfApi
    except ImportError:
        raise FetchError("Hugging Face sources need huggingface_hub: pip install 'depthlab[fetch]'") from None
    return HfApi(endpoint=endpoint)


def _hf_commit(source: Source, endpoint: str) -> str:
    url = f"{endpoint}/api/datasets/{source.location}/revision/{source.revision}"
    info = _hf_call(url, lambda: _hf_api(endpoint).dataset_info(source.location, revision=source.revision))
    if not info.sha:
        raise FetchError(f"cannot fetch {url}: the hub did not say which commit {source.revision!r} is")
    return info.sha


def _hf_files(source: Source, endpoint: str, commit: str, patterns: tuple[tuple[str, ...], ...]) -> list[_Entry]:
    from huggingface_hub.hf_api import RepoFile

    url = f"{endpoint}/api/datasets/{source.location}/tree/{commit}"
    api = _hf_api(endpoint)
    items = _hf_call(
        url, lambda: list(api.list_repo_tree(source.location, repo_type="dataset", revision=commit, recursive=True))
    )
    entries = []
    for item in items:
        if not isinstance(item, RepoFile) or not all(
            any(fnmatch.fnmatch(item.path, p) for p in group) for group in patterns if group
        ):
            continue
        if item.lfs is not None:
            entries.append(_Entry(item.path, item.size, "sha256", item.lfs.sha256))
        else:
            entries.append(_Entry(item.path, item.size, "git-sha1", item.blob_id))
        if ".." in Path(item.path).parts or Path(item.path).is_absolute():
            raise FetchError(f"cannot fetch {url}: the hub listed an unsafe path {item.path!r}")
    if not entries:
        wanted = [list(group) for group in patterns if group]
        raise FetchError(
            f"cannot fetch {url}: no files" + (f" match {' and '.join(map(str, wanted))}" if wanted else "")
        )
    return entries


def _hf_call(url: str, call: Callable[[], _T]) -> _T:
    try:
        return call()
    except FetchError:
        raise
    except Exception as error:  # network and hub errors all become one line naming the URL
        raise FetchError(f"cannot fetch {url}: {_error_line(error)}") from error


def _download(url: str, target: Path, entry: _Entry, advance: Callable[[int], object]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    have = part.stat().st_size if part.is_file() else 0
    if have > entry.size:
        part.unlink()
        have = 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    headers.update(_hf_headers())
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            resumed = have and response.status == 206
            if not resumed:
                have = 0
            advance(have)
            with part.open("ab" if resumed else "wb") as out:
                while chunk := response.read(_CHUNK):
                    out.write(chunk)
                    advance(len(chunk))
    except urllib.error.HTTPError as error:
        if error.code == 416 and have == entry.size:  # the part file was already whole
            pass
        else:
            raise FetchError(f"cannot fetch {url}: HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:
        raise FetchError(f"cannot fetch {url}: {_error_line(getattr(error, 'reason', error))}") from None
    if part.stat().st_size != entry.size or _digest(part, entry.algorithm) != entry.digest:
        part.unlink()  # a corrupt download must not be resumed
        raise FetchError(f"cannot fetch {url}: checksum mismatch ({entry.algorithm} expected {entry.digest})")
    part.replace(target)


def _hf_headers() -> dict[str, str]:
    try:
        from huggingface_hub.utils import build_hf_headers

        return {k: v for k, v in build_hf_headers().items() if k.lower() == "authorization"}
    except Exception:  # no token configured, or no huggingface_hub: anonymous download
        return {}


def _complete(path: Path, entry: _Entry) -> bool:
    return path.is_file() and path.stat().st_size == entry.size and _digest(path, entry.algorithm) == entry.digest


def _digest(path: Path, algorithm: str) -> str:
    if algorithm == "sha256":
        digest = hashlib.sha256()
    else:  # git blob id: sha1 over "blob <size>\0" + content
        digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode(), usedforsecurity=False)
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _read_manifest(
    path: Path, source: Source, endpoint: str, include: tuple[str, ...], results_only: bool
) -> _Manifest | None:
    if not path.is_file():
        return None
    try:
        manifest = msgspec.json.decode(path.read_bytes(), type=_Manifest)
    except msgspec.DecodeError:
        return None  # unreadable: start over from the listing (complete files are still skipped)
    same = (manifest.source, manifest.endpoint, manifest.revision, tuple(manifest.include), manifest.results_only) == (
        source.name,
        endpoint,
        source.revision,
        include,
        results_only,
    )
    return manifest if same else None


def _write_manifest(path: Path, manifest: _Manifest) -> None:
    _atomic.write_bytes(path, msgspec.json.format(msgspec.json.encode(manifest)))


def _error_line(error: object) -> str:
    # an error with no message is named by its type
    return one_line(error, limit=None) or type(error).__name__
