"""What the corpus and the recipe are for (given data and the reference's experiment, not
learner code): on the reference biLM of seed 0, what held on every seed measured
(docs/results.json, seeds 0-9), and on the untrained biLM it started from, the control,
what did not."""

import math

import pytest
import torch

from analyses import analysis, experiments
from course.pretrained import TRAINING_SEED, pretrained
from tools import reference

REFERENCE = reference()
corpus, pretrain, context = REFERENCE.corpus, REFERENCE.pretrain, REFERENCE.context
SPLITS = {"training": corpus.SENSE_LABELS, "held-out": corpus.HELDOUT_LABELS}


@pytest.fixture(scope="module")
def trained():
    return pretrained(REFERENCE.package)


@pytest.fixture(scope="module")
def comparisons(trained):
    return {name: context.compare_contexts(trained.model, trained.word2idx, labels)
            for name, labels in SPLITS.items()}


@pytest.fixture(scope="module")
def control():
    return experiments.untrained_like(REFERENCE)


def gaps(comparison, word=None):
    return comparison.select(True, word).mean(0) - comparison.select(False, word).mean(0)


def test_the_entropy_floor_of_a_corpus_worked_by_hand():
    # forward: after "<s> a", b or c (ln 2 each), every other step certain; backward alike;
    # each direction's mean is over 3 targets per sentence
    floor = 2 * math.log(2) / 3
    assert analysis.entropy_floor(REFERENCE, ["a b", "a c"]) == pytest.approx(floor)
    assert analysis.entropy_floor(REFERENCE, ["a b", "a c"], ["a b"]) == pytest.approx(floor)
    assert analysis.entropy_floor(REFERENCE, ["a b"], ["a c"]) == math.inf


def test_the_biLM_learns_the_phrases_not_the_sentences(trained):
    by_heart = analysis.entropy_floor(REFERENCE, corpus.CORPUS)
    phrases = analysis.entropy_floor(REFERENCE, corpus.CORPUS + corpus.HELDOUT, corpus.CORPUS)
    held_out = pretrain.corpus_loss(trained.model, corpus.HELDOUT, trained.word2idx)
    assert by_heart < phrases < trained.history[-1] < held_out < phrases + 0.5, (
        by_heart, phrases, trained.history[-1], held_out)


@pytest.mark.parametrize("split", SPLITS)
def test_every_word_tells_its_senses_apart_at_layers_1_and_2(comparisons, split):
    comparison = comparisons[split]
    for word in comparison.words:
        gap = gaps(comparison, word)
        assert abs(float(gap[0])) < 1e-5 and (gap[1:] >= 0.1).all(), f"{word}: {gap.tolist()}"
    pooled = gaps(comparison)
    assert pooled[2] > pooled[1], f"pooled gap per layer {pooled.tolist()}"


def test_different_senses_stay_above_two_different_words(trained, comparisons):
    baseline = analysis.anisotropy_baseline(REFERENCE, trained.model, trained.word2idx)
    different = comparisons["training"].select(False).mean(0)
    assert (different[1:] > baseline[1:] + 0.3).all(), (different.tolist(), baseline.tolist())


@pytest.mark.parametrize("split", SPLITS)
def test_the_nearest_occurrence_has_the_sense_from_layer_1_on(trained, split):
    found = analysis.nearest_sense_accuracy(REFERENCE, trained.model, trained.word2idx,
                                            SPLITS[split])
    for word, reading in found.items():
        assert float(reading.accuracy[0]) == pytest.approx(reading.chance), word
        assert torch.equal(reading.accuracy[1:], torch.ones(2)), (word, reading)


def test_top_predictions_read_each_directions_softmax_around_every_word(trained):
    sentence = "we walked along the bank of the river"
    found = analysis.top_predictions(REFERENCE, trained.model, sentence, trained.word2idx,
                                     trained.idx2word, k=3)
    assert [word for word, _, _ in found] == sentence.split()
    ids = torch.tensor(corpus.encode(sentence, trained.word2idx, add_boundaries=True))
    with torch.no_grad():
        output = trained.model(ids.unsqueeze(1))
    for t, (_, after, before) in enumerate(found, start=1):
        for guesses, logits in ((after, output.forward_logits), (before, output.backward_logits)):
            p = logits[t, 0].softmax(-1)
            assert [trained.word2idx[w] for w, _ in guesses] == p.topk(3).indices.tolist()
            assert [q for _, q in guesses] == pytest.approx(p.topk(3).values.tolist())
    table = analysis.predictions_table(found)
    assert len(table.splitlines()) == len(found) and "<-" in table and "->" in table


def test_the_comparison_table_names_every_word_sense_group_and_layer(comparisons):
    comparison = comparisons["training"]
    lines = analysis.comparison_table(comparison).splitlines()
    assert all(f"layer {k}" in lines[0] for k in range(comparison.num_layers)), lines[0]
    for word in (*comparison.words, "all"):
        for group in ("same sense", "different sense"):
            assert any(line.startswith(word) and group in line for line in lines), (word, group)


def test_the_control_is_the_biLM_that_pre_training_starts_from(trained, control):
    """`untrained_like` is `new_bilm` of the seed, and pre-training it with the default
    recipe gives the cached pre-trained biLM, weight for weight."""
    fresh = experiments.new_bilm(REFERENCE, TRAINING_SEED, control.word2idx)
    start = control.model.state_dict()
    assert all(torch.equal(weight, start[name]) for name, weight in fresh.state_dict().items())
    pretrain.train_bilm(fresh, corpus.CORPUS, control.word2idx, seed=TRAINING_SEED,
                        device="cpu", log_every=0, progress=False)
    for name, weight in trained.model.state_dict().items():
        assert torch.equal(weight, fresh.state_dict()[name]), name
        assert not torch.equal(weight, start[name]), f"{name}: pre-training left it as it was"


def test_the_untrained_biLM_does_not_tell_the_senses_apart(control):
    comparison = context.compare_contexts(control.model, control.word2idx, corpus.HELDOUT_LABELS)
    pooled = gaps(comparison)
    assert (pooled[1:] < 0.1).all(), f"the untrained biLM's pooled gap {pooled.tolist()}"


def test_the_untrained_biLM_already_finds_a_nearest_occurrence_of_the_sense_often(control):
    """Each sense's phrases differ in their words, and an untrained LSTM's states differ with
    them: 1-nearest-neighbour sense accuracy is far above chance before any training, and
    below the trained biLM's 1.0: it is read against this control, not against chance."""
    found = analysis.nearest_sense_accuracy(REFERENCE, control.model, control.word2idx,
                                            corpus.HELDOUT_LABELS)
    accuracy = torch.stack([r.accuracy for r in found.values()]).mean(0)
    chance = sum(r.chance for r in found.values()) / len(found)
    assert (accuracy[1:] > chance + 0.2).all() and (accuracy[1:] < 0.9).all(), (
        accuracy.tolist(), chance)
