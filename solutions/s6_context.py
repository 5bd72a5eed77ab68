"""Section 6 - Context comparison: how much one word's embedding moves with its sentence.

For every polysemous target word of the corpus (bank, play, right, watch) and every pair of
sentences that contain it, the cosine similarity of the word's embeddings, one per layer:

    layer 0   the token on its own: the same vector in every sentence, so the cosine is 1
    layer 1   first biLSTM layer: the paper finds it closer to syntax (POS tagging, Table 6)
    layer 2   second biLSTM layer: closer to meaning (word sense disambiguation, Table 5)

The pairs fall into two groups: same sense (two "bank"s of money) and different sense (a
"bank" of money and a "bank" of a river). Where context decides the sense, the layers that
read the context should give same-sense pairs a higher similarity than different-sense
ones: the gap between the two is what a layer knows of the sense.

Cosine similarity here is cos(a, b) = <a, b> / (|a| |b|), with the convention that a zero
vector is similar to nothing: cos(0, b) = 0.

Given, to read a comparison against its baselines and to see it:

    anisotropy_baseline     per layer, the cosine of two tokens of different words: how
                            similar unrelated vectors already are (Ethayarajh 2019)
    compare_halves          the comparison on the forward half (the words before the
                            target) and on the backward half (the words after it)
    nearest_sense_accuracy  does the word's nearest other occurrence have its sense?
    nearest_occurrences     a word's nearest occurrences per layer (the paper's Table 4)
    plot_context_comparison, plot_halves, plot_sense_pca    the pictures
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from matplotlib.figure import Figure
from torch import nn
from torch.nn import functional as F

from .s2_corpus import CORPUS, HELDOUT_LABELS, PHRASES_OF, SENSE_LABELS, UNK, tokenize
from .s3_bilm import BiLM
from .s5_extract import get_elmo_embeddings

__all__ = [
    "ContextComparison",
    "NearestSense",
    "Neighbour",
    "SentencePair",
    "anisotropy_baseline",
    "compare_contexts",
    "compare_halves",
    "cosine_sim",
    "nearest_occurrences",
    "nearest_sense_accuracy",
    "nearest_table",
    "plot_context_comparison",
    "plot_halves",
    "plot_sense_pca",
]


def cosine_sim(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of two vectors, or of two batches of vectors along the last axis.

    Args:
        a: (..., D) a vector (D,) or a batch of them.
        b: (..., D) of exactly the same shape as `a` (no broadcasting: a shape mismatch is
            almost always a bug, such as comparing a layer with a whole stack).

    Returns:
        (...) the cosines, in [-1, 1] up to float32 rounding, as a floating-point tensor: a
        0-d tensor for two vectors (`float(cosine_sim(a, b))` gives the number). Where
        either vector is zero the result is 0, the convention of
        `torch.nn.functional.cosine_similarity`.

    Raises:
        TypeError: an input is not a tensor (from the given `_check_vectors`).
        ValueError: the shapes differ, or an input is 0-d or has D = 0 (idem).
    """
    _check_vectors(a, b)  # clear errors for what has no cosine, given below
    # BEGIN SOLUTION
    a, b = a.double(), b.double()  # float32 squares of large components overflow
    a_norm = torch.linalg.vector_norm(a, dim=-1, keepdim=True)
    b_norm = torch.linalg.vector_norm(b, dim=-1, keepdim=True)
    # Normalise first, then take the dot product: a zero vector stays zero instead of 0/0.
    a_unit = torch.where(a_norm > 0, a / a_norm.clamp_min(1e-300), 0.0)
    b_unit = torch.where(b_norm > 0, b / b_norm.clamp_min(1e-300), 0.0)
    return (a_unit * b_unit).sum(dim=-1).clamp(-1.0, 1.0).float()
    # END SOLUTION


class SentencePair(NamedTuple):
    """Two sentences that contain one target word: indices into the compared sentences."""

    word: str
    first: int
    second: int
    same_sense: bool


@dataclass(frozen=True)
class ContextComparison:
    """What `compare_contexts` returns.

    sentences:  the compared sentences, in the order of the labels given.
    pairs:      every pair (i < j) of sentences with the same target word, word by word.
    similarity: (len(pairs), num_layers) cosine of the target word's embeddings per layer.
    """

    sentences: tuple[str, ...]
    pairs: tuple[SentencePair, ...]
    similarity: torch.Tensor

    @property
    def words(self) -> tuple[str, ...]:
        """The target words, in order of first appearance."""
        return tuple(dict.fromkeys(pair.word for pair in self.pairs))

    @property
    def num_layers(self) -> int:
        return self.similarity.shape[1]

    def select(self, same_sense: bool, word: str | None = None) -> torch.Tensor:
        """(n, num_layers) the similarities of the same-sense (or different-sense) pairs,
        of one target word or of all of them."""
        rows = [i for i, pair in enumerate(self.pairs)
                if pair.same_sense == same_sense and word in (None, pair.word)]
        return self.similarity[rows]

    def table(self) -> str:
        """Mean similarity per target word, sense group and layer, as aligned text."""
        header = f"{'word':<8}{'pairs':<22}" + "".join(
            f"{f'layer {k}':>9}" for k in range(self.num_layers))
        lines = [header, "-" * len(header)]
        for word in (*self.words, None):
            for same in (True, False):
                chosen = self.select(same, word)
                group = f"{'same' if same else 'different'} sense ({len(chosen)})"
                cells = "".join(f"{float(v):>9.3f}" for v in chosen.mean(dim=0))
                lines.append(f"{word or 'all':<8}{group:<22}{cells}")
        return "\n".join(lines)


def _check_vectors(a: torch.Tensor, b: torch.Tensor) -> None:
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"cosine_sim expects tensors, got {type(x).__name__} for {name}")
    if a.shape != b.shape:
        raise ValueError(
            f"cosine_sim expects two tensors of one shape (..., D), got {tuple(a.shape)} "
            f"and {tuple(b.shape)}"
        )
    if a.dim() == 0 or a.shape[-1] == 0:
        raise ValueError(f"cosine_sim needs vectors with D >= 1 components, got {tuple(a.shape)}")


def _target_position(sentence: str, word: str) -> int:
    """The index of `word`'s first occurrence among the words of `sentence`."""
    words = tokenize(sentence)
    if word not in words:
        raise ValueError(f"target word {word!r} is not in the sentence {sentence!r}")
    return words.index(word)


def _check_labels(labels: Sequence[tuple[str, str, str]]) -> None:
    """Labels to compare: some, each target word in its sentence, one word in two of them."""
    if len(labels) == 0:
        raise ValueError("compare_contexts needs labelled sentences; got none")
    for sentence, word, _ in labels:
        _target_position(sentence, word)
    words = [word for _, word, _ in labels]
    if len(set(words)) == len(words):
        raise ValueError("compare_contexts found no target word in two sentences")


def compare_contexts(
    model: BiLM,
    word2idx: dict[str, int],
    labels: Sequence[tuple[str, str, str]] = SENSE_LABELS,
) -> ContextComparison:
    """Cosine similarity of each target word between every two of its sentences, per layer.

    Args:
        model: a pre-trained `BiLM`; embeddings come from `get_elmo_embeddings`.
        word2idx: the vocabulary.
        labels: (sentence, target word, sense) triples, as `SENSE_LABELS`. A sentence that
            holds its target word twice is compared at the word's first occurrence (the
            given `_target_position(sentence, word)` finds it).

    Returns:
        a `ContextComparison` of the sentences in the order of `labels`, and of every pair
        i < j of sentences with the same target word: word by word in order of first
        appearance, each word's pairs in the order of `itertools.combinations`. A pair is
        same-sense when both sentences label the word with one sense; its similarity row is
        `cosine_sim` of the word's embeddings in the two sentences, one per layer.

    Raises:
        ValueError: no labels, a target word that is not in its sentence, or no target
            word in two sentences (from the given `_check_labels`).
    """
    _check_labels(labels)  # clear errors for labels with nothing to compare, given above
    # BEGIN SOLUTION
    sentences = [sentence for sentence, _, _ in labels]
    positions = [_target_position(sentence, word) for sentence, word, _ in labels]
    embeddings = get_elmo_embeddings(model, sentences, word2idx)
    targets = [emb[:, pos].cpu() for emb, pos in zip(embeddings, positions, strict=True)]
    pairs, rows = [], []
    for word in dict.fromkeys(word for _, word, _ in labels):
        having = [i for i, (_, w, _) in enumerate(labels) if w == word]
        for i, j in itertools.combinations(having, 2):
            pairs.append(SentencePair(word, i, j, labels[i][2] == labels[j][2]))
            rows.append(cosine_sim(targets[i], targets[j]))  # (num_layers,)
    return ContextComparison(tuple(sentences), tuple(pairs), torch.stack(rows))
    # END SOLUTION


# --- given: the readings of a comparison against its baselines, and its pictures ---------


def anisotropy_baseline(
    model: BiLM, word2idx: dict[str, int], sentences: Sequence[str] = CORPUS
) -> torch.Tensor:
    """(num_layers,) the mean cosine of two tokens of *different* words, per layer.

    Contextual embeddings are anisotropic (Ethayarajh 2019): they fill a narrow cone, so
    even unrelated words have a positive cosine, and more so in some layers than others.
    A similarity means something only above this level. Every pair of tokens of
    `sentences` whose words differ counts once; layer 0 is the level of the token layer.
    """
    embeddings = get_elmo_embeddings(model, list(sentences), word2idx)
    units = F.normalize(torch.cat(list(embeddings), dim=1).double().cpu(), dim=-1)  # (L, T, D)
    words = [word for sentence in sentences for word in tokenize(sentence)]
    ids = torch.tensor([word2idx.get(word, UNK) for word in words])
    different = ids.unsqueeze(0) != ids.unsqueeze(1)  # (T, T), False on the diagonal
    cosines = units @ units.transpose(1, 2)  # (L, T, T)
    return ((cosines * different).sum(dim=(1, 2)) / different.sum()).float()


class _Half(nn.Module):
    """A biLM whose layers keep one direction's half: h_f of [h_f; h_b], or h_b."""

    def __init__(self, model: BiLM, direction: str) -> None:
        super().__init__()
        self.model, self.direction = model, direction

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor | None = None):
        output = self.model(ids, lengths)
        width = output.layers.shape[-1] // 2
        half = slice(0, width) if self.direction == "forward" else slice(width, None)
        return output._replace(layers=output.layers[..., half])


def compare_halves(
    model: BiLM, word2idx: dict[str, int], labels: Sequence[tuple[str, str, str]] = SENSE_LABELS
) -> dict[str, ContextComparison]:
    """`compare_contexts` on each direction's half of every layer, by direction.

    At the target word, the forward half has read the words before it (the opening), the
    backward half the words after it (the ending); layer 0's halves are both the token.
    """
    return {direction: compare_contexts(_Half(model, direction), word2idx, labels)
            for direction in ("forward", "backward")}


class NearestSense(NamedTuple):
    """1-nearest-neighbour sense accuracy of one target word, per layer.

    accuracy: (num_layers,) how often the most similar other occurrence of the word has the
              query's sense; where several are equally similar (layer 0: all of them), the
              share of those with the query's sense, what picking one at random gives.
    chance:   the share of candidates with the query's sense, averaged over the queries.
    n:        the number of queries.
    """

    accuracy: torch.Tensor
    chance: float
    n: int


def nearest_sense_accuracy(
    model: BiLM,
    word2idx: dict[str, int],
    queries: Sequence[tuple[str, str, str]] = SENSE_LABELS,
    references: Sequence[tuple[str, str, str]] = SENSE_LABELS,
) -> dict[str, NearestSense]:
    """Does a word's nearest occurrence among `references` have its sense? Per word, layer.

    A query's candidates are the other occurrences of its word in `references`, except
    those of its sense that share its opening or its ending (`PHRASES_OF`): half of their
    vector would be the query's own, and the nearest one would be found for that reason.
    """
    labels = list(dict.fromkeys([*queries, *references]))
    vectors = _target_vectors(model, word2idx, labels)  # (L, N, D), unit length
    index = {label: n for n, label in enumerate(labels)}
    found = {}
    for word in dict.fromkeys(w for _, w, _ in queries):
        accuracies, chances = [], []
        for query in (q for q in queries if q[1] == word):
            candidates = [r for r in references if r[1] == word and r != query
                          and not _share_a_phrase(query, r)]
            same = torch.tensor([r[2] == query[2] for r in candidates])
            cosines = torch.einsum("lcd,ld->lc", vectors[:, [index[r] for r in candidates]],
                                   vectors[:, index[query]])  # (L, C)
            nearest = cosines >= cosines.max(dim=1, keepdim=True).values - 1e-6  # (L, C)
            accuracies.append((nearest & same).sum(1) / nearest.sum(1))
            chances.append(float(same.double().mean()))
        found[word] = NearestSense(torch.stack(accuracies).mean(0).float(),
                                   sum(chances) / len(chances), len(chances))
    return found


def _share_a_phrase(a: tuple[str, str, str], b: tuple[str, str, str]) -> bool:
    """Two labelled sentences of one sense with the same opening or the same ending."""
    if a[1:] != b[1:] or a[0] not in PHRASES_OF or b[0] not in PHRASES_OF:
        return False
    return any(x == y for x, y in zip(PHRASES_OF[a[0]], PHRASES_OF[b[0]], strict=True))


def _target_vectors(
    model: BiLM, word2idx: dict[str, int], labels: Sequence[tuple[str, str, str]]
) -> torch.Tensor:
    """(L, N, D) the target word's embedding in each labelled sentence, of unit length."""
    sentences = [sentence for sentence, _, _ in labels]
    embeddings = get_elmo_embeddings(model, sentences, word2idx)
    targets = [e[:, _target_position(s, w)] for e, (s, w, _) in
               zip(embeddings, labels, strict=True)]
    return F.normalize(torch.stack(targets, dim=1).double().cpu(), dim=-1)


class Neighbour(NamedTuple):
    """One of the nearest occurrences of a word: its layer, cosine, sentence and sense."""

    layer: int
    cosine: float
    sentence: str
    sense: str


def nearest_occurrences(
    model: BiLM,
    word2idx: dict[str, int],
    sentence: str,
    word: str,
    references: Sequence[tuple[str, str, str]] = SENSE_LABELS,
    k: int = 3,
) -> list[Neighbour]:
    """The `k` occurrences of `word` in `references` nearest to it in `sentence`, per layer
    (the paper's Table 4 view): layer by layer, nearest first. `sentence` itself is never
    its own neighbour.

    Raises:
        ValueError: `word` is not in `sentence`, or not in any other reference.
    """
    candidates = [r for r in references if r[1] == word and r[0] != sentence]
    if not candidates:
        raise ValueError(f"no reference sentence other than {sentence!r} holds {word!r}")
    vectors = _target_vectors(model, word2idx, [(sentence, word, "?"), *candidates])
    cosines = torch.einsum("lcd,ld->lc", vectors[:, 1:], vectors[:, 0])  # (L, C)
    found = []
    for layer, row in enumerate(cosines):
        for c in row.argsort(descending=True, stable=True)[:k].tolist():
            other, _, sense = candidates[c]
            found.append(Neighbour(layer, float(row[c]), other, sense))
    return found


def nearest_table(neighbours: Sequence[Neighbour]) -> str:
    """`nearest_occurrences` as aligned text, one line per neighbour."""
    return "\n".join(f"layer {n.layer}  {n.cosine:6.3f}  {n.sense:<10} {n.sentence}"
                     for n in neighbours)


def _pooled_bars(ax, comparison: ContextComparison, baseline: torch.Tensor | None,
                 title: str) -> None:
    """Same-sense and different-sense mean similarity per layer (±1 sd over pairs), and
    the anisotropy baseline of each layer as a dotted step."""
    layers = np.arange(comparison.num_layers)
    width = 0.38
    for offset, same, name in ((-width / 2, True, "same sense"),
                               (width / 2, False, "different sense")):
        chosen = comparison.select(same)
        ax.bar(layers + offset, chosen.mean(dim=0).numpy(), width, capsize=4,
               yerr=chosen.std(dim=0).numpy(), label=f"{name} ({len(chosen)} pairs)")
    if baseline is not None:
        ax.hlines(baseline.numpy(), layers - 0.45, layers + 0.45, colors="black",
                  linestyles=":", label="two different words (anisotropy)")
    ax.set_xticks(layers, [f"layer {k}" for k in layers])
    ax.set_xlabel("layer")
    ax.set_ylabel("mean cosine similarity")
    ax.set_ylim(min(0.0, float(comparison.similarity.min())), 1.1)
    ax.set_title(title)
    ax.legend(loc="lower left", fontsize="small")


def plot_context_comparison(
    comparison: ContextComparison,
    baseline: torch.Tensor | None = None,
    path: str | Path | None = None,
) -> Figure:
    """Draw a `ContextComparison`: the sense gap of every word, and the two groups pooled.

    Left, per layer, one bar per target word: its mean same-sense similarity minus its mean
    different-sense similarity, 0 where the layer does not tell the senses apart. Right,
    the same-sense and different-sense similarity of all pairs per layer (mean ± 1 sd over
    pairs), with `baseline` (`anisotropy_baseline`), the level of two unrelated words.

    Args:
        comparison: the result of `compare_contexts`.
        baseline: (num_layers,) the anisotropy baseline per layer, or None to leave it out.
        path: where to save the figure (any format matplotlib knows from the suffix; folders
            are created); None to only return it.

    Returns:
        the `matplotlib.figure.Figure`. It is built without pyplot, so it needs no display
        and is never kept open by a global figure manager.
    """
    layers = np.arange(comparison.num_layers)
    figure = Figure(figsize=(12, 4.8), layout="constrained")
    gap_ax, pooled_ax = figure.subplots(1, 2)
    width = 0.8 / len(comparison.words)
    for w, word in enumerate(comparison.words):
        gap = comparison.select(True, word).mean(0) - comparison.select(False, word).mean(0)
        gap_ax.bar(layers + (w - (len(comparison.words) - 1) / 2) * width, gap.numpy(), width,
                   label=word)
    gap_ax.axhline(0, color="black", linewidth=0.8)
    gap_ax.set_xticks(layers, [f"layer {k}" for k in layers])
    gap_ax.set_xlabel("layer")
    gap_ax.set_ylabel("same-sense minus different-sense cosine")
    gap_ax.set_title("How far each layer tells a word's senses apart")
    gap_ax.legend(fontsize="small")
    _pooled_bars(pooled_ax, comparison, baseline,
                 f"All {len(comparison.pairs)} pairs (mean ± 1 sd)")
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=120)
    return figure


def plot_halves(
    halves: dict[str, ContextComparison],
    baseline: torch.Tensor | None = None,
    path: str | Path | None = None,
) -> Figure:
    """`compare_halves`' two comparisons side by side: what the forward half (the words
    before the target) and the backward half (the words after it) tell of the sense.
    `baseline`, as in `plot_context_comparison`, is that of the whole vectors."""
    figure = Figure(figsize=(12, 4.5), layout="constrained")
    for ax, (direction, comparison) in zip(figure.subplots(1, len(halves)), halves.items(),
                                           strict=True):
        _pooled_bars(ax, comparison, baseline, f"{direction} half of each layer")
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=120)
    return figure


def plot_sense_pca(
    model: BiLM,
    word2idx: dict[str, int],
    word: str,
    labels: Sequence[tuple[str, str, str]] = SENSE_LABELS + HELDOUT_LABELS,
    path: str | Path | None = None,
) -> Figure:
    """Every occurrence of `word` in `labels`, one panel per layer, on the layer's first two
    principal components: coloured by sense, hollow for held-out sentences, each point named
    by its sentence's opening and ending ("o2 e3": opening 2, ending 3 of its sense).

    Layer 0 is one point: the word without its context. The axes' percentages say how much
    of the spread of the word's vectors each component holds.
    """
    chosen = [label for label in labels if label[1] == word]
    if not chosen:
        raise ValueError(f"no labelled sentence holds {word!r}")
    vectors = _target_vectors(model, word2idx, chosen)  # (L, N, D)
    senses = list(dict.fromkeys(sense for _, _, sense in chosen))
    held_out = {sentence for sentence, _, _ in HELDOUT_LABELS}
    figure = Figure(figsize=(4.2 * len(vectors), 4.8), layout="constrained")
    for layer, (ax, points) in enumerate(zip(figure.subplots(1, len(vectors)), vectors,
                                             strict=True)):
        centred = points - points.mean(dim=0)
        _, singular, directions = torch.linalg.svd(centred, full_matrices=False)
        ax.set_title(f"'{word}', layer {layer}")
        if singular[0] < 1e-6:  # one vector in every sentence: nothing to spread out
            ax.scatter([0], [0], s=40, color="grey")
            ax.annotate("the same vector\nin every sentence", (0, 0), xytext=(8, 8),
                        textcoords="offset points")
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        xy = (centred @ directions[:2].T).numpy()  # (N, 2)
        share = (singular**2 / (singular**2).sum())[:2].numpy()
        for s, sense in enumerate(senses):
            for hollow in (False, True):
                rows = [n for n, (sentence, _, x) in enumerate(chosen)
                        if x == sense and (sentence in held_out) == hollow]
                if rows:
                    ax.scatter(xy[rows, 0], xy[rows, 1], s=40, color=f"C{s}",
                               facecolors="none" if hollow else f"C{s}",
                               label=f"{sense}{' (held out)' if hollow else ''}")
        for (sentence, _, _), (x, y) in zip(chosen, xy, strict=True):
            if sentence in PHRASES_OF:
                k, j = PHRASES_OF[sentence]
                ax.annotate(f"o{k} e{j}", (x, y), fontsize=6, alpha=0.7,
                            xytext=(3, 3), textcoords="offset points")
        ax.set_xlabel(f"PC 1 ({share[0]:.0%})")
        ax.set_ylabel(f"PC 2 ({share[1]:.0%})")
    figure.legend(*figure.axes[-1].get_legend_handles_labels(), loc="outside lower center",
                  ncols=2 * len(senses), fontsize="small")
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=120)
    return figure
