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

`CharBiLM` is the biLM of section 3 with this encoder in place of its word embedding and
projection; `BiLM.forward` runs unchanged, and so do the loss and training (section 4),
the extraction (section 5) and the analyses of sections 6 and 7.

Sizes against the paper's (bilm-tf's options of the released model, AllenNLP's
`_ElmoCharacterEncoder`):

    the paper                                      here
    262 character ids: 256 bytes, BOW, EOW,        261: padding 0, BOW 1, EOW 2, the
        padding, begin and end of sentence             sentence markers 3 and 4, byte b: 5 + b
    50 characters per token                        MAX_CHARS = 16 (longer words are cut)
    character embedding 16                         16
    filters (width: count) 1:32 2:32 3:64 4:128    1:4 2:8 3:16 4:16 5:32 6:32 7:64: the
        5:256 6:512 7:1024, 2048 in all                paper's widths, 172 filters in all
    2 highway layers, projection to 512            2 highway layers, projection to 256

Given, for the notebook and the demo: `Spelling` (word ids to the characters of the
vocabulary's words), `words_to_chars`, `sentence_chars` (any text as character ids, unseen
words included), `CHAR_RECIPE` (how the course pre-trains a `CharBiLM` with section 4's
`train_bilm`), and `token_layer` and `nearest_relatives`: layer 0 of any words, out of
context, and where the relative of a word the corpus lacks ("banks": "bank") stands among
its nearest words, for a character biLM and for a word biLM alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from .s2_corpus import BOS, EOS, SPECIAL_TOKENS, UNK, tokenize
from .s3_bilm import BiLM
from .s4_pretrain import Recipe

__all__ = [
    "BEGIN_OF_SENTENCE",
    "BEGIN_OF_WORD",
    "CHAR_PAD",
    "CHAR_RECIPE",
    "CHAR_VOCAB_SIZE",
    "END_OF_SENTENCE",
    "END_OF_WORD",
    "FILTERS",
    "FIRST_BYTE",
    "MAX_CHARS",
    "UNSEEN_RELATIVES",
    "CharBiLM",
    "CharEncoder",
    "Highway",
    "Neighbours",
    "Spelling",
    "char_ids",
    "nearest_relatives",
    "neighbours_table",
    "sentence_chars",
    "token_layer",
    "words_to_chars",
]

MAX_CHARS = 16
CHAR_PAD, BEGIN_OF_WORD, END_OF_WORD, BEGIN_OF_SENTENCE, END_OF_SENTENCE = 0, 1, 2, 3, 4
FIRST_BYTE = 5  # byte b of a word's UTF-8 is character id FIRST_BYTE + b
CHAR_VOCAB_SIZE = FIRST_BYTE + 256
# (width, number of filters): the paper's widths 1-7, with 172 filters where it has 2048.
FILTERS: tuple[tuple[int, int], ...] = ((1, 4), (2, 8), (3, 16), (4, 16), (5, 32), (6, 32),
                                        (7, 64))
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
        TypeError: `word` is not a str (from the given `_check_word`).
        ValueError: `max_chars` is below 3, too few for BOW, a character and EOW (from the
            given `_check_word`).
    """
    _check_word(word, max_chars)  # given
    # BEGIN SOLUTION
    if word in _MARKERS:
        body = [_MARKERS[word]]
    else:
        body = [FIRST_BYTE + byte for byte in word.encode("utf-8")][: max_chars - 2]
    ids = [BEGIN_OF_WORD, *body, END_OF_WORD]
    return ids + [CHAR_PAD] * (max_chars - len(ids))
    # END SOLUTION


def _check_word(word: str, max_chars: int) -> None:
    if not isinstance(word, str):
        raise TypeError(f"char_ids expects a word as a str, got {type(word).__name__}")
    if not isinstance(max_chars, int) or max_chars < 3:
        raise ValueError(f"max_chars must be an int of at least 3 (BOW, a character, EOW), "
                         f"got {max_chars!r}")


def words_to_chars(words: Iterable[str], max_chars: int = MAX_CHARS) -> torch.Tensor:
    """(n, max_chars) LongTensor: `char_ids` of each word, one row each."""
    rows = [char_ids(word, max_chars) for word in words]
    return torch.tensor(rows, dtype=torch.long).reshape(len(rows), max_chars)


class Highway(nn.Module):
    """`num_layers` highway layers (Srivastava et al. 2015), in AllenNLP's form
    (allennlp/modules/highway.py), applied one after another:

        [f ; g] = A x + b,    t = sigmoid(g),    y = t * x + (1 - t) * relu(f)

    One `nn.Linear(dim, 2 * dim)` per layer gives f (its first `dim` outputs) and the
    gate's g (its last `dim`). The gate t carries the input x through where it is near 1
    and transforms it, relu(f), where it is near 0. The gate's bias starts at 1, as in
    AllenNLP, so that a new layer mostly carries its input (sigmoid(1) = 0.73) and learns
    how much to transform.

    Args:
        dim: the width of the input and the output.
        num_layers: how many layers (0: the identity).

    Attributes:
        layers: an `nn.ModuleList` of `num_layers` `nn.Linear(dim, 2 * dim)`; in each, the
            bias of the gate's half, `bias[dim:]`, starts at 1.

    Raises:
        ValueError: `dim` below 1 or `num_layers` below 0 (from the given `_check_widths`).
    """

    def __init__(self, dim: int, num_layers: int = 2) -> None:
        _check_widths(dim=dim, num_layers=(num_layers, 0))  # given
        # BEGIN SOLUTION
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, 2 * dim) for _ in range(num_layers))
        with torch.no_grad():
            for layer in self.layers:
                layer.bias[dim:].fill_(1.0)  # the gate's bias: carry the input at first
        # END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., dim) -> (..., dim)."""
        # BEGIN SOLUTION
        for layer in self.layers:
            transformed, gate = layer(x).chunk(2, dim=-1)
            gate = torch.sigmoid(gate)
            x = gate * x + (1 - gate) * F.relu(transformed)
        return x
        # END SOLUTION


def _check_widths(**sizes: int | tuple[int, int]) -> None:
    """Each size an int of at least 1, or of at least `low` when given as (size, low)."""
    for name, size in sizes.items():
        value, low = size if isinstance(size, tuple) else (size, 1)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an int of at least {low}, got {value!r}")


class CharEncoder(nn.Module):
    """A token's representation from its characters: embedding, convolutions, max-pool,
    ReLU, highway, projection (Peters et al. 2018, Sec. 3.4; AllenNLP's
    `_ElmoCharacterEncoder`).

    For each (width w, count) of `filters`, an `nn.Conv1d(char_dim, count, w)` slides along
    the token's characters (the convolution's channels are the embedding's dimensions, its
    positions the characters). Each filter keeps its largest response over the windows
    that lie wholly within the token, from BOW to EOW: never a window that reaches into the
    padding, so that a word gives the same vector however much padding follows it. A token
    shorter than w has the one window from its start (the padding's embedding is zero).
    The maxima of all widths, side by side in the order of `filters`, go through a ReLU,
    the highway layers and a linear projection to `output_dim`.

    Args:
        output_dim: the width of the token representation p (the biLM's hidden_dim).
        char_dim: the width of the character embedding (the paper's 16).
        filters: (width, count) pairs, one convolution each.
        highway_layers: the number of highway layers (the paper's 2).

    Attributes:
        char_embedding: `nn.Embedding(CHAR_VOCAB_SIZE, char_dim, padding_idx=CHAR_PAD)`.
        convolutions: an `nn.ModuleList` of one `nn.Conv1d(char_dim, count, width)` per
            (width, count) of `filters`, in that order.
        highway: `Highway(sum of the counts, highway_layers)`.
        projection: `nn.Linear(sum of the counts, output_dim)`.

    Raises:
        ValueError: a size below 1, no filters, or highway_layers below 0 (from the given
            `_check_encoder_sizes`).
    """

    def __init__(self, output_dim: int, char_dim: int = 16,
                 filters: Sequence[tuple[int, int]] = FILTERS, highway_layers: int = 2) -> None:
        _check_encoder_sizes(output_dim, char_dim, filters, highway_layers)  # given
        # BEGIN SOLUTION
        super().__init__()
        self.char_embedding = nn.Embedding(CHAR_VOCAB_SIZE, char_dim, padding_idx=CHAR_PAD)
        self.convolutions = nn.ModuleList(
            nn.Conv1d(char_dim, count, width) for width, count in filters)
        features = sum(count for _, count in filters)
        self.highway = Highway(features, highway_layers)
        self.projection = nn.Linear(features, output_dim)
        # END SOLUTION

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """(..., C) character ids of tokens -> (..., output_dim) their representations.

        Works on the device of `chars`: make every index tensor on `chars.device` (the tests
        run it on PyTorch's `meta` device, which has shapes but no values).

        Raises:
            ValueError: `chars` has no last axis or one shorter than the widest filter
                (from the given `_check_chars`).
        """
        self._check_chars(chars)  # given
        # BEGIN SOLUTION
        flat = chars.reshape(-1, chars.shape[-1])  # (N, C)
        lengths = (flat != CHAR_PAD).sum(dim=-1)  # (N,) characters of each token, BOW/EOW too
        x = self.char_embedding(flat).transpose(1, 2)  # (N, char_dim, C)
        pooled = []
        for conv in self.convolutions:
            width = conv.kernel_size[0]
            windows = conv(x)  # (N, count, C - width + 1): window s covers s .. s + width - 1
            starts = torch.arange(windows.shape[-1], device=chars.device)
            last_start = (lengths - width).clamp(min=0)  # a short token: its first window
            inside = starts.unsqueeze(0) <= last_start.unsqueeze(1)  # (N, C - width + 1)
            windows = windows.masked_fill(~inside.unsqueeze(1), float("-inf"))
            pooled.append(windows.max(dim=-1).values)  # (N, count)
        features = self.highway(F.relu(torch.cat(pooled, dim=-1)))  # (N, sum of counts)
        return self.projection(features).reshape(*chars.shape[:-1], -1)
        # END SOLUTION

    def _check_chars(self, chars: torch.Tensor) -> None:
        """A clear error for characters the convolutions cannot read (shapes only)."""
        widest = max(conv.kernel_size[0] for conv in self.convolutions)
        if not isinstance(chars, torch.Tensor) or chars.dim() < 1 or chars.shape[-1] < widest:
            shape = tuple(chars.shape) if isinstance(chars, torch.Tensor) else type(chars)
            raise ValueError(f"CharEncoder expects character ids (..., C) with C at least "
                             f"{widest}, the widest filter, got {shape}")


def _check_encoder_sizes(output_dim: int, char_dim: int, filters: Sequence[tuple[int, int]],
                         highway_layers: int) -> None:
    _check_widths(output_dim=output_dim, char_dim=char_dim,
                  highway_layers=(highway_layers, 0))
    if len(filters) == 0:
        raise ValueError("CharEncoder needs at least one (width, count) filter")
    for width, count in filters:
        _check_widths(filter_width=width, filter_count=count)


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
    """The biLM of section 3 with a character CNN for its token layer: `embedding` spells
    each word out and `token_projection` is a `CharEncoder`, so that p =
    token_projection(embedding(ids)) as in `BiLM.forward`, which runs unchanged. Layer 0 is
    [p; p]; the LSTMs and heads are `BiLM`'s.

    It takes word ids (T, B), as every earlier section gives them, or character ids
    (T, B, C) of any tokens (`sentence_chars`): a word outside the vocabulary gets a
    representation of its own, not <unk>'s. It predicts words of the vocabulary.

    Call `BiLM.__init__` first (nn.Module's constructor, which it calls, would forget any
    part set before it), with `embedding_dim=1`: its word embedding and projection are
    replaced next, so they had better cost nothing; then set the two token parts.

    Args:
        words: the vocabulary in index order: `idx2word` (id -> word) or a list.
        hidden_dim, num_layers: as for `BiLM`.
        char_dim, filters, highway_layers: as for `CharEncoder`.

    Attributes:
        embedding: `Spelling(words)`.
        token_projection: `CharEncoder(hidden_dim, char_dim, filters, highway_layers)`.
        forward_lstms, backward_lstms, forward_head, backward_head: as for `BiLM`, with
            vocab_size = len(words).

    Raises:
        ValueError: a size below 1 (from `BiLM`'s and `CharEncoder`'s given checks).
    """

    def __init__(self, words: Mapping[int, str] | Sequence[str], hidden_dim: int = 256,
                 num_layers: int = 2, char_dim: int = 16,
                 filters: Sequence[tuple[int, int]] = FILTERS, highway_layers: int = 2) -> None:
        # BEGIN SOLUTION
        super().__init__(len(words), embedding_dim=1, hidden_dim=hidden_dim,
                         num_layers=num_layers)
        self.embedding = Spelling(words)
        self.token_projection = CharEncoder(hidden_dim, char_dim, filters, highway_layers)
        # END SOLUTION

    def _check_input(self, ids: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        """As `BiLM._check_input`; character ids (T, B, C) must be integers in
        [0, CHAR_VOCAB_SIZE), with C at least the widest filter."""
        if not (isinstance(ids, torch.Tensor) and ids.dim() == 3):
            return super()._check_input(ids, lengths)
        if ids.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"CharBiLM expects integer character ids, got {ids.dtype}")
        self.token_projection._check_chars(ids)
        if ids.numel() == 0 or int(ids.min()) < 0 or int(ids.max()) >= CHAR_VOCAB_SIZE:
            raise ValueError(f"CharBiLM expects character ids in [0, {CHAR_VOCAB_SIZE}) of "
                             f"shape (seq_len, batch, C), got {tuple(ids.shape)}")
        return super()._check_input(torch.zeros_like(ids[..., 0]), lengths)  # lengths vs (T, B)


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


# --- what the character layer buys: the nearest words of words the corpus lacks -----------

# (a word the corpus lacks, its relative in the corpus): inflections, a compound, a spelling
# variant and typos, each of a word of the vocabulary.
UNSEEN_RELATIVES: tuple[tuple[str, str], ...] = (
    ("banks", "bank"), ("rivers", "river"), ("plays", "play"), ("played", "play"),
    ("watches", "watch"), ("theatres", "theatre"), ("schools", "school"),
    ("teachers", "teacher"), ("bird", "birds"), ("game", "games"), ("riverbank", "river"),
    ("theater", "theatre"), ("bnak", "bank"), ("wacth", "watch"))


@torch.no_grad()
def token_layer(model: BiLM, words: Sequence[str], word2idx: Mapping[str, int]) -> torch.Tensor:
    """(n, hidden_dim) p of each word, layer 0's half, out of any context: a `CharBiLM`
    spells every word out; a word biLM reads its id, <unk>'s for a word it lacks."""
    device = next(model.parameters()).device
    if isinstance(model, CharBiLM):
        return model.token_projection(words_to_chars(words).to(device)).cpu()
    ids = torch.tensor([word2idx.get(word, UNK) for word in words], device=device)
    return model.token_projection(model.embedding(ids)).cpu()


class Neighbours(NamedTuple):
    """Where a word's relative stands among the words nearest to it (`nearest_relatives`).

    query:    the word, usually one the corpus lacks.
    relative: its relative in the vocabulary.
    rank:     the relative's place among the candidates, 1 = the nearest; a ranking that
              knew nothing would put it at (candidates + 1) / 2 on average.
    nearest:  the three nearest candidates, with their cosines.
    candidates: how many words were ranked.
    """

    query: str
    relative: str
    rank: int
    nearest: tuple[tuple[str, float], ...]
    candidates: int


def nearest_relatives(model: BiLM, word2idx: Mapping[str, int],
                      pairs: Sequence[tuple[str, str]] = UNSEEN_RELATIVES) -> list[Neighbours]:
    """For each (query, relative), the vocabulary's words (special tokens left out) ranked by
    the cosine of their layer 0 to the query's, each vector centred by the mean over the
    vocabulary: token vectors share a common direction that makes every cosine high, and
    centring leaves what tells words apart."""
    words = [word for word in word2idx if word not in SPECIAL_TOKENS]
    vectors = token_layer(model, words, word2idx)
    mean = vectors.mean(dim=0)
    queries = token_layer(model, [query for query, _ in pairs], word2idx) - mean
    found = []
    for (query, relative), vector in zip(pairs, queries, strict=True):
        cosines = F.cosine_similarity(vector.unsqueeze(0), vectors - mean, dim=-1)
        order = cosines.argsort(descending=True).tolist()
        nearest = tuple((words[i], round(float(cosines[i]), 3)) for i in order[:3])
        found.append(Neighbours(query, relative, order.index(words.index(relative)) + 1,
                                nearest, len(words)))
    return found


def neighbours_table(found: Sequence[Neighbours]) -> str:
    """One line per query: the relative's rank, then the three nearest words."""
    return "\n".join(f"{n.query:>10} -> {n.relative:<8} rank {n.rank:3d} of {n.candidates}   "
                     + ", ".join(f"{word} {cosine:.2f}" for word, cosine in n.nearest)
                     for n in found)
