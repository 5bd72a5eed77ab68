"""The toy probing tasks of section 7 (given data and helpers, not learner code)."""

import pytest

from course.pretrained import pretrained
from tools import reference

REFERENCE = reference()
corpus, layer_weights = REFERENCE.corpus, REFERENCE.layer_weights


@pytest.fixture(scope="module")
def tasks():
    trained = pretrained(REFERENCE.package)
    return (layer_weights.word_class_task(trained.model, trained.word2idx),
            layer_weights.sense_task(trained.model, trained.word2idx))


def test_word_classes_are_corpus_words_and_never_a_target_word():
    words = {w for sentence in corpus.CORPUS for w in corpus.tokenize(sentence)}
    targets = {word for _, word, _ in corpus.SENSE_LABELS}
    listed = [w for members in layer_weights.WORD_CLASSES.values() for w in members]
    assert len(listed) == len(set(listed)), "a word is listed in two classes"
    assert set(listed) <= words, f"not in the corpus: {sorted(set(listed) - words)}"
    assert not set(listed) & targets, f"polysemous targets listed: {set(listed) & targets}"


def test_word_class_task_holds_out_whole_word_types(tasks):
    task = tasks[0]
    assert task.layers.shape[0] == 3 and task.layers.shape[1:] == (len(task.tokens), 512)
    assert set(task.classes) == set(layer_weights.WORD_CLASSES)
    for fold in range(layer_weights.NUM_FOLDS):
        held_out = {w for w, f in zip(task.tokens, task.folds.tolist(), strict=True) if f == fold}
        seen = {w for w, f in zip(task.tokens, task.folds.tolist(), strict=True) if f != fold}
        assert held_out and not held_out & seen, f"fold {fold} shares types {held_out & seen}"
        assert set(task.labels[task.folds != fold].tolist()) == set(range(len(task.classes)))


def test_sense_task_holds_out_one_sentence_of_every_sense(tasks):
    task = tasks[1]
    assert task.layers.shape == (3, 32, 512) and len(task.classes) == 8
    for fold in range(layer_weights.NUM_FOLDS):
        labels = sorted(task.labels[task.folds == fold].tolist())
        assert labels == list(range(8)), f"fold {fold} holds senses {labels}"
