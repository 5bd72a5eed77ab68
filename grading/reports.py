"""The grader's outputs: the terminal table, `--json`, `--csv` and `--gradescope`.

* JSON: every submission, section and test, with statuses, reasons and flags.
* CSV: one row per submission, a column per graded section, the total, the maximum and the
  flags (and, where a bonus section is graded, the bonus and its maximum): ready for a
  gradebook. A cell that a spreadsheet would read as a formula (=, +, -, @, a tab or a
  carriage return first) starts with a quote.
* Gradescope: `results.json` as Gradescope's autograder specification defines it: a
  top-level `score`, `output` and `visibility`, and one entry in `tests` per test, with
  `name`, `number`, `score`, `max_score`, `status` ("passed" or "failed"), `output`,
  `tags` and `visibility`. The tests' scores add up to the top-level score exactly, and their
  maxima to the sections' points (`grading.scoring`); a bonus section's come on top.

Whatever a submission wrote (a test's message, a reason, a flag's detail, its name) reaches a
terminal or a spreadsheet only with its control characters replaced (`shown`).
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata

from course.registry import Section
from course.results import ERROR, FAILED, NOT_IMPLEMENTED, PASSED, TIMEOUT

from .scoring import SectionResult, SubmissionResult

STATUS_MARKS = {PASSED: "", FAILED: "F", ERROR: "E", TIMEOUT: "T", NOT_IMPLEMENTED: "N"}
FLAGGED_MARK = "!"
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
BONUS = "bonus"


def number(value: float) -> str:
    """12.5, 10, 3.33: at most two decimals, none when whole."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def shown(text: str) -> str:
    """`text` with every control or format character (escape sequences, bidirectional
    overrides, carriage returns) replaced by U+FFFD, newlines and tabs by a space."""
    return "".join(" " if c in "\n\t" else "\ufffd" if unicodedata.category(c) in ("Cc", "Cf")
                   else c for c in str(text))


def spreadsheet_cell(value: object) -> object:
    """A text cell as a spreadsheet shows it, never as a formula it would run."""
    if not isinstance(value, str):
        return value
    text = shown(value)
    formula = value.startswith(FORMULA_START) or text.lstrip().startswith(FORMULA_START)
    return "'" + text if formula else text


def json_report(results: list[SubmissionResult], settings: dict) -> str:
    return json.dumps({"settings": settings,
                       "submissions": [r.to_dict() for r in results]}, indent=1)


def _label(section: Section) -> str:
    return f"{section.number}_{section.name}" + (f"_{BONUS}" if section.bonus else "")


def csv_report(results: list[SubmissionResult], sections: list[Section]) -> str:
    bonus = any(s.bonus for s in sections)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["submission", *(_label(s) for s in sections), "total", "max",
                     *([BONUS, f"{BONUS}_max"] if bonus else []), "flags"])
    for result in results:
        scores = {s.number: s.score for s in result.sections}
        row = [result.name, *(round(scores[s.number], 2) for s in sections),
               round(result.score, 2), result.max_score,
               *([round(result.bonus_score, 2), result.bonus_max] if bonus else []),
               "; ".join(str(f) for f in result.all_flags)]
        writer.writerow([spreadsheet_cell(cell) for cell in row])
    return out.getvalue()


def _cell(section: SectionResult) -> str:
    flagged = any(f.penalised for f in section.flags)
    return number(section.score) + (FLAGGED_MARK if flagged else STATUS_MARKS[section.status])


def _total(result: SubmissionResult) -> str:
    total = f"{number(result.score)}/{result.max_score}"
    if result.bonus_max:
        total += f" + {number(result.bonus_score)}/{result.bonus_max} {BONUS}"
    return total


def table(results: list[SubmissionResult], sections: list[Section]) -> str:
    """One row per submission: each section's points with a mark for its status, the total
    (and the bonus apart from it); then every flag and every section that errored or timed
    out, with its reason."""
    headers = ["submission", *(f"{s.number} {s.name}" + (f" ({BONUS})" if s.bonus else "")
                               for s in sections), "total"]
    rows = [[shown(r.name), *(_cell(s) for s in r.sections), _total(r)] for r in results]
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in [headers, *rows]]
    lines.append("marks: F failed, E error, T timeout, N not implemented, "
                 f"{FLAGGED_MARK} flagged (no credit)")
    for result in results:
        notes = [f"  {shown(f)}" for f in result.all_flags]
        notes += [f"  section {s.number} ({s.name}) {s.status}: {shown(s.reason)}"
                  for s in result.sections if s.status in (ERROR, TIMEOUT)]
        if notes:
            lines += [f"{shown(result.name)}:", *notes]
    return "\n".join(lines)


def gradescope_report(result: SubmissionResult, visibility: str = "visible") -> str:
    tests = []
    for section in result.sections:
        penalised = [f for f in section.flags if f.penalised]
        title = f"{section.number} {section.name}" + (f" ({BONUS})" if section.bonus else "")
        for index, test in enumerate(section.tests, 1):
            output = test.status + (f": {test.message}" if test.message else "")
            if penalised:
                output += "\nno credit for this section: " + "; ".join(
                    f"{f.kind}: {f.detail}" for f in penalised)
            tests.append({
                "name": f"{title}: {test.name}",
                "number": f"{section.number}.{index}",
                "score": test.score,
                "max_score": test.max_score,
                "status": "passed" if test.score == test.max_score > 0 else "failed",
                "output": shown(output),
                "tags": [section.name, *([BONUS] if section.bonus else [])],
                "visibility": visibility,
            })
    summary = [f"{s.number} {s.name}{f' ({BONUS})' if s.bonus else ''}: "
               f"{number(s.score)}/{s.points} {s.status}" + (f" ({s.reason})" if s.reason else "")
               for s in result.sections]
    summary.append(f"total: {_total(result)}")
    summary += [str(f) for f in result.all_flags]
    return json.dumps({"score": result.score + result.bonus_score,
                       "output": "\n".join(shown(line) for line in summary),
                       "visibility": visibility, "stdout_visibility": "hidden",
                       "tests": tests}, indent=1)


def gradescope_error(error: str, visibility: str = "visible") -> str:
    """results.json when grading itself failed: no score is given, and the output says so
    (as otter-grader does, a test that reports the error)."""
    output = shown(f"the grader failed, so this submission is not graded yet: {error}")
    return json.dumps({"score": 0.0, "output": output, "visibility": visibility,
                       "stdout_visibility": "hidden",
                       "tests": [{"name": "grader error", "score": 0.0, "max_score": 0.0,
                                  "status": "failed", "output": output,
                                  "visibility": "visible"}]}, indent=1)
