"""The findings of ELMo on real English (`analyses.real_english`): every reading's accuracy and
every named comparison as a paired difference, each a mean over seeds with a 95 % interval
from a two-level bootstrap, and a verdict only where the interval says so.

What a seed gives (`real_english.measure_seed`) is, for each test ("natural", "balanced",
"pos", ...), one score per test example and reading: 1 or 0 (or a share of 1 where a reading
cannot tell tied candidates apart, as a guess among them would). A comparison subtracts two
readings example by example, so that the examples both got right or wrong cancel.

The two-level bootstrap: a replicate draws as many seeds as there are, with replacement, and
within each drawn seed as many of its test examples as it has, with replacement (a seed
drawn twice gets two draws of its examples); the replicate's value is the mean over the
drawn seeds of each draw's mean. Seeds change the biLM, the split and the probe's examples,
so both kinds of chance are in the interval. Examples of one lemma are drawn as if
independent: an interval is that much too narrow where a lemma's examples agree.

The comparisons are named here, before any is measured (`COMPARISONS`), so that none is
chosen for how it came out:

    pre-trained minus untrained, each layer (the untrained biLM has the same shape and seed);
    layer 2 minus each prior that needs no biLM (the frequency priors, chance, the majority
        class), and minus layer 0;
    layer 2 minus layer 1.

Each is read for the pre-trained biLM, for the untrained one, and as the difference of the
two, pre-training's part. A verdict names what the intervals resolve (`verdict`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

DRAWS = 2000  # bootstrap replicates
BOOTSTRAP_SEED = 20180215  # the draws are the same for the same scores
LEVEL = 0.95
PRETRAINED, UNTRAINED, MASKED = "word", "untrained", "masked"
LAYERS = (0, 1, 2)


def reading(model: str, layer: int) -> str:
    """The name of a layer's reading: "word/2" (the pre-trained word biLM's layer 2)."""
    return f"{model}/{layer}"


class Comparison(NamedTuple):
    """A named comparison on one test: reading `a` minus reading `b` (None: `a` alone, an
    accuracy), and the same in the control, `a_control` minus `b_control` (None: no control;
    a prior that needs no biLM is its own control). `primary`: named in advance."""

    test: str
    name: str
    a: str
    b: str | None
    a_control: str | None
    b_control: str | None
    primary: bool = True


def _layer_comparisons(test: str, priors: Sequence[tuple[str, str]], control: str = UNTRAINED
                       ) -> list[Comparison]:
    """A test's comparisons against `control`: each layer (pre-trained minus control), layer
    2 minus layer 1, minus layer 0 and minus each prior (name, reading)."""
    found = [Comparison(test, f"layer {k}", reading(PRETRAINED, k), None,
                        reading(control, k), None) for k in LAYERS]
    found.append(Comparison(test, "layer 2 minus layer 1", reading(PRETRAINED, 2),
                            reading(PRETRAINED, 1), reading(control, 2), reading(control, 1)))
    found.append(Comparison(test, "layer 2 minus layer 0", reading(PRETRAINED, 2),
                            reading(PRETRAINED, 0), reading(control, 2), reading(control, 0)))
    found += [Comparison(test, f"layer 2 minus {name}", reading(PRETRAINED, 2), prior,
                         reading(control, 2), prior) for name, prior in priors]
    return found


# Named in advance. "natural": WordNet's examples as they come, a random fifth to test on;
# "balanced": one held-out example per synset of lemmas with two such synsets or more;
# "pos": the part-of-speech probe, also against the untrained biLM that reads the target word
# as <unk> ("masked"). The character biLM's comparisons, on the words the word biLM reads as
# <unk>, are secondary: the course's question is the word biLM's.
COMPARISONS: tuple[Comparison, ...] = (
    *_layer_comparisons("natural", [
        ("the most frequent sense (training counts)", "most_frequent"),
        ("WordNet's first sense", "first_sense")]),
    *_layer_comparisons("balanced", [("chance (= any frequency prior)", "chance")]),
    *_layer_comparisons("pos", [("the majority class", "majority")]),
    *_layer_comparisons("pos", [], MASKED),
    *(Comparison(test, f"character minus word biLM, layer {k}", reading("char", k),
                 reading(PRETRAINED, k), reading("char_untrained", k), reading(PRETRAINED, k),
                 primary=False)
      for test in ("rare_sense", "rare_pos") for k in LAYERS),
)


def sweep_comparisons(penalties: Sequence[float]) -> list[Comparison]:
    """The capacity sweep, secondary: the part-of-speech probe of each layer at each penalty
    of `penalties` (the reading "<model>/<layer>@<index>"), pre-trained against each
    control."""
    return [Comparison("pos", f"layer {k}, penalty {penalty:g}", f"{reading(PRETRAINED, k)}@{p}",
                       None, f"{reading(control, k)}@{p}", None, primary=False)
            for control in (UNTRAINED, MASKED) for p, penalty in enumerate(penalties)
            for k in LAYERS]


# --- the bootstrap ------------------------------------------------------------------------------


def _resample_means(values: np.ndarray, draws: int, rng: np.random.Generator,
                    chunk: int = 256) -> np.ndarray:
    """(Q, draws): the mean of each of the Q rows of `values` (Q, n) over `draws` resamples
    of its n columns with replacement, the same resample for every row."""
    q, n = values.shape
    found = np.empty((q, draws))
    for start in range(0, draws, chunk):
        size = min(chunk, draws - start)
        drawn = rng.integers(0, n, size=(size, n)) + n * np.arange(size)[:, None]
        counts = np.bincount(drawn.ravel(), minlength=size * n).reshape(size, n)
        found[:, start:start + size] = values @ counts.T / n
    return found


def bootstrap(per_seed: Sequence[np.ndarray], draws: int = DRAWS,
              seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """(Q, draws) two-level bootstrap replicates of the mean of Q quantities: `per_seed`
    holds, for each seed, (Q, n_seed) per-example values (n may differ between seeds)."""
    rng = np.random.default_rng(seed)
    seeds = len(per_seed)
    picks = rng.integers(0, seeds, size=(draws, seeds))  # (draws, slots): which seed
    found = np.zeros((per_seed[0].shape[0], draws))
    for s, values in enumerate(per_seed):
        where = np.nonzero(picks == s)  # every (replicate, slot) that drew seed s
        if len(where[0]):
            means = _resample_means(np.asarray(values, dtype=float), len(where[0]), rng)
            np.add.at(found.T, where[0], means.T)
    return found / seeds


def interval(replicates: np.ndarray, per_seed_means: np.ndarray) -> dict:
    """{"mean": over seeds, "low", "high": the bootstrap's central `LEVEL` interval,
    "seeds": each seed's mean}."""
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return {"mean": float(per_seed_means.mean()), "low": float(low), "high": float(high),
            "seeds": [float(m) for m in per_seed_means]}


def resolved(found: Mapping[str, float]) -> int:
    """+1 when the interval lies above 0, -1 below, 0 when it holds 0."""
    return 1 if found["low"] > 0 else -1 if found["high"] < 0 else 0


def verdict(pretrained: Mapping, control: Mapping | None, part: Mapping | None,
            kind: str) -> str:
    """What the intervals resolve of a comparison of `kind`:

    "accuracy" (a layer alone; `part` is pre-trained minus control): "pre-training" when
        pre-training's part lies above 0, "pre-training lowers it" below, "not at this
        scale" when it holds 0.
    "prior" (minus a prior that needs no biLM) and "layers" (minus another layer):
        not at this scale   the pre-trained biLM's difference holds 0, or it lies below a
                            prior (only a gain over a prior is the biLM's)
        pre-training        the difference is resolved and so is pre-training's part (the
                            pre-trained minus the control's), the same way; the control's
                            own difference is not
        the architecture    the control's difference is resolved the same way, pre-training's
                            part is not: an untrained biLM of the same shape has it
        the architecture and pre-training   both are
        not told apart      the difference is resolved but neither part is
    Without a control, only whether the difference is resolved: "not at this scale" or
    "resolved".
    """
    if kind == "accuracy":
        sign = resolved(part)
        return {1: "pre-training", -1: "pre-training lowers it", 0: "not at this scale"}[sign]
    sign = resolved(pretrained)
    if sign == 0 or (kind == "prior" and sign < 0):
        return "not at this scale"
    if control is None or part is None:
        return "resolved"
    architecture, training = resolved(control) == sign, resolved(part) == sign
    return {(True, True): "the architecture and pre-training", (True, False): "the architecture",
            (False, True): "pre-training", (False, False): "not told apart"}[
                architecture, training]


def kind_of(comparison: Comparison) -> str:
    """"accuracy", "prior" or "layers" (`verdict`)."""
    if comparison.b is None:
        return "accuracy"
    return "layers" if "/" in comparison.b else "prior"


# --- the findings of a run ----------------------------------------------------------------------


def _difference(scores: Mapping[str, np.ndarray], a: str | None, b: str | None) -> np.ndarray:
    return scores[a] - (scores[b] if b is not None else 0.0)


def findings(scores: Sequence[Mapping[str, Mapping[str, np.ndarray]]],
             comparisons: Sequence[Comparison] = COMPARISONS, draws: int = DRAWS) -> dict:
    """{"readings": {test: {reading: interval}}, "findings": [one record per comparison]}
    from `scores`, one {test: {reading: (n,) per-example scores}} per seed. A comparison
    whose readings a run lacks (no character biLM) is left out. Each finding: test, name,
    primary, control_model (the control's model: "untrained", "masked", ...), the intervals
    of "pretrained" (a - b), "control" (a_control - b_control, or None) and "part" (their
    difference, or None), and its `verdict`."""
    tests = [test for test in scores[0] if all(test in s for s in scores)]
    readings, found = {}, []
    for test in tests:
        names = sorted(scores[0][test])
        chosen = [c for c in comparisons if c.test == test and all(
            r is None or r in names for r in (c.a, c.b, c.a_control, c.b_control))]
        rows = [[s[test][name] for name in names] for s in scores]
        quantities = []  # per seed: (Q, n) the readings, then each comparison's three
        for n_seed, seed_scores in enumerate(scores):
            table = seed_scores[test]
            rows_ = list(rows[n_seed])
            for c in chosen:
                rows_.append(_difference(table, c.a, c.b))
                if c.a_control is not None:
                    control = _difference(table, c.a_control, c.b_control)
                    rows_ += [control, rows_[-1] - control]
            quantities.append(np.stack([np.asarray(r, dtype=float) for r in rows_]))
        replicates = bootstrap(quantities, draws)
        means = np.stack([q.mean(axis=1) for q in quantities], axis=1)  # (Q, seeds)
        intervals = [interval(replicates[i], means[i]) for i in range(len(means))]
        readings[test] = dict(zip(names, intervals[:len(names)], strict=True))
        position = len(names)
        for c in chosen:
            pretrained = intervals[position]
            control = part = None
            if c.a_control is not None:
                control, part = intervals[position + 1], intervals[position + 2]
                position += 3
            else:
                position += 1
            found.append({"test": test, "name": c.name, "primary": c.primary,
                          "control_model": (c.a_control or "").split("/")[0] or None,
                          "pretrained": pretrained, "control": control, "part": part,
                          "verdict": verdict(pretrained, control, part, kind_of(c))})
    return {"readings": readings, "findings": found}
