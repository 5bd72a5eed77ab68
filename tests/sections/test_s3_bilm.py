"""Section 3: the biLM's shapes and parts, its layer 0, padding, and that no direction peeks.

Each test of what the biLM computes judges it only of a biLM that reads the sentence
(`reading.assert_reads_the_sentence` says why); the tests of its shapes and registered parts
do not.

Each test is an act, which runs the section's code and returns what it computed as data,
and a judge, which checks that data alone (`judged.py`).
"""

import copy
from typing import NamedTuple

import pytest
import torch
from hypothesis import strategies as st
from torch import nn

from course.diagnose import assert_close

from .devices import mixed_devices
from .judged import judged
from .reading import assert_reads_the_sentence, sentence_reading
from .strategies import id_batches, id_sequences

VOCAB = 30
TOL = dict(atol=1e-5, rtol=1e-4)


def model_of(setup, bilm, **sizes):
    setup.set_seed(0)
    return bilm.BiLM(VOCAB, **sizes).eval()


@pytest.fixture(scope="module")
def model(setup, bilm):
    """One biLM of the default sizes, shared by the tests that only run it."""
    return model_of(setup, bilm)


SMALL_HIDDEN = 16


@pytest.fixture(scope="module")
def small(setup, bilm):
    """A biLM of hidden size 16 for the property tests: what they check holds at any size,
    and it runs ten times faster than one of 256."""
    return model_of(setup, bilm, embedding_dim=8, hidden_dim=SMALL_HIDDEN)


def one_sentence(length=6):
    return torch.randint(4, VOCAB, (length, 1), generator=torch.Generator().manual_seed(length))


def close(a, b):
    return a.shape == b.shape and torch.allclose(a, b, **TOL)


class Outputs(NamedTuple):
    """A biLM's outputs (the fields of `BiLMOutput`), as a judge reads them (`outputs`)."""

    layers: torch.Tensor
    forward_logits: torch.Tensor
    backward_logits: torch.Tensor


def outputs(out):
    """A biLM's output as an act returns it, {field: tensor}; a judge reads it back as
    `Outputs(**data)`."""
    return {name: getattr(out, name) for name in Outputs._fields}


@judged()
def test_seed_key_shapes(model):
    """Embedding (7, 1, 128); layers (3, 7, 1, 512); both logits (7, 1, vocab_size)."""
    ids = one_sentence(7)
    return {"embedded": model.embedding(ids), "out": outputs(model(ids))}


@test_seed_key_shapes.judge
def _(out):
    embedded = out["embedded"]
    assert embedded.shape == (7, 1, 128), (
        f"embedding(ids): expected (seq_len, 1, 128) = (7, 1, 128), got {tuple(embedded.shape)}"
    )
    out = Outputs(**out["out"])
    assert out.layers.shape == (3, 7, 1, 512), (
        f"layers: expected (num_layers + 1, seq_len, batch, 2 * 256) = (3, 7, 1, 512), "
        f"got {tuple(out.layers.shape)}"
    )
    for name in ("forward_logits", "backward_logits"):
        shape = tuple(getattr(out, name).shape)
        assert shape == (7, 1, VOCAB), f"{name}: expected (7, 1, {VOCAB}), got {shape}"


@judged()
def test_the_state_dict_holds_the_whole_model(setup, bilm):
    """A biLM given another one's state_dict computes what that one computes: every part
    that shapes the output is registered (parameters(), state_dict(), .to(device))."""
    first, second = model_of(setup, bilm), bilm.BiLM(VOCAB).eval()
    second.load_state_dict(first.state_dict())
    ids = one_sentence()
    return {"loaded": outputs(second(ids)), "original": outputs(first(ids))}


@test_the_state_dict_holds_the_whole_model.judge
def _(out):
    loaded, original = Outputs(**out["loaded"]), Outputs(**out["original"])
    for name, got, want in zip(Outputs._fields, loaded, original, strict=True):
        assert close(got, want), (
            f"a biLM loaded with another's state_dict gives other {name}: some of its weights "
            "are not registered (an LSTM in a plain python list, a tensor that is not an "
            "nn.Parameter), so an optimizer never trains them and a checkpoint loses them"
        )


TOKEN_LAYER = ("embedding.", "token_projection.")  # what both directions read, p


def parameters_behind(model, ids, pick):
    """The names of the parameters whose gradient from `pick(model(ids))` is not zero (an
    act's helper: a sorted list, data)."""
    model.zero_grad()
    out = pick(model(ids))
    (out * torch.randn(out.shape, generator=torch.Generator().manual_seed(0))).sum().backward()
    found = {n for n, p in model.named_parameters() if p.grad is not None and p.grad.any()}
    model.zero_grad()
    return sorted(found)


@judged()
def test_each_direction_has_its_own_parameters(setup, bilm):
    """Beyond the token layer (embedding, token_projection), no parameter shapes both the
    forward direction (its states and logits) and the backward one."""
    model, ids, h = model_of(setup, bilm, embedding_dim=8, hidden_dim=8), one_sentence(), 8
    reading = sentence_reading(model, VOCAB)
    return {"reading": reading,
            "forward": [parameters_behind(model, ids, lambda out: out.forward_logits),
                        parameters_behind(model, ids, lambda out: out.layers[1:, ..., :h])],
            "backward": [parameters_behind(model, ids, lambda out: out.backward_logits),
                         parameters_behind(model, ids, lambda out: out.layers[1:, ..., h:])]}


@test_each_direction_has_its_own_parameters.judge
def _(out):
    assert_reads_the_sentence(out["reading"])
    forward = set(out["forward"][0]) | set(out["forward"][1])
    backward = set(out["backward"][0]) | set(out["backward"][1])
    shared = sorted(n for n in forward & backward if not n.startswith(TOKEN_LAYER))
    assert not shared, (
        f"{shared} shape both the forward direction (the forward logits and the first half "
        "of layers 1 and up) and the backward one (the backward logits and the second "
        "half): either the directions share weights, where each should have LSTMs and a "
        "head of its own (only the token layer p is theirs in common), or a layer's halves "
        "are not [forward; backward]"
    )


@judged()
def test_layer_0_is_the_projected_token_twice(model):
    """Layer 0 is [p; p] with p = token_projection(embedding(ids))."""
    reading = sentence_reading(model, VOCAB)
    ids = one_sentence()
    return {"reading": reading, "layer0": model(ids).layers[0],
            "token": model.token_projection(model.embedding(ids))}


@test_layer_0_is_the_projected_token_twice.judge
def _(out):
    assert_reads_the_sentence(out["reading"])
    layer0, token = out["layer0"], out["token"]
    assert_close(layer0[..., :256], token, "layer 0's first half", **TOL,
                 hint="it should be p = token_projection(embedding(ids))")
    assert torch.equal(layer0[..., :256], layer0[..., 256:]), (
        "layer 0 should be [p; p]: the token representation duplicated, as in the paper's code"
    )


@judged()
def test_layer_0_ignores_context(model):
    """One word's layer 0 is identical in two contexts; its layer 1 is not."""
    a = torch.tensor([[5], [9], [7]])
    b = torch.tensor([[12], [20], [7]])
    return {"a": model(a).layers, "b": model(b).layers}


@test_layer_0_ignores_context.judge
def _(out):
    a, b = out["a"], out["b"]
    assert torch.equal(a[0, 2], b[0, 2]), (
        "layer 0 of the same word must be identical in any context"
    )
    assert not torch.allclose(a[1, 2], b[1, 2]), (
        "layer 1 of the same word should change with its context"
    )


@judged()
def test_every_parameter_is_used(setup, bilm):
    """Every parameter of a fresh biLM gets a gradient from its outputs."""
    setup.set_seed(0)
    fresh = bilm.BiLM(VOCAB)
    reading = sentence_reading(fresh, VOCAB)
    out = fresh(one_sentence())
    g = torch.Generator().manual_seed(0)
    total = sum((t * torch.randn(t.shape, generator=g)).sum() for t in out)
    total.backward()
    return {"reading": reading,
            "gets_a_gradient": {name: p.grad is not None and bool(p.grad.any())
                                for name, p in fresh.named_parameters()}}


@test_every_parameter_is_used.judge
def _(out):
    assert_reads_the_sentence(out["reading"])
    unused = [name for name, used in out["gets_a_gradient"].items() if not used]
    assert not unused, (
        f"these parameters have no effect on the output: {unused}; does each direction run its "
        "own LSTM stack and its own head?"
    )


def halves(h):
    """Each direction's name and its half of a layer's units, [forward; backward]."""
    return [("forward", slice(None, h)), ("backward", slice(h, None))]


@judged()
def test_each_layer_reads_the_layer_below(setup, bilm):
    """Layer 1 of each direction reads p (token_projection's output); layer 2 reads layer 1:
    changing the weights behind layer 1 changes layer 2."""
    h = 8
    fresh, ids = model_of(setup, bilm, embedding_dim=8, hidden_dim=h), one_sentence()
    found = {"reading": sentence_reading(fresh, VOCAB), "before": fresh(ids).layers}
    for name, half in halves(h):
        first = parameters_behind(fresh, ids, lambda out, half=half: out.layers[1, ..., half])
        g = torch.Generator().manual_seed(0)
        changed = copy.deepcopy(fresh)
        with torch.no_grad():
            for n, weight in changed.named_parameters():
                if n in first and not n.startswith(TOKEN_LAYER):
                    weight.add_(torch.randn(weight.shape, generator=g))
        found[name] = {"first": first, "after": changed(ids).layers}
    return found


@test_each_layer_reads_the_layer_below.judge
def _(out):
    h = 8
    assert_reads_the_sentence(out["reading"])
    before = out["before"]
    for name, half in halves(h):
        first = out[name]["first"]
        assert any(n.startswith("token_projection.") for n in first), (
            f"the {name} half of layer 1 does not depend on token_projection: the first "
            "LSTM should read p = token_projection(embedding(ids)), not the embedding x"
        )
        after = out[name]["after"]
        assert not torch.allclose(before[2, ..., half], after[2, ..., half]), (
            f"changing the weights of the first {name} LSTM layer left layer 2 unchanged: "
            "the second layer should read the first layer's outputs, not p"
        )


@judged()
def test_layer_2_adds_layer_1_and_layer_1_adds_nothing(setup, bilm):
    """The residual connection (the paper's Sec. 3.4): with the weights of layer 2's own
    LSTMs at zero, an LSTM outputs zero and layer 2 is layer 1; with layer 1's at zero,
    layer 1 is zero (no residual from p)."""
    h = 8
    fresh, ids = model_of(setup, bilm, embedding_dim=8, hidden_dim=h), one_sentence()
    found = {"reading": sentence_reading(fresh, VOCAB)}
    for name, half in halves(h):
        first = parameters_behind(fresh, ids, lambda out, half=half: out.layers[1, ..., half])
        second = parameters_behind(fresh, ids, lambda out, half=half: out.layers[2, ..., half])
        found[name] = {"first": first, "second": second}
        for zeroed, check in [(set(second) - set(first), "layer 2"), (set(first), "layer 1")]:
            silent = copy.deepcopy(fresh)
            with torch.no_grad():
                for n, weight in silent.named_parameters():
                    if n in zeroed and not n.startswith(TOKEN_LAYER):
                        weight.zero_()
            found[name][check] = silent(ids).layers  # its weights behind `check` at zero
    return found


@test_layer_2_adds_layer_1_and_layer_1_adds_nothing.judge
def _(out):
    h = 8
    assert_reads_the_sentence(out["reading"])
    for name, half in halves(h):
        first, second = set(out[name]["first"]), set(out[name]["second"])
        assert second - first, (
            f"the {name} half of layer 2 depends on no weight that layer 1 does not: layer 1 "
            "is the first LSTM's output and layer 2 the second's (plus layer 1), so layer 2 "
            "has weights of its own; is one stack's top output read as both layers?")
        for check in ("layer 2", "layer 1"):
            layers = out[name][check][..., half]
            if check == "layer 2":
                assert close(layers[2], layers[1]), (
                    f"with its own LSTM's weights at zero, the {name} half of layer 2 should "
                    "be layer 1's: layer 2 = LSTM_2(layer 1) + layer 1, the residual "
                    "connection"
                )
            else:
                assert not layers[1].any(), (
                    f"with the first {name} LSTM's weights at zero, the {name} half of "
                    "layer 1 should be zero: layer 1 is the first LSTM's output alone, "
                    "without a residual from p"
                )


@judged()
def test_without_its_residual_layer_2_is_its_lstm_alone(setup, bilm):
    """`residual=False` (section 3's experiment): the same parameters from the same seed, the
    same layers 0 and 1, and layer 2 its LSTM's output alone: with that LSTM's weights at
    zero, layer 2 is zero where the paper's biLM (the default) gives layer 1."""
    h, ids = 8, one_sentence()
    paper = model_of(setup, bilm, embedding_dim=8, hidden_dim=h)
    plain = model_of(setup, bilm, embedding_dim=8, hidden_dim=h, residual=False)
    found = {"reading": sentence_reading(plain, VOCAB),
             "plain_shapes": {n: tuple(p.shape) for n, p in plain.named_parameters()},
             "paper_shapes": {n: tuple(p.shape) for n, p in paper.named_parameters()}}
    if found["plain_shapes"] != found["paper_shapes"]:
        return found  # what the judge reads first fails: no state_dict to share
    plain.load_state_dict(paper.state_dict())
    found["plain"], found["paper"] = plain(ids).layers, paper(ids).layers
    second = set(parameters_behind(paper, ids, lambda out: out.layers[2])) - set(
        parameters_behind(paper, ids, lambda out: out.layers[1]))
    for model in (paper, plain):
        with torch.no_grad():
            for name, weight in model.named_parameters():
                if name in second:
                    weight.zero_()
    # with layer 2's own LSTM weights at zero
    found["plain_silent"], found["paper_silent"] = plain(ids).layers, paper(ids).layers
    return found


@test_without_its_residual_layer_2_is_its_lstm_alone.judge
def _(out):
    assert_reads_the_sentence(out["reading"])
    assert out["plain_shapes"] == out["paper_shapes"], (
        "residual=False changed the biLM's parameters: the switch only decides whether "
        "layer 2 adds layer 1")
    assert close(out["plain"][:2], out["paper"][:2]), (
        "residual=False changed layer 0 or 1: the residual connection joins layer 1 to "
        "layer 2 only")
    layers = out["plain_silent"]
    assert not layers[2].any() and layers[1].any(), (
        "with residual=False and layer 2's own LSTM weights at zero, layer 2 should be zero: "
        "without the residual connection, layer 2 is its LSTM's output alone")
    assert close(out["paper_silent"][2], layers[1]), (
        "the default biLM should keep its residual connection: residual=True is the paper's")


@judged(batch=id_batches(VOCAB, max_batch=4, max_len=8))
def test_padded_batch_equals_one_sentence_at_a_time(corpus, small, batch):
    """Each sentence of a padded batch gets what it gets alone; padded positions are zero."""
    model = small
    reading = sentence_reading(model, VOCAB)
    ids, lengths = corpus.pad_batch(batch)
    return {"reading": reading, "together": outputs(model(ids, lengths)),
            "alone": [outputs(model(torch.tensor(sentence).unsqueeze(1))) for sentence in batch]}


@test_padded_batch_equals_one_sentence_at_a_time.judge
def _(out, batch, trusted):
    assert_reads_the_sentence(out["reading"])
    ids, _ = trusted.sections.corpus.pad_batch(batch)
    together = Outputs(**out["together"])
    for b, sentence in enumerate(batch):
        n = len(sentence)
        alone = Outputs(**out["alone"][b])
        for name, got, want, dims in [
                ("layers", together.layers[:, :n, b], alone.layers[:, :, 0],
                 ("layer", "position", "unit")),
                ("forward_logits", together.forward_logits[:n, b], alone.forward_logits[:, 0],
                 ("position", "word")),
                ("backward_logits", together.backward_logits[:n, b],
                 alone.backward_logits[:, 0], ("position", "word"))]:
            assert_close(got, want, f"sentence {b}'s {name} in a batch padded to "
                         f"{ids.shape[0]} (the sentence's length {n})", **TOL, dims=dims,
                         hint=(f"the expected {name} are those the sentence gets when it "
                               "runs alone; does the backward LSTM reverse each sentence "
                               "within its own length, not the padded tensor as a whole?"))
        padded = together.layers[:, n:, b]
        nonzero = [layer for layer in range(padded.shape[0]) if padded[layer].any()]
        positions = range(n, ids.shape[0])
        assert not nonzero, (
            f"sentence {b} (length {n}): layer {', '.join(map(str, nonzero))} must be zero at "
            f"its padded position{'s' if len(positions) > 1 else ''} "
            f"{', '.join(map(str, positions))}, and is not" + (
                " (layer 0 is [p; p]: p must be zero at padding, though token_projection's bias "
                "is not)"
                if 0 in nonzero else ""))


def assert_direction_reads(before, after, name, half, positions, k, reads):
    """Each of the direction's layers (its `half` of layers 1 and up) changed, from the
    outputs `before` to `after` changing token k, at each of `positions` in the sentence."""
    length = before.layers.shape[1]
    for t in (t for t in positions if 0 <= t < length):
        for j in range(1, before.layers.shape[0]):
            assert not close(before.layers[j, t, :, half], after.layers[j, t, :, half]), (
                f"changing token {k} left the {name} states of layer {j} at position {t} "
                f"unchanged: they should read tokens {reads}, token {k} among them")


def sentences_and_a_token(first, last_from_end):
    """(ids, k): a sentence of 2-9 real token ids and a position k in it, from `first` to
    the `last_from_end`-th from the end (0: the last)."""
    return id_sequences(VOCAB, 2, 9).flatmap(lambda ids: st.tuples(
        st.just(ids), st.integers(first, len(ids) - 1 - last_from_end)))


def changed_token(ids, k):
    """Token k of `ids` changed to another real token (an act's and a judge's helper)."""
    changed = ids.clone()
    changed[k] = ids[k] % (VOCAB - 1) + 1  # another real token
    return changed


@judged(sentence=sentences_and_a_token(1, 0))
def test_forward_direction_never_sees_the_token_it_predicts(small, sentence):
    """Changing token k leaves the forward logits and states before position k unchanged,
    and changes every forward layer's states at k and after it."""
    model = small
    tokens, k = sentence
    ids = torch.tensor(tokens).unsqueeze(1)
    return {"before": outputs(model(ids)), "after": outputs(model(changed_token(ids, k)))}


@test_forward_direction_never_sees_the_token_it_predicts.judge
def _(out, sentence):
    h = SMALL_HIDDEN
    _, k = sentence
    before, after = Outputs(**out["before"]), Outputs(**out["after"])
    assert close(before.forward_logits[:k], after.forward_logits[:k]), (
        f"changing token {k} changed the forward prediction at positions < {k}: the forward "
        f"direction sees the token it predicts"
    )
    assert close(before.layers[1:, :k, :, :h], after.layers[1:, :k, :, :h]), (
        f"changing token {k} changed the forward LSTM states (the first half of layers 1 and "
        f"up) at positions < {k}: they may only read tokens 0..t"
    )
    assert_direction_reads(before, after, "forward", slice(None, h), range(k, k + 2), k,
                           "0..t")


@judged(sentence=sentences_and_a_token(0, 1))
def test_backward_direction_never_sees_the_token_it_predicts(small, sentence):
    """Changing token k leaves the backward logits and states after position k unchanged,
    and changes every backward layer's states at k and before it."""
    model = small
    tokens, k = sentence
    ids = torch.tensor(tokens).unsqueeze(1)
    return {"before": outputs(model(ids)), "after": outputs(model(changed_token(ids, k)))}


@test_backward_direction_never_sees_the_token_it_predicts.judge
def _(out, sentence):
    h = SMALL_HIDDEN
    _, k = sentence
    before, after = Outputs(**out["before"]), Outputs(**out["after"])
    assert close(before.backward_logits[k + 1:], after.backward_logits[k + 1:]), (
        f"changing token {k} changed the backward prediction at positions > {k}: the backward "
        "direction sees the token it predicts at position t"
    )
    assert close(before.layers[1:, k + 1:, :, h:], after.layers[1:, k + 1:, :, h:]), (
        f"changing token {k} changed the backward LSTM states (the second half of layers 1 "
        f"and up) at positions > {k}: they may only read tokens t..N"
    )
    assert_direction_reads(before, after, "backward", slice(h, None), range(k - 1, k + 1), k,
                           "t..N")


@judged()
def test_each_direction_reads_its_own_context(model):
    """The forward logits at the end depend on the first token; the backward at 0, the last."""
    ids = torch.tensor([[5], [6], [7], [8]])
    first_changed, last_changed = ids.clone(), ids.clone()
    first_changed[0] = 9
    last_changed[3] = 9
    return {"unchanged": outputs(model(ids)), "first_changed": outputs(model(first_changed)),
            "last_changed": outputs(model(last_changed))}


@test_each_direction_reads_its_own_context.judge
def _(out):
    unchanged = Outputs(**out["unchanged"])
    changed = Outputs(**out["first_changed"])
    assert not torch.allclose(unchanged.forward_logits[3], changed.forward_logits[3]), (
        "the forward prediction at the last position should depend on the first token"
    )
    changed = Outputs(**out["last_changed"])
    assert not torch.allclose(unchanged.backward_logits[0], changed.backward_logits[0]), (
        "the backward prediction at the first position should depend on the last token"
    )


@judged(batch=id_batches(VOCAB))
def test_reverse_within_lengths_reverses_each_sentence_and_keeps_padding(bilm, corpus, batch):
    """Each column reversed within its length, padding left in place; twice is the identity."""
    ids, lengths = corpus.pad_batch(batch)
    flipped = bilm.reverse_within_lengths(ids, lengths)
    return {"flipped": flipped, "twice": bilm.reverse_within_lengths(flipped, lengths)}


@test_reverse_within_lengths_reverses_each_sentence_and_keeps_padding.judge
def _(out, batch, trusted):
    corpus = trusted.sections.corpus
    ids, _ = corpus.pad_batch(batch)
    flipped = out["flipped"]
    for b, sentence in enumerate(batch):
        expected = sentence[::-1] + [corpus.PAD] * (ids.shape[0] - len(sentence))
        assert flipped[:, b].tolist() == expected, (
            f"column {b} (length {len(sentence)}): expected {expected}, "
            f"got {flipped[:, b].tolist()}"
        )
    assert torch.equal(out["twice"], ids), (
        "reversing twice within the lengths should give the batch back"
    )


def feature_batch():
    """(x (3, 2, 2), lengths [3, 2]): the same ones in the act and in the judge."""
    return torch.arange(12.0).view(3, 2, 2), torch.tensor([3, 2])


@judged()
def test_reverse_within_lengths_handles_feature_dimensions(bilm):
    """A (T, B, D) batch: each column's D-vectors move together, padding stays."""
    return bilm.reverse_within_lengths(*feature_batch())


@test_reverse_within_lengths_handles_feature_dimensions.judge
def _(out):
    x, _ = feature_batch()
    expected = torch.stack([x.flip(0)[:, 0], torch.cat([x[:2, 1].flip(0), x[2:, 1]])], dim=1)
    assert torch.equal(out, expected), (
        f"lengths [3, 2]: column 0 reversed whole, column 1 its first 2 steps; expected "
        f"{expected.tolist()}, got {out.tolist()}"
    )


@judged()
def test_reverse_within_lengths_works_on_the_device_of_its_input(bilm):
    """On the meta device (shapes, no values), with lengths on the CPU: no error, same device."""
    x = torch.empty(4, 2, 3, device="meta")  # PyTorch's shape-only device: no GPU needed
    return mixed_devices(lambda: bilm.reverse_within_lengths(x, torch.tensor([4, 2])))


@test_reverse_within_lengths_works_on_the_device_of_its_input.judge
def _(mixed):
    assert mixed is None, (
        "make the index tensors on x's device (torch.arange(..., device=x.device), "
        f"lengths.to(x.device)), or the reversal fails on a GPU: {mixed}"
    )


@judged()
def test_logits_come_from_the_top_layer(setup, bilm):
    """3 layers: layers has 4 entries, and the logits are each head of its direction's half
    of the top layer."""
    deep = model_of(setup, bilm, embedding_dim=8, hidden_dim=8, num_layers=3)
    reading = sentence_reading(deep, VOCAB)
    out = deep(one_sentence())
    top = out.layers[-1]
    return {"reading": reading, "out": outputs(out),
            "heads_of_the_top": {"forward": deep.forward_head(top[..., :8]),
                                 "backward": deep.backward_head(top[..., 8:])}}


@test_logits_come_from_the_top_layer.judge
def _(out):
    assert_reads_the_sentence(out["reading"])
    heads = out["heads_of_the_top"]
    out = Outputs(**out["out"])
    assert out.layers.shape[0] == 4, (
        f"num_layers=3 should give 4 layers (layer 0 and 3 LSTM layers), got "
        f"{out.layers.shape[0]}"
    )
    assert_close(out.forward_logits, heads["forward"], "the forward logits",
                 **TOL, hint="they should be forward_head of the top forward LSTM layer")
    assert_close(out.backward_logits, heads["backward"], "the backward logits",
                 **TOL, hint="they should be backward_head of the top backward LSTM layer")


@judged()
def test_same_input_twice_gives_identical_output(model):
    """Two calls on one input give bit-identical layers: the biLM keeps no state."""
    reading = sentence_reading(model, VOCAB)
    ids = one_sentence()
    return {"reading": reading, "first": model(ids).layers, "second": model(ids).layers}


@test_same_input_twice_gives_identical_output.judge
def _(out):
    assert_reads_the_sentence(out["reading"])
    assert torch.equal(out["first"], out["second"]), (
        "the same input gave different layers on a second call: each LSTM must start from "
        "its zero state on every call"
    )


@judged()
def test_the_smallest_sizes_are_accepted(bilm):
    """Sizes of 1 work: one layer of one unit per direction gives layers (2, 3, 2, 2)."""
    tiny = bilm.BiLM(vocab_size=1, embedding_dim=1, hidden_dim=1, num_layers=1)
    return tiny(torch.zeros(3, 2, dtype=torch.long)).layers


@test_the_smallest_sizes_are_accepted.judge
def _(layers):
    shape = tuple(layers.shape)
    assert shape == (2, 3, 2, 2), (
        f"sizes of 1 are valid: one layer of one unit per direction gives layers "
        f"(num_layers + 1, T, B, 2) = (2, 3, 2, 2), got {shape}"
    )


@judged()
def test_pad_embedding_is_zero_and_stays_zero(setup, bilm, corpus):
    """The embedding of <pad> is zero and gets no gradient (padding_idx)."""
    setup.set_seed(0)
    fresh = bilm.BiLM(VOCAB)
    pad = torch.tensor([[corpus.PAD]])
    embedded = fresh.embedding(pad)
    fresh(torch.tensor([[corpus.PAD], [5]])).forward_logits.sum().backward()
    return {"pad_embedding": embedded, "gradient": fresh.embedding.weight.grad}


@test_pad_embedding_is_zero_and_stays_zero.judge
def _(out, trusted):
    corpus = trusted.sections.corpus
    assert not out["pad_embedding"].any(), "the embedding of <pad> (index 0) should be zero"
    assert not out["gradient"][corpus.PAD].any(), (
        "the embedding of <pad> should get no gradient, so that it stays zero: padding_idx"
    )


class Spelled(nn.Module):
    """A token layer that takes (T, B, W) ids, as section 8's does: the sum of the
    embeddings of a token's W ids (the extra ids here are padding, whose embedding is 0)."""

    def __init__(self, embedding):
        super().__init__()
        self.embedding = embedding
        self.num_embeddings = embedding.num_embeddings  # the range the given check reads

    def forward(self, ids):
        return self.embedding(ids).sum(dim=2)


@judged()
def test_forward_hands_ids_whole_to_the_token_layer(setup, bilm, corpus):
    """Section 8 swaps `embedding` for a layer that takes (T, B, W) ids: forward reads T and
    B as the first two dimensions of ids and gives ids to `embedding` as they are."""
    model = model_of(setup, bilm, embedding_dim=8, hidden_dim=8)
    reading = sentence_reading(model, VOCAB)
    ids, lengths = corpus.pad_batch([[5, 6, 7, 8], [9, 10]])
    wide = torch.stack([ids, torch.full_like(ids, corpus.PAD)], dim=-1)  # (T, B, 2)

    class SpelledBiLM(bilm.BiLM):
        def _check_input(self, ids, lengths):  # the given check reads (T, B) word ids
            return super()._check_input(ids[..., 0] if ids.dim() == 3 else ids, lengths)

    spelled = SpelledBiLM(VOCAB, embedding_dim=8, hidden_dim=8).eval()
    spelled.load_state_dict(model.state_dict())
    spelled.embedding = Spelled(model.embedding)
    try:
        got = spelled(wide, lengths)
    except NotImplementedError:
        raise
    except Exception as err:  # noqa: BLE001 - any failure is the learner's to read
        return {"reading": reading, "raised": type(err).__name__, "message": str(err)}
    return {"reading": reading, "raised": None, "got": got.layers,
            "want": model(ids, lengths).layers}


@test_forward_hands_ids_whole_to_the_token_layer.judge
def _(out):
    assert_reads_the_sentence(out["reading"])
    if out["raised"] is not None:
        raise AssertionError(
            "BiLM.forward failed on ids of shape (T, B, 2) with a token layer that takes them "
            f"({out['raised']}: {out['message']}): read T and B as ids.shape[:2] (not `T, B = "
            "ids.shape`) and give ids to self.embedding whole; section 8 relies on it"
        )
    assert_close(out["got"], out["want"], "the layers from (T, B, W) ids", **TOL, hint=(
        "with a token layer that takes (T, B, W) ids, BiLM.forward should give what the word "
        "ids give: is every use of the input's size read from ids.shape[:2]?"))
