"""Results and scores per test, section and submission, as the reports and the store hold
them. A section earns its points in proportion to the tests it passes, each counted by its
concept's weight (`section_points`, the formula of a learner's progress table); every test of
the course counts, a test that a crash or the time limit kept from finishing as lost; a
penalised flag (`grading.scan`) leaves the section nothing. A section's status is "passed"
when every test passes, otherwise the most telling of its tests' (timeout, error, failed, not
implemented). A bonus section's points come on top of the 100.
"""

from __future__ import annotations

import os
import signal
from dataclasses import asdict, dataclass, field

from course.progress import section_points
from course.registry import Section
from course.results import ERROR, FAILED, NOT_IMPLEMENTED, PASSED, TIMEOUT

from .records import Stream, crash_line, describe, short, source_line
from .scan import UNTRUSTED, Flag

PRECEDENCE = (TIMEOUT, ERROR, FAILED, NOT_IMPLEMENTED)
SIGNALS = {signal.SIGSEGV: "crashed with a segmentation fault (SIGSEGV)",
           signal.SIGABRT: "aborted (SIGABRT)", signal.SIGKILL: "was killed (SIGKILL)",
           signal.SIGXCPU: "ran out of CPU time (SIGXCPU)"}


@dataclass
class TestResult:
    nodeid: str
    name: str
    status: str
    message: str
    # Its wrong tensor's fingerprint (course.diagnose) as the run reported it: the run could
    # report any 16 hex digits, so the instructors' JSON alone holds it, never a message.
    reported_digest: str | None = None


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
    seconds: float = 0.0  # its run, wall clock
    bonus: bool = False  # its points come on top of the 100
    internal: bool = False  # the grader failed, not the submission: never stored, graded again


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
        """As the JSON report and the store hold it (`result_from_dict` reads it back)."""
        data = asdict(self)
        data.update(score=self.score, max_score=self.max_score, bonus_score=self.bonus_score,
                    bonus_max=self.bonus_max)
        for flags in [data["flags"], *(s["flags"] for s in data["sections"])]:
            for flag in flags:
                flag["penalised"] = Flag(flag["kind"], "").penalised
        return data


def result_from_dict(data: dict) -> SubmissionResult:
    def flags(items: list[dict]) -> list[Flag]:
        return [Flag(f["kind"], f["detail"], f["section"]) for f in items]

    def test(fields: dict) -> TestResult:  # "digest": a grades file of before its rename
        return TestResult(**{("reported_digest" if k == "digest" else k): v
                             for k, v in fields.items()})

    sections = [SectionResult(**{**s, "flags": flags(s["flags"]),
                                 "tests": [test(t) for t in s["tests"]]})
                for s in data["sections"]]
    return SubmissionResult(data["name"], data["path"], data["digest"], sections,
                            flags(data["flags"]))


def describe_exit(wait_status: int | None) -> str:
    """How a run's process ended, in words."""
    if wait_status is None:
        return "was lost by the grader"
    if os.WIFSIGNALED(wait_status):
        number = os.WTERMSIG(wait_status)
        return SIGNALS.get(number, f"was killed by {signal.Signals(number).name}")
    return f"exited with status {os.WEXITSTATUS(wait_status)}"


def score_section(section: Section, nodeids: list[str], stream: Stream, outcome, source: bytes,
                  flags: list[Flag]) -> SectionResult:
    """`section`'s result from one run (`outcome`, a `sandbox.Outcome`) of its tests, its
    judged tests judged (`grading.judging.judge_stream`)."""
    if stream.untrusted:
        flags = [*flags, Flag(UNTRUSTED, stream.untrusted, section.number)]
    if outcome.timed_out:
        ended = f"ran past its {outcome.timeout_s:g} s limit"
        lost_status, lost_message = TIMEOUT, f"the section {ended} before this test finished"
    else:
        ended = describe_exit(outcome.status)
        lost_status, lost_message = ERROR, f"the test process {ended} before this test finished"
    tests = [TestResult(n, n.split("::")[-1], r["status"], describe(
        r, section.file_name, source), r["digest"])
        if (r := stream.tests.get(n)) else TestResult(n, n.split("::")[-1], lost_status,
                                                      lost_message) for n in nodeids]
    penalised = [f for f in flags if f.penalised]
    score = section_points(section, [(t.name, t.status == PASSED and not penalised)
                                     for t in tests])
    failing = {t.status for t in tests if t.status != PASSED}
    status = next((s for s in PRECEDENCE if s in failing), PASSED if tests else ERROR)
    lost = [t for t in tests if t.nodeid not in stream.tests]
    if penalised:
        reason = "flagged, no credit: " + "; ".join(f"{f.kind}: {f.detail}" for f in penalised)
    elif lost:
        line = None if outcome.timed_out else crash_line(outcome.output_tail, section.file_name)
        quoted = source_line(source, line)
        where = f" (at {section.file_name} line {line}: `{quoted}`)" if quoted else ""
        reason = (f"the test process {ended} during {lost[0].name}; {len(lost)} of "
                  f"{len(tests)} tests lost{where}")
    elif status == PASSED:
        reason = ""
    else:
        first = next(t for t in tests if t.status == status)
        reason = f"{first.name}: {first.message}"
    return SectionResult(section.number, section.name, section.title, section.points, score,
                         status, short(reason), flags, tests, round(outcome.seconds, 2),
                         section.bonus)


def score_unrun(section: Section, nodeids: list[str], reason: str, internal: bool = False
                ) -> SectionResult:
    """A section whose module could not be run at all: every test an error, with `reason`;
    `internal` where the grader failed rather than the submission."""
    tests = [TestResult(n, n.split("::")[-1], ERROR, reason) for n in nodeids]
    return SectionResult(section.number, section.name, section.title, section.points, 0.0,
                         ERROR, short(reason), [], tests, bonus=section.bonus, internal=internal)
