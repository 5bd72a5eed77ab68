"""Section 7: the scalar mix of the biLM's layers (AllenNLP's semantics), and a linear probe
that learns the mix's weights together with its classifier.

A property of what the mix gives (a mask ignored, a frozen mix, a fit that repeats ...)
holds as well of a mix that reads the token layer alone, or no layer, which is no ELMo:
each test of one judges it only of a mix that reads the biLM's layers in context
(`assert_mixes_the_layers`). The tests of the mix's starting weights do not.

Each test is an act, which runs the section's code and returns what it computed as data,
and a judge, which checks that data alone (`judged.py`).
"""

import copy

import numpy as np
import pytest
import torch
from hypothesis import settings
from hypothesis import strategies as st
from torch import nn
from torch.nn import functional as F

from course.diagnose import assert_close

from .judged import assume, judged
from .strategies import layer_stacks

TOL = dict(atol=1e-5, rtol=1e-4)


def softmax(x):
    e = np.exp(np.asarray(x, dtype=np.float64) - np.max(x))
    return e / e.sum()


def layers_reading(module, width=4):
    """What `module` gives of 3 layers (N, width), a ScalarMix or a probe (the act's half of
    `assert_mixes_the_layers`): of the layers (`before`), of them with layers 1 and 2 changed
    (`after`), of other layers altogether (`apart`), and whether it is a `probe`. Read on a
    copy with gamma at 1 and scalars of three values, so that a mix that reads its layers
    does so whatever its weights' start."""
    module = copy.deepcopy(module)
    mix = getattr(module, "mix", module)
    generator = torch.Generator().manual_seed(11)
    layers = torch.randn(3, 6, width, generator=generator)
    changed, other = layers.clone(), torch.randn(3, 6, width, generator=generator)
    changed[1:] = other[1:]
    with torch.no_grad():
        for name, value in (("gamma", [1.0]), ("scalar_parameters", [0.3, -0.2, 0.1])):
            if getattr(getattr(mix, name, None), "shape", None) == (len(value),):
                getattr(mix, name).copy_(torch.tensor(value))
        before, after, apart = module(layers), module(changed), module(other)
    return {"before": before, "after": after, "apart": apart, "probe": mix is not module}


def assert_mixes_the_layers(reading):
    """What a module gave of 3 layers (`layers_reading`), a ScalarMix or a probe, changes
    when layers 1 and 2 change: it reads the layers in context, not the token layer alone,
    nor nothing."""
    before, after, apart = reading["before"], reading["after"], reading["apart"]
    if not torch.allclose(before, after, **TOL):
        return
    what = "the probe's logits on" if reading["probe"] else "the mix of"
    raise AssertionError(
        f"{what} 3 layers stayed the same when layers 1 and 2 changed: " + (
            "it reads none of the layers" if torch.allclose(before, apart, **TOL) else
            "it reads layer 0, the token layer, alone") +
        ". What this test checks would hold of such a mix, which is no ELMo; it counts for "
        "one that weighs every layer, gamma * sum_j s_j h_j")


# --- ScalarMix -------------------------------------------------------------------------

@pytest.mark.parametrize("size", [1, 3, 7], ids=lambda size: f"mixture_size={size}")
@judged()
def test_starts_uniform_with_gamma_one(layer_weights, size):
    """Without initial scalars: w = 0, every weight 1 / mixture_size, gamma = 1 of shape (1,)."""
    mix = layer_weights.ScalarMix(size)
    return {"scalars": mix.scalar_parameters.detach(), "weights": mix.weights.detach(),
            "gamma": mix.gamma.detach()}


@test_starts_uniform_with_gamma_one.judge
def _(out, size):
    scalars = out["scalars"]
    assert scalars.shape == (size,) and not scalars.any(), (
        f"the pre-softmax scalars start at 0, shape ({size},); got {scalars.tolist()}")
    weights = out["weights"]
    assert torch.allclose(weights, torch.full((size,), 1 / size)), (
        f"with scalars 0 every layer weighs 1/{size}, got {weights.tolist()}")
    gamma = out["gamma"]
    assert gamma.shape == (1,) and float(gamma) == 1.0, (
        f"gamma starts at 1, as a tensor of shape (1,); got {gamma!r}")


@judged()
def test_the_scalars_and_gamma_are_registered_parameters(layer_weights):
    """scalar_parameters and gamma are nn.Parameters, in parameters() and state_dict()."""
    mix = layer_weights.ScalarMix(3)
    named = dict(mix.named_parameters())
    found = {}
    for name in ("scalar_parameters", "gamma"):
        value = getattr(mix, name)
        found[name] = {"is_parameter": isinstance(value, nn.Parameter),
                       "registered": named.get(name) is value,
                       "in_state_dict": name in mix.state_dict()}
    return found


@test_the_scalars_and_gamma_are_registered_parameters.judge
def _(out):
    for name in ("scalar_parameters", "gamma"):
        assert out[name]["is_parameter"] and out[name]["registered"], (
            f"ScalarMix.{name} should be an nn.Parameter, registered by assigning it to "
            f"self.{name}: a plain tensor is no part of parameters(), so no optimizer trains it"
        )
        assert out[name]["in_state_dict"], f"ScalarMix.{name} is missing from state_dict()"


@judged(stack=layer_stacks())
def test_weights_are_the_softmax_of_the_scalars(layer_weights, stack):
    """weights = softmax(w) over the layers: non-negative, summing to 1."""
    _, scalars = stack
    weights = layer_weights.ScalarMix(len(scalars), initial_scalar_parameters=scalars).weights
    return {"weights": weights.detach()}


@test_weights_are_the_softmax_of_the_scalars.judge
def _(out, stack):
    _, scalars = stack
    weights = out["weights"].double().numpy()
    assert (weights >= 0).all() and weights.sum() == pytest.approx(1.0, abs=1e-6), (
        f"weights must be non-negative and sum to 1, got {weights}")
    np.testing.assert_allclose(weights, softmax(scalars), atol=1e-6,
                               err_msg=f"the weights should be softmax({scalars})")


@judged(stack=layer_stacks())
def test_output_is_gamma_times_the_weighted_sum(layer_weights, stack):
    """mix(layers) = gamma * sum_j weights[j] * layers[j], for a list or a stacked tensor."""
    layers, scalars = stack
    mix = layer_weights.ScalarMix(len(scalars), initial_scalar_parameters=scalars)
    with torch.no_grad():
        mix.gamma.fill_(0.75)
    return {"as_list": mix([torch.from_numpy(layer) for layer in layers]),
            "as_stack": mix(torch.from_numpy(layers))}


@test_output_is_gamma_times_the_weighted_sum.judge
def _(out, stack):
    layers, scalars = stack
    expected = 0.75 * np.tensordot(softmax(scalars), layers.astype(np.float64), axes=1)
    assert tuple(out["as_list"].shape) == layers.shape[1:], (
        f"mixing {len(layers)} layers of shape {layers.shape[1:]} should keep that shape, "
        f"got {tuple(out['as_list'].shape)}")
    for name, got in (("a list of layers", out["as_list"]), ("a stacked tensor", out["as_stack"])):
        np.testing.assert_allclose(
            got.numpy(), expected, **TOL,
            err_msg=f"with gamma 0.75, the mix of {name} should be 0.75 * sum_j s_j h_j")


@judged()
def test_every_layer_counts_in_the_mix(layer_weights):
    """Equal weights over layers holding 1, 2, 3 mix to 2: layer 0 counts too."""
    layers = torch.stack([torch.full((2, 4), float(j + 1)) for j in range(3)])  # layer j: j + 1
    return {"mixed": layer_weights.ScalarMix(3)(layers)}


@test_every_layer_counts_in_the_mix.judge
def _(out):
    mixed = out["mixed"]
    assert torch.allclose(mixed, torch.full((2, 4), 2.0)), (
        f"with equal weights, layers holding 1, 2 and 3 mix to 2, got {float(mixed[0, 0]):.3f}: "
        "the mix runs over every layer j = 0 .. L, layer 0 included"
    )


@judged(stack=layer_stacks(max_layers=4))
def test_layer_norm_normalises_each_layer_on_its_own(layer_weights, stack):
    """With layer norm, each layer is (x - mean) / sqrt(var + eps), over all its entries."""
    layers, scalars = stack
    mix = layer_weights.ScalarMix(len(scalars), do_layer_norm=True,
                                  initial_scalar_parameters=scalars)
    return {"mixed": mix(torch.from_numpy(layers)).detach()}


@test_layer_norm_normalises_each_layer_on_its_own.judge
def _(out, stack):
    layers, scalars = stack
    flat = layers.reshape(len(layers), -1).astype(np.float64)
    # a nearly constant layer has no scale to normalise: float32 rounding of its mean and the
    # epsilon under the square root (AllenNLP's 1e-12, nn.LayerNorm's 1e-5) then decide
    assume((flat.std(1) > 0.1).all())
    normed = (flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-12)
    expected = np.tensordot(softmax(scalars), normed, axes=1).reshape(layers.shape[1:])
    got = out["mixed"].numpy()
    np.testing.assert_allclose(
        got, expected, atol=1e-3, rtol=1e-3,
        err_msg="each layer should be normalised on its own, with one mean and one variance "
                "(divisor n) over all of its entries, before the weighted sum")


def _masked_layers():
    """(layers (L, B, T, D), mask (B, T)): the same ones in the act and in the judge."""
    generator = torch.Generator().manual_seed(0)
    layers = torch.randn(3, 2, 5, 4, generator=generator)  # (L, B, T, D)
    mask = torch.ones(2, 5, dtype=torch.bool)
    mask[0, 3:] = mask[1, 4:] = False
    return layers, mask


@judged()
def test_layer_norm_ignores_masked_positions(layer_weights):
    """Masked positions move neither a layer's mean nor its variance."""
    layers, mask = _masked_layers()
    mix = layer_weights.ScalarMix(3, do_layer_norm=True, initial_scalar_parameters=[0.1, 0, -1])
    changed = layers.clone()
    changed[:, ~mask] = 1000.0  # what padding holds must not move the statistics
    return {"before": mix(layers, mask), "after": mix(changed, mask), "weights": mix.weights}


@test_layer_norm_ignores_masked_positions.judge
def _(out):
    layers, mask = _masked_layers()
    before, after = out["before"], out["after"]
    assert torch.allclose(before[mask], after[mask], **TOL), (
        "layer normalisation should compute its mean and variance over unmasked positions only")
    real = layers[:, mask]  # (L, n, D)
    normed = (real - real.mean(dim=(1, 2), keepdim=True)) / real.std(
        dim=(1, 2), unbiased=False, keepdim=True)
    expected = (out["weights"].view(3, 1, 1) * normed).sum(0)
    assert torch.allclose(before[mask], expected, atol=1e-4), (
        "each layer: one mean and one variance over all unmasked entries of the batch")


@judged()
def test_a_constant_layer_normalises_to_zero_not_nan(layer_weights):
    """A constant layer has variance 0: with an epsilon under the root it gives 0, not nan."""
    reading = layers_reading(layer_weights.ScalarMix(3, do_layer_norm=True))
    layers = torch.stack([torch.full((2, 3, 4), 2.0), torch.randn(2, 3, 4)])
    mix = layer_weights.ScalarMix(2, do_layer_norm=True, initial_scalar_parameters=[5.0, -5.0])
    return {"reading": reading, "mixed": mix(layers)}


@test_a_constant_layer_normalises_to_zero_not_nan.judge
def _(out):
    assert_mixes_the_layers(out["reading"])
    assert torch.isfinite(out["mixed"]).all(), (
        "a constant layer has variance 0: add a small epsilon under the square root "
        "(AllenNLP's 1e-12), so that it normalises to 0, not nan"
    )


@judged()
def test_layer_norm_without_a_mask_counts_every_position(layer_weights):
    """mask=None normalises as a mask of all True."""
    reading = layers_reading(layer_weights.ScalarMix(3, do_layer_norm=True))
    layers = torch.randn(2, 3, 4, 5, generator=torch.Generator().manual_seed(1))
    mix = layer_weights.ScalarMix(2, do_layer_norm=True)
    everything = torch.ones(3, 4, dtype=torch.bool)
    return {"reading": reading, "without": mix(layers), "all_true": mix(layers, everything)}


@test_layer_norm_without_a_mask_counts_every_position.judge
def _(out):
    assert_mixes_the_layers(out["reading"])
    assert torch.allclose(out["without"], out["all_true"], **TOL), (
        "without a mask every position counts: mix(layers) should equal mix(layers, a mask "
        "of all True)"
    )


@judged()
def test_mask_is_ignored_without_layer_norm(layer_weights):
    """Without layer norm, a mask changes nothing (as in AllenNLP)."""
    reading = layers_reading(layer_weights.ScalarMix(3))
    layers = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(2))
    mask = torch.tensor([True, True, False])
    mix = layer_weights.ScalarMix(2)
    return {"reading": reading, "masked": mix(layers, mask), "unmasked": mix(layers)}


@test_mask_is_ignored_without_layer_norm.judge
def _(out):
    assert_mixes_the_layers(out["reading"])
    assert torch.equal(out["masked"], out["unmasked"]), (
        "without layer normalisation the mask is not used: AllenNLP ignores it then"
    )


@judged()
def test_gradients_reach_scalars_and_gamma_when_trainable(layer_weights):
    """A loss on the mix gives the scalars and gamma non-zero gradients."""
    mix = layer_weights.ScalarMix(3)
    layers = torch.randn(3, 4, 6, generator=torch.Generator().manual_seed(3))
    (mix(layers) * torch.arange(6.0)).sum().backward()
    return {name: getattr(mix, name).grad for name in ("scalar_parameters", "gamma")}


@test_gradients_reach_scalars_and_gamma_when_trainable.judge
def _(out):
    for name in ("scalar_parameters", "gamma"):
        grad = out[name]
        assert grad is not None and grad.abs().sum() > 0, (
            f"{name} got no gradient from a loss on the mix: is it part of the computation?"
        )


@judged()
def test_frozen_mix_learns_nothing(layer_weights):
    """trainable=False: neither the scalars nor gamma require a gradient; the layers do."""
    mix = layer_weights.ScalarMix(3, initial_scalar_parameters=[1.0, 0.0, -1.0], trainable=False)
    reading = layers_reading(mix)
    requires_grad = [p.requires_grad for p in mix.parameters()]
    layers = torch.randn(3, 4, 6, requires_grad=True)
    mix(layers).sum().backward()
    return {"reading": reading, "requires_grad": requires_grad,
            "scalars_grad": mix.scalar_parameters.grad, "gamma_grad": mix.gamma.grad,
            "layers_grad": layers.grad, "weights": mix.weights.detach()}


@test_frozen_mix_learns_nothing.judge
def _(out):
    assert_mixes_the_layers(out["reading"])
    assert not any(out["requires_grad"]), (
        "trainable=False should freeze the scalars and gamma together")
    assert out["scalars_grad"] is None and out["gamma_grad"] is None, (
        "a frozen mix should get no gradient")
    assert out["layers_grad"] is not None, "the layers themselves still get gradients"
    np.testing.assert_allclose(out["weights"].numpy(), softmax([1.0, 0.0, -1.0]),
                               atol=1e-6, err_msg="a frozen mix keeps its initial scalars")


# --- ScalarMixProbe ---------------------------------------------------------------------

@judged()
def test_the_probe_classifies_the_mix_of_the_layers(layer_weights):
    """probe(layers): (N, num_classes) logits, an affine function of probe.mix(layers)."""
    torch.manual_seed(0)
    probe = layer_weights.ScalarMixProbe(num_layers=3, input_dim=4, num_classes=3)
    reading = layers_reading(probe)
    layers = torch.randn(3, 20, 4, generator=torch.Generator().manual_seed(6))
    layers[1] *= 5.0  # layers of different scales: normalising each one matters
    with torch.no_grad():
        logits = probe(layers).double()
        mixed = probe.mix(layers).double()
    return {"reading": reading, "logits": logits, "mixed": mixed,
            "mix_is_a_scalar_mix": isinstance(probe.mix, layer_weights.ScalarMix)}


@test_the_probe_classifies_the_mix_of_the_layers.judge
def _(out):
    assert_mixes_the_layers(out["reading"])
    logits, mixed = out["logits"], out["mixed"]
    assert logits.shape == (20, 3), (
        f"(N, num_classes) = (20, 3) expected, got {tuple(logits.shape)}")
    assert out["mix_is_a_scalar_mix"], "probe.mix should be a ScalarMix"
    # one weight matrix and one bias shared by every token: least squares fits them exactly
    design = torch.cat([mixed, torch.ones(20, 1, dtype=torch.float64)], dim=1)
    solution = torch.linalg.pinv(design) @ logits
    assert_close(design @ solution, logits, "the probe's logits, as an affine function of the "
                 "mixed layers", atol=1e-4, rtol=1e-4,
                 hint="the logits should be a linear classifier applied to probe.mix(layers): "
                      "mix the layers first, then classify the mixed vectors")


@judged()
def test_the_probe_normalises_its_layers_unless_told_not_to(layer_weights):
    """By default probe.mix normalises each layer (scaling a layer changes nothing);
    with do_layer_norm=False it does not."""
    layers = torch.randn(3, 10, 4, generator=torch.Generator().manual_seed(7))
    scaled = layers * torch.tensor([10.0, 0.5, 3.0]).view(3, 1, 1)
    torch.manual_seed(0)
    normalising = layer_weights.ScalarMixProbe(3, 4, 2)
    reading = layers_reading(normalising)
    with torch.no_grad():
        normalised = {"scaled": normalising.mix(scaled), "layers": normalising.mix(layers)}
        plain = layer_weights.ScalarMixProbe(3, 4, 2, do_layer_norm=False)
        unnormalised = {"scaled": plain.mix(scaled), "layers": plain.mix(layers)}
    return {"reading": reading, "normalising": normalised, "plain": unnormalised}


@test_the_probe_normalises_its_layers_unless_told_not_to.judge
def _(out):
    assert_mixes_the_layers(out["reading"])
    normalising, plain = out["normalising"], out["plain"]
    assert_close(normalising["scaled"], normalising["layers"],
                 "the probe's mix of rescaled layers", atol=1e-4, rtol=1e-4,
                 hint="by default (do_layer_norm=True) the probe's mix normalises each "
                      "layer, so rescaling a layer changes nothing")
    assert not torch.allclose(plain["scaled"], plain["layers"], atol=1e-3), (
        "with do_layer_norm=False the probe's mix should not normalise the layers: "
        "rescaling a layer should change the mix")


def _toy_task(seed=5, n=12, width=4, classes=3):
    layers = torch.randn(3, n, width, generator=torch.Generator().manual_seed(seed))
    return layers, torch.arange(n) % classes


@judged()
def test_fit_returns_the_mean_cross_entropy_before_each_step(layer_weights):
    """fit returns `epochs` python floats, the first the mean cross-entropy of the probe as
    fit found it."""
    layers, labels = _toy_task()
    torch.manual_seed(0)
    probe = layer_weights.ScalarMixProbe(3, 4, 3)
    reading = layers_reading(probe)
    with torch.no_grad():
        start = F.cross_entropy(probe(layers), labels).item()
    losses = probe.fit(layers, labels, epochs=4)
    is_list = isinstance(losses, list)
    floats = [type(x) is float for x in losses] if is_list else []  # python floats?
    return {"reading": reading, "start": start, "is_list": is_list, "floats": floats,
            "shown": repr(losses), "losses": losses if is_list and all(floats) else None}


@test_fit_returns_the_mean_cross_entropy_before_each_step.judge
def _(out):
    assert_mixes_the_layers(out["reading"])
    start, losses, shown = out["start"], out["losses"], out["shown"]
    assert out["is_list"] and all(out["floats"]), (
        f"fit should return a list of python floats (each loss's .item()); got {shown}")
    assert len(losses) == 4, f"fit(epochs=4) should return 4 losses, got {len(losses)}"
    assert losses[0] == pytest.approx(start, abs=1e-5), (
        f"the first loss should be the mean cross-entropy of the probe before any step, "
        f"{start:.5f}; got {losses[0]:.5f} (recorded after the step, or summed, not averaged?)")


@settings(max_examples=10, deadline=None)
@judged(seed=st.integers(0, 2**16), lr=st.sampled_from([0.003, 0.01, 0.05]))
def test_adams_first_step_moves_every_parameter_by_lr(layer_weights, seed, lr):
    """One epoch of fit: every parameter that gets a gradient (mix scalars, gamma, classifier)
    moves by about lr against it, as Adam's first step does."""
    layers, labels = _toy_task(seed)
    torch.manual_seed(seed)
    probe = layer_weights.ScalarMixProbe(3, 4, 3)
    reading = layers_reading(probe)
    before = copy.deepcopy(probe)
    F.cross_entropy(before(layers), labels).backward()
    probe.fit(layers, labels, epochs=1, lr=lr)
    # (name, its gradient at the start, its change in fit's first step) of every parameter
    steps = [(name, old.grad, (new - old).detach())
             for (name, old), new in zip(before.named_parameters(), probe.parameters(),
                                         strict=True)]
    return {"reading": reading, "steps": steps}


@test_adams_first_step_moves_every_parameter_by_lr.judge
def _(out, lr):
    assert_mixes_the_layers(out["reading"])
    for name, grad, change in out["steps"]:
        if grad is None:  # a parameter the probe's output does not depend on
            continue  # test_the_mix_gets_a_gradient says so in the learner's terms
        clear = grad.abs() > 1e-5  # Adam moves a parameter with a tiny gradient less
        step = change[clear]
        expected = -lr * grad.sign()[clear]
        assert_close(step, expected, f"the change of {name} in fit's first step (lr {lr})",
                     atol=0.02 * lr, rtol=0.05,
                     hint="Adam's first step moves every parameter with a gradient by lr "
                          "against the gradient's sign: does fit train the mix's scalars and "
                          "gamma as well as the classifier, with Adam at the lr it is given?")


def _gradients(probe, layers, labels):
    """{name: gradient} of the mean cross-entropy at the probe's present weights."""
    probe = copy.deepcopy(probe)
    probe.zero_grad(set_to_none=True)
    F.cross_entropy(probe(layers), labels).backward()
    return {name: p.grad for name, p in probe.named_parameters() if p.grad is not None}


@judged()
def test_one_optimizer_serves_every_step_of_fit(layer_weights):
    """Two steps at lr 0.5: a parameter whose gradient turns around after the first step
    moves by less than lr in the second, as Adam's momentum still points the first way (an
    Adam made afresh for the step would move it by lr, as a first step does)."""
    layers, labels = _toy_task()
    lr = 0.5
    torch.manual_seed(0)
    start = layer_weights.ScalarMixProbe(3, 4, 3)
    reading = layers_reading(start)
    one, two = copy.deepcopy(start), copy.deepcopy(start)
    one.fit(layers, labels, epochs=1, lr=lr)
    two.fit(layers, labels, epochs=2, lr=lr)
    return {"reading": reading, "first": _gradients(start, layers, labels),
            "second": _gradients(one, layers, labels),
            "after_one": {name: p.detach() for name, p in one.named_parameters()},
            "after_two": {name: p.detach() for name, p in two.named_parameters()}}


@test_one_optimizer_serves_every_step_of_fit.judge
def _(out):
    assert_mixes_the_layers(out["reading"])
    lr = 0.5
    first, second = out["first"], out["second"]
    turned = {name: (first[name] * second[name] < 0) & (first[name].abs() > 1e-4)
              & (second[name].abs() > 1e-4) for name in first}
    assert any(mask.any() for mask in turned.values()), (
        "no parameter's gradient turned around after fit's first step at lr 0.5: does fit "
        "take its steps with the lr it is given?")
    after_one, after_two = out["after_one"], out["after_two"]
    for name, mask in turned.items():
        moved = (after_two[name] - after_one[name])[mask].abs()
        assert moved.numel() == 0 or moved.max() < 0.9 * lr, (
            f"in fit's second step, parameters of {name} whose gradient had turned around "
            f"moved by {moved.max():.3g}, a full first step of lr {lr}: Adam's moment "
            "estimates from the first step should hold them back, so the second step had an "
            "optimizer of its own. Make one optimizer for the whole of fit, before its first "
            "step")


@judged()
def test_gradients_from_before_fit_play_no_part(layer_weights):
    """Gradients the parameters hold when fit is called change nothing: each step follows
    the gradient of its own loss."""
    layers, labels = _toy_task()
    torch.manual_seed(0)
    clean = layer_weights.ScalarMixProbe(3, 4, 3)
    reading = layers_reading(clean)
    stale = copy.deepcopy(clean)
    (stale(layers) ** 2).sum().backward()  # an earlier, unrelated backward pass
    clean_losses = clean.fit(layers, labels, epochs=3)
    stale_losses = stale.fit(layers, labels, epochs=3)
    return {"reading": reading, "clean_losses": clean_losses, "stale_losses": stale_losses,
            "clean_state": dict(clean.state_dict()), "stale_state": dict(stale.state_dict())}


@test_gradients_from_before_fit_play_no_part.judge
def _(out):
    assert_mixes_the_layers(out["reading"])
    clean_losses, stale_losses = out["clean_losses"], out["stale_losses"]
    assert np.allclose(clean_losses, stale_losses, atol=1e-6), (
        f"gradients left from before fit changed its losses ({clean_losses} without them, "
        f"{stale_losses} with them): clear the gradients before each backward pass, or they "
        "add up")
    for (name, got), want in zip(out["stale_state"].items(), out["clean_state"].values(),
                                 strict=True):
        assert_close(got, want, f"{name} after fit", atol=1e-6, rtol=1e-5,
                     hint="each step should follow the gradient of its own loss only")


@judged()
def test_fit_is_reproducible_and_lr_zero_changes_nothing(layer_weights):
    """The same starting probe gives the same losses and weights; lr 0 leaves it as it was."""
    layers, labels = _toy_task()
    readings, runs = [], []
    for _ in range(2):
        torch.manual_seed(3)
        probe = layer_weights.ScalarMixProbe(3, 4, 3)
        readings.append(layers_reading(probe))
        runs.append((probe.fit(layers, labels, epochs=5), dict(probe.state_dict())))
    torch.manual_seed(3)
    probe = layer_weights.ScalarMixProbe(3, 4, 3)
    start = copy.deepcopy(dict(probe.state_dict()))
    losses = probe.fit(layers, labels, epochs=3, lr=0.0)
    return {"readings": readings, "runs": runs, "start": start, "losses": losses,
            "end": dict(probe.state_dict())}


@test_fit_is_reproducible_and_lr_zero_changes_nothing.judge
def _(out):
    for reading in out["readings"]:
        assert_mixes_the_layers(reading)
    (first, state), (second, again) = out["runs"]
    assert first == second, f"two runs from the same seed gave {first} and {second}"
    for name in state:
        assert torch.equal(state[name], again[name]), (
            f"two runs from the same seed trained {name} differently: fit has no randomness "
            "of its own")
    start, losses = out["start"], out["losses"]
    assert max(losses) - min(losses) < 1e-6, (
        f"with lr 0 nothing learns, so every loss is the same; got {losses}: fit should "
        "train with the lr it is given")
    for name, value in out["end"].items():
        assert torch.equal(value, start[name]), f"with lr 0, fit changed {name}"


def _separable_task():
    """(layers (3, 40, 6), labels (40,)) where only layer 2 knows the label."""
    generator = torch.Generator().manual_seed(4)
    labels = torch.arange(40) % 2
    layers = torch.randn(3, 40, 6, generator=generator)
    layers[2, :, 0] += 4.0 * (2 * labels - 1)  # only layer 2 knows the label
    return layers, labels


@judged()
def test_fit_learns_a_separable_toy_task_and_moves_the_weights(layer_weights):
    """Only layer 2 knows the label: fit learns it, and the mix weighs layer 2 most."""
    layers, labels = _separable_task()
    torch.manual_seed(0)
    probe = layer_weights.ScalarMixProbe(3, 6, 2)
    losses = probe.fit(layers, labels)
    return {"losses": losses, "predicted": probe.predict(layers),
            "weights": probe.mix.weights.detach()}


@test_fit_learns_a_separable_toy_task_and_moves_the_weights.judge
def _(out):
    _, labels = _separable_task()
    losses = out["losses"]
    assert len(losses) == 100 and losses[-1] < 0.5 * losses[0], (
        f"100 epochs by default, and the loss should halve at least: {losses[0]} -> "
        f"{losses[-1]} in {len(losses)} epochs")
    accuracy = float((out["predicted"] == labels).float().mean())
    assert accuracy > 0.95, f"the training accuracy should be above 0.95, got {accuracy:.2f}"
    weights = out["weights"]
    assert weights.argmax() == 2, f"only layer 2 carries the label; weights {weights.tolist()}"
