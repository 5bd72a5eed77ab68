"""The pytest plugin that makes a failing section test speak in the learner's terms
(`tests/sections/conftest.py` loads it):

* a stub's NotImplementedError is its own outcome, "not implemented" (`N`), reported in one
  line with the stub's place, and listed once per stub at the end of the run; where the test
  of one section runs into another section's stub (a handout, where every section is the
  learner's), the report says which section to finish first;
* a wrong answer keeps pytest's short report: the assertion's message, what was found, and
  for a shape, which dimension differs from what was expected;
* any other error (the learner's code raised where the test expected a result) says first
  what the test checks, from its docstring, then shows only the frames of the tests and of
  the implementation, never those of torch or of the harness;
* where a section's failing tests are those a catalogued mistake fails (`course.signatures`),
  the failures section opens by naming that mistake and its concept, in words;
* an error raised at one place in several tests is shown once, with how many it stopped;
* paths read relative to the course (`exercises/s3_bilm.py`), and the harness's package
  names as the folder the module came from (`exercises.s3_bilm`).
"""

from __future__ import annotations

import re
import sys
import traceback
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from . import signatures
from .concepts import title_of
from .diagnose import digest_of
from .harness import PACKAGE_PREFIX
from .registry import ROOT, STUB_MESSAGE, TESTS_DIR, section_of_test, shown
from .results import NOT_IMPLEMENTED, purpose, stub_error

_PACKAGE_MODULE = re.compile(rf"\b{PACKAGE_PREFIX}[0-9a-f]{{16}}\.(\w+)")


def _folder_module(match: re.Match) -> str:
    package = sys.modules.get(match[0].rpartition(".")[0])
    source = getattr(package, "sources", {}).get(match[1])
    return f"{source.parent.name}.{match[1]}" if source is not None else match[1]


def learner_terms(text: str) -> str:
    """`text` with paths relative to the course and the harness's packages by folder."""
    return _PACKAGE_MODULE.sub(_folder_module, text.replace(f"{ROOT}/", ""))


_EXAMPLE = re.compile(r"(Failing test case|Falsifying example): ")
_ARGUMENT = re.compile(r"    (\w+)=")
_SUBEXPRESSION = re.compile(r"\s*\+\s+(where|and) ")


def _readable(text: str, fixtures: list[str]) -> str:
    """`text` without what buries the message: hypothesis's own frame (the test's `def`
    line), the fixtures among the arguments of its failing example (a whole model's repr),
    pytest's long reprs of tensors and functions in an assertion's sub-expressions, and its
    advice to rerun with -v."""
    lines, in_example, skipping = [], False, False
    for line in text.splitlines():
        content = line[4:] if line.startswith("E   ") else line
        if _EXAMPLE.match(content):
            in_example = True
        elif in_example and content == ")":
            in_example = skipping = False
        elif in_example and (argument := _ARGUMENT.match(content)):
            skipping = argument[1] in fixtures
        if skipping or content.strip() == "Use -v to get more diff" or (
                _SUBEXPRESSION.match(content)
                and (len(content) > 160 or " object at 0x" in content)):
            continue
        if lines and set(line.strip()) == {"^"} and lines[-1].lstrip().startswith("def test_"):
            del lines[-2:]  # the frame of the test's `def` line: hypothesis calling it
            continue
        lines.append(line)
    return "\n".join(lines)


def _is_ours(filename: str) -> bool:
    """A frame of the tests or of a section module (not of torch, pytest or the harness)."""
    path = Path(filename)
    return path.is_relative_to(TESTS_DIR) or re.fullmatch(r"s\d+_\w+\.py", path.name) is not None


def _raised_in_the_test(error: BaseException) -> bool:
    """Whether the innermost frame is a section test's, not the implementation's: the test
    tripped over a value the learner's code returned (a gradient that is None, say)."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and Path(frames[-1].filename).resolve().is_relative_to(TESTS_DIR)


def _short_traceback(error: BaseException) -> str:
    # Not the frame of a test's `def` line either: that is hypothesis calling the test.
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if _is_ours(f.filename) and not (f.line or "").startswith("def ")]
    lines = [f"{f.filename}:{f.lineno}: in {f.name}\n    {f.line}" for f in frames]
    if error.__cause__ is not None:
        lines.append(f"E   (raised from {type(error.__cause__).__name__}: {error.__cause__})")
    lines += [f"E   {line}" for line in "".join(
        traceback.format_exception_only(error)).rstrip().splitlines()]
    return learner_terms("\n".join(lines))


def _raised_at(error: BaseException) -> str:
    """Where `error` came from, in the learner's terms: its type and the innermost frame of a
    section module (of the test where there is none), `RuntimeError at exercises/s8...:216`.
    Tests that stop at one such place stopped at one mistake."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if _is_ours(f.filename)]
    code = [f for f in frames if not Path(f.filename).resolve().is_relative_to(TESTS_DIR)]
    place = (code or frames or [None])[-1]
    where = f" at {learner_terms(place.filename)}:{place.lineno}" if place else ""
    return f"{type(error).__name__}{where}"


class LearnerReport:
    """A failing test's report as the learner reads it: `text` in the failures section, and
    `reprcrash.message`, the line that pytest's short summary shows for it."""

    def __init__(self, text: str, summary: str) -> None:
        self.text, self.reprcrash = text, SimpleNamespace(message=summary)

    def toterminal(self, out) -> None:
        for line in self.text.splitlines():
            out.line(line, red=line.startswith("E "))

    def __str__(self) -> str:
        return self.text


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    under_test = section_of_test(item.path)
    if not report.failed or call.excinfo is None or under_test is None:
        return report
    error = call.excinfo.value
    summary = learner_terms(call.excinfo.exconly().split("\n")[0])
    if isinstance(error, SyntaxError):
        summary = learner_terms(f"{error.filename}:{error.lineno}: SyntaxError: {error.msg}")
    stub = stub_error(error)
    if stub is None:  # how it failed, for the known mistakes at the end of the run
        report.fingerprint = signatures.fingerprint(
            f"{type(error).__name__}: {error}", digest_of(error),
            signatures.written_by_the_tests(Path(item.path)))
    if stub is not None:
        frame = traceback.extract_tb(stub.__traceback__)[-1]
        report.stub, report.stub_seen_by = (shown(frame.filename), frame.lineno, str(stub)), \
            under_test
        text = summary = "{}:{}: {}".format(*report.stub)
    elif isinstance(error, AssertionError | pytest.fail.Exception):
        # pytest's own report of the check: the message, and what was found
        text = _readable(learner_terms(str(report.longrepr)), item.fixturenames)
    elif item.config.getoption("tbstyle") in ("auto", "short"):
        report.raised_at = _raised_at(error)
        text = (f"{item.name} checks: {purpose(item)}\n"
                + (f"The check could not read what your code gave ({type(error).__name__} in "
                   "the test's own line, below): what it received is not what the "
                   "docstring promises\n" if _raised_in_the_test(error) else
                   f"Your code raised {type(error).__name__} instead:\n")
                + _readable(_short_traceback(error), item.fixturenames))
    else:
        return report
    report.longrepr = LearnerReport(text, summary)
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    if getattr(report, "stub", None):
        return NOT_IMPLEMENTED, "N", ("NOT IMPLEMENTED", {"yellow": True})
    return None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter):
    """Before pytest's failures section: the known mistakes the failures look like, then
    each error raised at one place in several tests shown once, with the count."""
    _known_mistakes(terminalreporter)
    _one_report_per_error(terminalreporter)
    result = yield
    _stubs(terminalreporter)
    return result


def _one_report_per_error(terminalreporter) -> None:
    """Where tests raised the same error at the same place (a forgotten transpose stops
    most of a section), the first test's report says how many it stopped and which, and the
    others are not shown again: pytest leaves out of its failures section a report marked
    as shown already (`_pdbshown`, the mark of its debugger plugin)."""
    groups: dict[str, list] = {}
    for report in terminalreporter.stats.get("failed", []):
        if getattr(report, "raised_at", None) and isinstance(report.longrepr, LearnerReport):
            groups.setdefault(report.raised_at, []).append(report)
    for raised_at, reports in groups.items():
        if len(reports) < 2:
            continue
        first = reports[0].longrepr
        reports[0].longrepr = LearnerReport(
            f"The same {raised_at} stopped {len(reports)} tests (the summary at the end names "
            f"them); it is shown once, for the first:\n{first.text}", first.reprcrash.message)
        for report in reports[1:]:
            report._pdbshown = True


def _known_mistakes(terminalreporter) -> None:
    """Per section, the catalogued mistakes whose signature the failing tests match."""
    ran: dict = {}
    for status in ("passed", "failed"):
        for report in terminalreporter.stats.get(status, []):
            section = section_of_test(Path(report.fspath)) if report.when == "call" else None
            if section is not None:
                name = report.nodeid.split("::")[-1].split("[")[0]
                tests, failed, seen = ran.setdefault(section, (set(), set(), {}))
                tests.add(name)
                if status == "failed":
                    failed.add(name)
                    if hasattr(report, "fingerprint"):
                        seen.setdefault(name, report.fingerprint)
    lines, catalogue = [], signatures.load()[0] if ran else []
    for section in sorted(ran, key=lambda s: s.number):
        tests, failed, seen = ran[section]
        score, known = (signatures.likely(section.number, failed, tests, catalogue, seen)
                        if failed else (0, []))
        if not known:
            continue
        alike = "exactly the tests" if score == 1 else \
            f"in part ({score:.0%} in common) the tests"
        which = "a known mistake fails" if len(known) == 1 else \
            f"each of {len(known)} known mistakes fails"
        if all(signatures.fail_alike(k, seen, whole=False) for k in known):
            how = ", with the same messages"
        elif any(test in k.fingerprints for k in known for test in seen):
            how = ", though with other messages: a near match, not an exact one"
        else:
            how = ""
        check = ("check whether it is yours" if len(known) == 1 else
                 "check whether one of them is yours" if score == 1 else
                 "check each: your code may hold more than one of them")
        lines.append(f"section {section.number} ({section.name}): your failing tests are "
                     f"{alike} that {which}{how}; {check} (your messages below say what "
                     "your code gave):")
        lines += [f"  - {k.mistake}\n    the idea: {title_of(k.concept)}" for k in known]
    if lines:
        terminalreporter.write_sep("=", "what your failures look like")
        for line in lines:
            terminalreporter.write_line(line)


def _stubs(terminalreporter) -> None:
    """Each stub once, with how many tests it stopped, and which sections' tests those are
    where another section's test ran into it."""
    reports = terminalreporter.stats.get(NOT_IMPLEMENTED, [])
    if not reports:
        return
    terminalreporter.write_sep("=", "not implemented yet")
    stubs = sorted({r.stub for r in reports})
    width = max(len(f"{path}:{line}") for path, line, _ in stubs)
    for stub in stubs:
        seen_by = [r.stub_seen_by for r in reports if r.stub == stub]
        count = f"{len(seen_by)} test{'s' * (len(seen_by) > 1)}"
        match = STUB_MESSAGE.search(stub[2])
        owner = int(match["number"]) if match else None
        others = sorted({s.number for s in seen_by} - {owner})
        if owner and others:
            count += (f"; the tests of section {', '.join(map(str, others))} need it: "
                      f"finish section {owner} first")
        terminalreporter.write_line(f"{f'{stub[0]}:{stub[1]}':{width}}  {stub[2]} ({count})")


def pytest_assertrepr_compare(config: pytest.Config, op: str, left, right) -> list[str] | None:
    """Shapes found vs expected, dimension by dimension (the torch.Size is what was found)."""
    if op != "==" or not (_is_shape(left) and _is_shape(right)):
        return None
    if not isinstance(left, torch.Size) and not isinstance(right, torch.Size):
        return None
    found, expected = (right, left) if isinstance(right, torch.Size) and not isinstance(
        left, torch.Size) else (left, right)
    lines = [f"shape {tuple(found)} == {tuple(expected)}",
             f"found shape {tuple(found)}, expected {tuple(expected)}"]
    if len(found) != len(expected):
        lines.append(f"found {len(found)} dimensions, expected {len(expected)}")
    else:
        lines += [f"dimension {d}: found {f}, expected {e}"
                  for d, (f, e) in enumerate(zip(found, expected, strict=True)) if f != e]
    return lines


def _is_shape(value) -> bool:
    return isinstance(value, tuple) and all(isinstance(d, int) for d in value)
