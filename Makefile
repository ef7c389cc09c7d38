# The two commands of the README: `make reproduce` (main job) and `make test`.
# Both set up .venv first if needed (scripts/setup.sh).
VENV := .venv
STAMP := $(VENV)/.lostmid-installed
OUT ?= results

.PHONY: reproduce test lint bench

$(STAMP): pyproject.toml scripts/setup.sh
	bash scripts/setup.sh

reproduce: $(STAMP)
	$(VENV)/bin/lostmid reproduce --out $(OUT)/reproduce

test: $(STAMP)
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy src/lostmid
	$(VENV)/bin/python -m pytest

bench: $(STAMP)
	$(VENV)/bin/python benchmarks/bench_theory.py
