"""The seed notebook end to end on the reference, `solutions/`: `make demo`.

    python -m tools.demo [--seeds 10] [--out build/demo] [--jobs 2]

For each training seed 0 .. seeds-1 it runs `analyses.experiments` on the reference's
sections: it pre-trains the word biLM and section 8's character biLM, and measures what
sections 6-8 are about on each of them and on the untrained biLM each started from (the
same shape, the seed's initial weights, never trained), the control of every claim about
what a layer knows. The seeds run in `--jobs` processes (two by default: one core each),
a line as each finishes. It writes every number to `--out`/results.json (the schema is
`tools.results`'s; `python -m tools.results write` turns it into the README's and docs'
tables), prints the tables and the targets (`analyses.targets`: each read on the trained and
the untrained biLMs), and draws, naming each file as it goes:

    training_loss.png         training and held-out loss per epoch, with the floors, for
                              both biLMs
    context_gaps.png          same-minus-different gap per word and layer, over seeds, and
                              the untrained biLMs'
    control.png               trained against untrained, over seeds: the held-out gap, the
                              nearest neighbour's sense, the learned weights and the probes
    context_comparison.png    seed 0: the gap per word; the pooled groups and the baseline
    halves.png                seed 0: the forward and backward halves compared
    pca_<word>.png            seed 0: the word's occurrences per layer, by sense
    layer_weights.png         learned weights and probes, with chance, over seeds
    layer_weights_untrained.png   the same for the untrained biLMs
    nearest.txt               seed 0: nearest occurrences per layer (the paper's Table 4),
                              for the trained and the untrained biLM
    char_vs_word.png          the word and the character biLM side by side, over seeds: the
                              context gap, the word-class probes, the relatives' ranks
    char_neighbours.txt       seed 0: the nearest words of the words the corpus lacks

Each process runs one CPU thread: every tensor here is small, and on two shared cores a
second thread's synchronisation costs more than it saves.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch
from matplotlib.figure import Figure

from analyses import analysis, experiments, plots, targets
from analyses.targets import (
    LAYERS,
    MIN_GAP,
    MODEL_NAMES,
    MODELS,
    SPLIT_NAMES,
    SPLITS,
    TASK_NAMES,
    TASKS,
    view,
)
from course.registry import BUILD_DIR
from tools import reference, results, results_text
from tools.bench.run import machine

_reference = reference()
corpus = _reference.corpus

DEFAULT_OUT = BUILD_DIR / "demo"
STATE_NAMES = {True: "trained", False: "untrained"}


def heading(text: str) -> None:
    print(f"\n== {text} " + "=" * max(0, 84 - len(text)))


def plot_training_loss(curves: dict[str, list[tuple[list[float], list[float]]]],
                       floors: dict[str, float], path: Path) -> Figure:
    """Training and held-out loss after each epoch, one pair of lines per seed and biLM
    (the word biLM solid, the character biLM dashed), and the floors of a biLM that knows
    the phrases and of one that knows the sentences by heart."""
    figure = Figure(figsize=(7, 4.5), layout="constrained")
    ax = figure.subplots()
    for model, style in (("word", "-"), ("char", "--")):
        for n, (train, heldout) in enumerate(curves[model]):
            for losses, colour, split in ((train, "C0", "training"), (heldout, "C1", "held-out")):
                ax.plot(range(1, len(losses) + 1), losses, color=colour, linestyle=style,
                        alpha=0.6,
                        label=None if n else f"{MODEL_NAMES[model]}, {split} sentences")
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
    split, the untrained biLMs' as black ticks, with the gap that counts as telling the
    senses apart."""
    figure = Figure(figsize=(12, 4.5), layout="constrained")
    both = {trained: view(found, "word", trained) for trained in STATE_NAMES}
    names = targets.words(both[True])
    width = 0.8 / len(names)
    for ax, split in zip(figure.subplots(1, 2, sharey=True), SPLITS, strict=True):
        for w, word in enumerate(names):
            x = np.array(LAYERS) + (w - (len(names) - 1) / 2) * width
            gaps = np.array([targets.gap(both[True], split, word, k) for k in LAYERS]).T
            ax.bar(x, gaps.mean(0), width, yerr=gaps.std(0, ddof=1) if len(gaps) > 1 else None,
                   capsize=3, label=word)
            control = np.array([targets.gap(both[False], split, word, k) for k in LAYERS]).T
            ax.plot(x, control.mean(0), "_", color="black", markersize=12, markeredgewidth=2,
                    label="untrained biLM" if w == 0 else None)
        ax.axhline(MIN_GAP, color="black", linestyle="--", linewidth=1, label=f"gap {MIN_GAP}")
        ax.set_xticks(LAYERS, [f"layer {k}" for k in LAYERS])
        ax.set_title(f"{SPLIT_NAMES[split]} sentences, {len(found['seeds'])} seeds")
        ax.set_ylabel("same-sense minus different-sense cosine")
    figure.axes[0].legend(fontsize="small")
    figure.savefig(path, dpi=120)
    return figure


def _paired_bars(ax, values: dict[str, np.ndarray], colours: dict[str, str]) -> None:
    """Bars per layer, one per (name: (seeds, layers) values), mean ± 1 sd; names starting
    "untrained" hatched."""
    width = 0.8 / len(values)
    for k, (name, array) in enumerate(values.items()):
        x = np.array(LAYERS) + (k - (len(values) - 1) / 2) * width
        ax.bar(x, array.mean(0), width, yerr=array.std(0, ddof=1) if len(array) > 1 else None,
               capsize=3, color=colours[name], label=name,
               hatch="//" if "untrained" in name else None, alpha=0.6 if "untrained" in name
               else 1.0)
    ax.set_xticks(LAYERS, [f"layer {k}" for k in LAYERS])


def plot_control(found: dict, path: Path) -> Figure:
    """The trained biLMs against the untrained ones they started from, mean ± 1 sd over
    seeds: the held-out pooled gap, 1-nearest-neighbour sense accuracy on held-out
    sentences, each task's learned weights and single-layer probes."""
    figure = Figure(figsize=(16, 4.2), layout="constrained")
    gaps, nearest, weights, probes = figure.subplots(1, 4)
    both = {trained: view(found, "word", trained) for trained in STATE_NAMES}
    pair = {True: "trained", False: "untrained"}
    colours = {"trained": "C0", "untrained": "C7"}
    _paired_bars(gaps, {pair[t]: np.array([targets.gap(v, "heldout", "all", k)
                                           for k in LAYERS]).T for t, v in both.items()},
                 colours)
    gaps.axhline(MIN_GAP, color="black", linestyle="--", linewidth=1, label=f"gap {MIN_GAP}")
    gaps.set_ylabel("same-sense minus different-sense cosine")
    gaps.set_title("held-out: the sense gap", fontsize="medium")
    _paired_bars(nearest, {pair[t]: np.array([targets.nearest(v, "heldout", k)
                                              for k in LAYERS]).T for t, v in both.items()},
                 colours)
    chance = targets.nearest_chance(both[True], "heldout")
    nearest.axhline(chance, color="black", linestyle="--", linewidth=1,
                    label=f"chance ({chance:.2f})")
    nearest.set_ylabel("accuracy")
    nearest.set_title("held-out: the nearest occurrence's sense", fontsize="medium")
    task_colours = {f"{TASK_NAMES[task]}, {pair[t]}": f"C{1 + k}" for k, task in enumerate(TASKS)
                    for t in STATE_NAMES}
    _paired_bars(weights, {f"{TASK_NAMES[task]}, {pair[t]}": targets.weights(v, task)
                           for task in TASKS for t, v in both.items()}, task_colours)
    weights.axhline(1 / len(LAYERS), color="grey", linestyle=":", label="uniform, 1/3")
    weights.set_ylabel("softmax weight")
    weights.set_title("learned layer weights", fontsize="medium")
    _paired_bars(probes, {f"{TASK_NAMES[task]}, {pair[t]}": targets.probes(v, task)
                          for task in TASKS for t, v in both.items()}, task_colours)
    for k, task in enumerate(TASKS):
        probes.axhline(targets.chance(both[True], task), color=f"C{1 + k}", linestyle="--",
                       linewidth=1, label=f"{TASK_NAMES[task]}: chance")
    probes.set_ylabel("held-out accuracy")
    probes.set_title("a probe on one layer", fontsize="medium")
    for ax in (gaps, nearest, weights, probes):
        ax.set_ylim(top=1.45 * ax.get_ylim()[1])  # room for the legend above the bars
        ax.legend(fontsize="x-small", loc="upper left", ncols=2)
    figure.suptitle(f"The word biLM, trained and untrained (the same seeds' initial weights), "
                    f"{len(found['seeds'])} seeds")
    figure.savefig(path, dpi=120)
    return figure


def plot_char_vs_word(found: dict, path: Path) -> Figure:
    """The word and the character biLM side by side, mean ± 1 sd over seeds: the pooled
    context gap per layer on held-out sentences, with the cosine of two different words;
    the word-class task's single-layer probes, with chance; the rank of the relatives of
    words the corpus lacks, with chance; the untrained biLMs' as black ticks and grey
    bars."""
    figure = Figure(figsize=(13, 4), layout="constrained")
    gaps, probes, ranks = figure.subplots(1, 3)
    layers = np.array(LAYERS)
    for k, model in enumerate(MODELS):
        trained, untrained = view(found, model, True), view(found, model, False)
        gap = np.array([targets.gap(trained, "heldout", "all", layer) for layer in layers]).T
        control = np.array([targets.gap(untrained, "heldout", "all", layer)
                            for layer in layers]).T
        level = np.array([targets.baseline(trained, "heldout", layer) for layer in layers]).T
        shift = (k - 0.5) * 0.35
        gaps.bar(layers + shift, gap.mean(0), 0.35, yerr=gap.std(0), capsize=3,
                 color=f"C{k}", label=f"{MODEL_NAMES[model]}: gap")
        gaps.plot(layers + shift, control.mean(0), "_", color="black", markersize=12,
                  markeredgewidth=2, label="untrained: gap" if k == 0 else None)
        gaps.plot(layers + shift, level.mean(0), "o", color=f"C{k}", markeredgecolor="black",
                  label=f"{MODEL_NAMES[model]}: two different words")
        accuracy = targets.probes(trained, "word_class")
        probes.bar(layers + shift, accuracy.mean(0), 0.35, yerr=accuracy.std(0), capsize=3,
                   color=f"C{k}", label=MODEL_NAMES[model])
        probes.plot(layers + shift, targets.probes(untrained, "word_class").mean(0), "_",
                    color="black", markersize=12, markeredgewidth=2,
                    label="untrained" if k == 0 else None)
    chance = targets.chance(view(found, "word"), "word_class")
    probes.axhline(chance, color="black", linestyle="--", label=f"chance ({chance:.3f})")
    for ax, title in ((gaps, "context: same minus different sense, held-out"),
                      (probes, "word class of unseen word types: probe on one layer")):
        ax.set_xticks(layers, [f"layer {k}" for k in layers])
        ax.set_title(title, fontsize="medium")
        ax.set_ylim(top=1.7 * ax.get_ylim()[1])  # room for the legend above the bars
        ax.legend(fontsize="x-small", loc="upper left")
    bars = [(model, trained) for model in MODELS for trained in (False, True)]
    mean_ranks = np.array([targets.mean_ranks(view(found, m, t)) for m, t in bars]).T
    ranks.bar(range(len(bars)), mean_ranks.mean(0), yerr=mean_ranks.std(0), capsize=3,
              color=["C7", "C0", "C7", "C1"])
    level = targets.chance_rank(view(found, "word"))
    ranks.axhline(level, color="black", linestyle="--", label=f"chance ({level:.1f})")
    ranks.set_xticks(range(len(bars)), [f"{MODEL_NAMES[m]}\n{STATE_NAMES[t]}"
                                        for m, t in bars], fontsize="small")
    ranks.set_title("words the corpus lacks: mean rank of the relative", fontsize="medium")
    ranks.legend(fontsize="small")
    figure.savefig(path, dpi=120)
    return figure


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="training seeds 0..N-1 (default 10)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the results")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes at once, one torch thread each (default 2, or 1 on "
                             "one core)")
    args = parser.parse_args(argv)
    if min(args.seeds, args.jobs) < 1:
        parser.error(f"--seeds and --jobs must be at least 1, got {args.seeds}, {args.jobs}")
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    seeds = list(range(args.seeds))
    word2idx, _ = experiments.vocabulary(_reference)

    heading("the corpus")
    sizes = results_text.corpus_sizes()
    print(f"{len(corpus.CORPUS)} training and {len(corpus.HELDOUT)} held-out sentences, "
          f"{len(word2idx) - len(corpus.SPECIAL_TOKENS)} words; "
          f"{len(corpus.SENSE_PHRASES)} senses of {sizes['target words']} words, each "
          f"{sizes['openings']} openings x {sizes['endings']} endings")

    heading(f"{args.seeds} seeds: pre-training, then sections 6-8 on each biLM and on the "
            "untrained biLM it started from")
    found, details = experiments.run(_reference, seeds, jobs=args.jobs, keep=[0])
    if "char error" in details:
        raise SystemExit(f"the character biLM failed: {details['char error']}")
    floors = found["floors"]
    print(f"floors: {floors['corpus']:.4f} (the training sentences by heart), "
          f"{floors['phrases']:.4f} (the phrases, on training and held-out sentences)")
    found = {"run": {"command": f"python -m tools.demo --seeds {args.seeds} --jobs {args.jobs}",
                     **machine(), "threads": 1}, **found}
    (args.out / "results.json").write_text(json.dumps(found, indent=1) + "\n")
    print(args.out / "results.json")

    for title, name in (("losses", "pretraining"), ("section 6: pooled pairs", "context"),
                        ("section 6: the gap of each word", "gaps"),
                        ("section 6: 1-nearest-neighbour sense", "nearest"),
                        ("section 7: layer weights and probes", "probes"),
                        ("section 8: the word and the character biLM", "characters"),
                        ("section 8: words the corpus lacks", "unseen_words"),
                        ("the targets, trained against untrained", "targets")):
        heading(title)
        print(results.TABLES[name](found))

    heading("figures")
    first = details["word", 0]
    models = {}
    for trained in STATE_NAMES:
        models[trained] = experiments.new_bilm(_reference, 0, word2idx)
        models[trained].load_state_dict(first["states"][trained])
        models[trained].eval()
    model = models[True]
    comparison = _reference.context.compare_contexts(model, word2idx, corpus.SENSE_LABELS)
    baseline = analysis.anisotropy_baseline(_reference, model, word2idx)
    curves = {name: [details[name, seed]["curves"] for seed in seeds] for name in MODELS}
    task_results = {trained: [details["word", seed]["tasks"][trained] for seed in seeds]
                    for trained in STATE_NAMES}
    draw(args.out, {
        "training_loss.png": lambda p: plot_training_loss(curves, floors, p),
        "context_gaps.png": lambda p: plot_gaps(found, p),
        "control.png": lambda p: plot_control(found, p),
        "context_comparison.png": lambda p: plots.plot_context_comparison(comparison, baseline,
                                                                          p),
        "halves.png": lambda p: plots.plot_halves(
            analysis.compare_halves(_reference, model, word2idx), baseline, p),
        **{f"pca_{word}.png": (lambda p, word=word: plots.plot_sense_pca(
            _reference, model, word2idx, word, path=p)) for word in comparison.words},
        "layer_weights.png": lambda p: plots.plot_layer_weights(task_results[True], p),
        "layer_weights_untrained.png": lambda p: plots.plot_layer_weights(task_results[False],
                                                                          p),
        "char_vs_word.png": lambda p: plot_char_vs_word(found, p),
    })
    queries = corpus.HELDOUT_LABELS[::4]  # the first held-out sentence of every sense
    tables = [f"{query[0]!r} ({query[2]}), {STATE_NAMES[trained]} biLM:\n"
              + analysis.nearest_table(analysis.nearest_occurrences(
                  _reference, models[trained], word2idx, query[0], query[1]))
              for query in queries for trained in STATE_NAMES]
    write(args.out / "nearest.txt", "\n\n".join(tables) + "\n")
    write(args.out / "char_neighbours.txt", "\n\n".join(
        f"{'' if trained else 'untrained '}{MODEL_NAMES[name]} (seed 0):\n"
        + analysis.neighbours_table(details[name, 0]["relatives"][trained])
        for name in MODELS for trained in (False, True)) + "\n")
    print(f"\n{tables[0]}\n\n{tables[1]}\n\ndone in {time.perf_counter() - started:.0f} s")
    return found


def draw(folder: Path, figures: dict) -> None:
    for name, plot in figures.items():
        plot(folder / name)
        print(folder / name)


def write(path: Path, text: str) -> None:
    path.write_text(text)
    print(path)


if __name__ == "__main__":
    main()
