"""A generated class: grades made from the catalogue's failure signatures by nothing but
arithmetic (no submission is run), for the class report's tests and its example.

    python -m tools.class_example [--out DIR] [--size 30] [--seed 0] [--unfinished SHARE]
                                  [--figure PNG]

Each synthetic submission holds 0 to 3 catalogued mistakes, drawn with the seed, each in a
section of its own; its failing tests are the union of their signatures and every other
test passes (unless it is unfinished: it stops at a section and leaves that one and the
rest as the stubs, every test not implemented); each section scores by the course's own
rule (`section_points`), and the grades are in the grader's JSON format
(`SubmissionResult.to_dict`). The signatures are those `make signatures` recorded; where
none are, each mistake's signature is the one test the catalogue says catches it.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from pathlib import Path

from course.concepts import CONCEPTS
from course.progress import section_points
from course.registry import BUILD_DIR, SECTIONS, Section
from course.results import FAILED, NOT_IMPLEMENTED, PASSED
from course.signatures import Known
from course.signatures import load as load_signatures
from grading.outputs import json_report
from grading.scan import Flag
from grading.scoring import SectionResult, SubmissionResult, TestResult

DEFAULT_OUT = BUILD_DIR / "class-example"


@dataclass(frozen=True)
class Synthetic:
    """A generated submission and the mistakes it was given."""

    result: SubmissionResult
    mistakes: tuple[Known, ...]


def catalogue_known() -> list[Known]:
    """The catalogue's mistakes with their signatures, one per distinct signature of a
    section (two mistakes that fail the same tests cannot be told apart by them)."""
    known = load_signatures()[0]
    if not known:
        from tools.mistakes import Mistake, load_catalogue

        known = [Known(m.id, m.section.number, m.mistake, m.concept, frozenset({m.caught_by}))
                 for m in load_catalogue() if isinstance(m, Mistake)]
    distinct: dict[tuple[int, frozenset[str]], Known] = {}
    for k in known:
        distinct.setdefault((k.section, k.tests), k)
    return list(distinct.values())


def section_tests(section: Section, known: list[Known] = ()) -> list[str]:
    """The section's test functions: those its concepts name, then any other a signature
    names."""
    tests = [t for c in CONCEPTS if c.section == section.number for t in c.tests]
    extra = {t for k in known if k.section == section.number for t in k.tests} - set(tests)
    return tests + sorted(extra)


def synthetic_result(name: str, mistakes: list[Known], known: list[Known] = (),
                     flags: list[Flag] = (), stopped_at: int | None = None) -> SubmissionResult:
    """A submission that fails exactly its mistakes' signatures, and leaves every section
    from `stopped_at` on as the stubs it was given; no credit for a section with a penalised
    flag."""
    sections = []
    for section in SECTIONS:
        failing = set().union(*(k.tests for k in mistakes if k.section == section.number))
        untouched = stopped_at is not None and section.number >= stopped_at
        failed = NOT_IMPLEMENTED if untouched else FAILED
        message = (f"not implemented: {section.file_name} is the stub" if untouched else
                   "failed: AssertionError in the test's checks")
        section_flags = [f for f in flags if f.section == section.number]
        tests = [TestResult(f"tests/sections/test_{section.module}.py::{t}", t,
                            failed if untouched or t in failing else PASSED,
                            message if untouched or t in failing else "")
                 for t in section_tests(section, known)]
        penalised = any(f.penalised for f in section_flags)
        first = next((t for t in tests if t.status != PASSED), None)
        sections.append(SectionResult(
            section.number, section.name, section.title, section.points,
            section_points(section, [(t.name, t.status == PASSED and not penalised)
                                     for t in tests]), first.status if first else PASSED,
            f"{first.name}: {first.message}" if first else "", section_flags, tests, 0.1,
            section.bonus))
    return SubmissionResult(name, f"submissions/{name}", f"digest-{name}", sections,
                            [f for f in flags if f.section is None])


def generate(known: list[Known], size: int = 30, seed: int = 0,
             unfinished: float = 0.0) -> list[Synthetic]:
    """`size` submissions, each with 0 to 3 of `known`'s mistakes in distinct sections; with
    `unfinished`, that share of them (drawn) stops at a section from 2 on, leaving it and
    the rest as stubs (the mistakes drawn for those are dropped)."""
    rng = random.Random(seed)
    by_section: dict[int, list[Known]] = {}
    for k in known:
        by_section.setdefault(k.section, []).append(k)
    class_ = []
    for index in range(size):
        chosen = rng.sample(sorted(by_section), min(rng.randint(0, 3), len(by_section)))
        mistakes = tuple(rng.choice(by_section[s]) for s in sorted(chosen))
        stopped_at = None
        if unfinished and rng.random() < unfinished:
            stopped_at = rng.randint(2, len(SECTIONS))
            mistakes = tuple(k for k in mistakes if k.section < stopped_at)
        class_.append(Synthetic(synthetic_result(f"learner{index:02d}", list(mistakes),
                                                 known, stopped_at=stopped_at), mistakes))
    return class_


def write_grades(results: list[SubmissionResult], path: Path) -> Path:
    """`results` as `python -m grading --json` writes them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = {"sections": [s.number for s in SECTIONS], "generated": True}
    path.write_text(json_report(results, settings))
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.class_example",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR")
    p.add_argument("--size", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--unfinished", type=float, default=0.0, metavar="SHARE",
                   help="the share of submissions that stop at some section (default 0)")
    p.add_argument("--figure", type=Path, metavar="PNG", help="a copy of the report's figure")
    args = p.parse_args(argv)
    from grading.report import write_report

    known = catalogue_known()
    results = [s.result for s in generate(known, args.size, args.seed, args.unfinished)]
    grades = write_grades(results, args.out / "grades.json")
    for path in write_report(results, args.out, str(grades), known):
        print(path)
        if args.figure and path.suffix == ".png":
            args.figure.parent.mkdir(parents=True, exist_ok=True)
            args.figure.write_bytes(path.read_bytes())
            print(args.figure)
    print(json.dumps({"submissions": len(results), "mistakes known": len(known)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
