"""Section 7 - Learned layer weights: the scalar mix of ELMo, and what a task makes of it.

ELMo hands a downstream task not one layer but a learned mixture of all of them
(Peters et al. 2018, eq. 1):

    ELMo_k = gamma * sum_j s_j h_kj,    s = softmax(w),    j = 0 .. L

with one pre-softmax scalar w_j per layer and a scale gamma, learned with the task while
the biLM stays frozen. `ScalarMix` follows AllenNLP's `allennlp/modules/scalar_mix.py`:
w starts at 0 (uniform weights), gamma at 1, `trainable=False` freezes both, and optional
layer normalisation computes one mean and one variance per layer over the unmasked
positions of the whole batch (the paper's "in some cases, layer normalization ... helped").

`ScalarMixProbe` learns s and gamma together with a linear classifier. The given
`analyses.analysis` trains it on two toy tasks, each cross-validated on held-out splits that
keep it fair (`ProbeTask.train_on`):

    word class   syntax-like: the word class of the corpus's unambiguous words, scored on
                 word types the classifier never saw (otherwise layer 0 would simply
                 memorise each word's class); chance is the most frequent class
    word sense   meaning-like: which of its two senses a polysemous word has, scored on
                 sentences whose opening and ending the classifier never saw (otherwise it
                 could recognise the phrase); chance, and layer 0's best, is 0.5

The paper reads its layers two ways. Learned weights (Sec. 5.5, Fig. 2): what each task's
mix takes from each layer. Single-layer probes (Sec. 5.3): a probe on one layer alone,
where the first biLSTM layer is the better one for POS tagging (Table 6, 97.3 against 96.8)
and the second for word sense disambiguation (Table 5, 69.0 against 67.4).
`analyses.analysis.evaluate_task` measures both; that a syntax-like task prefers a lower
layer and a meaning-like task the top one is the hypothesis, and section 7's notebook
measures what this toy biLM makes of it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from course.given import check_initial_scalars, check_layers

__all__ = ["ScalarMix", "ScalarMixProbe"]


class ScalarMix(nn.Module):
    """gamma * sum_j softmax(w)_j * layer_j: a learned mixture of same-shaped layers.

    Semantics of AllenNLP's `ScalarMix` (allennlp/modules/scalar_mix.py).

    Args:
        mixture_size: the number of layers mixed, L + 1 (3 for this biLM).
        do_layer_norm: normalise each layer to zero mean and unit variance before weighting,
            with one mean and variance per layer over all unmasked entries of the batch:
            (x - mean) / sqrt(variance + eps), the variance with divisor n (`unbiased=False`)
            and a small eps, AllenNLP's 1e-12, so that a constant layer gives 0, not nan.
        initial_scalar_parameters: the pre-softmax scalars w to start from; None gives
            zeros, so every layer starts with weight 1 / mixture_size.
        trainable: False freezes the scalars and gamma together.

    Attributes:
        scalar_parameters: an `nn.Parameter` (mixture_size,), the pre-softmax scalars w;
            requires_grad is `trainable`. (A plain tensor would be no part of
            `parameters()`, so no optimizer would train it, nor `state_dict()`.)
        gamma: an `nn.Parameter` (1,), the scale, starting at 1; requires_grad is `trainable`.
        do_layer_norm: the argument, as given.

    Raises:
        ValueError: initial scalars of another length than mixture_size (from the given
            `check_initial_scalars`).
    """

    def __init__(
        self,
        mixture_size: int,
        do_layer_norm: bool = False,
        initial_scalar_parameters: Sequence[float] | None = None,
        trainable: bool = True,
    ) -> None:
        check_initial_scalars(mixture_size, initial_scalar_parameters)  # a clear error, given
        # BEGIN SOLUTION
        super().__init__()
        if initial_scalar_parameters is None:
            initial_scalar_parameters = [0.0] * mixture_size
        self.do_layer_norm = do_layer_norm
        self.scalar_parameters = nn.Parameter(
            torch.tensor([float(w) for w in initial_scalar_parameters]), requires_grad=trainable)
        self.gamma = nn.Parameter(torch.tensor([1.0]), requires_grad=trainable)
        # END SOLUTION

    @property
    def weights(self) -> torch.Tensor:
        """(mixture_size,) softmax(w): non-negative, summing to 1."""
        # BEGIN SOLUTION
        return torch.softmax(self.scalar_parameters, dim=0)
        # END SOLUTION

    def forward(
        self, tensors: Sequence[torch.Tensor] | torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Mix the layers.

        Args:
            tensors: mixture_size tensors of one shape (..., D), or one tensor (L, ..., D)
                whose first axis is the layer axis (as the biLM's `layers`).
            mask: (...) True (or 1) at real positions; used only with layer normalisation,
                where None counts every position.

        Returns:
            (..., D) gamma * sum_j weights[j] * tensors[j], each layer normalised first when
            `do_layer_norm`.

        Raises:
            ValueError: the number of layers is not mixture_size, the layers differ in shape,
                or, with layer normalisation, the mask does not match them or masks every
                position (from the given `check_layers`).
        """
        check_layers(tensors, mask, len(self.scalar_parameters), self.do_layer_norm)  # given
        # BEGIN SOLUTION
        layers = list(tensors)
        if self.do_layer_norm:
            layers = [self._layer_norm(layer, mask) for layer in layers]
        return self.gamma * sum(w * layer for w, layer in zip(self.weights, layers, strict=True))
        # END SOLUTION

    @staticmethod
    def _layer_norm(layer: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """(..., D) `layer` minus its mean over the unmasked entries, over their std."""
        # BEGIN SOLUTION
        if mask is None:
            mask = torch.ones(layer.shape[:-1], dtype=torch.bool, device=layer.device)
        keep = mask.to(layer.dtype).unsqueeze(-1)  # (..., 1)
        count = keep.sum() * layer.shape[-1]
        mean = (layer * keep).sum() / count
        variance = (((layer - mean) * keep) ** 2).sum() / count
        return (layer - mean) / torch.sqrt(variance + 1e-12)
        # END SOLUTION


class ScalarMixProbe(nn.Module):
    """ELMo on a toy task: a learned mix of the frozen biLM's layers, then a linear classifier.

    The biLM is frozen by construction: it only ever produced the `layers` given here, under
    `torch.no_grad()` (section 5); only the mix (its scalars and gamma) and the classifier
    learn, together.

    Args:
        num_layers: layers in the input, L + 1 (3), or 1 to probe one layer on its own.
        input_dim: width D of each layer (512).
        num_classes: the task's number of classes.
        do_layer_norm: normalise each layer in the mix, so that its weight measures what the
            task takes from it rather than how large its values are.

    Attributes:
        mix: the `ScalarMix` of the `num_layers` layers, normalising each layer exactly when
            `do_layer_norm`; after `fit`, `mix.weights` and `mix.gamma` are what the task
            learned to take from each layer (`analyses.analysis` reads them).

    Behaviour: the logits are an affine function of `mix(layers)` alone (one weight matrix
    and one bias shared by every token), and the probe adds no softmax.

    Design question: why mix first and classify after, rather than classify every layer
    and mix the scores? (Compare the two when the mix normalises its layers.)
    """

    def __init__(
        self, num_layers: int, input_dim: int, num_classes: int, do_layer_norm: bool = True
    ) -> None:
        # BEGIN SOLUTION
        super().__init__()
        self.mix = ScalarMix(num_layers, do_layer_norm=do_layer_norm)
        self.classifier = nn.Linear(input_dim, num_classes)
        # END SOLUTION

    def forward(self, layers: torch.Tensor) -> torch.Tensor:
        """(L, N, D) embeddings of N tokens -> (N, num_classes) logits."""
        # BEGIN SOLUTION
        return self.classifier(self.mix(layers))
        # END SOLUTION

    def fit(
        self,
        layers: torch.Tensor,
        labels: torch.Tensor,
        epochs: int = 100,
        lr: float = 0.05,
    ) -> list[float]:
        """Train the mix and the classifier together on the whole batch, with Adam.

        Each of the `epochs` steps is one full-batch step of Adam (learning rate `lr`, its
        other settings torch's defaults) on the mean cross-entropy of the probe's logits
        against `labels`, over every parameter that can learn (the mix's scalars and gamma,
        unless frozen, and the classifier). One optimizer serves the whole run, so Adam's
        moment estimates carry from one step to the next; each step follows the gradient
        of its own loss only, whatever gradients the parameters held when fit was called.

        Properties the tests check: the first returned loss is the mean cross-entropy of
        the probe as fit found it; on a learnable task the loss falls; the same starting
        weights give the same losses and the same trained probe (no randomness of its
        own); after one step every parameter with a gradient has moved by about `lr`
        against it (Adam's first step); `lr` 0 leaves the probe as it was.

        Args:
            layers: (L, N, D) the training tokens' embeddings.
            labels: (N,) LongTensor of class indices.
            epochs: full-batch steps.
            lr: Adam's learning rate, for the scalars, gamma and the classifier alike.

        Returns:
            the training loss before each step: a list of `epochs` python floats, the first
            being the loss of the weights fit started from.
        """
        # BEGIN SOLUTION
        optimizer = torch.optim.Adam([p for p in self.parameters() if p.requires_grad], lr=lr)
        self.train()
        losses = []
        for _ in range(epochs):
            optimizer.zero_grad()
            loss = F.cross_entropy(self(layers), labels)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses
        # END SOLUTION

    @torch.no_grad()
    def predict(self, layers: torch.Tensor) -> torch.Tensor:
        """(L, N, D) -> (N,) the most likely class of each token."""
        return self(layers).argmax(dim=-1)
