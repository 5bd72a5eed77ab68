"""Section 4: the biLM loss, and a training loop that learns, visits every sentence once per
epoch in a seeded order, and repeats exactly.

Each test is an act, which runs the section's code and returns what it computed as data,
and a judge, which checks that data alone (`judged.py`). The acts train with the section's
`train_bilm` (the biLM is the tests' fake) and return what a run did: its losses, the
weights before and after its steps, the batches its model read. A judge computes what it
expects from trusted code (the fakes of `trusted.sections`, this file's loss written out
position by position): the loss of the logits it rebuilds itself, and the gradient of a
training step by the fake biLM's backward pass on the weights the act reports. A training
test measures a step against the section's own `bilm_loss`, whose correctness the loss
tests judge: the act returns that loss's gradient with respect to the biLM's output (what
`bilm_loss` gives, as data), and the judge carries it back through the biLM itself; the
history is compared with the section's own `corpus_loss` of the weights the run left.
"""

import copy
import math
import random
from collections import Counter

import numpy as np
import torch
from hypothesis import strategies as st
from torch.nn import functional as F

from course.diagnose import assert_close

from .devices import mixed_devices
from .judged import judged
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
    """A biLM output of random logits: the act's input, and the judge's own copy of it."""
    g = torch.Generator().manual_seed(seed)
    return bilm.BiLMOutput(layers=torch.zeros(3, *shape, 4),
                           forward_logits=torch.randn(*shape, VOCAB, generator=g),
                           backward_logits=torch.randn(*shape, VOCAB, generator=g))


def loss_data(loss):
    """A loss as data: a tensor (detached), a number, or None for anything else."""
    if isinstance(loss, torch.Tensor):
        return loss.detach()
    return loss if isinstance(loss, int | float) else None


@judged(batch=id_batches(VOCAB, max_batch=4, max_len=7, min_len=2), seed=st.integers(0, 99))
def test_loss_is_forward_plus_backward_cross_entropy(bilm, corpus, pretrain, batch, seed):
    """The loss is the forward CE (t predicts t+1) plus the backward CE (t predicts t-1)."""
    ids, lengths = corpus.pad_batch(batch)
    out = random_output(bilm, ids.shape, seed)
    got = pretrain.bilm_loss(out, ids, lengths)
    scalar = isinstance(got, torch.Tensor) and got.dim() == 0
    return {"loss": loss_data(got), "shown": repr(got),
            "parts": direction_losses(pretrain, out, ids, lengths) if scalar else None}


@test_loss_is_forward_plus_backward_cross_entropy.judge
def _(out, batch, seed, trusted):
    ids, lengths = trusted.sections.corpus.pad_batch(batch)
    logits = random_output(trusted.sections.bilm, ids.shape, seed)
    got, shown, parts = out["loss"], out["shown"], out["parts"]
    want = expected_loss(logits.forward_logits, logits.backward_logits, ids, lengths)
    assert isinstance(got, torch.Tensor) and got.dim() == 0, (
        f"the loss should be a scalar tensor, got {shown}"
    )
    if torch.isclose(got.detach(), want, atol=1e-5, rtol=0):
        return
    mistakes = loss_mistakes(logits.forward_logits, logits.backward_logits, ids, lengths)
    named = next((what for what, value in mistakes.items()
                  if torch.isclose(got.detach(), value, atol=1e-5, rtol=0)), None)
    if named is not None:
        raise AssertionError(f"the loss of this batch is {float(got):.4f}, where forward CE + "
                             f"backward CE is {float(want):.4f}: {named}")
    assert_close(got, want, "the loss (forward CE + backward CE)", atol=1e-5, hint=(
        wrong_directions(parts, logits, ids, lengths) + "; forward logits at t predict "
        "token t+1, backward logits at t predict token t-1, and each direction's mean is over "
        "the real targets of the whole batch"))


def direction_losses(pretrain, out, ids, lengths):
    """The act's half of `wrong_directions`: the loss with the other direction's logits all
    0, for each direction (a float)."""
    probes = {"forward": out._replace(backward_logits=torch.zeros_like(out.backward_logits)),
              "backward": out._replace(forward_logits=torch.zeros_like(out.forward_logits))}
    return {name: float(pretrain.bilm_loss(probe, ids, lengths))
            for name, probe in probes.items()}


def wrong_directions(parts, out, ids, lengths):
    """Which direction's part of the loss is wrong, in words: with one direction's logits
    all 0 (every token equally likely), that direction adds log V to the loss whatever its
    targets, and the loss less log V is the other direction's cross-entropy alone (`parts`,
    the loss of each such probe, from `direction_losses`)."""
    uniform = math.log(VOCAB)
    wants = {"forward": mean(cross_entropies(out.forward_logits, ids, lengths, +1)),
             "backward": mean(cross_entropies(out.backward_logits, ids, lengths, -1))}
    wrong = [f"the {name} part is {parts[name] - uniform:.4f} "
             f"where its mean CE is {float(want):.4f}"
             for name, want in wants.items()
             if abs(parts[name] - uniform - float(want)) > 1e-5]
    return ("; ".join(wrong) if wrong else "each direction alone is right (with the other "
            "direction's logits all 0): how are the two combined?")


PADDED = ("forward", 3), ("forward", 4), ("backward", 3), ("backward", 4)


@judged()
def test_padding_never_counts_in_the_loss(bilm, corpus, pretrain):
    """Changing the logits at padded positions leaves the loss unchanged: sentence 1 has 3
    tokens, so its positions 3 and 4 are padding, in either direction."""
    ids, lengths = corpus.pad_batch([[2, 5, 6, 7, 3], [2, 8, 3]])
    out = random_output(bilm, ids.shape, 0)
    loss = pretrain.bilm_loss(out, ids, lengths)
    noise = 100 * torch.randn(5, 2, VOCAB, generator=torch.Generator().manual_seed(1))
    changed = []
    for direction, t in PADDED:
        logits = getattr(out, f"{direction}_logits").clone()
        logits[t, 1] += noise[t, 1]
        changed.append(pretrain.bilm_loss(out._replace(**{f"{direction}_logits": logits}),
                                          ids, lengths))
    return {"loss": loss, "changed": changed}


@test_padding_never_counts_in_the_loss.judge
def _(out):
    loss = out["loss"]
    counted = []
    for (direction, t), changed in zip(PADDED, out["changed"], strict=True):
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


@judged()
def test_a_sentence_s_last_token_predicts_no_padding(bilm, corpus, pretrain):
    """The forward prediction at a shorter sentence's </s>, whose next token is <pad>, never
    counts: changing its logits leaves the loss unchanged."""
    ids, lengths = corpus.pad_batch([[2, 5, 6, 7, 3], [2, 8, 3]])
    out = random_output(bilm, ids.shape, 0)
    loss = pretrain.bilm_loss(out, ids, lengths)
    changed = out._replace(forward_logits=out.forward_logits.clone())
    changed.forward_logits[2, 1, corpus.PAD] -= 100  # </s> of sentence 1: sure it is no <pad>
    return {"loss": loss, "after": pretrain.bilm_loss(changed, ids, lengths)}


@test_a_sentence_s_last_token_predicts_no_padding.judge
def _(out):
    loss, after = out["loss"], out["after"]
    assert torch.allclose(after, loss), (
        "changing only the forward logits at the last token of sentence 1 (its </s>, at "
        f"position 2, followed by <pad>) changed the loss from {float(loss):.4f} to "
        f"{float(after):.4f}: the forward prediction at t scores token t + 1, and counts only "
        "when that token is real (t + 1 < lengths[b])"
    )


@judged()
def test_the_loss_works_on_the_device_of_its_input(bilm, pretrain):
    """Logits and ids on the meta device, lengths on the CPU: no tensors of two devices mix."""
    ids = torch.zeros(5, 2, dtype=torch.long, device="meta")  # shape-only: no GPU needed
    out = bilm.BiLMOutput(*(torch.empty(*shape, device="meta")
                            for shape in [(3, 5, 2, 4), (5, 2, VOCAB), (5, 2, VOCAB)]))
    return mixed_devices(lambda: pretrain.bilm_loss(out, ids, torch.tensor([5, 3])))


@test_the_loss_works_on_the_device_of_its_input.judge
def _(mixed):
    assert mixed is None, (
        "make the position tensors on the ids' device (torch.arange(..., device=ids.device), "
        f"lengths.to(ids.device)), or the loss fails on a GPU: {mixed}"
    )


@judged()
def test_loss_of_perfect_predictions_is_near_zero(bilm, corpus, pretrain):
    """Logits that put all mass on the right neighbour in each direction give a loss of ~0."""
    ids, lengths = corpus.pad_batch([[2, 5, 6, 3]])
    fwd = torch.full((4, 1, VOCAB), -50.0)
    bwd = torch.full((4, 1, VOCAB), -50.0)
    for t in range(3):
        fwd[t, 0, ids[t + 1, 0]] = 50.0
        bwd[t + 1, 0, ids[t, 0]] = 50.0
    out = bilm.BiLMOutput(torch.zeros(3, 4, 1, 4), fwd, bwd)
    return pretrain.bilm_loss(out, ids, lengths).item()


@test_loss_of_perfect_predictions_is_near_zero.judge
def _(loss):
    assert loss < 1e-6, (
        "logits that put all mass on the right next (forward) and previous (backward) token "
        f"should give a loss of ~0, got {loss:.4f}; are the targets shifted the wrong way?"
    )


@judged()
def test_training_lowers_the_loss(trained):
    """The default recipe on the corpus: the loss ends below 0.6 of where it started."""
    return trained.history


@test_training_lowers_the_loss.judge
def _(history):
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
    """A fresh small biLM (weights from `init_seed`) trained by train_bilm: (model, the
    run as data: its history, whether it `moved` a weight, and the batches its model
    `reads` with gradients on). A run that moves no weight fails the test that asked for it
    (`assert_moved`)."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    setup.set_seed(init_seed)
    model = bilm.BiLM(len(word2idx), **SMALL)
    recorder, start = Recorder(model), weights(model)
    history = pretrain.train_bilm(model, sentences, word2idx, pretrain.Recipe(*recipe),
                                  device="cpu", log_every=0, progress=False, **options)
    return model, {"history": history, "moved": moved(start, model), "reads": recorder.reads}


def assert_moved(run):
    """The judge's half of `train`: the run moved a weight."""
    changed, read = run["moved"], run["reads"]
    assert changed, untrained(read)


def same_weights(a, b):
    """Whether two state_dicts hold the same weights."""
    return all(torch.equal(x, y) for x, y in zip(a.values(), b.values(), strict=True))


@judged()
def test_history_is_the_corpus_loss_after_each_epoch(setup, bilm, corpus, pretrain):
    """3 epochs give 3 floats, the last being corpus_loss of the trained model; 1 epoch, the
    first of them."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    sentences = corpus.CORPUS[:4]
    model, run = train(setup, bilm, corpus, pretrain, sentences, (2, 0.01, 3), seed=3)
    if not run["moved"]:
        return {"run": run}
    one, first = train(setup, bilm, corpus, pretrain, sentences, (2, 0.01, 1), seed=3)
    # the section's own measure of the weights each run left: what the history must hold
    return {"run": run, "final": pretrain.corpus_loss(model, sentences, word2idx),
            "first": first["history"], "after_one": pretrain.corpus_loss(one, sentences, word2idx)}


@test_history_is_the_corpus_loss_after_each_epoch.judge
def _(out):
    assert_moved(out["run"])
    history = out["run"]["history"]
    assert isinstance(history, list) and len(history) == 3, (
        f"3 epochs should give a list of 3 corpus losses, one per epoch; got {history!r}"
    )
    assert all(type(x) is float for x in history), (
        f"each loss should be a python float (float(loss), not a tensor), got {history!r}"
    )
    final = out["final"]
    assert abs(history[-1] - final) < 1e-6, (
        f"the last loss of the history should be corpus_loss of the trained model, {final:.6f}, "
        f"measured after the epoch's last step; got {history[-1]:.6f}"
    )
    first, after_one = out["first"], out["after_one"]
    assert abs(first[0] - after_one) < 1e-6 and abs(history[0] - after_one) < 1e-6, (
        f"history[0] should be the corpus loss after the first epoch, {after_one:.6f}; "
        f"got {history[0]:.6f} (and {first[0]:.6f} from a run of one epoch)"
    )


def recorded_run(setup, bilm, corpus, pretrain, sentences, recipe, seed):
    """A small biLM, handed over in eval mode, trained by train_bilm under a `Recorder`:
    the sentences of its `steps`, their `modes`, the batches its model `reads`, and whether
    it is `training` after the run."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    setup.set_seed(0)
    model = bilm.BiLM(len(word2idx), **SMALL).eval()
    recorder = Recorder(model)
    pretrain.train_bilm(model, sentences, word2idx, pretrain.Recipe(*recipe), seed=seed,
                        device="cpu", log_every=0, progress=False)
    count_the_last_read(recorder)
    return {"steps": recorder.steps, "modes": recorder.modes, "reads": recorder.reads,
            "training": model.training}


def assert_trained(run):
    """The judge's half of `recorded_run`: the run took a step."""
    steps, read = run["steps"], run["reads"]
    assert steps, untrained(read)


def encoded_sentences(trusted, count):
    """The first `count` sentences of the corpus as the trusted section 2 encodes them."""
    corpus = trusted.sections.corpus
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    return [tuple(corpus.encode(s, word2idx, add_boundaries=True))
            for s in corpus.CORPUS[:count]]


@judged()
def test_each_epoch_visits_every_sentence_once_in_batches(setup, bilm, corpus, pretrain):
    """5 sentences, batch 2, 3 epochs: 9 steps of 2, 2, 1 sentences, each epoch all 5 once."""
    return recorded_run(setup, bilm, corpus, pretrain, corpus.CORPUS[:5], (2, 0.01, 3), seed=0)


@test_each_epoch_visits_every_sentence_once_in_batches.judge
def _(run, trusted):
    assert_trained(run)
    encoded = encoded_sentences(trusted, 5)
    sizes = [len(step) for step in run["steps"]]
    assert sizes == [2, 2, 1] * 3, (
        f"5 sentences in batches of 2 make 3 steps per epoch, of 2, 2 and 1 sentences; over 3 "
        f"epochs the training steps had {sizes} sentences"
    )
    for epoch in range(3):
        seen = Counter(s for step in run["steps"][3 * epoch: 3 * epoch + 3] for s in step)
        stranger = next((s for s in seen if s not in encoded), None)
        assert seen == Counter(encoded), (
            f"epoch {epoch + 1} should visit each of the 5 sentences exactly once (BOS ... EOS); "
            + (f"it visited {sorted(seen.values())} times the {len(seen)} sentences it saw"
               if stranger is None else f"it read {list(stranger)}, which is none of them"
               + (": its end is padding (0), so the model read the padded batch without its "
                  "lengths" if stranger[-1] == trusted.sections.corpus.PAD else ""))
        )


@judged()
def test_every_epoch_has_a_new_order(setup, bilm, corpus, pretrain):
    """Batch 1, 4 epochs of 6 sentences: the epochs do not all visit them in one order."""
    return recorded_run(setup, bilm, corpus, pretrain, corpus.CORPUS[:6], (1, 0.01, 4), seed=0)


@test_every_epoch_has_a_new_order.judge
def _(run):
    assert_trained(run)
    orders = [tuple(step[0] for step in run["steps"][6 * e: 6 * e + 6]) for e in range(4)]
    assert len(set(orders)) > 1, (
        "every epoch visited the sentences in the same order: shuffle them afresh for each "
        "epoch, with a generator seeded once by `seed`"
    )


@judged()
def test_training_steps_run_in_training_mode_and_leave_it_so(setup, bilm, corpus, pretrain):
    """A model handed over in eval mode trains in training mode and is left in it."""
    return recorded_run(setup, bilm, corpus, pretrain, corpus.CORPUS[:2], (2, 0.01, 2), seed=0)


@test_training_steps_run_in_training_mode_and_leave_it_so.judge
def _(run):
    assert_trained(run)
    modes = run["modes"]
    assert modes and all(modes), (
        f"the training steps ran with model.training = {modes}: call model.train() "
        "before training"
    )
    assert run["training"], "train_bilm should leave the model in training mode"


@judged()
def test_training_is_deterministic_given_the_seed(setup, bilm, corpus, pretrain):
    """Two runs with one seed from one initialisation give identical losses and weights."""
    runs = []
    for _ in range(2):
        model, run = train(setup, bilm, corpus, pretrain, corpus.CORPUS[:6], (2, 0.01, 2),
                           init_seed=5, seed=5)
        runs.append({**run, "state": dict(model.state_dict())})
        if not run["moved"]:
            break
    return runs


@test_training_is_deterministic_given_the_seed.judge
def _(runs):
    for run in runs:
        assert_moved(run)
    (first, first_state), (second, second_state) = ((run["history"], run["state"])
                                                    for run in runs)
    assert first == second, (
        f"two runs with one seed gave different losses: {first} and {second}"
    )
    assert same_weights(first_state, second_state), "two runs with one seed gave different weights"


SEED_RUNS = [(1, 0), (1, 3), (1, 0), (2, 0), (3, 0)]  # (seed, draws before), in this order


@judged()
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

    return [run(seed, disturb) for seed, disturb in SEED_RUNS]


@test_the_seed_alone_decides_the_order.judge
def _(histories):
    once, after_draws, *seeds = histories  # in SEED_RUNS's order
    assert once == after_draws, (
        "the same seed trained differently after other random draws: shuffle with a "
        "generator seeded by `seed` (or call set_seed(seed) first), not with the global "
        "generators' current state"
    )
    histories = {tuple(history) for history in seeds}
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


def output_gradient(pretrain, model, weights, ids, lengths):
    """The act's half of `gradient`: the gradient of the section's bilm_loss on (ids,
    lengths) with respect to the biLM's output there, at `weights` (layers, forward and
    backward logits, in BiLMOutput's order)."""
    probe = copy.deepcopy(model)
    probe.load_state_dict(weights, strict=False)
    probe.train()
    output = probe(ids, lengths)
    leaves = output._replace(**{name: value.detach().requires_grad_()
                                for name, value in output._asdict().items()})
    pretrain.bilm_loss(leaves, ids, lengths).backward()
    return tuple(x.grad if x.grad is not None else torch.zeros_like(x) for x in leaves)


def gradient(trusted, weights, output_grads, ids, lengths):
    """The gradient of bilm_loss on (ids, lengths) at `weights`, for every parameter: the
    trusted biLM's backward pass at `weights` from `output_grads`, the gradient of the
    section's bilm_loss with respect to the biLM's output (`output_gradient`)."""
    corpus = trusted.sections.corpus
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    with torch.random.fork_rng(devices=[]):  # its initial weights draw from torch's generator
        probe = trusted.sections.bilm.BiLM(len(word2idx), **SMALL)
    probe.load_state_dict(weights, strict=False)
    probe.train()
    torch.autograd.backward(list(probe(ids, lengths)), list(output_grads))
    return {n: p.grad if p.grad is not None else torch.zeros_like(p)
            for n, p in probe.named_parameters()}


TWO_SENTENCES = ["turn right at the river", "he wore a gold watch on his hand"]
LR = 0.02


@judged()
def test_the_first_step_is_adam_with_the_recipes_learning_rate(setup, bilm, corpus, pretrain):
    """Adam's first step moves every weight by the learning rate against the sign of its
    gradient (to within a thousandth of it): the gradient of bilm_loss on the padded batch,
    with the batch's lengths; nothing else moves a weight (no weight decay)."""
    model, snapshots, after, word2idx = stepped(setup, bilm, corpus, pretrain, TWO_SENTENCES,
                                                (2, LR, 1))
    ids, lengths = corpus.pad_batch([corpus.encode(s, word2idx, add_boundaries=True)
                                     for s in TWO_SENTENCES])
    return {"weights": snapshots.weights, "after": after,
            "held": [p.grad for p in model.parameters() if p.grad is not None],
            "output_grads": output_gradient(pretrain, model, snapshots.weights[0], ids, lengths)
            if snapshots.weights else None}


@test_the_first_step_is_adam_with_the_recipes_learning_rate.judge
def _(out, trusted):
    lr = LR
    snapshots, after = out["weights"], out["after"]
    assert len(snapshots) == 1, (
        f"2 sentences in batches of 2 make one training step; there were "
        f"{len(snapshots)}")
    before = snapshots[0]
    if all(torch.equal(after[0][name], weight) for name, weight in before.items()):
        held = out["held"]
        raise AssertionError(
            "no weight moved in the training step: " + (
                "the weights hold gradients, but no optimizer.step() applied them"
                if any(g.abs().sum() > 0 for g in held) else
                "no gradient reached the weights when the step was taken: call "
                "loss.backward() before optimizer.step(), and clear the gradients before the "
                "backward pass, not between it and the step"))
    corpus = trusted.sections.corpus
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    ids, lengths = corpus.pad_batch([corpus.encode(s, word2idx, add_boundaries=True)
                                     for s in TWO_SENTENCES])
    grads = gradient(trusted, before, out["output_grads"], ids, lengths)
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


@judged()
def test_one_optimizer_follows_each_batchs_own_gradient(setup, bilm, corpus, pretrain):
    """Two steps, one per sentence. A word of the first sentence only has no gradient in the
    second step: one Adam kept for the whole run still moves it (its momentum), by less than
    a full step (its gradient is the second batch's alone, not the first's piled up)."""
    model, snapshots, after, _ = stepped(setup, bilm, corpus, pretrain, TWO_SENTENCES,
                                         (1, LR, 1))
    second = snapshots.batches[1] if len(snapshots.batches) > 1 else ()
    return {"weights": snapshots.weights, "batches": snapshots.batches, "after": after,
            "output_grads": output_gradient(pretrain, model, snapshots.weights[1], *second)
            if len(second) == 2 else None}


@test_one_optimizer_follows_each_batchs_own_gradient.judge
def _(out, trusted):
    lr = LR
    snapshots, batches, after = out["weights"], out["batches"], out["after"]
    assert all(len(batch) == 2 for batch in batches), (
        "train_bilm should run the model on each batch's ids and lengths, model(ids, lengths); "
        f"it ran it on {min(map(len, batches))} argument(s)")
    second_ids, second_lengths = batches[1]  # what the run's model read in its second step
    grads = gradient(trusted, snapshots[1], out["output_grads"], second_ids, second_lengths)
    first_moved = {n: after[0][n] - w for n, w in snapshots[0].items()}
    still = {n: (first_moved[n].abs() > 0.5 * lr) & (grads[n] == 0) for n in grads}
    assert sum(int(mask.sum()) for mask in still.values()) > 0, (
        "no weight moved in the first step and had no gradient in the second: the two "
        "steps should train on the two sentences, one each")
    for name, mask in still.items():
        moved = (after[1][name] - snapshots[1][name])[mask].abs()
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


@judged()
def test_one_optimizer_lasts_across_epochs(setup, bilm, corpus, pretrain):
    """Two epochs of two steps, one sentence each. The words of the sentence that the first
    step of epoch 2 does not read have no gradient there, yet the Adam of epoch 1, carried
    over, still moves them (its momentum); an optimizer made afresh for the epoch would not."""
    model, snapshots, after, _ = stepped(setup, bilm, corpus, pretrain, TWO_SENTENCES,
                                         (1, LR, 2))
    third = snapshots.batches[2][:2] if len(snapshots.batches) > 2 else ()
    return {"weights": snapshots.weights, "batches": snapshots.batches, "after": after,
            "output_grads": output_gradient(pretrain, model, snapshots.weights[2], *third)
            if len(third) == 2 else None}


@test_one_optimizer_lasts_across_epochs.judge
def _(out, trusted):
    lr = LR
    snapshots, batches, after = out["weights"], out["batches"], out["after"]
    assert len(snapshots) == 4, (
        f"2 sentences in batches of 1 for 2 epochs make 4 training steps; there were "
        f"{len(snapshots)}")
    first_of_epoch_2 = snapshots[2]
    # the batch that the run's model read in the first step of epoch 2
    grads = gradient(trusted, first_of_epoch_2, out["output_grads"], *batches[2][:2])
    trained = {n: (first_of_epoch_2[n] - snapshots[0][n]).abs() > 0.5 * lr
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


@judged()
def test_train_bilm_moves_each_batch_to_the_models_device(setup, bilm, corpus, pretrain):
    """On the meta device (shapes, no values): each batch goes where the model is, so that a
    GPU run never mixes devices (of a train_bilm that trains, on the CPU)."""
    _, run = train(setup, bilm, corpus, pretrain, corpus.CORPUS[:2], (2, 0.01, 1))
    if not run["moved"]:
        return {"run": run}
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    model = bilm.BiLM(len(word2idx), **SMALL)
    mixed = mixed_devices(lambda: pretrain.train_bilm(
        model, corpus.CORPUS[:2], word2idx, pretrain.Recipe(2, 0.01, 1), device="meta",
        log_every=0, progress=False))
    return {"run": run, "mixed": mixed}


@test_train_bilm_moves_each_batch_to_the_models_device.judge
def _(out):
    assert_moved(out["run"])
    mixed = out["mixed"]
    assert mixed is None, (
        "train_bilm(..., device=d) trains the model on d, so each padded batch must go there "
        f"too (ids.to(device)) before the model reads it, or a GPU run fails: {mixed}"
    )


@judged()
def test_the_device_argument_is_where_it_trains(setup, bilm, corpus, pretrain, monkeypatch):
    """device="cpu" trains on the CPU even where CUDA would be the default."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # CUDA would be the default
    model, run = train(setup, bilm, corpus, pretrain, corpus.CORPUS[:2], (2, 0.01, 1))
    return {"run": run, "device": str(next(model.parameters()).device)}


@test_the_device_argument_is_where_it_trains.judge
def _(out):
    assert_moved(out["run"])
    device = torch.device(out["device"])
    assert device == torch.device("cpu"), (
        f"train_bilm(..., device='cpu') left the model on {device}: pass the device argument "
        "to get_device"
    )


@judged()
def test_the_default_seed_is_0(setup, bilm, corpus, pretrain):
    """train_bilm without a seed trains exactly as with seed=0."""
    runs = []
    for seed in ({}, {"seed": 0}):
        _, run = train(setup, bilm, corpus, pretrain, corpus.CORPUS[:6], (2, 0.01, 2), **seed)
        runs.append(run)
        if not run["moved"]:
            break
    return runs


@test_the_default_seed_is_0.judge
def _(runs):
    for run in runs:
        assert_moved(run)
    histories = [run["history"] for run in runs]
    assert histories[0] == histories[1], (
        f"train_bilm without a seed should train as seed=0: {histories[0]} vs {histories[1]}"
    )


LOGGING = [(True, 1), (False, 2), (False, 0)]  # (progress, log_every), in this order


@judged()
def test_the_progress_bar_and_the_log(setup, bilm, corpus, pretrain, capsys):
    """progress=True shows a bar on stderr; log_every=n prints `epoch N  loss X` every n
    epochs on stdout, with the history's losses; progress=False, log_every=0: silence."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    runs = []
    for progress, log_every in LOGGING:
        setup.set_seed(0)
        history = pretrain.train_bilm(bilm.BiLM(len(word2idx), **SMALL), corpus.CORPUS[:2],
                                      word2idx, pretrain.Recipe(2, 0.01, 3), device="cpu",
                                      progress=progress, log_every=log_every)
        out, err = capsys.readouterr()
        runs.append({"history": history, "out": out, "err": err})
    return runs


@test_the_progress_bar_and_the_log.judge
def _(runs):
    for (progress, log_every), run in zip(LOGGING, runs, strict=True):
        history, out, err = run["history"], run["out"], run["err"]
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
