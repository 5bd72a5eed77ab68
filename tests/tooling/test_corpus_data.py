"""The toy corpus (`course.corpus`, given data, not learner code): what sections 6 and 7 rely
on, and that section 2 re-exports it."""

from collections import Counter

from course import corpus as data
from tools import reference

corpus = reference().corpus

POLYSEMOUS = ("bank", "play", "right", "watch")


def test_every_sense_has_four_openings_and_four_endings_of_its_own():
    assert {word for word, _ in corpus.SENSE_PHRASES} == set(POLYSEMOUS)
    assert Counter(word for word, _ in corpus.SENSE_PHRASES) == dict.fromkeys(POLYSEMOUS, 2)
    phrases = [p for openings, endings in corpus.SENSE_PHRASES.values()
               for p in (*openings, *endings)]
    assert len(phrases) == len(set(phrases)), "a phrase belongs to one sense only"
    for (word, sense), (openings, endings) in corpus.SENSE_PHRASES.items():
        assert len(openings) == len(endings) == 4, f"{word}: {sense}"
        assert all(word not in corpus.tokenize(p) for p in (*openings, *endings)), (
            f"{word}: {sense}: the target word occurs once, between opening and ending")


def test_opening_k_with_ending_k_is_held_out_and_every_other_pair_trains():
    assert len(corpus.CORPUS) == 96 and len(corpus.HELDOUT) == 32
    assert not set(corpus.CORPUS) & set(corpus.HELDOUT)
    assert corpus.CORPUS == tuple(s for s, _, _ in corpus.SENSE_LABELS)
    assert corpus.HELDOUT == tuple(s for s, _, _ in corpus.HELDOUT_LABELS)
    for sentence, word, sense in corpus.SENSE_LABELS + corpus.HELDOUT_LABELS:
        k, j = corpus.PHRASES_OF[sentence]
        openings, endings = corpus.SENSE_PHRASES[word, sense]
        assert sentence == f"{openings[k]} {word} {endings[j]}"
        assert (k == j) == (sentence in corpus.HELDOUT)


def test_training_sees_every_word_and_every_phrase_of_the_held_out_sentences():
    trained = {w for s in corpus.CORPUS for w in corpus.tokenize(s)}
    held_out = {w for s in corpus.HELDOUT for w in corpus.tokenize(s)}
    assert held_out <= trained, f"words only held out: {sorted(held_out - trained)}"
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    assert len(word2idx) == len(trained) + len(corpus.SPECIAL_TOKENS)
    for sentence, word, sense in corpus.HELDOUT_LABELS:
        k, j = corpus.PHRASES_OF[sentence]
        openings, endings = corpus.SENSE_PHRASES[word, sense]
        assert any(s.startswith(f"{openings[k]} {word} ") for s in corpus.CORPUS), sentence
        assert any(s.endswith(f" {word} {endings[j]}") for s in corpus.CORPUS), sentence


def test_sense_labels_name_a_word_of_their_sentence():
    for sentence, word, sense in corpus.SENSE_LABELS + corpus.HELDOUT_LABELS:
        assert corpus.tokenize(sentence).count(word) == 1, f"{word!r} ({sense}) in {sentence!r}"


def test_section_2_re_exports_the_sentences_and_their_labels():
    for name in ("CORPUS", "HELDOUT", "SENSE_LABELS", "HELDOUT_LABELS", "SENSE_PHRASES",
                 "PHRASES_OF"):
        assert getattr(corpus, name) is getattr(data, name), name


def test_the_relatives_of_unseen_words_are_words_of_the_corpus_and_the_words_are_not():
    words = {w for s in corpus.CORPUS for w in corpus.tokenize(s)}
    for unseen, relative in data.UNSEEN_RELATIVES:
        assert unseen not in words and relative in words, (unseen, relative)
