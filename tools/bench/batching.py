"""Correctness beside speed: a padded batch must train exactly as its sentences one at a time.

A faster trainer is worth nothing if batching changes what it computes. For the whole corpus
in one padded batch against each sentence alone, this compares the biLM's layers and logits
at every real position, the loss, and the gradient of every parameter. `bilm_loss` averages
over the batch's real target tokens (n - 1 per direction for a sentence of n tokens), so the
batch's loss and gradient must equal the per-sentence ones weighted by n - 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from tools import reference

_reference = reference()
CORPUS, build_vocab, encode, pad_batch = (getattr(_reference.corpus, name) for name in (
    "CORPUS", "build_vocab", "encode", "pad_batch"))
BiLM, bilm_loss = _reference.bilm.BiLM, _reference.pretrain.bilm_loss

# The section tests' tolerance (tests/sections/test_s3_bilm.py): float32, as torch.allclose.
ATOL, RTOL = 1e-5, 1e-4


@dataclass
class Gap:
    """How far apart two computations of one quantity are, over all its elements."""

    absolute: float = 0.0  # the largest |batched - alone|
    tolerance_used: float = 0.0  # the largest |batched - alone| / (ATOL + RTOL |alone|)

    def add(self, batched: torch.Tensor, alone: torch.Tensor) -> None:
        difference = (batched.double() - alone.double()).abs()
        self.absolute = max(self.absolute, float(difference.max()))
        used = difference / (ATOL + RTOL * alone.double().abs())
        self.tolerance_used = max(self.tolerance_used, float(used.max()))


@dataclass
class BatchingCheck:
    outputs: Gap = field(default_factory=Gap)
    loss: Gap = field(default_factory=Gap)
    gradients: Gap = field(default_factory=Gap)

    @property
    def tolerance_used(self) -> float:
        """The largest fraction of the tolerance used by any element: at most 1 passes."""
        return max(g.tolerance_used for g in (self.outputs, self.loss, self.gradients))

    @property
    def passed(self) -> bool:
        return self.tolerance_used <= 1.0


def _loss_and_gradients(model: BiLM, sentences: list[list[int]]):
    model.zero_grad()
    ids, lengths = pad_batch(sentences)
    output = model(ids, lengths)
    loss = bilm_loss(output, ids, lengths)
    loss.backward()
    gradients = [p.grad.detach().clone() for p in model.parameters()]
    return type(output)(*(t.detach() for t in output)), loss.detach(), gradients


def check(model: BiLM) -> BatchingCheck:
    """Compare the corpus as one padded batch with its sentences one at a time, on `model`.

    The model is put in eval mode (it has no dropout, so the mode changes no number here) and
    left there, with its gradients zeroed.
    """
    word2idx, _ = build_vocab(CORPUS)
    sentences = [encode(s, word2idx, add_boundaries=True) for s in CORPUS]
    model.eval()
    batch_output, batch_loss, batch_gradients = _loss_and_gradients(model, sentences)

    weights = torch.tensor([len(s) - 1 for s in sentences], dtype=torch.float64)
    weights /= weights.sum()
    result = BatchingCheck()
    loss = torch.zeros((), dtype=torch.float64)
    gradients = [torch.zeros_like(p, dtype=torch.float64) for p in model.parameters()]
    for b, (sentence, weight) in enumerate(zip(sentences, weights, strict=True)):
        alone, alone_loss, alone_gradients = _loss_and_gradients(model, [sentence])
        n = len(sentence)
        result.outputs.add(batch_output.layers[:, :n, b], alone.layers[:, :, 0])
        result.outputs.add(batch_output.forward_logits[:n, b], alone.forward_logits[:, 0])
        result.outputs.add(batch_output.backward_logits[:n, b], alone.backward_logits[:, 0])
        loss += weight * alone_loss.double()
        for total, gradient in zip(gradients, alone_gradients, strict=True):
            total += weight * gradient.double()
    model.zero_grad()
    result.loss.add(batch_loss, loss)
    for batched, expected in zip(batch_gradients, gradients, strict=True):
        result.gradients.add(batched, expected)
    return result


def describe(result: BatchingCheck) -> list[str]:
    verdict = "equal" if result.passed else "DIFFERENT"
    gaps = ", ".join(f"{name} {gap.absolute:.1e}" for name, gap in
                     (("outputs", result.outputs), ("loss", result.loss),
                      ("gradients", result.gradients)))
    return [f"padded batch vs one sentence at a time ({len(CORPUS)} sentences): {verdict} "
            f"(atol {ATOL:g}, rtol {RTOL:g}; {result.tolerance_used:.2g} of the tolerance used); "
            f"largest absolute differences: {gaps}"]
