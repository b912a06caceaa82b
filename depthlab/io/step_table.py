"""``load_steps``: the steps of multi-step trials, one row per (trial, declared step)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence

import msgspec
import polars as pl

from depthlab import schema
from depthlab._checks import check_bool, check_choice
from depthlab.io import harbor, multistep
from depthlab.io._errors import Reject, Rejected, RejectedFilesWarning, warning_text
from depthlab.io._files import Dep, read_bytes
from depthlab.io.harbor_versions import leaky_version
from depthlab.io.status import STATUS_RULES
from depthlab.io.trials import read_trials

PathLike = str | os.PathLike[str]

_TRIAL_COLUMNS = ("dataset", "task", "agent", "model", "cap", "job", "trial", "source", *schema.HARBOR_VERSION_COLUMNS)


def load_steps(
    paths: PathLike | Sequence[PathLike],
    *,
    dataset: str | None = None,
    status_rule: str = "leaderboard",
    cache: bool = True,
    include_leaky_steps: bool = False,
) -> pl.DataFrame:
    """Load the steps of every multi-step trial under ``paths``: one row per (trial, declared step).

    A multi-step trial is one of a ``[[steps]]`` task (Harbor 0.26): its ``result.json`` holds
    ``step_results``, one per step that ran. The trials themselves are found and labelled as
    :func:`depthlab.read_trials` does (the trial's ``dataset``, ``agent``, ``model``, ``cap``, ...);
    single-step trials give no rows.

    Parameters
    ----------
    paths : path or sequence of paths
        As :func:`depthlab.read_trials`.
    dataset : str, optional
        Tag for every row (default: as :func:`depthlab.read_trials`).
    status_rule : {"leaderboard", "all"}
        The rule that makes a step's status (as a trial's): ``pass`` when its reward is at least
        1, ``invalid`` for an infrastructure exception under ``"leaderboard"``, else ``fail``.
    cache : bool
        Use the trials cache for finding the trials.
    include_leaky_steps : bool, default False
        Keep the status of the steps a Harbor older than 0.24 ran after another step (before it emptied
        ``/tests`` and ``/logs/verifier`` between steps, such a step's agent could read the previous step's
        tests and reward): by default they are ``invalid``, as their trial is in :func:`depthlab.read_trials`.
        Either way they carry their trial's ``version_note`` (a trial's first step, which ran before any
        verifier, keeps its status and has none).

    Returns
    -------
    polars.DataFrame
        ``depthlab.schema.STEPS``: ``step_index`` (1-based) and ``step`` (its name); ``status``
        ``pass``, ``fail``, ``invalid``, or ``skipped`` for a declared step the trial never ran
        because a gate (``min_reward``) stopped it before (the declared steps are the task's
        ``task.toml`` when the task folder the trial names is on this machine, else the steps it
        ran); the step's ``reward`` (its ``reward`` key, else the mean of its keys) and ``rewards``
        (JSON), ``n_turns`` (its trajectory under ``steps/<name>/agent/``), tokens, cost, agent
        seconds and exception; ``harbor_version`` and ``version_note`` as the trials table has them
        (``depthlab.schema.HARBOR_VERSION_COLUMNS``), the note on the steps ``include_leaky_steps`` is about.
        Trials whose steps cannot be read are left out with a
        :class:`~depthlab.io.RejectedFilesWarning`, as are the trials :func:`depthlab.read_trials` rejects.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> trial = pathlib.Path(tempfile.mkdtemp()) / "job" / "two__abc1234"
    >>> trial.mkdir(parents=True)
    >>> steps = [{"step_name": "a", "verifier_result": {"rewards": {"reward": 1.0}}},
    ...          {"step_name": "b", "verifier_result": {"rewards": {"reward": 0.0}}}]
    >>> _ = (trial / "result.json").write_text(json.dumps({
    ...     "task_name": "two", "trial_name": "two__abc1234", "source": "demo",
    ...     "verifier_result": {"rewards": {"reward": 0.5}}, "step_results": steps}))
    >>> load_steps(trial.parent, cache=False).select("step_index", "step", "status", "reward").rows()
    [(1, 'a', 'pass', 1.0), (2, 'b', 'fail', 0.0)]
    """
    check_choice(status_rule, "status_rule", "load_steps", STATUS_RULES)
    check_bool(include_leaky_steps, "include_leaky_steps", "load_steps")
    load = read_trials(
        paths, dataset=dataset, status_rule=status_rule, cache=cache, include_leaky_steps=include_leaky_steps
    )
    rejected = list(load.rejected)
    multi = load.trials.filter(pl.col("n_steps").is_not_null()).select(_TRIAL_COLUMNS)
    rows: list[dict] = []
    for trial in multi.iter_rows(named=True):
        path = trial["source"]
        try:
            steps = _steps_of(path, status_rule)
        except Reject as exc:
            rejected.append(Rejected(exc.path, exc.reason))
            continue
        leaky = trial["version_note"] is not None and leaky_version(trial["harbor_version"])
        for step in steps.steps:
            after_another = leaky and step.step_index > 1  # its agent ran after a verifier of the same container
            status = step.status
            if after_another and not include_leaky_steps and status != "skipped":
                status = "invalid"
            rows.append(
                {
                    **trial,
                    "version_note": trial["version_note"] if after_another else None,
                    "step_index": step.step_index,
                    "step": step.step,
                    "status": status,
                    "reward": step.reward,
                    "rewards": msgspec.json.encode(step.rewards).decode() if step.rewards is not None else None,
                    "n_turns": step.n_turns,
                    "n_input_tokens": step.n_input_tokens,
                    "n_output_tokens": step.n_output_tokens,
                    "n_cache_tokens": step.n_cache_tokens,
                    "cost_usd": step.cost_usd,
                    "agent_seconds": step.agent_seconds,
                    "exception": step.exception,
                    "exception_message": step.exception_message,
                }
            )
    if rejected:
        warnings.warn(warning_text(rejected, "trials"), RejectedFilesWarning, stacklevel=2)
    if not rows:
        return schema.empty("steps")
    return schema.conform(pl.from_dicts(rows, schema=schema.STEPS), "steps")


def _steps_of(path: str, status_rule: str) -> multistep.TrialSteps:
    """The steps of the trial whose result.json is ``path`` (read again: the trials table keeps their sums)."""
    deps: list[Dep] = []
    if not os.path.isfile(path):  # an entry of an older job-level result.json: no step folders to read
        raise Reject(path, "the steps of a trial kept only in a job's result.json are not read")
    result = harbor.decode_result(read_bytes(path, deps), path)
    decoded = multistep.decode_steps(result.step_results, path)
    trial_dir = os.path.dirname(path)
    return multistep.read_trial_steps(decoded, trial_dir, result.task_dir(trial_dir), status_rule, deps, path)
