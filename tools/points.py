"""`make points`: a suggestion for each section's points, from the statements a learner
writes in it, beside the points that course.toml sets.

    python -m tools.points   # the table: statements, suggestion, course.toml's points

The points are the instructor's (course.toml); this only informs them and never fails, however
far they are from it. The suggestion: a section's share of the course's 100 points is its
share of the statements inside the reference's `# BEGIN SOLUTION` blocks, nested ones
counted, of the sections that are not a bonus; shares are rounded to steps of STEP points, at
least STEP each, the steps left over (or taken back) going to the largest remainders so that
the sum stays 100. A bonus section earns at the same rate, rounded to a step, on top of the
100. Statements are the unit because a learner's decisions are statements (a layer built, a
tensor reversed, a loss reduced), where lines count line breaks and docstrings count nothing
the learner writes.
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


def suggested_points(counts: dict[Section, int]) -> dict[Section, int]:
    """Each section's suggested points, from its statement count."""
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


def table(sections: tuple[Section, ...]) -> str:
    """One row per section: its statements, the suggestion and course.toml's points."""
    counts = {s: statements(s) for s in sections}
    suggested = suggested_points(counts)
    rows = [f"{'section':16} {'statements':>10} {'suggested':>9} {'course.toml':>11}"]
    for s in sections:
        mark = "  (differs)" if suggested[s] != s.points else ""
        rows.append(f"{s.number} {s.name:14} {counts[s]:>10} {suggested[s]:>9} "
                    f"{s.points:>11}{mark}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="python -m tools.points",
                            description=__doc__.split("\n\n")[0]).parse_args(argv)
    print(table(SECTIONS))
    print("The points that count are course.toml's, yours to set; the suggestion only informs.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
