"""`depthlab fetch` end to end against local sources: a bare git repository and a loopback HTTP hub."""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

import depthlab as dl
from depthlab.cli import main
from depthlab.datasets.fetch import MANIFEST, SOURCES, FetchError, fetch, sources
from depthlab.io import load_trials

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
}


def _git(cwd: Path, *args: str) -> str:
    import os

    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, env={**os.environ, **GIT_ENV}
    )
    return done.stdout.strip()


def _bare_repo(tmp_path: Path, files: dict[str, str]) -> tuple[str, str]:
    """Commit ``files`` twice (the second commit changes one file) and return (file:// URL, first commit)."""
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q")
    for rel, text in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "first")
    first = _git(work, "rev-parse", "HEAD")
    first_file = next(iter(files))
    (work / first_file).write_text("changed after the pinned commit\n")
    _git(work, "commit", "-q", "-am", "second")
    bare = tmp_path / "remote.git"
    _git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    _git(bare, "config", "uploadpack.allowFilter", "true")
    _git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
    return bare.as_uri(), first


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_sources_list_every_public_source():
    table = sources()
    assert set(table["name"]) == set(SOURCES)
    tb2 = table.filter(name="tb2-tasks").row(0, named=True)
    assert tb2["revision"] == "69671fbaac6d67a7ef0dfec016cc38a64ef7a77c"
    assert "laude-institute/terminal-bench-2" in tb2["location"]
    assert set(table.filter(kind="hf")["location"]) >= {
        "harborframework/terminal-bench-2-leaderboard",
        "allenai/TMax-15K",
        "FACET-Terminal/FACET-Terminal-Tasks-6k",
    }


def test_git_source_checks_out_the_pinned_commit_and_resumes(tmp_path):
    files = {"hello/task.toml": 'version = "1.0"\n', "hello/instruction.md": "Say hello.\n"}
    url, first = _bare_repo(tmp_path, files)
    dest = tmp_path / "tasks"
    out = fetch("tb2-tasks", dest, url=url, revision=first, progress=False)
    assert out == dest
    assert _git(dest, "rev-parse", "HEAD") == first
    # the pinned commit's content, not the branch tip's
    assert (dest / "hello/task.toml").read_text() == files["hello/task.toml"]
    # a rerun over a complete checkout keeps it; a damaged file is restored
    (dest / "hello/instruction.md").write_text("edited")
    fetch("tb2-tasks", dest, url=url, revision=first, progress=False)
    assert (dest / "hello/instruction.md").read_text() == files["hello/instruction.md"]


def test_fetched_tasks_load_as_the_tb2_collection(tmp_path):
    toml = 'version = "1.0"\n\n[metadata]\ndifficulty = "hard"\ncategory = "games"\n'
    url, first = _bare_repo(
        tmp_path, {"README.md": "TB2\n", "chess/task.toml": toml, "chess/solution/solve.sh": "#!/bin/bash\nplay\n"}
    )
    fetch("tb2-tasks", tmp_path / "tb2" / "tasks", url=url, revision=first, progress=False)
    audit = dl.load_dataset("tb2", tmp_path / "tb2")
    row = audit.tasks.row(0, named=True)
    assert (row["task"], row["work"], row["difficulty_source"]) == ("chess", 1, "human")
    assert audit.tasks.height == 1


def test_default_destinations_are_laid_out_for_load_dataset(tmp_path, monkeypatch):
    url, first = _bare_repo(tmp_path, {"t1/task.toml": 'version = "1.0"\n[metadata]\ndifficulty = "easy"\n'})
    monkeypatch.chdir(tmp_path)
    dest = fetch("tb2-tasks", url=url, revision=first, progress=False)
    assert dest == Path("data/public/tb2/tasks")
    assert dl.load_dataset("tb2", "data/public/tb2").tasks["task"].to_list() == ["t1"]


def test_git_source_resumes_an_interrupted_clone(tmp_path):
    url, first = _bare_repo(tmp_path, {"a/task.toml": "x = 1\n"})
    dest = tmp_path / "partial"
    dest.mkdir()
    _git(dest, "init", "-q")  # what an interrupted first run leaves behind
    fetch("tb2-tasks", dest, url=url, revision=first, progress=False)
    assert (dest / "a/task.toml").read_text() == "x = 1\n"


def test_sparse_git_source_takes_only_its_paths(tmp_path):
    url, first = _bare_repo(
        tmp_path,
        {
            "evaluation_assets/daytona/m/terminal-bench-2-0/config.json": "{}",
            "rl_data/big.py": "print('not wanted')\n",
        },
    )
    dest = fetch("tmax-jobs", tmp_path / "jobs", url=url, revision=first, progress=False)
    assert (dest / "evaluation_assets/daytona/m/terminal-bench-2-0/config.json").is_file()
    assert not (dest / "rl_data").exists()


def test_git_url_comes_from_the_environment(tmp_path, monkeypatch):
    url, first = _bare_repo(tmp_path, {"t/task.toml": "y = 2\n"})
    monkeypatch.setenv(SOURCES["tb2-tasks"].env, url)
    dest = fetch("tb2-tasks", tmp_path / "env", revision=first, progress=False)
    assert (dest / "t/task.toml").is_file()


class _Hub:
    """A loopback imitation of the Hugging Face endpoints fetch uses: revision info, tree, resolve."""

    commit = "c" * 40

    def __init__(self, repo: str, files: dict[str, bytes], lfs: set[str], corrupt: set[str] = frozenset()):
        self.repo, self.files, self.lfs, self.corrupt = repo, files, lfs, set(corrupt)
        self.ranges: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                path = unquote(urlsplit(self.path).path)
                if path.startswith(f"/api/datasets/{hub.repo}/revision/"):
                    self._json({"id": hub.repo, "sha": hub.commit, "siblings": []})
                elif path == f"/api/datasets/{hub.repo}/tree/{hub.commit}":
                    self._json([hub.entry(p) for p in hub.files])
                elif path.startswith(f"/datasets/{hub.repo}/resolve/{hub.commit}/"):
                    self._file(path.split(f"/resolve/{hub.commit}/", 1)[1])
                else:
                    self.send_error(404)

            def _json(self, value):
                body = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _file(self, rel):
                body = hub.files[rel]
                if rel in hub.corrupt:
                    body = body[::-1]
                start = 0
                if self.headers.get("Range"):
                    hub.ranges.append(f"{rel}:{self.headers['Range']}")
                    start = int(self.headers["Range"].removeprefix("bytes=").rstrip("-"))
                    self.send_response(206)
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body) - start))
                self.end_headers()
                self.wfile.write(body[start:])

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def entry(self, rel: str) -> dict:
        body = self.files[rel]
        blob = hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()
        entry = {"type": "file", "oid": blob, "size": len(body), "path": rel}
        if rel in self.lfs:
            entry["lfs"] = {"oid": hashlib.sha256(body).hexdigest(), "size": len(body), "pointerSize": 130}
        return entry

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hub_files():
    return {
        "metadata/tasks.parquet": bytes(range(256)) * 40,
        "README.md": b"# tasks\n",
        "data/tasks-000.tar": b"t" * 5000,
    }


def test_hf_source_downloads_checks_and_resumes(tmp_path, hub_files):
    repo = SOURCES["rst-tasks"].location
    with _Hub(repo, hub_files, lfs={"metadata/tasks.parquet", "data/tasks-000.tar"}) as hub:
        dest = tmp_path / "rst"
        # an interrupted earlier run left half of one file
        part = dest / "data/tasks-000.tar.part"
        part.parent.mkdir(parents=True)
        part.write_bytes(hub_files["data/tasks-000.tar"][:2000])
        fetch("rst-tasks", dest, url=hub.url, progress=False)
        for rel, body in hub_files.items():
            assert (dest / rel).read_bytes() == body
        assert hub.ranges == ["data/tasks-000.tar:bytes=2000-"]
        manifest = json.loads((dest / MANIFEST).read_text())
        assert manifest["commit"] == hub.commit
        assert manifest["complete"] is True
        # a second run finds every file complete and downloads nothing
        (dest / "README.md").touch()
        hub.ranges.clear()
        fetch("rst-tasks", dest, url=hub.url, progress=False)
        assert hub.ranges == []


def test_hf_include_takes_only_matching_paths(tmp_path, hub_files):
    repo = SOURCES["tb2-leaderboard"].location
    with _Hub(repo, hub_files, lfs=set()) as hub:
        dest = fetch("tb2-leaderboard", tmp_path / "lb", url=hub.url, include=["metadata/*"], progress=False)
    assert (dest / "metadata/tasks.parquet").is_file()
    assert not (dest / "README.md").exists()


def _leaderboard_files(samples: Path, n_submissions: int = 2) -> dict[str, bytes]:
    """A leaderboard-shaped repository from the real TMax job: submission/job/trial, with trajectories and rewards."""
    job = samples / "hamishivi_tmax/evaluation_assets/daytona/tmax-27b/terminal-bench-2-0"
    files = {"README.md": b"# leaderboard\n"}
    for index in range(n_submissions):
        prefix = f"submissions/terminal-bench/2.0/agent-{index}__model/job-{index}"
        for path in sorted(job.rglob("*")):
            if path.is_file() and path.name != "lock.json":
                body = path.read_bytes()
                if path.name == "result.json" and index:  # another submission's run: its own trial ids
                    body = body.replace(b'"id": "', f'"id": "submission-{index}-'.encode(), 1)
                files[f"{prefix}/{path.relative_to(job)}"] = body
    return files


def test_results_only_takes_result_and_config_files_resumes_and_loads(tmp_path, samples, capsys):
    files = _leaderboard_files(samples)
    repo = SOURCES["tb2-leaderboard"].location
    lfs = {rel for rel in files if rel.endswith("trajectory.json")}
    wanted = sorted(rel for rel in files if rel.rsplit("/", 1)[-1] in {"result.json", "config.json"})
    assert len(wanted) == 2 * (2 + 2 * 3)  # per submission: the job's two files, each trial's two
    with _Hub(repo, files, lfs=lfs) as hub:
        dest = tmp_path / "lb"
        first = wanted[3]
        part = dest / f"{first}.part"
        part.parent.mkdir(parents=True)
        part.write_bytes(files[first][:100])  # an interrupted run left part of one file
        command = ["fetch", "tb2-leaderboard", "--dest", str(dest), "--url", hub.url, "--results-only", "--quiet"]
        assert main(command) == 0
        assert hub.ranges == [f"{first}:bytes=100-"]
        got = sorted(str(path.relative_to(dest)) for path in dest.rglob("*") if path.is_file())
        got.remove(MANIFEST)
        assert got == wanted
        for rel in wanted:
            assert (dest / rel).read_bytes() == files[rel]
        manifest = json.loads((dest / MANIFEST).read_text())
        assert manifest["results_only"] is True
        assert manifest["complete"] is True
        hub.ranges.clear()
        fetch("tb2-leaderboard", dest, url=hub.url, results_only=True, progress=False)  # complete: nothing again
        assert hub.ranges == []
        kept = (dest / wanted[0]).read_bytes()
        hub.corrupt.add(wanted[0])
        (dest / wanted[0]).unlink()
        with pytest.raises(FetchError, match="checksum mismatch"):
            fetch("tb2-leaderboard", dest, url=hub.url, results_only=True, progress=False)
    assert not (dest / wanted[0]).exists()
    (dest / wanted[0]).write_bytes(kept)
    trials = load_trials(dest, cache=False)
    assert trials.height == 2 * 3
    assert trials["reward"].null_count() == 0  # the rewards are in result.json: no trajectory needed


def test_results_only_is_for_run_logs():
    with pytest.raises(ValueError, match="'results_only' parameter of fetch applies to run-log sources"):
        fetch("rst-tasks", results_only=True)


def test_hf_checksum_mismatch_fails_and_keeps_nothing_corrupt(tmp_path, hub_files):
    repo = SOURCES["facet-tasks"].location
    hub = _Hub(repo, hub_files, lfs={"metadata/tasks.parquet"}, corrupt={"metadata/tasks.parquet"})
    with hub, pytest.raises(FetchError, match="checksum mismatch"):
        fetch("facet-tasks", tmp_path / "f", url=hub.url, progress=False)
    assert not (tmp_path / "f/metadata/tasks.parquet").exists()
    assert not (tmp_path / "f/metadata/tasks.parquet.part").exists()


@pytest.mark.parametrize("name", ["tb2-tasks", "tmax-jobs", "tw-tasks"])
def test_offline_fails_with_one_line_naming_the_url(tmp_path, capsys, name):
    url = f"http://127.0.0.1:{_closed_port()}" + ("/repo.git" if SOURCES[name].kind == "git" else "")
    code = main(["fetch", name, "--dest", str(tmp_path / "d"), "--url", url, "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 1
    assert len(err.splitlines()) == 1
    assert err.startswith(f"depthlab fetch: cannot fetch {url}")


def test_cli_fetches_from_a_local_repository(tmp_path, capsys):
    url, first = _bare_repo(tmp_path, {"hello/task.toml": "z = 3\n"})
    code = main(["fetch", "tb2-tasks", "--dest", str(tmp_path / "cli"), "--url", url, "--revision", first, "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "cli/hello/task.toml").read_text() == "z = 3\n"


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="'name' parameter of fetch"):
        fetch("nope")
    with pytest.raises(ValueError, match="'revision' parameter of fetch"):
        fetch("tb2-tasks", revision="main")
    with pytest.raises(ValueError, match="'include' parameter of fetch applies to Hugging Face"):
        fetch("tb2-tasks", include=["*"])
