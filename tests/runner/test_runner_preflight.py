"""The oracle preflight in ``fill``: a task whose reference solution fails gets no model call, and says why."""

from __future__ import annotations

import polars as pl
import pytest
from runner_helpers import API_KEY_ENV, chain_policy, write_task

from depthlab.runner import ChatClient, HarnessConfig, TerminusAgent, fill

pytestmark = pytest.mark.docker

BROKEN_INSTRUCTION = "Write the word broken to /app/broken.txt."


@pytest.fixture(scope="module")
def preflight_tasks(tmp_path_factory):
    root = tmp_path_factory.mktemp("preflight") / "preflight-tests"
    root.mkdir()
    write_task(
        root,
        "good",
        instruction="Follow the chain of files that starts at /data/start and write the final answer to "
        "/app/answer.txt.",
        test_sh='if [ "$(cat /app/answer.txt 2>/dev/null)" = depth-three-secret ]; then echo 1 > '
        "/logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n",
        solve_sh="cp /data/south /app/answer.txt\n",
        data={"start": "NEXT=north\n", "north": "LAST=south\n", "south": "depth-three-secret\n"},
    )
    # a verifier that calls a tool the image lacks: even the reference solution gets 0
    write_task(
        root,
        "broken",
        instruction=BROKEN_INSTRUCTION,
        test_sh='echo "running the checks"\npytest-missing /tests/test_outputs.py && echo 1 > '
        "/logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
        solve_sh="echo broken > /app/broken.txt\n",
    )
    return root


def factory(url: str):
    def make(model: str, cap: int | None) -> TerminusAgent:
        client = ChatClient(url, model, api_key_env=API_KEY_ENV, max_retries=0, backoff_sec=0.01)
        return TerminusAgent(client, HarnessConfig(cap=cap))

    return make


def plan_of(*tasks: str) -> pl.DataFrame:
    n = len(tasks)
    return pl.DataFrame(
        {"dataset": ["preflight-tests"] * n, "task": list(tasks), "model": ["scripted/alpha"] * n, "cap": [5] * n}
        | {"attempts": [1] * n}
    )


def prompts(endpoint) -> list[str]:
    return [request["body"]["messages"][0]["content"] for request in endpoint.requests]


def test_fill_runs_no_model_call_for_a_task_whose_oracle_fails_and_says_why(
    docker_client, preflight_tasks, endpoint, tmp_path, api_key
):
    endpoint.reset(chain_policy)
    summary = fill(
        plan_of("good", "broken"),
        tasks_dir=preflight_tasks,
        jobs_dir=tmp_path,
        agent_factory=factory(endpoint.url),
        docker_client=docker_client,
        progress=False,
    )
    assert not any(BROKEN_INSTRUCTION in prompt for prompt in prompts(endpoint))  # no model call for it
    assert any("/data/start" in prompt for prompt in prompts(endpoint))  # the good task ran
    assert [outcome.task for outcome in summary.outcomes] == ["good"]
    assert summary.outcomes[0].reward == 1.0
    (failed,) = summary.preflight.failed
    assert failed.task == "broken"
    assert "reward 0" in failed.reason
    assert "pytest-missing" in failed.verifier_tail  # the verifier output's last lines
    rendered = summary.render()
    assert "- broken: the reference solution got reward 0" in rendered
    assert "1 of 2 task(s) pass their reference solution; 1 left out" in rendered


def test_fill_exits_non_zero_when_every_task_fails_its_oracle_and_no_preflight_skips_it(
    docker_client, preflight_tasks, endpoint, tmp_path, api_key, capsys
):
    from depthlab.cli import main

    endpoint.reset(chain_policy)
    plan = tmp_path / "plan.csv"
    plan_of("broken").write_csv(plan)
    options = ["--tasks", str(preflight_tasks), "--models", "scripted/alpha", "--base-url", endpoint.url]
    options += ["--api-key-env", API_KEY_ENV, "--no-progress", "--max-retries", "0"]
    assert main(["fill", str(plan), "--jobs-dir", str(tmp_path / "a"), *options]) == 1
    output = capsys.readouterr().out
    assert "- broken:" in output
    assert "0 of 1 task(s) pass their reference solution; 1 left out" in output
    assert endpoint.requests == []
    # --no-preflight: the model is called on the task all the same
    assert main(["fill", str(plan), "--jobs-dir", str(tmp_path / "b"), "--no-preflight", *options]) == 0
    assert any(BROKEN_INSTRUCTION in prompt for prompt in prompts(endpoint))


def test_run_with_the_oracle_says_plainly_when_the_reference_solution_failed(preflight_tasks, tmp_path, capsys):
    from depthlab.cli import main

    common = ["--agent", "oracle", "--jobs-dir", str(tmp_path), "--no-progress"]
    assert main(["run", str(preflight_tasks / "broken"), *common]) == 0  # a valid trial: the run itself worked
    output = capsys.readouterr().out
    assert "The reference solution failed on 1 of 1 trial(s) under the 'harbor' profile" in output
    assert "- broken: the reference solution got reward 0" in output
    assert "pytest-missing" in output
    main(["run", str(preflight_tasks / "good"), *common])
    assert "reference solution failed" not in capsys.readouterr().out
