#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image. Choose an Ubuntu image
# with Python 3.11 or newer (Ubuntu 24.04) in the autograder's settings.
set -euo pipefail
cd /autograder/source
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-pip \
  bubblewrap >/dev/null
python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else
  f"the course needs Python 3.11 or newer, this image has {sys.version.split()[0]}: "
  "choose Ubuntu 24.04 in the autograder settings")'
python3 -m venv .venv
# torch's CPU build: Gradescope's containers have no GPU, and it is a tenth of the size
.venv/bin/pip install --quiet --disable-pip-version-check \
  --index-url https://download.pytorch.org/whl/cpu "$(grep '^torch==' requirements/learner.lock)"
.venv/bin/pip install --quiet --disable-pip-version-check -r requirements/learner.lock
# Collect the tests and pre-train the reference biLM now, once, not for every submission.
.venv/bin/python -m grading --prepare-only
# Where bubblewrap cannot run in the container, each run is a uid of its own (--isolation
# auto): it must be able to read Python and the environment, and reach the grader's work
# folder, but read nothing else of the course, which stays the grader's (root's) alone; the
# grader refuses to grade otherwise, naming what others can read.
# uid mode: begin
chmod -R go-rwx /autograder/source
chmod o+x /autograder /autograder/source /autograder/source/build
chmod -R o+rX /autograder/source/.venv
# uid mode: end
