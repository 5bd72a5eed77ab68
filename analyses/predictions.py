"""Predict, then run: one switch of your own code changed, and what it does to your biLM.

Each of sections 3 to 8 has a switch in its interface (section 3's `BiLM(...,
residual=False)`, ...). Its notebook asks you to write one line of prediction first, then
runs the experiment on your own sections:

    prediction = "the held-out loss rises, by about a tenth"   # before you run it
    predictions.run(sections, "residual", prediction)

It measures one number, the experiment's quantity, on your biLM as the course builds it
("as built"), on your biLM with the switch changed ("switched"), both from one seed, and on
the untrained biLM they start from (the control: what the architecture gives before any
training). Beside each it prints the reference's mean over its seeds and that mean's seed
noise, read from `analyses/predictions.json` (measured on the reference over its seeds,
never typed; the file names the command and the machine). Your prediction and your numbers
are kept in your state (`build/progress.json`): `make progress` counts the predictions you
made and shows the latest three beside what your biLM did.
Nothing is scored: a prediction that missed is the one that teaches most.

Each experiment runs in well under a minute on two cores (the first time; its numbers are
then kept in build/cache/, keyed by the bytes of the sections it runs, so re-running the cell
is instant until you edit one of them).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import hashlib
import itertools
import json
import os
import statistics
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from course import corpus as given_corpus
from course.characters import FILTERS
from course.corpus import CORPUS, HELDOUT, SENSE_LABELS
from course.harness import Sections, sources_key
from course.pretrained import TRAINING_SEED, pretrained
from course.registry import CACHE_DIR, CACHE_ENV_VAR, OUTPUT_WIDTH, REFERENCE_DIR, SECTIONS, shown
from course.state import STATE_FILE, State

from . import analysis, experiments

RESULTS = Path(__file__).with_name("predictions.json")  # the reference's, generated
DEFAULT, SWITCHED, UNTRAINED = "as built", "switched", "untrained"
MEASURED = (DEFAULT, SWITCHED, UNTRAINED)
GAP_LAYER = 2  # the top layer: where the paper finds what a word means
_AS_BUILT: dict[tuple[str, int, bool], nn.Module] = {}  # biLMs as built, of other seeds


@dataclass(frozen=True)
class Experiment:
    """One switch of one section, and the number it is read on.

    name:     how a notebook names it.
    section:  the section whose interface has the switch.
    switch:   the switch as your code is called with it.
    label:    the switch changed, in a few words (a row's name).
    quantity: what is measured, in words, with the direction that is better.
    needs:    the sections it runs, by number (the cache's key is their bytes).
    measure:  (sections, seed) -> {DEFAULT: x, SWITCHED: y, UNTRAINED: z}.
    """

    name: str
    section: int
    switch: str
    label: str
    quantity: str
    needs: tuple[int, ...]
    measure: Callable[[Sections, int], dict[str, float]]


# --- the biLMs: as built, switched, untrained ---------------------------------------------


def _vocabulary(sections: Sections) -> dict[str, int]:
    return experiments.vocabulary(sections)[0]


def _trained(sections: Sections, seed: int, make: Callable[[], nn.Module] | None = None,
             characters: bool = False, recipe: Any = None) -> nn.Module:
    """The biLM of `seed` pre-trained with section 4's `train_bilm`, in eval mode: as built
    (no `make`, no `recipe`: at the course's seed the cached `course.pretrained` one), or the
    one `make()` builds after `set_seed(seed)`, trained with `recipe` (None: the course's)."""
    word2idx = _vocabulary(sections)
    if make is None and recipe is None:
        if seed == TRAINING_SEED:
            return pretrained(sections.package, characters).model.eval()
        key = (sections.package.__name__, seed, characters)  # the package names its bytes
        if key not in _AS_BUILT:  # another seed's (the reference's seeds): trained once
            _AS_BUILT[key] = experiments.pretrain(sections, seed, word2idx, characters)[0]
        return copy.deepcopy(_AS_BUILT[key]).eval()
    sections.setup.set_seed(seed)
    model = make() if make is not None else experiments.new_bilm(
        sections, seed, word2idx, characters)
    if recipe is None:
        recipe = (sections.char_encoder.CHAR_RECIPE if characters
                  else sections.pretrain.DEFAULT_RECIPE)
    sections.pretrain.train_bilm(model, CORPUS, word2idx, recipe, seed=seed, device="cpu",
                                 log_every=0, progress=False)
    return model.eval()


def _untrained(sections: Sections, seed: int, characters: bool = False) -> nn.Module:
    return experiments.untrained_like(sections, seed, characters).model


# --- the quantities ---------------------------------------------------------------------------


def heldout_loss(sections: Sections, model: nn.Module) -> float:
    """Section 4's `corpus_loss` of the held-out sentences: forward + backward cross-entropy."""
    return float(sections.pretrain.corpus_loss(model, HELDOUT, _vocabulary(sections)))


def training_loss(sections: Sections, model: nn.Module) -> float:
    """Section 4's `corpus_loss` of the training sentences, after training."""
    return float(sections.pretrain.corpus_loss(model, CORPUS, _vocabulary(sections)))


def sense_gap(similarity: torch.Tensor, same_sense: list[bool], layer: int = GAP_LAYER) -> float:
    """Mean cosine of the same-sense pairs minus that of the different-sense pairs, at
    `layer`; `similarity` (pairs, layers)."""
    same = torch.tensor(same_sense)
    at = similarity[:, layer].double()
    return float(at[same].mean() - at[~same].mean())


def extracted_gap(sections: Sections, model: nn.Module, **extraction) -> float:
    """`sense_gap` of the training sentences' target words, their embeddings from section
    5's `get_elmo_embeddings(..., **extraction)` and the cosine of torch."""
    tokenize = sections.corpus.tokenize
    embeddings = sections.extract.get_elmo_embeddings(
        model, [sentence for sentence, _, _ in SENSE_LABELS], _vocabulary(sections),
        **extraction)
    targets = [emb[:, tokenize(sentence).index(word)].cpu()
               for emb, (sentence, word, _) in zip(embeddings, SENSE_LABELS, strict=True)]
    rows, same = [], []
    for i, j in itertools.combinations(range(len(SENSE_LABELS)), 2):
        if SENSE_LABELS[i][1] == SENSE_LABELS[j][1]:
            rows.append(F.cosine_similarity(targets[i], targets[j], dim=-1))
            same.append(SENSE_LABELS[i][2] == SENSE_LABELS[j][2])
    return sense_gap(torch.stack(rows), same)


def compared_gap(sections: Sections, model: nn.Module, **comparison) -> float:
    """`sense_gap` of section 6's `compare_contexts(..., **comparison)`."""
    found = sections.context.compare_contexts(model, _vocabulary(sections), **comparison)
    return sense_gap(found.similarity, [pair.same_sense for pair in found.pairs])


def layer_0_weight(sections: Sections, model: nn.Module, **probe) -> float:
    """The weight of layer 0 in the word-class task's learned mix, section 7's
    `ScalarMixProbe(..., **probe)` trained on each fold as `analyses.analysis` does, averaged
    over the folds."""
    task = analysis.word_class_task(sections, model, _vocabulary(sections))
    probes = analysis.cross_validate(sections, task, probe_options=probe)[1]
    with torch.no_grad():
        return float(torch.stack([p.mix.weights for p in probes]).mean(dim=0)[0])


def relatives_rank(sections: Sections, model: nn.Module) -> float:
    """Mean rank of the relatives of the words the corpus lacks, by layer 0 (1 = nearest)."""
    found = analysis.nearest_relatives(sections, model, _vocabulary(sections))
    return statistics.fmean(n.rank for n in found)


# --- the experiments ------------------------------------------------------------------------


def _residual(sections: Sections, seed: int) -> dict[str, float]:
    size = len(_vocabulary(sections))
    return {DEFAULT: training_loss(sections, _trained(sections, seed)),
            SWITCHED: training_loss(sections, _trained(
                sections, seed, lambda: sections.bilm.BiLM(size, residual=False))),
            UNTRAINED: training_loss(sections, _untrained(sections, seed))}


LONGER = 4  # section 4's experiment trains this many times as many epochs


def _longer(sections: Sections, seed: int) -> dict[str, float]:
    recipe = sections.pretrain.DEFAULT_RECIPE
    longer = dataclasses.replace(recipe, epochs=recipe.epochs * LONGER)
    return {DEFAULT: heldout_loss(sections, _trained(sections, seed)),
            SWITCHED: heldout_loss(sections, _trained(sections, seed, recipe=longer)),
            UNTRAINED: heldout_loss(sections, _untrained(sections, seed))}


def _boundaries(sections: Sections, seed: int) -> dict[str, float]:
    trained = _trained(sections, seed)
    return {DEFAULT: extracted_gap(sections, trained),
            SWITCHED: extracted_gap(sections, trained, boundaries=False),
            UNTRAINED: extracted_gap(sections, _untrained(sections, seed))}


def _centre(sections: Sections, seed: int) -> dict[str, float]:
    trained = _trained(sections, seed)
    return {DEFAULT: compared_gap(sections, trained),
            SWITCHED: compared_gap(sections, trained, centre=True),
            UNTRAINED: compared_gap(sections, _untrained(sections, seed))}


def _unnormalised(sections: Sections, seed: int) -> dict[str, float]:
    trained = _trained(sections, seed)
    return {DEFAULT: layer_0_weight(sections, trained),
            SWITCHED: layer_0_weight(sections, trained, do_layer_norm=False),
            UNTRAINED: layer_0_weight(sections, _untrained(sections, seed))}


def _trigrams(sections: Sections, seed: int) -> dict[str, float]:
    words = experiments.vocabulary(sections)[1]
    trigrams = ((3, sum(count for _, count in FILTERS)),)  # as many filters, all of width 3
    switched = _trained(sections, seed, lambda: sections.char_encoder.CharBiLM(
        words, filters=trigrams), characters=True)
    return {DEFAULT: relatives_rank(sections, _trained(sections, seed, characters=True)),
            SWITCHED: relatives_rank(sections, switched),
            UNTRAINED: relatives_rank(sections, _untrained(sections, seed, characters=True))}


EXPERIMENTS = {e.name: e for e in (
    Experiment("residual", 3, "BiLM(..., residual=False)", "residual=False",
               "loss on the training sentences (lower is better)", (1, 2, 3, 4), _residual),
    Experiment("longer", 4, f"train_bilm(..., recipe) with {LONGER} times the epochs",
               f"epochs x {LONGER}",
               "held-out loss (lower is better)", (1, 2, 3, 4), _longer),
    Experiment("boundaries", 5, "get_elmo_embeddings(..., boundaries=False)",
               "boundaries=False",
               f"same- minus different-sense cosine at layer {GAP_LAYER}", (1, 2, 3, 4, 5),
               _boundaries),
    Experiment("centre", 6, "compare_contexts(..., centre=True)", "centre=True",
               f"same- minus different-sense cosine at layer {GAP_LAYER}",
               (1, 2, 3, 4, 5, 6), _centre),
    Experiment("unnormalised", 7, "ScalarMixProbe(..., do_layer_norm=False)",
               "do_layer_norm=False", "weight of layer 0 in the word-class task's mix",
               (1, 2, 3, 4, 5, 7), _unnormalised),
    Experiment("trigrams", 8, f"CharBiLM(..., filters=((3, {sum(c for _, c in FILTERS)}),))",
               "trigrams only",
               "mean rank of the relatives of the words the corpus lacks (1 is the nearest)",
               (1, 2, 3, 4, 8), _trigrams),
)}


# --- one experiment on your sections, kept in the cache ---------------------------------------


def _cache_path(sections: Sections, experiment: Experiment, seed: int) -> Path | None:
    """Where the numbers of `experiment` on these sections' bytes are kept; None: nowhere."""
    setting = os.environ.get(CACHE_ENV_VAR, str(CACHE_DIR))
    if not setting:
        return None
    needed = [SECTIONS[number - 1] for number in experiment.needs]
    code = b"".join(Path(module.__file__).read_bytes()
                    for module in (sys.modules[__name__], analysis, experiments, given_corpus))
    key = hashlib.sha256(f"{sources_key(sections.package, needed)} {torch.__version__}".encode()
                         + code).hexdigest()[:16]
    return Path(setting) / f"predict-{experiment.name}-seed{seed}-{key}.json"


def measure(sections: Sections, name: str, seed: int = TRAINING_SEED) -> dict[str, float]:
    """{DEFAULT, SWITCHED, UNTRAINED: the quantity} and "seconds" (of wall clock, when it
    ran; those it took then, when it came from the cache) of experiment `name` on `sections`,
    from `seed`."""
    experiment = EXPERIMENTS[name]
    path = _cache_path(sections, experiment, seed)
    if path is not None and path.exists():
        return json.loads(path.read_text())
    started = time.perf_counter()
    found = {**experiment.measure(sections, seed), "seconds": time.perf_counter() - started}
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(found))
        partial.replace(path)  # whole or not at all
    return found


# --- what the reference measured ---------------------------------------------------------------


def reference(name: str, results: Path | None = None) -> dict | None:
    """The reference's summary of experiment `name` (`analyses/predictions.json`): "n"
    seeds, for each of MEASURED its "mean" and "sd" over the seeds, and "effect" (switched
    minus as built, seed by seed) with its "mean" and "sd"; None where it was not measured."""
    try:
        return json.loads((results or RESULTS).read_text())["experiments"][name]["summary"]
    except (OSError, ValueError, KeyError):
        return None


# --- the notebook's cell ---------------------------------------------------------------------


def _is_reference(sections: Sections) -> bool:
    """Whether `sections` run the reference's file of every section (the course's book)."""
    files = getattr(sections.package, "sources", None) or {}
    return bool(files) and all(Path(f).parent == REFERENCE_DIR for f in files.values())


NAMES = 31  # the width of a row's name, "switched: do_layer_norm=False" the longest


def _row(name: str, yours: float, theirs: dict | None, signed: bool = False) -> str:
    sign = "+" if signed else ""
    reference_cell = "" if theirs is None else (
        f"{theirs['mean']:{sign}.3f} ± {2 * theirs['sd']:.3f}")
    return f"  {name:<{NAMES}}{f'{yours:{sign}.3f}':>12}    {reference_cell}"


def table(experiment: Experiment, found: dict[str, float], summary: dict | None,
          seed: int = TRAINING_SEED) -> str:
    """Your numbers beside the reference's, as named columns."""
    switched = experiment.switch
    seeds = "not measured" if summary is None else f"{summary['n']} seeds, mean ± 2 sd"
    header = f"  {'':<{NAMES}}{'your biLM':>12}    the reference ({seeds})"
    rows = [_row(DEFAULT, found[DEFAULT], summary and summary[DEFAULT]),
            _row(f"{SWITCHED}: {experiment.label}", found[SWITCHED],
                 summary and summary[SWITCHED]),
            _row(f"effect: switched - {DEFAULT}", found[SWITCHED] - found[DEFAULT],
                 summary and summary["effect"], signed=True),
            _row(f"{UNTRAINED} (the control)", found[UNTRAINED], summary and summary[UNTRAINED])]
    title = textwrap.fill(f"section {experiment.section}, {switched}: {experiment.quantity}, "
                          f"seed {seed}", OUTPUT_WIDTH)
    return "\n".join([title, header, *rows])


def outcome(experiment: Experiment, found: dict[str, float], summary: dict | None) -> str:
    """What the switch did to your biLM, in words, against the reference's seed noise."""
    effect = found[SWITCHED] - found[DEFAULT]
    moved = "raised" if effect > 0 else "lowered"
    words = f"{experiment.switch} {moved} the {experiment.quantity.split(' (')[0]} by " \
            f"{abs(effect):.3f} on your biLM"
    if summary is None or not summary["effect"]["sd"]:
        return words
    noise = summary["effect"]["sd"]
    return (f"{words}, {abs(effect) / noise:.0f} times the reference's seed noise of the "
            f"effect (its sd over seeds, {noise:.3f}; the table's ± is twice it)")


def run(sections: Sections, name: str, prediction: str | None,
        state_path: Path = STATE_FILE) -> dict[str, float] | None:
    """Experiment `name` on `sections` from the course's seed, after your one-line
    `prediction`: prints your numbers beside the reference's, what the switch did, and your
    prediction beside it, and keeps both in the state file. Without a prediction it runs
    nothing and asks for one (on the reference, as the course's book runs it, it runs).

    Returns: the numbers measured, or None where it asked for a prediction or a section it
    runs is not implemented yet.
    """
    experiment = EXPERIMENTS[name]
    prediction = " ".join((prediction or "").split())
    if not prediction and not _is_reference(sections):
        print(textwrap.fill(
            f"Write your prediction first: one line in `prediction` above, e.g. how "
            f"{experiment.switch} will change the {experiment.quantity}. Then run this cell "
            "again.", OUTPUT_WIDTH))
        return None
    try:
        found = measure(sections, name)
    except NotImplementedError as error:  # a section it runs that is still a stub
        print(textwrap.fill(f"This experiment runs sections {', '.join(map(str, experiment.needs))}"
                            f" of your code, and {error}: run this cell again once that "
                            "section passes its tests (your prediction is not kept yet).",
                            OUTPUT_WIDTH))
        return None
    summary = reference(name)
    print(table(experiment, found, summary))
    print(f"  (it took {found['seconds']:.0f} s; kept in the cache until you edit a section "
          "it runs)")
    print("\n" + textwrap.fill(outcome(experiment, found, summary), OUTPUT_WIDTH))
    if prediction:
        print(textwrap.fill(f"you predicted: {prediction}", OUTPUT_WIDTH))
        state = State.load(state_path)
        state.record_prediction({
            "experiment": name, "section": experiment.section, "switch": experiment.switch,
            "quantity": experiment.quantity, "prediction": prediction,
            "outcome": outcome(experiment, found, summary),
            "at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            **{key: found[key] for key in MEASURED}})
        state.save()
        made = len(state.predictions)
        print(textwrap.fill(f"({made} prediction{'s' if made != 1 else ''} kept in "
                            f"{shown(state_path)}; `make progress` counts them and shows "
                            "the latest three beside their outcomes)", OUTPUT_WIDTH))
    return {key: found[key] for key in MEASURED}

