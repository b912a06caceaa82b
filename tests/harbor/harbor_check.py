"""Validate Harbor files with Harbor's own pydantic models; run inside the Harbor side venv.

Input (stdin): a JSON list of ``[kind, path]`` pairs, kind one of ``job_config``,
``job_result``, ``trial_config``, ``trial_result``, ``trajectory``, ``job_plan`` (a job
config that Harbor also expands into the trial configs it would run, as ``harbor run`` does), or
``task`` (a task folder, loaded as Harbor's ``Task``: its task.toml by ``TaskConfig``, its files
checked as Harbor checks them before a run; the entry also has ``task``: name, validity, reward
strategy, and each step's name, gate and instruction), or ``job_stats`` (a job folder: the entry also has
``stats``, the ``JobStats`` Harbor's ``Job`` computes from its trials' result.json files, with the ``Mean``
metric and pass@k as the job adds them).
Output (stdout): ``{"harbor": VERSION, "files": [{"kind", "path", "error"}, ...]}`` (``error``
null when the file loads; a ``job_plan`` entry also has ``trial_configs``).

This file is depthlab's own; it only imports Harbor (which needs Python >= 3.12), so it is
not imported by the test suite, only run by it with the side venv's interpreter.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path


def _models() -> dict:
    import asyncio

    from harbor.job_plan import JobPlan
    from harbor.models.job.config import JobConfig
    from harbor.models.job.result import JobResult
    from harbor.models.task.config import TaskConfig
    from harbor.models.task.task import Task
    from harbor.models.trajectories import Trajectory
    from harbor.models.trial.config import TrialConfig
    from harbor.models.trial.result import TrialResult
    from harbor.utils.trajectory_validator import TrajectoryValidator

    def trajectory(text: str) -> None:
        Trajectory.model_validate_json(text)
        validator = TrajectoryValidator()
        if not validator.validate(json.loads(text)):
            raise ValueError("; ".join(validator.get_errors()))

    def job_plan(text: str) -> dict:
        plan = asyncio.run(JobPlan.from_config(JobConfig.model_validate_json(text)))
        return {"trial_configs": [config.model_dump(mode="json") for config in plan.trial_configs]}

    def task(folder: Path) -> dict:
        config = TaskConfig.model_validate_toml((folder / "task.toml").read_text(encoding="utf-8"))
        loaded = Task(folder)
        steps = [
            {"name": step.name, "min_reward": step.min_reward, "instruction": loaded.step_instruction(step.name)}
            for step in config.steps or []
        ]
        strategy = config.model_dump(mode="json").get("multi_step_reward_strategy")
        valid = Task.is_valid_dir(folder)
        return {"task": {"name": loaded.name, "valid": valid, "strategy": strategy, "steps": steps}}

    def job_stats(folder: Path) -> dict:
        from harbor.metrics.mean import Mean
        from harbor.models.job.result import JobStats
        from harbor.utils.pass_at_k import compute_pass_at_k_by_evals

        trials = [TrialResult.model_validate_json(path.read_text()) for path in sorted(folder.glob("*/result.json"))]
        stats = JobStats.from_trial_results(trials, n_total_trials=len(trials))
        rewards: dict[str, list] = {}
        for trial in trials:  # as Job._run_trials_and_finalize collects them
            model = trial.agent_info.model_info.name if trial.agent_info.model_info else None
            key = JobStats.format_agent_evals_key(trial.agent_info.name, model, trial.source or "adhoc")
            if trial.reward_valid and trial.verifier_result is not None:
                rewards.setdefault(key, []).append(trial.verifier_result.rewards)
        for key, values in rewards.items():
            stats.evals[key].metrics.append(Mean().compute(values))
        for key, pass_at_k in compute_pass_at_k_by_evals(trials).items():
            stats.evals[key].pass_at_k = pass_at_k
        return {"stats": stats.model_dump(mode="json")}

    return {
        "job_stats": job_stats,
        "task": task,
        "job_plan": job_plan,
        "job_config": lambda text: JobConfig.model_validate_json(text),
        "job_result": lambda text: JobResult.model_validate_json(text),
        "trial_config": lambda text: TrialConfig.model_validate_json(text),
        "trial_result": lambda text: TrialResult.model_validate_json(text),
        "trajectory": trajectory,
    }


def main() -> int:
    models = _models()
    report = []
    for kind, path in json.load(sys.stdin):
        entry = {"kind": kind, "path": path, "error": None}
        try:
            given = Path(path)
            extra = models[kind](given if kind in ("task", "job_stats") else given.read_text(encoding="utf-8"))
            if isinstance(extra, dict):
                entry.update(extra)
        except Exception as failure:  # every failure is reported with its file, none stops the run
            entry["error"] = f"{type(failure).__name__}: {failure}"
        report.append(entry)
    json.dump({"harbor": version("harbor"), "files": report}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
