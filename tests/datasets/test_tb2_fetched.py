"""W and author ratings of the real TB2 task dirs equal ../shared/data/tb2_tasks.csv.

The task dirs are public data and are not committed: this test runs when
``DEPTHLAB_TB2_TASKS`` names a folder of them (e.g. after ``depthlab fetch tb2-tasks``) and
skips otherwise. The shared samples carry no solve.sh, so W can only be checked this way.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

import depthlab as dl


@pytest.fixture(scope="module")
def tb2_task_dirs() -> Path:
    folder = os.environ.get("DEPTHLAB_TB2_TASKS")
    if not folder or not Path(folder).is_dir():
        pytest.skip("set DEPTHLAB_TB2_TASKS to a folder of the real TB2 task dirs (depthlab fetch tb2-tasks)")
    return Path(folder)


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
