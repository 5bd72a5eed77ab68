"""The seed notebook end to end on the reference, `solutions/`: `make demo`.

    python -m tools.demo [--seeds 10] [--out build/demo] [--threads 1]

For each training seed 0 .. seeds-1 it pre-trains a biLM on the training sentences
(recording the held-out sentences' loss after every epoch too), then measures, with the
reference's own functions:

    section 6   per word and layer, the cosine of same-sense and of different-sense pairs,
                on training and on held-out sentences, against the anisotropy baseline;
                1-nearest-neighbour sense accuracy
    section 7   the learned layer weights and single-layer probes of the two tasks

It writes every number to `--out`/results.json (the schema is `tools.results`'s; `python
-m tools.results write` turns it into the README's and docs' tables), prints the tables
and the targets, and draws, naming each file as it goes:

    training_loss.png         training and held-out loss per epoch, with the floors
    context_gaps.png          same-minus-different gap per word and layer, over seeds
    context_comparison.png    seed 0: the gap per word; the pooled groups and the baseline
    halves.png                seed 0: the forward and backward halves compared
    pca_<word>.png            seed 0: the word's occurrences per layer, by sense
    layer_weights.png         learned weights and probes, with chance, over seeds
    nearest.txt               seed 0: nearest occurrences per layer (the paper's Table 4)

It runs on one CPU thread unless told otherwise: every tensor here is small, and on two
shared cores a second thread's synchronisation costs more than it saves.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from unittest import mock

import numpy as np
import torch
from matplotlib.figure import Figure

from course.registry import BUILD_DIR
from tools import reference, results
from tools.bench.run import machine

_reference = reference()
corpus, pretraining, context, layer_weights = (
    _reference.corpus, _reference.pretrain, _reference.context, _reference.layer_weights)
set_seed, BiLM = _reference.setup.set_seed, _reference.bilm.BiLM

DEFAULT_OUT = BUILD_DIR / "demo"
TASK_KEYS = {"word class": "word_class", "word sense": "word_sense"}


def heading(text: str) -> None:
    print(f"\n== {text} " + "=" * max(0, 84 - len(text)))


def pretrain(seed: int, word2idx: dict[str, int]) -> tuple[BiLM, list[float], list[float],
                                                          dict[str, float]]:
    """A biLM trained on `corpus.CORPUS` with the default recipe, initialised and shuffled by
    `seed`: (model, training loss per epoch, held-out loss per epoch, training time as
    {"seconds": wall clock, "cpu_seconds": this process's CPU time}).

    `train_bilm` records `corpus_loss` after each epoch; wrapping that call records the
    held-out loss at the same moments, and its time is left out of the training time. On a
    shared machine the wall clock waits for other jobs; the CPU time is what one core would
    take alone (one torch thread).
    """
    evaluate, heldout = pretraining.corpus_loss, []
    evaluating = {"seconds": 0.0, "cpu_seconds": 0.0}
    clocks = {"seconds": time.perf_counter, "cpu_seconds": time.process_time}

    def with_heldout(model, sentences, vocabulary) -> float:
        begin = {name: clock() for name, clock in clocks.items()}
        heldout.append(evaluate(model, corpus.HELDOUT, vocabulary))
        for name, clock in clocks.items():
            evaluating[name] += clock() - begin[name]
        return evaluate(model, sentences, vocabulary)

    set_seed(seed)
    model = BiLM(len(word2idx))
    with mock.patch.object(pretraining, "corpus_loss", with_heldout):
        start = {name: clock() for name, clock in clocks.items()}
        history = pretraining.train_bilm(model, corpus.CORPUS, word2idx,
                                         pretraining.DEFAULT_RECIPE, seed=seed, device="cpu",
                                         log_every=0, progress=False)
        spent = {name: clock() - start[name] - evaluating[name] for name, clock in clocks.items()}
    return model, history, heldout, spent


def context_records(seed: int, split: str, comparison, baseline: torch.Tensor) -> list[dict]:
    records = []
    for word in (*comparison.words, None):
        same = comparison.select(True, word).mean(0)
        different = comparison.select(False, word).mean(0)
        records += [{"seed": seed, "split": split, "word": word or "all", "layer": layer,
                     "same": float(same[layer]), "different": float(different[layer]),
                     "baseline": float(baseline[layer])} for layer in range(len(baseline))]
    return records


def nearest_records(seed: int, split: str, found: dict) -> list[dict]:
    return [{"seed": seed, "split": split, "word": word, "layer": layer,
             "accuracy": float(reading.accuracy[layer]), "chance": reading.chance,
             "n": reading.n}
            for word, reading in found.items() for layer in range(len(reading.accuracy))]


def probe_records(seed: int, result) -> list[dict]:
    task = TASK_KEYS[result.name]
    shared = {"seed": seed, "task": task, "chance": result.chance, "n": result.n}
    return [{**shared, "layer": "mix", "accuracy": result.accuracy,
             "weights": [float(w) for w in result.weights]},
            *({**shared, "layer": layer, "accuracy": float(accuracy), "weights": None}
              for layer, accuracy in enumerate(result.layer_accuracy))]


def plot_training_loss(curves: dict[int, tuple[list[float], list[float]]],
                       floors: dict[str, float], path: Path) -> Figure:
    """Training and held-out loss after each epoch, one pair of lines per seed, and the
    floors of a biLM that knows the phrases and of one that knows the sentences by heart."""
    figure = Figure(figsize=(7, 4.5), layout="constrained")
    ax = figure.subplots()
    for n, (train, heldout) in enumerate(curves.values()):
        epochs = range(1, len(train) + 1)
        for losses, colour, name in ((train, "C0", "training"), (heldout, "C1", "held-out")):
            ax.plot(epochs, losses, color=colour, alpha=0.6,
                    label=None if n else f"{name} sentences")
    ax.axhline(floors["phrases"], color="black", linestyle="--",
               label=f"floor: the phrases known ({floors['phrases']:.3f})")
    ax.axhline(floors["corpus"], color="grey", linestyle=":",
               label=f"floor: the training sentences by heart ({floors['corpus']:.3f})")
    ax.set_xlabel("epoch")
    ax.set_ylabel("forward + backward LM loss")
    ax.set_title(f"biLM pre-training, {len(curves)} seeds")
    ax.legend()
    figure.savefig(path, dpi=120)
    return figure


def plot_gaps(found: dict, path: Path) -> Figure:
    """Same-minus-different gap per word and layer, mean ± 1 sd over seeds, one panel per
    split, with the gap that counts as telling the senses apart."""
    figure = Figure(figsize=(12, 4.5), layout="constrained")
    names = results.words(found)
    width = 0.8 / len(names)
    for ax, split in zip(figure.subplots(1, 2, sharey=True), results.SPLITS, strict=True):
        for w, word in enumerate(names):
            gaps = np.array([results.gap(found, split, word, k) for k in results.LAYERS]).T
            ax.bar(np.array(results.LAYERS) + (w - (len(names) - 1) / 2) * width,
                   gaps.mean(0), width, yerr=gaps.std(0, ddof=1) if len(gaps) > 1 else None,
                   capsize=3, label=word)
        ax.axhline(results.MIN_GAP, color="black", linestyle="--", linewidth=1,
                   label=f"gap {results.MIN_GAP}")
        ax.set_xticks(results.LAYERS, [f"layer {k}" for k in results.LAYERS])
        ax.set_title(f"{results.SPLIT_NAMES[split]} sentences, {len(found['seeds'])} seeds")
        ax.set_ylabel("same-sense minus different-sense cosine")
    figure.axes[0].legend(fontsize="small")
    figure.savefig(path, dpi=120)
    return figure


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="training seeds 0..N-1 (default 10)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the results")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.threads < 1:
        parser.error(f"--seeds and --threads must be at least 1, got {args.seeds}, "
                     f"{args.threads}")
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    seeds = list(range(args.seeds))
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    floors = {"corpus": pretraining.entropy_floor(corpus.CORPUS),
              "phrases": pretraining.entropy_floor(corpus.CORPUS + corpus.HELDOUT, corpus.CORPUS)}
    found = {"run": {"command": f"python -m tools.demo --seeds {args.seeds}",
                     **machine(), "threads": args.threads},
             "seeds": seeds, "floors": floors,
             "context": [], "probes": [], "nearest": [], "pretraining": []}

    heading("the corpus")
    print(f"{len(corpus.CORPUS)} training and {len(corpus.HELDOUT)} held-out sentences, "
          f"{len(word2idx) - len(corpus.SPECIAL_TOKENS)} words; "
          f"{len(corpus.SENSE_PHRASES)} senses of 4 words, each 4 openings x 4 endings")
    print(f"floors: {floors['corpus']:.4f} (the training sentences by heart), "
          f"{floors['phrases']:.4f} (the phrases, on training and held-out sentences)")

    heading(f"pre-training with {pretraining.DEFAULT_RECIPE}, then sections 6 and 7, per seed")
    curves, first, task_results = {}, None, []
    for seed in seeds:
        model, train, heldout, spent = pretrain(seed, word2idx)
        curves[seed] = (train, heldout)
        found["pretraining"].append({"seed": seed, "train": train[-1], "heldout": heldout[-1],
                                     **spent})
        for split, labels, sentences in (
                ("train", corpus.SENSE_LABELS, corpus.CORPUS),
                ("heldout", corpus.HELDOUT_LABELS, corpus.HELDOUT)):
            comparison = context.compare_contexts(model, word2idx, labels)
            baseline = context.anisotropy_baseline(model, word2idx, sentences)
            found["context"] += context_records(seed, split, comparison, baseline)
            found["nearest"] += nearest_records(seed, split, context.nearest_sense_accuracy(
                model, word2idx, labels, corpus.SENSE_LABELS))
            if seed == 0 and split == "train":
                first = (model, comparison, baseline)
        tasks = (layer_weights.word_class_task(model, word2idx),
                 layer_weights.sense_task(model, word2idx))
        task_results.append([layer_weights.evaluate_task(task, seed=seed) for task in tasks])
        for result in task_results[-1]:
            found["probes"] += probe_records(seed, result)
        print(f"seed {seed}: loss {train[-1]:.4f}, held-out {heldout[-1]:.4f}, training "
              f"{spent['seconds']:.1f} s ({spent['cpu_seconds']:.1f} s of CPU)")
    (args.out / "results.json").write_text(json.dumps(found, indent=1) + "\n")

    for title, name in (("losses", "pretraining"), ("section 6: pooled pairs", "context"),
                        ("section 6: the gap of each word", "gaps"),
                        ("section 6: 1-nearest-neighbour sense", "nearest"),
                        ("section 7: layer weights and probes", "probes"),
                        ("the targets", "targets")):
        heading(title)
        print(results.TABLES[name](found))

    heading("figures")
    model, comparison, baseline = first
    halves = context.compare_halves(model, word2idx)
    figures = {
        "training_loss.png": lambda p: plot_training_loss(curves, floors, p),
        "context_gaps.png": lambda p: plot_gaps(found, p),
        "context_comparison.png": lambda p: context.plot_context_comparison(comparison, baseline,
                                                                            p),
        "halves.png": lambda p: context.plot_halves(halves, baseline, p),
        **{f"pca_{word}.png": (lambda p, word=word: context.plot_sense_pca(model, word2idx,
                                                                          word, path=p))
           for word in comparison.words},
        "layer_weights.png": lambda p: layer_weights.plot_layer_weights(task_results, p),
    }
    for name, draw in figures.items():
        draw(args.out / name)
        print(args.out / name)
    queries = corpus.HELDOUT_LABELS[::4]  # the first held-out sentence of every sense
    tables = [f"{query[0]!r} ({query[2]}):\n" + context.nearest_table(
        context.nearest_occurrences(model, word2idx, query[0], query[1])) for query in queries]
    (args.out / "nearest.txt").write_text("\n\n".join(tables) + "\n")
    print(args.out / "nearest.txt")
    print(f"\n{tables[0]}\n\ndone in {time.perf_counter() - started:.0f} s")
    return found


if __name__ == "__main__":
    main()
