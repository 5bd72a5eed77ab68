# The learner's commands, one fragment for the course repository's Makefile and the handout's.
# `make help` lists them; every one installs what it needs first.
SHELL := /bin/bash
PY := .venv/bin/python
STAMP := .venv/.installed
# The locks installed (exact versions of every package, dependencies included); the course
# repository adds its maintainers' lock.
LOCKS ?= requirements/learner.lock
ELMO_IMPL ?= exercises
SECTION ?=
SECTION_ARG := $(if $(SECTION),--section $(SECTION))
# One section's test file (by number, name or module), so that pytest collects nothing else;
# an unknown SECTION falls back to the folder, where --section names the choices.
SECTION_TESTS := $(if $(SECTION),$(firstword $(wildcard tests/sections/test_s$(SECTION)_*.py \
  tests/sections/test_s[0-9]_$(SECTION).py tests/sections/test_$(SECTION).py)))
TEST_PATHS := $(or $(SECTION_TESTS),tests/sections)
# What the last run found (`course.results`), and the learner's state beside it: every
# section's last result and the hints shown (`course.state`), never in the submission.
RESULTS ?= build/results.json
STATE ?= $(dir $(RESULTS))progress.json
# What each section that passed shows of the learner's own ELMo: written by the test run,
# which has torch and the sections loaded already, and printed by the progress table.
YOUR_ELMO ?= $(dir $(RESULTS))your-elmo-lines.json
# pytest loads the plugins that the section tests use and no other: a plugin that another
# package registers (anyio's) would cost every run its imports. PYTEST_ARGS adds options
# (PYTEST_ARGS=-x stops at the first failure, PYTEST_ARGS=--tb=long shows long tracebacks).
PYTEST_ARGS ?=
LEARNER_TESTS = PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 $(PY) -m pytest -p hypothesispytest -p timeout \
  $(TEST_PATHS) --impl $(ELMO_IMPL) $(SECTION_ARG) --results-json $(RESULTS) \
  --your-elmo $(YOUR_ELMO) $(PYTEST_ARGS)
PROGRESS = $(PY) -m course.progress --impl $(ELMO_IMPL) --state $(STATE) --your-elmo $(YOUR_ELMO)

.DEFAULT_GOAL := help
.PHONY: help install test grade progress hint watch run-notebooks replicate-real submission

help: ## list the commands
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo "  SECTION=<number or name> selects one section, e.g. make test SECTION=3"

install: $(STAMP) ## create .venv and install the locked dependencies

$(STAMP): $(LOCKS)
	python3 -m venv .venv
	$(PY) -m pip install --quiet --disable-pip-version-check $(addprefix -r ,$(LOCKS))
	touch $@

# Does your ELMo reproduce what the paper found? Your sections pre-train a biLM and section
# 8's character biLM on REPLICATE_SEEDS seeds; each is measured against the untrained biLM it
# started from, and every target is read as trained against untrained, beside the reference's
# reading (analyses/experiments.py, analyses/targets.py). Two processes; a line as each finishes.
.PHONY: replicate
REPLICATE_SEEDS ?= 5

replicate: $(STAMP) ## do your biLMs show what the paper found? trained against untrained, 5 seeds (minutes)
	@$(PY) -m analyses.experiments --impl $(ELMO_IMPL) --seeds $(REPLICATE_SEEDS)

test: $(STAMP) ## run the tests of exercises/, then show your progress (SECTION= for one)
	@$(LEARNER_TESTS); status=$$?; [ $$status -gt 1 ] || $(PROGRESS) $(RESULTS); exit $$status

grade: $(STAMP) ## your progress per section, without the tests' output (SECTION= for one)
	@mkdir -p build; $(LEARNER_TESTS) > build/test-output.txt 2>&1; status=$$?; \
	  if [ $$status -gt 1 ]; then tail -n 20 build/test-output.txt; exit $$status; fi; \
	  $(PROGRESS) $(RESULTS)

progress: $(STAMP) ## your progress table as your last runs left it (runs no test)
	@$(PROGRESS)

hint: $(STAMP) ## the next hint for the first function that does not pass yet (SECTION= for one)
	@$(PY) -m course.hints --impl $(ELMO_IMPL) --state $(STATE) $(SECTION_ARG)

watch: $(STAMP) ## rerun a section's tests each time you save its module (POLL=1 polls; Ctrl-C stops)
	@$(PY) -m course.watch --impl $(ELMO_IMPL) $(SECTION_ARG) $(if $(POLL),--poll) \
	  -- ELMO_IMPL=$(ELMO_IMPL) RESULTS=$(RESULTS) STATE=$(STATE)

run-notebooks: $(STAMP) ## run every notebook headless on exercises/, kept in build/notebooks/
	$(PY) -m analyses.notebook run --impl $(ELMO_IMPL)

# JupyterLab, in an environment of its own (.venv-lab, requirements/lab.lock), apart from the
# tests' .venv: its kernel "python3", the one the notebooks name, is .venv's Python. It starts
# at the course's root, so that exercises/ is one click from notebooks/, and as root it is
# told so (--allow-root), as Jupyter asks. LAB_ARGS adds options (LAB_ARGS=--no-browser).
LAB_VENV := .venv-lab
LAB_STAMP := $(LAB_VENV)/.installed
LAB_ARGS ?=
.PHONY: lab

$(LAB_STAMP): requirements/lab.lock $(STAMP)
	python3 -m venv $(LAB_VENV)
	$(LAB_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements/lab.lock
	$(PY) -m ipykernel install --prefix $(LAB_VENV) --name python3 \
	  --display-name "Python 3 (the course's .venv)" >/dev/null
	touch $@

lab: $(STAMP) $(LAB_STAMP) ## JupyterLab on the notebooks, from the course's root (installs it the first time)
	$(LAB_VENV)/bin/jupyter lab --ServerApp.root_dir="$(CURDIR)" \
	  $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

replicate-real: $(STAMP) ## your ELMo on real English (WordNet), 5 seeds, beside the reference's (~7 min on 2 idle cores)
	$(PY) -m analyses.real_english --impl $(ELMO_IMPL)

submission: ## zip your section modules into submission.zip, the file you hand in
	python3 -m course.submission submission.zip
