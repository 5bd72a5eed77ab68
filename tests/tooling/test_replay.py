"""make check replays a slow test only at the inputs it passed at (tests/tooling/replay.py):
on a small course of its own, a test that reads a file is replayed while nothing it could read
changed, runs again when that file or its own test file changes, is forgotten when it fails,
and `--check-all` runs what was replayed."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course.registry import ROOT

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)

CONFTEST = '''\
from pathlib import Path

import tests.tooling.replay as replay
from tests.tooling.replay import pytest_addoption, pytest_collection_modifyitems  # noqa: F401

HERE = Path(__file__).parent
replay.ROOT, replay.TOOLING_TESTS = HERE, HERE
replay.INPUT_DIRS, replay.INPUT_FILES = ("lib",), ()
replay.RECORD, replay.REPLAYED = HERE / "replay.json", HERE / "build" / "replayed.txt"


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: replayed")
    config.addinivalue_line("markers", "check_all: in check-all")
    replay.register(config)
'''

READS = '''\
from pathlib import Path

import pytest


@pytest.mark.slow
def test_reads_the_value():
    assert (Path(__file__).parent / "lib" / "value.txt").read_text() == "1"


def test_quick():
    pass
'''


def run(course: Path, *options: str) -> tuple[int, str]:
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                          *options], cwd=course, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    return ran.returncode, ran.stdout + ran.stderr


def recorded(course: Path) -> list[str]:
    path = course / "replay.json"
    return sorted(json.loads(path.read_text())["passed"]) if path.exists() else []


def test_a_slow_test_is_replayed_only_at_the_inputs_it_passed_at(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "value.txt").write_text("1")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_reads.py").write_text(READS)
    (tmp_path / "test_other.py").write_text("def test_other():\n    pass\n")
    slow = "test_reads.py::test_reads_the_value"

    code, out = run(tmp_path, "--replay", "-n", "2")  # in xdist's workers, as make check runs
    assert code == 0 and "3 passed" in out and recorded(tmp_path) == [slow], out
    code, out = run(tmp_path, "--replay")
    assert code == 0 and "2 passed, 1 skipped" in out and "replayed: passed at these" in out, out
    assert (tmp_path / "build" / "replayed.txt").read_text() == f"{slow}\n"

    code, out = run(tmp_path, "--check-all")
    assert code == 0 and "1 passed, 2 deselected" in out, "check-all runs what was replayed"

    (tmp_path / "test_other.py").write_text("def test_other():\n    assert True\n")
    assert "1 skipped" in run(tmp_path, "--replay")[1], "another test's file is not an input"

    (tmp_path / "lib" / "value.txt").write_text("2")
    code, out = run(tmp_path, "--replay")
    assert code == 1 and "1 failed" in out and recorded(tmp_path) == [], (
        "an input changed: it runs again, and failing, is forgotten")
    (tmp_path / "lib" / "value.txt").write_text("1")
    assert "3 passed" in run(tmp_path, "--replay")[1], "forgotten, it runs, passes"

    (tmp_path / "test_reads.py").write_text(READS + "\n# an edit\n")
    code, out = run(tmp_path, "--replay")
    assert code == 0 and "3 passed" in out, "its own test file is an input"
