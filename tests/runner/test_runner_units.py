"""Runner parts that need no Docker: reply parsing, output cutting, the LLM client against the
real scripted HTTP server, task.toml reading, reward rules, Harbor output bookkeeping."""

from __future__ import annotations

import json
import time

import pytest
from runner_helpers import API_KEY_ENV, reply, write_task

from depthlab.runner import (
    ChatClient,
    HarnessConfig,
    JobDir,
    LLMEndpointError,
    UnsupportedTaskError,
    cap_sentence,
    limit_output,
    load_task,
    parse_reply,
    read_rewards,
    remove_incomplete_trials,
)
from depthlab.runner.errors import RewardFileEmptyError, RewardFileNotFoundError, VerifierOutputParseError


# ---------------------------------------------------------------- agent protocol -----------
def test_parse_reply_accepts_a_wellformed_reply_with_defaults():
    parsed, error = parse_reply('Sure! {"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\\n"}]} bye')
    assert error == ""
    assert parsed == {
        "analysis": "a",
        "plan": "p",
        "commands": [{"keystrokes": "ls\n", "duration": 1.0}],
        "task_complete": False,
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain words", "No JSON object"),
        ('{"analysis": "a", "plan": ', "No JSON object"),
        ('{"analysis": "a", "plan": "p",}', "Invalid JSON"),
        ('{"plan": "p", "commands": []}', "Missing required fields: analysis"),
        ('{"analysis": "a", "plan": "p", "commands": "ls"}', "'commands' must be a list"),
        ('{"analysis": "a", "plan": "p", "commands": [{"keys": "ls"}]}', "Command 1 must be"),
        ('{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls", "duration": -1}]}', "invalid 'duration'"),
    ],
)
def test_parse_reply_explains_what_is_wrong(text, expected):
    parsed, error = parse_reply(text)
    assert parsed is None
    assert expected in error


def test_limit_output_keeps_both_ends_within_the_byte_limit():
    text = "HEAD" + "é" * 20_000 + "TAIL"
    cut = limit_output(text, 10_000)
    assert len(cut.encode("utf-8")) <= 10_000
    assert cut.startswith("HEAD")
    assert cut.endswith("TAIL")
    omitted = int(cut.split("bytes; ")[1].split(" bytes omitted")[0])
    kept = len(cut.encode()) - len(cut[cut.index("\n[...") : cut.index("...]\n") + 5].encode())
    assert omitted + kept == len(text.encode())
    assert limit_output("short", 10_000) == "short"


def test_cap_sentence_states_the_cap_and_the_record_carries_it():
    assert "at most 1 turn:" in cap_sentence(1)
    assert "at most 5 turns" in cap_sentence(5)
    kwargs = HarnessConfig(cap=5).as_kwargs()
    assert kwargs["max_turns"] == kwargs["stated_cap"] == 5
    uncapped = HarnessConfig(cap=None).as_kwargs()
    assert uncapped["stated_cap"] is None
    assert uncapped["max_turns"] == 200
    with pytest.raises(ValueError, match="'cap' parameter of HarnessConfig"):
        HarnessConfig(cap=0)


# ---------------------------------------------------------------- LLM client ---------------
def test_client_retries_server_errors_and_accounts_tokens(endpoint, api_key):
    calls = []

    def flaky(messages, model):
        calls.append(time.monotonic())
        return (500, "boom") if len(calls) < 3 else reply("ls\n")

    endpoint.reset(flaky)
    client = ChatClient(endpoint.url, "openai/m", api_key_env=API_KEY_ENV, max_retries=3, backoff_sec=0.05)
    answer = client.complete([{"role": "user", "content": "x" * 400}])
    assert answer.attempts == 3
    assert json.loads(answer.content)["commands"][0]["keystrokes"] == "ls\n"
    assert answer.prompt_tokens == 100
    assert answer.cached_tokens == 7
    assert answer.completion_tokens == len(answer.content) // 4
    assert answer.cost_usd is None  # no prices, no usage.cost
    # the key went to the endpoint, and only there
    assert endpoint.requests[-1]["headers"]["Authorization"] == f"Bearer {api_key}"
    assert api_key not in repr(client)
    assert api_key not in json.dumps(client.describe())
    assert calls[2] - calls[1] >= 0.05  # it backed off


def test_client_gives_up_after_retries_and_does_not_retry_client_errors(endpoint):
    endpoint.reset(lambda messages, model: (503, "overloaded"))
    client = ChatClient(endpoint.url, "m", api_key_env=None, max_retries=2, backoff_sec=0.01)
    with pytest.raises(LLMEndpointError, match="after 3 attempt"):
        client.complete([{"role": "user", "content": "hi"}])
    assert len(endpoint.requests) == 3
    endpoint.reset(lambda messages, model: (400, "bad request"))
    with pytest.raises(LLMEndpointError, match="refused the request: HTTP 400"):
        client.complete([{"role": "user", "content": "hi"}])
    assert len(endpoint.requests) == 1


def test_client_honours_retry_after_and_computes_cost_from_prices(endpoint):
    calls = []

    def limited(messages, model):
        calls.append(time.monotonic())
        return (429, "slow down") if len(calls) == 1 else "{}"

    endpoint.reset(limited)
    client = ChatClient(
        endpoint.url,
        "openai/m",
        api_key_env=None,
        backoff_sec=0.0,
        input_price_per_mtok=2.0,
        output_price_per_mtok=10.0,
        strip_provider=True,
    )
    answer = client.complete([{"role": "user", "content": "y" * 4000}])
    assert endpoint.requests[-1]["body"]["model"] == "m"
    assert answer.cost_usd == pytest.approx((1000 * 2.0 + 0 * 10.0) / 1e6)
    with pytest.raises(ValueError, match="'base_url' parameter of ChatClient"):
        ChatClient("localhost:8000", "m")


# ---------------------------------------------------------------- task folders -------------
def test_load_task_reads_limits_and_rejects_compose(tmp_path):
    task = write_task(
        tmp_path, "t", instruction="do it", test_sh="true\n", toml="[task]\nname = 'org/t'\n".replace("'", '"')
    )
    spec = load_task(task)
    assert (spec.name, spec.memory_mb, spec.cpus, spec.agent_timeout_sec, spec.verifier_timeout_sec) == (
        "org/t",
        256,
        1.0,
        120.0,
        60.0,
    )
    (task / "task.toml").write_text('[environment]\nmemory = "2G"\n')
    assert load_task(task).memory_mb == 2048
    (task / "environment" / "docker-compose.yaml").write_text("services: {}\n")
    with pytest.raises(UnsupportedTaskError, match="Harbor"):
        load_task(task)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_task(tmp_path / "missing")


def test_a_steps_tests_lie_over_the_shared_tests_and_win_a_name_clash(tmp_path):
    """Harbor's Verifier uploads the task's tests/ then the step's into /tests (the step's file wins);
    a step without tests/ gets the shared ones alone; a file over a folder is refused."""
    from depthlab.runner.container import layered
    from depthlab.runner.errors import AddTestsDirError
    from depthlab.runner.integrity import host_digest
    from depthlab.runner.verifier import verify

    (tmp_path / "environment").mkdir()
    (tmp_path / "environment" / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "task.toml").write_text('schema_version = "1.4"\n[[steps]]\nname = "a"\n[[steps]]\nname = "b"\n')
    files = {"tests/helpers.sh": "shared", "tests/data.txt": "shared", "tests/test.sh": "shared"}
    files |= {"steps/a/tests/test.sh": "a", "steps/a/tests/data.txt": "a", "steps/b/solution/solve.sh": "b"}
    for name in ("a", "b"):
        files[f"steps/{name}/instruction.md"] = name
    for relative, text in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    task = load_task(tmp_path)
    a, b = (task.for_step(step) for step in task.steps)
    assert a.tests_folders == (tmp_path / "tests", tmp_path / "steps/a/tests")
    tree = layered(a.tests_folders)
    assert {name: path.read_text() for name, path in tree.items() if name} == {
        "data.txt": "a",
        "helpers.sh": "shared",
        "test.sh": "a",
    }
    assert host_digest(a.tests_folders).keys() == {"data.txt", "helpers.sh", "test.sh"}
    assert b.tests_folders == (tmp_path / "tests",)
    assert task.tests_folders == (tmp_path / "tests",)  # a single-step view: its tests/ alone
    (tmp_path / "steps/a/tests/helpers.sh").mkdir()
    with pytest.raises(ValueError, match=r"'helpers\.sh' is a folder in one of"):
        layered(a.tests_folders)
    with pytest.raises(AddTestsDirError, match="its tests cannot be laid in /tests"):  # before any container
        verify(None, a, tmp_path / "verifier", timeout_sec=60)  # type: ignore[arg-type]


def test_reward_rules_follow_harbor(tmp_path):
    (tmp_path / "reward.json").write_text('{"a": 1, "b": 0.5}')
    assert read_rewards(tmp_path) == {"a": 1.0, "b": 0.5}
    (tmp_path / "reward.txt").write_text("0\n")  # reward.txt wins over reward.json
    assert read_rewards(tmp_path) == {"reward": 0.0}
    (tmp_path / "reward.txt").write_text("\n")
    with pytest.raises(RewardFileEmptyError):
        read_rewards(tmp_path)
    (tmp_path / "reward.txt").write_text("yes")
    with pytest.raises(VerifierOutputParseError):
        read_rewards(tmp_path)
    with pytest.raises(RewardFileNotFoundError):
        read_rewards(tmp_path / "nothing-here")


# ---------------------------------------------------------------- Harbor output ------------
def test_job_dir_resumes_its_id_and_drops_incomplete_trials(tmp_path):
    job = JobDir(tmp_path, "job", {"n_attempts": 1})
    complete = job.new_trial_dir("org/some-task")
    (complete / "result.json").write_text(json.dumps({"trial_name": complete.name, "agent_info": {"name": "a"}}))
    incomplete = job.new_trial_dir("org/some-task")
    assert complete.name.startswith("some-task__")
    assert complete.name != incomplete.name
    job.update_result()
    again = JobDir(tmp_path, "job", {"n_attempts": 1})
    assert again.id == job.id
    assert remove_incomplete_trials(again.path) == [incomplete.name]
    assert complete.is_dir()
    assert not incomplete.exists()
    result = json.loads((job.path / "result.json").read_text())
    assert result["stats"]["n_completed_trials"] == 1
    assert json.loads((job.path / "config.json").read_text())["job_name"] == "job"


# ---------------------------------------------------------------- deprecated names ---------
def test_run_trial_takes_dataset_and_source_only_as_a_deprecated_alias(tmp_path):
    """The runner's dataset name was ``source`` (a file path in depthlab's tables): the old keyword warns."""
    import warnings

    from depthlab.runner import OracleAgent, run_trial
    from depthlab.runner.multistep import run_task_trial
    from depthlab.runner.trial import _dataset_name

    with pytest.warns(DeprecationWarning, match="'source' parameter of run_trial is deprecated: pass dataset="):
        assert _dataset_name(None, "tb2", "run_trial") == "tb2"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name warns of nothing
        assert _dataset_name("tb2", None, "run_trial") == "tb2"
        assert _dataset_name(None, None, "run_trial") is None
    task = load_task(write_task(tmp_path / "tasks", "hello", instruction="x", test_sh="true\n"))
    job = JobDir(tmp_path / "jobs", "job", {"n_attempts": 1})
    for function in (run_trial, run_task_trial):
        with pytest.raises(TypeError, match="both 'dataset' and its deprecated alias 'source'"):
            function(task, OracleAgent(), job, docker_client=None, dataset="a", source="b")
    assert not list((tmp_path / "jobs" / "job").glob("hello*"))  # refused before a trial folder was made


def test_a_step_collects_the_tasks_artifacts_then_its_own(tmp_path):
    """Harbor collects the task's ``artifacts`` and the step's own after each step (``download_artifacts`` over
    both lists): the step's view of the task carries both, in that order, each once."""
    from depthlab.runner.verifier_env import artifact_paths

    (tmp_path / "environment").mkdir()
    (tmp_path / "environment" / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "task.toml").write_text(
        'schema_version = "1.4"\nartifacts = ["/app/out.txt"]\n'
        '[[steps]]\nname = "a"\nartifacts = ["/app/a.log", "/app/out.txt"]\n[[steps]]\nname = "b"\n'
    )
    for name in ("a", "b"):
        (tmp_path / "steps" / name).mkdir(parents=True)
        (tmp_path / "steps" / name / "instruction.md").write_text(name)
    task = load_task(tmp_path)
    a, b = (task.for_step(step) for step in task.steps)
    assert a.artifacts == ("/app/out.txt", "/app/a.log")
    assert b.artifacts == ("/app/out.txt",)
    assert artifact_paths(a) == ("/app/out.txt", "/app/a.log", "/logs/artifacts")
