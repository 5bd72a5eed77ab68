"""What pre-training did: one seed's measurements of sections 6-8 on a pre-trained biLM and on
the untrained biLM it started from (the same shape and the seed's initial weights, never
trained), on whichever implementation `sections` are. The course's demo runs them on its
reference over 10 seeds; `make replicate` on your exercises/ over 5:

    python -m analyses.experiments [--impl exercises] [--seeds 5] [--jobs 2]

prints, for every target of `analyses.targets`, what your biLMs read, trained against
untrained, beside what the reference read, and keeps the numbers in
build/replicate/results.json. From a notebook or a script:

    control = untrained_like(sections, seed=0)       # the control of `pretrained`'s biLM
    found = measure_seed(sections, seed=0)           # both biLMs of one seed, every record
    results, details = run(sections, seeds=range(5)) # every seed, word and character biLM

Per seed and biLM (the word `BiLM` and, with `characters`, section 8's `CharBiLM`) it
measures, with the given analyses of `analyses.analysis`:

    section 6   per word and layer, the mean cosine of same-sense and of different-sense
                pairs, on training and on held-out sentences, with the anisotropy baseline;
                1-nearest-neighbour sense accuracy
    section 7   the learned layer weights, gamma and accuracy of each task's mix, and a
                probe on each single layer
    section 8   where the relatives of words the corpus lacks rank among their nearest
                words by layer 0

each on the trained biLM and on the untrained one, and the trained one's losses and training
time. The records are those of the demo's results.json (`view` and the readings of
`analyses.targets` read them): "context", "nearest", "probes" (each with "trained": true or
false), "pretraining", "neighbours".
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing
import os
import sys
import textwrap
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from torch import nn

from course.corpus import CORPUS, HELDOUT, HELDOUT_LABELS, SENSE_LABELS
from course.harness import Harness, Sections
from course.long_command import Ticker, each, forking, ignore_in_worker, stopped
from course.pretrained import TRAINING_SEED
from course.registry import BUILD_DIR, OUTPUT_WIDTH, ROOT, SECTIONS, STUB_MESSAGE, shown

from . import analysis, targets

__all__ = [
    "ExperimentError",
    "floors",
    "key_numbers",
    "measure_model",
    "measure_seed",
    "new_bilm",
    "pretrain",
    "replicate",
    "run",
    "untrained_like",
    "vocabulary",
]

RECORDS = ("pretraining", "context", "nearest", "probes")  # of one biLM; "char" holds its own
TASK_KEYS = {"word class": "word_class", "word sense": "word_sense"}
SPLIT_LABELS = {"train": (SENSE_LABELS, CORPUS), "heldout": (HELDOUT_LABELS, HELDOUT)}
REPLICATE_OUT = BUILD_DIR / "replicate"
REPLICATE_SEEDS = 5
Progress = Callable[[str], None]
LEGEND = """\
Each row is a set of seeds: yours, then the reference's. Every number is a mean over the
seeds ± half its 95% interval (Student's t; one seed has none): of the trained biLMs' reading,
of the untrained ones' they started from, and of the effect of pre-training (trained minus
untrained, seed by seed). One rule reads every row, whatever its number of seeds:
  pre-training      the trained biLMs' interval holds the claim, the effect's what it asks
  the architecture  the untrained biLMs' interval holds it too: it says nothing learned
  missed            the trained biLMs' interval lies short of the claim
  unclear           an interval straddles its bound: within seed noise
"""


class ExperimentError(RuntimeError):
    """The word biLM's measurements failed (a section not implemented yet, or an error)."""


# --- the biLMs -------------------------------------------------------------------------------


def vocabulary(sections: Sections) -> tuple[dict[str, int], dict[int, str]]:
    """The vocabulary of the training sentences, as section 2 builds it."""
    return sections.corpus.build_vocab(CORPUS)


def new_bilm(sections: Sections, seed: int, word2idx: dict[str, int],
             characters: bool = False) -> nn.Module:
    """The biLM that pre-training from `seed` starts from: `set_seed(seed)`, then a `BiLM`
    of the vocabulary (with `characters`, section 8's `CharBiLM` of its words)."""
    sections.setup.set_seed(seed)
    if characters:
        return sections.char_encoder.CharBiLM({i: w for w, i in word2idx.items()})
    return sections.bilm.BiLM(len(word2idx))


def untrained_like(sections: Sections, seed: int = TRAINING_SEED,
                   characters: bool = False) -> SimpleNamespace:
    """The control of a pre-trained biLM: the same shape and the same initial weights, never
    trained. With the default seed it is the biLM that `course.pretrained.pretrained` (and a
    notebook's `pretrained_bilm`) starts from. `.model` (in eval mode), `.word2idx`,
    `.idx2word`, `.seed`."""
    word2idx, idx2word = vocabulary(sections)
    model = new_bilm(sections, seed, word2idx, characters).eval()
    return SimpleNamespace(model=model, word2idx=word2idx, idx2word=idx2word, seed=seed)


def _module_of(function: Callable) -> Any:
    """The module that defines `function` (a `LiveSections`' module is a proxy of it)."""
    return sys.modules[function.__module__]


def pretrain(sections: Sections, seed: int, word2idx: dict[str, int],
             characters: bool = False) -> tuple[nn.Module, dict]:
    """`new_bilm(seed)` pre-trained on the training sentences with the default recipe
    (`CHAR_RECIPE` for the character biLM), on the CPU, and its record: the final losses,
    the loss per epoch of the training ("train_curve") and, where section 4's `train_bilm`
    scores each epoch with its `corpus_loss`, of the held-out sentences ("heldout_curve",
    otherwise empty), and the training time ("seconds" of wall clock and "cpu_seconds" of
    this process's CPU, the held-out scoring left out).

    On a shared machine the wall clock waits for other jobs; the CPU time is what one core
    takes alone (one torch thread).
    """
    pretraining = sections.pretrain
    model = new_bilm(sections, seed, word2idx, characters)
    recipe = sections.char_encoder.CHAR_RECIPE if characters else pretraining.DEFAULT_RECIPE
    module = _module_of(pretraining.train_bilm)
    score, heldout = module.corpus_loss, []
    clocks = {"seconds": time.perf_counter, "cpu_seconds": time.process_time}
    scoring = dict.fromkeys(clocks, 0.0)

    def with_heldout(model, sentences, vocabulary):
        begin = {name: clock() for name, clock in clocks.items()}
        heldout.append(score(model, HELDOUT, vocabulary))
        for name, clock in clocks.items():
            scoring[name] += clock() - begin[name]
        return score(model, sentences, vocabulary)

    module.corpus_loss = with_heldout
    try:
        start = {name: clock() for name, clock in clocks.items()}
        history = pretraining.train_bilm(model, CORPUS, word2idx, recipe, seed=seed,
                                         device="cpu", log_every=0, progress=False)
        spent = {name: clock() - start[name] - scoring[name] for name, clock in clocks.items()}
    finally:
        module.corpus_loss = score
    history = [float(loss) for loss in history]
    return model, {"seed": seed, "train": history[-1],
                   "heldout": float(score(model, HELDOUT, word2idx)), **spent,
                   "train_curve": history,
                   "heldout_curve": heldout if len(heldout) == len(history) else []}


# --- one biLM, one seed ----------------------------------------------------------------------


def measure_model(sections: Sections, model: nn.Module, word2idx: dict[str, int], seed: int,
                  trained: bool) -> dict:
    """What sections 6-8 measure on `model`: the records "context", "nearest", "probes" and
    "neighbours" (each marked `trained`), and "tasks", section 7's `TaskResult`s (word
    class, word sense). `seed` names the records and seeds the probes."""
    found: dict[str, list] = {"context": [], "nearest": [], "probes": [], "neighbours": []}
    mark = {"seed": seed, "trained": trained}
    for split, (labels, sentences) in SPLIT_LABELS.items():
        comparison = sections.context.compare_contexts(model, word2idx, labels)
        level = analysis.anisotropy_baseline(sections, model, word2idx, sentences)
        for word in (*comparison.words, None):
            same = comparison.select(True, word).mean(0)
            different = comparison.select(False, word).mean(0)
            found["context"] += [
                {**mark, "split": split, "word": word or "all", "layer": layer,
                 "same": float(same[layer]), "different": float(different[layer]),
                 "baseline": float(level[layer])} for layer in range(len(level))]
        accuracy = analysis.nearest_sense_accuracy(sections, model, word2idx, labels,
                                                   SENSE_LABELS)
        found["nearest"] += [
            {**mark, "split": split, "word": word, "layer": layer,
             "accuracy": float(reading.accuracy[layer]), "chance": reading.chance,
             "n": reading.n}
            for word, reading in accuracy.items() for layer in range(len(reading.accuracy))]
    tasks = (analysis.word_class_task(sections, model, word2idx),
             analysis.sense_task(sections, model, word2idx))
    found["tasks"] = [analysis.evaluate_task(sections, task, seed=seed) for task in tasks]
    for result in found["tasks"]:
        shared = {**mark, "task": TASK_KEYS[result.name], "chance": result.chance,
                  "n": result.n}
        found["probes"] += [
            {**shared, "layer": "mix", "accuracy": float(result.accuracy),
             "weights": [float(w) for w in result.weights], "gamma": float(result.gamma)},
            *({**shared, "layer": layer, "accuracy": float(accuracy), "weights": None,
               "gamma": None} for layer, accuracy in enumerate(result.layer_accuracy))]
    found["neighbours"] = analysis.nearest_relatives(sections, model, word2idx)
    return found


def measure_seed(sections: Sections, seed: int, characters: bool = False,
                 word2idx: dict[str, int] | None = None, keep: bool = False) -> dict:
    """Both biLMs of `seed`, the untrained one first (it needs no training, so a section
    not implemented yet stops it at once), then the pre-trained one: the records of
    `RECORDS` and "neighbours" for the results, and "curves" (the training and held-out
    loss per epoch), "tasks" ({True: the trained biLM's `TaskResult`s, False: the untrained
    one's}), "relatives" (the same, `Neighbours`), and with `keep`, "states" (each biLM's
    state_dict, for `new_bilm(...).load_state_dict`)."""
    if word2idx is None:
        word2idx, _ = vocabulary(sections)
    model = "char" if characters else "word"
    untrained = new_bilm(sections, seed, word2idx, characters)
    states = {False: {k: v.clone() for k, v in untrained.state_dict().items()}} if keep else {}
    control = measure_model(sections, untrained, word2idx, seed, trained=False)
    trained, record = pretrain(sections, seed, word2idx, characters)
    if keep:
        states[True] = trained.state_dict()
    measured = measure_model(sections, trained, word2idx, seed, trained=True)
    curves = (record.pop("train_curve"), record.pop("heldout_curve"))
    found = {"pretraining": [record], "curves": curves,
             "tasks": {True: measured.pop("tasks"), False: control.pop("tasks")},
             "relatives": {True: measured.pop("neighbours"),
                           False: control.pop("neighbours")},
             "states": states}
    for kind in ("context", "nearest", "probes"):
        found[kind] = control[kind] + measured[kind]
    found["neighbours"] = [
        {"seed": seed, "model": model, "trained": trained_, "query": n.query,
         "relative": n.relative, "rank": n.rank, "candidates": n.candidates}
        for trained_ in (False, True) for n in found["relatives"][trained_]]
    return found


# --- every seed --------------------------------------------------------------------------------

_SECTIONS: Sections | None = None  # what the forked workers measure
_REPORT: Progress | None = None  # where they say that they started


def _job(job: tuple[int, bool, dict[str, int], bool]) -> tuple[str, int, bool, Any, float]:
    """One seed of one biLM in a worker: ("ok", seed, characters, measure_seed's dict, CPU
    seconds) or ("error", seed, characters, the message, CPU seconds)."""
    seed, characters, word2idx, keep = job
    started = time.process_time()
    if _REPORT is not None:
        _REPORT(f"  {'character biLM' if characters else 'word biLM'}, seed {seed}: started "
                "(its untrained start measured, then pre-trained and measured)")
    try:
        found = measure_seed(_SECTIONS, seed, characters, word2idx, keep)
    except Exception as error:  # noqa: BLE001 - said in the parent, which decides
        return "error", seed, characters, _failure(error), time.process_time() - started
    return "ok", seed, characters, found, time.process_time() - started


def _failure(error: BaseException) -> str:
    """What went wrong, in a line: a stub's message as it stands, else the error and where
    in the implementation it was raised."""
    seen = error
    while seen is not None:
        if isinstance(seen, NotImplementedError) and STUB_MESSAGE.search(str(seen)):
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if "/course/" not in f.filename.replace(os.sep, "/")]
    where = f" ({shown(frames[-1].filename)}, line {frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {error}{where}"


def _worker() -> None:
    """A worker's start: one torch thread, Ctrl-C left to the parent."""
    torch.set_num_threads(1)
    ignore_in_worker()


def say(line: str) -> None:
    """Print `line` at once, also into a pipe or a file."""
    print(line, flush=True)


def run(sections: Sections, seeds: Iterable[int], characters: bool = True, jobs: int = 2,
        progress: Progress | None = say, keep: Sequence[int] = ()) -> tuple[dict, dict]:
    """`measure_seed` of every seed, for the word biLM and, with `characters`, the character
    biLM, in `jobs` processes (forked, one torch thread each; 1: in this one).

    Returns:
        (results, details). `results` has the schema of the demo's results.json but "run":
        "seeds", "floors" (`analyses.analysis.entropy_floor`'s two), the word biLM's records,
        "char" (the character biLM's; empty where it failed), "neighbours" (both biLMs').
        `details[(model, seed)]` ("word" or "char") holds `measure_seed`'s other keys, and
        "cpu_seconds" (of its process); `details["char error"]` says why the character
        biLM has no records, where it failed (a section 8 not implemented yet).

    Raises:
        ExperimentError: a seed of the word biLM failed; its message says where.
    """
    global _SECTIONS, _REPORT
    seeds = list(seeds)
    word2idx, _ = vocabulary(sections)
    work = [(seed, True, word2idx, seed in keep) for seed in seeds] if characters else []
    work += [(seed, False, word2idx, seed in keep) for seed in seeds]  # the longest first
    report = progress or (lambda line: None)
    started = time.perf_counter()
    _SECTIONS, _REPORT, pool = sections, progress, None
    finished, ticker = [0], None
    try:
        if jobs > 1 and "fork" in multiprocessing.get_all_start_methods():
            # torch's optimisers import its compiler when the first one is made (seconds of
            # CPU): imported once here, no worker imports it again
            importlib.import_module("torch._dynamo")
            # forked before this process trains anything: the workers start from a quiet one
            with forking():
                pool = multiprocessing.get_context("fork").Pool(jobs, initializer=_worker)
            done = each(pool.imap_unordered(_job, work))
        else:
            done = map(_job, work)
        if progress:  # a thread of its own, started once the workers are forked
            ticker = Ticker(lambda: f"  ... {time.perf_counter() - started:.0f} s: "
                            f"{finished[0]} of {len(work)} biLMs done", report)
        details: dict = {}
        for n, (status, seed, chars, found, cpu) in enumerate(done, start=1):
            finished[0] = n
            name = "character biLM" if chars else "word biLM"
            if status == "error":
                if not chars:
                    raise ExperimentError(f"the word biLM of seed {seed}: {found}")
                details["char error"] = found
                report(f"[{n}/{len(work)}] {name}, seed {seed}: not measured: {found}")
                continue
            details["char" if chars else "word", seed] = {**found, "cpu_seconds": cpu}
            record = found["pretraining"][0]
            report(f"[{n}/{len(work)}] {name}, seed {seed}: trained to loss {record['train']:.3f} "
                f"(held-out {record['heldout']:.3f}) in {record['cpu_seconds']:.1f} s of CPU; "
                f"it and its untrained start measured in {cpu:.0f} s of CPU "
                f"({time.perf_counter() - started:.0f} s so far)")
    finally:
        _SECTIONS = _REPORT = None
        if ticker is not None:
            ticker.stop()
        if pool is not None:
            pool.terminate()
            pool.join()
    results = {"seeds": seeds, "floors": floors(sections),
               **{kind: [] for kind in RECORDS}, "char": {kind: [] for kind in RECORDS},
               "neighbours": []}
    for model in ("word", "char"):
        into = results if model == "word" else results["char"]
        for seed in seeds:
            if (model, seed) in details:
                for kind in RECORDS:
                    into[kind] += details[model, seed][kind]
                results["neighbours"] += details[model, seed]["neighbours"]
    if "char error" in details:  # a seed that did finish does not make a biLM measured
        results["char"] = {kind: [] for kind in RECORDS}
        results["neighbours"] = [r for r in results["neighbours"] if r["model"] == "word"]
    return results, details


def floors(sections: Sections) -> dict[str, float]:
    """The entropy floors of section 4: of a biLM that knows the training sentences by heart
    ("corpus") and of one that knows which openings go with which endings ("phrases")."""
    return {"corpus": analysis.entropy_floor(sections, CORPUS),
            "phrases": analysis.entropy_floor(sections, CORPUS + HELDOUT, CORPUS)}


# --- make replicate ----------------------------------------------------------------------------


def _reference_summary() -> dict | None:
    try:
        from .reference_targets import SUMMARY
    except ImportError:
        return None
    return SUMMARY


def key_numbers(results: dict) -> str:
    """The numbers the targets read, means over seeds, trained against untrained, as text."""
    def per_layer(value: Callable[[dict, int], np.ndarray]) -> Callable[[dict], str]:
        return lambda v: " ".join(f"{value(v, k).mean():.2f}" for k in targets.LAYERS)

    rows = {
        "held-out: same minus different sense":
            per_layer(lambda v, k: targets.gap(v, "heldout", "all", k)),
        "held-out: 1-NN sense accuracy": per_layer(lambda v, k: targets.nearest(v, "heldout", k)),
        **{f"{targets.TASK_NAMES[task]}: {name}": per_layer(
            lambda v, k, task=task, reading=reading: reading(v, task)[:, k])
           for task in targets.TASKS for name, reading in (
               ("learned weights", targets.weights), ("probe on one layer", targets.probes))},
        "unseen words: mean rank of the relative":
            lambda v: f"{targets.mean_ranks(v).mean():.1f}",
    }
    lines = []
    for model in (m for m in targets.MODELS if targets.measured(results, m)):
        biLMs = {trained: targets.view(results, model, trained) for trained in (True, False)}
        lines.append(f"  {targets.MODEL_NAMES[model]}, {len(results['seeds'])} seeds, "
                     "layers 0 1 2:")
        lines += [f"    {name:<40}trained {show(biLMs[True])}   untrained {show(biLMs[False])}"
                  for name, show in rows.items()]
    return "\n".join(lines)


def replicate(impl: Path, seeds: int = REPLICATE_SEEDS, jobs: int = 2,
              out: Path = REPLICATE_OUT) -> dict:
    """`run` on every section of `impl` (none from the reference), then the targets."""
    say(f"make replicate: the sections in {shown(impl)}/ pre-train a biLM and a character "
        f"biLM on each of {seeds} seed(s), and each is measured against the untrained biLM it "
        f"started from, in {jobs} process(es); a line as each starts and finishes, and every "
        "20 s (Ctrl-C stops it)")
    sections = Harness(impl, others_dir=impl).sections(SECTIONS[-1])  # all impl's own
    results, details = run(sections, range(seeds), jobs=jobs)
    if "char error" in details:
        print(f"the character biLM (section 8, a bonus) was not measured: "
              f"{details['char error']}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    print(f"\nwhat your biLMs measured ({shown(out / 'results.json')} holds every number):")
    print(key_numbers(results))
    print("\nthe targets: what the paper found, read on your biLMs, trained against untrained "
          "(analyses/targets.py).\n" + LEGEND)
    print(targets.report(results, _reference_summary()))
    print("\n" + verdict_line(results))
    reference = _reference_summary()
    if reference:
        differ = targets.differences(results, reference)
        print("every target reads as the reference's did" if not differ else
              "these read otherwise than the reference's:\n" + "\n".join(
                  textwrap.fill(str(d), OUTPUT_WIDTH, initial_indent="  ",
                                subsequent_indent="    ") for d in differ))
    return results


def verdict_line(results: dict) -> str:
    """How many targets each reading got."""
    found = targets.read(results)
    counts = {verdict: sum(r.verdict == verdict for r in found) for verdict in (
        targets.PRE_TRAINING, targets.ARCHITECTURE, targets.MISSED, targets.UNCLEAR,
        targets.NOT_RUN)}
    return (f"of {len(found)} targets: " + ", ".join(f"{n} {verdict}"
                                                     for verdict, n in counts.items() if n))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analyses.experiments",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default=os.environ.get("ELMO_IMPL", "exercises"),
                        help="the implementation's folder (default exercises)")
    parser.add_argument("--seeds", type=int, default=REPLICATE_SEEDS,
                        help=f"training seeds 0..N-1 (default {REPLICATE_SEEDS})")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes at once (default 2, or 1 on one core)")
    parser.add_argument("--out", type=Path, default=REPLICATE_OUT,
                        help="where results.json goes (default build/replicate)")
    args = parser.parse_args(argv)
    if min(args.seeds, args.jobs) < 1:
        parser.error(f"--seeds and --jobs must be at least 1, got {args.seeds}, {args.jobs}")
    impl = Path(args.impl) if Path(args.impl).is_absolute() else ROOT / args.impl
    torch.set_num_threads(1)
    started = time.perf_counter()
    try:
        replicate(impl, args.seeds, args.jobs, args.out)
    except ExperimentError as error:
        print(f"\nmake replicate stopped: {error}\nIt needs sections 1-7 to pass their tests "
              "(`make test`); section 8 is a bonus.")
        return 1
    except KeyboardInterrupt:
        return stopped("make replicate", f"its results are written only at the end, so "
                       f"{shown(args.out)}/ holds the last complete run, if any")
    print(f"done in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
