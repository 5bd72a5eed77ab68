"""Section 3 as the other sections' tests need it: a biLM with section 3's interface and
contract, written for the tests, never the answer. It has no LSTM: each direction's layer j
is tanh of an affine map of the running mean of the layer below over what that direction
has read so far (plus the layer below, from j = 2), which is cheap and keeps what the later
sections rely on:

    layer 0 = [p; p], p = token_projection(embedding(ids))         no context
    forward states at t read tokens 0..t, backward states tokens t..n-1 of their sentence
    a sentence gets in a padded batch what it gets alone; every layer is zero at padding
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from course.given import check_ids, check_sizes


class BiLMOutput(NamedTuple):
    """layers (L + 1, T, B, 2H); forward_logits, backward_logits (T, B, V)."""

    layers: torch.Tensor
    forward_logits: torch.Tensor
    backward_logits: torch.Tensor


def _reverse(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each column of (T, B, ...) `x` reversed within its length; padding stays put."""
    out = x.clone()
    for b, n in enumerate(lengths.tolist()):
        out[:n, b] = x[:n, b].flip(0)
    return out


class BiLM(nn.Module):
    """Section 3's `BiLM(vocab_size, embedding_dim, hidden_dim, num_layers, padding_idx)`,
    with the attributes that a subclass replaces (section 8 does), `embedding` and
    `token_projection`; each direction's scores come from a head of its own in `heads`."""

    def __init__(self, vocab_size: int, embedding_dim: int = 128, hidden_dim: int = 256,
                 num_layers: int = 2, padding_idx: int = 0, residual: bool = True) -> None:
        check_sizes(vocab_size=vocab_size, embedding_dim=embedding_dim, hidden_dim=hidden_dim,
                    num_layers=num_layers)
        super().__init__()
        self.adds_layer_below = residual
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=padding_idx)
        self.token_projection = nn.Linear(embedding_dim, hidden_dim)
        self.forward_mixers = nn.ModuleList(
            nn.Linear(hidden_dim, hidden_dim) for _ in range(num_layers))
        self.backward_mixers = nn.ModuleList(
            nn.Linear(hidden_dim, hidden_dim) for _ in range(num_layers))
        self.heads = nn.ModuleList(nn.Linear(hidden_dim, vocab_size) for _ in range(2))

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor | None = None) -> BiLMOutput:
        """ids (T, B) (or whatever the token layer takes, with T, B first), lengths (B,)."""
        lengths = self._check_input(ids, lengths)
        steps = torch.arange(ids.shape[0], device=ids.device)
        real = (steps.unsqueeze(1) < lengths.to(ids.device)).unsqueeze(-1)  # (T, B, 1)
        tokens = self.token_projection(self.embedding(ids))  # (T, B, H)
        forward = self._read(self.forward_mixers, tokens, self.adds_layer_below)
        backward = [_reverse(h, lengths) for h in self._read(
            self.backward_mixers, _reverse(tokens, lengths), self.adds_layer_below)]
        layers = [torch.cat([tokens, tokens], -1),
                  *(torch.cat(pair, -1) for pair in zip(forward, backward, strict=True))]
        return BiLMOutput(torch.stack(layers) * real, self.heads[0](forward[-1]),
                          self.heads[1](backward[-1]))

    @staticmethod
    def _read(mixers: nn.ModuleList, x: torch.Tensor, residual: bool) -> list[torch.Tensor]:
        """Every layer of one direction reading (T, B, H) `x` from t = 0 on; from layer 2,
        plus the layer below where `residual`."""
        count = torch.arange(1, x.shape[0] + 1, device=x.device).view(-1, 1, 1)
        layers = []
        for depth, mixer in enumerate(mixers):
            state = torch.tanh(mixer(x.cumsum(0) / count))  # tokens 0..t alone shape step t
            x = state + x if depth > 0 and residual else state
            layers.append(x)
        return layers

    def _check_input(self, ids: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        """`lengths` as a LongTensor (B,) on the CPU, as section 3's given check makes it."""
        return check_ids(ids, lengths, self.embedding.num_embeddings)
