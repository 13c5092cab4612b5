# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.colony-installed
DEVSTAMP := $(VENV)/.colony-dev-installed

.PHONY: demo test bench sysdeps producers clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml setup.py src/colony/codec/_batch.c src/colony/query/_pbjson.c src/colony/cost/_forest.c | $(PY)
	$(PY) -m pip install -q -e .
	touch $@

$(DEVSTAMP): pyproject.toml setup.py src/colony/codec/_batch.c src/colony/query/_pbjson.c src/colony/cost/_forest.c | $(PY)
	$(PY) -m pip install -q -e '.[dev]'
	touch $@ $(STAMP)

# System packages the tests and benchmarks need (stress-ng, a JDK) and the Flight SQL JDBC
# driver jar (Maven Central); idempotent, never prompts.
sysdeps:
	bash scripts/sysdeps.sh
	bash scripts/jdbc.sh >/dev/null

# Non-Python producers (the Go Flight injector); the tests build it too, or skip saying why.
producers:
	bash scripts/go-producer.sh build/colony-inject || [ $$? -eq 3 ]

demo: $(STAMP)
	$(VENV)/bin/colony demo

test: $(DEVSTAMP) sysdeps producers
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q --durations=30

bench: $(DEVSTAMP) sysdeps
	bash bench/run_all.sh

clean:
	rm -rf $(VENV) colony-report .pytest_cache
