"""What the local runner accepts from task.toml it applies as Harbor does (issue 36): ``[verifier.env]`` and
each step's ``[steps.verifier.env]`` reach the tests' process, ``os = "windows"`` is refused before anything
runs, ``skills_dir`` is listed to the agent as Harbor's terminus-2 lists it."""

from __future__ import annotations

from pathlib import Path

import pytest
from runner_helpers import write_task

from depthlab.runner import UnsupportedTaskError, load_task
from depthlab.runner.preflight import preflight
from depthlab.runner.verifier import verifier_environment

# the tests grade the answer against what the verifier's environment says, so a verifier run without
# [verifier.env] fails even the reference solution
_NEEDS_ENV = (
    'if [ -n "$ANSWER_FILE" ] && [ "$(cat "$ANSWER_FILE" 2>/dev/null)" = "$EXPECTED" ]; '
    "then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
)
_HOST_VARIABLE = "DEPTHLAB_TEST_EXPECTED_ANSWER"


def _env_task(root: Path) -> Path:
    return write_task(
        root,
        "needs-env",
        instruction="Write the secret to /app/answer.txt.",
        test_sh=_NEEDS_ENV,
        solve_sh="echo from-the-host > /app/answer.txt\n",
        toml=f'[verifier.env]\nANSWER_FILE = "/app/answer.txt"\nEXPECTED = "${{{_HOST_VARIABLE}:-unset}}"\n',
    )


def _steps_task(root: Path, image: str | None = None) -> Path:
    # the cookbook's shape: a task-level [verifier.env] and a step that overrides one of its variables
    task = write_task(
        root,
        "steps-env",
        instruction="unused: a multi-step task has its steps' instructions",
        test_sh="echo 0 > /logs/verifier/reward.txt\n",
        toml='[verifier.env]\nWHO = "the task"\nSHARED = "kept"\n'
        '[[steps]]\nname = "one"\n[steps.verifier.env]\nWHO = "step one"\n'
        '[[steps]]\nname = "two"\n',
    )
    if image is not None:  # between steps the runner empties /tests with find options busybox lacks
        (task / "environment" / "Dockerfile").write_text(f"FROM {image}\nWORKDIR /app\n")
    for name, who in (("one", "step one"), ("two", "the task")):
        step = task / "steps" / name
        (step / "solution").mkdir(parents=True)
        (step / "tests").mkdir()
        (step / "instruction.md").write_text(f"Do step {name}.")
        (step / "solution" / "solve.sh").write_text(f"echo {name} > /app/{name}.txt\n")
        (step / "tests" / "test.sh").write_text(
            f'if [ "$WHO" = "{who}" ] && [ "$SHARED" = kept ] && [ -f /app/{name}.txt ]; '
            "then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
        )
    return task


def test_the_verifier_environment_merges_a_steps_variables_over_the_tasks(tmp_path):
    spec = load_task(_steps_task(tmp_path))
    one, two = (spec.for_step(step) for step in spec.steps)
    assert verifier_environment(one) == {"WHO": "step one", "SHARED": "kept"}
    assert verifier_environment(two) == {"WHO": "the task", "SHARED": "kept"}


def test_a_template_takes_the_hosts_variable_and_a_missing_one_is_harbors_value_error(tmp_path, monkeypatch):
    spec = load_task(_env_task(tmp_path))
    monkeypatch.delenv(_HOST_VARIABLE, raising=False)
    assert verifier_environment(spec)["EXPECTED"] == "unset"  # the template's default
    monkeypatch.setenv(_HOST_VARIABLE, "from-the-host")
    assert verifier_environment(spec)["EXPECTED"] == "from-the-host"
    strict = load_task(_env_task(tmp_path / "strict"))
    (strict.path / "task.toml").write_text(f'[verifier.env]\nEXPECTED = "${{{_HOST_VARIABLE}}}"\n')
    monkeypatch.delenv(_HOST_VARIABLE)
    with pytest.raises(ValueError, match=f"needs the variable '{_HOST_VARIABLE}'"):
        verifier_environment(load_task(strict.path))


def test_a_verifier_env_that_is_not_text_is_refused_naming_the_key(tmp_path):
    task = _env_task(tmp_path)
    (task / "task.toml").write_text("[verifier.env]\nRETRIES = 3\n")
    with pytest.raises(ValueError, match=r"\[verifier\]\.env must be a table of text values, got \{'RETRIES': 3\}"):
        load_task(task)


@pytest.mark.parametrize("written", ["windows", "Windows"])
def test_a_windows_task_is_refused_in_one_line_before_anything_runs(tmp_path, written):
    task = tmp_path / "win"
    (task / "solution").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "instruction.md").write_text("Write C:\\app\\answer.txt.")
    (task / "solution" / "solve.bat").write_text("echo hi > C:\\app\\answer.txt\r\n")
    (task / "tests" / "test.bat").write_text("exit 0\r\n")
    # no environment/Dockerfile: the refusal comes first, not a complaint about a Linux file
    (task / "task.toml").write_text(f'[environment]\nos = "{written}"\n')
    with pytest.raises(UnsupportedTaskError) as refused:
        load_task(task)
    message = str(refused.value)
    assert "\n" not in message
    assert "a Windows task cannot run in a Linux container" in message
    assert "--engine harbor" in message
    report = preflight([task], jobs_dir=tmp_path / "jobs")  # refused by the preflight too, no container made
    assert [row.passed for row in report.rows] == [False]
    assert "a Windows task cannot run in a Linux container" in report.rows[0].reason


def test_mcp_servers_are_refused_not_dropped(tmp_path):
    # the runner once ran such a task without telling its agent of the servers, as if task.toml had not named them
    task = write_task(tmp_path, "extra", instruction="x", test_sh="true\n")
    (task / "task.toml").write_text(
        '[[environment.mcp_servers]]\nname = "m"\ntransport = "sse"\nurl = "http://m/mcp"\n'
    )
    with pytest.raises(UnsupportedTaskError, match="--engine harbor") as refused:
        load_task(task)
    assert "mcp_servers" in str(refused.value)
    (task / "task.toml").write_text("[environment]\nmcp_servers = []\n")  # empty: nothing to apply
    assert load_task(task).name == "extra"


@pytest.mark.docker
def test_every_process_of_the_trial_gets_the_tasks_environment_env(tmp_path, docker_client, monkeypatch):
    # Harbor gives [environment.env] to every command in the agent's container: here the reference solution
    # and the tests both read it; the runner once gave it to neither
    monkeypatch.setenv(_HOST_VARIABLE, "from-the-host")
    task = write_task(
        tmp_path / "tasks",
        "task-env",
        instruction="Write the project's name to /app/name.txt.",
        test_sh='if [ "$(cat /app/name.txt)" = "$PROJECT-$SECRET" ]; then echo 1 > /logs/verifier/reward.txt; '
        "else echo 0 > /logs/verifier/reward.txt; fi\n",
        solve_sh='echo "$PROJECT-$SECRET" > /app/name.txt\n[ -n "$PROJECT" ]\n',
        toml=f'[environment.env]\nPROJECT = "greeter"\nSECRET = "${{{_HOST_VARIABLE}}}"\n',
    )
    assert load_task(task).environment_env == {"PROJECT": "greeter", "SECRET": f"${{{_HOST_VARIABLE}}}"}
    report = preflight([task], jobs_dir=tmp_path / "jobs", docker_client=docker_client)
    assert [(row.task, row.passed) for row in report.rows] == [("task-env", True)], report.render()
    # never written down: the resolved value is in no file of the trial
    files = [path for path in (tmp_path / "jobs").rglob("*") if path.is_file()]
    assert [str(path) for path in files if b"from-the-host" in path.read_bytes()] == []


@pytest.mark.docker
def test_a_task_whose_tests_need_its_verifier_env_passes_its_preflight(tmp_path, docker_client, monkeypatch):
    # the runner once gave the tests only its own PYTHON* variables: this reference solution scored 0
    monkeypatch.setenv(_HOST_VARIABLE, "from-the-host")
    task = _env_task(tmp_path / "tasks")
    report = preflight([task], jobs_dir=tmp_path / "jobs", docker_client=docker_client)
    assert [(row.task, row.passed) for row in report.rows] == [("needs-env", True)], report.render()


@pytest.mark.docker
def test_each_step_of_a_multi_step_task_gets_its_verifier_env(tmp_path, docker_client, userland_image):
    task = _steps_task(tmp_path / "tasks", userland_image)
    report = preflight([task], jobs_dir=tmp_path / "jobs", docker_client=docker_client)
    assert [(row.task, row.passed) for row in report.rows] == [("steps-env", True)], report.render()


@pytest.mark.docker
def test_the_tasks_skills_are_listed_after_the_instruction_as_terminus_2_lists_them(
    tmp_path, docker_client, endpoint, api_key
):
    from runner_helpers import API_KEY_ENV, reply

    from depthlab.runner import ChatClient, HarnessConfig, TerminusAgent, run_trial
    from depthlab.runner.output import JobDir

    task = write_task(
        tmp_path / "tasks",
        "skills",
        instruction="Use a skill.",
        test_sh="echo 1 > /logs/verifier/reward.txt\n",
        toml='skills_dir = "/skills"\n',  # under [environment], which write_task's toml ends with
    )
    for name, text in (
        ("csv", "---\nname: csv\ndescription: Read CSV files & sum a column.\n---\nUse awk.\n"),
        ("broken", "no front matter here\n"),  # left out, as Harbor leaves it out
    ):
        (task / "environment" / "skills" / name).mkdir(parents=True)
        (task / "environment" / "skills" / name / "SKILL.md").write_text(text)
    dockerfile = task / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace("WORKDIR /app", "COPY skills /skills\nWORKDIR /app"))
    endpoint.reset(lambda messages, model: reply(complete=True))
    client = ChatClient(endpoint.url, "scripted/m", api_key_env=API_KEY_ENV, max_retries=0)
    agent = TerminusAgent(client, HarnessConfig(cap=2))
    outcome = run_trial(load_task(task), agent, JobDir(tmp_path / "jobs", "job", {}), docker_client=docker_client)
    assert outcome.status == "pass", outcome
    first = endpoint.requests[0]["body"]["messages"][0]["content"]
    block = (
        "Use a skill.\n<available_skills>\n  <skill>\n    <name>csv</name>\n"
        "    <description>Read CSV files &amp; sum a column.</description>\n"
        "    <location>/skills/csv/SKILL.md</location>\n  </skill>\n</available_skills>"
    )
    assert block in first
    assert "broken" not in first


# Harbor's own terminus-2 builds its skills block with a stand-in environment that runs its commands here
_HARBORS_BLOCK = """
import asyncio, subprocess, sys
from types import SimpleNamespace
from harbor.agents.terminus_2.terminus_2 import Terminus2

class Here:
    async def is_dir(self, path):
        import os
        return os.path.isdir(path)
    async def exec(self, command, timeout_sec=None, **kwargs):
        done = subprocess.run(["sh", "-c", command], capture_output=True, text=True)
        return SimpleNamespace(return_code=done.returncode, stdout=done.stdout, stderr=done.stderr)

agent = Terminus2.__new__(Terminus2)
agent.skills_dir = sys.argv[1]
print(asyncio.run(agent._build_skills_section(Here())) or "", end="")
"""


class _HereBox:
    """A stand-in TaskContainer whose commands run on this machine (for the comparison with Harbor)."""

    agent_user = None

    def exec(self, command, *, timeout, user=None):
        import subprocess

        done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
        return done.returncode, done.stdout


@pytest.mark.harbor
def test_the_skills_block_is_harbors_own(tmp_path, harbor_python):
    import subprocess

    from depthlab.runner.skills import skills_section

    skills = tmp_path / "skills"
    for name, text in (
        ("b-sum", "---\nname: sum\ndescription: 'Sum <numbers> & more'\n---\n"),
        ("a-csv", "---\nname: csv\ndescription: Read CSV files.\nlicense: MIT\n---\nBody.\n"),
        ("c-none", "---\nname: only a name\n---\n"),
        ("d-bad", "---\n: [unclosed\n---\n"),
    ):
        (skills / name).mkdir(parents=True)
        (skills / name / "SKILL.md").write_text(text)
    (skills / "top-level.md").write_text("not a skill folder\n")
    harbors = subprocess.run(
        [str(harbor_python), "-c", _HARBORS_BLOCK, str(skills)], capture_output=True, text=True, check=True
    ).stdout
    assert "<name>csv</name>" in harbors  # the comparison below compares something
    assert "<name>sum</name>" in harbors
    assert skills_section(_HereBox(), str(skills)) == harbors  # type: ignore[arg-type]
    assert skills_section(_HereBox(), str(tmp_path / "absent")) == ""


@pytest.mark.harbor
def test_the_cookbooks_skills_recipe_gives_harbors_block(shared, harbor_python):
    # Harbor's own recipe (harbor-framework/harbor-cookbook, recipes/skills): its skills folder, read in place
    import subprocess

    from depthlab.runner.skills import skills_section

    recipe = shared / "samples" / "harbor-framework_harbor-cookbook" / "harbor_cookbook" / "recipes" / "skills"
    if not recipe.is_dir():
        pytest.skip(f"the cookbook's skills recipe is not at {recipe}")
    assert load_task(recipe).skills_dir == "/skills"
    skills = recipe / "environment" / "skills"
    harbors = subprocess.run(
        [str(harbor_python), "-c", _HARBORS_BLOCK, str(skills)], capture_output=True, text=True, check=True
    ).stdout
    assert "<name>generate-greeting</name>" in harbors
    assert skills_section(_HereBox(), str(skills)) == harbors  # type: ignore[arg-type]


_HARBORS_SIZES = """
import json, sys, warnings
from harbor.models.task.config import EnvironmentConfig
warnings.simplefilter("ignore")
out = []
for text in json.loads(sys.argv[1]):
    try:
        out.append(EnvironmentConfig(storage=text).storage_mb)
    except Exception:
        out.append(None)
print(json.dumps(out))
"""


@pytest.mark.harbor
def test_sizes_are_converted_as_harbors_own_model_converts_them(harbor_python):
    import json
    import subprocess

    from depthlab.io.harbor_task import size_mb

    sizes = ["2G", "1.5G", " 512m ", "512M", "2049K", "0.5K", "1.5GiB", "2GB", "1T", "2048", "lots", ".5G", "10g"]
    harbors = json.loads(
        subprocess.run(
            [str(harbor_python), "-c", _HARBORS_SIZES, json.dumps(sizes)], capture_output=True, text=True, check=True
        ).stdout
    )
    assert harbors[:3] == [2048, 1536, 512]  # Harbor read these: the comparison compares something
    assert [size_mb(text) for text in sizes] == harbors
