"""The capped agent loop, in the style of Harbor's terminus-2.

Protocol (prompt version ``depthlab-terminus-1``)
-------------------------------------------------
* One user message opens the conversation: how to answer, the task's instruction, the cap
  sentence (:func:`cap_sentence`: "You have at most K turns...") and the shell's starting state.
* Every model reply is one **turn**, whatever it contains. The model answers one JSON object:
  ``analysis`` (str), ``plan`` (str), ``commands`` (list of ``{keystrokes, duration}``) and
  ``task_complete`` (bool, default false).
* The keystrokes go, in order, to one persistent shell in the container
  (:class:`depthlab.runner.shell.Shell`); each command is waited for until it finishes or
  its ``duration`` passes (default 1 s, at most ``max_command_sec``). The observation returned as
  the next user message is each command line followed by its output, cut to
  ``output_limit_bytes`` (the first and last halves are kept).
* A malformed reply (no JSON object, missing ``analysis``/``plan``, bad ``commands``) gets the
  error back as the next observation and counts as a turn.
* ``task_complete: true`` runs that turn's commands, then asks for confirmation (as terminus-2
  does); the loop ends when the next reply says ``task_complete: true`` again. Any other reply
  cancels the request. The confirming reply is a turn too, so a model that stops early uses
  (turns of work) + 1. The loop also ends after ``max_turns`` turns (the cap): the harness
  enforces exactly the cap it states; the verifier then grades the container as it is.
* The whole loop, model calls included, runs under the agent timeout (the task's, or the
  override); past it the trial records ``AgentTimeoutError`` and is still verified (as Harbor
  does). A model request that started in time gets its whole request timeout: a reply that
  comes after the agent's deadline is an ``AgentTimeoutError`` (the model was slow), while an
  endpoint that does not answer within the request timeout, or fails through every retry,
  records ``LLMEndpointError``, an *invalid* trial (an outage is not the model's failure).
  So a trial can outlast its agent timeout by at most one request timeout.
* A task with ``[environment].skills_dir`` has its skills listed after the instruction, as
  terminus-2 lists them (:mod:`depthlab.runner.skills`).
* An instruction longer than ``instruction_limit_bytes`` (default 64 KiB) is not repeated in
  every request: it is written once into the container as ``/logs/agent/instruction.md``, and
  the prompt holds its beginning and tells the agent to read the file.
* A command's output is held in a bounded buffer (its head and tail; see
  :class:`depthlab.runner.shell.Shell`), then cut to ``output_limit_bytes``; the
  observation says how many bytes were left out.

Every trial records these parameters in ``config.agent.kwargs`` (``max_turns`` = ``stated_cap``
= the cap) and in the trajectory's ``agent.extra``, since a depth measured under another
harness is not the same number.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from depthlab._checks import check_choice, check_int_at_least, check_positive_finite, check_positive_int
from depthlab._defaults import DEFAULT_API_KEY_ENV
from depthlab.io import harbor_writer
from depthlab.io.harbor_records import (
    AgentContextRecord,
    AtifMetricsRecord,
    AtifObservationRecord,
    AtifObservationResultRecord,
    AtifToolCallRecord,
)
from depthlab.io.harbor_writer import cap_sentence
from depthlab.runner.container import TaskContainer
from depthlab.runner.errors import AgentTimeoutError
from depthlab.runner.llm import ChatClient, ChatReply
from depthlab.runner.output import VERSION, Trajectory, write_text
from depthlab.runner.shell import SHELL_BUFFER_BYTES
from depthlab.runner.skills import skills_section
from depthlab.runner.task import TaskSpec
from depthlab.runner.terminal import TmuxTerminal, has_tmux

AGENT_NAME = "depthlab-terminus"
PROMPT_VERSION = "depthlab-terminus-1"

_PROMPT = """You are solving a task in a Linux shell inside a container. You will get the task and, \
after each of your replies, the output of the commands you sent.

{cap}Answer every time with exactly one JSON object and nothing else:

{{
  "analysis": "What the last output shows and what is still to do.",
  "plan": "What you will do next, and why.",
  "commands": [
    {{"keystrokes": "ls -la\\n", "duration": 0.1}},
    {{"keystrokes": "cat notes.txt\\n", "duration": 0.1}}
  ],
  "task_complete": false
}}

- "keystrokes" are typed verbatim into one persistent shell. End every command with a newline (\\n) \
or it will not run. "C-c" interrupts the running command.
- "duration" is how many seconds to wait for the command (default 1, at most {max_command}). The \
output comes back as soon as the command finishes. To wait longer for a running command, send \
{{"keystrokes": "", "duration": 30}}.
- The output of a turn is cut to {limit} bytes.
- Set "task_complete" to true when the task is done; you will be asked to confirm it once.

Task:
{instruction}

The shell starts in {cwd}."""

#: Where a long instruction is written in the container.
INSTRUCTION_FILE = "/logs/agent/instruction.md"
#: Characters of a long instruction quoted in the prompt.
INSTRUCTION_EXCERPT_CHARS = 2000
#: What the agent is sent in place of an instruction over the limit (on both engines: depthlab's
#: guarded terminus-2 under Harbor sends the same).
LONG_INSTRUCTION = (
    "The instruction is {size} bytes long, too long to repeat in every message. It is in the file "
    "{path}; read it with the shell (it is long: read it in parts). It begins:\n\n{excerpt}\n[...]"
)
#: The default of ``HarnessConfig.instruction_limit_bytes``.
INSTRUCTION_LIMIT_BYTES = 64 * 1024

# the same protocol in tmux, whose waits are the durations themselves (as terminus-2's)
_TMUX_PROMPT = _PROMPT.replace(
    "The output comes back as soon as the command finishes.",
    "The terminal waits that long, then shows what appeared. Interactive programs (python3, less, vi) work; "
    'keys such as "C-c", "C-d", "Escape" or "q" are pressed when sent alone.',
).replace("one persistent shell", "one terminal (tmux)")

#: The terminals :class:`HarnessConfig` can ask for.
TERMINALS: tuple[str, ...] = ("auto", "tmux", "shell")

_CONFIRM = (
    "You marked the task as complete. Your work will then be graded as it is and you cannot change it "
    'afterwards. If that is what you want, answer again with "task_complete": true; otherwise continue.'
)


@dataclass(frozen=True)
class HarnessConfig:
    """The agent loop's parameters; recorded with every trial.

    Parameters
    ----------
    cap : int or None
        Turn cap stated to the agent and enforced by the harness; None = uncapped (only ``safety_turns``).
    output_limit_bytes : int, default 10000
        Observation size limit per turn.
    max_command_sec : float, default 60.0
        Longest wait for a single command.
    default_duration_sec : float, default 1.0
        Wait when a command gives no duration.
    confirm_completion : bool, default True
        Ask the model to confirm ``task_complete`` (terminus-2's behaviour).
    safety_turns : int, default 200
        Turn limit of uncapped runs (what TB2's official runs used).
    instruction_limit_bytes : int, default 65536
        Longest instruction put in the prompt; a longer one is written once into the container
        (``/logs/agent/instruction.md``) and the prompt quotes its beginning.
    terminal : {"auto", "tmux", "shell"}, default "auto"
        The agent's terminal: ``tmux`` (:class:`~depthlab.runner.terminal.TmuxTerminal`, keystrokes
        and waits as terminus-2 drives its terminal), the persistent ``shell``
        (:class:`~depthlab.runner.shell.Shell`), or ``auto``: tmux when the image has it.

    Examples
    --------
    >>> HarnessConfig(cap=5).max_turns
    5
    """

    cap: int | None
    output_limit_bytes: int = 10_000
    max_command_sec: float = 60.0
    default_duration_sec: float = 1.0
    confirm_completion: bool = True
    safety_turns: int = 200
    instruction_limit_bytes: int = INSTRUCTION_LIMIT_BYTES
    terminal: str = "auto"

    def __post_init__(self) -> None:
        check_choice(self.terminal, "terminal", "HarnessConfig", TERMINALS)
        if self.cap is not None:
            check_positive_int(self.cap, "cap", "HarnessConfig")
        check_int_at_least(self.output_limit_bytes, "output_limit_bytes", "HarnessConfig", 100)
        check_int_at_least(
            self.instruction_limit_bytes, "instruction_limit_bytes", "HarnessConfig", INSTRUCTION_EXCERPT_CHARS * 4
        )
        for name in ("max_command_sec", "default_duration_sec"):
            check_positive_finite(getattr(self, name), name, "HarnessConfig")

    @property
    def max_turns(self) -> int:
        return self.cap if self.cap is not None else self.safety_turns

    def as_kwargs(self) -> dict[str, Any]:
        """The record in ``config.agent.kwargs``: Harbor's ``max_turns`` plus ``stated_cap`` and the rest."""
        record = asdict(self)
        cap = record.pop("cap")
        return harbor_writer.cap_kwargs(cap, turn_limit=self.max_turns, prompt_version=PROMPT_VERSION, **record)


@dataclass
class AgentContext:
    """What an agent accumulated; filled in as it goes, so a timeout keeps the partial counts."""

    n_input_tokens: int | None = None
    n_cache_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def add_usage(self, prompt: int | None, cached: int | None, completion: int | None, cost: float | None) -> None:
        self.n_input_tokens = _add(self.n_input_tokens, prompt)
        self.n_cache_tokens = _add(self.n_cache_tokens, cached)
        self.n_output_tokens = _add(self.n_output_tokens, completion)
        self.cost_usd = _add(self.cost_usd, cost)

    def as_record(self) -> AgentContextRecord:
        """Harbor's AgentContext of this run."""
        return harbor_writer.agent_result(
            self.n_input_tokens, self.n_cache_tokens, self.n_output_tokens, self.cost_usd, self.metadata
        )


class TerminusAgent:
    """An LLM agent that drives the task's shell, turn by turn, under a stated cap.

    Parameters
    ----------
    client : ChatClient
        The model endpoint.
    harness : HarnessConfig
        Cap and limits.

    Examples
    --------
    >>> agent = TerminusAgent(ChatClient("http://127.0.0.1:8000/v1", "openai/m"), HarnessConfig(cap=3))
    >>> agent.config_kwargs()["stated_cap"]
    3
    """

    name = AGENT_NAME
    version = VERSION

    def __init__(self, client: ChatClient, harness: HarnessConfig) -> None:
        self.client = client
        self.harness = harness

    @property
    def model_name(self) -> str:
        return self.client.model

    def config_kwargs(self) -> dict[str, Any]:
        """Everything recorded in ``config.agent.kwargs`` (never the API key)."""
        return {**self.harness.as_kwargs(), **self.client.describe()}

    @property
    def turn_budget(self) -> int:
        """The turns of a whole run: the cap, else the safety limit (a multi-step run shares them)."""
        return self.harness.max_turns

    def with_turns(self, turns: int) -> TerminusAgent:
        """A fresh agent of the same model and harness that states and enforces ``turns`` turns.

        A multi-step run gives each step one (a fresh conversation, as terminus-2 under Harbor)
        with the turns its earlier steps left.

        Examples
        --------
        >>> agent = TerminusAgent(ChatClient("http://127.0.0.1:8000/v1", "openai/m"), HarnessConfig(cap=5))
        >>> agent.with_turns(2).harness.cap, agent.harness.cap
        (2, 5)
        """
        harness = self.harness
        if harness.cap is None:
            return TerminusAgent(self.client, replace(harness, safety_turns=turns))
        return TerminusAgent(self.client, replace(harness, cap=turns))

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
        """Run the loop in ``box`` until the cap, a confirmed completion or ``deadline`` (time.monotonic).

        ``timeout_sec`` is the agent timeout ``deadline`` came from, named in the error messages.
        """
        harness = self.harness
        timeout_text = f"{timeout_sec if timeout_sec is not None else task.agent_timeout_sec:g}"
        shell = self._open_terminal(box, context)
        prompt = self._first_prompt(box, task, shell)
        trajectory = Trajectory(
            agent_dir / "trajectory.json",
            agent_name=self.name,
            agent_version=self.version,
            model_name=self.model_name,
            extra=self.config_kwargs(),
        )
        trajectory.add("user", prompt)
        messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
        metadata = context.metadata
        metadata.update(
            {"n_episodes": 0, "parse_errors": 0, "hit_cap": False, "task_complete": False, "api_request_times_msec": []}
        )
        confirming = False
        try:
            for episode in range(harness.max_turns):
                metadata["n_episodes"] = episode + 1
                reply = self._ask(messages, agent_dir / f"episode-{episode}", deadline, timeout_text, episode)
                metadata["api_request_times_msec"].append(round(reply.seconds * 1000, 1))
                context.add_usage(reply.prompt_tokens, reply.cached_tokens, reply.completion_tokens, reply.cost_usd)
                metrics = _reply_metrics(reply)
                parsed, error = parse_reply(reply.content, default_duration=harness.default_duration_sec)
                if parsed is None:
                    metadata["parse_errors"] += 1
                    confirming = False
                    observation = (
                        f"Previous response had parsing errors:\nERROR: {error}\n\nAnswer with one JSON object."
                    )
                    trajectory.add(
                        "agent",
                        reply.content,
                        model_name=self.model_name,
                        observation=_observation(observation),
                        metrics=metrics,
                    )
                else:
                    output, timed_out = self._execute(shell, parsed["commands"], deadline)
                    observation, done, confirming = self._observe(parsed, output, timed_out, confirming)
                    trajectory.add(
                        "agent",
                        f"Analysis: {parsed['analysis']}\nPlan: {parsed['plan']}",
                        model_name=self.model_name,
                        tool_calls=_tool_calls(parsed, episode) or None,
                        observation=_observation(observation),
                        metrics=metrics,
                    )
                    if timed_out:
                        raise AgentTimeoutError(f"Agent execution timed out after {timeout_text} seconds")
                    if done:
                        metadata["task_complete"] = True
                        return
                messages += [{"role": "assistant", "content": reply.content}, {"role": "user", "content": observation}]
            metadata["hit_cap"] = True
        finally:
            shell.close()

    def _first_prompt(self, box: TaskContainer, task: TaskSpec, shell: Any) -> str:
        """The opening user message: the protocol, the cap sentence, the instruction and the starting folder."""
        harness = self.harness
        if shell.echoes:
            code, where = box.exec(["sh", "-c", "pwd"], timeout=10, user=box.agent_user)
            cwd = where.decode(errors="replace").strip() if code == 0 else "/"
            shell.run("", 0.5)
            shell.observe()  # the pane's first state: later observations show only what is new
        else:
            cwd = shell.run("pwd\n", 10.0).strip() or "/"
        return (_TMUX_PROMPT if shell.echoes else _PROMPT).format(
            cap=cap_sentence(harness.cap),
            max_command=f"{harness.max_command_sec:g}",
            limit=harness.output_limit_bytes,
            # the task's skills after the instruction, as Harbor's terminus-2 appends them
            instruction=self._instruction(box, task) + skills_section(box, task.skills_dir),
            cwd=cwd,
        )

    def _ask(
        self, messages: list[dict[str, str]], episode_dir: Path, deadline: float, timeout_text: str, episode: int
    ) -> ChatReply:
        """One model request within the agent's deadline; the prompt and reply are kept in ``episode_dir``."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AgentTimeoutError(f"Agent execution timed out after {timeout_text} seconds")
        write_text(episode_dir / "prompt.txt", messages[-1]["content"])
        # an endpoint that fails or hangs raises LLMEndpointError: an invalid trial, not a timeout
        reply = self.client.complete(messages, timeout=remaining)
        write_text(episode_dir / "response.txt", reply.content)
        if time.monotonic() >= deadline:
            raise AgentTimeoutError(
                f"Agent execution timed out after {timeout_text} seconds (the model's reply to turn "
                f"{episode + 1} came after the deadline)"
            )
        return reply

    def _observe(
        self, parsed: dict[str, Any], output: str, timed_out: bool, confirming: bool
    ) -> tuple[str, bool, bool]:
        """The next observation, whether the run is done, and whether a completion awaits confirmation."""
        observation = "New terminal output:\n" + output
        done = False
        if parsed["task_complete"] and not timed_out:
            if confirming or not self.harness.confirm_completion:
                done = True
            else:
                observation += "\n\n" + _CONFIRM
            confirming = not done
        else:
            confirming = False
        return observation, done, confirming

    def _open_terminal(self, box: TaskContainer, context: AgentContext) -> Any:
        """The agent's terminal: tmux when asked for or (``auto``) when the image has it, else the shell."""
        choice = self.harness.terminal
        if choice == "tmux" or (choice == "auto" and has_tmux(box, box.agent_user)):
            context.metadata["terminal"] = "tmux"
            return TmuxTerminal(box, user=box.agent_user)
        context.metadata["terminal"] = "shell"
        return box.open_shell(buffer_bytes=max(self.harness.output_limit_bytes * 2, SHELL_BUFFER_BYTES))

    def _instruction(self, box: TaskContainer, task: TaskSpec) -> str:
        """The instruction as put in the prompt; a long one is written once into the container."""
        text = task.instruction.strip()
        size = len(text.encode("utf-8"))
        if size <= self.harness.instruction_limit_bytes:
            return text
        box.exec(["mkdir", "-p", INSTRUCTION_FILE.rsplit("/", 1)[0]], timeout=60, user="0")
        box.put_file(INSTRUCTION_FILE, text.encode("utf-8"))
        return LONG_INSTRUCTION.format(size=size, path=INSTRUCTION_FILE, excerpt=text[:INSTRUCTION_EXCERPT_CHARS])

    def _execute(self, shell: Any, commands: list[dict[str, Any]], deadline: float) -> tuple[str, bool]:
        """Type each command and collect the output; return (observation text, whether time ran out)."""
        harness = self.harness
        parts: list[str] = []
        timed_out = False
        dropped_before = shell.dropped_bytes
        for command in commands:
            remaining = deadline - time.monotonic()
            wait = min(float(command["duration"]), harness.max_command_sec, max(remaining, 0.0))
            keystrokes = command["keystrokes"]
            if not shell.echoes:  # tmux's pane shows the typed command itself
                parts.append(f"$ {keystrokes}" + ("" if keystrokes.endswith("\n") else "\n"))
            parts.append(shell.run(keystrokes, wait))
            if time.monotonic() >= deadline:
                timed_out = True
                break
        parts.append(shell.observe())
        dropped = shell.dropped_bytes - dropped_before
        return limit_output("".join(parts), harness.output_limit_bytes, already_dropped=dropped), timed_out


def parse_reply(text: str, *, default_duration: float = 1.0) -> tuple[dict[str, Any] | None, str]:
    """Parse one model reply; return (parsed, "") or (None, the error to show the model).

    Examples
    --------
    >>> parse_reply('{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "ls\\\\n"}]}')[0]["commands"]
    [{'keystrokes': 'ls\\n', 'duration': 1.0}]
    >>> parse_reply("no json here")
    (None, 'No JSON object found in the response')
    """
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end < start:
        return None, "No JSON object found in the response"
    try:
        value = json.loads(text[start : end + 1])
    except json.JSONDecodeError as error:
        return None, f"Invalid JSON: {error}"
    if not isinstance(value, dict):
        return None, "The response must be a JSON object"
    missing = [key for key in ("analysis", "plan") if not isinstance(value.get(key), str)]
    if missing:
        return None, f"Missing required fields: {', '.join(missing)}"
    raw_commands = value.get("commands", [])
    if not isinstance(raw_commands, list):
        return None, "'commands' must be a list"
    commands = []
    for index, command in enumerate(raw_commands):
        if not isinstance(command, dict) or not isinstance(command.get("keystrokes"), str):
            return None, f"Command {index + 1} must be an object with a string 'keystrokes'"
        duration = command.get("duration", default_duration)
        if isinstance(duration, bool) or not isinstance(duration, int | float) or duration < 0:
            return None, f"Command {index + 1} has an invalid 'duration' (a number >= 0): {duration!r}"
        commands.append({"keystrokes": command["keystrokes"], "duration": float(duration)})
    complete = value.get("task_complete", False)
    if isinstance(complete, str):
        complete = complete.strip().lower() == "true"
    return {
        "analysis": value["analysis"],
        "plan": value["plan"],
        "commands": commands,
        "task_complete": bool(complete),
    }, ""


def limit_output(text: str, limit: int, *, already_dropped: int = 0) -> str:
    """Cut ``text`` to ``limit`` UTF-8 bytes, keeping the first and last halves.

    ``already_dropped`` counts bytes the shell's buffer dropped before (its own note, in the
    middle of ``text``, is then cut out): the note gives the total left out.

    Examples
    --------
    >>> len(limit_output("x" * 50_000, 10_000).encode()) <= 10_000
    True
    >>> limit_output("a" * 300, 200, already_dropped=10**9).count("1000000")
    1
    """
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    note = f"\n[... output cut to {limit} bytes; {{}} bytes omitted ...]\n"
    room = limit - len(note.format(len(data) + already_dropped).encode())
    head_end, tail_start = room // 2, len(data) - (room - room // 2)
    while head_end > 0 and data[head_end] & 0xC0 == 0x80:  # do not split a UTF-8 character
        head_end -= 1
    while tail_start < len(data) and data[tail_start] & 0xC0 == 0x80:
        tail_start += 1
    head, tail = data[:head_end].decode("utf-8", errors="replace"), data[tail_start:].decode("utf-8", errors="replace")
    return head + note.format(tail_start - head_end + already_dropped) + tail


def _reply_metrics(reply: ChatReply) -> AtifMetricsRecord:
    """A trajectory step's metrics: the reply's token counts and cost that the endpoint reported (the others left
    out, as Harbor leaves them out)."""
    return harbor_writer.atif_metrics(
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        cached_tokens=reply.cached_tokens,
        cost_usd=reply.cost_usd,
    )


def _observation(text: str) -> AtifObservationRecord:
    """A step's observation: the terminal's answer to its commands (or the parse error), one result."""
    return AtifObservationRecord(results=[AtifObservationResultRecord(content=text)])


def _tool_calls(parsed: dict[str, Any], episode: int) -> list[AtifToolCallRecord]:
    """A parsed reply's commands as ATIF tool calls, plus ``mark_task_complete`` when it asks to stop."""
    calls = [
        AtifToolCallRecord(tool_call_id=f"call_{episode}_{index + 1}", function_name="bash_command", arguments=command)
        for index, command in enumerate(parsed["commands"])
    ]
    if parsed["task_complete"]:
        calls.append(
            AtifToolCallRecord(
                tool_call_id=f"call_{episode}_task_complete", function_name="mark_task_complete", arguments={}
            )
        )
    return calls


def _add(total: Any, value: Any) -> Any:
    if value is None:
        return total
    return value if total is None else total + value


def terminus_factory(
    base_url: str,
    *,
    api_key_env: str | None = DEFAULT_API_KEY_ENV,
    temperature: float | None = 0.7,
    request_timeout: float = 600.0,
    max_retries: int = 4,
    prices: tuple[float | None, float | None] = (None, None),
    strip_provider: bool = True,
) -> Callable[[str, int | None], TerminusAgent]:
    """``(model, cap) -> TerminusAgent`` on ``base_url``: the one agent factory of ``run``, ``fill``
    and ``measure --engine local`` (the options are :class:`ChatClient`'s; ``prices`` are USD per
    million prompt and completion tokens). The provider prefix of a model name (``openai/``) is
    not sent (``strip_provider``), as LiteLLM, Harbor's client, does not send it: every verb and
    both engines send the same request.

    Examples
    --------
    >>> make = terminus_factory("http://127.0.0.1:8000/v1", api_key_env=None)
    >>> make("openai/m", 3).harness.cap
    3
    """
    price_in, price_out = prices

    def make(model: str, cap: int | None) -> TerminusAgent:
        client = ChatClient(
            base_url,
            model,
            api_key_env=api_key_env,
            temperature=temperature,
            timeout=request_timeout,
            max_retries=max_retries,
            input_price_per_mtok=price_in,
            output_price_per_mtok=price_out,
            strip_provider=strip_provider,
        )
        return TerminusAgent(client, HarnessConfig(cap=cap))

    return make
