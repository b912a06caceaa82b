"""Where a task's tests run: in the agent's container (``shared``) or in a container of their own (``separate``).

Harbor 0.26's rule (``[verifier] environment_mode``, the default of ``harbor tasks init`` being
``separate``): a separate verifier runs in a fresh container of the image built from the tests'
own ``tests/Dockerfile`` (the step's ``tests/`` first, then the task's), else of the task's own
image. The agent's container reaches it only through its artifacts: every path task.toml lists in
``artifacts``, and ``/logs/artifacts``, copied from the agent's container to the same place in the
verifier's (Harbor re-materialises them there; here they are copied through the Docker daemon,
links leaving the artifact and special files left out, as Harbor's tar ``data`` filter does).
Then the verifier of :mod:`depthlab.runner.verifier` runs there, with every check it makes in a
shared container.
"""

from __future__ import annotations

import contextlib
import io
import posixpath
import tarfile
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
    image_task = task.verifier_image_task()
    image = ensure_image(client, image_task or task, force_build=force_build, network=limits.build_network)
    apart = TaskContainer(
        client, image, limits, name_hint=f"{name_hint}-verifier", lifetime_sec=timeout_sec + _MARGIN_SEC
    )
    try:
        apart.start()
        for path in (*task.artifacts, ARTIFACTS_DIR):
            copy_path(box, apart, path)
        return verify(apart, task, verifier_dir, timeout_sec=timeout_sec)
    finally:
        apart.remove()


def copy_path(source: TaskContainer, target: TaskContainer, path: str, *, limit_bytes: int = TOTAL_LIMIT_BYTES) -> bool:
    """Copy the file or folder ``path`` of ``source`` to the same place in ``target``; False when it is absent.

    Entries that are links leaving ``path``, device files or over ``limit_bytes`` in all are left out.
    """
    import docker.errors

    try:
        stream, _ = source.container.get_archive(path, chunk_size=1 << 16)
    except docker.errors.NotFound:
        return False
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
                safe = safe.replace(uid=0, gid=0, uname="", gname="", deep=False)
                out.addfile(safe, archive.extractfile(member) if safe.isfile() else None)
    parent = posixpath.dirname(path.rstrip("/")) or "/"
    target.exec(["mkdir", "-p", parent], timeout=60, user="0")
    if not target.container.put_archive(parent, clean.getvalue()):
        raise OSError(f"Copying the artifact {path!r} into the verifier's container failed")
    return True
