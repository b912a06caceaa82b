"""Do verifiers see the key steps? The paper's three verifier rules, beside this data's (notebook 09).

The rules, as ``depthlab check`` tests them (:mod:`depthlab.checks`): a step's checks fail before the
step is done (``before``), fail when its key step is removed (``key_removed``), and with the key step
removed the next step fails too (``next_after_key``). A step counts for a rule when its check was judged
(outcome ``ok`` or ``fault``); ``not_marked``, ``not_applicable``, ``flaky`` and ``error`` rows are left
out of both counts, as the paper counts only the segments it could test.
"""

from __future__ import annotations

import polars as pl

from depthlab import paper, schema, stats
from depthlab._checks import check_frame

#: The rules compared with the paper, in its order.
RULES: tuple[str, ...] = ("before", "key_removed", "next_after_key")


def verifiers_see_key_steps(checks: pl.DataFrame, *, sample: str = "the tasks checked") -> pl.DataFrame:
    """The paper's three verifier-rule counts beside this data's, each with its 95% Wilson interval.

    Parameters
    ----------
    checks : polars.DataFrame
        A checks table (:data:`depthlab.schema.CHECKS`, from :func:`depthlab.checks.check_tasks`).
    sample : str
        What the tasks are (say whether they are simulated): printed in this data's rows.

    Returns
    -------
    polars.DataFrame
        :data:`depthlab.schema.KEY_STEP_RULES`: per rule, the paper's row then this data's.

    Notes
    -----
    The paper's counts are over its own generated segments; a row of this data is the same quantity
    only on segmented tasks whose key steps are marked the paper's way. The interval is Wilson's
    score interval (:func:`depthlab.stats.proportion_ci`).

    Examples
    --------
    >>> import polars as pl
    >>> from depthlab import schema
    >>> rows = [{"task": "t", "step": "a", "check": "before", "outcome": outcome} for outcome in ("ok", "ok", "fault")]
    >>> table = verifiers_see_key_steps(schema.conform(pl.DataFrame(rows), "checks"), sample="demo")
    >>> table.filter(pl.col("source") == "data").select("check", "k", "n").row(0)
    ('before', 2, 3)
    """
    check_frame(checks, "checks", "verifiers_see_key_steps", ("check", "outcome"))
    rows = []
    for rule in RULES:
        judged = checks.filter((pl.col("check") == rule) & pl.col("outcome").is_in(["ok", "fault"]))
        paper_k, paper_n = paper.KEY_STEP_COUNTS[rule]
        for source, k, n, where in (
            ("paper", paper_k, paper_n, paper.KEY_STEP_SAMPLE),
            ("data", int((judged["outcome"] == "ok").sum()), judged.height, sample),
        ):
            low, high = stats.proportion_ci([k], [n]) if n else ([None], [None])
            rows.append(
                {
                    "check": rule,
                    "source": source,
                    "k": k,
                    "n": n,
                    "share": k / n if n else None,
                    "ci_low": None if low[0] is None else float(low[0]),
                    "ci_high": None if high[0] is None else float(high[0]),
                    "sample": where,
                }
            )
    return pl.DataFrame(rows, schema=schema.KEY_STEP_RULES)
