"""Helpers of the multi-step tests: a 2-step chain task FROM the Debian userland (Harbor 0.26's
``[[steps]]`` layout, written after ``harbor tasks init --steps 2``), a task with a separate verifier
environment (``tests/Dockerfile``, as ``harbor tasks init`` makes by default), and a scripted policy
that follows each chain its instruction names.

Each step of the chain task must read a file before it can write its answer: step ``first``
follows the chain at ``/data/a/start`` (one read) and writes its secret to ``/app/a.txt``; step
``second`` follows ``/data/b/start`` (one read) to ``/app/b.txt``, after its ``workdir/setup.sh``
has put a marker that its tests check. Step ``first``'s solution also publishes a file in
``/logs/artifacts``, which both engines keep into step ``second`` (its saved artifacts hold it).
So each step is 2 working turns and terminus-2's confirmation reply: the whole run needs 2 + 1 + 2 = 5
turns (the last step's confirmation comes after the cap and is not needed), D = 5 on a ladder holding 4
and 5. The merged task (one instruction, both chains) needs 4 turns: D = 4.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from engines_helpers import reply

# Runs at build time: one chain of one read per folder (random names from /dev/urandom).
MAKE_CHAINS = r"""set -e
rand() { head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
for c in a b; do
  mkdir -p /data/$c
  last=/data/$c/n-$(rand)
  echo "last: $last" > /data/$c/start
  echo "secret-$c-$(rand)" > "$last"
done
mkdir -p /app
"""

STEP_TEST = r"""#!/bin/bash
f=$(sed -n 's/^last: //p' /data/{c}/start)
mkdir -p /logs/verifier
ok=1
[ "$(cat /app/{c}.txt 2>/dev/null)" = "$(cat "$f")" ] || ok=0
{extra}
echo $ok > /logs/verifier/reward.txt
"""

STEP_SOLVE = "#!/bin/bash\ncp \"$(sed -n 's/^last: //p' /data/{c}/start)\" /app/{c}.txt\n"


def instruction(chain: str) -> str:
    return (
        f"Follow the chain that begins at /data/{chain}/start to its last file and copy that file to /app/{chain}.txt."
    )


def _dockerfile(image: str) -> str:
    return (
        f"FROM {image}\n"
        "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq asciinema >/dev/null "
        "&& rm -rf /var/lib/apt/lists/*\n"
        "COPY make_chains.sh /tmp/make_chains.sh\nRUN bash /tmp/make_chains.sh\nWORKDIR /app\nSTOPSIGNAL SIGKILL\n"
    )


def write_two_step_task(
    root: Path, image: str, *, name: str = "ms-chain", wrong_first: bool = False, strategy: str | None = None
) -> Path:
    """The 2-step chain task (module docstring); ``wrong_first``: step one's solution writes a wrong answer."""
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "make_chains.sh").write_text(MAKE_CHAINS)
    (task / "environment" / "Dockerfile").write_text(_dockerfile(image))
    strategy_line = f'multi_step_reward_strategy = "{strategy}"\n' if strategy else ""
    (task / "task.toml").write_text(
        'schema_version = "1.4"\n' + strategy_line + f'[task]\nname = "depthlab/{name}"\n'
        '[[steps]]\nname = "first"\nmin_reward = 1.0\n'
        '[[steps]]\nname = "second"\n'
        '[metadata]\ndifficulty = "easy"\n'
        "[agent]\ntimeout_sec = 120.0\n[verifier]\ntimeout_sec = 60.0\n"
        '[environment]\ncpus = 1\nmemory_mb = 512\nnetwork_mode = "public"\n'
    )
    for chain, step in (("a", "first"), ("b", "second")):
        folder = task / "steps" / step
        (folder / "tests").mkdir(parents=True)
        (folder / "solution").mkdir()
        (folder / "instruction.md").write_text(instruction(chain))
        extra = "[ -f /app/second-ready ] || ok=0" if step == "second" else ""
        (folder / "tests" / "test.sh").write_text(STEP_TEST.replace("{c}", chain).replace("{extra}", extra))
        solve = STEP_SOLVE.replace("{c}", chain)
        if step == "first":  # published as an artifact, which Harbor keeps in the container for the next step
            solve += "mkdir -p /logs/artifacts && echo first > /logs/artifacts/first-step.txt\n"
        if wrong_first and step == "first":
            solve = "#!/bin/bash\necho wrong > /app/a.txt\n"
        (folder / "solution" / "solve.sh").write_text(solve)
    workdir = task / "steps" / "second" / "workdir"
    workdir.mkdir()
    (workdir / "setup.sh").write_text("#!/bin/bash\nset -e\ntouch /app/second-ready\n")
    return task


def write_separate_verifier_task(root: Path, image: str, *, name: str = "sep-verifier") -> Path:
    """A one-step task whose tests run in their own container (``tests/Dockerfile``), reaching the agent's
    work through ``artifacts`` only: they pass when ``/app/answer.txt`` was copied over and the agent's
    files (``/data``) are absent, so a pass proves both."""
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "make_chains.sh").write_text(MAKE_CHAINS)
    (task / "environment" / "Dockerfile").write_text(_dockerfile(image))
    (task / "instruction.md").write_text("Write the word separate-ok to /app/answer.txt.")
    (task / "task.toml").write_text(
        'schema_version = "1.4"\nartifacts = ["/app/answer.txt"]\n'
        f'[task]\nname = "depthlab/{name}"\n'
        '[verifier]\ntimeout_sec = 60.0\nenvironment_mode = "separate"\n'
        '[agent]\ntimeout_sec = 120.0\n[environment]\ncpus = 1\nmemory_mb = 512\nnetwork_mode = "public"\n'
    )
    (task / "tests").mkdir()
    (task / "tests" / "Dockerfile").write_text(f"FROM {image}\nWORKDIR /app\nCOPY . /tests/\n")
    (task / "tests" / "test.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        'if [ "$(cat /app/answer.txt 2>/dev/null)" = separate-ok ] && [ ! -e /data/a/start ]; '
        "then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
    )
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\necho separate-ok > /app/answer.txt\n")
    return task


_PAIRS = re.compile(r"begins at (/data/(\w+)/start) to its last file and copy that file to (/app/\w+\.txt)")
_REVEAL = re.compile(r"^(?:next|last): (/data/(\w+)/n-[0-9a-f]+)\s*$", re.MULTILINE)


def chains_policy(messages: list[dict[str, Any]], model: str) -> str:
    """Follow, in order, every chain the instruction names: read its start, then copy its last file;
    mark the task complete with the last copy; confirm when asked."""
    texts = [_text(message) for message in messages if message.get("role") != "assistant"]
    sent = "\n".join(_text(message) for message in messages if message.get("role") == "assistant")
    if texts and (
        "Are you sure you want to mark the task as complete" in texts[-1] or "marked the task as complete" in texts[-1]
    ):
        return reply(complete=True)
    pairs = _PAIRS.findall(texts[0]) if texts else []
    outputs = "\n".join(texts[1:])
    for number, (start, chain, answer) in enumerate(pairs, start=1):
        if f"/app/{chain}.txt" in sent:
            continue
        found = [path for path, owner in _REVEAL.findall(outputs) if owner == chain]
        if not found:
            return reply(f"cat {start}\n")
        return reply(f"cp {found[-1]} {answer}\n", complete=number == len(pairs))
    return reply(complete=True)


# step one's agent leaves a hidden waiter (its command line, folder and files name nothing of the verifier's)
# that takes the checksum of step one's tests, waits for other tests (step two's) and then writes reward 1
# for 25 s; step two's agent gives up at once. Solved honestly, the trial fails its second step.
WAITER = (
    "cd /tmp && printf '%s\\n' "
    "'until a=$(cksum < /tests/test.sh 2>/dev/null); do sleep 0.05; done' "
    '\'until b=$(cksum < /tests/test.sh 2>/dev/null) && [ "$b" != "$a" ]; do sleep 0.05; done\' '
    "'end=$(($(date +%s) + 25)); while [ $(date +%s) -lt $end ]; do echo 1 > /logs/verifier/reward.txt; "
    "sleep 0.02; done' > /tmp/.w && (nohup sh /tmp/.w >/dev/null 2>&1 &)\n"
)


def waiting_forger_policy(messages: list[dict[str, Any]], model: str) -> str:
    """Step one (chain a): leave the waiter, then solve the step; step two (chain b): give up at once."""
    first = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
    if "/data/b/start" in first:
        return reply(complete=True)
    answer = json.loads(chains_policy(messages, model))
    if not any(m.get("role") == "assistant" for m in messages):
        answer["commands"].insert(0, {"keystrokes": WAITER, "duration": 1.0})
    return json.dumps(answer)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")
