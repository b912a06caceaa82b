"""The oracle agent: runs the task's reference ``solution/solve.sh`` instead of a model.

It checks that a task is solvable and that its verifier works, as Harbor's ``oracle`` agent
does. Its trials have no stated cap (``stated_cap`` null) and no turns. A ``solve.sh`` that exits
non-zero is graded all the same, as Harbor 0.26's oracle grades it (``harbor/agents/oracle.py``: the
exit code written to ``agent/exit-code.txt``, no exception, the verifier run).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from depthlab._atomic import write_text
from depthlab.io import harbor_writer
from depthlab.runner.agent import AgentContext
from depthlab.runner.container import TaskContainer, script_command
from depthlab.runner.errors import AgentTimeoutError
from depthlab.runner.output import VERSION
from depthlab.runner.task import TaskSpec
from depthlab.runner.verifier import resolve_env

#: In the agent's log folder: a non-zero exit code of the solution script (Harbor's oracle writes it too).
EXIT_CODE_FILE = "exit-code.txt"


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
        run_solution(box, task, agent_dir / "oracle.txt", deadline, context, timeout_sec=timeout_sec)


def run_solution(
    box: TaskContainer,
    task: TaskSpec,
    output: Path,
    deadline: float,
    context: AgentContext,
    *,
    script: str | None = None,
    timeout_sec: float | None = None,
) -> None:
    """Run the step's ``solve.sh``, or ``script`` in its place, as the agent in ``box`` until ``deadline``.

    The one run of a solution script, the oracle's and the checks' replays' (``script``: an edited
    ``solve.sh``): ``solution/`` is copied to ``/solution``, the script runs as the agent's user
    with ``[solution.env]``, its output streamed to ``output`` (cut to ``FILE_LIMIT_BYTES``), and
    its exit code goes to ``context.metadata["exit_code"]``.

    Raises
    ------
    FileNotFoundError
        No ``script`` and the step has no ``solve.sh``.
    AgentTimeoutError
        ``deadline`` (``time.monotonic``) passed; the message names ``timeout_sec`` (default: the
        task's agent timeout) in Harbor's words.
    """
    solution = task.solution_path
    if script is None and not (solution / "solve.sh").is_file():
        where = solution.relative_to(task.path) if solution.is_relative_to(task.path) else solution
        raise FileNotFoundError(f"The task {task.name!r} has no {where}/solve.sh for the oracle")
    box.put_directory(solution, "/solution")
    if script is not None:
        box.put_file("/solution/solve.sh", script.encode(), mode=0o755)
    environment = {  # as Harbor's oracle runs it: [solution.env] resolved from the host, and no prompts
        **resolve_env(task.solution_env, f"The task {task.name!r}: [solution.env]"),
        "DEBIAN_FRONTEND": "noninteractive",
    }
    try:
        exit_code, _ = box.exec_to_file(
            script_command("/solution/solve.sh"),
            output,
            timeout=deadline - time.monotonic(),
            user=box.agent_user,
            environment=environment,
        )
    except TimeoutError:
        timeout = timeout_sec if timeout_sec is not None else task.agent_timeout_sec
        raise AgentTimeoutError(f"Agent execution timed out after {timeout:g} seconds") from None
    context.metadata["exit_code"] = exit_code
    if exit_code != 0:  # Harbor's record of it; the tests run all the same
        write_text(output.parent / EXIT_CODE_FILE, str(exit_code))
