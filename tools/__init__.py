"""The maintainers' and instructors' tools: never shipped to learners.

    exercises   generate exercises/ from solutions/, and check it (`make exercises`)
    contract    check that the section tests rely on nothing the stubs do not state
    notebooks   build the notebooks from their sources, check them, run them both ways
    mistakes    the mistakes catalogue (`make mistakes`)
    mutation    mutation testing of solutions/ (`make mutation`)
    demo        the seed notebook end to end on the reference (`make demo`)
    results     the demo's results: their schema, targets, and the docs' tables from them
    bench       the benchmarks (`make bench`)
    release     the learners' handout (`make release`)
    autograder  the Gradescope bundle (`make autograder`)
    lock        the locks of the dependencies (`make lock`)

Every tool that runs the reference loads it as the tests do, through `course.harness`.
"""

from __future__ import annotations

from course.harness import Harness, Sections
from course.registry import REFERENCE_DIR, SECTIONS


def reference() -> Sections:
    """Every section of the reference, by name (`reference().bilm.BiLM`)."""
    return Harness(REFERENCE_DIR).sections(SECTIONS[-1])
