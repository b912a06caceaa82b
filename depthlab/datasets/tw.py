"""TerminalWorld (TW): tasks reverse-engineered by an LLM from real human terminal recordings.

The full set has 1,530 validated tasks; the Verified subset (200) was reviewed by four authors.

Labels
------
Human ratings
    None. Only the Verified subset's tasks were human-reviewed, and the review added no label.
Generated labels
    ``task.toml`` ``[metadata]`` ``category``, ``tags``, ``difficulty_explanation``, ``solution_explanation``,
    ``verification_explanation`` and ``expert_time_estimate_hours`` are all LLM-written. There is **no
    difficulty label**: ``difficulty_source`` is ``"none"`` (were a ``difficulty`` key present it would
    be marked ``"generated"``). The LLM's hour estimate stays in ``labels``; ``expert_time_min`` is
    left null so it cannot be mistaken for TB2's human estimates.
Missing
    No public per-task results or trajectories; no capped runs.

Layout under ``root``
---------------------
``<root>/artifacts/tw_<id>/`` (found up to three levels down), or ``<root>/tasks/[tw/]<task>/``
    Harbor task dirs: ``task.toml`` (``version = "1.0"``, no ``[task]`` table: the id is the folder
    name ``tw_<id>``), ``instruction.md``, ``environment/Dockerfile`` (or ``docker-compose.yaml``),
    ``solution/solve.sh``, ``tests/test.sh``. The ``[metadata]`` drafter, annotator and refiner names
    and e-mails are personal data and are dropped (never in ``labels``).
``<root>/jobs/[tw/]...``
    Harbor job dirs.
"""

from __future__ import annotations

from pathlib import Path

from depthlab.datasets._base import Audit, DatasetInfo, keep_time_estimates_as_labels, make_audit
from depthlab.datasets._harbor_tree import load_root

INFO = DatasetInfo(
    name="tw",
    description="TerminalWorld(-Verified): tasks an LLM reverse-engineered from real terminal recordings (Harbor).",
    difficulty_source="none",
    human_labels="none (the Verified 200 were human-reviewed, without a rating)",
    generated_labels=(
        "category, tags, difficulty_explanation, solution/verification_explanation, "
        "expert_time_estimate_hours (all LLM-written); no difficulty label"
    ),
    empirical_labels="none public",
    missing="no difficulty label; no public per-task results; no capped runs",
    layout="<root>/artifacts/tw_<id>/ or <root>/tasks/<task>/ (Harbor task dirs), <root>/jobs/ (Harbor jobs)",
)

#: The release's own folder of task dirs (``artifacts/tw_<id>/``).
RELEASE_DIRS: tuple[str, ...] = ("artifacts",)


def load(root: str | Path, *, name: str = "tw", status_rule: str = "leaderboard") -> Audit:
    """Load TerminalWorld under ``root`` (layout in the module docstring); see :func:`depthlab.load_dataset`."""
    tree = load_root(
        root,
        name,
        difficulty_source="generated",
        status_rule=status_rule,
        release_dirs=RELEASE_DIRS,
        layout=INFO.layout,
    )
    tasks, trials, rejected = tree.tasks, tree.trials, tree.rejected
    # an LLM's time estimate is not the human expert estimate the column holds for TB2
    tasks = keep_time_estimates_as_labels(tasks)
    notes = [*tree.notes, "no difficulty label; category, tags and explanations are LLM-written metadata"]
    return make_audit(name, tasks, trials, rejected=rejected, notes=notes)
