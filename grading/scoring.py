"""From what a run left to scores: per test, per section, per submission.

A section's points (`course.toml`) are shared equally by its tests, so it earns them in
proportion to the tests it passes (`course.progress.section_points`, the formula a learner's
progress table uses too). Every test the course has counts, whether or not the run reported
on it: a test that a crash or the section's time limit kept from finishing is lost, with the
reason. A section with a penalised flag (see `grading.integrity`) earns nothing, and its
reason says why. A bonus section's points come on top of the course's 100.

Scores are kept in whole 64ths of a point (`UNITS`), which binary floating point holds
exactly, so that every sum of them is exact in any order: a section earns its formula's
points to the nearest 64th, its passing tests share that as equally as 64ths allow and its
other tests the rest of its points, so that a passing test earns all it is worth, a test's
worth adds up to its section's points exactly, and the sections' to 100 (`allocate`).

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
UNITS = 64  # per point
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
    bonus: bool = False  # its points come on top of the 100


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
        """Out of `max_score`: the sections that are not a bonus."""
        return sum(s.score for s in self.sections if not s.bonus)

    @property
    def max_score(self) -> int:
        return sum(s.points for s in self.sections if not s.bonus)

    @property
    def bonus_score(self) -> float:
        return sum(s.score for s in self.sections if s.bonus)

    @property
    def bonus_max(self) -> int:
        return sum(s.points for s in self.sections if s.bonus)

    @property
    def all_flags(self) -> list[Flag]:
        return [*self.flags, *(f for s in self.sections for f in s.flags)]

    def to_dict(self) -> dict:
        """Everything, as plain data: the JSON report's and the store's."""
        data = asdict(self)
        data["score"], data["max_score"] = self.score, self.max_score
        data["bonus_score"], data["bonus_max"] = self.bonus_score, self.bonus_max
        for flags in [data["flags"], *(s["flags"] for s in data["sections"])]:
            for flag in flags:
                flag["penalised"] = Flag(flag["kind"], flag["detail"]).penalised
        return data


def split(units: int, parts: int) -> list[int]:
    """`units` in `parts` whole shares, as equal as can be, the larger ones first."""
    if parts == 0:
        return []
    share, left = divmod(units, parts)
    return [share + 1] * left + [share] * (parts - left)


def allocate(section: Section, passed: list[bool]) -> tuple[list[int], list[int]]:
    """Each test's (earned, worth) in UNITS, for tests that passed (True) or did not: the
    section earns `section_points` to the nearest unit, shared by its passing tests; the rest
    of its points is shared by the others. So the worths add up to the section's points and
    the earnings to its score, exactly, and a passing test earns its whole worth."""
    total, count = section.points * UNITS, sum(passed)
    earned = round(section_points(section, count, len(passed)) * UNITS)
    shares = {True: iter(split(earned, count)), False: iter(split(total - earned,
                                                                  len(passed) - count))}
    worth = [next(shares[p]) for p in passed]
    return [w if p else 0 for w, p in zip(worth, passed, strict=True)], worth


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


def _limit(run: SectionRun, limits: Limits) -> float:
    """The wall-clock limit the run had: less than the limits' where a deadline cut it."""
    return run.timeout_s or limits.section_timeout_s


def lost_test(run: SectionRun, limits: Limits) -> tuple[str, str]:
    """(status, message) of a test the run never reported on."""
    if run.timed_out:
        return TIMEOUT, (f"the section ran past its {_limit(run, limits):g} s limit "
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
        tests.append(TestResult(nodeid, nodeid.split("::")[-1], status, message, 0.0, 0.0))
    penalised = [f for f in flags if f.penalised]
    earned, worth = allocate(section, [t.status == PASSED and not penalised for t in tests])
    for test, units, most in zip(tests, earned, worth, strict=True):
        test.score, test.max_score = units / UNITS, most / UNITS
    status = section_status(tests)
    lost = [t for t in tests if t.nodeid not in run.records]
    if penalised:
        reason = "flagged, no credit: " + "; ".join(f"{f.kind}: {f.detail}" for f in penalised)
    elif lost:
        ended = (f"ran past its {_limit(run, limits):g} s limit" if run.timed_out
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
                         sum(earned) / UNITS, status, _short(reason), flags, tests,
                         round(run.seconds, 2), section.bonus)


def score_unrun(section: Section, nodeids: list[str], reason: str) -> SectionResult:
    """A section whose module could not be run at all (missing, unreadable): every test an
    error, with `reason`."""
    _, worth = allocate(section, [False] * len(nodeids))
    tests = [TestResult(n, n.split("::")[-1], ERROR, reason, 0.0, most / UNITS)
             for n, most in zip(nodeids, worth, strict=True)]
    return SectionResult(section.number, section.name, section.title, section.points, 0.0,
                         ERROR, _short(reason), [], tests, bonus=section.bonus)
