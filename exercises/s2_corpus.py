# Section 2 of the ELMo course. This file is yours: replace each
# `raise NotImplementedError(...)` with your code, then run `make test SECTION=2`.
"""Section 2 - Toy corpus and vocabulary.

The corpus (`course/corpus.py`, given) is one in which context decides the sense: the
polysemous words bank, play, right and watch, each in two senses, and for every sense
openings and endings written by hand, any opening with any ending:

    she put her money in the | bank | to keep it safe       finance
    we walked along the      | bank | by the water          river

the training sentences (`CORPUS`) and those held out (`HELDOUT`, the openings and endings
of training, never together). This module re-exports them, with the labels of each
sentence's target word and sense (`SENSE_LABELS`, `HELDOUT_LABELS`) and the phrases of the
senses (`SENSE_PHRASES`, `PHRASES_OF`), so that every section finds them here.

The vocabulary reserves four special tokens at fixed indices, then numbers the corpus's
words in sorted order, so one corpus always gives one numbering:

    0 <pad>   padding, ignored by the loss
    1 <unk>   any word not in the corpus
    2 <s>     sentence start: the forward LM's first input
    3 </s>    sentence end: the backward LM's first input
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import torch

from course.corpus import (
    CORPUS,
    HELDOUT,
    HELDOUT_LABELS,
    PHRASES_OF,
    SENSE_LABELS,
    SENSE_PHRASES,
)
from course.given import check_sequences, corpus_sentences, id_list

__all__ = [
    "BOS",
    "CORPUS",
    "EOS",
    "HELDOUT",
    "HELDOUT_LABELS",
    "PAD",
    "PHRASES_OF",
    "SENSE_LABELS",
    "SENSE_PHRASES",
    "SPECIAL_TOKENS",
    "UNK",
    "build_vocab",
    "decode",
    "encode",
    "pad_batch",
    "tokenize",
]

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIAL_TOKENS = ("<pad>", "<unk>", "<s>", "</s>")

_WORD = re.compile(r"[a-z0-9']+")


def tokenize(text: str) -> list[str]:
    """Lower-case `text` and split it into words, dropping punctuation.

    A word is a run of letters, digits and apostrophes, as `_WORD` matches: a contraction
    stays one word, and everything else (spaces, punctuation, hyphens) separates words.

    >>> tokenize("Turn right, at the river!")
    ['turn', 'right', 'at', 'the', 'river']
    >>> tokenize("Don't swim: it's 2 o'clock, co-op's rule.")
    ["don't", 'swim', "it's", '2', "o'clock", 'co', "op's", 'rule']
    """
    raise NotImplementedError("section 2 (corpus): tokenize is not implemented yet")


def build_vocab(corpus: Iterable[str]) -> tuple[dict[str, int], dict[int, str]]:
    """Map every word of `corpus` to an index, and back.

    Args:
        corpus: sentences as strings; they are split into words with `tokenize`, so the
            vocabulary's words are lower-case and without punctuation.

    Returns:
        (word2idx, idx2word): `SPECIAL_TOKENS` take indices 0-3 (PAD, UNK, BOS, EOS), then
        the distinct words in sorted order from 4. Deterministic: the numbering depends only
        on the set of words, never on sentence order or hashing.

    Raises:
        TypeError: `corpus` is a single str, not a collection of sentences (from the given
            `corpus_sentences`, which also turns `corpus` into the list `sentences`).
    """
    sentences = corpus_sentences(corpus)  # a list of sentences, or a clear error, given
    raise NotImplementedError("section 2 (corpus): build_vocab is not implemented yet")


def encode(
    sentence: str | Sequence[str], word2idx: dict[str, int], add_boundaries: bool = False
) -> list[int]:
    """Turn a sentence into word indices; an unknown word becomes UNK, never an error.

    Args:
        sentence: a string (tokenized with `tokenize`) or a list of words, already
            tokenized: looked up as they are, not lower-cased again.
        word2idx: the mapping from `build_vocab`.
        add_boundaries: wrap the result in BOS ... EOS, as the biLM expects.

    Returns:
        a list of ints, one per word (+2 with boundaries): `word2idx[word]`, or UNK for a
        word that is not in it.
    """
    raise NotImplementedError("section 2 (corpus): encode is not implemented yet")


def decode(ids: Iterable[int], idx2word: dict[int, str]) -> list[str]:
    """Turn indices back into words: `decode(encode(s, w2i), i2w) == tokenize(s)` for any
    sentence `s` of known words.

    Args:
        ids: word indices, each a key of `idx2word`, as a list or a 1-D LongTensor; the
            given `id_list` turns them into the list of ints `ids`.
        idx2word: the mapping from `build_vocab`.

    Returns:
        a list of words (str), one per index.
    """
    ids = id_list(ids)  # the indices as a list of python ints, given
    raise NotImplementedError("section 2 (corpus): decode is not implemented yet")


def pad_batch(sequences: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack sequences of different lengths into one time-major, right-padded batch.

    Args:
        sequences: B lists of token ids, each non-empty.

    Returns:
        ids: LongTensor (max_len, B), PAD after each sequence's end.
        lengths: LongTensor (B,), the length of each sequence.

    Raises:
        ValueError: no sequences, or an empty one (from the given `check_sequences`).
    """
    check_sequences(sequences)  # clear errors for nothing to pad, given
    raise NotImplementedError("section 2 (corpus): pad_batch is not implemented yet")

