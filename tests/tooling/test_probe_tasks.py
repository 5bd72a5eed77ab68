"""The toy probing tasks of section 7 (given data and helpers, not learner code): their
folds are fair, and on the reference biLM (seed 0) they show what held on every seed
measured (docs/analysis.md)."""

import pytest
import torch

from analyses import analysis, experiments
from course.corpus import WORD_CLASSES
from course.pretrained import pretrained
from tools import reference

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)

REFERENCE = reference()
corpus = REFERENCE.corpus


@pytest.fixture(scope="module")
def tasks():
    trained = pretrained(REFERENCE.package)
    return (analysis.word_class_task(REFERENCE, trained.model, trained.word2idx),
            analysis.sense_task(REFERENCE, trained.model, trained.word2idx))


@pytest.fixture(scope="module")
def results(tasks):
    return [analysis.evaluate_task(REFERENCE, task, seed=0) for task in tasks]


def test_word_classes_are_corpus_words_and_never_a_target_word():
    words = {w for sentence in corpus.CORPUS for w in corpus.tokenize(sentence)}
    targets = {word for _, word, _ in corpus.SENSE_LABELS}
    listed = [w for members in WORD_CLASSES.values() for w in members]
    assert len(listed) == len(set(listed)), "a word is listed in two classes"
    assert set(listed) <= words, f"not in the corpus: {sorted(set(listed) - words)}"
    assert not set(listed) & targets, f"polysemous targets listed: {set(listed) & targets}"


def test_every_fold_is_scored_once_by_a_probe_that_never_trained_on_it(tasks):
    for task in tasks:
        n = len(task.labels)
        assert task.layers.shape == (3, n, 512) and task.train_on.shape == (4, n)
        assert sorted(set(task.folds.tolist())) == list(range(analysis.NUM_FOLDS))
        for fold in range(analysis.NUM_FOLDS):
            assert not (task.train_on[fold] & (task.folds == fold)).any(), task.name
            trained_on = set(task.labels[task.train_on[fold]].tolist())
            assert trained_on == set(range(len(task.classes))), f"{task.name}, fold {fold}"


def test_word_class_task_holds_out_whole_word_types(tasks):
    task = tasks[0]
    assert set(task.classes) == set(WORD_CLASSES)
    for fold in range(analysis.NUM_FOLDS):
        held_out = {w for w, f in zip(task.tokens, task.folds.tolist(), strict=True) if f == fold}
        seen = {w for w, t in zip(task.tokens, task.train_on[fold].tolist(), strict=True) if t}
        assert held_out and not held_out & seen, f"fold {fold} shares types {held_out & seen}"
    assert task.chance == max(torch.bincount(task.labels).tolist()) / len(task.labels)


def test_sense_task_never_scores_a_phrase_its_probe_trained_on(tasks):
    task = tasks[1]
    labels = corpus.SENSE_LABELS + corpus.HELDOUT_LABELS
    assert len(task.labels) == len(labels) == 128 and len(task.classes) == 8
    for fold in range(analysis.NUM_FOLDS):
        scored = [labels[i] for i in (task.folds == fold).nonzero().flatten().tolist()]
        trained = [labels[i] for i in task.train_on[fold].nonzero().flatten().tolist()]
        for sentence, word, sense in scored:
            k, j = corpus.PHRASES_OF[sentence]
            for other, other_word, other_sense in trained:
                if (other_word, other_sense) == (word, sense):
                    ok, oj = corpus.PHRASES_OF[other]
                    assert ok != k and oj != j, f"{sentence!r} and {other!r} share a phrase"
        counts = torch.bincount(task.labels[task.folds == fold], minlength=8)
        assert (counts == counts[0]).all(), f"fold {fold} holds the senses unequally: {counts}"
    assert task.chance == 0.5


def test_layer_0_scores_exactly_the_sense_tasks_chance(results):
    assert float(results[1].layer_accuracy[0]) == 0.5


def test_the_sense_task_weighs_layer_0_least_and_the_word_class_task_layer_2_least(results):
    word_class, sense = (result.weights for result in results)
    assert word_class.argmin() == 2, f"word-class weights {word_class.tolist()}"
    assert sense.argmin() == 0, f"word-sense weights {sense.tolist()}"
    assert sense[2] / sense[1] > word_class[2] / word_class[1]


def test_both_tasks_are_above_chance_and_the_sense_task_nearly_perfect(results):
    word_class, sense = results
    assert word_class.accuracy > word_class.chance + 0.1, word_class.accuracy
    assert sense.accuracy > 0.95, sense.accuracy


def test_an_untrained_biLM_reads_the_sense_less_well_but_above_chance(results):
    """The control of the sense task: the untrained biLM of the same seed. Its layers 1 and
    2 also change with the context, so its probes beat chance there, but they stay well
    below the trained biLM's."""
    control = experiments.untrained_like(REFERENCE)
    untrained = analysis.evaluate_task(
        REFERENCE, analysis.sense_task(REFERENCE, control.model, control.word2idx), seed=0)
    trained = results[1]
    assert float(untrained.layer_accuracy[0]) == 0.5
    for layer in (1, 2):
        assert 0.55 < untrained.layer_accuracy[layer] < trained.layer_accuracy[layer] - 0.2, (
            untrained.layer_accuracy.tolist(), trained.layer_accuracy.tolist())
