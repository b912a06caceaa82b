"""Trial status rules: which trials count, and whether they passed.

``"leaderboard"`` (default; the Terminal-Bench 2 leaderboard's rule, within Harbor's error policy)
    A trial with no exception, or with one of :data:`VALID_EXCEPTIONS`, is valid and a
    missing reward counts as 0; any other exception makes the trial ``invalid`` (an
    infrastructure failure: that cell is still missing). A recorded reward Harbor calls invalid
    (``reward_valid`` false: an exception whose policy gives no valid reward, such as a verifier
    timeout) is ``invalid`` too.
``"all"`` (Harbor's default job metric)
    Every trial is valid; a missing reward counts as 0.

A missing reward file (``RewardFileNotFoundError``) is a counted fail under both rules, on both
engines: a stated variant of Harbor's error policy, which gives it no valid reward (its result.json
says ``reward_valid: false`` with ``verifier_result`` null, and Harbor's own job mean leaves the
trial out); ``reward_valid`` is read only where a reward was recorded.

A valid trial passes when its reward is at least 1 (full credit; partial credit from a
multi-key reward is not a pass). ``invalid`` is never merged into ``fail``: its
``passed`` is null.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from depthlab.io.harbor_models import policy_for
from depthlab.io.harbor_writer import STATED_CAP_KEY, TURN_LIMIT_KEY, stated_cap_instructions

# The exceptions the TB2 leaderboard counts a trial after; Harbor's error policy drops from them those
# whose reward it calls invalid (VerifierTimeoutError; RewardFileNotFoundError is kept, see below).
_LEADERBOARD_COUNTED: Final[tuple[str, ...]] = (
    "AgentTimeoutError",
    "VerifierTimeoutError",
    "RewardFileNotFoundError",
    "PermissionError",
    "NonZeroAgentExitCodeError",
)
# A missing reward file stays a counted fail, the leaderboard's reading and depthlab's on purpose,
# though Harbor's policy gives it no valid reward: the verifier ran to its end and wrote no grade,
# which is what an agent that broke its own container (a fork bomb, a filled disk, a killed PID 1)
# leaves behind; counting it invalid would let an agent turn its fails into missing cells. Harbor 0.26
# records such a trial with verifier_result null and reward_valid false (and leaves it out of its job's
# mean); reward_valid speaks of a recorded reward only, so with none recorded this rule decides, and a
# trial of either engine reads as the same fail (tests/engines/test_harbor_fidelity.py runs both).
_COUNTED_ANYWAY: Final[frozenset[str]] = frozenset({"RewardFileNotFoundError"})
#: Exceptions after which the leaderboard rule still counts the trial (its reward, or 0).
VALID_EXCEPTIONS: Final[frozenset[str]] = frozenset(
    name for name in _LEADERBOARD_COUNTED if policy_for(name).has_valid_reward or name in _COUNTED_ANYWAY
)

STATUS_RULES: Final[tuple[str, ...]] = ("leaderboard", "all")

#: A reward at or above this is a pass.
PASS_REWARD: Final[float] = 1.0


def trial_status(reward: float | None, exception: str | None, rule: str, *, reward_valid: bool | None = None) -> str:
    """Return ``"pass"``, ``"fail"`` or ``"invalid"`` for one Harbor trial under ``rule``.

    ``reward_valid`` is Harbor's verdict on a recorded reward
    (:meth:`depthlab.io.harbor_models.TrialResultBase.reward_valid`; None: no reward recorded).

    Examples
    --------
    >>> trial_status(1.0, "AgentTimeoutError", "leaderboard")
    'pass'
    >>> trial_status(None, "DaytonaError", "leaderboard")
    'invalid'
    >>> trial_status(0.0, "VerifierTimeoutError", "leaderboard")
    'invalid'
    >>> trial_status(None, "DaytonaError", "all")
    'fail'
    """
    if rule == "leaderboard" and (
        reward_valid is False or (exception is not None and exception not in VALID_EXCEPTIONS)
    ):
        return "invalid"
    return "pass" if reward is not None and reward >= PASS_REWARD else "fail"


#: Keys of ``config.agent.kwargs`` that hold the limit the harness enforced, by precedence
#: (Terminus-2: ``max_turns`` > ``max_episodes`` > ``episodes``; other agents: ``max_steps``).
TURN_LIMIT_KEYS: Final[tuple[str, ...]] = (TURN_LIMIT_KEY, "max_episodes", "episodes", "max_steps")

#: A cap rule: a trial's ``config`` -> its stated cap (None: uncapped).
CapRule = Callable[[dict], "int | None"]


def stated_cap(trial_config: dict) -> int | None:
    """Default cap rule: the turn cap stated to the agent, else None (uncapped).

    Two records of a stated cap are read: ``config.agent.kwargs["stated_cap"]`` (depthlab's runner
    and simulator write it, with ``max_turns`` = the cap), and a Harbor trial whose
    ``config.extra_instructions`` holds the sentence stating its ``max_turns``
    (:func:`depthlab.io.harbor_writer.stated_cap_instructions`; the job configs of ``depthlab plan
    --harbor-configs`` ask Harbor for that). A harness safety limit such as the 200 episodes of the
    official TB2 runs is a ``turn_limit``, not a stated cap.

    Examples
    --------
    >>> stated_cap({"agent": {"kwargs": {"stated_cap": 5, "max_turns": 5}}})
    5
    >>> stated_cap({"agent": {"kwargs": {"max_episodes": 200}}}) is None
    True
    """
    kwargs = _kwargs(trial_config)
    cap = _as_int(kwargs.get(STATED_CAP_KEY), f"config.agent.kwargs.{STATED_CAP_KEY}")
    if cap is not None or kwargs.get(TURN_LIMIT_KEY) is None:
        return cap
    limit = _as_int(kwargs[TURN_LIMIT_KEY], f"config.agent.kwargs.{TURN_LIMIT_KEY}")
    extra = trial_config.get("extra_instructions") if isinstance(trial_config, dict) else None
    if limit and isinstance(extra, list) and stated_cap_instructions(limit)[0] in extra:
        return limit
    return None


def apply_cap_rule(rule: str | CapRule, config: dict, turn_limit: int | None) -> int | None:
    """A trial's cap under ``rule`` (``"stated_cap"``, ``"turn_limit"`` or a callable on its ``config``).

    Examples
    --------
    >>> apply_cap_rule("turn_limit", {}, 40), apply_cap_rule(lambda config: 5, {}, None)
    (40, 5)
    """
    if rule == "stated_cap":
        return stated_cap(config)
    if rule == "turn_limit":
        return turn_limit
    if isinstance(rule, str):  # read_trials admits only the two names above; say so if another gets here
        raise ValueError(f"cap_rule must be 'stated_cap', 'turn_limit' or a callable, got {rule!r}")
    return _as_int(rule(config), "the cap_rule's result")


def turn_limit_cap(trial_config: dict) -> int | None:
    """Cap rule ``"turn_limit"``: treat the limit the harness enforced as the stated cap."""
    return harness_turn_limit(trial_config)


def harness_turn_limit(trial_config: dict) -> int | None:
    """The turn limit the harness enforced: the first of :data:`TURN_LIMIT_KEYS` in the agent kwargs."""
    kwargs = _kwargs(trial_config)
    for key in TURN_LIMIT_KEYS:
        if kwargs.get(key) is not None:
            return _as_int(kwargs[key], f"config.agent.kwargs.{key}")
    return None


def _kwargs(trial_config: dict) -> dict:
    agent = trial_config.get("agent") if isinstance(trial_config, dict) else None
    kwargs = agent.get("kwargs") if isinstance(agent, dict) else None
    return kwargs if isinstance(kwargs, dict) else {}


def _as_int(value: object, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{where} must be an integer, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{where} must be an integer, got {value!r}") from None
    if not number.is_integer() or not 0 <= number < 2**31:
        raise ValueError(f"{where} must be a non-negative integer, got {value!r}")
    return int(number)
