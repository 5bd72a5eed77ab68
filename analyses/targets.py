"""What the paper found, restated as effects of pre-training: each target is read on the
pre-trained biLMs and on the untrained biLMs they started from (`analyses.experiments`), seed
by seed, and counts as met by pre-training only where the trained biLM holds it and the
untrained one of the same shape does not.

    found = targets.read(results)          # one Reading per target
    print(targets.report(results))         # them, as `make replicate` prints them

`results` is what `analyses.experiments.run` returns (the demo's `results.json` too): records
of the word biLM at the top, of section 8's character biLM under "char", each with
"trained" true or false. The readings below take one biLM's records, a `view`:

    view(results, "word", trained=True)    # the pre-trained word biLM's records
    gap(view, "heldout", "all", 1)         # (seeds,) same-minus-different cosine, layer 1

A target is a claim about one biLM and a statistic that holds it on a seed, e.g. "held-out:
pooled gap >= 0.1 at layer 1" holds where the gap is at least 0.1. It is read on both
biLMs and on the effect of pre-training, seed by seed: trained minus untrained (here at
least 0.1 too; "every word's gap" asks it of every word). One rule reads every target, over
any number of seeds, the learner's 5 and the reference's 10 alike: each of the three is a
mean over seeds with its 95% interval (Student's t, `interval`), and the target says

    missed            the trained biLMs' interval lies below the threshold
    the architecture  the untrained biLMs' interval lies at or above it: the claim is true
                      of the model's shape and its random weights, and says nothing about
                      what it learned
    pre-training      the trained biLMs' interval lies at or above the threshold and the
                      effect's at or above the target's margin
    unclear           anything else: an interval straddles its bound, the seeds' spread
                      is larger than the distance to it (one seed gives no interval)
    not run           its biLM was not measured (section 8, before it is implemented)

Where a reading is not the reference's, `differences` says whether the two effects differ by
more than seed noise (`within_noise`): twice the standard error of their difference.
"""

from __future__ import annotations

import math
import textwrap
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
    "interval",
    "within_noise",
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
    `margin` (above it, if `strict`); both read on the mean over seeds and its interval."""

    section: int
    claim: str
    statistic: Statistic
    threshold: float
    margin: float
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


# Student's t at 0.975 for 1..30 degrees of freedom, beyond them the normal's 1.96: numpy
# has no quantile function, and no package the course installs besides torch has one either.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def interval(values) -> tuple[float, float, float]:
    """(mean, low, high): the mean over seeds of `values` and its 95% interval (Student's t);
    one seed gives (-inf, inf), no interval at all."""
    values = np.asarray(values, dtype=float)
    mean = float(values.mean())
    if len(values) < 2:
        return mean, -math.inf, math.inf
    t = T_975[len(values) - 2] if len(values) - 1 <= len(T_975) else 1.96
    half = t * float(values.std(ddof=1)) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def within_noise(yours, theirs) -> tuple[bool, float, float]:
    """Whether the mean effects of two sets of seeds differ by no more than seed noise:
    (within, their difference, twice its standard error). With one seed of `yours`, its
    spread is taken to be `theirs`'."""
    yours, theirs = np.asarray(yours, dtype=float), np.asarray(theirs, dtype=float)
    sd_theirs = theirs.std(ddof=1) if len(theirs) > 1 else 0.0
    sd_yours = yours.std(ddof=1) if len(yours) > 1 else sd_theirs
    noise = 2 * math.sqrt(sd_yours**2 / len(yours) + sd_theirs**2 / len(theirs))
    difference = float(yours.mean() - theirs.mean())
    return abs(difference) <= noise, difference, noise


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


TARGETS: tuple[Target, ...] = (
    *(Target(6, f"{SPLIT_NAMES[split]}: pooled gap >= {MIN_GAP} at layer {layer}",
             _gap("word", split, layer), MIN_GAP, MIN_GAP)
      for split in SPLITS for layer in CONTEXT_LAYERS),
    *(Target(6, f"{SPLIT_NAMES[split]}: every word's gap >= {MIN_GAP} at layers 1 and 2",
             _every_word(split), MIN_GAP, MIN_GAP, effect_of=_every_word_raised(split))
      for split in SPLITS),
    *(Target(6, f"{SPLIT_NAMES[split]}: pooled gap larger at layer 2 than at layer 1",
             _layer_2_more(split), 0.0, 0.0, strict=True) for split in SPLITS),
    *(Target(6, f"held-out: the nearest occurrence has the word's sense at layer {layer} "
                f"(1-NN accuracy >= {MIN_NEAREST})", _nearest(layer), MIN_NEAREST, 0.1)
      for layer in CONTEXT_LAYERS),
    Target(7, f"word sense: the mix finds the sense (accuracy >= {MIN_NEAREST})",
           _of("word", lambda v: mix_accuracy(v, "word_sense")), MIN_NEAREST, 0.1),
    Target(7, "word sense: learned weights put the least on layer 0",
           _of("word", lambda v: weights(v, "word_sense")[:, 1:].min(axis=1)
               - weights(v, "word_sense")[:, 0]), 0.0, 0.0, strict=True),
    Target(7, "word sense: learned weights prefer layer 2",
           _of("word", lambda v: _prefers_layer_2(weights(v, "word_sense"))), 0.0, 0.0,
           strict=True),
    Target(7, "word sense: single-layer probes prefer layer 2",
           _of("word", lambda v: _prefers_layer_2(probes(v, "word_sense"))), 0.0, 0.0,
           strict=True),
    Target(7, "word class: the mix beats chance by >= 0.1",
           _of("word", lambda v: mix_accuracy(v, "word_class") - chance(v, "word_class")),
           0.1, 0.1),
    Target(7, "word class: learned weights prefer a lower layer (0 or 1)",
           _of("word", lambda v: -_prefers_layer_2(weights(v, "word_class"))), 0.0, 0.0,
           strict=True),
    Target(7, "word class: single-layer probes prefer a lower layer (0 or 1)",
           _of("word", lambda v: -_prefers_layer_2(probes(v, "word_class"))), 0.0, 0.0,
           strict=True),
    *(Target(8, f"character biLM, held-out: pooled gap >= {MIN_GAP} at layer {layer}",
             _gap("char", "heldout", layer), MIN_GAP, MIN_GAP, models=("char",))
      for layer in CONTEXT_LAYERS),
    Target(8, "character biLM: its layer-0 word-class probe beats the word biLM's",
           _char_layer_0, 0.0, 0.0, strict=True, models=("word", "char")),
    Target(8, "words the corpus lacks: the character biLM ranks their relatives nearer than "
              "the word biLM", _relatives_nearer, 0.0, 0.0, strict=True,
           models=("word", "char")),
)

PRE_TRAINING, ARCHITECTURE, MISSED, UNCLEAR, NOT_RUN = (
    "pre-training", "the architecture", "missed", "unclear", "not run")


@dataclass(frozen=True)
class Reading:
    """One target read on `results`: per seed, the statistic of the trained and of the
    untrained biLM, the effect of pre-training (their difference, unless the target says
    otherwise), whether each holds the claim, whether the effect is what the target asks for;
    `verdict` one of the module's five, from the intervals of the three means."""

    target: Target
    trained: np.ndarray
    untrained: np.ndarray
    effect: np.ndarray
    verdict: str

    @property
    def seeds(self) -> int:
        return len(self.trained)

    @property
    def trained_holds(self) -> np.ndarray:
        """(seeds,) whether the trained biLM holds the claim on each seed."""
        return self.target.holds(self.trained, self.target.threshold)

    @property
    def untrained_holds(self) -> np.ndarray:
        """(seeds,) whether the untrained biLM holds the claim on each seed."""
        return self.target.holds(self.untrained, self.target.threshold)

    @property
    def effect_holds(self) -> np.ndarray:
        """(seeds,) whether the effect is what the target asks for on each seed."""
        return self.target.holds(self.effect, self.target.margin)

    def counts(self) -> dict[str, str]:
        """"k/n": on how many seeds the trained biLM, the untrained one and the effect hold
        it (what the intervals summarise, shown for a reader who counts)."""
        return {key: f"{int(held.sum())}/{self.seeds}" for key, held in (
            ("trained", self.trained_holds), ("untrained", self.untrained_holds),
            ("effect", self.effect_holds))}


def verdict(target: Target, trained, untrained, effect) -> str:
    """The rule of the module's docstring: what the intervals of the mean over seeds of the
    trained and the untrained biLMs' statistic and of the effect say of `target`."""
    def above(values, bound: float) -> bool:
        low = interval(values)[1]
        return low > bound if target.strict else low >= bound - 1e-9

    def below(values, bound: float) -> bool:
        high = interval(values)[2]
        return high <= bound if target.strict else high < bound - 1e-9

    if below(trained, target.threshold):
        return MISSED
    if above(untrained, target.threshold):
        return ARCHITECTURE
    if above(trained, target.threshold) and above(effect, target.margin):
        return PRE_TRAINING
    return UNCLEAR


def read(results: dict, targets: Sequence[Target] = TARGETS) -> list[Reading]:
    """Every target read on `results` (see the module's docstring)."""
    found = []
    for target in targets:
        if not all(measured(results, model) for model in target.models):
            empty = np.zeros(0)
            found.append(Reading(target, empty, empty, empty, NOT_RUN))
            continue
        trained, untrained = target.statistic(results, True), target.statistic(results, False)
        effect = (trained - untrained) if target.effect_of is None else target.effect_of(results)
        found.append(Reading(target, trained, untrained, effect,
                             verdict(target, trained, untrained, effect)))
    return found


def shown_verdict(verdict: str, markdown: bool = False) -> str:
    """The verdict, in bold in Markdown where it is not what the paper found."""
    return f"**{verdict}**" if markdown and verdict in (MISSED, UNCLEAR) else verdict


def shown_interval(values, signed: bool = False) -> str:
    """'mean ± half the 95% interval' ('mean' alone for one seed), three decimals, one
    where the numbers reach 10 (a rank)."""
    mean, low, high = interval(values)
    half = (high - low) / 2
    decimals = 1 if max(abs(mean), half if math.isfinite(half) else 0) >= 10 else 3
    sign = "+" if signed else ""
    return f"{mean:{sign}.{decimals}f}" + (f" ± {half:.{decimals}f}" if math.isfinite(half)
                                           else "")


def markdown_table(results: dict) -> str:
    """The targets as a Markdown table: the mean over seeds of the trained and the untrained
    biLMs' statistic and of the effect (trained minus untrained), each ± half its 95%
    interval, on how many seeds each holds, and what the intervals say (`verdict`)."""
    n = len(results["seeds"])
    rows = [f"| section | target | trained | untrained | trained − untrained | held on seeds "
            f"(of {n}): trained, untrained, effect | reading |", "|---|---|---|---|---|---|---|"]
    for reading in read(results):
        target = reading.target
        if reading.verdict == NOT_RUN:
            cells = ["", "", "", ""]
        else:
            counts = reading.counts()
            cells = [shown_interval(reading.trained), shown_interval(reading.untrained),
                     f"{shown_interval(reading.effect, True)} (asks {target.asked})",
                     f"{counts['trained']}, {counts['untrained']}, {counts['effect']}"]
        rows.append("| " + " | ".join([str(target.section), target.claim, *cells,
                                        shown_verdict(reading.verdict, True)]) + " |")
    return "\n".join(rows) + "\n"


# The columns of `report`, each row a set of seeds; 4 + 20 + 16 + 16 + 16 + 16 = 88, the
# width the course's readings keep to (`course.registry.OUTPUT_WIDTH`).
COLUMNS = ("", "trained", "untrained", "effect", "reading")  # effect: trained − untrained


def _row(who: str, trained, untrained, effect, verdict: str) -> str:
    return (f"    {who:<20}{shown_interval(trained):<16}{shown_interval(untrained):<16}"
            f"{shown_interval(effect, True):<16}{verdict}")


def report(results: dict, reference: dict | None = None) -> str:
    """The targets as text for a terminal: each claim, then what it read on `results` and,
    where `reference` (a `summary` of the reference's results) holds it, what the reference
    read; every number the mean over seeds ± half its 95% interval, under named columns."""
    lines = []
    section = None
    n = len(results["seeds"])
    for reading in read(results):
        target = reading.target
        if target.section != section:
            section = target.section
            lines += ["", f"section {section}{' (a bonus)' if section == 8 else ''}",
                      (f"    {COLUMNS[0]:<20}" + "".join(f"{c:<16}" for c in COLUMNS[1:]))
                      .rstrip()]
        lines += textwrap.wrap(f"{target.claim} (the effect asks {target.asked})", 88,
                               initial_indent="  ", subsequent_indent="    ")
        yours = f"yours, {n} seed{'s' if n > 1 else ''}"
        if reading.verdict == NOT_RUN:
            lines.append(f"    {yours:<20}{NOT_RUN} (section 8 was not measured)")
        else:
            lines.append(_row(yours, reading.trained, reading.untrained, reading.effect,
                              reading.verdict))
        if reference and target.claim in reference["targets"]:
            theirs = reference["targets"][target.claim]
            lines.append(_row(f"reference, {reference['seeds']} seeds",
                              *(theirs["values"][key] for key in ("trained", "untrained",
                                                                  "effect")),
                              theirs["verdict"]))
    return "\n".join(lines).lstrip("\n")


@dataclass(frozen=True)
class Difference:
    """A target read otherwise on `results` than on the reference: the mean effects'
    `difference` (yours minus the reference's), `noise` (twice its standard error), and
    whether it is `within` seed noise."""

    claim: str
    yours: str
    theirs: str
    difference: float
    noise: float
    within: bool

    def __str__(self) -> str:
        return (f"{self.claim}: {self.yours} here, {self.theirs} for the reference; the mean "
                f"effects differ by {self.difference:+.3g}, "
                + (f"within seed noise (twice its standard error, {self.noise:.3g}): more "
                   "seeds would tell" if self.within else
                   f"beyond seed noise ({self.noise:.3g}): it points at a mistake"))


def differences(results: dict, reference: dict) -> list[Difference]:
    """The targets whose verdict on `results` is not the reference's (those not run left
    out), each with whether the effects differ by more than seed noise (`within_noise`)."""
    found = []
    for r in read(results):
        theirs = reference["targets"].get(r.target.claim)
        if r.verdict != NOT_RUN and theirs and r.verdict != theirs["verdict"]:
            within, difference, noise = within_noise(r.effect, theirs["values"]["effect"])
            found.append(Difference(r.target.claim, r.verdict, theirs["verdict"], difference,
                                    noise, within))
    return found


def key_means(results: dict) -> dict:
    """The means over seeds that `make test` shows beside a passed section's own numbers
    (`analyses.your_elmo`): per biLM ("word", "char") and "trained" / "untrained", the
    held-out same- minus different-sense gap and 1-NN sense accuracy per layer, each task's
    learned weights and mix accuracy, the relatives' mean rank (where measured) and,
    trained, the final training loss; and "noise": the standard deviation over seeds of the
    effect of pre-training (trained minus untrained, seed by seed) of the gap, the weights,
    the mix accuracy and the mean rank, what one seed's effect is read against. Rounded to 3
    decimals; JSON-able."""
    def mean(values) -> float | list[float]:
        found = np.round(np.mean(values, axis=0), 3)
        return found.tolist()

    def sd(values) -> float | list[float]:
        return np.round(np.std(values, axis=0, ddof=1), 3).tolist()

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
        both = [view(results, model, trained) for trained in (True, False)]

        def effect(reading: Callable[[dict], np.ndarray], both=both) -> np.ndarray:
            return reading(both[0]) - reading(both[1])

        means[model]["noise"] = {
            "gap": [sd(effect(lambda v, k=k: gap(v, "heldout", "all", k))) for k in LAYERS],
            "weights": {task: sd(effect(lambda v, task=task: weights(v, task)))
                        for task in TASKS},
            "mix_accuracy": {task: sd(effect(lambda v, task=task: mix_accuracy(v, task)))
                             for task in TASKS},
            **({"mean_rank": sd(effect(mean_ranks))} if both[0]["neighbours"] else {})}
    return means


def summary(results: dict) -> dict:
    """What `report`, `differences` and the notebooks read of the reference: per claim, on
    how many seeds each holds ("trained", "untrained", "effect": "k/n"), the effect's
    "effect_mean_sd", the "verdict", and "values": the per-seed values of the trained and
    the untrained biLMs' statistic and of the effect (3 decimals), which the rule reads;
    JSON-able."""
    found = {}
    for reading in read(results):
        if reading.verdict != NOT_RUN:
            found[reading.target.claim] = {
                **reading.counts(), "effect_mean_sd": spread(reading.effect),
                "verdict": reading.verdict,
                "values": {key: [round(float(x), 3) for x in getattr(reading, key)]
                           for key in ("trained", "untrained", "effect")}}
    return {"seeds": len(results["seeds"]), "targets": found}
