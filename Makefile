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
.PHONY: exercises test grade check-exercises
ELMO_IMPL ?= exercises
RESULTS := build/results.json
SOLUTION_RESULTS := build/results-solutions.json
LEARNER_TESTS = $(PYTEST) tests/sections --impl $(ELMO_IMPL) $(SECTION_ARG) \
  -p course.results --results-json $(RESULTS)
PROGRESS = $(PY) -m course.progress $(RESULTS) --impl $(ELMO_IMPL)

exercises: $(STAMP) ## regenerate exercises/ from solutions/ (keeps your work; FORCE=1 does not)
	$(PY) -m course.make_exercises $(if $(FORCE),--force)

test: $(STAMP) ## run the tests against exercises/, then show your progress (SECTION= for one)
	@$(LEARNER_TESTS); status=$$?; [ $$status -gt 1 ] || $(PROGRESS); exit $$status

grade: $(STAMP) ## your progress per section, without the tests' output (SECTION= for one)
	@mkdir -p build; $(LEARNER_TESTS) > build/test-output.txt 2>&1; status=$$?; \
	  if [ $$status -gt 1 ]; then tail -n 20 build/test-output.txt; exit $$status; fi; $(PROGRESS)

# tests/tooling/test_exercises.py reads what solutions/ scored in this run of test-solutions.
test-solutions: PYTEST += -p course.results --results-json $(SOLUTION_RESULTS)
check-exercises: $(STAMP) test-solutions
	$(PY) -m course.make_exercises --check
check: check-exercises

# --- analysis sections: make demo -------------------------------------------------------
# Sections 6-7 are tested by test-solutions; the demo is too slow for make check (a minute+).
.PHONY: demo
DEMO_SEEDS ?= 5

demo: $(STAMP) ## the seed notebook end to end on solutions/: tables, figures in build/demo
	$(PY) -m course.demo --seeds $(DEMO_SEEDS)

# --- instructors: grading, release, autograder ------------------------------------------
# Grading itself is `$(PY) -m grading SUBMISSION...` (docs/instructors.md); its tests are in
# tests/tooling/test_grading.py, which `make check` runs with the other tooling tests.
.PHONY: release autograder check-grading

release: $(STAMP) ## write the learners' handout to build/handout/ (no solutions)
	$(PY) -m grading.release build/handout

autograder: $(STAMP) ## write the Gradescope autograder bundle, build/autograder.zip
	$(PY) -m grading.autograder build/autograder.zip

check-grading: release autograder ## both build from a fresh clone
check: check-grading

# --- notebooks ---------------------------------------------------------------------------
# The notebooks are built from notebooks/*.py; tests/tooling/test_notebooks.py executes them.
.PHONY: notebooks check-notebooks run-notebooks

notebooks: $(STAMP) ## rebuild notebooks/*.ipynb from their sources, notebooks/*.py
	$(PY) -m course.notebooks build

check-notebooks: $(STAMP) ## fail when a committed notebook is stale against its source
	$(PY) -m course.notebooks check
check: check-notebooks

run-notebooks: $(STAMP) ## run every notebook headless on ELMO_IMPL (default exercises)
	$(PY) -m course.notebooks run --impl $(ELMO_IMPL)

# --- benchmarks --------------------------------------------------------------------------
# Not part of make check: it times make check. NO_TEST_LOOP=1 skips timing the test loop;
# RECORD=1 writes the results into BENCHMARKS.md.
.PHONY: bench

bench: $(STAMP) ## time to target loss, extraction throughput, test loop (a few minutes)
	$(PY) -m bench.run $(if $(NO_TEST_LOOP),--no-test-loop) $(if $(RECORD),--record BENCHMARKS.md)

# --- mistakes catalogue and mutation testing ---------------------------------------------
.PHONY: mistakes mutation
MUTATION_JOBS ?= 2

mistakes: $(STAMP) ## show that each catalogued learner mistake fails its own section's tests
	$(PY) -m course.mistakes $(SECTION_ARG)

check: mistakes

# mutmut keeps its results in mutants/, so a second run only tests what changed since.
# `--targets`: every function of solutions/ but those the review leaves out (set -f: the
# patterns hold a `*` for mutmut, not for the shell).
mutation: $(STAMP) ## mutation-test solutions/ with mutmut (slow) and update MUTATION.md
	set -f; .venv/bin/mutmut run --max-children $(MUTATION_JOBS) $$($(PY) -m course.mutation --targets)
	$(PY) -m course.mutation
