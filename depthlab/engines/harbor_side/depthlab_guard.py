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
* hashes ``/tests`` at the run's start and end (the tests are copied in after the agent: a file the
  agent put there would be run with them), and records whether ``/logs/verifier`` is still a folder;
* writes what it found to ``depthlab-guard.json`` in the agent's log folder on the host (one entry
  per run; the file is replaced, never written through a link the agent left at that name).

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

#: The evidence file in the agent's log folder (read by depthlab.engines._harbor_guard).
GUARD_FILE = "depthlab-guard.json"

# every process as "P <pid> <ppid> <start time> <comm>", the guard's own chain left out
_PROCESSES = r"""
self=$$; chain=" "; p=$self
while [ -n "$p" ] && [ "$p" != 0 ]; do
  chain="$chain$p "; read -r line < /proc/$p/stat || break; set -- ${line##*) }; p=$2
done
for d in /proc/[0-9]*; do
  p=${d#/proc/}; case "$chain" in *" $p "*) continue;; esac
  read -r line < $d/stat 2>/dev/null || continue
  comm=${line#*(}; comm=${comm%)*}; set -- ${line##*) }
  [ "$2" = "$self" ] && continue
  pp=$2; shift 19; echo "P $p $pp $1 $comm"
done
"""
# /tests: its listing and every file's hash, hashed
_TESTS = (
    "if [ -e /tests ] || [ -L /tests ]; then "
    "{ ls -laR /tests 2>&1; find /tests -type f -exec sha256sum {} + 2>&1 | sort; } | sha256sum | cut -c1-64 | "
    "sed 's/^/T /'; else echo 'T absent'; fi"
)
_WATCH = (
    'm=$(mktemp); sleep 0.5; find /logs/verifier -newer "$m" ! -path /logs/verifier 2>/dev/null | head -5 | '
    "sed 's/^/W /'; rm -f \"$m\"; "
    'if [ -L /logs/verifier ]; then echo "V link to $(readlink /logs/verifier)"; '
    "elif [ ! -d /logs/verifier ]; then echo 'V not a folder'; fi"
)
# is pid $1 reaching for the verifier's files? (its command line, working folder or open files)
_SUSPECT = r"""
suspect() {
  c=$(tr '\0' ' ' < /proc/$1/cmdline 2>/dev/null)
  case "$c" in *"/logs/verifier"*|*"/tests"*|*reward.txt*|*reward.json*) return 0;; esac
  for f in /proc/$1/cwd /proc/$1/fd/*; do
    t=$(readlink "$f" 2>/dev/null) || continue
    case "$t" in /logs/verifier|/logs/verifier/*|/tests|/tests/*) return 0;; esac
  done
  return 1
}
"""
_KILL = r"""
keep=" $KEEP "; killed=0
for round in 1 2 3 4 5 6 7 8; do
  victims=""
  for d in /proc/[0-9]*; do
    p=${d#/proc/}; case "$chain" in *" $p "*) continue;; esac
    read -r line < $d/stat 2>/dev/null || continue
    set -- ${line##*) }; [ "$2" = "$self" ] && continue
    shift 19; case "$keep" in *" $p:$1 "*) continue;; esac
    [ "$MODE" = all ] || suspect "$p" || continue
    victims="$victims $p"
  done
  [ -z "$victims" ] && break
  for p in $victims; do
    echo "K $p $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null | cut -c1-200)"
  done
  kill -STOP $victims 2>/dev/null; kill -KILL $victims 2>/dev/null; sleep 0.1
done
"""


#: What the guard kills when the agent's run ends: the processes reaching for the verifier's files
#: (default), or every process the agent left (the strict profile).
GUARD_MODES = ("suspects", "all")


class GuardedOptions(Terminus2Options):
    """terminus-2's options and the guard's mode (Harbor checks an agent's kwargs against these)."""

    guard: str = "suspects"


class GuardedTerminus2(Terminus2):
    """terminus-2 whose every run ends with depthlab's guard (module docstring)."""

    options_model = GuardedOptions

    def __init__(self, *args: Any, guard: str = "suspects", **kwargs: Any) -> None:
        if guard not in GUARD_MODES:
            raise ValueError(f"guard must be one of {GUARD_MODES}, got {guard!r}")
        super().__init__(*args, **kwargs)
        self._guard_mode = guard
        self._guard_entries: list[dict[str, Any]] = []

    async def run(self, instruction: str, environment: Any, context: Any) -> None:
        if self._session is not None and not await self._session.is_session_alive():
            await self._session.start()  # the guard of an earlier step ended the terminal
        start = await _shell(environment, _PROCESSES + _TESTS)
        try:
            await super().run(instruction, environment, context)
        finally:
            await self._guard(environment, start)

    async def _guard(self, environment: Any, start: str) -> None:
        entry: dict[str, Any] = {"started": start != "", "ended": time.time()}
        try:
            processes = [line.split(" ", 4) for line in start.splitlines() if line.startswith("P ")]
            keep = _container_processes(processes)
            watch = await _shell(environment, _WATCH)
            chain = _PROCESSES.split("for d in")[0]  # the guard's own chain, as in the listing
            settings = f"KEEP={shlex.quote(' '.join(keep))}\nMODE={self._guard_mode}\n"
            killed = await _shell(environment, chain + settings + _SUSPECT + _KILL + _TESTS)
            entry.update(
                tests_before=_lines(start, "T ")[:1] or None,
                tests_after=_lines(killed, "T ")[:1] or None,
                verifier_writes=_lines(watch, "W "),
                verifier_folder=(_lines(watch, "V ") or [""])[0],
                killed=_lines(killed, "K "),
                mode=self._guard_mode,
                done=True,
            )
        except Exception as error:  # the trial goes on; depthlab takes an unfinished guard as no guard
            entry.update(done=False, error=f"{type(error).__name__}: {error}")
        self._guard_entries.append(entry)
        _write_evidence(Path(self.logs_dir) / GUARD_FILE, self._guard_entries)


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
