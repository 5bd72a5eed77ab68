"""The stub is the whole contract (`tools.contract`): the section tests rely on nothing the
exercises do not state, fail with messages, and the learner's blocks hold no validation."""

import textwrap

import pytest

from course.registry import find_section
from tools import contract

BILM = find_section("bilm")

EXERCISE = '''\
"""Section 3."""

import torch
from numpy import pi
from torch import nn

from course.corpus import CORPUS


class Model(nn.Module):
    """A model.

    Attributes:
        head: `nn.Linear(2, 2)`, the scores.
        depth (int): how deep.

    Raises:
        ValueError: a size below 1, "sizes must be positive".
    """

    def __init__(self):
        raise NotImplementedError("section 3 (bilm): Model.__init__ is not implemented yet")

    def run(self, x):
        """Run it."""
        raise NotImplementedError("section 3 (bilm): Model.run is not implemented yet")
'''


def problems_of(tmp_path, test_source: str) -> list[str]:
    exercises, tests = tmp_path / "exercises", tmp_path / "tests"
    exercises.mkdir()
    tests.mkdir()
    (exercises / "s3_bilm.py").write_text(EXERCISE)
    (tests / "conftest.py").write_text('def trained():\n    """`.model`, `.history`."""\n')
    (tests / "test_s3_bilm.py").write_text(textwrap.dedent(test_source))
    found, _ = contract.section_test_problems(BILM, contract.read_contract(exercises),
                                              contract._library_names(), tests)
    return found


def test_the_course_keeps_its_contract():
    found, counts = contract.problems()
    assert not found, "\n".join(found)
    assert counts["raises in blocks"] <= contract.MAX_RAISES
    assert counts["attributes"] > 100, f"the checker read too little: {counts}"


def test_a_documented_or_visible_attribute_passes(tmp_path):
    assert problems_of(tmp_path, '''
        import pytest
        import torch

        def test_x(bilm, trained):
            """It runs."""
            model = bilm.Model()
            assert model.head(torch.zeros(2)).shape == (2,), "two scores"
            assert model.depth and model.run(1) and trained.history, "all there"
            assert bilm.CORPUS, "a name the module takes from the learner runtime, in view"
            with pytest.raises(ValueError, match="sizes must be positive"):
                bilm.Model()
    ''') == []


@pytest.mark.parametrize("source, complaint", [
    pytest.param('''
        def test_x(bilm):
            """It reads a name the stub never gives."""
            assert bilm.Model().projection, "a projection"
    ''', "`.projection`", id="undocumented attribute"),
    pytest.param('''
        def test_x(bilm):
            """It reads a module name that does not exist."""
            assert bilm.Projection, "a class"
    ''', "bilm.Projection is not a public name", id="unknown module name"),
    pytest.param('''
        def test_x(bilm):
            """It reads a name the module imports from a library, not from the runtime."""
            assert bilm.pi, "pi"
    ''', "bilm.pi is not a public name", id="a library's name"),
    pytest.param('''
        import pytest

        def test_x(bilm):
            """It pins wording."""
            with pytest.raises(ValueError, match="must be >= 1"):
                bilm.Model()
    ''', "match='must be >= 1' is in no docstring", id="undocumented wording"),
    pytest.param('''
        import pytest

        def test_x(bilm):
            """It pins a pattern."""
            with pytest.raises(ValueError, match="sizes.*positive"):
                bilm.Model()
    ''', "must be a literal string", id="regex operators"),
    pytest.param('''
        import pytest

        def test_x(bilm):
            """It expects an undocumented exception."""
            with pytest.raises(TypeError):
                bilm.Model()
    ''', "expects TypeError", id="undocumented exception"),
    pytest.param('''
        def test_x(bilm):
            """It asserts silently."""
            assert bilm.Model()
    ''', "an assert without a message", id="assert without message"),
    pytest.param('''
        def test_x(bilm):
            assert bilm.Model(), "a model"
    ''', "has no docstring", id="test without docstring"),
    pytest.param('''
        import numpy as np

        def test_x(bilm):
            """It compares silently."""
            np.testing.assert_allclose(1, 1)
    ''', "without err_msg", id="np.testing without err_msg"),
    pytest.param('''
        import pytest

        @pytest.mark.parametrize("kwargs", [dict(size=0), dict(size=-1)])
        def test_x(bilm, kwargs):
            """Sizes."""
            assert bilm.Model(**kwargs), "a model"
    ''', "readable ids", id="unreadable ids"),
])
def test_a_breach_is_reported(tmp_path, source, complaint):
    found = problems_of(tmp_path, source)
    assert any(complaint in problem for problem in found), found


def test_raises_in_the_learners_blocks_are_counted(tmp_path):
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / "s3_bilm.py").write_text(textwrap.dedent('''\
        def f(x):
            """Doc."""
            if x < 0:
                raise ValueError("given, outside the block")
            # BEGIN SOLUTION
            if x > 9:
                raise ValueError("x > 9")
            if x == 5:
                raise NotImplementedError("not counted")
            return x
            # END SOLUTION
    '''))
    found = contract.raises_in_blocks(solutions)
    assert len(found) == 1 and "x > 9" in found[0] and "s3_bilm.py:7" in found[0], found
