"""Section 6 - Context comparison: how much one word's embedding moves with its sentence.

For every polysemous target word of the corpus (bank, play, right, watch) and every pair of
sentences that contain it, the cosine similarity of the word's embeddings, one per layer:

    layer 0   the token on its own: the same vector in every sentence, so the cosine is 1
    layer 1   first biLSTM layer: the paper finds it closer to syntax (POS tagging, Table 5)
    layer 2   second biLSTM layer: closer to meaning (word sense disambiguation, Table 6)

The pairs fall into two groups: same sense (two "bank" of money) and different sense (a
"bank" of money and a "bank" of a river). The seed notebook expects different-sense pairs
to drift apart as the layers go up while same-sense pairs stay close; section 6's notebook
shows what this toy biLM actually does.

Cosine similarity here is cos(a, b) = <a, b> / (|a| |b|), with the convention that a zero
vector is similar to nothing: cos(0, b) = 0.
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

from .s2_corpus import SENSE_LABELS, tokenize
from .s3_bilm import BiLM
from .s5_extract import get_elmo_embeddings

__all__ = [
    "ContextComparison",
    "SentencePair",
    "compare_contexts",
    "cosine_sim",
    "plot_context_comparison",
]


def cosine_sim(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of two vectors, or of two batches of vectors along the last axis.

    Args:
        a: (..., D) a vector (D,) or a batch of them.
        b: (..., D) of exactly the same shape as `a` (no broadcasting: a shape mismatch is
            almost always a bug, such as comparing a layer with a whole stack).

    Returns:
        (...) the cosines, in [-1, 1], as a float tensor: a 0-d tensor for two vectors
        (`float(cosine_sim(a, b))` gives the number). Where either vector is zero the result
        is 0, the convention of `torch.nn.functional.cosine_similarity`.

    Raises:
        TypeError: an input is not a tensor.
        ValueError: the shapes differ, or an input is 0-d or has D = 0.
    """
    # BEGIN SOLUTION
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


def _target_position(sentence: str, word: str) -> int:
    """The index of `word`'s first occurrence among the words of `sentence`."""
    words = tokenize(sentence)
    if word not in words:
        raise ValueError(f"target word {word!r} is not in the sentence {sentence!r}")
    return words.index(word)


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
            holds its target word twice is compared at the word's first occurrence.

    Returns:
        a `ContextComparison` over every pair i < j of sentences with the same target word;
        the pair is same-sense when both sentences label the word with one sense.

    Raises:
        ValueError: no labels, or a target word that is not in its sentence.
    """
    # BEGIN SOLUTION
    if len(labels) == 0:
        raise ValueError("compare_contexts needs labelled sentences; got none")
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
    if not rows:
        raise ValueError("compare_contexts found no target word in two sentences")
    return ContextComparison(tuple(sentences), tuple(pairs), torch.stack(rows))
    # END SOLUTION


def _grouped_rows(comparison: ContextComparison) -> tuple[list[int], list[str]]:
    """Pair indices ordered word by word, same sense first; and one label per group."""
    order, labels = [], []
    for word in comparison.words:
        for same in (True, False):
            group = [i for i, pair in enumerate(comparison.pairs)
                     if pair.word == word and pair.same_sense == same]
            order += group
            labels += [f"{word}: {'same' if same else 'different'} sense"] * len(group)
    return order, labels


def plot_context_comparison(
    comparison: ContextComparison, path: str | Path | None = None
) -> Figure:
    """Draw a `ContextComparison`: every pair per layer, and the two sense groups per layer.

    Left, a heatmap: one row per sentence pair (grouped by word, same sense first), one
    column per layer. Right, a bar chart: the mean similarity of same-sense and of
    different-sense pairs at each layer, with one standard deviation over pairs.

    Args:
        comparison: the result of `compare_contexts`.
        path: where to save the figure (any format matplotlib knows from the suffix; folders
            are created); None to only return it.

    Returns:
        the `matplotlib.figure.Figure`. It is built without pyplot, so it needs no display
        and is never kept open by a global figure manager.
    """
    # BEGIN SOLUTION
    layers = range(comparison.num_layers)
    layer_names = [f"layer {k}" for k in layers]
    figure = Figure(figsize=(11, 6), layout="constrained")
    heat_ax, bar_ax = figure.subplots(1, 2, width_ratios=[1, 1.3])

    order, row_labels = _grouped_rows(comparison)
    values = comparison.similarity[order].numpy()
    image = heat_ax.imshow(values, aspect="auto", cmap="viridis",
                           vmin=min(0.0, float(values.min())), vmax=1.0, interpolation="nearest")
    figure.colorbar(image, ax=heat_ax, label="cosine similarity")
    groups = list(dict.fromkeys(row_labels))
    starts = [row_labels.index(g) for g in groups]
    ends = [*starts[1:], len(row_labels)]
    heat_ax.set_yticks([(s + e - 1) / 2 for s, e in zip(starts, ends, strict=True)], groups)
    for start in starts[1:]:
        heat_ax.axhline(start - 0.5, color="white", linewidth=1)
    heat_ax.set_xticks(list(layers), layer_names)
    heat_ax.set_xlabel("layer")
    heat_ax.set_ylabel("sentence pairs")
    heat_ax.set_title("Cosine similarity of the target word, per pair")

    width = 0.38
    for offset, same, name in ((-width / 2, True, "same sense"),
                               (width / 2, False, "different sense")):
        chosen = comparison.select(same)
        bar_ax.bar(np.arange(comparison.num_layers) + offset, chosen.mean(dim=0).numpy(),
                   width, yerr=chosen.std(dim=0).numpy(), capsize=4,
                   label=f"{name} ({len(chosen)} pairs)")
    bar_ax.set_xticks(list(layers), layer_names)
    bar_ax.set_xlabel("layer")
    bar_ax.set_ylabel("mean cosine similarity")
    bar_ax.set_ylim(min(0.0, float(comparison.similarity.min())), 1.05)
    bar_ax.set_title("Same sense vs different sense (mean ± 1 sd)")
    bar_ax.legend(loc="upper right")

    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=120)
    return figure
    # END SOLUTION
