# Two entry points (README): `make reproduce` (the audit on demo data) and `make test`.
# Each creates .venv and installs what it needs on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
OUT    ?= out/reproduce

.PHONY: reproduce test lint bench docs docs-figures docker userland compose harbor peers browser r mutate clean

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,fetch,browser,docs]'
	$(BIN)/python -m ipykernel install --sys-prefix --name depthlab --display-name "depthlab (Python 3)" >/dev/null
	touch $@

reproduce: $(VENV)/.installed
	$(BIN)/depthlab reproduce --out $(OUT)

docker:
	bash scripts/docker-up.sh

# a real Debian 12 userland image (mmdebstrap, cached by its package list) for the runner's real-task tests
userland: docker
	bash scripts/userland-up.sh >/dev/null

# Docker Compose v2 (the CLI plugin), which Harbor's docker environment needs (tests/engines)
compose: docker
	bash scripts/compose-up.sh

# Harbor (Python >= 3.12) in its own cached venv, and headless Chromium, for the `harbor` tests
harbor:
	bash scripts/harbor-up.sh

# The export peers, Inspect Scout and Docent (Python >= 3.12), each in its own cached venv built with uv, for
# tests/export: each reads depthlab's export back with its own loader
peers:
	bash scripts/scout-venv.sh >/dev/null
	bash scripts/docent-venv.sh >/dev/null

# Debian's chromium + chromium-driver for tests/browser (the explorer in JupyterLab)
browser:
	bash scripts/browser-up.sh

# Debian's r-base-core for the statistics tests' R reference (tests/r)
r:
	bash scripts/r-up.sh

# 3 workers on 2 cores: a Docker or Harbor module keeps less than half a core busy (its whole process tree,
# containers and dockerd included: it mostly waits on container starts and Harbor), so a third overlaps
# (docs/testing.md: 0.82x the wall of 2 workers on the same four modules). TEST_WORKERS=2 for the old way.
TEST_WORKERS ?= 3
# --dist loadscope: a module's tests on one worker (its module-scoped fixtures computed once), the most
# costly modules first (tests/conftest.py, pytest_collection_modifyitems; xdist's own reorder is off).
# --durations: the 30 slowest tests and the seconds of every module, also written to out/module_seconds.txt
# (copy it over tests/module_seconds.txt to refresh the order; docs/testing.md)
# mypy runs beside the tests (its 40 s of one core overlap the containers' waits), its verdict printed and counted
# at the end; the docstrings' examples are among the suite's items (--doctest-modules over depthlab; the conftest
# files are plugins, not modules with examples, hence the ignore).
test: $(VENV)/.installed docker userland compose harbor peers browser r
	$(BIN)/ruff check depthlab tests notebooks docs/_ext
	@mkdir -p out
	$(BIN)/mypy > out/mypy.txt 2>&1 & types=$$!; \
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --durations=30 \
		--benchmark-disable -p no:cacheprovider --doctest-modules --ignore-glob='*/conftest.py' tests depthlab; \
	suite=$$?; wait $$types; typed=$$?; echo "mypy:"; cat out/mypy.txt; test $$suite -eq 0 -a $$typed -eq 0

# The docs site (mkdocs.yml: the guide pages in docs/ and the API reference) into out/site/; strict, so a
# broken link or API reference fails. `make test` builds it too, into a temporary folder (tests/test_docs.py).
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir out/site

# The docs' and README's figures (docs/img/*.png and figures.json, the record tests/test_docs.py checks
# them against): drawn from the default simulated demo; run after a change to what they show.
docs-figures: $(VENV)/.installed
	$(BIN)/depthlab reproduce --only 02,03,05 --out out/docs-figures --docs docs/img

bench: $(VENV)/.installed
	for script in tests/bench/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

# Mutation testing of the core modules (README, "Tests and benchmarks"); slow, not part of `make test`
# or CI. MUTATE_ARGS: e.g. "stats --max-children 2", "--rerun", "--sample 200".
mutate: $(VENV)/.installed
	$(BIN)/python -m pip install -q 'mutmut==3.*'
	$(BIN)/python scripts/mutate.py $(MUTATE_ARGS)

clean:
	rm -rf $(VENV) build out .pytest_cache
