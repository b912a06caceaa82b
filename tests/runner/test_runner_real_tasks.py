"""Tasks in Terminal-Bench 2's format on a real Debian 12 userland (``scripts/userland-up.sh``).

As TB2's tasks do, these name a prebuilt ``docker_image``, install from Debian's packages in
their Dockerfile, and install their test tool with ``apt-get`` in ``tests/test.sh`` at
verification time. Under the default (``harbor``) profile their reference solutions pass; under
``strict`` the preflight names what the verifier needs; with ``allow_internet = false`` the
agent's phase has no network, checked from inside the container. Every task here starts from the
one userland image (the Dockerfile task builds once per session).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from depthlab.runner import OracleAgent, RunSettings, load_task, preflight, run_tasks

pytestmark = pytest.mark.docker

# printed by every reference solution: the agent phase's network, seen from inside the container
PROBE = (
    "echo interfaces: $(ls /sys/class/net)\n"
    "if curl -sS -m 8 -o /dev/null http://deb.debian.org/debian/dists/bookworm/Release; "
    "then echo debian: reached; else echo debian: unreachable; fi\n"
)

# TB2's test.sh installs its tool with apt-get at verification time, then tests
APT_TEST_SH = """#!/bin/bash
apt-get update
apt-get install -y --no-install-recommends jq
if [ "$(jq -r .word /app/answer.json 2>/dev/null)" = hello ]; then echo 1 > /logs/verifier/reward.txt
else echo 0 > /logs/verifier/reward.txt; fi
"""

SOLVE_SH = '#!/bin/bash\nmkdir -p /app && echo \'{"word": "hello"}\' > /app/answer.json\n' + PROBE


def write_tb2_task(root: Path, name: str, *, toml: str, dockerfile: str, test_sh: str, solve_sh: str) -> Path:
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "solution").mkdir()
    (task / "task.toml").write_text(
        'version = "1.0"\n[metadata]\ndifficulty = "easy"\n[agent]\ntimeout_sec = 120.0\n'
        "[verifier]\ntimeout_sec = 240.0\n[environment]\ncpus = 1\nmemory_mb = 1024\n" + toml
    )
    (task / "instruction.md").write_text('Write {"word": "hello"} to /app/answer.json.\n')
    (task / "environment" / "Dockerfile").write_text(dockerfile)
    (task / "tests" / "test.sh").write_text(test_sh)
    (task / "solution" / "solve.sh").write_text(solve_sh)
    return task


@pytest.fixture(scope="module")
def real_tasks(userland_image: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("real") / "tb2-format"
    root.mkdir()
    tasks = {}
    # a prebuilt docker_image beside a Dockerfile: the image is used, the Dockerfile (which marks its
    # builds) is not built
    tasks["prebuilt"] = write_tb2_task(
        root,
        "prebuilt",
        toml=f'docker_image = "{userland_image}"\n',
        dockerfile=f"FROM {userland_image}\nRUN touch /built-from-the-dockerfile\n",
        test_sh=APT_TEST_SH,
        solve_sh=SOLVE_SH + "test -e /built-from-the-dockerfile && echo image: built || echo image: prebuilt\n",
    )
    # a multi-stage Dockerfile that installs from Debian's packages at build time
    tasks["multistage"] = write_tb2_task(
        root,
        "multistage",
        toml="",
        dockerfile=(
            f"FROM {userland_image} AS data\nRUN mkdir -p /out && echo hello > /out/word\n"
            f"FROM {userland_image}\nRUN apt-get update && apt-get install -y --no-install-recommends jq "
            "&& rm -rf /var/lib/apt/lists/*\nCOPY --from=data /out/word /opt/word\nWORKDIR /app\n"
        ),
        test_sh='#!/bin/bash\nif [ "$(jq -r .word /app/answer.json)" = "$(cat /opt/word)" ]; then '
        "echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n",
        solve_sh=SOLVE_SH,
    )
    # no internet: the verifier needs none, the agent's phase must have none
    tasks["offline"] = write_tb2_task(
        root,
        "offline",
        toml=f'docker_image = "{userland_image}"\nallow_internet = false\n',
        dockerfile=f"FROM {userland_image}\n",
        test_sh='#!/bin/bash\nif [ "$(python3 -c \'import json; print(json.load(open("/app/answer.json"))["word"])\')" '
        "= hello ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n",
        solve_sh=SOLVE_SH,
    )
    # an agent that rewrites /tests in the background on a real userland (bash reads test.sh as it runs)
    tasks["rewrite-tests"] = write_tb2_task(
        root,
        "rewrite-tests",
        toml=f'docker_image = "{userland_image}"\n',
        dockerfile=f"FROM {userland_image}\n",
        test_sh="#!/bin/bash\nsleep 1\necho 0 > /logs/verifier/reward.txt\n",
        solve_sh="#!/bin/bash\n(while :; do if [ -f /tests/test.sh ] && ! grep -q forged /tests/test.sh; then "
        'echo "echo 1 > /logs/verifier/reward.txt # forged" > /tests/test.sh 2>/dev/null; fi; done) '
        ">/dev/null 2>&1 &\n",
    )
    return tasks


@pytest.fixture(scope="module")
def default_run(real_tasks, docker_client, tmp_path_factory):
    """The oracle on every task, under default settings (the harbor profile)."""
    jobs = tmp_path_factory.mktemp("real-jobs")
    summary = run_tasks(
        list(real_tasks.values()),
        OracleAgent(),
        jobs_dir=jobs,
        docker_client=docker_client,
        concurrency=2,
        progress=False,
    )
    return {outcome.task: outcome for outcome in summary.outcomes}


def oracle_output(outcome) -> str:
    return (outcome.trial_dir / "agent" / "oracle.txt").read_text()


def test_a_tb2_format_task_passes_its_oracle_under_default_settings(default_run):
    outcome = default_run["prebuilt"]
    assert (outcome.reward, outcome.exception) == (1.0, None), outcome
    output = oracle_output(outcome)
    assert "image: prebuilt" in output  # the docker_image was used, the Dockerfile beside it was not built
    assert "eth0" in output  # Harbor's default: the agent's phase has the network task.toml allows
    assert "debian: reached" in output
    stdout = (outcome.trial_dir / "verifier" / "test-stdout.txt").read_text()
    assert "Setting up jq" in stdout  # the verifier installed its tool at verification time


def test_a_multi_stage_dockerfile_builds_and_installs_from_debian(default_run):
    outcome = default_run["multistage"]
    assert (outcome.reward, outcome.exception) == (1.0, None), outcome


def test_allow_internet_false_gives_the_agent_phase_no_network(default_run):
    outcome = default_run["offline"]
    assert (outcome.reward, outcome.exception) == (1.0, None), outcome
    output = oracle_output(outcome)
    assert "interfaces: lo\n" in output
    assert "debian: unreachable" in output


def test_a_tests_rewrite_gives_no_counted_pass_under_default_settings(default_run):
    outcome = default_run["rewrite-tests"]
    assert outcome.status == "invalid", outcome
    assert outcome.exception == "VerifierTamperedError"
    assert "/tests/test.sh" in outcome.message


def test_the_strict_preflight_names_what_the_verifier_needs(real_tasks, docker_client, tmp_path):
    report = preflight(
        [real_tasks["prebuilt"], real_tasks["offline"]],
        jobs_dir=tmp_path,
        settings=RunSettings(profile="strict"),
        docker_client=docker_client,
    )
    rows = {row.task: row for row in report.rows}
    assert rows["offline"].passed  # needs nothing strict takes away
    failed = rows["prebuilt"]
    assert not failed.passed
    assert "the network" in failed.reason
    assert "apt-get" in failed.reason
    assert "root's capabilities" in failed.reason
    assert failed.verifier_tail  # the last lines of the verifier's output are shown
    rendered = report.render()
    assert "prebuilt" in rendered
    assert "1 of 2 task(s) pass their reference solution; 1 left out" in rendered
    # the same settings again: from the cache, no container
    again = preflight([real_tasks["prebuilt"]], jobs_dir=tmp_path, settings=RunSettings(profile="strict"))
    assert again.rows[0].cached
    assert again.rows[0].reason == failed.reason


def test_force_build_builds_the_dockerfile_instead_of_the_prebuilt_image(real_tasks, docker_client, tmp_path):
    from depthlab.runner import ensure_image

    task = load_task(real_tasks["prebuilt"])
    prebuilt = ensure_image(docker_client, task)
    built = ensure_image(docker_client, task, force_build=True)
    assert prebuilt == task.docker_image
    assert built != prebuilt
    output = docker_client.containers.run(built, ["ls", "/built-from-the-dockerfile"], remove=True)
    assert b"/built-from-the-dockerfile" in output
