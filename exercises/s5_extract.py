# Section 5 of the ELMo course. This file is yours: replace each
# `raise NotImplementedError(...)` with your code, then run `make test SECTION=5`.
"""Section 5 - Extracting layer-wise ELMo embeddings from the pre-trained biLM.

For every word of a sentence the biLM gives L + 1 = 3 representations (Peters et al. 2018,
eq. 2), all of width 512:

    layer 0   [p ; p]          the token on its own: no context at all
    layer 1   [h_f1 ; h_b1]    first LSTM layer of each direction
    layer 2   [h_f2 ; h_b2]    second LSTM layer of each direction

The biLM reads BOS w_1 .. w_n EOS; the boundary positions are dropped, so the result has
one row per word. The biLM's LSTMs start from a zero state on every call, so the same input
always gives bit-identical embeddings (the stateful LSTMs of bilm-tf and AllenNLP carry
state between batches, and their users keep asking why the numbers change).

Design questions: what must the biLM read around a sentence for its embeddings to be the
ones it learned to give? What could extraction change in the model, and how is that undone?
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from course.given import Sentence, as_batch

from .s2_corpus import BOS, EOS, encode, pad_batch
from .s3_bilm import BiLM

__all__ = ["get_elmo_embeddings"]


def get_elmo_embeddings(
    model: BiLM,
    sentences: Sentence | Sequence[Sentence],
    word2idx: dict[str, int] | None = None,
    boundaries: bool = True,
) -> torch.Tensor | list[torch.Tensor]:
    """Layer-wise contextual embeddings of every word, from the biLM in eval mode.

    The biLM reads each sentence as it was pre-trained to, <s> w_1 .. w_n </s>, on the
    device its parameters are on; the two boundary positions are then dropped, so that row
    i is word i. A sentence gets the same embeddings alone as in a batch. The given line before
    your code turns `sentences` into `word_ids` (one list of word ids per sentence, no
    boundaries, text encoded with `encode`) and `single` (True when `sentences` was one
    sentence).

    Args:
        model: a (pre-trained) `BiLM`. It runs in eval mode (no dropout) and builds no
            autograd graph (extraction is inference: nothing may train it), and it is left
            in the mode it was in, even when the extraction fails.
        sentences: one sentence or a list of them. A sentence is a string (needs `word2idx`),
            a list of word ids, or a 1-D LongTensor of word ids, all without <s> and </s>.
        word2idx: the vocabulary, to encode text; unknown words become <unk>.
        boundaries: True reads each sentence as the biLM was pre-trained to, between <s> and
            </s>; False reads its words alone, w_1 .. w_n (this section's notebook measures
            what the boundaries are worth). Either way row i is word i.

    Returns:
        for one sentence, a tensor (num_layers + 1, n_words, 2 * hidden_dim) = (3, n, 512)
        on the model's device; for a list of sentences, a list of such tensors.

    Raises:
        TypeError / ValueError: an empty sentence or list, ids that are not integers, a
            tensor that is not 1-D, or text without `word2idx` (from the given
            `as_batch`); ids out of range (from the biLM's own check).
    """
    word_ids, single = as_batch(sentences, word2idx, encode)  # clear errors, given
    raise NotImplementedError("section 5 (extract): get_elmo_embeddings is not implemented yet")
