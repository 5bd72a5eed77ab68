# Section 2 of the ELMo course. This file is yours: replace each
# `raise NotImplementedError(...)` with your code, then run `make test SECTION=2`.
"""Section 2 - Toy corpus and vocabulary.

The corpus is 32 hand-written sentences built around four polysemous words, each used in
two senses, four sentences per sense:

    bank   finance | river        play   verb | theatre
    right  direction | correct    watch  verb | timepiece

`SENSE_LABELS` records, for every sentence, which target word it contains and in which
sense, so that later sections can compare same-sense and different-sense pairs.

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

__all__ = [
    "BOS",
    "CORPUS",
    "EOS",
    "PAD",
    "SENSE_LABELS",
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

# (sentence, target word, sense): four sentences for each sense of each target word.
SENSE_LABELS: tuple[tuple[str, str, str], ...] = (
    ("she put her money in the bank", "bank", "finance"),
    ("the bank gave him a loan", "bank", "finance"),
    ("he works at the bank in town", "bank", "finance"),
    ("the bank will keep your money safe", "bank", "finance"),
    ("they sat on the bank of the river", "bank", "river"),
    ("the river bank was green and wet", "bank", "river"),
    ("we walked along the bank by the water", "bank", "river"),
    ("fish swim in the water near the bank", "bank", "river"),
    ("the children play in the park", "play", "verb"),
    ("we play football after school", "play", "verb"),
    ("they like to play music at night", "play", "verb"),
    ("he will play with the children", "play", "verb"),
    ("we saw a play at the theatre", "play", "theatre"),
    ("the play was long but good", "play", "theatre"),
    ("she wrote a new play about love", "play", "theatre"),
    ("the actors in the play were good", "play", "theatre"),
    ("turn right at the river", "right", "direction"),
    ("the park is on the right", "right", "direction"),
    ("he raised his right hand", "right", "direction"),
    ("the school is to the right of the bank", "right", "direction"),
    ("your answer is right", "right", "correct"),
    ("she was right about the money", "right", "correct"),
    ("that is the right answer", "right", "correct"),
    ("he was right and they were wrong", "right", "correct"),
    ("we watch the children in the park", "watch", "verb"),
    ("they watch football at night", "watch", "verb"),
    ("i like to watch the river", "watch", "verb"),
    ("she will watch the play", "watch", "verb"),
    ("he wore a gold watch", "watch", "timepiece"),
    ("my watch was a gift from her", "watch", "timepiece"),
    ("the watch on his hand is new", "watch", "timepiece"),
    ("she gave him a new watch", "watch", "timepiece"),
)

CORPUS: tuple[str, ...] = tuple(sentence for sentence, _, _ in SENSE_LABELS)

_WORD = re.compile(r"[a-z0-9']+")


def tokenize(text: str) -> list[str]:
    """Lower-case `text` and split it into words, dropping punctuation.

    >>> tokenize("Turn right, at the river!")
    ['turn', 'right', 'at', 'the', 'river']
    """
    raise NotImplementedError("section 2 (corpus): tokenize is not implemented yet")


def build_vocab(corpus: Iterable[str]) -> tuple[dict[str, int], dict[int, str]]:
    """Map every word of `corpus` to an index, and back.

    Args:
        corpus: sentences as strings; they are split with `tokenize`.

    Returns:
        (word2idx, idx2word): `SPECIAL_TOKENS` take indices 0-3 (PAD, UNK, BOS, EOS), then
        the distinct words in sorted order from 4. Deterministic: the numbering depends only
        on the set of words, never on sentence order or hashing.

    Raises:
        ValueError: the corpus is empty or holds no words.
    """
    raise NotImplementedError("section 2 (corpus): build_vocab is not implemented yet")


def encode(
    sentence: str | Sequence[str], word2idx: dict[str, int], add_boundaries: bool = False
) -> list[int]:
    """Turn a sentence into word indices; an unknown word becomes UNK, never an error.

    Args:
        sentence: a string (tokenized with `tokenize`) or a list of words.
        word2idx: the mapping from `build_vocab`.
        add_boundaries: wrap the result in BOS ... EOS, as the biLM expects.

    Returns:
        a list of ints, of length len(words) (+2 with boundaries).

    Raises:
        ValueError: the sentence has no words.
    """
    raise NotImplementedError("section 2 (corpus): encode is not implemented yet")


def decode(ids: Iterable[int], idx2word: dict[int, str]) -> list[str]:
    """Turn indices back into words: `decode(encode(s, w2i), i2w) == tokenize(s)` for any
    sentence `s` of known words.

    Raises:
        ValueError: an index is not in `idx2word`.
    """
    raise NotImplementedError("section 2 (corpus): decode is not implemented yet")


def pad_batch(sequences: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack sequences of different lengths into one time-major, right-padded batch.

    Args:
        sequences: B lists of token ids, each non-empty.

    Returns:
        ids: LongTensor (max_len, B), PAD after each sequence's end.
        lengths: LongTensor (B,), the length of each sequence.

    Raises:
        ValueError: no sequences, or an empty one.
    """
    raise NotImplementedError("section 2 (corpus): pad_batch is not implemented yet")
