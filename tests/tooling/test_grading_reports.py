"""What the grader makes of a run and reports, apart from running anything: the typed stream a
run writes and what makes it untrusted, the words of a result (the grader's, never the run's),
scores and a bonus kept apart from the 100, names that cannot collide, cells a spreadsheet
never runs, text a terminal never obeys, stored results, a deadline shared out fairly, and
the static scan of a module.
"""

from __future__ import annotations

import csv
import io
import json
import signal
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

from course.registry import SECTIONS, Section
from course.results import FAILED, NOT_IMPLEMENTED, PASSED
from grading.grader import Grader
from grading.outputs import csv_report, gradescope_report, shown, spreadsheet_cell, table
from grading.records import read_stream
from grading.sandbox import Limits, Outcome
from grading.scan import scan_module
from grading.scoring import SubmissionResult, score_section
from grading.store import Store
from grading.submissions import Submission, read_submission, unique_names

COURSE = [s for s in SECTIONS if not s.bonus]
BONUS = Section(8, "extra", "s8_extra", "A bonus", 5, "08_extra.ipynb", "a question?",
                bonus=True)
NODEIDS = [f"tests/sections/test_s1_setup.py::test_{n}" for n in ("a", "b", "c")]
EXITED = {code: code << 8 for code in (0, 1, 3)}  # wait statuses


def line(kind: str, **fields) -> bytes:
    return (json.dumps({"kind": kind, **fields}) + "\n").encode()


def record(nodeid: str, status: str = PASSED, error: str = "", at: int | None = None,
           errno: str | None = None, digest: str | None = None, **extra) -> bytes:
    return line("test", nodeid=nodeid, status=status, error=error, line=at, errno=errno,
                digest=digest, **extra)


def stream(*tests: bytes, end: int | None = 0) -> bytes:
    return line("begin") + b"".join(tests) + (line("end", exitstatus=end) if end is not None
                                             else b"")


# --- the stream: typed, bounded, and what makes it untrusted -----------------------------


ALL_PASS = stream(*(record(n) for n in NODEIDS))


@pytest.mark.parametrize("data, overflowed, status, why", [
    (ALL_PASS, True, EXITED[0], "more to the grader"),  # a flood
    (stream(*(record(n) for n in NODEIDS), line("note", detail="award full marks")),
     False, EXITED[0], "does not"),  # a note of a kind the grader does not know
    (stream(record(NODEIDS[0], key="stolen"), end=1), False, EXITED[1], "does not"),
    (stream(record("tests/sections/test_s1_setup.py::def set_seed(): ..."), end=1), False,
     EXITED[1], "the course does not have"),  # a name of the run's choosing
    (stream(record(NODEIDS[0]), record(NODEIDS[0], FAILED, "AssertionError"), end=1), False,
     EXITED[1], "twice"),  # a forged record beside the plugin's
    (stream(*(record(n) for n in NODEIDS), end=None), False, EXITED[0], "without"),  # cut
    (stream(record(NODEIDS[0]), end=None), False, EXITED[3], "without"),  # os._exit(3)
    (stream(*(record(n) for n in NODEIDS), end=0), False, EXITED[1], "disagree"),
    (stream(*(record(n) for n in NODEIDS), end=1), False, EXITED[1], "disagree"),  # patched
    (ALL_PASS + line("end", exitstatus=0), False, EXITED[0], "does not"),  # after its end
    (ALL_PASS + b'{"kind": "te', False, EXITED[0], "cut short"),
    (stream(record(NODEIDS[0], FAILED, "AssertionError", example="test_x(x=1)"), end=1),
     False, EXITED[1], "does not"),  # a field the plugin never writes
    (stream(record(NODEIDS[0]), line("act", nodeid=NODEIDS[0], index=0, data=1),
            line("act", nodeid=NODEIDS[0], index=0, data=2), end=0), False, EXITED[0],
     "twice"),  # a case's data twice
    (stream(record(NODEIDS[0]), line("act", nodeid="other::test", index=0, data=1), end=0),
     False, EXITED[0], "does not ask for"),  # data of a test the course does not have
    (stream(record(NODEIDS[0], FAILED, "AssertionError", digest="the reference: def f()"),
            end=1), False, EXITED[1], "does not"),  # text where a digest goes
    (stream(record(NODEIDS[0], FAILED, "AssertionError", digest="0123456789ABCDEF"), end=1),
     False, EXITED[1], "does not"),  # not course.diagnose's form
    (stream(record(NODEIDS[0], "error", "OSError", errno=123456789), end=1), False, EXITED[1],
     "does not"),  # an errno is a name of the errno module, never a number of the run's
    (stream(record(NODEIDS[0], "error", "OSError", errno="E-seed-1234"), end=1), False,
     EXITED[1], "does not"),  # nor a name of its own
])
def test_a_stream_that_is_not_the_plugin_s_is_untrusted(data, overflowed, status, why):
    found = read_stream(data, overflowed, NODEIDS, status)
    assert found.untrusted and why in found.untrusted, found.untrusted


def test_a_crash_is_not_untrusted_and_keeps_what_it_recorded():
    for status in (signal.SIGSEGV, signal.SIGKILL):  # a fault; a limit
        found = read_stream(stream(record(NODEIDS[0]), end=None) + b'{"kind"', False, NODEIDS,
                            status)
        assert found.untrusted is None and set(found.tests) == {NODEIDS[0]}
    assert read_stream(ALL_PASS, False, NODEIDS, EXITED[0]).untrusted is None


def scored(data: bytes, source: bytes = b"", status: int = EXITED[1], section=SECTIONS[0],
           nodeids=NODEIDS, **fields):
    run = Outcome(status=status, records=data, **fields)
    return score_section(section, nodeids, read_stream(data, run.overflowed, nodeids, status),
                         run, source, [])


def test_a_result_s_words_are_the_grader_s_and_the_learner_s_own_line():
    source = b"import torch\nimport numpi\n"
    result = scored(stream(record(NODEIDS[0]), record(NODEIDS[1], FAILED, "AssertionError"),
                           record(NODEIDS[2], "error", "ModuleNotFoundError", 2), end=1), source)
    assert [t.message for t in result.tests] == [
        "", "failed: AssertionError in the test's checks",
        "error: ModuleNotFoundError at s1_setup.py line 2: `import numpi`"]
    assert result.score == pytest.approx(SECTIONS[0].points / 3) and result.status == "error"
    written = scored(stream(record(NODEIDS[0], "error", "OSError", None, "EFBIG"), end=None))
    assert "[EFBIG: File too large]" in written.tests[0].message


def test_tests_a_crash_or_the_time_limit_kept_from_finishing_are_lost():
    crashed = scored(stream(record(NODEIDS[0]), end=None), b"x = 1\ny = f(x)\n",
                     signal.SIGSEGV, output_tail='File "/scratch/7/impl/s1_setup.py", line 2')
    assert [t.status for t in crashed.tests] == [PASSED, "error", "error"]
    assert crashed.reason == ("the test process crashed with a segmentation fault (SIGSEGV) "
                              "during test_b; 2 of 3 tests lost (at s1_setup.py line 2: "
                              "`y = f(x)`)")
    late = scored(stream(record(NODEIDS[0]), end=None), status=signal.SIGKILL, timed_out=True,
                  timeout_s=5)
    assert [t.status for t in late.tests] == [PASSED, "timeout", "timeout"]
    assert "ran past its 5 s limit during test_b" in late.reason


def test_an_untrusted_run_earns_nothing_and_says_why():
    result = scored(ALL_PASS, status=EXITED[0], overflowed=True)
    assert result.score == 0 and result.reason.startswith("flagged, no credit: untrusted-run")


# --- scores, a bonus, and the reports ------------------------------------------------------


def result_with(sections: list[Section], passing: dict[int, int]) -> SubmissionResult:
    """A submission whose section N passes passing[N] of its 4 tests."""
    results = []
    for section in sections:
        nodeids = [f"tests/sections/test_{section.module}.py::test_{i}" for i in range(4)]
        done = passing[section.number]
        data = stream(*(record(n) if i < done else record(n, NOT_IMPLEMENTED, "NotImplementedError")
                        for i, n in enumerate(nodeids)), end=int(done < 4))
        results.append(scored(data, status=EXITED[int(done < 4)], section=section, nodeids=nodeids))
    return SubmissionResult("=2+3", "/x", "d", results)


def test_a_bonus_section_is_shown_and_counted_apart_from_the_100():
    sections = [*COURSE, BONUS]
    result = result_with(sections, {s.number: 4 for s in COURSE} | {8: 2})
    assert (result.score, result.max_score, result.bonus_score, result.bonus_max) == (
        100, 100, 2.5, 5)
    assert "8 extra (bonus)" in table([result], sections)
    assert "100/100 + 2.5/5 bonus" in table([result], sections)
    row = list(csv.DictReader(io.StringIO(csv_report([result], sections))))[0]
    assert (row["8_extra_bonus"], row["total"], row["bonus"], row["bonus_max"]) == (
        "2.5", "100.0", "2.5", "5")
    data = json.loads(gradescope_report(result, "after_published"))
    assert data["score"] == 102.5 == sum(t["score"] for t in data["tests"])
    assert sum(t["max_score"] for t in data["tests"]) == 105
    assert data["visibility"] == "after_published" and [t["status"] for t in data["tests"]] == [
        "passed"] * len(COURSE) + ["failed"]
    assert data["tests"][-1]["tags"] == ["extra", "bonus"]
    header = csv_report([result_with(COURSE, {s.number: 1 for s in COURSE})], COURSE)
    assert "bonus" not in header.splitlines()[0], "no bonus column where none is graded"


def test_a_spreadsheet_never_runs_a_cell_nor_a_terminal_a_name():
    for cell in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", " =1"):
        assert spreadsheet_cell(cell).startswith("'"), cell
    assert spreadsheet_cell("alice") == "alice" and spreadsheet_cell(-1.5) == -1.5
    text = "ok\x1b[2J\x1b]0;title\x07\r\u202e\u200bnext\nline\tend"
    assert shown(text) == "ok\ufffd[2J\ufffd]0;title\ufffd\ufffd\ufffd\ufffdnext line end"


# --- names, links, the store, a deadline -------------------------------------------------


def named(*paths: Path) -> list[str]:
    submissions = [read_submission(p) for p in paths]
    unique_names(submissions)
    return [s.name for s in submissions]


def test_names_are_unique_by_path_and_never_made_up(tmp_path):
    for folder in ("a/alice", "b/alice", "alice-2", "c/alice", "ann", "bo"):
        (tmp_path / folder).mkdir(parents=True)
    for zipped in ("c/alice.zip", "ann/submission.zip", "bo/submission.zip"):
        with zipfile.ZipFile(tmp_path / zipped, "w") as archive:
            archive.writestr("exercises/s1_setup.py", "")
    assert named(*(tmp_path / p for p in ("a/alice", "b/alice", "alice-2", "c/alice",
                                          "c/alice.zip"))) == [
        "a/alice", "b/alice", "alice-2", "c/alice", "alice.zip"]
    assert named(tmp_path / "ann", tmp_path / "bo") == ["ann", "bo"]
    with pytest.raises(ValueError, match="named twice"):
        named(tmp_path / "ann", tmp_path / "ann")


def test_a_result_is_stored_for_the_same_bytes_under_the_same_settings_only(tmp_path):
    result = result_with([SECTIONS[0]], {1: 2})
    submission = Submission(result.name, Path("/x"))
    result.digest = submission.digest
    Store(tmp_path, "key").save(result)
    assert Store(tmp_path, "key").load(submission).score == result.score
    assert Store(tmp_path, "other settings").load(submission) is None
    submission.modules["s1_setup.py"] = b"changed"
    assert Store(tmp_path, "key").load(submission) is None
    Store(tmp_path, "key").path(result.name).write_text("{")
    assert Store(tmp_path, "key").load(Submission(result.name, Path("/x"))) is None


def test_the_settings_key_follows_the_course_sections_limits_and_isolation(tmp_path):
    def key(sections=SECTIONS[:1], limits=None, isolation="bwrap"):
        return Grader(tmp_path, list(sections), limits or Limits(test_timeout_s=3),
                      isolation).settings_key

    assert key() == key(limits=Limits(test_timeout_s=3.0))
    assert key() not in (key(SECTIONS[:2]), key(limits=Limits()), key(isolation="none"))
    changed = Grader(tmp_path, SECTIONS[:1], Limits(test_timeout_s=3))
    changed.pristine.files["tests/sections/test_s1_setup.py"] += b"\n"
    assert changed.settings_key != key()


def test_a_preparation_is_kept_for_the_same_course_and_cache_only(tmp_path, monkeypatch):
    children = []

    def prepare_child(argv, **kwargs):  # stands for `python -m grading.prepare OUT`
        children.append(argv)
        (tmp_path / "cache" / "bilm.pt").write_bytes(b"weights")
        Path(argv[-1]).write_text(json.dumps({"tests": {"1": NODEIDS},
                                              "cache_files": ["bilm.pt"], "judged": {}}))
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr("grading.grader.subprocess.run", prepare_child)

    def prepared(course_changed: bool = False) -> dict[int, list[str]]:
        grader = Grader(tmp_path, SECTIONS[:1])
        if course_changed:
            grader.pristine.files["tests/sections/test_s1_setup.py"] += b"\n"
        grader.prepare(check_isolation=False)
        grader.close()
        return grader.tests

    assert prepared() == prepared() == {1: NODEIDS} and len(children) == 1
    prepared(course_changed=True)
    assert len(children) == 2, "another course is prepared anew"
    (tmp_path / "cache" / "bilm.pt").unlink()
    prepared()
    assert len(children) == 3, "a preparation whose cache is gone is made again"


def test_a_deadline_is_shared_by_the_sections_left_and_the_runs_at_once(tmp_path):
    grader = Grader(tmp_path, [], deadline_s=100)
    grader.sandbox = type("Slots", (), {"slots": 2})()
    grader._deadline = time.monotonic() + 100
    grader._waiting, grader._running = 8, 2  # ten sections to go, two of them running
    assert grader._share_of_time() == pytest.approx(100 * 2 / 10, abs=0.5)
    grader._waiting, grader._running = 0, 1
    assert grader._share_of_time() == pytest.approx(100, abs=0.5), "never past the deadline"
    grader._deadline = time.monotonic() - 1
    assert grader._share_of_time() < 0


# --- the static scan -----------------------------------------------------------------------


def flags(source: str) -> set[tuple[str, str]]:
    return {(f.kind, f.detail) for f in scan_module(source.encode(), 1)}


def test_the_reference_and_the_stubs_raise_no_flag():
    for folder in ("solutions", "exercises"):
        for path in sorted(Path(folder).glob("s*.py")):
            assert scan_module(path.read_bytes(), 1) == [], path


def test_the_scan_flags_what_a_section_never_needs():
    found = flags(
        "import os, sys\nimport torch as t\nfrom torch.nn import functional as F\n"
        "from solutions import s1_setup\nimport numpi\nt.allclose = None\nF.relu = None\n"
        "t.backends.cudnn.deterministic = True\nos.environ['X'] = '1'\nos.dup2(1, 3)\n"
        "open(3, 'w')\nexec('x')\nf = getattr(t, name)\ng = lambda: 0\nh = g.__closure__\n"
        "t._C\nclass Always(list):\n    def __eq__(self, other):\n        return True\n"
        "Sneaky = type('S', (t.Tensor,), {})\nfrom .. import grading\n"
        "import logging, hypothesis\nimport numpy as np\nnp.testing.assert_allclose\n")
    assert found == {
        ("forbidden-import", "line 1: import os, sys"),
        ("forbidden-import", "line 4: from solutions import s1_setup"),
        ("monkeypatch", "line 6: changes t.allclose"), ("monkeypatch", "line 7: changes F.relu"),
        ("reaches-internals", "line 10: uses os.dup2"), ("reaches-internals", "line 12: uses exec"),
        ("reaches-internals", "line 13: calls getattr(t, name)"),
        ("reaches-internals", "line 15: reads .__closure__"),
        ("reaches-internals", "line 16: uses torch._C"),
        ("forges-values", "line 17: Always subclasses list"),
        ("forges-values", "line 18: Always defines __eq__"),
        ("forges-values", "line 20: makes a class with type(name, bases, dict)"),
        ("forbidden-import", "line 21: from .. import grading"),
        ("forbidden-import", "line 22: import logging, hypothesis"),  # frames, inner tests
        ("reaches-internals", "line 24: uses numpy.testing.assert_allclose")}


def test_the_scan_reads_the_source_in_its_declared_encoding():
    """In UTF-7, `+AAo-` is a newline: Python runs the import a UTF-8 reader sees as a comment."""
    (flag,) = scan_module(b"# coding: utf-7\nx = 1  # +AAo-import subprocess\n", 1)
    assert flag.kind == "forbidden-import" and "import subprocess" in flag.detail



def test_the_scan_does_not_see_a_way_in_through_an_allowed_module():
    """What the scan reads is names as the source writes them: the same objects reached
    through an allowed module's own attributes, or named by a string an allowed function
    looks up, raise no flag. docs/instructors.md says so; this test holds the docs to it."""
    assert flags("import pathlib, operator\nfork = pathlib.os.fork\nmodules = pathlib.sys.modules\n"
                 "plugins = operator.attrgetter('sys.modules')(pathlib)\n") == set()
