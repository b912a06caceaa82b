"""The security profiles, the network rule, the disk bound and the preflight's report, without Docker."""

from __future__ import annotations

import argparse

import pytest
from runner_helpers import write_task

from depthlab.runner import ContainerLimits, PreflightReport, PreflightRow, RunSettings, limits_for, load_task
from depthlab.runner.integrity import Snapshot, compare_digests, compare_snapshots
from depthlab.runner.preflight import _need
from depthlab.runner.profiles import DEFAULT_STORAGE_MB


def task_with(tmp_path, toml: str = ""):
    return load_task(write_task(tmp_path, "t", instruction="x", test_sh="true\n", toml=toml))


@pytest.mark.parametrize(
    ("toml", "settings", "network"),
    [
        ("", RunSettings(), True),  # Harbor's default: the container has a network
        ("allow_internet = false\n", RunSettings(), False),
        ("allow_internet = true\n", RunSettings(network=False), False),  # --no-network
        ("allow_internet = false\n", RunSettings(network=True), True),  # --allow-network
        ('network_mode = "no-network"\n', RunSettings(), False),  # Harbor 0.26's field
        ('network_mode = "public"\n', RunSettings(), True),
        ("allow_internet = true\n", RunSettings(profile="strict"), False),  # strict: never
    ],
)
def test_the_container_network_is_as_harbor_gives_it(tmp_path, toml, settings, network):
    assert limits_for(task_with(tmp_path, toml), settings).network is network


def test_the_profiles_set_capabilities_and_builds_and_are_recorded(tmp_path):
    task = task_with(tmp_path)
    harbor, strict = limits_for(task), limits_for(task, RunSettings(profile="strict"))
    assert (harbor.cap_drop, strict.cap_drop) == ([], ["ALL"])
    assert (harbor.build_network, strict.build_network) == (True, False)
    assert limits_for(task_with(tmp_path / "b", "allow_internet = true\n"), RunSettings(profile="strict")).build_network
    assert harbor.as_record()["profile"] == "harbor"
    assert strict.as_record()["profile"] == "strict"
    assert strict.as_record()["network_mode"] == "none"


def test_strict_refuses_a_network_and_unknown_profiles_are_refused():
    with pytest.raises(ValueError, match="'strict' profile has no network"):
        RunSettings(profile="strict", network=True)
    with pytest.raises(ValueError, match="'profile' parameter of RunSettings must be one of"):
        RunSettings(profile="lenient")
    with pytest.raises(ValueError, match="'strict' profile has no network"):
        ContainerLimits(cpus=1, memory_mb=64, profile="strict")


def test_the_disk_bound_comes_from_task_toml_else_the_default(tmp_path):
    assert limits_for(task_with(tmp_path)).storage_mb == DEFAULT_STORAGE_MB
    assert limits_for(task_with(tmp_path / "b", 'storage = "2G"\n')).storage_mb == 2048
    assert limits_for(task_with(tmp_path / "c", "storage_mb = 64\n")).storage_mb == 64
    assert limits_for(task_with(tmp_path / "d", "storage_mb = 64\n"), RunSettings(storage_mb=128)).storage_mb == 128
    with pytest.raises(ValueError, match=r"\[environment\].storage_mb must be a positive finite number"):
        task_with(tmp_path / "e", "storage_mb = 0\n")


def test_the_command_line_options_give_the_settings():
    from depthlab.commands.run import add_agent_arguments, check_agent_arguments, run_settings

    parser = argparse.ArgumentParser()
    add_agent_arguments(parser)
    settings = run_settings(parser.parse_args(["--profile", "strict", "--cap-add", "chown, setuid", "--force-build"]))
    assert (settings.profile, settings.cap_add, settings.force_build) == ("strict", ("CHOWN", "SETUID"), True)
    assert run_settings(parser.parse_args(["--no-network"])).network is False
    assert run_settings(parser.parse_args([])).network is None
    with pytest.raises(SystemExit):  # one or the other
        parser.parse_args(["--no-network", "--allow-network"])
    problem = check_agent_arguments(parser.parse_args(["--profile", "strict", "--allow-network"]), "run")
    assert "cannot be used with --profile strict" in problem


def test_the_preflight_names_what_the_verifier_needs_from_its_output_and_script(tmp_path):
    apt = "E: Could not open lock file /var/lib/apt/lists/lock - open (13: Permission denied)"
    assert "root's capabilities" in _need(apt)
    strict = limits_for(task_with(tmp_path), RunSettings(profile="strict"))
    need = _need("0 passed", "apt-get update\ncurl -LsSf https://astral.sh/uv/install.sh | sh\n", strict)
    assert "the network" in need
    assert "apt-get, curl" in need
    assert "root's capabilities" in need
    harbor = limits_for(task_with(tmp_path / "b"))
    assert _need("0 passed", "apt-get update\n", harbor) == ""  # harbor has both: nothing to name


def test_the_preflight_report_renders_a_table_and_one_summary_line():
    rows = [
        PreflightRow("good", "/t/good", True, "", "", reward=1.0),
        PreflightRow("bad", "/t/bad", False, "the reference solution got reward 0", "line 1\nline 2", reward=0.0),
        PreflightRow("none", "/t/none", True, "not checked: the task has no solution/solve.sh", "", checked=False),
    ]
    report = PreflightReport(rows=rows, settings=RunSettings().as_record())
    text = report.render()
    assert text.splitlines() == [
        "- bad: the reference solution got reward 0",
        "    | line 1",
        "    | line 2",
        "oracle preflight (harbor profile): 1 of 3 task(s) pass their reference solution, 1 have none "
        "(not checked); 1 left out",
    ]
    assert not report.all_failed
    assert PreflightReport(rows=rows[1:2]).all_failed
    assert report.to_frame()["passed"].to_list() == [True, False, True]


def test_the_integrity_comparisons_name_every_change():
    entry = ("5", "t1", "10", "regular file", "0", "0")
    before = Snapshot({"/tests": ("2", "t0", "4096", "directory", "0", "0"), "/tests/test.sh": entry})
    swapped = Snapshot({"/tests": ("3", "t0", "4096", "directory", "0", "0"), "/tests/test.sh": entry})
    assert compare_snapshots(before, swapped) == ["/tests was replaced (its inode changed)"]
    assert compare_snapshots(before, before) == []
    linked = Snapshot({**before.entries, "/tests/test.sh": ("5", "t1", "10", "symbolic link", "0", "0")})
    assert compare_snapshots(before, linked) == ["/tests/test.sh was replaced by a symbolic link"]
    assert compare_snapshots(before, Snapshot(problem="sh: stat: not found")) == [
        "the identity check could not run after the tests: sh: stat: not found"
    ]
    assert compare_digests({"a": "dir", "a/t.py": "file:1"}, {"a": "link:/tmp/x"}) == [
        "/tests/a became link:/tmp/x",
        "/tests/a/t.py was removed",
    ]
