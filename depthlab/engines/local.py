"""depthlab's own runner as an engine: each round is one :func:`depthlab.runner.fill` on this machine.

The same rounds as :class:`~depthlab.engines.harbor.HarborEngine`, with the runner's terminus
agent (:class:`depthlab.runner.TerminusAgent`) in Docker. The fill's job folders
(``fill__<model>__cap<K>``) are reused by every round; a fill resumes by itself (it removes the
containers of a dead fill, deletes trial folders without ``result.json`` and counts the valid
trials already there), so a rerun after ``kill -9`` runs only what is missing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from depthlab import _atomic, schema
from depthlab._checks import check_positive_finite, check_positive_int
from depthlab.engines._harbor_guard import judge_trials
from depthlab.engines._taskcheck import agent_timeouts
from depthlab.engines.rounds import Echo, EngineError
from depthlab.io import load_trials

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
        ``(model, cap) -> agent``; default the runner's terminus agent on ``base_url``.
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
        api_key_env: str | None = "OPENAI_API_KEY",
        concurrency: int = 2,
        agent_factory: Callable[[str, int | None], Any] | None = None,
        fill_options: dict[str, Any] | None = None,
        prices: tuple[float | None, float | None] = (None, None),
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
        self.docker_client: Any = None

    def _client(self) -> Any:
        if self.docker_client is None:
            import docker

            try:
                self.docker_client = docker.from_env()
                self.docker_client.ping()
            except Exception as error:  # any failure to reach the engine
                raise EngineError(f"the local engine needs a running Docker Engine: {error}") from None
        return self.docker_client

    def _factory(self) -> Callable[[str, int | None], Any]:
        if self.agent_factory is not None:
            return self.agent_factory
        if not self.base_url:
            raise EngineError("the local engine needs --base-url (the model endpoint)")
        from depthlab.runner import ChatClient, HarnessConfig, TerminusAgent

        base_url, key_env, (price_in, price_out) = self.base_url, self.api_key_env, self.prices
        timeout = self.request_timeout or self.fill_options.get("agent_timeout_sec") or self._agent_timeout

        def make(model: str, cap: int | None) -> Any:
            # LiteLLM (Harbor's client) sends "openai/m" as "m"; so does this, for the same answers
            client = ChatClient(
                base_url,
                model,
                api_key_env=key_env,
                strip_provider=True,
                timeout=timeout,
                input_price_per_mtok=price_in,
                output_price_per_mtok=price_out,
            )
            return TerminusAgent(client, HarnessConfig(cap=cap))

        return make

    def check(self) -> None:
        """A running Docker Engine (:class:`EngineError` otherwise)."""
        self._client()

    def resume(self, echo: Echo) -> None:
        """Check Docker; the fill of the next round resumes the interrupted one by itself."""
        self._client()
        echo(f"engine: depthlab's runner on this machine, jobs in {self.jobs_dir}")

    def preflight(self, tasks: pl.DataFrame, echo: Echo) -> pl.DataFrame:
        """Each task's reference solution once, under the rounds' settings; the failures."""
        from depthlab.engines._oracle import local_oracle_failures

        options = {**self.fill_options, "concurrency": self.concurrency}
        return local_oracle_failures(tasks, self.jobs_dir, self._client(), echo, options)

    def next_round(self) -> int:
        try:
            return int((self.jobs_dir / ROUNDS_FILE).read_text(encoding="utf-8").strip() or 0) + 1
        except (OSError, ValueError):
            return 1

    def run_round(self, plan: pl.DataFrame, number: int, tasks: pl.DataFrame, progress: bool) -> None:
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
                progress=progress,
                run_preflight=False,  # measure ran it before round 1, into the same cache
                **self.fill_options,
            )
            for message in (*summary.skipped, *summary.errors):
                print(f"  {message}", file=sys.stderr)
        for job in sorted(self.jobs_dir.glob("fill__*")):
            # the runner checks the verifier's integrity itself; an outage behind a timeout is judged here
            for trial, exception, reason in judge_trials(job, tampering=False):
                print(f"  {job.name}/{trial}: invalid, {exception}: {reason}", file=sys.stderr)

    def load_trials(self) -> pl.DataFrame:
        if not any(self.jobs_dir.glob("*/*/result.json")):
            return schema.empty("trials")
        return load_trials([self.jobs_dir], cache=False)


def _folders(tasks: pl.DataFrame) -> dict[str, str]:
    folders = {}
    for task, source in tasks.select("task", "source").iter_rows():
        path = Path(str(source))
        if path.name in {"task.toml", "task.yaml"}:
            path = path.parent
        folders[str(task)] = str(path.absolute().parent)
    return folders
