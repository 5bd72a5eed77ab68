"""Replaying a slow test that passed at these very inputs: what keeps `make check` short.

A tooling test marked `slow` (it trains biLMs, grades a class, runs the notebooks) is
replayed, not run, by `make check` (`--replay`) when it passed before at the same inputs:
the digest of every file of the course it could read (its own test file, not the other
tooling tests'; the docs too, which some of them check) and of the Python and torch that ran
it, as Bazel replays a test from its cache. `tests/tooling/replay.json` records the digest at
which each slow test last passed; every run that passes one writes it there (commit it with
the change that made it), and a run that fails one deletes its entry. A replayed test shows
as skipped, with the reason; the run lists them in build/replayed.txt, and `make check-all`
(CI) runs them, with the `check_all` tests, so nothing goes unrun on CI.

Written here because pytest has no such cache of its own (its `--lf` reruns failures and keys
nothing by content), and pytest-xdist's workers collect the tests: each worker skips, and the
controller, which sees every report, writes the record.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections import Counter
from importlib.metadata import version
from pathlib import Path

import pytest

from course.registry import ROOT
from tools.bench import test_loop

RECORD = Path(__file__).with_name("replay.json")
REPLAYED = test_loop.REPLAYED
# What a slow test may read: the course's code, data, docs and settings. Not build/ (made
# from these), nor the other tooling tests' files.
INPUT_DIRS = ("course", "analyses", "solutions", "exercises", "tools", "grading", "tests",
              "mistakes", "notebooks", "data", "requirements", "docs")
INPUT_FILES = ("course.toml", "pytest.ini", "Makefile", "pyproject.toml", "README.md")
TOOLING_TESTS = Path(__file__).parent
DIGEST_KEY = "replay_digest"
REPLAYED_KEY = "replayed"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--replay", action="store_true",
                     help="skip a slow test that passed at the same inputs (tests/tooling/"
                          "replay.json): make check")
    parser.addoption("--check-all", action="store_true",
                     help="run the tests marked check_all and those the last --replay run "
                          "replayed (build/replayed.txt): make check-all")


def _environment() -> bytes:
    """What ran the tests, beside the files: a record made elsewhere does not replay here.
    A GPU is told by its driver's device file, not by importing torch (2 s a process)."""
    gpu = Path("/dev/nvidiactl").exists()
    return f"{sys.version_info[:2]} torch {version('torch')} gpu={gpu}".encode()


def _input_files() -> list[Path]:
    """The files of INPUT_DIRS and INPUT_FILES that git does not ignore (a tool's cache, as
    ruff's, is no input), or every file there outside a git checkout."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard", "--", *INPUT_DIRS, *INPUT_FILES],
                            cwd=ROOT, capture_output=True)
    if listed.returncode == 0:
        files = [ROOT / name for name in listed.stdout.decode().split("\0") if name]
    else:
        files = [*(path for top in INPUT_DIRS for path in (ROOT / top).rglob("*")
                   if "__pycache__" not in path.parts), *(ROOT / name for name in INPUT_FILES)]
    return sorted({path for path in files if path.is_file() and path != RECORD})


def _course():
    """The digest of every input file but the tooling tests' own files, and the environment."""
    shared = hashlib.sha256(_environment())
    for path in _input_files():
        if path.parent == TOOLING_TESTS and path.name.startswith("test_"):
            continue
        shared.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return shared


def course_digest() -> str:
    """What a tooling test's result or a shared folder (conftest.shared_folder) is made from,
    beside a test file of its own."""
    return _course().hexdigest()[:16]


def digests(test_files: set[Path]) -> dict[Path, str]:
    """Each test file's inputs' digest: every input file, of the tooling tests its own."""
    shared = _course()
    found = {}
    for test_file in test_files:
        digest = shared.copy()
        digest.update(test_file.name.encode() + b"\0" + test_file.read_bytes())
        found[test_file] = digest.hexdigest()[:16]
    return found


def read_record() -> dict[str, list]:
    """{test: [the digest at which it last passed, the seconds it took then]}."""
    return json.loads(RECORD.read_text())["passed"] if RECORD.exists() else {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under --check-all, keep the check_all tests and those replayed; else mark each slow
    test with its digest, skip it where the record replays it, and put the test files that
    will take longest first (by the last make check's JUnit XML, as `make bench` reads it,
    or by the record for a slow test that ran before), each file's tests in their own
    order: make check's processes take the files in this order, a file at a time, so that
    no long file is left to run alone at the end."""
    slow = [item for item in items if item.get_closest_marker("slow")]
    found = digests({item.path for item in slow})
    for item in slow:  # the recorder keeps what passes, and forgets what fails, by it
        item.user_properties.append((DIGEST_KEY, found[item.path]))
    if config.getoption("--check-all"):
        wanted = set(REPLAYED.read_text().splitlines()) if REPLAYED.exists() else set()
        kept = [item for item in items
                if item.get_closest_marker("check_all") or item.nodeid in wanted]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
        return
    record, seconds = read_record(), dict(test_loop.test_seconds())
    for item in slow:
        recorded, took = record.get(item.nodeid, (None, 0.0))
        if config.getoption("--replay") and recorded == found[item.path]:
            item.user_properties.append((REPLAYED_KEY, True))
            item.add_marker(pytest.mark.skip(
                reason=f"replayed: passed at these same inputs ({recorded}, tests/tooling/"
                       "replay.json); make check-all runs it"))
            seconds[item.nodeid] = 0.0
        else:
            seconds[item.nodeid] = max(seconds.get(item.nodeid, 0.0), took)
    took_file = Counter()
    for item in items:
        took_file[item.location[0]] += seconds.get(item.nodeid, 0.0)
    tests = Counter(item.location[0] for item in items)
    items.sort(key=lambda item: (-took_file[item.location[0]], -tests[item.location[0]]))


class Recorder:
    """In the process that sees every report (xdist's controller, or the only one): writes
    the record and the list of replayed tests when the run ends."""

    def __init__(self) -> None:
        self.passed: dict[str, str] = {}
        self.seconds: Counter = Counter()
        self.failed: set[str] = set()
        self.replayed: list[str] = []

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        if DIGEST_KEY not in properties:
            return
        self.seconds[report.nodeid] += report.duration
        if properties.get(REPLAYED_KEY):
            if report.when == "setup":
                self.replayed.append(report.nodeid)
        elif report.failed:
            self.failed.add(report.nodeid)
        elif report.when == "call" and report.passed:
            self.passed[report.nodeid] = properties[DIGEST_KEY]

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not (self.passed or self.failed or session.config.getoption("--replay")):
            return
        record = read_record()
        for node, digest in self.passed.items():  # a replayed test keeps its first time
            if node not in self.failed and record.get(node, [None])[0] != digest:
                record[node] = [digest, round(self.seconds[node], 1)]
        for node in [*self.failed, *(n for n in record
                                     if not (ROOT / n.split("::")[0]).exists())]:
            record.pop(node, None)
        text = json.dumps({"about": "the digest of its inputs at which each slow tooling test "
                                    "last passed (tests/tooling/replay.py)",
                           "passed": dict(sorted(record.items()))}, indent=1) + "\n"
        if not RECORD.exists() or RECORD.read_text() != text:
            RECORD.write_text(text)
        if session.config.getoption("--replay"):
            REPLAYED.parent.mkdir(exist_ok=True)
            REPLAYED.write_text("".join(f"{node}\n" for node in sorted(self.replayed)))

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.replayed:
            terminalreporter.write_line(
                f"{len(self.replayed)} slow tests replayed: each passed at these same inputs "
                "(tests/tooling/replay.json); make check-all runs them")


def register(config: pytest.Config) -> None:
    """The recorder, where every report arrives: not in an xdist worker."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(Recorder(), "replay-recorder")
