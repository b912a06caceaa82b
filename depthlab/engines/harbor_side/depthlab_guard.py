"""Harbor's terminus-2 with depthlab's guard around every run (loaded by Harbor, never by depthlab).

``depthlab measure --engine harbor`` names this class in its jobs' agent entries (``import_path =
"depthlab_guard:GuardedTerminus2"``, this folder on the ``harbor`` child's ``PYTHONPATH``). Under
Harbor the verifier runs in the agent's container right after the agent (the shared verifier
environment), and Harbor copies ``/logs/verifier`` out right after the tests: a process the agent
left running (``nohup sh -c 'while :; do echo 1 > /logs/verifier/reward.txt; done' &``) rewrites
the reward between the tests and the copy, and nothing on the host shows it. So when the agent's
run ends, before Harbor's verifier starts, this guard

* watches ``/logs/verifier`` for half a second: nothing may write there between the agent and the
  tests, so a file changed in that window has a writer the agent left (tamper evidence);
* kills the processes the agent left that reach for the verifier's files (stopped first, so none
  forks away): those whose command line names ``/logs/verifier``, ``/tests`` or a reward file, or
  whose working folder or an open file is under ``/logs/verifier`` or ``/tests``; a process so
  killed is itself tamper evidence. Every other process the agent left (a server the task asked
  for) runs on into the tests, as under Harbor's own terminus-2: the task is graded as Harbor grades
  it. With ``guard="all"`` (``depthlab measure --engine harbor --profile strict``) it kills every
  process but the container's own (those that ran before the agent and are not its terminal) and
  the guard's; the terminal (tmux) goes too, and is started again if another step runs;
* from the second step of a multi-step task on (Harbor runs the steps in one container, calling
  ``run`` once per step), also stops every process that started before the previous step's guard
  and is not the container's own: what an earlier step's agent left has run into its own step's
  tests, and is gone before this step's tests arrive (a process waiting for them could write their
  reward). It runs for a step given no turn too (the whole-run cap spent). What this step's agent
  or the step's setup started runs on into the tests, as under Harbor;
* hashes ``/tests`` at the run's start and end (the tests are copied in after the agent: a file the
  agent put there would be run with them), and records whether ``/logs/verifier`` is still a folder;
  when the agent removed or replaced it, makes it afresh (the ``restore`` section), as depthlab's
  runner makes it before every run of the tests: Harbor would otherwise end the trial in
  ``DownloadVerifierDirError`` (an invalid trial, retried), and the agent would decide its own cell;
* records whether the run ended while a model request had no answer (an agent timeout then is the
  endpoint's outage, not the model's fail, as on depthlab's runner);
* writes what it found to ``depthlab-guard.json`` in the agent's log folder on the host (one entry
  per run; the file is replaced, never written through a link the agent left at that name).

An instruction longer than ``instruction_limit_bytes`` is written to a file in the container and
the agent is sent its beginning and the file's path, as depthlab's runner does (depthlab passes the
runner's limit and prompt). The guard's shell is ``depthlab_guard.sh`` beside this file.

depthlab reads that file after the job (``depthlab.engines._harbor_guard``) and marks a trial with
tamper evidence invalid, with its reason; a trial whose guard file is missing is invalid too.

It runs in Harbor's own environment (Python >= 3.12, Harbor importable, depthlab not): it imports
Harbor only, and nothing of depthlab.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import time
from pathlib import Path
from typing import Any

from harbor.agents.terminus_2.terminus_2 import Terminus2, Terminus2Options

#: The evidence file in the agent's log folder (read by depthlab.engines._harbor_guard; a test checks both agree).
GUARD_FILE = "depthlab-guard.json"
#: The guard's shell, in sections (``#@ name`` lines), beside this module (package data of depthlab).
SCRIPT_FILE = "depthlab_guard.sh"


def scripts(text: str | None = None) -> dict[str, str]:
    """The sections of the guard's shell (:data:`SCRIPT_FILE`): name -> its text."""
    if text is None:
        text = (Path(__file__).resolve().parent / SCRIPT_FILE).read_text(encoding="utf-8")
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("#@ "):
            current = found.setdefault(line[3:].strip(), [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines).strip() + "\n" for name, lines in found.items()}


_SCRIPTS = scripts()
#: What the guard kills when the agent's run ends: the processes reaching for the verifier's files
#: (default), or every process the agent left (the strict profile). In both, from the second step of
#: a multi-step task on, every process an earlier step's agent left is stopped before the step's tests.
GUARD_MODES = ("suspects", "all")


class GuardedOptions(Terminus2Options):
    """terminus-2's options and the guard's (Harbor checks an agent's kwargs against these).

    ``long_instruction``: the prompt that stands for an instruction longer than
    ``instruction_limit_bytes`` (``{size}``, ``{path}``, ``{excerpt}`` filled in), the instruction
    itself written to ``instruction_file`` in the container: depthlab's runner does the same (0: off).
    """

    guard: str = "suspects"
    instruction_limit_bytes: int = 0
    instruction_file: str = "/logs/agent/instruction.md"
    instruction_excerpt_chars: int = 2000
    long_instruction: str = ""
    stated_cap_prefix: str = ""


class GuardedTerminus2(Terminus2):
    """terminus-2 whose every run ends with depthlab's guard (module docstring)."""

    options_model = GuardedOptions

    def __init__(
        self,
        *args: Any,
        guard: str = "suspects",
        instruction_limit_bytes: int = 0,
        instruction_file: str = "/logs/agent/instruction.md",
        instruction_excerpt_chars: int = 2000,
        long_instruction: str = "",
        stated_cap_prefix: str = "",
        **kwargs: Any,
    ) -> None:
        if guard not in GUARD_MODES:
            raise ValueError(f"guard must be one of {GUARD_MODES}, got {guard!r}")
        super().__init__(*args, **kwargs)
        self._guard_mode = guard
        self._guard_entries: list[dict[str, Any]] = []
        self._container_keep: list[str] | None = None  # pid:start of the container's own processes
        self._since = ""  # the start of the previous step's guard (clock ticks): older processes are an earlier step's
        self._long = (instruction_limit_bytes, instruction_file, instruction_excerpt_chars, long_instruction)
        self._stated_cap_prefix = stated_cap_prefix
        self._model_wait: dict[str, Any] | None = None
        self._answers = 0
        self._watch_model_calls()

    def _watch_model_calls(self) -> None:
        """Record whether the run ended while a model request had no answer (the outage rule reads it)."""
        llm = getattr(self, "_llm", None)
        if llm is None or not hasattr(llm, "call"):
            return
        call = llm.call

        async def watched(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            self._model_wait = {"waited_s": None, "error": None}
            try:
                response = await call(*args, **kwargs)
            except BaseException as error:  # a cancel (the agent's timeout) or the endpoint's error
                self._model_wait = {"waited_s": round(time.monotonic() - started, 3), "error": _error_line(error)}
                raise
            self._model_wait = None
            self._answers += 1
            return response

        llm.call = watched

    async def run(self, instruction: str, environment: Any, context: Any) -> None:
        await self._guarded(environment, instruction, context)

    async def _guarded(self, environment: Any, instruction: str | None, context: Any) -> None:
        """Run the agent on ``instruction`` (None: no turn, the guard only) and the guard after it."""
        if instruction is not None and self._session is not None and not await self._session.is_session_alive():
            await self._session.start()  # the guard of an earlier step ended the terminal
        start = await _shell(environment, _SCRIPTS["chain"] + _SCRIPTS["processes"] + _SCRIPTS["tests"])
        self._model_wait, self._answers = None, 0
        note: dict[str, Any] = {}
        try:
            if instruction is not None:
                instruction, note = await self._sent_instruction(environment, instruction)
                await super().run(instruction, environment, context)
        finally:
            await self._guard(environment, start, note)

    async def _sent_instruction(self, environment: Any, instruction: str) -> tuple[str, dict[str, Any]]:
        """What the agent is sent: the instruction, or (over the limit) a prompt pointing to it in a file."""
        limit, path, excerpt, template = self._long
        stated = ""  # the sentence stating the cap (Harbor appends it as the last paragraph): kept in the prompt
        original = instruction
        head, _, last = instruction.rstrip().rpartition("\n\n")
        if self._stated_cap_prefix and head and last.startswith(self._stated_cap_prefix):
            instruction, stated = head.strip(), "\n\n" + last
        size = len(instruction.encode("utf-8"))
        if not limit or not template or size <= limit:
            return original, {}  # as Harbor sends it
        import tempfile

        folder = path.rsplit("/", 1)[0] or "/"
        await _shell(environment, f"mkdir -p {shlex.quote(folder)}")
        with tempfile.TemporaryDirectory() as scratch:
            local = Path(scratch) / "instruction.md"
            local.write_text(instruction, encoding="utf-8")
            await environment.upload_file(local, path)
        text = template.format(size=size, path=path, excerpt=instruction[:excerpt]) + stated
        return text, {"instruction_bytes": size, "instruction_file": path, "prompt_chars": len(text)}

    async def _guard(self, environment: Any, start: str, note: dict[str, Any] | None = None) -> None:
        entry: dict[str, Any] = {"started": start != "", "ended": time.time(), **(note or {})}
        try:
            processes = [line.split(" ", 4) for line in start.splitlines() if line.startswith("P ")]
            keep = _container_processes(processes)
            if self._container_keep is None:
                self._container_keep = keep
            elif self._since:  # a later step: the container's own, and what started since the last guard
                since = int(self._since)
                started_after = {f"{pid}:{tick}" for _, pid, _, tick, _ in processes if int(tick) > since}
                keep = [item for item in keep if item in self._container_keep or item in started_after]
            watch = await _shell(environment, _SCRIPTS["watch"])
            settings = f"KEEP={shlex.quote(' '.join(keep))}\nMODE={self._guard_mode}\nSINCE={self._since}\n"
            script = _SCRIPTS["chain"] + settings + _SCRIPTS["suspect"] + _SCRIPTS["kill"]
            script += _SCRIPTS["restore"] + _SCRIPTS["tests"]
            killed = await _shell(environment, script)
            entry.update(
                tests_before=_lines(start, "T ")[:1] or None,
                tests_after=_lines(killed, "T ")[:1] or None,
                verifier_writes=_lines(watch, "W "),
                verifier_folder=(_lines(watch, "V ") or [""])[0],
                verifier_restored=(_lines(killed, "R ") or [""])[0],
                killed=_lines(killed, "K "),
                stopped_earlier_steps=_lines(killed, "S "),
                mode=self._guard_mode,
                model_answers=self._answers,
                model_wait=self._model_wait,
                done=True,
            )
            self._since = (_lines(killed, "N ") or [self._since])[0]
        except Exception as error:  # the trial goes on; depthlab takes an unfinished guard as no guard
            entry.update(done=False, error=f"{type(error).__name__}: {error}")
        self._guard_entries.append(entry)
        _write_evidence(Path(self.logs_dir) / GUARD_FILE, self._guard_entries)


def _error_line(error: BaseException) -> str:
    text = " ".join(f"{type(error).__name__}: {error}".split())
    return text[:300]


async def _shell(environment: Any, script: str) -> str:
    """Run ``script`` as root in the environment; its stdout ('' when it could not run)."""
    try:
        result = await environment.exec(script, user="root", timeout_sec=60)
    except Exception:
        return ""
    return str(getattr(result, "stdout", "") or "")


def _lines(text: str, prefix: str) -> list[str]:
    return [line[len(prefix) :] for line in text.splitlines() if line.startswith(prefix)]


def _container_processes(processes: list[list[str]]) -> list[str]:
    """``pid:start`` of the processes that ran before the agent, less its terminal (tmux and its children)."""
    children: dict[str, list[str]] = {}
    for _, pid, ppid, _, _ in processes:
        children.setdefault(ppid, []).append(pid)
    terminal = [pid for _, pid, _, _, comm in processes if comm.startswith("tmux")]
    while terminal:
        pid = terminal.pop()
        terminal.extend(children.pop(pid, []))
        processes = [entry for entry in processes if entry[1] != pid]
    return [f"{pid}:{start}" for _, pid, _, start, _ in processes]


def _write_evidence(path: Path, entries: list[dict[str, Any]]) -> None:
    """Replace ``path`` with the entries; whatever the agent left at that name (a link, a folder) goes first."""
    with contextlib.suppress(FileNotFoundError):
        if path.is_symlink() or not path.is_dir():
            path.unlink()
        else:
            import shutil

            shutil.rmtree(path)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump({"runs": entries}, handle, indent=2)
        handle.write("\n")
