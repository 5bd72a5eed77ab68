"""Progress that remembers: the learner's state (`course.state`) keeps every section's last
result; the table (`course.progress`) shows it, with when it ran, "changed since" and the
hints used; "Next" is the first section not done, in course order."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import shutil
import subprocess

import pytest

from course import concepts, progress
from course.progress import NOT_IMPLEMENTED, PASSED, from_state, next_step, render, table
from course.registry import ROOT, SECTIONS, find_section
from course.state import State, module_digest

NOW = datetime.datetime(2026, 12, 3, 18, 0, tzinfo=datetime.UTC)


def records(section: int, statuses: list[str], impl, ran_at: str = "2026-12-03T17:58:00+00:00"):
    """Records of a run of `section`, as `course.results` writes them."""
    module = impl / SECTIONS[section - 1].file_name
    return [{"nodeid": f"t{section}::test_{i}", "section": section, "name": f"test_{i}",
             "checks": "", "status": status, "message": "", "concept": None,
             "ran_at": ran_at, "module_digest": module_digest(module)}
            for i, status in enumerate(statuses)]


@pytest.fixture
def impl(tmp_path):
    folder = tmp_path / "impl"
    shutil.copytree(ROOT / "exercises", folder)
    return folder


def rows(state, impl) -> dict[int, str]:
    lines = table(from_state(state, impl), NOW).splitlines()[1:-1]
    return {s.number: line for s, line in zip(SECTIONS, lines, strict=True)}


def test_a_run_of_one_section_keeps_the_others(impl, tmp_path):
    state = State(tmp_path / "progress.json")
    assert state.record_run(records(1, [PASSED] * 3, impl), impl) == [1]
    state.save()
    state = State.load(tmp_path / "progress.json")
    assert state.record_run(records(2, [NOT_IMPLEMENTED] * 2, impl), impl) == [2]
    shown = rows(state, impl)
    points = f"{SECTIONS[0].points}/{SECTIONS[0].points}"
    assert shown[1].split()[:4] == ["1", "setup", "3/3", points] and shown[1].endswith("done")
    assert "2 min ago" in shown[1]
    assert shown[2].endswith("not implemented yet") and shown[3].endswith("not run")
    state.record_run(records(1, [PASSED, NOT_IMPLEMENTED], impl), impl)
    assert rows(state, impl)[1].split()[2] == "1/2", "a new run replaces the section's records"


def test_another_implementation_has_a_state_of_its_own(impl, tmp_path):
    state = State(tmp_path / "progress.json")
    state.record_run(records(1, [PASSED], impl), impl)
    other = tmp_path / "other"
    shutil.copytree(impl, other)
    assert rows(state, other)[1].endswith("not run")


def test_an_edit_after_the_run_shows_as_changed_since_and_a_touch_does_not(impl, tmp_path):
    state = State(tmp_path / "progress.json")
    state.record_run(records(1, [PASSED] * 2, impl), impl)
    module = impl / "s1_setup.py"
    os.utime(module, (0, 0))  # a new time, the same bytes
    assert not from_state(state, impl)[0].changed
    module.write_text(module.read_text() + "\n# edited\n")
    first = from_state(state, impl)[0]
    assert first.changed and rows(state, impl)[1].endswith("done; changed since")
    assert "changed since their last run: section 1" in next_step(from_state(state, impl), impl)


def test_next_is_the_first_section_not_done_in_course_order(impl, tmp_path):
    """Section 4 unfinished, 5 and 6 done, 1-3 done: Next is 4, never 6; with nothing run
    before it, Next is the first section not run."""
    state = State(tmp_path / "progress.json")
    for number in (1, 2, 3, 5, 6):
        state.record_run(records(number, [PASSED], impl), impl)
    state.record_run(records(4, [PASSED, "failed"], impl), impl)
    step = next_step(from_state(state, impl), impl)
    assert step.startswith("Next: section 4 (pretrain)") and "make hint SECTION=4" in step
    fresh = State(tmp_path / "other.json")
    fresh.record_run(records(3, [PASSED], impl), impl)
    step = next_step(from_state(fresh, impl), impl)
    assert step.startswith("Next: section 1 (setup)") and "not run yet" in step


def test_the_hints_used_show_in_the_table(impl, tmp_path):
    state = State(tmp_path / "progress.json")
    state.record_run(records(3, [NOT_IMPLEMENTED], impl), impl)
    state.show_hint(3, "BiLM.forward")
    state.show_hint(3, "BiLM.forward")
    state.show_hint(1, "set_seed")
    shown = rows(state, impl)
    assert shown[3].endswith("not implemented yet; 2 hints used"), shown[3]
    assert shown[1].endswith("not run; 1 hint used"), shown[1]


def test_a_section_s_points_are_shared_by_its_tests_in_proportion_to_their_weights():
    """Section 1 with its device tests weighing 3 each (course.toml's `weights`): they earn
    3 shares each, every other test 1; unweighted, every test earns 1 share. A parametrized
    test weighs as its function's concept, and a test of no concept weighs 1."""
    setup = SECTIONS[0]
    weighted = dataclasses.replace(setup, weights=(("device-choice", 3),))
    device = next(c for c in concepts.of_section(1) if c.id == "device-choice").tests
    others = [t for c in concepts.of_section(1) if c.id != "device-choice" for t in c.tests]
    only_device = [(t, True) for t in device] + [(t, False) for t in others]
    shares = 3 * len(device) + len(others)
    assert progress.section_points(weighted, only_device) == pytest.approx(
        setup.points * 3 * len(device) / shares)
    assert progress.section_points(setup, only_device) == pytest.approx(
        setup.points * len(device) / (len(device) + len(others)))
    assert progress.weight_of(weighted, f"{device[0]}[cuda available]") == 3
    assert progress.weight_of(weighted, "test_of_no_concept") == 1
    assert progress.section_points(weighted, [(t, True) for t in (*device, *others)]) == (
        setup.points)
    assert progress.section_points(weighted, []) == 0
    records = [{"section": 1, "name": t, "status": PASSED if ok else "failed"}
               for t, ok in only_device]
    assert progress.SectionProgress(weighted, tuple(records)).points == (
        progress.section_points(weighted, only_device)), "the table scores by it"


def test_a_broken_state_file_is_set_aside(tmp_path):
    path = tmp_path / "progress.json"
    path.write_text("{not json")
    state = State.load(path)
    assert state.runs == {} and (tmp_path / "progress.json.broken").exists()


def test_the_time_since_a_run_reads_as_a_learner_says_it():
    ago = progress.ago
    assert ago("2026-12-03T17:59:30+00:00", NOW) == "just now"
    assert ago("2026-12-03T17:55:00+00:00", NOW) == "5 min ago"
    assert ago("2026-12-03T15:00:00+00:00", NOW) == "3 h ago"
    assert ago("2026-12-02T17:00:00+00:00", NOW) == "1 day ago"
    assert ago("", NOW) == "-" and ago("never", NOW) == "-"


def test_a_passed_section_of_this_run_shows_the_lines_its_run_wrote(impl, tmp_path):
    """What the learner's own code computes comes after the table and the next step, for
    each section that passed in this run, and only those; the lines are the run's own."""
    state = State(tmp_path / "progress.json")
    state.record_run(records(1, [PASSED], impl), impl)
    state.record_run(records(2, [PASSED], impl), impl)
    state.record_run(records(3, ["failed"], impl), impl)
    shown = {1: ["your seed: 1 test"], 2: ["not this run"], 3: ["not passed"]}
    text = render(from_state(state, impl), impl, ran=[1, 3], now=NOW, your_elmo=shown)
    assert text.endswith("Your ELMo, section 1 (setup):\n  your seed: 1 test"), text[-300:]
    assert "not this run" not in text and "not passed" not in text


def test_only_the_lines_of_the_run_just_recorded_are_read(tmp_path):
    path = tmp_path / "your-elmo.json"
    path.write_text(json.dumps({"ran_at": "2026-12-03T18:00:00+00:00",
                                "sections": {"2": ["your vocabulary: 30 entries"]}}))
    assert progress.read_your_elmo(path, "2026-12-03T18:00:00+00:00") == {
        2: ["your vocabulary: 30 entries"]}
    assert progress.read_your_elmo(path, "2026-12-03T17:00:00+00:00") == {}  # an older run's
    path.write_text("{not json")
    assert progress.read_your_elmo(path, "2026-12-03T18:00:00+00:00") == {}
    assert progress.read_your_elmo(tmp_path / "missing.json", "") == {}


def test_make_test_section_collects_only_that_sections_file():
    """`make test SECTION=n` hands pytest the section's own test file, by number or name."""
    for key in ("3", "bilm", "s3_bilm"):
        run = subprocess.run(["make", "-n", "--no-print-directory", "-o", ".venv/.installed",
                              "test", f"SECTION={key}"], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
        command = run.stdout.split("; status=")[0]
        assert f" {find_section('bilm').test_file.relative_to(ROOT)} " in command, command
        assert " tests/sections " not in command, command
    unknown = subprocess.run(["make", "-n", "-o", ".venv/.installed", "test", "SECTION=lstm"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert " tests/sections " in unknown.stdout and "--section lstm" in unknown.stdout
