# Section 8 of the ELMo course. This file is yours: replace each
# `raise NotImplementedError(...)` with your code, then run `make test SECTION=8`.
"""Section 8 (bonus) - The paper's token layer: a character CNN, so that no word is unknown.

Sections 2-7 give every word of the vocabulary an embedding of its own and every other word
the one vector of <unk>. ELMo does not (Peters et al. 2018, Sec. 3.4): it builds each
token's layer-0 representation from the token's characters, so "banks", "riverbank" or a
typo get a representation of their own, built from the character n-grams they share with
the words the biLM was trained on.

    word ──char_ids──> c (C,)  [BOW, c_1 .. c_n, EOW, PAD ...]        C = MAX_CHARS = 16
        ──char embedding──> (C, 16)
        ──1-D convolutions of widths 1..7──> each filter's max over the windows: (172,)
        ──ReLU, 2 highway layers──> (172,)
        ──projection──> p (256,)          the token representation; layer 0 is [p; p]

`CharBiLM` is the biLM of section 3 with this encoder as its token layer; section 3's
`forward`, the loss and training (section 4), the extraction (section 5) and the analyses
of sections 6 and 7 run on it unchanged. The character vocabulary and the sizes, against
the paper's, are given in `course.characters`.

Design questions: which windows may a filter's max see, so that padding changes nothing?
Which axis of the embedded characters does a 1-D convolution slide along? What must a
subclass of `BiLM` do first, and what does the word embedding it replaces cost?

Given, for the notebook and the demo: `Spelling`, `words_to_chars`, `sentence_chars` (any
text as character ids, unseen words included) and `CHAR_RECIPE` (how the course
pre-trains a `CharBiLM` with section 4's `train_bilm`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from course.characters import (
    BEGIN_OF_SENTENCE,
    BEGIN_OF_WORD,
    CHAR_PAD,
    CHAR_VOCAB_SIZE,
    END_OF_SENTENCE,
    END_OF_WORD,
    FILTERS,
    FIRST_BYTE,
    MAX_CHARS,
)
from course.given import check_chars, check_encoder_sizes, check_max_chars, check_sizes

from .s2_corpus import BOS, EOS, SPECIAL_TOKENS, tokenize
from .s3_bilm import BiLM
from .s4_pretrain import Recipe

__all__ = [
    "BEGIN_OF_SENTENCE", "BEGIN_OF_WORD", "CHAR_PAD", "CHAR_RECIPE", "CHAR_VOCAB_SIZE",
    "END_OF_SENTENCE", "END_OF_WORD", "FILTERS", "FIRST_BYTE", "MAX_CHARS", "CharBiLM",
    "CharEncoder", "Highway", "Spelling", "char_ids", "sentence_chars", "words_to_chars"
]

# Section 4's default recipe for twice the epochs: the character biLM starts slower (its
# token vectors must first learn to spell) and reaches the word biLM's loss after 20.
CHAR_RECIPE = Recipe(batch_size=16, lr=0.005, epochs=20)
# The sentence boundaries are tokens of their own: one marker between BOW and EOW.
_MARKERS = {SPECIAL_TOKENS[BOS]: BEGIN_OF_SENTENCE, SPECIAL_TOKENS[EOS]: END_OF_SENTENCE}


def char_ids(word: str, max_chars: int = MAX_CHARS) -> list[int]:
    """The character ids of one token, as the character CNN reads them.

    A word is BEGIN_OF_WORD, its UTF-8 bytes (byte b as FIRST_BYTE + b) cut to the first
    `max_chars - 2`, END_OF_WORD, then CHAR_PAD up to `max_chars` ids. The sentence
    boundaries "<s>" and "</s>" are BEGIN_OF_WORD, BEGIN_OF_SENTENCE or END_OF_SENTENCE,
    END_OF_WORD (then padding); any other word, "<unk>" and "<pad>" included, is spelled
    out as it is written.

    >>> char_ids("ok", max_chars=6)
    [1, 116, 112, 2, 0, 0]

    Returns:
        a list of `max_chars` ints in [0, CHAR_VOCAB_SIZE).

    Raises:
        ValueError: `max_chars` is below 3, too few for BOW, a character and EOW (from the
            given `check_max_chars`).
    """
    check_max_chars(max_chars)  # a clear error for too few characters, given
    raise NotImplementedError("section 8 (char_encoder): char_ids is not implemented yet")


def words_to_chars(words: Iterable[str], max_chars: int = MAX_CHARS) -> torch.Tensor:
    """(n, max_chars) LongTensor: `char_ids` of each word, one row each."""
    rows = [char_ids(word, max_chars) for word in words]
    return torch.tensor(rows, dtype=torch.long).reshape(len(rows), max_chars)


class Highway(nn.Module):
    """`num_layers` highway layers (Srivastava et al. 2015), in AllenNLP's form
    (allennlp/modules/highway.py), applied one after another:

        [f ; g] = A x + b,    t = sigmoid(g),    y = t * x + (1 - t) * relu(f)

    The gate t carries the input x through where it is near 1 and transforms it, relu(f),
    where it is near 0. Each layer reads the previous layer's output. The gate's bias
    starts at 1, as in AllenNLP, so that a new layer mostly carries its input
    (sigmoid(1) = 0.73) and learns how much to transform; f's bias keeps its usual start.

    Args:
        dim: the width of the input and the output.
        num_layers: how many layers (0: the identity).

    Attributes:
        layers: the `num_layers` layers in order, registered, each an affine map from dim
            to 2 * dim features (`weight` (2 * dim, dim), `bias` (2 * dim,)): its first
            `dim` outputs are f, its last `dim` the gate's g, so `bias[dim:]` is the gate's
            bias (section 8's notebook sets it to show the gate at work).

    Raises:
        ValueError: `dim` below 1 or `num_layers` below 0 (from the given `check_sizes`).
    """

    def __init__(self, dim: int, num_layers: int = 2) -> None:
        check_sizes(dim=dim, num_layers=(num_layers, 0))  # clear errors for bad sizes, given
        raise NotImplementedError("section 8 (char_encoder): Highway.__init__ is not implemented yet")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., dim) -> (..., dim)."""
        raise NotImplementedError("section 8 (char_encoder): Highway.forward is not implemented yet")


class CharEncoder(nn.Module):
    """A token's representation from its characters: embedding, convolutions, max-pool,
    ReLU, highway, projection (Peters et al. 2018, Sec. 3.4; AllenNLP's
    `_ElmoCharacterEncoder`).

    Each (width w, count) of `filters` is `count` filters that slide along the token's
    characters, each reading w consecutive embedded characters at a time. Each filter
    keeps its largest response over the windows that lie wholly within the token, from BOW
    to EOW: never a window that reaches into the padding, so that a word gives the same
    vector however much padding follows it. A token shorter than w has the one window from
    its start, where the padding character embeds to zero. The maxima of all widths, side
    by side in the order of `filters`, go through a ReLU, the highway layers and a linear
    projection to `output_dim`. Each token is encoded from its own characters alone.

    Args:
        output_dim: the width of the token representation p (the biLM's hidden_dim).
        char_dim: the width of the character embedding (the paper's 16).
        filters: (width, count) pairs: the n-gram widths and how many filters each.
        highway_layers: the number of highway layers (the paper's 2).

    Attributes:
        char_embedding: the characters' embedding, CHAR_VOCAB_SIZE rows of char_dim; the
            row of CHAR_PAD is zero.
        convolutions: registered, one per (width, count) of `filters`, in that order, each
            a 1-D convolution with `kernel_size[0]` the width, `in_channels` char_dim and
            `out_channels` count (the given `check_chars` reads the widths).
        highway: a `Highway` of `highway_layers` layers over the sum of the counts; it
            reads the ReLU of the filters' maxima.
        projection: the affine map from the highway's output to output_dim, the encoder's
            output. (The tests watch what `highway` and `projection` are called with.)

    Raises:
        ValueError: a size below 1, no filters, or highway_layers below 0 (from the given
            `check_encoder_sizes`).
    """

    def __init__(self, output_dim: int, char_dim: int = 16,
                 filters: Sequence[tuple[int, int]] = FILTERS, highway_layers: int = 2) -> None:
        check_encoder_sizes(output_dim, char_dim, filters, highway_layers)  # given
        raise NotImplementedError("section 8 (char_encoder): CharEncoder.__init__ is not implemented yet")

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """(..., C) character ids of tokens -> (..., output_dim) their representations.

        Works on the device of `chars`, whatever it is (the tests run it on PyTorch's
        `meta` device, which has shapes but no values): no tensor made elsewhere.

        Raises:
            ValueError: `chars` has no last axis or one shorter than the widest filter
                (from the given `check_chars`).
        """
        check_chars(chars, self.convolutions)  # a clear error for too few characters, given
        raise NotImplementedError("section 8 (char_encoder): CharEncoder.forward is not implemented yet")


class Spelling(nn.Module):
    """Word ids to the character ids of the vocabulary's words, by a table of their
    spellings; character ids (T, B, C) pass through as they are. As a `CharBiLM`'s
    `embedding` it lets `BiLM.forward` read either: the word ids of every earlier section,
    or the characters of any tokens (`sentence_chars`), in the vocabulary or not.

    Args:
        words: the vocabulary in index order: `idx2word` (id -> word) or a list.
        max_chars: characters per token.

    Attributes:
        table: (vocab_size, max_chars) buffer: row i is `char_ids` of word i.
        num_embeddings: vocab_size, the range of the word ids it takes.
    """

    def __init__(self, words: Mapping[int, str] | Sequence[str],
                 max_chars: int = MAX_CHARS) -> None:
        super().__init__()
        self.register_buffer("table", words_to_chars([words[i] for i in range(len(words))],
                                                     max_chars))
        self.num_embeddings = len(words)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """(T, B) word ids -> (T, B, max_chars) character ids; (T, B, C) is returned as is."""
        return ids if ids.dim() == 3 else self.table[ids]


class CharBiLM(BiLM):
    """The biLM of section 3 with a character CNN for its token layer: a word outside the
    vocabulary gets a representation of its own, not <unk>'s. It predicts words of the
    vocabulary.

    It takes word ids (T, B), as every earlier section gives them, or character ids
    (T, B, C) of any tokens (`sentence_chars`). It relies on section 3's contract for
    `BiLM.forward`: T, B are `ids.shape[:2]`, and `ids` goes whole to the token layer,
    p = token_projection(embedding(ids)) of shape (T, B, hidden_dim); so `forward` runs
    unchanged on (T, B, C) characters. Layer 0 is [p; p]; the LSTMs and heads are
    `BiLM`'s, their sizes from `hidden_dim`, `num_layers` and the number of words.

    Args:
        words: the vocabulary in index order: `idx2word` (id -> word) or a list.
        hidden_dim, num_layers: as for `BiLM`.
        char_dim, filters, highway_layers: as for `CharEncoder`, passed on to it.

    Attributes:
        embedding: a `Spelling` of `words`: word ids to their characters, characters as
            they are.
        token_projection: a `CharEncoder` of the given sizes, projecting to hidden_dim
            (`analyses.analysis` reads layer 0 of any words through it).
        forward_lstms, backward_lstms, forward_head, backward_head: as for `BiLM`.

    Raises:
        ValueError: a size below 1 (from `BiLM`'s and `CharEncoder`'s given checks).
    """

    def __init__(self, words: Mapping[int, str] | Sequence[str], hidden_dim: int = 256,
                 num_layers: int = 2, char_dim: int = 16,
                 filters: Sequence[tuple[int, int]] = FILTERS, highway_layers: int = 2) -> None:
        raise NotImplementedError("section 8 (char_encoder): CharBiLM.__init__ is not implemented yet")

    def _check_input(self, ids: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        """As `BiLM._check_input`; character ids (T, B, C) must lie in [0, CHAR_VOCAB_SIZE),
        with C at least the widest filter (the given `check_chars`)."""
        if ids.dim() == 3:
            check_chars(ids, self.token_projection.convolutions, CHAR_VOCAB_SIZE)
            ids = torch.zeros_like(ids[..., 0])  # the lengths are checked against (T, B)
        return super()._check_input(ids, lengths)


def sentence_chars(sentences: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of sentences as character ids, <s> and </s> included: ((T, B, MAX_CHARS),
    lengths (B,)), time-major and right-padded with tokens of padding only, as `pad_batch`
    gives word ids. Every word is spelled out, in the vocabulary or not."""
    words = [[SPECIAL_TOKENS[BOS], *tokenize(s), SPECIAL_TOKENS[EOS]] for s in sentences]
    lengths = torch.tensor([len(w) for w in words], dtype=torch.long)
    chars = torch.full((int(lengths.max()), len(words), MAX_CHARS), CHAR_PAD, dtype=torch.long)
    for column, sentence in enumerate(words):
        chars[: len(sentence), column] = words_to_chars(sentence)
    return chars, lengths

