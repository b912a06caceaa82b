"""W and author ratings of the real TB2 task dirs equal ../shared/data/tb2_tasks.csv.

The task dirs are public data and are not committed. The test runs on the first folder of them
(task dirs with ``solution/solve.sh``) found at: ``DEPTHLAB_TB2_TASKS``; ``data/public/tb2/tasks``
(where ``depthlab fetch tb2-tasks`` writes); ``../shared/tb2-tasks`` or ``../shared/data/tb2-tasks``.
Without one it skips naming every place it looked, or fails when ``DEPTHLAB_REQUIRE_TB2_TASKS=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

import depthlab as dl


def _candidates(shared: Path) -> list[Path]:
    named = os.environ.get("DEPTHLAB_TB2_TASKS")
    root = Path(__file__).resolve().parents[2]
    places = [root / "data" / "public" / "tb2" / "tasks", shared / "tb2-tasks", shared / "data" / "tb2-tasks"]
    return [Path(named), *places] if named else places


@pytest.fixture(scope="module")
def tb2_task_dirs(shared: Path) -> Path:
    candidates = _candidates(shared)
    for folder in candidates:
        if folder.is_dir() and any(folder.glob("*/solution/solve.sh")):
            return folder
    reason = "no folder of real TB2 task dirs with solution/solve.sh at " + ", ".join(map(str, candidates))
    if os.environ.get("DEPTHLAB_REQUIRE_TB2_TASKS") == "1":
        pytest.fail(reason + " (DEPTHLAB_REQUIRE_TB2_TASKS=1)")
    pytest.skip(reason + "; depthlab fetch tb2-tasks puts them in data/public/tb2/tasks")


def test_work_and_author_ratings_match_the_published_task_table(tb2_task_dirs, shared_data):
    tasks = dl.load_tasks(tb2_task_dirs, dataset="tb2", difficulty_source="human")
    published = pl.read_csv(shared_data / "tb2_tasks.csv").select(
        task="task_id",
        published_work="solution_lines",
        published_total="solution_total_lines",
        published_difficulty="difficulty",
    )
    joined = tasks.join(published, on="task", how="inner")
    assert joined.height == published.height  # every published task was found
    assert joined["work"].to_list() == joined["published_work"].to_list()
    assert joined["solution_lines_total"].to_list() == joined["published_total"].to_list()
    assert joined["difficulty"].to_list() == joined["published_difficulty"].to_list()
