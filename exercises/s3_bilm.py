# Section 3 of the ELMo course. This file is yours: replace each
# `raise NotImplementedError(...)` with your code, then run `make test SECTION=3`.
"""Section 3 - The bidirectional language model (biLM).

    ids (T, B) ──embedding──> x (T, B, 128) ──projection──> p (T, B, 256)
        layer 0  = [p ; p]                                        (T, B, 512)
        forward  : p ─> LSTM ─> h_f1 ─> LSTM (+ h_f1) ─> h_f2 ──> logits of token t+1
        backward : reverse(p) ─> LSTM ─> LSTM (+ residual) ─> reverse ─> logits of token t-1
        layer j  = [h_fj ; h_bj]                                  (T, B, 512), j = 1, 2

Choices, and where they come from:

* Layer 0 is the token representation duplicated, [p; p], so that all three layers have
  width 512 and can be mixed in section 7. The paper's reference code does the same
  (bilm-tf's `model.py`, AllenNLP's `elmo.py`). The 128-d embedding is brought to the LSTM
  width 256 by a learned projection `p`, which is also the LSTMs' input; in the paper the
  character CNN's output is projected to the LSTM width the same way.
* Each direction is a stack of single-layer `nn.LSTM`s, because a 2-layer `nn.LSTM`
  returns only its top layer's sequence and ELMo needs every layer.
* A residual connection adds layer 1's output to layer 2's, as in the paper (Sec. 3.4).
* The backward LSTM reads each sentence reversed *within its own length*: reversing the
  padded tensor as a whole would put padding first. With padding only ever at the end of
  what each LSTM reads, no packing is needed: an LSTM cannot see the future, so padding
  never reaches a real position.

Simplifications against the paper (Peters et al. 2018, Sec. 3.4): a word embedding instead
of the character CNN; hidden 256 instead of 4096 cells with 512-d projections; no dropout;
separate softmax projections per direction, where the paper ties them.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from course.given import check_ids, check_sizes

__all__ = ["BiLM", "BiLMOutput", "reverse_within_lengths"]


class BiLMOutput(NamedTuple):
    """What `BiLM.forward` returns.

    layers:          (num_layers + 1, T, B, 2 * hidden_dim); layer 0 is [p; p], layer j the
                     forward and backward states of LSTM layer j; zero at padded positions.
    forward_logits:  (T, B, vocab_size); at position t, the scores of token t + 1.
    backward_logits: (T, B, vocab_size); at position t, the scores of token t - 1.
    """

    layers: torch.Tensor
    forward_logits: torch.Tensor
    backward_logits: torch.Tensor


def reverse_within_lengths(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each sequence of a time-major batch within its own length; padding stays put.

    Works on the device of `x`, with `lengths` on the CPU or on that device: make every
    index tensor on `x.device` (the tests run it on PyTorch's `meta` device, which has shapes
    but no values, so read no value of a tensor there: no `.item()`, `int(...)` or `if`).

    Args:
        x: (T, B, ...) a padded batch.
        lengths: (B,) LongTensor, the valid length of each column, 1 <= length <= T.

    Returns:
        a tensor shaped like `x`, with out[t, b] = x[lengths[b] - 1 - t, b] for t < lengths[b]
        and out[t, b] = x[t, b] otherwise. Applying it twice gives `x` back.
    """
    raise NotImplementedError("section 3 (bilm): reverse_within_lengths is not implemented yet")


class BiLM(nn.Module):
    """A two-direction, multi-layer LSTM language model that exposes every layer.

    Args:
        vocab_size: number of tokens, special tokens included.
        embedding_dim: width of the word embedding x (the seed's 128).
        hidden_dim: width of every LSTM layer and of the projection p (the seed's 256).
        num_layers: LSTM layers per direction (the seed's 2).
        padding_idx: the index of <pad>; its embedding is zero and stays zero.

    Attributes:
        embedding: `nn.Embedding(vocab_size, embedding_dim, padding_idx=padding_idx)`, the
            word embedding x.
        token_projection: `nn.Linear(embedding_dim, hidden_dim)`: p = token_projection(x),
            the token representation; layer 0 is [p; p], and p is the first LSTMs' input.
        forward_lstms: an `nn.ModuleList` of num_layers one-layer, one-direction
            `nn.LSTM(hidden_dim, hidden_dim)`, bottom first: the forward direction. (In a
            plain list, the LSTMs would be no part of `parameters()`, `state_dict()` or
            `.to(device)`.)
        backward_lstms: the same for the backward direction: LSTMs of its own, which share
            no parameter with the forward ones.
        forward_head: `nn.Linear(hidden_dim, vocab_size)`: the scores of token t + 1 from the
            top forward LSTM's state at t.
        backward_head: `nn.Linear(hidden_dim, vocab_size)`: the scores of token t - 1 from the
            top backward LSTM's state at t; a layer of its own, not forward_head.

    Raises:
        ValueError: a size below 1 (from the given `check_sizes`).
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_dim: int = 128,
        hidden_dim: int = 256,
        num_layers: int = 2,
        padding_idx: int = 0,
    ) -> None:
        check_sizes(vocab_size=vocab_size, embedding_dim=embedding_dim, hidden_dim=hidden_dim,
                    num_layers=num_layers)  # clear errors for sizes that compute nothing, given
        raise NotImplementedError("section 3 (bilm): BiLM.__init__ is not implemented yet")

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor | None = None) -> BiLMOutput:
        """Run both directions over a padded batch.

        Args:
            ids: LongTensor (T, B) of token ids, right-padded; batch B = 1 is one sentence.
            lengths: LongTensor (B,) of valid lengths; None means every column is T long.
                The given `_check_input` checks both and makes `lengths` a LongTensor (B,)
                on the CPU, None included.

        Returns:
            a `BiLMOutput`; see its docstring for the shapes.

        Raises:
            ValueError: `ids` is not 2-D, holds ids outside [0, vocab_size), or `lengths`
                does not match the batch (from `_check_input`).
        """
        lengths = self._check_input(ids, lengths)  # clear errors for bad input, given below
        raise NotImplementedError("section 3 (bilm): BiLM.forward is not implemented yet")

    @staticmethod
    def _run_stack(lstms: nn.ModuleList, inputs: torch.Tensor) -> list[torch.Tensor]:
        """The output sequence (T, B, H) of every layer of one direction's LSTM stack.

        Layer 1 is the first LSTM's output on `inputs`; every higher layer is its LSTM's
        output on the layer below, plus that layer (the residual connection). Each LSTM
        starts from its zero state on every call, so the same input gives the same output.
        """
        raise NotImplementedError("section 3 (bilm): BiLM._run_stack is not implemented yet")

    def _check_input(self, ids: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        """`lengths` as a LongTensor (B,) on the CPU, or a clear error for bad input (the
        given `check_ids`)."""
        return check_ids(ids, lengths, self.embedding.num_embeddings)
