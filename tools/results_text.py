"""The sentences of docs/analysis.md that read the demo's results, generated from them as its
tables are (`tools.results`), so that no number in its prose is typed by hand; and those that
say the toy corpus's sizes, generated from the corpus itself (`corpus_sizes`).

Each function takes the results (`tools.results`' schema) and returns a paragraph, or a list,
of Markdown; `SENTENCES` names them as the page's markers do (`<!-- table: NAME -->`). A
sentence says what the numbers are, with their baseline beside them; where a reading could
go either way (above or below chance, more or less than the word biLM), the words come from
the numbers too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from itertools import combinations

import numpy as np

from analyses import targets
from analyses.targets import CONTEXT_LAYERS, MIN_GAP, MIN_NEAREST, view
from course import corpus


def _mean(values) -> str:
    """The mean of `values`, two decimals: '0.19'."""
    return f"{np.mean(values):.2f}"


def _span(*values, decimals: int = 2) -> str:
    """The means of `values`, each over seeds, as '0.74-0.76' (one number where they agree
    to `decimals`)."""
    means = sorted(float(f"{np.mean(v):.{decimals}f}") for v in values)
    low, high = (f"{m:.{decimals}f}" for m in (means[0], means[-1]))
    return low if low == high else f"{low}-{high}"


def _layers(at_1: str, at_2: str, both: str = "") -> str:
    """What holds at layers 1 and 2, said once where it is the same ('every seed', followed
    by `both`: 'every seed at layers 1 and 2'), else 'every seed at layer 1 and 9 seeds in
    10 at layer 2'."""
    return (f"{at_1} {both}".strip() if at_1 == at_2
            else f"{at_1} at layer 1 and {at_2} at layer 2")


def _seeds(held: np.ndarray) -> str:
    """On how many seeds `held` (a boolean per seed) is true, in words: 'every seed', 'no
    seed', '8 seeds in 10'."""
    count, n = int(np.sum(held)), len(held)
    return "every seed" if count == n else "no seed" if count == 0 else f"{count} seeds in {n}"


def _than(value: float, other: float, more: str = "above", less: str = "below") -> str:
    """`more` where `value` exceeds `other`, else `less`."""
    return more if value > other else less


def _each(values, what: str) -> int:
    """The one value that `values` all have; the corpus is built alike for every sense and
    word, and the sentences below say so.

    Raises:
        ValueError: they differ, and a sentence that gives one number would be wrong.
    """
    found = set(values)
    if len(found) != 1:
        raise ValueError(f"the corpus's {what} differ ({sorted(found)}): say so in "
                         "tools/results_text.py's sentences about it")
    return found.pop()


def corpus_sizes() -> dict[str, int]:
    """The toy corpus's sizes (`course.corpus`), each under what it counts. Its sentences are
    written as section 2 tokenizes them, lower-case words between spaces, so their words are
    their `split()`.

    Returns:
        {"target words", "senses a word", "openings" and "endings" (of a sense), "sentences
        a sense", "training sentences a sense", "held-out sentences a sense", "training
        sentences", "held-out sentences", "sentences", "words" (the training sentences'
        distinct words), "held-out words unseen" (those of the held-out sentences that
        training lacks), "words the corpus lacks" (section 8's queries), and section 6's
        pairs of a word: "same-sense training pairs", "different-sense training pairs",
        "same-sense held-out pairs", "different-sense held-out pairs"}: an int each.
    """
    phrases = corpus.SENSE_PHRASES.values()
    senses_of = Counter(word for word, _ in corpus.SENSE_PHRASES)
    words = {word for sentence in corpus.CORPUS for word in sentence.split()}
    held_out_words = {word for sentence in corpus.HELDOUT for word in sentence.split()}
    sizes = {
        "target words": len(senses_of),
        "senses a word": _each(senses_of.values(), "senses per word"),
        "openings": _each((len(openings) for openings, _ in phrases), "openings per sense"),
        "endings": _each((len(endings) for _, endings in phrases), "endings per sense"),
        "training sentences": len(corpus.CORPUS),
        "held-out sentences": len(corpus.HELDOUT),
        "sentences": len(corpus.CORPUS) + len(corpus.HELDOUT),
        "words": len(words),
        "held-out words unseen": len(held_out_words - words),
        "words the corpus lacks": len(corpus.UNSEEN_RELATIVES),
    }
    for split, labels in (("training", corpus.SENSE_LABELS), ("held-out", corpus.HELDOUT_LABELS)):
        per_sense = Counter((word, sense) for _, word, sense in labels)
        sizes[f"{split} sentences a sense"] = _each(per_sense.values(),
                                                    f"{split} sentences per sense")
        pairs = [Counter(a == b for a, b in combinations(
                     [sense for _, w, sense in labels if w == word], 2)) for word in senses_of]
        for same, kind in ((True, "same-sense"), (False, "different-sense")):
            sizes[f"{kind} {split} pairs"] = _each((p[same] for p in pairs),
                                                   f"{kind} {split} pairs per word")
    sizes["sentences a sense"] = (sizes["training sentences a sense"]
                                  + sizes["held-out sentences a sense"])
    return sizes


def corpus_read(results: dict) -> str:
    """What the corpus is, in numbers, from the corpus itself, on which the results were
    measured (`results` is not read)."""
    sizes = corpus_sizes()
    words = ", ".join(f"*{word}*" for word in dict.fromkeys(w for w, _ in corpus.SENSE_PHRASES))
    seen = ("all of which training sees" if sizes["held-out words unseen"] == 0 else
            f"and {sizes['held-out words unseen']} that only the held-out sentences have")
    return (
        f"{sizes['target words']} polysemous words ({words}), {sizes['senses a word']} senses "
        f"each; for every sense {sizes['openings']} openings and {sizes['endings']} endings "
        "written by hand, any opening with any ending: "
        f"{sizes['sentences a sense']} sentences a sense (`course/corpus.py`). Opening k with "
        f"ending k is held out: {sizes['training sentences']} training sentences "
        f"({sizes['training sentences a sense']} a sense), {sizes['held-out sentences']} "
        f"held-out ones ({sizes['held-out sentences a sense']} a sense), {sizes['words']} "
        f"words, {seen}.\n")


def pairs_read(results: dict) -> str:
    """Section 6's pairs of sentences per word, from the corpus (`results` is not read)."""
    sizes = corpus_sizes()
    return (f"The training sentences, {sizes['training sentences a sense']} a sense, give each "
            f"word {sizes['same-sense training pairs']} same-sense and "
            f"{sizes['different-sense training pairs']} different-sense pairs; the held-out "
            f"ones, {sizes['held-out sentences a sense']} a sense, "
            f"{sizes['same-sense held-out pairs']} and "
            f"{sizes['different-sense held-out pairs']}.\n")


def pretraining_read(results: dict) -> str:
    """Where the losses end against the floor of a biLM that knows the phrases."""
    heldout = [r["heldout"] for r in results["pretraining"]]
    train = [r["train"] for r in results["pretraining"]]
    floor = results["floors"]["phrases"]
    return (f"The held-out loss ends {np.mean(heldout) - floor:.2f} above the phrases' floor "
            f"({_mean(heldout)} against {floor:.2f}, the mean over seeds), the training loss "
            f"{np.mean(train) - floor:.2f} above it: the biLM has begun to prefer, for each "
            "opening, the endings training paired it with.\n")


def context_read(results: dict) -> str:
    """Section 6, pooled: the cosines and gaps of both biLMs, what shared phrases add to the
    training pairs, and the word whose gap pre-training raises least often."""
    trained, untrained = view(results, "word", True), view(results, "word", False)

    def pooled(v: dict, key: str, split: str = "heldout") -> list[np.ndarray]:
        return [targets._per_seed(v["context"], lambda r: r[key], split=split, word="all",
                                  layer=layer) for layer in CONTEXT_LAYERS]

    def gaps(v: dict, split: str = "heldout") -> list[np.ndarray]:
        return [targets.gap(v, split, "all", layer) for layer in CONTEXT_LAYERS]

    def shared(v: dict) -> float:  # training gap minus held-out gap, layers 1 and 2
        return float(np.mean([t.mean() - h.mean()
                              for t, h in zip(gaps(v, "train"), gaps(v), strict=True)]))

    least = min(targets.words(trained),
                key=lambda word: targets.gap(trained, "heldout", word, 1).mean())
    raised = (targets.gap(trained, "heldout", least, 1)
              - targets.gap(untrained, "heldout", least, 1)) >= MIN_GAP - 1e-9
    u1, u2 = gaps(untrained)
    t1, t2 = gaps(trained)
    different, apart = pooled(trained, "different"), pooled(trained, "baseline")
    return (
        "On held-out sentences, the untrained biLM's states change with the context (its "
        "cosines at layers 1 and 2 are "
        f"{_span(*pooled(untrained, 'same'), *pooled(untrained, 'different'))} for pairs of "
        "the same sense and of different senses alike, not 1), but hardly "
        f"with the sense: its gap is {_layers(_mean(u1), _mean(u2), 'at layers 1 and 2')}. "
        f"The trained biLM's is {_layers(_mean(t1), _mean(t2), 'at both')}, and its "
        "different-sense pairs stay "
        f"{_than(min(map(np.mean, different)), max(map(np.mean, apart)))} two different "
        f"words ({_span(*different)} against {_span(*apart)}). Some same-sense training "
        "pairs share an opening or an ending, and so half of their vector in any biLM (the "
        "forward half at the word is a function of the opening alone, the backward half of "
        "the ending): the "
        f"training gaps exceed the held-out ones by {shared(trained):.2f} trained and by "
        f"{shared(untrained):.2f} untrained (the mean of layers 1 and 2), where no two held-out "
        f"sentences of a sense share a phrase. *{least}*'s gap at layer 1 is the smallest, "
        f"and pre-training raises it by {MIN_GAP} or more on {_seeds(raised)}.\n")


def nearest_read(results: dict) -> str:
    """Section 6's 1-nearest-neighbour sense, held out, against chance and the untrained
    biLM."""
    trained, untrained = view(results, "word", True), view(results, "word", False)
    chance = targets.nearest_chance(trained, "heldout")
    t = [targets.nearest(trained, "heldout", layer) for layer in CONTEXT_LAYERS]
    u = [targets.nearest(untrained, "heldout", layer) for layer in CONTEXT_LAYERS]
    above = np.all([a > b for a, b in zip(t, u, strict=True)], axis=0)
    return (
        "Read against chance alone this looks like \"from chance at layer 0 to perfect at "
        f"layers 1 and 2\"; on held-out sentences the untrained biLM already gets {_span(*u)} "
        f"of the queries right at layers 1 and 2 (chance {chance:.2f}), because each sense's "
        "phrases differ in their words and random states differ with them. Pre-training "
        f"takes it to {_span(*t)}, above the untrained biLM at both layers on "
        f"{_seeds(above)}.\n")


def probes_read(results: dict) -> str:
    """Section 7: the mixes' and probes' accuracies against chance, and the learned weights,
    trained and untrained."""
    trained, untrained = view(results, "word", True), view(results, "word", False)
    sense, word_class = "word_sense", "word_class"
    chance = targets.chance(trained, word_class)
    u_class = targets.mix_accuracy(untrained, word_class).mean()

    def weights(v: dict, task: str) -> str:
        return " / ".join(f"{w:.2f}" for w in targets.weights(v, task).mean(axis=0))

    def probes(v: dict) -> str:
        return _span(*targets.probes(v, sense)[:, 1:].T)

    def layer_2_largest(v: dict) -> np.ndarray:
        mix = targets.weights(v, sense)
        return mix[:, 2] > mix[:, :2].max(axis=1)

    unread = (" The untrained biLM's word-class mix is below chance, the share of the most "
              "frequent class, which a probe that reads nothing of the class need not find: "
              "the untrained states of a word type the probe never trained on say nothing of "
              "its class." if u_class < chance else "")
    return (
        "What pre-training adds is readability: the sense mix goes from "
        f"{_mean(targets.mix_accuracy(untrained, sense))} to "
        f"{_mean(targets.mix_accuracy(trained, sense))} (chance "
        f"{targets.chance(trained, sense):.2f}) and the sense probes on layers 1 and 2 from "
        f"{probes(untrained)} to {probes(trained)}; the word-class mix from {u_class:.2f} to "
        f"{_mean(targets.mix_accuracy(trained, word_class))} (chance {chance:.2f}).{unread} "
        "The weights of layers 0 / 1 / 2 change less. The untrained biLM's sense weights are "
        f"already {weights(untrained, sense)}, the least on layer 0, which is one vector for "
        f"both senses in any biLM; pre-trained, they are {weights(trained, sense)}, layer 2's "
        f"the largest on {_seeds(layer_2_largest(trained))}, against "
        f"{_seeds(layer_2_largest(untrained))} untrained. The word-class weights are "
        f"{weights(untrained, word_class)} untrained and {weights(trained, word_class)} "
        "pre-trained.\n")


def characters_read(results: dict) -> str:
    """Section 8: the untrained character biLM as a control, and the gaps pre-training opens
    in it, beside the word biLM's."""
    word = {t: view(results, "word", t) for t in (True, False)}
    char = {t: view(results, "char", t) for t in (True, False)}

    def baselines(v: dict, layers=(0, *CONTEXT_LAYERS)) -> list[np.ndarray]:
        return [targets.baseline(v, "heldout", layer) for layer in layers]

    def gaps(v: dict) -> list[np.ndarray]:
        return [targets.gap(v, "heldout", "all", layer) for layer in CONTEXT_LAYERS]

    u_probe, w_probe = (targets.probes(v, "word_class")[:, 0].mean()
                        for v in (char[False], word[False]))
    c1, c2 = gaps(char[True])
    w1, w2 = gaps(word[True])
    return (
        "The untrained character biLM is a degenerate control: its random filters and "
        "highways give every token nearly the same vector (two different words at cosine "
        f"{_mean(baselines(char[False], (0,)))} at layer 0 and "
        f"{_span(*baselines(char[False], CONTEXT_LAYERS))} above), so its held-out gap is "
        f"{_span(*gaps(char[False]), decimals=3)}; yet its layer-0 word-class probe scores "
        f"{_than(u_probe, w_probe)} the untrained word biLM's ({u_probe:.2f} against "
        f"{w_probe:.2f}), since spelling carries the class of a word type no probe saw "
        "(\"-ed\", \"-ly\", \"-s\"). Pre-training spreads the tokens out (two different words "
        f"at {_span(*baselines(char[True]))}) and opens a gap of {_mean(c1)} at layer 1 and "
        f"{_mean(c2)} at layer 2, against the word biLM's {_mean(w1)} and {_mean(w2)}.\n")


def targets_read(results: dict) -> str:
    """What the targets say, a point each: on how many seeds each held, trained and
    untrained, and its reading."""
    readings = {r.target.claim: r for r in targets.read(results)}

    def on(claim: str, who: str = "trained") -> str:
        reading = readings[claim]
        return _seeds({"trained": reading.trained_holds, "untrained": reading.untrained_holds,
                       "effect": reading.effect_holds}[who])

    def verdict(claim: str) -> str:
        return f"*{readings[claim].verdict}*"

    def pooled(split: str, layer: int) -> str:
        return f"{split}: pooled gap >= {MIN_GAP} at layer {layer}"

    every, more = (f"held-out: every word's gap >= {MIN_GAP} at layers 1 and 2",
                   "held-out: pooled gap larger at layer 2 than at layer 1")
    near = [f"held-out: the nearest occurrence has the word's sense at layer {layer} (1-NN "
            f"accuracy >= {MIN_NEAREST})" for layer in CONTEXT_LAYERS]
    sense_weights, sense_probes, sense_mix, sense_least = (
        "word sense: learned weights prefer layer 2", "word sense: single-layer probes "
        "prefer layer 2", f"word sense: the mix finds the sense (accuracy >= {MIN_NEAREST})",
        "word sense: learned weights put the least on layer 0")
    class_weights, class_probes, class_mix = (
        "word class: learned weights prefer a lower layer (0 or 1)",
        "word class: single-layer probes prefer a lower layer (0 or 1)",
        "word class: the mix beats chance by >= 0.1")
    char_gaps = [f"character biLM, held-out: pooled gap >= {MIN_GAP} at layer {layer}"
                 for layer in CONTEXT_LAYERS]
    char_probe, relatives = ("character biLM: its layer-0 word-class probe beats the word "
                             "biLM's", "words the corpus lacks: the character biLM ranks "
                             "their relatives nearer than the word biLM")
    trained, untrained = view(results, "word", True), view(results, "word", False)
    sense_probes_12 = targets.probes(trained, "word_sense")[:, 1:]
    mix_class = [targets.mix_accuracy(v, "word_class") for v in (trained, untrained)]
    ranks = {(model, t): np.mean(targets.mean_ranks(view(results, model, t)))
             for model in ("word", "char") for t in (False, True)}
    nearer = ("nearer still, " if ranks["char", False] < ranks["char", True] else "")
    return "\n".join([
        "* **Does context decide the sense, from layer 1 on, more at layer 2?** On held-out "
        f"sentences the pooled gap is at least {MIN_GAP} on "
        f"{_layers(*(on(pooled('held-out', k)) for k in (1, 2)), 'at layers 1 and 2')}, "
        "the untrained "
        f"biLM's on {_layers(*(on(pooled('held-out', k), 'untrained') for k in (1, 2)))}: "
        f"{_layers(*(verdict(pooled('held-out', k)) for k in (1, 2)))} (on the training "
        f"sentences: {_layers(*(verdict(pooled('training', k)) for k in (1, 2)))}). It is "
        f"larger at layer 2 than at layer 1 on {on(more)}, the untrained biLM's on "
        f"{on(more, 'untrained')}: {verdict(more)}. The nearest held-out occurrence has the "
        f"sense (1-NN accuracy at least {MIN_NEAREST}) on "
        f"{_layers(*map(on, near), 'at layers 1 and 2')}, the untrained biLM's on "
        f"{_layers(*(on(claim, 'untrained') for claim in near))}: "
        f"{_layers(*map(verdict, near))}. Every word's gap is at least {MIN_GAP} on "
        f"{on(every)} and the untrained biLM's on {on(every, 'untrained')}, but pre-training "
        f"raises every word's by {MIN_GAP} or more on {on(every, 'effect')} only: "
        f"{verdict(every)}.",
        "* **Does the sense task prefer layer 2?** The learned weights prefer it on "
        f"{on(sense_weights)}, the untrained biLM's on {on(sense_weights, 'untrained')}: "
        f"{verdict(sense_weights)}; that they put the least on layer 0 holds on "
        f"{on(sense_least, 'untrained')} untrained: {verdict(sense_least)}. The single-layer "
        f"probes prefer layer 2 on {on(sense_probes)}, the untrained ones on "
        f"{on(sense_probes, 'untrained')}: {verdict(sense_probes)}; the trained probes of "
        f"layers 1 and 2 score {_span(*sense_probes_12.T)}, too near each other and the "
        "ceiling to rank the two layers at this scale. The mix finds the sense on "
        f"{on(sense_mix)}, the untrained biLM's on {on(sense_mix, 'untrained')}: "
        f"{verdict(sense_mix)}.",
        "* **Does the word-class task prefer a lower layer?** The learned weights prefer "
        f"layer 0 or 1 on {on(class_weights)}, the untrained biLM's on "
        f"{on(class_weights, 'untrained')}: {verdict(class_weights)}. The single-layer probes "
        f"prefer one on {on(class_probes)}: {verdict(class_probes)}; they score layers 1 and "
        f"2 at {_span(*targets.probes(trained, 'word_class')[:, 1:].T)}. The reason is the "
        "fold design that makes the task fair: held-out word types leave a probe only the "
        "context to go by, since a word embedding says nothing of a type it was never trained "
        "to classify (the paper's layer 0, a character CNN, sees the word's spelling: \"-ed\", "
        "\"-ly\"), and layer 2 holds all the context layer 1 has (it is layer 1 plus the "
        "second LSTM's output, the residual connection) and more. The paper's layer 1 is "
        "ahead of its layer 2 for POS tagging by half a point (97.3 against 96.8) on a large "
        "treebank; here the probes' spread over seeds is wider than that. Folds by sentence "
        "instead, where every word type is seen in training, make every layer score near the "
        "ceiling and rank nothing. The mix beats "
        f"chance by {MIN_GAP} or more on {on(class_mix)} ({_mean(mix_class[0])} against "
        f"{_mean(mix_class[1])} untrained, chance {targets.chance(trained, 'word_class'):.2f}): "
        f"{verdict(class_mix)}.",
        "* **What does the character layer change?** Its held-out gap is at least "
        f"{MIN_GAP} on {_layers(*map(on, char_gaps), 'at layers 1 and 2')}, the untrained one's "
        f"on {_layers(*(on(claim, 'untrained') for claim in char_gaps))}: "
        f"{_layers(*map(verdict, char_gaps))}. Its layer-0 word-class probe beats the word "
        f"biLM's on {on(char_probe)}, and the untrained character biLM's beats the untrained word "
        f"biLM's on {on(char_probe, 'untrained')}: {verdict(char_probe)}. It ranks the "
        f"relatives of words the corpus lacks nearer than the word biLM on {on(relatives)}, "
        f"and so does the untrained one, on {on(relatives, 'untrained')}: "
        f"{verdict(relatives)}. The untrained one ranks them {nearer}at "
        f"{ranks['char', False]:.1f} on average, the trained one at {ranks['char', True]:.1f}, "
        f"the word biLM, reading `<unk>`, at {ranks['word', False]:.1f} untrained and "
        f"{ranks['word', True]:.1f} trained, against {targets.chance_rank(trained):.1f} for a "
        f"ranking of the {trained['neighbours'][0]['candidates']} words that knows nothing: "
        "spelling alone, through random filters, already puts relatives near, and "
        "pre-training weighs it against what the LSTMs need of layer 0, the words that stand "
        "in the same places in sentences (the nearest words of *watches* and *played* in "
        "`char_neighbours.txt`).",
    ]) + "\n"


SENTENCES: dict[str, Callable[[dict], str]] = {
    name: function for name, function in globals().items() if name.endswith("_read")}
