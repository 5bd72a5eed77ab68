"""`python -m grading --canvas FILE`: the CSV that Canvas's gradebook imports (Grades >
Import), in the columns of Canvas's own export: Student, ID, SIS User ID, SIS Login ID,
Section, then the assignment, after a row of the points possible. The grader's command line
writes it in tests/tooling/test_grade_agreement.py, beside the other outputs it must agree
with.
"""

from __future__ import annotations

import csv
import dataclasses
import io

import pytest

from grading.outputs import CANVAS_COLUMNS, canvas_assignment, canvas_report
from tests.tooling.test_grading_reports import BONUS, COURSE, result_with


def rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_the_header_and_the_points_possible_are_canvas_s():
    result = dataclasses.replace(result_with(COURSE, {s.number: 4 for s in COURSE}),
                                 name="s1234567")
    header, possible, row = rows(canvas_report([result], canvas_assignment("ELMo", "4711")))
    assert header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "ELMo (4711)"]
    assert tuple(header[:5]) == CANVAS_COLUMNS
    assert possible == ["Points Possible", "", "", "", "", "100"]
    assert row == ["", "", "", "s1234567", "", "100.0"]


def test_the_total_is_the_grader_s_with_the_bonus_on_top():
    sections = [*COURSE, BONUS]
    half = dataclasses.replace(result_with(sections, {s.number: 2 for s in sections}),
                               name="bob")
    none = dataclasses.replace(result_with(sections, {s.number: 0 for s in sections}),
                               name="carol")
    _, possible, bob, carol = rows(canvas_report([half, none], "ELMo", "SIS User ID"))
    assert possible[-1] == "100"  # the bonus's 5 points are extra credit, not possible
    assert bob == ["", "", "bob", "", "", "52.5"] and float(bob[-1]) == half.score + 2.5
    assert carol[2:] == ["carol", "", "", "0.0"]
    assert canvas_assignment("ELMo") == "ELMo"  # no id: the import creates the assignment


def test_names_are_never_formulas_and_the_id_column_is_one_of_canvas_s():
    result = result_with(COURSE, {s.number: 1 for s in COURSE})  # named "=2+3"
    _, _, row = rows(canvas_report([result], "=cmd", "ID"))
    assert row[1] == "'=2+3"
    assert rows(canvas_report([result], "=cmd"))[0][-1] == "'=cmd"
    with pytest.raises(ValueError):
        canvas_report([result], "ELMo", "Email")
