"""The handout's GitHub Classroom workflow (`make classroom-workflow`, tools/classroom.py) and
the result each of its steps hands to Classroom's reporter (`course.classroom`). The workflow
cannot run here: its YAML is read as GitHub reads it, and each runner's output is checked in
the reporter's own terms (`reporter_points`, the sums of
classroom-resources/autograding-grading-reporter's NotifyClassroom and console table).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from course import classroom, concepts
from course.progress import section_points
from course.registry import ROOT, SECTIONS, find_section
from tools import classroom as workflow_tool
from tools import release
from tools.class_example import catalogue_known, generate

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)


def reporter_points(result: dict) -> tuple[float, float]:
    """(what the reporter posts to Classroom: the sum of the tests' scores, what its log
    shows: the tests passing of all times max_score) for one runner's result."""
    posted = 0
    for test in result["tests"]:
        posted += test["score"]
    passing = sum(t["status"] == "pass" for t in result["tests"])
    return posted, passing / len(result["tests"]) * result["max_score"]


@pytest.fixture(scope="module")
def shipped() -> dict:
    return yaml.safe_load(workflow_tool.WORKFLOW.read_text())


def test_the_shipped_workflow_is_the_one_course_toml_gives():
    assert workflow_tool.WORKFLOW.read_text() == workflow_tool.workflow(), \
        "run `make classroom-workflow`"
    assert workflow_tool.main(["--check"]) == 0


def test_the_job_is_the_one_classroom_reads_and_runs_on_push(shipped):
    assert list(shipped["jobs"]) == [workflow_tool.JOB] == ["run-autograding-tests"]
    assert "push" in shipped[True]  # YAML 1.1 reads the key `on` as true
    assert shipped["permissions"]["checks"] == "write"


def test_every_section_is_one_runner_with_its_points(shipped):
    steps = shipped["jobs"][workflow_tool.JOB]["steps"]
    runners = [s for s in steps if "id" in s]
    assert [s["id"] for s in runners] == [f"section{s.number}" for s in SECTIONS]
    for step, section in zip(runners, SECTIONS, strict=True):
        assert step["name"].startswith(f"Section {section.number}, {section.name}")
        assert step["name"].endswith(f": {section.points} points")
        assert f"make test SECTION={section.number} " in step["run"]
        assert f"-m course.classroom {section.number} " in step["run"]
        assert '>> "$GITHUB_OUTPUT"' in step["run"]
    assert sum(s.points for s in SECTIONS if not s.bonus) == 100


def test_the_environment_is_installed_as_the_handout_s_makefile_does(shipped):
    steps = shipped["jobs"][workflow_tool.JOB]["steps"]
    runs = [s.get("run", "") for s in steps]
    first_runner = next(i for i, s in enumerate(steps) if "id" in s)
    assert "make install" in runs[:first_runner]
    assert "python3 -m venv .venv" in (ROOT / "course" / "learner.mk").read_text()


def test_the_reporter_reads_every_runner_and_only_them(shipped):
    steps = shipped["jobs"][workflow_tool.JOB]["steps"]
    reporter = steps[-1]
    assert reporter["uses"] == "classroom-resources/autograding-grading-reporter@v1"
    assert reporter["if"] == "always()"
    ids = [s["id"] for s in steps if "id" in s]
    runners = reporter["with"]["runners"].split(",")
    assert runners == ids
    assert all(r.isalnum() for r in runners)  # the reporter's pattern: [a-zA-Z0-9]+ each
    assert reporter["env"] == {f"{r.upper()}_RESULTS": f"${{{{ steps.{r}.outputs.result }}}}"
                               for r in runners}


def test_the_handout_ships_the_workflow():
    files = release.handout_files()
    assert files[".github/workflows/classroom.yml"] == workflow_tool.WORKFLOW.read_bytes()
    assert not release.foreign_mentions(workflow_tool.WORKFLOW.parent)


# --- the runner's output ------------------------------------------------------------------


def run_section(impl: str, section: int, results: Path) -> dict:
    """The section's tests on `impl` (as `make test SECTION=` runs them), then the runner's
    output as the workflow's step writes it to $GITHUB_OUTPUT, decoded."""
    subprocess.run([sys.executable, "-m", "pytest", "tests/sections", "--impl", impl,
                    "--section", str(section), "--results-json", str(results)],
                   cwd=ROOT, capture_output=True, timeout=300)
    out = subprocess.run([sys.executable, "-m", "course.classroom", str(section), str(results)],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    key, _, value = out.stdout.strip().partition("=")
    assert key == "result" and "\n" not in out.stdout.strip()
    return classroom.decoded(value)


def test_the_reference_earns_the_section_s_points_in_the_reporter_s_format(tmp_path):
    """Section 1, the cheapest (its tests take about a second)."""
    result = run_section("solutions", 1, tmp_path / "results.json")
    records = json.loads((tmp_path / "results.json").read_text())
    assert result["version"] == 1 and result["status"] == "pass"
    assert result["max_score"] == find_section(1).points
    assert len(result["tests"]) == len(records) > 1
    for test in result["tests"]:
        assert set(test) == {"name", "status", "score", "message", "test_code", "filename",
                             "line_no", "duration"}
        assert test["status"] == "pass" and test["filename"] == "test_s1_setup.py"
    points = find_section(1).points
    assert reporter_points(result) == pytest.approx((points, points))


def test_a_stub_earns_nothing_and_says_what_is_missing(tmp_path):
    result = run_section("exercises", 1, tmp_path / "results.json")
    assert result["status"] == "fail" and result["max_score"] == find_section(1).points
    assert {t["status"] for t in result["tests"]} == {"fail"}
    assert all(t["message"].startswith("not implemented") for t in result["tests"])
    assert reporter_points(result) == (0, 0)


def test_partial_credit_is_the_section_s_points_shared_by_its_tests():
    section = find_section("layer_weights")
    records = [{"section": section.number, "name": f"t{i}", "status": status, "message": ""}
               for i, status in enumerate(["passed", "failed", "passed", "timeout",
                                           "not implemented", "error", "passed"])]
    result = classroom.runner_result(section, records + [{**records[0], "section": 1}])
    earned = section.points * 3 / 7
    assert reporter_points(result) == pytest.approx((earned, earned))
    assert result["status"] == "fail"


def test_a_test_of_a_weighted_concept_is_as_many_entries_as_its_weight():
    """Section 1 with its device tests weighing 2 each (course.toml's `weights`): the
    reporter's sum and its count of passing entries both give section_points."""
    section = dataclasses.replace(find_section(1), weights=(("device-choice", 2),))
    device = next(c for c in concepts.of_section(1) if c.id == "device-choice").tests
    others = [t for c in concepts.of_section(1) if c.id != "device-choice" for t in c.tests]
    records = [{"section": 1, "name": name, "status": status, "message": ""}
               for names, status in ((device, "passed"), (others, "failed")) for name in names]
    result = classroom.runner_result(section, records)
    assert len(result["tests"]) == 2 * len(device) + len(others)
    earned = section.points * 2 * len(device) / (2 * len(device) + len(others))
    assert earned == section_points(section, [(r["name"], r["status"] == "passed")
                                              for r in records])
    assert reporter_points(result) == pytest.approx((earned, earned))


def test_a_run_that_left_no_records_is_an_error_worth_nothing(tmp_path):
    for records in (None, [], [{"section": 1, "name": "other", "status": "passed"}]):
        result = classroom.runner_result(find_section(2), records)
        assert result["status"] == "error" and result["max_score"] == find_section(2).points
        assert reporter_points(result) == (0, 0)  # one entry: no division by zero
    out = subprocess.run([sys.executable, "-m", "course.classroom", "2",
                          str(tmp_path / "missing.json")], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True)
    assert classroom.decoded(out.stdout.partition("=")[2])["status"] == "error"


def test_on_a_generated_class_the_reporter_gives_every_section_the_grader_s_points():
    """The generated class of 30 (tools/class_example.py: complete, mistaken, unfinished),
    each submission's section records handed to the reporter as its runner hands them: what
    the reporter posts and what its log shows are the section's score as the grader gives it."""
    graded = 0
    for synthetic in generate(catalogue_known(), size=30, seed=2, unfinished=0.3):
        for section in synthetic.result.sections:
            records = [{"section": section.number, "name": t.name, "status": t.status,
                        "message": t.message} for t in section.tests]
            result = classroom.runner_result(find_section(section.number), records)
            assert reporter_points(result) == pytest.approx((section.score, section.score)), (
                synthetic.result.name, section.number)
            graded += 1
    assert graded == 30 * len(SECTIONS)
