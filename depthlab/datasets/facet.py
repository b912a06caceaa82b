"""FACET (FACET-Terminal-Tasks-6k): 6,020 synthetic tasks built by an LLM pipeline from pairs of agent skills.

Labels
------
Human ratings
    None.
Generated labels
    ``task.toml`` ``metadata.difficulty`` is written by the generator from the LLM blueprint's
    ``generation_constraints.difficulty`` and **defaults to "medium"** when the blueprint says nothing;
    no prompt in the released code asks for it. ``difficulty_source`` is ``"generated"``, and
    ``Audit.notes`` says how many tasks carry the default "medium" (a placeholder, not a rating).
    ``category`` is the constant ``"terminal_task_synthesis"``; ``tags`` are the primary skills.
Missing
    No public trajectories or per-task pass rates, and no capped runs: public and capped trials come only
    from runs you make (``depthlab run`` / ``fill``) or from Harbor jobs you add under ``<root>/jobs/``.

Layout under ``root``
---------------------
``<root>/tasks/[facet/]<task>/`` (or ``<root>/<task>/``)
    Harbor task dirs: ``task.toml``, ``instruction.md``, ``environment/Dockerfile``, ``solution/solve.sh``,
    ``tests/test.sh``.
``<root>/jobs/[facet/]...``
    Harbor job dirs.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from depthlab.datasets._base import Audit, DatasetInfo, keep_time_estimates_as_labels, make_audit
from depthlab.datasets._harbor_tree import load_root

INFO = DatasetInfo(
    name="facet",
    description="FACET-Terminal-Tasks-6k: 6,020 LLM-synthesized tasks from pairs of agent skills (Harbor format).",
    difficulty_source="generated",
    human_labels="none",
    generated_labels=(
        "metadata.difficulty (LLM blueprint label, defaults to 'medium'); category constant; tags = skills"
    ),
    empirical_labels="none public",
    missing="no public runs or pass rates; no capped runs",
    layout="<root>/tasks/<task>/ (Harbor task dirs), <root>/jobs/ (Harbor jobs)",
)

#: The difficulty FACET's generator writes when the blueprint gives none.
DEFAULT_DIFFICULTY = "medium"


def load(root: str | Path, *, name: str = "facet", status_rule: str = "leaderboard") -> Audit:
    """Load FACET under ``root`` (layout in the module docstring); see :func:`depthlab.load_dataset`."""
    tree = load_root(
        root, name, difficulty_source="generated", status_rule=status_rule, layout=INFO.layout, task_id_from_dir=True
    )
    tasks, trials, rejected = tree.tasks, tree.trials, tree.rejected
    notes = [*tree.notes, "difficulty is a generation-time LLM label, not a human rating"]
    if tasks.height:
        n_default = tasks.filter(pl.col("difficulty") == DEFAULT_DIFFICULTY).height
        notes.append(
            f"{n_default} of {tasks.height} tasks carry difficulty '{DEFAULT_DIFFICULTY}', "
            "the generator's default (indistinguishable from a chosen 'medium')"
        )
    return make_audit(name, keep_time_estimates_as_labels(tasks), trials, rejected=rejected, notes=notes)
