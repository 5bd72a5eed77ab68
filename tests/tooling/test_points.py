"""`make points` (tools/points.py): a suggestion for each section's points, from the
statements a learner writes, beside course.toml's points, which are the instructor's: it never
fails, however far they are from it."""

from __future__ import annotations

import dataclasses

from course.registry import SECTIONS
from tools import points


def test_the_suggestion_shares_100_by_statements_in_steps_worked_by_hand():
    """Three sections of one statement each: 33.3 points each is 6.67 steps; 6 steps each
    leave 2, which go to the largest remainders (a tie: the first sections); a bonus of two
    statements earns at the same rate, 66.7 points, rounded to a step."""
    one, two, three = (dataclasses.replace(SECTIONS[0], number=n) for n in (1, 2, 3))
    bonus = dataclasses.replace(SECTIONS[-1], number=4, bonus=True)
    suggested = points.suggested_points({one: 1, two: 1, three: 1, bonus: 2})
    assert [suggested[s] for s in (one, two, three, bonus)] == [35, 35, 30, 65]


def test_points_that_differ_from_the_suggestion_are_shown_and_never_fail(monkeypatch, capsys):
    """A step moved from the last section that is not a bonus to the first: still 100, and
    both differ from the suggestion."""
    suggested = points.suggested_points({s: points.statements(s) for s in SECTIONS})
    core = [s for s in SECTIONS if not s.bonus]
    moved = {core[0].number: points.STEP, core[-1].number: -points.STEP}
    instructors = tuple(dataclasses.replace(s, points=suggested[s] + moved.get(s.number, 0))
                        for s in SECTIONS)
    monkeypatch.setattr(points, "SECTIONS", instructors)
    assert points.main([]) == 0
    rows = capsys.readouterr().out.splitlines()
    for section in instructors:
        row = next(r for r in rows if r.startswith(f"{section.number} {section.name} "))
        differs = section.number in moved
        assert row.split()[4:] == [str(section.points)] + ["(differs)"] * differs, row
