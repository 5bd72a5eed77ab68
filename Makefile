# The course's commands. `make help` lists them; every target installs what it needs first.
SHELL := /bin/bash
PY := .venv/bin/python
STAMP := .venv/.installed
SECTION ?=
SECTION_ARG := $(if $(SECTION),--section $(SECTION))
PYTEST := $(PY) -m pytest

.DEFAULT_GOAL := help
.PHONY: help install test-solutions lint check

help: ## list the commands
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo "  SECTION=<number or name> selects one section, e.g. make test SECTION=3"

install: $(STAMP) ## create .venv and install the pinned dependencies

$(STAMP): pyproject.toml
	python3 -m venv .venv
	$(PY) -m pip install --quiet --disable-pip-version-check \
	  $$(python3 -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))')
	touch $@

test-solutions: $(STAMP) ## run the section tests against solutions/ (SECTION= for one)
	$(PYTEST) tests/sections --impl solutions $(SECTION_ARG)

lint: $(STAMP) ## ruff: the code stays clean
	$(PY) -m ruff check .

# `make check` is the repository's own test command; each block below adds its checks to it.
check: lint test-solutions ## everything CI runs
	$(PYTEST) tests/tooling

# --- learners: exercises, make test, progress ------------------------------------------

# --- analysis sections: make demo -------------------------------------------------------

# --- instructors: grading, release, autograder ------------------------------------------

# --- notebooks ---------------------------------------------------------------------------

# --- benchmarks --------------------------------------------------------------------------

# --- mistakes catalogue and mutation testing ---------------------------------------------
