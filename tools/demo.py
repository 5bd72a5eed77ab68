"""The seed notebook end to end on the reference, `solutions/`: `make demo`.

    python -m tools.demo [--seeds 5] [--out build/demo] [--threads 1]

Seed, vocabulary, biLM pre-training (the loss every 10 epochs), extraction, the context
comparison (section 6) and the layer-weight demo (section 7). The biLM is trained once per
seed 0 .. seeds-1 (seed 0 verbosely), so every number is printed with its spread over
seeds. Figures go to the folder `--out`, which the output names:

    context_comparison.png   seed 0: every sentence pair per layer; same vs different sense
    layer_weights.png        learned weights and single-layer probe accuracy, over seeds
    training_loss.png        the corpus loss per epoch, one line per seed

It runs on one CPU thread unless told otherwise: every tensor here is small, and on two
shared cores a second thread's synchronisation costs far more than it saves (one probe
training step took 2-3 ms on one thread and 27-72 ms on two, with other jobs running).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from matplotlib.figure import Figure

from course.registry import BUILD_DIR
from tools import reference

_reference = reference()
get_device, set_seed = _reference.setup.get_device, _reference.setup.set_seed
CORPUS, SENSE_LABELS, build_vocab = (getattr(_reference.corpus, name) for name in (
    "CORPUS", "SENSE_LABELS", "build_vocab"))
BiLM = _reference.bilm.BiLM
DEFAULT_RECIPE, train_bilm = _reference.pretrain.DEFAULT_RECIPE, _reference.pretrain.train_bilm
get_elmo_embeddings = _reference.extract.get_elmo_embeddings
ContextComparison, compare_contexts, plot_context_comparison = (
    getattr(_reference.context, name)
    for name in ("ContextComparison", "compare_contexts", "plot_context_comparison"))
NUM_FOLDS, TaskResult, evaluate_task, plot_layer_weights, sense_task, word_class_task = (
    getattr(_reference.layer_weights, name) for name in (
        "NUM_FOLDS", "TaskResult", "evaluate_task", "plot_layer_weights", "sense_task",
        "word_class_task"))

DEFAULT_OUT = BUILD_DIR / "demo"
# Peters et al. 2018: Table 5 (POS tagging, PTB) and Table 6 (WSD, SemCor), biLM layers 1, 2.
PAPER_PROBES = {"word class": ("POS tagging", 97.3, 96.8), "word sense": ("WSD", 67.4, 69.0)}


def heading(text: str) -> None:
    print(f"\n== {text} " + "=" * max(0, 84 - len(text)))


def spread(values) -> str:
    """'mean ± sd' over seeds (sd with ddof 1; none for one seed)."""
    values = np.asarray(values, dtype=float)
    sd = values.std(ddof=1) if len(values) > 1 else 0.0
    return f"{values.mean():.3f} ± {sd:.3f}"


def pretrain(seed: int, word2idx: dict[str, int], device: torch.device, verbose: bool):
    """A biLM trained with the default recipe: weights initialised and data shuffled by `seed`."""
    set_seed(seed)
    model = BiLM(len(word2idx))
    history = train_bilm(model, CORPUS, word2idx, DEFAULT_RECIPE, seed=seed, device=device,
                         log_every=10 if verbose else 0, progress=False)
    return model, history


def print_comparison_over_seeds(comparisons: list[ContextComparison]) -> None:
    layers = range(comparisons[0].num_layers)
    same = np.array([c.select(True).mean(dim=0).numpy() for c in comparisons])
    different = np.array([c.select(False).mean(dim=0).numpy() for c in comparisons])
    print(f"mean cosine over all pairs, mean ± sd over {len(comparisons)} seeds:")
    print(f"{'':<18}" + "".join(f"{f'layer {k}':>16}" for k in layers))
    for name, values in (("same sense", same), ("different sense", different)):
        print(f"{name:<18}" + "".join(f"{spread(values[:, k]):>16}" for k in layers))
    n = len(comparisons)
    for k in layers[1:]:
        print(f"layer {k}: different < same sense on {(different[:, k] < same[:, k]).sum()}/{n} "
              f"seeds; below layer {k - 1}: different sense on "
              f"{(different[:, k] < different[:, k - 1]).sum()}/{n}, same sense on "
              f"{(same[:, k] < same[:, k - 1]).sum()}/{n}")
    for word in comparisons[0].words:
        gaps = np.array([(c.select(True, word).mean(0) - c.select(False, word).mean(0)).numpy()
                         for c in comparisons])
        print(f"  {word:<6} same - different sense: layer 1 {spread(gaps[:, 1]):>15}, "
              f"layer 2 {spread(gaps[:, 2]):>15}, > 0 at layer 2 on {(gaps[:, 2] > 0).sum()}/{n}")


def print_layer_weights(results: list[list[TaskResult]], seeds: list[int]) -> None:
    layers = range(len(results[0][0].weights))
    print(f"{'seed':<6}{'task':<12}" + "".join(f"{f's{k}':>7}" for k in layers)
          + f"{'gamma':>7}{'acc':>7}" + "".join(f"{f'probe L{k}':>10}" for k in layers))
    for seed, per_task in zip(seeds, results, strict=True):
        for r in per_task:
            print(f"{seed:<6}{r.name:<12}" + "".join(f"{float(w):>7.3f}" for w in r.weights)
                  + f"{r.gamma:>7.2f}{r.accuracy:>7.3f}"
                  + "".join(f"{float(a):>10.3f}" for a in r.layer_accuracy))
    n = len(seeds)
    print(f"\nmean ± sd over {n} seeds:")
    for t, name in enumerate(r.name for r in results[0]):
        weights = np.array([s[t].weights.numpy() for s in results])
        probes = np.array([s[t].layer_accuracy.numpy() for s in results])
        print(f"{name:<12} weights " + "  ".join(f"s{k} {spread(weights[:, k])}" for k in layers))
        print(f"{'':<12} accuracy {spread([s[t].accuracy for s in results])}   probes "
              + "  ".join(f"L{k} {spread(probes[:, k])}" for k in layers))
        task, first, second = PAPER_PROBES[name]
        print(f"{'':<12} s1 > s2 on {(weights[:, 1] > weights[:, 2]).sum()}/{n} seeds; "
              f"probe L1 > L2 on {(probes[:, 1] > probes[:, 2]).sum()}/{n} "
              f"(paper, {task}: layer 1 {first}, layer 2 {second})")
    weights = np.array([[r.weights.numpy() for r in per_task] for per_task in results])
    ratio = weights[:, :, 2] / weights[:, :, 1]  # (seeds, tasks): s2 / s1
    print(f"word sense against word class: s2/s1 larger on {(ratio[:, 1] > ratio[:, 0]).sum()}"
          f"/{n} seeds, s0 smaller on {(weights[:, 1, 0] < weights[:, 0, 0]).sum()}/{n}")


def plot_training_loss(histories: dict[int, list[float]], path: Path) -> Figure:
    """The corpus loss after each epoch, one line per seed."""
    figure = Figure(figsize=(6, 4), layout="constrained")
    ax = figure.subplots()
    for seed, history in histories.items():
        ax.plot(range(1, len(history) + 1), history, label=f"seed {seed}")
    ax.set_xlabel("epoch")
    ax.set_ylabel("forward + backward LM loss")
    ax.set_title("biLM pre-training on the toy corpus")
    ax.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    return figure


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="training seeds 0..N-1 (default 5)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the figures")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.threads < 1:
        parser.error(f"--seeds and --threads must be at least 1, got {args.seeds}, "
                     f"{args.threads}")
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    seeds = list(range(args.seeds))

    heading("1. setup")
    set_seed(0)
    device = get_device()
    print(f"seed 0, device {device}, torch {torch.__version__}, CPU threads: "
          f"{torch.get_num_threads()}")

    heading("2. toy corpus and vocabulary")
    word2idx, _ = build_vocab(CORPUS)
    senses = sorted({f"{word}: {sense}" for _, word, sense in SENSE_LABELS})
    print(f"{len(CORPUS)} sentences, {len(word2idx)} tokens in the vocabulary (4 special)")
    print(f"{len(senses)} senses of 4 words, 4 sentences each: {', '.join(senses)}")

    heading(f"3-4. the biLM, pre-trained with {DEFAULT_RECIPE} (seed 0)")
    model, history = pretrain(0, word2idx, device, verbose=True)
    print(f"{sum(p.numel() for p in model.parameters()):,} parameters; final loss "
          f"{history[-1]:.4f}")
    models, histories = {0: model}, {0: history}
    for seed in seeds[1:]:
        models[seed], histories[seed] = pretrain(seed, word2idx, device, verbose=False)
        print(f"seed {seed}: final loss {histories[seed][-1]:.4f}")

    heading("5. ELMo embeddings")
    example = "they sat on the bank of the river"
    embedding = get_elmo_embeddings(model, example, word2idx)
    print(f"{example!r}: {tuple(embedding.shape)} = (layers, words, 2 x 256)")

    heading("6. context comparison: cosine of the target word between two sentences")
    comparisons = [compare_contexts(models[seed], word2idx) for seed in seeds]
    print("seed 0, mean per word, sense group and layer:")
    print(comparisons[0].table())
    print()
    print_comparison_over_seeds(comparisons)

    heading("7. learned layer weights (biLM frozen; ScalarMix + linear classifier)")
    print(f"{NUM_FOLDS}-fold cross-validation; word class holds out word types, word sense "
          "holds out sentences.\nWord sense: 0.5 is what knowing the word without its sense "
          "gives (layer 0 can do no better).")
    results = []
    for seed in seeds:
        tasks = (word_class_task(models[seed], word2idx), sense_task(models[seed], word2idx))
        results.append([evaluate_task(task, seed=seed) for task in tasks])
    for task in tasks:  # the labels are the same for every seed; only embeddings differ
        counts = torch.bincount(task.labels)
        print(f"{task.name}: {len(task.labels)} tokens, {len(task.classes)} classes; always "
              f"guessing the most frequent one scores {float(counts.max() / counts.sum()):.3f}")
    print_layer_weights(results, seeds)

    heading("figures")
    args.out.mkdir(parents=True, exist_ok=True)
    plot_context_comparison(comparisons[0], args.out / "context_comparison.png")
    plot_layer_weights(results, args.out / "layer_weights.png")
    plot_training_loss(histories, args.out / "training_loss.png")
    for name in ("context_comparison.png", "layer_weights.png", "training_loss.png"):
        print(args.out / name)
    print(f"\ndone in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
