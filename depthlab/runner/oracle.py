"""The oracle agent: runs the task's reference ``solution/solve.sh`` instead of a model.

It checks that a task is solvable and that its verifier works, as Harbor's ``oracle`` agent
does. Its trials have no stated cap (``stated_cap`` null) and no turns.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from depthlab.io import harbor_writer
from depthlab.runner.agent import AgentContext
from depthlab.runner.container import TaskContainer, script_command
from depthlab.runner.errors import AgentTimeoutError, NonZeroAgentExitCodeError
from depthlab.runner.output import VERSION
from depthlab.runner.task import TaskSpec
from depthlab.runner.verifier import resolve_env


class OracleAgent:
    """Copy ``solution/`` to ``/solution`` and run ``solve.sh`` under the agent timeout.

    ``solve.sh`` runs with task.toml's ``[solution.env]``, its ``${VAR}`` templates taken from the
    runner's environment, as Harbor's oracle gives them (``DEBIAN_FRONTEND=noninteractive`` too).

    Examples
    --------
    >>> OracleAgent().config_kwargs()
    {'max_turns': None, 'stated_cap': None}
    """

    name = "oracle"
    version = VERSION
    model_name = None

    def config_kwargs(self) -> dict[str, Any]:
        return harbor_writer.cap_kwargs(None)

    #: No turns: a multi-step run gives every step the same oracle.
    turn_budget = None

    def with_turns(self, turns: int) -> OracleAgent:
        return self

    def run(
        self,
        box: TaskContainer,
        task: TaskSpec,
        agent_dir: Path,
        deadline: float,
        context: AgentContext,
        *,
        timeout_sec: float | None = None,
    ) -> None:
        solution = task.solution_path
        if not (solution / "solve.sh").is_file():
            where = solution.relative_to(task.path) if solution.is_relative_to(task.path) else solution
            raise FileNotFoundError(f"The task {task.name!r} has no {where}/solve.sh for the oracle")
        box.put_directory(solution, "/solution")
        environment = {
            **resolve_env(task.solution_env, f"The task {task.name!r}: [solution.env]"),
            "DEBIAN_FRONTEND": "noninteractive",
        }
        try:  # the output streams to disk, cut to FILE_LIMIT_BYTES
            exit_code, _ = box.exec_to_file(
                script_command("/solution/solve.sh"),
                agent_dir / "oracle.txt",
                timeout=deadline - time.monotonic(),
                user=box.agent_user,
                environment=environment,
            )
        except TimeoutError:
            timeout = timeout_sec if timeout_sec is not None else task.agent_timeout_sec
            raise AgentTimeoutError(f"Agent execution timed out after {timeout:g} seconds") from None
        context.metadata["exit_code"] = exit_code
        if exit_code != 0:
            raise NonZeroAgentExitCodeError(f"solution/solve.sh exited with code {exit_code}")
