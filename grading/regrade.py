"""What a regrade changes: the new results of a class against a previous grades file (what
`--json` wrote), per submission, per section and per test, before anything is exported.

    from grading.regrade import regrade_changes, describe
    changes = regrade_changes(read_grades("old.json"), new_results)
    print(describe(changes))

A submission changes when a section's score or a test's status differs, or when it is in
only one of the two (a submission missing from the new results would be missing from their
export); submissions are matched by name, sections by number, tests by node id (a section
graded on one side only shows as its score, without its tests).
"""

from __future__ import annotations

from dataclasses import dataclass

from .outputs import number, shown
from .scoring import SectionResult, SubmissionResult

SAME_WITHIN = 1e-9  # points: two scores closer than this are the same


@dataclass(frozen=True)
class TestChange:
    section: int
    nodeid: str
    old: str | None  # its status; None where it was not run
    new: str | None


@dataclass(frozen=True)
class SectionChange:
    section: int
    name: str
    old: float | None  # its score; None where it was not graded
    new: float | None

    @property
    def delta(self) -> float:
        return (self.new or 0.0) - (self.old or 0.0)


@dataclass(frozen=True)
class Change:
    """One submission whose grades would change."""

    submission: str
    old: float | None  # its total of the 100; None where it was not in that file
    new: float | None
    sections: tuple[SectionChange, ...]  # those whose score changes
    tests: tuple[TestChange, ...]  # those whose status changes

    @property
    def delta(self) -> float:
        return (self.new or 0.0) - (self.old or 0.0)


def _sections(result: SubmissionResult | None) -> dict[int, SectionResult]:
    return {} if result is None else {s.number: s for s in result.sections}


def compare(old: SubmissionResult | None, new: SubmissionResult | None) -> Change | None:
    """The change from `old` to `new` (one submission, either None when absent); None when
    they grade alike."""
    before, after = _sections(old), _sections(new)
    sections, tests = [], []
    for number_ in sorted(before.keys() | after.keys()):
        was, now = before.get(number_), after.get(number_)
        old_score = None if was is None else was.score
        new_score = None if now is None else now.score
        if (old_score is None) != (new_score is None) or \
                (old_score is not None and abs(new_score - old_score) > SAME_WITHIN):
            sections.append(SectionChange(number_, (now or was).name, old_score, new_score))
        if was is None or now is None:
            continue  # graded on one side only: its score says it, test by test is noise
        old_tests = {t.nodeid: t.status for t in was.tests}
        new_tests = {t.nodeid: t.status for t in now.tests}
        tests += [TestChange(number_, nodeid, old_tests.get(nodeid), new_tests.get(nodeid))
                  for nodeid in [*old_tests, *(n for n in new_tests if n not in old_tests)]
                  if old_tests.get(nodeid) != new_tests.get(nodeid)]
    if old is not None and new is not None and not sections and not tests:
        return None
    return Change((new or old).name, None if old is None else old.score,
                  None if new is None else new.score, tuple(sections), tuple(tests))


def regrade_changes(old: list[SubmissionResult],
                    new: list[SubmissionResult]) -> list[Change]:
    """Every submission whose grades differ between `old` and `new`, in the order of `new`
    and then of those only `old` holds."""
    before = {r.name: r for r in old}
    after = {r.name: r for r in new}
    names = [*after, *(n for n in before if n not in after)]
    return [c for n in names if (c := compare(before.get(n), after.get(n))) is not None]


def _points(value: float | None) -> str:
    return "-" if value is None else number(value)


def _signed(value: float) -> str:
    return ("+" if value >= 0 else "-") + number(abs(value))


def describe(changes: list[Change], tests_shown: int = 10) -> str:
    """The changes, a few lines per submission: its total, each section's score, and up to
    `tests_shown` of the tests whose status changed."""
    if not changes:
        return "regrade: no submission's grades change"
    lines = [f"regrade: {len(changes)} submission(s) would change"]
    for change in changes:
        where = (" (not in the previous grades)" if change.old is None else
                 " (not graded now)" if change.new is None else "")
        lines.append(f"{shown(change.submission)}: {_points(change.old)} -> "
                     f"{_points(change.new)} ({_signed(change.delta)}){where}")
        if where:
            continue
        lines += [f"  section {s.section} ({s.name}): {_points(s.old)} -> {_points(s.new)} "
                  f"({_signed(s.delta)})" for s in change.sections]
        lines += [f"  {t.nodeid}: {t.old or 'not run'} -> {t.new or 'not run'}"
                  for t in change.tests[:tests_shown]]
        if len(change.tests) > tests_shown:
            lines.append(f"  ... and {len(change.tests) - tests_shown} more tests")
    return "\n".join(lines)
