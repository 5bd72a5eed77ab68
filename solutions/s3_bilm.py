"""Section 3 - The bidirectional language model (biLM).

    ids (T, B) ──embedding──> x (T, B, 128) ──projection──> p (T, B, 256)
        layer 0  = [p ; p]                                        (T, B, 512)
        forward  : p ─> LSTM ─> h_f1 ─> LSTM (+ h_f1) ─> h_f2 ──> logits of token t+1
        backward : reverse(p) ─> LSTM ─> LSTM (+ residual) ─> reverse ─> logits of token t-1
        layer j  = [h_fj ; h_bj]                                  (T, B, 512), j = 1, 2

What the paper and its code decide, and the contract below states:

* Layer 0 is the token representation duplicated, [p; p], so that all three layers have
  width 512 and can be mixed in section 7 (bilm-tf's `model.py`, AllenNLP's `elmo.py`).
  The 128-d embedding x is brought to the LSTM width 256 by a learned projection, p, which
  is also the LSTMs' input; in the paper the character CNN's output is projected the same
  way.
* A residual connection adds layer 1's output to layer 2's (Sec. 3.4).
* The two directions are separate language models that share only the token layer.

What is yours to decide, with questions to decide it by:

* How to hold each direction's layers. Why can one 2-layer `nn.LSTM` not serve, when ELMo
  needs every layer? Why does a python list of modules lose them from `state_dict()`?
* How the backward direction reads a sentence. What does it read first if the padded
  tensor is reversed as a whole, and why does no packing of sequences become necessary if
  padding only ever comes at the end of what an LSTM reads?

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

    Works wherever `x` lives (a GPU included), with `lengths` on the CPU or on that device:
    every tensor the function makes must live on `x.device`. The tests run it on PyTorch's
    `meta` device, which has shapes but no values: an operation that needs values
    (`.item()`, a boolean mask) stops there with an error that the tests do not count
    against the code; one that mixes tensors of two devices fails them.

    Args:
        x: (T, B, ...) a padded batch.
        lengths: (B,) LongTensor, the valid length of each column, 1 <= length <= T.

    Returns:
        a tensor shaped like `x`, with out[t, b] = x[lengths[b] - 1 - t, b] for t < lengths[b]
        and out[t, b] = x[t, b] otherwise. Applying it twice gives `x` back.
    """
    # BEGIN SOLUTION
    steps = torch.arange(x.shape[0], device=x.device).unsqueeze(1)  # (T, 1)
    lengths = lengths.to(x.device).unsqueeze(0)  # (1, B)
    source = torch.where(steps < lengths, lengths - 1 - steps, steps)  # (T, B)
    source = source.view(*source.shape, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(0, source)
    # END SOLUTION


class BiLM(nn.Module):
    """A two-direction, multi-layer LSTM language model that exposes every layer.

    Args:
        vocab_size: number of tokens, special tokens included.
        embedding_dim: width of the word embedding x (the seed's 128).
        hidden_dim: width of every LSTM layer and of the projection p (the seed's 256).
        num_layers: LSTM layers per direction (the seed's 2).
        padding_idx: the index of <pad>; its embedding is zero and stays zero.
        residual: True (the paper's) adds each LSTM layer's input to its output from layer 2
            on (see `forward`); False leaves every layer its LSTM's output alone. The
            notebook of this section trains both and compares their held-out loss.

    The parts that other sections, the notebooks and the analyses read:

    Attributes:
        embedding: the token layer: ids (T, B) -> x (T, B, embedding_dim), one learned
            vector per token; the vector of `padding_idx` is zero and gets no gradient, so it
            stays zero. Section 8 replaces it with a layer that takes ids (T, B, W).
        token_projection: x -> p (T, B, hidden_dim), a learned affine map: p is the token
            representation, layer 0 is [p; p], and p is what each direction's first LSTM
            reads. Section 8 replaces it with its character CNN.
        forward_head: a top forward state (..., hidden_dim) -> the scores (..., vocab_size)
            of the next token, a learned affine map.
        backward_head: the same for the backward direction, a layer of its own.

    How the LSTMs are held is yours to decide, as long as every weight is registered (in
    `parameters()` and `state_dict()`, moved by `.to(device)`) and the two directions
    share no weight: beyond the token layer, no parameter may shape both directions.

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
        residual: bool = True,
    ) -> None:
        check_sizes(vocab_size=vocab_size, embedding_dim=embedding_dim, hidden_dim=hidden_dim,
                    num_layers=num_layers)  # clear errors for sizes that compute nothing, given
        # BEGIN SOLUTION
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=padding_idx)
        self.token_projection = nn.Linear(embedding_dim, hidden_dim)
        self.forward_lstms = nn.ModuleList(
            nn.LSTM(hidden_dim, hidden_dim) for _ in range(num_layers)
        )
        self.backward_lstms = nn.ModuleList(
            nn.LSTM(hidden_dim, hidden_dim) for _ in range(num_layers)
        )
        self.forward_head = nn.Linear(hidden_dim, vocab_size)
        self.backward_head = nn.Linear(hidden_dim, vocab_size)
        self.residual = residual
        # END SOLUTION

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor | None = None) -> BiLMOutput:
        """Run both directions over a padded batch.

        With p = token_projection(embedding(ids)) and, for j = 1..num_layers, h_fj and h_bj
        the outputs of the j-th forward and backward LSTM:

            layer 0 = [p; p]
            layer 1 = [h_f1; h_b1]        h_f1 = LSTM_f1(p), no residual from p
            layer j = [h_fj; h_bj]        h_fj = LSTM_fj(h_f(j-1)) + h_f(j-1), for j >= 2
                                          (h_fj = LSTM_fj(h_f(j-1)) alone without `residual`)
            forward_logits  = forward_head(h_f top)     (the scores of token t + 1)
            backward_logits = backward_head(h_b top)    (the scores of token t - 1)

        and the same for the backward direction, which reads each sentence from its last
        real token to its first. The forward states at t depend on tokens 0..t only, the
        backward ones on tokens t..n-1 of their sentence only; each LSTM starts from its zero
        state on every call. A sentence in a padded batch gets exactly what it gets alone,
        and every layer is zero at padded positions.

        Args:
            ids: LongTensor (T, B) of token ids, right-padded; batch B = 1 is one sentence.
                Read T and B as `ids.shape[:2]` and hand `ids` whole to `self.embedding`:
                section 8's token layer takes ids (T, B, W), with W characters per token.
            lengths: LongTensor (B,) of valid lengths; None means every column is T long.
                The given `_check_input` checks both and makes `lengths` a LongTensor (B,)
                on the CPU, None included; the model runs wherever it and `ids` live (a
                GPU included), so what it mixes with tensors there goes there first.

        Returns:
            a `BiLMOutput`; see its docstring for the shapes.

        Raises:
            ValueError: `ids` is not 2-D, holds ids outside [0, vocab_size), or `lengths`
                does not match the batch (from `_check_input`).
        """
        lengths = self._check_input(ids, lengths)  # clear errors for bad input, given below
        # BEGIN SOLUTION
        mask = (torch.arange(ids.shape[0], device=ids.device).unsqueeze(1)
                < lengths.to(ids.device).unsqueeze(0)).unsqueeze(-1)  # (T, B, 1)
        tokens = self.token_projection(self.embedding(ids))  # (T, B, H)

        forward_states = self._run_stack(self.forward_lstms, tokens)
        reversed_states = self._run_stack(
            self.backward_lstms, reverse_within_lengths(tokens, lengths)
        )
        backward_states = [reverse_within_lengths(h, lengths) for h in reversed_states]

        layers = [torch.cat([tokens, tokens], dim=-1)]
        layers += [
            torch.cat([f, b], dim=-1)
            for f, b in zip(forward_states, backward_states, strict=True)
        ]
        return BiLMOutput(
            layers=torch.stack(layers) * mask,
            forward_logits=self.forward_head(forward_states[-1]),
            backward_logits=self.backward_head(backward_states[-1]),
        )
        # END SOLUTION

    def _run_stack(self, lstms: nn.ModuleList, inputs: torch.Tensor) -> list[torch.Tensor]:
        """The output sequence (T, B, H) of every layer of one direction's LSTM stack.

        Layer 1 is the first LSTM's output on `inputs`; every higher layer is its LSTM's
        output on the layer below, plus that layer where the biLM has its residual
        connection (`residual`). Each LSTM starts from its zero state on every call, so the
        same input gives the same output.

        A helper for `forward`, run once per direction; no test calls it, so its signature
        is yours to change if you hold the LSTMs otherwise.
        """
        # BEGIN SOLUTION
        outputs, layer_input = [], inputs
        for depth, lstm in enumerate(lstms):
            layer_output, _ = lstm(layer_input)  # zero initial state: no memory across calls
            if depth > 0 and self.residual:
                layer_output = layer_output + layer_input  # residual, as in the paper
            outputs.append(layer_output)
            layer_input = layer_output
        return outputs
        # END SOLUTION

    def _check_input(self, ids: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        """`lengths` as a LongTensor (B,) on the CPU, or a clear error for bad input (the
        given `check_ids`)."""
        return check_ids(ids, lengths, self.embedding.num_embeddings)
