"""The learner's side: exercises generated from solutions, markers, parity, isolation,
messages, progress, and the soundness of the section tests (0 on the stubs, 100% on the
reference)."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from course.harness import Harness
from course.progress import SectionProgress, next_step, summarise, table
from course.registry import FAKES_DIR, ROOT, SECTIONS, STUB_MESSAGE, find_section
from course.results import NOT_IMPLEMENTED, PASSED
from tests.tooling.conftest import fresh_solution_results
from tools import exercises as gen

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)

BILM = find_section("bilm")
HARNESS_PACKAGE = re.compile(r"elmo_[0-9a-f]{16}")  # what the harness names its packages


def stubbed(source: str) -> list[str]:
    """The lines of the exercise for `source`, as section 3, without the header."""
    header_lines = len(gen.HEADER.splitlines())
    return gen.stub_module(textwrap.dedent(source), BILM).splitlines()[header_lines:]


# --- blocks become stubs ------------------------------------------------------------------

def test_a_block_becomes_the_stub_and_every_other_line_stays():
    source = '''\
        import torch


        def scale(x: torch.Tensor, by: float = 2.0) -> torch.Tensor:
            """(N,) x times `by`."""
            # BEGIN SOLUTION
            y = x * by
            return y
            # END SOLUTION


        class Model:
            """A model."""

            def forward(self, x):
                """Run it."""
                # BEGIN SOLUTION
                return x
                # END SOLUTION
        '''
    lines = textwrap.dedent(source).splitlines()
    expected = [*lines[:5],
                '    raise NotImplementedError("section 3 (bilm): scale is not implemented yet")',
                *lines[9:16],
                '        raise NotImplementedError("section 3 (bilm): Model.forward is not '
                'implemented yet")']
    assert stubbed(source) == expected


def test_code_after_a_block_stays_and_nested_scopes_name_the_function():
    lines = stubbed('''\
        class Outer:
            class Inner:
                def step(self, x):
                    """One step."""
                    # BEGIN SOLUTION
                    x = x + 1
                    # END SOLUTION
                    return x
        ''')
    assert lines[4:] == [
        '            raise NotImplementedError("section 3 (bilm): Outer.Inner.step is not '
        'implemented yet")',
        "            return x",
    ]


def test_the_header_names_the_section_and_keeps_the_docstring_first():
    exercise = gen.stub_module('"""Doc."""\n\ndef f():\n    # BEGIN SOLUTION\n    return 1\n'
                               '    # END SOLUTION\n', BILM)
    assert exercise.startswith("# Section 3 of the ELMo course.")
    assert "make test SECTION=3" in exercise.splitlines()[1]
    assert ast.get_docstring(ast.parse(exercise)) == "Doc."


def test_windows_line_endings_are_kept():
    exercise = gen.stub_module("def f():\r\n    # BEGIN SOLUTION\r\n    return 1\r\n"
                               "    # END SOLUTION\r\n", BILM)
    assert exercise.endswith('not implemented yet")\r\n')


def test_a_form_feed_does_not_shift_the_lines():
    exercise = gen.stub_module('def f():\n    """One\x0cpage."""\n    # BEGIN SOLUTION\n'
                               '    return 1\n    # END SOLUTION\n', BILM)
    assert exercise.endswith('    """One\x0cpage."""\n    raise NotImplementedError("section 3 '
                             '(bilm): f is not implemented yet")\n')


@pytest.mark.parametrize("body, complaint", [
    ("    x = 1  # BEGIN SOLUTION\n    # END SOLUTION\n", "whole line"),
    ("    # begin solution\n    x = 1\n    # END SOLUTION\n", "whole line"),
    ("    x = 1\n    # END SOLUTION\n", "without a"),
    ("    # BEGIN SOLUTION\n    x = 1\n", "never closed"),
    ("    # BEGIN SOLUTION\n    # BEGIN SOLUTION\n    x = 1\n    # END SOLUTION\n"
     "    # END SOLUTION\n", "cannot nest"),
    ("    # BEGIN SOLUTION\n    x = 1\n        # END SOLUTION\n", "line up"),
    ("    # BEGIN SOLUTION\n    # END SOLUTION\n    x = 1\n", "no code"),
    ("    # BEGIN SOLUTION\n    if x:\n        y = 1\n    else:\n        # END SOLUTION\n"
     "        y = 2\n", "line up"),
    ("    if x:\n        # BEGIN SOLUTION\n        y = 1\n    else:\n        y = 2\n"
     "        # END SOLUTION\n", "one body"),
    ("    # BEGIN SOLUTION\n    y = [\n    # END SOLUTION\n        1]\n", "whole statements"),
])
def test_a_malformed_marker_is_an_error_naming_the_line(body, complaint):
    with pytest.raises(gen.MarkerError, match=complaint) as error:
        gen.stub_module(f"def f(x):\n{body}", BILM, "s3_bilm.py")
    assert "s3_bilm.py:" in str(error.value)


@pytest.mark.parametrize("source, complaint", [
    ("# BEGIN SOLUTION\nx = 1\n# END SOLUTION\n", "function's body"),
    ("class A:\n    # BEGIN SOLUTION\n    x = 1\n    # END SOLUTION\n", "function's body"),
    ('def f():\n    # BEGIN SOLUTION\n    """Doc."""\n    return 1\n    # END SOLUTION\n',
     "docstring"),
    ("def f():\n    return 1\n", "nothing for a learner"),
])
def test_a_block_outside_a_function_body_is_an_error(source, complaint):
    with pytest.raises(gen.MarkerError, match=complaint):
        gen.stub_module(source, BILM)


def test_the_stub_message_is_parsed_back():
    match = STUB_MESSAGE.search("section 7 (layer_weights): ScalarMix.forward is not "
                                    "implemented yet")
    assert (match["number"], match["name"], match["function"]) == (
        "7", "layer_weights", "ScalarMix.forward")


# --- the committed exercises --------------------------------------------------------------

def test_every_section_has_an_exercise_with_the_reference_docstrings():
    for section in SECTIONS:
        exercise = ROOT / "exercises" / f"{section.module}.py"
        assert exercise.exists(), f"{exercise} is missing"
        docstrings = [_docstrings(root / f"{section.module}.py") for root in
                      (ROOT / "solutions", ROOT / "exercises")]
        assert docstrings[0] == docstrings[1], f"{section.module}: docstrings differ"
        assert f"section {section.number} ({section.name}): " in exercise.read_text()


def _docstrings(path: Path) -> list[str | None]:
    nodes = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(
        n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)]
    return [ast.get_docstring(n) for n in nodes]


# --- never over a learner's work ----------------------------------------------------------

@pytest.fixture
def trees(tmp_path):
    """A copy of solutions/ and the exercises generated from it: (solutions, exercises)."""
    solutions, exercises = tmp_path / "solutions", tmp_path / "exercises"
    shutil.copytree(ROOT / "solutions", solutions)
    gen.write_exercises(solutions, exercises)
    return solutions, exercises


def test_the_generator_refuses_to_overwrite_the_learners_work(trees):
    solutions, exercises = trees
    work = exercises / "s3_bilm.py"
    work.write_text(work.read_text() + "\n# my notes\n")
    reference = solutions / "s1_setup.py"
    reference.write_text(reference.read_text() + "\n# changed\n")
    before = {p.name: p.read_bytes() for p in exercises.iterdir()}
    with pytest.raises(gen.WouldOverwrite) as refused:
        gen.write_exercises(solutions, exercises)
    assert refused.value.names == ["s3_bilm.py"]
    assert {p.name: p.read_bytes() for p in exercises.iterdir()} == before, "nothing is written"
    gen.write_exercises(solutions, exercises, force=True)
    assert "# my notes" not in work.read_text() and "# changed" in (
        exercises / "s1_setup.py").read_text()


def test_the_generator_updates_the_files_it_wrote_itself(trees):
    solutions, exercises = trees
    reference = solutions / "s2_corpus.py"
    reference.write_text(reference.read_text().replace("Toy corpus", "A toy corpus"))
    assert gen.write_exercises(solutions, exercises) == ["s2_corpus.py", gen.MANIFEST]
    assert "A toy corpus" in (exercises / "s2_corpus.py").read_text()


def test_without_a_record_of_what_was_generated_every_difference_is_the_learners(trees):
    solutions, exercises = trees
    (exercises / gen.MANIFEST).unlink()
    reference = solutions / "s2_corpus.py"
    reference.write_text(reference.read_text() + "\n# changed\n")
    with pytest.raises(gen.WouldOverwrite):
        gen.write_exercises(solutions, exercises)


# --- what `--check` catches ---------------------------------------------------------------

def test_check_finds_stale_and_edited_exercises(trees):
    solutions, exercises = trees
    assert gen.check(solutions, exercises) == []
    (solutions / "s2_corpus.py").write_text((solutions / "s2_corpus.py").read_text() + "\n")
    (exercises / "s4_pretrain.py").write_text("# mine\n" + (exercises / "s4_pretrain.py")
                                              .read_text())
    problems = "\n".join(gen.check(solutions, exercises))
    assert "s2_corpus.py is stale against solutions/" in problems
    assert "s4_pretrain.py was edited after it was generated" in problems


def test_check_finds_solution_code_left_in_exercises(trees):
    solutions, exercises = trees
    stub = 'raise NotImplementedError("section 4 (pretrain): bilm_loss is not implemented yet")'
    body = (solutions / "s4_pretrain.py").read_text().split("def bilm_loss")[1]
    body = body.split("# BEGIN SOLUTION\n")[1].split("    # END SOLUTION")[0]
    exercise = exercises / "s4_pretrain.py"
    exercise.write_text(exercise.read_text().replace(f"    {stub}\n", body))
    leaks = gen.check(solutions, exercises)
    assert any("s4_pretrain.py holds" in leak and "s4_pretrain.py: bilm_loss" in leak
               for leak in leaks), leaks


def test_check_finds_a_broken_marker(trees):
    solutions, _ = trees
    reference = solutions / "s1_setup.py"
    reference.write_text(reference.read_text().replace("    # END SOLUTION\n", "", 1))
    assert any("s1_setup.py:" in p and "cannot nest" in p for p in gen.check(solutions,
                                                                               trees[1]))


def test_parity_finds_a_changed_signature_and_a_missing_name(trees):
    solutions, exercises = trees
    exercise = exercises / "s2_corpus.py"
    text = exercise.read_text().replace("def decode(ids: Iterable[int], idx2word",
                                        "def decode(ids, idx2word")
    exercise.write_text(text.replace("PAD, UNK, BOS, EOS = 0, 1, 2, 3", "PAD, UNK, BOS = 0, 1, 2"))
    problems = gen.parity_problems(solutions, exercises)
    assert any("decode: expected `def decode(ids: Iterable[int]" in p for p in problems), problems
    assert any("EOS is missing" in p for p in problems), problems


def test_a_stub_keeps_the_signature_that_parity_compares():
    surface = gen.public_surface((ROOT / "exercises" / "s3_bilm.py").read_text())
    assert surface["BiLM.forward"] == (
        "def forward(self, ids: torch.Tensor, lengths: torch.Tensor | None=None) -> BiLMOutput")
    assert "BiLM._run_stack" not in surface, "private helpers are not part of the interface"


# --- soundness and isolation: the section tests run as a learner runs them -----------------

def run_section_tests(impl: Path, results: Path, sections=SECTIONS) -> subprocess.CompletedProcess:
    """The tests of `sections` against `impl`, as a learner runs them."""
    env = {k: v for k, v in os.environ.items() if k not in ("SECTION", "ELMO_IMPL",
                                                            "HYPOTHESIS_PROFILE")}
    files = [f"tests/sections/test_{section.module}.py" for section in sections]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *files, "--impl", str(impl),
         "--results-json", str(results)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )


def statuses_by_section(results: Path) -> dict[int, list[str]]:
    records = json.loads(results.read_text())
    return {s.number: [r["status"] for r in records if r["section"] == s.number]
            for s in SECTIONS}


def _misfits(results: Path, wanted: str) -> list[str]:
    return [f"{r['nodeid']}: {r['status']}" for r in json.loads(results.read_text())
            if r["status"] != wanted]


@pytest.fixture(scope="module")
def pristine_run(tmp_path_factory):
    results = tmp_path_factory.mktemp("pristine") / "results.json"
    return run_section_tests(ROOT / "exercises", results), results


def test_every_section_scores_zero_on_the_pristine_stubs(pristine_run):
    run, results = pristine_run
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    for number, statuses in statuses_by_section(results).items():
        assert statuses, f"section {number} has no tests"
    assert not _misfits(results, NOT_IMPLEMENTED), (
        "on the stubs every test should read 'not implemented'; a test that passes there "
        f"checks nothing a learner writes: {_misfits(results, NOT_IMPLEMENTED)}")


def test_the_stubs_read_as_not_implemented_yet(pristine_run):
    run, results = pristine_run
    assert all("is not implemented yet" in r["message"] for r in json.loads(results.read_text()))
    assert re.search(r"=+ not implemented yet =+", run.stdout), run.stdout[-3000:]
    for section in SECTIONS:
        assert f"exercises/{section.module}.py:" in run.stdout, run.stdout[-3000:]
    assert "FAILURES" not in run.stdout, "a stub is not a wrong answer"
    assert not HARNESS_PACKAGE.search(run.stdout) and "/tmp/" not in run.stdout


def test_every_section_scores_full_marks_on_the_reference(tmp_path):
    results = fresh_solution_results()
    if results is None or not all(statuses_by_section(results).values()):
        results = tmp_path / "solutions.json"  # not from this run of `make check`: run them
        run_section_tests(ROOT / "solutions", results)
    for number, statuses in statuses_by_section(results).items():
        assert statuses, f"section {number} has no tests"
    assert not _misfits(results, PASSED), _misfits(results, PASSED)


@pytest.fixture(scope="module")
def one_section_done(tmp_path_factory):
    """The exercises with solutions' section 1 copied in, a syntax error in section 2 and a
    function deleted from section 3: the submission, and the results of sections 1-4 on it.
    (Section 4's tests use the fakes of sections 1-3; those of sections 5-7 meet only their
    own stub, as `test_with_one_solution_module_copied_...` shows, which scores 0 on the
    pristine run.)"""
    impl = tmp_path_factory.mktemp("submission") / "impl"
    shutil.copytree(ROOT / "exercises", impl)
    shutil.copy(ROOT / "solutions" / "s1_setup.py", impl)
    with (impl / "s2_corpus.py").open("a") as f:
        f.write("\ndef unfinished(:\n")
    bilm = (impl / "s3_bilm.py").read_text()
    start = bilm.index("def reverse_within_lengths")
    (impl / "s3_bilm.py").write_text(bilm[:start] + bilm[bilm.index("class BiLM(", start):])
    results = impl.parent / "results.json"
    return impl, run_section_tests(impl, results, SECTIONS[:4]), results


def test_copying_one_solution_module_makes_exactly_that_section_pass(one_section_done):
    impl, run, results = one_section_done
    statuses = statuses_by_section(results)
    assert set(statuses[1]) == {PASSED}, run.stdout[-3000:]
    assert set(statuses[2]) == {"error"} and "s2_corpus.py:" in run.stdout
    assert PASSED not in statuses[3] and "error" in statuses[3], statuses[3]
    assert set(statuses[4]) == {NOT_IMPLEMENTED}, (
        "section 4's tests should see only its own stub, not the syntax error of section 2 "
        f"nor the missing function of section 3: {statuses[4]}")
    assert str(impl / "s2_corpus.py") in run.stdout, "the learner's own file"
    assert not HARNESS_PACKAGE.search(run.stdout), "modules by the folder they come from"


def test_make_test_for_the_finished_section_exits_zero_and_shows_progress(one_section_done):
    impl, _, results = one_section_done
    env = {k: v for k, v in os.environ.items() if k not in ("SECTION", "MAKEFLAGS")}
    # -o: never reinstall .venv from here, even if pyproject.toml is newer than the install
    run = subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed", "test",
                          "SECTION=setup", f"ELMO_IMPL={impl}",
                          f"RESULTS={results.with_name('one.json')}"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " 1 setup" in run.stdout and "done" in run.stdout
    assert "Next: section 2 (corpus)" in run.stdout, "the first section not done, run or not"


@pytest.mark.parametrize("done", SECTIONS, ids=lambda s: s.name)
def test_with_one_solution_module_copied_its_tests_run_it_and_the_fakes_alone(tmp_path, done):
    """`make test SECTION=n` on such a copy runs what `make test-solutions SECTION=n` runs
    (which passes): the copied module, and of the other sections the tests' fakes, never the
    learner's own, whatever they hold (a stub here)."""
    impl = tmp_path / "impl"
    shutil.copytree(ROOT / "exercises", impl)
    shutil.copy(ROOT / "solutions" / f"{done.module}.py", impl)
    learner = Harness(impl, FAKES_DIR)
    for section in SECTIONS:
        if section == done:
            assert learner.source_for(done, section).read_bytes() == (
                ROOT / "solutions" / section.file_name).read_bytes()
        else:
            assert learner.source_for(done, section) == FAKES_DIR / section.file_name


# --- what a failing test says -------------------------------------------------------------

def test_a_shape_mismatch_names_the_dimension():
    from course.report import pytest_assertrepr_compare

    lines = pytest_assertrepr_compare(None, "==", torch.Size([3, 7, 1, 256]), (3, 7, 1, 512))
    assert "found shape (3, 7, 1, 256), expected (3, 7, 1, 512)" in lines
    assert "dimension 3: found 256, expected 512" in lines
    fewer = pytest_assertrepr_compare(None, "==", (3, 7), torch.Size([3, 7, 512]))
    assert "found 3 dimensions, expected 2" in fewer
    assert pytest_assertrepr_compare(None, "==", (1, 2), (1, 3)) is None, "plain tuples"


def test_an_error_in_the_learners_code_says_what_the_test_checks(tmp_path):
    """A pad_batch that raises: the report says what the test checks, from its docstring,
    that the learner's code raised instead, and shows the learner's line."""
    impl = tmp_path / "impl"
    shutil.copytree(ROOT / "exercises", impl)
    reference = (ROOT / "solutions" / "s2_corpus.py").read_text()
    (impl / "s2_corpus.py").write_text(reference.replace(
        "ids = torch.full((int(lengths.max()), len(sequences))",
        "ids = torch.full((len(sequences[0]), len(sequences))"))
    results = tmp_path / "results.json"
    env = {k: v for k, v in os.environ.items() if k not in ("SECTION", "ELMO_IMPL")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest",
         "tests/sections/test_s2_corpus.py::test_pad_batch_is_time_major_and_pads_at_the_end",
         "--impl", str(impl), "--results-json", str(results)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert ("test_pad_batch_is_time_major_and_pads_at_the_end checks: (max_len, B) long ids"
            in run.stdout), run.stdout[-3000:]
    assert "Your code raised RuntimeError instead:" in run.stdout, run.stdout[-3000:]
    assert "s2_corpus.py:" in run.stdout and "len(sequences[0])" not in run.stdout.split(
        "Your code raised")[0], "the learner's frames come after what the test checks"
    [recorded] = json.loads(results.read_text())
    assert recorded["status"] == "error" and recorded["checks"].startswith("(max_len, B) long")


def test_an_error_in_the_tests_own_line_is_not_blamed_on_the_learners_code():
    """A test that trips over what the learner's code returned (a gradient that is None)
    says so, not "your code raised"."""
    from course.registry import TESTS_DIR
    from course.report import _raised_in_the_test

    def raised_in(filename):
        scope = {}
        exec(compile("def read(grad):\n    return grad.abs()\n", filename, "exec"), scope)
        try:
            scope["read"](None)
        except AttributeError as err:
            return _raised_in_the_test(err)
        raise AssertionError("reading None's .abs() should raise")

    assert raised_in(str(TESTS_DIR / "test_s7_layer_weights.py"))
    assert not raised_in(str(ROOT / "exercises" / "s7_layer_weights.py"))


# --- progress -----------------------------------------------------------------------------

def record(section: int, status: str, name: str = "test_x", message: str = "") -> dict:
    return {"nodeid": f"t::{name}", "section": section, "name": name, "status": status,
            "message": message}


def test_progress_gives_points_in_proportion_and_the_next_step():
    wrong_shape = ("AssertionError: layers: expected (3, 7, 1, 512) "
                   "assert torch.Size([3, 7, 1, 256]) == (3, 7, 1, 512)")
    records = [record(1, PASSED)] * 4 + [record(2, PASSED)] + [
        record(3, PASSED), record(3, "failed", "test_shapes", wrong_shape),
        record(3, NOT_IMPLEMENTED), record(3, PASSED),
        record(4, NOT_IMPLEMENTED)]
    progress = summarise(records)
    rows = table(progress).splitlines()
    setup, corpus, bilm, bonus = (find_section(n) for n in ("setup", "corpus", "bilm",
                                                            "char_encoder"))
    points = [f"{setup.points}/{setup.points}", f"{bilm.points / 2:g}/{bilm.points}"]
    assert rows[1].split()[:4] == ["1", "setup", "4/4", points[0]] and rows[1].endswith("done")
    assert rows[3].split()[:4] == ["3", "bilm", "2/4", points[1]]
    assert rows[3].endswith("1 failed, 1 not implemented") and "[##########..........]" in rows[3]
    assert rows[4].endswith("not implemented yet") and rows[5].endswith("not run")
    assert rows[8].split()[:5] == ["8", "char_encoder", "(bonus)", "-", f"0/{bonus.points}"]
    earned = setup.points + corpus.points + bilm.points / 2
    assert rows[-1].split() == ["total", "7/10", f"{earned:g}/100", "+", "0", "bonus"], (
        "the bonus section's points come on top of the 100")
    step = next_step(progress, ROOT / "exercises")
    assert "section 3 (bilm)" in step and "exercises/s3_bilm.py" in step
    assert "test_shapes (failed)" in step and "SECTION=3" in step
    assert BILM.question not in step, "once a section has run, its first problem"
    assert BILM.question in next_step(progress[:2] + [SectionProgress(BILM, ())] + progress[3:],
                                      ROOT / "exercises"), "before its first run, its question"
    assert "layers: expected (3, 7, 1, 512)" in step and "torch.Size" not in step


def test_the_next_step_of_an_error_says_what_the_test_checks():
    problem = record(2, "error", "test_pad", "RuntimeError: The expanded size of the tensor")
    problem["checks"] = "pad_batch gives (max_len, B) long ids."
    step = next_step(summarise([record(1, PASSED), problem]), ROOT / "exercises")
    assert "    it checks: pad_batch gives (max_len, B) long ids." in step.splitlines(), step
    assert "    your code raised RuntimeError: The expanded size of the tensor" in step, step


def test_progress_says_when_everything_passes():
    progress = summarise([record(s.number, PASSED) for s in SECTIONS])
    assert next_step(progress, ROOT / "exercises").startswith(f"All {len(SECTIONS)} sections")
