# The two commands of the README: `make reproduce` (main job) and `make test`.
# Both set up .venv first if needed (scripts/setup.sh); `make setup` does only that.
VENV := .venv
STAMP := $(VENV)/.lostmid-installed
OUT ?= results
# the mkdocs banner about its successor is noise in a build log
MKDOCS := NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs

.PHONY: setup reproduce test lint bench docs

$(STAMP): pyproject.toml scripts/setup.sh
	bash scripts/setup.sh

# .venv with lostmid (editable), every extra and the registry checkpoints; nothing run
setup: $(STAMP)

reproduce: $(STAMP)
	$(VENV)/bin/lostmid reproduce --out $(OUT)/reproduce

test: $(STAMP)
	$(VENV)/bin/ruff format --check src tests benchmarks docs
	$(VENV)/bin/ruff check src tests benchmarks docs
	$(VENV)/bin/mypy src/lostmid
	$(MKDOCS) build --strict --quiet
	$(VENV)/bin/python -m pytest -n auto

# The documentation site, offline, into site/ (mkdocs.yml; docs/hooks.py generates the
# command pages' options tables and the claims table). Strict: a warning fails it.
docs: $(STAMP)
	$(MKDOCS) build --strict

bench: $(STAMP)
	$(VENV)/bin/python benchmarks/bench_theory.py
