# podsched: `make run` and `make test` work from a fresh clone.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: help venv lint test test-unit kafka-install run bench-core clean

help:
	@echo "make run        - set up and run the example (podsched simulate on examples/)"
	@echo "make test       - lint, then the whole test suite against a real Kafka broker"
	@echo "make bench-core - scheduling-core micro benchmarks (plain vs fast path), JSON lines"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check $(wildcard libs services tests benchmarks)
	$(VENV)/bin/mypy

kafka-install: $(STAMP)
	$(PY) -m podsched_devstack.kafka install

test: lint kafka-install
	$(PY) -m pytest -q

test-unit: $(STAMP)
	$(PY) -m pytest -q tests/unit

run: $(STAMP)
	$(VENV)/bin/podsched simulate -f examples/high-mid-low/cluster.yaml -f examples/high-mid-low/workload.yaml -f examples/high-mid-low/preemptor.yaml -o table

bench-core: $(STAMP)
	$(PY) -m benchmarks.core

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
