"""Your ELMo, shown: when a section passes, `make test` ends with a few lines of what your
own code computes, read against a baseline, the reference's numbers and, for what the layers
know, an untrained biLM of the same shape (what the architecture gives before any training).

The test run computes them as it ends (`course.results`, `--your-elmo FILE`: `write`), in
the process that has torch and the sections loaded already; the progress table prints them.

Each reading reuses what the tests already made: the biLM pre-trained with your sections
(`course.pretrained`, cached on disk) and the untrained biLM it started from. The lines are
kept in build/your-elmo/, keyed by your modules' bytes, so only the first run after an edit
computes them (section 7's probes train for a few seconds). The reference's numbers
are means over the course's seeds (`course.reference_targets.NUMBERS`); yours are one seed's.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import torch

from . import analysis, experiments
from .corpus import CORPUS, HELDOUT, HELDOUT_LABELS
from .harness import Harness, Sections, sources_key
from .pretrained import pretrained
from .registry import BUILD_DIR, SECTIONS, Section

CACHE = BUILD_DIR / "your-elmo"
TASKS = {"word class": "word_class", "word sense": "word_sense"}


def _reference(model: str = "word", trained: str = "trained") -> dict:
    try:
        from .reference_targets import NUMBERS
    except ImportError:  # a course without measured results
        return {}
    return NUMBERS.get(model, {}).get(trained, {})


def _layers(values) -> str:
    return " ".join(f"{float(v):6.3f}" for v in values)


# What the lines are computed with, besides the learner's sections: a change to any of these
# files computes them again.
COMPUTED_BY = ("your_elmo.py", "analysis.py", "experiments.py", "pretrained.py", "corpus.py",
               "reference_targets.py")


def _cache_key(sections: Sections, section: Section) -> str:
    """A digest of the sections up to `section` as `sections` has them, and of the course
    code that computes the lines."""
    digest = hashlib.sha256(sources_key(sections.package, list(SECTIONS[:section.number]))
                            .encode())
    for name in COMPUTED_BY:
        path = Path(__file__).with_name(name)
        digest.update(path.read_bytes() if path.exists() else b"")
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


def context(sections: Sections) -> list[str]:
    lines = ["held-out same- minus different-sense cosine, layers 0 1 2:"]
    for name, found in (("yours, trained", pretrained(sections.package)),
                        ("yours, untrained", experiments.untrained_like(sections))):
        comparison = sections.context.compare_contexts(found.model, found.word2idx,
                                                       HELDOUT_LABELS)
        gap = comparison.select(True, None).mean(0) - comparison.select(False, None).mean(0)
        level = analysis.anisotropy_baseline(sections, found.model, found.word2idx, HELDOUT)
        lines.append(f"  {name:<18}{_layers(gap)}   (two different words: {_layers(level)})")
    if _reference():
        lines.append(f"  {'reference, trained':<18}{_layers(_reference()['gap'])}"
                     f"   untrained {_layers(_reference('word', 'untrained')['gap'])}")
    return lines


def layer_weights(sections: Sections) -> list[str]:
    found = pretrained(sections.package)
    lines = []
    for result in (analysis.evaluate_task(sections, task) for task in (
            analysis.word_class_task(sections, found.model, found.word2idx),
            analysis.sense_task(sections, found.model, found.word2idx))):
        reference = _reference()
        lines.append(f"{result.name}: your mix's weights s_0 s_1 s_2 "
                     f"{_layers(result.weights)}, accuracy {float(result.accuracy):.2f} "
                     f"(chance {result.chance:.2f})"
                     + (f"; the reference's {_layers(reference['weights'][TASKS[result.name]])}, "
                        f"{reference['mix_accuracy'][TASKS[result.name]]:.2f}"
                        if reference else ""))
    return lines


def char_encoder(sections: Sections) -> list[str]:
    """Where the relative of a word the corpus lacks ranks among its nearest words."""
    found = {"trained": pretrained(sections.package, characters=True),
             "untrained": experiments.untrained_like(sections, characters=True)}
    lines = ["words the corpus lacks: their relative's mean rank among the nearest words by "
             "layer 0 (1 = nearest), and how often it is the nearest:"]
    for state, biLM in found.items():
        ranks = [n.rank for n in analysis.nearest_relatives(sections, biLM.model,
                                                            biLM.word2idx)]
        reference = _reference("char", state).get("mean_rank")
        lines.append(f"  yours, {state:<10} {sum(ranks) / len(ranks):5.1f}, first for "
                     f"{ranks.count(1)} of {len(ranks)}"
                     + (f"   (the reference's: {reference:.1f})" if reference else ""))
    return lines + ["  spelling alone puts many relatives near before any training: compare "
                    "trained with untrained"]


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
    lines = [*SHOWN[section.name](sections),
             f"the section's notebook shows more: notebooks/{section.notebook}"]
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
