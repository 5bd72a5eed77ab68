"""Section 2 as the other sections' tests need it: its constants, and the functions whose
exact results the later sections' code and tests depend on (a biLM reads what `encode` and
`pad_batch` give, and section 6 finds its target among the words `tokenize` gives). They
are published here with the course, written for the tests; section 2's tests test the
learner's own."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import torch
from torch.nn.utils.rnn import pad_sequence

from course.corpus import CORPUS, HELDOUT, HELDOUT_LABELS, PHRASES_OF, SENSE_LABELS, SENSE_PHRASES

__all__ = ["BOS", "CORPUS", "EOS", "HELDOUT", "HELDOUT_LABELS", "PAD", "PHRASES_OF",
           "SENSE_LABELS", "SENSE_PHRASES", "SPECIAL_TOKENS", "UNK", "build_vocab", "decode",
           "encode", "pad_batch", "tokenize"]

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIAL_TOKENS = ("<pad>", "<unk>", "<s>", "</s>")


def tokenize(text: str) -> list[str]:
    """The lower-case runs of letters, digits and apostrophes of `text`."""
    return re.findall(r"[a-z0-9']+", text.lower())


def build_vocab(corpus: Iterable[str]) -> tuple[dict[str, int], dict[int, str]]:
    """(word2idx, idx2word): the special tokens at 0-3, then the corpus's words, sorted."""
    words = [*SPECIAL_TOKENS, *sorted(set().union(*map(tokenize, corpus)))]
    return {w: i for i, w in enumerate(words)}, dict(enumerate(words))


def encode(sentence: str | Sequence[str], word2idx: dict[str, int],
           add_boundaries: bool = False) -> list[int]:
    """The ids of a sentence's words (a string is tokenized first), UNK for unknown ones,
    between BOS and EOS with `add_boundaries`."""
    words = tokenize(sentence) if isinstance(sentence, str) else sentence
    ids = [word2idx.get(w, UNK) for w in words]
    return [BOS, *ids, EOS] if add_boundaries else ids


def decode(ids: Iterable[int], idx2word: dict[int, str]) -> list[str]:
    """The words of `ids` (ints or a 1-D tensor)."""
    return [idx2word[int(i)] for i in ids]


def pad_batch(sequences: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids (max_len, B) right-padded with PAD, lengths (B,)), both LongTensors."""
    columns = [torch.as_tensor(list(s), dtype=torch.long) for s in sequences]
    lengths = torch.tensor([len(c) for c in columns], dtype=torch.long)
    return pad_sequence(columns, padding_value=PAD), lengths
