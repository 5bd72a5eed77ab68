"""`make classroom-workflow`: write the handout's GitHub Classroom workflow from course.toml.

    python -m tools.classroom            # write tools/handout/.github/workflows/classroom.yml
    python -m tools.classroom --check    # exit 1 when the file differs from what it would write

The workflow grades a learner's repository on every push with the course's own tests, the
learner's way, and reports to GitHub Classroom through its reporter
(`classroom-resources/autograding-grading-reporter`), which posts the points only from a job
named `run-autograding-tests`. The environment is installed as the handout's Makefile does
(`make install`); then each section is one step, whose id (`section<n>`) is a runner of the
reporter: `make test SECTION=<n>` runs its tests, and `python -m course.classroom` turns
their records into the reporter's result, the section's points shared by its tests
(`course/classroom.py`), so that a section earns partial credit as in the progress table and
the grader. (Classroom's own command grader gives all of `max-score` or nothing.)

The bonus section is a runner like the others: Classroom shows the total out of the core
points plus the bonus's (docs/instructors.md).
"""

from __future__ import annotations

import sys

from course.classroom import runner_id
from course.registry import ROOT, SECTIONS, Section

from .release import TEMPLATES

WORKFLOW = TEMPLATES / ".github" / "workflows" / "classroom.yml"
JOB = "run-autograding-tests"
REPORTER = "classroom-resources/autograding-grading-reporter@v1"
PYTHON = "3.11"
SECTION_TIMEOUT_MIN = 20  # the slowest section (pre-training) takes a few minutes
RESULTS = "build/classroom/{number}.json"


def _step(section: Section) -> str:
    results = RESULTS.format(number=section.number)
    kind = " (bonus)" if section.bonus else ""
    test = f"make test SECTION={section.number} RESULTS={results}"
    return f"""\
      - name: "Section {section.number}, {section.name}{kind}: {section.points} points"
        id: {runner_id(section)}
        run: |
          timeout {SECTION_TIMEOUT_MIN}m {test} || true
          .venv/bin/python -m course.classroom {section.number} {results} >> "$GITHUB_OUTPUT"
"""


def workflow(sections: tuple[Section, ...] = SECTIONS) -> str:
    """The workflow's text: one step per section, then the reporter of them all."""
    env = "".join(f"          {runner_id(s).upper()}_RESULTS: "
                  f"\"${{{{ steps.{runner_id(s)}.outputs.result }}}}\"\n" for s in sections)
    return f"""\
# GitHub Classroom: grades this repository with the course's tests on every push and reports
# each section's points to Classroom (one runner per section, the points of course.toml).
# Written from course.toml: an edit here is lost when the course is released again.
name: Autograding Tests
on: [push, workflow_dispatch]
permissions:
  checks: write
  actions: read
  contents: read
jobs:
  {JOB}:
    runs-on: ubuntu-latest
    if: github.actor != 'github-classroom[bot]'
    steps:
      - name: Check out the code
        uses: actions/checkout@v4
      - name: Set up Python
        uses: actions/setup-python@v5
        with:
          python-version: "{PYTHON}"
      - name: Install the environment (make install)
        run: make install
{"".join(_step(s) for s in sections)}\
      - name: Report the points to GitHub Classroom
        if: always()
        uses: {REPORTER}
        env:
{env}\
        with:
          runners: {",".join(runner_id(s) for s in sections)}
"""


def main(argv: list[str]) -> int:
    text = workflow()
    if "--check" in argv:
        if not WORKFLOW.is_file() or WORKFLOW.read_text() != text:
            print(f"{WORKFLOW.relative_to(ROOT)} differs from what course.toml's sections "
                  "give: run `make classroom-workflow`")
            return 1
        return 0
    WORKFLOW.parent.mkdir(parents=True, exist_ok=True)
    WORKFLOW.write_text(text)
    print(f"wrote {WORKFLOW}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
