"""Section 3: the biLM's shapes, its layer 0, padding, and that no direction peeks."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from .strategies import id_batches, id_sequences

VOCAB = 30
TOL = dict(atol=1e-5, rtol=1e-4)


@pytest.fixture(scope="module")
def model(setup, bilm):
    setup.set_seed(0)
    return bilm.BiLM(VOCAB).eval()


def one_sentence(length=6):
    return torch.randint(4, VOCAB, (length, 1), generator=torch.Generator().manual_seed(length))


def test_seed_key_shapes(model):
    ids = one_sentence(7)
    assert model.embedding(ids).shape == (7, 1, 128), "word embedding: (seq_len, 1, 128)"
    out = model(ids)
    assert out.layers.shape == (3, 7, 1, 512), (
        f"layers: expected (num_layers + 1, seq_len, batch, 512) = (3, 7, 1, 512), "
        f"got {tuple(out.layers.shape)}"
    )
    for name in ("forward_logits", "backward_logits"):
        shape = tuple(getattr(out, name).shape)
        assert shape == (7, 1, VOCAB), f"{name}: expected (7, 1, {VOCAB}), got {shape}"


def test_two_lstm_layers_of_256_per_direction(model):
    for name in ("forward_lstms", "backward_lstms"):
        stack = getattr(model, name)
        assert len(stack) == 2, f"{name}: expected 2 layers, found {len(stack)}"
        for lstm in stack:
            assert (lstm.hidden_size, lstm.num_layers, lstm.bidirectional) == (256, 1, False), (
                f"{name}: each layer should be a 1-layer unidirectional nn.LSTM of hidden 256"
            )


def test_each_lstm_layer_state_is_256_wide_per_direction(model):
    layers = model(one_sentence()).layers
    assert layers.shape[-1] == 2 * 256, "each layer is [forward 256 ; backward 256]"


def test_layer_0_is_the_projected_token_twice(model):
    ids = one_sentence()
    layer0 = model(ids).layers[0]
    token = model.token_projection(model.embedding(ids))
    assert torch.allclose(layer0[..., :256], token, **TOL), (
        "layer 0's first half should be token_projection(embedding(ids))"
    )
    assert torch.equal(layer0[..., :256], layer0[..., 256:]), (
        "layer 0 should be [x; x]: the token representation duplicated, as in the paper's code"
    )


def test_layer_0_ignores_context(model):
    a = torch.tensor([[5], [9], [7]])
    b = torch.tensor([[12], [20], [7]])
    assert torch.equal(model(a).layers[0, 2], model(b).layers[0, 2]), (
        "layer 0 of the same word must be identical in any context"
    )
    assert not torch.allclose(model(a).layers[1, 2], model(b).layers[1, 2]), (
        "layer 1 of the same word should change with its context"
    )


def test_every_parameter_is_used(setup, bilm):
    setup.set_seed(0)
    fresh = bilm.BiLM(VOCAB)
    out = fresh(one_sentence())
    g = torch.Generator().manual_seed(0)
    total = sum((t * torch.randn(t.shape, generator=g)).sum() for t in out)
    total.backward()
    unused = [name for name, p in fresh.named_parameters() if p.grad is None or not p.grad.any()]
    assert not unused, (
        f"these parameters have no effect on the output: {unused}; does each direction run its "
        "own LSTM stack and its own head?"
    )


def test_each_layer_reads_the_layer_below(setup, bilm):
    setup.set_seed(0)
    fresh = bilm.BiLM(VOCAB).eval()
    ids = one_sentence()
    before = fresh(ids).layers
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for stack in (fresh.forward_lstms, fresh.backward_lstms):
            for weight in stack[0].parameters():
                weight.add_(torch.randn(weight.shape, generator=g))
    after = fresh(ids).layers
    for name, half in [("forward", slice(None, 256)), ("backward", slice(256, None))]:
        assert not torch.allclose(before[2, ..., half], after[2, ..., half]), (
            f"changing the first {name} LSTM layer left layer 2 unchanged: the second layer "
            "should read the first layer's outputs, not the token representation"
        )


@given(batch=id_batches(VOCAB, max_batch=4, max_len=8))
def test_padded_batch_equals_one_sentence_at_a_time(corpus, model, batch):
    ids, lengths = corpus.pad_batch(batch)
    together = model(ids, lengths)
    for b, sentence in enumerate(batch):
        n = len(sentence)
        alone = model(torch.tensor(sentence).unsqueeze(1))
        for name, got, want in [("layers", together.layers[:, :n, b], alone.layers[:, :, 0]),
                                ("forward_logits", together.forward_logits[:n, b],
                                 alone.forward_logits[:, 0]),
                                ("backward_logits", together.backward_logits[:n, b],
                                 alone.backward_logits[:, 0])]:
            assert torch.allclose(got, want, **TOL), (
                f"sentence {b} (length {n} in a batch padded to {ids.shape[0]}): {name} differ "
                "from running it alone; does the backward LSTM reverse each sentence within "
                "its own length, or the padded tensor as a whole?"
            )
        assert not together.layers[:, n:, b].any(), "layers must be zero at padded positions"


@given(st.data())
def test_forward_direction_never_sees_the_token_it_predicts(model, data):
    ids = torch.tensor(data.draw(id_sequences(VOCAB, 2, 9))).unsqueeze(1)
    k = data.draw(st.integers(1, ids.shape[0] - 1))
    changed = ids.clone()
    changed[k] = (ids[k] + 1) % VOCAB
    before, after = model(ids), model(changed)
    assert torch.allclose(before.forward_logits[:k], after.forward_logits[:k], **TOL), (
        f"changing token {k} changed the forward prediction at positions < {k}: the forward "
        f"direction sees the token it predicts"
    )
    assert torch.allclose(before.layers[1:, :k, :, :256], after.layers[1:, :k, :, :256], **TOL), (
        "forward LSTM states at positions before the changed token should not change"
    )


@given(st.data())
def test_backward_direction_never_sees_the_token_it_predicts(model, data):
    ids = torch.tensor(data.draw(id_sequences(VOCAB, 2, 9))).unsqueeze(1)
    k = data.draw(st.integers(0, ids.shape[0] - 2))
    changed = ids.clone()
    changed[k] = (ids[k] + 1) % VOCAB
    before, after = model(ids), model(changed)
    assert torch.allclose(before.backward_logits[k + 1:], after.backward_logits[k + 1:], **TOL), (
        f"changing token {k} changed the backward prediction at positions > {k}: the backward "
        "direction sees the token it predicts at position t"
    )
    assert torch.allclose(before.layers[1:, k + 1:, :, 256:], after.layers[1:, k + 1:, :, 256:],
                          **TOL), "backward LSTM states after the changed token should not change"


def test_each_direction_reads_its_own_context(model):
    ids = torch.tensor([[5], [6], [7], [8]])
    changed = ids.clone()
    changed[0] = 9
    after = model(changed)
    assert not torch.allclose(model(ids).forward_logits[3], after.forward_logits[3]), (
        "the forward prediction at the last position should depend on the first token"
    )
    changed = ids.clone()
    changed[3] = 9
    assert not torch.allclose(model(ids).backward_logits[0], model(changed).backward_logits[0]), (
        "the backward prediction at the first position should depend on the last token"
    )


@given(st.data())
def test_reverse_within_lengths_reverses_each_sentence_and_keeps_padding(bilm, corpus, data):
    batch = data.draw(id_batches(VOCAB))
    ids, lengths = corpus.pad_batch(batch)
    flipped = bilm.reverse_within_lengths(ids, lengths)
    for b, sentence in enumerate(batch):
        expected = sentence[::-1] + [corpus.PAD] * (ids.shape[0] - len(sentence))
        assert flipped[:, b].tolist() == expected, (
            f"column {b}: expected {expected}, got {flipped[:, b].tolist()}"
        )
    assert torch.equal(bilm.reverse_within_lengths(flipped, lengths), ids), "reversing twice"


def test_reverse_within_lengths_works_on_the_device_of_its_input(bilm):
    x = torch.empty(4, 2, 3, device="meta")  # PyTorch's shape-only device: no GPU needed
    out = bilm.reverse_within_lengths(x, torch.tensor([4, 2]))
    assert out.device == x.device and out.shape == x.shape, (
        "make the index tensors on x's device (torch.arange(..., device=x.device), "
        "lengths.to(x.device)), or the reversal fails on a GPU"
    )


def test_lengths_may_be_a_list(model):
    ids = torch.full((3, 2), 5)
    assert torch.equal(model(ids, [3, 2]).layers, model(ids, torch.tensor([3, 2])).layers)


def test_logits_come_from_the_top_layer_and_layer_2_adds_layer_1(setup, bilm):
    setup.set_seed(0)
    deep = bilm.BiLM(VOCAB, embedding_dim=8, hidden_dim=8, num_layers=3).eval()
    ids = one_sentence()
    out = deep(ids)
    top = out.layers[-1]
    assert torch.allclose(out.forward_logits, deep.forward_head(top[..., :8]), **TOL), (
        "the forward logits should be forward_head of the top forward LSTM layer"
    )
    assert torch.allclose(out.backward_logits, deep.backward_head(top[..., 8:]), **TOL), (
        "the backward logits should be backward_head of the top backward LSTM layer"
    )
    tokens = deep.token_projection(deep.embedding(ids))
    first, _ = deep.forward_lstms[0](tokens)
    second, _ = deep.forward_lstms[1](first)
    assert torch.allclose(out.layers[1, ..., :8], first, **TOL), (
        "layer 1 is the first LSTM's output, without a residual connection"
    )
    assert torch.allclose(out.layers[2, ..., :8], second + first, **TOL), (
        "layer 2 is the second LSTM's output plus its input, layer 1: the residual connection"
    )


def test_reverse_within_lengths_handles_feature_dimensions(bilm):
    x = torch.arange(12.0).view(3, 2, 2)
    out = bilm.reverse_within_lengths(x, torch.tensor([3, 2]))
    assert torch.equal(out[:, 0], x.flip(0)[:, 0]) and torch.equal(out[2, 1], x[2, 1])
    assert torch.equal(out[:2, 1], x[:2, 1].flip(0))


def test_same_input_twice_gives_identical_output(model):
    ids = one_sentence()
    assert torch.equal(model(ids).layers, model(ids).layers), "the biLM must keep no state"


@pytest.mark.parametrize("ids, error, match", [
    (torch.zeros(3, 1), TypeError, "integer"),
    (torch.zeros(3, dtype=torch.long), ValueError, r"\(seq_len, batch\).*unsqueeze\(1\)"),
    (torch.zeros(3, 1, 1, dtype=torch.long), ValueError, r"\(seq_len, batch\)"),
    (torch.zeros(0, 1, dtype=torch.long), ValueError, r"empty batch of shape \(0, 1\)"),
    (torch.tensor([[4], [VOCAB]]), ValueError, rf"\[0, {VOCAB}\)"),
    (torch.tensor([[-1], [4]]), ValueError, rf"\[0, {VOCAB}\)"),
    ([[4], [5]], TypeError, "Tensor, got list"),
])
def test_bad_ids_are_clear_errors(model, ids, error, match):
    with pytest.raises(error, match=match):
        model(ids)


@pytest.mark.parametrize("lengths, match", [
    (torch.tensor([3]), r"shape \(2,\)"),
    (torch.tensor([3, 4]), r"\[1, 3\]"),
    (torch.tensor([0, 2]), r"\[1, 3\]"),
])
def test_lengths_that_do_not_match_the_batch_are_clear_errors(model, lengths, match):
    with pytest.raises(ValueError, match=match):
        model(torch.full((3, 2), 5), lengths)


@pytest.mark.parametrize("kwargs", [dict(vocab_size=0), dict(vocab_size=10, embedding_dim=0),
                                    dict(vocab_size=10, hidden_dim=-4),
                                    dict(vocab_size=10, num_layers=0),
                                    dict(vocab_size=10, padding_idx=10)])
def test_bad_sizes_are_clear_errors(bilm, kwargs):
    name = next(k for k in kwargs if k != "vocab_size" or len(kwargs) == 1)
    with pytest.raises(ValueError, match=name):
        bilm.BiLM(**kwargs)


def test_the_smallest_sizes_are_accepted(bilm):
    tiny = bilm.BiLM(vocab_size=1, embedding_dim=1, hidden_dim=1, num_layers=1)
    assert tiny(torch.zeros(3, 2, dtype=torch.long)).layers.shape == (2, 3, 2, 2), (
        "sizes of 1 are valid: one layer of one unit per direction"
    )


def test_pad_embedding_is_zero_and_stays_zero(setup, bilm, corpus):
    setup.set_seed(0)
    fresh = bilm.BiLM(VOCAB)
    pad = torch.tensor([[corpus.PAD]])
    assert not fresh.embedding(pad).any(), "the embedding of <pad> (index 0) should be zero"
    fresh(torch.tensor([[corpus.PAD], [5]])).forward_logits.sum().backward()
    assert not fresh.embedding.weight.grad[corpus.PAD].any(), (
        "the embedding of <pad> should get no gradient, so that it stays zero: padding_idx"
    )
