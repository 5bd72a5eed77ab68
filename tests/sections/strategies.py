"""Hypothesis strategies shared by the section tests, kept in one place.

They never import an implementation: tests that need the corpus's words draw them with
`st.data()` from the fixture's `CORPUS`, so the same strategies serve `solutions/`,
`exercises/` and any submission.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

#: words as `tokenize` returns them: lower-case letters
plain_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=7)

#: a sentence of 1-8 plain words
plain_sentences = st.lists(plain_words, min_size=1, max_size=8).map(" ".join)

#: a corpus of 1-6 such sentences
plain_corpora = st.lists(plain_sentences, min_size=1, max_size=6)

seeds = st.integers(min_value=0, max_value=2**32 - 1)


def sentences_from(words: Sequence[str], max_words: int = 9) -> st.SearchStrategy[str]:
    """Sentences of 1..max_words words drawn from `words`."""
    return st.lists(st.sampled_from(sorted(words)), min_size=1, max_size=max_words).map(" ".join)


def id_sequences(vocab_size: int, min_len: int = 1, max_len: int = 9):
    """Lists of token ids in [0, vocab_size), min_len..max_len long."""
    return st.lists(st.integers(0, vocab_size - 1), min_size=min_len, max_size=max_len)


def id_batches(vocab_size: int, max_batch: int = 5, max_len: int = 9, min_len: int = 1):
    """1..max_batch id lists of independent lengths: the content of a ragged batch."""
    return st.lists(id_sequences(vocab_size, min_len, max_len), min_size=1, max_size=max_batch)

#: words no corpus could contain: made only of rare letters, 3+ long
unknown_words = st.text(alphabet="qxzj", min_size=3, max_size=8)
