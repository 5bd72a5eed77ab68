"""How ELMo on real English (`analyses.real_english`) reads a biLM's layers: the two sense tests
and the part-of-speech probe, each giving one score per test example, so that every
comparison is a paired difference (`analyses.real_findings`).

Word sense, by the paper's nearest-sense method (Sec. 5.3), on two splits of the sense pool
that ask two questions:

    natural     WordNet's examples as they come, a random `TEST_SHARE` of them to test on:
                does a layer beat a frequency prior? Most synsets have one example, so most
                test examples have no training example of their synset and no reading can
                answer them (`SenseTask.answerable`): every difference shrinks with that
                share. The priors: the most frequent sense by training counts (ties credited
                as a guess among the tied would be, not broken by WordNet's order), and, named
                apart, WordNet's first sense, which knows the sense counts of a corpus
                (SemCor) that nothing else here saw.
    balanced    one held-out example of every synset that has two examples or more, of the
                lemmas with two such synsets or more; the rest of those synsets' examples to
                train on: can a layer tell senses apart? Every test example is answerable,
                and any prior that gives a lemma one sense is right on exactly one of its
                test examples: chance, by construction.

Part of speech: an L2-regularised logistic regression on each layer, in folds that hold out
lemmas, its penalty chosen by cross-validation inside the training folds (`probe_scores`).
Folds that hold out lemmas leave a probe nothing to learn about a word type as such, which a
control task (Hewitt and Liang 2019) would measure; what remains to check is the probe's
capacity, so the accuracy at every penalty is kept as well (the sweep).

Shapes: N examples, M test examples, K candidate senses, D features, P penalties.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import torch
from torch import nn

if TYPE_CHECKING:
    from .real_english import Example

TEST_SHARE = 0.2  # of the sense pool, per seed, for the natural split's test examples
POS_FOLDS = 4
PENALTIES = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)  # lambda of mean cross-entropy + lambda |W|^2
PROBE_STEPS = 40  # L-BFGS iterations of a probe's fit
PARTS_OF_SPEECH = ("noun", "verb", "adjective", "adverb")


# --- the splits --------------------------------------------------------------------------------


class Split(NamedTuple):
    """A training and a test split of the sense pool for one seed: (N,) boolean masks, an
    example in neither where the split leaves it out."""

    train: torch.Tensor
    test: torch.Tensor


def natural_split(examples: Sequence[Example], seed: int) -> Split:
    """A random `TEST_SHARE` of the examples to test on, the rest to train on."""
    order = torch.randperm(len(examples), generator=torch.Generator().manual_seed(seed))
    test = torch.zeros(len(examples), dtype=torch.bool)
    test[order[: round(TEST_SHARE * len(examples))]] = True
    return Split(~test, test)


def balanced_split(examples: Sequence[Example], seed: int) -> Split:
    """Of each synset with two examples or more, of the lemmas (with their part of speech)
    with two such synsets or more, one example drawn by `seed` to test on and the others to
    train on; every other example in neither."""
    of_synset = defaultdict(list)
    for i, e in enumerate(examples):
        of_synset[e.lemma, e.pos, e.synset].append(i)
    kept = {key: indices for key, indices in of_synset.items() if len(indices) >= 2}
    senses = Counter(key[:2] for key in kept)
    generator = torch.Generator().manual_seed(seed)
    train = torch.zeros(len(examples), dtype=torch.bool)
    test = torch.zeros(len(examples), dtype=torch.bool)
    for key, indices in kept.items():
        if senses[key[:2]] >= 2:
            held = indices[int(torch.randint(len(indices), (1,), generator=generator))]
            train[indices] = True
            train[held], test[held] = False, True
    return Split(train, test)


# --- word sense: the nearest-sense method ---------------------------------------------------------


class SenseTask(NamedTuple):
    """The nearest-sense method, set up for one split.

    train, sense_of: the training examples' indices and, for each, its synset (a row of the
        synsets' means). test: (M,) the test examples' indices. candidates: (M, K) for each
        test example, the synsets of its lemma and part of speech that training holds (-1:
        none). counts: (M, K) their training examples. gold: (M,) which candidate is right
        (-1: none; the test example is not answerable). first_right: (M,) whether WordNet's
        first sense is right. seen: (M,) whether the lemma has a candidate; a lemma that
        training never saw gets WordNet's first sense, as in the paper.
    """

    train: torch.Tensor
    sense_of: torch.Tensor
    test: torch.Tensor
    candidates: torch.Tensor
    counts: torch.Tensor
    gold: torch.Tensor
    first_right: torch.Tensor
    seen: torch.Tensor

    @property
    def answerable(self) -> torch.Tensor:
        """(M,) whether the test example's synset is among its candidates."""
        return self.gold >= 0


def sense_task(examples: Sequence[Example], split: Split) -> SenseTask:
    """The nearest-sense method's candidates on `split`."""
    senses: dict[tuple, list[int]] = defaultdict(list)
    for i in split.train.nonzero().flatten().tolist():
        e = examples[i]
        senses[e.lemma, e.pos, e.synset].append(i)
    keys = list(senses)
    row = {key: n for n, key in enumerate(keys)}
    by_lemma = defaultdict(list)
    for key in keys:
        by_lemma[key[:2]].append(key)
    test = split.test.nonzero().flatten()
    width = max((len(v) for v in by_lemma.values()), default=1)
    candidates = torch.full((len(test), width), -1, dtype=torch.long)
    counts = torch.zeros((len(test), width), dtype=torch.long)
    gold = torch.full((len(test),), -1, dtype=torch.long)
    first = torch.zeros(len(test), dtype=torch.bool)
    for m, i in enumerate(test.tolist()):
        e = examples[i]
        first[m] = e.first_synset == e.synset
        for k, key in enumerate(by_lemma.get((e.lemma, e.pos), [])):
            candidates[m, k], counts[m, k] = row[key], len(senses[key])
            if key[2] == e.synset:
                gold[m] = k
    train = [(i, row[key]) for key in keys for i in senses[key]]
    return SenseTask(torch.tensor([i for i, _ in train], dtype=torch.long),
                     torch.tensor([r for _, r in train], dtype=torch.long), test, candidates,
                     counts, gold, first, candidates[:, 0] >= 0)


def restricted(task: SenseTask, subset: torch.Tensor) -> SenseTask:
    """`task` scored on the test examples in `subset` (N,) only."""
    keep = subset[task.test]
    return task._replace(test=task.test[keep], candidates=task.candidates[keep],
                         counts=task.counts[keep], gold=task.gold[keep],
                         first_right=task.first_right[keep], seen=task.seen[keep])


def _tied_credit(task: SenseTask, tied: torch.Tensor) -> torch.Tensor:
    """(M,) the credit of a guess among the `tied` (M, K) candidates, WordNet's first sense
    where the lemma has none."""
    gold = task.gold.clamp(min=0).unsqueeze(1)
    credit = (tied.gather(1, gold).squeeze(1) & task.answerable).float() / tied.sum(1).clamp(
        min=1)
    return torch.where(task.seen, credit, task.first_right.float())


def nearest_sense(task: SenseTask, vectors: torch.Tensor) -> torch.Tensor:
    """(M,) each test example's credit by the nearest-sense method on (N, D) `vectors`
    (every example's): each synset's mean over its training examples, the candidate of
    highest cosine; candidates whose means are equally near (layer 0 of one word form)
    share the credit, as a guess among them would. The vectors are centred by the training
    examples' mean first: the states share a common direction that makes every cosine
    high."""
    centred = vectors - vectors[task.train].mean(dim=0)
    sums = torch.zeros(int(task.sense_of.max()) + 1, vectors.shape[-1])
    sums.index_add_(0, task.sense_of, centred[task.train])
    means = nn.functional.normalize(sums, dim=-1)  # the mean's direction is the sum's
    queries = nn.functional.normalize(centred[task.test], dim=-1)
    cosines = torch.einsum("mkd,md->mk", means[task.candidates.clamp(min=0)], queries)
    cosines = cosines.masked_fill(task.candidates < 0, -math.inf)
    best = cosines.max(dim=1, keepdim=True).values
    return _tied_credit(task, (cosines >= best - 1e-5) & (task.candidates >= 0))


def sense_priors(task: SenseTask) -> dict[str, torch.Tensor]:
    """(M,) credits of what needs no representation: "chance" (one of the lemma's candidates
    at random), "most_frequent" (the candidate with the most training examples, ties
    credited as a guess among the tied) and "first_sense" (WordNet's first sense, for every
    test example)."""
    real = task.candidates >= 0
    most = task.counts.masked_fill(~real, -1).max(dim=1, keepdim=True).values
    return {"chance": _tied_credit(task, real),
            "most_frequent": _tied_credit(task, real & (task.counts == most)),
            "first_sense": task.first_right.float()}


# --- part of speech: a regularised probe ----------------------------------------------------------


def pos_folds(examples: Sequence[Example], seed: int, size: int
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """(the chosen examples' indices, their fold): `size` examples drawn by `seed`, their
    lemmas dealt round-robin to `POS_FOLDS` folds in an order drawn by `seed`, so that no
    lemma is both trained and scored on."""
    generator = torch.Generator().manual_seed(seed)
    chosen = torch.randperm(len(examples), generator=generator)[:size].sort().values
    lemmas = sorted({examples[i].lemma for i in chosen.tolist()})
    order = torch.randperm(len(lemmas), generator=generator).tolist()
    fold_of = {lemmas[j]: k % POS_FOLDS for k, j in enumerate(order)}
    return chosen, torch.tensor([fold_of[examples[i].lemma] for i in chosen.tolist()])


def standardiser(train: torch.Tensor):
    """What standardises each feature of (..., N, D) tensors by `train`'s mean and sd over
    its N rows, as the probes' features are."""
    mean, sd = train.mean(dim=-2, keepdim=True), train.std(dim=-2, keepdim=True).clamp(min=1e-6)
    return lambda x: (x - mean) / sd


def logistic_fits(x: torch.Tensor, labels: torch.Tensor, classes: int,
                  penalties: Sequence[float] = PENALTIES, steps: int = PROBE_STEPS
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Multinomial logistic regressions on (N, D) `x`, one per penalty lambda, each
    minimising the mean cross-entropy + lambda * |W|^2 (the bias unpenalised), from zero
    weights, fitted together by full-batch L-BFGS (their losses are independent, so their
    sum's minimum is each one's): (weights (P, D, C), biases (P, C)). Deterministic."""
    penalty = torch.tensor(penalties, dtype=x.dtype)
    weight = torch.zeros(len(penalties), x.shape[-1], classes, requires_grad=True)
    bias = torch.zeros(len(penalties), classes, requires_grad=True)
    optimizer = torch.optim.LBFGS([weight, bias], max_iter=steps, history_size=10,
                                  line_search_fn="strong_wolfe")
    targets = labels.repeat(len(penalties))

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        logits = torch.einsum("nd,pdc->pnc", x, weight) + bias.unsqueeze(1)
        loss = nn.functional.cross_entropy(logits.reshape(-1, classes), targets,
                                           reduction="none").view(len(penalties), -1).mean(1)
        total = (loss + penalty * weight.pow(2).sum(dim=(1, 2))).sum()
        total.backward()
        return total

    optimizer.step(closure)
    return weight.detach(), bias.detach()


def _predict(weight: torch.Tensor, bias: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """(P, N) each fit's class of each row of (N, D) `x`."""
    return (torch.einsum("nd,pdc->pnc", x, weight) + bias.unsqueeze(1)).argmax(dim=-1)


def _fit_and_predict(x: torch.Tensor, labels: torch.Tensor, train: torch.Tensor,
                     test: torch.Tensor, classes: int, penalties: Sequence[float]
                     ) -> torch.Tensor:
    """(P, test rows) predictions of probes fitted on the `train` rows of `x`, standardised
    by them."""
    standard = standardiser(x[train])
    weight, bias = logistic_fits(standard(x[train]), labels[train], classes, penalties)
    return _predict(weight, bias, standard(x[test]))


def probe_scores(x: torch.Tensor, labels: torch.Tensor, folds: torch.Tensor, classes: int,
                 penalties: Sequence[float] = PENALTIES) -> tuple[torch.Tensor, torch.Tensor,
                                                                 list[float]]:
    """Cross-validated probe of (N, D) `x`: each fold scored by probes fitted on the other
    folds. The penalty of each fold's probe is chosen by cross-validation inside those
    folds (each in turn held out, the one of highest accuracy; a tie goes to the larger
    penalty). Returns ((N,) whether the chosen probe was right, (P, N) whether the probe of
    each penalty was right (the sweep), the penalty chosen for each fold).

    The inner fits of fold k holding out fold j and of fold j holding out fold k train on
    the same rows: each such fit is made once and scores both."""
    names = folds.unique().tolist()
    right = torch.zeros(len(penalties), len(labels), dtype=torch.bool)
    inner = {}  # (held-out fold, scored fold) -> (P,) right answers on the scored fold
    for a, first in enumerate(names):
        for second in names[a + 1:]:
            out = (folds == first) | (folds == second)
            both = _fit_and_predict(x, labels, ~out, out, classes, penalties) == labels[out]
            for held, scored in ((first, second), (second, first)):
                inner[held, scored] = both[:, (folds[out] == scored)].sum(dim=1)
    chosen, chosen_right = [], torch.zeros(len(labels), dtype=torch.bool)
    for fold in names:
        test = folds == fold
        score = sum(inner[fold, other] for other in names if other != fold)
        best = max(range(len(penalties)), key=lambda p: (score[p], penalties[p]))
        right[:, test] = _fit_and_predict(x, labels, ~test, test, classes,
                                          penalties) == labels[test]
        chosen_right[test] = right[best, test]
        chosen.append(penalties[best])
    return chosen_right, right, chosen


def majority_right(labels: torch.Tensor, folds: torch.Tensor, classes: int) -> torch.Tensor:
    """(N,) whether the most frequent class of the other folds is each example's."""
    right = torch.zeros(len(labels), dtype=torch.bool)
    for fold in folds.unique().tolist():
        test = folds == fold
        most = int(torch.bincount(labels[~test], minlength=classes).argmax())
        right[test] = labels[test] == most
    return right
