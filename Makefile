# The course repository's commands: the learner's (course/learner.mk, the handout's too), then
# the maintainers' and instructors'. `make help` lists them; every one installs what it needs.
LOCKS := requirements/learner.lock requirements/maintainer.lock
include course/learner.mk

PYTEST := $(PY) -m pytest

# --- system packages ---------------------------------------------------------------------
# What some tools need of the system (the grader's sandbox: bubblewrap), installed by
# `make install` and `make check` when they run as root where apt-get is; elsewhere they say
# so and go on (the tests that need a package skip, saying why). Another process may hold
# apt's lock (an unattended upgrade, another install): apt waits for it, up to APT_WAIT_S.
SYSTEM_PACKAGES := bubblewrap
APT_WAIT_S ?= 600
APT_GET = DEBIAN_FRONTEND=noninteractive apt-get -qq -o DPkg::Lock::Timeout=$(APT_WAIT_S)
.PHONY: system-packages
install: system-packages
system-packages: ## apt-get install what SYSTEM_PACKAGES lists and is missing (as root)
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing $$missing (if another process holds apt's lock, waiting up to" \
	    "$(APT_WAIT_S) s for it)"; $(APT_GET) update && $(APT_GET) install -y $$missing >/dev/null; \
	else echo "not installed (needs root and apt-get): $$missing"; fi
SOLUTION_RESULTS := build/results-solutions.json
.PHONY: test-solutions lint check lock

test-solutions: $(STAMP) ## run the section tests against solutions/ (SECTION= for one)
	$(PYTEST) tests/sections --impl solutions $(SECTION_ARG) --results-json $(SOLUTION_RESULTS)

lint: $(STAMP) ## ruff: the code stays clean
	$(PY) -m ruff check .

lock: ## rewrite requirements/*.lock from pyproject.toml's pins, in fresh environments
	python3 -m tools.lock

# `make check` is the repository's own test command; each block below adds its part to it.
# The parts run two at a time, each one's output kept together: most of them are one process
# on one core. The tooling tests read what solutions/ scored in this run of test-solutions;
# they are the longest part, so they run in TOOLING_JOBS processes (pytest-xdist), a test
# file to a process, so that each file's fixtures (a graded class, an executed notebook) are
# made once. Each test's time goes to TOOLING_TIMES (pytest's JUnit XML, the xunit1 family:
# it names each test's file), which `make bench` reads for the slowest files and the next
# run for its order, the longest files first (tests/tooling/conftest.py; not xdist's own).
# A slow tooling test that passed at the same inputs is replayed, not run (--replay,
# tests/tooling/replay.py). The tooling tests marked check_all (tests/tooling/conftest.py)
# are checks that no usual change can break: `make check-all` runs them and what `make
# check` replayed, after `make check`, as CI does (README, "make check-all").
TOOLING_JOBS ?= 2
TOOLING_TIMES := build/tooling-times.xml
TOOLING := $(PYTEST) tests/tooling -n $(TOOLING_JOBS) --dist loadfile --no-loadscope-reorder
.PHONY: check-parts check-tooling check-all
check: system-packages ## every check that a usual change can break (a few minutes)
	@$(MAKE) --no-print-directory -j2 --output-sync=target check-parts

check-parts: lint check-tooling

check-tooling: test-solutions
	$(TOOLING) -m "not check_all" --replay --junitxml $(TOOLING_TIMES) -o junit_family=xunit1

check-all: check ## make check, then the checks that only grading/ or tools/wordnet.py can break (CI)
	$(TOOLING) --check-all

# --- exercises ---------------------------------------------------------------------------
.PHONY: exercises check-exercises

exercises: $(STAMP) ## regenerate exercises/ from solutions/ (keeps a learner's work; FORCE=1 does not)
	$(PY) -m tools.exercises $(if $(FORCE),--force)

check-exercises: $(STAMP)
	$(PY) -m tools.exercises --check
check-parts: check-exercises

# The points are the instructor's (course.toml); this suggests some and never fails.
.PHONY: points
points: $(STAMP) ## print a suggestion for each section's points (its statements) beside course.toml's
	$(PY) -m tools.points

# --- analysis sections: make demo -------------------------------------------------------
.PHONY: demo
DEMO_SEEDS ?= 10

demo: $(STAMP) ## the seed notebook end to end on solutions/: results.json, tables, figures in build/demo
	$(PY) -m tools.demo --seeds $(DEMO_SEEDS)

# --- the notebooks' experiments: make predictions ---------------------------------------
# Each notebook of sections 3-8 asks for a prediction, then runs one switch of the learner's
# code (analyses/predictions.py) and prints their numbers beside the reference's: these, over
# PREDICTION_SEEDS seeds, with each effect's seed noise, in analyses/predictions.json
# (tools/predictions.py; tests/tooling/test_predictions.py holds each effect beyond twice it).
.PHONY: predictions
PREDICTION_SEEDS ?= 5

predictions: $(STAMP) ## the notebooks' experiments on the reference, 5 seeds: analyses/predictions.json (minutes)
	$(PY) -m tools.predictions --seeds $(PREDICTION_SEEDS)

# --- instructors: grading, release, autograder ------------------------------------------
# Grading itself is `$(PY) -m grading SUBMISSION...` (docs/instructors.md); its tests are in
# tests/tooling/test_grading.py, which `make check` runs with the other tooling tests.
.PHONY: release autograder check-grading

release: $(STAMP) ## write the learners' handout to build/handout/ (no solutions)
	$(PY) -m tools.release build/handout

autograder: $(STAMP) ## write the Gradescope autograder bundle, build/autograder.zip
	$(PY) -m tools.autograder build/autograder.zip

check-grading: release autograder ## both build from a fresh clone
check-parts: check-grading

# The handout's GitHub Classroom workflow, written from course.toml's sections
# (tools/classroom.py); `make check` fails when the shipped file is not what it would write.
.PHONY: classroom-workflow check-classroom
classroom-workflow: $(STAMP) ## write the handout's GitHub Classroom workflow from course.toml
	$(PY) -m tools.classroom

check-classroom: $(STAMP)
	$(PY) -m tools.classroom --check
check-parts: check-classroom

# The class report of a class's grades file (python -m grading ... --json GRADES).
.PHONY: class-report
CLASS_REPORT_DIR ?= build/class-report

class-report: $(STAMP) ## the class report of GRADES=<grades.json> (python -m grading --json) in build/class-report/ (CLASS_REPORT_DIR=)
	@test -n "$(GRADES)" || { echo "name the grades file: make class-report GRADES=build/grades.json"; exit 2; }
	$(PY) -m grading.report "$(GRADES)" --out $(CLASS_REPORT_DIR)

# What the submissions of a class share (grading/similarity.py): instructors only, offline;
# nothing of a submission is run.
.PHONY: similarity
SIMILARITY_DIR ?= build/similarity

similarity: $(STAMP) ## what the submissions in SUBMISSIONS=<folder> share, and with GRADES=<grades.json> their rare wrong outputs, in build/similarity/ (SIMILARITY_DIR=)
	@test -n "$(SUBMISSIONS)" || { echo "name the submissions' folder: make similarity SUBMISSIONS=submissions [GRADES=build/grades.json]"; exit 2; }
	$(PY) -m grading.similarity "$(SUBMISSIONS)" $(if $(GRADES),--grades "$(GRADES)") --out $(SIMILARITY_DIR)

# The class report of a generated class (tools/class_example.py: grades made from the
# catalogue's signatures, nothing run), and its figure in docs/instructors.md.
.PHONY: class-report-example
CLASS_EXAMPLE_FIGURE := docs/figures/class-report-scores.png

class-report-example: $(STAMP) ## the class report of a generated class of 30 (build/class-example) and its figure for the docs
	$(PY) -m tools.class_example --out build/class-example --size 30 --seed 1 \
	  --unfinished 0.3 --figure $(CLASS_EXAMPLE_FIGURE)

# --- notebooks ---------------------------------------------------------------------------
# The notebooks are built from notebooks/*.py; tests/tooling/test_notebooks.py executes them.
.PHONY: notebooks check-notebooks

notebooks: $(STAMP) ## rebuild notebooks/*.ipynb from their sources, notebooks/*.py
	$(PY) -m tools.notebooks build

check-notebooks: $(STAMP) ## fail when a committed notebook is stale against its source
	$(PY) -m tools.notebooks check
check-parts: check-notebooks

# --- benchmarks --------------------------------------------------------------------------
# Not part of make check: it times make check. NO_TEST_LOOP=1 skips timing the test loop;
# RECORD=1 writes the results into BENCHMARKS.md.
.PHONY: bench

bench: $(STAMP) ## time to target loss, extraction throughput, test loop (a few minutes)
	$(PY) -m tools.bench.run $(if $(NO_TEST_LOOP),--no-test-loop) $(if $(RECORD),--record BENCHMARKS.md)

# --- mistakes catalogue and mutation testing ---------------------------------------------
.PHONY: mistakes signatures check-signatures mutation
MUTATION_JOBS ?= 2

mistakes: $(STAMP) ## show that each catalogued learner mistake fails its own section's tests
	$(PY) -m tools.mistakes $(SECTION_ARG)

signatures: $(STAMP) ## record every mistake's signature (the tests it fails) in course/signatures.json
	$(PY) -m tools.mistakes --signatures

check-signatures: $(STAMP) ## the recorded signatures match the current tests and catalogue
	$(PY) -m tools.mistakes --check-signatures

check-parts: mistakes check-signatures

# mutmut keeps its results in mutants/, so a second run only tests what changed since.
# `--targets`: every function of solutions/ but those the review leaves out (set -f: the
# patterns hold a `*` for mutmut, not for the shell).
mutation: $(STAMP) ## mutation-test solutions/ with mutmut (slow) and update MUTATION.md
	set -f; .venv/bin/mutmut run --max-children $(MUTATION_JOBS) $$($(PY) -m tools.mutation --targets)
	$(PY) -m tools.mutation

# --- ELMo on real English: make demo-real ------------------------------------------------
# data/wordnet/ is extracted from WordNet 3.0 by tools/wordnet.py; make check-all compares it
# byte for byte with what the tool makes of an installed WordNet (tests/tooling/
# test_real_english.py skips that where WordNet is absent). make system-packages installs it, as root.
# SCALE=full: every definition for several epochs, a larger biLM (a GPU picks it itself; on
# a CPU it takes hours: each run of the cpu scale times a fraction of it and states the cost).
# make check warns, never fails, when docs/results-real.json was made by other code.
.PHONY: demo-real wordnet check-real-results
SYSTEM_PACKAGES += wordnet-base

demo-real: $(STAMP) ## ELMo on real English (WordNet) on solutions/, 5 seeds: build/demo-real (SCALE=full)
	$(PY) -m tools.demo_real $(if $(SCALE),--scale $(SCALE))

check-real-results: $(STAMP) ## warn when docs/results-real.json is older than its code
	@$(PY) -m tools.demo_real --stale
check-parts: check-real-results

wordnet: $(STAMP) ## extract data/wordnet/ again from WordNet 3.0 (make system-packages installs it)
	$(PY) -m tools.wordnet

# --- the course book: make book ----------------------------------------------------------
# A static site of the notebooks, executed on the reference, and the docs: Jupyter Book 1.x
# in its own environment (requirements/book.lock), MathJax 3 from its npm package copied into
# the build, so that it reads offline. Once built, it checks itself in the system's chromium,
# headless, letting no request leave the machine, and fails on any defect a reader would
# meet (tools/book_check.py); tests/tooling/test_notebooks.py builds and checks the same book
# from the notebooks it has executed, in make check.
.PHONY: book
BOOK_VENV := .venv-book
BOOK_STAMP := $(BOOK_VENV)/.installed
SYSTEM_PACKAGES += chromium

$(BOOK_STAMP): requirements/book.lock
	python3 -m venv $(BOOK_VENV)
	$(BOOK_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements/book.lock
	touch $@

book: $(STAMP) $(BOOK_STAMP) ## the course book, offline: notebooks run on the reference, docs, in build/book (minutes)
	$(PY) -m tools.book build/book

check-tooling: $(BOOK_STAMP)
