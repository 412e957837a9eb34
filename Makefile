# The front door: `make demo` and `make test` each do their own set-up first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The TypeScript publisher (@tiered-jobs/publisher): make test builds and tests it
# (tests/contract/test_typescript_publisher.py runs its npm test).
TS_PUBLISHER := publishers/typescript
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 20
export JSII_DEPRECATED := quiet
export AWS_DEFAULT_REGION ?= us-east-1

.PHONY: setup check test quick flaky demo up synth lint bench release clean

# The suite runs on parallel workers (pytest-xdist), the longest modules first (tests/conftest.py
# orders them). Each test goes to whichever worker runs low, except that a module whose tests share
# a costly fixture (a local session, a moto server: the slow and e2e modules) goes to one worker
# whole, so it starts once (tests/support/scheduling.py). Most tests wait on an embedded AWS or a
# subprocess, so twice as many workers as cores keeps both cores busy.
WORKERS ?= 4
PYTEST := $(BIN)/python -m pytest -n $(WORKERS) --dist load
# Python's own bytecode cache, which an environment may turn off: the suite starts hundreds of Python
# processes (workers, CLI commands, local mode's functions), and each compiled this repository's
# modules from source again. The bench's cold start turns it off for its child itself, as Lambda's
# read-only code directory has none; packaging never ships __pycache__.
unexport PYTHONDONTWRITEBYTECODE

setup: $(VENV)/.installed node_modules/.installed $(TS_PUBLISHER)/node_modules/.installed

$(VENV)/.installed: requirements.txt constraints.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt -c constraints.txt
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -e .
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The TypeScript publisher's own pins: its lockfile.
$(TS_PUBLISHER)/node_modules/.installed: $(TS_PUBLISHER)/package.json $(TS_PUBLISHER)/package-lock.json
	cd $(TS_PUBLISHER) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Lint, format and types (settings in pyproject.toml): what a reviewer reads first, under a minute.
check: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Everything CI runs: check, then the whole suite.
test: check
	$(PYTEST) $(PYTEST_ARGS)

# The inner loop: every test but the end-to-end runs on the embedded AWS, the long runs and the
# CDK syntheses (the templates are checked by make test).
quick: setup
	$(PYTEST) -m "not slow and not e2e and not synth" $(PYTEST_ARGS)

# A test that fails by chance is a defect: run the timing-sensitive modules (local mode, the invariant,
# the breaker, schedules: tests/support/flaky.py lists them) N times in a row and name every failure
# with its test. LOAD=1 runs stress-ng on every core beside each run (Debian's stress-ng; without it
# the runs go on unloaded, said). MODULES= runs others. E.g. `make flaky N=5 LOAD=1`.
N ?= 5
flaky: setup
	$(BIN)/python -m tests.support.flaky --runs $(N) --workers $(WORKERS) $(if $(LOAD),--load) $(MODULES)

demo: setup
	$(BIN)/python -m demo

up: setup
	$(BIN)/python -m emulator up

synth: setup
	npx cdk synth --quiet

lint: synth
	$(BIN)/cfn-lint --ignore-checks W3005 -- cdk.out/*.template.json

bench: setup
	$(BIN)/python -m bench

# The sdist and wheel of this version, checked as the package index would check them; then tag and
# publish by hand (docs/upgrading.md, "Versions and releases"). The version is pyproject.toml's, the changelog's
# and the tag's at once (tests/test_release.py).
release: setup
	rm -rf dist
	$(BIN)/python -m build --no-isolation --outdir dist .
	$(BIN)/python -m twine check --strict dist/*
	@version=$$($(BIN)/python -c "import tiered_jobs; print(tiered_jobs.__version__)"); \
	  echo "Built dist/ for $$version. To release: git tag -a v$$version -m 'Tiered Jobs $$version' && git push origin v$$version,"; \
	  echo "then attach dist/* to the release, or: $(BIN)/python -m twine upload dist/*"

clean:
	rm -rf cdk.out .pytest_cache dist
