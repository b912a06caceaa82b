"""The missing-cap planner: hand cases, convergence against a known truth, Harbor configs, CLI."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from depthlab import cli, schema
from depthlab.commands.plan import harbor_job_configs
from depthlab.io.harbor_writer import cap_sentence
from depthlab.measures import estimate_depth, plan_missing, sweep_runs

CAPS = schema.CAPS


def _trials(rows: list[tuple]) -> pl.DataFrame:
    frame = pl.DataFrame(
        [{"dataset": "d", "task": t, "model": m, "cap": c, "status": s} for t, m, c, s in rows],
        schema={"dataset": pl.String, "task": pl.String, "model": pl.String, "cap": pl.Int32, "status": pl.String},
    )
    return schema.conform(frame, "trials")


def _tasks(names: list[str]) -> pl.DataFrame:
    return schema.conform(pl.DataFrame({"dataset": ["d"] * len(names), "task": names}), "tasks")


def _cells(plan: pl.DataFrame) -> set[tuple]:
    return {(r["task"], r["model"], r["cap"], r["attempts"]) for r in plan.iter_rows(named=True)}


def test_from_scratch_the_sweep_plans_everything_and_adaptive_the_bottom():
    tasks = _tasks(["t"])
    sweep = plan_missing(schema.empty("trials"), tasks, models=["a", "b"])
    assert sweep.columns == ["dataset", "task", "model", "cap", "attempts"]
    assert _cells(sweep) == {("t", m, c, 1) for m in "ab" for c in CAPS}
    adaptive = plan_missing(schema.empty("trials"), tasks, models=["a", "b"], mode="adaptive")
    assert _cells(adaptive) == {("t", "a", 1, 1), ("t", "b", 1, 1)}


def _adaptive(rows: list[tuple], models: str = "ab", **kwargs) -> set[tuple]:
    return _cells(plan_missing(_trials(rows), _tasks(["t"]), models=list(models), mode="adaptive", **kwargs))


def _failed(caps: tuple[int, ...], models: str = "ab") -> list[tuple]:
    return [("t", m, c, "fail") for m in models for c in caps]


@pytest.mark.parametrize(
    ("failed_caps", "next_caps"),
    [
        ((), (1,)),
        ((1,), (2,)),
        ((1, 2), (3,)),
        ((1, 2, 3), (5,)),  # the top is not probed yet: the lower half has not failed
        ((1, 2, 3, 5), (10, 80)),  # caps[len(caps) // 2] = 10 is reached: probe the top too
        ((1, 2, 3, 5, 10), (20,)),  # the top was already probed (it failed below): climb on
        ((1, 2, 3, 5, 10, 20), (40,)),
    ],
)
def test_adaptive_steps_are_pinned_on_the_default_ladder(failed_caps, next_caps):
    # from cap 10 on the top probe has run: a failed there, b passed (D <= 80), so both climb below 80
    top = [("t", "a", 80, "fail"), ("t", "b", 80, "pass")] if 10 in failed_caps else []
    assert _adaptive(_failed(failed_caps) + top) == {("t", m, c, 1) for m in "ab" for c in next_caps}


def test_adaptive_ends_after_the_top_fails_for_every_model():
    assert _adaptive(_failed((1, 2, 3, 5, 10, 80))) == set()


def test_adaptive_top_probe_follows_the_ladder_given():
    caps = (1, 2, 4, 8)  # caps[len(caps) // 2] = 4: the top is probed with cap 4
    assert _adaptive(_failed((1,)), caps=caps) == {("t", m, 2, 1) for m in "ab"}
    assert _adaptive(_failed((1, 2)), caps=caps) == {("t", m, c, 1) for m in "ab" for c in (4, 8)}


def _rounds(truth: dict[str, int | None], known: list[tuple], models: str = "ab") -> list[set[tuple]]:
    """Replay the adaptive planner on one task whose models pass iff cap >= their depth."""
    rounds: list[set[tuple]] = []
    rows = list(known)
    for _ in range(2 * len(CAPS)):
        plan = _adaptive(rows, models)
        if not plan:
            return rounds
        rounds.append({(m, c) for _, m, c, _ in plan})
        rows += [("t", m, c, "pass" if truth[m] is not None and c >= truth[m] else "fail") for _, m, c, _ in plan]
    raise AssertionError(f"no convergence: {rounds}")


def test_adaptive_climbs_both_models_in_step_from_scratch():
    assert _rounds({"a": 20, "b": None}, []) == [
        {("a", 1), ("b", 1)},
        {("a", 2), ("b", 2)},
        {("a", 3), ("b", 3)},
        {("a", 5), ("b", 5)},
        {("a", 10), ("b", 10), ("a", 80), ("b", 80)},
        {("a", 20), ("b", 20)},
    ]


def test_a_known_top_failure_does_not_hold_a_model_back():
    # The case a random seed found (issue 15): a's depth is 20, b never passes, and b's failure at
    # the top cap is known before planning. Climbing only the needed cells left b behind while a
    # climbed, then sent b from cap 1 to 20 after a's pass at 80: 11 rounds. In step it takes 6.
    rounds = _rounds({"a": 20, "b": None}, [("t", "b", 80, "fail")])
    assert rounds == [
        {("a", 1), ("b", 1)},
        {("a", 2), ("b", 2)},
        {("a", 3), ("b", 3)},
        {("a", 5), ("b", 5)},
        {("a", 10), ("b", 10), ("a", 80)},
        {("a", 20), ("b", 20)},
    ]
    assert len(rounds) <= len(CAPS)


def test_adaptive_runs_nothing_for_a_task_every_model_failed_at_the_top():
    # unsolved already: the pending cells of models with a failed top are not run
    assert _adaptive([("t", m, 80, "fail") for m in "ab"]) == set()


def test_a_known_pass_limits_the_plan_to_smaller_caps():
    trials = _trials([("t", "a", 1, "fail"), ("t", "a", 5, "pass"), ("t", "b", 1, "fail"), ("t", "b", 2, "fail")])
    sweep = plan_missing(trials, _tasks(["t"]), models=["a", "b"])
    assert _cells(sweep) == {("t", "a", 2, 1), ("t", "a", 3, 1), ("t", "b", 3, 1)}
    adaptive = plan_missing(trials, _tasks(["t"]), models=["a", "b"], mode="adaptive")
    assert _cells(adaptive) == {("t", "a", 2, 1)}


def test_solved_and_unsolved_tasks_need_nothing():
    trials = _trials([("s", "a", 1, "pass"), ("u", "a", 80, "fail")])
    assert plan_missing(trials, _tasks(["s", "u"]), models=["a"]).is_empty()


def test_invalid_trials_leave_the_cell_to_run_and_attempts_count_valid_ones():
    trials = _trials([("t", "a", 1, "invalid"), ("t", "a", 2, "fail"), ("t", "a", 3, "pass"), ("t", "a", 3, "fail")])
    plan = plan_missing(trials, _tasks(["t"]), models=["a"], attempts=3)
    # cap 1: 0 valid of 3; cap 2: 1 valid fail of 3; cap 3 already passes under "any"
    assert _cells(plan) == {("t", "a", 1, 3), ("t", "a", 2, 2)}
    majority = plan_missing(trials, _tasks(["t"]), models=["a"], attempts=3, pass_rule="majority")
    # 1 pass of 3 planned is not yet a majority, so cap 3 needs its third attempt
    assert ("t", "a", 3, 1) in _cells(majority)


@pytest.mark.parametrize(
    ("statuses", "attempts", "planned"),
    [
        (["pass", "pass"], 3, None),  # 2 of 3 pass whatever the third does: decided
        (["fail", "fail"], 3, None),  # 2 of 3 fail: no majority can follow
        (["pass", "fail"], 3, 1),  # the third attempt decides
        (["pass", "pass"], 4, None),  # 2 of 4 is already half
        (["fail", "fail"], 4, 2),  # 2 passes of the remaining 2 would still make half
        (["fail", "fail", "fail"], 4, None),
        (["pass"], 2, None),
        (["fail"], 2, 1),
    ],
)
def test_majority_decides_a_cell_as_soon_as_the_missing_attempts_cannot_change_it(statuses, attempts, planned):
    # model a passes cap 2, so only cap 1 can matter; its outcome so far is `statuses`
    trials = _trials([("t", "a", 1, s) for s in statuses] + [("t", "a", 2, "pass")] * attempts)
    plan = plan_missing(trials, _tasks(["t"]), models=["a"], attempts=attempts, pass_rule="majority")
    assert _cells(plan) == (set() if planned is None else {("t", "a", 1, planned)})


def test_an_early_majority_failure_at_the_top_ends_the_task():
    # 2 of 3 planned attempts failed at the top cap: no majority can pass there, so with nothing
    # passing below the task is unsolved and nothing is planned
    trials = _trials([("t", "a", 80, "fail")] * 2)
    assert plan_missing(trials, _tasks(["t"]), models=["a"], attempts=3, pass_rule="majority").is_empty()
    # one failure of 3 decides nothing: every cap is still to run (3 attempts each, 2 at the top)
    plan = plan_missing(trials.head(1), _tasks(["t"]), models=["a"], attempts=3, pass_rule="majority")
    assert _cells(plan) == {("t", "a", c, 3) for c in CAPS[:-1]} | {("t", "a", 80, 2)}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"models": None}, "The 'models' parameter of plan_missing must be a sequence"),
        ({"models": ["a"], "attempts": 0}, "The 'attempts' parameter of plan_missing must be an int >= 1"),
        (
            {"models": ["a"], "attempts": 2.0},
            r"The 'attempts' parameter of plan_missing must be an int >= 1, got 2\.0$",
        ),
        (
            {"models": ["a"], "attempts": True},
            "The 'attempts' parameter of plan_missing must be an int >= 1, got True$",
        ),
        ({"models": ["a"], "mode": "bisect"}, "The 'mode' parameter of plan_missing must be one of"),
        ({"models": ["a"], "caps": (5, 1)}, "The 'caps' parameter of plan_missing"),
    ],
)
def test_plan_missing_rejects_bad_parameters(kwargs, message):
    with pytest.raises((TypeError, ValueError), match=message):
        plan_missing(schema.empty("trials"), _tasks(["t"]), **kwargs)


def test_sweep_runs_counts_the_grid():
    assert sweep_runs(10, n_models=2, attempts=3) == 10 * 2 * len(CAPS) * 3
    assert sweep_runs(10, n_models=2) == 10 * 2 * 8  # one attempt by default
    assert sweep_runs(7, n_models=3, caps=(1, 5)) == 7 * 3 * 2
    assert sweep_runs(0, n_models=1) == 0


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((-1,), {"n_models": 2}, "The 'n_tasks' parameter of sweep_runs must be an int >= 0, got -1"),
        ((True,), {"n_models": 2}, "The 'n_tasks' parameter of sweep_runs must be an int >= 0, got True"),
        ((2.0,), {"n_models": 2}, "The 'n_tasks' parameter of sweep_runs must be an int >= 0, got 2.0"),
        ((1,), {"n_models": 0}, "The 'n_models' parameter of sweep_runs must be an int >= 1, got 0"),
        ((1,), {"n_models": 1, "attempts": 0}, "The 'attempts' parameter of sweep_runs must be an int >= 1, got 0"),
        ((1,), {"n_models": 1, "caps": ()}, "The 'caps' parameter of sweep_runs must be a non-empty"),
    ],
)
def test_sweep_runs_rejects_bad_parameters(args, kwargs, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        sweep_runs(*args, **kwargs)


# ---------------------------------------------------------------- convergence on a known truth

_LADDER_OR_NEVER = st.sampled_from([*CAPS, None])


def _run(plan: pl.DataFrame, truth: dict[tuple[str, str], int | None]) -> pl.DataFrame:
    """Run planned cells: a model passes iff the cap reaches its true ladder depth."""
    rows = []
    for r in plan.iter_rows(named=True):
        depth = truth[(r["task"], r["model"])]
        status = "pass" if depth is not None and r["cap"] >= depth else "fail"
        rows += [(r["task"], r["model"], r["cap"], status)] * r["attempts"]
    return _trials(rows)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(_LADDER_OR_NEVER, _LADDER_OR_NEVER), min_size=1, max_size=5),
    st.sampled_from(["sweep", "adaptive"]),
    st.lists(st.tuples(st.integers(0, 4), st.sampled_from("ab"), st.sampled_from(CAPS)), max_size=10),
    st.integers(1, 3),
    st.sampled_from(["any", "majority"]),
)
# issue 15: a's depth 20, b never passes, b's top-cap failure known: 11 adaptive rounds before the fix
@example(model_depths=[(20, None)], mode="adaptive", known_cells=[(0, "b", 80)], attempts=1, pass_rule="any")
def test_replanning_pins_every_depth(model_depths, mode, known_cells, attempts, pass_rule):
    names = [f"t{i}" for i in range(len(model_depths))]
    truth = {
        (name, m): depth
        for name, pair in zip(names, model_depths, strict=True)
        for m, depth in zip("ab", pair, strict=True)
    }
    # some cells are already known (consistent with the truth), some attempts died
    start = [(names[i % len(names)], m, c) for i, m, c in known_cells]
    known = _run(
        pl.DataFrame(
            {
                "task": [t for t, _, _ in start],
                "model": [m for _, m, _ in start],
                "cap": [c for _, _, c in start],
                "attempts": [1] * len(start),
            }
        ),
        truth,
    )
    known = pl.concat([known, _trials([(t, m, c, "invalid") for t, m, c in start[:2]])])
    options = {"models": ["a", "b"], "mode": mode, "attempts": attempts, "pass_rule": pass_rule}
    # every run is valid: at most len(CAPS) rounds with a plan (planning.py's documented bound)
    for _ in range(len(CAPS)):
        plan = plan_missing(known, _tasks(names), **options)
        if plan.is_empty():
            break
        known = pl.concat([known, _run(plan, truth)])
    assert plan_missing(known, _tasks(names), **options).is_empty()
    depth = estimate_depth(known, models=["a", "b"], pass_rule=pass_rule)
    for name, pair in zip(names, model_depths, strict=True):
        reachable = [d for d in pair if d is not None]
        row = depth.filter(pl.col("task") == name).row(0, named=True)
        if reachable:
            assert (row["status"], row["depth"]) == ("solved", min(reachable))
        else:
            assert row["status"] == "unsolved"


def test_adaptive_needs_at_most_half_the_sweep_on_the_simulation(tmp_path):
    from depthlab.simulate import replay_plan, write_runs

    summary = write_runs(tmp_path / "sim", seed=5, scale=0.1, public_attempts=0)
    adaptive = replay_plan(summary, mode="adaptive")
    sweep = replay_plan(summary, mode="sweep")
    assert adaptive.runs <= adaptive.sweep_runs / 2
    assert sweep.runs == sweep.sweep_runs  # from scratch the sweep runs the whole grid
    both = adaptive.depth.join(sweep.depth, on=["dataset", "task"], suffix="_sweep")
    assert both.height == summary.n_tasks
    assert (both["depth"].eq_missing(both["depth_sweep"])).all()
    assert (both["status"] == both["status_sweep"]).all()
    truth = adaptive.depth.join(summary.truth, on=["dataset", "task"])
    assert truth["depth"].eq_missing(truth["d_star"]).all()


def test_planned_cells_written_as_harbor_runs_pin_every_depth(tmp_path):
    """Simulated logs with caps removed -> plan -> write the planned runs -> load again -> every D pinned."""
    import shutil

    from depthlab.io import load_tasks, load_trials
    from depthlab.simulate import write_cells, write_runs

    summary = write_runs(tmp_path / "sim", seed=11, scale=0.03, public_attempts=0)
    for job in summary.job_dirs:
        if job.name.endswith(("cap-01", "cap-03")) or "model-b__cap-10" in job.name:
            shutil.rmtree(job)
    tasks = load_tasks([summary.tasks_dir])
    trials = load_trials([summary.jobs_dir], cache=False)
    plan = plan_missing(trials, tasks, models=summary.models, mode="sweep")
    assert not plan.is_empty()
    assert set(plan["cap"].unique()) <= {1, 3, 10}
    write_cells(plan, summary, job_name="filled", seed=2)
    trials = load_trials([summary.jobs_dir], cache=False)
    assert plan_missing(trials, tasks, models=summary.models).is_empty()
    depth = estimate_depth(trials, models=summary.models).join(summary.truth, on=["dataset", "task"])
    assert depth["status"].is_in(["solved", "unsolved"]).all()
    assert depth["depth"].eq_missing(depth["d_star"]).all()


# ---------------------------------------------------------------- Harbor configs and the CLI


def test_harbor_job_configs_one_per_model_and_cap():
    plan = pl.DataFrame(
        {
            "dataset": ["d", "d", "d", "e"],
            "task": ["t1", "t2", "t1", "x"],
            "model": ["p/a", "p/a", "p/b", "p/a"],
            "cap": [1, 1, 5, 1],
            "attempts": [2, 2, 1, 2],
        },
        schema_overrides={"cap": pl.Int32, "attempts": pl.Int32},
    )
    tasks = schema.conform(
        pl.DataFrame(
            {
                "dataset": ["d", "d", "e"],
                "task": ["t1", "t2", "x"],
                "source": ["/r/tasks/d/t1", "/r/tasks/d/t2/task.toml", "/r/tasks/e/x"],
            }
        ),
        "tasks",
    )
    configs = harbor_job_configs(plan, tasks)
    assert sorted(configs) == ["p-a__cap-01.json", "p-b__cap-05.json"]
    config = configs["p-a__cap-01.json"]
    assert config.agents[0].model_name == "p/a"
    assert config.agents[0].kwargs == {"max_turns": 1}  # terminus-2 takes no other cap key
    assert config.extra_instructions == [cap_sentence(1).strip()]  # the cap is stated
    assert config.n_attempts == 2
    assert [(entry.path, entry.task_names) for entry in config.datasets] == [
        ("/r/tasks/d", ["t1", "t2"]),
        ("/r/tasks/e", ["x"]),
    ]
    assert configs["p-b__cap-05.json"].agents[0].kwargs == {"max_turns": 5}
    assert "at most 5 turns" in configs["p-b__cap-05.json"].extra_instructions[0]


def test_cli_simulate_depth_and_plan(tmp_path, capsys):
    out = tmp_path / "sim"
    assert cli.main(["simulate", str(out), "--scale", "0.02", "--seed", "4"]) == 0
    truth = pl.read_csv(out / "truth.csv")
    assert cli.main(["depth", str(out / "jobs"), "-o", str(tmp_path / "depth.parquet")]) == 0
    depth = pl.read_parquet(tmp_path / "depth.parquet")
    schema.check(depth, "depth")
    joined = depth.join(truth, on=["dataset", "task"])
    assert joined.height == truth.height
    assert joined["depth"].eq_missing(joined["d_star"].cast(pl.Int32)).all()

    configs = tmp_path / "configs"
    args = ["plan", "--tasks", str(out / "tasks"), "--models", "sim/model-a,sim/model-b", "--mode", "adaptive"]
    assert cli.main([*args, "-o", str(tmp_path / "plan.csv"), "--harbor-configs", str(configs)]) == 0
    plan = pl.read_csv(tmp_path / "plan.csv")
    assert plan.height == 2 * truth.height  # from scratch: cap 1 for both models
    assert set(plan["cap"]) == {1}
    written = sorted(path.name for path in configs.iterdir())
    assert written == ["sim-model-a__cap-01.json", "sim-model-b__cap-01.json"]
    config = json.loads((configs / written[0]).read_text())
    assert sum(len(entry["task_names"]) for entry in config["datasets"]) == truth.height
    assert "adaptive plan" in capsys.readouterr().err

    # the existing runs leave nothing to plan
    assert cli.main(["plan", str(out / "jobs"), *args[1:], "-o", str(tmp_path / "none.csv")]) == 0
    assert pl.read_csv(tmp_path / "none.csv").height == 0


def test_cli_depth_reports_bad_caps(tmp_path, capsys):
    out = tmp_path / "sim"
    assert cli.main(["simulate", str(out), "--scale", "0.01", "--public-attempts", "0"]) == 0
    assert cli.main(["depth", str(out / "jobs"), "--caps", "5,1", "-o", str(tmp_path / "d.csv")]) == 1
    assert "The 'caps' parameter of estimate_depth" in capsys.readouterr().err


def test_cli_simulate_reports_bad_parameters(tmp_path, capsys):
    assert cli.main(["simulate", str(tmp_path / "x"), "--scale", "0"]) == 1
    assert "The 'scale' parameter of write_runs" in capsys.readouterr().err


# --- attempts where they decide (issue 29) -----------------------------------------------------


def _model_caps(plan: pl.DataFrame) -> set[tuple[str, int]]:
    return {(model, cap) for model, cap in plan.select("model", "cap").iter_rows()}


def test_auto_attempts_retry_a_lone_pass_and_probe_the_cap_above_under_isotonic():
    # one model: cap 1 failed once, cap 2 passed once: a lucky pass? two more failures there would
    # pool it below one half, and failures at cap 3 would too; two passes at cap 1 would make D = 1
    trials = _trials([("t", "a", 1, "fail"), ("t", "a", 2, "pass")])
    plan = plan_missing(trials, _tasks(["t"]), models=["a"], attempts="auto", mode="adaptive", pass_rule="isotonic")
    assert _model_caps(plan) == {("a", 1), ("a", 2), ("a", 3)}
    assert set(plan["attempts"]) == {1}
    # the same evidence with every cell at its budget of 3: nothing is open any more
    full = _trials([("t", "a", 1, "fail")] * 3 + [("t", "a", 2, "pass")] * 3 + [("t", "a", 3, "pass")] * 3)
    assert (
        plan_missing(full, _tasks(["t"]), models=["a"], attempts="auto", mode="adaptive", pass_rule="isotonic").height
        == 0
    )


def test_auto_attempts_leave_a_failure_whose_neighbours_decide_it():
    # cap 1 failed once, cap 2 failed twice, cap 3 passed three times: two passes at cap 1 give
    # 2/3 there, pooled with cap 2's 0/2 to 2/5 < 1/2: cap 1 cannot move D and gets no attempt;
    rows = [("t", "a", 1, "fail")] + [("t", "a", 2, "fail")] * 2 + [("t", "a", 3, "pass")] * 3
    plan = plan_missing(_trials(rows), _tasks(["t"]), models=["a"], attempts="auto", pass_rule="isotonic")
    # and a third attempt at cap 2 could give 1/3 there at most: D = 3 is decided, nothing is planned
    assert plan.height == 0
    # under the paper's rule any failure below D stays open: one pass would lower D
    any_rule = plan_missing(_trials(rows), _tasks(["t"]), models=["a"], attempts="auto", pass_rule="any")
    assert {("a", 1), ("a", 2)} <= _model_caps(any_rule)


def test_auto_attempts_checks():
    trials = _trials([("t", "a", 1, "fail")])
    with pytest.raises(
        ValueError, match=r"^The 'attempts' parameter of plan_missing must be a positive integer or 'auto'"
    ):
        plan_missing(trials, _tasks(["t"]), models=["a"], attempts="many")
    with pytest.raises(ValueError, match=r"^The 'max_attempts' parameter of plan_missing"):
        plan_missing(trials, _tasks(["t"]), models=["a"], attempts="auto", max_attempts=0)


def test_auto_attempts_on_the_noisy_model_spend_fewer_runs_than_three_each():
    # a small seeded version of the benchmark's comparison (tests/bench/bench_depth_rules.py runs
    # many replications); here only the direction is checked: fewer runs, about the same accuracy
    import numpy as np

    from depthlab.simulate.noisy import NoisyModel, draw_tasks, replay_attempts

    tasks = draw_tasks(NoisyModel(n_tasks=80), np.random.default_rng(3))
    fixed = replay_attempts(tasks, attempts=3, pass_rule="isotonic", seed=3)
    auto = replay_attempts(tasks, attempts="auto", pass_rule="isotonic", seed=3)
    assert auto["runs"] < 0.8 * fixed["runs"]
    assert auto["within_one"] >= fixed["within_one"] - 0.05


def test_cli_plan_attempts_auto(tmp_path, capsys):
    out = tmp_path / "sim"
    assert cli.main(["simulate", str(out), "--scale", "0.02", "--seed", "4", "--public-attempts", "0"]) == 0
    args = ["plan", str(out / "jobs"), "--tasks", str(out / "tasks"), "--models", "sim/model-a,sim/model-b"]
    # one attempt per cell so far: under the paper's rule with one attempt nothing is left ...
    assert cli.main([*args, "-o", str(tmp_path / "one.csv")]) == 0
    assert pl.read_csv(tmp_path / "one.csv").height == 0
    # ... under isotonic with auto attempts each lone pass that sets D is tried again
    auto = [*args, "--pass-rule", "isotonic", "--attempts", "auto", "--mode", "adaptive"]
    assert cli.main([*auto, "-o", str(tmp_path / "auto.csv")]) == 0
    plan = pl.read_csv(tmp_path / "auto.csv")
    depth = estimate_depth(dl_trials(out), pass_rule="isotonic").filter(pl.col("status") == "solved")
    at_depth = plan.join(depth.select("task", pl.col("depth").alias("cap")), on=["task", "cap"])
    assert plan.height > 0
    assert set(plan["attempts"]) == {1}
    assert at_depth.height > 0
    assert cli.main([*args, "--attempts", "many", "-o", str(tmp_path / "x.csv")]) == 2
    assert "expected a positive integer or 'auto'" in capsys.readouterr().err


def dl_trials(out):
    from depthlab.io import load_trials

    return load_trials(out / "jobs")


def test_auto_attempts_hold_on_a_generator_they_were_not_designed_on(depth_truth):
    """Issue 38: auto's share of fixed 3's runs and its accuracy, on the step generator of tests/bench/depth_truth.py
    (Beta pass probabilities per task and model, luck varying by task, models up to two rungs apart), not the
    logistic model auto was designed on. The bench (12 draws of 200 tasks) measures 0.70 of fixed 3's runs under
    isotonic at equal accuracy; here 2 draws of 80 tasks, so the bounds are looser."""
    got = depth_truth.planner_rows(depth_truth.Scenario(n_tasks=80, n_models=2, luck=0.05), range(3000, 3002))
    assert got["auto_share"] < 0.8
    assert got["exact_auto"] >= got["exact_fixed3"] - 0.05
    assert got["within_one_auto"] >= got["within_one_fixed3"] - 0.05


def test_depth_cost_designs_place_every_depth_of_noiseless_steps():
    from depthlab.simulate.depth_cost import replay_design, step_curves

    known = step_curves(12, pass_prob=1.0, luck=0.0, seed=3)
    assert set(known.true_rung.tolist()) != {known.true_rung[0]}  # depths differ across tasks
    sweep = replay_design(known, "sweep-1")
    assert sweep["runs"] == len(known.caps)
    assert sweep["misplaced"] == 0.0
    assert replay_design(known, "sweep-5")["runs"] == 5 * len(known.caps)
    with pytest.raises(ValueError, match="design must be one of"):
        replay_design(known, "bisect")


def test_depth_cost_budget_cuts_each_task_to_its_runs_in_plan_order():
    from depthlab.simulate.depth_cost import _within_budget

    plan = pl.DataFrame(
        {"dataset": "sim", "task": ["a", "a", "a", "b"], "model": "m", "cap": [1, 2, 3, 1], "attempts": [2, 2, 2, 4]}
    ).cast({"cap": pl.Int32, "attempts": pl.Int32})
    trials = pl.DataFrame({"task": ["a", "b", "b"]})
    cut = _within_budget(plan, trials, budget=4)
    assert cut.select("task", "cap", "attempts").rows() == [("a", 1, 2), ("a", 2, 1), ("b", 1, 2)]
    assert cut.columns == plan.columns
