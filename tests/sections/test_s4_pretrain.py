"""Section 4: the biLM loss, and a training loop that learns, visits every sentence once per
epoch in a seeded order, and repeats exactly."""

import copy
import math
import random
from collections import Counter

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.nn import functional as F

from course.diagnose import assert_close

from .devices import mixed_devices
from .strategies import id_batches

VOCAB = 12
SMALL = dict(embedding_dim=8, hidden_dim=8)  # a biLM that trains in milliseconds


def cross_entropies(logits, ids, lengths, shift, first=0, last=0):
    """-log p(ids[t + shift] | logits[t]) of every column b, for t from `first` to
    lengths[b] - 1 + `last` where t + shift is a real token: a list per column."""
    columns = []
    for b, n in enumerate(lengths.tolist()):
        columns.append([-F.log_softmax(logits[t, b], -1)[ids[t + shift, b]]
                        for t in range(first, n + last) if 0 <= t + shift < n])
    return columns


def mean(columns):
    return torch.stack([x for column in columns for x in column]).mean()


def expected_loss(forward_logits, backward_logits, ids, lengths):
    """The biLM loss written out position by position, independently of the implementation:
    position t predicts token t + 1 forward and token t - 1 backward."""
    return (mean(cross_entropies(forward_logits, ids, lengths, +1))
            + mean(cross_entropies(backward_logits, ids, lengths, -1)))


def loss_mistakes(forward_logits, backward_logits, ids, lengths):
    """{what a wrong loss does: its value} for the ways a loss goes wrong that a learner
    can be told apart, each written out as `expected_loss` is."""
    fwd = cross_entropies(forward_logits, ids, lengths, +1)
    bwd = cross_entropies(backward_logits, ids, lengths, -1)
    per_sentence = [torch.stack(f).mean() + torch.stack(b).mean()
                    for f, b in zip(fwd, bwd, strict=True)]
    right = mean(fwd) + mean(bwd)
    return {
        "the forward logits at t are scored against token t, the token they read, not "
        "t + 1": mean(cross_entropies(forward_logits, ids, lengths, 0, first=1)) + mean(bwd),
        "the forward logits at t are scored against token t - 1, as the backward ones are":
            mean(cross_entropies(forward_logits, ids, lengths, -1)) + mean(bwd),
        "the backward logits at t are scored against token t + 1, as the forward ones are, "
        "not t - 1": mean(fwd) + mean(cross_entropies(backward_logits, ids, lengths, +1)),
        "the backward logits at t are scored against token t, the token they read, not "
        "t - 1": mean(fwd) + mean(cross_entropies(backward_logits, ids, lengths, 0, last=-1)),
        "the loss is the mean of the two directions; it is their sum": right / 2,
        "each direction's cross-entropy is summed over the tokens; it is their mean":
            sum(x for column in fwd + bwd for x in column),
        "each sentence's loss is averaged, so a short sentence's tokens weigh more; every "
        "real target of the batch weighs the same":
            torch.stack(per_sentence).mean(),
        "only the forward direction counts; the loss is forward CE + backward CE": mean(fwd),
        "only the backward direction counts; the loss is forward CE + backward CE": mean(bwd),
    }


def random_output(bilm, shape, seed):
    g = torch.Generator().manual_seed(seed)
    return bilm.BiLMOutput(layers=torch.zeros(3, *shape, 4),
                           forward_logits=torch.randn(*shape, VOCAB, generator=g),
                           backward_logits=torch.randn(*shape, VOCAB, generator=g))


@given(batch=id_batches(VOCAB, max_batch=4, max_len=7, min_len=2), seed=st.integers(0, 99))
def test_loss_is_forward_plus_backward_cross_entropy(bilm, corpus, pretrain, batch, seed):
    """The loss is the forward CE (t predicts t+1) plus the backward CE (t predicts t-1)."""
    ids, lengths = corpus.pad_batch(batch)
    out = random_output(bilm, ids.shape, seed)
    got = pretrain.bilm_loss(out, ids, lengths)
    want = expected_loss(out.forward_logits, out.backward_logits, ids, lengths)
    assert isinstance(got, torch.Tensor) and got.dim() == 0, (
        f"the loss should be a scalar tensor, got {got!r}"
    )
    if torch.isclose(got.detach(), want, atol=1e-5, rtol=0):
        return
    mistakes = loss_mistakes(out.forward_logits, out.backward_logits, ids, lengths)
    named = next((what for what, value in mistakes.items()
                  if torch.isclose(got.detach(), value, atol=1e-5, rtol=0)), None)
    if named is not None:
        raise AssertionError(f"the loss of this batch is {float(got):.4f}, where forward CE + "
                             f"backward CE is {float(want):.4f}: {named}")
    assert_close(got, want, "the loss (forward CE + backward CE)", atol=1e-5, hint=(
        wrong_directions(pretrain, out, ids, lengths) + "; forward logits at t predict "
        "token t+1, backward logits at t predict token t-1, and each direction's mean is over "
        "the real targets of the whole batch"))


def wrong_directions(pretrain, out, ids, lengths):
    """Which direction's part of the loss is wrong, in words: with one direction's logits
    all 0 (every token equally likely), that direction adds log V to the loss whatever its
    targets, and the loss less log V is the other direction's cross-entropy alone."""
    uniform = math.log(VOCAB)
    parts = {
        "forward": (out._replace(backward_logits=torch.zeros_like(out.backward_logits)),
                    mean(cross_entropies(out.forward_logits, ids, lengths, +1))),
        "backward": (out._replace(forward_logits=torch.zeros_like(out.forward_logits)),
                     mean(cross_entropies(out.backward_logits, ids, lengths, -1))),
    }
    wrong = [f"the {name} part is {float(pretrain.bilm_loss(probe, ids, lengths)) - uniform:.4f} "
             f"where its mean CE is {float(want):.4f}"
             for name, (probe, want) in parts.items()
             if abs(float(pretrain.bilm_loss(probe, ids, lengths)) - uniform - float(want)) > 1e-5]
    return ("; ".join(wrong) if wrong else "each direction alone is right (with the other "
            "direction's logits all 0): how are the two combined?")


def test_padding_never_counts_in_the_loss(bilm, corpus, pretrain):
    """Changing the logits at padded positions leaves the loss unchanged: sentence 1 has 3
    tokens, so its positions 3 and 4 are padding, in either direction."""
    ids, lengths = corpus.pad_batch([[2, 5, 6, 7, 3], [2, 8, 3]])
    out = random_output(bilm, ids.shape, 0)
    loss = pretrain.bilm_loss(out, ids, lengths)
    noise = 100 * torch.randn(5, 2, VOCAB, generator=torch.Generator().manual_seed(1))
    counted = []
    for direction in ("forward", "backward"):
        for t in (3, 4):
            logits = getattr(out, f"{direction}_logits").clone()
            logits[t, 1] += noise[t, 1]
            changed = pretrain.bilm_loss(out._replace(**{f"{direction}_logits": logits}),
                                         ids, lengths)
            if not torch.allclose(changed, loss):
                counted.append(f"the {direction} logits at padded position {t}"
                               + (f" (scored against its </s>, token {t - 1})"
                                  if direction == "backward" and t == 3 else ""))
    assert not counted, (
        f"in the batch [[<s> w w w </s>], [<s> w </s> <pad> <pad>]], the loss "
        f"({float(loss):.4f}) changed with {', and with '.join(counted)} of sentence 1: a "
        "padded position predicts nothing, in either direction; a prediction counts only "
        "when its position (t < lengths[b]) and its target are real tokens"
    )


def test_a_sentence_s_last_token_predicts_no_padding(bilm, corpus, pretrain):
    """The forward prediction at a shorter sentence's </s>, whose next token is <pad>, never
    counts: changing its logits leaves the loss unchanged."""
    ids, lengths = corpus.pad_batch([[2, 5, 6, 7, 3], [2, 8, 3]])
    out = random_output(bilm, ids.shape, 0)
    loss = pretrain.bilm_loss(out, ids, lengths)
    changed = out._replace(forward_logits=out.forward_logits.clone())
    changed.forward_logits[2, 1, corpus.PAD] -= 100  # </s> of sentence 1: sure it is no <pad>
    after = pretrain.bilm_loss(changed, ids, lengths)
    assert torch.allclose(after, loss), (
        "changing only the forward logits at the last token of sentence 1 (its </s>, at "
        f"position 2, followed by <pad>) changed the loss from {float(loss):.4f} to "
        f"{float(after):.4f}: the forward prediction at t scores token t + 1, and counts only "
        "when that token is real (t + 1 < lengths[b])"
    )


def test_the_loss_works_on_the_device_of_its_input(bilm, pretrain):
    """Logits and ids on the meta device, lengths on the CPU: no tensors of two devices mix."""
    ids = torch.zeros(5, 2, dtype=torch.long, device="meta")  # shape-only: no GPU needed
    out = bilm.BiLMOutput(*(torch.empty(*shape, device="meta")
                            for shape in [(3, 5, 2, 4), (5, 2, VOCAB), (5, 2, VOCAB)]))
    mixed = mixed_devices(lambda: pretrain.bilm_loss(out, ids, torch.tensor([5, 3])))
    assert mixed is None, (
        "make the position tensors on the ids' device (torch.arange(..., device=ids.device), "
        f"lengths.to(ids.device)), or the loss fails on a GPU: {mixed}"
    )


def test_loss_of_perfect_predictions_is_near_zero(bilm, corpus, pretrain):
    """Logits that put all mass on the right neighbour in each direction give a loss of ~0."""
    ids, lengths = corpus.pad_batch([[2, 5, 6, 3]])
    fwd = torch.full((4, 1, VOCAB), -50.0)
    bwd = torch.full((4, 1, VOCAB), -50.0)
    for t in range(3):
        fwd[t, 0, ids[t + 1, 0]] = 50.0
        bwd[t + 1, 0, ids[t, 0]] = 50.0
    out = bilm.BiLMOutput(torch.zeros(3, 4, 1, 4), fwd, bwd)
    loss = pretrain.bilm_loss(out, ids, lengths).item()
    assert loss < 1e-6, (
        "logits that put all mass on the right next (forward) and previous (backward) token "
        f"should give a loss of ~0, got {loss:.4f}; are the targets shifted the wrong way?"
    )


def test_training_lowers_the_loss(trained):
    """The default recipe on the corpus: the loss ends below 0.6 of where it started."""
    history = trained.history
    assert len(history) > 1 and all(math.isfinite(x) for x in history), (
        f"expected a finite loss per epoch, got {history}"
    )
    assert history[-1] < 0.6 * history[0], (
        f"the loss went from {history[0]:.3f} to {history[-1]:.3f} (where it never moves, no "
        "step changes the weights: test_the_first_step_is_adam_with_the_recipes_learning_rate "
        f"says whether the gradient or the step is missing); expected it to fall below "
        f"{0.6 * history[0]:.3f}"
    )


def untrained(read):
    """What a test says of a train_bilm that moved no weight, though the model `read`
    batches with gradients on (a count), or none."""
    return (f"train_bilm moved no weight of the model, which read {read or 'no'} batch"
            f"{'es' * (read != 1)} with gradients on: what this test checks would hold of a "
            "run that trains nothing, so it counts only for one that trains. Each batch is a "
            "step of Adam on its bilm_loss (test_the_first_step_is_adam_with_the_recipes_"
            "learning_rate says what a step lacks)")


def weights(model):
    return [p.detach().clone() for p in model.parameters()]


def moved(before, model):
    """Whether any weight of `model` differs from `before` (`weights` of it)."""
    return any(not torch.equal(a, b) for a, b in zip(before, weights(model), strict=True))


class Recorder:
    """The sentences of every training step, and the model's mode in it, from a hook: a
    batch that the model reads with gradients on is a step when the weights move before the
    model's next forward pass, or before the run's end (`count_the_last_read`)."""

    def __init__(self, model):
        self.model, self.reads, self.last = model, 0, None
        self.steps, self.modes = [], []
        model.register_forward_pre_hook(self, with_kwargs=True)

    def __call__(self, module, args, kwargs):
        count_the_last_read(self)
        if not torch.is_grad_enabled():
            return  # corpus_loss, after the epoch: not a training step
        ids, lengths = (*args, *kwargs.values(), None)[:2]
        lengths = [ids.shape[0]] * ids.shape[1] if lengths is None else list(map(int, lengths))
        self.reads += 1
        self.last = ([tuple(ids[:n, b].tolist()) for b, n in enumerate(lengths)],
                     module.training, weights(self.model))


def count_the_last_read(recorder):
    """The batch `recorder` saw read last is a step if the weights have moved since."""
    if recorder.last is not None:
        sentences, mode, before = recorder.last
        if moved(before, recorder.model):
            recorder.steps.append(sentences)
            recorder.modes.append(mode)
        recorder.last = None


def train(setup, bilm, corpus, pretrain, sentences, recipe, init_seed=0, **options):
    """A fresh small biLM (weights from `init_seed`) trained by train_bilm: (model, history).
    A run that moves no weight fails the test that asked for it (`untrained`)."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    setup.set_seed(init_seed)
    model = bilm.BiLM(len(word2idx), **SMALL)
    recorder, start = Recorder(model), weights(model)
    history = pretrain.train_bilm(model, sentences, word2idx, pretrain.Recipe(*recipe),
                                  device="cpu", log_every=0, progress=False, **options)
    assert moved(start, model), untrained(recorder.reads)
    return model, history


def same_weights(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(),
                                                 b.state_dict().values(), strict=True))


def test_history_is_the_corpus_loss_after_each_epoch(setup, bilm, corpus, pretrain):
    """3 epochs give 3 floats, the last being corpus_loss of the trained model; 1 epoch, the
    first of them."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    sentences = corpus.CORPUS[:4]
    model, history = train(setup, bilm, corpus, pretrain, sentences, (2, 0.01, 3), seed=3)
    assert isinstance(history, list) and len(history) == 3, (
        f"3 epochs should give a list of 3 corpus losses, one per epoch; got {history!r}"
    )
    assert all(type(x) is float for x in history), (
        f"each loss should be a python float (float(loss), not a tensor), got {history!r}"
    )
    final = pretrain.corpus_loss(model, sentences, word2idx)
    assert abs(history[-1] - final) < 1e-6, (
        f"the last loss of the history should be corpus_loss of the trained model, {final:.6f}, "
        f"measured after the epoch's last step; got {history[-1]:.6f}"
    )
    one, first = train(setup, bilm, corpus, pretrain, sentences, (2, 0.01, 1), seed=3)
    after_one = pretrain.corpus_loss(one, sentences, word2idx)
    assert abs(first[0] - after_one) < 1e-6 and abs(history[0] - after_one) < 1e-6, (
        f"history[0] should be the corpus loss after the first epoch, {after_one:.6f}; "
        f"got {history[0]:.6f} (and {first[0]:.6f} from a run of one epoch)"
    )


def recorded_run(setup, bilm, corpus, pretrain, sentences, recipe, seed):
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    setup.set_seed(0)
    model = bilm.BiLM(len(word2idx), **SMALL).eval()
    recorder = Recorder(model)
    pretrain.train_bilm(model, sentences, word2idx, pretrain.Recipe(*recipe), seed=seed,
                        device="cpu", log_every=0, progress=False)
    count_the_last_read(recorder)
    assert recorder.steps, untrained(recorder.reads)
    encoded = [tuple(corpus.encode(s, word2idx, add_boundaries=True)) for s in sentences]
    return model, recorder, encoded


def test_each_epoch_visits_every_sentence_once_in_batches(setup, bilm, corpus, pretrain):
    """5 sentences, batch 2, 3 epochs: 9 steps of 2, 2, 1 sentences, each epoch all 5 once."""
    _, recorder, encoded = recorded_run(setup, bilm, corpus, pretrain, corpus.CORPUS[:5],
                                        (2, 0.01, 3), seed=0)
    sizes = [len(step) for step in recorder.steps]
    assert sizes == [2, 2, 1] * 3, (
        f"5 sentences in batches of 2 make 3 steps per epoch, of 2, 2 and 1 sentences; over 3 "
        f"epochs the training steps had {sizes} sentences"
    )
    for epoch in range(3):
        seen = Counter(s for step in recorder.steps[3 * epoch: 3 * epoch + 3] for s in step)
        stranger = next((s for s in seen if s not in encoded), None)
        assert seen == Counter(encoded), (
            f"epoch {epoch + 1} should visit each of the 5 sentences exactly once (BOS ... EOS); "
            + (f"it visited {sorted(seen.values())} times the {len(seen)} sentences it saw"
               if stranger is None else f"it read {list(stranger)}, which is none of them"
               + (": its end is padding (0), so the model read the padded batch without its "
                  "lengths" if stranger[-1] == corpus.PAD else ""))
        )


def test_every_epoch_has_a_new_order(setup, bilm, corpus, pretrain):
    """Batch 1, 4 epochs of 6 sentences: the epochs do not all visit them in one order."""
    _, recorder, _ = recorded_run(setup, bilm, corpus, pretrain, corpus.CORPUS[:6],
                                  (1, 0.01, 4), seed=0)
    orders = [tuple(step[0] for step in recorder.steps[6 * e: 6 * e + 6]) for e in range(4)]
    assert len(set(orders)) > 1, (
        "every epoch visited the sentences in the same order: shuffle them afresh for each "
        "epoch, with a generator seeded once by `seed`"
    )


def test_training_steps_run_in_training_mode_and_leave_it_so(setup, bilm, corpus, pretrain):
    """A model handed over in eval mode trains in training mode and is left in it."""
    model, recorder, _ = recorded_run(setup, bilm, corpus, pretrain, corpus.CORPUS[:2],
                                      (2, 0.01, 2), seed=0)
    assert recorder.modes and all(recorder.modes), (
        f"the training steps ran with model.training = {recorder.modes}: call model.train() "
        "before training"
    )
    assert model.training, "train_bilm should leave the model in training mode"


def test_training_is_deterministic_given_the_seed(setup, bilm, corpus, pretrain):
    """Two runs with one seed from one initialisation give identical losses and weights."""
    first, second = (train(setup, bilm, corpus, pretrain, corpus.CORPUS[:6], (2, 0.01, 2),
                           init_seed=5, seed=5) for _ in range(2))
    assert first[1] == second[1], (
        f"two runs with one seed gave different losses: {first[1]} and {second[1]}"
    )
    assert same_weights(first[0], second[0]), "two runs with one seed gave different weights"


def test_the_seed_alone_decides_the_order(setup, bilm, corpus, pretrain):
    """One seed trains alike whatever the global generators drew before; other seeds differ."""
    def run(seed, disturb):
        word2idx, _ = corpus.build_vocab(corpus.CORPUS)
        setup.set_seed(0)
        model = bilm.BiLM(len(word2idx), **SMALL)
        for _ in range(disturb):  # draws that must not change what train_bilm does
            random.random(), np.random.rand(), torch.rand(1)
        return pretrain.train_bilm(model, corpus.CORPUS[:6], word2idx,
                                   pretrain.Recipe(2, 0.01, 2), seed=seed, device="cpu",
                                   log_every=0, progress=False)

    assert run(1, 0) == run(1, 3), (
        "the same seed trained differently after other random draws: shuffle with a "
        "generator seeded by `seed` (or call set_seed(seed) first), not with the global "
        "generators' current state"
    )
    histories = {tuple(run(seed, 0)) for seed in (1, 2, 3)}
    assert len(histories) > 1, (
        "seeds 1, 2 and 3 trained exactly alike: the seed should decide the shuffled order"
    )


class Snapshots:
    """The model's weights at the start of every training step, and each step's batch, from
    a forward pre-hook: what train_bilm does, seen from the model it trains."""

    def __init__(self, model):
        self.weights, self.batches = [], []
        model.register_forward_pre_hook(self, with_kwargs=True)

    def __call__(self, module, args, kwargs):
        if torch.is_grad_enabled():  # not corpus_loss's forward, after the epoch
            self.weights.append({n: p.detach().clone() for n, p in module.named_parameters()})
            self.batches.append((*args, *kwargs.values()))


def stepped(setup, bilm, corpus, pretrain, sentences, recipe):
    """A small biLM trained by train_bilm with its weights before each step and after the
    last: (model, snapshots, weights after each step in order, word2idx)."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    setup.set_seed(1)
    model = bilm.BiLM(len(word2idx), **SMALL)
    snapshots = Snapshots(model)
    pretrain.train_bilm(model, sentences, word2idx, pretrain.Recipe(*recipe), device="cpu",
                        log_every=0, progress=False)
    final = {n: p.detach().clone() for n, p in model.named_parameters()}
    return model, snapshots, [*snapshots.weights[1:], final], word2idx


def gradient(bilm, pretrain, model, weights, ids, lengths):
    """The gradient of bilm_loss on (ids, lengths) at `weights`, for every parameter."""
    probe = copy.deepcopy(model)
    probe.load_state_dict(weights, strict=False)
    probe.train()
    pretrain.bilm_loss(probe(ids, lengths), ids, lengths).backward()
    return {n: p.grad if p.grad is not None else torch.zeros_like(p)
            for n, p in probe.named_parameters()}


def test_the_first_step_is_adam_with_the_recipes_learning_rate(setup, bilm, corpus, pretrain):
    """Adam's first step moves every weight by the learning rate against the sign of its
    gradient (to within a thousandth of it): the gradient of bilm_loss on the padded batch,
    with the batch's lengths; nothing else moves a weight (no weight decay)."""
    sentences = ["turn right at the river", "he wore a gold watch on his hand"]
    lr = 0.02
    model, snapshots, after, word2idx = stepped(setup, bilm, corpus, pretrain, sentences,
                                                (2, lr, 1))
    assert len(snapshots.weights) == 1, (
        f"2 sentences in batches of 2 make one training step; there were "
        f"{len(snapshots.weights)}")
    before = snapshots.weights[0]
    if all(torch.equal(after[0][name], weight) for name, weight in before.items()):
        held = [p.grad for p in model.parameters() if p.grad is not None]
        raise AssertionError(
            "no weight moved in the training step: " + (
                "the weights hold gradients, but no optimizer.step() applied them"
                if any(g.abs().sum() > 0 for g in held) else
                "no gradient reached the weights when the step was taken: call "
                "loss.backward() before optimizer.step(), and clear the gradients before the "
                "backward pass, not between it and the step"))
    ids, lengths = corpus.pad_batch([corpus.encode(s, word2idx, add_boundaries=True)
                                     for s in sentences])
    grads = gradient(bilm, pretrain, model, before, ids, lengths)
    for name, weight in before.items():
        moved, grad = after[0][name] - weight, grads[name]
        clear = grad.abs() > 1e-4  # Adam's step is lr * g / (|g| + 1e-8): lr to 1e-4 of it
        step = -lr * grad.sign()
        wrong = ~torch.isclose(moved[clear], step[clear], atol=1e-3 * lr, rtol=0)
        if not wrong.any():
            continue
        rest = (moved - step)[clear][wrong]  # what moved the weights besides Adam's step
        shrink = -(rest * weight[clear][wrong]).sum() / (weight[clear][wrong] ** 2).sum()
        decayed = shrink > 0 and torch.allclose(rest, -shrink * weight[clear][wrong],
                                                atol=1e-4 * lr, rtol=0.05)
        backwards = torch.isclose(moved[clear][wrong], -step[clear][wrong],
                                  atol=0.1 * lr).all()
        raise AssertionError(
            f"after the first step, {int(wrong.sum())} of {int(clear.sum())} weights of {name} "
            f"did not move by the learning rate ({lr}) against the sign of their gradient of "
            "bilm_loss on the padded batch read with its lengths: " + (
                f"besides the learning rate, each moved towards 0 by {shrink / lr:.2g} of "
                "itself times the learning rate: that is weight decay (AdamW, or Adam's "
                "weight_decay); the recipe's optimizer is Adam without it" if decayed else
                "they moved by the learning rate, but the other way, so their gradient was "
                "another's: does the model read the batch with its lengths?" if backwards else
                f"they moved by up to {moved[clear][wrong].abs().max():.4g}: is the optimizer "
                "Adam with the recipe's learning rate, and does the model read the batch with "
                "its lengths?")
        )


def test_one_optimizer_follows_each_batchs_own_gradient(setup, bilm, corpus, pretrain):
    """Two steps, one per sentence. A word of the first sentence only has no gradient in the
    second step: one Adam kept for the whole run still moves it (its momentum), by less than
    a full step (its gradient is the second batch's alone, not the first's piled up)."""
    sentences = ["turn right at the river", "he wore a gold watch on his hand"]
    lr = 0.02
    model, snapshots, after, word2idx = stepped(setup, bilm, corpus, pretrain, sentences,
                                                (1, lr, 1))
    assert all(len(batch) == 2 for batch in snapshots.batches), (
        "train_bilm should run the model on each batch's ids and lengths, model(ids, lengths); "
        f"it ran it on {min(map(len, snapshots.batches))} argument(s)")
    second_ids, second_lengths = snapshots.batches[1]
    grads = gradient(bilm, pretrain, model, snapshots.weights[1], second_ids, second_lengths)
    first_moved = {n: after[0][n] - w for n, w in snapshots.weights[0].items()}
    still = {n: (first_moved[n].abs() > 0.5 * lr) & (grads[n] == 0) for n in grads}
    assert sum(int(mask.sum()) for mask in still.values()) > 0, (
        "no weight moved in the first step and had no gradient in the second: the two "
        "steps should train on the two sentences, one each")
    for name, mask in still.items():
        moved = (after[1][name] - snapshots.weights[1][name])[mask].abs()
        if moved.numel() == 0:
            continue
        assert moved.min() > 0.1 * lr, (
            f"in the second step, weights of {name} that the first sentence trained and the "
            "second does not touch did not move: Adam's moment estimates carry over from "
            "step to step, so make one optimizer for the whole run, not one per batch"
        )
        assert moved.max() < 0.9 * lr, (
            f"in the second step, weights of {name} with no gradient from the second "
            f"sentence moved by {moved.max():.4g}, a full step of lr {lr}: is the first "
            "step's gradient still there? Each step follows the gradient of its own batch, "
            "computed from zero"
        )


def test_one_optimizer_lasts_across_epochs(setup, bilm, corpus, pretrain):
    """Two epochs of two steps, one sentence each. The words of the sentence that the first
    step of epoch 2 does not read have no gradient there, yet the Adam of epoch 1, carried
    over, still moves them (its momentum); an optimizer made afresh for the epoch would not."""
    sentences = ["turn right at the river", "he wore a gold watch on his hand"]
    lr = 0.02
    model, snapshots, after, _ = stepped(setup, bilm, corpus, pretrain, sentences, (1, lr, 2))
    assert len(snapshots.weights) == 4, (
        f"2 sentences in batches of 1 for 2 epochs make 4 training steps; there were "
        f"{len(snapshots.weights)}")
    first_of_epoch_2 = snapshots.weights[2]
    grads = gradient(bilm, pretrain, model, first_of_epoch_2, *snapshots.batches[2][:2])
    trained = {n: (first_of_epoch_2[n] - snapshots.weights[0][n]).abs() > 0.5 * lr
               for n in grads}  # moved by epoch 1
    idle = {n: trained[n] & (grads[n] == 0) for n in grads}
    assert sum(int(mask.sum()) for mask in idle.values()) > 0, (
        "no weight that epoch 1 moved is left without a gradient by the first step of epoch "
        "2: each step should train on its own batch, one sentence here")
    for name, mask in idle.items():
        moved = (after[2][name] - first_of_epoch_2[name])[mask].abs()
        assert moved.numel() == 0 or moved.min() > 0.1 * lr, (
            f"in the first step of epoch 2, weights of {name} that epoch 1 trained and this "
            f"step's sentence does not touch moved by as little as {moved.min():.2g}: the "
            "optimizer of epoch 1 would still move them (Adam's moment estimates), so the "
            "step had a new one. Make one optimizer for the whole run, before the first "
            "epoch, not one per epoch"
        )


def test_train_bilm_moves_each_batch_to_the_models_device(setup, bilm, corpus, pretrain):
    """On the meta device (shapes, no values): each batch goes where the model is, so that a
    GPU run never mixes devices (of a train_bilm that trains, on the CPU)."""
    train(setup, bilm, corpus, pretrain, corpus.CORPUS[:2], (2, 0.01, 1))
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    model = bilm.BiLM(len(word2idx), **SMALL)
    mixed = mixed_devices(lambda: pretrain.train_bilm(
        model, corpus.CORPUS[:2], word2idx, pretrain.Recipe(2, 0.01, 1), device="meta",
        log_every=0, progress=False))
    assert mixed is None, (
        "train_bilm(..., device=d) trains the model on d, so each padded batch must go there "
        f"too (ids.to(device)) before the model reads it, or a GPU run fails: {mixed}"
    )


def test_the_device_argument_is_where_it_trains(setup, bilm, corpus, pretrain, monkeypatch):
    """device="cpu" trains on the CPU even where CUDA would be the default."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # CUDA would be the default
    model, _ = train(setup, bilm, corpus, pretrain, corpus.CORPUS[:2], (2, 0.01, 1))
    device = next(model.parameters()).device
    assert device == torch.device("cpu"), (
        f"train_bilm(..., device='cpu') left the model on {device}: pass the device argument "
        "to get_device"
    )


def test_the_default_seed_is_0(setup, bilm, corpus, pretrain):
    """train_bilm without a seed trains exactly as with seed=0."""
    histories = [train(setup, bilm, corpus, pretrain, corpus.CORPUS[:6], (2, 0.01, 2),
                       **seed)[1] for seed in ({}, {"seed": 0})]
    assert histories[0] == histories[1], (
        f"train_bilm without a seed should train as seed=0: {histories[0]} vs {histories[1]}"
    )


def test_the_progress_bar_and_the_log(setup, bilm, corpus, pretrain, capsys):
    """progress=True shows a bar on stderr; log_every=n prints `epoch N  loss X` every n
    epochs on stdout, with the history's losses; progress=False, log_every=0: silence."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    for progress, log_every in [(True, 1), (False, 2), (False, 0)]:
        setup.set_seed(0)
        history = pretrain.train_bilm(bilm.BiLM(len(word2idx), **SMALL), corpus.CORPUS[:2],
                                      word2idx, pretrain.Recipe(2, 0.01, 3), device="cpu",
                                      progress=progress, log_every=log_every)
        out, err = capsys.readouterr()
        where = f"train_bilm(..., progress={progress}, log_every={log_every})"
        logged = [line.split() for line in out.splitlines() if line.startswith("epoch")]
        wanted = [["epoch", str(e), "loss", f"{loss:.4f}"] for e, loss in
                  enumerate(history, start=1) if log_every and e % log_every == 0]
        assert logged == wanted, (
            f"{where} should print the loss of every {log_every or 'no'} epoch(s), as the "
            f"given show_loss does (`epoch   1  loss 3.2158`): expected the lines {wanted}, "
            f"got {logged}")
        assert ("pre-training" in err) == progress, (
            f"{where} should {'show' if progress else 'not show'} the given progress bar "
            f"over the epochs (progress_bar(epochs, progress)) on stderr; stderr was {err!r}")
