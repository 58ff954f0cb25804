# Everything CI runs, runnable by hand. `make demo` and `make test` install what they need.
VENV ?= .venv
STAMP := $(VENV)/.installed
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: setup test lint typecheck unit integration bench demo config-doc

$(STAMP): pyproject.toml scripts/setup.sh
	VENV=$(VENV) scripts/setup.sh
	touch $(STAMP)

setup: $(STAMP)

# lint-imports checks the layers in .importlinter on this tree's sources (PYTHONPATH), not on
# wherever memstream happens to be installed.
lint: $(STAMP)
	ruff check services tests
	ruff format --check services tests
	PYTHONPATH=services lint-imports

typecheck: $(STAMP)
	mypy services/memstream

unit: $(STAMP)
	pytest tests/unit -q

integration: $(STAMP)
	pytest tests/integration -q

test: lint typecheck
	pytest -q --durations=20

bench: $(STAMP)
	python -m memstream.tools.bench.ingest --out bench-results/ingest.json

demo: $(STAMP)
	memstream demo

# docs/configuration.md is written from the settings' descriptions; a unit test checks it.
config-doc: $(STAMP)
	python -m memstream.settings.doc > docs/configuration.md
