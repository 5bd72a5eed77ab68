"""The borders between the learner runtime (`course/`, shipped, and all a grading run is
given), the analyses (`analyses/`, shipped) and everything that never ships (`tools/`,
`grading/`, the reference), the locks, and what a run leaves behind."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course.registry import EXERCISES_DIR, REFERENCE_DIR, ROOT, find_section
from tools import lock

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)

NEVER_SHIPPED = ("tools", "grading", REFERENCE_DIR.name, "mistakes")


def imported_packages(path: Path, loading: bool = False) -> set[str]:
    """The top-level packages a module imports (relative imports: its own package); with
    `loading`, only those it imports as it loads, not in a function when called."""
    found = set()
    tree = ast.parse(path.read_text())
    called = {id(node) for f in ast.walk(tree)
              if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) for node in ast.walk(f)}
    for node in ast.walk(tree):
        if loading and id(node) in called:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("path", sorted([*(ROOT / "course").glob("*.py"),
                                         *(ROOT / "analyses").glob("*.py")]),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_learner_runtime_imports_nothing_that_never_ships(path):
    never = sorted(imported_packages(path) & set(NEVER_SHIPPED))
    assert not never, (f"{path.parent.name}/{path.name} imports {never}, which a learner's "
                       "handout does not hold")


@pytest.mark.parametrize("path", sorted([*(ROOT / "tests" / "sections").rglob("*.py"),
                                         *(ROOT / "course").glob("*.py"),
                                         *(ROOT / "grading").glob("*.py")]),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_runtime_its_tests_and_the_grader_load_nothing_of_the_analyses(path):
    # course/results.py loads analyses.your_elmo when a run asks for its lines (make test in
    # the handout); a grading run never asks.
    assert not imported_packages(path, loading=True) & {*NEVER_SHIPPED, "analyses"} - {
        "grading"}, (
        f"{path.relative_to(ROOT)} imports the analyses or what never ships: a grading run "
        "holds the learner runtime alone")


def test_a_grading_run_is_given_the_runtime_and_tests_and_none_of_the_analyses():
    from grading.sandbox import Pristine

    given = Pristine().course()
    assert "course/harness.py" in given and "tests/sections/conftest.py" in given
    assert not [name for name in given if name.startswith(("analyses/", "notebooks/"))]


@pytest.mark.parametrize("path", sorted((ROOT / "grading").glob("*.py")), ids=lambda p: p.name)
def test_the_instructors_grader_imports_nothing_of_the_maintainers_tools(path):
    assert "tools" not in imported_packages(path), (
        f"grading/{path.name} imports tools/: an instructor's grader stands on course/ alone")


def test_the_locks_hold_exactly_the_pins_of_pyproject():
    groups = lock.groups()
    locked = {group: lock.read_lock(path) for group, path in lock.LOCKS.items()}
    assert not locked["learner"].keys() & locked["maintainer"].keys(), (
        "the maintainers' lock holds only what their group adds")
    for group, pins in groups.items():
        for pin in pins:
            name, _, version = pin.partition("==")
            assert locked[group].get(lock.normalised(name)) == version, (
                f"{pin} of the {group} group is not locked as such: `make lock`")
    for tool in ("ruff", "mutmut", "jupytext", "copydetect"):
        assert tool not in locked["learner"], f"a learner never installs {tool}"


def test_the_handout_installs_the_learners_lock_only():
    text = (ROOT / "course" / "learner.mk").read_text()
    assert "LOCKS ?= requirements/learner.lock" in text
    assert (ROOT / "tools" / "handout" / "Makefile").read_text().count("include") == 1


def run_tests(impl: Path, section: str, tmpdir: Path) -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if k not in ("SECTION", "ELMO_IMPL")},
           "TMPDIR": str(tmpdir)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "tests/sections", "--impl", str(impl), "--section",
         section], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=600)


def test_a_broken_module_is_named_by_its_own_path_and_nothing_is_left_in_tmp(tmp_path):
    """A runtime error in a learner's section 3: the traceback names that file and line."""
    impl, scratch = tmp_path / "exercises", tmp_path / "tmp"
    shutil.copytree(EXERCISES_DIR, impl)
    scratch.mkdir()
    bilm = (REFERENCE_DIR / "s3_bilm.py").read_text()
    wrong = "        tokens = self.token_projection(self.embedding(ids))"
    assert wrong in bilm
    (impl / "s3_bilm.py").write_text(bilm.replace(wrong, f"{wrong}.sum(-1)"))
    call = "forward_states = self._run_stack(self.forward_lstms, tokens)"
    line = 1 + next(i for i, text in enumerate(bilm.splitlines()) if call in text)
    run = run_tests(impl, find_section("bilm").name, scratch)
    assert run.returncode == 1, run.stdout[-3000:]
    assert f"{impl / 's3_bilm.py'}:{line}: in forward" in run.stdout, run.stdout[-3000:]
    assert "/tmp/" not in run.stdout.replace(str(tmp_path), ""), "no copy of the module"
    assert list(scratch.iterdir()) == [], f"the run left {list(scratch.iterdir())} in $TMPDIR"
