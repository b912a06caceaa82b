"""Mutation testing of depthlab's core with mutmut (``make mutate``; README, "Testing").

Each group below is mutated on its own, one after the other, in a scratch copy of the checkout
(``out/mutate/<group>``, so the working tree is never touched and groups cannot mix), against only
the test files that cover it. Prints, per group and in total, the mutants killed (a test failed or
timed out), the survivors (with their diffs in ``out/mutate/survivors.txt``) and the mutants listed
as equivalent in ``tests/mutation_equivalent.txt`` (no test can tell them apart from the original:
the reason is written beside each).

Usage: ``python scripts/mutate.py [GROUP ...] [--max-children N] [--rerun]`` (default: every group,
1 child; ``--rerun`` runs only the last run's survivors again, against the current tests).
The kill rate is killed / (mutants - equivalent); exit status 1 below ``--target`` (default 0.90).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "out" / "mutate"
EQUIVALENT_FILE = ROOT / "tests" / "mutation_equivalent.txt"
MUTMUT = Path(sys.executable).parent / "mutmut"
# slow end-to-end tests (simulated job dirs, the CLI) add minutes per mutant and kill nothing the
# unit tests do not; they are left out of the mutation runs only
FAST = "not simulation and not harbor_runs and not cli"


@dataclass(frozen=True)
class Group:
    name: str
    files: tuple[str, ...]
    tests: tuple[str, ...]
    select: str = ""  # pytest -k expression
    functions: tuple[str, ...] = ()  # mutmut name globs, when only part of a file is core


GROUPS: tuple[Group, ...] = (
    Group(
        "measures",
        ("depthlab/measures/*.py",),
        ("tests/test_measures.py", "tests/test_planner.py"),
        FAST,
    ),
    # the R and real-TB2 tests spawn Rscript / read ../shared for every mutant; pingouin, scipy and
    # statsmodels check the same quantities in-process
    Group(
        "stats",
        ("depthlab/stats/*.py",),
        ("tests/test_stats.py", "tests/test_proportions.py"),
        "not bca_coverage and not r_ppcor and not tb2",
    ),
    Group("io.status", ("depthlab/io/status.py",), ("tests/io/test_status_and_turns.py", "tests/io/test_harbor.py")),
    Group("io.tasks", ("depthlab/io/tasks.py",), ("tests/io/test_tasks.py", "tests/datasets/test_adapters.py")),
    Group(
        "io.turns",
        ("depthlab/io/atif.py", "depthlab/io/harbor.py"),
        (
            "tests/io/test_status_and_turns.py",
            "tests/io/test_steps.py",
            "tests/io/test_atif.py",
            "tests/io/test_harbor.py",
        ),
        functions=(
            "depthlab.io.atif.x_trajectory_turns__mutmut_*",
            "depthlab.io.atif.x__count_bytes__mutmut_*",
            "depthlab.io.atif.x__step_turns__mutmut_*",
            "depthlab.io.atif.x__segments__mutmut_*",
            "depthlab.io.harbor.x__agent_dir_turns__mutmut_*",
        ),
    ),
)

KILLED = {"killed", "timeout", "caught by type check"}


def equivalent_mutants() -> dict[str, str]:
    """name -> reason, from tests/mutation_equivalent.txt (``name: reason`` lines, ``#`` comments)."""
    if not EQUIVALENT_FILE.exists():
        return {}
    listed = {}
    for line in EQUIVALENT_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, reason = line.partition(":")
            listed[name.strip()] = reason.strip()
    return listed


def workspace(group: Group) -> Path:
    """A scratch copy of the package and tests with a [mutmut] section for ``group``."""
    folder = OUT / group.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copytree(ROOT / "depthlab", folder / "depthlab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", folder / "tests", ignore=shutil.ignore_patterns("__pycache__", "bench"))
    shutil.copy(ROOT / "pyproject.toml", folder)
    pytest_args = ["-p", "no:cacheprovider", "-n", "0", "-q", "--benchmark-disable"]
    if group.select:
        pytest_args += ["-k", group.select]
    setup = (ROOT / "setup.cfg").read_text()
    # workers fork from a server that only collected the tests: polars' thread pool must not be
    # running in the process that forks (mutmut's main process has run the whole suite)
    setup += "\n[mutmut]\nsource_paths = depthlab\nprocess_isolation = forkserver\nforkserver_warmup = collect\n"
    setup += "only_mutate =\n" + "".join(f"    {pattern}\n" for pattern in group.files)
    setup += "pytest_add_cli_args_test_selection =\n" + "".join(f"    {test}\n" for test in group.tests)
    setup += "pytest_add_cli_args =\n" + "".join(f"    {arg}\n" for arg in pytest_args)
    (folder / "setup.cfg").write_text(setup)
    return folder


def _env() -> dict[str, str]:
    return {
        **os.environ,
        # the tests find ../shared beside the checkout, not beside the scratch copy
        "DEPTHLAB_SHARED": os.environ.get("DEPTHLAB_SHARED", str(ROOT.parent / "shared")),
        "HYPOTHESIS_PROFILE": "ci",  # the same examples for every mutant
        "MPLBACKEND": "Agg",
        "POLARS_MAX_THREADS": "1",  # one core per worker: the machine is shared
    }


def _mutmut_run(group: Group, folder: Path, names: list[str] | tuple[str, ...], max_children: int) -> None:
    command = [str(MUTMUT), "run", "--max-children", str(max_children), *names]
    with (folder / "mutmut-run.log").open("a") as log:
        subprocess.run(command, cwd=folder, env=_env(), stdout=log, stderr=subprocess.STDOUT, check=False)


def statuses_of(group: Group) -> dict[str, str]:
    """Mutant name -> status, from the group's last run."""
    done = subprocess.run(
        [str(MUTMUT), "results", "--all", "true"],
        cwd=OUT / group.name,
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    statuses = {}
    for line in done.stdout.splitlines():
        match = re.fullmatch(r"\s*(\S+): (.+)", line)
        if match:
            statuses[match[1]] = match[2].strip()
    if group.functions:
        patterns = [re.compile(re.escape(p).replace(r"\*", ".*")) for p in group.functions]
        statuses = {k: v for k, v in statuses.items() if any(p.fullmatch(k) for p in patterns)}
    return statuses


def all_mutants(group: Group) -> list[str]:
    """Every mutant mutmut generated for ``group`` (read from its ``.meta`` files), in a stable order."""
    names = []
    for meta in sorted((OUT / group.name / "mutants").rglob("*.py.meta")):
        names += json.loads(meta.read_text())["exit_code_by_key"]
    if group.functions:
        patterns = [re.compile(re.escape(p).replace(r"\*", ".*")) for p in group.functions]
        names = [name for name in names if any(p.fullmatch(name) for p in patterns)]
    return sorted(names)


def run_group(group: Group, max_children: int, *, rerun: bool, sample: int, seed: int) -> dict[str, str]:
    """Run mutmut for ``group``; return mutant name -> status.

    ``rerun``: keep the group's last run, bring in the current tests, and run again only the
    mutants it did not kill (after tests were added for them). ``sample``: run only that many
    mutants drawn at random (``seed``) from those the group has, and report on them.
    """
    folder = OUT / group.name
    chosen: set[str] | None = None
    if rerun and (folder / "mutants").is_dir():
        for target in (folder / "tests", folder / "mutants" / "tests"):
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(ROOT / "tests", target, ignore=shutil.ignore_patterns("__pycache__", "bench"))
        previous = {name: status for name, status in statuses_of(group).items() if status != "not checked"}
        left = [name for name, status in previous.items() if status not in KILLED]
        if left:
            _mutmut_run(group, folder, left, max_children)
        chosen = set(previous)
    elif sample:
        folder = workspace(group)
        # generate the mutants and the test map only: no mutant is named so
        _mutmut_run(group, folder, ["depthlab.no_such_function__mutmut_0"], max_children)
        names = all_mutants(group)
        chosen = set(random.Random(seed).sample(names, min(sample, len(names))))
        _mutmut_run(group, folder, sorted(chosen), max_children)
    else:
        folder = workspace(group)
        _mutmut_run(group, folder, group.functions, max_children)
    statuses = statuses_of(group)
    return statuses if chosen is None else {name: statuses[name] for name in chosen}


_SHOW = """
import sys
from mutmut.__main__ import find_mutant, get_diff_for_mutant
for name in sys.argv[1:]:
    print(f"# {name}")
    print(get_diff_for_mutant(name, path=find_mutant(name).path))
"""


def diffs(group: Group, names: list[str]) -> str:
    """The survivors' diffs, from one process (``mutmut show`` reloads its state for each)."""
    if not names:
        return ""
    done = subprocess.run(
        [sys.executable, "-c", _SHOW, *names], cwd=OUT / group.name, capture_output=True, text=True, check=False
    )
    return done.stdout + done.stderr


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a proportion (the kill rate of a sample of mutants)."""
    share = successes / n
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("groups", nargs="*", help=f"any of {[g.name for g in GROUPS]} (default: all)")
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument("--target", type=float, default=0.90)
    parser.add_argument("--rerun", action="store_true", help="run again only the last run's survivors")
    parser.add_argument("--sample", type=int, default=0, help="mutants drawn at random per group (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    unknown = set(args.groups) - {g.name for g in GROUPS}
    if unknown:
        parser.error(f"unknown groups {sorted(unknown)}; choose from {[g.name for g in GROUPS]}")
    chosen = [g for g in GROUPS if not args.groups or g.name in args.groups]
    equivalent = equivalent_mutants()
    OUT.mkdir(parents=True, exist_ok=True)
    report = []
    totals = [0, 0, 0]
    start = time.monotonic()
    for group in chosen:
        began = time.monotonic()
        statuses = run_group(group, args.max_children, rerun=args.rerun, sample=args.sample, seed=args.seed)
        killed = [k for k, v in statuses.items() if v in KILLED]
        listed = [k for k, v in statuses.items() if v not in KILLED and k in equivalent]
        survived = sorted(k for k, v in statuses.items() if v not in KILLED and k not in equivalent)
        counted = len(statuses) - len(listed)
        rate = len(killed) / counted if counted else float("nan")
        interval = ""
        if args.sample and counted:
            low, high = wilson(len(killed), counted)
            interval = f" (95% interval {low:.1%} to {high:.1%}, a random sample of {len(statuses)})"
        print(
            f"{group.name:10s} {len(statuses):5d} mutants  {len(killed):5d} killed  {len(listed):3d} equivalent  "
            f"{len(survived):4d} survived  kill rate {rate:.1%}{interval}  ({time.monotonic() - began:.0f} s)",
            flush=True,
        )
        for name in survived:
            print(f"    survived: {name} ({statuses[name]})")
        report.append(diffs(group, survived))
        totals = [totals[0] + len(killed), totals[1] + counted, totals[2] + len(survived)]
    (OUT / "survivors.txt").write_text("".join(report))
    rate = totals[0] / totals[1] if totals[1] else float("nan")
    print(
        f"total      {totals[1]:5d} mutants (equivalent ones excluded)  {totals[0]:5d} killed  "
        f"{totals[2]:4d} survived  kill rate {rate:.1%}  in {(time.monotonic() - start) / 60:.0f} min"
    )
    print(f"survivors' diffs: {OUT / 'survivors.txt'}")
    return 0 if rate >= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
