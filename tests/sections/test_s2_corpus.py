"""Section 2: the toy corpus, a deterministic vocabulary, encoding and padding."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from .strategies import plain_corpora, sentences_from, unknown_words


def test_vocabulary_is_small(corpus):
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    assert 50 <= len(word2idx) <= 100, f"the seed asks for ~50-80 words, found {len(word2idx)}"


def test_tokenize_rejects_what_is_not_text(corpus):
    with pytest.raises(TypeError, match="int"):
        corpus.tokenize(5)


def test_tokenize_lowercases_and_drops_punctuation(corpus):
    words = corpus.tokenize("Turn RIGHT, at the river!")
    assert words == ["turn", "right", "at", "the", "river"], (
        "tokenize should lower-case the text, then keep the words and drop the punctuation"
    )


def test_special_tokens_have_fixed_indices(corpus):
    word2idx, idx2word = corpus.build_vocab(corpus.CORPUS)
    for index, token in enumerate(corpus.SPECIAL_TOKENS):
        found = word2idx.get(token)
        assert found == index, f"{token} should be index {index}, is {found}"
        assert idx2word[index] == token
    assert (corpus.PAD, corpus.UNK, corpus.BOS, corpus.EOS) == (0, 1, 2, 3)


@given(st.data())
def test_vocabulary_is_complete_and_inverse(corpus, data):
    sentences = data.draw(plain_corpora)
    word2idx, idx2word = corpus.build_vocab(sentences)
    words = {w for s in sentences for w in corpus.tokenize(s)}
    assert words <= set(word2idx), f"missing words: {sorted(words - set(word2idx))}"
    assert sorted(word2idx.values()) == list(range(len(word2idx))), "indices must be 0..V-1"
    assert len(word2idx) == len(words | set(corpus.SPECIAL_TOKENS)), "each word exactly once"
    assert all(idx2word[i] == w for w, i in word2idx.items()), "idx2word must invert word2idx"


@given(st.data())
def test_vocabulary_does_not_depend_on_sentence_order(corpus, data):
    sentences = data.draw(plain_corpora)
    shuffled = data.draw(st.permutations(sentences))
    assert corpus.build_vocab(shuffled) == corpus.build_vocab(sentences), (
        "the same sentences in another order gave another numbering: "
        "number the words in sorted order, not in the order of a set"
    )


@given(sentences=plain_corpora)
def test_words_are_numbered_in_sorted_order(corpus, sentences):
    word2idx, idx2word = corpus.build_vocab(sentences)
    words = [idx2word[i] for i in range(len(corpus.SPECIAL_TOKENS), len(idx2word))]
    assert words == sorted(words), (
        f"after the special tokens, the words should be numbered in sorted order, found {words}; "
        "the order of a set changes from one run to the next (hash randomisation)"
    )


@given(st.data())
def test_encode_then_decode_gives_the_words_back(corpus, data):
    word2idx, idx2word = corpus.build_vocab(corpus.CORPUS)
    sentence = data.draw(sentences_from(set(word2idx) - set(corpus.SPECIAL_TOKENS)))
    ids = corpus.encode(sentence, word2idx)
    assert all(isinstance(i, int) for i in ids), f"encode should return ints, got {ids!r}"
    assert corpus.decode(ids, idx2word) == corpus.tokenize(sentence)


@given(word=unknown_words)
def test_unknown_word_becomes_unk(corpus, word):
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    try:
        ids = corpus.encode(f"the {word} bank", word2idx)
    except KeyError as err:
        pytest.fail(f"encode raised KeyError {err} for a word outside the vocabulary; "
                    "an unknown word must map to <unk> (index 1), not raise")
    assert ids == [word2idx["the"], corpus.UNK, word2idx["bank"]], (
        "an unknown word must map to <unk> (index 1)"
    )


def test_encode_adds_boundaries_on_request(corpus):
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    plain = corpus.encode("turn right", word2idx)
    assert corpus.encode("turn right", word2idx, add_boundaries=True) == [
        corpus.BOS, *plain, corpus.EOS], "with boundaries: <s> (BOS) first, </s> (EOS) last"
    assert corpus.encode(["turn", "right"], word2idx) == plain, "a list of words encodes too"


def test_pad_batch_pads_at_the_end(corpus):
    ids, lengths = corpus.pad_batch([[5, 6, 7], [8]])
    assert ids.dtype == torch.long and lengths.dtype == torch.long
    assert ids.shape == (3, 2), f"expected (max_len, batch) = (3, 2), got {tuple(ids.shape)}"
    assert ids.tolist() == [[5, 8], [6, corpus.PAD], [7, corpus.PAD]], (
        "each column is one sentence from row 0, with <pad> after its end"
    )
    assert lengths.tolist() == [3, 1]


@pytest.mark.parametrize("bad", [[], ()])
def test_empty_corpus_is_a_clear_error(corpus, bad):
    with pytest.raises(ValueError, match="empty"):
        corpus.build_vocab(bad)


def test_one_string_is_not_a_corpus(corpus):
    with pytest.raises(TypeError, match="single str"):
        corpus.build_vocab("turn right at the river")


def test_corpus_without_words_is_a_clear_error(corpus):
    with pytest.raises(ValueError, match="no words"):
        corpus.build_vocab(["...", "  "])


def test_empty_sentence_is_a_clear_error(corpus):
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    with pytest.raises(ValueError, match="empty"):
        corpus.encode("", word2idx)


def test_decode_takes_a_tensor_of_ids(corpus):
    word2idx, idx2word = corpus.build_vocab(corpus.CORPUS)
    ids = corpus.encode("turn right at the river", word2idx)
    assert corpus.decode(torch.tensor(ids), idx2word) == corpus.decode(ids, idx2word), (
        "a LongTensor of ids (as a model gives them) should decode like a list of ints"
    )


def test_decoding_an_unknown_index_is_a_clear_error(corpus):
    _, idx2word = corpus.build_vocab(corpus.CORPUS)
    with pytest.raises(ValueError, match=str(len(idx2word))):
        corpus.decode([4, len(idx2word)], idx2word)


def test_pad_batch_rejects_empty_input(corpus):
    with pytest.raises(ValueError, match="at least one"):
        corpus.pad_batch([])
    with pytest.raises(ValueError, match="empty"):
        corpus.pad_batch([[4], []])
