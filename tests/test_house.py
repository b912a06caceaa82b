"""ARCHITECTURE.md's promises that the layer test does not hold: the modules it names exist, and a fact it
says is written once is not restated elsewhere in the package as a literal.

Each check walks the package's syntax trees (``ast``), so a docstring's example never counts; the
offenders a check finds are listed with their file and line.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from depthlab import catalog, datasets, schema

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "depthlab"
ARCHITECTURE = (ROOT / "ARCHITECTURE.md").read_text()

# restatements left on purpose, each with why (the engines half of issue 25 removed its own)
_ENGINES_HALF: dict[str, str] = {}
# not a table of depthlab's: the row every parser returns, before schema.conform makes it a trials table
_PARSER_ROW = {"depthlab/io/_rows.py"}


@functools.cache
def _parsed() -> tuple[tuple[str, ast.Module], ...]:
    """Every module of the package, parsed once for all the checks of this file (they only read the trees)."""
    return tuple(
        (path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(encoding="utf-8"), str(path)))
        for path in sorted(PACKAGE.rglob("*.py"))
    )


def _modules() -> Iterator[tuple[str, ast.Module]]:
    yield from _parsed()


def _literal_strings(node: ast.AST) -> tuple[str, ...] | None:
    if not isinstance(node, ast.Tuple | ast.List | ast.Set) or not node.elts:
        return None
    if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return tuple(e.value for e in node.elts)  # type: ignore[attr-defined]
    return None


# ------------------------------------------------------------------ the modules the map names
def _named_modules() -> list[str]:
    names = set(re.findall(r"`(depthlab(?:\.\w+)+)`", ARCHITECTURE))
    # the bullets of "What each module is for": "- `io.trials`: ..." names depthlab.io.trials
    section = ARCHITECTURE.split("## What each module is for", 1)[1].split("## Data flow", 1)[0]
    for name in re.findall(r"^- `([\w.]+)`", section, flags=re.MULTILINE):
        names.add(f"depthlab.{name}")
    return sorted(names)


def _named_paths() -> list[str]:
    return sorted(set(re.findall(r"`(depthlab/[\w/]+\.py)`", ARCHITECTURE)))


@pytest.mark.parametrize("name", _named_modules())
def test_every_module_architecture_md_names_exists(name):
    assert importlib.util.find_spec(name) is not None, f"ARCHITECTURE.md names {name}, which does not exist"


@pytest.mark.parametrize("path", _named_paths())
def test_every_file_architecture_md_names_exists(path):
    assert (ROOT / path).is_file(), f"ARCHITECTURE.md names {path}, which does not exist"


def test_the_map_names_the_modules_of_this_issue():
    # what a newcomer must find on the map (the check above only sees what it names)
    named = set(_named_modules()) | {p.replace("/", ".").removesuffix(".py") for p in _named_paths()}
    for module in ("depthlab.findings._pooled", "depthlab._docstrings", "depthlab.engines", "depthlab._version"):
        assert module in named or module.rsplit(".", 1)[-1] in ARCHITECTURE, module


# ------------------------------------------------------------------ facts written once
_GROUPS: dict[str, tuple[str, ...]] = {
    "catalog.ORDER": catalog.ORDER,
    "catalog.SYNTHETIC": catalog.SYNTHETIC,
    "catalog.HUMAN": catalog.HUMAN,
    "catalog.AUDITED": catalog.AUDITED,
    "schema.DEPTH_STATUSES": schema.DEPTH_STATUSES,
    "schema.STATUSES": schema.STATUSES,
}


def _restated_groups() -> list[str]:
    found = []
    for path, tree in _modules():
        if path in ("depthlab/catalog.py", "depthlab/schema.py"):
            continue
        for node in ast.walk(tree):
            values = _literal_strings(node)
            if values is None or len(values) < 2:
                continue
            for fact, group in _GROUPS.items():
                if set(values) == set(group):
                    found.append(f"{path}:{node.lineno}: {values} restates {fact}")  # type: ignore[attr-defined]
    return found


def test_collection_groups_and_statuses_are_not_restated_as_literals():
    found = _restated_groups()
    assert found == [], "\n".join(found)


def test_the_restatement_check_sees_a_literal_group(tmp_path):
    tree = ast.parse("GROUPS = ('tw', 'tb2')\nOTHER = ['tb2']\n")
    hits = [_literal_strings(n) for n in ast.walk(tree)]
    assert ("tw", "tb2") in hits
    assert set(catalog.HUMAN) == {"tw", "tb2"}


def test_bundled_collections_are_written_once():
    found = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                named = [t.id for t in targets if isinstance(t, ast.Name) and "BUNDLED" in t.id]
                if named and node.value is not None and _literal_strings(node.value) is not None:
                    found.append((path, named[0]))
    assert found == [("depthlab/datasets/__init__.py", "BUNDLED")]
    from depthlab.auditdata import BUNDLED_DATA

    assert BUNDLED_DATA is datasets.BUNDLED


def _is_dtype(node: ast.AST) -> bool:
    # pl.String(), pl.List(pl.Int32()), pl.Int32 ...
    if isinstance(node, ast.Call):
        node = node.func
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "pl"


def test_table_schemas_are_declared_only_in_schema_py():
    # a table's columns declared at module level (NAME = {"col": pl.Type(), ...}) belong in schema.py; a frame
    # built inline inside a function (a small result table) is not held to this yet
    found = []
    for path, tree in _modules():
        if path == "depthlab/schema.py" or path in _ENGINES_HALF or path in _PARSER_ROW:
            continue
        for node in tree.body:
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if isinstance(value, ast.Dict) and len(value.values) >= 3 and all(_is_dtype(v) for v in value.values):
                found.append(f"{path}:{node.lineno}: a table schema declared outside schema.py")
    assert found == [], "\n".join(found)


def test_the_atomic_writer_is_the_only_one():
    found = []
    for path, tree in _modules():
        if path == "depthlab/_atomic.py" or path in _ENGINES_HALF:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            func = node.func
            if isinstance(func.value, ast.Name) and func.value.id == "os" and func.attr in ("replace", "rename"):
                found.append(f"{path}:{node.lineno}: os.{func.attr} (use depthlab._atomic)")
            elif func.attr == "replace" and len(node.args) == 1 and "tmp" in ast.unparse(func.value).lower():
                found.append(f"{path}:{node.lineno}: a temporary file moved into place (use depthlab._atomic)")
    assert found == [], "\n".join(found)


# ------------------------------------------------------------------ issue 36: the house's facts written once
def _docstring_nodes(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _definitions(name: str) -> list[str]:
    return [
        f"{path}:{node.lineno}"
        for path, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name == name
    ]


@pytest.mark.parametrize(
    ("name", "home"),
    [
        ("one_line", ["depthlab/_text.py"]),
        ("_one_line", []),
        ("_size_mb", []),
        ("size_mb", ["depthlab/io/harbor_task.py"]),
    ],
)
def test_a_helper_is_defined_once(name, home):
    # `_one_line` was written three times (rounds, the guard, fetch), `_size_mb` twice with two roundings
    assert [where.split(":")[0] for where in _definitions(name)] == home, _definitions(name)


def test_the_task_toml_table_getter_is_defined_once():
    # `_table(config, key)` was written three times (io.harbor_task, runner.task, engines._taskcheck)
    found = [
        f"{path}:{node.lineno}"
        for path, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and node.name in ("_table", "section")
        and node.args.args
        and node.args.args[0].arg == "config"
    ]
    assert {where.split(":")[0] for where in found} == {"depthlab/io/harbor_task.py"}, found


def _int_bounds(modules: Iterator[tuple[str, ast.Module]] | None = None) -> list[str]:
    found = []
    for path, tree in modules or _modules():
        if path == "depthlab/_defaults.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [ast.unparse(target).lower() for target in targets]
                value = node.value
            elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                names = [str(node.args[0].value).lower()]  # parser.add_argument("--pids-limit", default=...)
                value = next((k.value for k in node.keywords if k.arg == "default"), None)
            else:
                continue
            bound = (
                isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool)
            )
            if bound and any("pids" in name or "storage_mb" in name for name in names):
                found.append(f"{path}:{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_the_pid_limit_and_the_disk_bound_are_written_once():
    # the pid limit was written four times, the default disk bound twice (10,000 MB and 10,240)
    from depthlab import _defaults
    from depthlab.engines import _harbor_guard
    from depthlab.runner.container import ContainerLimits
    from depthlab.runner.profiles import DEFAULT_STORAGE_MB, RunSettings

    assert _int_bounds() == []
    assert (
        _harbor_guard.PIDS_LIMIT
        == RunSettings().pids_limit
        == ContainerLimits(1.0, 512).pids_limit
        == _defaults.PIDS_LIMIT
    )
    assert _harbor_guard.DEFAULT_STORAGE_MB == DEFAULT_STORAGE_MB == _defaults.DEFAULT_STORAGE_MB == 10_240


def test_the_bound_check_sees_a_restated_limit():
    tree = ast.parse('PIDS_LIMIT = 1024\nparser.add_argument("--pids-limit", type=int, default=1024)\nN = 1024\n')
    assert [hit.split(":")[1] for hit in _int_bounds(iter([("x.py", tree)]))] == ["1", "2"]


def test_the_api_key_variable_is_written_once():
    # runner.llm defaulted to DEPTHLAB_API_KEY while engines.harbor hard-coded OPENAI_API_KEY
    from depthlab import _defaults
    from depthlab.runner.llm import ChatClient

    found = []
    for path, tree in _modules():
        if path == "depthlab/_defaults.py":
            continue
        docstrings = _docstring_nodes(tree)
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) and id(node) not in docstrings else None
            if isinstance(text, str) and re.fullmatch(r"[A-Z_]*API_KEY", text):
                found.append(f"{path}:{node.lineno}: {node.value!r}")
    assert found == [], "\n".join(found)
    assert ChatClient("http://127.0.0.1:9/v1", "m").api_key_env == _defaults.DEFAULT_API_KEY_ENV


def test_one_lock_file_mechanism():
    # engines._lock and runner.scheduler each took their own fcntl lock; both now hold depthlab._lockfile's
    found = [
        f"{path}:{node.lineno}"
        for path, tree in _modules()
        for node in ast.walk(tree)
        if (isinstance(node, ast.Import) and any(alias.name == "fcntl" for alias in node.names))
        or (isinstance(node, ast.ImportFrom) and node.module == "fcntl")
    ]
    assert [where.split(":")[0] for where in found] == ["depthlab/_lockfile.py"], found


def test_the_fill_lock_names_its_holder(tmp_path):
    from depthlab import _lockfile
    from depthlab.engines._lock import JobsFolderInUse, jobs_folder_lock
    from depthlab.runner.scheduler import _exclusive

    fill_held = pytest.raises(RuntimeError, match=r"Another depthlab fill .*\(pid \d+ on ")
    with _exclusive(tmp_path), fill_held, _exclusive(tmp_path):
        pass
    measure_held = pytest.raises(JobsFolderInUse, match=r"\(the other measure\)")
    with (
        _lockfile.held(tmp_path / ".depthlab-measure.lock", "the other measure"),
        measure_held,
        jobs_folder_lock(tmp_path),
    ):
        pass
    with jobs_folder_lock(tmp_path):  # released when its holder is done
        pass


# schemas still built inline in a call (none since issue 38 moved simulate's and stats' to schema.py)
_INLINE_SCHEMAS_LEFT: set[str] = set()


def _inline_schemas(modules: Iterator[tuple[str, ast.Module]] | None = None) -> list[str]:
    found = []
    for path, tree in modules or _modules():
        if path == "depthlab/schema.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "schema" and isinstance(node.value, ast.Dict):
                values = node.value.values
                if len(values) >= 3 and all(value is not None and _is_dtype(value) for value in values):
                    found.append(f"{path}:{node.value.lineno}")
    return found


def test_no_new_table_schema_is_built_inline():
    # evidence.example_tasks built its three columns in the call; they are schema.EXAMPLE_TASKS now
    found = [where for where in _inline_schemas() if where.split(":")[0] not in _INLINE_SCHEMAS_LEFT]
    assert found == [], "declare these columns in schema.py:\n" + "\n".join(found)
    tree = ast.parse('pl.DataFrame(rows, schema={"a": pl.String, "b": pl.Int32(), "c": pl.String})\n')
    assert _inline_schemas(iter([("x.py", tree)])) == ["x.py:1"]


def _harbor_keys() -> frozenset[str]:
    """Harbor's keys, derived from the model (issue 43): every field of io.harbor_records' records (the files
    depthlab writes, in Harbor 0.26's full shape) whose name is Harbor's own, that is a compound name (a single
    word such as ``id``, ``source`` or ``tasks`` is every JSON's), and neither a column of depthlab's tables
    (``schema``: a row's ``started_at`` is depthlab's) nor a task.toml key (its own model's and check's)."""
    import msgspec

    from depthlab.io import harbor_models, harbor_records

    fields = {field.encode_name for record in harbor_records.RECORDS for field in msgspec.structs.fields(record)}
    columns = {name for table in vars(schema).values() if _is_table(table) for name in table}
    task_structs = (harbor_models.TaskConfig, harbor_models.EnvironmentSection, harbor_models.VerifierSection,
                    harbor_models.AgentSection, harbor_models.StepConfig, harbor_models.SolutionSection,
                    harbor_models.PackageInfo, harbor_models.HealthcheckConfig)  # fmt: skip
    task_keys = {field.encode_name for struct in task_structs for field in msgspec.structs.fields(struct)}
    return frozenset(name for name in fields - columns - task_keys if "_" in name)


def _is_table(value: object) -> bool:
    import polars as pl

    return isinstance(value, dict) and bool(value) and all(isinstance(v, pl.DataType) for v in value.values())


#: Harbor's keys (derived from the model's records, not listed by hand).
HARBOR_KEYS = _harbor_keys()
#: The model itself: where Harbor's files are declared, read and written by their keys.
_MODEL = ("depthlab/io/harbor_models.py", "depthlab/io/harbor_records.py", "depthlab/io/harbor_writer.py")
#: Harbor's key names used for something else, by module, each with why.
_OTHER_MEANING: dict[str, dict[str, str]] = {
    "depthlab/io/status.py": dict.fromkeys(
        ("extra_instructions",), "the trial config a cap rule is given: CapRule's public argument is a dict"
    ),
    "depthlab/io/harbor.py": {
        "extra_instructions": "the trial config a cap rule is given: CapRule's public argument is a dict",
        **dict.fromkeys(
            ("exception_info", "reward_valid"),
            "record_exception on an older Harbor's result: its own object kept whole, these changed",
        ),
    },
    "depthlab/io/_fastresults.py": {
        "agent_result": "BOUNDED names a field of the model it tightens",
        "extra_instructions": "the trial config a cap rule is given: CapRule's public argument is a dict",
    },
    "depthlab/io/tb1.py": {"model_name": "Terminal-Bench 1's own results.json key"},
    "depthlab/datasets/tb2.py": {"exception_type": "a column of the bundled TB2 leaderboard table"},
    "depthlab/datasets/tmax.py": {"pass_at_k": "a key of TMax's solve summaries"},
    "depthlab/runner/llm.py": dict.fromkeys(("base_url", "max_retries"), "the OpenAI client's own arguments"),
    "depthlab/runner/preflight.py": {"force_build": "a field of the preflight's cache key, depthlab's own"},
}


def _result_key_reads(tree: ast.AST, keys: frozenset[str] = HARBOR_KEYS) -> list[int]:
    """Lines that read or write one of ``keys`` by hand: ``x["key"]``, ``x.get("key")`` (``pop``, ``setdefault``),
    a dict literal ``{"key": ...}`` or ``dict(key=...)``; a store ``x["key"] = ...`` into a mapping keyed by io's
    own names (``harbor_writer.PHASES``) is not one."""
    return sorted(line for line, _ in _harbor_key_uses(tree, keys))


def _harbor_key_uses(tree: ast.AST, keys: frozenset[str] = HARBOR_KEYS) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        named: list[object] = []
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            if not isinstance(node.ctx, ast.Store):
                named = [node.slice.value]
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault") and node.args and isinstance(node.args[0], ast.Constant)
        ):  # fmt: skip
            named = [node.args[0].value]
        elif isinstance(node, ast.Dict):
            named = [key.value for key in node.keys if isinstance(key, ast.Constant)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            named = [keyword.arg for keyword in node.keywords]
        found.extend((node.lineno, key) for key in named if key in keys)
    return found


def _harbor_keys_by_hand() -> dict[str, list[str]]:
    """Every use of a Harbor key by hand in the package, io included (the model's own modules and the
    guard's Harbor-side agents apart), but the names listed with another meaning."""
    found = {}
    for relative, tree in _modules():
        if relative in _MODEL or relative.startswith("depthlab/engines/harbor_side/"):
            continue  # (harbor_side runs in Harbor's venv, on Harbor's own objects)
        allowed = _OTHER_MEANING.get(relative, {})
        uses = [f"{line}:{key}" for line, key in _harbor_key_uses(tree) if key not in allowed]
        if uses:
            found[relative] = sorted(set(uses), key=lambda use: int(use.split(":")[0]))
    return found


def test_no_module_touches_harbors_keys_by_hand():
    """A Harbor file (trial result and config, step results, job config and result) is read through io's model
    (harbor_models, io.harbor.read_trial_result, read_trial_config, read_job_config, read_job_result) and written
    as the writer's records, whose fields are attributes, in every module, io's included."""
    assert _harbor_keys_by_hand() == {}


#: Harbor's JSON files, by name (a trial's and a job's config and result, the job lock, ATIF, the rewards)
HARBOR_FILES = ("config.json", "result.json", "lock.json", "trajectory.json", "reward.json")
_DECODERS = ("loads", "load", "decode")


def _harbor_files_decoded_by_hand(modules: Iterator[tuple[str, ast.Module]] | None = None) -> list[str]:
    """Calls outside ``io/`` that decode JSON (``json.loads``, ``json.load``, ``msgspec.json.decode``) from a
    path naming one of :data:`HARBOR_FILES` in the call itself (``json.loads((d / "config.json").read_text())``);
    a path named a line before is not seen (the key check above still sees its keys)."""
    found = []
    for relative, tree in _modules() if modules is None else modules:
        if relative.startswith("depthlab/io/"):
            continue
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _DECODERS
            ):
                continue
            named = [
                part.value
                for argument in node.args
                for part in ast.walk(argument)
                if isinstance(part, ast.Constant) and isinstance(part.value, str) and part.value.endswith(HARBOR_FILES)
            ]
            found.extend(f"{relative}:{node.lineno}:{name}" for name in named)
    return found


def test_no_module_outside_io_decodes_a_harbor_file_by_hand():
    """A Harbor file is read through io's model (io.harbor.read_model, read_trial_result, read_trial_config ...)."""
    assert _harbor_files_decoded_by_hand() == []


def test_the_harbor_file_check_sees_a_decode_by_hand():
    tree = ast.parse(
        'c = json.loads((trial / "config.json").read_text())\nr = msgspec.json.decode(p.joinpath("result.json")'
        '.read_bytes())\nm = json.loads((d / "meta.json").read_text())\nx = read_model(t / "config.json", T)\n'
    )
    assert _harbor_files_decoded_by_hand(iter([("depthlab/x.py", tree), ("depthlab/io/y.py", tree)])) == [
        "depthlab/x.py:1:config.json",
        "depthlab/x.py:2:result.json",
    ]


def test_the_other_meanings_are_still_used():
    """Each name listed with another meaning is still used there (a stale entry would hide a new use)."""
    trees = dict(_modules())
    for relative, names in _OTHER_MEANING.items():
        used = {key for _, key in _harbor_key_uses(trees[relative])}
        assert set(names) <= used, (relative, set(names) - used)


def test_harbors_keys_come_from_the_model_and_include_the_old_hand_list():
    old = {"verifier_result", "exception_info", "step_results", "agent_result", "reward_valid", "n_attempts",
           "n_total_trials", "task_names", "trial_results"}  # fmt: skip
    assert old <= HARBOR_KEYS
    assert len(HARBOR_KEYS) > 3 * len(old)
    assert not {"id", "source", "task", "started_at", "name"} & HARBOR_KEYS


def test_the_harbor_key_check_sees_reads_and_dict_literals():
    tree = ast.parse(
        'a = r.get("verifier_result") or {}\nb = r["exception_info"]\nr["step_results"] = []\nc = r["x"]\n'
        'd = {"trial_name": n, "other": 1}\ne = dict(trials_dir=t)\nf = {"task": t}\n'
    )
    assert _result_key_reads(tree) == [1, 2, 5, 6]
    job = ast.parse('n = config.get("n_attempts", 1)\nf = result["n_total_trials"]\nm = config.n_attempts\n')
    assert _result_key_reads(job) == [1, 2]
