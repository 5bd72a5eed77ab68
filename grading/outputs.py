"""The grader's outputs: the terminal table, `--json` (FORMAT, docs/instructors.md), `--csv`
(a row per submission, ready for a gradebook), `--canvas` (the CSV that Canvas's gradebook
imports, one column for the assignment) and `--gradescope` (results.json, an entry per
section). Every text in them is the grader's (`grading.records`) or a name an instructor or
a learner chose, which reaches a terminal or a spreadsheet with its control characters
replaced (`shown`), and never as a formula (`spreadsheet_cell`).
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata

from course.registry import Section
from course.results import ERROR, FAILED, NOT_IMPLEMENTED, PASSED, TIMEOUT

from .scoring import SectionResult, SubmissionResult, result_from_dict

STATUS_MARKS = {PASSED: "", FAILED: "F", ERROR: "E", TIMEOUT: "T", NOT_IMPLEMENTED: "N"}
FLAGGED_MARK = "!"
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
BONUS = "bonus"
FORMAT = "grading-results/1"


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
    """FORMAT, the settings, and every submission as `SubmissionResult.to_dict` has it."""
    return json.dumps({"format": FORMAT, "settings": settings,
                       "submissions": [r.to_dict() for r in results]}, indent=1)


def read_grades(path) -> list[SubmissionResult]:
    """The submissions of a file that `json_report` wrote (`--json`).

    Raises:
        ValueError: the file is not in FORMAT.
    """
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path}: not a grades file of format {FORMAT} (python -m grading "
                         "--json writes one)")
    return [result_from_dict(entry) for entry in data["submissions"]]


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


# Canvas's gradebook import: the columns of its own export, one row per student after a row of
# the points possible; a student is matched by one of the identity columns, the assignment by
# the id in parentheses after its name (without one, the import creates the assignment).
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_IDS = ("SIS Login ID", "SIS User ID", "ID")
CANVAS_POINTS_ROW = "Points Possible"


def canvas_assignment(name: str, assignment_id: str | None = None) -> str:
    """The assignment's column header: `ELMo (12345)` matches Canvas's assignment 12345."""
    return f"{name} ({assignment_id})" if assignment_id else name


def canvas_report(results: list[SubmissionResult], assignment: str,
                  id_column: str = CANVAS_IDS[0]) -> str:
    """Canvas's gradebook CSV: each submission's name (the student's id) in `id_column`, its
    total with the bonus on top in the `assignment` column, after the row of the points
    possible (the core sections' points: Canvas takes a score above them as extra credit)."""
    if id_column not in CANVAS_IDS:
        raise ValueError(f"the student's id goes in one of {', '.join(CANVAS_IDS)}")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*CANVAS_COLUMNS, spreadsheet_cell(assignment)])
    possible = results[0].max_score if results else 0
    writer.writerow([CANVAS_POINTS_ROW, "", "", "", "", possible])
    for result in results:
        row = dict.fromkeys(CANVAS_COLUMNS, "") | {id_column: result.name}
        writer.writerow([*(spreadsheet_cell(row[c]) for c in CANVAS_COLUMNS),
                         round(result.score + result.bonus_score, 2)])
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
    """One entry per section (its points its `max_score`), its output a line per test."""
    entries = []
    for section in result.sections:
        lines = [f"{number(section.score)}/{section.points} {section.status}"
                 + (f": {section.reason}" if section.reason else "")]
        lines += [f"{t.status}: {t.name}" + (f" ({t.message})" if t.message else "")
                  for t in section.tests]
        entries.append({
            "name": f"{section.number} {section.name}" + (f" ({BONUS})" if section.bonus else ""),
            "number": str(section.number), "score": section.score, "max_score": section.points,
            "status": "passed" if section.score == section.points > 0 else "failed",
            "output": "\n".join(shown(line) for line in lines),
            "tags": [section.name, *([BONUS] if section.bonus else [])],
            "visibility": visibility})
    summary = [f"total: {_total(result)}", *(str(f) for f in result.all_flags),
               "Each test's own message: `make test SECTION=<n>` in your copy of the course."]
    return json.dumps({"score": result.score + result.bonus_score,
                       "output": "\n".join(shown(line) for line in summary),
                       "visibility": visibility, "stdout_visibility": "hidden",
                       "tests": entries}, indent=1)


def gradescope_error(error: str, visibility: str = "visible") -> str:
    """results.json when grading itself failed: no score is given, and the output says so
    (as otter-grader does, a test that reports the error)."""
    output = shown(f"the grader failed, so this submission is not graded yet: {error}")
    return json.dumps({"score": 0.0, "output": output, "visibility": visibility,
                       "stdout_visibility": "hidden",
                       "tests": [{"name": "grader error", "score": 0.0, "max_score": 0.0,
                                  "status": "failed", "output": output,
                                  "visibility": "visible"}]}, indent=1)
