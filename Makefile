# The front door: `make demo` and `make test` each do their own set-up first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 20
export JSII_DEPRECATED := quiet
export AWS_DEFAULT_REGION ?= us-east-1

.PHONY: setup test demo up synth lint bench clean

setup: $(VENV)/.installed node_modules/.installed

$(VENV)/.installed: requirements.txt constraints.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt -c constraints.txt
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -e .
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

demo: setup
	$(BIN)/python -m example.demo

up: setup
	$(BIN)/python -m emulator up

synth: setup
	npx cdk synth --quiet

lint: synth
	$(BIN)/cfn-lint --ignore-checks W3005 -- cdk.out/*.template.json

bench: setup
	$(BIN)/python -m bench

clean:
	rm -rf cdk.out .pytest_cache
