"""`make bench`'s reading of `make check`: the slowest tooling test files, from the JUnit XML
that make check's tooling tests write."""

import os
import shlex
import subprocess
import sys

from course.registry import ROOT
from tools.bench import test_loop

FLAT = "import time\n\ndef test_slow():\n    time.sleep(0.3)\n\ndef test_quick():\n    pass\n"
GROUPED = "class TestGroup:\n    def test_one(self):\n        pass\n\n    def test_two(self):\n" \
    "        pass\n"


def junit_options() -> list[str]:
    """The options of `make check`'s tooling tests that choose the XML, as `make -n` prints
    them, the file's path left out."""
    printed = subprocess.run(
        ["make", "-n", "--no-print-directory", "-o", ".venv/.installed", "-o",
         ".venv-book/.installed", "-o", "test-solutions", "check-tooling"], cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k not in test_loop.INHERITED_FROM_MAKE},
        capture_output=True, text=True, check=True).stdout
    words = shlex.split(next(line for line in printed.splitlines() if "--junitxml" in line))
    return [word for at in range(len(words) - 1) if words[at] == "-o"
            and words[at + 1].startswith("junit_") for word in words[at:at + 2]]


def test_each_test_counts_for_its_own_file_whether_in_a_class_or_not(tmp_path):
    folder = tmp_path / "tests" / "tooling"  # as deep as make check's: a dotted class name
    folder.mkdir(parents=True)
    (folder / "test_flat.py").write_text(FLAT)
    (folder / "test_grouped.py").write_text(GROUPED)
    xml = tmp_path / "times.xml"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "--rootdir", str(tmp_path), "--junitxml", str(xml), *junit_options(),
                          "tests/tooling"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTEST_ADDOPTS": ""})
    assert run.returncode == 0, run.stdout + run.stderr
    found = test_loop.slowest_test_files(xml, count=5)
    assert [name for name, _ in found] == ["tests/tooling/test_flat.py",
                                           "tests/tooling/test_grouped.py"], found
    assert found[0][1] >= 0.3, "the slow test's time counts for its file"
    assert test_loop.slowest_test_files(xml, count=1) == found[:1]


def test_no_record_is_no_slowest_file(tmp_path):
    assert test_loop.slowest_test_files(tmp_path / "absent.xml") == []
    (tmp_path / "cut.xml").write_text("<testsuites><testsuite>")
    assert test_loop.slowest_test_files(tmp_path / "cut.xml") == []
