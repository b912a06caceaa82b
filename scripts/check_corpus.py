"""The static checks over a corpus of real Harbor-format tasks, every flagged item listed and tallied.

A corpus is a folder of task folders (``NAME=FOLDER``), or a git repository read at one commit
(``NAME=GITDIR@COMMIT:SUBDIR``, optionally ``#N`` for a seeded sample of N of its tasks, ``#N+K`` for
the N drawn after the first K, disjoint from ``#K``; ``SUBDIR/*`` when the tasks sit one folder deeper,
``group/task``): each task's files are written from git into a temporary folder (a blob the snapshot
left out, empty), checked there and deleted, so no task file is ever written beside the repository
(docs/checks.md, "Measured on real tasks"). A TB1 task (``task.yaml``, no ``task.toml``) is first
migrated by Harbor's own ``harbor tasks migrate`` in that folder, as Harbor would read it; a task
Harbor's migration refuses is listed as a ``migrate`` error with Harbor's reason.

Each task belongs to one *part*, fixed before any item is read: ``tune`` (the rules may be changed after
reading its items) or ``held_out`` (read only to measure), by a hash of ``corpus/task`` (a third
``tune``); ``--tune-corpus NAME`` puts a whole corpus in ``tune`` (the cookbook, read while the rules
were written). The labels (``--labels``, a CSV of ``corpus,task,step,check,item,label,why`` with label
``true``, ``debatable`` or ``false``, the definitions in docs/checks.md) are joined to the items and
the precision (true over flagged) printed per check and part.

Usage (a fetched snapshot's git folder, and a folder of tasks)::

    python scripts/check_corpus.py \\
        mmtb=MIRROR/multimedia-terminal-bench.git@c96adc0:datasets/mmtb-core \\
        tbenv=MIRROR/terminal-bench-env.git@aaad6ae:environments_harbor#150+570 \\
        cookbook=SHARED/samples/harbor-framework_harbor-cookbook/harbor_cookbook/recipes \\
        --tune-corpus cookbook --labels scripts/corpus_labels.csv --lint -o out/corpus_items.csv

``--unread-after NAME=SPEC`` (repeatable) leaves the tasks an earlier draw read out of every corpus at the
same place before drawing, so ``tbenv8=...:environments_harbor#300 --unread-after tbenv=...#120 ...`` is
300 tasks no earlier draw read. An earlier draw that was itself drawn so is given as ``--unread-after-unread
NAME=SPEC``: its tasks are those it read, with the earlier draws given before it left out first (the order of
the two options is kept), so round 11's ``tbenv9`` leaves out round 10's ``tbenv8`` as it was drawn.

The labels of every item flagged in any round on the corpus of docs/checks.md are in
``scripts/corpus_labels.csv``.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from depthlab.checks import check_tasks, static
from depthlab.io.tasks import TASK_FILES

#: The checks this script runs: the static ones (no Docker).
STATIC_CHECKS = ("named_in_instruction", "fix_not_in_instruction")
#: The labels of a flagged item (docs/checks.md defines them).
LABELS = ("true", "debatable", "false")
_FIELDS = ("corpus", "commit", "task", "part", "step", "check", "outcome", "item")


@dataclass(frozen=True)
class Corpus:
    """A corpus: its name, where its tasks are (a folder, or a git dir at a commit) and which of them."""

    name: str
    root: Path
    commit: str | None
    subdir: str
    sample: int | None
    skip: int = 0
    #: tasks some earlier draw read: left out before this corpus's draw (``--unread-after``)
    read: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, spec: str) -> Corpus:
        """``NAME=FOLDER`` or ``NAME=GITDIR@COMMIT:SUBDIR[#N[+K]]``; a clear error otherwise."""
        name, sep, where = spec.partition("=")
        if not sep or not name or not where:
            raise SystemExit(f"corpus {spec!r}: expected NAME=FOLDER or NAME=GITDIR@COMMIT:SUBDIR[#N[+K]]")
        where, _, count = where.partition("#")
        wanted, _, skip = count.partition("+")
        if not (wanted.isdigit() or not count) or not (skip.isdigit() or not skip):
            raise SystemExit(f"corpus {name}: the sample {count!r} is not N or N+K (whole numbers)")
        sample, skipped = (int(wanted) if wanted else None), int(skip or 0)
        if "@" in where:
            gitdir, _, rest = where.partition("@")
            commit, _, subdir = rest.partition(":")
            return cls(name, Path(gitdir), commit, subdir.strip("/"), sample, skipped)
        if not Path(where).is_dir():
            raise SystemExit(f"corpus {name}: {where} is not a folder")
        return cls(name, Path(where), None, "", sample, skipped)

    def task_names(self) -> list[str]:
        """The corpus's task folders (relative to its subdir), sorted; with ``#N+K``, the N drawn after the first
        K of one seeded draw (seed 0), so ``#150+120`` is disjoint from ``#120``."""
        if self.commit is None:
            names = sorted(p.name for p in self.root.iterdir() if any((p / f).is_file() for f in TASK_FILES))
        else:
            base = self.subdir.removesuffix("/*")
            listed = _git(self.root, "ls-tree", "-r", "--name-only", self.commit, "--", base or ".")
            prefix = f"{base}/" if base else ""
            depth = 2 if self.subdir.endswith("/*") else 1  # SUBDIR/*: a folder of groups of tasks
            names = sorted(
                {
                    folder
                    for line in listed.splitlines()
                    for folder, _, file in [line[len(prefix) :].rpartition("/")]
                    if file in TASK_FILES and folder and folder.count("/") == depth - 1
                }
            )
        names = [name for name in names if name not in self.read]
        if self.sample is not None:
            drawn = random.Random(0).sample(names, min(len(names), self.skip + self.sample))
            names = sorted(drawn[self.skip :])
        return names

    def extract(self, task: str, into: Path) -> tuple[Path, int]:
        """The task's folder (itself for a folder corpus, else its files written from git under ``into``) and
        how many of its files the mirror does not hold (large files a snapshot leaves out: written empty)."""
        if self.commit is None:
            return migrated(self.root / task, into), 0
        base = self.subdir.removesuffix("/*")
        path = f"{base}/{task}" if base else task
        listed = _git(self.root, "ls-tree", "-r", "-z", self.commit, "--", path).split("\0")
        blobs = [line.split("\t", 1) for line in listed if line]
        blobs = [(meta.split()[2], name) for meta, name in blobs if meta.split()[1] == "blob"]
        batch = subprocess.run(
            ["git", "-C", str(self.root), "cat-file", "--batch"],
            input="".join(f"{sha}\n" for sha, _ in blobs).encode(),
            capture_output=True,
            check=True,
        ).stdout
        absent = 0
        for _, name in blobs:
            header, _, batch = batch.partition(b"\n")
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if header.endswith(b" missing"):
                absent += 1
                target.write_bytes(b"")
                continue
            size = int(header.split()[2])
            target.write_bytes(batch[:size])
            batch = batch[size + 1 :]
        return migrated(into / path, into), absent


def unread(corpus: Corpus, earlier: list[Corpus]) -> Corpus:
    """``corpus`` with the tasks of every earlier draw at the same place (git folder, commit, subdir) left out
    before its own draw: a held-out part disjoint from them by construction (two seeded draws of different
    sizes need not nest: ``random.sample``'s method depends on the size)."""
    same = [e for e in earlier if (e.root, e.commit, e.subdir) == (corpus.root, corpus.commit, corpus.subdir)]
    read = frozenset(name for e in same for name in e.task_names())
    return Corpus(corpus.name, corpus.root, corpus.commit, corpus.subdir, corpus.sample, corpus.skip, read)


def migrated(folder: Path, scratch: Path) -> Path:
    """The task folder in Harbor's format: itself, or a TB1 task (``task.yaml``) as Harbor's own
    ``harbor tasks migrate`` writes it (into ``scratch``); a clear error when Harbor is absent or refuses.

    ``folder`` names a task folder; the migrated copy keeps its folder name.
    """
    if (folder / "task.toml").is_file() or not (folder / "task.yaml").is_file():
        return folder
    harbor = static.harbor_executable()
    if harbor is None:
        raise SystemExit(f"{folder}: a TB1 task (task.yaml) needs Harbor's `harbor tasks migrate`; no harbor found")
    out = scratch / "migrated"
    done = subprocess.run(
        [harbor, "tasks", "migrate", "-i", str(folder), "-o", str(out)], capture_output=True, text=True, check=False
    )
    target = out / folder.name
    if not (target / "task.toml").is_file():
        said = " ".join((done.stdout + done.stderr).split())[-300:]
        raise MigrationError(f"Harbor's `tasks migrate` refused the TB1 task: {said}")
    return target


class MigrationError(Exception):
    """Harbor's migration of a TB1 task did not write a Harbor task (the message says Harbor's reason)."""


def _git(gitdir: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(gitdir), *args], capture_output=True, text=True, check=True).stdout


def part_of(corpus: str, task: str, tune_corpora: frozenset[str]) -> str:
    """``tune`` or ``held_out``: a whole corpus named to tune, else a third of the tasks by hash.

    Examples
    --------
    >>> part_of("cookbook", "simple-task", frozenset({"cookbook"}))
    'tune'
    >>> sorted({part_of("x", f"t{i}", frozenset()) for i in range(20)})
    ['held_out', 'tune']
    """
    if corpus in tune_corpora:
        return "tune"
    digest = int(hashlib.sha256(f"{corpus}/{task}".encode()).hexdigest(), 16)
    return "tune" if digest % 3 == 0 else "held_out"


def flagged_items(row: dict) -> list[str]:
    """The items a static row flags as its fault: the places its instruction gets wrong (round 17: named
    elsewhere, or no place named at all), the key step's lines given, or the ``items`` it carries (``lint``'s
    rules)."""
    if row["outcome"] != "fault":
        return []
    if "items" in row:
        return list(row["items"])
    evidence = str(row["evidence"])
    if evidence.startswith(static.FAULT_LEAD):
        # what follows the first "; " is the fault's reason and what is set apart: notes, hidden inputs, groups
        return evidence[len(static.FAULT_LEAD) :].split("; ", 1)[0].split(", ")
    if evidence.startswith(static.SPELLED_LEAD):
        return evidence[len(static.SPELLED_LEAD) :].split(" | ")
    return [evidence]


def _listed(row: dict, lead: str) -> list[str]:
    evidence = str(row["evidence"])
    if lead not in evidence:
        return []
    return evidence.split(lead, 1)[1].split("; ", 1)[0].split(", ")


def unplaced_items(row: dict) -> list[str]:
    """The places a ``named_in_instruction`` row lists as named nowhere in the instruction: a note (round 17)."""
    return _listed(row, static.UNPLACED_LEAD)


def hidden_items(row: dict) -> list[str]:
    """The hidden verifier inputs a ``named_in_instruction`` row sets apart."""
    return _listed(row, static.HIDDEN_LEAD)


def check_corpus(corpus: Corpus, tune_corpora: frozenset[str], *, lint: bool) -> tuple[list[dict], Counter]:
    """Every flagged item of the corpus (one dict each, :data:`_FIELDS`) and the count of rows by outcome."""
    items: list[dict] = []
    counts: Counter = Counter()
    commit = corpus.commit or ""
    for task in corpus.task_names():
        part = part_of(corpus.name, task, tune_corpora)
        with tempfile.TemporaryDirectory(prefix="depthlab-corpus-") as scratch:
            try:
                folder, absent = corpus.extract(task, Path(scratch) / "tasks")
            except MigrationError as error:
                counts[(part, "migrate", "error")] += 1
                refused = (corpus.name, commit, task, part, "", "migrate", "error", str(error))
                items.append(dict(zip(_FIELDS, refused, strict=True)))
                continue
            counts[(part, "files absent from the mirror", "tasks")] += bool(absent)
            report = check_tasks([folder], jobs_dir=Path(scratch) / "jobs", checks=STATIC_CHECKS)
            rows = report.table.to_dicts()
            if lint:
                found = static.harbor_lint([folder])
                findings = found if isinstance(found, str) else found.get(folder.resolve(), [])
                result = static.lint_result(findings)
                rows.append(
                    {"step": "", "check": "lint", "outcome": result.outcome, "evidence": result.evidence}
                    | {"items": list(result.missing)}
                )
        for problem in report.problems:
            counts[(part, "problem", "error")] += 1
            items.append(
                dict(zip(_FIELDS, (corpus.name, commit, task, part, "", "load", "error", problem), strict=True))
            )
        for row in rows:
            counts[(part, row["check"], row["outcome"])] += 1
            if row["outcome"] == "error":
                print(f"{corpus.name}/{task}: {row['check']}: {row['evidence']}", file=sys.stderr)
            base = (corpus.name, commit, task, part, row["step"] or "", row["check"])
            for item in flagged_items(row):
                items.append(dict(zip(_FIELDS, (*base, "fault", item), strict=True)))
            if row["check"] == "named_in_instruction":
                for kind, found in (("unplaced", unplaced_items(row)), ("hidden", hidden_items(row))):
                    items += [dict(zip(_FIELDS, (*base, kind, item), strict=True)) for item in found]
    return items, counts


def precision_table(items: pl.DataFrame, labels_file: Path) -> pl.DataFrame:
    """Flagged items by check, part and kind (``outcome``: ``fault``, or round 17's ``unplaced``, a note) with their
    labels: true, debatable, false, unlabelled, precision."""
    labels = pl.read_csv(labels_file, infer_schema=False).with_columns(pl.col("step").fill_null(""))
    bad = labels.filter(~pl.col("label").is_in(LABELS))
    if bad.height:
        raise SystemExit(f"{labels_file}: labels must be one of {LABELS}; got {bad['label'].unique().to_list()}")
    joined = items.filter(pl.col("outcome").is_in(["fault", "unplaced"])).join(
        labels.select("corpus", "task", "step", "check", "item", "label"),
        on=["corpus", "task", "step", "check", "item"],
        how="left",
    )
    return (
        joined.group_by("check", "part", "outcome")
        .agg(
            flagged=pl.len(),
            true=(pl.col("label") == "true").sum(),
            debatable=(pl.col("label") == "debatable").sum(),
            false=(pl.col("label") == "false").sum(),
            unlabelled=pl.col("label").is_null().sum(),
        )
        .with_columns(precision=pl.col("true") / pl.col("flagged"))
        .sort("check", "part", "outcome")
    )


def main(argv: list[str] | None = None) -> int:
    """Run the static checks over each corpus; write the items, print the tallies (and the precision)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("corpora", nargs="+", help="NAME=FOLDER or NAME=GITDIR@COMMIT:SUBDIR[#N]")
    parser.add_argument(
        "--unread-after",
        dest="earlier",
        action="append",
        default=[],
        type=lambda spec: (spec, False),
        help="NAME=SPEC of an earlier draw: its tasks are left out of every corpus at the same place before drawing",
    )
    parser.add_argument(
        "--unread-after-unread",
        dest="earlier",
        action="append",
        type=lambda spec: (spec, True),
        help="NAME=SPEC of an earlier draw itself made with the earlier draws given before it left out",
    )
    parser.add_argument("--tune-corpus", action="append", default=[], help="a corpus read wholly to tune")
    parser.add_argument("--part", choices=("tune", "held_out", "all"), default="all", help="which part to list")
    parser.add_argument("--lint", action="store_true", help="run `harbor lint` too, task by task")
    parser.add_argument("--labels", type=Path, help="hand labels (CSV) to join and tally")
    parser.add_argument("-o", "--output", type=Path, help="write every flagged item (CSV)")
    args = parser.parse_args(argv)
    tune = frozenset(args.tune_corpus)
    items: list[dict] = []
    counts: Counter = Counter()
    earlier: list[Corpus] = []
    for spec, drawn_unread in args.earlier:
        draw = Corpus.parse(spec)
        earlier.append(unread(draw, earlier) if drawn_unread else draw)
    for spec in args.corpora:
        corpus = unread(Corpus.parse(spec), earlier)
        found, tallies = check_corpus(corpus, tune, lint=args.lint)
        items += found
        counts += tallies
        tasks = len({(item["task"]) for item in found})
        print(f"{corpus.name}: {len(corpus.task_names())} tasks, {tasks} with an item", file=sys.stderr)
    table = pl.DataFrame(items, schema=dict.fromkeys(_FIELDS, pl.Utf8))
    if args.part != "all":
        table = table.filter(pl.col("part") == args.part)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        table.write_csv(args.output, quote_style="non_numeric")
    tally = pl.DataFrame(
        [{"part": p, "check": c, "outcome": o, "rows": n} for (p, c, o), n in counts.items()],
        schema={"part": pl.Utf8, "check": pl.Utf8, "outcome": pl.Utf8, "rows": pl.Int64},  # a draw may be empty
    ).sort("part", "check", "outcome")
    with pl.Config(tbl_rows=-1, tbl_width_chars=200, fmt_str_lengths=120):
        print(tally)
        if args.labels:
            print(precision_table(table, args.labels))
        else:
            flagged = table.filter(pl.col("outcome").is_in(["fault", "unplaced"]))
            print(flagged.select("corpus", "task", "part", "step", "check", "outcome", "item"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
