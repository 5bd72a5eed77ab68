"""Section 5 as the other sections' tests need it: `get_elmo_embeddings` with section 5's
signature and shapes, written for the tests, never the answer. It runs no biLM: a fixed
function of the words gives each word three layers, as a biLM's are in kind:

    layer 0   the word's own vector                      the same in every sentence
    layer 1   [own + mean of the words before it ; own + mean of the words after it]
    layer 2   the same, each earlier (later) word weighed by its nearness

so a word's layers 1-2 differ between any two sentences that differ around it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from course.given import Sentence, as_batch

from .s2_corpus import BOS, EOS, encode

_WIDTH = 16  # each direction's half: layers are (3, n, 2 * _WIDTH)


def _vectors(ids: list[int]) -> torch.Tensor:
    """(len(ids), _WIDTH): each id's own fixed random vector, drawn from the id as seed."""
    return torch.stack([torch.randn(_WIDTH, generator=torch.Generator().manual_seed(i))
                        for i in ids])


def _context(vectors: torch.Tensor, nearness: bool) -> torch.Tensor:
    """(n + 1, W) the <s> and word vectors -> (n, W): row i is word i's own vector plus the
    mean of the vectors before it, those nearer weighing more with `nearness`."""
    rows = []
    for i in range(1, len(vectors)):
        weights = torch.arange(1.0, i + 1) if nearness else torch.ones(i)
        rows.append(vectors[i] + (weights[:, None] * vectors[:i]).sum(0) / weights.sum())
    return torch.stack(rows)


def get_elmo_embeddings(model: torch.nn.Module, sentences: Sentence | Sequence[Sentence],
                        word2idx: dict[str, int] | None = None, boundaries: bool = True
                        ) -> torch.Tensor | list[torch.Tensor]:
    """(3, n, 2 * _WIDTH) per sentence, a tensor for one and a list for a list; `model` is
    not read. Without `boundaries`, neither direction reads <s> or </s>."""
    word_ids, single = as_batch(sentences, word2idx, encode)
    embeddings = []
    for ids in word_ids:
        forward_view = _vectors([BOS, *ids])  # <s> w_1 .. w_n
        backward_view = _vectors([EOS, *reversed(ids)])  # </s> w_n .. w_1
        if not boundaries:  # what stands before the first word is nothing
            forward_view[0], backward_view[0] = 0.0, 0.0
        own = _vectors(ids)
        layers = [torch.cat([own, own], -1)]
        for nearness in (False, True):
            layers.append(torch.cat([_context(forward_view, nearness),
                                     _context(backward_view, nearness).flip(0)], -1))
        embeddings.append(torch.stack(layers))
    return embeddings[0] if single else embeddings
