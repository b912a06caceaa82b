"""Known truth in real containers: chain tasks of depth k, measured by the cap ladder and by the proxy.

Each task's image is built FROM scratch (busybox) and, at build time, writes a chain of files
with random names: ``/data/start`` names the next file, each file names the next, the last but
one names the file that holds the answer (``last: <path>``). Nothing can be guessed, so a
policy that reads one output per turn needs exactly k turns: k - 1 reads and a copy of the
answer. The scripted policy reads each output and, when no cap is stated, also wastes turns on
``pwd``, ``ls`` and a re-read. Through the real runner and the loopback Chat Completions server:

* plan -> fill -> load -> re-plan (adaptive) at the cap ladder gives D = k by ``estimate_depth``;
* uncapped, the trajectories give ``depth_proxy`` = k, while N is larger.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from runner_helpers import API_KEY_ENV, BUSYBOX, DOCKERFILE, reply

import depthlab as dl
from depthlab.runner import ChatClient, HarnessConfig, TerminusAgent, fill, run_tasks

pytestmark = pytest.mark.docker

DATASET = "proxy-chains"
DEPTHS = (2, 3, 5)
MODELS = ("scripted/reader-a", "scripted/reader-b")

# Runs at build time: random names from /dev/urandom, so the chain exists only inside the image.
MAKE_CHAIN = r"""set -e
k=$1
rand() { head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
mkdir -p /data/chain
prev=/data/start
i=1
while [ "$i" -lt $((k - 1)) ]; do
  name=/data/chain/n-$(rand)
  echo "next: $name" > "$prev"
  prev=$name
  i=$((i + 1))
done
last=/data/chain/n-$(rand)
echo "last: $last" > "$prev"
echo "secret-$(rand)" > "$last"
"""

# The verifier follows the chain itself: no expected answer is stored where the agent could read it.
TEST_SH = r"""f=/data/start
while n=$(sed -n -e 's/^next: //p' -e 's/^last: //p' "$f") && [ -n "$n" ]; do f=$n; done
if [ "$(cat /app/answer.txt 2>/dev/null)" = "$(cat "$f")" ]; then echo 1 > /logs/verifier/reward.txt
else echo 0 > /logs/verifier/reward.txt; fi
"""

# The reference solution follows the chain to its end, as the verifier does.
SOLVE_SH = r"""f=/data/start
while n=$(sed -n -e 's/^next: //p' -e 's/^last: //p' "$f") && [ -n "$n" ]; do f=$n; done
cp "$f" /app/answer.txt
"""

INSTRUCTION = (
    "The file /data/start begins a chain of files: each names the next. Follow it to the file that holds "
    "the secret and copy that file to /app/answer.txt."
)

# turn index -> a wasted command, used only when no cap is stated
WASTE = {0: "pwd\n", 2: "ls /data\n", 4: "cat /data/start\n"}
_REVEAL = re.compile(r"^(next|last): (\S+)$", re.MULTILINE)


def reading_policy(messages: list[dict[str, str]], model: str) -> str:
    """Read one file per turn, acting only on what the outputs revealed; waste turns when uncapped."""
    capped = re.search(r"at most \d+ turn", messages[0]["content"]) is not None
    turn = sum(1 for message in messages if message["role"] == "assistant")
    outputs = [message["content"] for message in messages[1:] if message["role"] == "user"]
    if outputs and "marked the task as complete" in outputs[-1]:
        return reply(complete=True)
    if not capped and turn in WASTE:
        return reply(WASTE[turn])
    revealed: dict[str, str] = {}  # path -> next|last, in order of first appearance
    for output in outputs:
        for kind, path in _REVEAL.findall(output):
            revealed.setdefault(path, kind)
    if not revealed:
        return reply("cat /data/start\n")
    path, kind = list(revealed.items())[-1]
    if kind == "last":
        return reply(f"cp {path} /app/answer.txt\n", complete=True)
    return reply(f"cat {path}\n")


def write_chain_task(root: Path, depth: int) -> Path:
    task = root / f"chain-k{depth}"
    env = task / "environment"
    env.mkdir(parents=True)
    shutil.copy2(BUSYBOX, env / "busybox")  # a tmp build context, not the repository
    (env / "make_chain.sh").write_text(MAKE_CHAIN)
    extra = f'COPY make_chain.sh /tmp/make_chain.sh\nRUN ["/bin/sh", "/tmp/make_chain.sh", "{depth}"]\n'
    (env / "Dockerfile").write_text(DOCKERFILE.format(extra=extra))
    (task / "instruction.md").write_text(INSTRUCTION)
    (task / "task.toml").write_text(
        "[agent]\ntimeout_sec = 120.0\n[verifier]\ntimeout_sec = 60.0\n[environment]\ncpus = 1\nmemory_mb = 256\n"
    )
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text(TEST_SH)
    (task / "solution").mkdir()  # the reference solution the fill's oracle preflight runs once per task
    (task / "solution" / "solve.sh").write_text(SOLVE_SH)
    return task


def agent_factory(url: str):
    def make(model: str, cap: int | None) -> TerminusAgent:
        client = ChatClient(url, model, api_key_env=API_KEY_ENV, max_retries=1, backoff_sec=0.01)
        return TerminusAgent(client, HarnessConfig(cap=cap))

    return make


@pytest.fixture(scope="module")
def chains(docker_client, endpoint, tmp_path_factory):
    """Build the chain tasks, fill the cap ladder adaptively, then run each task uncapped twice."""
    monkey = pytest.MonkeyPatch()
    monkey.setenv(API_KEY_ENV, "sk-depthlab-chains")
    monkey.setenv("DEPTHLAB_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    root = tmp_path_factory.mktemp("chains") / DATASET
    for depth in DEPTHS:
        write_chain_task(root, depth)
    jobs = tmp_path_factory.mktemp("jobs")
    endpoint.reset(reading_policy)
    tasks = dl.load_tasks(root, dataset=DATASET)
    trials = dl.schema.empty("trials")
    rounds = 0
    preflights = []
    try:
        while True:
            plan = dl.plan_missing(trials, tasks, models=MODELS, mode="adaptive")
            if plan.is_empty() or rounds > len(dl.CAPS):
                break
            rounds += 1
            summary = fill(
                plan,
                tasks_dir=root,
                jobs_dir=jobs / "capped",
                agent_factory=agent_factory(endpoint.url),
                docker_client=docker_client,
                concurrency=2,
                progress=False,
            )
            preflights.append(summary.preflight)
            trials = dl.load_trials(jobs / "capped", dataset=DATASET, cache=False)
        uncapped = run_tasks(
            sorted(root.iterdir()),
            agent_factory(endpoint.url)(MODELS[0], None),
            jobs_dir=jobs / "uncapped",
            job_name="uncapped",
            attempts=2,
            docker_client=docker_client,
            concurrency=2,
            progress=False,
        )
    finally:
        monkey.undo()
    public = dl.load_trials(jobs / "uncapped", dataset=DATASET, cache=False)
    return {"capped": trials, "public": public, "rounds": rounds, "uncapped": uncapped, "preflights": preflights}


def test_the_fill_checks_each_reference_solution_once(chains):
    """The first fill runs every task's oracle; the later rounds read it from the cache (no container)."""
    first, *later = chains["preflights"]
    assert sorted(row.task for row in first.rows if row.passed and not row.cached) == [f"chain-k{k}" for k in DEPTHS]
    assert later
    assert all(row.cached and row.passed for report in later for row in report.rows)


def test_the_cap_ladder_gives_d_equal_to_k(chains):
    depth = dl.estimate_depth(chains["capped"]).sort("task")
    assert depth["task"].to_list() == [f"chain-k{k}" for k in DEPTHS]
    assert depth["status"].to_list() == ["solved"] * len(DEPTHS)
    assert depth["depth"].to_list() == list(DEPTHS)
    # adaptive planning went up the ladder one round per cap: 1, 2, 3, 5
    assert chains["rounds"] == 4
    assert chains["capped"]["status"].is_in(("pass", "fail")).all()


def test_uncapped_trajectories_give_proxy_equal_to_k(chains):
    public = chains["public"]
    assert public.height == 2 * len(DEPTHS)
    assert (public["status"] == "pass").all()
    per_task = dl.depth_proxy(public).sort("task")
    assert per_task["proxy_depth"].to_list() == list(DEPTHS)
    assert per_task["proxy_depth_min"].to_list() == list(DEPTHS)
    assert per_task["n_passing"].to_list() == [2] * len(DEPTHS)
    # N overstates the chain: wasted looks around, a re-read and the confirmation turn
    turns = public.group_by("task").agg(pl.col("n_turns").min()).sort("task")["n_turns"].to_list()
    assert all(n > k for n, k in zip(turns, DEPTHS, strict=True))


def test_the_chain_in_a_real_trajectory_is_the_reads(chains):
    source = chains["public"].filter(pl.col("task") == "chain-k5")["source"][0]
    steps = dl.io.read_steps(Path(source).parent, prompt=True, max_chars=10**9)
    deps = dl.turn_dependencies(steps)
    chain = deps.filter(pl.col("on_chain"))
    commands = steps.filter(pl.col("turn").is_in(chain["turn"].to_list()))["commands"].to_list()
    assert chain["level"].to_list() == [1, 2, 3, 4, 5]
    assert commands[0] == "cat /data/start"
    assert all(command.startswith("cat /data/chain/n-") for command in commands[1:4])
    assert commands[4].startswith("cp /data/chain/n-")
    # every wasted turn (pwd, ls, the re-read of /data/start) depends on nothing
    wasted = steps.filter(pl.col("commands").is_in(["pwd", "ls /data"]))["turn"].to_list()
    assert len(wasted) == 2
    assert deps.filter(pl.col("turn").is_in(wasted))["level"].to_list() == [1, 1]
