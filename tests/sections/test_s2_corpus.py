"""Section 2: tokenizing, a deterministic vocabulary, encoding, decoding and padding.

Each test is an act, which runs the section's code and returns what it computed as data, and
a judge, which checks that data alone (`judged.py`). The judges take the section's given
constants (the special tokens and their indices) from the course's fake of section 2, which
holds them as the section does.
"""

import pytest
import torch
from hypothesis import strategies as st

from course.corpus import CORPUS

from .fakes.s2_corpus import BOS, EOS, PAD, SPECIAL_TOKENS, UNK
from .fakes.s2_corpus import tokenize as course_tokenize
from .judged import NotData, judged, to_plain
from .strategies import id_batches, plain_corpora, unknown_words

#: the corpus's words, as the course tokenizes them
CORPUS_WORDS = sorted({word for sentence in CORPUS for word in course_tokenize(sentence)})


class Shown:
    """What the section's code returned that is no data (a generator, a map), as a judge sees
    it: its repr, and the items it gave, if it was iterable. Like it, it equals no list."""

    def __init__(self, text: str, items: list | None) -> None:
        self.text, self.items = text, items

    def __repr__(self) -> str:
        return self.text

    def __iter__(self):
        if self.items is None:
            raise TypeError(f"{self.text} is not iterable")
        return iter(self.items)


def sent(value) -> dict:
    """What the section's code returned, as the act sends it: as it is where it is data (a
    list, a str, a tensor), else its repr and, if it is iterable, its items (`Shown`), so
    that the judge's comparisons fail as they would of the object itself. The judge reads it
    with `received`."""
    try:
        to_plain(value)
    except NotData:
        text = repr(value)
        try:
            items = list(value)
        except TypeError:
            items = None
        return {"repr": text, "items": items}
    return {"value": value}


def received(data: dict):
    """The value that `sent` sent: itself, or `Shown`."""
    return data["value"] if "value" in data else Shown(data["repr"], data["items"])


def vocab_data(vocab) -> dict:
    """build_vocab's (word2idx, idx2word) as data: each mapping as its (key, value) pairs in
    its order (a dict of data has str keys only, and idx2word's are ints)."""
    word2idx, idx2word = vocab
    return {"word2idx": list(word2idx.items()), "idx2word": list(idx2word.items())}


def vocab_of(data: dict) -> tuple[dict, dict]:
    """(word2idx, idx2word) again, from `vocab_data`'s data."""
    return dict(data["word2idx"]), dict(data["idx2word"])


TEXT = "Turn RIGHT, at the river!"


@judged()
def test_tokenize_lowercases_and_drops_punctuation(corpus):
    """tokenize("Turn RIGHT, at the river!") is ['turn', 'right', 'at', 'the', 'river']."""
    return {"words": sent(corpus.tokenize(TEXT))}


@test_tokenize_lowercases_and_drops_punctuation.judge
def _(out):
    text, words = TEXT, received(out["words"])
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
@judged()
def test_tokenize_keeps_contractions_and_digits_and_splits_at_hyphens(corpus, text, expected):
    """A word is a run of letters, digits and apostrophes; anything else separates words."""
    return {"words": sent(corpus.tokenize(text))}


@test_tokenize_keeps_contractions_and_digits_and_splits_at_hyphens.judge
def _(out, text, expected):
    words = received(out["words"])
    assert words == expected, (
        f"tokenize({text!r}) should be {expected} (a word is a run of letters, digits and "
        f"apostrophes, as _WORD matches), got {words}"
    )


@judged()
def test_special_tokens_have_fixed_indices(corpus):
    """<pad>, <unk>, <s>, </s> are indices 0, 1, 2, 3 in both mappings."""
    return vocab_data(corpus.build_vocab(corpus.CORPUS))


@test_special_tokens_have_fixed_indices.judge
def _(out):
    word2idx, idx2word = vocab_of(out)
    for index, token in enumerate(SPECIAL_TOKENS):
        found = word2idx.get(token)
        assert found == index, f"word2idx[{token!r}] should be {index}, is {found}"
        assert idx2word.get(index) == token, (
            f"idx2word[{index}] should be {token!r}, is {idx2word.get(index)!r}"
        )


@judged(sentences=plain_corpora)
def test_vocabulary_is_complete_and_inverse(corpus, sentences):
    """Every word once, indices 0..V-1, and idx2word inverts word2idx."""
    vocab = corpus.build_vocab(sentences)
    return {"vocab": vocab_data(vocab),
            "tokenized": [list(corpus.tokenize(s)) for s in sentences]}  # each one's words


@test_vocabulary_is_complete_and_inverse.judge
def _(out):
    word2idx, idx2word = vocab_of(out["vocab"])
    words = {w for tokens in out["tokenized"] for w in tokens}
    assert words <= set(word2idx), f"missing words: {sorted(words - set(word2idx))}"
    assert sorted(word2idx.values()) == list(range(len(word2idx))), (
        f"the indices should be 0..{len(word2idx) - 1}, each once; got "
        f"{sorted(word2idx.values())}"
    )
    assert len(word2idx) == len(words | set(SPECIAL_TOKENS)), (
        f"expected the 4 special tokens and the {len(words)} distinct words, each exactly "
        f"once; word2idx has {len(word2idx)} entries"
    )
    wrong = {i: w for w, i in word2idx.items() if idx2word.get(i) != w}
    assert not wrong, f"idx2word must invert word2idx; it does not at indices {sorted(wrong)}"


@judged()
def test_the_vocabulary_holds_the_words_that_tokenize_gives(corpus):
    """Sentences with capitals and punctuation give lower-case words without punctuation."""
    return vocab_data(corpus.build_vocab(["Turn RIGHT, at the river!", "The river's bank."]))


@test_the_vocabulary_holds_the_words_that_tokenize_gives.judge
def _(out):
    word2idx, _ = vocab_of(out)
    words = sorted(set(word2idx) - set(SPECIAL_TOKENS))
    expected = ["at", "bank", "right", "river", "river's", "the", "turn"]
    assert words == expected, (
        f"build_vocab should split each sentence with tokenize: expected the words "
        f"{expected}, found {words}"
    )


#: a corpus, and the same sentences in another order
two_orders = plain_corpora.flatmap(
    lambda sentences: st.tuples(st.just(sentences), st.permutations(sentences)))


@judged(orders=two_orders)
def test_vocabulary_does_not_depend_on_sentence_order(corpus, orders):
    """The same sentences in another order give the same numbering."""
    sentences, shuffled = orders
    return {"shuffled": vocab_data(corpus.build_vocab(shuffled)),
            "sentences": vocab_data(corpus.build_vocab(sentences))}


@test_vocabulary_does_not_depend_on_sentence_order.judge
def _(out):
    assert vocab_of(out["shuffled"]) == vocab_of(out["sentences"]), (
        "the same sentences in another order gave another numbering: "
        "number the words in sorted order, not in the order they were met nor in a set's"
    )


@judged(sentences=plain_corpora)
def test_words_are_numbered_in_sorted_order(corpus, sentences):
    """After the four special tokens, the words take indices 4, 5, ... in sorted order."""
    return vocab_data(corpus.build_vocab(sentences))


@test_words_are_numbered_in_sorted_order.judge
def _(out):
    word2idx, idx2word = vocab_of(out)
    words = [idx2word[i] for i in range(len(SPECIAL_TOKENS), len(idx2word))]
    assert words == sorted(words), (
        f"after the special tokens, the words should be numbered in sorted order, found {words}; "
        "neither the order the words were met nor a set's is sorted (and a set's changes from "
        "one run to the next: hash randomisation)"
    )


#: a sentence of 1-9 words, as their positions among the corpus's words: the act and the
#: judge read them among the words of the vocabulary that build_vocab made (`sentence_at`),
#: so that it is a sentence of words that vocabulary knows, whichever it is
word_positions = st.lists(st.integers(0, len(CORPUS_WORDS) - 1), min_size=1, max_size=9)


def sentence_at(positions: list[int], word2idx: dict) -> str:
    """The words at `positions` among those of `word2idx` but the special tokens, sorted
    (each position modulo their count), as a sentence."""
    words = sorted(set(word2idx) - set(SPECIAL_TOKENS))
    return " ".join(words[position % len(words)] for position in positions)


@judged(positions=word_positions)
def test_encode_then_decode_gives_the_words_back(corpus, positions):
    """decode(encode(s)) == tokenize(s) for a sentence of known words; encode gives ints."""
    vocab = word2idx, idx2word = corpus.build_vocab(corpus.CORPUS)
    sentence = sentence_at(positions, word2idx)
    ids = corpus.encode(sentence, word2idx)
    is_list = isinstance(ids, list)
    ints = [isinstance(i, int) for i in ids] if is_list else []
    # decode reads the ids that encode should give, which the judge finds in ids before it
    # reads what decode gave: wrong ids from encode must not make decode raise first
    right = [word2idx[w] for w in corpus.tokenize(sentence)]
    tokenized = corpus.tokenize(sentence)
    return {"vocab": vocab_data(vocab), "is_list": is_list, "ints": ints,
            "ids": ids if is_list and all(ints) else None, "shown": repr(ids),
            "tokenized": sent(tokenized), "words": sent(corpus.decode(right, idx2word)),
            "wrapped": sent(corpus.decode([corpus.BOS, *right, corpus.EOS], idx2word))}


@test_encode_then_decode_gives_the_words_back.judge
def _(out, positions):
    word2idx, _ = vocab_of(out["vocab"])
    sentence = sentence_at(positions, word2idx)
    is_list, ints, ids = out["is_list"], out["ints"], out["ids"]
    assert is_list and all(ints), (
        f"encode should return a list of ints, got {out['shown']}"
    )
    tokenized = received(out["tokenized"])
    assert ids == [word2idx[w] for w in tokenized], (
        f"encode({sentence!r}) should give each word's index in order, got {ids}"
    )
    words = received(out["words"])
    assert words == tokenized, (
        f"decode(encode(s)) should give the words of s back as a list, "
        f"{tokenized}; got {words!r}"
    )
    wrapped = received(out["wrapped"])
    assert wrapped == ["<s>", *words, "</s>"], (
        f"decode gives every index its word, the special tokens too: expected "
        f"{['<s>', *words, '</s>']}, got {wrapped!r}"
    )


SENTENCE = "The bank, by the river, was steep!"


@judged()
def test_encode_tokenizes_a_string_as_tokenize_does(corpus):
    """Text with capitals and punctuation encodes as the words that tokenize gives."""
    vocab = word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    return {"vocab": vocab_data(vocab), "words": sent(corpus.tokenize(SENTENCE)),
            "ids": sent(corpus.encode(SENTENCE, word2idx))}


@test_encode_tokenizes_a_string_as_tokenize_does.judge
def _(out):
    word2idx, _ = vocab_of(out["vocab"])
    sentence, words, ids = SENTENCE, received(out["words"]), received(out["ids"])
    expected = [word2idx.get(w, UNK) for w in words]
    pieces = sentence.split()  # what str.split gives: "The", "bank,", ...
    unknown = [w for w, i in zip(pieces, ids, strict=True) if i == UNK] \
        if len(ids) == len(pieces) else []
    assert ids == expected, (
        f"encode({sentence!r}) should encode the words that tokenize gives, {words}, as "
        f"{expected}; got {ids}" + (f", where {unknown} became <unk>" if unknown else "")
        + ": split a string with tokenize (lower-cased, punctuation dropped), not str.split"
    )


@judged(word=unknown_words)
def test_unknown_word_becomes_unk(corpus, word):
    """A word outside the vocabulary encodes as <unk> (index 1), in its place."""
    vocab = word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    try:
        ids = corpus.encode(f"the {word} bank", word2idx)
    except KeyError as err:
        return {"raised": type(err).__name__, "message": str(err)}
    return {"raised": None, "vocab": vocab_data(vocab), "ids": sent(ids)}


@test_unknown_word_becomes_unk.judge
def _(out, word):
    raised, err = out["raised"], out.get("message")
    # pytest.fail's exception is no AssertionError, nor any Exception: the grader's judging
    # catches neither, so the judge asserts
    assert raised is None, (
        f"encode raised KeyError {err} for a word outside the vocabulary; "
        "an unknown word must map to <unk> (index 1), not raise"
    )
    word2idx, _ = vocab_of(out["vocab"])
    ids = received(out["ids"])
    expected = [word2idx["the"], UNK, word2idx["bank"]]
    assert ids == expected, (
        f"encode('the {word} bank') should be {expected}: an unknown word maps to <unk> "
        f"(index 1) in its place; got {ids}"
    )


@judged()
def test_encode_adds_boundaries_on_request(corpus):
    """add_boundaries=True wraps the ids in <s> ... </s>; a list of words encodes too."""
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    return {"plain": sent(corpus.encode("turn right", word2idx)),
            "wrapped": sent(corpus.encode("turn right", word2idx, add_boundaries=True)),
            "listed": sent(corpus.encode(["turn", "right"], word2idx))}


@test_encode_adds_boundaries_on_request.judge
def _(out):
    plain, wrapped = received(out["plain"]), received(out["wrapped"])
    assert wrapped == [BOS, *plain, EOS], (
        f"with boundaries: <s> (BOS, 2) first, </s> (EOS, 3) last; expected "
        f"{[BOS, *plain, EOS]}, got {wrapped}"
    )
    listed = received(out["listed"])
    assert listed == plain, (
        f"a list of words encodes like the sentence: expected {plain}, got {listed}"
    )


@judged(batch=id_batches(50, max_batch=5, max_len=7))
def test_pad_batch_is_time_major_and_pads_at_the_end(corpus, batch):
    """(max_len, B) long ids, each column a sequence from row 0 then <pad>; (B,) lengths."""
    ids, lengths = corpus.pad_batch(batch)
    return {"ids": ids, "lengths": lengths}


@test_pad_batch_is_time_major_and_pads_at_the_end.judge
def _(out, batch):
    ids, lengths = out["ids"], out["lengths"]
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
        expected = [*seq, *[PAD] * (longest - len(seq))]
        assert ids[:, column].tolist() == expected, (
            f"column {column} should be its sequence from row 0, then <pad> (0): expected "
            f"{expected}, got {ids[:, column].tolist()}"
        )
    assert lengths.tolist() == [len(seq) for seq in batch], (
        f"lengths should be {[len(seq) for seq in batch]}, got {lengths.tolist()}"
    )
