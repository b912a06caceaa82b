"""ATIF trajectories are written through one declaration (``harbor_records.ATIF_RECORDS``), judged by Harbor's models.

Harbor's own pydantic models (in its side venv) are the reference: the records have Harbor's fields in Harbor's
order, a trajectory the runner writes validates and is exactly what Harbor would write of it (its ``to_json_dict``:
keys in model order, no nulls), and a simulated one validates.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import msgspec
import pytest
from io_helpers import keys_in_order

from depthlab.io import harbor_records as hr
from depthlab.io import harbor_writer as hw

_HARBOR_SIDE = """
import json, sys
from harbor.models import trajectories
from harbor.models.trajectories import Trajectory
request = json.load(sys.stdin)
fields = {name: list(getattr(trajectories, name).model_fields) for name in request["models"]}
dumps = [Trajectory.model_validate_json(open(path).read()).to_json_dict() for path in request["files"]]
json.dump({"fields": fields, "dumps": dumps}, sys.stdout)
"""


def _harbor(harbor_python: Path, files: list[Path]) -> dict:
    """Harbor's models' field lists and its own dump of each trajectory file (keys in its order)."""
    request = json.dumps({"models": list(hr.ATIF_RECORDS), "files": [str(file) for file in files]})
    done = subprocess.run(
        [str(harbor_python), "-c", _HARBOR_SIDE], input=request, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise AssertionError(f"Harbor's side venv failed:\n{done.stderr}")
    return json.loads(done.stdout)


def _runner_like(path: Path) -> Path:
    """A trajectory written the way the runner's agent writes one: a prompt, a parse error, a turn, an unknown cost."""
    log = hw.Trajectory(path, agent_name="depthlab-terminus", agent_version="1", model_name="openai/gpt-5", extra={})
    log.add("user", "Do it. You have at most 3 turns.")
    log.add(
        "agent",
        "not json",
        model_name="openai/gpt-5",
        observation=hr.AtifObservationRecord(results=[hr.AtifObservationResultRecord(content="parse error")]),
        metrics=hr.AtifMetricsRecord(prompt_tokens=120, completion_tokens=7),
    )
    keys = {"keystrokes": "ls\n"}
    call = hr.AtifToolCallRecord(tool_call_id="call_1_1", function_name="bash_command", arguments=keys)
    log.add(
        "agent",
        "Analysis: a.\nPlan: b.",
        model_name="openai/gpt-5",
        tool_calls=[call],
        observation=hr.AtifObservationRecord(results=[hr.AtifObservationResultRecord(content="New terminal output:")]),
        metrics=hr.AtifMetricsRecord(prompt_tokens=300, completion_tokens=20, cached_tokens=100),
    )
    return path


@pytest.mark.harbor
def test_runner_and_simulated_trajectories_are_what_harbor_writes(harbor_python, harbor_check, tmp_path):
    from depthlab.simulate import write_runs

    written = _runner_like(tmp_path / "runner" / "trajectory.json")
    write_runs(tmp_path / "sim", seed=3, scale=0.02)
    simulated = sorted((tmp_path / "sim").rglob("trajectory.json"))[:3]
    assert simulated, "the simulator wrote no trajectory"
    verdicts = harbor_check([("trajectory", path) for path in [written, *simulated]])
    assert verdicts == dict.fromkeys(map(str, [written, *simulated]))
    harbor = _harbor(harbor_python, [written])

    # the records: Harbor's fields, in Harbor's order, no more, no fewer
    for name, record in hr.ATIF_RECORDS.items():
        ours = [field.encode_name for field in msgspec.structs.fields(record)]
        assert ours == harbor["fields"][name], name

    # the runner's file is Harbor's own dump of it: keys in model order, a count not reported left out (not null)
    ours = json.loads(written.read_text())
    assert keys_in_order(ours) == keys_in_order(harbor["dumps"][0])
    assert "cached_tokens" not in ours["steps"][1]["metrics"]
    assert "total_cost_usd" not in ours["final_metrics"]
    assert ours["final_metrics"]["total_cached_tokens"] == 100
    assert list(ours["steps"][2])[:5] == ["step_id", "timestamp", "source", "model_name", "message"]


def test_a_step_is_checked_against_the_declaration():
    with pytest.raises(msgspec.ValidationError, match="prompt_tokens"):
        hw.atif_step(1, "2026-01-01T00:00:00Z", "agent", "m", metrics={"prompt_tokens": "many"})
    with pytest.raises(ValueError, match="'source' parameter of atif_step"):
        hw.atif_step(1, "2026-01-01T00:00:00Z", "robot", "m")
