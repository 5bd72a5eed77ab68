"""Hypothesis strategies shared by the section tests, kept in one place.

They never import an implementation: tests that need the corpus's words draw them with
`st.data()` from the fixture's `CORPUS`, so the same strategies serve the reference,
`exercises/` and any submission.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


def letter_words(min_size: int = 1, max_size: int = 7) -> st.SearchStrategy[str]:
    """Lower-case words of min_size..max_size letters."""
    return st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=min_size, max_size=max_size)


#: words as `tokenize` returns them: lower-case letters
plain_words = letter_words()

#: a sentence of 1-8 plain words
plain_sentences = st.lists(plain_words, min_size=1, max_size=8).map(" ".join)

#: a corpus of 1-6 such sentences
plain_corpora = st.lists(plain_sentences, min_size=1, max_size=6)

seeds = st.integers(min_value=0, max_value=2**32 - 1)


def sentences_from(words: Sequence[str], max_words: int = 9) -> st.SearchStrategy[str]:
    """Sentences of 1..max_words words drawn from `words`."""
    return st.lists(st.sampled_from(sorted(words)), min_size=1, max_size=max_words).map(" ".join)


def id_sequences(vocab_size: int, min_len: int = 1, max_len: int = 9):
    """Lists of real token ids in [1, vocab_size), min_len..max_len long: id 0 is <pad>,
    which no sentence holds, so a failing example shows its padding as the 0s."""
    return st.lists(st.integers(1, vocab_size - 1), min_size=min_len, max_size=max_len)


def id_batches(vocab_size: int, max_batch: int = 5, max_len: int = 9, min_len: int = 1):
    """1..max_batch id lists of independent lengths: the content of a ragged batch."""
    return st.lists(id_sequences(vocab_size, min_len, max_len), min_size=1, max_size=max_batch)

#: words no corpus could contain: made only of rare letters, 3+ long
unknown_words = st.text(alphabet="qxzj", min_size=3, max_size=8)

#: any token's text, as a character mapper may meet it: empty, long, any script
any_words = st.text(min_size=0, max_size=24)


def _magnitudes_with_sign(low: float, high: float) -> st.SearchStrategy[float]:
    """Floats with low <= |x| <= high, either sign: never zero, never subnormal."""
    magnitudes = st.floats(min_value=low, max_value=high, width=32)
    return st.tuples(magnitudes, st.booleans()).map(lambda m: -m[0] if m[1] else m[0])


@st.composite
def vector_pairs(draw, max_dim: int = 8, max_batch_dims: int = 2):
    """Two float32 arrays a, b of one shape (..., D), D >= 1, with no zero component, so
    every vector is non-zero; (D,) alone is two plain vectors."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=max_batch_dims + 1, max_side=max_dim))
    elements = _magnitudes_with_sign(1 / 64, 1024)  # exact in float32
    return tuple(draw(hnp.arrays(np.float32, shape, elements=elements)) for _ in range(2))


#: positive factors for scale invariance
positive_scales = st.floats(min_value=1e-2, max_value=1e2)


@st.composite
def layer_stacks(draw, max_layers: int = 5, max_batch_dims: int = 2, max_side: int = 4):
    """(layers, scalars): a float32 array (L, ..., D) of L layers, 1 <= L <= max_layers, and
    L pre-softmax scalars in [-4, 4]."""
    num_layers = draw(st.integers(1, max_layers))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=max_batch_dims + 1, max_side=max_side))
    layers = draw(hnp.arrays(np.float32, (num_layers, *shape),
                             elements=st.floats(-10, 10, width=32)))
    scalars = draw(st.lists(st.floats(-4, 4), min_size=num_layers, max_size=num_layers))
    return layers, scalars
