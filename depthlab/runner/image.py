"""A task's image: its prebuilt ``docker_image`` (pulled when absent), else ``environment/`` built and cached.

Harbor's order: when task.toml names a ``docker_image`` it is used (a local copy first, else
pulled when the build network is allowed), even beside a Dockerfile; ``force_build=True``
(``--force-build``) builds the Dockerfile instead. A Dockerfile is built with BuildKit's
semantics where the engine offers them (multi-stage builds included), cached by the checksum of
``environment/``. Builds and pulls have a network unless the caller says ``network=False``
(the ``strict`` profile does, unless task.toml says ``allow_internet = true``): a Dockerfile that
downloads packages then fails with a message saying so. Docker's build API sets no capability or
storage limit on build steps; the Dockerfile is the task author's, not the agent's.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from depthlab.io.tasks import dirhash_sha256
from depthlab.runner.errors import EnvironmentBuildError
from depthlab.runner.task import TaskSpec

#: Label put on every image and container the runner creates, so leftovers can be found.
RUNNER_LABEL = "depthlab.runner"

_BUILD_LOCKS: dict[str, threading.Lock] = {}
_BUILD_LOCKS_GUARD = threading.Lock()


def image_tag(task: TaskSpec) -> str:
    """The tag of the task's image: task name plus the checksum of ``environment/``.

    Only ``environment/`` goes into the build context, so the checksum of that folder (not of
    the whole task, whose tests and solution never enter the image) decides when to rebuild.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from depthlab.runner.task import load_task
    >>> root = pathlib.Path(tempfile.mkdtemp()) / "hello"
    >>> (root / "environment").mkdir(parents=True)
    >>> _ = (root / "environment" / "Dockerfile").write_text("FROM scratch\\n")
    >>> _ = (root / "instruction.md").write_text("Say hi.")
    >>> _ = (root / "task.toml").write_text("")
    >>> image_tag(load_task(root)).startswith("depthlab-task/hello:")
    True
    """
    slug = re.sub(r"[^a-z0-9_.-]+", "-", task.name.lower()).strip("-.") or "task"
    return f"depthlab-task/{slug[:100]}:{dirhash_sha256(task.environment_dir)[:20]}"


def ensure_image(client: Any, task: TaskSpec, *, force_build: bool = False, network: bool = True) -> str:
    """Return a local image for ``task``: its prebuilt ``docker_image``, or a build of ``environment/``.

    Parameters
    ----------
    client : docker.DockerClient
    task : TaskSpec
    force_build : bool, default False
        Build ``environment/Dockerfile`` even when a prebuilt image is named or a cached build exists.
    network : bool, default True
        Whether the build (and a pull) gets a network.

    Returns
    -------
    str
        The image reference to start containers from.

    Raises
    ------
    EnvironmentBuildError
        When the build fails (the message ends with the last lines of the build log), or when
        the prebuilt image is absent, cannot be pulled, and there is no Dockerfile to build.

    Examples
    --------
    >>> import docker  # doctest: +SKIP
    >>> from depthlab.runner import load_task
    >>> ensure_image(docker.from_env(), load_task("tasks/hello"))  # doctest: +SKIP
    'depthlab-task/hello:1f0c...'
    """
    import docker.errors

    dockerfile = task.environment_dir / "Dockerfile"
    pull_problem = ""
    if task.docker_image and not (force_build and dockerfile.is_file()):
        reference = str(task.docker_image)
        with _lock_for(reference):
            try:
                client.images.get(reference)
                return reference
            except docker.errors.ImageNotFound:
                pass
            if network:
                try:
                    client.images.pull(reference)
                    return reference
                except docker.errors.APIError as error:
                    pull_problem = f"pulling it failed: {error}"
            else:
                pull_problem = "the build network is off, so it was not pulled"
        if not dockerfile.is_file():
            raise EnvironmentBuildError(
                f"The task {task.name!r} has no environment/Dockerfile and its docker_image {reference!r} "
                f"is not present locally; {pull_problem}"
            )
    tag = image_tag(task)
    with _lock_for(tag):  # two trials of one task must not build the same image twice
        if not force_build:
            try:
                client.images.get(tag)
                return tag
            except docker.errors.ImageNotFound:
                pass
        try:
            client.images.build(
                path=str(task.environment_dir),
                tag=tag,
                rm=True,
                forcerm=True,
                labels={RUNNER_LABEL: "1", "depthlab.task": task.name},
                timeout=int(task.build_timeout_sec),
                network_mode="default" if network else "none",
            )
        except docker.errors.BuildError as error:
            tail = "".join(str(line.get("stream") or line.get("error") or "") for line in list(error.build_log)[-8:])
            hint = "" if network else "\n(the build had no network: the 'strict' profile; see --build-network)"
            note = f"\n(the prebuilt image {task.docker_image!r} was not used: {pull_problem})" if pull_problem else ""
            raise EnvironmentBuildError(
                f"Building the image of {task.name!r} failed: {error.msg}\n{tail}{hint}{note}"
            ) from None
        except docker.errors.APIError as error:
            raise EnvironmentBuildError(f"Building the image of {task.name!r} failed: {error}") from None
    return tag


def _lock_for(tag: str) -> threading.Lock:
    with _BUILD_LOCKS_GUARD:
        return _BUILD_LOCKS.setdefault(tag, threading.Lock())
