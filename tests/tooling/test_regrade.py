"""The regrade preview (grading.regrade and `python -m grading --previous`): two generated
grade files (tools.class_example) compared submission by submission, section by section and
test by test; and the command, driven from results already in its work folder (nothing is
graded), exporting nothing when anything would change unless the change is accepted."""

from __future__ import annotations

import dataclasses
import json

import pytest

from course.registry import ROOT, SECTIONS
from course.results import ERROR, FAILED, PASSED
from course.signatures import Known
from grading import cli
from grading.grader import Grader
from grading.outputs import read_grades
from grading.regrade import describe, regrade_changes
from grading.sandbox import Limits
from grading.store import Store
from grading.submissions import read_submission
from tools.class_example import (
    catalogue_known,
    generate,
    section_tests,
    synthetic_result,
    write_grades,
)

KNOWN = catalogue_known()
OLD = [s.result for s in generate(KNOWN, size=30, seed=3)]
S4 = SECTIONS[3]
STRICTER = Known("stricter", 4, "", "", frozenset(section_tests(S4, KNOWN)[:2]))


TARGET = next(r for r in OLD if r.sections[3].score == S4.points and r.name != "learner07")


def regraded() -> tuple[list, float]:
    """OLD after a stricter section 4 that TARGET, which passed it, now fails two tests of;
    learner07 dropped and a late submission added; and the points TARGET loses, worked out
    here: two of section 4's tests."""
    tests = section_tests(S4, KNOWN)
    new = []
    for result in OLD:
        if result.name == "learner07":
            continue
        if result is TARGET:
            sections = list(result.sections)
            sections[3] = dataclasses.replace(
                sections[3], score=S4.points * (len(tests) - 2) / len(tests),
                tests=[dataclasses.replace(t, status=FAILED if t.name in STRICTER.tests
                                           else t.status) for t in sections[3].tests])
            result = dataclasses.replace(result, sections=sections)
        new.append(result)
    new.append(synthetic_result("late", [], KNOWN))
    return new, S4.points * 2 / len(tests)


def test_identical_grades_change_nothing(tmp_path):
    path = write_grades(OLD, tmp_path / "old.json")
    assert regrade_changes(read_grades(path), OLD) == []
    assert describe([]) == "regrade: no submission's grades change"


def test_each_changed_submission_with_its_sections_and_tests():
    new, moved = regraded()
    changes = {c.submission: c for c in regrade_changes(OLD, new)}
    assert set(changes) == {TARGET.name, "learner07", "late"}
    change = changes[TARGET.name]
    assert change.delta == pytest.approx(-moved)
    assert [s.section for s in change.sections] == [4]
    assert change.sections[0].delta == pytest.approx(-moved)
    assert {t.nodeid.split("::")[1] for t in change.tests} == STRICTER.tests
    assert {(t.section, t.old, t.new) for t in change.tests} == {(4, PASSED, FAILED)}
    assert changes["learner07"].new is None and changes["late"].old is None
    assert changes["late"].new == pytest.approx(100)
    text = describe(list(changes.values()))
    assert text.startswith("regrade: 3 submission(s) would change")
    assert f"  section 4 (pretrain): {S4.points} -> " in text and "late: - -> 100 (+100)" in text


def test_a_status_alone_is_a_change():
    """A test that now errors where it failed: the same points, still a change to show."""
    failing = next(r for r in OLD if r.score < r.max_score)
    section = next(i for i, s in enumerate(failing.sections) if s.score < s.points)
    tests = [dataclasses.replace(t, status=ERROR) if t.status == FAILED else t
             for t in failing.sections[section].tests]
    sections = list(failing.sections)
    sections[section] = dataclasses.replace(sections[section], tests=tests)
    changes = regrade_changes(OLD, [dataclasses.replace(failing, sections=sections)])
    mine = next(c for c in changes if c.submission == failing.name)
    assert mine.delta == 0 and mine.sections == ()
    assert {(t.old, t.new) for t in mine.tests} == {(FAILED, ERROR)}


# --- the command, from results already in its work folder ------------------------------------


@pytest.fixture
def graded(tmp_path, monkeypatch):
    """(the submissions' folders, the work folder) where NEW is stored as already graded, so
    that `python -m grading` grades nothing."""
    monkeypatch.setattr(Grader, "prepare", lambda *a, **k: pytest.fail("it would grade"))
    new = regraded()[0]
    work = tmp_path / "work"
    key = Grader(work, list(SECTIONS), Limits(), "bwrap", None, ROOT.resolve()).settings_key
    store, folders = Store(work / "results", key), []
    for result in new:
        folder = tmp_path / "submissions" / result.name
        folder.mkdir(parents=True)
        (folder / "s1_setup.py").write_text(f"# {result.name}\n")
        store.save(dataclasses.replace(result, digest=read_submission(folder).digest))
        folders.append(str(folder))
    return folders, work, new


def run(folders, work, *options) -> int:
    return cli.main([*folders, "--work-dir", str(work), "--quiet", *options])


def test_the_command_exports_nothing_when_grades_would_change(graded, tmp_path, capsys):
    folders, work, new = graded
    old = write_grades(OLD, tmp_path / "old.json")
    exports = [tmp_path / "new.json", tmp_path / "new.csv"]
    assert run(folders, work, "--previous", str(old), "--json", str(exports[0]),
               "--csv", str(exports[1])) == cli.REFUSED
    out, err = capsys.readouterr()
    assert "regrade: 3 submission(s) would change" in out and f"{TARGET.name}: " in out
    assert "--accept-changes" in err and "nothing exported" in err
    assert not any(path.exists() for path in exports)
    assert run(folders, work, "--previous", str(old), "--json", str(exports[0]),
               "--csv", str(exports[1]), "--accept-changes") == 0
    exported = json.loads(exports[0].read_text())["submissions"]
    assert [s["name"] for s in exported] == [r.name for r in new]
    assert exports[1].exists()


def test_the_command_exports_when_nothing_changes(graded, tmp_path, capsys):
    folders, work, new = graded
    same = write_grades(new, tmp_path / "same.json")
    assert run(folders, work, "--previous", str(same), "--json", str(tmp_path / "x.json")) == 0
    assert "no submission's grades change" in capsys.readouterr().out
    assert (tmp_path / "x.json").exists()


def test_gradescope_gets_no_results_json_from_a_refused_regrade(graded, tmp_path):
    folders, work, new = graded
    target = [f for f in folders if f.endswith(TARGET.name)]
    results = tmp_path / "results.json"
    old = write_grades([TARGET], tmp_path / "old.json")
    assert run(target, work, "--previous", str(old), "--gradescope", str(results)) == 3
    assert not results.exists()


def test_accepting_needs_a_previous_file(tmp_path):
    with pytest.raises(SystemExit):
        cli.main([str(tmp_path), "--accept-changes"])
    with pytest.raises(SystemExit):
        cli.main([str(tmp_path), "--previous", str(tmp_path / "missing.json")])
