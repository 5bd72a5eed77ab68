"""Section 7 - Learned layer weights: the scalar mix of ELMo, and what a task makes of it.

ELMo hands a downstream task not one layer but a learned mixture of all of them
(Peters et al. 2018, eq. 1):

    ELMo_k = gamma * sum_j s_j h_kj,    s = softmax(w),    j = 0 .. L

with one pre-softmax scalar w_j per layer and a scale gamma, learned with the task while
the biLM stays frozen. `ScalarMix` follows AllenNLP's `allennlp/modules/scalar_mix.py`:
w starts at 0 (uniform weights), gamma at 1, `trainable=False` freezes both, and optional
layer normalisation computes one mean and one variance per layer over the unmasked
positions of the whole batch (the paper's "in some cases, layer normalization ... helped").

`LayerWeightDemo` learns s and gamma together with a linear classifier on two toy tasks,
each cross-validated on held-out splits that keep it fair (`ProbeTask.train_on`):

    word class   syntax-like: the word class of the corpus's unambiguous words, scored on
                 word types the classifier never saw (otherwise layer 0 would simply
                 memorise each word's class); chance is the most frequent class
    word sense   meaning-like: which of its two senses a polysemous word has, scored on
                 sentences whose opening and ending the classifier never saw (otherwise it
                 could recognise the phrase); chance, and layer 0's best, is 0.5

The paper reads its layers two ways. Learned weights (Sec. 5.5, Fig. 2): what each task's
mix takes from each layer. Single-layer probes (Sec. 5.3): a probe on one layer
alone, where the first biLSTM layer is the better one for POS tagging (Table 6, 97.3
against 96.8) and the second for word sense disambiguation (Table 5, 69.0 against 67.4).
`evaluate_task` measures both; that a syntax-like task prefers a lower layer and a
meaning-like task the top one is the hypothesis, and section 7's notebook measures what
this toy biLM makes of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from matplotlib.figure import Figure
from torch import nn
from torch.nn import functional as F

from .s1_setup import set_seed
from .s2_corpus import (
    CORPUS,
    HELDOUT_LABELS,
    PHRASES_OF,
    SENSE_LABELS,
    SENSE_PHRASES,
    tokenize,
)
from .s3_bilm import BiLM
from .s5_extract import get_elmo_embeddings

__all__ = [
    "NUM_FOLDS",
    "WORD_CLASSES",
    "LayerWeightDemo",
    "ProbeTask",
    "ScalarMix",
    "TaskResult",
    "cross_validate",
    "evaluate_task",
    "plot_layer_weights",
    "sense_task",
    "word_class_task",
]

# The word class of every corpus word that has only one. Left out: the four polysemous
# target words; "love", "to" and "gold", whose class depends on the sentence (the noun in
# "about love", the verb in "the actors love the play"); "and", "before" and "where", the
# only words of their classes.
WORD_CLASSES: dict[str, tuple[str, ...]] = {
    "determiner": ("a", "all", "every", "her", "his", "the", "their", "this", "your"),
    "pronoun": ("he", "him", "i", "it", "she", "they", "we", "you"),
    "noun": ("actors", "answer", "birds", "boat", "bridge", "cash", "children", "corner",
             "day", "ducks", "film", "fish", "football", "friends", "games", "gift", "loan",
             "money", "music", "night", "park", "river", "school", "shop", "stage", "stars",
             "strap", "street", "teacher", "television", "test", "theatre", "tickets",
             "time", "trees", "water", "wrist"),
    "verb": ("are", "closed", "gave", "go", "got", "hit", "is", "keep", "keeps", "like",
             "look", "paid", "pay", "put", "said", "sat", "save", "saw", "sit", "swim",
             "think", "took", "turn", "walked", "was", "were", "wore", "wrote"),
    "adjective": ("new", "next", "safe", "wrong"),
    "adverb": ("again", "down", "often", "together"),
    "preposition": ("about", "after", "along", "as", "at", "by", "for", "from", "in", "into",
                    "near", "of", "on", "past", "under", "with"),
}

NUM_FOLDS = 4


class ScalarMix(nn.Module):
    """gamma * sum_j softmax(w)_j * layer_j: a learned mixture of same-shaped layers.

    Semantics of AllenNLP's `ScalarMix` (allennlp/modules/scalar_mix.py).

    Args:
        mixture_size: the number of layers mixed, L + 1 (3 for this biLM).
        do_layer_norm: normalise each layer to zero mean and unit variance before weighting,
            with one mean and variance per layer over all unmasked entries of the batch:
            (x - mean) / sqrt(variance + eps), the variance with divisor n (`unbiased=False`)
            and a small eps, AllenNLP's 1e-12, so that a constant layer gives 0, not nan.
        initial_scalar_parameters: the pre-softmax scalars w to start from; None gives
            zeros, so every layer starts with weight 1 / mixture_size.
        trainable: False freezes the scalars and gamma together.

    Attributes:
        scalar_parameters: an `nn.Parameter` (mixture_size,), the pre-softmax scalars w;
            requires_grad is `trainable`. (A plain tensor would be no part of
            `parameters()`, so no optimizer would train it, nor `state_dict()`.)
        gamma: an `nn.Parameter` (1,), the scale, starting at 1; requires_grad is `trainable`.
        do_layer_norm: the argument, as given.

    Raises:
        ValueError: mixture_size < 1, or initial scalars of another length (from the given
            `_check_mix_sizes`).
    """

    def __init__(
        self,
        mixture_size: int,
        do_layer_norm: bool = False,
        initial_scalar_parameters: Sequence[float] | None = None,
        trainable: bool = True,
    ) -> None:
        _check_mix_sizes(mixture_size, initial_scalar_parameters)  # clear errors, given below
        # BEGIN SOLUTION
        super().__init__()
        if initial_scalar_parameters is None:
            initial_scalar_parameters = [0.0] * mixture_size
        self.do_layer_norm = do_layer_norm
        self.scalar_parameters = nn.Parameter(
            torch.tensor([float(w) for w in initial_scalar_parameters]), requires_grad=trainable)
        self.gamma = nn.Parameter(torch.tensor([1.0]), requires_grad=trainable)
        # END SOLUTION

    @property
    def weights(self) -> torch.Tensor:
        """(mixture_size,) softmax(w): non-negative, summing to 1."""
        # BEGIN SOLUTION
        return torch.softmax(self.scalar_parameters, dim=0)
        # END SOLUTION

    def forward(
        self, tensors: Sequence[torch.Tensor] | torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Mix the layers.

        Args:
            tensors: mixture_size tensors of one shape (..., D), or one tensor (L, ..., D)
                whose first axis is the layer axis (as the biLM's `layers`).
            mask: (...) True (or 1) at real positions; used only with layer normalisation,
                where None counts every position.

        Returns:
            (..., D) gamma * sum_j weights[j] * tensors[j], each layer normalised first when
            `do_layer_norm`.

        Raises:
            ValueError: the number of layers is not mixture_size, the layers differ in shape,
                or, with layer normalisation, the mask does not match them or masks every
                position (from the given `_check_layers`).
        """
        self._check_layers(tensors, mask)  # clear errors for layers it cannot mix, given below
        # BEGIN SOLUTION
        layers = list(tensors)
        if self.do_layer_norm:
            layers = [self._layer_norm(layer, mask) for layer in layers]
        return self.gamma * sum(w * layer for w, layer in zip(self.weights, layers, strict=True))
        # END SOLUTION

    @staticmethod
    def _layer_norm(layer: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """(..., D) `layer` minus its mean over the unmasked entries, over their std."""
        # BEGIN SOLUTION
        if mask is None:
            mask = torch.ones(layer.shape[:-1], dtype=torch.bool, device=layer.device)
        keep = mask.to(layer.dtype).unsqueeze(-1)  # (..., 1)
        count = keep.sum() * layer.shape[-1]
        mean = (layer * keep).sum() / count
        variance = (((layer - mean) * keep) ** 2).sum() / count
        return (layer - mean) / torch.sqrt(variance + 1e-12)
        # END SOLUTION

    def _check_layers(self, tensors: Sequence[torch.Tensor] | torch.Tensor,
                      mask: torch.Tensor | None) -> None:
        mixture_size = len(self.scalar_parameters)
        if len(tensors) != mixture_size:
            raise ValueError(
                f"ScalarMix was built to mix {mixture_size} layers, got {len(tensors)}")
        shapes = {tuple(t.shape) for t in tensors}
        if len(shapes) != 1:
            raise ValueError(f"ScalarMix needs layers of one shape, got {sorted(shapes)}")
        if not self.do_layer_norm or mask is None:
            return  # the mask is used only by the layer normalisation
        positions = tensors[0].shape[:-1]
        if mask.shape != positions:
            raise ValueError(
                f"mask must have the layers' shape without D, {tuple(positions)}, "
                f"got {tuple(mask.shape)}"
            )
        if not mask.any():
            raise ValueError("layer normalisation needs at least one unmasked position")


def _check_mix_sizes(mixture_size: int, initial_scalar_parameters: Sequence[float] | None
                     ) -> None:
    if not isinstance(mixture_size, int) or mixture_size < 1:
        raise ValueError(f"ScalarMix needs mixture_size >= 1 layers, got {mixture_size!r}")
    if initial_scalar_parameters is not None and len(initial_scalar_parameters) != mixture_size:
        raise ValueError(
            f"initial_scalar_parameters has {len(initial_scalar_parameters)} values "
            f"({list(initial_scalar_parameters)}); mixture_size is {mixture_size}"
        )


class LayerWeightDemo(nn.Module):
    """ELMo on a toy task: a `ScalarMix` of the frozen biLM's layers, then a linear classifier.

    The biLM is frozen by construction: it only ever produced the `layers` given here, under
    `torch.no_grad()` (section 5); only the mix (scalars and gamma) and the classifier learn.

    Args:
        num_layers: layers in the input, L + 1 (3), or 1 to probe one layer on its own.
        input_dim: width D of each layer (512).
        num_classes: the task's number of classes.
        do_layer_norm: normalise each layer in the mix, so that its weight measures what the
            task takes from it rather than how large its values are.

    Attributes:
        mix: the `ScalarMix(num_layers, do_layer_norm=do_layer_norm)` of the layers.
        classifier: `nn.Linear(input_dim, num_classes)`, applied to the mix.
    """

    def __init__(
        self, num_layers: int, input_dim: int, num_classes: int, do_layer_norm: bool = True
    ) -> None:
        # BEGIN SOLUTION
        super().__init__()
        self.mix = ScalarMix(num_layers, do_layer_norm=do_layer_norm)
        self.classifier = nn.Linear(input_dim, num_classes)
        # END SOLUTION

    def forward(self, layers: torch.Tensor) -> torch.Tensor:
        """(L, N, D) embeddings of N tokens -> (N, num_classes) logits."""
        # BEGIN SOLUTION
        return self.classifier(self.mix(layers))
        # END SOLUTION

    def fit(
        self,
        layers: torch.Tensor,
        labels: torch.Tensor,
        epochs: int = 100,
        lr: float = 0.05,
    ) -> list[float]:
        """Train the mix and the classifier together, full batch, with Adam on cross-entropy.

        Every epoch is one step on the whole batch: the mean cross-entropy of `self(layers)`
        against `labels`, its gradient from zero, then one step of the one Adam optimizer
        (made once, over every parameter that requires a gradient) that lives for the whole
        run. The module is put in training mode first.

        Args:
            layers: (L, N, D) the training tokens' embeddings.
            labels: (N,) LongTensor of class indices.
            epochs: full-batch steps.
            lr: Adam's learning rate, for the scalars, gamma and the classifier alike.

        Returns:
            the training loss before each step: a list of `epochs` python floats (each
            loss's `.item()`), the first being the loss of the weights fit started from.
        """
        # BEGIN SOLUTION
        optimizer = torch.optim.Adam([p for p in self.parameters() if p.requires_grad], lr=lr)
        self.train()
        losses = []
        for _ in range(epochs):
            optimizer.zero_grad()
            loss = F.cross_entropy(self(layers), labels)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses
        # END SOLUTION

    @torch.no_grad()
    def predict(self, layers: torch.Tensor) -> torch.Tensor:
        """(L, N, D) -> (N,) the most likely class of each token."""
        return self(layers).argmax(dim=-1)


class ProbeTask(NamedTuple):
    """A labelled toy task on frozen embeddings, with its cross-validation folds.

    name:      what the task is, for tables and figures.
    tokens:    the N labelled words, in order.
    layers:    (L, N, D) the embeddings of the N labelled tokens, every layer.
    labels:    (N,) class index of each token.
    classes:   class names, indexed by label.
    folds:     (N,) the fold of each token, 0 .. NUM_FOLDS - 1: each fold is scored once,
               by a probe that never saw it.
    train_on:  (NUM_FOLDS, N) bool: the tokens that train the probe scored on each fold.
               Never that fold's tokens, nor any token that would give them away.
    chance:    the accuracy of guessing without the embeddings (see each task).
    """

    name: str
    tokens: tuple[str, ...]
    layers: torch.Tensor
    labels: torch.Tensor
    classes: tuple[str, ...]
    folds: torch.Tensor
    train_on: torch.Tensor
    chance: float


def _embed_tokens(
    model: BiLM, word2idx: dict[str, int], sentences: Sequence[str], positions: Sequence[int]
) -> torch.Tensor:
    """(L, N, D) the embedding of word `positions[n]` of `sentences[n]`, on the CPU."""
    embeddings = get_elmo_embeddings(model, list(sentences), word2idx)
    return torch.stack([e[:, p].cpu() for e, p in zip(embeddings, positions, strict=True)], 1)


def word_class_task(
    model: BiLM, word2idx: dict[str, int], corpus: Sequence[str] = CORPUS
) -> ProbeTask:
    """Syntax-like: the class of every token of `corpus` listed in `WORD_CLASSES`.

    Folds split word *types*: within each class, the sorted types go round-robin to the
    folds, and a probe trains on the other folds' types only, so it must tell the class
    from what the embedding says about the word's role, not recognise the word. Chance is
    the share of the most frequent class.
    """
    classes = tuple(WORD_CLASSES)
    class_of = {w: c for c, words in WORD_CLASSES.items() for w in words}
    fold_of = {w: k % NUM_FOLDS for words in WORD_CLASSES.values()
               for k, w in enumerate(sorted(words))}
    sentences, positions, tokens = [], [], []
    for sentence in corpus:
        for position, word in enumerate(tokenize(sentence)):
            if word in class_of:
                sentences.append(sentence)
                positions.append(position)
                tokens.append(word)
    labels = torch.tensor([classes.index(class_of[word]) for word in tokens])
    folds = torch.tensor([fold_of[word] for word in tokens])
    train_on = torch.stack([folds != fold for fold in range(NUM_FOLDS)])
    chance = float(torch.bincount(labels).max()) / len(labels)
    return ProbeTask("word class", tuple(tokens),
                     _embed_tokens(model, word2idx, sentences, positions), labels, classes,
                     folds, train_on, chance)


def sense_task(
    model: BiLM,
    word2idx: dict[str, int],
    labels: Sequence[tuple[str, str, str]] = SENSE_LABELS + HELDOUT_LABELS,
) -> ProbeTask:
    """Meaning-like: the sense ("bank: river") of each sentence's target word.

    Every sentence is an opening, the word and an ending (`PHRASES_OF`), by default all 16
    sentences of every sense, training and held-out alike. The folds are blocks: fold
    2a + b holds the sentences whose opening is in half a of their sense's openings and
    whose ending is in half b of its endings, and its probe trains on the block that shares
    neither half (1 - a, 1 - b). A probe is then never scored on an opening or an ending it
    trained on: it must tell the sense from the context, not recognise the phrase. Each
    fold holds both senses of every word equally, so chance, guessing one of the word's two
    senses, is 0.5, which is also the best layer 0 can do: it is one vector for both senses.

    Raises:
        ValueError: a sentence that is not an opening, its word and an ending of the corpus.
    """
    halves = {key: (len(openings) // 2, len(endings) // 2)
              for key, (openings, endings) in SENSE_PHRASES.items()}
    classes = tuple(dict.fromkeys(f"{word}: {sense}" for _, word, sense in labels))
    blocks = []
    for sentence, word, sense in labels:
        if sentence not in PHRASES_OF:
            raise ValueError(f"{sentence!r} is not an opening, {word!r} and an ending of "
                             "the corpus's phrases")
        (k, j), (half_k, half_j) = PHRASES_OF[sentence], halves[word, sense]
        blocks.append((int(k >= half_k), int(j >= half_j)))
    opening_half, ending_half = torch.tensor(blocks).T  # (N,) each
    folds = 2 * opening_half + ending_half
    train_on = torch.stack([(opening_half != fold // 2) & (ending_half != fold % 2)
                            for fold in range(NUM_FOLDS)])
    sentences = [sentence for sentence, _, _ in labels]
    positions = [tokenize(sentence).index(word) for sentence, word, _ in labels]
    targets = torch.tensor([classes.index(f"{word}: {sense}") for _, word, sense in labels])
    return ProbeTask("word sense", tuple(word for _, word, _ in labels),
                     _embed_tokens(model, word2idx, sentences, positions), targets, classes,
                     folds, train_on, 0.5)


def cross_validate(
    task: ProbeTask, layers: Sequence[int] | None = None, seed: int = 0, **fit_options
) -> tuple[float, list[LayerWeightDemo]]:
    """Score each fold with a `LayerWeightDemo` trained on that fold's `task.train_on`.

    Args:
        task: the labelled embeddings.
        layers: which layers to mix (e.g. [1] for a single-layer probe); None: all of them.
        seed: seeds the classifiers' initial weights (fold k uses seed + k).
        fit_options: passed to `LayerWeightDemo.fit` (epochs, lr).

    Returns:
        (accuracy over all held-out tokens, the fold's trained demos).
    """
    chosen = task.layers if layers is None else task.layers[list(layers)]
    correct, demos = 0, []
    for fold in range(NUM_FOLDS):
        train, held_out = task.train_on[fold], task.folds == fold
        set_seed(seed + fold)  # the classifier's initial weights
        demo = LayerWeightDemo(chosen.shape[0], chosen.shape[-1], len(task.classes))
        demo.fit(chosen[:, train], task.labels[train], **fit_options)
        correct += int((demo.predict(chosen[:, held_out]) == task.labels[held_out]).sum())
        demos.append(demo)
    return correct / len(task.labels), demos


class TaskResult(NamedTuple):
    """What `evaluate_task` measured on one task.

    name:            the task's name.
    weights:         (L,) the learned softmax weights, averaged over the folds.
    gamma:           the learned gamma, averaged over the folds.
    accuracy:        held-out accuracy of the learned mix.
    layer_accuracy:  (L,) held-out accuracy of a probe on each single layer.
    chance:          the task's chance accuracy.
    n:               the number of held-out tokens scored (every token, once).
    """

    name: str
    weights: torch.Tensor
    gamma: float
    accuracy: float
    layer_accuracy: torch.Tensor
    chance: float
    n: int


def evaluate_task(task: ProbeTask, seed: int = 0, **fit_options) -> TaskResult:
    """Cross-validate the learned mix and every single-layer probe on `task`."""
    accuracy, demos = cross_validate(task, seed=seed, **fit_options)
    with torch.no_grad():
        weights = torch.stack([demo.mix.weights for demo in demos]).mean(dim=0)
        gamma = float(torch.stack([demo.mix.gamma for demo in demos]).mean())
    layer_accuracy = torch.tensor([cross_validate(task, [k], seed=seed, **fit_options)[0]
                                   for k in range(task.layers.shape[0])])
    return TaskResult(task.name, weights, gamma, accuracy, layer_accuracy, task.chance,
                      len(task.labels))


def plot_layer_weights(
    results: Sequence[Sequence[TaskResult]], path: str | Path | None = None
) -> Figure:
    """Bar charts of the learned layer weights and single-layer probe accuracy per task.

    Args:
        results: one list of `TaskResult`s per seed, the tasks in the same order each time;
            bars are means over seeds, error bars one standard deviation (none for one seed).
            The weights have a line at uniform (1 / L), the probes one at each task's chance.
        path: where to save the figure; None to only return it.

    Returns:
        the `matplotlib.figure.Figure` (built without pyplot: headless).
    """
    names = [result.name for result in results[0]]
    weights = np.array([[r.weights.numpy() for r in seed] for seed in results])  # (S, T, L)
    probes = np.array([[r.layer_accuracy.numpy() for r in seed] for seed in results])
    figure = Figure(figsize=(11, 4.5), layout="constrained")
    weight_ax, probe_ax = figure.subplots(1, 2)
    layers = np.arange(weights.shape[-1])
    width = 0.8 / len(names)
    spread = len(results) > 1
    weight_ax.axhline(1 / len(layers), color="grey", linestyle=":", label="uniform, 1 / L")
    for t, result in enumerate(results[0]):
        offset = (t - (len(names) - 1) / 2) * width
        label = f"{result.name} (n = {result.n})"
        colour = f"C{t}"
        weight_ax.bar(layers + offset, weights[:, t].mean(0), width, label=label, capsize=4,
                      color=colour, yerr=weights[:, t].std(0, ddof=1) if spread else None)
        probe_ax.bar(layers + offset, probes[:, t].mean(0), width, label=label, capsize=4,
                     color=colour, yerr=probes[:, t].std(0, ddof=1) if spread else None)
        probe_ax.axhline(result.chance, color=colour, linestyle="--", linewidth=1,
                         label=f"{result.name}: chance {result.chance:.2f}")
    for ax, ylabel, title in (
        (weight_ax, "softmax weight s_j", "Learned layer weights"),
        (probe_ax, "held-out accuracy", "One probe per layer"),
    ):
        ax.set_xticks(layers, [f"layer {k}" for k in layers])
        ax.set_xlabel("layer")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title} (mean ± 1 sd over {len(results)} seeds)" if spread
                     else f"{title} (one seed)")
        ax.legend(fontsize="small")
    probe_ax.set_ylim(0, 1.05)
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=120)
    return figure
