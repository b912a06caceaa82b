"""The task container against a real Docker Engine: lock-down, the persistent shell, clean-up."""

from __future__ import annotations

import time

import pytest

from depthlab.runner import ContainerLimits, TaskContainer, ensure_image, live_container_ids, load_task

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def box(docker_client, tasks_root):
    image = ensure_image(docker_client, load_task(tasks_root / "chain"))
    limits = ContainerLimits(cpus=0.5, memory_mb=128, pids_limit=64, network=False, profile="strict")
    with TaskContainer(docker_client, image, limits, name_hint="shell-test") as container:
        yield container


def test_the_harbor_profile_has_dockers_default_capabilities_and_a_network(docker_client, tasks_root):
    """The default profile runs a task as Harbor does: root keeps Docker's default capabilities, eth0 is there."""
    image = ensure_image(docker_client, load_task(tasks_root / "chain"))
    limits = ContainerLimits(cpus=0.5, memory_mb=128, pids_limit=64)
    assert limits.profile == "harbor"
    with TaskContainer(docker_client, image, limits, name_hint="harbor-profile") as container:
        container.container.reload()
        host = container.container.attrs["HostConfig"]
        assert host["NetworkMode"] == "bridge"
        assert not host["CapDrop"]
        assert "no-new-privileges" in host["SecurityOpt"]
        assert host["PidsLimit"] == 64
        code, output = container.exec(["sh", "-c", "ls /sys/class/net; grep CapEff /proc/self/status"], timeout=30)
    assert code == 0
    assert b"eth0" in output.split()
    assert output.split()[-1] == b"00000000a80425fb"  # Docker's default set (CHOWN, DAC_OVERRIDE, ..., SETFCAP)


def test_container_is_locked_down(box):
    """The strict profile: no network, every capability dropped."""
    box.container.reload()
    host = box.container.attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["Privileged"] is False
    assert host["CapDrop"] == ["ALL"]
    assert not host["CapAdd"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["PidsLimit"] == 64
    assert host["Memory"] == 128 * 1024 * 1024
    assert host["MemorySwap"] == 128 * 1024 * 1024
    assert host["NanoCpus"] == 500_000_000
    assert [name for name in box.container.attrs["Config"]["Env"] if not name.startswith("PATH=")] == []
    # inside: no network interface but loopback, and no capability left
    code, output = box.exec(["sh", "-c", "ls /sys/class/net; grep CapEff /proc/self/status"], timeout=30)
    assert code == 0
    assert output.split()[0] == b"lo"
    assert output.split()[-1] == b"0000000000000000"


def test_shell_keeps_state_and_returns_as_soon_as_a_command_ends(box):
    shell = box.open_shell()
    try:
        assert shell.run("cd /data; X=41\n", 30) == ""
        started = time.monotonic()
        assert shell.run("echo $((X + 1)); pwd; echo oops >&2\n", 30) == "42\n/data\noops\n"
        assert time.monotonic() - started < 5  # did not wait the 30 s duration
        assert shell.run("cat st", 1) == ""  # no newline yet: typed, not run
        assert shell.run("art\n", 10) == "NEXT=north\n"
    finally:
        shell.close()


def test_shell_reports_running_commands_waits_and_interrupts(box):
    shell = box.open_shell()
    try:
        first = shell.run("sleep 1; echo late\n", 0.2)
        assert "[the command is still running]" in first
        assert "late" not in first
        assert shell.run("", 10) == "late\n"
        assert "still running" in shell.run("sleep 100\n", 0.2)
        started = time.monotonic()
        assert shell.run("C-c", 5).startswith("^C")
        assert time.monotonic() - started < 5
        assert shell.run("echo after\n", 10) == "after\n"
        assert "new shell was started" in shell.run("exit\n", 5)
        assert shell.run("echo alive\n", 10) == "alive\n"
    finally:
        shell.close()


def test_container_is_removed_on_exit(docker_client, tasks_root, runner_labelled):
    image = ensure_image(docker_client, load_task(tasks_root / "hello"))
    with TaskContainer(docker_client, image, ContainerLimits(cpus=1, memory_mb=64), name_hint="gone") as box:
        container_id = box.id
        assert container_id in live_container_ids()
    assert container_id not in live_container_ids()
    assert container_id not in [container.id for container in runner_labelled()]


def test_a_prebuilt_image_that_is_absent_falls_back_to_the_dockerfile_or_says_why(docker_client, tasks_root, tmp_path):
    import shutil

    import pytest

    from depthlab.runner import EnvironmentBuildError

    task = tmp_path / "absent-image"
    shutil.copytree(tasks_root / "hello", task)
    toml = task / "task.toml"
    toml.write_text(toml.read_text() + 'docker_image = "depthlab-runner-tests/absent:never"\n')
    # with its Dockerfile beside it, the task builds (no network: no pull is tried)
    assert ensure_image(docker_client, load_task(task), network=False).startswith("depthlab-task/absent-image:")
    (task / "environment" / "Dockerfile").unlink()
    with pytest.raises(EnvironmentBuildError, match="the build network is off, so it was not pulled"):
        ensure_image(docker_client, load_task(task), network=False)


def test_leftovers_are_the_dead_runners_containers_not_every_container_of_its_images(docker_client, tasks_root):
    # a container made from an image the runner built carries the image's runner label but no owner: a user's
    # own `docker run` of it (or another test's) is not the runner's to remove; a dead runner's container is
    import contextlib
    import socket

    import docker.errors

    from depthlab.runner import remove_leftovers
    from depthlab.runner.leftovers import OWNER_LABEL

    image = ensure_image(docker_client, load_task(tasks_root / "hello"))
    dead = 2**22 + 17  # above Linux's pid_max default: no process has it
    users = docker_client.containers.create(image, ["true"])
    runners = docker_client.containers.create(image, ["true"], labels={OWNER_LABEL: f"{socket.gethostname()}:{dead}"})
    try:
        assert users.labels.get("depthlab.runner") == "1"  # the label the image gave it
        remove_leftovers(docker_client)
        alive = {container.id for container in docker_client.containers.list(all=True)}
        assert users.id in alive
        assert runners.id not in alive
    finally:
        for container in (users, runners):
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True)
