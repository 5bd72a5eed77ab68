# Section 6 of the ELMo course. This file is yours: replace each
# `raise NotImplementedError(...)` with your code, then run `make test SECTION=6`.
"""Section 6 - Context comparison: how much one word's embedding moves with its sentence.

For every polysemous target word of the corpus (bank, play, right, watch) and every pair of
sentences that contain it, the cosine similarity of the word's embeddings, one per layer:

    layer 0   the token on its own: the same vector in every sentence, so the cosine is 1
    layer 1   first biLSTM layer: the paper finds it closer to syntax (POS tagging, Table 6)
    layer 2   second biLSTM layer: closer to meaning (word sense disambiguation, Table 5)

The pairs fall into two groups: same sense (two "bank"s of money) and different sense (a
"bank" of money and a "bank" of a river). Where context decides the sense, the layers that
read the context should give same-sense pairs a higher similarity than different-sense
ones: the gap between the two is what a layer knows of the sense.

Cosine similarity here is cos(a, b) = <a, b> / (|a| |b|), with the convention that a zero
vector is similar to nothing: cos(0, b) = 0.

Design questions: how many times must each sentence go through the biLM? Where in a
sentence is the target word, when the embeddings have one row per word and the sentence
is a string?

Given, in the learner runtime: the readings of a comparison against its baselines (the
cosine of two different words, each direction's half, the nearest occurrences) in
`analyses.analysis`, and its pictures in `analyses.plots`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch

from course.corpus import SENSE_LABELS
from course.given import check_labels, check_vectors

from .s2_corpus import tokenize
from .s3_bilm import BiLM
from .s5_extract import get_elmo_embeddings

__all__ = ["ContextComparison", "SentencePair", "compare_contexts", "cosine_sim"]


def cosine_sim(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of two vectors, or of two batches of vectors along the last axis.

    Args:
        a: (..., D) a vector (D,) or a batch of them.
        b: (..., D) of exactly the same shape as `a` (no broadcasting: a shape mismatch is
            almost always a bug, such as comparing a layer with a whole stack).

    Returns:
        (...) the cosines, in [-1, 1] up to float32 rounding, as a floating-point tensor: a
        0-d tensor for two vectors (`float(cosine_sim(a, b))` gives the number). Where
        either vector is zero the result is 0, the convention of
        `torch.nn.functional.cosine_similarity`.

    Raises:
        ValueError: the shapes differ, or an input is 0-d or has D = 0 (from the given
            `check_vectors`).
    """
    check_vectors(a, b)  # clear errors for what has no cosine, given
    raise NotImplementedError("section 6 (context): cosine_sim is not implemented yet")


class SentencePair(NamedTuple):
    """Two sentences that contain one target word: indices into the compared sentences."""

    word: str
    first: int
    second: int
    same_sense: bool


@dataclass(frozen=True)
class ContextComparison:
    """What `compare_contexts` returns.

    sentences:  the compared sentences, in the order of the labels given.
    pairs:      every pair (i < j) of sentences with the same target word, word by word.
    similarity: (len(pairs), num_layers) cosine of the target word's embeddings per layer.
    """

    sentences: tuple[str, ...]
    pairs: tuple[SentencePair, ...]
    similarity: torch.Tensor

    @property
    def words(self) -> tuple[str, ...]:
        """The target words, in order of first appearance."""
        return tuple(dict.fromkeys(pair.word for pair in self.pairs))

    @property
    def num_layers(self) -> int:
        return self.similarity.shape[1]

    def select(self, same_sense: bool, word: str | None = None) -> torch.Tensor:
        """(n, num_layers) the similarities of the same-sense (or different-sense) pairs,
        of one target word or of all of them."""
        rows = [i for i, pair in enumerate(self.pairs)
                if pair.same_sense == same_sense and word in (None, pair.word)]
        return self.similarity[rows]


def compare_contexts(
    model: BiLM,
    word2idx: dict[str, int],
    labels: Sequence[tuple[str, str, str]] = SENSE_LABELS,
    centre: bool = False,
) -> ContextComparison:
    """Cosine similarity of each target word between every two of its sentences, per layer.

    Args:
        model: a pre-trained `BiLM`; embeddings come from `get_elmo_embeddings`.
        word2idx: the vocabulary.
        labels: (sentence, target word, sense) triples, as `SENSE_LABELS`. A sentence that
            holds its target word twice is compared at the word's first occurrence among
            its words (`tokenize`).
        centre: False (the default) compares the word's embeddings as they are. True first
            subtracts from each sentence's target-word embedding, layer by layer, the mean of
            that layer's target-word embeddings over all the sentences of `labels`: what every
            occurrence shares is taken out, and the cosines compare what is left (this
            section's notebook measures what that does to the gap).

    Returns:
        a `ContextComparison` of the sentences in the order of `labels`, and of every pair
        i < j of sentences with the same target word, each pair once: word by word in order
        of first appearance, each word's pairs sorted by (i, j). A pair is same-sense when
        both sentences label the word with one sense; its similarity row is `cosine_sim` of
        the word's embeddings in the two sentences, one per layer, so layer 0 (no context)
        gives 1 for every pair.

    Raises:
        ValueError: no labels, or no target word in two sentences (from the given
            `check_labels`).
    """
    check_labels(labels)  # clear errors for labels with nothing to compare, given
    raise NotImplementedError("section 6 (context): compare_contexts is not implemented yet")

