"""The given analyses of sections 4 and 6-8: what the notebooks and the demo measure with the
learner's code, never part of it.

A function that needs the learner's code takes the section modules first: `sections`, a
namespace of modules by section name (`.corpus`, `.bilm`, `.pretrain`, `.extract`,
`.context`, `.layer_weights`, `.char_encoder`), as `course.harness.Sections` and
`analyses.notebook.load_sections` give them; the analysis then runs on whichever
implementation those modules are.

    sections = load_sections("exercises", "context")
    baseline = analysis.anisotropy_baseline(sections, model, word2idx)

    section 4   entropy_floor, top_predictions, predictions_table
    section 6   comparison_table, anisotropy_baseline, compare_halves,
                nearest_sense_accuracy (NearestSense), nearest_occurrences (Neighbour),
                nearest_table, target_vectors
    section 7   the probing tasks (ProbeTask, word_class_task, sense_task, NUM_FOLDS),
                cross_validate, evaluate_task (TaskResult)
    section 8   token_layer, nearest_relatives (Neighbours), neighbours_table
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from course.corpus import (
    CORPUS,
    HELDOUT_LABELS,
    PHRASES_OF,
    SENSE_LABELS,
    SENSE_PHRASES,
    UNSEEN_RELATIVES,
    WORD_CLASSES,
)
from course.harness import Sections

__all__ = [
    "NUM_FOLDS",
    "NearestSense",
    "Neighbour",
    "Neighbours",
    "ProbeTask",
    "TaskResult",
    "anisotropy_baseline",
    "compare_halves",
    "comparison_table",
    "cross_validate",
    "entropy_floor",
    "evaluate_task",
    "nearest_occurrences",
    "nearest_relatives",
    "nearest_sense_accuracy",
    "nearest_table",
    "neighbours_table",
    "predictions_table",
    "sense_task",
    "target_vectors",
    "token_layer",
    "top_predictions",
    "word_class_task",
]

Labels = Sequence[tuple[str, str, str]]  # (sentence, target word, sense), as SENSE_LABELS
NUM_FOLDS = 4  # the cross-validation folds of section 7's probing tasks


# --- section 4: pre-training ----------------------------------------------------------------


def entropy_floor(sections: Sections, corpus: Sequence[str],
                  sentences: Sequence[str] | None = None) -> float:
    """The loss on `sentences` of the biLM that knows the sentences of `corpus` exactly.

    That biLM gives the next token after a prefix (the previous one before a suffix) the
    share of `corpus`'s sentences with that prefix (suffix) that continue with it; scored as
    section 4's `corpus_loss` scores (mean cross-entropy over the target tokens, forward
    plus backward), no biLM trained on `corpus` can reach a lower loss on it.

    `entropy_floor(sections, CORPUS)` is the floor of learning the training sentences by
    heart; `entropy_floor(sections, CORPUS + HELDOUT, CORPUS)` that of a biLM that knows
    which openings go with which endings, the same on training and held-out sentences.

    Args:
        sections: the section modules; sentences are split with `sections.corpus.tokenize`.
        corpus: the sentences whose distribution is known.
        sentences: the sentences scored; None scores `corpus` itself.

    Returns:
        the loss in nats; `math.inf` where a sentence is not one of `corpus`'s.
    """
    tokenize = sections.corpus.tokenize
    known = [["<s>", *tokenize(sentence), "</s>"] for sentence in corpus]
    scored = known if sentences is None else [["<s>", *tokenize(s), "</s>"] for s in sentences]
    loss = 0.0
    for step in (1, -1):  # forward; backward reads each sentence reversed
        continued = Counter(_continuations(known, step))  # (prefix, next token): count
        seen: Counter = Counter()  # prefix: count
        for (prefix, _), count in continued.items():
            seen[prefix] += count
        surprisals = [-math.log(continued[pair] / seen[pair[0]]) if pair in continued
                      else math.inf for pair in _continuations(scored, step)]
        loss += sum(surprisals) / len(surprisals)
    return loss


def _continuations(sentences: list[list[str]], step: int
                   ) -> Iterator[tuple[tuple[str, ...], str]]:
    """(the tokens before t, token t) for every target t of every sentence, read forward
    (step 1) or backward (step -1)."""
    for words in sentences:
        ordered = words[::step]
        for t in range(1, len(ordered)):
            yield tuple(ordered[:t]), ordered[t]


@torch.no_grad()
def top_predictions(
    sections: Sections, model: nn.Module, sentence: str, word2idx: dict[str, int],
    idx2word: dict[int, str], k: int = 5
) -> list[tuple[str, list[tuple[str, float]], list[tuple[str, float]]]]:
    """What each direction expects around every word of `sentence`, in eval mode.

    Returns:
        one (word, after, before) per word: `after`, the forward LM's `k` most likely next
        tokens once it has read up to the word; `before`, the backward LM's `k` most likely
        previous tokens once it has read back to it; each a list of (token, probability).
        The model's mode is kept.
    """
    corpus = sections.corpus
    ids = torch.tensor(corpus.encode(sentence, word2idx, add_boundaries=True)).unsqueeze(1)
    was_training = model.training
    model.eval()
    try:
        output = model(ids.to(next(model.parameters()).device))
    finally:
        model.train(was_training)

    def best(logits: torch.Tensor) -> list[tuple[str, float]]:
        top = logits.softmax(-1).topk(k)
        return [(idx2word[int(i)], float(p)) for p, i in zip(top.values, top.indices,
                                                            strict=True)]

    words = corpus.tokenize(sentence)
    return [(word, best(output.forward_logits[t, 0]), best(output.backward_logits[t, 0]))
            for t, word in enumerate(words, start=1)]


def predictions_table(predictions: list[tuple[str, list, list]],
                      least: float = 0.005) -> str:
    """`top_predictions` as aligned text: one line per word, the previous-token guesses to
    its left and the next-token guesses to its right, each guess that has at least `least`
    of the probability (the others would read 0.00)."""
    def cell(guesses):
        return ", ".join(f"{token} {p:.2f}" for token, p in guesses if p >= least) or "-"

    rows = [(cell(before), word, cell(after)) for word, after, before in predictions]
    left, middle = (max(len(row[i]) for row in rows) for i in (0, 1))
    return "\n".join(f"{before:>{left}} <- {word:^{middle}} -> {after}"
                     for before, word, after in rows)


# --- section 6: context ---------------------------------------------------------------------


def comparison_table(comparison: Any) -> str:
    """A `ContextComparison` (section 6) as aligned text: the mean similarity per target
    word, sense group and layer, the number of pairs in brackets."""
    header = f"{'word':<8}{'pairs':<22}" + "".join(
        f"{f'layer {k}':>9}" for k in range(comparison.num_layers))
    lines = [header, "-" * len(header)]
    for word in (*comparison.words, None):
        for same in (True, False):
            chosen = comparison.select(same, word)
            group = f"{'same' if same else 'different'} sense ({len(chosen)})"
            cells = "".join(f"{float(v):>9.3f}" for v in chosen.mean(dim=0))
            lines.append(f"{word or 'all':<8}{group:<22}{cells}")
    return "\n".join(lines)


def anisotropy_baseline(sections: Sections, model: nn.Module, word2idx: dict[str, int],
                        sentences: Sequence[str] = CORPUS) -> torch.Tensor:
    """(num_layers,) the mean cosine of two tokens of *different* words, per layer.

    Contextual embeddings are anisotropic (Ethayarajh 2019): they fill a narrow cone, so
    even unrelated words have a positive cosine, and more so in some layers than others.
    A similarity means something only above this level. Every pair of tokens of
    `sentences` whose words differ counts once; layer 0 is the level of the token layer.
    """
    corpus = sections.corpus
    embeddings = sections.extract.get_elmo_embeddings(model, list(sentences), word2idx)
    units = F.normalize(torch.cat(list(embeddings), dim=1).double().cpu(), dim=-1)  # (L, T, D)
    words = [word for sentence in sentences for word in corpus.tokenize(sentence)]
    ids = torch.tensor([word2idx.get(word, corpus.UNK) for word in words])
    different = ids.unsqueeze(0) != ids.unsqueeze(1)  # (T, T), False on the diagonal
    cosines = units @ units.transpose(1, 2)  # (L, T, T)
    return ((cosines * different).sum(dim=(1, 2)) / different.sum()).float()


class _Half(nn.Module):
    """A biLM whose layers keep one direction's half: h_f of [h_f; h_b], or h_b."""

    def __init__(self, model: nn.Module, direction: str) -> None:
        super().__init__()
        self.model, self.direction = model, direction

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor | None = None):
        output = self.model(ids, lengths)
        width = output.layers.shape[-1] // 2
        half = slice(0, width) if self.direction == "forward" else slice(width, None)
        return output._replace(layers=output.layers[..., half])


def compare_halves(sections: Sections, model: nn.Module, word2idx: dict[str, int],
                   labels: Labels = SENSE_LABELS) -> dict[str, Any]:
    """Section 6's `compare_contexts` on each direction's half of every layer, by direction.

    At the target word, the forward half has read the words before it (the opening), the
    backward half the words after it (the ending); layer 0's halves are both the token.
    """
    compare_contexts = sections.context.compare_contexts
    return {direction: compare_contexts(_Half(model, direction), word2idx, labels)
            for direction in ("forward", "backward")}


def target_vectors(sections: Sections, model: nn.Module, word2idx: dict[str, int],
                   labels: Labels) -> torch.Tensor:
    """(L, N, D) the target word's embedding in each labelled sentence (at its first
    occurrence), of unit length, in float64 on the CPU."""
    tokenize = sections.corpus.tokenize
    sentences = [sentence for sentence, _, _ in labels]
    embeddings = sections.extract.get_elmo_embeddings(model, sentences, word2idx)
    targets = [e[:, tokenize(s).index(w)] for e, (s, w, _) in
               zip(embeddings, labels, strict=True)]
    return F.normalize(torch.stack(targets, dim=1).double().cpu(), dim=-1)


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
    sections: Sections, model: nn.Module, word2idx: dict[str, int],
    queries: Labels = SENSE_LABELS, references: Labels = SENSE_LABELS,
) -> dict[str, NearestSense]:
    """Does a word's nearest occurrence among `references` have its sense? Per word, layer.

    A query's candidates are the other occurrences of its word in `references`, except
    those of its sense that share its opening or its ending (`PHRASES_OF`): half of their
    vector would be the query's own, and the nearest one would be found for that reason.
    """
    labels = list(dict.fromkeys([*queries, *references]))
    vectors = target_vectors(sections, model, word2idx, labels)  # (L, N, D), unit length
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


class Neighbour(NamedTuple):
    """One of the nearest occurrences of a word: its layer, cosine, sentence and sense."""

    layer: int
    cosine: float
    sentence: str
    sense: str


def nearest_occurrences(
    sections: Sections, model: nn.Module, word2idx: dict[str, int], sentence: str, word: str,
    references: Labels = SENSE_LABELS, k: int = 3,
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
    vectors = target_vectors(sections, model, word2idx, [(sentence, word, "?"), *candidates])
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


# --- section 7: probing the layers ----------------------------------------------------------


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


def _embed_tokens(sections: Sections, model: nn.Module, word2idx: dict[str, int],
                  sentences: Sequence[str], positions: Sequence[int]) -> torch.Tensor:
    """(L, N, D) the embedding of word `positions[n]` of `sentences[n]`, on the CPU."""
    embeddings = sections.extract.get_elmo_embeddings(model, list(sentences), word2idx)
    return torch.stack([e[:, p].cpu() for e, p in zip(embeddings, positions, strict=True)], 1)


def word_class_task(sections: Sections, model: nn.Module, word2idx: dict[str, int],
                    corpus: Sequence[str] = CORPUS) -> ProbeTask:
    """Syntax-like: the class of every token of `corpus` listed in `WORD_CLASSES`.

    Folds split word *types*: within each class, the sorted types go round-robin to the
    folds, and a probe trains on the other folds' types only, so it must tell the class
    from what the embedding says about the word's role, not recognise the word. Chance is
    the share of the most frequent class.
    """
    tokenize = sections.corpus.tokenize
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
                     _embed_tokens(sections, model, word2idx, sentences, positions), labels,
                     classes, folds, train_on, chance)


def sense_task(sections: Sections, model: nn.Module, word2idx: dict[str, int],
               labels: Labels = SENSE_LABELS + HELDOUT_LABELS) -> ProbeTask:
    """Meaning-like: the sense ("bank: river") of each sentence's target word.

    Every sentence is an opening, the word and an ending (`PHRASES_OF`), by default every
    sentence of every sense, training and held-out alike. The folds are blocks: fold
    2a + b holds the sentences whose opening is in half a of their sense's openings and
    whose ending is in half b of its endings, and its probe trains on the block that shares
    neither half (1 - a, 1 - b). A probe is then never scored on an opening or an ending it
    trained on: it must tell the sense from the context, not recognise the phrase. Each
    fold holds both senses of every word equally, so chance, guessing one of the word's two
    senses, is 0.5, which is also the best layer 0 can do: it is one vector for both senses.

    Raises:
        ValueError: a sentence that is not an opening, its word and an ending of the corpus.
    """
    tokenize = sections.corpus.tokenize
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
                     _embed_tokens(sections, model, word2idx, sentences, positions), targets,
                     classes, folds, train_on, 0.5)


def cross_validate(sections: Sections, task: ProbeTask, layers: Sequence[int] | None = None,
                   seed: int = 0, probe_options: Mapping[str, Any] | None = None,
                   **fit_options) -> tuple[float, list[nn.Module]]:
    """Score each fold with section 7's `ScalarMixProbe` trained on that fold's
    `task.train_on`.

    Args:
        sections: the section modules: `.layer_weights.ScalarMixProbe` probes,
            `.setup.set_seed` seeds.
        task: the labelled embeddings.
        layers: which layers to mix (e.g. [1] for a single-layer probe); None: all of them.
        seed: seeds the classifiers' initial weights (fold k uses seed + k).
        probe_options: passed to `ScalarMixProbe` (its switches, e.g. `learn_mix=False`).
        fit_options: passed to `ScalarMixProbe.fit` (epochs, lr).

    Returns:
        (accuracy over all held-out tokens, the folds' trained probes).
    """
    probe_class, set_seed = sections.layer_weights.ScalarMixProbe, sections.setup.set_seed
    chosen = task.layers if layers is None else task.layers[list(layers)]
    correct, probes = 0, []
    for fold in range(NUM_FOLDS):
        train, held_out = task.train_on[fold], task.folds == fold
        set_seed(seed + fold)  # the classifier's initial weights
        probe = probe_class(chosen.shape[0], chosen.shape[-1], len(task.classes),
                            **(probe_options or {}))
        probe.fit(chosen[:, train], task.labels[train], **fit_options)
        correct += int((probe.predict(chosen[:, held_out]) == task.labels[held_out]).sum())
        probes.append(probe)
    return correct / len(task.labels), probes


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


def evaluate_task(sections: Sections, task: ProbeTask, seed: int = 0,
                  **fit_options) -> TaskResult:
    """Cross-validate the learned mix and every single-layer probe on `task`."""
    accuracy, probes = cross_validate(sections, task, seed=seed, **fit_options)
    with torch.no_grad():
        weights = torch.stack([probe.mix.weights for probe in probes]).mean(dim=0)
        gamma = float(torch.stack([probe.mix.gamma for probe in probes]).mean())
    layer_accuracy = torch.tensor([
        cross_validate(sections, task, [k], seed=seed, **fit_options)[0]
        for k in range(task.layers.shape[0])])
    return TaskResult(task.name, weights, gamma, accuracy, layer_accuracy, task.chance,
                      len(task.labels))


# --- section 8: words the corpus lacks ------------------------------------------------------


@torch.no_grad()
def token_layer(sections: Sections, model: nn.Module, words: Sequence[str],
                word2idx: Mapping[str, int]) -> torch.Tensor:
    """(n, hidden_dim) p of each word, layer 0's half, out of any context: a `CharBiLM`
    (section 8) spells every word out; a word biLM reads its id, <unk>'s for a word it
    lacks."""
    device = next(model.parameters()).device
    char_encoder = sections.char_encoder
    if isinstance(model, char_encoder.CharBiLM):
        return model.token_projection(char_encoder.words_to_chars(words).to(device)).cpu()
    unknown = sections.corpus.UNK
    ids = torch.tensor([word2idx.get(word, unknown) for word in words], device=device)
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


def nearest_relatives(sections: Sections, model: nn.Module, word2idx: Mapping[str, int],
                      pairs: Sequence[tuple[str, str]] = UNSEEN_RELATIVES) -> list[Neighbours]:
    """For each (query, relative), the vocabulary's words (special tokens left out) ranked by
    the cosine of their layer 0 to the query's, each vector centred by the mean over the
    vocabulary: token vectors share a common direction that makes every cosine high, and
    centring leaves what tells words apart."""
    special = sections.corpus.SPECIAL_TOKENS
    words = [word for word in word2idx if word not in special]
    vectors = token_layer(sections, model, words, word2idx)
    mean = vectors.mean(dim=0)
    queries = token_layer(sections, model, [query for query, _ in pairs], word2idx) - mean
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
