"""What the paper found, restated as effects of pre-training: each target is read on the
pre-trained biLMs and on the untrained biLMs they started from (`course.experiments`), seed
by seed, and counts as met by pre-training only where the trained biLM holds it and the
untrained one of the same shape does not.

    found = targets.read(results)          # one Reading per target
    print(targets.report(results))         # them, as `make replicate` prints them

`results` is what `course.experiments.run` returns (the demo's `results.json` too): records
of the word biLM at the top, of section 8's character biLM under "char", each with
"trained" true or false. The readings below take one biLM's records, a `view`:

    view(results, "word", trained=True)    # the pre-trained word biLM's records
    gap(view, "heldout", "all", 1)         # (seeds,) same-minus-different cosine, layer 1

A target is a claim about one biLM and a statistic that holds it on a seed, e.g. "held-out:
pooled gap >= 0.1 at layer 1" holds where the gap is at least 0.1. It is read on both
biLMs and on the effect of pre-training, seed by seed: trained minus untrained (here at
least 0.1 too; "every word's gap" asks it of every word), and says:

    pre-training      the trained biLM holds it on enough seeds, the untrained one does not,
                      and the trained one's statistic exceeds the untrained one's (by the
                      target's margin) on enough seeds
    the architecture  the untrained biLM holds it too: the claim is true of the model's
                      shape and its random weights, and says nothing about what it learned
    missed            the trained biLM does not hold it on enough seeds
    unclear           the trained biLM holds it and the untrained one does not, but the
                      trained one exceeds the untrained one on too few seeds
    not run           its biLM was not measured (section 8, before it is implemented)

Enough seeds: 9 in 10 for the context gaps, the nearest neighbours and the relatives of
unseen words, 8 in 10 for the probes and the layer preferences (rounded up: 5 of 5 and 4 of
5 over 5 seeds).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CONTEXT_LAYERS",
    "LAYERS",
    "MIN_GAP",
    "MODELS",
    "MODEL_NAMES",
    "SPLITS",
    "SPLIT_NAMES",
    "TARGETS",
    "TASKS",
    "TASK_NAMES",
    "Reading",
    "Target",
    "baseline",
    "chance",
    "chance_rank",
    "differences",
    "firsts",
    "gamma",
    "gap",
    "markdown_table",
    "measured",
    "mean_ranks",
    "mix_accuracy",
    "nearest",
    "nearest_chance",
    "needed",
    "probes",
    "queries",
    "ranks",
    "read",
    "report",
    "spread",
    "summary",
    "view",
    "weights",
    "words",
]

MODELS = ("word", "char")
MODEL_NAMES = {"word": "word biLM", "char": "character biLM"}
SPLITS = ("train", "heldout")
SPLIT_NAMES = {"train": "training", "heldout": "held-out"}
TASKS = ("word_class", "word_sense")
TASK_NAMES = {"word_class": "word class", "word_sense": "word sense"}
LAYERS = (0, 1, 2)
CONTEXT_LAYERS = (1, 2)  # the layers that read the context; layer 0 is the token alone
MIN_GAP = 0.1  # the same-minus-different gap that counts as telling the senses apart
MIN_NEAREST = 0.9  # the 1-nearest-neighbour sense accuracy that counts as finding the sense
RECORD_KINDS = ("context", "nearest", "probes")  # a biLM's records, trained and untrained


# --- one biLM's records ----------------------------------------------------------------------


def view(results: dict, model: str = "word", trained: bool = True) -> dict:
    """The records of one biLM of `results`: `model` "word" or "char", `trained` or the
    untrained one it started from; keys "seeds", "context", "nearest", "probes",
    "neighbours" and "pretraining" (empty for an untrained biLM)."""
    source = results if model == "word" else results["char"]
    chosen = {kind: [r for r in source[kind] if r["trained"] == trained]
              for kind in RECORD_KINDS}
    return {"seeds": results["seeds"], **chosen,
            "pretraining": source["pretraining"] if trained else [],
            "neighbours": [r for r in results["neighbours"]
                           if r["model"] == model and r["trained"] == trained]}


def measured(results: dict, model: str) -> bool:
    """Whether `results` hold `model`'s records (section 8's are absent until it runs)."""
    return bool(view(results, model)["context"])


def _per_seed(records: list[dict], value: Callable[[dict], float], **match) -> np.ndarray:
    """`value` of the record matching `match`, for every seed in order."""
    chosen = sorted((r for r in records if all(r[k] == v for k, v in match.items())),
                    key=lambda r: r["seed"])
    return np.array([value(r) for r in chosen], dtype=float)


def words(view: dict) -> list[str]:
    """The target words, without "all"."""
    return list(dict.fromkeys(r["word"] for r in view["context"] if r["word"] != "all"))


def gap(view: dict, split: str, word: str, layer: int) -> np.ndarray:
    """(seeds,) same-sense minus different-sense cosine (word "all": every pair pooled)."""
    return _per_seed(view["context"], lambda r: r["same"] - r["different"], split=split,
                     word=word, layer=layer)


def baseline(view: dict, split: str, layer: int) -> np.ndarray:
    """(seeds,) the cosine of two tokens of different words (the anisotropy baseline)."""
    return _per_seed(view["context"], lambda r: r["baseline"], split=split, word="all",
                     layer=layer)


def nearest(view: dict, split: str, layer: int) -> np.ndarray:
    """(seeds,) 1-nearest-neighbour sense accuracy, pooled over the words (each weighed by
    its queries)."""
    per_seed: dict[int, tuple[float, int]] = {}
    for r in view["nearest"]:
        if r["split"] == split and r["layer"] == layer:
            hits, total = per_seed.get(r["seed"], (0.0, 0))
            per_seed[r["seed"]] = (hits + r["accuracy"] * r["n"], total + r["n"])
    return np.array([hits / total for _, (hits, total) in sorted(per_seed.items())])


def nearest_chance(view: dict, split: str) -> float:
    """The 1-nearest-neighbour accuracy of a random pick, pooled as `nearest` pools."""
    records = [r for r in view["nearest"] if r["split"] == split and r["layer"] == 0]
    return sum(r["chance"] * r["n"] for r in records) / sum(r["n"] for r in records)


def weights(view: dict, task: str) -> np.ndarray:
    """(seeds, layers) the learned softmax weights."""
    chosen = sorted((r for r in view["probes"] if r["task"] == task and r["layer"] == "mix"),
                    key=lambda r: r["seed"])
    return np.array([r["weights"] for r in chosen], dtype=float).reshape(-1, len(LAYERS))


def gamma(view: dict, task: str) -> np.ndarray:
    """(seeds,) the learned gamma."""
    return _per_seed(view["probes"], lambda r: r["gamma"], task=task, layer="mix")


def mix_accuracy(view: dict, task: str) -> np.ndarray:
    """(seeds,) held-out accuracy of the learned mix."""
    return _per_seed(view["probes"], lambda r: r["accuracy"], task=task, layer="mix")


def probes(view: dict, task: str) -> np.ndarray:
    """(seeds, layers) the single-layer probes' held-out accuracy."""
    return np.stack([_per_seed(view["probes"], lambda r: r["accuracy"], task=task,
                               layer=layer) for layer in LAYERS], axis=1)


def chance(view: dict, task: str) -> float:
    """The task's chance accuracy."""
    return next(r["chance"] for r in view["probes"] if r["task"] == task)


def queries(view: dict) -> list[tuple[str, str]]:
    """(word the corpus lacks, its relative), in order."""
    return list(dict.fromkeys((r["query"], r["relative"]) for r in view["neighbours"]))


def ranks(view: dict, query: str) -> np.ndarray:
    """(seeds,) the rank of the query's relative among its nearest words (1 = the nearest)."""
    return _per_seed(view["neighbours"], lambda r: r["rank"], query=query)


def mean_ranks(view: dict) -> np.ndarray:
    """(seeds,) the relatives' rank, averaged over the queries."""
    return np.mean([ranks(view, query) for query, _ in queries(view)], axis=0)


def firsts(view: dict) -> np.ndarray:
    """(seeds,) how many queries have their relative as their nearest word."""
    return np.sum([ranks(view, query) == 1 for query, _ in queries(view)], axis=0)


def chance_rank(view: dict) -> float:
    """The relative's mean rank for a ranking that knows nothing: (candidates + 1) / 2."""
    return (view["neighbours"][0]["candidates"] + 1) / 2


def spread(values, decimals: int = 3) -> str:
    """'mean ± sd' (sd with ddof 1; 0 for one value), three decimals unless told."""
    values = np.asarray(values, dtype=float)
    sd = values.std(ddof=1) if len(values) > 1 else 0.0
    return f"{values.mean():.{decimals}f} ± {sd:.{decimals}f}"


# --- the targets ------------------------------------------------------------------------------

Statistic = Callable[[dict, bool], np.ndarray]  # (results, trained) -> (seeds,)


@dataclass(frozen=True)
class Target:
    """A claim about one biLM, held on a seed where `statistic` is at least `threshold`
    (above it, if `strict`); its effect of pre-training, trained minus untrained, at least
    `margin` (above it, if `strict`); needed on `share` of the seeds."""

    section: int
    claim: str
    statistic: Statistic
    threshold: float
    margin: float
    share: float
    strict: bool = False
    models: tuple[str, ...] = ("word",)  # whose records it reads
    # (results) -> (seeds,) the effect where it is not statistic(trained) - statistic(untrained)
    effect_of: Callable[[dict], np.ndarray] | None = None

    def holds(self, values: np.ndarray, against: float) -> np.ndarray:
        return values > against if self.strict else values >= against - 1e-9

    @property
    def asked(self) -> str:
        """The effect of pre-training it asks for, in words: '>= 0.1'."""
        return f"{'>' if self.strict else '>='} {self.margin:g}"


def needed(share: float, seeds: int) -> int:
    """On how many of `seeds` a target must hold: `share` of them, rounded up."""
    return math.ceil(share * seeds - 1e-9)


def _of(model: str, statistic: Callable[[dict], np.ndarray]) -> Statistic:
    return lambda results, trained: statistic(view(results, model, trained))


def _gap(model: str, split: str, layer: int) -> Statistic:
    return _of(model, lambda v: gap(v, split, "all", layer))


def _every_word(split: str) -> Statistic:
    def lowest(v: dict) -> np.ndarray:
        return np.min([gap(v, split, word, layer) for word in words(v)
                       for layer in CONTEXT_LAYERS], axis=0)
    return _of("word", lowest)


def _every_word_raised(split: str) -> Callable[[dict], np.ndarray]:
    """(seeds,) the least that pre-training raised any word's gap at layer 1 or 2."""
    def least(results: dict) -> np.ndarray:
        trained, untrained = view(results, "word", True), view(results, "word", False)
        return np.min([gap(trained, split, word, layer) - gap(untrained, split, word, layer)
                       for word in words(trained) for layer in CONTEXT_LAYERS], axis=0)
    return least


def _layer_2_more(split: str) -> Statistic:
    return _of("word", lambda v: gap(v, split, "all", 2) - gap(v, split, "all", 1))


def _prefers_layer_2(values: np.ndarray) -> np.ndarray:
    """(seeds,) how far layer 2's value exceeds the larger of layers 0 and 1's."""
    return values[:, 2] - values[:, :2].max(axis=1)


def _nearest(layer: int) -> Statistic:
    return _of("word", lambda v: nearest(v, "heldout", layer))


def _char_layer_0(results: dict, trained: bool) -> np.ndarray:
    return (probes(view(results, "char", trained), "word_class")[:, 0]
            - probes(view(results, "word", trained), "word_class")[:, 0])


def _relatives_nearer(results: dict, trained: bool) -> np.ndarray:
    return (mean_ranks(view(results, "word", trained))
            - mean_ranks(view(results, "char", trained)))


NINE, EIGHT = 0.9, 0.8
TARGETS: tuple[Target, ...] = (
    *(Target(6, f"{SPLIT_NAMES[split]}: pooled gap >= {MIN_GAP} at layer {layer}",
             _gap("word", split, layer), MIN_GAP, MIN_GAP, NINE)
      for split in SPLITS for layer in CONTEXT_LAYERS),
    *(Target(6, f"{SPLIT_NAMES[split]}: every word's gap >= {MIN_GAP} at layers 1 and 2",
             _every_word(split), MIN_GAP, MIN_GAP, NINE, effect_of=_every_word_raised(split))
      for split in SPLITS),
    *(Target(6, f"{SPLIT_NAMES[split]}: pooled gap larger at layer 2 than at layer 1",
             _layer_2_more(split), 0.0, 0.0, NINE, strict=True) for split in SPLITS),
    *(Target(6, f"held-out: the nearest occurrence has the word's sense at layer {layer} "
                f"(1-NN accuracy >= {MIN_NEAREST})", _nearest(layer), MIN_NEAREST, 0.1, NINE)
      for layer in CONTEXT_LAYERS),
    Target(7, f"word sense: the mix finds the sense (accuracy >= {MIN_NEAREST})",
           _of("word", lambda v: mix_accuracy(v, "word_sense")), MIN_NEAREST, 0.1, EIGHT),
    Target(7, "word sense: learned weights put the least on layer 0",
           _of("word", lambda v: weights(v, "word_sense")[:, 1:].min(axis=1)
               - weights(v, "word_sense")[:, 0]), 0.0, 0.0, EIGHT, strict=True),
    Target(7, "word sense: learned weights prefer layer 2",
           _of("word", lambda v: _prefers_layer_2(weights(v, "word_sense"))), 0.0, 0.0, EIGHT,
           strict=True),
    Target(7, "word sense: single-layer probes prefer layer 2",
           _of("word", lambda v: _prefers_layer_2(probes(v, "word_sense"))), 0.0, 0.0, EIGHT,
           strict=True),
    Target(7, "word class: the mix beats chance by >= 0.1",
           _of("word", lambda v: mix_accuracy(v, "word_class") - chance(v, "word_class")),
           0.1, 0.1, EIGHT),
    Target(7, "word class: learned weights prefer a lower layer (0 or 1)",
           _of("word", lambda v: -_prefers_layer_2(weights(v, "word_class"))), 0.0, 0.0,
           EIGHT, strict=True),
    Target(7, "word class: single-layer probes prefer a lower layer (0 or 1)",
           _of("word", lambda v: -_prefers_layer_2(probes(v, "word_class"))), 0.0, 0.0,
           EIGHT, strict=True),
    *(Target(8, f"character biLM, held-out: pooled gap >= {MIN_GAP} at layer {layer}",
             _gap("char", "heldout", layer), MIN_GAP, MIN_GAP, NINE, models=("char",))
      for layer in CONTEXT_LAYERS),
    Target(8, "character biLM: its layer-0 word-class probe beats the word biLM's",
           _char_layer_0, 0.0, 0.0, EIGHT, strict=True, models=("word", "char")),
    Target(8, "words the corpus lacks: the character biLM ranks their relatives nearer than "
              "the word biLM", _relatives_nearer, 0.0, 0.0, NINE, strict=True,
           models=("word", "char")),
)

PRE_TRAINING, ARCHITECTURE, MISSED, UNCLEAR, NOT_RUN = (
    "pre-training", "the architecture", "missed", "unclear", "not run")


@dataclass(frozen=True)
class Reading:
    """One target read on `results`: per seed, the statistic of the trained and of the
    untrained biLM, the effect of pre-training (their difference, unless the target says
    otherwise), whether each holds the claim, whether the effect is what the target asks for;
    `needed` seeds of `seeds`; `verdict` one of the module's five."""

    target: Target
    trained: np.ndarray
    untrained: np.ndarray
    effect: np.ndarray
    trained_holds: np.ndarray
    untrained_holds: np.ndarray
    effect_holds: np.ndarray
    needed: int
    verdict: str

    @property
    def seeds(self) -> int:
        return len(self.trained)

    def counts(self) -> dict[str, str]:
        """"k/n" of the trained biLM, the untrained one and the effect."""
        n = self.seeds
        return {key: f"{int(held.sum())}/{n}" for key, held in (
            ("trained", self.trained_holds), ("untrained", self.untrained_holds),
            ("effect", self.effect_holds))}


def read(results: dict, targets: Sequence[Target] = TARGETS) -> list[Reading]:
    """Every target read on `results` (see the module's docstring)."""
    n = len(results["seeds"])
    found = []
    for target in targets:
        wanted = needed(target.share, n)
        if not all(measured(results, model) for model in target.models):
            empty = np.zeros(0)
            found.append(Reading(target, empty, empty, empty, empty.astype(bool),
                                 empty.astype(bool), empty.astype(bool), wanted, NOT_RUN))
            continue
        trained, untrained = target.statistic(results, True), target.statistic(results, False)
        trained_holds = target.holds(trained, target.threshold)
        untrained_holds = target.holds(untrained, target.threshold)
        effect = (trained - untrained) if target.effect_of is None else target.effect_of(results)
        effect_holds = target.holds(effect, target.margin)
        if trained_holds.sum() < wanted:
            verdict = MISSED
        elif untrained_holds.sum() >= wanted:
            verdict = ARCHITECTURE
        elif effect_holds.sum() >= wanted:
            verdict = PRE_TRAINING
        else:
            verdict = UNCLEAR
        found.append(Reading(target, trained, untrained, effect, trained_holds,
                             untrained_holds, effect_holds, wanted, verdict))
    return found


def shown_verdict(verdict: str, markdown: bool = False) -> str:
    """The verdict, in bold in Markdown where it is not what the paper found."""
    return f"**{verdict}**" if markdown and verdict in (MISSED, UNCLEAR) else verdict


def markdown_table(results: dict) -> str:
    """The targets as a Markdown table: on how many seeds each held for the trained and the
    untrained biLM, the effect (trained minus untrained: mean ± sd, and on how many seeds it
    is what the target asks), how many seeds it needs, and what it says."""
    rows = ["| section | target | trained | untrained | trained − untrained | needed | "
            "reading |", "|---|---|---|---|---|---|---|"]
    for reading in read(results):
        target = reading.target
        if reading.verdict == NOT_RUN:
            cells = ["", "", "", f"{reading.needed}/{len(results['seeds'])}"]
        else:
            counts = reading.counts()
            cells = [counts["trained"], counts["untrained"],
                     f"{spread(reading.effect)}, {target.asked} on "
                     f"{counts['effect']}", f"{reading.needed}/{reading.seeds}"]
        rows.append("| " + " | ".join([str(target.section), target.claim, *cells,
                                        shown_verdict(reading.verdict, True)]) + " |")
    return "\n".join(rows) + "\n"


def _line(who: str, verdict: str, counts: dict[str, str], needed: int, effect: str,
          spread_: str) -> str:
    return (f"    {who:<11}{verdict:<18}trained {counts['trained']} (needs {needed}), "
            f"untrained {counts['untrained']}, effect {spread_} ({effect} on {counts['effect']})")


def report(results: dict, reference: dict | None = None) -> str:
    """The targets as text for a terminal: each claim, then what it read on `results` and,
    where `reference` (a `summary` of the reference's results) holds it, what the reference
    read; "effect" is trained minus untrained, mean ± sd over seeds, and on how many seeds it
    is what the target asks."""
    lines = []
    section = None
    for reading in read(results):
        target = reading.target
        if target.section != section:
            section = target.section
            lines.append(f"\nsection {section}{' (a bonus)' if section == 8 else ''}")
        lines.append(f"  {target.claim}")
        if reading.verdict == NOT_RUN:
            lines.append(f"    {'yours':<11}{NOT_RUN} (section 8 was not measured)")
        else:
            lines.append(_line("yours", reading.verdict, reading.counts(), reading.needed,
                               target.asked, spread(reading.effect)))
        if reference and target.claim in reference["targets"]:
            theirs = reference["targets"][target.claim]
            lines.append(_line("reference", theirs["verdict"], theirs, theirs["needed"],
                               target.asked, theirs["effect_mean_sd"]))
    return "\n".join(lines).lstrip("\n")


def differences(results: dict, reference: dict) -> list[str]:
    """The claims whose verdict on `results` is not the reference's (those not run left
    out)."""
    return [r.target.claim for r in read(results) if r.verdict != NOT_RUN
            and r.target.claim in reference["targets"]
            and r.verdict != reference["targets"][r.target.claim]["verdict"]]


def key_means(results: dict) -> dict:
    """The means over seeds that `make test` shows beside a passed section's own numbers
    (`course.your_elmo`): per biLM ("word", "char") and "trained" / "untrained", the
    held-out same- minus different-sense gap and 1-NN sense accuracy per layer, each task's
    learned weights and mix accuracy, the relatives' mean rank (where measured) and,
    trained, the final training loss. Rounded to 3 decimals; JSON-able."""
    def mean(values) -> float | list[float]:
        found = np.round(np.mean(values, axis=0), 3)
        return found.tolist()

    means: dict = {}
    for model in (m for m in MODELS if measured(results, m)):
        for trained in (True, False):
            v = view(results, model, trained)
            means.setdefault(model, {})["trained" if trained else "untrained"] = {
                "gap": [mean(gap(v, "heldout", "all", k)) for k in LAYERS],
                "nearest": [mean(nearest(v, "heldout", k)) for k in LAYERS],
                "weights": {task: mean(weights(v, task)) for task in TASKS},
                "mix_accuracy": {task: mean(mix_accuracy(v, task)) for task in TASKS},
                **({"mean_rank": mean(mean_ranks(v))} if v["neighbours"] else {}),
                **({"train_loss": mean([r["train"] for r in v["pretraining"]])}
                   if v["pretraining"] else {})}
    return means


def summary(results: dict) -> dict:
    """What `report` shows of the reference: per claim, the counts, the effect and the
    verdict; JSON-able."""
    found = {}
    for reading in read(results):
        if reading.verdict != NOT_RUN:
            counts = reading.counts()
            found[reading.target.claim] = {
                **counts, "needed": reading.needed,
                "effect_mean_sd": spread(reading.effect),
                "verdict": reading.verdict}
    return {"seeds": len(results["seeds"]), "targets": found}
