"""From what a run left to scores: per test, per section, per submission.

A section's points (`course.toml`) are shared equally by its tests, so it earns them in
proportion to the tests it passes (as `course.progress` counts them). Every test the course
has counts, whether or not the run reported on it: a test that a crash or the section's
time limit kept from finishing is lost, with the reason. A section with a penalised flag
(see `grading.integrity`) earns nothing, and its reason says why.

A section's status is "passed" when every test passes; otherwise the most telling status
among its tests: timeout, then error, then failed, then "not implemented" (only stubs left).
"""

from __future__ import annotations

import os
import re
import signal
from dataclasses import asdict, dataclass, field

from course.progress import section_points
from course.registry import Section
from course.results import ERROR, FAILED, NOT_IMPLEMENTED, PASSED, TIMEOUT

from .integrity import Flag
from .sandbox import Limits, SectionRun

REASON_LIMIT = 300
PRECEDENCE = (TIMEOUT, ERROR, FAILED, NOT_IMPLEMENTED)
SIGNALS = {signal.SIGSEGV: "crashed with a segmentation fault (SIGSEGV)",
           signal.SIGABRT: "aborted (SIGABRT)",
           signal.SIGKILL: "was killed (SIGKILL)",
           signal.SIGXCPU: "ran out of CPU time (SIGXCPU)"}


@dataclass
class TestResult:
    nodeid: str
    name: str
    status: str
    message: str
    score: float
    max_score: float


@dataclass
class SectionResult:
    number: int
    name: str
    title: str
    points: int
    score: float
    status: str
    reason: str
    flags: list[Flag] = field(default_factory=list)
    tests: list[TestResult] = field(default_factory=list)
    seconds: float = 0.0  # how long its run took, wall clock


@dataclass
class SubmissionResult:
    """`flags` concern the submission as a whole; each section carries its own."""

    name: str
    path: str
    digest: str
    sections: list[SectionResult] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)

    @property
    def score(self) -> float:
        return sum(s.score for s in self.sections)

    @property
    def max_score(self) -> int:
        return sum(s.points for s in self.sections)

    @property
    def all_flags(self) -> list[Flag]:
        return [*self.flags, *(f for s in self.sections for f in s.flags)]

    def to_dict(self) -> dict:
        """Everything, as plain data: the JSON report's and the store's."""
        data = asdict(self)
        data["score"], data["max_score"] = round(self.score, 4), self.max_score
        for flags in [data["flags"], *(s["flags"] for s in data["sections"])]:
            for flag in flags:
                flag["penalised"] = Flag(flag["kind"], flag["detail"]).penalised
        return data


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= REASON_LIMIT else text[: REASON_LIMIT - 3] + "..."


def describe_exit(wait_status: int | None) -> str:
    """How a test process ended, in words: "exited with status 3", "crashed with ..."."""
    if wait_status is None:
        return "was lost by the grader"
    if os.WIFSIGNALED(wait_status):
        number = os.WTERMSIG(wait_status)
        return SIGNALS.get(number, f"was killed by {signal.Signals(number).name}")
    return f"exited with status {os.WEXITSTATUS(wait_status)}"


def _output_hint(tail: str, module: str) -> str:
    """What a crashed run's output says happened: Python's fatal error and the innermost
    line of the section's module, "Fatal Python error: Segmentation fault, in tokenize
    (s2_corpus.py, line 97)"; empty when it says nothing."""
    fatal = re.search(r"^Fatal Python error: .*$", tail, re.MULTILINE)
    frame = re.search(rf'File "[^"]*/{module}\.py", line (\d+) in (\S+)', tail)
    where = f"in {frame[2]} ({module}.py, line {frame[1]})" if frame else ""
    return ", ".join(part for part in (fatal[0] if fatal else "", where) if part)


def lost_test(run: SectionRun, limits: Limits) -> tuple[str, str]:
    """(status, message) of a test the run never reported on."""
    if run.timed_out:
        return TIMEOUT, (f"the section ran past its {limits.section_timeout_s:g} s limit "
                         "before this test finished")
    return ERROR, (f"the test process {describe_exit(run.wait_status)} "
                   "before this test finished")


def section_status(tests: list[TestResult]) -> str:
    failing = {t.status for t in tests if t.status != PASSED}
    return next((s for s in PRECEDENCE if s in failing), PASSED if tests else ERROR)


def score_run(section: Section, nodeids: list[str], run: SectionRun, flags: list[Flag],
              limits: Limits) -> SectionResult:
    """The result of `section` from one run of its tests (`nodeids`, in their order)."""
    tests = []
    for nodeid in nodeids:
        record = run.records.get(nodeid)
        status, message = ((record["status"], record.get("message", "")) if record
                           else lost_test(run, limits))
        tests.append(TestResult(nodeid, nodeid.split("::")[-1], status, message, 0.0,
                                section.points / len(nodeids)))
    penalised = [f for f in flags if f.penalised]
    for test in tests:
        test.score = test.max_score if test.status == PASSED and not penalised else 0.0
    status = section_status(tests)
    lost = [t for t in tests if t.nodeid not in run.records]
    if penalised:
        reason = "flagged, no credit: " + "; ".join(f"{f.kind}: {f.detail}" for f in penalised)
    elif lost:
        ended = (f"ran past its {limits.section_timeout_s:g} s limit" if run.timed_out
                 else describe_exit(run.wait_status))
        hint = "" if run.timed_out else _output_hint(run.output_tail, section.module)
        reason = (f"the test process {ended} during {lost[0].name}; {len(lost)} of "
                  f"{len(tests)} tests lost" + (f" ({hint})" if hint else ""))
    elif status == PASSED:
        reason = ""
    else:
        first = next(t for t in tests if t.status == status)
        reason = f"{first.name}: {first.message}"
    return SectionResult(section.number, section.name, section.title, section.points,
                         0.0 if penalised else section_points(
                             section, sum(t.status == PASSED for t in tests), len(tests)),
                         status, _short(reason),
                         flags, tests, round(run.seconds, 2))


def score_unrun(section: Section, nodeids: list[str], reason: str) -> SectionResult:
    """A section whose module could not be run at all (missing, unreadable): every test an
    error, with `reason`."""
    tests = [TestResult(n, n.split("::")[-1], ERROR, reason, 0.0,
                        section.points / len(nodeids)) for n in nodeids]
    return SectionResult(section.number, section.name, section.title, section.points, 0.0,
                         ERROR, _short(reason), [], tests)
