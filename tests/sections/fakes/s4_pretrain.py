"""Section 4 as the other sections' tests need it: its `Recipe` and a `train_bilm` with
section 4's signature, written for the tests, never the answer. It trains the forward
language model alone, on the whole corpus at once, one step of Adam per epoch: enough for a
biLM to learn something and for every parameter of its token layer to move."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from .s2_corpus import PAD, encode, pad_batch


@dataclass(frozen=True)
class Recipe:
    """Mini-batch size, Adam's learning rate, passes over the corpus."""

    batch_size: int
    lr: float
    epochs: int


SEED_RECIPE = Recipe(batch_size=1, lr=0.001, epochs=50)
DEFAULT_RECIPE = Recipe(batch_size=16, lr=0.005, epochs=10)


def train_bilm(model: torch.nn.Module, corpus: Sequence[str], word2idx: dict[str, int],
               recipe: Recipe = DEFAULT_RECIPE, seed: int = 0,
               device: str | torch.device | None = None, log_every: int = 10,
               progress: bool = True) -> list[float]:
    """`recipe.epochs` steps on the forward cross-entropy of all of `corpus`, on the CPU
    unless `device` says otherwise; the history is that loss before each step. `seed`,
    `log_every` and `progress` change nothing: nothing is drawn or shown."""
    ids, _ = pad_batch([encode(sentence, word2idx, add_boundaries=True) for sentence in corpus])
    model.to(device or "cpu").train()
    ids = ids.to(next(model.parameters()).device)
    optimizer = torch.optim.Adam(model.parameters(), lr=recipe.lr)
    history = []
    for _ in range(recipe.epochs):
        logits = model(ids, (ids != PAD).sum(0)).forward_logits[:-1]  # (T - 1, B, V)
        loss = F.cross_entropy(logits.flatten(0, 1), ids[1:].flatten(), ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    return history
