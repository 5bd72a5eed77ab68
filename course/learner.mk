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
RESULTS ?= build/results.json
LEARNER_TESTS = $(PY) -m pytest tests/sections --impl $(ELMO_IMPL) $(SECTION_ARG) \
  --results-json $(RESULTS)
PROGRESS = $(PY) -m course.progress $(RESULTS) --impl $(ELMO_IMPL)

.DEFAULT_GOAL := help
.PHONY: help install test grade run-notebooks submission

help: ## list the commands
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo "  SECTION=<number or name> selects one section, e.g. make test SECTION=3"

install: $(STAMP) ## create .venv and install the locked dependencies

$(STAMP): $(LOCKS)
	python3 -m venv .venv
	$(PY) -m pip install --quiet --disable-pip-version-check $(addprefix -r ,$(LOCKS))
	touch $@

test: $(STAMP) ## run the tests of exercises/, then show your progress (SECTION= for one)
	@$(LEARNER_TESTS); status=$$?; [ $$status -gt 1 ] || $(PROGRESS); exit $$status

grade: $(STAMP) ## your progress per section, without the tests' output (SECTION= for one)
	@mkdir -p build; $(LEARNER_TESTS) > build/test-output.txt 2>&1; status=$$?; \
	  if [ $$status -gt 1 ]; then tail -n 20 build/test-output.txt; exit $$status; fi; $(PROGRESS)

run-notebooks: $(STAMP) ## run every notebook headless on exercises/ (ELMO_IMPL= for another)
	$(PY) -m course.notebook run --impl $(ELMO_IMPL)

submission: ## zip your exercises/ into submission.zip, the file you hand in
	python3 -c 'import shutil; shutil.make_archive("submission", "zip", ".", "exercises")'
	@echo "submission.zip: hand this file in"
