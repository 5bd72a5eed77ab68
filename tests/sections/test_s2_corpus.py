"""Section 2: tokenizing, a deterministic vocabulary, encoding, decoding and padding."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from .strategies import id_batches, plain_corpora, sentences_from, unknown_words


def test_tokenize_lowercases_and_drops_punctuation(corpus):
    """tokenize("Turn RIGHT, at the river!") is ['turn', 'right', 'at', 'the', 'river']."""
    text = "Turn RIGHT, at the river!"
    words = corpus.tokenize(text)
    assert words == ["turn", "right", "at", "the", "river"], (
        f"tokenize({text!r}) should lower-case the text, then keep the words and drop the "
        f"punctuation: expected ['turn', 'right', 'at', 'the', 'river'], got {words}"
    )


@pytest.mark.parametrize("text, expected", [
    ("Don't swim", ["don't", "swim"]),
    ("it's 2 o'clock", ["it's", "2", "o'clock"]),
    ("co-op's rule.", ["co", "op's", "rule"]),
    ("  the\triver\nbank  ", ["the", "river", "bank"]),
], ids=["contraction", "digits", "hyphen", "whitespace"])
def test_tokenize_keeps_contractions_and_digits_and_splits_at_hyphens(corpus, text, expected):
    """A word is a run of letters, digits and apostrophes; anything else separates words."""
    words = corpus.tokenize(text)
    assert words == expected, (
        f"tokenize({text!r}) should be {expected} (a word is a run of letters, digits and "
        f"apostrophes, as _WORD matches), got {words}"
    )


def test_special_tokens_have_fixed_indices(corpus):
    """<pad>, <unk>, <s>, </s> are indices 0, 1, 2, 3 in both mappings."""
    word2idx, idx2word = corpus.build_vocab(corpus.CORPUS)
    for index, token in enumerate(corpus.SPECIAL_TOKENS):
        found = word2idx.get(token)
        assert found == index, f"word2idx[{token!r}] should be {index}, is {found}"
        assert idx2word.get(index) == token, (
            f"idx2word[{index}] should be {token!r}, is {idx2word.get(index)!r}"
        )


@given(st.data())
def test_vocabulary_is_complete_and_inverse(corpus, data):
    """Every word once, indices 0..V-1, and idx2word inverts word2idx."""
    sentences = data.draw(plain_corpora)
    word2idx, idx2word = corpus.build_vocab(sentences)
    words = {w for s in sentences for w in corpus.tokenize(s)}
    assert words <= set(word2idx), f"missing words: {sorted(words - set(word2idx))}"
    assert sorted(word2idx.values()) == list(range(len(word2idx))), (
        f"the indices should be 0..{len(word2idx) - 1}, each once; got "
        f"{sorted(word2idx.values())}"
    )
    assert len(word2idx) == len(words | set(corpus.SPECIAL_TOKENS)), (
        f"expected the 4 special tokens and the {len(words)} distinct words, each exactly "
        f"once; word2idx has {len(word2idx)} entries"
    )
    wrong = {i: w for w, i in word2idx.items() if idx2word.get(i) != w}
    assert not wrong, f"idx2word must invert word2idx; it does not at indices {sorted(wrong)}"


def test_the_vocabulary_holds_the_words_that_tokenize_gives(corpus):
    """Sentences with capitals and punctuation give lower-case words without punctuation."""
    word2idx, _ = corpus.build_vocab(["Turn RIGHT, at the river!", "The river's bank."])
    words = sorted(set(word2idx) - set(corpus.SPECIAL_TOKENS))
    expected = ["at", "bank", "right", "river", "river's", "the", "turn"]
    assert words == expected, (
        f"build_vocab should split each sentence with tokenize: expected the words "
        f"{expected}, found {words}"
    )


@given(st.data())
def test_vocabulary_does_not_depend_on_sentence_order(corpus, data):
    """The same sentences in another order give the same numbering."""
    sentences = data.draw(plain_corpora)
    shuffled = data.draw(st.permutations(sentences))
    assert corpus.build_vocab(shuffled) == corpus.build_vocab(sentences), (
        "the same sentences in another order gave another numbering: "
        "number the words in sorted order, not in the order they were met nor in a set's"
    )


@given(sentences=plain_corpora)
def test_words_are_numbered_in_sorted_order(corpus, sentences):
    """After the four special tokens, the words take indices 4, 5, ... in sorted order."""
    word2idx, idx2word = corpus.build_vocab(sentences)
    words = [idx2word[i] for i in range(len(corpus.SPECIAL_TOKENS), len(idx2word))]
    assert words == sorted(words), (
        f"after the special tokens, the words should be numbered in sorted order, found {words}; "
        "neither the order the words were met nor a set's is sorted (and a set's changes from "
        "one run to the next: hash randomisation)"
    )


@given(st.data())
def test_encode_then_decode_gives_the_words_back(corpus, data):
    """decode(encode(s)) == tokenize(s) for a sentence of known words; encode gives ints."""
    word2idx, idx2word = corpus.build_vocab(corpus.CORPUS)
    sentence = data.draw(sentences_from(set(word2idx) - set(corpus.SPECIAL_TOKENS)))
    ids = corpus.encode(sentence, word2idx)
    assert isinstance(ids, list) and all(isinstance(i, int) for i in ids), (
        f"encode should return a list of ints, got {ids!r}"
    )
    assert ids == [word2idx[w] for w in corpus.tokenize(sentence)], (
        f"encode({sentence!r}) should give each word's index in order, got {ids}"
    )
    words = corpus.decode(ids, idx2word)
    assert words == corpus.tokenize(sentence), (
        f"decode(encode(s)) should give the words of s back as a list, "
        f"{corpus.tokenize(sentence)}; got {words!r}"
    )
    wrapped = corpus.decode([corpus.BOS, *ids, corpus.EOS], idx2word)
    assert wrapped == ["<s>", *words, "</s>"], (
        f"decode gives every index its word, the special tokens too: expected "
        f"{['<s>', *words, '</s>']}, got {wrapped!r}"
    )


def test_encode_tokenizes_a_string_as_tokenize_does(corpus):
    """Text with capitals and punctuation encodes as the words that tokenize gives."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    sentence = "The bank, by the river, was steep!"
    words = corpus.tokenize(sentence)
    ids = corpus.encode(sentence, word2idx)
    expected = [word2idx.get(w, corpus.UNK) for w in words]
    pieces = sentence.split()  # what str.split gives: "The", "bank,", ...
    unknown = [w for w, i in zip(pieces, ids, strict=True) if i == corpus.UNK] \
        if len(ids) == len(pieces) else []
    assert ids == expected, (
        f"encode({sentence!r}) should encode the words that tokenize gives, {words}, as "
        f"{expected}; got {ids}" + (f", where {unknown} became <unk>" if unknown else "")
        + ": split a string with tokenize (lower-cased, punctuation dropped), not str.split"
    )


@given(word=unknown_words)
def test_unknown_word_becomes_unk(corpus, word):
    """A word outside the vocabulary encodes as <unk> (index 1), in its place."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    try:
        ids = corpus.encode(f"the {word} bank", word2idx)
    except KeyError as err:
        pytest.fail(f"encode raised KeyError {err} for a word outside the vocabulary; "
                    "an unknown word must map to <unk> (index 1), not raise")
    expected = [word2idx["the"], corpus.UNK, word2idx["bank"]]
    assert ids == expected, (
        f"encode('the {word} bank') should be {expected}: an unknown word maps to <unk> "
        f"(index 1) in its place; got {ids}"
    )


def test_encode_adds_boundaries_on_request(corpus):
    """add_boundaries=True wraps the ids in <s> ... </s>; a list of words encodes too."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    plain = corpus.encode("turn right", word2idx)
    wrapped = corpus.encode("turn right", word2idx, add_boundaries=True)
    assert wrapped == [corpus.BOS, *plain, corpus.EOS], (
        f"with boundaries: <s> (BOS, 2) first, </s> (EOS, 3) last; expected "
        f"{[corpus.BOS, *plain, corpus.EOS]}, got {wrapped}"
    )
    listed = corpus.encode(["turn", "right"], word2idx)
    assert listed == plain, (
        f"a list of words encodes like the sentence: expected {plain}, got {listed}"
    )


@given(batch=id_batches(50, max_batch=5, max_len=7))
def test_pad_batch_is_time_major_and_pads_at_the_end(corpus, batch):
    """(max_len, B) long ids, each column a sequence from row 0 then <pad>; (B,) lengths."""
    ids, lengths = corpus.pad_batch(batch)
    longest = max(len(seq) for seq in batch)
    assert isinstance(ids, torch.Tensor) and ids.dtype == torch.long, (
        f"ids should be a LongTensor, got {type(ids).__name__} {getattr(ids, 'dtype', '')}"
    )
    assert isinstance(lengths, torch.Tensor) and lengths.dtype == torch.long, (
        f"lengths should be a LongTensor, got {lengths!r}"
    )
    assert ids.shape == (longest, len(batch)), (
        f"expected (max_len, batch) = ({longest}, {len(batch)}), got {tuple(ids.shape)}"
    )
    for column, seq in enumerate(batch):
        expected = [*seq, *[corpus.PAD] * (longest - len(seq))]
        assert ids[:, column].tolist() == expected, (
            f"column {column} should be its sequence from row 0, then <pad> (0): expected "
            f"{expected}, got {ids[:, column].tolist()}"
        )
    assert lengths.tolist() == [len(seq) for seq in batch], (
        f"lengths should be {[len(seq) for seq in batch]}, got {lengths.tolist()}"
    )
