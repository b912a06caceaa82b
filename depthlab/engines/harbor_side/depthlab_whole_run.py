"""Harbor's terminus-2 with a turn cap on the whole run of a multi-step task (loaded by Harbor, never by depthlab).

``depthlab measure --engine harbor`` names this class in a job's agent entry (``import_path =
"depthlab_whole_run:WholeRunTerminus2"``, this folder on the ``harbor`` child's ``PYTHONPATH``) for
jobs that hold a multi-step task. Harbor 0.26 runs the steps of a trial with one agent object,
calling ``run`` once per step (terminus-2 resets its conversation each time). This subclass keeps
the turns the earlier steps used, and for each step:

* enforces the turns left (terminus-2's episode limit: its ``n_episodes``, the confirmation reply
  included, as depthlab's runner counts it);
* states them: the job's ``extra_instructions`` sentence for the whole cap, which Harbor appends
  to every step's instruction, is replaced by the same sentence for the turns left
  (``cap_template``, the text of :func:`depthlab.io.harbor_writer.cap_sentence`);
* once the turns are spent, gives the step no turn (``n_episodes`` 0): Harbor still verifies it as
  the container is, so the gates and the reward strategy decide, as on depthlab's runner.

Every step's run ends with depthlab's guard (``depthlab_guard``, beside this file), a step with no
turn included: from the second step on it stops every process an earlier step's agent left before
the step's tests arrive, so a forged grade counts no more in a multi-step task than in a
single-step one.

It runs in Harbor's own environment (Python >= 3.12, Harbor importable, depthlab not): it imports
Harbor and its sibling ``depthlab_guard`` only, and nothing of depthlab.
"""

from __future__ import annotations

from typing import Any

from depthlab_guard import GuardedOptions, GuardedTerminus2


class WholeRunOptions(GuardedOptions):
    """The guarded terminus-2's options and the sentence stating the turns left (Harbor checks kwargs by these)."""

    cap_template: str = ""


class WholeRunTerminus2(GuardedTerminus2):
    """terminus-2 whose ``max_turns`` (the stated cap) counts the turns of all steps of a trial."""

    options_model = WholeRunOptions

    def __init__(self, *args: Any, cap_template: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._whole_run_turns = int(kwargs["max_turns"])  # the stated cap: the job's max_turns
        self._cap_template = cap_template
        self._turns_used = 0

    def _sentence(self, turns: int) -> str:
        return self._cap_template.format(cap=turns, unit="turn" if turns == 1 else "turns")

    async def run(self, instruction: str, environment: Any, context: Any) -> None:
        left = max(self._whole_run_turns - self._turns_used, 0)
        stated = self._sentence(self._whole_run_turns)
        if left and instruction.rstrip().endswith(stated):
            instruction = instruction.rstrip()[: -len(stated)] + self._sentence(left)
        if left == 0:  # the run's turns are spent: no turn, graded as the container is, after the guard
            context.metadata = {"n_episodes": 0, "hit_cap": True, "turns_left": 0}
            await self._guarded(environment, None, context)
            return
        self._max_episodes = left
        try:
            await super().run(instruction, environment, context)
        finally:
            metadata = context.metadata if isinstance(context.metadata, dict) else {}
            self._turns_used += int(metadata.get("n_episodes") or 0)
            context.metadata = {**metadata, "turns_left": left}
