"""``depthlab run TASK_DIR... --model M --cap K``: run tasks in Docker at a stated turn cap."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from depthlab._defaults import DEFAULT_API_KEY_ENV, DEFAULT_STORAGE_MB, PIDS_LIMIT

if TYPE_CHECKING:
    from depthlab.runner import FillSummary, TerminusAgent

HELP = "Run task(s) at a stated turn cap with an LLM agent in Docker."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task_dirs", nargs="+", metavar="TASK_DIR", help="Harbor task folder(s)")
    parser.add_argument("--model", help="model name sent to the endpoint (e.g. openai/gpt-5); not for --agent oracle")
    parser.add_argument("--cap", type=int, help="turn cap stated to the agent and enforced (omit for uncapped)")
    parser.add_argument("--attempts", type=int, default=1, help="trials per task (default 1)")
    parser.add_argument("--agent", choices=("terminus", "oracle"), default="terminus")
    parser.add_argument("--jobs-dir", default="jobs", help="parent folder of the job folder (default ./jobs)")
    parser.add_argument("--job-name", help="job folder name (default: the start time)")
    add_agent_arguments(parser)


def add_agent_arguments(parser: argparse.ArgumentParser) -> None:
    """Options shared by ``run`` and ``fill``."""
    parser.add_argument("--base-url", default="http://127.0.0.1:8000/v1", help="OpenAI-compatible endpoint root")
    parser.add_argument(
        "--api-key-env",
        default=DEFAULT_API_KEY_ENV,
        help=f"environment variable holding the API key (default {DEFAULT_API_KEY_ENV}; never stored)",
    )
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=600.0,
        help="hard limit in seconds on each model request (default 600); an endpoint that does not answer in "
        "time, through every retry, makes the trial invalid",
    )
    parser.add_argument(
        "--max-retries", type=int, default=4, help="retries of a failed model request (default 4; backoff doubles)"
    )
    provider = parser.add_mutually_exclusive_group()
    provider.add_argument(
        "--keep-provider",
        dest="strip_provider",
        action="store_false",
        help="send the model name with its provider/ (by default 'openai/m' is sent as 'm', as LiteLLM does)",
    )
    # the default since issue 25; kept so that older command lines still run
    provider.add_argument("--strip-provider", dest="strip_provider", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(strip_provider=True)
    parser.add_argument("--price-in", type=float, help="USD per million prompt tokens (cost accounting)")
    parser.add_argument("--price-out", type=float, help="USD per million completion tokens")
    parser.add_argument("--concurrency", type=int, default=2, help="trials at once (default 2)")
    parser.add_argument("--agent-timeout", type=float, help="override the tasks' agent timeout (seconds)")
    parser.add_argument(
        "--profile",
        choices=("harbor", "strict"),
        default="harbor",
        help="security profile: 'harbor' (default) runs a task as Harbor does (Docker's default capabilities, the "
        "network task.toml allows); 'strict' drops every capability and has no network (docs/runner.md)",
    )
    network = parser.add_mutually_exclusive_group()
    network.add_argument(
        "--no-network", action="store_true", help="no network in the containers, whatever task.toml says"
    )
    network.add_argument(
        "--allow-network",
        action="store_true",
        help="a network in the containers even where task.toml says allow_internet = false (not with --profile strict)",
    )
    parser.add_argument(
        "--force-build",
        action="store_true",
        help="build environment/Dockerfile even when task.toml names a prebuilt docker_image",
    )
    parser.add_argument(
        "--cap-add", default="", help="comma-separated capabilities to add to the profile's, e.g. CHOWN,SETUID"
    )
    parser.add_argument("--pids-limit", type=int, default=PIDS_LIMIT)
    parser.add_argument(
        "--storage-mb",
        type=int,
        help=f"disk bound of every container in MB (default: task.toml's storage_mb, else {DEFAULT_STORAGE_MB}); "
        "the storage driver enforces it where it can, else a watchdog stops the trial as a fail",
    )
    parser.add_argument(
        "--agent-user",
        help="run the agent's shell (and the oracle) as this user, e.g. 1000:1000, where the task's files allow "
        "it; default: the image's user (root in Harbor's images, as in Harbor)",
    )
    parser.add_argument(
        "--build-network",
        action="store_true",
        help="give image builds a network under --profile strict (they have one under 'harbor')",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run_settings(args: argparse.Namespace) -> Any:
    """The :class:`~depthlab.runner.profiles.RunSettings` the command-line options ask for."""
    from depthlab.runner.profiles import RunSettings

    network = False if args.no_network else (True if args.allow_network else None)
    return RunSettings(
        profile=args.profile,
        network=network,
        cap_add=tuple(name for name in args.cap_add.split(",") if name.strip()),
        pids_limit=args.pids_limit,
        user=args.agent_user or None,
        build_network=True if args.build_network else None,
        force_build=args.force_build,
        storage_mb=args.storage_mb,
    )


def check_agent_arguments(args: argparse.Namespace, verb: str) -> str | None:
    """The first invalid option of :func:`add_agent_arguments` as a message, or None."""
    import math

    for option in ("request_timeout", "agent_timeout"):
        value = getattr(args, option)
        if value is not None and (not math.isfinite(value) or value <= 0):
            return f"depthlab {verb}: --{option.replace('_', '-')} must be a positive number of seconds, got {value:g}"
    if args.profile == "strict" and args.allow_network:
        return f"depthlab {verb}: --allow-network cannot be used with --profile strict (it has no network)"
    if args.storage_mb is not None and args.storage_mb < 1:
        return f"depthlab {verb}: --storage-mb must be at least 1, got {args.storage_mb}"
    for option, least in (("concurrency", 1), ("pids_limit", 1), ("max_retries", 0)):
        if getattr(args, option) < least:
            return (
                f"depthlab {verb}: --{option.replace('_', '-')} must be at least {least}, got {getattr(args, option)}"
            )
    return None


def execution_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword options of ``fill`` and ``run_tasks`` that :func:`add_agent_arguments` sets."""
    return {
        "concurrency": args.concurrency,
        "settings": run_settings(args),
        "agent_timeout_sec": args.agent_timeout,
        "progress": not args.no_progress,
    }


def report_summary(summary: FillSummary) -> int:
    """Print a runner summary and return the exit code.

    1 when a trial or job had an error, when every trial run was invalid (no endpoint, no
    image...), when nothing ran because no task could run here, or when every task failed the
    oracle preflight; else 0.
    """
    print(summary.render())
    nothing_could_run = bool(summary.skipped) and not summary.outcomes
    preflight_failed = summary.preflight is not None and summary.preflight.all_failed
    return 1 if summary.errors or summary.all_invalid or nothing_could_run or preflight_failed else 0


def report_oracle(summary: FillSummary, settings: Any) -> None:
    """Say plainly which reference solutions failed, and why (``depthlab run --agent oracle``)."""
    from depthlab.runner.preflight import PreflightReport

    failed = [outcome for outcome in summary.outcomes if outcome.status != "pass"]
    if not failed:
        return
    report = PreflightReport.from_outcomes(failed, settings=settings)
    print(
        f"The reference solution failed on {len(failed)} of {len(summary.outcomes)} trial(s) under the "
        f"{settings.profile!r} profile:"
    )
    for row in report.rows:
        print(f"- {row.task}: {row.reason}")
        print("".join(f"    | {line}\n" for line in row.verifier_tail.splitlines()) or "    | (no output)\n", end="")


def terminus_factory(args: argparse.Namespace) -> Callable[[str, int | None], TerminusAgent]:
    """``(model, cap) -> TerminusAgent`` from the options (:func:`depthlab.runner.agent.terminus_factory`)."""
    from depthlab.runner.agent import terminus_factory as factory

    return factory(
        args.base_url,
        api_key_env=args.api_key_env or None,
        temperature=args.temperature,
        request_timeout=args.request_timeout,
        max_retries=args.max_retries,
        prices=(args.price_in, args.price_out),
        strip_provider=args.strip_provider,
    )


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM into KeyboardInterrupt while the runner works, so its clean-up runs."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def reported_errors(verb: str) -> Iterator[list[str]]:
    """Print a runner-wide failure (no Docker, a full disk, a busy jobs folder) as one line, not a traceback.

    The yielded list is non-empty after a failure.
    """
    import docker.errors

    failed: list[str] = []
    try:
        yield failed
    except (OSError, RuntimeError, ValueError, docker.errors.DockerException) as error:
        failed.append(str(error))
        print(f"depthlab {verb}: {type(error).__name__}: {error}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from depthlab.runner import OracleAgent, run_tasks

    if args.agent == "terminus" and not args.model:
        print("depthlab run: --model is required with --agent terminus", file=sys.stderr)
        return 2
    if args.cap is not None and args.cap < 1:
        print(f"depthlab run: --cap must be a positive integer, got {args.cap}", file=sys.stderr)
        return 2
    if (problem := check_agent_arguments(args, "run")) is not None:
        print(problem, file=sys.stderr)
        return 2
    with sigterm_as_interrupt(), reported_errors("run") as failed:
        agent = OracleAgent() if args.agent == "oracle" else terminus_factory(args)(args.model, args.cap)
        options = execution_options(args)
        summary = run_tasks(
            args.task_dirs,
            agent,
            jobs_dir=args.jobs_dir,
            job_name=args.job_name,
            attempts=args.attempts,
            **options,
        )
    if failed:
        return 1
    code = report_summary(summary)
    if args.agent == "oracle":
        report_oracle(summary, options["settings"])
    return code
