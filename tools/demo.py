"""The seed notebook end to end on the reference, `solutions/`: `make demo`.

    python -m tools.demo [--seeds 10] [--out build/demo] [--threads 1]

For each training seed 0 .. seeds-1 it pre-trains a biLM on the training sentences
(recording the held-out sentences' loss after every epoch too), then measures, with the
given analyses of `course.analysis` on the reference's sections:

    section 6   per word and layer, the cosine of same-sense and of different-sense pairs,
                on training and on held-out sentences, against the anisotropy baseline;
                1-nearest-neighbour sense accuracy
    section 7   the learned layer weights and single-layer probes of the two tasks
    section 8   all of it again for the character biLM (`CharBiLM`, its `CHAR_RECIPE`),
                and, for words the corpus lacks, where their relatives rank among their
                nearest words: for the word biLM (<unk>), an untrained character biLM and
                the trained one

The character biLM's seeds run in worker processes beside the word biLM's (`--jobs`, two
by default: one core each). It writes every number to `--out`/results.json (the schema is
`tools.results`'s; `python -m tools.results write` turns it into the README's and docs'
tables), prints the tables and the targets, and draws, naming each file as it goes:

    training_loss.png         training and held-out loss per epoch, with the floors, for
                              both biLMs
    context_gaps.png          same-minus-different gap per word and layer, over seeds
    context_comparison.png    seed 0: the gap per word; the pooled groups and the baseline
    halves.png                seed 0: the forward and backward halves compared
    pca_<word>.png            seed 0: the word's occurrences per layer, by sense
    layer_weights.png         learned weights and probes, with chance, over seeds
    nearest.txt               seed 0: nearest occurrences per layer (the paper's Table 4)
    char_vs_word.png          the word and the character biLM side by side, over seeds: the
                              context gap, the word-class probes, the relatives' ranks
    char_neighbours.txt       seed 0: the nearest words of the words the corpus lacks

It runs on one CPU thread unless told otherwise: every tensor here is small, and on two
shared cores a second thread's synchronisation costs more than it saves.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from pathlib import Path
from unittest import mock

import numpy as np
import torch
from matplotlib.figure import Figure

from course import analysis, plots
from course.registry import BUILD_DIR
from tools import reference, results
from tools.bench.run import machine

_reference = reference()
corpus, pretraining, context, char_encoder = (
    _reference.corpus, _reference.pretrain, _reference.context, _reference.char_encoder)
set_seed, BiLM = _reference.setup.set_seed, _reference.bilm.BiLM

DEFAULT_OUT = BUILD_DIR / "demo"
TASK_KEYS = {"word class": "word_class", "word sense": "word_sense"}


def heading(text: str) -> None:
    print(f"\n== {text} " + "=" * max(0, 84 - len(text)))


def pretrain(seed: int, word2idx: dict[str, int], characters: bool = False
             ) -> tuple[BiLM, list[float], list[float], dict[str, float]]:
    """A biLM trained on `corpus.CORPUS` with the default recipe (with `characters`, a
    `CharBiLM` with its `CHAR_RECIPE`), initialised and shuffled by `seed`: (model, training
    loss per epoch, held-out loss per epoch, training time as {"seconds": wall clock,
    "cpu_seconds": this process's CPU time}).

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
    if characters:
        model, recipe = char_encoder.CharBiLM(_idx2word(word2idx)), char_encoder.CHAR_RECIPE
    else:
        model, recipe = BiLM(len(word2idx)), pretraining.DEFAULT_RECIPE
    with mock.patch.object(pretraining, "corpus_loss", with_heldout):
        start = {name: clock() for name, clock in clocks.items()}
        history = pretraining.train_bilm(model, corpus.CORPUS, word2idx, recipe, seed=seed,
                                         device="cpu", log_every=0, progress=False)
        spent = {name: clock() - start[name] - evaluating[name] for name, clock in clocks.items()}
    return model, history, heldout, spent


def measure(seed: int, word2idx: dict[str, int], characters: bool = False) -> dict:
    """One biLM of `seed`, pre-trained, and what sections 6-8 measure on it: the records of
    `tools.results` ("pretraining", "context", "nearest", "probes", "neighbours"), with
    "curves" (training and held-out loss per epoch), "tasks" (the `TaskResult`s) and, for
    seed 0, "first" (the model, the training comparison and its baseline)."""
    model, train, heldout, spent = pretrain(seed, word2idx, characters)
    found = {"pretraining": [{"seed": seed, "train": train[-1], "heldout": heldout[-1],
                              **spent}],
             "context": [], "nearest": [], "probes": [], "curves": (train, heldout)}
    for split, labels, sentences in (
            ("train", corpus.SENSE_LABELS, corpus.CORPUS),
            ("heldout", corpus.HELDOUT_LABELS, corpus.HELDOUT)):
        comparison = context.compare_contexts(model, word2idx, labels)
        baseline = analysis.anisotropy_baseline(_reference, model, word2idx, sentences)
        found["context"] += context_records(seed, split, comparison, baseline)
        found["nearest"] += nearest_records(seed, split, analysis.nearest_sense_accuracy(
            _reference, model, word2idx, labels, corpus.SENSE_LABELS))
        if seed == 0 and split == "train" and not characters:
            found["first"] = (model, comparison, baseline)
    tasks = (analysis.word_class_task(_reference, model, word2idx),
             analysis.sense_task(_reference, model, word2idx))
    found["tasks"] = [analysis.evaluate_task(_reference, task, seed=seed) for task in tasks]
    for result in found["tasks"]:
        found["probes"] += probe_records(seed, result)
    models = {"word": model}
    if characters:
        set_seed(seed)  # the weights the trained one started from
        models = {"untrained": char_encoder.CharBiLM(_idx2word(word2idx)), "char": model}
    neighbours = {name: analysis.nearest_relatives(_reference, each, word2idx)
                  for name, each in models.items()}
    found["neighbours"] = [{"seed": seed, "model": name, "query": n.query,
                            "relative": n.relative, "rank": n.rank,
                            "candidates": n.candidates}
                           for name, found_ in neighbours.items() for n in found_]
    found["neighbour_tables"] = {name: analysis.neighbours_table(found_)
                                 for name, found_ in neighbours.items()}
    return found


def _idx2word(word2idx: dict[str, int]) -> dict[int, str]:
    return {i: word for word, i in word2idx.items()}


def measure_characters(seed: int, word2idx: dict[str, int]) -> dict:
    """`measure` of the character biLM of `seed`, in a worker process of one torch thread."""
    torch.set_num_threads(1)
    return measure(seed, word2idx, characters=True)


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


def plot_training_loss(curves: dict[str, list[tuple[list[float], list[float]]]],
                       floors: dict[str, float], path: Path) -> Figure:
    """Training and held-out loss after each epoch, one pair of lines per seed and biLM
    (the word biLM solid, the character biLM dashed), and the floors of a biLM that knows
    the phrases and of one that knows the sentences by heart."""
    figure = Figure(figsize=(7, 4.5), layout="constrained")
    ax = figure.subplots()
    for model, style in (("word", "-"), ("char", "--")):
        for n, (train, heldout) in enumerate(curves[model]):
            epochs = range(1, len(train) + 1)
            for losses, colour, split in ((train, "C0", "training"), (heldout, "C1", "held-out")):
                ax.plot(epochs, losses, color=colour, linestyle=style, alpha=0.6,
                        label=None if n else f"{results.MODEL_NAMES[model]}, {split} sentences")
    ax.axhline(floors["phrases"], color="black", linestyle="--",
               label=f"floor: the phrases known ({floors['phrases']:.3f})")
    ax.axhline(floors["corpus"], color="grey", linestyle=":",
               label=f"floor: the training sentences by heart ({floors['corpus']:.3f})")
    ax.set_xlabel("epoch")
    ax.set_ylabel("forward + backward LM loss")
    ax.set_title(f"biLM pre-training, {len(curves['word'])} seeds")
    ax.set_ylim(top=max(6.0, 1.2 * floors["phrases"]))  # the first epochs run off the top
    ax.legend(fontsize="small")
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


def plot_char_vs_word(found: dict, path: Path) -> Figure:
    """The word and the character biLM side by side, mean ± 1 sd over seeds: the pooled
    context gap per layer on held-out sentences, with the cosine of two different words;
    the word-class task's single-layer probes, with chance; the rank of the relatives of
    words the corpus lacks, with chance."""
    figure = Figure(figsize=(13, 4), layout="constrained")
    gaps, probes, ranks = figure.subplots(1, 3)
    views = {"word": found, "char": results.char_view(found)}
    layers = np.array(results.LAYERS)
    for k, (model, view) in enumerate(views.items()):
        gap = np.array([results.gap(view, "heldout", "all", layer) for layer in layers]).T
        baseline = np.array([results.baseline(view, "heldout", layer) for layer in layers]).T
        shift = (k - 0.5) * 0.35
        gaps.bar(layers + shift, gap.mean(0), 0.35, yerr=gap.std(0), capsize=3,
                 color=f"C{k}", label=f"{results.MODEL_NAMES[model]}: gap")
        gaps.plot(layers + shift, baseline.mean(0), "o", color=f"C{k}", markeredgecolor="black",
                  label=f"{results.MODEL_NAMES[model]}: two different words")
        accuracy = results.probes(view, "word_class")
        probes.bar(layers + shift, accuracy.mean(0), 0.35, yerr=accuracy.std(0), capsize=3,
                   color=f"C{k}", label=results.MODEL_NAMES[model])
    chance = next(r["chance"] for r in found["probes"] if r["task"] == "word_class")
    probes.axhline(chance, color="black", linestyle="--", label=f"chance ({chance:.3f})")
    for ax, title in ((gaps, "context: same minus different sense, held-out"),
                      (probes, "word class of unseen word types: probe on one layer")):
        ax.set_xticks(layers, [f"layer {k}" for k in layers])
        ax.set_title(title, fontsize="medium")
        ax.set_ylim(top=1.4 * ax.get_ylim()[1])  # room for the legend above the bars
        ax.legend(fontsize="small", loc="upper left")
    names = list(results.MODELS)
    mean_ranks = np.array([results.mean_ranks(found, model) for model in names]).T
    ranks.bar(range(len(names)), mean_ranks.mean(0), yerr=mean_ranks.std(0), capsize=3,
              color=["C0", "C7", "C1"])
    ranks.axhline(results.chance_rank(found), color="black", linestyle="--",
                  label=f"chance ({results.chance_rank(found):.1f})")
    ranks.set_xticks(range(len(names)), [results.MODEL_NAMES[m].replace(" character", "\ncharacter")
                                         for m in names])
    ranks.set_title("words the corpus lacks: mean rank of the relative", fontsize="medium")
    ranks.legend(fontsize="small")
    figure.savefig(path, dpi=120)
    return figure


RECORDS = ("pretraining", "context", "nearest", "probes")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="training seeds 0..N-1 (default 10)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the results")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes at once: with 2 or more, the character biLM's seeds "
                             "run in workers beside the word biLM's (default 2, or 1 on one "
                             "core)")
    args = parser.parse_args(argv)
    if min(args.seeds, args.threads, args.jobs) < 1:
        parser.error(f"--seeds, --threads and --jobs must be at least 1, got {args.seeds}, "
                     f"{args.threads}, {args.jobs}")
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    seeds = list(range(args.seeds))
    word2idx, _ = corpus.build_vocab(corpus.CORPUS)
    floors = {"corpus": analysis.entropy_floor(_reference, corpus.CORPUS),
              "phrases": analysis.entropy_floor(_reference, corpus.CORPUS + corpus.HELDOUT,
                                                corpus.CORPUS)}
    found = {"run": {"command": f"python -m tools.demo --seeds {args.seeds} --jobs {args.jobs}",
                     **machine(), "threads": args.threads},
             "seeds": seeds, "floors": floors, **{kind: [] for kind in RECORDS},
             "char": {kind: [] for kind in RECORDS}, "neighbours": []}

    heading("the corpus")
    print(f"{len(corpus.CORPUS)} training and {len(corpus.HELDOUT)} held-out sentences, "
          f"{len(word2idx) - len(corpus.SPECIAL_TOKENS)} words; "
          f"{len(corpus.SENSE_PHRASES)} senses of 4 words, each 4 openings x 4 endings")
    print(f"floors: {floors['corpus']:.4f} (the training sentences by heart), "
          f"{floors['phrases']:.4f} (the phrases, on training and held-out sentences)")

    heading(f"pre-training with {pretraining.DEFAULT_RECIPE}, then sections 6 and 7, per seed")
    workers = None
    if args.jobs > 1:  # forked before any training: the workers start from a quiet process
        workers = multiprocessing.get_context("fork").Pool(args.jobs - 1)
        pending = workers.starmap_async(measure_characters, [(seed, word2idx) for seed in seeds])
    runs = {"word": [], "char": []}
    for seed in seeds:
        runs["word"].append(measure(seed, word2idx))
        report("word biLM", runs["word"][-1])
    gather(runs["word"], found, found)

    heading("figures of the word biLM" + (", while the character biLM's seeds finish"
                                          if workers else ""))
    model, comparison, baseline = runs["word"][0]["first"]
    halves = analysis.compare_halves(_reference, model, word2idx)
    task_results = [run["tasks"] for run in runs["word"]]
    draw(args.out, {
        "context_gaps.png": lambda p: plot_gaps(found, p),
        "context_comparison.png": lambda p: plots.plot_context_comparison(comparison, baseline,
                                                                          p),
        "halves.png": lambda p: plots.plot_halves(halves, baseline, p),
        **{f"pca_{word}.png": (lambda p, word=word: plots.plot_sense_pca(
            _reference, model, word2idx, word, path=p)) for word in comparison.words},
        "layer_weights.png": lambda p: plots.plot_layer_weights(task_results, p),
    })
    queries = corpus.HELDOUT_LABELS[::4]  # the first held-out sentence of every sense
    tables = [f"{query[0]!r} ({query[2]}):\n" + analysis.nearest_table(
        analysis.nearest_occurrences(_reference, model, word2idx, query[0], query[1]))
        for query in queries]
    write(args.out / "nearest.txt", "\n\n".join(tables) + "\n")

    if workers is None:
        runs["char"] = [measure(seed, word2idx, characters=True) for seed in seeds]
    else:
        runs["char"] = pending.get()
        workers.close()
        workers.join()
    heading(f"the character biLM, pre-trained with {char_encoder.CHAR_RECIPE}")
    for run in runs["char"]:
        report("character biLM", run)
    gather(runs["char"], found["char"], found)
    (args.out / "results.json").write_text(json.dumps(found, indent=1) + "\n")

    for title, name in (("losses", "pretraining"), ("section 6: pooled pairs", "context"),
                        ("section 6: the gap of each word", "gaps"),
                        ("section 6: 1-nearest-neighbour sense", "nearest"),
                        ("section 7: layer weights and probes", "probes"),
                        ("section 8: the word and the character biLM", "characters"),
                        ("section 8: words the corpus lacks", "unseen_words"),
                        ("the targets", "targets")):
        heading(title)
        print(results.TABLES[name](found))

    heading("figures of both biLMs")
    curves = {name: [run["curves"] for run in runs[name]] for name in runs}
    draw(args.out, {
        "training_loss.png": lambda p: plot_training_loss(curves, floors, p),
        "char_vs_word.png": lambda p: plot_char_vs_word(found, p),
    })
    neighbours = {**runs["word"][0]["neighbour_tables"], **runs["char"][0]["neighbour_tables"]}
    write(args.out / "char_neighbours.txt", "\n\n".join(
        f"{results.MODEL_NAMES[name]} (seed 0):\n{table}"
        for name, table in neighbours.items()) + "\n")
    print(f"\n{tables[0]}\n\ndone in {time.perf_counter() - started:.0f} s")
    return found


def gather(runs: list[dict], into: dict, found: dict) -> None:
    """The records of one biLM's runs into `into` (the results or their "char"), and their
    neighbours into the results'."""
    for run in runs:
        for kind in RECORDS:
            into[kind] += run[kind]
        found["neighbours"] += run["neighbours"]


def draw(folder: Path, figures: dict) -> None:
    for name, plot in figures.items():
        plot(folder / name)
        print(folder / name)


def write(path: Path, text: str) -> None:
    path.write_text(text)
    print(path)


def report(name: str, run: dict) -> None:
    record = run["pretraining"][0]
    print(f"{name}, seed {record['seed']}: loss {record['train']:.4f}, held-out "
          f"{record['heldout']:.4f}, training {record['seconds']:.1f} s "
          f"({record['cpu_seconds']:.1f} s of CPU)")


if __name__ == "__main__":
    main()
