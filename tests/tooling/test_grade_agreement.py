"""Every grade a submission gets is the same grade: a learner's `make grade` table
(`course.progress`), `python -m grading`'s JSON, its Gradescope results.json and the GitHub
Classroom runners (the shipped workflow's steps, run as GitHub runs them, read as its reporter
sums them) give the same points per section, and the grader's Canvas CSV (`--canvas`) their
total.

The submissions: the reference, and one with two catalogued mistakes
(`tools.mistakes.make_copy`), one in each of sections 1 and 2, each in a handout-like layout:
a released handout whose `exercises/` holds the reference's modules of sections 1, 2 and 5
(the stubs elsewhere), the mistaken one with each mistake's module in place of its own.
Section 5 reads a biLM, and the learner's sections 3 and 4 are stubs: its tests run the
fakes of the other sections, so the table gives it what the grader gives. Only sections 1,
2 and 5 are graded, the cheap ones (a few seconds each): sections 3, 4 and 8 train biLMs of
the learner's, and would take minutes per submission on two shared cores. Most of its time
is the six pytest runs per submission (a `make grade` and a Classroom step per section). The
handouts use this repository's environment (a link to it as their `.venv`), so nothing is
installed.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from course import classroom
from course.registry import ROOT, find_section
from tests.tooling.test_classroom import reporter_points
from tests.tooling.test_grading import ISOLATION
from tools import classroom as workflow_tool
from tools import mistakes, release

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)

SECTIONS_GRADED = (find_section(1), find_section(2), find_section("extract"))
MISTAKES = ("numpy-not-seeded", "unknown-word-raises")  # a wrong answer; an exception
TABLE_ROW = re.compile(r"^\s*(?P<number>\d+) \w+(?: \(bonus\))?\s+\S+\s+(?P<points>[\d.]+)/\d+",
                       re.M)


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if k not in ("SECTION", "MAKEFLAGS", "MAKELEVEL", "ELMO_IMPL", "RESULTS")}


def learner_copy(handout: Path, folder: Path, modules: dict[str, Path]) -> Path:
    """A copy of the handout whose exercises/ holds `modules` ({file name: source file})."""
    shutil.copytree(handout, folder, symlinks=True)
    for name, source in modules.items():
        shutil.copy(source, folder / "exercises" / name)
    return folder


@pytest.fixture(scope="module")
def submissions(tmp_path_factory) -> dict[str, Path]:
    """{name: its handout-like folder}, the environment linked in."""
    scratch = tmp_path_factory.mktemp("agreement")
    handout = scratch / "handout"
    release.build(handout)
    os.utime(handout / "requirements" / "learner.lock", (0, 0))  # older than the venv's stamp
    (handout / ".venv").symlink_to(Path(sys.prefix))
    assert (handout / ".venv" / ".installed").exists(), "the environment has no install stamp"
    reference = {s.file_name: ROOT / "solutions" / s.file_name for s in SECTIONS_GRADED}
    catalogue = {m.id: m for m in mistakes.load_catalogue()}
    mistaken = dict(reference)
    for mistake_id in MISTAKES:
        mistake = catalogue[mistake_id]
        copy = mistakes.make_copy(mistake, scratch / "copies" / mistake_id)
        mistaken[mistake.section.file_name] = copy / mistake.section.file_name
    return {"reference": learner_copy(handout, scratch / "reference", reference),
            "mistaken": learner_copy(handout, scratch / "mistaken", mistaken)}


def make_grade_table(folder: Path) -> dict[int, float]:
    """The learner's way: `make grade SECTION=n` for each section; the points of the table
    that the last one shows (the table remembers the earlier runs)."""
    for section in SECTIONS_GRADED:
        run = subprocess.run(["make", "--no-print-directory", "grade",
                              f"SECTION={section.number}"], cwd=folder, env=clean_env(),
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
    rows = {int(m["number"]): float(m["points"]) for m in TABLE_ROW.finditer(run.stdout)}
    return {s.number: rows[s.number] for s in SECTIONS_GRADED}


def classroom_runners(folder: Path) -> dict[int, tuple[float, float]]:
    """The shipped workflow's step of each section, run as GitHub runs a `run:` step (bash -e,
    $GITHUB_OUTPUT a file); the points its reporter posts and shows for the output."""
    steps = yaml.safe_load(workflow_tool.WORKFLOW.read_text())["jobs"][workflow_tool.JOB]["steps"]
    found = {}
    for section in SECTIONS_GRADED:
        step = next(s for s in steps if s.get("id") == classroom.runner_id(section))
        output = folder / f"github-output-{section.number}"
        output.write_text("")
        subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                       cwd=folder, env={**clean_env(), "GITHUB_OUTPUT": str(output)},
                       capture_output=True, text=True, timeout=300, check=True)
        lines = dict(line.split("=", 1) for line in output.read_text().splitlines())
        found[section.number] = reporter_points(classroom.decoded(lines["result"]))
    return found


@pytest.fixture(scope="module")
def grades(submissions, tmp_path_factory, grading_work_dir) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("grades")
    # Its own, kept between sessions: test_grading's may be in use by another process.
    work = grading_work_dir("grade-agreement-tests")
    common = ["--sections", ",".join(str(s.number) for s in SECTIONS_GRADED), "--isolation",
              ISOLATION, "--work-dir", str(work), "--quiet"]

    def grading(*args: str) -> None:
        run = subprocess.run([sys.executable, "-m", "grading", *args, *common], cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stdout + run.stderr

    grading(*map(str, submissions.values()), "--json", str(out / "class.json"), "--fresh",
            "--canvas", str(out / "canvas.csv"))
    graded = {s["name"]: s for s in json.loads((out / "class.json").read_text())["submissions"]}
    canvas = list(csv.DictReader((out / "canvas.csv").open()))
    assert canvas[0]["Student"] == "Points Possible"
    assert float(canvas[0]["ELMo"]) == sum(s.points for s in SECTIONS_GRADED)
    totals = {row["SIS Login ID"]: float(row["ELMo"]) for row in canvas[1:]}
    found = {}
    for name, folder in submissions.items():
        grading(str(folder), "--gradescope", str(out / f"{name}.json"))  # from the stored results
        gradescope = json.loads((out / f"{name}.json").read_text())
        found[name] = {
            "grader": {s["number"]: s["score"] for s in graded[name]["sections"]},
            "gradescope": {int(t["number"]): t["score"] for t in gradescope["tests"]},
            "canvas": totals[name],
            "table": make_grade_table(folder),
            "classroom": classroom_runners(folder)}
    return found


@pytest.mark.slow
def test_every_output_gives_the_same_points_per_section(grades):
    """The grader's JSON and results.json exactly; Classroom to within float rounding (it
    adds the tests' shares); the table as it shows them, to one decimal; the Canvas CSV's
    total, to two decimals, is the sum of the sections'."""
    for name, found in grades.items():
        for section in SECTIONS_GRADED:
            n = section.number
            points = found["grader"][n]
            assert found["gradescope"][n] == points, (name, n)
            posted, shown = found["classroom"][n]
            assert posted == pytest.approx(points) and shown == pytest.approx(points), (name, n)
            assert found["table"][n] == round(points, 1), (name, n, found["table"])
        assert found["canvas"] == round(sum(found["grader"].values()), 2), name


@pytest.mark.slow
def test_the_reference_earns_everything_and_each_mistake_costs_its_section(grades):
    full = {s.number: float(s.points) for s in SECTIONS_GRADED}
    assert grades["reference"]["grader"] == full, "section 5 in full, sections 3-4 stubs"
    catalogue = {m.id: m for m in mistakes.load_catalogue()}
    mistaken = {catalogue[m].section.number for m in MISTAKES}
    assert mistaken == {1, 2}, "one in each of sections 1 and 2"
    scores = grades["mistaken"]["grader"]
    assert all(0 < scores[n] < full[n] if n in mistaken else scores[n] == full[n]
               for n in full), scores
