"""Section 4: the biLM loss, and a training loop that learns and repeats exactly."""

import copy
import math
import re
import sys

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.nn import functional as F

from .strategies import id_batches

VOCAB = 12


def expected_loss(forward_logits, backward_logits, ids, lengths):
    """The biLM loss written out position by position, independently of the implementation."""
    fwd, bwd = [], []
    for b, n in enumerate(lengths.tolist()):
        for t in range(n - 1):  # position t predicts token t + 1
            fwd.append(-F.log_softmax(forward_logits[t, b], -1)[ids[t + 1, b]])
        for t in range(1, n):  # position t predicts token t - 1
            bwd.append(-F.log_softmax(backward_logits[t, b], -1)[ids[t - 1, b]])
    return torch.stack(fwd).mean() + torch.stack(bwd).mean()


def random_output(bilm, shape, seed):
    g = torch.Generator().manual_seed(seed)
    return bilm.BiLMOutput(layers=torch.zeros(3, *shape, 4),
                           forward_logits=torch.randn(*shape, VOCAB, generator=g),
                           backward_logits=torch.randn(*shape, VOCAB, generator=g))


@given(batch=id_batches(VOCAB, max_batch=4, max_len=7, min_len=2), seed=st.integers(0, 99))
def test_loss_is_forward_plus_backward_cross_entropy(bilm, corpus, pretrain, batch, seed):
    batch = [[max(i, 2) for i in sentence] for sentence in batch]  # a real token is never <pad>
    ids, lengths = corpus.pad_batch(batch)
    out = random_output(bilm, ids.shape, seed)
    got = pretrain.bilm_loss(out, ids, lengths)
    want = expected_loss(out.forward_logits, out.backward_logits, ids, lengths)
    assert got.dim() == 0, f"the loss should be a scalar, got shape {tuple(got.shape)}"
    assert torch.allclose(got, want, atol=1e-5), (
        f"expected forward CE + backward CE = {want.item():.5f}, got {got.item():.5f}; "
        "forward logits at t predict token t+1, backward logits at t predict token t-1"
    )


def test_padding_never_counts_in_the_loss(bilm, corpus, pretrain):
    ids, lengths = corpus.pad_batch([[2, 5, 6, 7, 3], [2, 8, 3]])
    out = random_output(bilm, ids.shape, 0)
    loss = pretrain.bilm_loss(out, ids, lengths)
    noisy = out._replace(forward_logits=out.forward_logits.clone(),
                         backward_logits=out.backward_logits.clone())
    noisy.forward_logits[3:, 1] += 100 * torch.randn(2, VOCAB)
    noisy.backward_logits[3:, 1] += 100 * torch.randn(2, VOCAB)
    assert torch.allclose(pretrain.bilm_loss(noisy, ids, lengths), loss), (
        "changing the logits at padded positions changed the loss: padding is counted"
    )


def test_the_loss_works_on_the_device_of_its_input(bilm, pretrain):
    ids = torch.zeros(5, 2, dtype=torch.long, device="meta")  # shape-only: no GPU needed
    out = bilm.BiLMOutput(*(torch.empty(*shape, device="meta")
                            for shape in [(3, 5, 2, 4), (5, 2, VOCAB), (5, 2, VOCAB)]))
    loss = pretrain.bilm_loss(out, ids, torch.tensor([5, 3]))
    assert loss.device == ids.device and loss.dim() == 0, (
        "make the position tensors on the ids' device (torch.arange(..., device=ids.device), "
        "lengths.to(ids.device)), or the loss fails on a GPU"
    )


def test_loss_of_perfect_predictions_is_near_zero(bilm, corpus, pretrain):
    ids, lengths = corpus.pad_batch([[2, 5, 6, 3]])
    fwd = torch.full((4, 1, VOCAB), -50.0)
    bwd = torch.full((4, 1, VOCAB), -50.0)
    for t in range(3):
        fwd[t, 0, ids[t + 1, 0]] = 50.0
        bwd[t + 1, 0, ids[t, 0]] = 50.0
    out = bilm.BiLMOutput(torch.zeros(3, 4, 1, 4), fwd, bwd)
    assert pretrain.bilm_loss(out, ids, lengths).item() < 1e-6, (
        "logits that put all mass on the right next (forward) and previous (backward) token "
        "should give a loss of ~0; are the targets shifted the wrong way?"
    )


def test_training_lowers_the_loss(trained):
    history = trained.history
    assert len(history) > 1 and all(math.isfinite(x) for x in history), f"history: {history}"
    assert history[-1] < 0.6 * history[0], (
        f"the loss went from {history[0]:.3f} to {history[-1]:.3f}; expected it to fall well"
    )


def test_history_has_one_loss_per_epoch(setup, bilm, corpus, pretrain):
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    setup.set_seed(0)
    model = bilm.BiLM(len(word2idx), embedding_dim=8, hidden_dim=8)
    history = pretrain.train_bilm(model, corpus.CORPUS[:4], word2idx, pretrain.Recipe(2, 0.01, 3),
                                  device="cpu", log_every=0, progress=False)
    assert len(history) == 3 and all(isinstance(x, float) for x in history), (
        f"3 epochs should give 3 corpus losses, one per epoch, as floats; got {history}"
    )


def tiny_run(setup, bilm, corpus, pretrain, seed):
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    setup.set_seed(seed)
    model = bilm.BiLM(len(word2idx), embedding_dim=8, hidden_dim=8)
    history = pretrain.train_bilm(model, corpus.CORPUS[:6], word2idx, pretrain.Recipe(2, 0.01, 2),
                                  seed=seed, device="cpu", log_every=0, progress=False)
    return history, model.state_dict()


def test_training_is_deterministic_given_the_seed(setup, bilm, corpus, pretrain):
    first, second = (tiny_run(setup, bilm, corpus, pretrain, seed=5) for _ in range(2))
    assert first[0] == second[0], "two runs with one seed gave different losses"
    assert all(torch.equal(first[1][k], second[1][k]) for k in first[1]), "...and weights"


def assert_two_adam_steps(pretrain, trained_model, by_hand, ids, lengths, why):
    """Take two Adam steps (lr 0.01) on `by_hand` with the batch `ids`, by hand, and check
    that `trained_model`, trained by `train_bilm` from the same weights, matches them."""
    optimizer = torch.optim.Adam(by_hand.parameters(), lr=0.01)
    for _ in range(2):
        optimizer.zero_grad()
        pretrain.bilm_loss(by_hand(ids, lengths), ids, lengths).backward()
        optimizer.step()
    pairs = zip(trained_model.state_dict().items(), by_hand.state_dict().values(), strict=True)
    for (name, got), want in pairs:
        assert torch.allclose(got, want, atol=1e-6), f"after training, {name} {why}"


def test_each_step_is_one_adam_step_on_a_fresh_gradient(setup, bilm, corpus, pretrain):
    """Two steps on the same sentence, against the same two steps written out by hand."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    sentence = "turn right at the river"
    setup.set_seed(1)
    model = bilm.BiLM(len(word2idx), embedding_dim=8, hidden_dim=8)
    by_hand = copy.deepcopy(model)
    pretrain.train_bilm(model, [sentence, sentence], word2idx, pretrain.Recipe(1, 0.01, 1),
                        device="cpu", log_every=0, progress=False)
    ids, lengths = corpus.pad_batch([corpus.encode(sentence, word2idx, add_boundaries=True)])
    assert_two_adam_steps(pretrain, model, by_hand, ids, lengths, (
        "differs from two Adam steps (lr 0.01) taken by hand; is zero_grad() called before "
        "each backward(), with the recipe's learning rate?"))


def test_a_padded_batch_trains_with_its_lengths(setup, bilm, corpus, pretrain):
    """Two sentences of different lengths in one batch, two epochs: two Adam steps on the
    loss of the padded batch, with its lengths, as written out by hand."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    sentences = ["turn right at the river", "he wore a gold watch on his hand"]
    setup.set_seed(2)
    model = bilm.BiLM(len(word2idx), embedding_dim=8, hidden_dim=8)
    by_hand = copy.deepcopy(model)
    pretrain.train_bilm(model, sentences, word2idx, pretrain.Recipe(2, 0.01, 2),
                        device="cpu", log_every=0, progress=False)
    ids, lengths = corpus.pad_batch(
        [corpus.encode(s, word2idx, add_boundaries=True) for s in sentences])
    assert_two_adam_steps(pretrain, model, by_hand, ids, lengths, (
        "differs from two Adam steps on the padded batch's loss; does each step pass the "
        "batch's lengths to the biLM, and take each sentence once per epoch, batch_size at a "
        "time?"))


def test_loss_is_printed_every_10_epochs(setup, bilm, corpus, pretrain, capsys, monkeypatch):
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    model = bilm.BiLM(len(word2idx), embedding_dim=4, hidden_dim=4)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)  # as in a terminal
    history = pretrain.train_bilm(model, corpus.CORPUS[:2], word2idx,
                                  pretrain.Recipe(2, 0.01, 20), device="cpu", progress=False)
    printed = capsys.readouterr()
    lines = [line for line in printed.out.splitlines() if "loss" in line]
    assert len(lines) == 2 and "10" in lines[0] and "20" in lines[1], (
        f"by default the loss is printed at epochs 10 and 20 of 20; printed: {lines}"
    )
    for line, epoch in zip(lines, (10, 20), strict=True):
        shown = re.findall(r"\d+\.(\d+)", line)[-1]
        value = float(re.findall(r"\d+\.\d+", line)[-1])
        assert abs(value - history[epoch - 1]) <= 0.5 * 10 ** -len(shown) + 1e-9, (
            f"the line of epoch {epoch} should show that epoch's loss, "
            f"{history[epoch - 1]:.4f}: {line!r}"
        )
    assert not printed.err, f"progress=False should show no progress bar: {printed.err!r}"


def test_a_progress_bar_by_default(setup, bilm, corpus, pretrain, capsys, monkeypatch):
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    model = bilm.BiLM(len(word2idx), embedding_dim=4, hidden_dim=4)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)  # as in a terminal
    pretrain.train_bilm(model, corpus.CORPUS[:2], word2idx, pretrain.Recipe(2, 0.01, 2),
                        device="cpu", log_every=0)
    assert capsys.readouterr().err, "by default train_bilm shows a progress bar on stderr"


def test_the_device_argument_is_where_it_trains(setup, bilm, corpus, pretrain, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # CUDA would be the default
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    model = bilm.BiLM(len(word2idx), embedding_dim=4, hidden_dim=4)
    pretrain.train_bilm(model, corpus.CORPUS[:2], word2idx, pretrain.Recipe(2, 0.01, 1),
                        device="cpu", log_every=0, progress=False)
    assert next(model.parameters()).device == torch.device("cpu")


def test_the_default_seed_is_0(setup, bilm, corpus, pretrain):
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    histories = []
    for seed in ({}, {"seed": 0}):
        setup.set_seed(0)
        model = bilm.BiLM(len(word2idx), embedding_dim=8, hidden_dim=8)
        histories.append(pretrain.train_bilm(model, corpus.CORPUS[:6], word2idx,
                                             pretrain.Recipe(2, 0.01, 2), device="cpu",
                                             log_every=0, progress=False, **seed))
    assert histories[0] == histories[1], "train_bilm without a seed should train as seed=0"


def test_empty_corpus_is_a_clear_error(bilm, corpus, pretrain):
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    with pytest.raises(ValueError, match="empty"):
        pretrain.train_bilm(bilm.BiLM(len(word2idx)), [], word2idx, progress=False)
