"""The trajectory depth proxy: every rule of its definition on hand-made transcripts, tables, cache, bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest

import depthlab as dl
from depthlab import schema
from depthlab.io import LoadError, RejectedFilesWarning, read_steps, trajectories
from depthlab.measures import proxy
from depthlab.measures.proxy import identifiers, proxy_correlations, task_proxy, trial_proxy, turn_dependencies


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPTHLAB_CACHE_DIR", str(tmp_path / "cache"))


# transcripts ------------------------------------------------------------------------------------


def chat_trial(
    folder: Path, instruction: str, turns: list[tuple[str, str]], *, system: str = "You are an agent."
) -> Path:
    """A trial dir whose trajectory is a chat-message list: one bash call and one tool message per turn."""
    messages: list[dict] = [{"role": "system", "content": system}, {"role": "user", "content": instruction}]
    for number, (command, output) in enumerate(turns):
        call = {
            "id": f"c{number}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})},
        }
        messages.append({"role": "assistant", "content": "THOUGHT: next step", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{number}", "content": f"{output}\n\n(exit_code=0)"})
    (folder / "agent").mkdir(parents=True, exist_ok=True)
    (folder / "agent" / "trajectory.json").write_text(json.dumps(messages))
    return folder


def atif_step(
    step_id: int,
    source: str,
    message: str = "",
    keystrokes: list[str] | None = None,
    output: str | None = None,
    **extra,
) -> dict:
    step: dict = {"step_id": step_id, "source": source, "message": message, **extra}
    if keystrokes is not None:
        step["tool_calls"] = [
            {
                "tool_call_id": f"call_{step_id}_{i}",
                "function_name": "bash_command",
                "arguments": {"keystrokes": k + "\n"},
            }
            for i, k in enumerate(keystrokes)
        ]
    if output is not None:
        step["observation"] = {"results": [{"content": output}]}
    return step


def atif(steps: list[dict], **extra) -> dict:
    return {
        "schema_version": "ATIF-v1.6",
        "session_id": "s",
        "agent": {"name": "terminus-2", "version": "2"},
        "steps": steps,
        **extra,
    }


def levels(folder: Path) -> list[int]:
    return turn_dependencies(read_steps(folder, prompt=True, max_chars=10**9))["level"].to_list()


# the identifier rule ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ls -la /srv/app", []),  # plain words and shell words
        ("error: could not install; try again later", []),
        ("cat /srv/data/part_07.csv", ["part_07.csv"]),  # a path gives one token per component
        ("listening on 0.0.0.0:41873 (pid 2231)", ["41873", "2231"]),
        ("commit 9f3c2ab merged into feature-login.", ["9f3c2ab", "feature-login"]),  # trailing dot trimmed
        ("--port=38121 --name=svc_alpha", ["38121", "svc_alpha"]),
        ("apt-get install python3 x86_64 utf-8 127.0.0.1", []),  # stoplist
        ("-rw-r--r-- 1 root root 4096 Jan 10 12:00 1000 256 42 1.0", []),  # permissions, round, powers of 2, short
        ("version 3.12.1 and 4097", ["3.12.1", "4097"]),
        ("__init__.py and my_module.py", ["my_module.py"]),
    ],
)
def test_identifiers_follow_the_shape_rule_and_stoplist(text, expected):
    assert identifiers(text) == expected


def test_identifiers_are_listed_once_in_order():
    assert identifiers("a_1 b_2 a_1 c_3 b_2") == ["a_1", "b_2", "c_3"]
    assert identifiers(None) == [] == identifiers("")


# the dependency rule on chat transcripts --------------------------------------------------------


def test_an_output_identifier_used_later_makes_a_dependency(tmp_path):
    trial = chat_trial(
        tmp_path / "t",
        "Find the secret under /srv.",
        [
            ("ls /srv", "clue_4417.txt"),
            ("cat /srv/clue_4417.txt", "go to vault_8812"),
            ("cat /srv/vault_8812", "the secret is 31337x"),
            ("echo 31337x > /app/answer.txt", ""),
        ],
    )
    deps = turn_dependencies(read_steps(trial, prompt=True, max_chars=10**9))
    assert deps["level"].to_list() == [1, 2, 3, 4]
    assert deps["depends_on"].to_list() == [[], [1], [2], [3]]
    assert deps["identifiers"].to_list() == [[], [["clue_4417.txt"]], [["vault_8812"]], [["31337x"]]]
    assert deps["on_chain"].to_list() == [True, True, True, True]
    assert trial_proxy(trial) == 4


def test_instruction_identifiers_never_make_a_dependency(tmp_path):
    trial = chat_trial(
        tmp_path / "t",
        "Fix /app/server_v2.py so it listens on port 48213.",
        [
            ("cat /app/server_v2.py", "bind(48213) in server_v2.py"),
            ("sed -i s/x/y/ /app/server_v2.py", ""),
            ("curl localhost:48213", "ok"),
        ],
    )
    assert levels(trial) == [1, 1, 1]


def test_identifiers_in_the_system_prompt_are_given_too(tmp_path):
    trial = chat_trial(tmp_path / "t", "Do it.", [("cat tool_v9.cfg", "tool_v9.cfg: ok")], system="Use tool_v9.cfg.")
    assert levels(trial) == [1]


def test_the_agents_own_identifiers_echoed_back_make_no_dependency(tmp_path):
    # the terminal echoes the command line, and the agent reads its own file back
    trial = chat_trial(
        tmp_path / "t",
        "Write a report.",
        [
            ("echo data > /tmp/report_2291.txt", "$ echo data > /tmp/report_2291.txt"),
            ("cat /tmp/report_2291.txt", "data"),
            ("wc -c /tmp/report_2291.txt", "5 /tmp/report_2291.txt"),
        ],
    )
    assert levels(trial) == [1, 1, 1]


def test_messages_are_not_read_by_the_primary_rule_and_are_by_the_variant(tmp_path):
    folder = tmp_path / "t"
    messages = [
        {"role": "user", "content": "Start the server and check it."},
        {
            "role": "assistant",
            "content": "start it",
            "tool_calls": [{"function": {"name": "bash", "arguments": json.dumps({"command": "./serve &"})}}],
        },
        {"role": "tool", "content": "listening on 50123, pid 7781"},
        # the agent reasons about the port, and its command only uses the pid
        {
            "role": "assistant",
            "content": "It listens on 50123; I will stop pid 7781 later.",
            "tool_calls": [{"function": {"name": "bash", "arguments": json.dumps({"command": "sleep 1"})}}],
        },
        {"role": "tool", "content": ""},
        # an identifier the agent first writes in its message, then types
        {
            "role": "assistant",
            "content": "Write the log to run_4471.log.",
            "tool_calls": [
                {"function": {"name": "bash", "arguments": json.dumps({"command": "kill 7781 > run_4471.log"})}}
            ],
        },
        {"role": "tool", "content": "run_4471.log written"},
    ]
    (folder / "agent").mkdir(parents=True)
    (folder / "agent" / "trajectory.json").write_text(json.dumps(messages))
    steps = read_steps(folder, prompt=True, max_chars=10**9)
    primary = turn_dependencies(steps)
    assert primary["level"].to_list() == [1, 1, 2]
    assert primary["identifiers"].to_list()[2] == [["7781"]]
    variant = turn_dependencies(steps, messages=True)
    assert variant["level"].to_list() == [1, 2, 2]
    assert variant["identifiers"].to_list()[1] == [["50123", "7781"]]
    assert trial_proxy(folder) == 2 == trial_proxy(folder, messages=True)


def test_plain_words_in_an_output_make_no_dependency(tmp_path):
    trial = chat_trial(
        tmp_path / "t",
        "Set up the tool.",
        [
            ("tool --help", "error: missing package, please install curl and retry"),
            ("apt-get install -y curl", "Setting up curl"),
            ("curl --version", "curl 8.5.0"),
        ],
    )
    assert levels(trial) == [1, 1, 1]


def test_several_dependencies_in_one_turn_take_the_deepest(tmp_path):
    trial = chat_trial(
        tmp_path / "t",
        "Join the two parts.",
        [
            ("ls /a", "left_17.part"),  # 1
            ("cat /a/left_17.part", "see deep_58"),  # 2 (needs 1)
            ("cat /a/deep_58", "tail_99.part"),  # 3 (needs 2)
            ("ls /b", "right_23.part"),  # 1
            ("cat /a/tail_99.part /b/right_23.part /a/left_17.part", "joined"),  # 1 + max(3, 1, 1)
        ],
    )
    deps = turn_dependencies(read_steps(trial, prompt=True, max_chars=10**9))
    assert deps["level"].to_list() == [1, 2, 3, 1, 4]
    last = deps.row(4, named=True)
    assert last["depends_on"] == [1, 3, 4]
    assert last["identifiers"] == [["left_17.part"], ["tail_99.part"], ["right_23.part"]]
    assert deps["on_chain"].to_list() == [True, True, True, False, True]


def test_first_appearance_decides_the_origin(tmp_path):
    # printed by turn 1 and again by turn 3: a use at turn 4 depends on turn 1 only
    trial = chat_trial(
        tmp_path / "t",
        "Go.",
        [
            ("ls", "key_771.bin"),
            ("pwd", "/root"),
            ("ls -a", ". .. key_771.bin"),
            ("xxd key_771.bin", "00"),
        ],
    )
    deps = turn_dependencies(read_steps(trial, prompt=True, max_chars=10**9))
    assert deps["depends_on"].to_list()[3] == [1]
    assert deps["level"].to_list() == [1, 1, 1, 2]


def test_outputs_are_read_whole(tmp_path):
    trial = chat_trial(
        tmp_path / "t", "Go.", [("cat big.log", "x " * 5000 + "late_id_4242"), ("echo late_id_4242", "")]
    )
    assert trial_proxy(trial) == 2


# ATIF: several calls per turn, continuations and summarization ----------------------------------


def test_atif_turn_with_several_calls_reads_them_together(tmp_path):
    steps = [
        atif_step(1, "user", "Read the index in /d."),
        atif_step(2, "agent", "look", ["ls /d"], "idx_301.txt"),
        atif_step(3, "agent", "read two", ["cd /d", "cat idx_301.txt"], "next_302.txt"),
        atif_step(4, "agent", "done", ["cat next_302.txt"], "42"),
    ]
    (tmp_path / "t" / "agent").mkdir(parents=True)
    (tmp_path / "t" / "agent" / "trajectory.json").write_text(json.dumps(atif(steps)))
    assert levels(tmp_path / "t") == [1, 2, 3]


def test_atif_continuation_files_follow_on_and_copied_context_counts_once(tmp_path):
    agent = tmp_path / "t" / "agent"
    agent.mkdir(parents=True)
    first = [
        atif_step(1, "user", "Find the token."),
        atif_step(2, "agent", "list", ["ls /k"], "door_5511"),
        atif_step(3, "agent", "open", ["cat /k/door_5511"], "room_6622"),
    ]
    # the continuation copies the prefix (marked), then goes on
    copied = [dict(step, is_copied_context=True) for step in first]
    cont = [
        *copied,
        atif_step(4, "agent", "enter", ["cat /k/room_6622"], "token_7733"),
        atif_step(5, "agent", "write", ["echo token_7733 > /app/out"], ""),
    ]
    (agent / "trajectory.json").write_text(json.dumps(atif(first, continued_trajectory_ref="trajectory.cont-1.json")))
    (agent / "trajectory.cont-1.json").write_text(json.dumps(atif(cont)))
    assert levels(tmp_path / "t") == [1, 2, 3, 4]


def test_atif_summarization_keeps_the_chain_and_leaves_the_subagents_out(tmp_path):
    agent = tmp_path / "t" / "agent"
    agent.mkdir(parents=True)
    steps = [
        atif_step(1, "system", "You are terminus."),
        atif_step(2, "user", "Recover the password."),
        atif_step(3, "agent", "list", ["ls /vault"], "shelf_A17"),
        atif_step(4, "agent", "open", ["ls /vault/shelf_A17"], "box_B28"),
        atif_step(
            5,
            "system",
            "Performed context summarization and handoff to continue task.",
            observation={
                "results": [
                    {
                        "subagent_trajectory_ref": [
                            {
                                "session_id": "s-summarization-1-summary",
                                "trajectory_path": "trajectory.summarization-1-summary.json",
                            }
                        ]
                    }
                ]
            },
        ),
        atif_step(6, "user", "Summary: you found shelf_A17 and box_B28 in /vault."),
        atif_step(7, "agent", "continue", ["cat /vault/shelf_A17/box_B28"], "pw_C39"),
    ]
    summary = [
        atif_step(1, "user", "Summarize.", is_copied_context=True),
        # the summarizer's own calls are not turns of the agent, and what it writes is not an output
        atif_step(2, "agent", "shelf_A17 then box_B28; next try extra_D40", ["cat /vault/extra_D40"], "zzz_E51"),
    ]
    (agent / "trajectory.json").write_text(json.dumps(atif(steps)))
    (agent / "trajectory.summarization-1-summary.json").write_text(json.dumps(atif(summary)))
    deps = turn_dependencies(read_steps(tmp_path / "t", prompt=True, max_chars=10**9))
    assert deps["level"].to_list() == [1, 2, 3]
    assert deps["depends_on"].to_list()[2] == [1, 2]


def test_terminus_episode_dirs(tmp_path):
    logs = tmp_path / "t" / "agent-logs"
    responses = [("ls /q", None), ("cat /q/pick_8080x", "pick_8080x"), ("echo", "done 11\n")]
    for index, (keystrokes, _) in enumerate(responses):
        episode = logs / f"episode-{index}"
        episode.mkdir(parents=True)
        response = {"analysis": "a", "plan": "p", "commands": [{"keystrokes": keystrokes + "\n"}]}
        (episode / "response.json").write_text(json.dumps(response))
        prompt = "Task: read /q." if index == 0 else ("root# ls /q\npick_8080x" if index == 1 else "ok")
        (episode / "prompt.txt").write_text(prompt)
    assert levels(tmp_path / "t") == [1, 2, 1]


# turn_dependencies parameters -------------------------------------------------------------------


def test_turn_dependencies_instruction_parameter_and_checks():
    steps = pl.DataFrame(
        {"turn": [1, 2], "message": [None, None], "commands": ["cat a_11", "cat b_22"], "observation": ["b_22", ""]}
    )
    assert turn_dependencies(steps, instruction="a_11")["level"].to_list() == [1, 2]
    with pytest.raises(TypeError, match="'steps' parameter of turn_dependencies"):
        turn_dependencies(steps.to_pandas())
    with pytest.raises(ValueError, match="number its turns"):
        turn_dependencies(steps.with_columns(turn=pl.Series([1, 3])))
    with_prompt = pl.concat(
        [
            pl.DataFrame(
                {"turn": [0], "message": [None], "commands": [None], "observation": ["x"]}, schema=steps.schema
            ),
            steps,
        ]
    )
    with pytest.raises(ValueError, match="turn-0 row"):
        turn_dependencies(with_prompt, instruction="a_11")
    empty = turn_dependencies(steps.clear())
    assert empty.height == 0
    assert empty.schema == pl.Schema(proxy.DEPENDENCIES_SCHEMA)


# depth_proxy on a trials table ------------------------------------------------------------------


def _trials(tmp_path: Path, rows: list[dict]) -> pl.DataFrame:
    table = []
    for row in rows:
        folder = tmp_path / row["trial"]
        chat_trial(folder, "Go.", row.pop("turns"))
        table.append({"dataset": "d", "model": "m", "source": str(folder / "result.json"), **row})
    return schema.conform(pl.DataFrame(table), "trials")


def _chain(k: int) -> list[tuple[str, str]]:
    return [("ls", "n_1001")] + [(f"cat n_{1000 + i}", f"n_{1001 + i}") for i in range(1, k)]


def test_depth_proxy_per_trial_and_per_task(tmp_path):
    trials = _trials(
        tmp_path,
        [
            {"task": "a", "trial": "a1", "status": "pass", "turns": _chain(3)},
            {"task": "a", "trial": "a2", "status": "pass", "turns": _chain(5)},
            {"task": "a", "trial": "a3", "status": "pass", "turns": _chain(6)},
            {"task": "a", "trial": "a4", "status": "pass", "turns": _chain(7)},
            {"task": "a", "trial": "a5", "status": "fail", "turns": _chain(1)},
            {"task": "a", "trial": "a6", "status": "invalid", "turns": _chain(1)},
            {"task": "a", "trial": "a7", "status": "pass", "cap": 2, "turns": _chain(2)},
            {"task": "b", "trial": "b1", "status": "fail", "turns": _chain(2)},
        ],
    )
    per_trial = dl.depth_proxy(trials, per="trial")
    assert per_trial.schema == pl.Schema(proxy.PROXY_TRIALS_SCHEMA)
    assert per_trial["trial"].to_list() == ["a1", "a2", "a3", "a4", "a5", "b1"]  # valid uncapped, in order
    assert per_trial["proxy_depth"].to_list() == [3, 5, 6, 7, 1, 2]
    assert per_trial["n_turns"].to_list() == [3, 5, 6, 7, 1, 2]
    per_task = dl.depth_proxy(trials)
    assert per_task.schema == pl.Schema(proxy.PROXY_TASKS_SCHEMA)
    # lower median of 3, 5, 6, 7 is 5; the failing run is left out; b has no passing run
    assert per_task.rows() == [("d", "a", 5, 3, 4, 5), ("d", "b", None, None, 0, None)]


def test_task_proxy_does_not_drift_with_the_number_of_passes():
    one = pl.DataFrame({"dataset": "d", "task": "t", "passed": [True], "proxy_depth": [4]})
    many = pl.DataFrame({"dataset": "d", "task": "t", "passed": [True] * 5, "proxy_depth": [4, 4, 4, 2, 6]})
    assert task_proxy(one)["proxy_depth"][0] == task_proxy(many)["proxy_depth"][0] == 4
    assert task_proxy(many)["proxy_depth_min"][0] == 2
    assert (
        task_proxy(pl.DataFrame({"dataset": "d", "task": "t", "passed": [True], "proxy_depth": [81]}))["proxy_rung"][0]
        is None
    )


def test_an_unreadable_trajectory_is_a_warning_naming_it_and_strict_raises(tmp_path):
    trials = _trials(
        tmp_path,
        [
            {"task": "a", "trial": "a1", "status": "pass", "turns": _chain(2)},
            {"task": "a", "trial": "a2", "status": "pass", "turns": _chain(3)},
        ],
    )
    broken = tmp_path / "a2" / "agent" / "trajectory.json"
    broken.write_text("[{")
    with pytest.warns(
        RejectedFilesWarning, match=r"1 trajectories rejected: .*a2/agent/trajectory.json: not valid JSON"
    ):
        per_trial = dl.depth_proxy(trials, per="trial")
    assert per_trial["proxy_depth"].to_list() == [2, None]
    assert dl.depth_proxy(trials.head(1), per="task")["n_passing"].to_list() == [1]
    with pytest.raises(LoadError, match=r"a2/agent/trajectory\.json: not valid JSON"):
        dl.depth_proxy(trials, strict=True)
    with pytest.raises(LoadError, match="not valid JSON"):
        trial_proxy(tmp_path / "a2")


def test_the_cache_is_reused_until_a_file_changes(tmp_path, monkeypatch):
    trials = _trials(tmp_path, [{"task": "a", "trial": "a1", "status": "pass", "turns": _chain(2)}])
    assert dl.depth_proxy(trials)["proxy_depth"].to_list() == [2]
    calls = []
    real = trajectories._compute
    monkeypatch.setattr(
        trajectories, "_compute", lambda folder, measure, budget: calls.append(folder) or real(folder, measure, budget)
    )
    assert dl.depth_proxy(trials)["proxy_depth"].to_list() == [2]
    assert calls == []
    chat_trial(tmp_path / "a1", "Go.", _chain(4))
    os.utime(tmp_path / "a1" / "agent" / "trajectory.json", ns=(1, 1))
    assert dl.depth_proxy(trials)["proxy_depth"].to_list() == [4]
    assert calls == [str(tmp_path / "a1")]


def test_depth_proxy_parameter_checks(tmp_path):
    trials = _trials(tmp_path, [{"task": "a", "trial": "a1", "status": "pass", "turns": _chain(1)}])
    with pytest.raises(ValueError, match="'per' parameter of depth_proxy must be one of"):
        dl.depth_proxy(trials, per="model")
    with pytest.raises(ValueError, match="must have the columns"):
        dl.depth_proxy(trials.drop("source"))
    with pytest.raises(TypeError, match="'cache' parameter of depth_proxy must be a bool"):
        dl.depth_proxy(trials, cache=1)


def test_many_trials_go_through_the_worker_pool_with_the_same_result(tmp_path):
    rows = [{"task": f"t{i % 7}", "trial": f"x{i}", "status": "pass", "turns": _chain(1 + i % 5)} for i in range(70)]
    trials = _trials(tmp_path, rows)
    per_trial = dl.depth_proxy(trials, per="trial", cache=False)
    assert per_trial["proxy_depth"].to_list() == [1 + i % 5 for i in range(70)]


# the proxy in the audit -------------------------------------------------------------------------


def _audit_rows(n: int = 12, *, difficulty_source: str = "human") -> pl.DataFrame:
    import numpy as np

    rng = np.random.default_rng(5)
    proxy_depth = rng.integers(1, 8, n)
    work = rng.integers(2, 60, n)
    return schema.conform(
        pl.DataFrame(
            {
                "dataset": "d",
                "task": [f"t{i}" for i in range(n)],
                "work": work,
                "proxy_depth": proxy_depth,
                "n_turns": proxy_depth * 3.0 + rng.integers(0, 10, n),
                "pass_rate": np.clip(1 - proxy_depth / 8 + rng.normal(0, 0.1, n), 0, 1),
                "difficulty": rng.choice(["easy", "medium", "hard"], n),
                "difficulty_source": difficulty_source,
            }
        ),
        "audit",
    )


def test_audit_table_gains_the_proxy():
    tasks = schema.conform(pl.DataFrame({"dataset": "d", "task": ["a", "b"], "work": [3, 4]}), "tasks")
    trials = schema.conform(
        pl.DataFrame({"dataset": "d", "task": ["a", "b"], "model": "m", "status": "pass", "n_turns": [5, 6]}), "trials"
    )
    per_task = pl.DataFrame(
        {"dataset": ["d"], "task": ["a"], "proxy_depth": [3], "proxy_depth_min": [2], "n_passing": [4]}
    )
    audit = dl.audit_table(tasks, trials, proxy=per_task)
    schema.check(audit, "audit")
    assert audit.select("task", "proxy_depth", "proxy_n_passing").rows() == [("a", 3, 4), ("b", None, 0)]
    without = dl.audit_table(tasks, trials)
    assert without["proxy_depth"].null_count() == 2
    assert without["proxy_n_passing"].null_count() == 2
    with pytest.raises(ValueError, match="'proxy' parameter of audit_table must have the columns"):
        dl.audit_table(tasks, trials, proxy=per_task.drop("n_passing"))


def test_proxy_correlations_equal_pingouin_partial_spearman():
    pingouin = pytest.importorskip("pingouin")
    audit = _audit_rows()
    table = proxy_correlations(audit, n_boot=500, seed=1)
    assert table["question"].to_list() == [question for question, *_ in proxy.PROXY_QUESTIONS]
    frame = audit.with_columns(
        rating=pl.col("difficulty").replace_strict({"easy": 0, "medium": 1, "hard": 2}, return_dtype=pl.Int32)
    ).to_pandas()
    for row, (_, x, y, covar) in zip(table.iter_rows(named=True), proxy.PROXY_QUESTIONS, strict=True):
        expected = pingouin.partial_corr(
            frame, x=x, y="rating" if y == "difficulty" else y, covar=covar, method="spearman"
        )
        assert row["r"] == pytest.approx(expected["r"].iloc[0], abs=1e-9)
        assert row["n"] == 12
        assert row["ci_low"] < row["r"] < row["ci_high"]
        assert row["note"] is None


def test_proxy_correlations_say_why_a_row_is_empty():
    generated = proxy_correlations(_audit_rows(difficulty_source="generated"), n_boot=0)
    assert generated.filter(pl.col("question") == "rating ~ proxy | W")["note"].item() == "no human difficulty rating"
    few = proxy_correlations(_audit_rows(5), n_boot=0)
    assert few["note"].to_list() == ["5 tasks (fewer than 6)"] * 4
    assert few["r"].null_count() == 4


def test_proxy_summary_and_rung_agreement_against_scipy_and_counts():
    from scipy.stats import spearmanr

    audit = _audit_rows(20).with_columns(
        depth=pl.Series([1, 2, 3, 5, 5, 10, 1, 2, 3, 3, None, None, 2, 1, 5, 10, 20, 3, 2, 1], dtype=pl.Int32)
    )
    summary = proxy.proxy_summary(audit)
    row = summary.row(0, named=True)
    both = audit.drop_nulls(["proxy_depth", "depth"])
    assert (row["n_tasks"], row["n_proxy"], row["n_depth"], row["n_both"]) == (20, 20, 18, 18)
    assert row["rho_proxy_depth"] == pytest.approx(spearmanr(both["proxy_depth"], both["depth"]).statistic)
    assert row["rho_proxy_turns"] == pytest.approx(spearmanr(audit["proxy_depth"], audit["n_turns"]).statistic)
    rungs = [next(c for c in dl.CAPS if c >= p) for p in both["proxy_depth"]]
    same = sum(r == d for r, d in zip(rungs, both["depth"], strict=True))
    assert row["share_same_rung"] == pytest.approx(same / 18)
    agreement = dl.rung_agreement(audit, audit)
    assert agreement["n_same"].sum() == same
    assert agreement["n_tasks"].sum() == 20
    assert agreement.filter(pl.col("depth").is_null())["n_tasks"].item() == 2
    compared = agreement.drop_nulls("depth")  # tasks with no D have nothing to agree with
    parts = compared["n_same"] + compared["n_above"] + compared["n_below"] + compared["n_no_proxy"]
    assert parts.to_list() == compared["n_tasks"].to_list()


def test_cli_proxy_writes_the_table_and_names_unreadable_trajectories(tmp_path, capsys):
    from depthlab.cli import main

    rows = [
        {"task": "a", "trial": "a1", "status": "pass", "turns": _chain(3)},
        {"task": "a", "trial": "a2", "status": "pass", "turns": _chain(4)},
    ]
    for row in rows:
        folder = tmp_path / "job" / row["trial"]
        chat_trial(folder, "Go.", row["turns"])
        result = {
            "task_name": row["task"],
            "trial_name": row["trial"],
            "source": "d",
            "config": {"agent": {"name": "custom", "model_name": "m", "kwargs": {}}},
            "verifier_result": {"rewards": {"reward": 1.0}},
            # the turn count is recorded, so the trials loader need not read the trajectory
            "agent_result": {"metadata": {"n_episodes": len(row["turns"])}},
        }
        (folder / "result.json").write_text(json.dumps(result))
    (tmp_path / "job" / "a2" / "agent" / "trajectory.json").write_text("{")
    out = tmp_path / "proxy.csv"
    assert main(["proxy", str(tmp_path / "job"), "-o", str(out), "--per", "trial"]) == 0
    table = pl.read_csv(out).sort("trial")
    assert table["proxy_depth"].to_list() == [3, None]
    err = capsys.readouterr().err
    assert "1 trajectories rejected" in err
    assert "a2/agent/trajectory.json: not valid JSON" in err
    assert "proxy read for 1 of 2 trials" in err


def test_cache_clear_removes_the_proxy_results(tmp_path):
    from depthlab.io import cache

    trials = _trials(tmp_path, [{"task": "a", "trial": "a1", "status": "pass", "turns": _chain(2)}])
    dl.depth_proxy(trials)
    stored = list(cache.cache_dir().glob(f"{cache.PROXY_PREFIX}*"))
    assert len(stored) == 1
    cache.clear()
    assert not list(cache.cache_dir().glob(f"{cache.PROXY_PREFIX}*"))


def test_proxy_correlations_one_collinear_collection_leaves_the_others_standing():
    good = _audit_rows()
    collinear = _audit_rows(8).with_columns(  # W ranks exactly as the proxy: pass ~ proxy | W is undefined
        dataset=pl.lit("c"),
        work=pl.Series(range(8), dtype=pl.Int32),
        proxy_depth=pl.Series(range(1, 9), dtype=pl.Int32),
    )
    table = proxy_correlations(pl.concat([good, schema.conform(collinear, "audit")]), n_boot=0, by_dataset=True)
    assert table.filter(pl.col("dataset") == "d")["note"].null_count() == len(proxy.PROXY_QUESTIONS)
    undefined = table.filter((pl.col("dataset") == "c") & (pl.col("question") == "pass ~ proxy | W")).row(0, named=True)
    assert "collinear" in undefined["note"]
    assert undefined["r"] is None
