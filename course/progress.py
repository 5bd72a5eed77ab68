"""The progress table: per section, tests passed of total, points, a bar, and the next step.

    python -m course.progress build/results.json [--impl exercises]

It reads the records that `course.results` writes, one per test. A section earns its points
(from `course.toml`) in proportion to the tests it passes (`section_points`, the formula the
grader uses too); a bonus section's points come on top of the 100. The next step is the first
unfinished section, with its hint from the registry and its first test that does not pass.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .registry import MAX_POINTS, RESULTS_FILE, ROOT, SECTIONS, Section, shown
from .results import ERROR, NOT_IMPLEMENTED, PASSED, STATUSES

BAR_WIDTH = 20


def section_points(section: Section, passed: int, total: int) -> float:
    """What a section earns: its points shared equally by its `total` tests."""
    return section.points * passed / total if total else 0.0


@dataclass(frozen=True)
class SectionProgress:
    """One section's test records (as `course.results` writes them), in the order they ran."""

    section: Section
    records: tuple[dict, ...]

    @property
    def total(self) -> int:
        return len(self.records)

    @property
    def passed(self) -> int:
        return sum(record["status"] == PASSED for record in self.records)

    @property
    def points(self) -> float:
        return section_points(self.section, self.passed, self.total)

    @property
    def done(self) -> bool:
        return self.total > 0 and self.passed == self.total

    @property
    def state(self) -> str:
        """"done", "not run", "not implemented yet", or the count of each other outcome."""
        if not self.total:
            return "not run"
        if self.done:
            return "done"
        counts = Counter(r["status"] for r in self.records if r["status"] != PASSED)
        if self.passed == 0 and set(counts) == {NOT_IMPLEMENTED}:
            return "not implemented yet"
        return ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])

    @property
    def first_problem(self) -> dict | None:
        return next((r for r in self.records if r["status"] != PASSED), None)


def summarise(records: list[dict]) -> list[SectionProgress]:
    """Every section of the registry, with the records of its tests (none if it did not run)."""
    return [SectionProgress(s, tuple(r for r in records if r["section"] == s.number))
            for s in SECTIONS]


def _number(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _bar(fraction: float) -> str:
    filled = round(fraction * BAR_WIDTH)
    return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {fraction:4.0%}"


def table(progress: list[SectionProgress]) -> str:
    """One row per section and a total: tests passed of total, points, a bar, the state."""
    width = max(len(p.section.name) + 8 * p.section.bonus for p in progress) + 4
    rows = [f"{'section':{width}} {'tests':>7} {'points':>9}  progress"]
    for p in progress:
        label = f"{p.section.number:2} {p.section.name}" + (" (bonus)" if p.section.bonus else "")
        tests = f"{p.passed}/{p.total}" if p.total else "-"
        points = f"{_number(p.points)}/{p.section.points}"
        bar = _bar(p.passed / p.total) if p.total else " " * (BAR_WIDTH + 7)
        rows.append(f"{label:{width}} {tests:>7} {points:>9}  {bar}  {p.state}")
    passed, total = sum(p.passed for p in progress), sum(p.total for p in progress)
    core = sum(p.points for p in progress if not p.section.bonus)
    bonus = sum(p.points for p in progress if p.section.bonus)
    points = f"{_number(core)}/{MAX_POINTS}"
    extra = f"  + {_number(bonus)} bonus" if any(p.section.bonus for p in progress) else ""
    rows.append(f"{'   total':{width}} {f'{passed}/{total}':>7} {points:>9}{extra}")
    return "\n".join(rows)


def next_step(progress: list[SectionProgress], impl_dir: Path) -> str:
    """What to do now: the first unfinished section that ran, its file, hint and first
    problem; or, when every section that ran passes, what is left."""
    unfinished = next((p for p in progress if p.total and not p.done), None)
    if unfinished is None:
        if all(p.done for p in progress):
            return f"All {len(progress)} sections pass. Well done."
        return "Every section that ran passes; `make test` runs them all."
    section, problem = unfinished.section, unfinished.first_problem
    # A test's own message comes before pytest's " assert ..." introspection: show only it.
    message, _, introspection = problem["message"].partition(" assert ")
    if introspection and message in ("AssertionError:", ""):
        message = problem["message"]
    reason = [f"    {message}"]
    if problem["status"] == ERROR and problem.get("checks"):
        reason = [f"    it checks: {problem['checks']}", f"    your code raised {message}"]
    return "\n".join([
        f"Next: section {section.number} ({section.name}), {section.title}, in "
        f"{shown(impl_dir / section.file_name)}",
        f"  hint: {section.hint}",
        f"  first test to pass: {problem['name']} ({problem['status']})",
        *reason,
        f"  then: make test SECTION={section.number}",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.progress",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, nargs="?", default=RESULTS_FILE,
                        help="the JSON that the tests' `--results-json` wrote")
    parser.add_argument("--impl", type=Path, default=Path("exercises"),
                        help="the implementation that was tested, for the next step's path")
    args = parser.parse_args(argv)
    try:
        records = json.loads(args.results.read_text())
    except (OSError, ValueError) as err:
        print(f"no test results in {args.results} ({err}): run `make test` first")
        return 1
    impl_dir = args.impl if args.impl.is_absolute() else (ROOT / args.impl)
    progress = summarise(records)
    print(f"\n{table(progress)}\n\n{next_step(progress, impl_dir)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
