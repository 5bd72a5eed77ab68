"""The notebooks' playgrounds: a sentence as a person types it, read as the biLM reads it.

    print(reading(sections, "By the BANK, of the water!", word2idx))
    at = position(sections, sentence, "Bank")               # where the biLM reads it
    print(predictions(sections, model, sentence, word2idx, idx2word))
    print(nearest(sections, model, word2idx, sentence, "bank"))

Everything goes through section 2's `tokenize` and the vocabulary, as the biLM's input does:
case and punctuation are handled as the tokenizer handles them, and a word the vocabulary
lacks is shown as `<unk>`, which is all the word biLM sees of it. Where several candidates
are equally near (layer 0, where a word is one vector in every sentence), the tables say so
instead of listing an arbitrary few as if they were the nearest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import nn

from course.corpus import SENSE_LABELS
from course.harness import Sections

from . import analysis

UNK = "<unk>"
TIE = 1e-6  # cosines this close count as one


class PlaygroundError(ValueError):
    """What was typed cannot be read as asked: the message says what the biLM reads."""


def as_read(sections: Sections, sentence: str, word2idx: Mapping[str, int]) -> list[str]:
    """The words of `sentence` as the word biLM reads them: tokenized by section 2, each
    one the vocabulary lacks as `<unk>`."""
    return [w if w in word2idx else UNK for w in sections.corpus.tokenize(sentence)]


def reading(sections: Sections, sentence: str, word2idx: Mapping[str, int]) -> str:
    """One or two lines: the sentence as the biLM reads it, and the typed words it does
    not know (each read as `<unk>`)."""
    words = sections.corpus.tokenize(sentence)
    if not words:
        return f"the biLM reads no word in {sentence!r}: only <s> and </s>"
    unknown = list(dict.fromkeys(w for w in words if w not in word2idx))
    line = "the biLM reads: " + " ".join(as_read(sections, sentence, word2idx))
    if unknown:
        line += (f"\n(unknown to its vocabulary, each read as {UNK}: "
                 + ", ".join(repr(w) for w in unknown) + ")")
    return line


def position(sections: Sections, sentence: str, word: str) -> int:
    """The index, among `sentence`'s words as the tokenizer reads them, of the first
    occurrence of `word` (also tokenized: "Bank," is "bank").

    Raises:
        PlaygroundError: `word` is not one word, or `sentence` does not hold it.
    """
    tokenize = sections.corpus.tokenize
    wanted = tokenize(word)
    if len(wanted) != 1:
        raise PlaygroundError(f"{word!r} is {len(wanted)} words as the tokenizer reads it "
                              f"({wanted}): choose one word")
    words = tokenize(sentence)
    if wanted[0] not in words:
        raise PlaygroundError(f"{wanted[0]!r} is not in the sentence as the tokenizer reads "
                              f"it: {words}")
    return words.index(wanted[0])


def predictions(sections: Sections, model: nn.Module, sentence: str,
                word2idx: Mapping[str, int], idx2word: Mapping[int, str], k: int = 3) -> str:
    """`analysis.top_predictions` as a table, each word as the biLM reads it: a typed word
    the vocabulary lacks is shown as `<unk>` (with what was typed beside it)."""
    read = as_read(sections, sentence, word2idx)
    if not read:
        raise PlaygroundError(f"no word in {sentence!r} as the tokenizer reads it")
    found = analysis.top_predictions(sections, model, sentence, dict(word2idx),
                                     dict(idx2word), k=k)
    shown = [(typed if seen != UNK else f"{UNK} ({typed})", after, before)
             for (typed, after, before), seen in zip(found, read, strict=True)]
    return reading(sections, sentence, word2idx) + "\n\n" + analysis.predictions_table(shown)


def nearest(sections: Sections, model: nn.Module, word2idx: Mapping[str, int],
            sentence: str, word: str, references: Any = SENSE_LABELS, k: int = 3) -> str:
    """The `k` occurrences of `word` among `references` nearest to it in `sentence`, per
    layer, as a table; where more candidates than `k` tie for the nearest, the layer's
    lines say so (and how many tie) instead of ranking them.

    Raises:
        PlaygroundError: `word` is not in `sentence`, or no reference holds it.
    """
    at = position(sections, sentence, word)
    target = sections.corpus.tokenize(sentence)[at]
    if target not in word2idx:
        raise PlaygroundError(f"{target!r} is not in the vocabulary: the biLM reads it as "
                              f"{UNK}, and no corpus sentence holds it")
    as_typed = " ".join(sections.corpus.tokenize(sentence))  # a corpus sentence, typed
    try:                                                    # otherwise, is not its own
        every = analysis.nearest_occurrences(sections, model, dict(word2idx), as_typed,
                                             target, references, k=10**9)
    except ValueError as err:
        raise PlaygroundError(str(err)) from None
    lines = [reading(sections, sentence, word2idx), ""]
    for layer in sorted({n.layer for n in every}):
        ranked = [n for n in every if n.layer == layer]
        tied = [n for n in ranked if ranked[0].cosine - n.cosine <= TIE]
        if len(tied) > 1:
            senses = ", ".join(f"{sum(n.sense == s for n in tied)} {s}"
                               for s in dict.fromkeys(n.sense for n in tied))
            lines.append(f"layer {layer}  {ranked[0].cosine:6.3f}  a tie: {len(tied)} of "
                         f"{len(ranked)} occurrences are equally near ({senses})")
            continue
        lines += [analysis.nearest_table([n]) for n in ranked[:k]]
    return "\n".join(lines)


def nearest_words(sections: Sections, model: nn.Module, word2idx: Mapping[str, int],
                  word: str, k: int = 5, spelling: bool = False) -> str:
    """The `k` words of the vocabulary nearest to `word` by the model's layer 0 (the token
    layer alone), each vector centred by the vocabulary's mean as `analysis.nearest_relatives`
    centres it. A word biLM (not `spelling`, which a character biLM reads) reads a word it
    lacks as `<unk>`, and the line says so. Ties for the nearest are said to be ties.

    Raises:
        PlaygroundError: `word` is not one word as the tokenizer reads it.
    """
    wanted = sections.corpus.tokenize(word)
    if len(wanted) != 1:
        raise PlaygroundError(f"{word!r} is {len(wanted)} words as the tokenizer reads it "
                              f"({wanted}): choose one word")
    import torch.nn.functional as F

    special = sections.corpus.SPECIAL_TOKENS
    words = [w for w in word2idx if w not in special]
    vectors = analysis.token_layer(sections, model, words, dict(word2idx))
    mean = vectors.mean(dim=0)
    query = analysis.token_layer(sections, model, wanted, dict(word2idx))[0] - mean
    cosines = F.cosine_similarity(query.unsqueeze(0), vectors - mean, dim=-1)
    order = cosines.argsort(descending=True, stable=True).tolist()
    tied = [i for i in order if float(cosines[order[0]] - cosines[i]) <= TIE]
    shown = ", ".join(f"{words[i]} {float(cosines[i]):.3f}" for i in order[:k])
    note = f"  (a tie: {len(tied)} words equally near)" if len(tied) > 1 else ""
    if not spelling and wanted[0] not in word2idx:
        note += f"  (read as {UNK}: the vocabulary lacks it)"
    return f"{wanted[0]:<14} {shown}{note}"
