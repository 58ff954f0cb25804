# Everything CI runs, runnable by hand. `make demo` and `make test` install what they need.
VENV ?= .venv
STAMP := $(VENV)/.installed
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: setup test lint typecheck unit integration bench demo config-doc

$(STAMP): pyproject.toml lab/pyproject.toml scripts/setup.sh
	VENV=$(VENV) scripts/setup.sh
	touch $(STAMP)

setup: $(STAMP)

# lint-imports checks the layers in .importlinter on this tree's sources (PYTHONPATH), not on
# wherever memstream and the lab happen to be installed.
lint: $(STAMP)
	ruff check services lab tests examples
	ruff format --check services lab tests examples
	PYTHONPATH=services:lab lint-imports

# The packages to check (memstream, memstream_lab) are in pyproject.toml's [tool.mypy].
typecheck: $(STAMP)
	mypy

unit: $(STAMP)
	pytest tests/unit -q

integration: $(STAMP)
	pytest tests/integration -q

# Three processes, a test file to each at a time (--dist loadfile: a module's stack fixture
# stays in one process). Most integration tests wait on their stack: two processes kept the
# two cores 0.84 busy on average, so a third fills the idle time.
test: lint typecheck
	pytest -q -n 3 --dist loadfile --durations=20

bench: $(STAMP)
	python -m memstream_lab.bench.ingest --out bench-results/ingest.json

demo: $(STAMP)
	memstream demo

# docs/configuration.md is written from the settings' descriptions; a unit test checks it.
config-doc: $(STAMP)
	python -m memstream.settings.doc > docs/configuration.md
