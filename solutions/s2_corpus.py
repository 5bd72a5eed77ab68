"""Section 2 - Toy corpus and vocabulary.

A corpus in which context decides the sense. Four polysemous words, each in two senses:

    bank   finance | river        play   verb | theatre
    right  direction | correct    watch  verb | timepiece

For every sense, four openings and four endings are written by hand (`SENSE_PHRASES`), and
any opening, the word and any ending of the same sense make a sentence:

    she put her money in the | bank | to keep it safe       finance
    we walked along the      | bank | by the water          river

Of the 16 sentences of a sense, 12 are for training (`CORPUS`) and 4 are held out
(`HELDOUT`): opening k with ending k, so a held-out sentence joins an opening and an ending
that training saw, but never together. In all, 96 training sentences, 32 held-out ones and
116 words, all of which training sees.

Why it is larger than the seed's ~30 sentences of ~50-80 words: on 32 unique sentences a
biLM learns *which sentence* it reads, and its states then tell sentences apart rather than
senses (same-sense pairs were 0.02 more similar than different-sense ones). Here every
opening goes with every ending of its sense, so what follows "bank" can only be predicted
from its sense, and the biLM must carry the sense in its states; it still trains in seconds.

`SENSE_LABELS` and `HELDOUT_LABELS` record, for each sentence, its target word and sense,
for sections 6 and 7 to compare and probe the word's embeddings. Section 7's word-class
task uses the other words of the same sentences.

The vocabulary reserves four special tokens at fixed indices, then numbers the corpus's
words in sorted order, so one corpus always gives one numbering:

    0 <pad>   padding, ignored by the loss
    1 <unk>   any word not in the corpus
    2 <s>     sentence start: the forward LM's first input
    3 </s>    sentence end: the backward LM's first input
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import torch

__all__ = [
    "BOS",
    "CORPUS",
    "EOS",
    "HELDOUT",
    "HELDOUT_LABELS",
    "PAD",
    "PHRASES_OF",
    "SENSE_LABELS",
    "SENSE_PHRASES",
    "SPECIAL_TOKENS",
    "UNK",
    "build_vocab",
    "decode",
    "encode",
    "pad_batch",
    "tokenize",
]

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIAL_TOKENS = ("<pad>", "<unk>", "<s>", "</s>")

# (target word, sense): (openings, endings). Every opening leads up to the word in that
# sense and every ending follows from it, so any opening goes with any ending of its sense.
SENSE_PHRASES: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {
    ("bank", "finance"): (
        ("she put her money in the", "he keeps his gold at the", "they took their cash to the",
         "we paid the money into the"),
        ("to keep it safe", "before it closed", "to pay the loan", "to save money")),
    ("bank", "river"): (
        ("they sat on the", "we walked along the", "the boat hit the", "the ducks swim near the"),
        ("of the river", "by the water", "under the trees", "where the fish swim")),
    ("play", "verb"): (
        ("the children like to", "we often", "after school they", "at night i"),
        ("football in the park", "with friends", "games all day", "music together")),
    ("play", "theatre"): (
        ("we saw a new", "she wrote a", "they got tickets for the", "the actors love the"),
        ("at the theatre", "about love", "on the stage", "for the school")),
    ("right", "direction"): (
        ("turn", "go", "the shop is on the", "look to the"),
        ("at the corner", "after the bridge", "past the school", "at the next street")),
    ("right", "correct"): (
        ("your answer is", "she was", "the teacher said he was", "i think you are"),
        ("about the test", "and they were wrong", "this time", "again")),
    ("watch", "verb"): (
        ("we sit down to", "they like to", "every day i", "the children"),
        ("the football games", "the birds in the park", "a film on television",
         "the stars at night")),
    ("watch", "timepiece"): (
        ("he wore a gold", "she gave him a", "i got a new", "she got him a"),
        ("on his wrist", "as a gift", "with a gold strap", "from the shop")),
}

# (sentence, target word, sense), sense by sense, opening by opening, ending by ending:
# opening k with ending k is held out, every other pair is for training.
SENSE_LABELS: tuple[tuple[str, str, str], ...] = tuple(
    (f"{opening} {word} {ending}", word, sense)
    for (word, sense), (openings, endings) in SENSE_PHRASES.items()
    for k, opening in enumerate(openings) for j, ending in enumerate(endings) if k != j)
HELDOUT_LABELS: tuple[tuple[str, str, str], ...] = tuple(
    (f"{opening} {word} {ending}", word, sense)
    for (word, sense), (openings, endings) in SENSE_PHRASES.items()
    for opening, ending in zip(openings, endings, strict=True))

CORPUS: tuple[str, ...] = tuple(sentence for sentence, _, _ in SENSE_LABELS)
HELDOUT: tuple[str, ...] = tuple(sentence for sentence, _, _ in HELDOUT_LABELS)

# sentence: (k, j), the indices of its opening and its ending among its sense's phrases.
PHRASES_OF: dict[str, tuple[int, int]] = {
    f"{opening} {word} {ending}": (k, j)
    for (word, _), (openings, endings) in SENSE_PHRASES.items()
    for k, opening in enumerate(openings) for j, ending in enumerate(endings)}

_WORD = re.compile(r"[a-z0-9']+")


def tokenize(text: str) -> list[str]:
    """Lower-case `text` and split it into words, dropping punctuation.

    A word is a run of letters, digits and apostrophes, as `_WORD` matches: a contraction
    stays one word, and everything else (spaces, punctuation, hyphens) separates words.

    >>> tokenize("Turn right, at the river!")
    ['turn', 'right', 'at', 'the', 'river']
    >>> tokenize("Don't swim: it's 2 o'clock, co-op's rule.")
    ["don't", 'swim', "it's", '2', "o'clock", 'co', "op's", 'rule']

    Raises:
        TypeError: `text` is not a str (from the given `_check_text`).
    """
    _check_text(text)  # a clear error for what is not text, given below
    # BEGIN SOLUTION
    return _WORD.findall(text.lower())
    # END SOLUTION


def build_vocab(corpus: Iterable[str]) -> tuple[dict[str, int], dict[int, str]]:
    """Map every word of `corpus` to an index, and back.

    Args:
        corpus: sentences as strings; they are split into words with `tokenize`, so the
            vocabulary's words are lower-case and without punctuation.

    Returns:
        (word2idx, idx2word): `SPECIAL_TOKENS` take indices 0-3 (PAD, UNK, BOS, EOS), then
        the distinct words in sorted order from 4. Deterministic: the numbering depends only
        on the set of words, never on sentence order or hashing.

    Raises:
        TypeError: `corpus` is a single str, not a collection of sentences (from the given
            `_sentences`, which also turns `corpus` into the list `sentences`).
        ValueError: the corpus is empty or holds no words (idem).
    """
    sentences = _sentences(corpus)  # a list of sentences, or a clear error, given below
    # BEGIN SOLUTION
    words = sorted({word for sentence in sentences for word in tokenize(sentence)})
    idx2word = dict(enumerate([*SPECIAL_TOKENS, *words]))
    word2idx = {word: idx for idx, word in idx2word.items()}
    return word2idx, idx2word
    # END SOLUTION


def encode(
    sentence: str | Sequence[str], word2idx: dict[str, int], add_boundaries: bool = False
) -> list[int]:
    """Turn a sentence into word indices; an unknown word becomes UNK, never an error.

    Args:
        sentence: a string (tokenized with `tokenize`) or a list of words, already
            tokenized: looked up as they are, not lower-cased again.
        word2idx: the mapping from `build_vocab`.
        add_boundaries: wrap the result in BOS ... EOS, as the biLM expects.

    Returns:
        a list of ints, one per word (+2 with boundaries): `word2idx[word]`, or UNK for a
        word that is not in it.

    Raises:
        ValueError: the sentence has no words (from the given `_check_sentence`).
    """
    _check_sentence(sentence)  # a clear error for a sentence without words, given below
    # BEGIN SOLUTION
    words = tokenize(sentence) if isinstance(sentence, str) else list(sentence)
    ids = [word2idx.get(word, UNK) for word in words]
    return [BOS, *ids, EOS] if add_boundaries else ids
    # END SOLUTION


def decode(ids: Iterable[int], idx2word: dict[int, str]) -> list[str]:
    """Turn indices back into words: `decode(encode(s, w2i), i2w) == tokenize(s)` for any
    sentence `s` of known words.

    Args:
        ids: word indices, as a list or a 1-D LongTensor; the given `_id_list` turns them
            into the list of ints `ids`.
        idx2word: the mapping from `build_vocab`.

    Returns:
        a list of words (str), one per index.

    Raises:
        ValueError: an index is not in `idx2word` (from `_id_list`).
    """
    ids = _id_list(ids, idx2word)  # a list of known indices, or a clear error, given below
    # BEGIN SOLUTION
    return [idx2word[i] for i in ids]
    # END SOLUTION


def pad_batch(sequences: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack sequences of different lengths into one time-major, right-padded batch.

    Args:
        sequences: B lists of token ids, each non-empty.

    Returns:
        ids: LongTensor (max_len, B), PAD after each sequence's end.
        lengths: LongTensor (B,), the length of each sequence.

    Raises:
        ValueError: no sequences, or an empty one (from the given `_check_sequences`).
    """
    _check_sequences(sequences)  # clear errors for nothing to pad, given below
    # BEGIN SOLUTION
    lengths = torch.tensor([len(seq) for seq in sequences], dtype=torch.long)
    ids = torch.full((int(lengths.max()), len(sequences)), PAD, dtype=torch.long)
    for column, seq in enumerate(sequences):
        ids[: len(seq), column] = torch.as_tensor(list(seq), dtype=torch.long)
    return ids, lengths
    # END SOLUTION


# --- input validation, given: the clear errors for what the functions above cannot take ----


def _check_text(text: str) -> None:
    if not isinstance(text, str):
        raise TypeError(f"tokenize expects a str, got {type(text).__name__}")


def _sentences(corpus: Iterable[str]) -> list[str]:
    """The sentences of `corpus` as a list (it may be a generator), checked."""
    if isinstance(corpus, str):
        raise TypeError("build_vocab expects a collection of sentences, got a single str")
    sentences = list(corpus)
    if not sentences:
        raise ValueError("build_vocab needs at least one sentence; the corpus is empty")
    if not any(tokenize(sentence) for sentence in sentences):
        raise ValueError("build_vocab found no words in the corpus (only punctuation or spaces?)")
    return sentences


def _check_sentence(sentence: str | Sequence[str]) -> None:
    empty = not tokenize(sentence) if isinstance(sentence, str) else len(sentence) == 0
    if empty:
        raise ValueError(f"cannot encode an empty sentence: {sentence!r}")


def _id_list(ids: Iterable[int], idx2word: dict[int, str]) -> list[int]:
    """`ids` (a tensor too) as a list of ints, each one a key of `idx2word`."""
    ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
    unknown = [i for i in ids if i not in idx2word]
    if unknown:
        raise ValueError(f"indices {unknown} are not in the vocabulary of {len(idx2word)} words")
    return ids


def _check_sequences(sequences: Sequence[Sequence[int]]) -> None:
    if len(sequences) == 0:
        raise ValueError("pad_batch needs at least one sequence")
    empty = [i for i, seq in enumerate(sequences) if len(seq) == 0]
    if empty:
        raise ValueError(f"pad_batch got empty sequences at positions {empty}")
