"""Where a task's tests run: in the agent's container (``shared``) or in a container of their own (``separate``).

Harbor 0.26's rule (``[verifier] environment_mode``, the default of ``harbor tasks init`` being
``separate``): a separate verifier runs in a fresh container of the image built from the tests'
own ``tests/Dockerfile`` (the step's ``tests/`` first, then the task's), else of the task's own
image. The agent's container reaches it only through its artifacts: every path task.toml lists in
``artifacts``, and ``/logs/artifacts``, copied from the agent's container to the same place in the
verifier's (Harbor re-materialises them there; here they are copied through the Docker daemon,
links leaving the artifact and special files left out, as Harbor's tar ``data`` filter does).
Then the verifier of :mod:`depthlab.runner.verifier` runs there, with every check it makes in a
shared container. The same artifacts are saved in the trial folder as Harbor lays them out
(:func:`save_artifacts`: ``artifacts/<path without its leading slash>`` and ``artifacts/manifest.json``),
so a regrade (:func:`verify_apart` seeded by :func:`restore_artifacts`) grades them again in a fresh
verifier container, with no agent.
"""

from __future__ import annotations

import contextlib
import io
import json
import posixpath
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from depthlab.runner.container import TOTAL_LIMIT_BYTES, ContainerLimits, TaskContainer
from depthlab.runner.image import ensure_image
from depthlab.runner.task import TaskSpec
from depthlab.runner.verifier import verify

#: The artifacts folder of Harbor's convention, always copied to a separate verifier.
ARTIFACTS_DIR = "/logs/artifacts"
# a separate verifier container's life beyond its tests' timeout: building aside, starting and copying
_MARGIN_SEC = 300.0


def run_verifier(
    client: Any,
    box: TaskContainer,
    task: TaskSpec,
    verifier_dir: Path,
    *,
    timeout_sec: float,
    limits: ContainerLimits,
    force_build: bool = False,
    name_hint: str = "verifier",
) -> dict[str, float]:
    """Run ``task``'s tests where its ``verifier_mode`` says; return the rewards (see the module docstring).

    Raises what :func:`depthlab.runner.verify` raises, and ``EnvironmentBuildError`` /
    ``EnvironmentStartError`` when the separate verifier's image or container cannot be had.
    """
    if task.verifier_mode != "separate":
        return verify(box, task, verifier_dir, timeout_sec=timeout_sec)

    def seed(apart: TaskContainer) -> None:
        for path in artifact_paths(task):
            copy_path(box, apart, path)

    return verify_apart(
        client, task, verifier_dir, seed, timeout_sec=timeout_sec, limits=limits, force_build=force_build,
        name_hint=name_hint,
    )  # fmt: skip


def verify_apart(
    client: Any,
    task: TaskSpec,
    verifier_dir: Path,
    seed: Callable[[TaskContainer], None],
    *,
    timeout_sec: float,
    limits: ContainerLimits,
    force_build: bool = False,
    name_hint: str = "verifier",
) -> dict[str, float]:
    """Run ``task``'s tests in a fresh container of its verifier's image, after ``seed`` put the artifacts there."""
    image_task = task.verifier_image_task()
    image = ensure_image(client, image_task or task, force_build=force_build, network=limits.build_network)
    apart = TaskContainer(
        client, image, limits, name_hint=f"{name_hint}-verifier", lifetime_sec=timeout_sec + _MARGIN_SEC
    )
    try:
        apart.start()
        seed(apart)
        return verify(apart, task, verifier_dir, timeout_sec=timeout_sec)
    finally:
        apart.remove()


def artifact_paths(task: TaskSpec) -> tuple[str, ...]:
    """The paths a separate verifier gets from the agent's container: task.toml's ``artifacts``, then
    ``/logs/artifacts``."""
    return (*task.artifacts, ARTIFACTS_DIR)


def save_artifacts(box: TaskContainer, task: TaskSpec, artifacts_dir: Path) -> None:
    """Save ``task``'s artifacts from ``box`` under ``artifacts_dir`` as Harbor does, with its ``manifest.json``.

    Each path lands at ``artifacts_dir/<path without its leading slash>``; the manifest lists each with
    its status (``ok``, or ``failed`` when it is absent or cannot be read).
    """
    entries: list[dict[str, object]] = []
    for path in artifact_paths(task):
        destination = path.strip("/")
        status, kind = "failed", "directory"
        with contextlib.suppress(OSError, ValueError, tarfile.TarError):  # recorded as failed, as Harbor does
            data = _filtered_archive(box, path)
            if data is not None:
                target = artifacts_dir / posixpath.dirname(destination)
                target.mkdir(parents=True, exist_ok=True)
                with tarfile.open(fileobj=io.BytesIO(data)) as archive:
                    members = archive.getmembers()
                    kind = "directory" if members and members[0].isdir() else "file"
                    archive.extractall(target, filter="data")
                status = "ok"
        entries.append(
            {"source": path, "destination": f"artifacts/{destination}", "type": kind, "status": status,
             "service": None, "exclude": []}
        )  # fmt: skip
    artifacts_dir.mkdir(parents=True, exist_ok=True)
    (artifacts_dir / "manifest.json").write_text(json.dumps(entries, indent=2) + "\n", encoding="utf-8")


def restore_artifacts(artifacts_dir: Path, task: TaskSpec, target: TaskContainer) -> None:
    """Put the artifacts :func:`save_artifacts` saved under ``artifacts_dir`` back where ``task`` reads them
    in ``target``."""
    for path in artifact_paths(task):
        saved = artifacts_dir / path.strip("/")
        if not saved.exists():
            continue  # absent in the agent's container too: the verifier judges its absence
        clean = io.BytesIO()
        with tarfile.open(fileobj=clean, mode="w") as archive:
            archive.add(saved, arcname=posixpath.basename(path.rstrip("/")))
        _put(target, path, clean.getvalue())


def copy_path(source: TaskContainer, target: TaskContainer, path: str, *, limit_bytes: int = TOTAL_LIMIT_BYTES) -> bool:
    """Copy the file or folder ``path`` of ``source`` to the same place in ``target``; False when it is absent.

    Entries that are links leaving ``path``, device files or over ``limit_bytes`` in all are left out.
    """
    data = _filtered_archive(source, path, limit_bytes=limit_bytes)
    if data is None:
        return False
    _put(target, path, data)
    return True


def _filtered_archive(source: TaskContainer, path: str, *, limit_bytes: int = TOTAL_LIMIT_BYTES) -> bytes | None:
    """The tar of ``path`` in ``source``, filtered as :func:`copy_path` says; None when it is absent."""
    import docker.errors

    try:
        stream, _ = source.container.get_archive(path, chunk_size=1 << 16)
    except docker.errors.NotFound:
        return None
    data = bytearray()
    for chunk in stream:
        data += chunk
        if len(data) > limit_bytes:
            raise OSError(f"The artifact {path!r} is larger than {limit_bytes} bytes")
    clean = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(bytes(data))) as archive, tarfile.open(fileobj=clean, mode="w") as out:
        for member in archive:
            with contextlib.suppress(tarfile.FilterError):
                safe = tarfile.data_filter(member, "/artifact")  # ownership cleared: root's in the verifier
                # the data filter leaves a folder's mode unset, which no tar can write: its own, less group/other write
                mode = member.mode & 0o755 if safe.mode is None else safe.mode
                safe = safe.replace(mode=mode, uid=0, gid=0, uname="", gname="", deep=False)
                out.addfile(safe, archive.extractfile(member) if safe.isfile() else None)
    return clean.getvalue()


def _put(target: TaskContainer, path: str, data: bytes) -> None:
    parent = posixpath.dirname(path.rstrip("/")) or "/"
    target.exec(["mkdir", "-p", parent], timeout=60, user="0")
    if not target.container.put_archive(parent, data):
        raise OSError(f"Copying the artifact {path!r} into the verifier's container failed")
