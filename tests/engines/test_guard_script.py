"""The shell of depthlab's guarded terminus-2 (``engines/harbor_side/depthlab_guard.sh``), run for real.

Harbor imports the guard in its own venv; its shell is what runs in a trial's container when the
agent's run ends. It is read here from the package's resource file (the module imports Harbor, so it
is not imported; a test in Harbor's venv checks that module reads the same sections) and run in a
real container of the Debian userland, with the processes an agent leaves: a server a task may ask
for, a background reward writer, a process sitting in ``/logs/verifier``, a hidden process waiting
for the next step's tests.

* ``suspects`` (the default): the writer and the squatter are killed, the server runs on into the
  tests, as it would under Harbor's own terminus-2;
* ``all`` (``--profile strict``): every process the agent left is killed; the container's own stays;
* the next step of a multi-step task: every process the earlier step's agent left is stopped before
  its tests, the hidden waiter included; what this step's agent started runs on.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.docker]

SIDE = Path(__file__).resolve().parents[2] / "depthlab" / "engines" / "harbor_side"


def guard_scripts() -> dict[str, str]:
    """The guard's shell sections, as depthlab reads its resource file."""
    from depthlab.engines._harbor_guard import guard_script_sections

    return guard_script_sections()


def sh(container: str, script: str) -> str:
    done = subprocess.run(
        ["docker", "exec", container, "sh", "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def command_lines(container: str) -> list[str]:
    out = sh(container, "for d in /proc/[0-9]*; do tr '\\0' ' ' < $d/cmdline 2>/dev/null; echo; done")
    return [line.strip() for line in out.splitlines() if line.strip()]


@pytest.fixture
def container(userland: str) -> Iterator[str]:
    name = f"depthlab-guard-test-{uuid.uuid4().hex[:8]}"
    subprocess.run(["docker", "run", "-d", "--rm", "--name", name, userland, "sleep", "600"], check=True,
                   capture_output=True)  # fmt: skip
    try:
        yield name
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)


def leave_processes(container: str) -> None:
    """What an agent leaves: a server, a background reward writer, a process sitting in /logs/verifier."""
    sh(container, "mkdir -p /logs/verifier /srv")
    for script in (
        "cd /srv && exec sleep 1001",  # the server a task asked for
        "while :; do echo 1 > /logs/verifier/reward.txt; sleep 0.02; done",  # the forger
        "cd /logs/verifier && exec sleep 1002",  # a squatter in the verifier's folder
    ):
        subprocess.run(["docker", "exec", "-d", container, "sh", "-c", script], check=True)
    sh(container, "sleep 0.3")


def guard_output(container: str, mode: str, keep: list[str], since: str = "") -> str:
    scripts = guard_scripts()
    settings = f"KEEP='{' '.join(keep)}'\nMODE={mode}\nSINCE={since}\n"  # as GuardedTerminus2._guard builds it
    out = sh(container, scripts["chain"] + settings + scripts["suspect"] + scripts["kill"])
    sh(container, "sleep 0.3")
    return out


def run_guard(container: str, mode: str, keep: list[str]) -> list[str]:
    out = guard_output(container, mode, keep)
    return [line[2:] for line in out.splitlines() if line.startswith("K ")]


def before_the_agent(container: str) -> list[str]:
    scripts = guard_scripts()
    listing = sh(container, scripts["chain"] + scripts["processes"])
    rows = [line.split(" ", 4) for line in listing.splitlines() if line.startswith("P ")]
    return [f"{pid}:{start}" for _, pid, _, start, _ in rows]


def test_by_default_the_guard_kills_what_reaches_for_the_verifier_and_spares_a_server(container):
    keep = before_the_agent(container)
    leave_processes(container)
    killed = run_guard(container, "suspects", keep)
    left = command_lines(container)
    assert any("sleep 1001" in line for line in left), left  # the server runs on into the tests
    assert not any("reward.txt" in line or "sleep 1002" in line for line in left), left
    assert any("/logs/verifier/reward.txt" in line for line in killed), killed
    assert any("sleep 1002" in line for line in killed), killed
    assert not any("sleep 1001" in line for line in killed), killed
    assert any(line.startswith("sleep 600") for line in left)  # the container's own process


def test_the_strict_guard_kills_every_process_the_agent_left(container):
    keep = before_the_agent(container)
    leave_processes(container)
    killed = run_guard(container, "all", keep)
    left = command_lines(container)
    assert not any("sleep 100" in line or "reward.txt" in line for line in left), left
    assert any("sleep 1001" in line for line in killed), killed
    assert any(line.startswith("sleep 600") for line in left)  # the container's own process


# step 1 leaves a server and a hidden waiter: a script whose command line, folder and files name nothing
# of the verifier's, polling /tests/test.sh until its inode changes (the next step's tests arrived)
WAITER = r"""cd /tmp && cat > /tmp/.w <<'X'
i=$(stat -c %i /tests/test.sh 2>/dev/null)
until n=$(stat -c %i /tests/test.sh 2>/dev/null) && [ "$n" != "$i" ]; do sleep 0.05; done
while :; do echo 1 > /logs/verifier/reward.txt; sleep 0.02; done
X
exec sh /tmp/.w"""


def test_the_next_step_stops_what_an_earlier_steps_agent_left_and_spares_its_own(container):
    keep = before_the_agent(container)
    sh(container, "mkdir -p /logs/verifier /tests /srv && echo one > /tests/test.sh")
    subprocess.run(["docker", "exec", "-d", container, "sh", "-c", "cd /srv && exec sleep 1001"], check=True)
    subprocess.run(["docker", "exec", "-d", container, "sh", "-c", WAITER], check=True)
    sh(container, "sleep 0.3")
    first = guard_output(container, "suspects", keep)  # the end of step 1's agent
    assert not any(line.startswith(("K ", "S ")) for line in first), first  # the waiter hides: no suspect
    assert any(".w" in line for line in command_lines(container))
    since = next(line[2:] for line in first.splitlines() if line.startswith("N "))
    sh(container, "rm -rf /tests/*")  # Harbor resets /tests between the steps; step 2's agent starts a server
    subprocess.run(["docker", "exec", "-d", container, "sh", "-c", "cd /srv && exec sleep 1003"], check=True)
    sh(container, "sleep 0.3")
    second = guard_output(container, "suspects", keep, since)  # the end of step 2's agent, before its tests
    stopped = [line for line in second.splitlines() if line.startswith("S ")]
    assert any(".w" in line for line in stopped), second
    assert any("sleep 1001" in line for line in stopped), second
    left = command_lines(container)
    assert not any(".w" in line or "sleep 1001" in line for line in left), left
    assert any("sleep 1003" in line for line in left), left  # this step's server runs on into its tests
    assert any(line.startswith("sleep 600") for line in left)
    sh(container, "echo two > /tests/test.sh; sleep 0.5")  # step 2's tests arrive: nobody writes the reward
    assert sh(container, "cat /logs/verifier/reward.txt 2>/dev/null || echo none").strip() == "none"


#: Shell texts the two section readers must split alike: text before the first section, a name given
#: twice, blank and indented lines, a ``#@`` line without its space, surrounding white space, no section.
SECTION_TEXTS = (
    "# intro\n#@ a\necho a\n#@ b\necho b\n",
    "echo before\n#@ a\n\n  one\n#@ b\n#@ a\ntwo\n",
    "#@  spaced  \nx\n#@tight\ny\n\n\n",
    "no sections at all\n",
    "",
)


@pytest.mark.harbor
def test_the_guards_names_and_shell_agree_on_both_sides(harbor_python):
    """harbor_side cannot import depthlab: its file names and the sections it reads are checked in Harbor's venv.

    Its section reader (``depthlab_guard.scripts``) is therefore a second copy of depthlab's
    (``depthlab._guard_shell.split_sections``): both are run on the package's shell and on
    :data:`SECTION_TEXTS`, and must give the same sections.
    """
    from depthlab._guard_shell import split_sections
    from depthlab.engines import _harbor_guard as guard

    probe = (
        "import json, sys, depthlab_guard as g, depthlab_whole_run as w; "
        "print(json.dumps({'file': g.GUARD_FILE, 'script': g.SCRIPT_FILE, 'modes': list(g.GUARD_MODES), "
        "'sections': g.scripts(), 'agents': [g.GuardedTerminus2.__name__, w.WholeRunTerminus2.__name__], "
        "'texts': [g.scripts(text) for text in json.loads(sys.argv[1])]}))"
    )
    done = subprocess.run([str(harbor_python), "-c", probe, json.dumps(SECTION_TEXTS)],
                          env={"PYTHONPATH": str(SIDE), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    side = json.loads(done.stdout.strip().splitlines()[-1])
    assert side["file"] == guard.GUARD_FILE
    assert side["script"] == guard.GUARD_SCRIPT
    assert tuple(side["modes"]) == guard.GUARD_MODES
    assert side["sections"] == guard.guard_script_sections()
    assert side["texts"] == [split_sections(text) for text in SECTION_TEXTS]
    assert set(side["sections"]) == {"chain", "processes", "tests", "watch", "suspect", "kill", "restore"}
    assert side["agents"] == [guard.GUARDED_AGENT.split(":")[1], guard.WHOLE_RUN_AGENT.split(":")[1]]
