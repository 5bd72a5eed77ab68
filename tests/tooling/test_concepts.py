"""The concepts of the section tests (`course/concepts.toml`) agree with the tests, the
reference and course.toml's weights, and every record of a run names its test's concept."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from course import concepts, registry
from course.registry import REFERENCE_DIR, ROOT, SECTIONS
from tests.tooling.conftest import SOLUTION_RESULTS
from tools.exercises import find_blocks


def section_test_names(section) -> list[str]:
    """The names of the test functions of a section's file."""
    tree = ast.parse(section.test_file.read_text())
    return [node.name for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test_")]


def test_the_file_loads_and_every_id_is_unique_and_well_formed():
    assert concepts.CONCEPTS == concepts.load(), "the file loads without a problem"
    ids = [c.id for c in concepts.CONCEPTS]
    assert not [i for i, n in Counter(ids).items() if n > 1], "every id once"
    for concept in concepts.CONCEPTS:
        assert concept.id == concept.id.lower() and " " not in concept.id, concept.id
        assert concept.title and "\n" not in concept.title and len(concept.title) <= 100, (
            f"{concept.id}: a title is one short line")
        assert concept.tests, f"{concept.id} names no test"


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.name)
def test_every_section_test_belongs_to_exactly_one_concept(section):
    tests = section_test_names(section)
    named = [t for c in concepts.of_section(section.number) for t in c.tests]
    twice = sorted(t for t, n in Counter(named).items() if n > 1)
    assert not twice, f"in more than one concept of section {section.number}: {twice}"
    unnamed = [t for t in tests if t not in named]
    assert not unnamed, (f"tests of {section.test_file.name} in no concept: {unnamed}; "
                         "add each to one in course/concepts.toml")
    missing = [t for t in named if t not in tests]
    assert not missing, (f"course/concepts.toml names tests that {section.test_file.name} "
                         f"does not have: {missing}")


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.name)
def test_each_concept_is_about_a_learner_function_of_its_section(section):
    path = REFERENCE_DIR / section.file_name
    functions = [b.function for b in find_blocks(path.read_text(), str(path))]
    for concept in concepts.of_section(section.number):
        assert concept.function in functions, (
            f"{concept.id}: {concept.function} is not a function that section {section.number}"
            f" asks the learner to write ({functions})")


def test_every_concept_lies_in_a_section_of_the_registry():
    numbers = {s.number for s in SECTIONS}
    assert {c.section for c in concepts.CONCEPTS} <= numbers


def unknown_weights(section) -> list[str]:
    """The concept ids that `section`'s weights (course.toml) name and its concepts do not."""
    return [c for c, _ in section.weights
            if c not in {k.id for k in concepts.of_section(section.number)}]


def test_every_weight_in_course_toml_names_a_concept_of_its_section():
    for section in SECTIONS:
        assert not unknown_weights(section), (
            f"course.toml: section {section.number}'s weights name no concept of it: "
            f"{unknown_weights(section)}; its concepts: "
            f"{[c.id for c in concepts.of_section(section.number)]}")
    typo = dataclasses.replace(SECTIONS[0], weights=(("device-choise", 2),))
    assert unknown_weights(typo) == ["device-choise"]


@pytest.mark.parametrize("weights, loads", [
    ("{ device-choice = 2 }", True), ("{ device-choice = 0 }", False),
    ("{ device-choice = 1.5 }", False), ("{ device-choice = true }", False),
    ("[2]", False)])
def test_a_weight_is_a_whole_number_of_at_least_1(tmp_path, weights, loads):
    text = registry.REGISTRY_FILE.read_text().replace(
        'name = "setup"\n', f'name = "setup"\nweights = {weights}\n', 1)
    (tmp_path / "course.toml").write_text(text)
    if loads:
        assert registry._load(tmp_path / "course.toml")[0].weight("device-choice") == 2
    else:
        with pytest.raises(ValueError, match="section 1's weight"):
            registry._load(tmp_path / "course.toml")


def test_a_test_is_found_with_or_without_its_parameters():
    first = concepts.CONCEPTS[0]
    assert concepts.concept_of(first.section, first.tests[0]) == first
    assert concepts.concept_of(first.section, f"{first.tests[0]}[3-x]") == first
    assert concepts.concept_of(first.section + 1, first.tests[0]) != first
    assert concepts.concept_of(None, "test_nothing") is None


def test_every_record_of_a_run_names_its_concept(tmp_path):
    """The records that `make test-solutions` wrote in this `make check` (or, run alone, those
    of a run of sections 1 and 2 here) carry their test's concept."""
    results = SOLUTION_RESULTS
    tests_changed = max(p.stat().st_mtime for p in (ROOT / "tests" / "sections").glob("*.py"))
    if (not results.exists() or results.stat().st_mtime < tests_changed
            or "concept" not in json.loads(results.read_text())[0]):  # none, or stale
        results = tmp_path / "results.json"
        env = {k: v for k, v in os.environ.items() if k not in ("SECTION", "ELMO_IMPL")}
        subprocess.run([sys.executable, "-m", "pytest", "tests/sections/test_s1_setup.py",
                        "tests/sections/test_s2_corpus.py", "--impl", "solutions",
                        "--results-json", str(results)],
                       cwd=ROOT, env=env, capture_output=True, timeout=600)
    records = json.loads(results.read_text())
    assert records
    for record in records:
        concept = concepts.concept_of(record["section"], record["name"])
        assert concept is not None and record["concept"] == concept.id, record["nodeid"]
        assert record["ran_at"] and len(record["module_digest"]) == 64, record["nodeid"]
