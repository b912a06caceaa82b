"""Benchmark: D to a stated error with the Bayesian planner, beside today's climb and a planner told the noise.

Simulated (``tests/bench/bayes_truth.py``, a generator written apart from the library's model):
per scenario, ``--tasks`` tasks (true depth at q = 0.2), each planner run round by round until its
plan is empty. Prints per scenario and design: runs per task, turns per task, rounds, misplaced
share (the reported rung, beyond the ladder counting as one, is not the true depth at q), and for
the Bayesian planners the share right among tasks reported at p_depth >= 0.95 (calibration), and
the ratio of runs of the planner that learns its priors to the same planner told the true noise.

Designs: ``paper`` (one run per cap, ``any``, adaptive climb), ``isotonic`` (today's best:
``isotonic`` at q 0.5, ``attempts="auto"``, adaptive climb), ``bayes`` (``mode="bayes"``, error
0.05, priors fitted every round), ``oracle`` (the same planner told the true curves and the true
distribution of steps; where the luck is drawn per task, told its spread as a grid of 11
rates), ``greedy`` (issue 44's reference: told the true curves and the true
distribution of steps too, one run per task a round, the run with the most expected information
about D per *run*, not per turn; the same stop at 0.95 and the same 8 attempts a cell).

Usage: ``python tests/bench/bench_bayes_planner.py [--tasks N] [--seed S] [--quick]``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).parent))

from bayes_truth import CAPS, Setting, Truth, draw, run_cells

from depthlab import schema
from depthlab.measures import estimate_depth, plan_missing
from depthlab.measures.bayes import NoiseGrid, depth_columns, information_gain, plan_round_table, posteriors
from depthlab.measures.depth import evidence_grid

SCENARIOS: dict[str, Setting] = {
    "flat q 0.8, 1 model, luck 2%": Setting(level=0.8),
    "flat q 0.5, 1 model, luck 2%": Setting(level=0.5),
    "flat q 0.5, 2 models, luck 2%": Setting(level=0.5, n_models=2),
    "flat q 0.3, 1 model, no luck": Setting(level=0.3, luck=0.0),
    "rising 0.35 +0.2/rung, luck 2%": Setting(shape="linear", level=0.35, slope=0.2),
    "exp s 0.9 tau 3, luck 2%": Setting(shape="exp", level=0.9, tau=3.0),
    "flat q 0.5, skewed, luck 2%": Setting(level=0.5, depths="skewed"),
    "flat q 0.8, 2 models, no luck": Setting(level=0.8, n_models=2, luck=0.0),
    "flat q 0.5, luck 0-5% by task": Setting(level=0.5, luck=0.0, luck_high=0.05),
}
#: The luck rates the oracle is told, as a grid, where the luck is drawn per task.
ORACLE_LUCKS = 11
ERROR = 0.05
DESIGNS = ("paper", "isotonic", "bayes", "oracle", "greedy")
MAX_ATTEMPTS = 8


def oracle_prior(setting: Setting, truth: Truth) -> tuple[NoiseGrid, np.ndarray]:
    """The true noise as a grid: one curve per step rung, weighted by the steps' distribution."""
    n = len(CAPS) + 1
    lucks = [setting.luck] if setting.luck_high is None else np.linspace(setting.luck, setting.luck_high, ORACLE_LUCKS)
    curves = np.stack([replace(setting, luck=float(luck)).curve(step) for step in range(n) for luck in lucks])
    reaches = curves >= setting.q
    rung = np.where(reaches.any(axis=1), reaches.argmax(axis=1), len(CAPS))
    factors = np.zeros((len(curves), 1), dtype=np.int64)
    grid = NoiseGrid(curves=curves, rung=rung.astype(np.int64), factors=factors, n_levels=(1,))
    weights = truth.step_weights
    if setting.n_models > 1:  # a deeper model's step: the base's shifted by 0-2 rungs (marginal over models)
        shifted = np.zeros(n)
        for shift, share in enumerate((0.5, 0.3, 0.2)):
            for r in range(n):
                shifted[min(r + shift, n - 1)] += weights[r] * share
        weights = (weights + shifted) / 2
    return grid, np.log(np.clip(np.repeat(weights, len(lucks)) / len(lucks), 1e-12, None))


def greedy_round(
    trials: pl.DataFrame, tasks: pl.DataFrame, truth: Truth, oracle: tuple[NoiseGrid, np.ndarray]
) -> pl.DataFrame:
    """One round of the greedy reference: per unfinished task, the one open run with the most information about D."""
    cells = evidence_grid(trials, caps=CAPS, models=truth.models, pass_rule="any", tasks=tasks)
    (post,) = posteriors(cells, trials, caps=CAPS, q=0.2, grid=oracle[0], log_prior=oracle[1])
    open_cell = post.n_valid < MAX_ATTEMPTS
    todo = np.flatnonzero((post.depth.max(axis=1) < 1 - ERROR) & open_cell.any(axis=(1, 2)))
    if not len(todo):
        return pl.DataFrame(schema=schema.PLAN)
    gain = np.where(open_cell[todo], information_gain(post.states[todo], post.grid), -1.0)
    flat = gain.reshape(len(todo), -1).argmax(axis=1)
    model, cap = np.unravel_index(flat, gain.shape[1:])
    return (
        post.keys[todo.tolist()]
        .with_columns(
            model=pl.Series([post.models[m] for m in model.tolist()]),
            cap=pl.Series([CAPS[c] for c in cap.tolist()], dtype=pl.Int32),
            attempts=pl.lit(1, dtype=pl.Int32),
        )
        .cast(schema.PLAN)
    )


def replay(design: str, setting: Setting, truth: Truth, seed: int, max_rounds: int = 80) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    tasks = schema.conform(pl.DataFrame({"dataset": "sim", "task": truth.names}), "tasks")
    trials = schema.empty("trials")
    oracle = oracle_prior(setting, truth) if design in ("oracle", "greedy") else None
    rounds = 0
    for rounds in range(1, (MAX_ATTEMPTS * len(CAPS) * len(truth.models) if design == "greedy" else max_rounds) + 1):
        if design == "paper":
            plan = plan_missing(trials, tasks, models=truth.models, mode="adaptive")
        elif design == "isotonic":
            plan = plan_missing(
                trials, tasks, models=truth.models, mode="adaptive", pass_rule="isotonic", attempts="auto", q=0.5
            )
        elif design == "bayes":
            plan = plan_missing(
                trials, tasks, models=truth.models, mode="bayes", error=ERROR, max_attempts=MAX_ATTEMPTS
            )
        elif design == "greedy":
            assert oracle is not None
            plan = greedy_round(trials, tasks, truth, oracle)
        else:
            assert oracle is not None
            cells = evidence_grid(trials, caps=CAPS, models=truth.models, pass_rule="any", tasks=tasks)
            plan = plan_round_table(
                cells,
                trials,
                caps=CAPS,
                error=ERROR,
                q=setting.q,
                max_attempts=MAX_ATTEMPTS,
                grid=oracle[0],
                log_prior=oracle[1],
            )
        if plan.is_empty():
            rounds -= 1
            break
        trials = pl.concat([trials, schema.conform(run_cells(truth, plan, rng), "trials")])
    if design in ("paper", "isotonic"):
        rule = {"paper": {"pass_rule": "any"}, "isotonic": {"pass_rule": "isotonic", "q": 0.5}}[design]
        depth = estimate_depth(trials, models=truth.models, level=None, **rule)  # type: ignore[arg-type]
        p_depth = np.full(len(truth.names), np.nan)
    elif design == "bayes":
        depth = estimate_depth(trials, models=truth.models, pass_rule="bayes", error=ERROR)
        p_depth = depth["p_depth"].to_numpy()
    else:
        cells = evidence_grid(trials, caps=CAPS, models=truth.models, pass_rule="any", tasks=tasks)
        post = posteriors(cells, trials, caps=CAPS, q=setting.q, grid=oracle[0], log_prior=oracle[1])  # type: ignore[index]
        depth = depth_columns(post[0], caps=CAPS, error=ERROR, level=None)
        p_depth = depth["p_depth"].to_numpy()
    depth = depth.sort("task")
    reported = np.array([CAPS.index(d) if d is not None else len(CAPS) for d in depth["depth"].to_list()])
    if design in ("paper", "isotonic"):  # incomplete tasks (never, once the plan is empty) count as misplaced
        reported = np.where(depth["status"].to_numpy() == "incomplete", -1, reported)
    right = reported == truth.true_rung
    sure = p_depth >= 1 - ERROR
    n = len(truth.names)
    return {
        "runs": trials.height / n,
        "turns": float(trials["n_turns"].sum()) / n,
        "rounds": rounds,
        "misplaced": 1 - right.mean(),
        "n_sure": int(sure.sum()),
        "right_when_sure": float(right[sure].mean()) if sure.any() else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="the first two scenarios only")
    args = parser.parse_args()
    pl.Config.set_tbl_rows(100)
    pl.Config.set_tbl_cols(12)
    pl.Config.set_tbl_width_chars(200)
    rows = []
    scenarios = list(SCENARIOS.items())[: 2 if args.quick else None]
    for number, (name, setting) in enumerate(scenarios):
        truth = draw(setting, args.tasks, np.random.default_rng(args.seed + number))
        for design in DESIGNS:
            result = replay(design, setting, truth, seed=args.seed + 1000 + number)
            rows.append({"scenario": name, "design": design, **result})
            print(name, design, {k: round(v, 3) for k, v in result.items()}, flush=True)
    table = pl.DataFrame(rows)
    runs = {d: table.filter(pl.col("design") == d).select("scenario", pl.col("runs").alias(d)) for d in DESIGNS}
    ratio = (
        runs["bayes"]
        .join(runs["oracle"], on="scenario")
        .join(runs["greedy"], on="scenario")
        .select(
            "scenario",
            runs_vs_oracle=pl.col("bayes") / pl.col("oracle"),
            runs_vs_greedy=pl.col("bayes") / pl.col("greedy"),
            oracle_vs_greedy=pl.col("oracle") / pl.col("greedy"),
        )
    )
    print(f"\nSimulated, {args.tasks} tasks per scenario, error {ERROR}, depth at q = 0.2:")
    print(table.with_columns(pl.col(pl.Float64).round(3)))
    print("\nThe price of learning the noise (runs of bayes / oracle), and both beside the greedy reference:")
    print(ratio.with_columns(pl.col(pl.Float64).round(3)))
    print("\nIssue 44's targets (bayes), and where one is missed, by how much:")
    for line in target_lines(table, ratio):
        print(" ", line)


def target_lines(table: pl.DataFrame, ratio: pl.DataFrame) -> list[str]:
    """One line per target and scenario: the value, met or MISSED by how much."""
    bayes = {row["scenario"]: row for row in table.filter(pl.col("design") == "bayes").iter_rows(named=True)}
    lines = []

    def verdict(value: float, limit: float, above: bool, unit: str) -> str:
        gap = (limit - value) if above else (value - limit)
        return "met" if gap <= 0 else f"MISSED by {gap:.3g}{unit}"

    for name, row in bayes.items():
        setting = SCENARIOS[name]
        if setting.level >= 0.5 and setting.luck == 0.02 and setting.shape == "flat":
            lines.append(
                f"misplaced <= 0.07, {name}: {row['misplaced']:.3f} ({verdict(row['misplaced'], 0.07, False, '')})"
            )
        if row["n_sure"]:
            right = row["right_when_sure"]
            lines.append(f"right among p_depth >= 0.95 >= 0.93, {name}: {right:.3f} ({verdict(right, 0.93, True, '')})")
    for name, value, _versus_greedy, _ in ratio.iter_rows():
        lines.append(f"runs / oracle's <= 1.15, {name}: {value:.2f} ({verdict(value, 1.15, False, 'x')})")
    greedy = {row["scenario"]: row for row in table.filter(pl.col("design") == "greedy").iter_rows(named=True)}
    for name, _value, versus_greedy, _ in ratio.iter_rows():
        if name in greedy:  # issue 44: "beat it where you can", in runs at no more misplaced
            g, b = greedy[name], bayes[name]
            beaten = versus_greedy < 1 and b["misplaced"] <= g["misplaced"]
            lines.append(
                f"beside the greedy reference, {name}: {b['runs']:.1f} vs {g['runs']:.1f} runs ({versus_greedy:.2f}x), "
                f"misplaced {b['misplaced']:.3f} vs {g['misplaced']:.3f} ({'beaten' if beaten else 'not beaten'})"
            )
    skewed, uniform = "flat q 0.5, skewed, luck 2%", "flat q 0.5, 1 model, luck 2%"
    if skewed in bayes and uniform in bayes:
        s, u = bayes[skewed]["runs"], bayes[uniform]["runs"]
        lines.append(
            f"skewed collection cheaper than uniform: {s:.1f} vs {u:.1f} runs ({'met' if s < u else 'MISSED'})"
        )
    return lines


if __name__ == "__main__":
    main()
