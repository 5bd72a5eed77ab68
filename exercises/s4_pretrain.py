# Section 4 of the ELMo course. This file is yours: replace each
# `raise NotImplementedError(...)` with your code, then run `make test SECTION=4`.
"""Section 4 - Pre-training the biLM: forward LM loss + backward LM loss.

The paper maximises the log likelihood of both directions (Peters et al. 2018, eq. 1):

    sum_k [ log p(t_k | t_1..t_{k-1}; fwd) + log p(t_k | t_{k+1}..t_N; bwd) ]

Here that is the mean cross-entropy of each direction over the real (non-padding) target
tokens, and the loss is their *sum*, as in the seed notebook; bilm-tf reports their
average, which is half of it.

The floor. No biLM can do better than to know the corpus exactly: at every position, the
share of the corpus's sentences with that prefix (for the backward LM, that suffix) that go
on to each token. The given `analyses.analysis.entropy_floor` is that model's loss, the
lowest any biLM can reach on the corpus; a biLM at it has learnt the training sentences by
heart. Scored under the training and the held-out sentences together, it is the loss of a
biLM that has learnt which openings go with which endings, not which pairs training
happened to hold, and it is the same on training and held-out sentences.

Recipe. The seed trains one sentence at a time (`SEED_RECIPE`: batch 1, Adam, lr 0.001,
50 epochs). `DEFAULT_RECIPE` trains mini-batches of 16 sentences with lr 0.005 for 10
epochs (60 steps, seconds on a CPU). It stops on purpose near the loss of a biLM that knows
the phrases, not the sentences; what training longer would do, notebook 4 asks you to
predict and then measure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from course.given import progress_bar, show_loss

from .s1_setup import get_device, set_seed
from .s2_corpus import PAD, encode, pad_batch
from .s3_bilm import BiLM, BiLMOutput

__all__ = [
    "DEFAULT_RECIPE",
    "SEED_RECIPE",
    "Recipe",
    "bilm_loss",
    "corpus_loss",
    "train_bilm",
]


@dataclass(frozen=True)
class Recipe:
    """How to pre-train: mini-batch size, Adam's learning rate, passes over the corpus."""

    batch_size: int
    lr: float
    epochs: int


SEED_RECIPE = Recipe(batch_size=1, lr=0.001, epochs=50)
DEFAULT_RECIPE = Recipe(batch_size=16, lr=0.005, epochs=10)


def bilm_loss(output: BiLMOutput, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Forward LM cross-entropy + backward LM cross-entropy, padding ignored.

    The forward logits at position t score token t + 1, the backward logits at t score
    token t - 1. A prediction counts only when both its position and its target are real
    tokens: forward, t + 1 < lengths[b]; backward, 1 <= t < lengths[b]. Padding is never
    a position nor a target.

    Works wherever `ids` and the logits live (a GPU included), with `lengths` on the CPU
    or on that device: every tensor the function makes must live on `ids.device`. The
    tests run it on PyTorch's `meta` device, which has shapes but no values: an operation
    that needs values (`.item()`, a boolean mask) stops there with an error that the tests
    do not count against the code; one that mixes tensors of two devices fails them.

    Args:
        output: the biLM's output for `ids`; logits are (T, B, V).
        ids: LongTensor (T, B), each column BOS w_1 .. w_n EOS, right-padded.
        lengths: LongTensor (B,), the valid length of each column.

    Returns:
        a scalar tensor: mean forward CE + mean backward CE, each averaged over the real
        target tokens of the whole batch (every token weighs the same, whatever the length
        of its sentence).
    """
    raise NotImplementedError("section 4 (pretrain): bilm_loss is not implemented yet")


def _encode_corpus(corpus: Sequence[str], word2idx: dict[str, int]) -> list[list[int]]:
    """Every sentence as BOS w_1 .. w_n EOS ids, in corpus order."""
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
    """Pre-train `model` on `corpus`; the same `seed` gives the same training.

    An epoch visits every sentence of the corpus exactly once, in an order shuffled afresh
    for each epoch, in batches of `recipe.batch_size` sentences (the last batch may be
    smaller). Each batch, padded as section 2 pads and read by the model with its lengths,
    is one step of Adam with learning rate `recipe.lr` on `bilm_loss`. One optimizer lives
    for the whole run, so its moment estimates carry over from step to step, and each step
    follows the gradient of its own batch alone.

    The given line before your code encodes the corpus (`sentences`: each one BOS ... EOS,
    in corpus order).

    What the learner sees: with `progress`, a progress bar over the epochs on stderr (the
    given `progress_bar(epochs, show)`, `show` a bool, is one: it yields the epochs
    1 .. epochs); every `log_every` epochs, the line `epoch   N  loss X.XXXX` with that
    epoch's loss on stdout (the given `show_loss(bar, epoch, loss, log_every)` prints it,
    and puts the loss on the bar); nothing else is printed.

    Design questions: what must be fresh at every step, and what must last the whole run?
    Why would a model trained in eval mode, or on a batch read without its lengths, learn
    something other than the paper's biLM?

    Args:
        model: the biLM; it is moved to `device` and left in training mode.
        corpus: sentences as strings.
        word2idx: the vocabulary's mapping; unknown words become <unk>.
        recipe: batch size, learning rate and epochs.
        seed: decides the shuffled orders, alone: the same seed gives the same orders (and
            the same training, from the same weights) whatever was drawn from python's,
            numpy's or torch's global generators before; another seed, other orders. How is
            yours to choose: section 1's `set_seed` first, or a generator of the shuffle's
            own (it leaves the global generators alone), or both.
        device: where to train; None picks it as section 1's `get_device` does.
        log_every: print the loss every this many epochs (0: never).
        progress: show a progress bar over the epochs with the current loss.

    Returns:
        the history: element i is the corpus loss (`corpus_loss` of the whole corpus)
        measured after the last step of epoch i + 1, a float; `recipe.epochs` of them.
    """
    sentences = _encode_corpus(corpus, word2idx)  # each sentence BOS ... EOS, given
    raise NotImplementedError("section 4 (pretrain): train_bilm is not implemented yet")

