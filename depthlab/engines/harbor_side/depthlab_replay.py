"""depthlab's replay agent on Harbor: each step's chosen solution script, no model (loaded by Harbor only).

``depthlab check --engine harbor`` runs every replay as one Harbor trial (``harbor trials start``)
whose agent entry names this class (``import_path = "depthlab_replay:ReplayAgent"``, this folder
on the ``harbor`` child's ``PYTHONPATH``). Its kwargs are the replay's plan, one entry per step in
the task's order (Harbor calls ``run`` once per step with the same agent object):

* ``steps``: a list of ``{"solution": <the step's solution folder on the host>, "script": <text>}``;
  a ``script`` of None: the step is not done (the checks' *before*);
* a script's non-zero exit is no exception: it is written to ``exit-code.txt`` in the agent's log
  folder and the step is graded by its tests, as Harbor's own oracle does;
* ``replay`` and ``task_checksum``: the replay's key and the original task's checksum, read back
  from the trial's ``config.json`` by depthlab to find the replays a killed check finished.

For a step to be done the agent uploads the step's solution folder to ``/solution``, replaces
``/solution/solve.sh`` with the script and runs it with bash; its output goes to ``replay.txt`` in
the agent's log folder. It runs in Harbor's own environment (Python >= 3.12, Harbor importable,
depthlab not): it imports Harbor and the standard library only.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

from harbor.agents.base import BaseAgent

#: The name the trials' results give the agent (depthlab's local runner writes the same).
AGENT_NAME = "depthlab-replay"
#: The script's output, in the agent's log folder.
OUTPUT_FILE = "replay.txt"


#: In the agent's log folder: the script's non-zero exit code (Harbor's oracle writes the same file).
EXIT_CODE_FILE = "exit-code.txt"


class ReplayAgent(BaseAgent):
    """Run, for each step in turn, the script of its plan entry, or nothing (module docstring)."""

    def __init__(
        self,
        *args: Any,
        steps: list[dict[str, Any]] | None = None,
        replay: str = "",
        task_checksum: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._steps = list(steps or [])
        self._replay = replay
        self._task_checksum = task_checksum
        self._index = 0

    @staticmethod
    def name() -> str:
        return AGENT_NAME

    def version(self) -> str | None:
        return "1"

    async def setup(self, environment: Any) -> None:
        return None

    async def run(self, instruction: str, environment: Any, context: Any) -> None:
        index = self._index
        self._index += 1
        entry = self._steps[index] if index < len(self._steps) else {}
        script = entry.get("script")
        metadata: dict[str, Any] = {"replay": self._replay, "replayed": script is not None}
        context.metadata = metadata
        if script is None:  # this step is not done
            return
        with tempfile.TemporaryDirectory(prefix="depthlab-replay-") as folder:
            staged = Path(folder) / "solution"
            source = entry.get("solution")
            if source and Path(source).is_dir():
                shutil.copytree(source, staged, symlinks=True)
            staged.mkdir(exist_ok=True)
            (staged / "solve.sh").write_text(script, encoding="utf-8")
            await environment.upload_dir(source_dir=staged, target_dir="/solution")
        output = f"/logs/agent/{OUTPUT_FILE}"
        result = await environment.exec(
            command=f"mkdir -p /logs/agent; bash /solution/solve.sh > {shlex.quote(output)} 2>&1",
            env={"DEBIAN_FRONTEND": "noninteractive"},
        )
        exit_code = int(getattr(result, "return_code", 0) or 0)
        metadata["exit_code"] = exit_code
        context.metadata = metadata
        if exit_code != 0:  # recorded as Harbor's oracle records it; the tests run all the same
            logs = Path(self.logs_dir)
            logs.mkdir(parents=True, exist_ok=True)
            (logs / EXIT_CODE_FILE).write_text(str(exit_code))
