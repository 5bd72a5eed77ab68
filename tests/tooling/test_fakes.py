"""The fakes of `tests/sections/fakes` stand for the other sections in every section's tests,
so that a learner's `make test` and the grader run the same code. They hold to the
interface that the sections' stubs state (the interface's one home): every public name of a
fake is its section's, with the section's signature; the biLM's output and attributes and the
recipes' numbers are the section's; and the functions whose exact results later
sections depend on (section 2's) give the reference's results."""

from __future__ import annotations

import ast
import dataclasses
import inspect

import pytest
import torch

from course.corpus import CORPUS, HELDOUT
from course.harness import Harness
from course.registry import EXERCISES_DIR, FAKES_DIR, REFERENCE_DIR, find_section
from tools import reference

STUBS = Harness(EXERCISES_DIR, EXERCISES_DIR).sections(find_section("char_encoder"))
REFERENCE = reference()
FAKES = Harness(REFERENCE_DIR, FAKES_DIR).sections(find_section("char_encoder"))
FAKED = sorted(path.stem for path in FAKES_DIR.glob("s*.py"))


def public(module) -> dict[str, object]:
    """The names a fake defines itself (not those it imports), by name."""
    return {name: value for name, value in vars(module).items() if not name.startswith("_")
            and getattr(value, "__module__", module.__name__) == module.__name__
            and not inspect.ismodule(value)}


def parameters(function) -> list[tuple[str, object, str]]:
    """Each parameter's name, kind and default (as written: a `Recipe` of the fake's own
    class reads as the section's); the annotations are the stub's to state."""
    return [(p.name, p.kind, repr(p.default))
            for p in inspect.signature(function).parameters.values()]


def test_the_fakes_are_the_sections_that_another_imports():
    """A fake for each section whose names another section's module imports (`from .s3_bilm
    import BiLM`), and for no other."""
    imported = {node.module for path in REFERENCE_DIR.glob("s*.py")
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.ImportFrom) and node.level == 1}
    assert FAKED == sorted(imported)


@pytest.mark.parametrize("module", FAKED)
def test_a_fake_defines_only_its_sections_names_with_their_signatures(module):
    """Functions and classes: the stub's signature (a class's, its constructor's);
    constants: the stub's values (a recipe's numbers included)."""
    section = find_section(module)
    fake, real = getattr(FAKES, section.name), getattr(STUBS, section.name)
    for name, value in public(fake).items():
        assert hasattr(real, name), f"{module}: {name} is not a name of the section"
        wanted = getattr(real, name)
        if callable(value):
            assert parameters(value) == parameters(wanted), (module, name)
        elif dataclasses.is_dataclass(value):
            assert dataclasses.asdict(value) == dataclasses.asdict(wanted), (module, name)
        else:
            assert value == wanted, (module, name)


def test_the_fake_bilm_has_the_sections_output_and_attributes():
    """BiLMOutput's fields and shapes; the attributes that section 8 replaces."""
    assert FAKES.bilm.BiLMOutput._fields == REFERENCE.bilm.BiLMOutput._fields
    fake, real = FAKES.bilm.BiLM(20), REFERENCE.bilm.BiLM(20)
    for name in ("embedding", "token_projection"):
        assert type(getattr(fake, name)) is type(getattr(real, name)), name
        assert getattr(fake, name).weight.shape == getattr(real, name).weight.shape, name
    ids, lengths = torch.tensor([[2, 5, 3], [2, 3, 0]]).T, torch.tensor([3, 2])
    for got, want in zip(fake(ids, lengths), real(ids, lengths), strict=True):
        assert got.shape == want.shape


def test_section_2s_published_functions_give_the_references_results():
    """tokenize, build_vocab, encode, decode and pad_batch on the whole corpus, and on text
    with capitals, punctuation, contractions and unknown words."""
    fake, real = FAKES.corpus, REFERENCE.corpus
    texts = [*CORPUS, *HELDOUT, "Don't swim: it's 2 o'clock, co-op's rule!", "the Qwerty bank"]
    assert fake.build_vocab(CORPUS) == real.build_vocab(CORPUS)
    word2idx, idx2word = real.build_vocab(CORPUS)
    for text in texts:
        assert fake.tokenize(text) == real.tokenize(text), text
        for boundaries in (False, True):
            ids = real.encode(text, word2idx, boundaries)
            assert fake.encode(text, word2idx, boundaries) == ids, text
            assert fake.encode(real.tokenize(text), word2idx, boundaries) == ids, text
            assert fake.decode(ids, idx2word) == real.decode(ids, idx2word), text
    batch = [real.encode(text, word2idx, True) for text in texts]
    for got, want in zip(fake.pad_batch(batch), real.pad_batch(batch), strict=True):
        assert torch.equal(got, want) and got.dtype == want.dtype
