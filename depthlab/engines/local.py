"""depthlab's own runner as an engine: each round is one :func:`depthlab.runner.fill` on this machine.

The same rounds as :class:`~depthlab.engines.harbor.HarborEngine`, with the runner's terminus
agent (:class:`depthlab.runner.TerminusAgent`) in Docker. The fill's job folders
(``fill__<model>__cap<K>``) are reused by every round; a fill resumes by itself (it removes the
containers of a dead fill and deletes trial folders without ``result.json``), and each round's
plan is made from the trials the folder holds, so a rerun after ``kill -9`` runs only what is
missing. A plan row's ``attempts`` is how many more trials the cell needs (``count_done=False``
of :func:`depthlab.runner.fill`), as Harbor's engine reads it: with ``--attempts auto`` a cell
holding one trial gets its second.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from depthlab import _atomic, schema
from depthlab._checks import check_positive_finite, check_positive_int
from depthlab._defaults import DEFAULT_API_KEY_ENV
from depthlab.engines._harbor_guard import judge_trials
from depthlab.engines._versions import Regrade, copy_job_config
from depthlab.engines.rounds import Echo, EngineError, check_api_key
from depthlab.io.harbor_task import agent_timeouts

if TYPE_CHECKING:
    from depthlab.engines.replays import LocalReplays
    from depthlab.runner.profiles import RunSettings

#: A file of the jobs folder counting the rounds run there (a file: ``harbor view`` lists folders as jobs)
ROUNDS_FILE = ".depthlab-measure-rounds"


class LocalEngine:
    """Run the rounds with depthlab's runner (module docstring).

    Parameters
    ----------
    jobs_dir : path
        Where the fill's job folders go (and are resumed from).
    base_url : str
        The model endpoint (OpenAI-compatible).
    api_key_env : str, optional
        The environment variable holding the API key (read, never stored).
    concurrency : int, default 2
        Trials at once.
    agent_factory : callable, optional
        ``(model, cap) -> agent``; default the runner's terminus agent on ``base_url``
        (:func:`depthlab.runner.agent.terminus_factory`, the factory of ``depthlab run``).
    agent_options : mapping, optional
        Further options of that factory (``temperature``, ``request_timeout``, ``max_retries``);
        the provider prefix of a model name is stripped before it is sent (``strip_provider``,
        default True: what Harbor's LiteLLM does, so both engines send the same request).
    prices : (float or None, float or None), default (None, None)
        USD per million prompt and completion tokens, for the trials' ``cost_usd`` (and ``--max-cost``).
    request_timeout : float, optional
        Seconds one model request may take (``--request-timeout``); by default the agent's timeout
        (``fill_options["agent_timeout_sec"]``, else the longest ``[agent] timeout_sec`` of the
        round's tasks), so an endpoint that stalls is an outage within the trial's own time.
    fill_options : dict, optional
        Further keyword options of :func:`depthlab.runner.fill` (``settings``, ``limits``,
        ``agent_timeout_sec``); the preflight gets the same ``settings`` and ``limits``.

    Examples
    --------
    >>> engine = LocalEngine("jobs", base_url="http://127.0.0.1:8000/v1")
    >>> engine.next_round()
    1
    """

    name = "local"

    def __init__(
        self,
        jobs_dir: str | os.PathLike[str],
        *,
        base_url: str | None = None,
        api_key_env: str | None = DEFAULT_API_KEY_ENV,
        concurrency: int = 2,
        agent_factory: Callable[[str, int | None], Any] | None = None,
        fill_options: dict[str, Any] | None = None,
        prices: tuple[float | None, float | None] = (None, None),
        agent_options: Mapping[str, Any] | None = None,
        request_timeout: float | None = None,
    ) -> None:
        check_positive_int(concurrency, "concurrency", "LocalEngine")
        if request_timeout is not None:
            check_positive_finite(request_timeout, "request_timeout", "LocalEngine")
        self.request_timeout = request_timeout
        self._agent_timeout = 600.0  # the round's longest agent timeout (set by each round)
        self.prices = prices
        self.jobs_dir = Path(jobs_dir).absolute()
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.agent_factory = agent_factory
        self.fill_options = dict(fill_options or {})
        self.agent_options = dict(agent_options or {})
        self.docker_client: Any = None
        self.progress = True  # the round loop sets it
        self.note = ""  # the round loop's note (unused: the runner's progress bar has no postfix)

    def _client(self) -> Any:
        if self.docker_client is None:
            from depthlab.runner.container import new_docker_client

            try:
                self.docker_client = new_docker_client()
                self.docker_client.ping()
            except Exception as error:  # any failure to reach the engine
                raise EngineError(f"the local engine needs a running Docker Engine: {error}") from None
        return self.docker_client

    def _factory(self) -> Callable[[str, int | None], Any]:
        if self.agent_factory is not None:
            return self.agent_factory
        if not self.base_url:
            raise EngineError("the local engine needs --base-url (the model endpoint)")
        from depthlab.runner.agent import terminus_factory

        options = dict(self.agent_options)
        # an endpoint that stalls is an outage within the trial's own time, not five times it
        options.setdefault(
            "request_timeout",
            self.request_timeout or self.fill_options.get("agent_timeout_sec") or self._agent_timeout,
        )
        return terminus_factory(self.base_url, api_key_env=self.api_key_env, prices=self.prices, **options)

    def check(self) -> None:
        """The API key set (unless ``agent_factory`` makes the agents) and Docker reachable."""
        if self.agent_factory is None:
            if not self.base_url:
                raise EngineError("the local engine needs --base-url (the model endpoint)")
            check_api_key(self.api_key_env)
        self._client()

    def replays(
        self,
        settings: RunSettings | None = None,
        *,
        docker_client: Any = None,
        reuse: bool = True,
        keep_images: bool = False,
    ) -> LocalReplays:
        """The replays of reference solutions for the checks, through depthlab's runner on this machine
        (:class:`depthlab.engines.replays.LocalReplays`; ``docker_client`` default: the engine's; the
        replays of :attr:`concurrency` tasks at once)."""
        from depthlab.engines.replays import LocalReplays

        client = docker_client if docker_client is not None else self._client()
        return LocalReplays(client, settings, reuse=reuse, keep_images=keep_images, concurrency=self.concurrency)

    def resume(self, echo: Echo) -> None:
        """Nothing to do: the fill of the next round resumes the interrupted one by itself."""
        echo(f"engine: depthlab's runner on this machine, jobs in {self.jobs_dir}")

    def preflight(self, tasks: pl.DataFrame, echo: Echo) -> pl.DataFrame:
        """Each task's reference solution once, under the rounds' settings; the failures.

        :func:`depthlab.runner.preflight.preflight` runs each task's ``solution/solve.sh`` under the
        settings the models get, caches the result per task checksum and settings, and reports the
        tasks that cannot pass. It writes into ``<jobs_dir>/.preflight``, the folder and cache
        ``depthlab fill`` uses, so the rounds' fills (called with ``run_preflight=False``) and a
        later ``depthlab fill`` on the same jobs reuse it.
        """
        from depthlab.runner.preflight import preflight
        from depthlab.runner.scheduler import PREFLIGHT_FOLDER
        from depthlab.runner.task import task_folder

        paths = [str(task_folder(source)) for source in tasks["source"].to_list()]
        options = {key: value for key, value in self.fill_options.items() if key in {"limits", "settings"}}
        report = preflight(
            paths,
            jobs_dir=self.jobs_dir / PREFLIGHT_FOLDER,
            docker_client=self._client(),
            concurrency=self.concurrency,
            **options,
        )
        echo(report.summary())
        # the tasks table's names: a task.toml's [task].name ("org/name") is not always the table's
        names = {str(Path(path).resolve()): task for path, task in zip(paths, tasks["task"].to_list(), strict=True)}
        rows = [
            {
                "task": names.get(str(Path(row.path).resolve()), row.task),
                "reason": row.reason,
                "output": row.verifier_tail,
            }
            for row in report.failed
        ]
        return schema.preflight_failures(rows)

    def next_round(self) -> int:
        try:
            return int((self.jobs_dir / ROUNDS_FILE).read_text(encoding="utf-8").strip() or 0) + 1
        except (OSError, ValueError):
            return 1

    def run_round(self, plan: pl.DataFrame, number: int, tasks: pl.DataFrame, echo: Echo) -> None:
        from depthlab.runner import fill

        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        _atomic.write_text(self.jobs_dir / ROUNDS_FILE, f"{number}\n")
        self._agent_timeout = max(agent_timeouts(tasks).values(), default=600.0)
        folders = _folders(tasks)
        located = plan.with_columns(folder=pl.col("task").replace_strict(folders, default=None))
        for (folder,), cells in located.group_by(["folder"], maintain_order=True):
            summary = fill(
                cells.drop("folder"),
                tasks_dir=folder,
                jobs_dir=self.jobs_dir,
                agent_factory=self._factory(),
                docker_client=self._client(),
                concurrency=self.concurrency,
                progress=self.progress,
                run_preflight=False,  # measure ran it before round 1, into the same cache
                # the plan was made from this jobs folder: its attempts are the trials to run now, as on Harbor
                count_done=False,
                **self.fill_options,
            )
            for message in (*summary.skipped, *summary.errors):
                echo(f"  {message}")
        for job in sorted(self.jobs_dir.glob("fill__*")):
            # the runner checks the verifier's integrity itself; an outage behind a timeout is judged here
            for trial, exception, reason in judge_trials(job, tampering=False):
                echo(f"  {job.name}/{trial}: invalid, {exception}: {reason}")

    def load_trials(self) -> pl.DataFrame:
        from depthlab.runner.output import load_job_trials

        return load_job_trials(self.jobs_dir)

    def regrade(self, regrades: Sequence[Regrade], echo: Echo) -> int:
        """Grade recorded trials again with their task's verifier now; how many were.

        :func:`depthlab.runner.regrade.regrade_trial` (a fresh verifier container on the artifacts the
        trial saved, each step's on its own for a multi-step trial, no agent) into ``regrade__<job>``, the
        source job's ``config.json`` copied in, as the Harbor engine's regrade does. A regrade that fails is
        echoed, and its cell planned again.
        """
        from depthlab.runner.regrade import regrade_trial
        from depthlab.runner.task import load_task

        done = 0
        settings = self.fill_options.get("settings")
        for item in regrades:
            copy_job_config(Path(item.trial_dir).parent, item.job_dir)
            try:
                regraded = regrade_trial(
                    Path(item.trial_dir),
                    load_task(item.task_dir),
                    item.job_dir,
                    docker_client=self._client(),
                    settings=settings,
                )
            except (OSError, ValueError) as error:
                echo(f"  regrade of {item.trial_dir} failed: {error}")
                continue
            echo(f"  regraded {item.trial_dir} into {regraded}")
            done += 1
        return done


def _folders(tasks: pl.DataFrame) -> dict[str, str]:
    """Task name -> the folder holding its task folder (the fill's ``tasks_dir``)."""
    from depthlab.runner.task import task_folder

    return {
        str(task): str(task_folder(source).absolute().parent)
        for task, source in tasks.select("task", "source").iter_rows()
    }
