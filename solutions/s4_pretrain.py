"""Section 4 - Pre-training the biLM: forward LM loss + backward LM loss.

The paper maximises the log likelihood of both directions (Peters et al. 2018, eq. 1):

    sum_k [ log p(t_k | t_1..t_{k-1}; fwd) + log p(t_k | t_{k+1}..t_N; bwd) ]

Here that is the mean cross-entropy of each direction over the real (non-padding) target
tokens, and the loss is their *sum*, as in the seed notebook; bilm-tf reports their
average, which is half of it.

Recipe. The seed trains one sentence at a time (`SEED_RECIPE`: batch 1, Adam, lr 0.001,
50 epochs: 1600 small steps). `DEFAULT_RECIPE` puts the whole 32-sentence corpus in one
batch with lr 0.02 for 40 epochs: the per-step cost barely grows with the batch, a larger
step size is safe with the less noisy gradient, and it passes the seed recipe's final loss
after about 16 epochs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.nn import functional as F
from tqdm import tqdm

from .s1_setup import get_device, set_seed
from .s2_corpus import PAD, encode, pad_batch
from .s3_bilm import BiLM, BiLMOutput

__all__ = ["DEFAULT_RECIPE", "SEED_RECIPE", "Recipe", "bilm_loss", "corpus_loss", "train_bilm"]


@dataclass(frozen=True)
class Recipe:
    """How to pre-train: mini-batch size, Adam's learning rate, passes over the corpus."""

    batch_size: int
    lr: float
    epochs: int


SEED_RECIPE = Recipe(batch_size=1, lr=0.001, epochs=50)
DEFAULT_RECIPE = Recipe(batch_size=32, lr=0.02, epochs=40)


def bilm_loss(output: BiLMOutput, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Forward LM cross-entropy + backward LM cross-entropy, padding ignored.

    Args:
        output: the biLM's output for `ids`; logits are (T, B, V).
        ids: LongTensor (T, B), each column BOS w_1 .. w_n EOS, right-padded.
        lengths: LongTensor (B,), the valid length of each column.

    Returns:
        a scalar tensor: mean forward CE + mean backward CE, each averaged over the real
        target tokens of the batch.
    """
    # BEGIN SOLUTION
    steps = torch.arange(ids.shape[0], device=ids.device).unsqueeze(1)
    valid = steps < lengths.to(ids.device).unsqueeze(0)  # (T, B)
    # Position t predicts t+1 (forward) and t-1 (backward); both ends must be real tokens.
    forward_targets = ids[1:].masked_fill(~valid[1:], PAD)
    backward_targets = ids[:-1].masked_fill(~valid[1:], PAD)
    vocab = output.forward_logits.shape[-1]
    forward = F.cross_entropy(
        output.forward_logits[:-1].reshape(-1, vocab), forward_targets.reshape(-1),
        ignore_index=PAD,
    )
    backward = F.cross_entropy(
        output.backward_logits[1:].reshape(-1, vocab), backward_targets.reshape(-1),
        ignore_index=PAD,
    )
    return forward + backward
    # END SOLUTION


def _encode_corpus(corpus: Sequence[str], word2idx: dict[str, int]) -> list[list[int]]:
    if len(corpus) == 0:
        raise ValueError("train_bilm needs at least one sentence; the corpus is empty")
    return [encode(sentence, word2idx, add_boundaries=True) for sentence in corpus]


@torch.no_grad()
def corpus_loss(model: BiLM, corpus: Sequence[str], word2idx: dict[str, int]) -> float:
    """The biLM loss of the whole corpus in one batch, in eval mode; the model's mode is kept.

    This is the number that `train_bilm` records after each epoch: it does not depend on
    the batch size used for training, so recipes can be compared on it.
    """
    ids, lengths = pad_batch(_encode_corpus(corpus, word2idx))
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        ids = ids.to(device)
        return float(bilm_loss(model(ids, lengths), ids, lengths))
    finally:
        model.train(was_training)


def train_bilm(
    model: BiLM,
    corpus: Sequence[str],
    word2idx: dict[str, int],
    recipe: Recipe = DEFAULT_RECIPE,
    seed: int = 0,
    device: str | torch.device | None = None,
    log_every: int = 10,
    progress: bool = True,
) -> list[float]:
    """Pre-train `model` on `corpus` with Adam; deterministic given `seed`.

    Args:
        model: the biLM; it is moved to `device` and left in training mode.
        corpus: sentences as strings.
        word2idx: the vocabulary's mapping; unknown words become <unk>.
        recipe: batch size, learning rate and epochs.
        seed: seeds the sentence shuffling of every epoch.
        device: where to train; None picks it with `get_device`.
        log_every: print the loss every this many epochs (0: never).
        progress: show a progress bar over epochs with the current loss.

    Returns:
        the corpus loss (`corpus_loss`) after each epoch: a list of `recipe.epochs` floats.
    """
    # BEGIN SOLUTION
    sentences = _encode_corpus(corpus, word2idx)
    device = get_device(device)
    model.to(device).train()
    set_seed(seed)
    shuffler = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=recipe.lr)
    history: list[float] = []
    bar = tqdm(range(1, recipe.epochs + 1), desc="pre-training", unit="epoch",
               disable=not progress, leave=False)
    for epoch in bar:
        order = torch.randperm(len(sentences), generator=shuffler).tolist()
        for start in range(0, len(order), recipe.batch_size):
            batch = [sentences[i] for i in order[start : start + recipe.batch_size]]
            ids, lengths = pad_batch(batch)
            ids = ids.to(device)
            optimizer.zero_grad()
            loss = bilm_loss(model(ids, lengths), ids, lengths)
            loss.backward()
            optimizer.step()
        history.append(corpus_loss(model, corpus, word2idx))
        bar.set_postfix(loss=f"{history[-1]:.3f}")
        if log_every and epoch % log_every == 0:
            tqdm.write(f"epoch {epoch:3d}  loss {history[-1]:.4f}")
    return history
    # END SOLUTION
