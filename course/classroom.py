"""One section's result for GitHub Classroom's reporter, from the records of a learner's run:

    make test SECTION=3 RESULTS=build/classroom/3.json
    python -m course.classroom 3 build/classroom/3.json >> "$GITHUB_OUTPUT"

It prints `result=<base64 JSON>`, the output that a step of the Classroom workflow
(`.github/workflows/classroom.yml`) hands to `classroom-resources/autograding-grading-reporter`
in the format of its graders: {"version": 1, "status", "max_score", "tests": [...]}.

The reporter gives Classroom the sum of every test's `score`, and its log shows, for each
step, the tests that pass of all of them times `max_score`. So each test of the section is
as many entries as its weight (`weight_of`: 1 unless course.toml weighs its concept), each
entry worth the section's points shared equally by all entries when its test passes and
nothing otherwise: both readings give `section_points`, the formula of the progress table and
of the grader. A run that left no records (it was stopped, or could not collect the tests) is one
entry with status "error" and no points.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from pathlib import Path

from .progress import PASSED, weight_of
from .registry import Section, find_section

COMMAND = "make test SECTION={number}"  # how a learner reruns the section, in each entry


def runner_id(section: Section) -> str:
    """The workflow step's id: letters and digits only, as the reporter's `runners` input
    requires (it reads the step's output from SECTION<n>_RESULTS)."""
    return f"section{section.number}"


def _message(record: dict) -> str:
    message = " ".join(str(record.get("message") or "").split())
    return f"{record['status']}: {message}" if message else record["status"]


def runner_result(section: Section, records: list[dict] | None) -> dict:
    """The reporter's result for `section` from the records of `course.results` (those of
    other sections are left out); `None` or no record of the section: an error entry."""
    mine = [r for r in records or () if r.get("section") == section.number]
    if not mine:
        why = (f"no test of section {section.number} ran: see the step's log above, or run "
               f"`{COMMAND.format(number=section.number)}` in your copy")
        return {"version": 1, "status": "error", "max_score": section.points,
                "tests": [{"name": f"{section.number} {section.name}", "status": "error",
                           "score": 0, "message": why, "test_code": "", "filename": "",
                           "line_no": 0, "duration": 0}]}
    entries = []  # (record, part, weight): a test of weight w is w entries, so that the
    for r in mine:  # reporter's count of passing entries weighs it as the grader does
        weight = weight_of(section, r["name"])
        entries += [(r, part, weight) for part in range(1, weight + 1)]
    share = section.points / len(entries)
    tests = [{"name": f"{section.number} {section.name}: {r['name']}"
                      + (f" (weight {weight}: {part} of {weight})" if weight > 1 else ""),
              "status": "pass" if r["status"] == PASSED else "fail",
              "score": share if r["status"] == PASSED else 0,
              "message": "" if r["status"] == PASSED else _message(r),
              "test_code": "", "filename": section.test_file.name, "line_no": 0, "duration": 0}
             for r, part, weight in entries]
    status = "pass" if all(t["status"] == "pass" for t in tests) else "fail"
    return {"version": 1, "status": status, "max_score": section.points, "tests": tests}


def encoded(result: dict) -> str:
    """`result` as the graders' `result` output holds it: base64 of its JSON."""
    return base64.b64encode(json.dumps(result).encode()).decode()


def decoded(output: str) -> dict:
    """The result that `encoded` (or a Classroom grader) wrote."""
    return json.loads(base64.b64decode(output))


def read_records(path: Path) -> list[dict] | None:
    """The records of a results file; None where there is none or it cannot be read."""
    try:
        records = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return records if isinstance(records, list) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.classroom",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("section", help="the section: a number (3) or a name (bilm)")
    parser.add_argument("results", type=Path,
                        help="the results file that `make test SECTION=... RESULTS=...` wrote")
    args = parser.parse_args(argv)
    try:
        section = find_section(args.section)
    except KeyError as err:
        parser.error(str(err.args[0]))
    result = runner_result(section, read_records(args.results))
    print(f"result={encoded(result)}")
    earned = sum(t["score"] for t in result["tests"])
    print(f"section {section.number} ({section.name}): {earned:g}/{section.points} points",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
