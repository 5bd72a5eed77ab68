"""Points follow the work: each section's points from the statements a learner writes in it.

    python -m tools.points          # the table: statements and points per section
    python -m tools.points --check  # exit 1 when course.toml's points differ from the rule's

The rule (course.toml's header states it; this is its one home): a section's share of the
course's 100 points is its share of the statements inside the reference's
`# BEGIN SOLUTION` blocks, nested ones counted, of the sections that are not a bonus; shares
are rounded to steps of STEP points, at least STEP each, the steps left over (or taken back)
going to the largest remainders so that the sum stays 100. A bonus section earns at the same
rate, rounded to a step, on top of the 100. Statements are the unit because a learner's
decisions are statements (a layer built, a tensor reversed, a loss reduced), where lines
count line breaks and docstrings count nothing the learner writes.
"""

from __future__ import annotations

import argparse
import math
import sys

from course.registry import REFERENCE_DIR, SECTIONS, Section
from tools.exercises import find_blocks

STEP = 5
TOTAL = 100


def statements(section: Section) -> int:
    """How many statements the learner writes in `section`: those of its solution blocks."""
    path = REFERENCE_DIR / section.file_name
    return sum(len(block.statements) for block in find_blocks(path.read_text(), str(path)))


def rule_points(counts: dict[Section, int]) -> dict[Section, int]:
    """Each section's points under the rule, from its statement count."""
    core = [s for s in counts if not s.bonus]
    rate = TOTAL / sum(counts[s] for s in core)  # points per statement
    exact = {s: max(counts[s] * rate / STEP, 1.0) for s in core}  # in steps
    steps = {s: max(math.floor(exact[s]), 1) for s in core}
    short = TOTAL // STEP - sum(steps.values())  # > 0: steps to give; < 0: to take back
    by_remainder = sorted(core, key=lambda s: (exact[s] - steps[s], -s.number),
                          reverse=short > 0)
    for section in by_remainder[:abs(short)]:
        steps[section] += 1 if short > 0 else -1
    points = {s: steps[s] * STEP for s in core}
    for bonus in (s for s in counts if s.bonus):
        points[bonus] = max(round(counts[bonus] * rate / STEP), 1) * STEP
    return points


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="fail when course.toml's points are not the rule's")
    check = parser.parse_args(argv).check
    counts = {s: statements(s) for s in SECTIONS}
    points = rule_points(counts)
    print(f"{'section':16} {'statements':>10} {'rule':>5} {'course.toml':>11}")
    for s in SECTIONS:
        mark = "" if points[s] == s.points else "  <- differs"
        print(f"{s.number} {s.name:14} {counts[s]:>10} {points[s]:>5} {s.points:>11}{mark}")
    differs = [s for s in SECTIONS if points[s] != s.points]
    if check and differs:
        print("course.toml's points are not the rule's (tools/points.py): set "
              + ", ".join(f"section {s.number} to {points[s]}" for s in differs),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
