"""The mistakes catalogue: it applies to today's reference, it names real tests, and its
runner tells a caught mistake from one that no test sees, and a correct alternative that
every test passes from one that a test rejects."""

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from course.registry import ROOT, SECTIONS, find_section
from tools.mistakes import (
    Alternative,
    CatalogueError,
    Edit,
    Mistake,
    apply_edits,
    difference,
    load_catalogue,
    reference_code,
    take_reference,
)

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)

CATALOGUE = load_catalogue()
MISTAKES = [m for m in CATALOGUE if isinstance(m, Mistake)]
ALTERNATIVES = [m for m in CATALOGUE if isinstance(m, Alternative)]

MODULE = '''\
def loss(a, b):
    """Doc."""
    # BEGIN SOLUTION
    total = a + b
    if total > 0:
        total = total * 2
    return total
    # END SOLUTION


def given(a):
    return a + b
'''


LEARNER_CODE = (("given", "return a + b\n"),
                ("loss", "total = a + b\nif total > 0:\n    total = total * 2\nreturn total\n"))


def mistake(*edits: Edit) -> Mistake:
    return Mistake("m", "a mistake", "test_x", edits, find_section(1), LEARNER_CODE)


def test_the_catalogue_has_mistakes_and_alternatives_in_every_section():
    assert len(MISTAKES) >= 100, f"the catalogue holds {len(MISTAKES)} mistakes"
    for kind, entries in (("mistakes", MISTAKES), ("alternatives", ALTERNATIVES)):
        covered = {m.section for m in entries}
        assert covered == set(SECTIONS), f"no {kind} for {set(SECTIONS) - covered}"


def test_every_mistake_applies_to_the_reference():
    for m in CATALOGUE:
        path = ROOT / "solutions" / f"{m.section.module}.py"
        source = path.read_text()
        assert apply_edits(source, m, str(path)) != source, m.id


def test_every_mistake_names_a_test_of_its_own_section():
    for m in MISTAKES:
        path = ROOT / "tests" / "sections" / f"test_{m.section.module}.py"
        names = {node.name for node in ast.parse(path.read_text()).body
                 if isinstance(node, ast.FunctionDef)}
        assert m.caught_by in names, f"{m.id}: {path.name} has no {m.caught_by}"


def test_every_description_is_one_line():
    for m in MISTAKES:
        assert "\n" not in m.mistake and m.mistake and m.concept, m.id
    for m in ALTERNATIVES:
        assert "\n" not in m.variant and m.variant, m.id


def test_catalogue_files_are_named_after_sections():
    modules = {s.module for s in SECTIONS}
    for path in (ROOT / "mistakes").glob("s*.py"):
        assert path.stem in modules, path


def test_a_one_line_edit_replaces_text_within_a_line():
    edited = apply_edits(MODULE, mistake(Edit("loss", "a + b", "a - b")), "m.py")
    assert "    total = a - b\n" in edited and "return a + b" in edited  # `given` is untouched


def test_a_block_edit_keeps_relative_indentation_and_can_delete():
    edit = Edit("loss", """
        if total > 0:
            total = total * 2
    """, """
        if total > 0:
            total = total * 3
            total += 1
    """)
    edited = apply_edits(MODULE, mistake(edit, Edit("loss", "return total\n", "")), "m.py")
    assert "    if total > 0:\n        total = total * 3\n        total += 1\n" in edited
    assert "return total" not in edited


def test_a_mistake_is_listed_as_a_diff_of_the_learner_code():
    diff = difference(mistake(Edit("loss", "a + b", "a - b")))
    assert "-total = a + b\n+total = a - b\n" in diff and "given" not in diff


def test_a_mistake_survives_a_refactor_of_the_reference():
    """The edits apply to the catalogue's copy of the learner's code, which then replaces the
    block whole: a reference rewritten in other words changes nothing of the mistake."""
    refactored = MODULE.replace("    total = a + b\n", "    total = b + a\n").replace(
        "total = total * 2", "total *= 2")
    first, second = (apply_edits(module, mistake(Edit("loss", "a + b", "a - b")), "m.py")
                     for module in (MODULE, refactored))
    assert first == second and "    total = a - b\n    if total > 0:\n" in first


def test_learner_code_that_differs_from_the_reference_runs_as_an_alternative(tmp_path):
    """The copy is checked as a correct alternative once the reference moves away from it,
    and only then."""
    section = find_section(2)
    [(function, code)] = reference_code(section, ["build_vocab"])
    entry = ('MISTAKES = []\nALTERNATIVES = []\nLEARNER_CODE = {%r: %r}\n')
    (tmp_path / "s2_corpus.py").write_text(entry % (function, code))
    assert load_catalogue(tmp_path) == []
    (tmp_path / "s2_corpus.py").write_text(entry % (function, "# reworded\n" + code))
    [copy] = load_catalogue(tmp_path)
    assert isinstance(copy, Alternative) and not copy.edits and copy.id == "s2_corpus-learner-code"


@pytest.mark.parametrize("edit, problem", [
    (Edit("loss", "a * b", "a"), "0 times"),
    (Edit("loss", "total", "t"), "times"),  # ambiguous: several places
    (Edit("given", "a + b", "a"), "no marked code"),  # given code is not the learner's
    (Edit("loss", "if total > 0:", "if total > 0"), "does not parse"),
    (Edit("loss", "a + b", "a + b"), "changes nothing"),
])
def test_an_edit_that_does_not_apply_is_an_error(edit, problem):
    with pytest.raises(CatalogueError, match=problem):
        apply_edits(MODULE, mistake(edit), "m.py")


def test_the_runner_reports_a_mistake_that_no_test_catches(tmp_path):
    """Two mistakes of section 2: one its test catches, and one that changes nothing the
    test can see (an equivalent rewrite), which must count as not caught; two alternatives:
    a correct one, and one that a test rejects, which must count as failing."""
    (tmp_path / "s2_corpus.py").write_text(textwrap.dedent('''
        from course.registry import find_section
        from tools.mistakes import Alternative, Edit, Mistake, reference_code

        LEARNER_CODE = dict(reference_code(find_section(2), ["build_vocab"]))
        TEST = "test_special_tokens_have_fixed_indices"
        NUMBERING = "[*SPECIAL_TOKENS, *words]"
        MISTAKES = [
            Mistake("specials-last", "specials last", TEST,
                    [Edit("build_vocab", NUMBERING, "[*words, *SPECIAL_TOKENS]")]),
            Mistake("same-thing", "an equivalent rewrite", TEST,
                    [Edit("build_vocab", NUMBERING, "[*SPECIAL_TOKENS] + words")]),
        ]
        ALTERNATIVES = [
            Alternative("concatenated", "a list concatenation",
                        [Edit("build_vocab", NUMBERING, "[*SPECIAL_TOKENS] + words")]),
            Alternative("not-an-alternative", "specials last",
                        [Edit("build_vocab", NUMBERING, "[*words, *SPECIAL_TOKENS]")]),
        ]
    '''))
    run = subprocess.run([sys.executable, "-m", "tools.mistakes", "--catalogue", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    lines = run.stdout.strip().splitlines()
    assert run.returncode == 1, run.stdout + run.stderr
    assert lines[-1] == "1 of 2 mistakes caught, 1 of 2 correct alternatives pass", run.stdout
    assert "caught by test_special_tokens_have_fixed_indices" in run.stdout
    assert "NOT CAUGHT: test_special_tokens_have_fixed_indices did not fail" in run.stdout
    assert "passes all" in run.stdout
    assert re.search(r"REJECTED: \d+ test\(s\) fail it, e\.g\. test_", run.stdout), run.stdout
    again = subprocess.run([sys.executable, "-m", "tools.mistakes", "--catalogue", str(tmp_path)],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "2 checked now, 2 as " in again.stdout, again.stdout  # what passed is recorded
    assert again.stdout.strip().splitlines()[-1] == lines[-1]
    catalogue = tmp_path / "s2_corpus.py"

    def edited(old: str, new: str) -> str:
        catalogue.write_text(catalogue.read_text().replace(old, new, 1))
        return subprocess.run([sys.executable, "-m", "tools.mistakes", "--catalogue",
                               str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                              timeout=300).stdout

    reworded = edited('"specials last"', '"the specials last"')
    assert "2 checked now, 2 as " in reworded, reworded  # its words decide nothing
    changed = edited('"[*words, *SPECIAL_TOKENS]"', '"[*words[::-1], *SPECIAL_TOKENS]"')
    assert "3 checked now, 1 as " in changed, changed  # an edited entry runs again


def test_a_catalogue_file_named_after_no_section_is_an_error(tmp_path):
    (tmp_path / "s9_nothing.py").write_text("MISTAKES = []\n")
    with pytest.raises(CatalogueError, match="not named after a section"):
        load_catalogue(Path(tmp_path))


def test_taking_the_reference_rewrites_the_learner_code_and_keeps_the_entries(tmp_path):
    section = find_section(2)
    [(function, code)] = reference_code(section, ["build_vocab"])
    numbering = "[*SPECIAL_TOKENS, *words]"
    (tmp_path / "s2_corpus.py").write_text(textwrap.dedent(f'''
        from tools.mistakes import Edit, Mistake

        LEARNER_CODE = {{{function!r}: {"# an older copy" + chr(10) + code!r}}}
        MISTAKES = [Mistake("specials-last", "specials last", "test_x",
                            [Edit("build_vocab", {numbering!r}, "[*words, *SPECIAL_TOKENS]")])]
    '''))
    assert [e.id for e in load_catalogue(tmp_path)] == ["specials-last", "s2_corpus-learner-code"]
    take_reference(section, tmp_path)
    [entry] = load_catalogue(tmp_path)
    assert dict(entry.learner_code) == {function: code} and entry.id == "specials-last"
