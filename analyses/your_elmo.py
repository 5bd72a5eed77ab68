"""Your ELMo, shown: when a section passes, `make test` ends with a few lines of what your
own code computes, read against a baseline, the reference's numbers and, for what the layers
know, an untrained biLM of the same shape (what the architecture gives before any training).

The test run computes them as it ends (`course.results`, `--your-elmo FILE`: `write`), in
the process that has torch and the sections loaded already; the progress table prints them.

Each reading reuses what the tests already made: the biLM pre-trained with your sections
(`course.pretrained`, cached on disk) and the untrained biLM it started from. The lines are
kept in build/your-elmo/, keyed by your modules' bytes, so only the first run after an edit
computes them (section 7's probes train for a few seconds). The reference's numbers
are means over the course's seeds (`analyses.reference_targets.NUMBERS`); yours are one seed's.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import textwrap
from collections.abc import Callable
from pathlib import Path

import torch

from course.corpus import CORPUS, HELDOUT, HELDOUT_LABELS
from course.harness import Harness, Sections, sources_key
from course.pretrained import pretrained
from course.registry import BUILD_DIR, OUTPUT_WIDTH, SECTIONS, Section

from . import analysis, experiments

CACHE = BUILD_DIR / "your-elmo"
TASKS = {"word class": "word_class", "word sense": "word_sense"}


def _reference(model: str = "word", trained: str = "trained") -> dict:
    """The reference's means over its seeds (`trained` "trained" or "untrained"), or its
    seed noise ("noise"); {} in a course without measured results."""
    try:
        from .reference_targets import NUMBERS
    except ImportError:  # a course without measured results
        return {}
    return NUMBERS.get(model, {}).get(trained, {})


def _layers(values) -> str:
    return " ".join(f"{float(v):6.3f}" for v in values)


# --- the rule: one seed's effect read against the reference's seed noise ----------------------
# Every reading below compares your trained biLM with the untrained biLM it started from
# (one seed of each) and reads the difference, its effect, against the seed noise of that
# effect over the reference's seeds: twice its standard deviation
# (`analyses.reference_targets.NUMBERS[...]["noise"]`).

RAISED, LOWERED, WITHIN, UNMEASURED = "raised", "lowered", "within seed noise", "no seed noise"
WIDTH = OUTPUT_WIDTH - 2  # `make test` indents each line by two


def effect_of(effect: float, sd: float | None) -> str:
    """What pre-training did to a number, by its `effect` (trained minus untrained, one
    seed) against `sd`, the effect's standard deviation over the reference's seeds: RAISED
    or LOWERED beyond twice `sd`, WITHIN seed noise otherwise; UNMEASURED without `sd`."""
    if sd is None:
        return UNMEASURED
    if effect > 2 * sd:
        return RAISED
    if effect < -2 * sd:
        return LOWERED
    return WITHIN


def _table(header: list[str], rows: list[tuple[str, list[str]]], first: int = 32) -> list[str]:
    """Named columns: `header` over the value columns, each row (name, cells)."""
    return [line.rstrip() for line in (
        [" " * first + "".join(f"{name:>10}" for name in header)]
        + [f"{name:<{first}}" + "".join(f"{cell:>10}" for cell in cells)
           for name, cells in rows])]


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False)


def _numbers(values, signed: bool = False) -> list[str]:
    return [f"{float(v):{'+' if signed else ''}.3f}" for v in values]


# What the lines are computed with, besides the learner's sections: a change to any of these
# modules computes them again.
COMPUTED_BY = ("analyses.your_elmo", "analyses.analysis", "analyses.experiments",
               "analyses.reference_targets", "course.pretrained", "course.corpus")


def _cache_key(sections: Sections, section: Section) -> str:
    """A digest of the sections up to `section` as `sections` has them, and of the course
    code that computes the lines."""
    digest = hashlib.sha256(sources_key(sections.package, list(SECTIONS[:section.number]))
                            .encode())
    for name in COMPUTED_BY:
        digest.update(Path(importlib.import_module(name).__file__).read_bytes())
    return digest.hexdigest()[:16]


def corpus(sections: Sections) -> list[str]:
    word2idx, _ = sections.corpus.build_vocab(CORPUS)
    sentence = "the otter sat by the bank"
    ids = sections.corpus.encode(sentence, word2idx)
    return [f"your vocabulary: {len(word2idx)} entries from {len(CORPUS)} sentences",
            f"{sentence!r} -> {ids} (a word the corpus lacks reads as <unk>)"]


def bilm(sections: Sections) -> list[str]:
    """Which positions each direction's states move at when one token changes."""
    word2idx, _ = sections.corpus.build_vocab(CORPUS)
    model = experiments.untrained_like(sections).model
    ids, lengths = sections.corpus.pad_batch([sections.corpus.encode(CORPUS[0], word2idx)])
    changed_at = ids.shape[0] // 2
    other = ids.clone()
    other[changed_at, 0] = word2idx["bank"] if ids[changed_at, 0] != word2idx["bank"] else 5
    with torch.no_grad():
        before, after = model(ids, lengths), model(other, lengths)
    moved = {name: [t for t in range(ids.shape[0]) if not torch.allclose(
        getattr(before, name)[t], getattr(after, name)[t])]
        for name in ("forward_logits", "backward_logits")}
    size = sum(p.numel() for p in model.parameters())
    return [f"your biLM: {size:,} parameters; token {changed_at} of a sentence changed, and the "
            f"forward predictions moved at positions {moved['forward_logits']}, the backward "
            f"at {moved['backward_logits']}: each direction reads one side only"]


def pretrain(sections: Sections) -> list[str]:
    found = pretrained(sections.package)
    floors = experiments.floors(sections)
    untrained = experiments.untrained_like(sections)
    start = sections.pretrain.corpus_loss(untrained.model, CORPUS, untrained.word2idx)
    history = " ".join(f"{loss:.2f}" for loss in found.history)
    reference = _reference().get("train_loss")
    return [f"your biLM's training loss per epoch: {history}",
            f"untrained it scores {start:.2f}; the floors: {floors['corpus']:.2f} (the "
            f"sentences known by heart), {floors['phrases']:.2f} (the phrases known)"
            + (f"; the reference ends at {reference:.2f}" if reference else "")]


def extract(sections: Sections) -> list[str]:
    trained = pretrained(sections.package)
    sentences = ("he sat by the bank of the river", "she paid the bank with cash")
    first, second = (layers[:, sentence.split().index("bank")] for layers, sentence in zip(
        sections.extract.get_elmo_embeddings(trained.model, list(sentences), trained.word2idx),
        sentences, strict=True))  # (3, 2 * hidden_dim) each
    cosine = torch.nn.functional.cosine_similarity(first, second, dim=-1)
    return [f"'bank' in {sentences[0]!r} and in {sentences[1]!r}: cosine per layer "
            f"{_layers(cosine)}; layer 0 reads the word alone, so it is 1"]


def read_gap(trained, untrained, noise) -> list[str]:
    """The reading of section 6's gap per layer (trained, untrained: one seed's; `noise`:
    the reference's standard deviation of the effect per layer, or None): layer 0 reads the
    word alone, so its gap is 0 by design; at layers 1 and 2, `effect_of` the difference."""
    said = {}
    for layer in (1, 2):
        effect = float(trained[layer]) - float(untrained[layer])
        said.setdefault(effect_of(effect, None if noise is None else noise[layer]), []).append(
            f"layer {layer} ({effect:+.3f}"
            + (f"; noise {2 * noise[layer]:.3f})" if noise is not None else ")"))
    parts = {RAISED: "pre-training opened it at {}: beyond seed noise, context now tells the "
                     "senses apart",
             LOWERED: "pre-training closed it at {}, beyond seed noise: a mistake that "
                      "passes the tests can do this",
             WITHIN: "pre-training moved it within seed noise at {}: what the untrained biLM "
                     "gives, the architecture's",
             UNMEASURED: "trained minus untrained at {}, without the reference's seed noise "
                         "to read it against"}
    return _wrapped("reading: layer 0 reads the word alone, so its gap is 0 by design; "
                    + "; ".join(parts[kind].format(" and ".join(where))
                                for kind, where in said.items()) + ".")


def context(sections: Sections) -> list[str]:
    """Section 6's gap per layer, trained against untrained, beside the reference's effect
    and seed noise, then the cosine of two different words with its legend."""
    found = {name: (biLM, sections.context.compare_contexts(biLM.model, biLM.word2idx,
                                                            HELDOUT_LABELS))
             for name, biLM in (("trained", pretrained(sections.package)),
                                ("untrained", experiments.untrained_like(sections)))}
    gaps, levels = {}, {}
    for name, (biLM, comparison) in found.items():
        gaps[name] = (comparison.select(True, None).mean(0)
                      - comparison.select(False, None).mean(0)).tolist()
        levels[name] = analysis.anisotropy_baseline(sections, biLM.model, biLM.word2idx,
                                                    HELDOUT).tolist()
    effect = [t - u for t, u in zip(gaps["trained"], gaps["untrained"], strict=True)]
    rows = [("yours, trained", _numbers(gaps["trained"])),
            ("yours, untrained", _numbers(gaps["untrained"])),
            ("yours, trained - untrained", _numbers(effect, True))]
    noise = _reference("word", "noise").get("gap")
    if noise:
        theirs = [t - u for t, u in zip(_reference()["gap"], _reference("word", "untrained")
                                        ["gap"], strict=True)]
        rows += [("reference, trained - untrained", _numbers(theirs, True)),
                 ("seed noise (twice its sd)", _numbers([2 * sd for sd in noise]))]
    return ["same-sense minus different-sense cosine of a held-out word (its gap):",
            *_table(["layer 0", "layer 1", "layer 2"], rows),
            *read_gap(gaps["trained"], gaps["untrained"], noise),
            *_wrapped("the cosine of two different words, layers 0 1 2: trained "
                      f"{_layers(levels['trained'])}, untrained {_layers(levels['untrained'])}."
                      " It is how alike any two tokens are; both sides of a gap share it, so "
                      "a gap is read against the untrained gap, never against it.")]


# Which layers a task's learned weights prefer, as `analyses.targets` states it: the word's
# sense layer 2, its class a lower layer (0 or 1).
PREFERS = {"word class": ("a lower layer (0 or 1)", lambda w: max(w[0], w[1]) > w[2]),
           "word sense": ("layer 2", lambda w: w[2] > max(w[0], w[1]))}


def read_weights(task: str, trained, untrained, noise) -> list[str]:
    """The reading of section 7's learned weights s_0 s_1 s_2 of `task` (one seed's, of the
    trained and the untrained biLM; `noise`: the reference's standard deviation of their
    effect per layer, or None): where the preference the paper found holds, trained and
    untrained alike, it is the architecture's; then which layers pre-training moved weight
    to or from, beyond seed noise."""
    layer, prefers = PREFERS[task]
    holds = {name: prefers([float(w) for w in weights])
             for name, weights in (("trained", trained), ("untrained", untrained))}
    if holds["trained"] and holds["untrained"]:
        said = (f"the weights prefer {layer} trained and untrained alike: the architecture's, "
                "not pre-training's")
    elif holds["trained"]:
        said = (f"the weights prefer {layer} trained, not untrained: pre-training's on this "
                "seed (make replicate reads it over seeds)")
    else:
        said = f"the trained weights do not prefer {layer}, as the paper found"
    moved = {kind: [] for kind in (RAISED, LOWERED)}
    for k in range(len(trained)):
        effect = float(trained[k]) - float(untrained[k])
        kind = effect_of(effect, None if noise is None else noise[k])
        if kind in moved:
            moved[kind].append(f"s_{k} {effect:+.3f}")
    if moved[RAISED] or moved[LOWERED]:
        said += ("; pre-training moved weight beyond seed noise"
                 + (f", off {' and '.join(moved[LOWERED])}" if moved[LOWERED] else "")
                 + (f", onto {' and '.join(moved[RAISED])}" if moved[RAISED] else ""))
    elif noise is not None:
        said += "; pre-training moved no weight beyond seed noise"
    return _wrapped(f"reading: {said}.")


def layer_weights(sections: Sections) -> list[str]:
    """Section 7's learned weights and mix accuracy per task, trained against untrained,
    beside the reference's effect and seed noise, each read (`read_weights`)."""
    biLMs = {"trained": pretrained(sections.package),
             "untrained": experiments.untrained_like(sections)}
    results = {name: [analysis.evaluate_task(sections, task) for task in (
        analysis.word_class_task(sections, biLM.model, biLM.word2idx),
        analysis.sense_task(sections, biLM.model, biLM.word2idx))]
        for name, biLM in biLMs.items()}
    lines = []
    for trained, untrained in zip(results["trained"], results["untrained"], strict=True):
        key = TASKS[trained.name]
        row = {name: [*result.weights.tolist(), float(result.accuracy)]
               for name, result in (("trained", trained), ("untrained", untrained))}
        effect = [t - u for t, u in zip(row["trained"], row["untrained"], strict=True)]
        rows = [("yours, trained", _numbers(row["trained"])),
                ("yours, untrained", _numbers(row["untrained"])),
                ("yours, trained - untrained", _numbers(effect, True))]
        noise = _reference("word", "noise")
        sds = None
        if noise:
            sds = noise["weights"][key]
            theirs = [t - u for t, u in zip(
                [*_reference()["weights"][key], _reference()["mix_accuracy"][key]],
                [*_reference("word", "untrained")["weights"][key],
                 _reference("word", "untrained")["mix_accuracy"][key]], strict=True)]
            rows += [("reference, trained - untrained", _numbers(theirs, True)),
                     ("seed noise (twice its sd)", _numbers(
                         [2 * sd for sd in [*sds, noise["mix_accuracy"][key]]]))]
        lines += [f"{trained.name}: the mix's weights (uniform 0.333) and held-out accuracy "
                  f"(chance {trained.chance:.3f}):",
                  *_table(["s_0", "s_1", "s_2", "accuracy"], rows),
                  *read_weights(trained.name, row["trained"][:3], row["untrained"][:3], sds)]
    return lines


def read_ranks(trained: float, untrained: float, sd: float | None, chance: float,
               theirs: float | None = None) -> list[str]:
    """The reading of section 8's mean rank of the relatives of words the corpus lacks (one
    seed's, trained and untrained; `sd`: the reference's standard deviation of the effect,
    or None; `chance`: the mean rank of a ranking that knows nothing; `theirs`: the
    reference's mean effect over its seeds, or None), and why pre-training moves them: an
    unseen word's layer 0 comes from its letters alone, which the untrained filters already
    compare; pre-training makes layer 0 serve the LSTMs, which need the words that stand in
    the same places in sentences, not the ones spelt alike."""
    effect = trained - untrained
    noise = f"; noise {2 * sd:.1f}" if sd is not None else ""
    why = ("pre-training makes layer 0 serve the LSTMs, which need the words that stand in "
           "the same places in sentences, and an unseen word's vector, made from its letters "
           "alone, moves towards the words used like it, away from those spelt like it")
    said = {
        RAISED: f"pre-training moved the relatives away ({effect:+.1f}{noise}), beyond seed "
                f"noise: {why}",
        LOWERED: f"pre-training brought the relatives nearer ({effect:+.1f}{noise}), beyond "
                 "seed noise: in this corpus the words spelt alike are also used alike",
        WITHIN: f"pre-training moved them within seed noise ({effect:+.1f}{noise})"
                + (f"; over the reference's seeds it moves them away ({theirs:+.1f} on "
                   f"average): {why}" if theirs is not None and theirs > 0 else ""),
        UNMEASURED: f"trained minus untrained is {effect:+.1f}, without the reference's seed "
                    "noise to read it against"}[effect_of(effect, sd)]
    place = ("nearer than" if trained < chance else "no nearer than")
    return _wrapped(f"reading: untrained, spelling alone puts relatives near (random filters "
                    f"already compare letters); {said}. Trained, they rank {place} a ranking "
                    f"that knows nothing ({chance:.1f}).")


def char_encoder(sections: Sections) -> list[str]:
    """Where the relative of a word the corpus lacks ranks among its nearest words."""
    found = {"trained": pretrained(sections.package, characters=True),
             "untrained": experiments.untrained_like(sections, characters=True)}
    neighbours = {state: analysis.nearest_relatives(sections, biLM.model, biLM.word2idx)
                  for state, biLM in found.items()}
    ranks = {state: [n.rank for n in found_] for state, found_ in neighbours.items()}
    means = {state: sum(r) / len(r) for state, r in ranks.items()}
    chance = (neighbours["trained"][0].candidates + 1) / 2
    example = neighbours["trained"][0]
    rows = [(f"yours, {state}", [f"{means[state]:.1f}", f"{r.count(1)} of {len(r)}"])
            for state, r in ranks.items()]
    rows.append(("yours, trained - untrained", [f"{means['trained'] - means['untrained']:+.1f}",
                                                ""]))
    sd, theirs = _reference("char", "noise").get("mean_rank"), None
    if sd is not None:
        theirs = _reference("char")["mean_rank"] - _reference("char", "untrained")["mean_rank"]
        rows += [("reference, trained - untrained", [f"{theirs:+.1f}", ""]),
                 ("seed noise (twice its sd)", [f"{2 * sd:.1f}", ""])]
    return [*_wrapped(f"words the corpus lacks ({len(ranks['trained'])}, e.g. "
                      f"{example.query!r}): where their relative ({example.relative!r}) ranks "
                      f"among the {example.candidates} words by layer 0, 1 the nearest:"),
            *_table(["mean rank", "is first"], rows),
            *read_ranks(means["trained"], means["untrained"], sd, chance, theirs)]


SHOWN: dict[str, Callable[[Sections], list[str]]] = {
    "corpus": corpus, "bilm": bilm, "pretrain": pretrain, "extract": extract,
    "context": context, "layer_weights": layer_weights, "char_encoder": char_encoder}


def show(section: Section, impl_dir: Path) -> list[str]:
    """The lines that `section` of `impl_dir` shows when it passes, with its notebook; kept
    in build/your-elmo/ under `_cache_key`, so that a run after no edit only reads them."""
    sections = Harness(impl_dir).sections(section)
    path = CACHE / f"{section.name}-{_cache_key(sections, section)}.json"
    if path.exists():
        return json.loads(path.read_text())
    lines = [part for line in SHOWN[section.name](sections) for part in (
        [line] if len(line) <= WIDTH else _wrapped(line))]  # a table's line fits already
    lines.append(f"the section's notebook shows more: notebooks/{section.notebook}")
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")
    partial.write_text(json.dumps(lines))
    partial.replace(path)  # atomic: a run at the same time never reads half a file
    return lines


def write(path: Path, ran_at: str, passed: list[int], impl_dir: Path) -> None:
    """Write to `path` the lines of each section of `passed` that has some (`show`), as
    {"ran_at": the run's start, "sections": {number: lines}}. A section whose lines cannot
    be computed says why: a learner's code that passes its tests never breaks the run."""
    shown = {}
    for number in passed:
        section = SECTIONS[number - 1]
        if section.name not in SHOWN:
            continue
        try:
            shown[number] = show(section, impl_dir)
        except Exception as err:  # noqa: BLE001 (whatever the learner's code raises)
            shown[number] = [f"(could not show it: {type(err).__name__}: {err})"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"ran_at": ran_at, "sections": shown}, indent=1))
