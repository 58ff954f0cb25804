# Everything CI runs, runnable by hand. `make demo` and `make test` install what they need.
VENV ?= .venv
STAMP := $(VENV)/.installed
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: setup test lint typecheck unit integration bench demo

$(STAMP): pyproject.toml scripts/setup.sh
	VENV=$(VENV) scripts/setup.sh
	touch $(STAMP)

setup: $(STAMP)

lint: $(STAMP)
	ruff check services tests
	ruff format --check services tests

typecheck: $(STAMP)
	mypy services/memstream

unit: $(STAMP)
	pytest tests/unit -q

integration: $(STAMP)
	pytest tests/integration -q

test: lint typecheck
	pytest -q

bench: $(STAMP)
	python -m memstream.tools.bench.ingest --out bench-results/ingest.json

demo: $(STAMP)
	memstream demo
