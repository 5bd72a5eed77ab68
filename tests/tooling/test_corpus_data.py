"""The toy corpus (given data, not learner code): what sections 6 and 7 rely on."""

from collections import Counter

from tools import reference

corpus = reference().corpus

POLYSEMOUS = ("bank", "play", "right")


def test_corpus_has_at_least_30_sentences():
    assert len(corpus.CORPUS) >= 30, f"expected at least 30 sentences, found {len(corpus.CORPUS)}"


def test_sense_labels_name_a_word_of_their_sentence():
    for sentence, word, sense in corpus.SENSE_LABELS:
        assert word in corpus.tokenize(sentence), f"{word!r} ({sense}) is not in {sentence!r}"
        assert sentence in corpus.CORPUS, f"labelled sentence {sentence!r} is not in CORPUS"


def test_polysemous_words_have_two_senses_three_sentences_each():
    senses = Counter((word, sense) for _, word, sense in corpus.SENSE_LABELS)
    words = {word for word, _ in senses}
    assert set(POLYSEMOUS) <= words and len(words) >= 4, (
        f"expected bank, play, right and at least one more polysemous word, found {sorted(words)}"
    )
    for word in words:
        counts = {sense: n for (w, sense), n in senses.items() if w == word}
        assert len(counts) >= 2, f"{word!r} has only the sense(s) {sorted(counts)}"
        assert min(counts.values()) >= 3, f"{word!r} needs 3 sentences per sense, has {counts}"
