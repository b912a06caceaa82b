"""A gate no run can meet fails the oracle preflight on both engines, naming the step never reached (issue 37, item 6).

The 2-step chain task FROM the Debian userland with ``min_reward = 2.0`` on its first step: every
step's tests give 1 at best, so step 2 never runs in any trial, and under Harbor's ``mean`` the
trial's reward is step 1's (1.0): the reference solution "passed" and D was reported on step 1
alone. The preflight now leaves the task out on both engines, before any model call, with one line
naming step 2; a task whose gate the reference solution meets (the same task, ``min_reward =
1.0``) still passes.
"""

from __future__ import annotations

import json

import pytest
from engines_helpers import engine_flags, measure_args, run_measure
from multistep_helpers import write_two_step_task

pytestmark = [pytest.mark.docker, pytest.mark.harbor]

UNREACHED = (
    "step 2 ('second') is never reached: the reference solution got reward 1 in step 1 ('first'), "
    "below its min_reward 2"
)


@pytest.fixture(scope="module")
def gated(userland, tmp_path_factory):
    root = tmp_path_factory.mktemp("gates") / "tasks"
    task = write_two_step_task(root, userland, name="ms-gate-two")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("min_reward = 1.0", "min_reward = 2.0", 1))
    return root


@pytest.mark.parametrize("engine", ["local", "harbor"])
def test_a_gate_no_run_can_meet_fails_the_preflight_naming_the_step(
    engine, gated, server, request, measure_env, tmp_path
):
    extra = engine_flags(engine, request)
    before = server.count()
    args = measure_args(gated, tmp_path / "jobs", tmp_path / "depth.csv", server.url, *extra, caps="3,5")
    run = run_measure(args, measure_env, timeout=1200)
    assert run.returncode == 1, run.stderr[-3000:]
    lines = run.stderr.splitlines()
    assert "oracle preflight: 1 task(s) left out, their reference solution fails:" in lines, run.stderr[-3000:]
    assert f"  ms-gate-two: {UNREACHED}" in lines, run.stderr[-3000:]
    assert server.count() == before  # no model was called
    assert "round 1" not in run.stderr


def test_the_rule_passes_a_gate_the_reference_solution_meets(tmp_path):
    from depthlab.io.harbor import read_trial_result
    from depthlab.runner.preflight import unreached_step

    def oracle(*steps):
        path = tmp_path / "result.json"
        path.write_text(json.dumps({"step_results": list(steps)}))
        return read_trial_result(path)

    (tmp_path / "task.toml").write_text('[[steps]]\nname = "first"\nmin_reward = 1.0\n[[steps]]\nname = "second"\n')
    step = {"step_name": "first", "verifier_result": {"rewards": {"reward": 1.0}}}
    assert unreached_step(oracle(step, {**step, "step_name": "second"}), tmp_path) is None
    # a run stopped at the gate because step 1 failed is named by the step that fails, not here
    failed = {"step_name": "first", "verifier_result": {"rewards": {"reward": 0.0}}}
    assert unreached_step(oracle(failed), tmp_path) == (
        "step 2 ('second') is never reached: the reference solution got reward 0 in step 1 ('first'), "
        "below its min_reward 1"
    )
    stopped = {"step_name": "first", "exception_info": {"exception_type": "AgentTimeoutError"}}
    assert unreached_step(oracle(stopped), tmp_path) is None
