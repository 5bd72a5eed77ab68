"""The learner's loop in a released handout (`make release`), where there is no reference:
`make watch` reruns an edited section, the table remembers it across single-section runs,
`make hint` climbs the ladder and the table counts the hints, `make submission` holds only
the section modules, and every learner command says what it does in `make help`.

The steps run once, in a learner's order (the fixture `loop`); each test reads its part.
The handout uses this repository's environment (PY=), so nothing is installed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from course.registry import ROOT, SECTIONS
from tests.tooling.test_watch import READY, Watcher
from tools import release

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)

LEARNER_MK = ROOT / "course" / "learner.mk"


def make(handout: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("SECTION", "MAKEFLAGS", "MAKELEVEL", "ELMO_IMPL")}
    return subprocess.run(["make", "--no-print-directory", *args, f"PY={sys.executable}"],
                          cwd=handout, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def loop(tmp_path_factory) -> dict:
    handout = tmp_path_factory.mktemp("learner") / "handout"
    release.build(handout)
    (handout / ".venv").mkdir()
    (handout / ".venv" / ".installed").touch()  # installed, as after a first `make install`
    steps = {"handout": handout, "fresh": make(handout, "progress")}
    watcher = Watcher(["make", "--no-print-directory", "watch", f"PY={sys.executable}"], handout)
    try:
        watcher.wait_for(READY)
        shutil.copy(ROOT / "solutions" / "s1_setup.py", handout / "exercises" / "s1_setup.py")
        watcher.wait_for("Next: section 2 (corpus)")
    finally:
        steps["watch_exit"] = watcher.interrupt()
    steps["watch"] = watcher.output
    steps["test_2"] = make(handout, "test", "SECTION=2")
    steps["hints"] = [make(handout, "hint") for _ in range(2)]
    steps["progress"] = make(handout, "progress")
    steps["submission"] = make(handout, "submission")
    steps["help"] = make(handout, "help")
    return steps


def test_make_watch_reruns_the_saved_section_and_stops_cleanly_at_ctrl_c(loop):
    out = loop["watch"]
    assert "waiting for file events" in out
    assert out.count("saved: make test SECTION=") == 1 and "s1_setup.py saved" in out, out
    assert "10 passed" in out, out
    # make itself dies of the SIGINT it was sent, as make does; the watcher ends cleanly
    assert loop["watch_exit"] in (0, -2, 130) and "stopped watching" in out, out
    assert "Traceback" not in out and "Error" not in out, out


def table_row(output: str, number: int) -> str:
    return next(line for line in output.splitlines() if line.startswith(f"{number:2} "))


def test_the_table_remembers_a_section_across_single_section_runs(loop):
    fresh = loop["fresh"].stdout
    assert table_row(fresh, 1).endswith("not run") and "Next: section 1 (setup)" in fresh
    second = loop["test_2"]
    assert second.returncode == 2, second.stdout[-2000:]  # make: the stubs' tests fail
    setup = SECTIONS[0].points
    assert table_row(second.stdout, 1).split()[2:4] == ["10/10", f"{setup}/{setup}"], (
        second.stdout)
    assert table_row(second.stdout, 1).endswith("done")
    assert table_row(second.stdout, 2).endswith("not implemented yet")
    assert "Next: section 2 (corpus)" in second.stdout


def test_make_hint_climbs_the_ladder_and_the_table_counts_the_hints(loop):
    first, second = (run.stdout for run in loop["hints"])
    assert all(run.returncode == 0 for run in loop["hints"]), loop["hints"][0].stderr
    assert first.startswith("Hint 1 of 3 for tokenize (the concept), section 2 (corpus)"), first
    assert "tokenize is not implemented yet" in first
    assert second.startswith("Hint 2 of 3 for tokenize (the approach)"), second
    assert table_row(loop["progress"].stdout, 2).endswith("not implemented yet; 2 hints used")


def test_make_submission_holds_only_the_section_modules(loop):
    assert loop["submission"].returncode == 0, loop["submission"].stderr
    with zipfile.ZipFile(loop["handout"] / "submission.zip") as archive:
        names = archive.namelist()
    assert names == [f"exercises/{s.file_name}" for s in SECTIONS]
    assert "hand this file in" in loop["submission"].stdout


def test_every_learner_command_says_what_it_does(loop):
    targets = re.findall(r"^([a-z-]+):", LEARNER_MK.read_text(), flags=re.M)
    described = re.findall(r"^([a-z-]+):.*## ", LEARNER_MK.read_text(), flags=re.M)
    assert targets == described, "every learner command has a `## ` description"
    shown = loop["help"].stdout
    for target in targets:
        assert f"make {target} " in shown, f"make help does not list {target}"
    for command in ("test", "watch", "hint", "progress", "submission", "run-notebooks"):
        assert f"make {command}" in (loop["handout"] / "README.md").read_text(), (
            f"the handout's README does not name make {command}")
