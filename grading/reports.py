"""The grader's outputs: the terminal table, `--json`, `--csv` and `--gradescope`.

* JSON: every submission, section and test, with statuses, reasons and flags.
* CSV: one row per submission, a column per graded section, the total, the maximum and the
  flags: ready for a gradebook.
* Gradescope: `results.json` as Gradescope's autograder specification defines it: a
  top-level `score`, `output` and `visibility`, and one entry in `tests` per test, with
  `name`, `number`, `score`, `max_score`, `status` ("passed" or "failed"), `output`,
  `tags` and `visibility`.
"""

from __future__ import annotations

import csv
import io
import json

from course.registry import Section
from course.results import ERROR, FAILED, NOT_IMPLEMENTED, PASSED, TIMEOUT

from .scoring import SectionResult, SubmissionResult

STATUS_MARKS = {PASSED: "", FAILED: "F", ERROR: "E", TIMEOUT: "T", NOT_IMPLEMENTED: "N"}
FLAGGED_MARK = "!"
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")


def number(value: float) -> str:
    """12.5, 10, 3.33: at most two decimals, none when whole."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def json_report(results: list[SubmissionResult], settings: dict) -> str:
    return json.dumps({"settings": settings,
                       "submissions": [r.to_dict() for r in results]}, indent=1)


def _label(section: Section) -> str:
    return f"{section.number}_{section.name}"


def csv_report(results: list[SubmissionResult], sections: list[Section]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["submission", *(_label(s) for s in sections), "total", "max", "flags"])
    for result in results:
        scores = {s.number: s.score for s in result.sections}
        writer.writerow([result.name, *(round(scores[s.number], 2) for s in sections),
                         round(result.score, 2), result.max_score,
                         "; ".join(str(f) for f in result.all_flags)])
    return out.getvalue()


def _cell(section: SectionResult) -> str:
    flagged = any(f.penalised for f in section.flags)
    return number(section.score) + (FLAGGED_MARK if flagged else STATUS_MARKS[section.status])


def table(results: list[SubmissionResult], sections: list[Section]) -> str:
    """One row per submission: each section's points with a mark for its status, the total;
    then every flag and every section that errored or timed out, with its reason."""
    headers = ["submission", *(f"{s.number} {s.name}" for s in sections), "total"]
    rows = [[r.name, *(_cell(s) for s in r.sections),
             f"{number(r.score)}/{r.max_score}"] for r in results]
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in [headers, *rows]]
    lines.append("marks: F failed, E error, T timeout, N not implemented, "
                 f"{FLAGGED_MARK} flagged (no credit)")
    for result in results:
        notes = [f"  {f}" for f in result.all_flags]
        notes += [f"  section {s.number} ({s.name}) {s.status}: {s.reason}"
                  for s in result.sections if s.status in (ERROR, TIMEOUT)]
        if notes:
            lines += [f"{result.name}:", *notes]
    return "\n".join(lines)


def gradescope_report(result: SubmissionResult, visibility: str = "visible") -> str:
    tests = []
    for section in result.sections:
        penalised = [f for f in section.flags if f.penalised]
        for index, test in enumerate(section.tests, 1):
            output = test.status + (f": {test.message}" if test.message else "")
            if penalised:
                output += "\nno credit for this section: " + "; ".join(
                    f"{f.kind}: {f.detail}" for f in penalised)
            tests.append({
                "name": f"{section.number} {section.name}: {test.name}",
                "number": f"{section.number}.{index}",
                "score": round(test.score, 4),
                "max_score": round(test.max_score, 4),
                "status": "passed" if test.score == test.max_score else "failed",
                "output": output,
                "tags": [section.name],
                "visibility": visibility,
            })
    summary = [f"{s.number} {s.name}: {number(s.score)}/{s.points} {s.status}"
               + (f" ({s.reason})" if s.reason else "") for s in result.sections]
    summary += [str(f) for f in result.all_flags]
    return json.dumps({"score": round(result.score, 2), "output": "\n".join(summary),
                       "visibility": visibility, "stdout_visibility": "hidden",
                       "tests": tests}, indent=1)

