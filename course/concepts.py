"""The concepts that the section tests check (`course/concepts.toml`, their one home).

    from course.concepts import CONCEPTS, concept_of
    concept_of(3, "test_layer_0_ignores_context").id        # 'layer-0-context-free'
    concept_of(3, "test_layer_0_ignores_context").function  # 'BiLM.forward'

Every test of a section belongs to exactly one concept of that section (a tooling test checks
it), so a test's record names its concept (`course.results`), and a failing test names the
learner function it is about (`course.hints`).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

CONCEPTS_FILE = Path(__file__).with_name("concepts.toml")


@dataclass(frozen=True)
class Concept:
    id: str
    section: int
    function: str  # the learner function it is about, as its stub names it
    title: str  # one line, in the learner's terms
    tests: tuple[str, ...]  # the test functions of the section's file that check it


def load(path: Path = CONCEPTS_FILE) -> tuple[Concept, ...]:
    """Every concept, in the file's order (course order)."""
    with path.open("rb") as f:
        entries = tomllib.load(f).get("concept", [])
    return tuple(Concept(**{**entry, "tests": tuple(entry["tests"])}) for entry in entries)


try:
    CONCEPTS: tuple[Concept, ...] = load()
except (OSError, ValueError, TypeError, KeyError):
    # A runtime without the file (or with a broken one) still runs and records its tests,
    # with no concept named; the tooling tests say what is wrong with the file.
    CONCEPTS = ()

_BY_TEST = {(c.section, test): c for c in CONCEPTS for test in c.tests}
_BY_ID = {c.id: c for c in CONCEPTS}


def concept_of(section: int | None, test: str) -> Concept | None:
    """The concept that test function `test` of section `section` checks; None if none does.
    `test` may carry pytest's parameters, `test_x[3]`: they are ignored."""
    return _BY_TEST.get((section, test.split("[")[0]))


def title_of(concept_id: str) -> str:
    """The title of the concept `concept_id`, in the learner's terms; the id itself when no
    concept has it (a runtime without concepts.toml)."""
    return _BY_ID[concept_id].title if concept_id in _BY_ID else concept_id


def of_section(section: int) -> tuple[Concept, ...]:
    return tuple(c for c in CONCEPTS if c.section == section)
