"""Section 7 (layer_weights): mistakes in the scalar mix of the biLM's layers and in the
probe that learns it."""

from tools.mistakes import Alternative, Edit, Mistake

# The code a learner writes in each function the mistakes below edit: the reference's, as
# it was when they were written. A mistake edits this copy, and the edited code replaces
# the function's whole marked block, so that a refactor of solutions/ leaves it as it is.
LEARNER_CODE = {
    "ScalarMix.__init__": """
        super().__init__()
        if initial_scalar_parameters is None:
            initial_scalar_parameters = [0.0] * mixture_size
        self.do_layer_norm = do_layer_norm
        self.scalar_parameters = nn.Parameter(
            torch.tensor([float(w) for w in initial_scalar_parameters]), requires_grad=trainable)
        self.gamma = nn.Parameter(torch.tensor([1.0]), requires_grad=trainable)
        """,
    "ScalarMix.weights": """
        return torch.softmax(self.scalar_parameters, dim=0)
        """,
    "ScalarMix.forward": """
        layers = list(tensors)
        if self.do_layer_norm:
            layers = [self._layer_norm(layer, mask) for layer in layers]
        return self.gamma * sum(w * layer for w, layer in zip(self.weights, layers, strict=True))
        """,
    "ScalarMix._layer_norm": """
        if mask is None:
            mask = torch.ones(layer.shape[:-1], dtype=torch.bool, device=layer.device)
        keep = mask.to(layer.dtype).unsqueeze(-1)  # (..., 1)
        count = keep.sum() * layer.shape[-1]
        mean = (layer * keep).sum() / count
        variance = (((layer - mean) * keep) ** 2).sum() / count
        return (layer - mean) / torch.sqrt(variance + 1e-12)
        """,
    "ScalarMixProbe.__init__": """
        super().__init__()
        self.mix = ScalarMix(num_layers, do_layer_norm=do_layer_norm)
        self.classifier = nn.Linear(input_dim, num_classes)
        """,
    "ScalarMixProbe.forward": """
        return self.classifier(self.mix(layers))
        """,
    "ScalarMixProbe.fit": """
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
        """,
}

SCALARS = """
self.scalar_parameters = nn.Parameter(
    torch.tensor([float(w) for w in initial_scalar_parameters]), requires_grad=trainable)
"""
NORMALISED = "return (layer - mean) / torch.sqrt(variance + 1e-12)"
LOSS = "losses.append(loss.item())"

MISTAKES = [
    Mistake(
        "softmax-over-the-wrong-axis",
        "the scalars are softmaxed each on its own axis of size 1, so every weight is 1",
        caught_by="test_weights_are_the_softmax_of_the_scalars",
        edits=[Edit("ScalarMix.weights", "torch.softmax(self.scalar_parameters, dim=0)",
                    "torch.softmax(self.scalar_parameters.unsqueeze(-1), dim=-1).squeeze(-1)")],
    ),
    Mistake(
        "no-softmax",
        "the weights are the raw scalars w, not softmax(w)",
        caught_by="test_weights_are_the_softmax_of_the_scalars",
        edits=[Edit("ScalarMix.weights", "torch.softmax(self.scalar_parameters, dim=0)",
                    "self.scalar_parameters")],
    ),
    Mistake(
        "scalars-start-at-random",
        "without initial scalars, w starts from torch.randn",
        caught_by="test_starts_uniform_with_gamma_one",
        edits=[Edit("ScalarMix.__init__", "[0.0] * mixture_size",
                    "torch.randn(mixture_size).tolist()")],
    ),
    Mistake(
        "gamma-starts-at-zero",
        "gamma is made with torch.zeros(1), like the scalars",
        caught_by="test_starts_uniform_with_gamma_one",
        edits=[Edit("ScalarMix.__init__", "nn.Parameter(torch.tensor([1.0])",
                    "nn.Parameter(torch.zeros(1)")],
    ),
    Mistake(
        "scalars-as-a-plain-tensor",
        "the scalars are a tensor with requires_grad, not an nn.Parameter",
        caught_by="test_the_scalars_and_gamma_are_registered_parameters",
        edits=[Edit("ScalarMix.__init__", SCALARS, """
            self.scalar_parameters = torch.tensor(
                [float(w) for w in initial_scalar_parameters], requires_grad=trainable)
        """.replace("            ", "", 2).replace("\n                [", "\n    ["))],
    ),
    Mistake(
        "gamma-as-a-plain-tensor",
        "gamma is a tensor with requires_grad, not an nn.Parameter",
        caught_by="test_the_scalars_and_gamma_are_registered_parameters",
        edits=[Edit("ScalarMix.__init__",
                    "self.gamma = nn.Parameter(torch.tensor([1.0]), requires_grad=trainable)",
                    "self.gamma = torch.tensor([1.0], requires_grad=trainable)")],
    ),
    Mistake(
        "gamma-forgotten",
        "ScalarMix returns the weighted sum of the layers without multiplying by gamma",
        caught_by="test_gradients_reach_scalars_and_gamma_when_trainable",
        edits=[Edit("ScalarMix.forward", "return self.gamma * sum(", "return sum(")],
    ),
    Mistake(
        "layer-0-left-out",
        "ScalarMix mixes layers 1 to L only, dropping the token layer",
        caught_by="test_every_layer_counts_in_the_mix",
        edits=[Edit("ScalarMix.forward", "zip(self.weights, layers, strict=True)",
                    "zip(self.weights[1:], layers[1:], strict=True)")],
    ),
    Mistake(
        "frozen-gamma-trains",
        "ScalarMix(trainable=False) still lets gamma learn",
        caught_by="test_frozen_mix_learns_nothing",
        edits=[Edit("ScalarMix.__init__", "torch.tensor([1.0]), requires_grad=trainable)",
                    "torch.tensor([1.0]), requires_grad=True)")],
    ),
    Mistake(
        "layer-norm-counts-padding",
        "the layer normalisation is computed without the mask, over padded positions too",
        caught_by="test_layer_norm_ignores_masked_positions",
        edits=[Edit("ScalarMix.forward", "self._layer_norm(layer, mask)",
                    "self._layer_norm(layer, None)")],
    ),
    Mistake(
        "layer-norm-per-position",
        "each position is normalised over its D features, as nn.LayerNorm does",
        caught_by="test_layer_norm_normalises_each_layer_on_its_own",
        edits=[Edit("ScalarMix._layer_norm", NORMALISED,
                    "return F.layer_norm(layer, layer.shape[-1:], eps=1e-12)")],
    ),
    Mistake(
        "layer-norm-across-layers",
        "the layers are normalised together, with one mean and variance for the whole stack",
        caught_by="test_layer_norm_normalises_each_layer_on_its_own",
        edits=[Edit("ScalarMix.forward", "[self._layer_norm(layer, mask) for layer in layers]",
                    "list(self._layer_norm(torch.stack(layers), None))")],
    ),
    Mistake(
        "layer-norm-unbiased-variance",
        "the variance is divided by n - 1, as torch.var does by default",
        caught_by="test_layer_norm_normalises_each_layer_on_its_own",
        edits=[Edit("ScalarMix._layer_norm", "** 2).sum() / count", "** 2).sum() / (count - 1)")],
    ),
    Mistake(
        "layer-norm-without-epsilon",
        "the layer norm divides by sqrt(variance), so a constant layer gives 0/0",
        caught_by="test_a_constant_layer_normalises_to_zero_not_nan",
        edits=[Edit("ScalarMix._layer_norm", "torch.sqrt(variance + 1e-12)",
                    "torch.sqrt(variance)")],
    ),
    Mistake(
        "probe-without-layer-norm",
        "ScalarMixProbe builds its mix without passing do_layer_norm on",
        caught_by="test_the_probe_normalises_its_layers_unless_told_not_to",
        edits=[Edit("ScalarMixProbe.__init__",
                    "ScalarMix(num_layers, do_layer_norm=do_layer_norm)", "ScalarMix(num_layers)")],
    ),
    Mistake(
        "probe-classifies-each-layer",
        "ScalarMixProbe classifies every layer, then mixes the logits",
        caught_by="test_the_probe_classifies_the_mix_of_the_layers",
        edits=[Edit("ScalarMixProbe.forward", "self.classifier(self.mix(layers))",
                    "self.mix(self.classifier(layers))")],
    ),
    Mistake(
        "fit-trains-only-the-classifier",
        "fit's optimizer holds the classifier's parameters only",
        caught_by="test_adams_first_step_moves_every_parameter_by_lr",
        edits=[Edit("ScalarMixProbe.fit", "[p for p in self.parameters() if p.requires_grad]",
                    "self.classifier.parameters()")],
    ),
    Mistake(
        "fit-forgets-zero-grad",
        "fit never calls optimizer.zero_grad(), so the gradients add up over the epochs",
        caught_by="test_gradients_from_before_fit_play_no_part",
        edits=[Edit("ScalarMixProbe.fit", "optimizer.zero_grad()\n", "")],
    ),
    Mistake(
        "fit-with-sgd",
        "fit trains with torch.optim.SGD at the same learning rate",
        caught_by="test_adams_first_step_moves_every_parameter_by_lr",
        edits=[Edit("ScalarMixProbe.fit", "torch.optim.Adam(", "torch.optim.SGD(")],
    ),
    Mistake(
        "fit-records-the-loss-after-the-step",
        "fit records the loss computed again after each step",
        caught_by="test_fit_returns_the_mean_cross_entropy_before_each_step",
        edits=[Edit("ScalarMixProbe.fit", LOSS,
                    "losses.append(F.cross_entropy(self(layers), labels).item())")],
    ),
    Mistake(
        "fit-records-tensors",
        "fit records each loss as a tensor",
        caught_by="test_fit_returns_the_mean_cross_entropy_before_each_step",
        edits=[Edit("ScalarMixProbe.fit", LOSS, "losses.append(loss.detach())")],
    ),
    Mistake(
        "fit-ignores-its-learning-rate",
        "fit builds Adam with lr=0.05 whatever lr it is given",
        caught_by="test_fit_is_reproducible_and_lr_zero_changes_nothing",
        edits=[Edit("ScalarMixProbe.fit", "if p.requires_grad], lr=lr)",
                    "if p.requires_grad], lr=0.05)")],
    ),
    Mistake(
        "fit-sums-the-loss",
        "fit trains on, and records, the cross-entropy summed over the batch, not its mean",
        caught_by="test_fit_returns_the_mean_cross_entropy_before_each_step",
        edits=[Edit("ScalarMixProbe.fit", "F.cross_entropy(self(layers), labels)",
                    'F.cross_entropy(self(layers), labels, reduction="sum")')],
    ),
    Mistake(
        "fit-makes-an-optimizer-each-step",
        "fit builds a new Adam optimizer at every step",
        caught_by="test_one_optimizer_serves_every_step_of_fit",
        edits=[Edit("ScalarMixProbe.fit", "optimizer.zero_grad()\n",
                    "optimizer = torch.optim.Adam(\n"
                    "    [p for p in self.parameters() if p.requires_grad], lr=lr)\n"
                    "optimizer.zero_grad()\n")],
    ),
]


ALTERNATIVES = [
    Alternative(
        "layer-norm-by-boolean-mask",
        "the layer norm selects the unmasked positions, then takes their mean and var",
        edits=[Edit("ScalarMix._layer_norm", """
            keep = mask.to(layer.dtype).unsqueeze(-1)  # (..., 1)
            count = keep.sum() * layer.shape[-1]
            mean = (layer * keep).sum() / count
            variance = (((layer - mean) * keep) ** 2).sum() / count
        """, """
            values = layer[mask.bool()]  # (n, D): the unmasked positions
            mean, variance = values.mean(), values.var(unbiased=False)
        """)],
    ),
    Alternative(
        "layer-norm-with-nn-layernorms-epsilon",
        "the layer norm adds nn.LayerNorm's 1e-5 under the square root, not 1e-12",
        edits=[Edit("ScalarMix._layer_norm", "variance + 1e-12", "variance + 1e-5")],
    ),
    Alternative(
        "mix-by-einsum",
        "ScalarMix.forward weighs the stacked layers with torch.einsum",
        edits=[Edit("ScalarMix.forward",
                    "sum(w * layer for w, layer in zip(self.weights, layers, strict=True))",
                    'torch.einsum("l,l...->...", self.weights, torch.stack(layers))')],
    ),
    Alternative(
        "fit-over-every-parameter",
        "fit gives Adam every parameter, frozen ones too (Adam skips those without a gradient)",
        edits=[Edit("ScalarMixProbe.fit", "[p for p in self.parameters() if p.requires_grad]",
                    "self.parameters()")],
    ),
    Alternative(
        "probe-mixes-and-classifies-by-hand",
        "the probe keeps its classifier as a weight matrix and a bias of its own, applied "
        "to the mix with a matrix product",
        edits=[
            Edit("ScalarMixProbe.__init__",
                 "self.classifier = nn.Linear(input_dim, num_classes)\n",
                 "self.weight = nn.Parameter(torch.randn(num_classes, input_dim) / 2)\n"
                 "self.bias = nn.Parameter(torch.zeros(num_classes))\n"),
            Edit("ScalarMixProbe.forward", "self.classifier(self.mix(layers))",
                 "self.mix(layers) @ self.weight.T + self.bias"),
        ],
    ),
    Alternative(
        "fit-clears-gradients-with-none",
        "fit clears each parameter's gradient itself, before each backward pass",
        edits=[Edit("ScalarMixProbe.fit", "optimizer.zero_grad()\n",
                    "for p in self.parameters():\n    p.grad = None\n")],
    ),
]
