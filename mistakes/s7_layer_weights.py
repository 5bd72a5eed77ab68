"""Section 7 (layer_weights): mistakes in the scalar mix of the biLM's layers."""

from tools.mistakes import Edit, Mistake

MISTAKES = [
    Mistake(
        "softmax-over-the-wrong-axis",
        "the scalars are softmaxed each on its own axis of size 1, so every weight is 1",
        concept="the weights are one softmax across the layers: non-negative, summing to 1",
        caught_by="test_weights_are_the_softmax_of_the_scalars",
        edits=[Edit("ScalarMix.weights", "torch.softmax(self.scalar_parameters, dim=0)",
                    "torch.softmax(self.scalar_parameters.unsqueeze(-1), dim=-1).squeeze(-1)")],
    ),
    Mistake(
        "gamma-forgotten",
        "ScalarMix returns the weighted sum of the layers without multiplying by gamma",
        concept="ELMo scales the mix by a learned gamma (eq. 1 of the paper)",
        caught_by="test_gradients_reach_scalars_and_gamma_when_trainable",
        edits=[Edit("ScalarMix.forward", "return self.gamma * sum(", "return sum(")],
    ),
    Mistake(
        "layer-0-left-out",
        "ScalarMix mixes layers 1 to L only, dropping the token layer",
        concept="the mix runs over every layer j = 0 .. L, the token layer included",
        caught_by="test_every_layer_counts_in_the_mix",
        edits=[Edit("ScalarMix.forward", "zip(self.weights, layers, strict=True)",
                    "zip(self.weights[1:], layers[1:], strict=True)")],
    ),
    Mistake(
        "layer-norm-counts-padding",
        "the layer normalisation is computed without the mask, over padded positions too",
        concept="padding is not data: it never enters a layer's mean and variance",
        caught_by="test_layer_norm_ignores_masked_positions",
        edits=[Edit("ScalarMix.forward", "self._layer_norm(layer, mask)",
                    "self._layer_norm(layer, None)")],
    ),
    Mistake(
        "frozen-gamma-trains",
        "ScalarMix(trainable=False) still lets gamma learn",
        concept="trainable=False freezes the whole mix: the scalars and gamma together",
        caught_by="test_frozen_mix_learns_nothing",
        edits=[Edit("ScalarMix.__init__", "torch.tensor([1.0]), requires_grad=trainable)",
                    "torch.tensor([1.0]), requires_grad=True)")],
    ),
]
