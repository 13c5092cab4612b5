# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.colony-installed
DEVSTAMP := $(VENV)/.colony-dev-installed

.PHONY: demo test bench sysdeps clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml setup.py src/colony/codec/_batch.c | $(PY)
	$(PY) -m pip install -q -e .
	touch $@

$(DEVSTAMP): pyproject.toml setup.py src/colony/codec/_batch.c | $(PY)
	$(PY) -m pip install -q -e '.[dev]'
	touch $@ $(STAMP)

# System packages the tests and benchmarks need (stress-ng); idempotent, never prompts.
sysdeps:
	bash scripts/sysdeps.sh

demo: $(STAMP)
	$(VENV)/bin/colony demo

test: $(DEVSTAMP) sysdeps
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q

bench: $(DEVSTAMP) sysdeps
	bash bench/run_all.sh

clean:
	rm -rf $(VENV) colony-report .pytest_cache
