"""What the grader reports, apart from grading: scores that add up exactly (proved over every
split a section can have), a bonus section kept apart from the 100, names that cannot
collide, cells a spreadsheet never runs, text a terminal never obeys, stored results and a
cache that are trusted only where the grader's seal holds, and a deadline shared out fairly.
No run happens here.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import time
import zipfile
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from course.progress import section_points
from course.registry import SECTIONS, Section
from course.results import PASSED
from grading.grader import Grader
from grading.reports import csv_report, gradescope_report, shown, spreadsheet_cell, table
from grading.sandbox import Limits, SectionRun
from grading.scoring import UNITS, SubmissionResult, allocate, score_run
from grading.store import Seal, Store, load_sealed, save_sealed
from grading.submissions import Submission, read_submission, unique_names

COURSE = [s for s in SECTIONS if not s.bonus]  # the sections of the 100
BONUS = Section(8, "extra", "s8_extra", "A bonus", 5, "08_extra.ipynb", "hint", bonus=True)


@given(points=st.integers(1, 100), passed=st.lists(st.booleans(), min_size=1, max_size=300))
def test_a_section_s_parts_add_up_exactly_to_its_points_and_its_score(points, passed):
    section = dataclasses.replace(SECTIONS[0], points=points)
    earned, worth = allocate(section, passed)
    assert sum(worth) == points * UNITS
    assert all(e == (w if p else 0) for e, w, p in zip(earned, worth, passed, strict=True))
    formula = Fraction(section_points(section, sum(passed), len(passed)))
    assert abs(Fraction(sum(earned), UNITS) - formula) <= Fraction(1, 2 * UNITS)
    assert max(worth) - min(worth) <= 2, "as equal as whole units allow"
    # what the reports hold, as floats, adds up exactly in any order
    assert sum(w / UNITS for w in worth) == sum(w / UNITS for w in reversed(worth)) == points


def test_the_course_s_sections_add_up_to_exactly_100_whatever_passes():
    total = 0.0
    for section in COURSE:
        for count in (1, 7, 23, 40):
            _, worth = allocate(section, [True] * count)
            assert sum(w / UNITS for w in worth) == section.points
        total += sum(w / UNITS for w in allocate(section, [False] * 13)[1])
    assert total == 100


def result_with(sections: list[Section], passing: dict[int, int]) -> SubmissionResult:
    """A submission whose section N passes passing[N] of its 4 tests."""
    results = []
    for section in sections:
        nodeids = [f"tests/sections/test_{section.module}.py::test_{i}" for i in range(4)]
        records = {n: {"nodeid": n, "status": PASSED if i < passing[section.number] else
                       "failed", "message": "=cmd|' /C calc'!A0"}
                   for i, n in enumerate(nodeids)}
        results.append(score_run(section, nodeids, SectionRun(records=records, wait_status=0),
                                 [], Limits()))
    return SubmissionResult("=2+3", "/x", "d", results)


def test_a_bonus_section_is_shown_and_counted_apart_from_the_100():
    sections = [*COURSE, BONUS]
    result = result_with(sections, {s.number: 4 for s in COURSE} | {8: 2})
    assert (result.score, result.max_score) == (100, 100)
    assert (result.bonus_score, result.bonus_max) == (2.5, 5)
    shown_table = table([result], sections)
    assert "8 extra (bonus)" in shown_table and "100/100 + 2.5/5 bonus" in shown_table
    rows = list(csv.DictReader(io.StringIO(csv_report([result], sections))))
    assert rows[0]["8_extra_bonus"] == "2.5" and rows[0]["total"] == "100.0"
    assert (rows[0]["bonus"], rows[0]["bonus_max"]) == ("2.5", "5")
    data = json.loads(gradescope_report(result))
    assert data["score"] == 102.5
    regular = [t for t in data["tests"] if "bonus" not in t["tags"]]
    assert sum(t["max_score"] for t in regular) == 100
    assert {t["name"].split(":")[0] for t in data["tests"] if "bonus" in t["tags"]} == {
        "8 extra (bonus)"}
    assert result.to_dict()["bonus_score"] == 2.5


def test_the_reports_hold_no_bonus_column_when_no_bonus_is_graded():
    result = result_with(COURSE, {s.number: 3 for s in COURSE})
    header = csv_report([result], COURSE).splitlines()[0]
    assert "bonus" not in header and "bonus" not in table([result], COURSE)


@pytest.mark.parametrize("cell", ["=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1"])
def test_a_spreadsheet_never_reads_a_cell_as_a_formula(cell):
    assert spreadsheet_cell(cell).startswith("'")


def test_cells_that_are_not_formulas_are_left_alone():
    assert spreadsheet_cell("alice") == "alice" and spreadsheet_cell(-1.5) == -1.5
    rows = list(csv.reader(io.StringIO(csv_report(
        [result_with(list(SECTIONS), {s.number: 1 for s in SECTIONS})], list(SECTIONS)))))
    assert rows[1][0] == "'=2+3"


def test_control_characters_never_reach_a_terminal():
    text = "ok\x1b[2J\x1b]0;title\x07\r\u202e\u200bnext\nline\tend"
    assert shown(text) == "ok\ufffd[2J\ufffd]0;title\ufffd\ufffd\ufffd\ufffdnext line end"


# --- names ---------------------------------------------------------------------------------


def named(*paths: str) -> list[str]:
    submissions = [read_submission(Path(p)) for p in paths]
    unique_names(submissions)
    return [s.name for s in submissions]


def test_names_are_unique_by_path_and_never_made_up(tmp_path):
    for folder in ("a/alice", "b/alice", "alice-2", "c/alice"):
        (tmp_path / folder).mkdir(parents=True)
    with zipfile.ZipFile(tmp_path / "c" / "alice.zip", "w") as archive:
        archive.writestr("exercises/s1_setup.py", "")
    names = named(*(str(tmp_path / p) for p in ("a/alice", "b/alice", "alice-2", "c/alice",
                                                "c/alice.zip")))
    assert names == ["a/alice", "b/alice", "alice-2", "c/alice", "alice.zip"]
    assert named(str(tmp_path / "alice-2")) == ["alice-2"]


def test_a_folder_holding_one_zip_is_named_after_the_folder(tmp_path):
    for who in ("ann", "bo"):
        (tmp_path / who).mkdir()
        with zipfile.ZipFile(tmp_path / who / "submission.zip", "w") as archive:
            archive.writestr("exercises/s1_setup.py", "")
    assert named(str(tmp_path / "ann"), str(tmp_path / "bo")) == ["ann", "bo"]


def test_a_submission_given_twice_is_refused(tmp_path):
    (tmp_path / "alice").mkdir()
    with pytest.raises(ValueError, match="named twice"):
        named(str(tmp_path / "alice"), str(tmp_path / "alice"))


# --- what the grader trusts again --------------------------------------------------------


def test_a_stored_result_is_trusted_only_under_the_grader_s_seal(tmp_path):
    store = Store(tmp_path / "results", "key", Seal(tmp_path))
    result = result_with([SECTIONS[0]], {1: 2})
    submission = Submission(result.name, Path("/x"))
    result.digest = submission.digest
    store.save(result)
    assert store.load(submission).score == result.score
    path = store.path(result.name)
    forged = json.loads(path.read_text())
    forged["body"]["result"]["sections"][0]["score"] = 5
    path.write_text(json.dumps(forged))
    assert store.load(submission) is None, "changed by anyone but the grader"
    store.save(result)
    assert Store(tmp_path / "results", "key", Seal(tmp_path / "other")).load(submission) is None


def test_a_cache_file_the_grader_did_not_seal_is_removed(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "bilm-a.pt").write_bytes(b"trained")
    (cache / "bilm-b.pt").write_bytes(b"trained")
    seal = Seal(tmp_path)
    digests = {name: hashlib.sha256(b"trained").hexdigest()
               for name in ("bilm-a.pt", "bilm-b.pt")}
    save_sealed(tmp_path / "cache.json", seal, digests)
    (cache / "bilm-b.pt").write_bytes(b"poisoned")
    (cache / "bilm-c.pt").write_bytes(b"left by someone")
    Grader(tmp_path, [])._trusted_cache(seal, cache)
    assert sorted(p.name for p in cache.iterdir()) == ["bilm-a.pt"]
    assert load_sealed(tmp_path / "cache.json", seal) == digests


# --- a deadline, shared out -------------------------------------------------------------


def test_a_deadline_is_shared_by_the_sections_left_and_the_runs_at_once(tmp_path):
    grader = Grader(tmp_path, [], Limits(section_timeout_s=600), deadline_s=100)
    grader.slots, grader._deadline = 2, time.monotonic() + 100
    grader._waiting, grader._running = 8, 2  # ten sections to go, two of them running
    assert grader._share_of_time() == pytest.approx(100 * 2 / 10, abs=0.5)
    grader._waiting, grader._running = 0, 1
    assert grader._share_of_time() == pytest.approx(100, abs=0.5), "never past the deadline"
    grader._deadline = time.monotonic() - 1
    assert grader._share_of_time() < 0
    assert Grader(tmp_path, [])._share_of_time() is None
