# The shell of depthlab's guarded terminus-2 (depthlab_guard.py beside this file reads it by section).
# Each section starts with a line "#@ <name>"; the guard joins sections into one script run as root
# in the trial's container. POSIX sh only: the task's image may have nothing more.

#@ chain
# the guard's own chain of processes (never listed, never killed); "N <start time>": the guard's own
# start (clock ticks since boot, as /proc/<pid>/stat has it)
self=$$; chain=" "; p=$self
while [ -n "$p" ] && [ "$p" != 0 ]; do
  chain="$chain$p "; read -r line < /proc/$p/stat || break; set -- ${line##*) }; p=$2
done
read -r line < /proc/$self/stat && { set -- ${line##*) }; shift 19; echo "N $1"; }

#@ processes
# every process as "P <pid> <ppid> <start time> <comm>", the guard's own chain left out
for d in /proc/[0-9]*; do
  p=${d#/proc/}; case "$chain" in *" $p "*) continue;; esac
  read -r line < $d/stat 2>/dev/null || continue
  comm=${line#*(}; comm=${comm%)*}; set -- ${line##*) }
  [ "$2" = "$self" ] && continue
  pp=$2; shift 19; echo "P $p $pp $1 $comm"
done

#@ tests
# /tests: its listing and every file's hash, hashed
if [ -e /tests ] || [ -L /tests ]; then
  { ls -laR /tests 2>&1; find /tests -type f -exec sha256sum {} + 2>&1 | sort; } | sha256sum | cut -c1-64 | sed 's/^/T /'
else echo 'T absent'; fi

#@ watch
# half a second of /logs/verifier: nothing may write there between the agent and the tests
m=$(mktemp); sleep 0.5
find /logs/verifier -newer "$m" ! -path /logs/verifier 2>/dev/null | head -5 | sed 's/^/W /'; rm -f "$m"
if [ -L /logs/verifier ]; then echo "V link to $(readlink /logs/verifier)"
elif [ ! -d /logs/verifier ]; then echo 'V not a folder'; fi

#@ suspect
# is pid $1 reaching for the verifier's files? (its command line, working folder or open files)
suspect() {
  c=$(tr '\0' ' ' < /proc/$1/cmdline 2>/dev/null)
  case "$c" in *"/logs/verifier"*|*"/tests"*|*reward.txt*|*reward.json*) return 0;; esac
  for f in /proc/$1/cwd /proc/$1/fd/*; do
    t=$(readlink "$f" 2>/dev/null) || continue
    case "$t" in /logs/verifier|/logs/verifier/*|/tests|/tests/*) return 0;; esac
  done
  return 1
}

#@ kill
# KEEP: "pid:start" of the container's own processes; MODE: suspects or all (the Harbor guard's), or
# earlier (depthlab's local runner: only the rule of SINCE; its integrity checks catch the rest); SINCE:
# the start of the guard of the previous step ('' in the first): a process started before it was left by
# the agent of an earlier step, and is stopped before this step's tests arrive. "K": killed (a suspect,
# or any under MODE=all); "S": stopped because an earlier step's agent left it. Both engines run this.
keep=" $KEEP "
for round in 1 2 3 4 5 6 7 8; do
  victims=""
  for d in /proc/[0-9]*; do
    p=${d#/proc/}; case "$chain" in *" $p "*) continue;; esac
    read -r line < $d/stat 2>/dev/null || continue
    set -- ${line##*) }; [ "$2" = "$self" ] && continue
    [ "$1" = Z ] && continue  # a zombie runs nothing (a parent that does not reap keeps it listed)
    shift 19; start=$1; case "$keep" in *" $p:$start "*) continue;; esac
    if [ "$MODE" = all ] || { [ "$MODE" = suspects ] && suspect "$p"; }; then tag=K
    elif [ -n "$SINCE" ] && [ "$start" -le "$SINCE" ]; then tag=S
    else continue; fi
    victims="$victims $p"
    echo "$tag $p $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null | cut -c1-200)"
  done
  [ -z "$victims" ] && break
  kill -STOP $victims 2>/dev/null; kill -KILL $victims 2>/dev/null; sleep 0.1
done

#@ restore
# /logs/verifier made afresh (a folder, mode 777 as Harbor makes it) when the agent removed or replaced
# it, after the processes above were stopped: depthlab's runner makes it afresh before every run of the
# tests, so on both engines the tests grade the container, and an agent that deleted the folder does not
# turn its trial into Harbor's DownloadVerifierDirError (a missing cell). "R <what it was>": restored.
if [ -L /logs/verifier ] || [ ! -d /logs/verifier ]; then
  if [ -L /logs/verifier ]; then was="a link to $(readlink /logs/verifier)"
  elif [ -e /logs/verifier ]; then was="not a folder"; else was="absent"; fi
  rm -f /logs/verifier 2>/dev/null
  mkdir -p /logs/verifier && chmod 777 /logs/verifier && [ -d /logs/verifier ] && [ ! -L /logs/verifier ] && echo "R $was"
fi
